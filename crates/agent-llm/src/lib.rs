//! Language-model providers behind one trait.
//!
//! The agent loop talks to a [`Provider`] in OpenAI's chat shape: messages
//! (assistant `tool_calls`, `tool` results), the tools, a tool choice; it
//! gets back a turn taken apart: reasoning, text, calls. Three implement it:
//! - `agent_engine::engine::LlamaEngine`: llama.cpp in-process (the default;
//!   the model's own chat template, native calls under a lazy grammar,
//!   reasoning with a budget, KV-cache reuse, exact token counts);
//! - [`scripted::ScriptedProvider`]: replays recorded turns written in the
//!   model's own syntax (tests, replays, `--print-prompt`);
//! - [`openai::OpenAiProvider`]: an OpenAI-compatible HTTP server
//!   (llama-server, vLLM, Ollama) through its `tools` / `tool_calls` API.
//!
//! [`chat`] is what the engine and the replay share: the template, the call
//! grammar and the parser of a family's syntax (from `agent_chat`).

pub mod chat;
pub mod grammar;
pub mod openai;
pub mod scripted;
pub mod stream;

use serde::{Deserialize, Serialize};

pub use agent_chat::{Message, Role, ToolCall, ToolSpec};
pub use chat::{ChatFormat, TemplateInfo, Think};
pub use grammar::Grammar;

/// Where a running model is, as `--json` output and traces record it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placement {
    /// `CPU`, or the GPU's backend (`Vulkan`, `CUDA`, `Metal`).
    pub backend: String,
    /// The GPU's name (`Vulkan0`); None on the CPU.
    pub device: Option<String>,
    pub gpu_layers: u32,
    pub model_layers: u32,
    pub n_ctx: u32,
    pub summary: String,
}

/// How fast the model reads a prompt (prefill), and how that is known:
/// the first prompt is sized from it (a slow CPU gets a leaner one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PrefillRate {
    pub tokens_per_s: f64,
    pub source: RateSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateSource {
    /// Timed on real prefills of this model, placement and thread count.
    Measured,
    /// Not timed yet: worked out from the model's size and placement.
    Estimated,
}

/// How the next token is picked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// 0 means greedy (deterministic).
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
    /// Penalty for repeating one of the last 64 generated tokens; 1.0 is off.
    /// Small models loop without it.
    pub repeat_penalty: f32,
}

impl Sampling {
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
            repeat_penalty: 1.0,
        }
    }
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Self::greedy()
    }
}

/// Which calls a request admits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// A call of an allowed tool, or text (the answer).
    #[default]
    Auto,
    /// A call of an allowed tool; no answer yet.
    Required,
    /// Only the answer: no calls (the last step of a budget, chat).
    None,
}

#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    pub messages: Vec<Message>,
    /// Every tool of the session, rendered into the prompt. The same list
    /// for every request keeps the prompt's prefix (and the KV cache) stable;
    /// [`CompletionRequest::allowed_tools`] narrows what may be called.
    pub tools: Vec<ToolSpec>,
    /// The names the model may call now (None: all of `tools`).
    pub allowed_tools: Option<Vec<String>>,
    pub tool_choice: ToolChoice,
    /// Reason first or not, for this request (None: the provider's `--think`).
    pub thinking: Option<bool>,
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Constrain the whole output (after any reasoning) to this grammar:
    /// labels, a JSON Schema. Tool calls get their grammar from `tools`.
    pub grammar: Option<Grammar>,
    /// Stop (and drop the match) when the output contains one of these.
    pub stop: Vec<String>,
    /// Keep generating past end-of-turn tokens (benchmarks measure a fixed length).
    pub ignore_eos: bool,
    /// A side request (the intent gate's label) between a conversation's
    /// turns: a provider that can answers it without disturbing what it
    /// keeps of the conversation's prompt (the engine: a second KV sequence).
    pub aside: bool,
    /// The caller's stop flag: a provider stops at its next event once it
    /// is set ([`CompletionRequest::watched`]), and polls it where it
    /// cannot send events: inside a prefill batch (the engine), which on a
    /// laptop CPU runs for seconds. The callback's `Flow::Stop` stops it too.
    pub interrupt: Option<agent_base::cancel::CancelToken>,
}

impl CompletionRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            max_tokens: 512,
            ..Self::default()
        }
    }

    /// `on_event`, answered with `Flow::Stop` once `interrupt` is set: a
    /// provider sends its events through this, so a caller hands its stop
    /// flag over once instead of checking it in every callback.
    pub fn watched<'a>(
        &'a self,
        on_event: &'a mut dyn FnMut(Event<'_>) -> Flow,
    ) -> impl FnMut(Event<'_>) -> Flow + 'a {
        move |event| match &self.interrupt {
            Some(stop) if stop.is_cancelled() => Flow::Stop,
            _ => on_event(event),
        }
    }

    /// The tools the model may call now.
    pub fn callable(&self) -> Vec<ToolSpec> {
        if self.tool_choice == ToolChoice::None {
            return Vec::new();
        }
        self.tools
            .iter()
            .filter(|t| {
                self.allowed_tools
                    .as_ref()
                    .is_none_or(|names| names.contains(&t.name))
            })
            .cloned()
            .collect()
    }
}

/// Progress reported while a request runs. The callback's return value lets
/// the caller stop early (Ctrl-C) at any step, prefill included.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    Prefill {
        done: usize,
        total: usize,
    },
    /// A piece of the turn's text: the answer, or what the model says
    /// before its calls (never reasoning, never call syntax).
    Text(&'a str),
    /// A piece of the model's reasoning (shown dimmed, never sent back).
    Reasoning(&'a str),
    /// The turn's tokens so far, after each one, shown or not: a call being
    /// written shows nothing, but the caller can report progress and stop.
    Generated(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn.
    #[default]
    Stop,
    /// A stop sequence matched.
    StopSequence,
    /// `max_tokens` reached.
    Length,
    /// The context window is full.
    ContextFull,
    /// The caller asked to stop.
    Cancelled,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Everything the model generated, as generated (reasoning and call
    /// syntax included): for traces.
    pub text: String,
    /// The turn's text outside reasoning and calls: the answer when there
    /// are no calls.
    pub content: String,
    /// What the model thought first; never sent back to it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// The calls, with ids, checked against the request's tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why the turn's calls could not be read, written for the model (the
    /// family's own syntax shown); `tool_calls` is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_call: Option<String>,
    pub finish: FinishReason,
    /// Tokens in the rendered prompt.
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV entries were reused from the previous call.
    pub reused_tokens: usize,
    /// Prompt tokens actually evaluated in this call.
    pub prefilled_tokens: usize,
    pub completion_tokens: usize,
    /// Of the completion tokens, those spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: usize,
    /// Generated token ids, where the provider knows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<i32>,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    /// Time from the call to the first generated token.
    pub ttft_ms: f64,
    /// Prompt tokens whose KV state came from the prompt cache on disk
    /// (counted in `reused_tokens` too).
    #[serde(default)]
    pub cache_loaded_tokens: usize,
    /// Tokens whose KV state this call saved to the prompt cache on disk.
    #[serde(default)]
    pub cache_saved_tokens: usize,
    /// Tokens proposed by speculative decoding, and those the model confirmed.
    #[serde(default)]
    pub draft_tokens: usize,
    #[serde(default)]
    pub draft_accepted: usize,
}

/// What the prompt cache on disk did (`--json`'s `prompt_cache`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCacheUse {
    /// Prompt tokens whose KV state was read from disk instead of prefilled.
    pub loaded_tokens: usize,
    /// Tokens whose KV state was written for the next run.
    pub saved_tokens: usize,
}

impl PromptCacheUse {
    pub fn add(&mut self, other: PromptCacheUse) {
        self.loaded_tokens += other.loaded_tokens;
        self.saved_tokens += other.saved_tokens;
    }
}

/// How speculative decoding fared (`--json`'s `speculative`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Speculation {
    /// Tokens drafted by prompt lookup.
    pub drafted: usize,
    /// Of them, those the model confirmed.
    pub accepted: usize,
    /// accepted / drafted (0 when nothing was drafted).
    pub acceptance: f64,
}

impl Speculation {
    pub fn new(drafted: usize, accepted: usize) -> Self {
        let acceptance = if drafted == 0 {
            0.0
        } else {
            accepted as f64 / drafted as f64
        };
        Self {
            drafted,
            accepted,
            acceptance,
        }
    }

    pub fn add(&mut self, other: Speculation) {
        *self = Self::new(self.drafted + other.drafted, self.accepted + other.accepted);
    }
}

impl Completion {
    pub fn prompt_cache(&self) -> PromptCacheUse {
        PromptCacheUse {
            loaded_tokens: self.cache_loaded_tokens,
            saved_tokens: self.cache_saved_tokens,
        }
    }

    pub fn speculation(&self) -> Speculation {
        Speculation::new(self.draft_tokens, self.draft_accepted)
    }

    /// A completion whose text is all answer (no tools, no reasoning).
    pub fn with_text(text: String) -> Self {
        Self {
            content: text.clone(),
            text,
            ..Self::default()
        }
    }

    /// Fills reasoning, content and calls from a parsed turn (or its error).
    pub fn set_turn(&mut self, turn: Result<agent_chat::ParsedTurn, agent_chat::ParseError>) {
        match turn {
            Ok(turn) => {
                self.reasoning = turn.reasoning;
                self.content = turn.content;
                self.tool_calls = turn.calls;
            }
            Err(e) => {
                self.reasoning = e.reasoning;
                self.invalid_call = Some(e.message);
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "model file not found: {path}\n  fix: check the path, or pass `--model PATH` to any GGUF chat model (`agent models` checks the default one and says how to get it)"
    )]
    ModelNotFound { path: String },
    #[error("{path} is not a usable GGUF model: {reason}\n  fix: download it again (`agent models` checks the default one), or pass `--model PATH` to a complete GGUF file")]
    InvalidModel { path: String, reason: String },
    #[error("the prompt has {prompt_tokens} tokens but the context window holds {n_ctx} ({reserve} kept for the answer)\n  fix: shorten the input or raise `--ctx-size`")]
    ContextOverflow {
        prompt_tokens: usize,
        n_ctx: usize,
        reserve: usize,
    },
    #[error("invalid grammar: {0}")]
    Grammar(String),
    #[error("chat template: {0}")]
    Template(String),
    #[error("llama.cpp: {0}")]
    Backend(String),
    #[error("{0}")]
    Offload(String),
    #[error("model server: {0}")]
    Http(String),
    #[error("the script has no turn left (it had {0})")]
    ScriptExhausted(usize),
}

/// Something that turns a conversation into the next assistant message.
pub trait Provider: Send {
    /// A short description for logs, e.g. the model file name.
    fn name(&self) -> String;
    /// Context window in tokens.
    fn context_size(&self) -> usize;
    /// Where the model runs (in-process engines only).
    fn placement(&self) -> Option<Placement> {
        None
    }
    /// How fast the model prefills prompts (None: not known, as for a
    /// remote server).
    fn prefill_rate(&self) -> Option<PrefillRate> {
        None
    }
    /// The chat template prompts are rendered with, where the provider
    /// renders them (a server renders its own).
    fn template(&self) -> Option<TemplateInfo> {
        None
    }
    /// Most tokens a reply may spend reasoning before it answers (0: the
    /// model does not reason); the loop keeps room for them.
    fn think_budget(&self) -> usize {
        0
    }
    /// Tokens `text` takes with this model's tokenizer (an estimate where the
    /// tokenizer is remote).
    fn count_tokens(&self, text: &str) -> Result<usize, LlmError>;
    /// Tokens the rendered conversation takes, its tools included. Providers
    /// that render prompts themselves count exactly
    /// ([`ChatFormat::count_prompt_tokens`]); the default estimates
    /// ([`estimate_prompt_tokens`]).
    fn count_prompt_tokens(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<usize, LlmError> {
        estimate_prompt_tokens(messages, tools, &|text| self.count_tokens(text))
    }
    /// Tokens the rendered conversation takes, without tools.
    fn count_message_tokens(&self, messages: &[Message]) -> Result<usize, LlmError> {
        self.count_prompt_tokens(messages, &[])
    }
    /// Whether `CompletionRequest::grammar` is enforced. A loop that writes
    /// calls in its own JSON relies on constrained calls only when it is.
    fn supports_grammar(&self) -> bool {
        false
    }
    /// Whether the model calls tools in its own syntax: the loop then sends
    /// `tools`, calls as assistant `tool_calls` and results as `tool`
    /// messages, and reads [`Completion::tool_calls`] and
    /// [`Completion::content`]. False for models whose template has no
    /// tools (the loop's own JSON calls, under its grammar).
    fn native_calls(&self) -> bool {
        false
    }
    /// Whether the provider answers requests beyond the loop's own turns
    /// (the intent gate's label question). A replay of recorded turns cannot:
    /// it holds only what the loop asked.
    fn answers_side_requests(&self) -> bool {
        true
    }
    /// Runs one request, streaming through `on_event`.
    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError>;
    /// The conversation ends or pauses (a chat exits): keeps the model's
    /// whole state of it in the prompt cache on disk now, where there is
    /// one, so that resuming it prefills only what is new. Returns the
    /// tokens saved (0: nothing new, or no cache).
    fn save_prompt_cache(&mut self) -> usize {
        0
    }
}

/// Streams text while holding back a tail that might be the start of a stop
/// sequence, so a stop string is never shown to the user.
#[derive(Debug, Default)]
pub struct StopScanner {
    stops: Vec<String>,
    text: String,
    emitted: usize,
}

impl StopScanner {
    pub fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            ..Self::default()
        }
    }

    /// Adds a piece; returns the text that is safe to show now and whether a
    /// stop sequence matched.
    pub fn push(&mut self, piece: &str) -> (String, bool) {
        self.text.push_str(piece);
        if let Some(pos) = self
            .stops
            .iter()
            .filter_map(|s| self.text.find(s.as_str()))
            .min()
        {
            self.text.truncate(pos);
            let out = self
                .text
                .get(self.emitted..)
                .unwrap_or_default()
                .to_string();
            self.emitted = self.text.len();
            return (out, true);
        }
        let hold = self.stops.iter().map(|s| s.len() - 1).max().unwrap_or(0);
        let mut safe = self.text.len().saturating_sub(hold).max(self.emitted);
        while !self.text.is_char_boundary(safe) {
            safe -= 1;
        }
        let out = self.text[self.emitted..safe].to_string();
        self.emitted = safe;
        (out, false)
    }

    /// Streams one piece to `on_event`; returns why streaming must end, if it
    /// must (the caller stopped it, or a stop sequence matched).
    pub fn feed(
        &mut self,
        piece: &str,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Option<FinishReason> {
        let (visible, stopped) = self.push(piece);
        if !visible.is_empty() && on_event(Event::Text(&visible)) == Flow::Stop {
            return Some(FinishReason::Cancelled);
        }
        stopped.then_some(FinishReason::StopSequence)
    }

    /// Ends the stream: shows the held-back tail, unless the caller stopped
    /// the stream or a stop sequence matched.
    pub fn end(&mut self, finish: FinishReason, on_event: &mut dyn FnMut(Event<'_>) -> Flow) {
        if matches!(finish, FinishReason::Cancelled | FinishReason::StopSequence) {
            return;
        }
        let rest = self.finish();
        if !rest.is_empty() {
            on_event(Event::Text(&rest));
        }
    }

    /// Flushes what was held back once generation ends without a stop match.
    pub fn finish(&mut self) -> String {
        let out = self.text[self.emitted..].to_string();
        self.emitted = self.text.len();
        out
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Cuts the text at byte `len` (nothing past it will be shown).
    pub fn truncate(&mut self, len: usize) {
        self.text.truncate(len);
        self.emitted = self.emitted.min(len);
    }
}

/// A conversation's tokens without its template: the tools' schemas, and
/// each message's text and calls plus 4 for its markup, each counted by
/// `count`. What a provider that does not render the prompt itself (or
/// whose template refused the conversation) can say.
pub fn estimate_prompt_tokens(
    messages: &[Message],
    tools: &[ToolSpec],
    count: &dyn Fn(&str) -> Result<usize, LlmError>,
) -> Result<usize, LlmError> {
    let tools = serde_json::to_string(tools).unwrap_or_default();
    messages.iter().try_fold(count(&tools)?, |sum, m| {
        let calls = if m.tool_calls.is_empty() {
            0
        } else {
            count(&serde_json::to_string(&m.tool_calls).unwrap_or_default())?
        };
        Ok(sum + 4 + calls + count(&m.content)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_scanner_hides_stop_sequences_split_across_pieces() {
        let mut s = StopScanner::new(&["</done>".to_string()]);
        let mut shown = String::new();
        let mut stopped = false;
        for piece in ["Hello ", "wor", "ld</d", "one> trailing"] {
            let (out, hit) = s.push(piece);
            shown.push_str(&out);
            if hit {
                stopped = true;
                break;
            }
        }
        assert!(stopped);
        assert_eq!(shown, "Hello world");
        assert_eq!(s.text(), "Hello world");
    }

    #[test]
    fn stop_scanner_without_stops_streams_everything() {
        let mut s = StopScanner::new(&[]);
        assert_eq!(s.push("héllo").0, "héllo");
        assert_eq!(s.finish(), "");
    }
}
