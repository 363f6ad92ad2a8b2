//! Times rendering a 30-turn conversation (60 messages: a system prompt, a
//! request, 29 calls with their results) with each template given; one JSON
//! line per template (`scripts/bench render` runs it on the 17 families):
//! `cargo run --release --example render_bench -- TEMPLATE.jinja... [--runs N]`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::time::Instant;

use agent_chat::{ChatTemplate, Message, RenderOptions, SpecialTokens, ToolCall, ToolSpec};
use serde_json::json;

fn main() {
    let mut runs = 200;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args
                .next()
                .and_then(|r| r.parse().ok())
                .expect("--runs takes a number");
        } else {
            paths.push(arg);
        }
    }
    assert!(
        !paths.is_empty() && runs > 0,
        "usage: render_bench TEMPLATE.jinja... [--runs N]"
    );
    let messages = conversation();
    let tools = tools();
    for path in paths {
        let source = std::fs::read_to_string(&path).expect("a readable template");
        let template = ChatTemplate::new(&path, &source, SpecialTokens::new("<s>", "</s>"))
            .expect("a usable template");
        let render = || {
            template
                .render(&messages, &tools, &RenderOptions::generation())
                .expect("renders")
        };
        let chars = render().text.len();
        let mut times: Vec<f64> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                render();
                start.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let name = std::path::Path::new(&path)
            .file_stem()
            .map_or(path.clone(), |s| s.to_string_lossy().into_owned());
        println!(
            "{}",
            json!({"template": name, "family": template.family().name(),
                   "messages": messages.len(), "prompt_chars": chars, "runs": runs,
                   "min_ms": times[0], "median_ms": times[runs / 2], "p95_ms": times[runs * 95 / 100]})
        );
    }
}

fn tools() -> [ToolSpec; 1] {
    [ToolSpec::new(
        "read_file",
        "Read a text file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )]
}

fn conversation() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the bug."),
    ];
    for step in 0..29 {
        let id = format!("call_{step}_0");
        let call = ToolCall::new(
            &id,
            "read_file",
            json!({"path": format!("src/file_{step}.rs")}),
        );
        messages.push(Message::assistant_calls("", vec![call]));
        messages.push(Message::tool_result(
            id,
            "read_file",
            "fn main() {}\n".repeat(60),
        ));
    }
    messages
}
