//! Background commands through the real binary (`run_cmd` with
//! `background: true`, replayed): whether the agent ends by itself or by
//! `kill -9`, nothing a job started survives it.

use crate::agent::{agent_in, json_of, repo, write_script};
use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

/// Live processes whose environment carries a run id of the agent `pid`
/// (`AGENT_RUN_ID=PID-N`, set on every command and all it starts).
fn marked(pid: u32) -> Vec<i32> {
    let entry = format!("AGENT_RUN_ID={pid}-");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        // A zombie's environment reads empty: it counts as ended.
        let Ok(env) = std::fs::read(format!("/proc/{p}/environ")) else {
            continue;
        };
        if env
            .split(|&b| b == 0)
            .any(|var| var.starts_with(entry.as_bytes()))
        {
            out.push(p);
        }
    }
    out
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_background_job_is_read_and_stopped_and_none_outlives_the_run() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "echo serving; sleep 300", "background": true}}"#,
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "echo other; sleep 300", "background": true}}"#,
            r#"{"thought": "t", "tool": "command_output", "args": {"id": "job-1"}}"#,
            r#"{"thought": "t", "tool": "command_stop", "args": {"id": "job-1"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "the server ran; calc.py is fine"}}"#
        ]),
    );
    let child = agent_in(dir.path())
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Run the server in the background and fix calc.py")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    common::assert_success(&out);
    let answer = json_of(&out)["answer"].as_str().unwrap().to_string();
    assert!(
        answer.starts_with("the server ran; calc.py is fine"),
        "{answer}"
    );
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    for said in [
        "started job-1 in the background",
        "started job-2 in the background",
        "job-1 (`echo serving; sleep 300`): running",
        "job-1 (`echo serving; sleep 300`): stopped",
    ] {
        assert!(audit.contains(said), "{said:?} not in {audit}");
    }
    // job-2 was never stopped: the end of the run ended it.
    wait_until("no process of the run", Duration::from_secs(5), || {
        marked(pid).is_empty()
    });
    // Its output stays in the state folder, never in the workspace.
    let logs = common::state_dir(dir.path()).join("jobs");
    let kept = std::fs::read_to_string(logs.join(format!("{pid}-2.log"))).unwrap();
    assert_eq!(kept, "other\n");
}

#[test]
fn kill_9_of_the_agent_leaves_no_job_running() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "sleep 300 & while true; do sleep 0.1; done", "background": true}}"#,
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "sleep 120", "timeout_s": 120}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "never reached"}}"#
        ]),
    );
    let mut child = agent_in(dir.path())
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Run the watcher in the background and fix calc.py")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The job (its shell, the sleep, the loop's sleeps) and the foreground
    // command the agent waits on.
    wait_until("the job and the command", Duration::from_secs(60), || {
        marked(pid).len() >= 4
    });
    let before = marked(pid);
    child.kill().unwrap(); // SIGKILL: no destructor, no handler runs
    let _ = child.wait();
    wait_until("no survivor", Duration::from_secs(5), || {
        marked(pid).is_empty()
    });
    assert!(!before.is_empty());
}
