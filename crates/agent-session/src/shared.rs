//! One model for many sessions: an editor opens a session per thread
//! (`agent acp`), and a second copy of the model would double the memory.

use std::sync::{Arc, Mutex, MutexGuard};

use agent_llm::{
    Completion, CompletionRequest, Event, Flow, LlmError, Message, Placement, Provider,
    TemplateInfo, ToolSpec,
};

/// One model for every session. Prompts run one at a time, so the lock is
/// never contended; the engine's KV cache keeps what the sessions share.
#[derive(Clone)]
pub struct SharedProvider(Arc<Mutex<Box<dyn Provider>>>);

impl SharedProvider {
    /// `provider`, to be shared.
    pub fn new(provider: Box<dyn Provider>) -> Self {
        Self(Arc::new(Mutex::new(provider)))
    }

    fn get(&self) -> MutexGuard<'_, Box<dyn Provider>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Provider for SharedProvider {
    fn name(&self) -> String {
        self.get().name()
    }
    fn context_size(&self) -> usize {
        self.get().context_size()
    }
    fn placement(&self) -> Option<Placement> {
        self.get().placement()
    }
    fn template(&self) -> Option<TemplateInfo> {
        self.get().template()
    }
    fn think_budget(&self) -> usize {
        self.get().think_budget()
    }
    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        self.get().count_tokens(text)
    }
    fn count_prompt_tokens(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<usize, LlmError> {
        self.get().count_prompt_tokens(messages, tools)
    }
    fn count_message_tokens(&self, messages: &[Message]) -> Result<usize, LlmError> {
        self.get().count_message_tokens(messages)
    }
    fn supports_grammar(&self) -> bool {
        self.get().supports_grammar()
    }
    fn native_calls(&self) -> bool {
        self.get().native_calls()
    }
    fn answers_side_requests(&self) -> bool {
        self.get().answers_side_requests()
    }
    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        self.get().complete(request, on_event)
    }
    fn save_prompt_cache(&mut self) -> usize {
        self.get().save_prompt_cache()
    }
}
