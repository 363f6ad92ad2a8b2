//! The tool-call format, owned by the project (llama-cpp-2 ships no tool-call
//! templating, and small models follow one simple JSON shape best).
//!
//! Every model turn in the loop is one JSON object:
//!
//! ```json
//! {"thought": "why this step", "tool": "read_file", "args": {"path": "src/lib.rs"}}
//! ```
//!
//! and the final answer is the `finish` tool: `{"thought": "...", "tool":
//! "finish", "args": {"answer": "..."}}`. One grammar covers every turn, and
//! the terminal streams the answer out of the JSON as it is generated
//! (`agent_llm::stream::AnswerStreamer`).
//!
//! With the in-process engine each turn is generated under [`call_grammar`],
//! built from the tools' JSON Schemas, so a call always parses and always
//! names a real tool with well-typed arguments. Remote providers cannot be
//! constrained, so [`parse_call`] is lenient (bare JSON, fenced JSON, the first
//! object in prose) and its error is fed back to the model.
//!
//! The GBNF is generated here rather than through llama.cpp's JSON Schema
//! converter because the converter orders properties alphabetically (serde's
//! maps are sorted), and the order matters to a model: `old_text` before
//! `new_text`, the tool name before its arguments.

use serde_json::{Map, Value};

use agent_chat::grammar::literal as gbnf_literal;
use agent_llm::Grammar;
use agent_tools::ToolSpec;

pub(crate) use agent_protocol::{ToolCall, FINISH};

/// A grammar admitting exactly one call to one of `tools`.
pub fn call_grammar(tools: &[ToolSpec]) -> Grammar {
    let mut rules = vec![
        r#"root ::= "{" ws "\"thought\"" ws ":" ws thought "," ws "\"tool\"" ws ":" ws call ws "}""#
            .to_string(),
    ];
    let mut alternatives = Vec::new();
    for (i, spec) in tools.iter().enumerate() {
        let name = format!("call{i}");
        alternatives.push(name.clone());
        rules.push(format!(
            r#"{name} ::= {} ws "," ws "\"args\"" ws ":" ws {}"#,
            gbnf_literal(&json_string(spec.name)),
            object_rule(&spec.parameters)
        ));
    }
    rules.push(format!("call ::= {}", alternatives.join(" | ")));
    rules.push(format!(
        r#"thought ::= "\"" char{{0,{MAX_THOUGHT_CHARS}}} "\"""#
    ));
    rules.push(PRIMITIVES.to_string());
    Grammar::new(rules.join("\n") + "\n")
}

/// A grammar admitting only a `finish` call: the last step of a budget.
pub fn finish_grammar(tools: &[ToolSpec]) -> Grammar {
    let finish: Vec<ToolSpec> = tools.iter().filter(|t| t.name == FINISH).cloned().collect();
    call_grammar(&finish)
}

// Compact JSON: at most one space between tokens; pretty-printing costs a
// small model tokens and time on every call.
/// Longest thought, in characters: small models otherwise ramble in the
/// thought until the token budget cuts the call off.
pub(crate) const MAX_THOUGHT_CHARS: usize = 200;

pub(crate) const PRIMITIVES: &str = r#"ws ::= " "?
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
integer ::= "-"? [0-9] [0-9]{0,9}
number ::= "-"? [0-9]+ ("." [0-9]+)?
boolean ::= "true" | "false"
"#;

/// GBNF for one argument object: required properties first (in the order of
/// the schema's `required` list), then optional ones (alphabetical), each
/// optional one skippable.
fn object_rule(schema: &Value) -> String {
    let (props, required) = properties(schema);
    let kv = |name: &str| -> String {
        format!(
            r#"{} ws ":" ws {}"#,
            gbnf_literal(&json_string(name)),
            value_rule(&props[name])
        )
    };
    let req: Vec<String> = required
        .iter()
        .filter(|r| props.contains_key(**r))
        .map(|r| kv(r))
        .collect();
    let opt: Vec<String> = props
        .keys()
        .filter(|k| !required.contains(&k.as_str()))
        .map(|k| kv(k))
        .collect();

    let mut body = req.join(r#" ws "," ws "#);
    if req.is_empty() {
        // No required property: any ordered, non-empty subset of the
        // optional ones, or nothing.
        let mut alts = Vec::new();
        for start in 0..opt.len() {
            let mut alt = opt[start].clone();
            for next in &opt[start + 1..] {
                alt.push_str(&format!(r#" (ws "," ws {next})?"#));
            }
            alts.push(format!("({alt})"));
        }
        if !alts.is_empty() {
            body = format!("({})?", alts.join(" | "));
        }
    } else {
        for next in &opt {
            body.push_str(&format!(r#" (ws "," ws {next})?"#));
        }
    }
    format!(r#""{{" ws {body} ws "}}""#)
}

/// An object schema's properties and its `required` list (in order).
fn properties(schema: &Value) -> (&Map<String, Value>, Vec<&str>) {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new));
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    (props, required)
}

/// GBNF for one property value.
fn value_rule(schema: &Value) -> String {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let alts: Vec<String> = options
            .iter()
            .map(|v| gbnf_literal(&v.to_string()))
            .collect();
        return format!("({})", alts.join(" | "));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => "integer".into(),
        Some("number") => "number".into(),
        Some("boolean") => "boolean".into(),
        Some("object") => object_rule(schema),
        Some("array") => {
            let item = schema
                .get("items")
                .map(value_rule)
                .unwrap_or_else(|| "string".into());
            format!(r#"("[" ws ({item} (ws "," ws {item})*)? ws "]")"#)
        }
        _ => "string".into(),
    }
}

fn json_string(s: &str) -> String {
    Value::from(s).to_string()
}

/// Why a model turn is not a usable call; shown to the model so it can retry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct FormatError(pub String);

/// Reads a call out of a model turn: the whole text as JSON, else a fenced
/// ```json block, else the first balanced `{...}` that parses.
pub fn parse_call(text: &str) -> Result<ToolCall, FormatError> {
    let object = candidates(text)
        .into_iter()
        .find_map(|c| match serde_json::from_str::<Value>(c) {
            Ok(Value::Object(object)) => Some(object),
            _ => None,
        })
        .ok_or_else(|| {
            FormatError(format!(
                "your reply was not a JSON tool call. Reply with exactly one JSON object: {}",
                FORMAT_HINT
            ))
        })?;
    let tool = object
        .get("tool")
        .or_else(|| object.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            FormatError(format!(
                "the JSON object has no \"tool\" field. {FORMAT_HINT}"
            ))
        })?
        .to_string();
    let args = object
        .get("args")
        .or_else(|| object.get("arguments"))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    // Some servers return arguments as a JSON string.
    let args = match args {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    if !args.is_object() {
        return Err(FormatError(format!(
            "\"args\" must be a JSON object. {FORMAT_HINT}"
        )));
    }
    let thought = object
        .get("thought")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(ToolCall {
        thought,
        tool,
        args,
    })
}

/// Reads the calls of a turn: a JSON list of calls (a native model's turn
/// with several calls, as the loop stores it), else one call as
/// [`parse_call`] reads it.
pub(crate) fn parse_calls(text: &str) -> Result<Vec<ToolCall>, FormatError> {
    match serde_json::from_str::<Vec<Value>>(text.trim()) {
        Ok(list) if !list.is_empty() && list.iter().all(Value::is_object) => list
            .iter()
            .map(|call| parse_call(&call.to_string()))
            .collect(),
        _ => parse_call(text).map(|call| vec![call]),
    }
}

pub(crate) const FORMAT_HINT: &str =
    r#"{"thought": "<short reason>", "tool": "<tool name>", "args": {<arguments>}}"#;

fn candidates(text: &str) -> Vec<&str> {
    let mut out = vec![text.trim()];
    if let Some(start) = text.find("```") {
        let after = &text[start + 3..];
        let body_start = after.find('\n').map_or(0, |n| n + 1);
        if let Some(end) = after[body_start..].find("```") {
            out.push(after[body_start..body_start + end].trim());
        }
    }
    if let Some(obj) = first_object(text) {
        out.push(obj);
    }
    out
}

/// The first balanced `{...}` in `text`, skipping braces inside strings.
fn first_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The tool list for the system prompt: name, description, argument schema
/// (in the order [`call_grammar`] asks for them, under the call's `args`).
pub fn describe_tools(tools: &[ToolSpec]) -> String {
    let specs: Vec<_> = tools
        .iter()
        .map(|t| agent_llm::ToolSpec::new(t.name, t.description, t.parameters.clone()))
        .collect();
    agent_chat::adapt::tool_list(&specs, JSON_ARGUMENTS)
}

/// This format's calls write their arguments under `args`, required ones first.
const JSON_ARGUMENTS: agent_chat::adapt::Arguments = agent_chat::adapt::Arguments {
    key: "args",
    required_first: true,
};

/// A cut-off answer made presentable: a degenerate loop ("It is X. It is
/// X. It is X.") is cut at its first repeat, and the cut is marked.
pub(crate) fn salvage_answer(partial: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut out = String::new();
    for sentence in partial.split_inclusive(['.', '\n', '!', '?']) {
        let key = sentence.trim();
        if !key.is_empty() && !seen.insert(key.to_string()) {
            break;
        }
        out.push_str(sentence);
    }
    format!("{} …(cut off)", out.trim_end())
}

/// Whether a growing answer has fallen into a loop: its last 40 characters
/// already occur at least twice before.
pub(crate) fn is_looping(answer: &str) -> bool {
    const TAIL: usize = 40;
    if answer.len() < TAIL * 4 {
        return false;
    }
    let mut start = answer.len() - TAIL;
    while !answer.is_char_boundary(start) {
        start -= 1;
    }
    answer.matches(&answer[start..]).count() >= 3
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_llm::stream::AnswerStreamer;

    fn stream(pieces: &[&str]) -> String {
        let mut s = AnswerStreamer::default();
        pieces.iter().map(|p| s.push(p)).collect()
    }

    #[test]
    fn finish_answers_stream_decoded_piece_by_piece() {
        let out = stream(&[
            "{\"thought\": \"done\", \"tool\": \"fin",
            "ish\", \"args\": {\"answer\": \"Line one\\",
            "nIt is in \\\"src/a.rs\\\" \\u00e9",
            "\"}}",
        ]);
        assert_eq!(out, "Line one\nIt is in \"src/a.rs\" é");
    }

    #[test]
    fn other_calls_show_nothing() {
        let out = stream(&[
            "{\"thought\": \"the answer is\", \"tool\": \"read_file\", \"args\": {\"path\": \"answer\"}}",
        ]);
        assert_eq!(out, "");
    }

    #[test]
    fn loops_are_detected_and_cut_at_the_first_repeat() {
        let looped = "It is a calculator. It is a new project. ".repeat(10);
        assert!(is_looping(&looped));
        assert!(!is_looping("A long answer that says different things in each sentence, about many parts of the code base, and which does not repeat itself at all."));
        assert_eq!(
            salvage_answer(&looped),
            "It is a calculator. It is a new project. …(cut off)"
        );
    }

    use agent_tools::Access;
    use serde_json::json;

    fn spec(name: &'static str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name,
            description: "test",
            parameters,
            access: Access::Read,
        }
    }

    #[test]
    fn parses_bare_fenced_and_embedded_calls() {
        let bare = r#"{"thought":"t","tool":"read_file","args":{"path":"a.rs"}}"#;
        assert_eq!(parse_call(bare).unwrap().tool, "read_file");
        let fenced = "Sure:\n```json\n{\"tool\": \"grep\", \"args\": {\"pattern\": \"x{2}\"}}\n```";
        let call = parse_call(fenced).unwrap();
        assert_eq!(call.tool, "grep");
        assert_eq!(call.args["pattern"], "x{2}");
        let prose = "I will call {\"tool\": \"list_dir\", \"args\": {}} now";
        assert_eq!(parse_call(prose).unwrap().tool, "list_dir");
    }

    #[test]
    fn a_list_of_calls_is_several_calls() {
        let calls = parse_calls(
            r#"[{"thought": "both", "tool": "grep", "args": {"pattern": "a"}}, {"tool": "read_file", "args": {"path": "b"}}]"#,
        )
        .unwrap();
        assert_eq!(
            calls.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>(),
            ["grep", "read_file"]
        );
        assert_eq!(
            parse_calls(r#"{"tool": "list_dir", "args": {}}"#)
                .unwrap()
                .len(),
            1
        );
        assert!(parse_calls("[]").is_err());
    }

    #[test]
    fn string_arguments_from_servers_are_decoded() {
        let call = parse_call(r#"{"name":"grep","arguments":"{\"pattern\":\"a\"}"}"#).unwrap();
        assert_eq!(call.args["pattern"], "a");
    }

    #[test]
    fn format_errors_say_what_to_send() {
        let err = parse_call("I think the answer is 42").unwrap_err();
        assert!(err.0.contains("\"tool\""), "{err}");
        let err = parse_call(r#"{"args": {}}"#).unwrap_err();
        assert!(err.0.contains("no \"tool\""), "{err}");
        let err = parse_call(r#"{"tool": "x", "args": [1]}"#).unwrap_err();
        assert!(err.0.contains("must be a JSON object"), "{err}");
    }

    #[test]
    fn grammar_orders_required_properties_as_listed() {
        let g = call_grammar(&[spec(
            "edit",
            json!({"type": "object",
                   "properties": {"path": {"type": "string"}, "old_text": {"type": "string"},
                                  "new_text": {"type": "string"}, "replace_all": {"type": "boolean"}},
                   "required": ["path", "old_text", "new_text"]}),
        )]);
        let text = &g.gbnf;
        let (p, o, n, r) = (
            text.find("\\\"path\\\"").unwrap(),
            text.find("\\\"old_text\\\"").unwrap(),
            text.find("\\\"new_text\\\"").unwrap(),
            text.find("\\\"replace_all\\\"").unwrap(),
        );
        assert!(p < o && o < n && n < r, "{text}");
        assert!(text.contains("call ::= call0"), "{text}");
    }

    /// GBNF literals have one home (agent-chat's grammar, which the native
    /// call grammars use too); this module's own copy once left `\t` and
    /// `\r` raw.
    #[test]
    fn tabs_and_returns_in_a_tool_build_the_grammar_agent_chat_writes() {
        let g = call_grammar(&[spec(
            "tab\tand\rreturn",
            json!({"type": "object",
                   "properties": {"mode": {"enum": ["a\tb"]}},
                   "required": ["mode"]}),
        )])
        .gbnf;
        assert!(!g.contains('\t') && !g.contains('\r'), "{g}");
        let name = agent_chat::grammar::literal(&json_string("tab\tand\rreturn"));
        assert!(g.contains(&name), "{name} in {g}");
        assert_eq!(gbnf_literal("a\tb\r"), r#""a\tb\r""#);
    }

    #[test]
    fn tool_descriptions_mark_optional_arguments() {
        let d = describe_tools(&[spec(
            "read_file",
            json!({"type": "object",
                   "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
                   "required": ["path"]}),
        )]);
        assert!(
            d.contains(r#"{"path": string, "start_line"?: integer}"#),
            "{d}"
        );
    }
}
