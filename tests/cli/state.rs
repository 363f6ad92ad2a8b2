//! Where the agent keeps its own state (issue 39): outside the workspace, in
//! a folder of the user's keyed by it; `.agent/` holds only what a team
//! commits; an old layout is moved; `/`, the home folder and system folders
//! are refused as workspaces; a walk stops at its file ceiling.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::agent::{agent_in, json_of, repo, write_script};
use crate::common;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn answer_only(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        json!([
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py line 3 returns a + b."}}"#
        ]),
    )
}

#[test]
fn state_lands_outside_the_workspace_and_git_status_shows_no_agent_folder() {
    let dir = repo();
    let out = agent_in(dir.path()).arg("index").output().unwrap();
    common::assert_success(&out);
    let script = answer_only(dir.path());
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("What does add in calc.py return?")
        .output()
        .unwrap();
    common::assert_success(&out);
    assert_eq!(json_of(&out)["finish"], "answered");

    let state = common::state_dir(dir.path());
    for kept in ["index/state.sqlite", "sessions.sqlite", "logs/audit.jsonl"] {
        assert!(
            state.join(kept).exists(),
            "{kept} not in {}",
            state.display()
        );
    }
    assert!(!dir.path().join(".agent").exists());
    let status = git(
        dir.path(),
        &["status", "--porcelain", "--untracked-files=all"],
    );
    assert!(!status.contains(".agent"), "{status}");
}

#[test]
fn an_old_layout_is_moved_and_a_teams_files_stay_committable() {
    let dir = repo();
    let team = dir.path().join(".agent");
    for (rel, text) in [
        (".gitignore", "*\n"),
        ("logs/audit.jsonl", "{\"event\":\"old\"}\n"),
        ("cache/kv/stale.kv", "x"),
        ("index/marker", "x"),
        ("commands/review.md", "Review $ARGUMENTS.\n"),
        ("policy.toml", "deny = [\"^docker\"]\n"),
    ] {
        std::fs::create_dir_all(team.join(rel).parent().unwrap()).unwrap();
        std::fs::write(team.join(rel), text).unwrap();
    }
    let out = agent_in(dir.path())
        .args(["sessions", "list"])
        .output()
        .unwrap();
    common::assert_success(&out);

    let state = common::state_dir(dir.path());
    assert_eq!(
        std::fs::read_to_string(state.join("logs/audit.jsonl")).unwrap(),
        "{\"event\":\"old\"}\n"
    );
    assert!(state.join("cache/kv/stale.kv").is_file() && state.join("index/marker").is_file());
    for gone in ["logs", "cache", "index"] {
        assert!(!team.join(gone).exists(), "{gone} still in .agent/");
    }
    assert!(team.join("commands/review.md").is_file() && team.join("policy.toml").is_file());
    assert_eq!(
        std::fs::read_to_string(team.join(".gitignore")).unwrap(),
        "*.local.toml\n"
    );
    // A team's files are not ignored by git; personal overrides are.
    let status = git(
        dir.path(),
        &["status", "--porcelain", "--untracked-files=all"],
    );
    assert!(status.contains(".agent/commands/review.md"), "{status}");
    assert!(status.contains(".agent/policy.toml"), "{status}");
    std::fs::write(team.join("config.local.toml"), "compact_at = 0.5\n").unwrap();
    let ignored = git(dir.path(), &["check-ignore", ".agent/config.local.toml"]);
    assert_eq!(ignored.trim(), ".agent/config.local.toml");
}

#[test]
fn a_sandboxed_command_cannot_write_the_state_folder() {
    let dir = repo();
    let state = common::state_dir(dir.path());
    let forged = state.join("forged");
    let command = format!(
        "mkdir -p {s}/cache/kv; echo forged > {s}/cache/kv/x.kv; touch {f}; echo forged >> {s}/logs/audit.jsonl; true",
        s = state.display(),
        f = forged.display()
    );
    let script = write_script(
        dir.path(),
        json!([
            json!({"thought": "t", "tool": "run_cmd", "args": {"command": command}}).to_string(),
            // An answer about the code: the judge asks again on one that is not.
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "ran the command; calc.py builds"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Run the command in the shell to fix the build")
        .output()
        .unwrap();
    common::assert_success(&out);
    assert!(!forged.exists(), "a command wrote {}", forged.display());
    assert!(!state.join("cache/kv/x.kv").exists());
    let audit = std::fs::read_to_string(state.join("logs/audit.jsonl")).unwrap();
    assert!(!audit.lines().any(|l| l == "forged"), "{audit}");
}

/// Never runs anything with `/` as its workspace: the refusal returns before
/// anything is read, indexed or written.
#[test]
fn root_home_and_system_folders_are_refused_with_exit_2() {
    for (args, path) in [
        (vec!["index", "/"], "/"),
        (vec!["index", "/etc"], "/etc"),
        (vec!["search", "--root", "/", "x"], "/"),
        (vec!["mcp", "serve", "--repo", "/usr"], "/usr"),
    ] {
        let out = common::agent_bin()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{path} is")) && err.contains("--allow-root-workspace"),
            "{args:?}: {err}"
        );
    }
    // The home folder too, found from the current directory.
    let home = common::test_home().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = common::agent_bin()
        .current_dir(&home)
        .env("HOME", &home)
        .arg("index")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("your home folder"), "{err}");
    assert!(!home.join(".agent").exists());
}

#[test]
fn acp_refuses_a_session_in_root_or_etc() {
    let mut child = common::agent_bin()
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |id: u32, method: &str, params: Value| -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let answer = lines.next().expect("an answer").unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    call(1, "initialize", json!({"protocolVersion": 1}));
    for (id, cwd) in [(2, "/"), (3, "/etc")] {
        let answer = call(id, "session/new", json!({"cwd": cwd, "mcpServers": []}));
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            message.contains("not a project") && message.contains("--allow-root-workspace"),
            "{answer}"
        );
    }
    drop(stdin);
    let _ = child.wait();
    assert!(!Path::new("/etc/.agent").exists());
}

#[test]
fn a_stray_agent_folder_above_does_not_capture_a_folder() {
    let top = tempfile::tempdir().unwrap();
    // What a stray `.agent` holds: old state, no team files.
    std::fs::create_dir_all(top.path().join(".agent/index")).unwrap();
    std::fs::write(top.path().join(".agent/.gitignore"), "*\n").unwrap();
    let below = top.path().join("work/project");
    std::fs::create_dir_all(&below).unwrap();
    std::fs::write(below.join("a.py"), "def a():\n    return 1\n").unwrap();
    let out = common::agent_bin()
        .current_dir(&below)
        .arg("index")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let below = below.canonicalize().unwrap();
    assert!(
        err.contains(&format!("indexing {}", below.display())),
        "{err}"
    );
    assert!(common::state_dir(&below).join("index").is_dir());
    assert!(
        top.path().join(".agent/index").is_dir(),
        "the stray one was not taken"
    );
}

#[test]
fn the_file_ceiling_stops_the_walk_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..12 {
        std::fs::write(dir.path().join(format!("m{i}.py")), "x = 1\n").unwrap();
    }
    let out = common::agent_bin()
        .args(["index", "--max-files", "5"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("walk stopped at more than 5 files") && err.contains("--max-files"),
        "{err}"
    );
}
