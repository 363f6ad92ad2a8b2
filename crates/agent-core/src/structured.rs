//! The answer as JSON of a given shape (`agent ask --output-schema`), for
//! scripts and CI: after a run that answered, one more request turns the
//! answer into one JSON value, generated under a grammar made from the
//! schema, so it parses and has the shape; a provider that cannot be
//! constrained (a remote server) has its reply checked instead.
//!
//! It is an aside that sees the request and the answer, not a `finish` call
//! whose arguments follow the schema: every chat family gets it the same way
//! (a model with native tool calls answers in free text), and the
//! conversation's KV cache is left as it was.
//!
//! Accepted are the keywords the grammar enforces: `type` (object, array,
//! string, integer, number, boolean), `properties`, `required`, `items`,
//! `enum`, `maxLength`, `maxItems`, `additionalProperties: false` (which the
//! grammar keeps anyway), and annotations. Anything else is refused before
//! the run starts, by name, rather than promised and not kept.
//!
//! The grammar writes every property (required ones first), and bounds
//! strings and lists ([`MAX_STRING_CHARS`], [`MAX_ITEMS`] unless the schema
//! says less): a grammar alone keeps a small model on the shape, not from
//! repeating one list item until its tokens run out, which is no JSON.

use agent_chat::grammar::literal as gbnf_literal;
use agent_llm::{CompletionRequest, Event, Flow, Grammar, Message};
use serde_json::{json, Value};

use agent_base::cancel::CancelToken;

/// Keywords that only annotate a schema.
const ANNOTATIONS: [&str; 6] = [
    "title",
    "description",
    "$schema",
    "$id",
    "examples",
    "default",
];
/// Keywords the grammar enforces.
const ENFORCED: [&str; 8] = [
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "maxLength",
    "maxItems",
    "additionalProperties",
];
/// The longest string the grammar writes where the schema gives no
/// `maxLength`: a sentence or a path, not a runaway.
pub(crate) const MAX_STRING_CHARS: u64 = 300;
/// The most items of a list where the schema gives no `maxItems`.
pub(crate) const MAX_ITEMS: u64 = 12;
const TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

/// Whether the grammar can hold an answer to `schema`; the error names the
/// first keyword or value it cannot, and where (`$.files.items`).
pub fn check_schema(schema: &Value) -> Result<(), String> {
    check(schema, "$")
}

fn check(schema: &Value, at: &str) -> Result<(), String> {
    let Some(map) = schema.as_object() else {
        return Err(format!("{at}: a schema is a JSON object"));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !ENFORCED.contains(&k.as_str()) && !ANNOTATIONS.contains(&k.as_str()))
    {
        return Err(format!(
            "{at}: `{key}` is not supported (supported: {}; annotations: {})",
            ENFORCED.join(", "),
            ANNOTATIONS.join(", ")
        ));
    }
    if let Some(options) = map.get("enum") {
        return match options.as_array() {
            Some(list) if !list.is_empty() => Ok(()),
            _ => Err(format!("{at}: `enum` is a non-empty list")),
        };
    }
    let kind = match map.get("type").and_then(Value::as_str) {
        Some(kind) if TYPES.contains(&kind) => kind,
        Some(other) => {
            return Err(format!(
                "{at}: type `{other}` is not supported ({})",
                TYPES.join(", ")
            ))
        }
        None => return Err(format!("{at}: give a `type` (or an `enum`)")),
    };
    if matches!(map.get("additionalProperties"), Some(v) if v != &Value::Bool(false)) {
        return Err(format!(
            "{at}: only `additionalProperties: false` is supported (the answer has the listed properties only)"
        ));
    }
    match kind {
        "object" => {
            let props = map.get("properties").and_then(Value::as_object);
            for (name, child) in props.into_iter().flatten() {
                check(child, &format!("{at}.{name}"))?;
            }
            let required = map.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten() {
                let known = name
                    .as_str()
                    .is_some_and(|n| props.is_some_and(|p| p.contains_key(n)));
                if !known {
                    return Err(format!("{at}: required {name} is not among its properties"));
                }
            }
            Ok(())
        }
        "array" => match map.get("items") {
            Some(items) => check(items, &format!("{at}.items")),
            None => Err(format!("{at}: an array needs `items`")),
        },
        _ => Ok(()),
    }
}

/// The grammar of one JSON value of `schema`'s shape (checked by
/// [`check_schema`]).
pub(crate) fn schema_grammar(schema: &Value) -> Grammar {
    let mut strings = std::collections::BTreeSet::new();
    let root = rule(schema, &mut strings);
    let mut gbnf = format!("root ::= {root}\n");
    for max in strings {
        gbnf.push_str(&format!(
            "string-{max} ::= \"\\\"\" char{{0,{max}}} \"\\\"\"\n"
        ));
    }
    gbnf.push_str(crate::protocol::PRIMITIVES);
    Grammar::new(gbnf)
}

/// GBNF for one value; `strings` collects the string bounds used, each a
/// rule of its own.
fn rule(schema: &Value, strings: &mut std::collections::BTreeSet<u64>) -> String {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let alts: Vec<String> = options
            .iter()
            .map(|v| gbnf_literal(&v.to_string()))
            .collect();
        return format!("({})", alts.join(" | "));
    }
    let bound =
        |key: &str, default: u64| schema.get(key).and_then(Value::as_u64).unwrap_or(default);
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut names: Vec<&str> = required.clone();
            names.extend(
                props
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k.as_str())
                    .filter(|k| !required.contains(k)),
            );
            let fields: Vec<String> = names
                .iter()
                .filter_map(|name| {
                    let child = props?.get(*name)?;
                    Some(format!(
                        r#"{} ws ":" ws {}"#,
                        gbnf_literal(&Value::from(*name).to_string()),
                        rule(child, strings)
                    ))
                })
                .collect();
            format!(r#""{{" ws {} ws "}}""#, fields.join(r#" ws "," ws "#))
        }
        Some("array") => {
            let max = bound("maxItems", MAX_ITEMS);
            let item = schema
                .get("items")
                .map_or_else(|| "string".into(), |i| rule(i, strings));
            match max {
                0 => r#"("[" ws "]")"#.into(),
                1 => format!(r#"("[" ws ({item})? ws "]")"#),
                _ => format!(
                    r#"("[" ws ({item} (ws "," ws {item}){{0,{}}})? ws "]")"#,
                    max - 1
                ),
            }
        }
        Some("integer") => "integer".into(),
        Some("number") => "number".into(),
        Some("boolean") => "boolean".into(),
        _ => {
            let max = bound("maxLength", MAX_STRING_CHARS);
            strings.insert(max);
            format!("string-{max}")
        }
    }
}

/// Whether `value` has `schema`'s shape; the error says where it does not.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    conforms(value, schema, "$")
}

fn conforms(value: &Value, schema: &Value, at: &str) -> Result<(), String> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return if options.contains(value) {
            Ok(())
        } else {
            Err(format!(
                "{at}: {value} is not one of {}",
                Value::from(options.clone())
            ))
        };
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let fits = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => value.is_string(),
    };
    if !fits {
        return Err(format!("{at}: expected {kind}, found {value}"));
    }
    let longer = |key: &str, len: usize| {
        let max = schema.get(key).and_then(Value::as_u64)?;
        (len as u64 > max).then(|| format!("{at}: longer than its {key} {max}"))
    };
    let too_long = match value {
        Value::String(text) => longer("maxLength", text.chars().count()),
        Value::Array(items) => longer("maxItems", items.len()),
        _ => None,
    };
    if let Some(why) = too_long {
        return Err(why);
    }
    match value {
        Value::Object(fields) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required = schema.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    return Err(format!("{at}: `{name}` is missing"));
                }
            }
            for (name, field) in fields {
                match props.and_then(|p| p.get(name)) {
                    Some(child) => conforms(field, child, &format!("{at}.{name}"))?,
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return Err(format!("{at}: `{name}` is not one of its properties"));
                    }
                    None => {}
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            for (i, item) in items.iter().enumerate() {
                if item_schema.is_object() {
                    conforms(item, item_schema, &format!("{at}[{i}]"))?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The request to the model: the request and its answer, to be written as
/// JSON of the schema's shape.
fn messages(request: &str, answer: &str, schema: &Value) -> Vec<Message> {
    vec![
        Message::system(
            "You write answers as JSON. Reply with one JSON value that matches the JSON Schema \
             given, taking every fact from the answer given; nothing else.",
        ),
        Message::user(format!(
            "Request: {request}\n\nAnswer: {answer}\n\nJSON Schema:\n{schema}"
        )),
    ]
}

impl crate::Agent {
    /// `answer` (to `request`) as one JSON value of `schema`'s shape, or
    /// why it could not be had.
    pub(crate) fn structured_answer(
        &mut self,
        request: &str,
        answer: &str,
        schema: &Value,
        cancel: &CancelToken,
    ) -> Result<Value, String> {
        let completion_request = CompletionRequest {
            messages: messages(request, answer, schema),
            max_tokens: self.config.max_tokens.max(512),
            sampling: self.config.sampling,
            grammar: self
                .provider
                .supports_grammar()
                .then(|| schema_grammar(schema)),
            thinking: Some(false),
            aside: true,
            interrupt: Some(cancel.clone()),
            ..CompletionRequest::default()
        };
        let completion = self
            .provider
            .complete(&completion_request, &mut |_: Event| {
                if cancel.is_cancelled() {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            })
            .map_err(|e| format!("the model could not write the JSON ({e})"))?;
        self.log.trace(
            "structured_response",
            json!({"text": completion.text, "finish": completion.finish,
                   "grammar": completion_request.grammar.is_some(),
                   "prompt_tokens": completion.prompt_tokens,
                   "completion_tokens": completion.completion_tokens}),
        );
        if cancel.is_cancelled() {
            return Err(format!("stopped by {}", cancel.stopped_by()));
        }
        let text = completion.text.trim();
        let json_text = text
            .strip_prefix("```json")
            .or_else(|| text.strip_prefix("```"))
            .and_then(|t| t.strip_suffix("```"))
            .unwrap_or(text);
        let value: Value = serde_json::from_str(json_text.trim()).map_err(|e| {
            format!(
                "the model's reply is not JSON ({e}): {}",
                agent_base::term::truncate(text, 160)
            )
        })?;
        validate(&value, schema).map_err(|e| format!("the JSON does not match the schema: {e}"))?;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "one sentence"},
                "files": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
                    "required": ["path", "line"],
                    "additionalProperties": false
                }},
                "confidence": {"enum": ["low", "high"]}
            },
            "required": ["summary", "files"]
        })
    }

    #[test]
    fn schemas_the_grammar_cannot_hold_are_refused_by_name() {
        assert_eq!(check_schema(&schema()), Ok(()));
        let cases = [
            (
                json!({"type": "string", "pattern": "^a"}),
                "$: `pattern` is not supported",
            ),
            (json!({"anyOf": []}), "$: `anyOf` is not supported"),
            (json!({"type": "null"}), "$: type `null` is not supported"),
            (json!({"description": "x"}), "$: give a `type`"),
            (
                json!({"type": "object", "properties": {"a": {"type": "array"}}}),
                "$.a: an array needs `items`",
            ),
            (
                json!({"type": "object", "properties": {}, "required": ["b"]}),
                "$: required \"b\" is not among its properties",
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                "$: only `additionalProperties: false`",
            ),
            (json!([1]), "$: a schema is a JSON object"),
        ];
        for (schema, want) in cases {
            let got = check_schema(&schema).unwrap_err();
            assert!(got.starts_with(want), "{schema}: {got}");
        }
    }

    #[test]
    fn answers_are_checked_against_the_shape_with_the_place_named() {
        let ok =
            json!({"summary": "s", "files": [{"path": "a.rs", "line": 3}], "confidence": "high"});
        assert_eq!(validate(&ok, &schema()), Ok(()));
        let cases = [
            (json!({"files": []}), "$: `summary` is missing"),
            (
                json!({"summary": 1, "files": []}),
                "$.summary: expected string, found 1",
            ),
            (
                json!({"summary": "s", "files": [{"path": "a", "line": 1.5}]}),
                "$.files[0].line: expected integer, found 1.5",
            ),
            (
                json!({"summary": "s", "files": [{"path": "a", "line": 1, "x": 0}]}),
                "$.files[0]: `x` is not one of its properties",
            ),
            (
                json!({"summary": "s", "files": [], "confidence": "mid"}),
                "$.confidence: \"mid\" is not one of [\"low\",\"high\"]",
            ),
        ];
        let short =
            json!({"type": "array", "maxItems": 1, "items": {"type": "string", "maxLength": 2}});
        assert_eq!(validate(&json!(["ab"]), &short), Ok(()));
        assert_eq!(
            validate(&json!(["ab", "c"]), &short).unwrap_err(),
            "$: longer than its maxItems 1"
        );
        assert_eq!(
            validate(&json!(["abc"]), &short).unwrap_err(),
            "$[0]: longer than its maxLength 2"
        );
        for (value, want) in cases {
            assert_eq!(validate(&value, &schema()).unwrap_err(), want, "{value}");
        }
    }

    #[test]
    fn the_grammar_is_one_value_of_the_shape() {
        let g = schema_grammar(&schema());
        assert!(g.gbnf.starts_with("root ::= \"{\""), "{}", g.gbnf);
        for piece in [
            r#"\"summary\""#,
            r#"\"files\""#,
            r#"\"line\""#,
            "integer ::=",
        ] {
            assert!(g.gbnf.contains(piece), "{piece}: {}", g.gbnf);
        }
    }
}
