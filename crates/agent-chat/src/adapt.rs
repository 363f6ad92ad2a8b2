//! Adapting a conversation to what a template can render, rather than
//! failing on it (llama.cpp's chat code calls these polyfills).
//!
//! [`Capabilities::probe`] renders small conversations with marker texts
//! ("needles") and looks for them in the output, once per template:
//!
//! | capability | probe | when missing |
//! |---|---|---|
//! | `system_role` | a system message is rendered | its text opens the first user message |
//! | `tools` | a tool passed as `tools` is rendered | the tools are described in the system message, with the family's call syntax |
//! | `tool_calls` | an assistant `tool_calls` entry is rendered | the calls are written into the message text, in the family's syntax |
//! | `string_arguments` | `arguments` must be a JSON string (DeepSeek) | — (an object is preferred) |
//! | `null_call_content` | a calls-only message may have `content: null` | `""` (Qwen3 reads `message.content`) |
//! | `parallel_tool_calls` | two calls in one message are both rendered | one call per message, each followed by its result |
//! | `nine_char_ids` | an id like `call_1` is refused but `call1abcd` is not (Mistral) | — ids are mapped to nine alphanumerics |
//! | `tool_responses` | a `tool` message is rendered, unlike one with a made-up role | results become user messages `Tool result (NAME):\n…` |
//! | `strict_alternation` | two user messages in a row are refused (Gemma, Mistral) | consecutive messages of one role are merged |
//! | `reasoning_field` | which of `reasoning_content`, `thinking`, `tool_plan` is rendered | reasoning is left out |
//!
//! The adaptation is deterministic (the same conversation gives the same
//! messages), so a conversation that grows by a turn renders as the
//! previous prompt plus the new turn wherever the template allows it.

use serde_json::{json, Map, Value as Json};

use crate::error::TemplateError;
use crate::family::Family;
use crate::message::{Message, Role, ToolCall, ToolSpec};
use crate::pyjson::dumps_json;

/// What a template can render, found by probing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    pub system_role: bool,
    pub tools: bool,
    pub tool_calls: bool,
    /// Call arguments must be JSON text rather than an object.
    pub string_arguments: bool,
    /// A message that only calls tools carries `content: null` (else `""`).
    pub null_call_content: bool,
    pub parallel_tool_calls: bool,
    /// Call ids must be nine alphanumeric characters.
    pub nine_char_ids: bool,
    pub tool_responses: bool,
    pub strict_alternation: bool,
    /// The message field the template reads reasoning from, if any.
    pub reasoning_field: Option<ReasoningField>,
}

/// Where a template reads an assistant message's reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningField {
    /// `reasoning_content` (Qwen3, llama.cpp, vLLM).
    ReasoningContent,
    /// `thinking` (gpt-oss).
    Thinking,
    /// `tool_plan` (Command R7B).
    ToolPlan,
}

impl ReasoningField {
    pub fn key(self) -> &'static str {
        match self {
            Self::ReasoningContent => "reasoning_content",
            Self::Thinking => "thinking",
            Self::ToolPlan => "tool_plan",
        }
    }
}

/// Renders `messages` (OpenAI format) with optional `tools`, no generation prompt.
pub type ProbeRender<'a> = dyn Fn(&Json, Option<&Json>) -> Result<String, TemplateError> + 'a;

/// A call id that passes Mistral's check, used while probing.
const PROBE_ID: &str = "call1abcd";

impl Capabilities {
    /// Probes a template through `render`. See the module documentation for
    /// what each probe renders.
    pub fn probe(render: &ProbeRender<'_>) -> Self {
        let shows = |messages: Json, tools: Option<&Json>, needle: &str| {
            render(&messages, tools).is_ok_and(|out| out.contains(needle))
        };
        let user = json!({"role": "user", "content": "Hey"});
        let system_role = shows(
            json!([{"role": "system", "content": "system_needle"}, user]),
            None,
            "system_needle",
        );
        let tool = json!([{"type": "function", "function": {
            "name": "tool_needle",
            "description": "A probe.",
            "parameters": {"type": "object",
                "properties": {"argument_needle": {"type": "string", "description": "A probe."}},
                "required": ["argument_needle"]}}}]);
        let tools = shows(json!([user]), Some(&tool), "tool_needle");

        let call = |id: &str, value: &str, string_args: bool| {
            let args = json!({"argument_needle": value});
            let args = if string_args {
                Json::from(dumps_json(&args))
            } else {
                args
            };
            json!({"id": id, "type": "function",
                   "function": {"name": "tool_needle", "arguments": args}})
        };
        let calls_message = |content: &Json, calls: Vec<Json>| json!({"role": "assistant", "content": content, "tool_calls": calls});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "name": "tool_needle", "content": "response_needle"});

        // Calls are probed as they occur: followed by their results. The
        // first form of a calls-only message that renders its call wins.
        let forms = [(true, false), (true, true), (false, false), (false, true)];
        let form = forms.into_iter().find(|&(null_content, string_args)| {
            let message = calls_message(
                &call_content(null_content),
                vec![call(PROBE_ID, "value_needle", string_args)],
            );
            shows(
                json!([user, message, result(PROBE_ID)]),
                None,
                "value_needle",
            )
        });
        let tool_calls = form.is_some();
        let (null_call_content, string_arguments) = form.unwrap_or((false, false));
        let content = call_content(null_call_content);

        let (mut parallel_tool_calls, mut nine_char_ids) = (false, false);
        if tool_calls {
            let two = calls_message(
                &content,
                vec![
                    call(PROBE_ID, "first_needle", string_arguments),
                    call("call2abcd", "second_needle", string_arguments),
                ],
            );
            parallel_tool_calls = render(
                &json!([user, two, result(PROBE_ID), result("call2abcd")]),
                None,
            )
            .is_ok_and(|out| out.contains("first_needle") && out.contains("second_needle"));
            let short = calls_message(
                &content,
                vec![call("call_1", "value_needle", string_arguments)],
            );
            nine_char_ids = !shows(json!([user, short, result("call_1")]), None, "value_needle");
        }

        // The assistant turn before a tool result, in the forms found above.
        let before_result = if tool_calls {
            calls_message(
                &content,
                vec![call(PROBE_ID, "value_needle", string_arguments)],
            )
        } else {
            json!({"role": "assistant", "content": "Calling the tool."})
        };
        let tool_responses = shows(
            json!([user, before_result, result(PROBE_ID)]),
            None,
            "response_needle",
        ) && has_tool_role(render, &[user.clone(), before_result.clone()]);

        let strict_alternation = render(
            &json!([user, {"role": "user", "content": "Hey again"}]),
            None,
        )
        .is_err();

        let reasoning_field = [
            ReasoningField::ReasoningContent,
            ReasoningField::Thinking,
            ReasoningField::ToolPlan,
        ]
        .into_iter()
        .find(|field| {
            let mut message = before_result.clone();
            message[field.key()] = Json::from("reasoning_needle");
            shows(
                json!([user, message, result(PROBE_ID)]),
                None,
                "reasoning_needle",
            )
        });

        Self {
            system_role,
            tools,
            tool_calls,
            string_arguments,
            null_call_content,
            parallel_tool_calls,
            nine_char_ids,
            tool_responses,
            strict_alternation,
            reasoning_field,
        }
    }
}

/// The content of a message that only calls tools.
fn call_content(null: bool) -> Json {
    if null {
        Json::Null
    } else {
        Json::from("")
    }
}

/// Whether the template has a `tool` role of its own: a template that prints
/// any role name renders a tool message just as one with a made-up role.
fn has_tool_role(render: &ProbeRender<'_>, before: &[Json]) -> bool {
    let with_role = |role: &str| {
        let mut messages = before.to_vec();
        messages
            .push(json!({"role": role, "tool_call_id": PROBE_ID, "content": "response_needle"}));
        render(&Json::Array(messages), None).map(|out| out.replace(role, "tool"))
    };
    match (with_role("tool"), with_role("made_up_role")) {
        (Ok(tool), Ok(made_up)) => tool != made_up,
        (Ok(_), Err(_)) => true,
        _ => false,
    }
}

/// A conversation in the shape one template renders.
#[derive(Debug, Clone, PartialEq)]
pub struct Adapted {
    /// OpenAI-format message objects.
    pub messages: Json,
    /// The tools to pass as `tools`, or none when the template cannot render
    /// them (they are described in the system message then).
    pub tools: Option<Json>,
}

/// Adapts `messages` and `tools` to a template with `caps` whose model
/// writes calls as `family` does. The steps, in order:
/// 1. calls are split one per message, each followed by its result, where
///    the template renders one call per message;
/// 2. each message becomes an OpenAI-format object: ids mapped to nine
///    characters where required, arguments as an object or as JSON text,
///    reasoning under the field the template reads (else dropped), calls
///    written into the text where `tool_calls` is not rendered, tool
///    results as user messages where there is no tool role;
/// 3. tools the template cannot render are described in the system message;
/// 4. without a system role, the system text opens the first user message;
/// 5. with strict alternation, consecutive messages of one role are merged.
pub fn adapt(
    messages: &[Message],
    tools: &[ToolSpec],
    caps: &Capabilities,
    family: Family,
) -> Adapted {
    let messages = if caps.tool_calls && !caps.parallel_tool_calls {
        one_call_per_message(messages)
    } else {
        messages.to_vec()
    };
    let names = call_names(&messages);
    let mut out: Vec<Map<String, Json>> = messages
        .iter()
        .map(|m| to_openai(m, caps, family, &names))
        .collect();

    let tools_json =
        (!tools.is_empty()).then(|| Json::Array(tools.iter().map(ToolSpec::to_openai).collect()));
    let tools_json = match tools_json {
        Some(_) if !caps.tools => {
            let text = describe_tools(tools, family);
            match out.first_mut() {
                Some(first) if first["role"] == "system" => {
                    let joined = format!(
                        "{}\n\n{text}",
                        first["content"].as_str().unwrap_or_default()
                    );
                    first.insert("content".into(), Json::from(joined));
                }
                _ => out.insert(0, text_message("system", text)),
            }
            None
        }
        other => other,
    };

    if !caps.system_role {
        out = fold_system(out);
    }
    if caps.strict_alternation {
        out = merge_same_roles(out);
    }
    Adapted {
        messages: Json::Array(out.into_iter().map(Json::Object).collect()),
        tools: tools_json,
    }
}

fn text_message(role: &str, content: String) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("role".into(), Json::from(role));
    m.insert("content".into(), Json::from(content));
    m
}

/// An assistant message with several calls, followed by their results,
/// becomes one message per call, each followed by its own result.
fn one_call_per_message(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        i += 1;
        if m.role != Role::Assistant || m.tool_calls.len() < 2 {
            out.push(m.clone());
            continue;
        }
        let mut results: Vec<Message> = Vec::new();
        while i < messages.len() && messages[i].role == Role::Tool {
            results.push(messages[i].clone());
            i += 1;
        }
        for (n, call) in m.tool_calls.iter().enumerate() {
            let mut single = if n == 0 {
                m.clone()
            } else {
                Message::assistant("")
            };
            single.tool_calls = vec![call.clone()];
            out.push(single);
            if let Some(pos) = results
                .iter()
                .position(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()))
            {
                out.push(results.remove(pos));
            }
        }
        out.extend(results);
    }
    out
}

/// Call id → tool name, for tool messages that do not carry the name.
fn call_names(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| (c.id.clone(), c.name.clone())))
        .collect()
}

fn to_openai(
    m: &Message,
    caps: &Capabilities,
    family: Family,
    names: &[(String, String)],
) -> Map<String, Json> {
    let id = |id: &str| {
        if caps.nine_char_ids {
            nine_char_id(id)
        } else {
            id.to_string()
        }
    };
    let mut out = Map::new();
    match m.role {
        Role::System | Role::User => return text_message(m.role.as_str(), m.content.clone()),
        Role::Tool => {
            let name = m.name.clone().or_else(|| {
                let call_id = m.tool_call_id.as_deref()?;
                names
                    .iter()
                    .find(|(i, _)| i == call_id)
                    .map(|(_, n)| n.clone())
            });
            if !caps.tool_responses {
                let header = match &name {
                    Some(name) => format!("Tool result ({name}):"),
                    None => "Tool result:".to_string(),
                };
                return text_message("user", format!("{header}\n{}", m.content));
            }
            out.insert("role".into(), Json::from("tool"));
            if let Some(call_id) = &m.tool_call_id {
                out.insert("tool_call_id".into(), Json::from(id(call_id)));
            }
            if let Some(name) = name {
                out.insert("name".into(), Json::from(name));
            }
            out.insert("content".into(), Json::from(m.content.clone()));
        }
        Role::Assistant => {
            out.insert("role".into(), Json::from("assistant"));
            let calls: Vec<ToolCall> = m
                .tool_calls
                .iter()
                .map(|c| ToolCall::new(id(&c.id), c.name.clone(), c.arguments.clone()))
                .collect();
            let content = if calls.is_empty() {
                Json::from(m.content.clone())
            } else if !caps.tool_calls {
                let written = family.format_calls(&calls);
                Json::from(if m.content.is_empty() {
                    written
                } else {
                    format!("{}\n{written}", m.content)
                })
            } else if m.content.is_empty() && caps.null_call_content {
                Json::Null
            } else {
                Json::from(m.content.clone())
            };
            out.insert("content".into(), content);
            if let (Some(field), Some(reasoning)) = (caps.reasoning_field, &m.reasoning_content) {
                if !reasoning.is_empty() {
                    out.insert(field.key().into(), Json::from(reasoning.clone()));
                }
            }
            if caps.tool_calls && !calls.is_empty() {
                let calls = calls
                    .iter()
                    .map(|c| {
                        let mut call = c.to_openai();
                        if caps.string_arguments {
                            call["function"]["arguments"] = Json::from(dumps_json(&c.arguments));
                        }
                        call
                    })
                    .collect();
                out.insert("tool_calls".into(), Json::Array(calls));
            }
        }
    }
    out
}

/// The first system message's text opens the first user message after it
/// (or becomes one); later system messages become user messages.
fn fold_system(messages: Vec<Map<String, Json>>) -> Vec<Map<String, Json>> {
    let mut out: Vec<Map<String, Json>> = Vec::with_capacity(messages.len());
    let mut pending: Option<String> = None;
    for (i, mut m) in messages.into_iter().enumerate() {
        if m["role"] == "system" {
            if i == 0 {
                pending = m["content"].as_str().map(str::to_string);
                continue;
            }
            m.insert("role".into(), Json::from("user"));
        }
        if m["role"] == "user" {
            if let Some(system) = pending.take() {
                let content = format!("{system}\n\n{}", m["content"].as_str().unwrap_or_default());
                m.insert("content".into(), Json::from(content));
            }
        }
        out.push(m);
    }
    if let Some(system) = pending {
        out.insert(0, text_message("user", system));
    }
    out
}

/// Consecutive messages of one role become one (their texts joined by a
/// blank line); messages with calls and tool results stay apart.
fn merge_same_roles(messages: Vec<Map<String, Json>>) -> Vec<Map<String, Json>> {
    let mut out: Vec<Map<String, Json>> = Vec::with_capacity(messages.len());
    for m in messages {
        let mergeable = |m: &Map<String, Json>| {
            !m.contains_key("tool_calls") && m["role"] != "tool" && m["content"].is_string()
        };
        match out.last_mut() {
            Some(last) if last["role"] == m["role"] && mergeable(last) && mergeable(&m) => {
                let joined = format!(
                    "{}\n\n{}",
                    last["content"].as_str().unwrap_or_default(),
                    m["content"].as_str().unwrap_or_default()
                );
                last.insert("content".into(), Json::from(joined));
            }
            _ => out.push(m),
        }
    }
    out
}

/// A call id as nine alphanumerics (Mistral's check): kept if it already is
/// one, else the FNV-1a 64-bit hash of its bytes in base 62 (digits, then
/// lower case, then upper case; least significant first).
pub fn nine_char_id(id: &str) -> String {
    if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return id.to_string();
    }
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (0..9)
        .map(|_| {
            let digit = DIGITS[(hash % 62) as usize] as char;
            hash /= 62;
            digit
        })
        .collect()
}

/// The tool list in prose, for templates that cannot render `tools`,
/// ending with how this family writes a call.
pub fn describe_tools(tools: &[ToolSpec], family: Family) -> String {
    let mut out = String::from("# Tools\n\nYou can call these tools:\n");
    out.push_str(&tool_list(tools, Arguments::NATIVE));
    let example = ToolCall::new("abcDEF123", "tool_name", json!({"argument_name": "value"}));
    out.push_str("\nTo call a tool, write:\n");
    out.push_str(&family.format_calls(&[example]));
    out
}

/// How a call format names a call's arguments and in which order its
/// grammar asks for them: what [`tool_list`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arguments {
    /// The key the call writes its arguments under.
    pub key: &'static str,
    /// Required arguments first (in the `required` list's order), then the
    /// optional ones; otherwise the order the schema lists them.
    pub required_first: bool,
}

impl Arguments {
    /// Native calls: `arguments`, in the schema's order (see
    /// [`crate::grammar::schema_expr`]).
    pub const NATIVE: Self = Self {
        key: "arguments",
        required_first: false,
    };
}

/// One entry per tool: `- NAME: DESCRIPTION` and, indented below it, its
/// arguments as `{"path": string, "start_line"?: integer}` (compact for a
/// small context; `?` marks an optional one).
pub fn tool_list(tools: &[ToolSpec], arguments: Arguments) -> String {
    let mut out = String::new();
    for tool in tools {
        out.push_str(&format!(
            "- {}: {}\n  {}: {}\n",
            tool.name,
            tool.description,
            arguments.key,
            arguments_signature(&tool.parameters, arguments.required_first)
        ));
    }
    out
}

fn arguments_signature(schema: &Json, required_first: bool) -> String {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Json::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Json::as_array)
        .map(|r| r.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let is_required = |name: &str| required.contains(&name);
    let mut names: Vec<&String> = props.keys().collect();
    if required_first {
        names.sort_by_key(|n| required.iter().position(|r| r == n).unwrap_or(usize::MAX));
    }
    let parts: Vec<String> = names
        .into_iter()
        .map(|name| {
            let ty = match props[name].get("type") {
                Some(Json::String(t)) => t.clone(),
                Some(Json::Array(ts)) => ts
                    .iter()
                    .filter_map(Json::as_str)
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ => "any".to_string(),
            };
            let mark = if is_required(name) { "" } else { "?" };
            format!("{}{mark}: {ty}", dumps_json(&Json::from(name.as_str())))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Capabilities {
        Capabilities {
            system_role: true,
            tools: true,
            tool_calls: true,
            string_arguments: false,
            null_call_content: true,
            parallel_tool_calls: true,
            nine_char_ids: false,
            tool_responses: true,
            strict_alternation: false,
            reasoning_field: None,
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("Be brief."),
            Message::user("Look."),
            Message::assistant_calls(
                "",
                vec![
                    ToolCall::new("call_1", "read_file", json!({"path": "a"})),
                    ToolCall::new("call_2", "read_file", json!({"path": "b"})),
                ],
            )
            .with_reasoning("I should read both."),
            Message::tool_result("call_1", "read_file", "A"),
            Message::tool_result("call_2", "read_file", "B"),
        ]
    }

    #[test]
    fn nine_char_ids_are_stable_alphanumerics() {
        let id = nine_char_id("call_1");
        assert_eq!(id.len(), 9);
        assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(id, nine_char_id("call_1"));
        assert_ne!(id, nine_char_id("call_2"));
        assert_eq!(nine_char_id("abcDEF123"), "abcDEF123");
    }

    #[test]
    fn one_call_per_message_puts_each_result_after_its_call() {
        let caps = Capabilities {
            parallel_tool_calls: false,
            ..caps()
        };
        let out = adapt(&conversation(), &[], &caps, Family::Llama3).messages;
        let roles: Vec<&str> = out
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "assistant", "tool"]
        );
        assert_eq!(out[3]["content"], "A");
        assert_eq!(
            out[4]["tool_calls"][0]["function"]["arguments"]["path"],
            "b"
        );
        assert_eq!(out[5]["content"], "B");
    }

    #[test]
    fn without_tool_support_calls_and_results_become_text() {
        let caps = Capabilities {
            system_role: false,
            tools: false,
            tool_calls: false,
            tool_responses: false,
            strict_alternation: true,
            ..caps()
        };
        let tools = [ToolSpec::new(
            "read_file",
            "Read a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["path"]}),
        )];
        let adapted = adapt(&conversation(), &tools, &caps, Family::Generic);
        assert_eq!(adapted.tools, None);
        let out = adapted.messages.as_array().unwrap().clone();
        assert_eq!(out.len(), 3, "{out:#?}");
        let first = out[0]["content"].as_str().unwrap();
        assert!(first.starts_with("Be brief.\n\n# Tools\n"), "{first}");
        assert!(
            first.contains(
                "- read_file: Read a file.\n  arguments: {\"path\": string, \"limit\"?: integer}"
            ),
            "{first}"
        );
        assert!(
            first.ends_with(
                "{\"tool\": \"tool_name\", \"args\": {\"argument_name\": \"value\"}}\n\nLook."
            ),
            "{first}"
        );
        assert_eq!(
            out[1]["content"],
            "{\"tool\": \"read_file\", \"args\": {\"path\": \"a\"}}\n{\"tool\": \"read_file\", \"args\": {\"path\": \"b\"}}"
        );
        assert_eq!(
            out[2]["content"],
            "Tool result (read_file):\nA\n\nTool result (read_file):\nB"
        );
    }

    #[test]
    fn arguments_ids_content_and_reasoning_take_the_template_form() {
        let caps = Capabilities {
            string_arguments: true,
            null_call_content: false,
            nine_char_ids: true,
            reasoning_field: Some(ReasoningField::Thinking),
            ..caps()
        };
        let out = adapt(&conversation(), &[], &caps, Family::DeepSeekV31).messages;
        let call = &out[2];
        assert_eq!(call["content"], "");
        assert_eq!(call["thinking"], "I should read both.");
        assert_eq!(
            call["tool_calls"][0]["function"]["arguments"],
            "{\"path\": \"a\"}"
        );
        assert_eq!(call["tool_calls"][0]["id"], nine_char_id("call_1"));
        assert_eq!(out[3]["tool_call_id"], nine_char_id("call_1"));
    }
}
