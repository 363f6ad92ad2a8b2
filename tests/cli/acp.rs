//! `agent acp`: the agent as an Agent Client Protocol agent, driven by the
//! official TypeScript SDK's client (tests/fixtures/acp_client.mjs, set up
//! by scripts/test) through replayed model turns; and by hand, to see every
//! byte the agent writes.

use crate::agent::{mcp_python, repo, write_script};
use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The folder with the SDK's node_modules (scripts/test installs it), if set.
fn acp_client() -> Option<String> {
    let dir = std::env::var("AGENT_TEST_ACP_CLIENT").ok()?;
    let sdk = Path::new(&dir).join("node_modules/@agentclientprotocol/sdk/package.json");
    assert!(
        sdk.is_file(),
        "AGENT_TEST_ACP_CLIENT={dir} has no @agentclientprotocol/sdk (scripts/common.sh ensure_acp_client installs it)"
    );
    Some(dir)
}

/// Runs the client's plan against `agent acp ARGS` in `dir`; what it saw.
fn drive(sdk: &str, dir: &Path, args: &[&str], steps: Value) -> Value {
    drive_with(sdk, dir, args, steps, Value::Null)
}

/// As [`drive`], with a client that offers its file system holding the
/// unsaved `buffers` (absolute path → text) when they are not null.
fn drive_with(sdk: &str, dir: &Path, args: &[&str], steps: Value, buffers: Value) -> Value {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp_client.mjs");
    let mut agent = vec![env!("CARGO_BIN_EXE_agent").to_string(), "acp".into()];
    agent.extend(args.iter().map(|a| a.to_string()));
    let mut plan = json!({"agent": agent, "cwd": dir, "steps": steps});
    if !buffers.is_null() {
        plan["fs"] = json!({ "buffers": buffers });
    }
    let out = Command::new(std::env::var("AGENT_TEST_NODE").unwrap_or_else(|_| "node".into()))
        .arg(fixture)
        .arg(plan.to_string())
        .current_dir(dir)
        .env("AGENT_TEST_ACP_CLIENT", sdk)
        .env("XDG_CONFIG_HOME", dir.join(".git/test-config"))
        .envs(common::state_env())
        .stdin(Stdio::null())
        .output()
        .expect("node runs (AGENT_TEST_NODE or node on PATH)");
    common::assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the client printed no report ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The `session/update` bodies of a step, of one kind.
fn updates<'a>(step: &'a Value, kind: &str) -> Vec<&'a Value> {
    step["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The text of a step's chunks of one kind, joined.
fn text_of(step: &Value, kind: &str) -> String {
    updates(step, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[test]
fn an_editor_runs_a_session_with_permissions_diffs_a_cancel_and_loads_it_again() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "look at add first", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "notes.md", "content": "add sums two numbers\n"}}"#,
            r#"{"thought": "t", "tool": "edit", "args": {"path": "calc.py", "old_text": "return a + b", "new_text": "return b + a"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "Wrote notes.md; the change to calc.py was declined."}}"#,
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "sleep 30"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add is still in calc.py"}}"#
        ]),
    );
    let script = script.to_str().unwrap();
    let request = "Write notes.md describing add, and swap the operands of add in calc.py";
    let report = drive(
        &sdk,
        dir.path(),
        &["--script", script],
        json!([
            {"new": true},
            {"prompt": request, "answers": ["allow-once", "reject"]},
            {"prompt": "Run the command sleep 30 in the shell to fix the timing of add in calc.py",
             "answers": ["allow-once"], "cancel_after_answer_ms": 500},
            {"prompt": "Is the function add still in calc.py?"}
        ]),
    );
    let init = &report["initialize"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["authMethods"], json!([]));
    let steps = report["steps"].as_array().unwrap();
    for step in steps {
        assert!(step["error"].is_null(), "{step}");
    }

    // The edit prompt: each tool call starts in progress and ends with its status.
    let edit = &steps[1];
    assert_eq!(edit["result"]["stopReason"], "end_turn", "{edit}");
    let calls = updates(edit, "tool_call");
    let titles: Vec<&str> = calls.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Read calc.py", "Write notes.md", "Edit calc.py"]);
    let kinds: Vec<&str> = calls.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["read", "edit", "edit"]);
    assert!(calls.iter().all(|c| c["status"] == "in_progress"));
    let calc = dir.path().canonicalize().unwrap().join("calc.py");
    assert_eq!(calls[0]["locations"][0]["path"], calc.display().to_string());
    let done = updates(edit, "tool_call_update");
    let statuses: Vec<(&str, &str)> = done
        .iter()
        .map(|u| {
            (
                u["toolCallId"].as_str().unwrap(),
                u["status"].as_str().unwrap(),
            )
        })
        .collect();
    // Pending while asked, running again once allowed; a rejected call fails.
    assert_eq!(
        statuses,
        [
            ("call-1", "completed"),
            ("call-2", "in_progress"),
            ("call-2", "completed"),
            ("call-3", "failed")
        ]
    );
    // The write is shown as a diff of the new file.
    let diff = &done[2]["content"][0];
    assert_eq!(diff["type"], "diff", "{diff}");
    assert!(diff["path"].as_str().unwrap().ends_with("/notes.md"));
    assert_eq!(diff["oldText"], Value::Null);
    assert_eq!(diff["newText"], "add sums two numbers\n");
    // Asked twice: allowed once, then rejected; the files say so.
    let asked = edit["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{edit}");
    let kinds: Vec<&str> = asked[0]["request"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(asked[0]["request"]["toolCall"]["toolCallId"], "call-2");
    assert_eq!(asked[0]["request"]["toolCall"]["status"], "pending");
    assert_eq!(asked[1]["request"]["toolCall"]["toolCallId"], "call-3");
    assert!(
        asked[1]["request"]["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("+    return b + a")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "add sums two numbers\n"
    );
    assert!(std::fs::read_to_string(&calc)
        .unwrap()
        .contains("return a + b"));
    assert_eq!(
        text_of(edit, "agent_message_chunk"),
        "Wrote notes.md; the change to calc.py was declined."
    );
    assert!(text_of(edit, "agent_thought_chunk").contains("look at add first"));

    // The cancel stops the running command long before its 30 s.
    let cancel = &steps[2];
    assert_eq!(cancel["result"]["stopReason"], "cancelled", "{cancel}");
    assert!(cancel["ms"].as_u64().unwrap() < 15_000, "{cancel}");
    let run = updates(cancel, "tool_call");
    assert_eq!(run[0]["kind"], "execute");
    assert_eq!(run[0]["title"], "Run `sleep 30`");
    // The session goes on after the cancel.
    let after = &steps[3];
    assert_eq!(after["result"]["stopReason"], "end_turn", "{after}");
    assert_eq!(
        text_of(after, "agent_message_chunk"),
        "add is still in calc.py"
    );
    // The client went away and the agent ended by itself.
    assert_eq!(report["exit"]["code"], 0, "{report}");

    // A new process loads the session: the conversation comes back, and it
    // goes on; a second session shares the model (the replay's next turn).
    let session = report["sessionId"].as_str().unwrap();
    let next = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add is in calc.py (first turn)"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add is in calc.py (second turn)"}}"#
        ]),
    );
    let loaded = drive(
        &sdk,
        dir.path(),
        &["--script", next.to_str().unwrap()],
        json!([
            {"load": session},
            {"prompt": "Is the function add in calc.py?"},
            {"new": true},
            {"prompt": "Is the function add in calc.py?"}
        ]),
    );
    let steps = loaded["steps"].as_array().unwrap();
    for step in steps {
        assert!(step["error"].is_null(), "{step}");
    }
    let load = &steps[0];
    assert_eq!(
        load["result"]["modes"]["currentModeId"], "confirm",
        "{load}"
    );
    // The request as the user wrote it, not the context the model saw with it.
    let asked: Vec<&str> = updates(load, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(asked[0], request, "{load}");
    assert!(
        text_of(load, "agent_message_chunk").contains("Wrote notes.md"),
        "{load}"
    );
    assert_eq!(
        text_of(&steps[1], "agent_message_chunk"),
        "add is in calc.py (first turn)"
    );
    assert_ne!(steps[2]["result"]["sessionId"], session);
    assert_eq!(
        text_of(&steps[3], "agent_message_chunk"),
        "add is in calc.py (second turn)"
    );
    // The loaded session is the saved one, one request longer.
    let sessions = crate::agent::agent_in(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    common::assert_success(&sessions);
    assert_eq!(
        serde_json::from_slice::<Value>(&sessions.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2,
        "{}",
        String::from_utf8_lossy(&sessions.stdout)
    );
}

/// Every line the agent writes, parsed; fails on one that is not JSON-RPC.
fn read_message(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> Value {
    let line = lines.next().expect("a message").unwrap();
    let v: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
    assert_eq!(v["jsonrpc"], "2.0", "{line}");
    v
}

#[test]
fn a_malformed_line_gets_an_error_and_a_vanished_client_ends_the_agent_and_its_command() {
    let dir = repo();
    let marker = "29.123";
    let script = write_script(
        dir.path(),
        json!([format!(
            r#"{{"thought": "t", "tool": "run_cmd", "args": {{"command": "sleep {marker}"}}}}"#
        )]),
    );
    let mut child = common::agent_bin()
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".git/test-config"))
        .args(["acp", "--mode", "yolo", "--script"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: &str| {
        stdin.write_all(v.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };

    send("{this is not json");
    let error = read_message(&mut lines);
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    send(r#"{"jsonrpc":"2.0","id":1,"method":"no/such_method","params":{}}"#);
    assert_eq!(read_message(&mut lines)["error"]["code"], -32601);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"relative"}}"#);
    assert_eq!(read_message(&mut lines)["error"]["code"], -32602);
    // Still serving.
    send(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}"#);
    let init = read_message(&mut lines);
    assert_eq!(init["id"], 3);
    assert_eq!(init["result"]["protocolVersion"], 1);
    let new = json!({"jsonrpc":"2.0","id":4,"method":"session/new",
                     "params":{"cwd": dir.path(), "mcpServers": []}});
    send(&new.to_string());
    let session = read_message(&mut lines)["result"]["sessionId"].clone();
    let prompt = json!({"jsonrpc":"2.0","id":5,"method":"session/prompt",
        "params":{"sessionId": session, "prompt":[{"type":"text","text":"Run the command sleep in the shell to fix the timing of add in calc.py"}]}});
    send(&prompt.to_string());
    // Wait until the command runs.
    loop {
        let m = read_message(&mut lines);
        assert!(m["id"] != 5, "the prompt ended early: {m}");
        if m["params"]["update"]["sessionUpdate"] == "tool_call" {
            break;
        }
    }
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .any(|c| String::from_utf8_lossy(&c).contains(marker))
    };
    let start = Instant::now();
    while !running() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(running(), "the command did not start");

    // The client vanishes.
    drop(stdin);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "agent acp outlived its client"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    // Whatever else it wrote on stdout was JSON-RPC too.
    for line in lines {
        let line = line.unwrap();
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    let start = Instant::now();
    while running() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(), "the command outlived the agent");
}

#[test]
fn a_cancel_stops_the_real_model_at_its_next_batch() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let model = common::tiny_model();
    let report = drive(
        &sdk,
        dir.path(),
        &["--model", model.to_str().unwrap(), "--max-tokens", "512"],
        json!([
            {"new": true},
            // A question the heuristics decide: the model's first call starts at once.
            {"prompt": "Where is the function add defined, and what does it return?",
             "cancel_after_ms": 300}
        ]),
    );
    let prompt = &report["steps"][1];
    assert!(prompt["error"].is_null(), "{prompt}");
    assert_eq!(prompt["result"]["stopReason"], "cancelled", "{prompt}");
    assert_eq!(report["exit"]["code"], 0, "{report}");
    // The model stopped where the cancel found it: within its prompt (a
    // batch of the prefill is one llama.cpp call) or after a token.
    let trace =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/trace.jsonl")).unwrap();
    let response: Value = trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "llm_response")
        .expect("a model response in the trace");
    assert_eq!(response["finish"], "cancelled", "{response}");
    assert!(
        response["completion_tokens"].as_u64().unwrap() < 512,
        "{response}"
    );
    let after = prompt["ms"].as_u64().unwrap() - prompt["cancelled_at_ms"].as_u64().unwrap();
    let prefill = response["prefill_ms"].as_f64().unwrap() as u64;
    assert!(
        after < prefill + 5_000,
        "{after} ms from the cancel to the end (prefill {prefill} ms): {prompt}"
    );
}

#[test]
fn the_editors_mcp_servers_join_the_session() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let Some(python) = mcp_python() else {
        agent_test_support::skip!("AGENT_TEST_MCP_PYTHON is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "mcp__tickets__lookup", "args": {"ticket": 7}}"#,
            r#"{"thought": "t", "tool": "mcp__tickets__close", "args": {"ticket": 7, "reason": "fixed"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "closed ticket 7: the login page in calc.py times out"}}"#
        ]),
    );
    let report = drive(
        &sdk,
        dir.path(),
        &["--script", script.to_str().unwrap()],
        json!([
            // Not declared in the workspace, not trusted there: the editor's own.
            {"new": true, "mcpServers": [{"name": "tickets", "command": python,
                                          "args": [server], "env": []}]},
            {"prompt": "Fix the login timeout, then close ticket 7", "answers": ["allow-once"]}
        ]),
    );
    let prompt = &report["steps"][1];
    assert_eq!(prompt["result"]["stopReason"], "end_turn", "{prompt}");
    let done = updates(prompt, "tool_call_update");
    assert!(
        done[0]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("login page times out"),
        "{prompt}"
    );
    // The read-only tool ran without asking; the other one asked first.
    let asked = prompt["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{prompt}");
    assert_eq!(
        asked[0]["request"]["toolCall"]["title"],
        "mcp__tickets__close"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("closed.txt")).unwrap(),
        "7 fixed\n"
    );
}

#[test]
fn an_editor_that_offers_its_files_shows_unsaved_buffers_and_receives_the_writes() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let root = dir.path().canonicalize().unwrap();
    let calc = root.join("calc.py");
    let notes = root.join("notes.md");
    // The editor holds calc.py changed and unsaved: `sub` is only in its buffer.
    let buffer = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
    let on_disk = std::fs::read_to_string(&calc).unwrap();
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "t", "tool": "edit", "args": {"path": "calc.py", "old_text": "def sub(a, b):\n    return a + b", "new_text": "def sub(a, b):\n    return a - b"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "notes.md", "content": "sub subtracts\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "Fixed sub."}}"#
        ]),
    );
    let report = drive_with(
        &sdk,
        dir.path(),
        &["--mode", "yolo", "--script", script.to_str().unwrap()],
        json!([{"new": true}, {"prompt": "Fix sub in calc.py and write notes.md"}]),
        json!({ calc.display().to_string(): buffer }),
    );
    let steps = report["steps"].as_array().unwrap();
    for step in steps {
        assert!(step["error"].is_null(), "{step}");
    }
    let prompt = &steps[1];
    let results: Vec<&Value> = updates(prompt, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(results.len(), 3, "{prompt}");
    // read_file showed the model the buffer, not the disk.
    let read = results[0]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(read.contains("def sub(a, b):"), "{read}");
    assert!(!on_disk.contains("sub"));

    // Every read and write went through the editor, with the session and absolute paths.
    let session = report["sessionId"].as_str().unwrap();
    let fs = &report["fs"];
    let reads = fs["reads"].as_array().unwrap();
    assert!(!reads.is_empty(), "{fs}");
    for read in reads {
        assert_eq!(read["sessionId"], session, "{fs}");
        assert_eq!(read["path"], calc.display().to_string(), "{fs}");
    }
    let writes: Vec<(&str, &str)> = fs["writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["path"].as_str().unwrap(), w["content"].as_str().unwrap()))
        .collect();
    // The edit applied to the buffer (it matched text that is only there).
    let fixed = buffer.replace("return a + b\n", "return a - b\n");
    let fixed = fixed.replacen("return a - b", "return a + b", 1);
    assert_eq!(
        writes,
        [
            (calc.to_str().unwrap(), fixed.as_str()),
            (notes.to_str().unwrap(), "sub subtracts\n")
        ],
        "{fs}"
    );
}

#[test]
fn a_coding_tasks_plan_reaches_the_editor_as_plan_updates_and_comes_back_on_load() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let plan = |statuses: [&str; 3]| {
        let texts = ["Read calc.py", "Add sub", "Check it"];
        let items: Vec<Value> = texts
            .iter()
            .zip(statuses)
            .map(|(text, status)| json!({"text": text, "status": status}))
            .collect();
        json!({"thought": "t", "tool": "todo", "args": {"items": items}}).to_string()
    };
    let script = write_script(
        dir.path(),
        json!([
            plan(["in_progress", "pending", "pending"]),
            plan(["done", "in_progress", "pending"]),
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "sub.py", "content": "def sub(a, b):\n    return a - b\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "Added sub."}}"#
        ]),
    );
    let report = drive(
        &sdk,
        dir.path(),
        &["--mode", "yolo", "--script", script.to_str().unwrap()],
        json!([
            {"new": true},
            {"prompt": "Add a function sub to calc.py that returns a minus b"}
        ]),
    );
    let steps = report["steps"].as_array().unwrap();
    let task = &steps[1];
    assert!(task["error"].is_null(), "{task}");
    // Each plan whole, as the schema has it (the SDK drops entries it rejects).
    let plans = updates(task, "plan");
    assert_eq!(plans.len(), 2, "{task}");
    let entry = |content: &str, status: &str| json!({"content": content, "priority": "medium", "status": status});
    assert_eq!(
        plans[1]["entries"],
        json!([
            entry("Read calc.py", "completed"),
            entry("Add sub", "in_progress"),
            entry("Check it", "pending")
        ]),
        "{task}"
    );
    assert_eq!(plans[0]["entries"][0]["status"], "in_progress");
    let titles: Vec<&str> = updates(task, "tool_call")
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles[0], "Update the plan", "{task}");

    // Loaded in a new process: the unfinished plan comes back with the conversation.
    let session = report["sessionId"].as_str().unwrap();
    let loaded = drive(
        &sdk,
        dir.path(),
        &["--script", script.to_str().unwrap()],
        json!([{"load": session}]),
    );
    let load = &loaded["steps"][0];
    assert!(load["error"].is_null(), "{load}");
    let plans = updates(load, "plan");
    assert_eq!(plans.len(), 1, "{load}");
    assert_eq!(plans[0]["entries"], json!(plans_last(&report)), "{load}");
}

/// Plan mode from the editor: the modes are offered (the SDK checks their
/// shape), `session/set_mode` picks plan, a planned task writes nothing and
/// its plan is put to the user as a `switch_mode` permission; yes returns
/// to the mode planned from, says so (`current_mode_update`), and carries
/// the plan out, its write asked for as confirm mode asks.
#[test]
fn an_editor_plans_in_plan_mode_and_an_approved_plan_is_carried_out() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripted tests set it up)");
    };
    let dir = repo();
    let write = r#"{"thought": "t", "tool": "write_file", "args": {"path": "sub.py", "content": "def sub(a, b):\n    return a - b\n"}}"#;
    let script = write_script(
        dir.path(),
        json!([
            write,
            r#"{"thought": "t", "tool": "todo", "args": {"items": [{"text": "Add sub to sub.py", "status": "pending"}]}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "Plan: add sub to sub.py."}}"#,
            write,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "Added sub to sub.py."}}"#
        ]),
    );
    let report = drive(
        &sdk,
        dir.path(),
        &["--script", script.to_str().unwrap()],
        json!([
            {"new": true},
            {"setMode": "sudo"},
            {"setMode": "plan"},
            {"prompt": "Add a function sub to sub.py that returns a minus b",
             "answers": ["allow-once", "allow-once"]}
        ]),
    );
    let steps = report["steps"].as_array().unwrap();
    let modes = &steps[0]["result"]["modes"];
    assert_eq!(modes["currentModeId"], "confirm", "{modes}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["confirm", "yolo", "plan", "human"], "{modes}");
    assert!(
        steps[1]["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no mode sudo"),
        "{}",
        steps[1]
    );
    assert!(steps[2]["error"].is_null(), "{}", steps[2]);
    let task = &steps[3];
    assert!(task["error"].is_null(), "{task}");
    let asked = task["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "the plan, then the write: {task}");
    assert_eq!(
        asked[0]["request"]["toolCall"]["kind"], "switch_mode",
        "{task}"
    );
    assert!(
        asked[0]["request"]["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("in confirm mode"),
        "{task}"
    );
    assert_eq!(asked[1]["request"]["toolCall"]["kind"], "edit", "{task}");
    let switched = updates(task, "current_mode_update");
    assert_eq!(switched.len(), 1, "{task}");
    assert_eq!(switched[0]["currentModeId"], "confirm");
    assert!(dir.path().join("sub.py").is_file(), "{task}");
}

/// The entries of the last plan update of the report's second step.
fn plans_last(report: &Value) -> Value {
    updates(&report["steps"][1], "plan")
        .last()
        .map(|p| p["entries"].clone())
        .unwrap_or_default()
}

/// The chat's commands reach the editor's `/` menu, the team's own among
/// them, and run there; a file the user mentions is attached, a secret
/// file never.
#[test]
fn an_editor_offers_the_chats_commands_and_attaches_mentioned_files() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let commands = dir.path().join(".agent/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: review a file for bugs\n---\nReview $ARGUMENTS for bugs.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=sk-secret\n").unwrap();
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py has no bugs"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add in calc.py returns a + b, the sum of its arguments"}}"#
        ]),
    );
    let root = dir.path().canonicalize().unwrap();
    let report = drive(
        &sdk,
        dir.path(),
        &["--script", script.to_str().unwrap()],
        json!([
            {"new": true},
            {"prompt": "/review calc.py"},
            {"prompt": "/tokens"},
            {"prompt": "What does add do?",
             "links": [root.join("calc.py"), root.join(".env")]}
        ]),
    );
    let steps = report["steps"].as_array().unwrap();
    for step in steps {
        assert!(step["error"].is_null(), "{step}");
    }
    // The menu: sent after session/new, so it may land in the next step.
    let menus: Vec<&Value> = steps
        .iter()
        .flat_map(|s| updates(s, "available_commands_update"))
        .collect();
    assert_eq!(menus.len(), 1, "{report}");
    let offered = menus[0]["availableCommands"].as_array().unwrap();
    let names: Vec<&str> = offered
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in ["help", "compact", "rewind", "tokens", "review"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert!(!names.contains(&"exit"), "{names:?}");
    let review = offered.iter().find(|c| c["name"] == "review").unwrap();
    assert_eq!(review["description"], "review a file for bugs");
    let compact = offered.iter().find(|c| c["name"] == "compact").unwrap();
    assert_eq!(compact["input"]["hint"], "[focus]");

    let reviewed = text_of(&steps[1], "agent_message_chunk");
    assert!(
        reviewed.contains("/review: 1 line(s) to the agent"),
        "{reviewed}"
    );
    assert!(reviewed.contains("calc.py has no bugs"), "{reviewed}");
    let tokens = text_of(&steps[2], "agent_message_chunk");
    assert!(tokens.contains("this chat: 1 request(s)"), "{tokens}");
    assert!(tokens.contains("last prompt: "), "{tokens}");

    let mentioned = text_of(&steps[3], "agent_message_chunk");
    assert!(mentioned.contains("attached calc.py"), "{mentioned}");
    assert!(!mentioned.contains("attached .env"), "{mentioned}");
    assert!(mentioned.contains("returns a + b"), "{mentioned}");
    assert!(!report.to_string().contains("sk-secret"), "{report}");
}

/// An exploration reaches the editor as its own `explore` tool call, whose
/// updates carry its steps as they happen and, at the end, its steps above
/// its report; none of its calls is a tool call of the prompt's.
#[test]
fn an_exploration_is_one_tool_call_whose_updates_carry_its_steps() {
    let Some(sdk) = acp_client() else {
        agent_test_support::skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "explore", "args": {"question": "where is add defined?"}}"#,
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py:1 defines add(a, b)"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add is defined in calc.py, line 1"}}"#
        ]),
    );
    let report = drive(
        &sdk,
        dir.path(),
        &["--explore", "on", "--script", script.to_str().unwrap()],
        json!([{"new": true}, {"prompt": "Where is the function add defined?"}]),
    );
    let prompt = &report["steps"][1];
    assert!(prompt["error"].is_null(), "{prompt}");
    let calls = updates(prompt, "tool_call");
    assert_eq!(calls.len(), 1, "{prompt}");
    assert_eq!(
        calls[0]["title"], "Explore: where is add defined?",
        "{prompt}"
    );
    let id = calls[0]["toolCallId"].as_str().unwrap();
    let ours: Vec<&Value> = updates(prompt, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == id)
        .collect();
    let text = |u: &Value| {
        u["content"][0]["content"]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    // While it runs: its steps so far, no status yet.
    let running = ours
        .iter()
        .find(|u| u["status"].is_null() && text(u).contains("● read_file calc.py"))
        .unwrap_or_else(|| panic!("no update with the step: {prompt}"));
    assert!(!text(running).contains("defines add"), "{running}");
    // At the end: completed, its steps, then its report.
    let done = ours.last().unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert!(text(done).contains("● read_file calc.py"), "{done}");
    let report = done["content"][1]["content"]["text"].as_str().unwrap();
    assert_eq!(
        report, "calc.py:1 defines add(a, b)\nRead: calc.py:1-3",
        "{done}"
    );
    let answer = text_of(prompt, "agent_message_chunk");
    assert!(
        answer.contains("add is defined in calc.py, line 1"),
        "{answer}"
    );
    assert!(!answer.contains("defines add"), "{answer}");
}
