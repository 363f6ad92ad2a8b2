//! The model's plan (`todo`) through the real binary, `--script` playing
//! the model: what the tool refuses, and how `--json`, stream-json, the
//! line mode, `--resume` and the prompt show it.

use crate::agent::{agent_in, ask_yolo, events_of, json_of, repo, write_script};
use crate::common;

use std::path::Path;

use serde_json::{json, Value};

const CODING: &str = "Add a function sub to calc.py that returns a minus b";
const QUESTION: &str = "Where is the function add defined?";

fn call(tool: &str, args: Value) -> String {
    json!({"thought": "t", "tool": tool, "args": args}).to_string()
}

fn items(list: &[(&str, &str)]) -> Value {
    let items: Vec<Value> = list
        .iter()
        .map(|(text, status)| json!({"text": text, "status": status}))
        .collect();
    json!({ "items": items })
}

/// A plan, a plan with two items in progress (refused), a plan moved on,
/// the change, the answer.
fn planned_task(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        json!([
            call(
                "todo",
                items(&[
                    ("Read calc.py", "in_progress"),
                    ("Add sub", "pending"),
                    ("Check it", "pending")
                ])
            ),
            call(
                "todo",
                items(&[("Read calc.py", "in_progress"), ("Add sub", "in_progress")])
            ),
            call(
                "todo",
                items(&[
                    ("Read calc.py", "done"),
                    ("Add sub", "in_progress"),
                    ("Check it", "pending")
                ])
            ),
            call(
                "write_file",
                json!({"path": "sub.py", "content": "def sub(a, b):\n    return a - b\n"})
            ),
            call("finish", json!({"answer": "Added sub in sub.py."})),
        ]),
    )
}

#[test]
fn json_carries_the_final_plan_and_stream_json_each_plan_written() {
    let dir = repo();
    let script = planned_task(dir.path());
    let out = ask_yolo(dir.path(), &script, &["--json"], CODING);
    common::assert_success(&out);
    let v = json_of(&out);
    assert_eq!(v["intent"]["label"], "CODING_TASK", "{v}");
    assert_eq!(
        v["plan"],
        json!([
            {"text": "Read calc.py", "status": "done"},
            {"text": "Add sub", "status": "in_progress"},
            {"text": "Check it", "status": "pending"}
        ]),
        "{v}"
    );
    assert_eq!(v["tool_calls"], 4, "{v}");
    assert_eq!(v["changed_files"], json!(["sub.py"]), "{v}");

    // A fresh repository: the first run wrote sub.py.
    let dir = repo();
    let script = planned_task(dir.path());
    let out = ask_yolo(
        dir.path(),
        &script,
        &["--output-format", "stream-json"],
        CODING,
    );
    common::assert_success(&out);
    let events = events_of(&out);
    let plans: Vec<&Value> = events.iter().filter(|e| e["type"] == "plan").collect();
    // The refused list is no plan: two events, not three.
    assert_eq!(plans.len(), 2, "{events:?}");
    assert_eq!(plans[0]["items"][0]["status"], "in_progress");
    assert_eq!(plans[1]["items"][0]["status"], "done");
    assert_eq!(plans[1]["items"].as_array().unwrap().len(), 3);
    // Each comes after its call's result; the refusal says what to fix.
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == "todo")
        .collect();
    assert_eq!(results.len(), 3, "{events:?}");
    assert_eq!(results[0]["ok"], true);
    assert!(results[0]["content"]
        .as_str()
        .unwrap()
        .starts_with("Plan (0/3 done):\n▸ Read calc.py"));
    assert_eq!(results[1]["ok"], false);
    assert_eq!(results[1]["error"], "invalid_args");
    let why = results[1]["content"].as_str().unwrap();
    assert!(
        why.contains("items 1, 2 are all in_progress; only one item may be in_progress"),
        "{why}"
    );
    let at = |e: &Value| events.iter().position(|x| x == e).unwrap();
    assert!(at(results[0]) < at(plans[0]) && at(plans[0]) < at(results[1]));
    assert_eq!(events.last().unwrap()["type"], "final");
    assert_eq!(events.last().unwrap()["plan"], plans[1]["items"]);
}

#[test]
fn the_line_mode_prints_the_plan_compactly_and_a_refusal_in_one_line() {
    let dir = repo();
    let script = planned_task(dir.path());
    let out = agent_in(dir.path())
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg(CODING)
        .output()
        .unwrap();
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let plan = "● plan 1/3 done\n  ✓ Read calc.py\n  ▸ Add sub\n  · Check it\n";
    assert!(err.contains(plan), "{err}");
    assert!(err.contains("● plan 0/3 done\n  ▸ Read calc.py\n"), "{err}");
    assert!(
        err.contains("✗ todo: items 1, 2 are all in_progress"),
        "{err}"
    );
    // Not the call's raw arguments as well.
    assert!(!err.contains("● todo"), "{err}");
}

#[test]
fn a_question_gets_no_plan_tool_and_its_prompt_does_not_mention_it() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            call("todo", items(&[("Find add", "in_progress")])),
            call("finish", json!({"answer": "add is in calc.py"})),
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--output-format", "stream-json", "--script"])
        .arg(&script)
        .arg(QUESTION)
        .output()
        .unwrap();
    common::assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(r#""label":"REPO_QUESTION""#), "{text}");
    assert!(
        text.contains("`todo` is not available for this request"),
        "{text}"
    );
    assert!(!text.contains(r#""type":"plan""#), "{text}");

    // The prompt: the tool and the note on it for a coding task only.
    let prompt = |request: &str| {
        let out = agent_in(dir.path())
            .args(["ask", "--print-prompt", "--model"])
            .arg(common::tiny_model())
            .arg(request)
            .output()
            .unwrap();
        common::assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coding = prompt(CODING);
    assert!(
        coding.contains("you may keep a plan with the todo tool"),
        "{coding}"
    );
    let question = prompt(QUESTION);
    assert!(question.contains("grep"), "{question}");
    assert!(!question.contains("todo"), "{question}");
}

#[test]
fn a_resumed_chat_shows_the_unfinished_plan_and_a_finished_one_is_dropped() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            call(
                "todo",
                items(&[("Add sub", "done"), ("Add mul", "in_progress")])
            ),
            call(
                "write_file",
                json!({"path": "sub.py", "content": "def sub(a, b):\n    return a - b\n"})
            ),
            call("finish", json!({"answer": "sub is in; mul is next"})),
        ]),
    );
    let chat = |script: &Path, extra: &[&str]| {
        let out = common::output_with_input(
            common::agent_bin()
                .current_dir(dir.path())
                .args(["chat", "--mode", "yolo", "--script"])
                .arg(script)
                .args(extra),
            format!("{CODING}\n/exit\n").as_bytes(),
        );
        common::assert_success(&out);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    chat(&script, &[]);
    // Resumed: the plan is shown before the next request; that request
    // finishes it, so the chat after that has none.
    let finishing = write_script(
        dir.path(),
        json!([
            call("todo", items(&[("Add sub", "done"), ("Add mul", "done")])),
            call(
                "write_file",
                json!({"path": "mul.py", "content": "def mul(a, b):\n    return a * b\n"})
            ),
            call("finish", json!({"answer": "mul is in too"})),
        ]),
    );
    let err = chat(&finishing, &["--resume"]);
    let left = err
        .find("● plan 1/2 done\n  ✓ Add sub\n  ▸ Add mul")
        .unwrap_or_else(|| panic!("no unfinished plan: {err}"));
    let finished = err
        .find("● plan 2/2 done")
        .unwrap_or_else(|| panic!("no finished plan: {err}"));
    assert!(left < finished, "{err}");
    let empty = write_script(dir.path(), json!([]));
    let out = common::output_with_input(
        common::agent_bin()
            .current_dir(dir.path())
            .args(["chat", "--resume", "--script"])
            .arg(&empty),
        b"/exit\n",
    );
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("resumed session"), "{err}");
    assert!(!err.contains("● plan"), "{err}");
}
