//! Each real chat template in tests/fixtures/templates renders each canonical
//! conversation exactly as Python's jinja2 does in Hugging Face's settings,
//! after the same adaptation. The expected files come from
//! scripts/render_templates.py (its header says how to regenerate them).
//!
//! Three comparisons per case, so a failure says where the difference is:
//! the probed capabilities, the adapted messages, and the rendered prompt
//! (also rendered from the script's own adapted messages).

use std::fs;
use std::path::{Path, PathBuf};

use agent_chat::adapt::adapt;
use agent_chat::clock::{fixed_clock, DateTime};
use agent_chat::render::{ChatTemplate, RenderOptions, SpecialTokens, TemplateError};
use agent_chat::{Message, ToolSpec};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Deserialize)]
struct Case {
    template: String,
    case: String,
    conversation: String,
    thinking: Option<bool>,
    bos_token: String,
    eos_token: String,
    adapted: String,
    expected: Option<String>,
    error: Option<String>,
    why: Option<String>,
}

#[derive(Deserialize)]
struct Conversation {
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(path: impl AsRef<Path>) -> String {
    let path = fixtures().join(path);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: impl AsRef<Path>) -> Value {
    serde_json::from_str(&read(path)).expect("fixture JSON")
}

/// The moment the script's `strftime_now` formats.
fn clock() -> agent_chat::clock::Clock {
    fixed_clock(DateTime::new(2025, 3, 14, 9, 26, 53))
}

fn capabilities_json(t: &ChatTemplate) -> Value {
    let c = t.capabilities();
    serde_json::json!({
        "system_role": c.system_role,
        "tools": c.tools,
        "tool_calls": c.tool_calls,
        "null_call_content": c.null_call_content,
        "string_arguments": c.string_arguments,
        "parallel_tool_calls": c.parallel_tool_calls,
        "nine_char_ids": c.nine_char_ids,
        "tool_responses": c.tool_responses,
        "strict_alternation": c.strict_alternation,
        "reasoning_field": c.reasoning_field.map(|f| f.key()),
        "family": t.family().name(),
    })
}

/// The first line where two texts differ, for a readable failure.
fn first_difference(want: &str, got: &str) -> String {
    let (mut w, mut g) = (want.lines(), got.lines());
    for n in 1.. {
        match (w.next(), g.next()) {
            (None, None) => {
                return format!(
                    "differ only in line endings ({} vs {} bytes)",
                    want.len(),
                    got.len()
                )
            }
            (a, b) if a != b => {
                return format!("line {n}:\n  jinja2:    {a:?}\n  minijinja: {b:?}")
            }
            _ => {}
        }
    }
    unreachable!()
}

#[test]
fn templates_render_as_jinja2_does() {
    let cases: Vec<Case> = serde_json::from_value(json("cases.json")).unwrap();
    assert!(
        cases.len() >= 17 * 4,
        "cases.json lists {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    let (mut exact, mut refused) = (0, 0);
    for case in &cases {
        let label = format!("{} / {}", case.template, case.case);
        let source = read(Path::new("templates").join(&case.template));
        let tokens = SpecialTokens::new(&case.bos_token, &case.eos_token);
        let template = ChatTemplate::with_clock(&case.template, &source, tokens, clock())
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let stem = case.template.trim_end_matches(".jinja");

        let want_caps = json(Path::new("expected").join(stem).join("capabilities.json"));
        if capabilities_json(&template) != want_caps {
            failures.push(format!(
                "{label}: capabilities differ\n  jinja2:    {want_caps}\n  minijinja: {}",
                capabilities_json(&template)
            ));
            continue;
        }

        let conversation: Conversation = serde_json::from_value(json(
            Path::new("conversations").join(format!("{}.json", case.conversation)),
        ))
        .unwrap();
        let want_adapted = json(&case.adapted);
        let adapted = adapt(
            &conversation.messages,
            &conversation.tools,
            template.capabilities(),
            template.family(),
        );
        if adapted.messages != want_adapted["messages"]
            || adapted.tools.as_ref().unwrap_or(&Value::Null) != &want_adapted["tools"]
        {
            failures.push(format!(
                "{label}: adaptation differs\n  python: {}\n  rust:   {}",
                want_adapted["messages"], adapted.messages
            ));
            continue;
        }

        let options = RenderOptions {
            add_generation_prompt: true,
            thinking: case.thinking,
            kwargs: Map::new(),
        };
        let rendered = template.render(&conversation.messages, &conversation.tools, &options);
        match (&case.expected, &case.error, rendered) {
            (Some(expected), _, Ok(prompt)) => {
                let want = read(expected);
                if prompt.text == want {
                    exact += 1;
                } else {
                    failures.push(format!(
                        "{label}: {}",
                        first_difference(&want, &prompt.text)
                    ));
                }
            }
            (_, Some(_), Err(TemplateError::Raised { .. } | TemplateError::Render { .. })) => {
                assert!(
                    case.why.is_some(),
                    "{label}: an expected error needs its reason"
                );
                refused += 1;
            }
            (_, _, Ok(prompt)) => failures.push(format!(
                "{label}: jinja2 refused it, minijinja rendered {:?}",
                prompt.text
            )),
            (_, _, Err(e)) => failures.push(format!("{label}: {e}")),
        }
    }
    println!(
        "{exact} renderings equal to jinja2's, {refused} refused as expected, {} failures",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_scripts_adapted_messages_render_the_same() {
    // Rendering alone, from the script's adapted messages: a difference
    // here is minijinja against jinja2, not our adaptation.
    let cases: Vec<Case> = serde_json::from_value(json("cases.json")).unwrap();
    let mut failures = Vec::new();
    for case in cases
        .iter()
        .filter(|c| c.expected.is_some() && c.thinking.is_none())
    {
        let source = read(Path::new("templates").join(&case.template));
        let tokens = SpecialTokens::new(&case.bos_token, &case.eos_token);
        let template = ChatTemplate::with_clock(&case.template, &source, tokens, clock()).unwrap();
        let adapted = json(&case.adapted);
        let tools = Some(&adapted["tools"]).filter(|t| !t.is_null());
        match template.render_json(&adapted["messages"], tools, true, &Map::new()) {
            Ok(text) if text == read(case.expected.as_ref().unwrap()) => {}
            Ok(text) => failures.push(format!(
                "{} / {}: {}",
                case.template,
                case.case,
                first_difference(&read(case.expected.as_ref().unwrap()), &text)
            )),
            Err(e) => failures.push(format!("{} / {}: {e}", case.template, case.case)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn load(name: &str) -> ChatTemplate {
    let source = read(Path::new("templates").join(name));
    ChatTemplate::with_clock(name, &source, SpecialTokens::new("<s>", "</s>"), clock()).unwrap()
}

#[test]
fn what_each_template_says_about_reasoning() {
    use agent_chat::render::ThinkingSwitch::*;
    // (template, thinks, switch, the no-tools prompt opens reasoning: default, on)
    let table = [
        (
            "Qwen-Qwen3-0.6B.jinja",
            true,
            Some(EnableThinking),
            [false, false],
        ),
        ("Qwen-QwQ-32B.jinja", true, None, [true, true]),
        (
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
            true,
            None,
            [true, true],
        ),
        ("llama-cpp-deepseek-r1.jinja", true, None, [true, true]),
        (
            "deepseek-ai-DeepSeek-V3.1.jinja",
            true,
            Some(Thinking),
            [false, true],
        ),
        (
            "ibm-granite-granite-3.3-2B-Instruct.jinja",
            true,
            Some(Thinking),
            [false, false],
        ),
        (
            "openai-gpt-oss-120b.jinja",
            true,
            Some(ReasoningEffort),
            [false, false],
        ),
        (
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
            true,
            None,
            [false, false],
        ),
        ("qwen2.5-instruct.jinja", false, None, [false, false]),
        (
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
            false,
            None,
            [false, false],
        ),
        (
            "meta-llama-Llama-3.3-70B-Instruct.jinja",
            false,
            None,
            [false, false],
        ),
        (
            "mistralai-Mistral-Nemo-Instruct-2407.jinja",
            false,
            None,
            [false, false],
        ),
        ("google-gemma-2-2b-it.jinja", false, None, [false, false]),
    ];
    let messages = [Message::system("Be brief."), Message::user("Hi.")];
    for (name, thinks, switch, open) in table {
        let t = load(name);
        assert_eq!(
            (t.thinks(), t.thinking_switch()),
            (thinks, switch),
            "{name}"
        );
        for (thinking, want) in [None, Some(true)].into_iter().zip(open) {
            let options = RenderOptions {
                add_generation_prompt: true,
                thinking,
                kwargs: Map::new(),
            };
            let prompt = t.render(&messages, &[], &options).unwrap();
            assert_eq!(
                prompt.reasoning_open, want,
                "{name} thinking={thinking:?}: {:?}",
                prompt.text
            );
        }
    }
    // Qwen3 with thinking off shows an empty reasoning block, already closed.
    let off = RenderOptions {
        add_generation_prompt: true,
        thinking: Some(false),
        kwargs: Map::new(),
    };
    let prompt = load("Qwen-Qwen3-0.6B.jinja")
        .render(&messages, &[], &off)
        .unwrap();
    assert!(prompt.text.ends_with("<think>\n\n</think>\n\n") && !prompt.reasoning_open);
}

#[test]
fn a_template_that_refuses_says_so_by_name() {
    // Without adaptation Gemma refuses a system message, with its own words.
    let gemma = load("google-gemma-2-2b-it.jinja");
    let raw =
        serde_json::json!([{"role": "system", "content": "x"}, {"role": "user", "content": "y"}]);
    let err = gemma
        .render_json(&raw, None, true, &Map::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "chat template google-gemma-2-2b-it.jinja refused the conversation: System role not supported"
    );
    // Adapted, the same conversation renders.
    let prompt = gemma
        .render(
            &[Message::system("x"), Message::user("y")],
            &[],
            &RenderOptions::generation(),
        )
        .unwrap();
    assert_eq!(
        prompt.text,
        "<s><start_of_turn>user\nx\n\ny<end_of_turn>\n<start_of_turn>model\n"
    );
}
