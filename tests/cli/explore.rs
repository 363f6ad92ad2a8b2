//! The `explore` subagent through the real binary, `--script` playing the
//! model (the subagent's turns come between the request's, as the loop asks
//! for them): its steps nested in stream-json, the line mode and the audit
//! log, only its report in the request's context, a write refused inside
//! it, and its budgets ending it.

use crate::agent::{agent_in, events_of, json_of, repo, write_script};
use crate::common;

use std::path::Path;

use serde_json::{json, Value};

const QUESTION: &str = "Where is the function add defined?";

fn call(tool: &str, args: Value) -> String {
    json!({"thought": "t", "tool": tool, "args": args}).to_string()
}

/// The request explores, its subagent reads calc.py, tries a write, and
/// reports; the request then answers from the report.
fn explored(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        json!([
            call("explore", json!({"question": "where is add defined?"})),
            call("read_file", json!({"path": "calc.py"})),
            call(
                "write_file",
                json!({"path": "new.py", "content": "x = 1\n"})
            ),
            call(
                "finish",
                json!({"answer": "calc.py:1 defines add(a, b), which returns a + b"})
            ),
            call(
                "finish",
                json!({"answer": "add is defined in calc.py, line 1"})
            ),
        ]),
    )
}

/// The subagent greps and reads; the request then answers. Run with a
/// budget that ends the exploration early.
fn over_budget(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        json!([
            call("explore", json!({"question": "where is add defined?"})),
            call("grep", json!({"pattern": "def add"})),
            call("read_file", json!({"path": "calc.py"})),
            call("finish", json!({"answer": "add is in calc.py, line 1"})),
        ]),
    )
}

/// The records of the workspace's audit log.
fn audit_records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(common::state_dir(dir).join("logs/audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ask(dir: &Path, script: &Path, flags: &[&str]) -> std::process::Output {
    agent_in(dir)
        .arg("ask")
        .args(flags)
        .arg("--script")
        .arg(script)
        .arg(QUESTION)
        .output()
        .unwrap()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn an_exploration_is_nested_in_stream_json_and_only_its_report_reaches_the_request() {
    let dir = repo();
    let script = explored(dir.path());
    let out = ask(
        dir.path(),
        &script,
        &["--explore", "on", "--output-format", "stream-json"],
    );
    common::assert_success(&out);
    let events = events_of(&out);
    let start = of_type(&events, "explore");
    assert_eq!(start.len(), 1, "{events:?}");
    assert_eq!(start[0]["id"], "explore-1");
    assert_eq!(start[0]["question"], "where is add defined?");

    // The subagent's calls and results carry their parent; the request's do not.
    let calls = of_type(&events, "tool_call");
    let tools: Vec<(&str, &Value)> = calls
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), &c["parent"]))
        .collect();
    assert_eq!(
        tools,
        [
            ("explore", &Value::Null),
            ("read_file", &json!("explore-1")),
            ("write_file", &json!("explore-1")),
            ("finish", &json!("explore-1")),
            ("finish", &Value::Null),
        ],
        "{events:?}"
    );
    // A write inside it is refused, as for any question.
    let results = of_type(&events, "tool_result");
    let write = results
        .iter()
        .find(|r| r["tool"] == "write_file")
        .expect("the write's result");
    assert_eq!(write["ok"], false, "{write}");
    assert_eq!(write["parent"], "explore-1", "{write}");
    assert!(
        write["content"]
            .as_str()
            .unwrap()
            .contains("`write_file` is not available"),
        "{write}"
    );
    assert!(!dir.path().join("new.py").exists());

    let end = of_type(&events, "explore_end");
    assert_eq!(end.len(), 1, "{events:?}");
    assert_eq!(end[0]["finish"], "answered", "{}", end[0]);
    assert_eq!(end[0]["steps"], 3, "{}", end[0]);
    assert_eq!(end[0]["tool_calls"], 2, "{}", end[0]);
    // Its report is the explore call's result: its words, then what it read.
    let report = results
        .iter()
        .find(|r| r["tool"] == "explore")
        .expect("the report");
    assert!(report["parent"].is_null(), "{report}");
    assert_eq!(
        report["content"], "calc.py:1 defines add(a, b), which returns a + b\nRead: calc.py:1-3",
        "{report}"
    );
    // Its answer streamed nowhere: the text events are the request's answer.
    let text: String = of_type(&events, "text")
        .iter()
        .map(|t| t["delta"].as_str().unwrap())
        .collect();
    assert!(!text.contains("defines add"), "{text}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final", "{last}");
    assert_eq!(last["answer"], "add is defined in calc.py, line 1");
    assert_eq!(last["steps"], 2, "{last}");
    assert_eq!(last["explore"]["runs"], 1, "{last}");
    assert_eq!(last["explore"]["steps"], 3, "{last}");
    assert!(last["explore"]["tokens"].as_u64().unwrap() > 0, "{last}");

    // The session holds the request's turns only: the call, the report, the answer.
    let id = last["session_id"].as_str().unwrap();
    let shown = agent_in(dir.path())
        .args(["sessions", "show", id, "--json"])
        .output()
        .unwrap();
    let messages = json_of(&shown)["messages"].as_array().unwrap().clone();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["system", "request", "call", "observation", "call"],
        "{messages:?}"
    );
    assert!(messages[3]["content"]
        .as_str()
        .unwrap()
        .contains("calc.py:1 defines add"));
    for m in &messages[2..] {
        let content = m["content"].as_str().unwrap();
        assert!(
            !content.contains("read_file") && !content.contains("| def add"),
            "{content}"
        );
    }

    // The audit log: the subagent's records name it.
    let records = audit_records(dir.path());
    let nested_calls: Vec<&str> = records
        .iter()
        .filter(|r| r["event"] == "tool_call" && r["parent"] == "explore-1")
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(nested_calls, ["read_file", "write_file", "finish"]);
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "policy_deny" && r["parent"] == "explore-1"),
        "{records:?}"
    );
    let explore = records
        .iter()
        .find(|r| r["event"] == "explore")
        .expect("the exploration's record");
    assert!(explore["parent"].is_null(), "{explore}");
    assert_eq!(explore["finish"], "answered");
    assert_eq!(explore["steps"], 3);
}

#[test]
fn the_line_mode_shows_the_steps_indented_under_the_call() {
    let dir = repo();
    let script = explored(dir.path());
    let out = ask(dir.path(), &script, &["--explore", "on"]);
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("● explore where is add defined?"), "{err}");
    assert!(err.contains("  ┆ ● read_file calc.py"), "{err}");
    assert!(
        err.contains("  ┆   ✗ `write_file` is not available"),
        "{err}"
    );
    assert!(
        err.contains("  ┆ explored in 3 step(s), 2 tool call(s), "),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("add is defined in calc.py, line 1"),
        "{stdout}"
    );
    assert!(!stdout.contains("defines add(a, b)"), "{stdout}");
}

#[test]
fn its_budgets_end_it_with_what_it_read() {
    let dir = repo();
    // Out of steps: its second call is its last, and it gives no report.
    let script = over_budget(dir.path());
    let out = ask(
        dir.path(),
        &script,
        &["--explore", "on", "--explore-steps", "2", "--json"],
    );
    common::assert_success(&out);
    let v = json_of(&out);
    assert_eq!(v["answer"], "add is in calc.py, line 1", "{v}");
    assert_eq!(v["explore"]["steps"], 2, "{v}");
    let explore = audit_records(dir.path())
        .into_iter()
        .find(|r| r["event"] == "explore")
        .unwrap();
    assert_eq!(explore["finish"], "step_budget", "{explore}");
    let report = explore["report"].as_str().unwrap();
    assert!(
        report.starts_with("(explore gave no report of its own: explored in 2 step(s)"),
        "{report}"
    );
    assert!(report.contains("its step budget ran out"), "{report}");
    assert!(report.ends_with("Read: calc.py:1-3"), "{report}");

    // Out of tokens: after its first step its next reply may only be its report.
    let dir = repo();
    let script = over_budget(dir.path());
    let out = ask(
        dir.path(),
        &script,
        &[
            "--explore",
            "on",
            "--explore-tokens",
            "1",
            "--output-format",
            "stream-json",
        ],
    );
    common::assert_success(&out);
    let events = events_of(&out);
    let end = of_type(&events, "explore_end");
    assert_eq!(end[0]["finish"], "token_budget", "{events:?}");
    assert_eq!(end[0]["steps"], 2, "{events:?}");
    let report = of_type(&events, "tool_result")
        .into_iter()
        .find(|r| r["tool"] == "explore")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(report.contains("its token budget ran out"), "{report}");
}

#[test]
fn without_the_flag_there_is_no_explore_tool() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            call("explore", json!({"question": "where is add defined?"})),
            call("finish", json!({"answer": "add is in calc.py, line 1"})),
        ]),
    );
    let out = ask(dir.path(), &script, &["--output-format", "stream-json"]);
    common::assert_success(&out);
    let events = events_of(&out);
    assert!(of_type(&events, "explore").is_empty(), "{events:?}");
    let refused = of_type(&events, "tool_result")
        .into_iter()
        .find(|r| r["tool"] == "explore")
        .unwrap();
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .contains("`explore` is not a tool"),
        "{refused}"
    );
}
