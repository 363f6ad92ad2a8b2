//! The model's own language, as the in-process engine and the replay share
//! it: which chat template renders the prompt (the model's own through
//! `agent_chat`, else llama.cpp's built-in matcher, else ChatML), what the
//! model may write (its family's call grammar, lazy where the family answers
//! in text), and how its turn is read back (`agent_chat::parse_turn`).
//!
//! Templates without tools (Gemma, Phi, SmolLM2, ChatML) are the `Generic`
//! family: calls in our JSON (`{"tool": NAME, "args": {…}}`) under a grammar
//! from the first token, and the answer is the `finish` call, which this
//! module adds to their tools and turns back into the turn's text. So the
//! loop sees one shape for every model: text (the answer) or calls.

use std::sync::Arc;

use agent_chat::family::AnswerForm;
use agent_chat::{
    grammar, parse, ChatTemplate, Family, Message, ParseError, ParsedTurn, RenderOptions,
    SpecialTokens, TemplateError, ToolCall, ToolSpec,
};
use serde::Serialize;
use serde_json::json;

use crate::{CompletionRequest, Grammar, ToolChoice};

/// `--think`: whether a model reasons before it answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Think {
    Off,
    On,
    /// On for templates that think (Qwen3, QwQ, DeepSeek R1, gpt-oss, ...).
    #[default]
    Auto,
}

impl std::str::FromStr for Think {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(Think::On),
            "off" => Ok(Think::Off),
            "auto" => Ok(Think::Auto),
            other => Err(format!(
                "`{other}` is not a thinking mode; use on, off or auto"
            )),
        }
    }
}

/// Which template renders the prompts, as `agent doctor` and `--json` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateInfo {
    /// Where it came from: "the GGUF's template", a file, llama.cpp's
    /// built-in matcher, or ChatML.
    pub source: String,
    /// How the model writes calls (`agent_chat::Family::name`).
    pub family: String,
    /// Why the model's own template is not the one used, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Whether the template has the model reason first.
    pub thinks: bool,
}

/// llama.cpp's built-in template matcher: `(role, content)` pairs to a
/// prompt, or why it cannot.
pub type BuiltinRender = Arc<dyn Fn(&[(String, String)]) -> Result<String, String> + Send + Sync>;

/// The tool that ends a turn with the answer, for the `Generic` family.
pub const FINISH: &str = "finish";

/// The `finish` tool as `Generic` templates describe it.
pub fn finish_tool() -> ToolSpec {
    ToolSpec::new(
        FINISH,
        "End your turn: give the final answer, or a short summary of what you did, to the user.",
        json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
    )
}

/// A prompt ready to generate from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// The prompt ends inside an opened reasoning block.
    pub reasoning_open: bool,
    /// This turn reasons first (`--think`, resolved for the template).
    pub thinking: bool,
    pub family: Family,
}

/// How the call grammar applies to a turn's answer (what follows any
/// reasoning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constraint {
    /// The answer follows the grammar from its first token.
    Full(Grammar),
    /// The answer is free until a trigger fires (the family's opener, after
    /// the reasoning); from there the grammar applies.
    Lazy {
        grammar: Grammar,
        /// ECMAScript regexes matched from the start of the answer; the
        /// grammar is fed from group 1.
        trigger_patterns: Vec<String>,
        /// The openers as text (a single-token opener can trigger by id).
        trigger_words: Vec<String>,
    },
}

impl Constraint {
    pub fn grammar(&self) -> &Grammar {
        match self {
            Constraint::Full(g) | Constraint::Lazy { grammar: g, .. } => g,
        }
    }
}

/// The template a model's prompts are rendered with, chosen once per model
/// with its fallbacks, and the reading of its turns.
pub struct ChatFormat {
    renderer: Renderer,
    info: TemplateInfo,
    /// llama.cpp's matcher, kept as the next fallback should the template
    /// refuse a later conversation.
    builtin: Option<Builtin>,
    /// Texts that must stay text inside messages (control tokens, the
    /// family's markers).
    vocab_specials: Vec<String>,
    defuser: Defuser,
    pub think: Think,
}

#[derive(Clone)]
struct Builtin {
    name: String,
    render: BuiltinRender,
}

enum Renderer {
    Jinja(ChatTemplate),
    /// Messages adapted as for ChatML (tools described, calls in our
    /// JSON), then rendered by llama.cpp's matcher.
    Builtin(Builtin, ChatTemplate),
}

impl std::fmt::Debug for ChatFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatFormat")
            .field("info", &self.info)
            .field("think", &self.think)
            .finish_non_exhaustive()
    }
}

/// A template to try: where it came from and its Jinja text.
#[derive(Debug, Clone)]
pub struct TemplateSource {
    pub name: String,
    pub text: String,
}

impl TemplateSource {
    /// A template file (`--chat-template-file`), named by its path.
    pub fn read(path: &std::path::Path) -> Result<Self, crate::LlmError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            crate::LlmError::Template(format!(
                "cannot read the chat template {}: {e}\n  fix: pass --chat-template-file a readable Jinja file, or leave it out to use the model's own",
                path.display()
            ))
        })?;
        Ok(Self {
            name: path.display().to_string(),
            text,
        })
    }
}

impl ChatFormat {
    /// The first that works of: `own` (the GGUF's template or
    /// `--chat-template-file`) rendered by `agent_chat`, llama.cpp's
    /// `builtin` matcher, ChatML. A fallback logs a warning that names the
    /// template and why it was not used; [`ChatFormat::info`] keeps it.
    pub fn select(
        own: Option<TemplateSource>,
        tokens: SpecialTokens,
        builtin: Option<(String, BuiltinRender)>,
    ) -> Self {
        let builtin = builtin.map(|(name, render)| Builtin { name, render });
        let reason = match own {
            Some(source) => match ChatTemplate::new(&source.name, &source.text, tokens) {
                Ok(template) => return Self::new(Renderer::Jinja(template), builtin, None),
                Err(e) => e.to_string(),
            },
            None => "the model has no chat template".to_string(),
        };
        Self::fallback_from(builtin, reason)
    }

    /// The built-in ChatML template (replays without a model).
    pub fn chatml() -> Self {
        Self::new(Renderer::Jinja(ChatTemplate::chatml()), None, None)
    }

    /// The next usable renderer after one that failed for `reason`.
    fn fallback_from(builtin: Option<Builtin>, reason: String) -> Self {
        if let Some(b) = builtin
            .as_ref()
            .filter(|b| (b.render)(&[("user".to_string(), "Hey".to_string())]).is_ok())
        {
            let note = format!("{reason}; using {} instead", b.name);
            tracing::warn!("{note}");
            return Self::new(
                Renderer::Builtin(b.clone(), ChatTemplate::chatml()),
                None,
                Some(note),
            );
        }
        let note = format!("{reason}; using ChatML instead");
        tracing::warn!("{note}");
        Self::new(Renderer::Jinja(ChatTemplate::chatml()), None, Some(note))
    }

    fn new(renderer: Renderer, builtin: Option<Builtin>, fallback: Option<String>) -> Self {
        let (source, template) = match &renderer {
            Renderer::Jinja(t) => (t.name().to_string(), t),
            Renderer::Builtin(b, chatml) => (b.name.clone(), chatml),
        };
        let info = TemplateInfo {
            source,
            family: template.family().name().to_string(),
            fallback,
            thinks: template.thinks(),
        };
        let mut format = Self {
            renderer,
            info,
            builtin,
            vocab_specials: Vec::new(),
            defuser: Defuser::default(),
            think: Think::Auto,
        };
        format.defuser = format.make_defuser();
        format
    }

    /// Adds the vocabulary's control-token texts to what is defused inside
    /// messages.
    pub fn with_specials(mut self, specials: Vec<String>) -> Self {
        self.vocab_specials = specials;
        self.defuser = self.make_defuser();
        self
    }

    fn make_defuser(&self) -> Defuser {
        let mut markers = self.vocab_specials.clone();
        markers.extend(family_markers(self.family()).iter().map(|m| m.to_string()));
        Defuser::new(markers)
    }

    pub fn info(&self) -> &TemplateInfo {
        &self.info
    }

    fn template(&self) -> &ChatTemplate {
        match &self.renderer {
            Renderer::Jinja(t) | Renderer::Builtin(_, t) => t,
        }
    }

    pub fn family(&self) -> Family {
        self.template().family()
    }

    /// The `bos_token` and `eos_token` the template prints.
    pub fn tokens(&self) -> &SpecialTokens {
        self.template().tokens()
    }

    /// Whether `request` reasons first: its own choice, else `--think`
    /// (auto: when the template thinks).
    pub fn thinking(&self, request: &CompletionRequest) -> bool {
        request.thinking.unwrap_or(match self.think {
            Think::On => true,
            Think::Off => false,
            Think::Auto => self.template().thinks(),
        })
    }

    /// The tools the prompt shows: the request's, and `finish` where the
    /// family answers with it.
    pub fn prompt_tools(&self, request: &CompletionRequest) -> Vec<ToolSpec> {
        let mut tools = request.tools.clone();
        if self.family() == Family::Generic && !tools.is_empty() {
            tools.push(finish_tool());
        }
        tools
    }

    /// The request's messages with control texts defused.
    pub fn messages(&self, request: &CompletionRequest) -> Vec<Message> {
        self.defuser.messages(&request.messages)
    }

    /// The prompt for `request`. A template that refuses the conversation is
    /// replaced by the next fallback (with a warning naming it), for this
    /// request and the rest of the session.
    pub fn render(&mut self, request: &CompletionRequest) -> Rendered {
        loop {
            match self.try_render(request) {
                Ok(rendered) => return rendered,
                Err(e) => self.demote(e.to_string()),
            }
        }
    }

    /// Replaces the renderer that failed for `reason` by the next fallback.
    fn demote(&mut self, reason: String) {
        let is_chatml = matches!(&self.renderer, Renderer::Jinja(t) if t.name() == ChatTemplate::chatml().name());
        assert!(!is_chatml, "the built-in ChatML template failed: {reason}");
        let builtin = match &self.renderer {
            Renderer::Jinja(_) => self.builtin.take(),
            Renderer::Builtin(..) => None,
        };
        let think = self.think;
        let specials = std::mem::take(&mut self.vocab_specials);
        *self = Self::fallback_from(builtin, reason).with_specials(specials);
        self.think = think;
    }

    /// Tokens the conversation takes as this format renders it, counted by
    /// `count`; where the template refuses it (the request will fall back),
    /// [`crate::estimate_prompt_tokens`].
    pub fn count_prompt_tokens(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        count: &dyn Fn(&str) -> Result<usize, crate::LlmError>,
    ) -> Result<usize, crate::LlmError> {
        let request = CompletionRequest {
            tools: tools.to_vec(),
            ..CompletionRequest::new(messages.to_vec())
        };
        match self.try_render(&request) {
            Ok(rendered) => count(&rendered.text),
            Err(_) => crate::estimate_prompt_tokens(messages, tools, count),
        }
    }

    /// The prompt for `request`, or why the template refused it (no fallback).
    pub fn try_render(&self, request: &CompletionRequest) -> Result<Rendered, TemplateError> {
        let thinking = self.thinking(request);
        let messages = self.messages(request);
        let tools = self.prompt_tools(request);
        let (text, reasoning_open) = match &self.renderer {
            Renderer::Jinja(template) => {
                let options = RenderOptions {
                    thinking: Some(thinking),
                    ..RenderOptions::generation()
                };
                let prompt = template.render(&messages, &tools, &options)?;
                (prompt.text, prompt.reasoning_open)
            }
            Renderer::Builtin(builtin, chatml) => {
                let adapted = chatml.adapt(&messages, &tools);
                let pairs: Vec<(String, String)> = adapted
                    .messages
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|m| {
                        let text = |k: &str| m[k].as_str().unwrap_or_default().to_string();
                        (text("role"), text("content"))
                    })
                    .collect();
                let text = (builtin.render)(&pairs).map_err(|detail| TemplateError::Render {
                    template: builtin.name.clone(),
                    detail,
                })?;
                (text, false)
            }
        };
        Ok(Rendered {
            text,
            reasoning_open,
            thinking,
            family: self.family(),
        })
    }

    /// `messages` and `tools` in the shape the template renders them, for
    /// `--print-prompt --json`.
    pub fn adapted(&self, request: &CompletionRequest) -> agent_chat::adapt::Adapted {
        self.template()
            .adapt(&self.messages(request), &self.prompt_tools(request))
    }

    /// The grammar a turn's answer is generated under, if any.
    pub fn constraint(&self, request: &CompletionRequest) -> Option<Constraint> {
        if let Some(g) = &request.grammar {
            return Some(Constraint::Full(g.clone()));
        }
        if request.tools.is_empty() {
            return None;
        }
        let family = self.family();
        let callable = request.callable();
        if family == Family::Generic {
            // Our JSON from the first token: a call, or the finish call.
            let mut tools = callable;
            if request.tool_choice != ToolChoice::Required || tools.is_empty() {
                tools.push(finish_tool());
            }
            let g = grammar::call_grammar(family, &tools, false)?;
            return Some(Constraint::Full(Grammar {
                gbnf: g.gbnf,
                root: g.root,
            }));
        }
        // The grammar is made once the reasoning is over (see the engine),
        // so its triggers never see reasoning.
        let g = grammar::call_grammar(family, &callable, false)?;
        let gbnf = Grammar {
            gbnf: g.gbnf,
            root: g.root,
        };
        Some(match request.tool_choice {
            ToolChoice::Required => Constraint::Full(gbnf),
            _ => Constraint::Lazy {
                grammar: gbnf,
                trigger_patterns: g.trigger_patterns,
                trigger_words: g.trigger_words,
            },
        })
    }

    /// Where a call begins in a turn's answer (the text after its
    /// reasoning): what a turn that may not call is cut at.
    pub fn call_start(&self, answer: &str) -> Option<usize> {
        let family = self.family();
        if family == Family::Generic {
            return None;
        }
        let opener = family.openers().iter().filter_map(|o| answer.find(o)).min();
        if family == Family::Llama3 {
            let trimmed = answer.trim_start();
            if trimmed.starts_with("{\"name\"") || trimmed.starts_with("{\"type\"") {
                return Some(answer.len() - trimmed.len());
            }
        }
        opener
    }

    /// Reads a generated turn: reasoning, text and calls. Calls are checked
    /// against the tools the prompt showed (a call of one not allowed now
    /// is the loop's to refuse); a `Generic` turn's `finish` call becomes
    /// its text.
    pub fn parse(
        &self,
        text: &str,
        request: &CompletionRequest,
        reasoning_open: bool,
    ) -> Result<ParsedTurn, ParseError> {
        let family = self.family();
        if request.tools.is_empty() {
            // No calls to look for: everything after the reasoning is text.
            let (reasoning, rest, unclosed) = parse::split_reasoning(family, text, reasoning_open);
            let content = match family.answer_form() {
                AnswerForm::Text => rest.trim().to_string(),
                _ => parse::parse_turn(family, rest, &parse::ParseOptions::default())
                    .map(|t| t.content)
                    .unwrap_or_else(|_| rest.trim().to_string()),
            };
            return Ok(ParsedTurn {
                reasoning: reasoning.trim().to_string(),
                content,
                calls: Vec::new(),
                reasoning_unclosed: unclosed,
            });
        }
        let tools = self.prompt_tools(request);
        let options = parse::ParseOptions {
            reasoning_open,
            tools: &tools,
        };
        let mut turn = parse::parse_turn(family, text, &options)?;
        if family == Family::Generic {
            answer_from_finish(&mut turn)?;
        }
        Ok(turn)
    }
}

/// A `Generic` turn answers with the `finish` call: its answer becomes the
/// turn's text. A turn with neither a call nor a finish is no reply at all.
fn answer_from_finish(turn: &mut ParsedTurn) -> Result<(), ParseError> {
    let fail = |problem: &str| {
        let example = ToolCall::new("", FINISH, json!({"answer": "..."}));
        let call = ToolCall::new("", "tool_name", json!({"argument_name": "value"}));
        ParseError {
            message: format!(
                "{problem}. Reply with exactly one JSON tool call, like this:\n{}\nor end with your answer:\n{}",
                Family::Generic.format_calls(&[call]),
                Family::Generic.format_calls(&[example])
            ),
            reasoning: turn.reasoning.clone(),
        }
    };
    if let Some(at) = turn.calls.iter().position(|c| c.name == FINISH) {
        let finish = turn.calls.remove(at);
        match finish.arguments.get("answer").and_then(|a| a.as_str()) {
            Some(answer) => {
                turn.content = answer.to_string();
                turn.calls.clear();
            }
            None => return Err(fail("finish needs {\"answer\": \"<text>\"}")),
        }
    } else if turn.calls.is_empty() {
        return Err(fail("your reply was not a JSON tool call"));
    }
    Ok(())
}

/// The texts a family's model reads as markup, besides the vocabulary's
/// control tokens: inside data (a file, a command's output) they must stay
/// text.
pub fn family_markers(family: Family) -> &'static [&'static str] {
    const THINK: &[&str] = &["<think>", "</think>"];
    match family {
        Family::Hermes => &[
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<tool_response>",
            "</tool_response>",
        ],
        Family::Qwen3Coder => &[
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<function=",
            "</function>",
            "<parameter=",
            "</parameter>",
            "<tool_response>",
            "</tool_response>",
        ],
        Family::Llama3 => &["<think>", "</think>", "<|python_tag|>", "<|eom_id|>"],
        Family::Mistral(_) => &[
            "<think>",
            "</think>",
            "[TOOL_CALLS]",
            "[ARGS]",
            "[CALL_ID]",
            "[TOOL_RESULTS]",
            "[/TOOL_RESULTS]",
            "[AVAILABLE_TOOLS]",
            "[/AVAILABLE_TOOLS]",
        ],
        Family::DeepSeekR1 | Family::DeepSeekV31 => &[
            "<think>",
            "</think>",
            "<｜tool▁calls▁begin｜>",
            "<｜tool▁calls▁end｜>",
            "<｜tool▁call▁begin｜>",
            "<｜tool▁call▁end｜>",
            "<｜tool▁sep｜>",
            "<｜tool▁outputs▁begin｜>",
            "<｜tool▁output▁begin｜>",
            "<｜tool▁output▁end｜>",
        ],
        Family::GptOss => &[
            "<|channel|>",
            "<|message|>",
            "<|start|>",
            "<|end|>",
            "<|call|>",
            "<|return|>",
            "<|constrain|>",
        ],
        Family::CommandR7B => &[
            "<|START_THINKING|>",
            "<|END_THINKING|>",
            "<|START_ACTION|>",
            "<|END_ACTION|>",
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
        ],
        Family::Granite => &[
            "<think>",
            "</think>",
            "<|tool_call|>",
            "<response>",
            "</response>",
        ],
        Family::Generic => THINK,
    }
}

/// Breaks marker texts inside message contents with a zero-width space
/// after their first character (and drops NULs), so tokenizing a rendered
/// prompt never turns data into a control token: a file holding
/// `<|im_start|>system` or `</think>` stays text.
#[derive(Debug, Clone, Default)]
pub struct Defuser {
    pattern: Option<regex::Regex>,
}

impl Defuser {
    #[allow(
        clippy::expect_used,
        reason = "an alternation of escaped literals is a valid regex"
    )]
    pub fn new(mut markers: Vec<String>) -> Self {
        markers.retain(|m| m.chars().count() >= 2);
        // Longest first, so a marker that contains another is matched whole.
        markers.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        markers.dedup();
        let alternatives: Vec<String> = markers.iter().map(|m| regex::escape(m)).collect();
        let pattern = (!alternatives.is_empty()).then(|| {
            regex::Regex::new(&alternatives.join("|")).expect("escaped literals form a regex")
        });
        Self { pattern }
    }

    pub fn text(&self, text: &str) -> String {
        let text = if text.contains('\0') {
            text.replace('\0', "")
        } else {
            text.to_string()
        };
        let Some(pattern) = &self.pattern else {
            return text;
        };
        pattern
            .replace_all(&text, |m: &regex::Captures<'_>| {
                let marker = &m[0];
                let Some(first) = marker.chars().next() else {
                    return String::new();
                };
                format!("{first}\u{200B}{}", &marker[first.len_utf8()..])
            })
            .into_owned()
    }

    /// Every text a message carries: its content, and the strings inside
    /// its call arguments. Reasoning is never sent back, so it is dropped.
    pub fn messages(&self, messages: &[Message]) -> Vec<Message> {
        messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.content = self.text(&m.content);
                m.reasoning_content = None;
                for call in &mut m.tool_calls {
                    self.json(&mut call.arguments);
                }
                m
            })
            .collect()
    }

    fn json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => *s = self.text(s),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }
}

/// Where a turn's reasoning stands, from the text generated so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningState {
    /// Too little text to tell whether it opens a reasoning block.
    Undecided,
    /// Inside the reasoning block; its text starts at this byte.
    Open { from: usize },
    /// The reasoning ended (or never began): the answer starts at this byte.
    Answer { from: usize },
}

/// The markers a family's reasoning opens and closes with, as the
/// generated text shows them; gpt-oss reasons in its `analysis` channel.
pub fn reasoning_markers(family: Family) -> (&'static str, &'static str) {
    family
        .think_tags()
        .unwrap_or(("<|channel|>analysis<|message|>", "<|end|>"))
}

/// Where the reasoning of `text` stands. `open`: the prompt opened the block.
pub fn reasoning_state(family: Family, text: &str, open: bool) -> ReasoningState {
    let (open_tag, close_tag) = reasoning_markers(family);
    let from = if open {
        0
    } else {
        let trimmed = text.trim_start();
        let lead = text.len() - trimmed.len();
        if trimmed.starts_with(open_tag) {
            lead + open_tag.len()
        } else if open_tag.starts_with(trimmed) {
            return ReasoningState::Undecided;
        } else {
            return ReasoningState::Answer { from: 0 };
        }
    };
    match text[from..].find(close_tag) {
        Some(end) => ReasoningState::Answer {
            from: from + end + close_tag.len(),
        },
        None => ReasoningState::Open { from },
    }
}

/// The text that opens a family's reasoning when the engine opens it.
pub fn reasoning_open_text(family: Family) -> &'static str {
    match family {
        Family::GptOss => "<|channel|>analysis<|message|>",
        Family::CommandR7B => "<|START_THINKING|>",
        _ => "<think>\n",
    }
}

/// Sampling while reasoning, as the makers advise (greedy decoding loops
/// inside think blocks): temperature 0.6 and top-p 0.95 for DeepSeek R1
/// and Qwen3, 1.0 and 1.0 for gpt-oss.
pub fn reasoning_sampling(family: Family, seed: u32) -> crate::Sampling {
    let (temperature, top_p) = match family {
        Family::GptOss => (1.0, 1.0),
        _ => (0.6, 0.95),
    };
    crate::Sampling {
        temperature,
        top_p,
        seed,
        repeat_penalty: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(name: &str) -> String {
        let path = format!(
            "{}/../agent-chat/tests/fixtures/templates/{name}.jinja",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(path).unwrap()
    }

    fn format(name: &str) -> ChatFormat {
        ChatFormat::select(
            Some(TemplateSource {
                name: name.into(),
                text: template(name),
            }),
            SpecialTokens::new("<s>", "</s>"),
            None,
        )
    }

    fn request() -> CompletionRequest {
        CompletionRequest {
            tools: vec![ToolSpec::new(
                "read_file",
                "Read a file.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            )],
            ..CompletionRequest::new(vec![Message::user("Read a.rs")])
        }
    }

    #[test]
    fn a_broken_template_falls_back_and_says_why() {
        let broken = ChatFormat::select(
            Some(TemplateSource {
                name: "bad.jinja".into(),
                text: "{% if %}".into(),
            }),
            SpecialTokens::default(),
            None,
        );
        let note = broken.info().fallback.clone().unwrap();
        assert!(
            note.contains("bad.jinja") && note.contains("ChatML"),
            "{note}"
        );
        assert_eq!(broken.info().source, "ChatML (built in)");
        let builtin: BuiltinRender = Arc::new(|pairs| Ok(format!("{pairs:?}")));
        let refusing = ChatFormat::select(
            Some(TemplateSource {
                name: "gemma.jinja".into(),
                text: "{{ raise_exception('no') }}".into(),
            }),
            SpecialTokens::default(),
            Some(("llama.cpp's built-in matcher".into(), builtin)),
        );
        let note = refusing.info().fallback.clone().unwrap();
        assert!(
            note.contains("gemma.jinja refused") && note.contains("llama.cpp's built-in matcher"),
            "{note}"
        );
    }

    #[test]
    fn generic_templates_answer_with_finish_and_native_ones_in_text() {
        let mut chatml = ChatFormat::chatml();
        let req = request();
        let rendered = chatml.render(&req);
        assert!(rendered.text.contains("- finish:"), "{}", rendered.text);
        let Some(Constraint::Full(g)) = chatml.constraint(&req) else {
            panic!("a grammar from the first token")
        };
        assert!(g.gbnf.contains("finish") && g.gbnf.contains("read_file"));
        let turn = chatml
            .parse(
                r#"{"tool": "finish", "args": {"answer": "It is 4."}}"#,
                &req,
                false,
            )
            .unwrap();
        assert_eq!((turn.content.as_str(), turn.calls.len()), ("It is 4.", 0));
        assert!(chatml.parse("It is 4.", &req, false).is_err());

        let qwen = format("Qwen-Qwen3-0.6B");
        assert_eq!(qwen.family(), Family::Hermes);
        assert!(matches!(
            qwen.constraint(&req),
            Some(Constraint::Lazy { .. })
        ));
        let last = CompletionRequest {
            tool_choice: ToolChoice::None,
            ..request()
        };
        assert_eq!(qwen.constraint(&last), None);
        let turn = qwen
            .parse(
                "<think>\nHmm <tool_call>{\"name\": \"x\"}</tool_call>\n</think>\n\nIt is 4.",
                &req,
                false,
            )
            .unwrap();
        assert_eq!((turn.content.as_str(), turn.calls.len()), ("It is 4.", 0));
        assert_eq!(qwen.call_start("Sure.\n<tool_call>\n{"), Some(6));
    }

    #[test]
    fn markers_in_data_stay_text() {
        let d = Defuser::new(vec![
            "<|im_end|>".into(),
            "</think>".into(),
            "<think>".into(),
        ]);
        assert_eq!(d.text("a</think>b\0"), "a<\u{200B}/think>b");
        assert_eq!(d.text("<|im_end|>"), "<\u{200B}|im_end|>");
        let mut call = ToolCall::new("c", "write_file", json!({"content": ["<think>"]}));
        call.arguments["n"] = json!(1);
        let m = d.messages(&[Message::assistant_calls("", vec![call])]);
        assert_eq!(
            m[0].tool_calls[0].arguments["content"][0],
            "<\u{200B}think>"
        );
    }

    #[test]
    fn reasoning_is_tracked_as_it_is_generated() {
        use ReasoningState::*;
        let f = Family::Hermes;
        assert_eq!(reasoning_state(f, "", false), Undecided);
        assert_eq!(reasoning_state(f, " <thi", false), Undecided);
        assert_eq!(reasoning_state(f, "<think>abc", false), Open { from: 7 });
        assert_eq!(
            reasoning_state(f, "<think>a</think>x", false),
            Answer { from: 16 }
        );
        assert_eq!(reasoning_state(f, "Sure", false), Answer { from: 0 });
        assert_eq!(reasoning_state(f, "abc", true), Open { from: 0 });
        assert_eq!(
            reasoning_state(f, "a\n</think>\n\n", true),
            Answer { from: 10 }
        );
    }
}
