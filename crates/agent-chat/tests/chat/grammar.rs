//! The lazy call grammars, checked without a model: each parses as GBNF,
//! admits the family's own calls of real tools (which then parse back to
//! the same calls), refuses unknown tools and ill-typed or missing
//! arguments, and its triggers fire on a call after the reasoning, never on
//! one inside it.

#[path = "support/gbnf.rs"]
mod gbnf;

use agent_chat::family::MistralSyntax;
use agent_chat::grammar::{call_grammar, schema_expr, CallGrammar, JSON_RULES};
use agent_chat::{parse_turn, Family, ParseOptions, ToolCall, ToolSpec};
use fancy_regex::Regex;
use gbnf::Grammar;
use serde_json::json;

const FAMILIES: [Family; 12] = [
    Family::Hermes,
    Family::Qwen3Coder,
    Family::Llama3,
    Family::Mistral(MistralSyntax::JsonList),
    Family::Mistral(MistralSyntax::Args),
    Family::Mistral(MistralSyntax::CallIdArgs),
    Family::DeepSeekR1,
    Family::DeepSeekV31,
    Family::GptOss,
    Family::CommandR7B,
    Family::Granite,
    Family::Generic,
];

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "read_file",
            "Read a text file.",
            json!({"type": "object",
                   "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"},
                                  "mode": {"enum": ["text", "hex"]}},
                   "required": ["path"]}),
        ),
        ToolSpec::new(
            "grep",
            "Search files.",
            json!({"type": "object",
                   "properties": {"pattern": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}},
                                  "ignore_case": {"type": "boolean"}},
                   "required": ["pattern"]}),
        ),
    ]
}

fn grammar(family: Family) -> (CallGrammar, Grammar) {
    let g = call_grammar(family, &tools(), false).expect("tools give a grammar");
    let parsed = Grammar::parse(&g.gbnf).unwrap_or_else(|e| panic!("{family:?}: {e}\n{}", g.gbnf));
    (g, parsed)
}

/// Families that write several calls in one turn (the others stop after one).
fn parallel(family: Family) -> bool {
    !matches!(family, Family::Llama3 | Family::Generic | Family::GptOss)
}

fn good_calls() -> Vec<ToolCall> {
    vec![
        ToolCall::new(
            "abcDEF123",
            "read_file",
            json!({"path": "src/é \"q\".rs", "start_line": -7, "mode": "hex"}),
        ),
        ToolCall::new(
            "xyzXYZ789",
            "grep",
            json!({"pattern": "a\\nb", "paths": ["src", "tests"], "ignore_case": true}),
        ),
    ]
}

#[test]
fn grammars_admit_the_familys_own_calls_and_they_parse_back() {
    let tools = tools();
    for family in FAMILIES {
        let (g, parsed) = grammar(family);
        let calls = good_calls();
        let sets: Vec<&[ToolCall]> = if parallel(family) {
            vec![&calls[..1], &calls[1..], &calls]
        } else {
            vec![&calls[..1], &calls[1..]]
        };
        for set in sets {
            let text = family.format_calls(set);
            assert!(
                parsed.matches("root", &text),
                "{family:?} refuses its own call:\n{text}\n\n{}",
                g.gbnf
            );
            assert!(
                g.trigger_words.iter().any(|w| text.starts_with(w.as_str()))
                    || family == Family::Llama3,
                "{family:?}: {text}"
            );
            let turn = parse_turn(
                family,
                &text,
                &ParseOptions {
                    reasoning_open: false,
                    tools: &tools,
                },
            )
            .unwrap();
            let got: Vec<_> = turn.calls.iter().map(|c| (&c.name, &c.arguments)).collect();
            let want: Vec<_> = set.iter().map(|c| (&c.name, &c.arguments)).collect();
            assert_eq!(got, want, "{family:?}");
        }
        // Only the required argument; optional ones may be left out.
        let minimal =
            family.format_calls(&[ToolCall::new("abcDEF123", "grep", json!({"pattern": "x"}))]);
        assert!(parsed.matches("root", &minimal), "{family:?}: {minimal}");
    }
}

#[test]
fn grammars_refuse_wrong_calls() {
    let wrong = [
        (
            "an unknown tool",
            ToolCall::new("abcDEF123", "write_file", json!({"path": "a"})),
        ),
        (
            "a missing required argument",
            ToolCall::new("abcDEF123", "read_file", json!({"start_line": 1})),
        ),
        (
            "a string for an integer",
            ToolCall::new(
                "abcDEF123",
                "read_file",
                json!({"path": "a", "start_line": "1"}),
            ),
        ),
        (
            "a value outside the enum",
            ToolCall::new(
                "abcDEF123",
                "read_file",
                json!({"path": "a", "mode": "binary"}),
            ),
        ),
        (
            "an unknown argument",
            ToolCall::new(
                "abcDEF123",
                "read_file",
                json!({"path": "a", "force": true}),
            ),
        ),
        (
            "a number in a string array",
            ToolCall::new("abcDEF123", "grep", json!({"pattern": "a", "paths": [1]})),
        ),
    ];
    for family in FAMILIES {
        let (_, parsed) = grammar(family);
        for (what, call) in &wrong {
            if family == Family::Qwen3Coder && *what == "a string for an integer" {
                continue; // XML values are text: `1` is read as the integer 1
            }
            let text = family.format_calls(std::slice::from_ref(call));
            assert!(
                !parsed.matches("root", &text),
                "{family:?} admits {what}: {text}"
            );
        }
        let good = family.format_calls(&good_calls()[..1]);
        assert!(
            !parsed.matches("root", &format!("{good} and more")),
            "{family:?} admits trailing text"
        );
    }
}

#[test]
fn native_spacing_variants_are_admitted() {
    let cases = [
        (Family::Hermes, "<tool_call>{\"name\":\"grep\",\"arguments\":{\"pattern\":\"x\"}}</tool_call>"),
        (Family::Hermes, "<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"y\"}}\n</tool_call>"),
        (Family::Llama3, "<|python_tag|>{\"name\": \"grep\", \"parameters\": {\"pattern\": \"x\"}}"),
        (Family::Llama3, "{\"type\": \"function\", \"name\": \"grep\", \"parameters\": {\"pattern\": \"x\"}}"),
        (Family::Mistral(MistralSyntax::JsonList), "[TOOL_CALLS][{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}]"),
        (Family::GptOss, " to=functions.grep<|channel|>commentary json<|message|>{\"pattern\": \"x\"}"),
        (Family::GptOss, "<|channel|>commentary to=functions.grep <|constrain|>json<|message|>{\"pattern\":\"x\"}"),
        (Family::CommandR7B, "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"grep\", \"parameters\": {\"pattern\": \"x\"}}\n]<|END_ACTION|>"),
        (Family::Generic, "{\n  \"tool\": \"grep\",\n  \"args\": {\n    \"pattern\": \"x\"\n  }\n}"),
    ];
    for (family, text) in cases {
        let (_, parsed) = grammar(family);
        assert!(parsed.matches("root", text), "{family:?}: {text}");
    }
}

/// Where the grammar would start, per the first trigger pattern.
fn trigger(g: &CallGrammar, output: &str) -> Option<usize> {
    g.trigger_patterns.iter().find_map(|p| {
        let re = Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        re.captures(output)
            .unwrap()
            .map(|c| c.get(1).expect("group 1").start())
    })
}

#[test]
fn triggers_fire_after_reasoning_and_never_inside_it() {
    for family in FAMILIES {
        let tools = tools();
        let call = family.format_calls(&good_calls()[..1]);
        for reasoning_open in [false, true] {
            let g = call_grammar(family, &tools, reasoning_open).unwrap();
            let parsed = Grammar::parse(&g.gbnf).unwrap();
            let (before, inside) = match (family, family.think_tags()) {
                (Family::GptOss, _) => (
                    format!("<|channel|>analysis<|message|>Maybe {call}?<|end|><|start|>assistant"),
                    "<|channel|>analysis<|message|>Maybe to=functions.grep".to_string(),
                ),
                (_, Some((_, close))) if reasoning_open => {
                    (format!("Maybe {call}?{close}\n"), format!("Maybe {call}"))
                }
                (_, Some((open, close))) => (
                    format!("{open}Maybe {call}?{close}\n"),
                    format!("{open}Maybe {call}"),
                ),
                _ => unreachable!(),
            };
            // A call inside unfinished reasoning does not trigger.
            assert_eq!(
                trigger(&g, &inside),
                None,
                "{family:?} open={reasoning_open}: {inside}"
            );
            // After the reasoning it does, where the call starts; the grammar
            // then admits the rest of the turn.
            let output = format!("{before}{call}");
            let start = trigger(&g, &output).unwrap_or_else(|| {
                panic!("{family:?} open={reasoning_open}: no trigger in {output}")
            });
            assert_eq!(
                start,
                before.len(),
                "{family:?} open={reasoning_open}: {output}"
            );
            assert!(parsed.matches("root", &output[start..]), "{family:?}");
            if !reasoning_open && family != Family::GptOss {
                // No reasoning at all: the call may come at once, or (except
                // for Llama 3, whose call is the whole turn) after some text.
                assert_eq!(trigger(&g, &call), Some(0), "{family:?}");
                let after_text = format!("Let me look. {call}");
                let want = (family != Family::Llama3).then_some("Let me look. ".len());
                assert_eq!(trigger(&g, &after_text), want, "{family:?}");
            }
        }
    }
}

#[test]
fn llama3_triggers_only_on_a_turn_that_is_a_call() {
    let g = call_grammar(Family::Llama3, &tools(), false).unwrap();
    assert_eq!(trigger(&g, "The answer uses {\"name\": 1}."), None);
    assert_eq!(trigger(&g, "  {\"name\": \"grep\""), Some(2));
    assert_eq!(trigger(&g, "<|python_tag|>"), Some(0));
}

#[test]
fn no_tools_no_grammar() {
    assert!(call_grammar(Family::Hermes, &[], false).is_none());
}

#[test]
fn schema_rules_are_reusable_on_their_own() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": ["string", "null"]}, "b": {"anyOf": [{"type": "integer"}, {"const": "auto"}]},
        "c": {"type": "object"}, "d": {}}});
    let gbnf = format!("root ::= {}\n{JSON_RULES}", schema_expr(&schema));
    let g = Grammar::parse(&gbnf).unwrap();
    for ok in [
        "{}",
        "{\"b\": \"auto\"}",
        "{\"a\": null, \"c\": {\"x\": [1, {}]}, \"d\": 1.5e3}",
        "{\"d\": false}",
    ] {
        assert!(g.matches("root", ok), "{ok}");
    }
    for bad in [
        "{\"b\": 1.5}",
        "{\"d\": 1, \"a\": \"x\"}",
        "{\"a\": 1}",
        "[]",
    ] {
        assert!(!g.matches("root", bad), "{bad}");
    }
}

#[test]
fn arguments_come_in_the_schema_maps_order_optional_ones_anywhere() {
    // Properties written in reverse alphabetical order, required `d` and `b`
    // between optional ones: the map keeps that order (serde_json's
    // `preserve_order`, as a Python dict does), and the grammar asks for it.
    let schema = json!({"type": "object", "required": ["d", "b"], "properties": {
        "e": {"type": "integer"}, "d": {"type": "integer"}, "c": {"type": "integer"},
        "b": {"type": "integer"}, "a": {"type": "integer"}}});
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["e", "d", "c", "b", "a"]);
    let g = Grammar::parse(&format!("root ::= {}\n{JSON_RULES}", schema_expr(&schema))).unwrap();
    let object = |keys: &str| {
        let members: Vec<String> = keys.chars().map(|k| format!("\"{k}\": 1")).collect();
        format!("{{{}}}", members.join(", "))
    };
    for ok in ["db", "edb", "dcb", "dba", "edcb", "edba", "dcba", "edcba"] {
        assert!(g.matches("root", &object(ok)), "{}", object(ok));
    }
    // Out of order (sorted, or required first, included), or a required one
    // missing.
    for bad in [
        "bd", "abcde", "dbe", "dea", "dbc", "e", "d", "eb", "ecb", "cdb", "", "edcbaa",
    ] {
        assert!(!g.matches("root", &object(bad)), "{}", object(bad));
    }
    // The tool description shows the same order.
    let spec = ToolSpec::new("f", "F.", schema.clone());
    let described = agent_chat::adapt::describe_tools(&[spec], Family::Generic);
    assert!(
        described.contains(
            "arguments: {\"e\"?: integer, \"d\": integer, \"c\"?: integer, \"b\": integer, \"a\"?: integer}"
        ),
        "{described}"
    );

    // A family's grammar and its tool description agree on that order.
    let tools = tools();
    let (_, hermes) = grammar(Family::Hermes);
    let grep = |args: &str| {
        format!("<tool_call>\n{{\"name\": \"grep\", \"arguments\": {args}}}\n</tool_call>")
    };
    assert!(hermes.matches("root", &grep(r#"{"pattern": "x", "paths": ["src"]}"#)));
    assert!(hermes.matches("root", &grep(r#"{"pattern": "x", "ignore_case": true}"#)));
    assert!(!hermes.matches("root", &grep(r#"{"paths": ["src"], "pattern": "x"}"#)));
    assert!(!hermes.matches("root", &grep(r#"{"ignore_case": true, "pattern": "x"}"#)));
    let described = agent_chat::adapt::describe_tools(&tools, Family::Generic);
    assert!(
        described.contains(
            "arguments: {\"pattern\": string, \"paths\"?: array, \"ignore_case\"?: boolean}"
        ),
        "{described}"
    );
    let (_, coder) = grammar(Family::Qwen3Coder);
    let xml = |params: &[(&str, &str)]| {
        let params: String = params
            .iter()
            .map(|(k, v)| format!("<parameter={k}>\n{v}\n</parameter>\n"))
            .collect();
        format!("<tool_call>\n<function=grep>\n{params}</function>\n</tool_call>")
    };
    assert!(coder.matches("root", &xml(&[("pattern", "x"), ("ignore_case", "true")])));
    assert!(!coder.matches("root", &xml(&[("ignore_case", "true"), ("pattern", "x")])));
}

#[test]
fn qwen3_coder_values_are_any_text_but_the_closing_tag() {
    let (_, parsed) = grammar(Family::Qwen3Coder);
    let call = |pattern: &str| {
        format!("<tool_call>\n<function=grep>\n<parameter=pattern>\n{pattern}\n</parameter>\n</function>\n</tool_call>")
    };
    for ok in [
        "a << b",
        "</div> and </param",
        "<",
        "",
        "line\n</parameter",
        "x<</p",
    ] {
        assert!(parsed.matches("root", &call(ok)), "{ok:?}");
    }
    for bad in ["x</parameter>y", "<</parameter>"] {
        assert!(!parsed.matches("root", &call(bad)), "{bad:?}");
    }
}
