//! Tool-call families: how a model writes calls, thinks, and answers, told
//! apart by markers in its chat template (as llama.cpp's `common/chat.cpp`
//! does).
//!
//! | family | call syntax | reasoning |
//! |---|---|---|
//! | [`Family::Hermes`] (Hermes 2/3, Qwen2.5, Qwen3, QwQ) | `<tool_call>{"name", "arguments"}</tool_call>` | `<think>…</think>` |
//! | [`Family::Qwen3Coder`] | `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>` | — |
//! | [`Family::Llama3`] (Llama 3.1–3.3) | `{"name", "parameters"}` as the whole turn, or after `<|python_tag|>` | — |
//! | [`Family::Mistral`] (Nemo, Small 3.2, Devstral) | `[TOOL_CALLS]` + a JSON list, `name[ARGS]{…}` or `name[CALL_ID]id[ARGS]{…}` | — |
//! | [`Family::DeepSeekR1`] (R1 and its distills) | `<｜tool▁calls▁begin｜>` … `function<｜tool▁sep｜>NAME` + fenced JSON | `<think>…</think>`, opened by the prompt |
//! | [`Family::DeepSeekV31`] | `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` | `<think>` when `thinking` is on |
//! | [`Family::GptOss`] | `<|channel|>commentary to=functions.NAME … <|message|>{…}` | the `analysis` channel; the answer is `final` |
//! | [`Family::CommandR7B`] | `<|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]<|END_ACTION|>` | `<|START_THINKING|>…<|END_THINKING|>`; answer in `<|START_RESPONSE|>` |
//! | [`Family::Granite`] (Granite 3.x) | `<|tool_call|>[{"name", "arguments"}]` | `<think>…</think>`, answer in `<response>` |
//! | [`Family::Generic`] (Gemma, Phi, SmolLM2, ChatML, …) | our `{"tool": NAME, "args": {…}}` | `<think>…</think>` if the model writes it |
//!
//! Every text family accepts a leading `<think>` block: a fine-tune may think
//! even where its base template never shows it.

use serde_json::Value;

use crate::message::ToolCall;
use crate::pyjson::dumps_json;

/// How a model family writes tool calls, reasoning and answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Hermes,
    Qwen3Coder,
    Llama3,
    Mistral(MistralSyntax),
    DeepSeekR1,
    DeepSeekV31,
    GptOss,
    CommandR7B,
    Granite,
    Generic,
}

/// The three ways Mistral templates spell what follows `[TOOL_CALLS]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MistralSyntax {
    /// `[{"name": …, "arguments": {…}, "id": "abcDEF123"}]` (Nemo).
    JsonList,
    /// `name[ARGS]{…}`, repeated per call (Devstral).
    Args,
    /// `name[CALL_ID]abcDEF123[ARGS]{…}`, repeated per call (Small 3.2).
    CallIdArgs,
}

/// How the family delivers its answer when it does not call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerForm {
    /// The text of the turn (reasoning removed).
    Text,
    /// The `final` channel (gpt-oss).
    FinalChannel,
    /// Inside `<|START_RESPONSE|>…<|END_RESPONSE|>` (Command R7B); bare text is accepted.
    ResponseBlock,
}

pub(crate) const THINK: (&str, &str) = ("<think>", "</think>");
pub(crate) const COMMAND_R_THINK: (&str, &str) = ("<|START_THINKING|>", "<|END_THINKING|>");

pub(crate) const DS_CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
pub(crate) const DS_CALLS_END: &str = "<｜tool▁calls▁end｜>";
pub(crate) const DS_CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
pub(crate) const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
pub(crate) const DS_SEP: &str = "<｜tool▁sep｜>";

impl Family {
    /// The family a chat template belongs to, from the markers in its text.
    pub fn detect(template: &str) -> Family {
        let has = |marker: &str| template.contains(marker);
        if has("<|channel|>") {
            Family::GptOss
        } else if has(DS_CALLS_BEGIN) {
            // R1 templates fence the arguments; V3.1 writes them raw.
            if has("```json") {
                Family::DeepSeekR1
            } else {
                Family::DeepSeekV31
            }
        } else if has("<|START_ACTION|>") {
            Family::CommandR7B
        } else if has("<|tool_call|>") {
            Family::Granite
        } else if has("<function=") && has("<parameter=") {
            Family::Qwen3Coder
        } else if has("<tool_call>") {
            Family::Hermes
        } else if has("[TOOL_CALLS]") {
            Family::Mistral(if has("[CALL_ID]") {
                MistralSyntax::CallIdArgs
            } else if has("[ARGS]") {
                MistralSyntax::Args
            } else {
                MistralSyntax::JsonList
            })
        } else if has("<|start_header_id|>ipython<|end_header_id|>") || has("<|python_tag|>") {
            Family::Llama3
        } else {
            Family::Generic
        }
    }

    /// A short stable name, for logs and `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            Family::Hermes => "hermes",
            Family::Qwen3Coder => "qwen3-coder",
            Family::Llama3 => "llama3",
            Family::Mistral(MistralSyntax::JsonList) => "mistral-nemo",
            Family::Mistral(MistralSyntax::Args) => "mistral-args",
            Family::Mistral(MistralSyntax::CallIdArgs) => "mistral-call-id",
            Family::DeepSeekR1 => "deepseek-r1",
            Family::DeepSeekV31 => "deepseek-v3.1",
            Family::GptOss => "gpt-oss",
            Family::CommandR7B => "command-r7b",
            Family::Granite => "granite",
            Family::Generic => "generic",
        }
    }

    /// The markers around reasoning, where reasoning is a delimited block
    /// (gpt-oss uses channels instead).
    pub fn think_tags(self) -> Option<(&'static str, &'static str)> {
        match self {
            Family::GptOss => None,
            Family::CommandR7B => Some(COMMAND_R_THINK),
            _ => Some(THINK),
        }
    }

    /// The literal texts that begin a call, wherever they appear after the
    /// reasoning. A lazy grammar triggers on them; where one is a single
    /// token in the model's vocabulary, the engine can trigger on that token.
    /// Llama 3's bare JSON call has no opener (it is recognised by its
    /// position, see [`crate::grammar::CallGrammar::trigger_patterns`]).
    pub fn openers(self) -> &'static [&'static str] {
        match self {
            Family::Hermes | Family::Qwen3Coder => &["<tool_call>"],
            Family::Llama3 => &["<|python_tag|>"],
            Family::Mistral(_) => &["[TOOL_CALLS]"],
            Family::DeepSeekR1 | Family::DeepSeekV31 => &[DS_CALLS_BEGIN],
            Family::GptOss => &["<|channel|>commentary to=functions."],
            Family::CommandR7B => &["<|START_ACTION|>"],
            Family::Granite => &["<|tool_call|>"],
            Family::Generic => &["{\"tool\""],
        }
    }

    /// What to append to end the reasoning when its budget runs out; the
    /// model then goes on to its call or its answer.
    pub fn reasoning_close(self) -> &'static str {
        match self {
            Family::GptOss => "<|end|><|start|>assistant",
            Family::CommandR7B => COMMAND_R_THINK.1,
            _ => "\n</think>\n\n",
        }
    }

    pub fn answer_form(self) -> AnswerForm {
        match self {
            Family::GptOss => AnswerForm::FinalChannel,
            Family::CommandR7B => AnswerForm::ResponseBlock,
            _ => AnswerForm::Text,
        }
    }

    /// `calls` written as this family's model writes them. Used where a
    /// template cannot render `tool_calls` (the calls go into the message
    /// text instead) and to show the model an example of its own syntax.
    pub fn format_calls(self, calls: &[ToolCall]) -> String {
        let args = |call: &ToolCall| dumps_json(&call.arguments);
        let name = |call: &ToolCall| dumps_json(&Value::from(call.name.as_str()));
        let each = |f: &dyn Fn(usize, &ToolCall) -> String, sep: &str| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| f(i, c))
                .collect::<Vec<_>>()
                .join(sep)
        };
        match self {
            Family::Hermes => each(
                &|_, c| {
                    format!(
                        "<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                        name(c),
                        args(c)
                    )
                },
                "\n",
            ),
            Family::Qwen3Coder => each(
                &|_, c| {
                    let params: String = c
                        .arguments
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(key, value)| {
                            let text = match value {
                                Value::String(s) => s.clone(),
                                other => dumps_json(other),
                            };
                            format!("<parameter={key}>\n{text}\n</parameter>\n")
                        })
                        .collect();
                    format!(
                        "<tool_call>\n<function={}>\n{params}</function>\n</tool_call>",
                        c.name
                    )
                },
                "\n",
            ),
            Family::Llama3 => each(
                &|_, c| format!("{{\"name\": {}, \"parameters\": {}}}", name(c), args(c)),
                "\n",
            ),
            Family::Mistral(MistralSyntax::JsonList) => format!(
                "[TOOL_CALLS][{}]",
                each(
                    &|_, c| format!(
                        "{{\"name\": {}, \"arguments\": {}, \"id\": {}}}",
                        name(c),
                        args(c),
                        dumps_json(&Value::from(c.id.as_str()))
                    ),
                    ", "
                )
            ),
            Family::Mistral(MistralSyntax::Args) => each(
                &|_, c| format!("[TOOL_CALLS]{}[ARGS]{}", c.name, args(c)),
                "",
            ),
            Family::Mistral(MistralSyntax::CallIdArgs) => each(
                &|_, c| format!("[TOOL_CALLS]{}[CALL_ID]{}[ARGS]{}", c.name, c.id, args(c)),
                "",
            ),
            Family::DeepSeekR1 => format!(
                "{DS_CALLS_BEGIN}{}{DS_CALLS_END}",
                each(
                    &|_, c| format!(
                        "{DS_CALL_BEGIN}function{DS_SEP}{}\n```json\n{}\n```{DS_CALL_END}",
                        c.name,
                        args(c)
                    ),
                    "\n"
                )
            ),
            Family::DeepSeekV31 => format!(
                "{DS_CALLS_BEGIN}{}{DS_CALLS_END}",
                each(
                    &|_, c| format!("{DS_CALL_BEGIN}{}{DS_SEP}{}{DS_CALL_END}", c.name, args(c)),
                    ""
                )
            ),
            Family::GptOss => each(
                &|_, c| {
                    format!(
                        "<|channel|>commentary to=functions.{} <|constrain|>json<|message|>{}",
                        c.name,
                        args(c)
                    )
                },
                "<|call|><|start|>assistant",
            ),
            Family::CommandR7B => format!(
                "<|START_ACTION|>[{}]<|END_ACTION|>",
                each(
                    &|i, c| format!(
                        "{{\"tool_call_id\": \"{i}\", \"tool_name\": {}, \"parameters\": {}}}",
                        name(c),
                        args(c)
                    ),
                    ", "
                )
            ),
            Family::Granite => format!(
                "<|tool_call|>[{}]",
                each(
                    &|_, c| format!("{{\"name\": {}, \"arguments\": {}}}", name(c), args(c)),
                    ", "
                )
            ),
            Family::Generic => each(
                &|_, c| format!("{{\"tool\": {}, \"args\": {}}}", name(c), args(c)),
                "\n",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markers_pick_the_family() {
        assert_eq!(Family::detect("{{ '<tool_call>' }}"), Family::Hermes);
        assert_eq!(
            Family::detect("'<tool_call>\\n<function=' + name + '>' '<parameter=' + k"),
            Family::Qwen3Coder
        );
        assert_eq!(
            Family::detect("[TOOL_CALLS]{{ name }}[CALL_ID]{{ id }}[ARGS]"),
            Family::Mistral(MistralSyntax::CallIdArgs)
        );
        assert_eq!(
            Family::detect("[TOOL_CALLS]{{ name }}[ARGS]"),
            Family::Mistral(MistralSyntax::Args)
        );
        assert_eq!(
            Family::detect("[TOOL_CALLS]["),
            Family::Mistral(MistralSyntax::JsonList)
        );
        assert_eq!(Family::detect("<start_of_turn>"), Family::Generic);
        assert_eq!(
            Family::detect("<｜tool▁calls▁begin｜>```json"),
            Family::DeepSeekR1
        );
        assert_eq!(
            Family::detect("<｜tool▁calls▁begin｜>"),
            Family::DeepSeekV31
        );
    }

    #[test]
    fn calls_are_written_in_the_family_syntax() {
        let calls = [ToolCall::new(
            "a1b2c3d4e",
            "read_file",
            json!({"path": "a.rs"}),
        )];
        assert_eq!(
            Family::Hermes.format_calls(&calls),
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>"
        );
        assert_eq!(
            Family::Mistral(MistralSyntax::CallIdArgs).format_calls(&calls),
            "[TOOL_CALLS]read_file[CALL_ID]a1b2c3d4e[ARGS]{\"path\": \"a.rs\"}"
        );
        assert_eq!(
            Family::Generic.format_calls(&calls),
            "{\"tool\": \"read_file\", \"args\": {\"path\": \"a.rs\"}}"
        );
    }
}
