//! Times rendering a 61-message conversation with one template:
//! `cargo run --release --example render_bench -- TEMPLATE.jinja [RUNS]`.

use std::time::Instant;

use agent_chat::{ChatTemplate, Message, RenderOptions, SpecialTokens, ToolCall, ToolSpec};
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: render_bench TEMPLATE.jinja [RUNS]");
    let runs: usize = args
        .next()
        .map_or(200, |r| r.parse().expect("RUNS is a number"));
    let source = std::fs::read_to_string(&path).expect("a readable template");
    let template = ChatTemplate::new(&path, &source, SpecialTokens::new("<s>", "</s>"))
        .expect("a usable template");
    let tools = [ToolSpec::new(
        "read_file",
        "Read a text file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )];
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
    let start = Instant::now();
    for _ in 0..runs {
        template
            .render(&messages, &tools, &RenderOptions::generation())
            .expect("renders");
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0 / runs as f64;
    println!(
        "{path}: {ms:.3} ms per rendering of {} messages",
        messages.len()
    );
}
