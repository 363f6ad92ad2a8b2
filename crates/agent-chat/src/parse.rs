//! Reading a generated turn in its family's own syntax: the reasoning (never
//! searched for calls), the tool calls, and the text (the answer, where the
//! family answers in text).
//!
//! Parsing is lenient about whitespace and about what a lazy grammar cannot
//! prevent (a missing closing tag at the end of the turn, calls written as
//! a JSON string), and strict about what would make a call wrong: invalid
//! JSON, an unknown tool, missing or mistyped arguments. Those come back as a
//! [`ParseError`] whose message tells the model what to fix.

use serde_json::{json, Map, Value as Json};

use crate::family::{Family, DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_BEGIN, DS_CALL_END, DS_SEP};
use crate::message::{ToolCall, ToolSpec};

/// One generated turn, taken apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedTurn {
    /// What the model thought first; shown and logged, never sent back.
    pub reasoning: String,
    /// The text outside reasoning and calls: the answer when there are no calls.
    pub content: String,
    /// Calls in the order written. `id` is the model's own where its syntax
    /// has one, else empty (assign ids before storing the turn).
    pub calls: Vec<ToolCall>,
    /// The reasoning was opened but never closed (the turn was cut off).
    pub reasoning_unclosed: bool,
}

/// Why a turn's calls could not be read; `message` is written for the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
    /// The reasoning read before the failure.
    pub reasoning: String,
}

/// What the parser needs besides the text.
#[derive(Debug, Clone, Copy, Default)]
pub struct ParseOptions<'a> {
    /// The prompt ended inside a reasoning block ([`crate::render::Prompt::reasoning_open`]).
    pub reasoning_open: bool,
    /// The tools the model may call: calls to others, or with arguments that
    /// do not fit the schema, are errors. Empty: calls are not checked.
    pub tools: &'a [ToolSpec],
}

/// A call as written, before it is checked.
struct RawCall {
    id: String,
    name: String,
    arguments: Json,
    /// The argument values are text (Qwen3-Coder's XML): the schema says
    /// which ones are numbers, booleans or JSON.
    text_values: bool,
}

/// Takes `text`, a model's turn, apart as `family` writes it.
pub fn parse_turn(
    family: Family,
    text: &str,
    options: &ParseOptions<'_>,
) -> Result<ParsedTurn, ParseError> {
    let (reasoning, rest, reasoning_unclosed) = match family {
        Family::GptOss => return harmony(text, options),
        _ => split_reasoning(family, text, options.reasoning_open),
    };
    let fail = |problem: String| ParseError {
        message: with_example(family, &problem, options.tools),
        reasoning: reasoning.to_string(),
    };
    let (content, raw) = match family {
        Family::Hermes | Family::Qwen3Coder => hermes(rest),
        Family::Llama3 => llama3(rest),
        Family::Mistral(_) => mistral(rest),
        Family::DeepSeekR1 | Family::DeepSeekV31 => deepseek(rest),
        Family::CommandR7B => command_r(rest),
        Family::Granite => granite(rest),
        Family::Generic => generic(rest),
        Family::GptOss => unreachable!("parsed above"),
    }
    .map_err(fail)?;
    let calls = check(raw, options.tools).map_err(fail)?;
    Ok(ParsedTurn {
        reasoning: reasoning.trim().to_string(),
        content,
        calls,
        reasoning_unclosed,
    })
}

/// Splits off the leading reasoning block: `(reasoning, rest, unclosed)`.
/// With `open` the prompt already opened it, so the text starts inside it.
/// A closing tag with no opening one before it also ends reasoning (models
/// whose prompt opened the block without the caller knowing). For gpt-oss,
/// the reasoning is a leading `analysis` message. Cheap enough to call on
/// the text so far while it streams, to show reasoning apart.
pub fn split_reasoning(family: Family, text: &str, open: bool) -> (&str, &str, bool) {
    let Some((open_tag, close_tag)) = family.think_tags() else {
        const ANALYSIS: &str = "<|channel|>analysis<|message|>";
        return match text.trim_start().strip_prefix(ANALYSIS) {
            Some(body) => match body.find("<|end|>") {
                Some(end) => (&body[..end], &body[end + "<|end|>".len()..], false),
                None => (body, "", true),
            },
            None => ("", text, false),
        };
    };
    let body = if open {
        text
    } else if let Some(after) = text.trim_start().strip_prefix(open_tag) {
        after
    } else {
        match text.find(close_tag) {
            Some(end) if !text[..end].contains(open_tag) => text,
            _ => return ("", text, false),
        }
    };
    match body.find(close_tag) {
        Some(end) => (&body[..end], &body[end + close_tag.len()..], false),
        None => (body, "", true),
    }
}

/// The problem, then how a call is written in this family.
fn with_example(family: Family, problem: &str, tools: &[ToolSpec]) -> String {
    let name = tools.first().map_or("tool_name", |t| t.name.as_str());
    let example = ToolCall::new("abcDEF123", name, json!({"argument_name": "value"}));
    format!(
        "{problem}. Write a tool call like this:\n{}",
        family.format_calls(&[example])
    )
}

type Body = Result<(String, Vec<RawCall>), String>;

/// The first JSON value in `text` (after whitespace) and the text after it.
fn json_prefix(text: &str) -> Result<(Json, &str), serde_json::Error> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Json>();
    match values.next() {
        Some(Ok(value)) => Ok((value, &text[values.byte_offset()..])),
        Some(Err(e)) => Err(e),
        // Blank text: serde_json's own error for a missing value.
        None => serde_json::from_str::<Json>(text).map(|value| (value, "")),
    }
}

/// `{"name": …, "arguments"|"parameters": …}` → a call.
fn name_and_arguments(value: &Json, args_keys: &[&str], what: &str) -> Result<RawCall, String> {
    let object = value
        .as_object()
        .ok_or_else(|| format!("{what} must be a JSON object, not {value}"))?;
    let name = ["name", "tool_name", "tool"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Json::as_str))
        .ok_or_else(|| format!("{what} has no \"name\""))?;
    let arguments = args_keys
        .iter()
        .find_map(|k| object.get(*k))
        .cloned()
        .unwrap_or_else(|| Json::Object(Map::new()));
    let id = object
        .get("id")
        .or_else(|| object.get("tool_call_id"))
        .and_then(Json::as_str);
    Ok(RawCall {
        id: id.unwrap_or_default().to_string(),
        name: name.to_string(),
        arguments,
        text_values: false,
    })
}

fn join_text(before: &str, after: &str) -> String {
    match (before.trim(), after.trim()) {
        (b, "") => b.to_string(),
        ("", a) => a.to_string(),
        (b, a) => format!("{b}\n{a}"),
    }
}

/// `<tool_call>{"name": …, "arguments": …}</tool_call>` (or Qwen3-Coder's
/// XML inside the tags), repeated; text around the calls is kept.
fn hermes(text: &str) -> Body {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let (mut content, mut calls) = (String::new(), Vec::new());
    let mut tail = text;
    while let Some(start) = tail.find(OPEN) {
        content = join_text(&content, &tail[..start]);
        let after = &tail[start + OPEN.len()..];
        let (body, next) = match after.find(CLOSE) {
            Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
            None => (after, ""),
        };
        if body.trim_start().starts_with("<function=") {
            calls.push(xml_call(body)?);
        } else {
            let value: Json = serde_json::from_str(body.trim())
                .map_err(|e| format!("the <tool_call> block is not valid JSON ({e})"))?;
            calls.push(name_and_arguments(
                &value,
                &["arguments", "parameters"],
                "the <tool_call> block",
            )?);
        }
        tail = next;
    }
    Ok((join_text(&content, tail), calls))
}

/// Qwen3-Coder's `<function=NAME>` + `<parameter=KEY>\nVALUE\n</parameter>`…
/// + `</function>`; the values are text.
fn xml_call(body: &str) -> Result<RawCall, String> {
    let after = body.trim_start().strip_prefix("<function=").unwrap_or(body);
    let (name, mut rest) = after
        .split_once('>')
        .ok_or("write <function=NAME> with the closing `>`")?;
    let name = name.trim();
    let mut arguments = Map::new();
    while let Some(start) = rest.find("<parameter=") {
        let after = &rest[start + "<parameter=".len()..];
        let (key, value) = after
            .split_once('>')
            .ok_or("write <parameter=NAME> with the closing `>`")?;
        let end = value
            .find("</parameter>")
            .ok_or_else(|| format!("the parameter {key} of {name} has no </parameter>"))?;
        let text = &value[..end];
        let text = text.strip_prefix('\n').unwrap_or(text);
        let text = text.strip_suffix('\n').unwrap_or(text);
        arguments.insert(key.trim().to_string(), Json::from(text));
        rest = &value[end + "</parameter>".len()..];
    }
    Ok(RawCall {
        id: String::new(),
        name: name.to_string(),
        arguments: Json::Object(arguments),
        text_values: true,
    })
}

/// Llama 3: the turn is `{"name": …, "parameters": …}` (several separated by
/// `;`), optionally after `<|python_tag|>`, which may also introduce a
/// built-in call `name.call(key="value", …)`.
fn llama3(text: &str) -> Body {
    let trimmed = text.trim_start();
    let (body, tagged) = match trimmed.strip_prefix("<|python_tag|>") {
        Some(after) => (after.trim_start(), true),
        None => (trimmed, false),
    };
    if !body.starts_with('{') {
        if tagged {
            return python_call(body.trim()).map(|call| (String::new(), vec![call]));
        }
        return Ok((text.trim().to_string(), Vec::new()));
    }
    let mut calls = Vec::new();
    let mut tail = body;
    while tail.starts_with('{') {
        let (value, next) = match json_prefix(tail) {
            Ok(parsed) => parsed,
            Err(_) if !tagged && calls.is_empty() && !tail.contains("\"name\"") => {
                return Ok((text.trim().to_string(), Vec::new()))
            }
            Err(e) => return Err(format!("the call is not valid JSON ({e})")),
        };
        if !tagged && calls.is_empty() && value.get("name").is_none() {
            // An answer that happens to be JSON.
            return Ok((text.trim().to_string(), Vec::new()));
        }
        calls.push(name_and_arguments(
            &value,
            &["parameters", "arguments"],
            "the call",
        )?);
        tail = next.trim_start().trim_start_matches(';').trim_start();
    }
    Ok((tail.trim().to_string(), calls))
}

/// `name.call(key="value", n=1)`: a Llama 3 built-in tool call.
fn python_call(text: &str) -> Result<RawCall, String> {
    let bad = || format!("cannot read the call {text:?}: write name.call(key=\"value\")");
    let (name, args) = text.split_once(".call(").ok_or_else(bad)?;
    let args = args.trim_end().strip_suffix(')').ok_or_else(bad)?;
    let mut arguments = Map::new();
    for pair in split_top_level(args) {
        let (key, value) = pair.split_once('=').ok_or_else(bad)?;
        let value = value.trim();
        let parsed =
            serde_json::from_str(value).unwrap_or_else(|_| Json::from(value.trim_matches('\'')));
        arguments.insert(key.trim().to_string(), parsed);
    }
    Ok(RawCall {
        id: String::new(),
        name: name.trim().to_string(),
        arguments: Json::Object(arguments),
        text_values: false,
    })
}

/// `a="x, y", b=2` → `["a=\"x, y\"", "b=2"]`: commas outside quotes.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut start, mut quote) = (Vec::new(), 0, None);
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, ',') => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// `[TOOL_CALLS]` then a JSON list, or `name[ARGS]{…}` /
/// `name[CALL_ID]id[ARGS]{…}`, repeated. Every spelling is read whatever
/// the template's, since fine-tunes mix them.
fn mistral(text: &str) -> Body {
    const OPEN: &str = "[TOOL_CALLS]";
    let Some(start) = text.find(OPEN) else {
        return Ok((text.trim().to_string(), Vec::new()));
    };
    let mut calls = Vec::new();
    let mut tail = &text[start..];
    while let Some(after) = tail.strip_prefix(OPEN) {
        let after = after.trim_start();
        if after.starts_with('[') {
            let (value, next) = json_prefix(after)
                .map_err(|e| format!("the [TOOL_CALLS] list is not valid JSON ({e})"))?;
            let list = value
                .as_array()
                .ok_or("[TOOL_CALLS] must be followed by a JSON list")?;
            for item in list {
                calls.push(name_and_arguments(
                    item,
                    &["arguments", "parameters"],
                    "each call in the list",
                )?);
            }
            tail = next.trim_start();
            continue;
        }
        let args_at = after
            .find("[ARGS]")
            .ok_or("a call must be written as name[ARGS]{…}")?;
        let (name, id) = match after[..args_at].split_once("[CALL_ID]") {
            Some((name, id)) => (name, id.trim()),
            None => (&after[..args_at], ""),
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("{name:?} is not a tool name"));
        }
        let (arguments, next) = json_prefix(&after[args_at + "[ARGS]".len()..])
            .map_err(|e| format!("the arguments of {name} are not valid JSON ({e})"))?;
        calls.push(RawCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments,
            text_values: false,
        });
        tail = next.trim_start();
    }
    Ok((join_text(&text[..start], tail), calls))
}

/// DeepSeek's markers, also in the spellings distills garble them into.
fn normalize_deepseek(text: &str) -> String {
    let mut out = text.to_string();
    for canonical in [
        DS_CALLS_BEGIN,
        DS_CALLS_END,
        DS_CALL_BEGIN,
        DS_CALL_END,
        DS_SEP,
    ] {
        for sep in ["_", " "] {
            let variant = canonical.replace('▁', sep);
            if out.contains(&variant) {
                out = out.replace(&variant, canonical);
            }
        }
    }
    out
}

/// `<｜tool▁calls▁begin｜>` then calls, in R1's form
/// (`function<｜tool▁sep｜>NAME` + a fenced JSON block) or V3.1's
/// (`NAME<｜tool▁sep｜>{…}`).
fn deepseek(text: &str) -> Body {
    let text = normalize_deepseek(text);
    let Some(start) = text
        .find(DS_CALLS_BEGIN)
        .or_else(|| text.find(DS_CALL_BEGIN))
    else {
        return Ok((text.trim().to_string(), Vec::new()));
    };
    let mut calls = Vec::new();
    let mut tail = text[start..]
        .strip_prefix(DS_CALLS_BEGIN)
        .unwrap_or(&text[start..])
        .trim_start();
    while let Some(after) = tail.strip_prefix(DS_CALL_BEGIN) {
        let end = after
            .find(DS_CALL_END)
            .or_else(|| after.find(DS_CALLS_END))
            .unwrap_or(after.len());
        let inner = &after[..end];
        let (left, right) = inner
            .split_once(DS_SEP)
            .ok_or("a call needs <｜tool▁sep｜> between the name and the arguments")?;
        let (name, args_text) = if left.trim() == "function" || left.trim().is_empty() {
            let right = right.trim_start();
            let (name, rest) = right.split_once('\n').unwrap_or((right, ""));
            (name.trim(), unfence(rest))
        } else {
            (left.trim(), unfence(right))
        };
        let arguments = serde_json::from_str(args_text)
            .map_err(|e| format!("the arguments of {name} are not valid JSON ({e})"))?;
        calls.push(RawCall {
            id: String::new(),
            name: name.to_string(),
            arguments,
            text_values: false,
        });
        tail = after[end..]
            .strip_prefix(DS_CALL_END)
            .unwrap_or(&after[end..])
            .trim_start();
    }
    let tail = tail.strip_prefix(DS_CALLS_END).unwrap_or(tail);
    Ok((join_text(&text[..start], tail), calls))
}

/// The inside of a ```json fence, or the text itself.
fn unfence(text: &str) -> &str {
    let text = text.trim();
    match text.strip_prefix("```") {
        Some(inner) => {
            let inner = inner.strip_prefix("json").unwrap_or(inner);
            inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
        }
        None => text,
    }
}

/// `<|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]<|END_ACTION|>`;
/// the answer is inside `<|START_RESPONSE|>…<|END_RESPONSE|>`.
fn command_r(text: &str) -> Body {
    let (content, calls) = match text.find("<|START_ACTION|>") {
        Some(start) => {
            let after = &text[start + "<|START_ACTION|>".len()..];
            let end = after.find("<|END_ACTION|>").unwrap_or(after.len());
            let list: Json = serde_json::from_str(after[..end].trim())
                .map_err(|e| format!("the <|START_ACTION|> list is not valid JSON ({e})"))?;
            let items = list
                .as_array()
                .ok_or("<|START_ACTION|> must hold a JSON list")?;
            let calls = items
                .iter()
                .map(|item| name_and_arguments(item, &["parameters", "arguments"], "each action"))
                .collect::<Result<Vec<_>, _>>()?;
            let rest = after[end..].strip_prefix("<|END_ACTION|>").unwrap_or("");
            (join_text(&text[..start], rest), calls)
        }
        None => (text.trim().to_string(), Vec::new()),
    };
    let content = match content.split_once("<|START_RESPONSE|>") {
        Some((_, answer)) => answer
            .split("<|END_RESPONSE|>")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
        None => content,
    };
    Ok((content, calls))
}

/// `<|tool_call|>[{"name", "arguments"}]`; an answer may sit in `<response>`.
fn granite(text: &str) -> Body {
    let (before, calls, after) = match text.find("<|tool_call|>") {
        Some(start) => {
            let (value, rest) = json_prefix(&text[start + "<|tool_call|>".len()..])
                .map_err(|e| format!("the <|tool_call|> list is not valid JSON ({e})"))?;
            let items = match value {
                Json::Array(items) => items,
                single @ Json::Object(_) => vec![single],
                _ => return Err("<|tool_call|> must be followed by a JSON list".into()),
            };
            let calls = items
                .iter()
                .map(|item| name_and_arguments(item, &["arguments", "parameters"], "each call"))
                .collect::<Result<Vec<_>, _>>()?;
            (&text[..start], calls, rest)
        }
        None => (text, Vec::new(), ""),
    };
    let content = join_text(before, after);
    let content = content.replace("<response>", "").replace("</response>", "");
    Ok((content.trim().to_string(), calls))
}

/// Our JSON: `{"tool": NAME, "args": {…}}`, possibly after some text and in
/// a ```json fence.
fn generic(text: &str) -> Body {
    let Some(start) = find_generic_call(text) else {
        return Ok((text.trim().to_string(), Vec::new()));
    };
    let mut calls = Vec::new();
    let mut tail = &text[start..];
    while find_generic_call(tail) == Some(0) {
        let (value, next) =
            json_prefix(tail).map_err(|e| format!("the call is not valid JSON ({e})"))?;
        calls.push(name_and_arguments(
            &value,
            &["args", "arguments"],
            "the call",
        )?);
        tail = next.trim_start();
        tail = tail.strip_prefix("```").unwrap_or(tail).trim_start();
    }
    let before = text[..start].trim_end();
    let before = before
        .strip_suffix("```json")
        .or_else(|| before.strip_suffix("```"))
        .unwrap_or(before);
    Ok((join_text(before, tail), calls))
}

/// Where `{` + whitespace + `"tool"` starts, or an object that names its
/// tool after a `"thought"` (the project's earlier format, in old scripts).
fn find_generic_call(text: &str) -> Option<usize> {
    text.match_indices('{').map(|(i, _)| i).find(|&i| {
        let inside = text[i + 1..].trim_start();
        inside.starts_with("\"tool\"")
            || inside.starts_with("\"thought\"")
                && json_prefix(&text[i..])
                    .is_ok_and(|(v, _)| v.get("tool").is_some_and(Json::is_string))
    })
}

/// gpt-oss's harmony format: messages `<|channel|>NAME[ to=RECIPIENT]
/// [<|constrain|>json]<|message|>BODY` ended by `<|end|>`, `<|call|>` or
/// `<|return|>`, the next starting with `<|start|>assistant`. `analysis` is
/// reasoning, a recipient `functions.NAME` makes a call, `final` (and
/// `commentary` without a recipient) is text for the user.
fn harmony(text: &str, options: &ParseOptions<'_>) -> Result<ParsedTurn, ParseError> {
    let mut turn = ParsedTurn::default();
    let mut raw = Vec::new();
    let mut problem = None;
    for segment in text.split("<|start|>") {
        let Some((header, body)) = segment.split_once("<|message|>") else {
            // Text outside the format is the answer.
            if !segment.contains("<|channel|>")
                && !segment.trim().is_empty()
                && segment.trim() != "assistant"
            {
                turn.content = join_text(&turn.content, segment);
            }
            continue;
        };
        let end = ["<|end|>", "<|call|>", "<|return|>"]
            .iter()
            .filter_map(|t| body.find(t))
            .min();
        let closed = end.is_some();
        let body = &body[..end.unwrap_or(body.len())];
        let channel = header
            .split("<|channel|>")
            .nth(1)
            .and_then(|c| c.split(|ch: char| ch.is_whitespace() || ch == '<').next())
            .unwrap_or("");
        let recipient = header
            .split("to=")
            .nth(1)
            .and_then(|r| r.split(|ch: char| ch.is_whitespace() || ch == '<').next());
        match recipient.and_then(|r| r.strip_prefix("functions.")) {
            Some(name) => match serde_json::from_str::<Json>(body.trim()) {
                Ok(arguments) => raw.push(RawCall {
                    id: String::new(),
                    name: name.to_string(),
                    arguments,
                    text_values: false,
                }),
                Err(e) => {
                    problem
                        .get_or_insert(format!("the arguments of {name} are not valid JSON ({e})"));
                }
            },
            None if channel == "analysis" => {
                turn.reasoning = join_text(&turn.reasoning, body);
                turn.reasoning_unclosed = !closed;
            }
            None => turn.content = join_text(&turn.content, body),
        }
    }
    let fail = |problem: String| ParseError {
        message: with_example(Family::GptOss, &problem, options.tools),
        reasoning: turn.reasoning.clone(),
    };
    if let Some(problem) = problem {
        return Err(fail(problem));
    }
    turn.calls = check(raw, options.tools).map_err(fail)?;
    Ok(turn)
}

/// Arguments decoded (a JSON string holding an object is accepted) and
/// checked against the tools' schemas.
fn check(raw: Vec<RawCall>, tools: &[ToolSpec]) -> Result<Vec<ToolCall>, String> {
    raw.into_iter()
        .map(|call| {
            let arguments = match call.arguments {
                Json::String(text) => serde_json::from_str(&text).map_err(|e| {
                    format!("the arguments of {} are not valid JSON ({e})", call.name)
                })?,
                other => other,
            };
            let tool = tools.iter().find(|t| t.name == call.name);
            let arguments = match (call.text_values, tool) {
                (true, Some(tool)) => typed_text_values(arguments, &tool.parameters),
                _ => arguments,
            };
            let Some(given) = arguments.as_object() else {
                return Err(format!(
                    "the arguments of {} must be a JSON object, not {arguments}",
                    call.name
                ));
            };
            if !tools.is_empty() {
                let tool = tools.iter().find(|t| t.name == call.name).ok_or_else(|| {
                    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                    format!(
                        "there is no tool named {:?}; the tools are {}",
                        call.name,
                        names.join(", ")
                    )
                })?;
                check_arguments(&call.name, given, &tool.parameters)?;
            }
            Ok(ToolCall::new(call.id, call.name, arguments))
        })
        .collect()
}

/// Text values read as the schema's types: `7` for an integer, `True` or
/// `true` for a boolean, JSON for arrays and objects.
fn typed_text_values(mut arguments: Json, schema: &Json) -> Json {
    let Some(given) = arguments.as_object_mut() else {
        return arguments;
    };
    for (key, value) in given.iter_mut() {
        let Some(text) = value.as_str() else { continue };
        let ty = schema.pointer(&format!("/properties/{key}/type"));
        if ty.is_none() || ty == Some(&Json::from("string")) {
            continue;
        }
        let parsed = match text.trim() {
            "True" => Some(Json::Bool(true)),
            "False" => Some(Json::Bool(false)),
            other => serde_json::from_str(other).ok(),
        };
        if let Some(parsed) = parsed {
            *value = parsed;
        }
    }
    arguments
}

/// Required arguments present, declared types respected, no unknown
/// arguments where the schema forbids them.
fn check_arguments(tool: &str, given: &Map<String, Json>, schema: &Json) -> Result<(), String> {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Json::as_object)
        .unwrap_or(&empty);
    if let Some(required) = schema.get("required").and_then(Json::as_array) {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Json::as_str)
            .filter(|r| !given.contains_key(*r))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{tool} needs the argument(s) {}",
                missing.join(", ")
            ));
        }
    }
    for (name, value) in given {
        let Some(prop) = props.get(name) else {
            if schema.get("additionalProperties") == Some(&Json::Bool(false)) {
                let known: Vec<&str> = props.keys().map(String::as_str).collect();
                return Err(format!(
                    "{tool} has no argument {name:?}; its arguments are {}",
                    known.join(", ")
                ));
            }
            continue;
        };
        let fits = |ty: &str| match ty {
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => true,
        };
        let ok = match prop.get("type") {
            Some(Json::String(ty)) => fits(ty),
            Some(Json::Array(types)) => types.iter().filter_map(Json::as_str).any(fits),
            _ => true,
        };
        if !ok {
            let ty = prop.get("type").map(|t| t.to_string()).unwrap_or_default();
            return Err(format!(
                "the argument {name} of {tool} must be of type {ty}, not {value}"
            ));
        }
    }
    Ok(())
}
