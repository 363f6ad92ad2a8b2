//! `agent ask --output-schema`: a tool run's answer also as JSON of a given
//! shape, for scripts and CI. Replays check the plumbing, the check of a
//! reply that cannot be constrained, and the exit codes; the real tiny model
//! checks that the schema's grammar holds llama.cpp to the shape.

use std::path::Path;

use serde_json::{json, Value};

use crate::agent::{agent_in, json_of, repo, write_script};
use crate::common;

/// A nested shape: an object holding a list of objects and an enum.
fn nested_schema(dir: &Path) -> std::path::PathBuf {
    let schema = json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "places": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string"},
                        "line": {"type": "integer"}
                    },
                    "required": ["file", "line"],
                    "additionalProperties": false
                }
            },
            "confidence": {"enum": ["low", "high"]}
        },
        "required": ["summary", "places", "confidence"]
    });
    let path = dir.join(".git/where.schema.json");
    std::fs::write(&path, schema.to_string()).unwrap();
    path
}

fn ask_scripted(dir: &Path, schema: &Path, turns: Value, json: bool) -> std::process::Output {
    let script = write_script(dir, turns);
    let mut cmd = agent_in(dir);
    cmd.arg("ask");
    if json {
        cmd.arg("--json");
    }
    cmd.arg("--output-schema")
        .arg(schema)
        .arg("--script")
        .arg(script)
        .arg("Where are numbers added?")
        .output()
        .unwrap()
}

const FINISH: &str = r#"{"thought": "t", "tool": "finish", "args": {"answer": "add() in calc.py, line 1, adds them."}}"#;

#[test]
fn a_tool_runs_answer_comes_as_json_of_the_schemas_shape() {
    let dir = repo();
    let schema = nested_schema(dir.path());
    let shaped = json!({"summary": "add() adds them", "places": [{"file": "calc.py", "line": 1}], "confidence": "high"});
    let out = ask_scripted(
        dir.path(),
        &schema,
        json!([FINISH, shaped.to_string()]),
        true,
    );
    common::assert_success(&out);
    let report = json_of(&out);
    assert_eq!(report["result"], shaped, "{report}");
    assert_eq!(report["answer"], "add() in calc.py, line 1, adds them.");
    assert!(report.get("result_error").is_none(), "{report}");

    // In text, the JSON is stdout's last line.
    let out = ask_scripted(
        dir.path(),
        &schema,
        json!([FINISH, format!("```json\n{shaped}\n```")]),
        false,
    );
    common::assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(stdout.trim_end().lines().last().unwrap()).unwrap();
    assert_eq!(last, shaped, "{stdout}");
}

#[test]
fn a_reply_not_of_the_shape_exits_4_naming_where() {
    let dir = repo();
    let schema = nested_schema(dir.path());
    // A replay, like a server, cannot be held to a grammar: checked instead.
    let wrong = json!({"summary": "s", "places": [{"file": "calc.py", "line": "one"}], "confidence": "high"});
    let out = ask_scripted(
        dir.path(),
        &schema,
        json!([FINISH, wrong.to_string()]),
        true,
    );
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let report = json_of(&out);
    assert!(report.get("result").is_none(), "{report}");
    let why = report["result_error"].as_str().unwrap();
    assert!(why.contains("$.places[0].line: expected integer"), "{why}");
    assert_eq!(report["finish"], "answered");

    // No answer, no shape: exit 3 as without the flag, and no error of its own.
    let out = ask_scripted(
        dir.path(),
        &schema,
        json!([r#"{"thought": "t", "tool": "list_dir", "args": {"path": "."}}"#]),
        true,
    );
    let report = json_of(&out);
    assert_eq!(out.status.code(), Some(3), "{report}");
    assert!(report.get("result_error").is_none(), "{report}");
}

#[test]
fn a_schema_the_grammar_cannot_hold_is_refused_before_the_run() {
    let dir = repo();
    let schema = dir.path().join(".git/pattern.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}"#,
    )
    .unwrap();
    let out = ask_scripted(dir.path(), &schema, json!([FINISH]), true);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("$.id: `pattern` is not supported"),
        "{stderr}"
    );
    assert!(stderr.contains("fix:"), "{stderr}");
    // Refused before anything ran: no session was saved.
    let sessions = agent_in(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(json_of(&sessions), json!([]));

    let out = agent_in(dir.path())
        .args(["ask", "--no-tools", "--output-schema"])
        .arg(&schema)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "--no-tools has --json-schema: {out:?}"
    );
}

/// The real tiny model: whatever it says, the grammar made from the schema
/// holds it to the shape, nested objects and enums included.
#[test]
fn the_real_model_writes_the_nested_shape_under_its_grammar() {
    let dir = repo();
    let schema_path = nested_schema(dir.path());
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--max-steps", "2", "--max-tokens", "256"])
        .arg("--output-schema")
        .arg(&schema_path)
        .arg("--model")
        .arg(common::tiny_model())
        .arg("What is the capital of France?")
        .output()
        .unwrap();
    let report = json_of(&out);
    assert_eq!(report["finish"], "answered", "{report}");
    let result = &report["result"];
    assert!(result.is_object(), "{report}");
    assert!(result["summary"].is_string(), "{result}");
    assert!(result["places"].is_array(), "{result}");
    for place in result["places"].as_array().unwrap() {
        assert!(
            place["file"].is_string() && place["line"].is_i64(),
            "{result}"
        );
        assert_eq!(place.as_object().unwrap().len(), 2, "{result}");
    }
    assert!(
        ["low", "high"].contains(&result["confidence"].as_str().unwrap()),
        "{result}"
    );
    assert_eq!(out.status.code(), Some(0), "{report}");
}
