//! `agent ask`, `agent chat` and `agent sessions` through the real binary:
//! replayed sessions (`--script`) and the real tiny model end to end.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

pub(crate) fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    \"\"\"Sum of two numbers.\"\"\"\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "# calc\nA tiny calculator.\n").unwrap();
    dir
}

/// Model turns for `--script`, as `turns.json` in `dir`.
pub(crate) fn write_script(dir: &Path, turns: Value) -> std::path::PathBuf {
    let path = dir.join("turns.json");
    std::fs::write(&path, turns.to_string()).unwrap();
    path
}

/// The binary in `dir`, with a configuration folder of that repository's
/// own (trusted MCP servers, personal instructions): tests run side by side.
pub(crate) fn agent_in(dir: &Path) -> Command {
    let mut cmd = common::agent_bin();
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .env("XDG_CONFIG_HOME", dir.join(".git/test-config"));
    cmd
}

/// `agent mcp trust NAMES` in `dir`.
pub(crate) fn trust(dir: &Path, names: &[&str]) {
    let out = agent_in(dir)
        .args(["mcp", "trust"])
        .args(names)
        .output()
        .unwrap();
    common::assert_success(&out);
}

pub(crate) fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The events of a stream-json run, one JSON object a line.
pub(crate) fn events_of(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// `agent ask FLAGS --mode yolo` in `dir`, with `script` playing the model.
pub(crate) fn ask_yolo(
    dir: &Path,
    script: &Path,
    flags: &[&str],
    request: &str,
) -> std::process::Output {
    agent_in(dir)
        .arg("ask")
        .args(flags)
        .args(["--mode", "yolo", "--script"])
        .arg(script)
        .arg(request)
        .output()
        .unwrap()
}

/// A replay: write `new.py` (`x = 1`), then answer "wrote new.py".
pub(crate) fn writes_new_py(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        serde_json::json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote new.py"}}"#
        ]),
    )
}

/// A replay: grep for `def add`, then answer.
fn grep_then_finish(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        serde_json::json!([
            {"content": r#"{"thought": "look", "tool": "grep", "args": {"pattern": "def add"}}"#},
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "add is in calc.py"}}"#
        ]),
    )
}

#[test]
fn a_replayed_session_prints_the_json_contract_and_is_saved() {
    let dir = repo();
    let script = grep_then_finish(dir.path());
    let out = ask_yolo(
        dir.path(),
        &script,
        &["--json"],
        "Where is the function add defined?",
    );
    common::assert_success(&out);
    let v = json_of(&out);
    assert_eq!(v["answer"], "add is in calc.py");
    assert_eq!(v["finish"], "answered");
    assert_eq!(v["intent"]["label"], "REPO_QUESTION");
    assert_eq!(v["tool_calls"], 1);
    assert_eq!(v["invalid_tool_calls"], 0);
    for key in [
        "steps",
        "prompt_tokens",
        "completion_tokens",
        "session_id",
        "trace_id",
        "changed_files",
    ] {
        assert!(!v[key].is_null(), "{key} missing: {v}");
    }

    let list = agent_in(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let sessions = json_of(&list);
    assert_eq!(sessions[0]["id"], v["session_id"]);
    let show = agent_in(dir.path())
        .args(["sessions", "show"])
        .arg(v["session_id"].as_str().unwrap())
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("def add"), "{show}");
    // The session's context shows on its own, the request as it was asked.
    assert!(
        show.contains("── context · ")
            && show.contains("Environment:")
            && !show.contains("<context>"),
        "{show}"
    );
    let request = show.split("── request · ").nth(1).unwrap();
    assert!(
        request
            .split_once('\n')
            .unwrap()
            .1
            .starts_with("Where is the function add defined?"),
        "{show}"
    );
    // The system prompt, the same few KB in every session, is folded.
    let shown = agent_in(dir.path())
        .args(["sessions", "show", "--json"])
        .arg(v["session_id"].as_str().unwrap())
        .output()
        .unwrap();
    let system = json_of(&shown)["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let opening: String = system.chars().take(60).collect();
    assert!(system.len() > 500, "{system}");
    assert!(!show.contains(&opening), "{show}");
    assert!(
        show.contains("── system · ") && show.contains(" characters;"),
        "{show}"
    );

    // The session changed nothing: undoing it says so, and is not a success.
    let undo = agent_in(dir.path())
        .args(["sessions", "undo"])
        .arg(v["session_id"].as_str().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&undo.stderr);
    assert_eq!(undo.status.code(), Some(3), "{err}");
    assert!(err.contains("nothing to undo"), "{err}");
}

#[test]
fn stream_json_prints_one_event_per_line_as_it_happens() {
    let dir = repo();
    let script = grep_then_finish(dir.path());
    let out = ask_yolo(
        dir.path(),
        &script,
        &["--output-format", "stream-json"],
        "Where is the function add defined?",
    );
    common::assert_success(&out);
    let events = events_of(&out);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert!(at("intent") < at("tool_call"), "{kinds:?}");
    assert!(at("tool_call") < at("tool_result"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"final"), "{kinds:?}");
    let result = &events[at("tool_result")];
    assert_eq!(result["tool"], "grep");
    assert!(
        result["content"].as_str().unwrap().contains("calc.py"),
        "{result}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["answer"], "add is in calc.py");
    assert_eq!(last["finish"], "answered");
}

/// The Python that runs the test MCP server (set up by scripts/test).
pub(crate) fn mcp_python() -> Option<String> {
    let python = std::env::var("AGENT_TEST_MCP_PYTHON").ok()?;
    let ok = Command::new(&python)
        .args(["-c", "import mcp.server.fastmcp"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "AGENT_TEST_MCP_PYTHON={python} cannot import mcp");
    Some(python)
}

#[test]
fn a_real_mcp_server_lends_its_tools_and_a_crash_leaves_the_session_alive() {
    let Some(python) = mcp_python() else {
        agent_test_support::skip!("AGENT_TEST_MCP_PYTHON is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    std::fs::write(
        dir.path().join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "tickets": {"command": python, "args": [server]},
            "broken": {"command": "/definitely/not/a/server"}
        }})
        .to_string(),
    )
    .unwrap();

    trust(dir.path(), &["tickets", "broken"]);
    let out = agent_in(dir.path())
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a server failed to start");
    let servers = json_of(&out);
    let by_name = |n: &str| {
        servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .unwrap()
            .clone()
    };
    let tickets = by_name("tickets");
    assert_eq!(tickets["state"], "running", "{servers}");
    let tools: Vec<(&str, bool)> = tickets["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["read_only"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        tools.contains(&("lookup", true)) && tools.contains(&("close", false)),
        "{tools:?}"
    );
    assert_eq!(by_name("broken")["state"], "failed", "{servers}");
    assert!(
        by_name("broken")["reason"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{servers}"
    );

    // A replayed session: a read-only call, a call that changes things, a
    // crash mid-call, then the answer.
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "mcp__tickets__lookup", "args": {"ticket": 7}}"#,
            r#"{"thought": "t", "tool": "mcp__tickets__close", "args": {"ticket": 7, "reason": "fixed"}}"#,
            r#"{"thought": "t", "tool": "mcp__tickets__crash", "args": {}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "closed ticket 7: the login page times out"}}"#
        ]),
    );
    let out = ask_yolo(
        dir.path(),
        &script,
        &["--json"],
        "Fix the login timeout, then close ticket 7",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MCP server broken"), "{stderr}");
    common::assert_success(&out);
    let v = json_of(&out);
    assert_eq!(v["finish"], "answered", "{v}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("closed.txt")).unwrap(),
        "7 fixed\n"
    );
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    let results: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "tool_result")
        .collect();
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("login page times out"),
        "{:?}",
        results[0]
    );
    assert_eq!(results[1]["ok"], true);
    let crash = results[2]["content"].as_str().unwrap();
    assert!(
        results[2]["ok"] == false && crash.contains("stopped"),
        "{crash}"
    );

    // Confirm mode without a terminal: the read-only tool runs, the other is declined.
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "mcp__tickets__lookup", "args": {"ticket": 8}}"#,
            r#"{"thought": "t", "tool": "mcp__tickets__close", "args": {"ticket": 8, "reason": "dup"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "ticket 8: the login page times out; not closed"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("Fix the login timeout, then close ticket 8")
        .output()
        .unwrap();
    // Its one action declined, the task is not done (exit 3).
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json_of(&out)["finish"], "not_done");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("closed.txt")).unwrap(),
        "7 fixed\n"
    );
}

#[test]
fn mcp_servers_that_hang_or_speak_garbage_are_reported_not_waited_on_forever() {
    let dir = repo();
    std::fs::write(
        dir.path().join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "hangs": {"command": "sleep", "args": ["317"], "startup_timeout_s": 2},
            "garbage": {"command": "sh", "args": ["-c", "while true; do echo not-json; sleep 0.01; done"], "startup_timeout_s": 2},
            "exits": {"command": "sh", "args": ["-c", "exit 1"]}
        }})
        .to_string(),
    )
    .unwrap();
    trust(dir.path(), &["hangs", "garbage", "exits"]);
    let started = std::time::Instant::now();
    let out = agent_in(dir.path())
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let servers = json_of(&out);
    for s in servers.as_array().unwrap() {
        assert_ne!(s["state"], "running", "{s}");
    }
    // They start side by side, each within its startup_timeout_s.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // None is left running.
    let left = Command::new("pgrep")
        .args(["-f", "^sleep 317$"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    // A session goes on without them.
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("Where is add defined?")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MCP server hangs"), "{stderr}");
    assert_ne!(out.status.code(), Some(1), "{stderr}");
}

#[test]
fn without_a_terminal_confirm_mode_declines_writes() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "new.py was not written: the user declined the change"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--script"])
        .arg(&script)
        .arg("Create new.py with x = 1")
        .output()
        .unwrap();
    // Every change declined: not done (exit 3, as for no answer).
    assert_eq!(out.status.code(), Some(3));
    assert!(!dir.path().join("new.py").exists());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--mode yolo"), "{err}");
    // Said plainly: nothing was changed.
    assert!(err.contains("not done: no file was changed"), "{err}");
    assert!(
        err.contains("0 files changed (1 change(s) or command(s) declined)"),
        "{err}"
    );
}

/// `cmd` on a pseudo-terminal (util-linux `script`), with what it prints;
/// `key` is typed once `prompt` shows. Killed after `limit`.
fn on_a_terminal(
    dir: &Path,
    cmd: &str,
    prompt: &str,
    key: &str,
    limit: std::time::Duration,
) -> (Option<i32>, String) {
    answering_on_a_terminal(dir, cmd, &[(prompt, key)], limit)
}

/// As [`on_a_terminal`], with answers typed in turn: each key once its
/// prompt shows after the previous answer.
fn answering_on_a_terminal(
    dir: &Path,
    cmd: &str,
    answers: &[(&str, &str)],
    limit: std::time::Duration,
) -> (Option<i32>, String) {
    use std::io::{Read, Write};
    let mut child = Command::new("script")
        .args(["-qfec", cmd, "/dev/null"])
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join(".git/test-config"))
        .envs(common::state_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux `script` runs");
    let mut stdout = child.stdout.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let started = std::time::Instant::now();
    let (mut answered, mut from) = (0, 0);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        let shown = seen.lock().unwrap().clone();
        if let Some((prompt, key)) = answers.get(answered) {
            if shown[from..].contains(prompt) {
                stdin.write_all(key.as_bytes()).unwrap();
                stdin.flush().unwrap();
                (answered, from) = (answered + 1, shown.len());
            }
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(stdin);
    let _ = reader.join();
    let text = seen.lock().unwrap().clone();
    (code, text)
}

#[test]
fn the_confirm_prompt_takes_one_key_without_enter_on_a_terminal() {
    let dir = repo();
    let script = writes_new_py(dir.path());
    let cmd = format!(
        "{} ask --script {} 'Create new.py with x = 1'",
        env!("CARGO_BIN_EXE_agent"),
        script.display()
    );
    // "y" alone: a prompt that waits for Enter never sees an answer.
    let (code, text) = on_a_terminal(
        dir.path(),
        &cmd,
        "[a]lways",
        "y",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 1\n"
    );

    // "n" alone declines.
    std::fs::remove_file(dir.path().join("new.py")).unwrap();
    let (code, text) = on_a_terminal(
        dir.path(),
        &cmd,
        "[a]lways",
        "n",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, Some(3), "{text}");
    assert!(!dir.path().join("new.py").exists(), "{text}");
}

/// A replay whose second turn is slow (a model writing a long call): the
/// first turn's grep finds `def add`.
fn slow_second_turn(dir: &Path) -> std::path::PathBuf {
    let thought = "the grep found it but I will read the whole file first ".repeat(6);
    let call =
        serde_json::json!({"thought": thought, "tool": "read_file", "args": {"path": "calc.py"}});
    write_script(
        dir,
        serde_json::json!([
            r#"{"thought": "t", "tool": "grep", "args": {"pattern": "def add"}}"#,
            {"content": call.to_string(), "pace_ms": 250},
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add"}}"#
        ]),
    )
}

/// SIGINT, as Ctrl-C or `timeout` send it.
fn interrupt(child: &std::process::Child) {
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn an_interrupted_request_prints_what_the_tools_found() {
    use std::io::Read;
    let dir = repo();
    let script = slow_second_turn(dir.path());
    let mut child = agent_in(dir.path())
        .args(["ask", "--script"])
        .arg(&script)
        .arg("Where is add defined in calc.py?")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The grep is instant; the second turn takes over ten seconds.
    std::thread::sleep(std::time::Duration::from_secs(3));
    interrupt(&child);
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("(stopped)"), "{stderr}");
    assert!(
        stdout.contains("the request was interrupted") && stdout.contains("calc.py:1"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
}

#[test]
fn stream_json_reports_progress_while_the_model_writes_a_call() {
    use std::io::BufRead;
    let dir = repo();
    let script = slow_second_turn(dir.path());
    let mut child = agent_in(dir.path())
        .args(["ask", "--output-format", "stream-json", "--script"])
        .arg(&script)
        .arg("Where is add defined in calc.py?")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<(std::time::Instant, Value)> = Vec::new();
    let mut progress = 0;
    for line in lines {
        let event: Value = serde_json::from_str(&line.unwrap()).expect("one JSON event a line");
        if event["type"] == "progress" {
            progress += 1;
            if progress == 2 {
                interrupt(&child);
            }
        }
        events.push((std::time::Instant::now(), event));
    }
    let status = child.wait().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(status.code(), Some(130), "{kinds:?}");
    // The second step: its start, then a progress event at most every few
    // seconds, counting tokens, while nothing else is shown.
    let start = events
        .iter()
        .position(|(_, e)| e["type"] == "step" && e["step"] == 2)
        .unwrap_or_else(|| panic!("{kinds:?}"));
    let mut last = events[start].0;
    let mut tokens = 0;
    for (at, e) in events[start + 1..]
        .iter()
        .filter(|(_, e)| e["type"] == "progress")
    {
        assert!(
            at.duration_since(last) < std::time::Duration::from_secs(4),
            "{kinds:?}"
        );
        assert_eq!(e["step"], 2);
        let now = e["tokens"].as_u64().unwrap();
        assert!(now > tokens, "{e}");
        (last, tokens) = (*at, now);
    }
    assert!(progress >= 2, "{kinds:?}");
    // The final event keeps what the grep found.
    let last = &events.last().unwrap().1;
    assert_eq!(last["type"], "final");
    assert_eq!(last["finish"], "cancelled");
    assert!(
        last["answer"].as_str().unwrap().contains("calc.py:1"),
        "{last}"
    );
}

#[test]
fn a_coding_task_whose_changes_were_all_refused_is_not_done() {
    let dir = repo();
    // The edit is refused (calc.py was not read first); the model claims success anyway.
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "edit", "args": {"path": "calc.py", "old_text": "a + b", "new_text": "a + b + 0"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py: add now returns a + b + 0"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("In calc.py, make add also add zero")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    // The claim is not printed as the answer; why it is not done is.
    assert!(!stdout.contains("a + b + 0"), "{stdout}");
    assert!(!stderr.contains("now returns"), "{stderr}");
    assert!(
        stderr.contains(
            "not done: no file was changed; 1 change(s) refused: you have not read calc.py yet"
        ),
        "{stderr}"
    );
    assert!(std::fs::read_to_string(dir.path().join("calc.py"))
        .unwrap()
        .contains("return a + b\n"));

    // --json says the same: finish "not_done", the reason as the answer.
    let out = ask_yolo(
        dir.path(),
        &script,
        &["--json"],
        "In calc.py, make add also add zero",
    );
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["finish"], "not_done", "{v}");
    assert!(v["answer"].as_str().unwrap().starts_with("not done"), "{v}");
}

#[test]
fn an_unknown_session_is_a_clear_error() {
    let dir = repo();
    let out = agent_in(dir.path())
        .args(["chat", "--resume", "nope", "--script", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent sessions list"));
}

#[test]
fn the_real_tiny_model_runs_the_loop_end_to_end() {
    let dir = repo();
    // With an index, the request starts from its best matches (prefetch).
    let indexed = agent_in(dir.path()).arg("index").output().unwrap();
    assert!(indexed.status.success(), "{indexed:?}");
    let out = agent_in(dir.path())
        .args([
            "ask",
            "--json",
            "--mode",
            "yolo",
            "--max-steps",
            "3",
            "--max-tokens",
            "160",
        ])
        .arg("--model")
        .arg(common::tiny_model())
        .arg("Where is the function add defined?")
        .output()
        .unwrap();
    let v = json_of(&out);
    // The last step may only be `finish`, so even a 135M model answers; if
    // its answer is no answer (an echo, our own prompt, nothing about the
    // code), the request exits with 3 and shows the search results.
    let answer = v["answer"].as_str().unwrap();
    match v["finish"].as_str() {
        Some("answered") => {
            assert!(!answer.trim().is_empty(), "{v}");
            assert_eq!(out.status.code(), Some(0));
        }
        Some("evidence") => {
            assert!(answer.contains("calc.py"), "{v}");
            assert_eq!(out.status.code(), Some(3));
        }
        _ => panic!("no answer: {v}"),
    }
    // Every call was generated under the grammar, so every call parsed.
    assert_eq!(v["invalid_tool_calls"], 0, "{v}");
    assert!(v["steps"].as_u64().unwrap() >= 1);
    assert!(v["completion_tokens"].as_u64().unwrap() > 0);

    let logs = common::state_dir(dir.path()).join("logs");
    let audit = std::fs::read_to_string(logs.join("audit.jsonl")).unwrap();
    let trace = std::fs::read_to_string(logs.join("trace.jsonl")).unwrap();
    assert!(audit.contains("\"event\":\"intent\""));
    assert!(audit.contains("\"event\":\"final\""));
    assert!(trace.contains("\"event\":\"llm_response\""));
    assert!(common::state_dir(dir.path())
        .join("sessions.sqlite")
        .is_file());
    // A question never changes files.
    assert_eq!(v["changed_files"].as_array().unwrap().len(), 0);
}

#[test]
fn an_exported_session_replays_to_the_same_result() {
    let first = repo();
    let script = write_script(
        first.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "t", "tool": "edit", "args": {"path": "calc.py", "old_text": "return a + b", "new_text": "return b + a"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "swapped"}}"#
        ]),
    );
    let request = "Swap the operands in add in calc.py";
    let run = |dir: &Path, script: &Path| {
        let out = ask_yolo(dir, script, &["--json"], request);
        common::assert_success(&out);
        json_of(&out)
    };
    let original = run(first.path(), &script);
    let exported = agent_in(first.path())
        .args(["sessions", "show", "--script"])
        .arg(original["session_id"].as_str().unwrap())
        .output()
        .unwrap();
    let second = repo();
    let replay_script = second.path().join("replay.json");
    std::fs::write(&replay_script, &exported.stdout).unwrap();
    let replayed = run(second.path(), &replay_script);
    assert_eq!(replayed["answer"], original["answer"]);
    assert_eq!(replayed["changed_files"], original["changed_files"]);
    assert_eq!(
        std::fs::read_to_string(first.path().join("calc.py")).unwrap(),
        std::fs::read_to_string(second.path().join("calc.py")).unwrap()
    );
}

#[test]
fn an_answer_that_is_our_own_prompt_exits_3_and_says_so() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "grep", "args": {"pattern": "def add"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "This is the finish call with your best answer."}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "finiSh"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--max-steps", "3", "--script"])
        .arg(&script)
        .arg("Where is the function add defined?")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    assert_eq!(v["finish"], "evidence");
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("own instructions"), "{answer}");
    assert!(answer.contains("calc.py"), "{answer}");
    // With grep's results in hand, the first refused answer ends it (issue
    // 53: twelve refused answers took four minutes).
    assert_eq!(v["steps"], 2, "{v}");
}

#[test]
fn a_question_about_the_folder_reads_the_repository_and_no_project_says_so() {
    // Issue 53: "What is in this folder?" was chat, answered from nothing.
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add; README.md describes a calculator."}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("What is in this folder?")
        .output()
        .unwrap();
    common::assert_success(&out);
    let v = json_of(&out);
    assert_eq!(v["intent"]["label"], "REPO_QUESTION", "{v}");
    assert_eq!(v["tools"], "read-only", "{v}");

    // A folder that is no project: no version control, no manifest, no code.
    let bare = tempfile::tempdir().unwrap();
    std::fs::write(bare.path().join("data.json"), r#"{"items": [1, 2]}"#).unwrap();
    let out = common::agent_bin()
        .current_dir(bare.path())
        .stdin(Stdio::null())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("What is in this folder?")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    assert_eq!(v["finish"], "no_answer", "{v}");
    assert_eq!(v["steps"], 0, "the model was not asked to make it up: {v}");
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("no project here"), "{answer}");
    assert!(answer.contains("git init"), "{answer}");
    // What still works there still works: a task that creates a file.
    let out = common::agent_bin()
        .current_dir(bare.path())
        .stdin(Stdio::null())
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(writes_new_py(bare.path()))
        .arg("Create new.py with x = 1")
        .output()
        .unwrap();
    common::assert_success(&out);
    assert!(bare.path().join("new.py").exists());
}

#[test]
fn the_terminal_shows_read_only_access_and_a_stats_line() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add is in calc.py"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--script"])
        .arg(&script)
        .arg("Where is the function add defined?")
        .output()
        .unwrap();
    common::assert_success(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "add is in calc.py"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("read-only: this looks like a question"),
        "{err}"
    );
    let stats = err
        .lines()
        .find(|l| l.contains("prompt tokens"))
        .unwrap_or_else(|| panic!("no stats line: {err}"));
    assert!(
        stats.contains("generated") && stats.contains("1 step") && stats.contains(" s "),
        "{stats}"
    );
    assert!(stats.contains("tokens/s"), "{stats}");
}

/// `agent chat --script` with `input` on stdin; returns stderr.
fn chat(dir: &Path, script: &Path, extra: &[&str], input: &str) -> String {
    let out = common::output_with_input(
        common::agent_bin()
            .current_dir(dir)
            .args(["chat", "--mode", "yolo", "--script"])
            .arg(script)
            .args(extra),
        input.as_bytes(),
    );
    common::assert_success(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn chat_commands_never_reach_the_model_and_empty_lines_do_not_quit() {
    let dir = repo();
    // No model turns at all: anything sent to the model would fail.
    let script = write_script(dir.path(), serde_json::json!([]));
    let err = chat(
        dir.path(),
        &script,
        &[],
        "/help\n\n   \n/tokens\n/model\n/bogus\n/exit/exit\n/clear\n/exit\n",
    );
    assert!(err.contains("/undo"), "{err}");
    assert!(err.contains("context now:"), "{err}");
    assert!(err.contains("context window:"), "{err}");
    assert!(err.contains("unknown command /bogus"), "{err}");
    // A typo is no command to create (issue 53).
    assert!(
        err.contains("unknown command /exit/exit; /help lists the commands\n"),
        "{err}"
    );
    assert!(!err.contains("exit/exit.md"), "{err}");
    assert!(err.contains("new conversation"), "{err}");
    assert!(!err.contains("error:"), "{err}");
}

#[test]
fn chat_undo_reverts_the_last_change_and_resume_shows_the_last_turns() {
    let dir = repo();
    let script = writes_new_py(dir.path());
    let err = chat(
        dir.path(),
        &script,
        &[],
        "Create new.py with x = 1\n/undo\n/exit\n",
    );
    assert!(err.contains("1 file changed: new.py"), "{err}");
    assert!(!dir.path().join("new.py").exists(), "{err}");

    let empty = write_script(dir.path(), serde_json::json!([]));
    let err = chat(dir.path(), &empty, &["--resume"], "/exit\n");
    assert!(err.contains("resumed session"), "{err}");
    assert!(err.contains("› Create new.py with x = 1"), "{err}");
    // The session's context went to the model with the request, not to the screen.
    assert!(
        !err.contains("<context>") && !err.contains("Environment:"),
        "{err}"
    );
    // The change is gone, and the resumed chat says so.
    assert!(err.contains("wrote new.py [undone with /undo]"), "{err}");
}

/// Every file of the workspace but `.git`, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            } else if path.is_dir() {
                folders.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn chat_rewind_restores_the_tree_and_the_conversation_and_resume_goes_on_from_there() {
    let dir = repo();
    // The scripts live outside the workspace, whose tree is compared.
    let scripts = tempfile::tempdir().unwrap();
    let call = |tool: &str, args: Value| {
        serde_json::json!({"thought": "t", "tool": tool, "args": args}).to_string()
    };
    let finish = |answer: &str| call("finish", serde_json::json!({ "answer": answer }));
    let first = write_script(
        scripts.path(),
        serde_json::json!([
            call(
                "write_file",
                serde_json::json!({"path": "one.txt", "content": "1\n"})
            ),
            finish("wrote one.txt")
        ]),
    );
    let before_first = tree(dir.path());
    chat(dir.path(), &first, &[], "Create one.txt with 1\n/exit\n");
    let before_second = tree(dir.path());

    // Requests 2 and 3, in a resumed chat: an edit, a new file in new
    // folders, a deletion, then the first file again; then back to before 2.
    let second = write_script(
        scripts.path(),
        serde_json::json!([
            call("read_file", serde_json::json!({"path": "calc.py"})),
            call(
                "edit",
                serde_json::json!({"path": "calc.py", "old_text": "return a + b", "new_text": "return b + a"})
            ),
            call(
                "write_file",
                serde_json::json!({"path": "deep/new/two.txt", "content": "2\n"})
            ),
            call("read_file", serde_json::json!({"path": "README.md"})),
            call(
                "apply_patch",
                serde_json::json!({"patch": "*** Begin Patch\n*** Delete File: README.md\n*** End Patch"})
            ),
            finish("edited calc.py, wrote two.txt, deleted README.md"),
            call(
                "write_file",
                serde_json::json!({"path": "one.txt", "content": "3\n"})
            ),
            finish("rewrote one.txt")
        ]),
    );
    let err = chat(
        dir.path(),
        &second,
        &["--resume"],
        "Change add in calc.py to return b + a, create deep/new/two.txt and delete README.md\n\
         Create one.txt with 3\n/rewind 9\n/rewind x\n/rewind 2 --files\n/exit\n",
    );
    assert!(
        err.contains("no request 9 to rewind to: this conversation has 3 (1 to 3)"),
        "{err}"
    );
    assert!(err.contains("usage: /rewind [N [--files]]"), "{err}");
    assert!(
        err.contains("rewound to before request 2 (Change add in calc.py")
            && err.contains("2 request(s) dropped; files restored:"),
        "{err}"
    );
    assert_eq!(
        tree(dir.path()),
        before_second,
        "the tree is not as before request 2:\n{err}"
    );

    // Resumed: request 1 only; the list asks, Enter and a bad answer cancel.
    let third = write_script(
        scripts.path(),
        serde_json::json!([finish("after the rewind")]),
    );
    let err = chat(
        dir.path(),
        &third,
        &["--resume"],
        "/rewind\n\n/rewind\nx\nWhat now?\n/exit\n",
    );
    assert!(err.contains("› Create one.txt with 1"), "{err}");
    assert!(!err.contains("› Change add"), "{err}");
    assert!(
        err.contains("  1  Create one.txt with 1  (1 file change)"),
        "{err}"
    );
    assert!(!err.contains("  2  "), "{err}");
    assert!(
        err.contains("nothing rewound") && err.contains("x is not in the list"),
        "{err}"
    );

    // What the model was sent next: request 1, then the new one.
    let out = agent_in(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let id = json_of(&out)[0]["id"].as_str().unwrap().to_string();
    let out = agent_in(dir.path())
        .args(["sessions", "show", &id, "--json"])
        .output()
        .unwrap();
    let messages = json_of(&out)["messages"].as_array().unwrap().clone();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    let rewind = kinds
        .iter()
        .position(|k| *k == "rewind")
        .expect("the rewind is recorded");
    let after: Vec<&str> = messages[rewind + 1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(after[0].starts_with("What now?"), "{after:?}");
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    assert!(audit.contains("\"user_rewind\""), "{audit}");

    // Asked in lines: to before request 1, files too: the tree as it began.
    let none = write_script(scripts.path(), serde_json::json!([]));
    let err = chat(dir.path(), &none, &["--resume"], "/rewind\n1\ny\n/exit\n");
    assert!(err.contains("restore files too? [y/N]"), "{err}");
    assert!(err.contains("rewound to before request 1"), "{err}");
    assert_eq!(tree(dir.path()), before_first, "{err}");
}

#[test]
fn undo_in_a_new_chat_leaves_an_earlier_runs_change_and_names_it() {
    let dir = repo();
    let script = writes_new_py(dir.path());
    let out = ask_yolo(dir.path(), &script, &["--json"], "Create new.py with x = 1");
    common::assert_success(&out);
    let earlier = json_of(&out)["session_id"].as_str().unwrap().to_string();
    assert!(dir.path().join("new.py").exists());

    // A new chat did not make that change: /undo says whose it is.
    let empty = write_script(dir.path(), serde_json::json!([]));
    let err = chat(dir.path(), &empty, &[], "/undo\n/exit\n");
    assert!(dir.path().join("new.py").exists(), "{err}");
    assert!(
        err.contains(&format!("made by session {earlier}"))
            && err.contains(&format!("agent sessions undo {earlier}")),
        "{err}"
    );

    // Named, it is undone.
    let out = agent_in(dir.path())
        .args(["sessions", "undo", &earlier])
        .output()
        .unwrap();
    common::assert_success(&out);
    assert!(!dir.path().join("new.py").exists());
    let out = agent_in(dir.path())
        .args(["sessions", "undo", "no-such-session"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent sessions list"));
}

#[test]
fn secrets_never_reach_commands_or_the_logs() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "env; cat .env.local; tr '\\0' '\\n' < /proc/$PPID/environ | grep s3cr3t || true"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "ran env in calc.py's folder"}}"#
        ]),
    );
    std::fs::write(dir.path().join(".env.local"), "DB_PASS=s3cr3t-v4lue-42\n").unwrap();
    let out = agent_in(dir.path())
        .env("DB_PASS", "s3cr3t-v4lue-42")
        .env("REDIS_URL", "redis://:hunter2hunter2@cache:6379/0")
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Run env and fix calc.py")
        .output()
        .unwrap();
    common::assert_success(&out);
    let logs = common::state_dir(dir.path()).join("logs");
    let audit = std::fs::read_to_string(logs.join("audit.jsonl")).unwrap();
    assert!(audit.contains("[redacted]"), "{audit}");
    for secret in ["s3cr3t-v4lue-42", "hunter2hunter2", "REDIS_URL="] {
        assert!(!audit.contains(secret), "{secret} in the audit log");
    }
    let show = agent_in(dir.path())
        .args(["sessions", "show"])
        .arg(json_of(&out)["session_id"].as_str().unwrap())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&show.stdout).contains("s3cr3t-v4lue-42"));
}

/// `--script` with `--chat-template-file`: turns written in Qwen3's own
/// syntax, thinking first, reach the real tools; the call inside the think
/// block is not made; `--json` counts the reasoning tokens.
#[test]
fn a_replay_in_a_templates_own_syntax_reaches_the_tools_and_counts_reasoning() {
    let dir = repo();
    let template = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/agent-chat/tests/fixtures/templates/Qwen-Qwen3-0.6B.jinja");
    let script = write_script(
        dir.path(),
        serde_json::json!([
            "<think>\nMaybe <tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"README.md\"}}\n</tool_call>\n</think>\n\n<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"def add\"}}\n</tool_call>",
            "<think>\nfound it\n</think>\n\nadd is in calc.py"
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("--chat-template-file")
        .arg(&template)
        .arg("Where is the function add defined?")
        .output()
        .unwrap();
    common::assert_success(&out);
    let v = json_of(&out);
    assert_eq!(v["answer"], "add is in calc.py");
    assert_eq!(
        (v["tool_calls"].as_u64(), v["invalid_tool_calls"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(v["reasoning_tokens"].as_u64().unwrap() > 0, "{v}");
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    assert!(audit.contains("\"tool\":\"grep\""), "{audit}");
    assert!(!audit.contains("\"tool\":\"read_file\""), "{audit}");
}

/// `agent sessions list` titles a session with the user's words, the
/// mention as typed, never with a file attached to them (issue 53: a
/// chat's first `@file` request was titled with the file's text).
#[test]
fn a_session_is_titled_with_the_request_not_its_attached_files() {
    let dir = repo();
    let script = grep_then_finish(dir.path());
    let request = "Where is add in @calc.py defined?";
    let out = ask_yolo(
        dir.path(),
        &script,
        &["--json", "--file", "README.md"],
        request,
    );
    common::assert_success(&out);
    let id = json_of(&out)["session_id"].clone();
    let list = agent_in(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let sessions = json_of(&list);
    assert_eq!(sessions[0]["id"], id);
    assert_eq!(sessions[0]["title"], request);
}

/// A planned task's turns: a write the plan mode does not offer, the plan,
/// its summary; then, carried out, the write and its answer.
pub(crate) fn plans_then_writes_new_py(dir: &Path) -> std::path::PathBuf {
    let write = r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#;
    write_script(
        dir,
        serde_json::json!([
            write,
            r#"{"thought": "t", "tool": "todo", "args": {"items": [{"text": "Create new.py holding x = 1", "status": "pending"}]}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "Plan: create new.py with x = 1."}}"#,
            write,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote new.py"}}"#
        ]),
    )
}

/// `agent ask --mode plan` (issue 56): for a script, the plan as JSON
/// (`planned`, `plan`), nothing written, and how to carry it out on stderr;
/// on a terminal, the plan is asked about, and yes carries it out in
/// confirm mode, whose write is asked for too.
#[test]
fn ask_in_plan_mode_prints_the_plan_and_carries_it_out_on_a_yes() {
    let dir = repo();
    let script = plans_then_writes_new_py(dir.path());
    let script = script.to_str().unwrap();
    let out = agent_in(dir.path())
        .args(["ask", "--mode", "plan", "--json", "--script", script])
        .arg("Create new.py with x = 1")
        .output()
        .unwrap();
    common::assert_success(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["planned"], true, "{report}");
    assert_eq!(report["plan"][0]["text"], "Create new.py holding x = 1");
    assert_eq!(
        report["tools"], "plan",
        "the write was not offered: {report}"
    );
    assert!(!dir.path().join("new.py").exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("plan mode: nothing was changed") && stderr.contains("agent chat --resume"),
        "{stderr}"
    );

    // On a terminal: a yes to the plan (a line), then to its write (a key).
    let cmd = format!(
        "{} ask --mode plan --script {script} 'Create new.py with x = 1'",
        env!("CARGO_BIN_EXE_agent"),
    );
    let (code, text) = answering_on_a_terminal(
        dir.path(),
        &cmd,
        &[("in confirm mode?", "y\n"), ("[a]lways", "y")],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 1\n",
        "{text}"
    );
    assert!(!text.contains("plan mode: nothing was changed"), "{text}");
    assert!(
        text.contains("plan mode: the agent reads and writes a plan")
            && !text.contains("read-only"),
        "{text}"
    );
}

/// The administrator's `require_plan`: a coding task in confirm mode is
/// planned first, and a script (no one to approve) gets the plan only.
#[test]
fn an_administrator_who_requires_plans_gets_the_plan_first() {
    let dir = repo();
    let managed = dir.path().join(".git/managed.toml");
    std::fs::write(&managed, "require_plan = true\n").unwrap();
    let script = plans_then_writes_new_py(dir.path());
    let out = agent_in(dir.path())
        .env("AGENT_MANAGED_CONFIG", &managed)
        .args(["ask", "--json", "--script", script.to_str().unwrap()])
        .arg("Create new.py with x = 1")
        .output()
        .unwrap();
    common::assert_success(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["planned"], true, "{report}");
    assert!(!dir.path().join("new.py").exists());
}

/// Found running the quick start: "What does this project do?" was
/// answered (exit 3, the evidence) with a test fixture's list of such
/// questions, which repeats the question's words; the README, which
/// answers it, came fourth. A question about the whole workspace reads the
/// README's opening first.
#[test]
fn a_question_about_the_whole_project_reads_its_readme_first() {
    let dir = repo();
    std::fs::write(
        dir.path().join("test_intents.py"),
        "PHRASES = ['what does this project do', 'what does this project do here']\n",
    )
    .unwrap();
    let echo =
        r#"{"thought": "t", "tool": "finish", "args": {"answer": "What does this project do?"}}"#;
    let script = write_script(dir.path(), serde_json::json!([echo, echo]));
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("What does this project do?")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    let answer = v["answer"].as_str().unwrap();
    assert!(answer.contains("What was found:"), "{answer}");
    assert!(answer.contains("A tiny calculator."), "{answer}");
    assert!(!answer.contains("PHRASES"), "{answer}");
}
