//! A provider that replays recorded model turns: deterministic tests of the
//! agent loop, `--script FILE` replays of a session, and `--print-prompt`.
//!
//! Each request is rendered with the model's chat template (ChatML unless
//! given one) exactly as the engine renders it, and each turn is read as
//! the engine reads a generated one: a turn is the model's text in its
//! family's own syntax (reasoning, calls and all), or an already parsed
//! turn (`{"content", "tool_calls"}`, as `agent sessions show --script`
//! exports them).

use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use crate::chat::{ChatFormat, Constraint, Rendered};
use crate::stream::{Deltas, TurnKind, TurnStreamer};
use crate::{
    Completion, CompletionRequest, Event, FinishReason, Flow, LlmError, Message, PrefillRate,
    Provider, TemplateInfo, ToolCall, ToolSpec,
};

/// One recorded turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ScriptTurn {
    /// Already taken apart: the text and the calls.
    Parsed {
        #[serde(default, deserialize_with = "null_as_empty")]
        content: String,
        tool_calls: Vec<ToolCall>,
        #[serde(default)]
        reasoning_content: Option<String>,
    },
    /// The model's output as it wrote it; `pace_ms` between its words
    /// plays a slow model (progress and Ctrl-C while it generates),
    /// `prefill_ms` a slow prefill (its progress reported in batches).
    Raw {
        content: String,
        #[serde(default)]
        pace_ms: u64,
        #[serde(default)]
        prefill_ms: u64,
    },
    Text(String),
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// Where `--print-prompt` writes each request's prompt.
pub struct PromptPrinter {
    pub json: bool,
    pub out: Box<dyn Write + Send>,
    printed: usize,
    /// Called when a request finds no scripted turn left: the caller's way
    /// to end the session there (the loop would otherwise ask again).
    on_end: Option<Box<dyn FnMut() + Send>>,
}

impl PromptPrinter {
    pub fn new(json: bool, out: Box<dyn Write + Send>) -> Self {
        Self {
            json,
            out,
            printed: 0,
            on_end: None,
        }
    }

    /// Calls `end` once the script has no turn left for a request.
    pub fn ending_with(mut self, end: impl FnMut() + Send + 'static) -> Self {
        self.on_end = Some(Box::new(end));
        self
    }

    fn print(
        &mut self,
        format: &ChatFormat,
        request: &CompletionRequest,
        rendered: &Rendered,
    ) -> std::io::Result<()> {
        self.printed += 1;
        let info = format.info();
        if self.json {
            let adapted = format.adapted(request);
            let tools: Vec<serde_json::Value> = format
                .prompt_tools(request)
                .iter()
                .map(ToolSpec::to_openai)
                .collect();
            let tokens = format.tokens();
            let line = json!({
                "request": self.printed,
                "template": info,
                "messages": adapted.messages,
                "tools": tools,
                "bos_token": tokens.bos,
                "eos_token": tokens.eos,
                "thinking": rendered.thinking,
                "prompt": rendered.text,
            });
            writeln!(self.out, "{line}")?;
        } else {
            writeln!(
                self.out,
                "── request {} · {} ({}) ──\n{}",
                self.printed, info.source, info.family, rendered.text
            )?;
        }
        self.out.flush()
    }
}

/// A model's tokenizer, as a count of tokens.
pub type TokenCounter = Box<dyn Fn(&str) -> usize + Send>;

/// What a request was rendered to, for tests to inspect.
#[derive(Debug, Clone)]
pub struct Prompted {
    pub text: String,
    pub constraint: Option<Constraint>,
}

pub struct ScriptedProvider {
    turns: Vec<ScriptTurn>,
    next: usize,
    format: ChatFormat,
    printer: Option<PromptPrinter>,
    /// The model's tokenizer, when there is one (else an estimate).
    counter: Option<TokenCounter>,
    /// The window it claims (`--ctx-size`), so replays can test a small one.
    context: usize,
    /// The prefill rate it claims (`--print-prompt`: the real engine's).
    rate: Option<PrefillRate>,
    /// The name it goes by (`--print-prompt`: the model file's, as the
    /// engine's, so what a workspace keeps per model is found).
    name: String,
    /// Every request received, in order, for tests to inspect.
    pub requests: Vec<CompletionRequest>,
    /// Every request's prompt and grammar, as the engine would get them.
    pub prompts: Vec<Prompted>,
}

impl ScriptedProvider {
    /// Turns of a `Generic` model (ChatML, calls in our JSON).
    pub fn new(turns: Vec<String>) -> Self {
        Self::with_turns(turns.into_iter().map(ScriptTurn::Text).collect())
    }

    pub fn with_turns(turns: Vec<ScriptTurn>) -> Self {
        Self {
            turns,
            next: 0,
            rate: None,
            format: ChatFormat::chatml(),
            printer: None,
            counter: None,
            context: 32_768,
            name: "scripted".into(),
            requests: Vec::new(),
            prompts: Vec::new(),
        }
    }

    /// Goes by `name` instead of "scripted".
    pub fn with_name(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// Reads a JSON list of turns: strings (the model's text), objects with
    /// a `content` field (the same), or parsed turns with `tool_calls`.
    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            LlmError::Template(format!("cannot read script {}: {e}", path.display()))
        })?;
        let turns: Vec<ScriptTurn> = serde_json::from_str(&text).map_err(|e| {
            LlmError::Template(format!(
                "script {} is not a JSON list of turns (strings, {{\"content\": ...}} or {{\"content\": ..., \"tool_calls\": [...]}} objects): {e}",
                path.display()
            ))
        })?;
        Ok(Self::with_turns(turns))
    }

    /// Renders with `format` (the model's template) instead of ChatML, and
    /// reads turns in its family's syntax.
    /// Claims a context window of `tokens` (default 32,768).
    pub fn with_context_size(mut self, tokens: usize) -> Self {
        self.context = tokens;
        self
    }

    /// Claims the prefill rate `rate`, so the first prompt is sized as the
    /// engine would size it.
    pub fn with_prefill_rate(mut self, rate: PrefillRate) -> Self {
        self.rate = Some(rate);
        self
    }

    pub fn with_format(mut self, format: ChatFormat) -> Self {
        self.format = format;
        self
    }

    /// Counts tokens with the model's own tokenizer.
    pub fn with_counter(mut self, counter: TokenCounter) -> Self {
        self.counter = Some(counter);
        self
    }

    /// Prints each request's prompt (`--print-prompt`); once the turns run
    /// out, the next request ends the replay quietly.
    pub fn printing(mut self, printer: PromptPrinter) -> Self {
        self.printer = Some(printer);
        self
    }

    pub fn remaining(&self) -> usize {
        self.turns.len() - self.next
    }

    fn count(&self, text: &str) -> usize {
        match &self.counter {
            Some(count) => count(text),
            None => estimate_tokens(text),
        }
    }
}

/// Rough count for providers without a local tokenizer.
pub use agent_base::tokens::estimate_tokens;

/// How a turn for `request` is shown while it streams.
pub fn turn_kind(format: &ChatFormat, request: &CompletionRequest) -> TurnKind {
    if request.tools.is_empty() {
        TurnKind::Plain
    } else if format.family() == agent_chat::Family::Generic {
        TurnKind::FinishAnswer
    } else {
        TurnKind::Native
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn answers_side_requests(&self) -> bool {
        false
    }

    fn prefill_rate(&self) -> Option<PrefillRate> {
        self.rate
    }

    fn context_size(&self) -> usize {
        self.context
    }

    fn template(&self) -> Option<TemplateInfo> {
        Some(self.format.info().clone())
    }

    /// Replies are canned, but claiming grammar support lets tests check the
    /// grammar the loop asks for, exactly as the engine would receive it.
    fn supports_grammar(&self) -> bool {
        true
    }

    fn native_calls(&self) -> bool {
        self.format.family() != agent_chat::Family::Generic
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        Ok(self.count(text))
    }

    fn count_prompt_tokens(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<usize, LlmError> {
        self.format
            .count_prompt_tokens(messages, tools, &|text| Ok(self.count(text)))
    }

    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let on_event = &mut request.watched(on_event);
        self.requests.push(request.clone());
        let rendered = self.format.render(request);
        let constraint = self.format.constraint(request);
        if let Some(printer) = &mut self.printer {
            printer
                .print(&self.format, request, &rendered)
                .map_err(|e| LlmError::Backend(format!("cannot print the prompt: {e}")))?;
        }
        self.prompts.push(Prompted {
            text: rendered.text.clone(),
            constraint,
        });
        let prompt_tokens = self.count(&rendered.text);
        let Some(turn) = self.turns.get(self.next).cloned() else {
            if let Some(printer) = &mut self.printer {
                if let Some(end) = &mut printer.on_end {
                    end();
                }
                return Ok(Completion {
                    finish: FinishReason::Cancelled,
                    prompt_tokens,
                    ..Completion::default()
                });
            }
            return Err(LlmError::ScriptExhausted(self.turns.len()));
        };
        self.next += 1;
        let mut completion = Completion {
            prompt_tokens,
            prefilled_tokens: prompt_tokens,
            ..Completion::default()
        };
        match turn {
            ScriptTurn::Text(_) | ScriptTurn::Raw { .. } => {
                let (text, pace_ms, prefill_ms) = match turn {
                    ScriptTurn::Raw {
                        content,
                        pace_ms,
                        prefill_ms,
                    } => (content, pace_ms, prefill_ms),
                    ScriptTurn::Text(text) => (text, 0, 0),
                    ScriptTurn::Parsed { .. } => unreachable!("matched above"),
                };
                if play_prefill(prompt_tokens, prefill_ms, on_event) == Flow::Stop {
                    completion.finish = FinishReason::Cancelled;
                    return Ok(completion);
                }
                let text = match request
                    .stop
                    .iter()
                    .filter_map(|s| text.find(s.as_str()))
                    .min()
                {
                    Some(at) => {
                        completion.finish = FinishReason::StopSequence;
                        text[..at].to_string()
                    }
                    None => text,
                };
                let mut streamer = TurnStreamer::new(
                    rendered.family,
                    rendered.reasoning_open,
                    turn_kind(&self.format, request),
                );
                // Word by word, like a model would.
                for (i, piece) in text.split_inclusive(' ').enumerate() {
                    if pace_ms > 0 {
                        std::thread::sleep(std::time::Duration::from_millis(pace_ms));
                    }
                    if streamer.push(piece).emit(on_event) == Flow::Stop
                        || on_event(Event::Generated(i + 1)) == Flow::Stop
                    {
                        completion.finish = FinishReason::Cancelled;
                        break;
                    }
                }
                if completion.finish != FinishReason::Cancelled {
                    streamer.finish().emit(on_event);
                }
                completion.completion_tokens = self.count(&text);
                completion.set_turn(self.format.parse(&text, request, rendered.reasoning_open));
                completion.text = text;
            }
            ScriptTurn::Parsed {
                content,
                tool_calls,
                reasoning_content,
            } => {
                let reasoning = reasoning_content.unwrap_or_default();
                Deltas {
                    reasoning: reasoning.clone(),
                    text: content.clone(),
                }
                .emit(on_event);
                completion.text = json!({"content": content, "tool_calls": tool_calls}).to_string();
                completion.completion_tokens = self.count(&completion.text);
                completion.content = content;
                completion.reasoning = reasoning;
                completion.tool_calls = tool_calls;
            }
        }
        completion.reasoning_tokens = self.count(&completion.reasoning);
        Ok(completion)
    }
}

/// Batches a slow prefill is reported in.
const PREFILL_BATCHES: usize = 8;

/// Plays the prefill of `tokens` over `ms` (none when 0), reported after
/// each batch as the engine does.
fn play_prefill(tokens: usize, ms: u64, on_event: &mut dyn FnMut(Event<'_>) -> Flow) -> Flow {
    if ms == 0 {
        return Flow::Continue;
    }
    let pause = std::time::Duration::from_millis(ms / PREFILL_BATCHES as u64);
    for batch in 1..=PREFILL_BATCHES {
        std::thread::sleep(pause);
        let done = tokens * batch / PREFILL_BATCHES;
        if on_event(Event::Prefill {
            done,
            total: tokens,
        }) == Flow::Stop
        {
            return Flow::Stop;
        }
    }
    Flow::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::TemplateSource;

    #[test]
    fn replays_turns_in_order_then_reports_exhaustion() {
        let mut p = ScriptedProvider::new(vec!["first answer".into(), "second".into()]);
        let req = CompletionRequest::new(vec![Message::user("q")]);
        let mut streamed = String::new();
        let c = p
            .complete(&req, &mut |e| {
                if let Event::Text(t) = e {
                    streamed.push_str(t)
                }
                Flow::Continue
            })
            .unwrap();
        assert_eq!(
            (c.content.as_str(), streamed.as_str()),
            ("first answer", "first answer")
        );
        assert_eq!(
            p.complete(&req, &mut |_| Flow::Continue).unwrap().content,
            "second"
        );
        assert!(matches!(
            p.complete(&req, &mut |_| Flow::Continue),
            Err(LlmError::ScriptExhausted(2))
        ));
        assert_eq!(p.requests.len(), 3);
    }

    /// A caller hands its stop flag over in the request, and its callback
    /// need not check it: the provider stops at its next event.
    #[test]
    fn a_set_interrupt_stops_the_stream_though_the_callback_goes_on() {
        let stop = agent_base::cancel::CancelToken::new();
        let mut p = ScriptedProvider::new(vec!["one two three four five".into()]);
        let req = CompletionRequest {
            interrupt: Some(stop.clone()),
            ..CompletionRequest::new(vec![Message::user("q")])
        };
        let mut streamed = String::new();
        let c = p
            .complete(&req, &mut |e| {
                if let Event::Text(t) = e {
                    streamed.push_str(t);
                    stop.cancel();
                }
                Flow::Continue
            })
            .unwrap();
        assert_eq!(c.finish, FinishReason::Cancelled);
        assert_eq!(streamed, "one ");
    }

    #[test]
    fn reads_strings_raw_and_parsed_turns_from_a_script_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(
            &path,
            r#"["a", {"content": "b"}, {"content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"x\"}"}}]}]"#,
        )
        .unwrap();
        let p = ScriptedProvider::from_file(&path).unwrap();
        assert_eq!(p.remaining(), 3);
        assert_eq!(
            p.turns[1],
            ScriptTurn::Raw {
                content: "b".into(),
                pace_ms: 0,
                prefill_ms: 0
            }
        );
        assert!(
            matches!(&p.turns[2], ScriptTurn::Parsed { tool_calls, .. } if tool_calls[0].name == "grep")
        );
        std::fs::write(&path, "{not json").unwrap();
        assert!(ScriptedProvider::from_file(&path).is_err());
    }

    #[test]
    fn native_turns_are_read_in_the_family_syntax_and_think_text_is_not_searched() {
        let source = std::fs::read_to_string(format!(
            "{}/../agent-chat/tests/fixtures/templates/Qwen-Qwen3-0.6B.jinja",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let format = ChatFormat::select(
            Some(TemplateSource {
                name: "qwen3".into(),
                text: source,
            }),
            agent_chat::SpecialTokens::default(),
            None,
        );
        let turn = "<think>\nMaybe <tool_call>\n{\"name\": \"run_cmd\", \"arguments\": {}}\n</tool_call>?\n</think>\n\nLet me grep.\n<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"add\"}}\n</tool_call>";
        let mut p = ScriptedProvider::new(vec![turn.into()]).with_format(format);
        let req = CompletionRequest {
            tools: vec![
                ToolSpec::new(
                    "grep",
                    "Search.",
                    json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
                ),
                ToolSpec::new("run_cmd", "Run.", json!({"type": "object"})),
            ],
            ..CompletionRequest::new(vec![Message::user("where is add?")])
        };
        let (mut text, mut reasoning) = (String::new(), String::new());
        let c = p
            .complete(&req, &mut |e| {
                match e {
                    Event::Text(t) => text.push_str(t),
                    Event::Reasoning(t) => reasoning.push_str(t),
                    _ => {}
                }
                Flow::Continue
            })
            .unwrap();
        assert_eq!(c.tool_calls.len(), 1, "{c:?}");
        assert_eq!(c.tool_calls[0].name, "grep");
        assert_eq!(c.content, "Let me grep.");
        assert!(c.reasoning.contains("Maybe"), "{c:?}");
        assert!(
            reasoning.contains("Maybe") && !text.contains("tool_call"),
            "{text}"
        );
        assert!(
            p.prompts[0].text.contains("<tools>"),
            "{}",
            p.prompts[0].text
        );
    }
}
