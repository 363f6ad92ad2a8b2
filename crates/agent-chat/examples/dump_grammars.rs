//! Writes every family's call grammar with inputs it must admit or refuse,
//! and its trigger patterns with outputs and where they must fire, for
//! scripts/llama_grammar_check.sh to run through llama.cpp's own grammar
//! engine and `std::regex`: `cargo run --example dump_grammars -- DIR`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::fs;
use std::path::Path;

use agent_chat::family::MistralSyntax;
use agent_chat::grammar::call_grammar;
use agent_chat::{Family, ToolCall, ToolSpec};
use serde_json::json;

fn main() {
    let dir = std::env::args().nth(1).expect("usage: dump_grammars DIR");
    let dir = Path::new(&dir);
    fs::create_dir_all(dir).expect("a writable folder");
    let tools = [
        ToolSpec::new(
            "read_file",
            "Read a text file.",
            json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string"}, "start_line": {"type": "integer"}, "mode": {"enum": ["text", "hex"]}}}),
        ),
        ToolSpec::new(
            "grep",
            "Search files.",
            json!({"type": "object", "required": ["pattern"], "properties": {
                "pattern": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}},
                "ignore_case": {"type": "boolean"}}}),
        ),
    ];
    let good = [
        ToolCall::new(
            "abcDEF123",
            "read_file",
            json!({"path": "src/é \"q\".rs", "start_line": -7, "mode": "hex"}),
        ),
        ToolCall::new(
            "xyzXYZ789",
            "grep",
            json!({"pattern": "a\\nb << </div>", "paths": ["src"], "ignore_case": true}),
        ),
    ];
    let bad = [
        ToolCall::new("abcDEF123", "write_file", json!({"path": "a"})),
        ToolCall::new("abcDEF123", "read_file", json!({"start_line": 1})),
        ToolCall::new(
            "abcDEF123",
            "read_file",
            json!({"path": "a", "force": true}),
        ),
    ];
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
    let write = |name: String, text: &str| fs::write(dir.join(name), text).expect("written");
    for family in families {
        let name = family.name();
        let grammar = call_grammar(family, &tools, false).expect("tools give a grammar");
        write(format!("{name}.gbnf"), &grammar.gbnf);
        let mut admit = vec![
            family.format_calls(&good[..1]),
            family.format_calls(&good[1..]),
        ];
        if !matches!(family, Family::Llama3 | Family::Generic | Family::GptOss) {
            admit.push(family.format_calls(&good));
        }
        for (i, text) in admit.iter().enumerate() {
            write(format!("{name}.admit{i}.txt"), text);
        }
        for (i, call) in bad.iter().enumerate() {
            write(
                format!("{name}.refuse{i}.txt"),
                &family.format_calls(std::slice::from_ref(call)),
            );
        }
        // Trigger cases: (output, where group 1 must start or -1).
        let call = family.format_calls(&good[..1]);
        for open in [false, true] {
            let grammar = call_grammar(family, &tools, open).expect("tools give a grammar");
            let stem = format!("{name}.{}", if open { "open" } else { "closed" });
            write(
                format!("{stem}.patterns"),
                &grammar.trigger_patterns.join("\n"),
            );
            let (before, inside) = match family.think_tags() {
                None => (
                    format!("<|channel|>analysis<|message|>Maybe {call}?<|end|><|start|>assistant"),
                    "<|channel|>analysis<|message|>Maybe to=functions.grep".to_string(),
                ),
                Some((_, close)) if open => {
                    (format!("Maybe {call}?{close}\n"), format!("Maybe {call}"))
                }
                Some((start, close)) => (
                    format!("{start}Maybe {call}?{close}\n"),
                    format!("{start}Maybe {call}"),
                ),
            };
            let cases = [
                (inside, -1),
                (format!("{before}{call}"), before.len() as i64),
            ];
            for (i, (text, want)) in cases.iter().enumerate() {
                write(format!("{stem}.trigger{i}.txt"), text);
                write(format!("{stem}.trigger{i}.want"), &want.to_string());
            }
        }
    }
}
