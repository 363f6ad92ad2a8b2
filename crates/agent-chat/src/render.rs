//! Rendering a Hugging Face chat template with minijinja, in the settings of
//! `transformers`' `apply_chat_template`: `trim_blocks`, `lstrip_blocks`,
//! `{% break %}`/`{% continue %}`, `raise_exception`, `strftime_now`, a
//! `tojson` that writes what Python's `json.dumps` writes, Python's string and
//! dict methods, and `bos_token`/`eos_token`/`add_generation_prompt`/`tools`.

use std::sync::Arc;

use minijinja::value::Kwargs;
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::{Map, Value as Json};

use crate::adapt::{adapt, Adapted, Capabilities};
use crate::clock::{system_clock, Clock};
use crate::family::Family;
use crate::message::{Message, ToolSpec};
use crate::pyjson::{dumps, to_value, DumpOptions};

pub use crate::error::TemplateError;

/// The `bos_token` and `eos_token` a template prints (from the GGUF's vocabulary).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    pub bos: String,
    pub eos: String,
}

impl SpecialTokens {
    pub fn new(bos: impl Into<String>, eos: impl Into<String>) -> Self {
        Self {
            bos: bos.into(),
            eos: eos.into(),
        }
    }
}

/// How to render one request.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// End with the opening of the assistant's turn (always true for generation).
    pub add_generation_prompt: bool,
    /// Turn the template's reasoning switch on or off (`enable_thinking`,
    /// `thinking`, `reasoning_effort`); `None` keeps the template's default.
    pub thinking: Option<bool>,
    /// More template variables (`reasoning_effort`, `builtin_tools`, ...);
    /// they win over everything above.
    pub kwargs: Map<String, Json>,
}

impl RenderOptions {
    /// Options for a prompt the model continues.
    pub fn generation() -> Self {
        Self {
            add_generation_prompt: true,
            ..Self::default()
        }
    }
}

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    /// The prompt ends inside an opened reasoning block (`<think>`): the
    /// model's output starts with reasoning, and parsing must know it.
    pub reasoning_open: bool,
}

/// The variable a template reads to turn reasoning on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingSwitch {
    /// `enable_thinking` (Qwen3): true or false.
    EnableThinking,
    /// `thinking` (DeepSeek V3.1, Granite 3.3): true or false.
    Thinking,
    /// `reasoning_effort` (gpt-oss): cannot be off; "low" is the least.
    ReasoningEffort,
}

impl ThinkingSwitch {
    fn detect(source: &str) -> Option<Self> {
        if source.contains("enable_thinking") {
            Some(Self::EnableThinking)
        } else if source.contains("reasoning_effort") {
            Some(Self::ReasoningEffort)
        } else if [
            "thinking is defined",
            "if thinking",
            "and thinking",
            "not thinking",
        ]
        .iter()
        .any(|use_| source.contains(use_))
        {
            Some(Self::Thinking)
        } else {
            None
        }
    }

    /// The template variable and its value for `on`, if there is one to set.
    pub fn kwarg(self, on: bool) -> Option<(&'static str, Json)> {
        match self {
            Self::EnableThinking => Some(("enable_thinking", Json::Bool(on))),
            Self::Thinking => Some(("thinking", Json::Bool(on))),
            Self::ReasoningEffort => (!on).then(|| ("reasoning_effort", Json::from("low"))),
        }
    }
}

/// A compiled chat template together with what it can render (probed once)
/// and the family its model belongs to.
pub struct ChatTemplate {
    jinja: Jinja,
    family: Family,
    capabilities: Capabilities,
    thinking_switch: Option<ThinkingSwitch>,
    thinks: bool,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("name", &self.jinja.name)
            .field("family", &self.family)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

/// ChatML, the fallback for models whose own template is missing or unusable.
pub const CHATML: &str = "{%- for message in messages %}\
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}\
{%- endfor %}\
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

impl ChatTemplate {
    /// Compiles `source` (Jinja) and probes what it can render. `name` says
    /// where it came from in error messages ("the GGUF's template",
    /// a file path). Fails if the template does not parse, or cannot render
    /// a conversation of one user message.
    pub fn new(
        name: impl Into<String>,
        source: &str,
        tokens: SpecialTokens,
    ) -> Result<Self, TemplateError> {
        Self::with_clock(name, source, tokens, system_clock())
    }

    /// Like [`ChatTemplate::new`], with the clock `strftime_now` reads.
    pub fn with_clock(
        name: impl Into<String>,
        source: &str,
        tokens: SpecialTokens,
        clock: Clock,
    ) -> Result<Self, TemplateError> {
        let jinja = Jinja::new(name.into(), source, tokens, clock)?;
        // A template that cannot render one request is of no use: say so now.
        jinja.render(
            &serde_json::json!([{"role": "user", "content": "Hey"}]),
            None,
            true,
            &Map::new(),
        )?;
        let capabilities = Capabilities::probe(&|messages, tools| {
            jinja.render(messages, tools, false, &Map::new())
        });
        let family = Family::detect(source);
        let thinks = ["<think>", "reasoning_content", "enable_thinking"]
            .iter()
            .any(|marker| source.contains(marker))
            || matches!(family, Family::GptOss | Family::CommandR7B);
        Ok(Self {
            jinja,
            family,
            capabilities,
            thinking_switch: ThinkingSwitch::detect(source),
            thinks,
        })
    }

    /// The ChatML fallback (tools described in the system message, calls in
    /// our JSON).
    #[allow(
        clippy::expect_used,
        reason = "a constant template, compiled by every test that renders ChatML"
    )]
    pub fn chatml() -> Self {
        Self::new("ChatML (built in)", CHATML, SpecialTokens::default())
            .expect("the built-in ChatML template compiles")
    }

    pub fn name(&self) -> &str {
        &self.jinja.name
    }

    pub fn family(&self) -> Family {
        self.family
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    pub fn tokens(&self) -> &SpecialTokens {
        &self.jinja.tokens
    }

    /// Whether the model reasons before it answers (`--think auto` turns
    /// reasoning on for these).
    pub fn thinks(&self) -> bool {
        self.thinks
    }

    pub fn thinking_switch(&self) -> Option<ThinkingSwitch> {
        self.thinking_switch
    }

    /// Replaces the clock `strftime_now` reads.
    pub fn set_clock(&mut self, clock: Clock) {
        self.jinja.set_clock(clock);
    }

    /// `messages` and `tools` in the shape this template renders them (what
    /// `--print-prompt --json` shows as the request).
    pub fn adapt(&self, messages: &[Message], tools: &[ToolSpec]) -> Adapted {
        adapt(messages, tools, &self.capabilities, self.family)
    }

    /// The prompt for `messages` and `tools`: the messages adapted to what
    /// the template can render (see [`crate::adapt`]), then rendered.
    pub fn render(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        options: &RenderOptions,
    ) -> Result<Prompt, TemplateError> {
        let adapted = self.adapt(messages, tools);
        let mut kwargs = Map::new();
        if let (Some(on), Some(switch)) = (options.thinking, self.thinking_switch) {
            if let Some((name, value)) = switch.kwarg(on) {
                kwargs.insert(name.to_string(), value);
            }
        }
        kwargs.extend(options.kwargs.clone());
        let text = self.render_json(
            &adapted.messages,
            adapted.tools.as_ref(),
            options.add_generation_prompt,
            &kwargs,
        )?;
        let reasoning_open = self
            .family
            .think_tags()
            .is_some_and(|(open, _)| text.trim_end().ends_with(open));
        Ok(Prompt {
            text,
            reasoning_open,
        })
    }

    /// Renders messages already in the template's shape (no adaptation):
    /// an array of OpenAI-format message objects, and the tools array or none.
    pub fn render_json(
        &self,
        messages: &Json,
        tools: Option<&Json>,
        add_generation_prompt: bool,
        kwargs: &Map<String, Json>,
    ) -> Result<String, TemplateError> {
        self.jinja
            .render(messages, tools, add_generation_prompt, kwargs)
    }
}

/// Marks errors that come from the template's own `raise_exception`.
const RAISED: &str = "raise_exception: ";

/// The minijinja environment holding one compiled template.
struct Jinja {
    name: String,
    tokens: SpecialTokens,
    env: Environment<'static>,
}

impl Jinja {
    fn new(
        name: String,
        source: &str,
        tokens: SpecialTokens,
        clock: Clock,
    ) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| TemplateError::Syntax {
                template: name.clone(),
                detail: e.to_string(),
            })?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<Value, Error> {
                Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("{RAISED}{message}"),
                ))
            },
        );
        let mut jinja = Self { name, tokens, env };
        jinja.set_clock(clock);
        jinja
            .env
            .add_template_owned(jinja.name.clone(), without_generation_tags(source))
            .map_err(|e| TemplateError::Syntax {
                template: jinja.name.clone(),
                detail: e.to_string(),
            })?;
        Ok(jinja)
    }

    fn set_clock(&mut self, clock: Clock) {
        let clock = Arc::clone(&clock);
        self.env
            .add_function("strftime_now", move |format: String| {
                clock().strftime(&format)
            });
    }

    fn render(
        &self,
        messages: &Json,
        tools: Option<&Json>,
        add_generation_prompt: bool,
        kwargs: &Map<String, Json>,
    ) -> Result<String, TemplateError> {
        let mut context: Vec<(String, Value)> = vec![
            ("messages".into(), to_value(messages)),
            ("tools".into(), tools.map_or(Value::from(()), to_value)),
            ("documents".into(), Value::from(())),
            (
                "add_generation_prompt".into(),
                Value::from(add_generation_prompt),
            ),
            ("bos_token".into(), Value::from(self.tokens.bos.as_str())),
            ("eos_token".into(), Value::from(self.tokens.eos.as_str())),
        ];
        context.extend(kwargs.iter().map(|(k, v)| (k.clone(), to_value(v))));
        self.env
            .get_template(&self.name)
            .and_then(|template| template.render(Value::from_pairs(context)))
            .map_err(|e| match e.detail() {
                Some(detail) if detail.starts_with(RAISED) => TemplateError::Raised {
                    template: self.name.clone(),
                    message: detail[RAISED.len()..].to_string(),
                },
                _ => TemplateError::Render {
                    template: self.name.clone(),
                    detail: e.to_string(),
                },
            })
    }
}

/// Hugging Face's `{% generation %}…{% endgeneration %}` marks assistant
/// text for training masks and renders nothing; minijinja does not know the
/// tag, so it is removed (keeping its content).
fn without_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        let Some(len) = rest[start..].find("%}") else {
            break;
        };
        let tag = &rest[start..start + len + 2];
        let word =
            tag[2..tag.len() - 2].trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        out.push_str(&rest[..start]);
        if word != "generation" && word != "endgeneration" {
            out.push_str(tag);
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// Hugging Face's `tojson`: `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`.
fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match kwargs.get::<Option<Value>>("indent")?.or(indent) {
        Some(v) if v.is_none() || v.is_undefined() => None,
        Some(v) if v.is_integer() => Some(" ".repeat(v.as_i64().unwrap_or(0).max(0) as usize)),
        Some(v) => Some(v.as_str().map(str::to_string).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                "tojson: indent must be an integer or a string",
            )
        })?),
        None => None,
    };
    let separators = match kwargs.get::<Option<Value>>("separators")? {
        Some(v) if !v.is_none() => {
            let parts: Vec<String> = v
                .try_iter()?
                .map(|p| p.as_str().unwrap_or_default().to_string())
                .collect();
            match <[String; 2]>::try_from(parts) {
                Ok([item, key]) => Some((item, key)),
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be two strings",
                    ))
                }
            }
        }
        _ => None,
    };
    let options = DumpOptions {
        indent,
        separators,
        sort_keys: kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
        ensure_ascii: kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    Ok(Value::from(dumps(value, &options)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{fixed_clock, DateTime};
    use serde_json::json;

    fn template(source: &str) -> ChatTemplate {
        ChatTemplate::with_clock(
            "test",
            source,
            SpecialTokens::new("<s>", "</s>"),
            fixed_clock(DateTime::new(2025, 3, 14, 9, 26, 53)),
        )
        .unwrap()
    }

    fn render(source: &str, messages: Json) -> Result<String, TemplateError> {
        template(source).render_json(&messages, None, true, &Map::new())
    }

    #[test]
    fn hugging_face_helpers_are_there() {
        let out = render(
            "{{ bos_token }}{{ strftime_now('%d %b %Y') }}|{{ messages[0].content.strip().upper() }}\
             |{{ {'b': 'é', 'a': [1, 2.5]} | tojson }}|{{ messages | map(attribute='role') | tojson }}\
             {% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}|{{ m.get('role') }}{% endfor %}",
            json!([{"role": "user", "content": "  hi "}, {"role": "assistant", "content": "x"}]),
        )
        .unwrap();
        assert_eq!(
            out,
            "<s>14 Mar 2025|HI|{\"b\": \"é\", \"a\": [1, 2.5]}|[\"user\", \"assistant\"]|user"
        );
    }

    #[test]
    fn blocks_trim_like_transformers() {
        let out = render(
            "{% for m in messages %}\n    {% if m.role == 'user' %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}\n",
            json!([{"role": "user", "content": "a"}]),
        )
        .unwrap();
        assert_eq!(out, "[a]\n");
    }

    #[test]
    fn errors_name_the_template_and_say_what_went_wrong() {
        let err = ChatTemplate::new("my.jinja", "{% if %}", SpecialTokens::default()).unwrap_err();
        assert!(
            matches!(&err, TemplateError::Syntax { template, .. } if template == "my.jinja"),
            "{err}"
        );
        let refuses_system = "{% if messages[0].role == 'system' %}\
            {{ raise_exception('No system role!') }}{% endif %}ok";
        let err = render(refuses_system, json!([{"role": "system", "content": "x"}])).unwrap_err();
        assert_eq!(
            err,
            TemplateError::Raised {
                template: "test".into(),
                message: "No system role!".into()
            }
        );
        assert!(
            err.to_string().contains("chat template test refused"),
            "{err}"
        );
        let two = "{% if messages|length > 1 %}{{ 1 + messages }}{% endif %}";
        let err = render(two, json!([{}, {}])).unwrap_err();
        assert!(matches!(err, TemplateError::Render { .. }), "{err}");
        // A template that renders no conversation at all fails at once.
        let err = ChatTemplate::new(
            "bad.jinja",
            "{{ messages[0].content.nope() }}",
            SpecialTokens::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("chat template bad.jinja failed to render"),
            "{err}"
        );
    }

    #[test]
    fn generation_tags_are_dropped_with_their_content_kept() {
        assert_eq!(
            without_generation_tags("a{%- generation %}b{% endgeneration -%}c{% if x %}"),
            "abc{% if x %}"
        );
    }

    #[test]
    fn chatml_renders_the_conversation() {
        let prompt = ChatTemplate::chatml()
            .render(
                &[Message::system("be brief"), Message::user("hi")],
                &[],
                &RenderOptions::generation(),
            )
            .unwrap();
        assert_eq!(
            prompt.text,
            "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
        assert!(!prompt.reasoning_open);
    }

    #[test]
    fn chatml_describes_tools_and_writes_calls_as_our_json() {
        let chatml = ChatTemplate::chatml();
        assert_eq!(chatml.family(), Family::Generic);
        let tools = [ToolSpec::new(
            "grep",
            "Search.",
            json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}),
        )];
        let call = crate::ToolCall::new("c1", "grep", json!({"pattern": "x"}));
        let messages = [
            Message::system("Be brief."),
            Message::user("Find x."),
            Message::assistant_calls("", vec![call]),
            Message::tool_result("c1", "grep", "a.rs:1: x"),
        ];
        let prompt = chatml
            .render(&messages, &tools, &RenderOptions::generation())
            .unwrap();
        let want = "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou can call these tools:\n\
            - grep: Search.\n  arguments: {\"pattern\": string}\n\nTo call a tool, write:\n\
            {\"tool\": \"tool_name\", \"args\": {\"argument_name\": \"value\"}}<|im_end|>\n\
            <|im_start|>user\nFind x.<|im_end|>\n\
            <|im_start|>assistant\n{\"tool\": \"grep\", \"args\": {\"pattern\": \"x\"}}<|im_end|>\n\
            <|im_start|>user\nTool result (grep):\na.rs:1: x<|im_end|>\n<|im_start|>assistant\n";
        assert_eq!(prompt.text, want);
    }
}
