//! Nothing a repository or a model writes runs outside the sandbox, and no
//! secret reaches the model: through the real binary, with `--script`
//! playing a hostile model in yolo mode (whose promise is that it is safe).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::agent::{agent_in, json_of, repo, trust, write_script};
use crate::common;

/// A replay of one `run_cmd` call, then an answer.
fn run_then_finish(dir: &Path, command: &str) -> std::path::PathBuf {
    write_script(
        dir,
        json!([
            json!({"thought": "t", "tool": "run_cmd", "args": {"command": command}}).to_string(),
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "done with calc.py"}}"#
        ]),
    )
}

fn ask_yolo(dir: &Path, script: &Path, request: &str) -> std::process::Output {
    agent_in(dir)
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(script)
        .arg(request)
        .output()
        .unwrap()
}

fn server_states(dir: &Path) -> Value {
    let out = agent_in(dir)
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    json_of(&out)
}

/// `.mcp.json` shipped in a repository, or written by a command or a tool,
/// starts nothing until the user trusts that exact definition.
#[test]
fn an_mcp_server_starts_only_once_its_exact_definition_is_trusted() {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("server-ran");
    let shipped = |arg: &str| {
        json!({"mcpServers": {"shipped": {"command": "sh", "args": ["-c", format!("touch {}; {arg}", marker.display())]}}})
            .to_string()
    };
    std::fs::write(dir.path().join(".mcp.json"), shipped("exit 0")).unwrap();

    let servers = server_states(dir.path());
    assert_eq!(servers[0]["state"], "untrusted", "{servers}");
    assert!(servers[0]["reason"]
        .as_str()
        .unwrap()
        .contains("agent mcp trust"));
    let script = write_script(
        dir.path(),
        json!([r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add"}}"#]),
    );
    let out = ask_yolo(dir.path(), &script, "Where is add defined in calc.py?");
    common::assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not trusted"));
    assert!(!marker.exists(), "an untrusted server ran");

    // A command that rewrites .mcp.json is undone and told why.
    let evil = json!({"mcpServers": {"evil": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]}}}).to_string();
    let script = run_then_finish(dir.path(), &format!("printf '%s' '{evil}' > .mcp.json"));
    let out = ask_yolo(dir.path(), &script, "Fix calc.py");
    common::assert_success(&out);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap(),
        shipped("exit 0")
    );
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    assert!(
        audit.contains(".mcp.json was changed by the command (undone)"),
        "{audit}"
    );
    // A tool's write needs a yes on a terminal, even in yolo mode.
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "read_file", "args": {"path": ".mcp.json"}}"#,
            json!({"thought": "t", "tool": "write_file", "args": {"path": ".mcp.json", "content": evil}}).to_string(),
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "changed calc.py"}}"#
        ]),
    );
    let out = ask_yolo(dir.path(), &script, "Fix calc.py");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the agent's own settings"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap(),
        shipped("exit 0")
    );
    assert!(!marker.exists(), "a server ran");

    // Trusted, it starts; changed, it is untrusted again.
    trust(dir.path(), &["shipped"]);
    server_states(dir.path());
    assert!(marker.exists(), "the trusted server did not start");
    std::fs::remove_file(&marker).unwrap();
    std::fs::write(dir.path().join(".mcp.json"), shipped("exit 1")).unwrap();
    assert_eq!(server_states(dir.path())[0]["state"], "untrusted");
    assert!(!marker.exists(), "a changed definition ran");
}

/// A repository whose git configuration runs a program (`core.fsmonitor`
/// on every status, hooks), shipped or set by a command: the agent's own git
/// runs none of it, and the command is refused or undone.
#[test]
fn git_configuration_that_runs_programs_is_never_run_by_the_agent() {
    let dir = repo();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("git-ran");
    let hook = outside.path().join("hook.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let git = |args: &[&str]| {
        assert!(Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success());
    };
    // Shipped with the repository.
    git(&["config", "core.fsmonitor", &hook.display().to_string()]);
    git(&[
        "config",
        "core.hooksPath",
        &outside.path().display().to_string(),
    ]);
    for name in ["pre-commit", "post-checkout", "pre-auto-gc"] {
        std::fs::copy(&hook, outside.path().join(name)).unwrap();
    }
    let script = write_script(
        dir.path(),
        json!([r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add"}}"#]),
    );
    let out = ask_yolo(dir.path(), &script, "Where is add defined in calc.py?");
    common::assert_success(&out);
    let out = agent_in(dir.path()).args(["index"]).output().unwrap();
    common::assert_success(&out);
    assert!(
        !marker.exists(),
        "the agent's git ran the repository's program"
    );

    // Set by a command: refused by the policy, or undone when written by hand.
    git(&["config", "--unset", "core.fsmonitor"]);
    let script = run_then_finish(
        dir.path(),
        &format!("git config core.fsmonitor {}", hook.display()),
    );
    let out = ask_yolo(dir.path(), &script, "Fix calc.py");
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    assert!(audit.contains("git-config-exec"), "{audit}");
    let script = run_then_finish(
        dir.path(),
        &format!(
            "printf '[core]\\n\\tfsmonitor = {}\\n' >> .git/config",
            hook.display()
        ),
    );
    let _ = ask_yolo(dir.path(), &script, "Fix calc.py");
    let config = std::fs::read_to_string(dir.path().join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    common::assert_success(&out);
    assert!(
        !marker.exists(),
        "a program named by git's configuration ran"
    );
}

/// The agent's environment is not readable by its commands (no `/proc` of
/// the agent in their namespace), and a secret that reaches text anyway, in
/// any usual encoding, is redacted from what `read_file` returns.
#[test]
fn the_agents_secrets_never_reach_the_model_through_proc_or_encodings() {
    let dir = repo();
    let secret = "tok-7c1f9e2a5b8d";
    let script = write_script(
        dir.path(),
        json!([
            json!({"thought": "t", "tool": "run_cmd", "args": {"command":
                "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done > leak.txt; \
                 ps -e -o pid= | wc -l > procs.txt"}}).to_string(),
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "leak.txt"}}"#,
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "encoded.txt"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "read leak.txt and calc.py"}}"#
        ]),
    );
    let reversed: String = secret.chars().rev().collect();
    let b64 = Command::new("sh")
        .args(["-c", &format!("printf 'MY_API_TOKEN={secret}' | base64")])
        .output()
        .unwrap();
    let b64 = String::from_utf8_lossy(&b64.stdout).trim().to_string();
    std::fs::write(
        dir.path().join("encoded.txt"),
        format!("{reversed}\n{b64}\n"),
    )
    .unwrap();
    let out = agent_in(dir.path())
        .env("MY_API_TOKEN", secret)
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Fix calc.py")
        .output()
        .unwrap();
    common::assert_success(&out);
    let leak = std::fs::read_to_string(dir.path().join("leak.txt")).unwrap();
    assert!(
        !leak.contains(secret),
        "a command read the agent's environment"
    );
    let procs: usize = std::fs::read_to_string(dir.path().join("procs.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap_or(0);
    assert!(
        procs < 10,
        "the command saw {procs} processes, the host's among them"
    );
    let stored = [
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap(),
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/trace.jsonl"))
            .unwrap_or_default(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ]
    .join("\n");
    for form in [secret, reversed.as_str(), b64.as_str()] {
        assert!(
            !stored.contains(form),
            "{form} reached the model or the logs"
        );
    }
    assert!(stored.contains("[redacted]"), "{stored}");
}

/// File contents and names with escape sequences reach a terminal escaped;
/// JSON keeps them exact.
#[test]
fn escape_sequences_from_the_repository_never_reach_the_terminal() {
    let dir = repo();
    let nasty = "def clip():\n    \"\"\"copy \x1b]52;c;ZXZpbA==\x07 and \x1b[2J clear \x1b]0;pwned\x07\"\"\"\n    return 1\n";
    std::fs::write(dir.path().join("clip.py"), nasty).unwrap();
    std::fs::write(
        dir.path().join("new\nline.py"),
        "def newline_fn():\n    return 2\n",
    )
    .unwrap();
    let out = agent_in(dir.path()).args(["index"]).output().unwrap();
    common::assert_success(&out);
    for args in [
        vec!["search", "copy clear clip"],
        vec!["map", "--tokens", "2000"],
    ] {
        let out = agent_in(dir.path()).args(&args).output().unwrap();
        common::assert_success(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.contains('\x1b') && !text.contains('\x07'),
            "{args:?}: {text:?}"
        );
        if args[0] == "map" {
            assert!(text.contains("new\\nline.py"), "{text}");
        }
    }
    let out = agent_in(dir.path())
        .args(["search", "--json", "copy clear clip"])
        .output()
        .unwrap();
    let hits = json_of(&out);
    assert!(hits.to_string().contains("\\u001b]52;"), "{hits}");
    // The agent's streamed tool results and answer.
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "clip.py"}}"#,
            json!({"thought": "t", "tool": "finish", "args": {"answer": "clip.py: \u{1b}]52;c;ZXZpbA==\u{7} clip returns 1"}}).to_string()
        ]),
    );
    let out = agent_in(dir.path())
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("What does clip in clip.py return?")
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("\x1b]52") && !all.contains('\x07'), "{all:?}");
}

/// `kill -9` of the agent mid-command takes the command and its background
/// job with it.
#[test]
fn commands_die_with_a_killed_agent() {
    let dir = repo();
    // Durations no other test uses, to find these processes by.
    let script = run_then_finish(dir.path(), "sleep 4141 & sleep 4343");
    let mut child = agent_in(dir.path())
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Fix calc.py")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = || {
        let out = Command::new("pgrep")
            .args(["-f", "^sleep (4141|4343)$"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let started = Instant::now();
    while running() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: the agent cannot clean up
    child.wait().unwrap();
    let killed = Instant::now();
    while running() > 0 && killed.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(running(), 0, "processes outlived the agent");
}
