//! A team's own conventions through the binary: prompt files as `/NAME`
//! commands, skills and hooks in `agent doctor`, and `agent init` on a real
//! Python sdist.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::agent::{agent_in, json_of, repo, write_script};
use crate::common;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The texts of the requests in the audit log, in order.
fn audited_requests(root: &Path) -> Vec<String> {
    std::fs::read_to_string(common::state_dir(root).join("logs/audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "request")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

fn review_command(root: &Path) {
    write(
        root,
        ".agent/commands/review.md",
        "---\ndescription: Review a file for bugs\n---\nReview $ARGUMENTS for bugs; name each with its line.\n",
    );
}

#[test]
fn ask_with_a_command_name_sends_its_file_with_the_arguments() {
    let dir = repo();
    let root = dir.path();
    review_command(root);
    let script = write_script(
        root,
        serde_json::json!([
            r#"{"thought": "read", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "done", "tool": "finish", "args": {"answer": "calc.py line 3: return a + b is correct; no bugs in add."}}"#
        ]),
    );
    let out = agent_in(root)
        .args(["ask", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        .args(["/review", "calc.py"])
        .output()
        .unwrap();
    common::assert_success(&out);
    assert_eq!(json_of(&out)["finish"], "answered");
    assert_eq!(
        audited_requests(root),
        ["Review calc.py for bugs; name each with its line."]
    );

    // A command without a file says where it was looked for, and what exists.
    let out = agent_in(root)
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .args(["/nope", "x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no command /nope")
            && err.contains(".agent/commands/nope.md")
            && err.contains("fix:")
            && err.contains("/review"),
        "{err}"
    );
}

#[test]
fn chat_expands_a_command_and_names_a_missing_one() {
    let dir = repo();
    let root = dir.path();
    review_command(root);
    let script = write_script(
        root,
        serde_json::json!([
            r#"{"thought": "read", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "done", "tool": "finish", "args": {"answer": "calc.py line 3: return a + b is correct."}}"#
        ]),
    );
    let out = common::output_with_input(
        common::agent_bin()
            .current_dir(root)
            .env("XDG_CONFIG_HOME", root.join(".git/test-config"))
            .args(["chat", "--mode", "yolo", "--script"])
            .arg(&script),
        b"/help\n/review calc.py\n/missing\n/exit\n",
    );
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Review a file for bugs"),
        "/help lists it: {err}"
    );
    assert!(err.contains("unknown command /missing"), "{err}");
    assert!(err.contains(".agent/commands/missing.md"), "{err}");
    assert_eq!(
        audited_requests(root),
        ["Review calc.py for bugs; name each with its line."]
    );
}

#[test]
fn doctor_lists_skills_commands_and_hooks_and_what_is_wrong_with_them() {
    let dir = repo();
    let root = dir.path();
    write(
        root,
        ".agent/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Fill PDF forms\n---\nUse scripts/fill.py.\n",
    );
    write(
        root,
        ".claude/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: unquoted: colon\n---\n",
    );
    review_command(root);
    write(root, ".agent/hooks/check.sh", "#!/bin/sh\nexit 0\n");
    write(
        root,
        ".agent/config.toml",
        "[[hooks.pre_tool]]\nmatcher = \"Bash\"\ncommand = \".agent/hooks/check.sh\"\n",
    );
    let doctor = || {
        let out = agent_in(root).arg("doctor").output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let text = doctor();
    assert!(text.contains("pdf (.agent/skills)"), "{text}");
    assert!(
        text.contains("notes/SKILL.md: its front matter is not valid YAML")
            && text.contains("quote a description"),
        "{text}"
    );
    assert!(text.contains("/review"), "{text}");
    assert!(
        text.contains("pre_tool [Bash] .agent/hooks/check.sh")
            && text.contains("not executable: chmod +x .agent/hooks/check.sh"),
        "{text}"
    );
    std::fs::set_permissions(
        root.join(".agent/hooks/check.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert!(!doctor().contains("chmod +x"));
}

/// The sdist `agent init` is tried on (scripts/test sets it; without it the
/// test says so and passes).
fn sdist() -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(std::env::var_os("AGENT_TEST_SDIST")?);
    assert!(
        path.is_file(),
        "AGENT_TEST_SDIST={} is no file",
        path.display()
    );
    Some(path)
}

#[test]
fn init_on_a_real_sdist_writes_agents_md_with_its_test_command_and_never_overwrites() {
    let Some(sdist) = sdist() else {
        agent_test_support::skip!(
            "set AGENT_TEST_SDIST to a Python sdist (.tar.gz), e.g. flask-3.0.3"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("tar")
        .arg("xzf")
        .arg(&sdist)
        .arg("--strip-components=1")
        .current_dir(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar xzf {}", sdist.display());
    let root = dir.path();
    assert!(Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .unwrap()
        .success());

    // No terminal: --mode yolo creates the new file without asking.
    let out = agent_in(root)
        .args(["init", "--no-model", "--mode", "yolo", "--json"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let v = json_of(&out);
    let written = std::fs::read_to_string(root.join("AGENTS.md")).unwrap();
    assert_eq!(v["content"].as_str(), Some(written.as_str()));
    // flask's tox.ini runs `pytest -v --tb=short`; pyproject configures pytest.
    assert!(written.contains("- Test: `pytest"), "{written}");
    assert!(written.contains("src/flask/app.py"), "{written}");
    assert!(written.contains("python"), "{written}");

    // An existing AGENTS.md is only replaced with a yes on a terminal.
    std::fs::write(root.join("AGENTS.md"), "# Ours\nkeep me\n").unwrap();
    let out = agent_in(root)
        .args(["init", "--no-model", "--mode", "yolo"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("was not written") && err.contains("fix:"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("AGENTS.md")).unwrap(),
        "# Ours\nkeep me\n"
    );
}

#[test]
fn init_says_which_commands_it_could_not_verify() {
    // Issue 53: on regex-automata `agent init` wrote `cargo test`, which
    // fails there; nothing in the crate names it.
    let dir = repo();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
    );
    write(
        root,
        "README.md",
        "# demo\n\nTest it with `cargo test --lib`.\n",
    );
    let out = agent_in(root)
        .args(["init", "--no-model", "--mode", "yolo"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let written = std::fs::read_to_string(root.join("AGENTS.md")).unwrap();
    assert!(
        written.contains("- Test: `cargo test --lib` (README.md)\n"),
        "{written}"
    );
    assert!(
        written.contains("- Test: `cargo test` (Cargo.toml; not verified"),
        "{written}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not verified: `cargo build`, `cargo test`"),
        "{err}"
    );
}

/// A repository whose three files pass 75% of an 8k window when read (two
/// do not), and
/// the replay that reads them, summarizes, and answers.
fn long_session() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = repo();
    let root = dir.path();
    let mut turns = Vec::new();
    for name in ["alpha", "beta", "gamma"] {
        let body: String = (0..120)
            .map(|i| format!("def {name}_{i:03}(x):\n    return x * {i} + len('{name}')\n"))
            .collect();
        write(root, &format!("{name}.py"), &body);
        turns.push(
            serde_json::json!({"thought": "read", "tool": "read_file", "args": {"path": format!("{name}.py")}})
                .to_string(),
        );
    }
    turns.push(
        r#"{"goal": "Say which of alpha.py, beta.py and gamma.py defines gamma_042", "decisions": ["read all three"], "files": [{"path": "gamma.py", "why": "defines gamma_042"}], "open_questions": [], "next_step": "answer gamma.py"}"#.into(),
    );
    turns.push(
        r#"{"thought": "done", "tool": "finish", "args": {"answer": "gamma.py defines gamma_042 (def gamma_042)."}}"#.into(),
    );
    let script = write_script(root, serde_json::json!(turns));
    (dir, script)
}

#[test]
fn json_and_stream_json_report_a_compaction() {
    let (dir, script) = long_session();
    let root = dir.path();
    let question = "Which file defines gamma_042?";
    let out = agent_in(root)
        .args(["ask", "--json", "--ctx-size", "8192", "--script"])
        .arg(&script)
        .arg(question)
        .output()
        .unwrap();
    common::assert_success(&out);
    let v = json_of(&out);
    let c = &v["compactions"][0];
    assert_eq!(c["compacted"], true, "{v}");
    assert_eq!(c["trigger"], "auto");
    assert!(c["summary"]
        .as_str()
        .unwrap()
        .contains("Goal: Say which of"));

    let out = agent_in(root)
        .args([
            "ask",
            "--output-format",
            "stream-json",
            "--ctx-size",
            "8192",
            "--script",
        ])
        .arg(&script)
        .arg(question)
        .output()
        .unwrap();
    common::assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let compact: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "compact")
        .collect();
    assert_eq!(compact.len(), 1, "{stdout}");
    assert_eq!(compact[0]["compacted"], true, "{stdout}");
}

#[test]
fn chat_compact_shows_the_summary_and_nothing_to_compact_says_so() {
    let (dir, _) = long_session();
    let root = dir.path();
    let script = write_script(
        root,
        serde_json::json!([
            r#"{"thought": "read", "tool": "read_file", "args": {"path": "alpha.py"}}"#,
            r#"{"thought": "done", "tool": "finish", "args": {"answer": "alpha.py defines alpha_001 (def alpha_001)."}}"#,
            r#"{"goal": "Find where alpha_001 is defined", "decisions": [], "files": [{"path": "alpha.py", "why": "defines alpha_001"}], "open_questions": [], "next_step": "none"}"#
        ]),
    );
    let out = common::output_with_input(
        common::agent_bin()
            .current_dir(root)
            .env("XDG_CONFIG_HOME", root.join(".git/test-config"))
            .args(["chat", "--mode", "yolo", "--script"])
            .arg(&script),
        b"/compact\nWhich file defines alpha_001?\n/compact the alpha file\n/exit\n",
    );
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to compact yet"), "{err}");
    assert!(
        err.contains("compacted:") && err.contains("Goal: Find where alpha_001"),
        "{err}"
    );
}
