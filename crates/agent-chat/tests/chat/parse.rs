//! Model turns written by hand in each family's own syntax: with and without
//! reasoning first, several calls, a call inside a reasoning block (which
//! must not count), answers, and malformed calls (which must give an error
//! the model can act on).

use agent_chat::family::MistralSyntax;
use agent_chat::{parse_turn, Family, ParseOptions, ParsedTurn, ToolCall, ToolSpec};
use serde_json::{json, Value};

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "read_file",
            "Read a text file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
                   "required": ["path"]}),
        ),
        ToolSpec::new(
            "grep",
            "Search files.",
            json!({"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
                   "required": ["pattern"]}),
        ),
    ]
}

fn parse_with(family: Family, text: &str, reasoning_open: bool) -> Result<ParsedTurn, String> {
    let tools = tools();
    let options = ParseOptions {
        reasoning_open,
        tools: &tools,
    };
    parse_turn(family, text, &options).map_err(|e| e.message)
}

fn parse(family: Family, text: &str) -> ParsedTurn {
    parse_with(family, text, false).unwrap_or_else(|e| panic!("{family:?} {text:?}: {e}"))
}

fn parse_err(family: Family, text: &str) -> String {
    match parse_with(family, text, false) {
        Ok(turn) => panic!("{family:?} {text:?} parsed: {turn:?}"),
        Err(message) => message,
    }
}

/// (name, arguments) of each call.
fn calls(turn: &ParsedTurn) -> Vec<(&str, Value)> {
    turn.calls
        .iter()
        .map(|c| (c.name.as_str(), c.arguments.clone()))
        .collect()
}

fn read(path: &str) -> (&'static str, Value) {
    ("read_file", json!({"path": path}))
}

fn grep(pattern: &str) -> (&'static str, Value) {
    ("grep", json!({"pattern": pattern}))
}

#[test]
fn hermes_and_qwen() {
    let f = Family::Hermes;
    let turn = parse(
        f,
        "<think>\nI could grep: <tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}</tool_call>, \
         but reading is better.\n</think>\n\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>",
    );
    assert_eq!(calls(&turn), [read("src/main.rs")]);
    assert!(
        turn.reasoning.starts_with("I could grep: <tool_call>"),
        "{}",
        turn.reasoning
    );
    assert_eq!(turn.content, "");

    let turn = parse(
        f,
        "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\", \"start_line\": 3}}\n</tool_call>\n\
         <tool_call>\n{\"name\": \"grep\", \"arguments\": \"{\\\"pattern\\\": \\\"fn main\\\"}\"}\n</tool_call>",
    );
    assert_eq!(turn.content, "Let me look.");
    assert_eq!(
        calls(&turn),
        [
            ("read_file", json!({"path": "a.rs", "start_line": 3})),
            grep("fn main")
        ]
    );

    // QwQ's prompt opens the block: the turn starts inside it.
    let turn = parse_with(
        f,
        "The user asks where main is.\n</think>\n\nIt is in src/main.rs.",
        true,
    )
    .unwrap();
    assert_eq!(turn.reasoning, "The user asks where main is.");
    assert_eq!(turn.content, "It is in src/main.rs.");
    assert!(turn.calls.is_empty());

    // Cut off while thinking: no call, the reasoning is marked unclosed.
    let turn = parse(
        f,
        "<think>I will call <tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}",
    );
    assert!(turn.calls.is_empty() && turn.reasoning_unclosed && turn.content.is_empty());

    // A missing closing tag at the very end is forgiven.
    let turn = parse(
        f,
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
    );
    assert_eq!(calls(&turn), [read("a")]);

    let e = parse_err(
        f,
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }}</tool_call>",
    );
    assert!(
        e.contains("not valid JSON") && e.contains("<tool_call>\n{\"name\": \"read_file\""),
        "{e}"
    );
    let e = parse_err(
        f,
        "<tool_call>{\"name\": \"write_file\", \"arguments\": {}}</tool_call>",
    );
    assert!(
        e.contains("no tool named \"write_file\"; the tools are read_file, grep"),
        "{e}"
    );
    let e = parse_err(
        f,
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>",
    );
    assert!(e.contains("read_file needs the argument(s) path"), "{e}");
    let e = parse_err(f, "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\", \"start_line\": \"3\"}}</tool_call>");
    assert!(
        e.contains("start_line of read_file must be of type \"integer\""),
        "{e}"
    );
    let e = parse_err(f, "<tool_call>{\"arguments\": {}}</tool_call>");
    assert!(e.contains("has no \"name\""), "{e}");
}

#[test]
fn qwen3_coder_xml() {
    let f = Family::Qwen3Coder;
    let turn = parse(
        f,
        "I'll read it.\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/a b.rs\n</parameter>\n\
         <parameter=start_line>\n12\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=grep>\n\
         <parameter=pattern>\nfn main() {\n    x < y\n}\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(turn.content, "I'll read it.");
    assert_eq!(
        calls(&turn),
        [
            ("read_file", json!({"path": "src/a b.rs", "start_line": 12})),
            grep("fn main() {\n    x < y\n}")
        ]
    );
    // Hermes templates read the XML form too, and the other way round.
    assert_eq!(calls(&parse(Family::Hermes, "<tool_call>\n<function=grep>\n<parameter=pattern>\nx\n</parameter>\n</function>\n</tool_call>")), [grep("x")]);
    assert_eq!(
        calls(&parse(
            f,
            "<tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}</tool_call>"
        )),
        [grep("x")]
    );

    let e = parse_err(f, "<tool_call>\n<function=read_file>\n<parameter=start_line>\nten\n</parameter>\n</function>\n</tool_call>");
    assert!(e.contains("read_file needs the argument(s) path"), "{e}");
    let e = parse_err(f, "<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n<parameter=start_line>\nten\n</parameter>\n</function>\n</tool_call>");
    assert!(
        e.contains("start_line of read_file must be of type \"integer\", not \"ten\""),
        "{e}"
    );
    assert!(
        e.contains("<function=read_file>\n<parameter=argument_name>\nvalue\n</parameter>"),
        "{e}"
    );
}

#[test]
fn llama3() {
    let f = Family::Llama3;
    let turn = parse(
        f,
        "{\"name\": \"read_file\", \"parameters\": {\"path\": \"src/main.rs\"}}",
    );
    assert_eq!(calls(&turn), [read("src/main.rs")]);
    let turn = parse(f, "<|python_tag|>{\"type\": \"function\", \"name\": \"grep\", \"parameters\": {\"pattern\": \"fn main\"}}");
    assert_eq!(calls(&turn), [grep("fn main")]);
    let turn = parse(f, "{\"name\": \"grep\", \"parameters\": {\"pattern\": \"a\"}}; {\"name\": \"grep\", \"parameters\": {\"pattern\": \"b\"}}");
    assert_eq!(calls(&turn), [grep("a"), grep("b")]);
    let turn = parse(f, "<think>{\"name\": \"grep\", \"parameters\": {\"pattern\": \"a\"}} first?</think>\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}");
    assert_eq!(calls(&turn), [read("b")]);

    // Answers, including JSON that is not a call and a call only mentioned.
    for answer in [
        "It is in src/main.rs.",
        "{\"answer\": 42}",
        "Call it as {\"name\": \"grep\"}.",
    ] {
        let turn = parse(f, answer);
        assert!(turn.calls.is_empty(), "{answer}");
        assert_eq!(turn.content, answer);
    }

    // Built-in tools: `name.call(...)` after the python tag.
    let no_tools = ParseOptions::default();
    let turn = parse_turn(
        f,
        "<|python_tag|>brave_search.call(query=\"rust, lifetimes\", count=3)",
        &no_tools,
    )
    .unwrap();
    assert_eq!(
        calls(&turn),
        [(
            "brave_search",
            json!({"query": "rust, lifetimes", "count": 3})
        )]
    );

    let e = parse_err(
        f,
        "{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"",
    );
    assert!(
        e.contains("not valid JSON") && e.contains("{\"name\": \"read_file\", \"parameters\""),
        "{e}"
    );
}

#[test]
fn mistral_in_its_three_spellings() {
    let nemo = Family::Mistral(MistralSyntax::JsonList);
    let turn = parse(
        nemo,
        "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}, \"id\": \"abcDEF123\"}, \
         {\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}, \"id\": \"xyzXYZ789\"}]",
    );
    assert_eq!(calls(&turn), [read("a"), grep("x")]);
    assert_eq!(turn.calls[0].id, "abcDEF123");

    let devstral = Family::Mistral(MistralSyntax::Args);
    let turn = parse(devstral, "I'll read it first.[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}[TOOL_CALLS]grep[ARGS]{\"pattern\": \"x\"}");
    assert_eq!(turn.content, "I'll read it first.");
    assert_eq!(calls(&turn), [read("a"), grep("x")]);

    let small = Family::Mistral(MistralSyntax::CallIdArgs);
    let turn = parse(
        small,
        "[TOOL_CALLS]read_file[CALL_ID]abcDEF123[ARGS]{\"path\": \"a\"}",
    );
    assert_eq!(calls(&turn), [read("a")]);
    assert_eq!(turn.calls[0].id, "abcDEF123");
    // Each family reads the other spellings too.
    assert_eq!(
        calls(&parse(nemo, "[TOOL_CALLS]grep[ARGS]{\"pattern\": \"x\"}")),
        [grep("x")]
    );

    let turn = parse(
        small,
        "<think>[TOOL_CALLS]grep[ARGS]{\"pattern\": \"x\"} maybe</think>It is in a.rs.",
    );
    assert!(turn.calls.is_empty());
    assert_eq!(turn.content, "It is in a.rs.");

    let e = parse_err(devstral, "[TOOL_CALLS]read_file{\"path\": \"a\"}");
    assert!(
        e.contains("name[ARGS]")
            && e.contains("[TOOL_CALLS]read_file[ARGS]{\"argument_name\": \"value\"}"),
        "{e}"
    );
    let e = parse_err(
        nemo,
        "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}",
    );
    assert!(e.contains("not valid JSON"), "{e}");
}

#[test]
fn deepseek_r1_and_v3() {
    let r1 = Family::DeepSeekR1;
    let call = |name: &str, args: &str| {
        format!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜>")
    };
    // The prompt opened the block; a call inside it does not count.
    let text = format!(
        "I could <｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>, but no.\n</think>\n\n<｜tool▁calls▁begin｜>{}\n{}<｜tool▁calls▁end｜>",
        call("grep", "{\"pattern\": \"x\"}"),
        call("read_file", "{\"path\": \"a\"}"),
        call("grep", "{\"pattern\": \"y\"}"),
    );
    let turn = parse_with(r1, &text, true).unwrap();
    assert_eq!(calls(&turn), [read("a"), grep("y")]);
    assert!(turn.reasoning.contains("tool▁calls▁begin"));

    let turn = parse_with(r1, "Easy.\n</think>\n\nIt is in a.rs.", true).unwrap();
    assert_eq!(
        (turn.reasoning.as_str(), turn.content.as_str()),
        ("Easy.", "It is in a.rs.")
    );

    let v3 = Family::DeepSeekV31;
    let turn = parse(v3, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>grep<｜tool▁sep｜>{\"pattern\": \"x\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
    assert_eq!(calls(&turn), [read("a"), grep("x")]);
    // Distills garble the markers.
    let turn = parse(r1, "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool_call_end｜><｜tool_calls_end｜>");
    assert_eq!(calls(&turn), [read("a")]);

    let e = parse_err(
        r1,
        &format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            call("read_file", "{path: a}")
        ),
    );
    assert!(
        e.contains("arguments of read_file are not valid JSON")
            && e.contains("function<｜tool▁sep｜>read_file"),
        "{e}"
    );
}

#[test]
fn gpt_oss_harmony() {
    let f = Family::GptOss;
    let turn = parse(
        f,
        "<|channel|>analysis<|message|>I need the file; to=functions.grep would not help.<|end|>\
         <|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"src/main.rs\"}<|call|>",
    );
    assert_eq!(
        turn.reasoning,
        "I need the file; to=functions.grep would not help."
    );
    assert_eq!(calls(&turn), [read("src/main.rs")]);
    // The recipient in the header, as the template writes past calls.
    let turn = parse(
        f,
        " to=functions.grep<|channel|>commentary json<|message|>{\"pattern\": \"x\"}",
    );
    assert_eq!(calls(&turn), [grep("x")]);

    let turn = parse(
        f,
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>It is in src/main.rs.<|return|>",
    );
    assert_eq!(
        (turn.reasoning.as_str(), turn.content.as_str()),
        ("Easy.", "It is in src/main.rs.")
    );
    assert!(turn.calls.is_empty());

    let turn = parse(
        f,
        "<|channel|>analysis<|message|>Still thinking about <|channel|>",
    );
    assert!(turn.reasoning_unclosed && turn.calls.is_empty() && turn.content.is_empty());

    let e = parse_err(
        f,
        "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": ",
    );
    assert!(
        e.contains("not valid JSON") && e.contains("to=functions.read_file"),
        "{e}"
    );
    let e = parse_err(
        f,
        "<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{}",
    );
    assert!(e.contains("no tool named \"rm\""), "{e}");
}

#[test]
fn command_r7b() {
    let f = Family::CommandR7B;
    let turn = parse(
        f,
        "<|START_THINKING|>I will read the file.<|END_THINKING|><|START_ACTION|>[\n    \
         {\"tool_call_id\": \"0\", \"tool_name\": \"read_file\", \"parameters\": {\"path\": \"a\"}},\n    \
         {\"tool_call_id\": \"1\", \"tool_name\": \"grep\", \"parameters\": {\"pattern\": \"x\"}}\n]<|END_ACTION|>",
    );
    assert_eq!(turn.reasoning, "I will read the file.");
    assert_eq!(calls(&turn), [read("a"), grep("x")]);
    let turn = parse(f, "<|START_RESPONSE|>It is in a.rs.<|END_RESPONSE|>");
    assert_eq!(turn.content, "It is in a.rs.");
    let turn = parse(f, "<|START_THINKING|>Maybe <|START_ACTION|>[]<|END_ACTION|>?<|END_THINKING|><|START_RESPONSE|>No.<|END_RESPONSE|>");
    assert!(turn.calls.is_empty());
    assert_eq!(turn.content, "No.");
    let e = parse_err(f, "<|START_ACTION|>[{\"tool_name\": \"read_file\", \"parameters\": {\"path\": \"a\"}<|END_ACTION|>");
    assert!(
        e.contains("not valid JSON") && e.contains("\"tool_name\": \"read_file\""),
        "{e}"
    );
}

#[test]
fn granite() {
    let f = Family::Granite;
    let turn = parse(f, "<|tool_call|>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}]");
    assert_eq!(calls(&turn), [read("a"), grep("x")]);
    let turn = parse(f, "<think>Plan: <|tool_call|>[{\"name\": \"grep\", \"arguments\": {}}]</think><response>It is in a.rs.</response>");
    assert!(turn.calls.is_empty());
    assert_eq!(turn.content, "It is in a.rs.");
    let e = parse_err(f, "<|tool_call|>{\"name\": \"read_file\"");
    assert!(
        e.contains("not valid JSON") && e.contains("<|tool_call|>[{"),
        "{e}"
    );
}

#[test]
fn generic_json() {
    let f = Family::Generic;
    assert_eq!(
        calls(&parse(
            f,
            "{\"tool\": \"read_file\", \"args\": {\"path\": \"a\"}}"
        )),
        [read("a")]
    );
    let turn = parse(
        f,
        "Let me look.\n```json\n{ \"tool\": \"grep\", \"args\": {\"pattern\": \"x\"} }\n```",
    );
    assert_eq!(turn.content, "Let me look.");
    assert_eq!(calls(&turn), [grep("x")]);
    let turn = parse(
        f,
        "<think>{\"tool\": \"grep\", \"args\": {\"pattern\": \"x\"}}?</think>It is in a.rs.",
    );
    assert!(turn.calls.is_empty());
    assert_eq!(turn.content, "It is in a.rs.");
    // The project's old format, with a thought first, still reads.
    let turn = parse(
        f,
        "{\"thought\": \"read it\", \"tool\": \"read_file\", \"args\": {\"path\": \"a\"}}",
    );
    assert_eq!(calls(&turn), [read("a")]);
    let e = parse_err(f, "{\"tool\": \"read_file\", \"args\": {\"path\": \"a\"}");
    assert!(
        e.contains("not valid JSON") && e.contains("{\"tool\": \"read_file\", \"args\""),
        "{e}"
    );
}

#[test]
fn every_family_reads_back_what_it_writes() {
    let families = [
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
    let written = vec![
        ToolCall::new(
            "abcDEF123",
            "read_file",
            json!({"path": "src/é \"q\".rs", "start_line": 7}),
        ),
        ToolCall::new("xyzXYZ789", "grep", json!({"pattern": "a\\nb"})),
    ];
    for family in families {
        let text = family.format_calls(&written);
        let turn = parse(family, &text);
        assert_eq!(
            calls(&turn),
            written
                .iter()
                .map(|c| (c.name.as_str(), c.arguments.clone()))
                .collect::<Vec<_>>(),
            "{family:?}: {text}"
        );
        assert_eq!(turn.content, "", "{family:?}");
        let with_reasoning = match family {
            // Harmony markers are tokens a model cannot write inside a message.
            Family::GptOss => format!("<|channel|>analysis<|message|>Hmm, to=functions.grep?<|end|><|start|>assistant{text}"),
            _ => {
                let (open, close) = family.think_tags().unwrap();
                format!("{open}Hmm {text}{close}\n{text}")
            }
        };
        let turn = parse(family, &with_reasoning);
        assert_eq!(turn.calls.len(), 2, "{family:?}: {with_reasoning}");
        assert!(turn.reasoning.starts_with("Hmm"), "{family:?}");
    }
}

#[test]
fn reasoning_splits_while_it_streams() {
    use agent_chat::parse::split_reasoning;
    assert_eq!(
        split_reasoning(Family::Hermes, "<think>so far", false),
        ("so far", "", true)
    );
    assert_eq!(
        split_reasoning(Family::Hermes, "<think>a</think>b", false),
        ("a", "b", false)
    );
    assert_eq!(
        split_reasoning(Family::DeepSeekR1, "a</think>b", true),
        ("a", "b", false)
    );
    assert_eq!(
        split_reasoning(Family::Hermes, "plain", false),
        ("", "plain", false)
    );
    let harmony =
        "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final<|message|>x";
    assert_eq!(
        split_reasoning(Family::GptOss, harmony, false),
        (
            "hmm",
            "<|start|>assistant<|channel|>final<|message|>x",
            false
        )
    );
    assert_eq!(
        split_reasoning(Family::GptOss, "<|channel|>analysis<|message|>hm", false),
        ("hm", "", true)
    );
}

#[test]
fn text_between_hermes_calls_is_kept() {
    let turn = parse(
        Family::Hermes,
        "First:\n<tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"a\"}}</tool_call>\nthen:\n\
         <tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"b\"}}</tool_call>",
    );
    assert_eq!(calls(&turn), [grep("a"), grep("b")]);
    assert_eq!(turn.content, "First:\nthen:");
}
