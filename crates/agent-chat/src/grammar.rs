//! Lazy call grammars: GBNF that lets a model write anything (reasoning,
//! text) until it starts a call, and from the call's opener on admits only a
//! valid call of a real tool in the family's own syntax.
//!
//! llama.cpp's lazy grammar (`llama_sampler_init_grammar_lazy_patterns`,
//! `LlamaSampler::grammar_lazy` / `grammar_lazy_patterns` in llama-cpp-2)
//! waits for a trigger (a word, a regex, or a token id) and then feeds the
//! grammar the text *from the trigger's start* (a regex: from its first
//! capture group). So each grammar here starts with the opener itself, and
//! ends where the call ends: after it only end-of-generation tokens are
//! allowed, which is how the turn stops.
//!
//! Two ways to trigger, both given:
//! - [`CallGrammar::trigger_patterns`] fire only outside the reasoning block
//!   (the grammar is fed from group 1), so thinking stays free and a call
//!   mentioned inside it never starts the grammar;
//! - [`CallGrammar::trigger_words`] are the plain openers, for an engine
//!   that starts the grammar itself once the reasoning has closed; where an
//!   opener is one token of the vocabulary, its token id can trigger instead.
//!
//! The JSON rules ([`JSON_RULES`], [`schema_expr`]) are generic: any
//! grammar that needs a JSON value of a schema can use them.

use serde_json::{Map, Value as Json};

use crate::family::{
    Family, MistralSyntax, DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_BEGIN, DS_CALL_END, DS_SEP, THINK,
};
use crate::message::ToolSpec;
use crate::pyjson::dumps_json;

/// A lazy grammar for one family's calls of some tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallGrammar {
    /// GBNF text (llama.cpp's dialect).
    pub gbnf: String,
    /// The start rule.
    pub root: String,
    /// Literal openers; the grammar starts with one of them.
    pub trigger_words: Vec<String>,
    /// ECMAScript regexes that match from the start of the output and fire
    /// only once reasoning is over; the grammar is fed from group 1.
    pub trigger_patterns: Vec<String>,
}

/// Whitespace and JSON values. `ws` is at most two newlines and 20 spaces,
/// as llama.cpp's converter writes it, so a model cannot stall in padding.
pub const JSON_RULES: &str = r#"ws ::= | " " | "\n"{1,2} [ \t]{0,20}
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws ( json-string ws ":" ws json-value ( ws "," ws json-string ws ":" ws json-value )* )? ws "}"
json-array ::= "[" ws ( json-value ( ws "," ws json-value )* )? ws "]"
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-number ::= json-integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
json-boolean ::= "true" | "false"
json-null ::= "null"
"#;

/// `text` as a GBNF string literal.
pub fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF expression (using [`JSON_RULES`]) for a JSON value matching
/// `schema`: objects with their properties (in the order the schema lists
/// them; optional ones may be left out), arrays, enums, constants,
/// `anyOf`/`oneOf`, and the primitive types. What it does not model
/// (`$ref`, patterns, bounds) falls back to any value of the type.
pub fn schema_expr(schema: &Json) -> String {
    let alternatives = |schemas: &[Json]| {
        let alts: Vec<String> = schemas.iter().map(schema_expr).collect();
        format!("( {} )", alts.join(" | "))
    };
    if let Some(values) = schema.get("enum").and_then(Json::as_array) {
        let alts: Vec<String> = values.iter().map(|v| literal(&dumps_json(v))).collect();
        return format!("( {} )", alts.join(" | "));
    }
    if let Some(value) = schema.get("const") {
        return literal(&dumps_json(value));
    }
    if let Some(schemas) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Json::as_array)
    {
        return alternatives(schemas);
    }
    match schema.get("type") {
        Some(Json::Array(types)) => {
            let schemas: Vec<Json> = types
                .iter()
                .map(|t| {
                    let mut one = schema.clone();
                    one["type"] = t.clone();
                    one
                })
                .collect();
            alternatives(&schemas)
        }
        Some(Json::String(ty)) => match ty.as_str() {
            "string" => "json-string".into(),
            "integer" => "json-integer".into(),
            "number" => "json-number".into(),
            "boolean" => "json-boolean".into(),
            "null" => "json-null".into(),
            "array" => {
                let item = schema
                    .get("items")
                    .map_or_else(|| "json-value".into(), schema_expr);
                format!(r#"( "[" ws ( {item} ( ws "," ws {item} )* )? ws "]" )"#)
            }
            "object" => object_expr(schema),
            _ => "json-value".into(),
        },
        _ if schema.get("properties").is_some() => object_expr(schema),
        _ => "json-value".into(),
    }
}

/// An object with the schema's properties in the order the schema lists
/// them (serde_json's maps keep insertion order: the order the tool's
/// author wrote), each optional one free to be left out.
///
/// Why that order: it is the order the model sees in its prompt, since the
/// tool schemas a template prints and the tool descriptions of
/// [`crate::adapt::describe_tools`] come from the same map. A grammar that
/// demanded another one (required arguments first, as llama.cpp's schema
/// converter does) would refuse the key the model most likely writes next
/// wherever the schema lists an optional argument before a required one.
/// The arguments of earlier calls keep the order the model wrote them in,
/// which under this grammar is the schema's too.
fn object_expr(schema: &Json) -> String {
    let Some(props) = schema.get("properties").and_then(Json::as_object) else {
        return "json-object".into();
    };
    let required = required(schema);
    let members: Vec<(bool, String)> = props
        .iter()
        .map(|(name, prop)| {
            let member = format!(
                r#"{} ws ":" ws {}"#,
                literal(&dumps_json(&Json::from(name.as_str()))),
                schema_expr(prop)
            );
            (required.contains(&name.as_str()), member)
        })
        .collect();
    // After the first member written, each later one comes after a comma;
    // the optional ones may be skipped.
    let rest = |from: usize| -> String {
        members[from..]
            .iter()
            .map(|(req, m)| {
                if *req {
                    format!(r#" ws "," ws {m}"#)
                } else {
                    format!(r#" ( ws "," ws {m} )?"#)
                }
            })
            .collect()
    };
    // The first member written is any one up to the first required one (the
    // optional ones before it skipped); with none required, the object may
    // be empty.
    let last_first = members
        .iter()
        .position(|(req, _)| *req)
        .unwrap_or(members.len().saturating_sub(1));
    let firsts: Vec<String> = members
        .iter()
        .take(last_first + 1)
        .enumerate()
        .map(|(i, (_, m))| format!("{m}{}", rest(i + 1)))
        .collect();
    let body = match (firsts.len(), members.iter().any(|(req, _)| *req)) {
        (0, _) => String::new(),
        (1, true) => firsts[0].clone(),
        (_, true) => format!("( {} )", firsts.join(" | ")),
        (_, false) => format!("( {} )?", firsts.join(" | ")),
    };
    format!(r#"( "{{" ws {body} ws "}}" )"#)
}

/// The names a schema lists as `required`.
fn required(schema: &Json) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Json::as_array)
        .map(|r| r.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default()
}

/// How a family's call joins a tool's name and its arguments.
struct Shape {
    /// Rules of the family's frame; `call-body` is the choice of tools.
    frame: &'static str,
    /// One tool's alternative, from its name and its arguments rule.
    call: fn(name: &str, args: &str) -> String,
    /// The arguments rule's body, from the tool's parameter schema.
    args: fn(schema: &Json) -> String,
}

fn shape(family: Family) -> Shape {
    match family {
        Family::Qwen3Coder => Shape {
            frame: QWEN3_CODER_FRAME,
            call: |name, args| format!("{} {args}", literal(&format!("{name}>\n"))),
            args: xml_parameters,
        },
        Family::Hermes => Shape {
            frame: r#"root ::= tool-call ( ws tool-call )*
tool-call ::= "<tool_call>" ws "{" ws "\"name\"" ws ":" ws call-body ws "}" ws "</tool_call>""#,
            call: |name, args| {
                format!(
                    r#"{} ws "," ws "\"arguments\"" ws ":" ws {args}"#,
                    literal(&quoted(name))
                )
            },
            args: json_arguments,
        },
        Family::Llama3 => Shape {
            frame: r#"root ::= ( "<|python_tag|>" ws )? "{" ws ( "\"type\"" ws ":" ws "\"function\"" ws "," ws )? "\"name\"" ws ":" ws call-body ws "}""#,
            call: |name, args| {
                format!(
                    r#"{} ws "," ws "\"parameters\"" ws ":" ws {args}"#,
                    literal(&quoted(name))
                )
            },
            args: json_arguments,
        },
        Family::Mistral(MistralSyntax::JsonList) => Shape {
            frame: r#"root ::= "[TOOL_CALLS]" ws "[" ws tool-call ( ws "," ws tool-call )* ws "]"
tool-call ::= "{" ws "\"name\"" ws ":" ws call-body ( ws "," ws "\"id\"" ws ":" ws "\"" [a-zA-Z0-9]{9} "\"" )? ws "}""#,
            call: |name, args| {
                format!(
                    r#"{} ws "," ws "\"arguments\"" ws ":" ws {args}"#,
                    literal(&quoted(name))
                )
            },
            args: json_arguments,
        },
        Family::Mistral(MistralSyntax::Args) => Shape {
            frame: r#"root ::= tool-call ( ws tool-call )*
tool-call ::= "[TOOL_CALLS]" call-body"#,
            call: |name, args| format!(r#"{} {args}"#, literal(&format!("{name}[ARGS]"))),
            args: json_arguments,
        },
        Family::Mistral(MistralSyntax::CallIdArgs) => Shape {
            frame: r#"root ::= tool-call ( ws tool-call )*
tool-call ::= "[TOOL_CALLS]" call-body"#,
            call: |name, args| {
                format!(
                    r#"{} [a-zA-Z0-9]{{9}} "[ARGS]" {args}"#,
                    literal(&format!("{name}[CALL_ID]"))
                )
            },
            args: json_arguments,
        },
        Family::DeepSeekR1 => Shape {
            frame: deepseek_r1_frame(),
            call: |name, args| format!(r#"{} {args}"#, literal(&format!("{name}\n```json\n"))),
            args: json_arguments,
        },
        Family::DeepSeekV31 => Shape {
            frame: deepseek_v31_frame(),
            call: |name, args| format!(r#"{} {args}"#, literal(&format!("{name}{DS_SEP}"))),
            args: json_arguments,
        },
        Family::GptOss => Shape {
            frame: r#"root ::= ( "<|channel|>commentary to=functions." | " "? "to=functions." ) call-body
harmony-header ::= " "? ( "<|channel|>commentary" " "? )? "<|constrain|>"? "json"? "<|message|>""#,
            call: |name, args| format!(r#"{} harmony-header {args}"#, literal(name)),
            args: json_arguments,
        },
        Family::CommandR7B => Shape {
            frame: r#"root ::= "<|START_ACTION|>" ws "[" ws tool-call ( ws "," ws tool-call )* ws "]" ws "<|END_ACTION|>"
tool-call ::= "{" ws "\"tool_call_id\"" ws ":" ws "\"" [0-9]{1,4} "\"" ws "," ws "\"tool_name\"" ws ":" ws call-body ws "}""#,
            call: |name, args| {
                format!(
                    r#"{} ws "," ws "\"parameters\"" ws ":" ws {args}"#,
                    literal(&quoted(name))
                )
            },
            args: json_arguments,
        },
        Family::Granite => Shape {
            frame: r#"root ::= "<|tool_call|>" ws "[" ws tool-call ( ws "," ws tool-call )* ws "]"
tool-call ::= "{" ws "\"name\"" ws ":" ws call-body ws "}""#,
            call: |name, args| {
                format!(
                    r#"{} ws "," ws "\"arguments\"" ws ":" ws {args}"#,
                    literal(&quoted(name))
                )
            },
            args: json_arguments,
        },
        Family::Generic => Shape {
            frame: r#"root ::= "{" ws "\"tool\"" ws ":" ws call-body ws "}""#,
            call: |name, args| {
                format!(
                    r#"{} ws "," ws "\"args\"" ws ":" ws {args}"#,
                    literal(&quoted(name))
                )
            },
            args: json_arguments,
        },
    }
}

fn deepseek_r1_frame() -> &'static str {
    // Written out once: the markers are full-width DeepSeek tokens.
    static FRAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FRAME.get_or_init(|| {
        format!(
            "root ::= {} tool-call ( \"\\n\"? tool-call )* {}\ntool-call ::= {} call-body {}",
            literal(DS_CALLS_BEGIN),
            literal(DS_CALLS_END),
            literal(&format!("{DS_CALL_BEGIN}function{DS_SEP}")),
            literal(&format!("\n```{DS_CALL_END}")),
        )
    })
}

fn deepseek_v31_frame() -> &'static str {
    static FRAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FRAME.get_or_init(|| {
        format!(
            "root ::= {} tool-call+ {}\ntool-call ::= {} call-body {}",
            literal(DS_CALLS_BEGIN),
            literal(DS_CALLS_END),
            literal(DS_CALL_BEGIN),
            literal(DS_CALL_END),
        )
    })
}

fn json_arguments(schema: &Json) -> String {
    schema_expr(schema)
}

/// Qwen3-Coder's frame; `xml-text` is any text without `</parameter>`,
/// as a small automaton (state N: the last N characters began the tag).
const QWEN3_CODER_FRAME: &str = r#"root ::= tool-call ( ws tool-call )*
tool-call ::= "<tool_call>\n<function=" call-body "</function>\n</tool_call>"
xml-text ::= | [^<] xml-text | "<" xml-text-1
xml-text-1 ::= | [^/<] xml-text | "<" xml-text-1 | "/" xml-text-2
xml-text-2 ::= | [^p<] xml-text | "<" xml-text-1 | "p" xml-text-3
xml-text-3 ::= | [^a<] xml-text | "<" xml-text-1 | "a" xml-text-4
xml-text-4 ::= | [^r<] xml-text | "<" xml-text-1 | "r" xml-text-5
xml-text-5 ::= | [^a<] xml-text | "<" xml-text-1 | "a" xml-text-6
xml-text-6 ::= | [^m<] xml-text | "<" xml-text-1 | "m" xml-text-7
xml-text-7 ::= | [^e<] xml-text | "<" xml-text-1 | "e" xml-text-8
xml-text-8 ::= | [^t<] xml-text | "<" xml-text-1 | "t" xml-text-9
xml-text-9 ::= | [^e<] xml-text | "<" xml-text-1 | "e" xml-text-10
xml-text-10 ::= | [^r<] xml-text | "<" xml-text-1 | "r" xml-text-11
xml-text-11 ::= | [^><] xml-text | "<" xml-text-1"#;

/// `<parameter=KEY>\nVALUE\n</parameter>\n` per argument, in the order
/// the schema lists them (see [`object_expr`] for why), the optional ones free to be
/// left out. Strings are raw text; other values JSON (booleans also as
/// Python writes them).
fn xml_parameters(schema: &Json) -> String {
    let Some(props) = schema.get("properties").and_then(Json::as_object) else {
        return "\"\"".into();
    };
    let required = required(schema);
    let member = |name: &str, prop: &Json| {
        let value = match prop.get("type").and_then(Json::as_str) {
            _ if prop.get("enum").is_some_and(Json::is_array) => {
                let alts: Vec<String> = prop["enum"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| literal(&v.as_str().map_or_else(|| dumps_json(v), str::to_string)))
                    .collect();
                format!("( {} )", alts.join(" | "))
            }
            Some("string") => "xml-text".to_string(),
            Some("boolean") => r#"( "true" | "false" | "True" | "False" )"#.to_string(),
            _ => schema_expr(prop),
        };
        format!(
            "{} {value} {}",
            literal(&format!("<parameter={name}>\n")),
            literal("\n</parameter>\n")
        )
    };
    let parts: Vec<String> = props
        .iter()
        .map(|(name, prop)| {
            if required.contains(&name.as_str()) {
                member(name, prop)
            } else {
                format!("( {} )?", member(name, prop))
            }
        })
        .collect();
    if parts.is_empty() {
        "\"\"".into()
    } else {
        parts.join(" ")
    }
}

fn quoted(name: &str) -> String {
    dumps_json(&Json::from(name))
}

/// The grammar for `family`'s calls of `tools`, with its triggers; `None`
/// without tools. `reasoning_open`: the prompt ended inside a reasoning
/// block ([`crate::render::Prompt::reasoning_open`]).
pub fn call_grammar(
    family: Family,
    tools: &[ToolSpec],
    reasoning_open: bool,
) -> Option<CallGrammar> {
    if tools.is_empty() {
        return None;
    }
    let shape = shape(family);
    let mut rules = vec![shape.frame.to_string()];
    let mut alternatives = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let args = format!("args-{i}");
        rules.push(format!(
            "{args} ::= {}",
            (shape.args)(&object_schema(&tool.parameters))
        ));
        rules.push(format!("call-{i} ::= {}", (shape.call)(&tool.name, &args)));
        alternatives.push(format!("call-{i}"));
    }
    rules.push(format!("call-body ::= {}", alternatives.join(" | ")));
    let gbnf = format!("{}\n{JSON_RULES}", rules.join("\n"));
    Some(CallGrammar {
        gbnf,
        root: "root".into(),
        trigger_words: family.openers().iter().map(|s| s.to_string()).collect(),
        trigger_patterns: trigger_patterns(family, reasoning_open),
    })
}

/// Arguments are always an object, even where the schema says less.
fn object_schema(parameters: &Json) -> Json {
    match parameters {
        Json::Object(map)
            if map.contains_key("properties") || map.get("type") == Some(&Json::from("object")) =>
        {
            parameters.clone()
        }
        _ => Json::Object(Map::from_iter([("type".to_string(), Json::from("object"))])),
    }
}

/// `text` with ECMAScript regex metacharacters escaped.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Regexes that match once a call has begun outside the reasoning block;
/// group 1 starts where the grammar does.
fn trigger_patterns(family: Family, reasoning_open: bool) -> Vec<String> {
    if family == Family::GptOss {
        // Calls are messages of their own: at the start of the output, or
        // of a later message.
        return vec![r"^(?:[\s\S]*<\|start\|>assistant)?\s*(<\|channel\|>commentary to=functions\.| ?to=functions\.)".into()];
    }
    // Every family but GPT-OSS has think tags; `<think>` is the default.
    let (open, close) = family.think_tags().unwrap_or(THINK);
    let (open, close) = (regex_escape(open), regex_escape(close));
    let after_reasoning = if reasoning_open {
        format!(r"^[\s\S]*?{close}")
    } else {
        format!(r"^(?:\s*{open}[\s\S]*?{close}|(?!\s*{open}))")
    };
    let start = match family {
        // The whole turn is the JSON call.
        Family::Llama3 => r#"\s*(<\|python_tag\|>|\{\s*"(?:type|name)")"#.to_string(),
        Family::Generic => r#"[\s\S]*?(\{\s*"tool")"#.to_string(),
        _ => format!(r"[\s\S]*?({})", regex_escape(family.openers()[0])),
    };
    vec![format!("{after_reasoning}{start}")]
}
