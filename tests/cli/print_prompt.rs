//! `agent ask --print-prompt`: what the model would be sent, rendered with
//! its own template from the GGUF's header (no weights, no generation), and
//! turns of several calls, replayed in a family's native syntax.

use crate::agent::{agent_in, json_of, repo, write_script};
use crate::common;

use std::path::PathBuf;

use serde_json::{json, Value};

fn template(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/agent-chat/tests/fixtures/templates")
        .join(name)
}

fn requests(out: &std::process::Output) -> Vec<Value> {
    common::assert_success(out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn prints_the_prompt_the_ggufs_own_template_renders_instead_of_generating() {
    let dir = repo();
    let out = agent_in(dir.path())
        .args(["ask", "--print-prompt", "--model"])
        .arg(common::tiny_model())
        .arg("Grep the code for the definition of add")
        .output()
        .unwrap();
    common::assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("── request 1 · the GGUF's template (SmolLM2-135M"),
        "{text}"
    );
    assert_eq!(text.matches("── request").count(), 1, "{text}");
    // The first user message: the session's context, then the request.
    assert!(
        text.contains("<|im_start|>user\n<context>\nEnvironment:")
            && text.contains("</context>\n\nGrep the code for the definition of add"),
        "{text}"
    );
    assert!(text.ends_with("<|im_start|>assistant\n\n"), "{text:?}");
    // Shown, not asked: no session was saved (found on pytest: each print
    // run was stored, and logged as an interrupted request).
    let list = agent_in(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        json_of(&list),
        json!([]),
        "{}",
        String::from_utf8_lossy(&list.stdout)
    );

    // --json: the request as the template saw it. SmolLM2's template has no
    // tools, so they are described in the system prompt (and `finish` is one).
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--print-prompt", "--model"])
        .arg(common::tiny_model())
        .arg("Grep the code for the definition of add")
        .output()
        .unwrap();
    let printed = requests(&out);
    assert_eq!(printed.len(), 1, "{printed:?}");
    let r = &printed[0];
    assert_eq!(r["template"]["family"], "generic", "{r}");
    assert!(r["template"]["source"]
        .as_str()
        .unwrap()
        .starts_with("the GGUF's template"));
    assert_eq!(r["bos_token"], "<|im_start|>", "{r}");
    assert_eq!(r["eos_token"], "<|im_end|>", "{r}");
    let roles: Vec<&str> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user"], "{r}");
    let prompt = r["prompt"].as_str().unwrap();
    assert!(prompt.contains("\"tool\": \"finish\""), "{prompt}");
    // The text form prints the same prompt under its header line.
    assert_eq!(format!("{prompt}\n"), text.split_once('\n').unwrap().1);
}

#[test]
fn a_scripted_session_prints_each_request_in_the_templates_own_format() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            "I will search.\n<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"def add\"}}\n</tool_call>",
            "add is defined in calc.py."
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--print-prompt", "--script"])
        .arg(&script)
        .arg("--chat-template-file")
        .arg(template("qwen2.5-instruct.jinja"))
        .arg("--model")
        .arg(common::tiny_model())
        .arg("Grep the code for the definition of add")
        .output()
        .unwrap();
    let printed = requests(&out);
    assert_eq!(printed.len(), 2, "{printed:?}");
    let (first, second) = (&printed[0], &printed[1]);
    assert_eq!(first["template"]["family"], "hermes", "{first}");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"grep") && !tools.contains(&"finish"),
        "{tools:?}"
    );
    assert!(first["prompt"].as_str().unwrap().contains("<tools>"));
    // The call came back as an assistant `tool_calls` turn, its result a
    // `tool` message with its id: the template renders both its own way.
    let messages = second["messages"].as_array().unwrap();
    let call = &messages[2]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "grep", "{second}");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], call["id"]);
    assert!(messages[3]["content"]
        .as_str()
        .unwrap()
        .contains("calc.py:1"));
    let prompt = second["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("<tool_response>\n[grep ok]\ncalc.py:1"),
        "{prompt}"
    );
    // Step 2's prompt starts with step 1's: the KV cache holds.
    assert!(prompt.starts_with(first["prompt"].as_str().unwrap().trim_end()));

    // --no-tools: the one plain request.
    let out = agent_in(dir.path())
        .args(["ask", "--no-tools", "--json", "--print-prompt", "--model"])
        .arg(common::tiny_model())
        .arg("What is 2+2?")
        .output()
        .unwrap();
    let printed = requests(&out);
    assert_eq!(printed.len(), 1);
    assert_eq!(printed[0]["tools"], json!([]));
    assert!(printed[0]["prompt"]
        .as_str()
        .unwrap()
        .contains("What is 2+2?"));
}

/// Two repository questions: a template is shown the tools a request may
/// call, which its intent decides (none for chat, read-only for these).
const QUESTIONS: [&str; 2] = [
    "Where is the function add defined?",
    "How is the README of this repository organised?",
];

/// Two questions in one workspace share their prompt up to the first user
/// message: the system prompt and, with a template that shows the tools
/// itself (Qwen's `<tools>` block after the system content), the tools too.
/// That prefix is what the prompt cache on disk serves a new process.
#[test]
fn two_questions_share_the_prompt_through_the_tools() {
    let dir = repo();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "calc"]);
    // Between the two questions the user edits a file: git status changes.
    let edit = dir.path().join("notes.md");
    let prompt_for = |question: &str, template_file: Option<&str>| {
        let _ = std::fs::remove_file(&edit);
        if question == QUESTIONS[1] {
            std::fs::write(&edit, "notes\n").unwrap();
        }
        let mut cmd = agent_in(dir.path());
        cmd.args(["ask", "--json", "--print-prompt", "--model"])
            .arg(common::tiny_model());
        if let Some(file) = template_file {
            cmd.arg("--chat-template-file").arg(template(file));
        }
        let printed = requests(&cmd.arg(question).output().unwrap());
        let tools = printed[0]["tools"].clone();
        (printed[0]["prompt"].as_str().unwrap().to_string(), tools)
    };
    let common_prefix = |a: &str, b: &str| -> String {
        a.chars()
            .zip(b.chars())
            .take_while(|(x, y)| x == y)
            .map(|(x, _)| x)
            .collect()
    };

    // Native tool calls: the template renders the tools after the system content.
    let ((a, tools_a), (b, tools_b)) = (
        prompt_for(QUESTIONS[0], Some("qwen2.5-instruct.jinja")),
        prompt_for(QUESTIONS[1], Some("qwen2.5-instruct.jinja")),
    );
    assert_eq!(tools_a, tools_b);
    assert_ne!(a, b);
    let shared = common_prefix(&a, &b);
    let tools_end = a
        .rfind("</tools>")
        .unwrap_or_else(|| panic!("no tools: {a}"));
    assert!(shared.len() > tools_end, "shared only:\n{shared}");
    assert!(shared.contains("\"name\": \"read_file\""), "{shared}");
    // And on into the first user message, up to what changed.
    assert!(
        shared.contains("<|im_start|>user\n<context>\nEnvironment:\n- OS:")
            && shared.ends_with("- Git status: "),
        "{shared}"
    );

    // Tools described in the system prompt (SmolLM2's own template): the
    // whole system message is shared, tool descriptions included.
    let ((a, _), (b, _)) = (
        prompt_for(QUESTIONS[0], None),
        prompt_for(QUESTIONS[1], None),
    );
    let shared = common_prefix(&a, &b);
    assert!(shared.contains("read_file") && shared.contains("\"tool\": \"finish\""));
    assert!(
        shared.contains("<|im_start|>user\n<context>\nEnvironment:\n")
            && shared.ends_with("- Git status: "),
        "{shared}"
    );
}

#[test]
fn print_prompt_without_a_model_file_says_how_to_fix_it() {
    let dir = repo();
    let out = agent_in(dir.path())
        .args([
            "ask",
            "--print-prompt",
            "--model",
            "/nonexistent/model.gguf",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/model.gguf") && stderr.contains("fix:"),
        "{stderr}"
    );
    let out = agent_in(dir.path())
        .args([
            "ask",
            "--print-prompt",
            "--server",
            "http://localhost:1/v1",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// Qwen writes several `<tool_call>` blocks in one turn: each runs, in
/// order and under the policy, and gets its own `tool` message.
#[test]
fn every_call_of_a_turn_runs_in_order_with_its_own_result() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            "Both at once.\n<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"def add\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"notes.txt\", \"content\": \"x\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}\n</tool_call>",
            "add is in calc.py; notes.txt was not written."
        ]),
    );
    let run = |extra: &[&str]| {
        agent_in(dir.path())
            .args(["ask", "--script"])
            .arg(&script)
            .arg("--chat-template-file")
            .arg(template("qwen2.5-instruct.jinja"))
            .arg("--model")
            .arg(common::tiny_model())
            .args(extra)
            .arg("Add a notes.txt file next to the add function")
            .output()
            .unwrap()
    };
    // Confirm mode without a terminal: the reads run, the write is declined.
    let printed = requests(&run(&["--json", "--print-prompt"]));
    assert_eq!(printed.len(), 2, "{printed:?}");
    let messages = printed[1]["messages"].as_array().unwrap();
    let turn = messages
        .iter()
        .position(|m| m["tool_calls"].is_array())
        .unwrap();
    let calls = messages[turn]["tool_calls"].as_array().unwrap();
    let names: Vec<&str> = calls
        .iter()
        .map(|c| c["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["grep", "write_file", "read_file"]);
    let results = &messages[turn + 1..];
    assert_eq!(results.len(), 3, "{messages:?}");
    for (call, result) in calls.iter().zip(results) {
        assert_eq!(result["role"], "tool");
        assert_eq!(result["tool_call_id"], call["id"]);
    }
    let content = |i: usize| results[i]["content"].as_str().unwrap();
    assert!(content(0).contains("calc.py:1"), "{}", content(0));
    assert!(content(1).contains("declined"), "{}", content(1));
    assert!(content(2).contains("A tiny calculator"), "{}", content(2));
    assert!(!dir.path().join("notes.txt").exists());
    let prompt = printed[1]["prompt"].as_str().unwrap();
    assert_eq!(prompt.matches("<tool_response>").count(), 3, "{prompt}");

    let v = json_of(&run(&["--json"]));
    assert_eq!(
        (&v["tool_calls"], &v["declined"]),
        (&json!(3), &json!(1)),
        "{v}"
    );
}

/// Found on pytest: `--print-prompt` showed a 2,621-token map and 4 results
/// (rate "default") where the real ask sent 256 and 2. It sizes the prompt
/// by the engine's own window and prefill rate, and says which.
#[test]
fn print_prompt_sizes_the_first_prompt_as_the_real_run_does_and_says_by_what() {
    let dir = repo();
    let question = "Where is add defined in calc.py?";
    let real = || {
        let out = agent_in(dir.path())
            // The sizes are decided before the first token: a short reply
            // is all the check needs.
            .args([
                "ask",
                "--json",
                "--max-steps",
                "1",
                "--max-tokens",
                "16",
                "--model",
            ])
            .arg(common::tiny_model())
            .arg(question)
            .output()
            .unwrap();
        json_of(&out)["first_prompt"].clone()
    };
    // The first run measures this machine's prefill rate; the print and
    // the next run size by it.
    real();
    let out = agent_in(dir.path())
        .args(["ask", "--print-prompt", "--model"])
        .arg(common::tiny_model())
        .arg(question)
        .output()
        .unwrap();
    common::assert_success(&out);
    let sized = real();
    assert_eq!(sized["rate_source"], "measured", "{sized}");
    let said = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "first prompt: {} map tokens, {} search results (prefill {} tokens/s, measured;",
        sized["map_tokens"],
        sized["prefetch_results"],
        sized["prefill_tokens_per_s"].as_f64().unwrap()
    );
    assert!(said.contains(&expected), "{expected}\n{said}");
}
