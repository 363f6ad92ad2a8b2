//! A growing conversation keeps its earlier prompt as a prefix (the KV
//! cache holds), and rendering a long one stays cheap.

use std::fs;
use std::path::Path;
use std::time::Instant;

use agent_chat::clock::{fixed_clock, DateTime};
use agent_chat::{
    history, parse_turn, ChatTemplate, Message, ParseOptions, RenderOptions, SpecialTokens,
    ToolCall, ToolSpec,
};
use serde_json::json;

fn templates() -> Vec<(String, ChatTemplate)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/templates");
    let mut out: Vec<(String, ChatTemplate)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let source = fs::read_to_string(&p).unwrap();
            let clock = fixed_clock(DateTime::new(2025, 3, 14, 9, 26, 53));
            let template =
                ChatTemplate::with_clock(&name, &source, SpecialTokens::new("<s>", "</s>"), clock)
                    .unwrap();
            (name, template)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec::new(
        "read_file",
        "Read a text file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )]
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// Templates whose own text moves earlier parts of the prompt as the
/// conversation grows; nothing the caller stores can keep their prefix.
const TEMPLATES_THAT_REWRITE: [(&str, &str); 3] = [
    (
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "the last tool result ends `</tool_response><|im_end|>`, an earlier one `</tool_response>\\n<|im_end|>`",
    ),
    (
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "`ns.is_first` is never reset, so every call turn after the first loses its \
         `<｜Assistant｜><｜tool▁calls▁begin｜>`, and `<｜tool▁outputs▁end｜>` is written only before an answer",
    ),
    (
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "the system prompt is folded into the last user message, wherever that is",
    ),
];

/// Each step the model writes a call in its own syntax (with reasoning
/// first), the turn is parsed and stored without reasoning, the result is
/// added, and the next prompt is rendered. The previous prompt must be a
/// prefix of the next one, except the generation prompt's own tail where a
/// template opens reasoning there (DeepSeek's `<think>\n`): at most a few
/// tokens to recompute.
#[test]
fn each_prompt_starts_with_the_previous_one() {
    let tools = tools();
    let options = RenderOptions::generation();
    let mut exact = Vec::new();
    let mut failures = Vec::new();
    for (name, template) in templates() {
        let family = template.family();
        let mut messages = vec![
            Message::system("You are a coding agent."),
            Message::user("Read a, b and c."),
        ];
        let mut previous = template.render(&messages, &tools, &options).unwrap();
        let mut always_exact = true;
        let rewrites = TEMPLATES_THAT_REWRITE.iter().any(|(t, _)| *t == name);
        for (step, path) in ["a", "b", "c"].into_iter().enumerate() {
            let call = family.format_calls(&[ToolCall::new(
                "abcDEF123",
                "read_file",
                json!({"path": path}),
            )]);
            let output = match family.think_tags() {
                Some((_, close)) if previous.reasoning_open => format!("I should read {path}.{close}\n{call}"),
                Some((open, close)) => format!("{open}I should read {path}.{close}\n{call}"),
                None => format!("<|channel|>analysis<|message|>I should read {path}.<|end|><|start|>assistant{call}"),
            };
            let parse_options = ParseOptions {
                reasoning_open: previous.reasoning_open,
                tools: &tools,
            };
            let mut turn = parse_turn(family, &output, &parse_options)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(turn.calls.len(), 1, "{name}");
            history::assign_call_ids(&mut turn.calls, step);
            let id = turn.calls[0].id.clone();
            messages.push(history::assistant_message(&turn));
            messages.push(Message::tool_result(
                id,
                "read_file",
                format!("contents of {path}"),
            ));
            let next = template.render(&messages, &tools, &options).unwrap();
            let kept = common_prefix(&previous.text, &next.text);
            let lost = previous.text.len() - kept;
            let tolerated = lost == 0 || rewrites || (previous.reasoning_open && lost <= 16);
            if !tolerated {
                failures.push(format!(
                    "{name}, step {step}: {lost} bytes of the previous prompt change:\n{:?}\n---\n{:?}",
                    &previous.text[kept..],
                    &next.text[kept..next.text.len().min(kept + 80)]
                ));
            }
            always_exact &= lost == 0;
            previous = next;
        }
        if always_exact {
            exact.push(name.clone());
        }
        if rewrites && always_exact {
            failures.push(format!(
                "{name} is listed as rewriting its prompt but kept it"
            ));
        }
    }
    println!(
        "exact prefixes at every step: {} templates: {}",
        exact.len(),
        exact.join(", ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A 30-turn conversation (a request, then 29 steps of call and result,
/// then an answer) renders in well under 5 ms in release builds.
#[test]
fn a_thirty_turn_conversation_renders_fast() {
    let tools = tools();
    let mut messages = vec![
        Message::system("You are a coding agent. ".repeat(40)),
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
            "fn main() {\n    println!(\"hi\");\n}\n".repeat(20),
        ));
    }
    messages.push(Message::assistant("Fixed."));
    let mut worst = (String::new(), 0.0f64);
    for (name, template) in templates() {
        // The best of five batches: the machine may be busy with other work.
        let ms = (0..5)
            .map(|_| {
                let runs = 10;
                let start = Instant::now();
                for _ in 0..runs {
                    template
                        .render(&messages, &tools, &RenderOptions::generation())
                        .unwrap();
                }
                start.elapsed().as_secs_f64() * 1000.0 / runs as f64
            })
            .fold(f64::INFINITY, f64::min);
        println!("{name}: {ms:.2} ms for {} messages", messages.len());
        if ms > worst.1 {
            worst = (name, ms);
        }
    }
    println!("slowest: {} at {:.2} ms", worst.0, worst.1);
    if !cfg!(debug_assertions) {
        assert!(worst.1 < 5.0, "{} takes {:.2} ms", worst.0, worst.1);
    }
}
