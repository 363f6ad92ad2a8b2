//! `agent acp`: the agent for editors, as an Agent Client Protocol agent on
//! stdio (crates/agent-acp); here each session gets its agent, built as
//! every front end builds one (`crate::session::agent_in`), and all of them
//! share one model.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Result;

use crate::cli::AcpArgs;
use agent_acp::StdioServer;
use agent_core::Agent;
use agent_llm::{
    Completion, CompletionRequest, Event, Flow, LlmError, Message, Placement, Provider, Sampling,
    TemplateInfo, ToolSpec,
};
use agent_mcp::config::ServerConfig;
use agent_policy::Mode;

pub(crate) fn run(args: &AcpArgs) -> Result<i32> {
    // Only protocol messages on stdout: whatever else writes there lands in
    // the log (stderr).
    let output = super::mcp::protocol_output()?;
    let input = std::io::BufReader::new(std::io::stdin());
    let mut factory = Factory { args, model: None };
    agent_acp::serve(&mut factory, Box::new(input), Box::new(output))?;
    Ok(super::exit::OK)
}

struct Factory<'a> {
    args: &'a AcpArgs,
    /// Loaded at the first session, then shared: an editor opens a session
    /// per thread, and a second copy of the model would double the memory.
    model: Option<SharedProvider>,
}

impl agent_acp::Sessions for Factory<'_> {
    fn open(&mut self, cwd: &Path, mcp: Vec<StdioServer>, resume: Option<&str>) -> Result<Agent> {
        let root = agent_base::paths::repo_root(Some(cwd))?;
        let model = match &self.model {
            Some(model) => model.clone(),
            None => self
                .model
                .insert(SharedProvider(Arc::new(Mutex::new(super::provider(
                    &self.args.model,
                )?))))
                .clone(),
        };
        let sampling = Sampling {
            temperature: self.args.temperature,
            ..Sampling::greedy()
        };
        let servers = mcp
            .into_iter()
            .map(|s| ServerConfig {
                name: s.name,
                command: s.command,
                args: s.args,
                env: s.env,
                url: None,
                headers: Default::default(),
                ca_bundle: None,
                startup_timeout_s: None,
                source: Default::default(),
            })
            .collect();
        crate::session::agent_in(
            &root,
            Box::new(model),
            &self.args.agent,
            self.args.max_tokens,
            sampling,
            resume.map(String::from),
            servers,
        )
    }

    fn yolo(&self) -> bool {
        self.args.agent.mode == Mode::Yolo
    }
}

/// One model for every session. Prompts run one at a time, so the lock is
/// never contended; the engine's KV cache keeps what the sessions share.
#[derive(Clone)]
struct SharedProvider(Arc<Mutex<Box<dyn Provider>>>);

impl SharedProvider {
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
