//! The administrator's managed configuration and the tamper-evident audit
//! trail, through the real binary: a managed file (AGENT_MANAGED_CONFIG)
//! no flag loosens, refusals that exit 2 with the administrator's message,
//! and `agent audit verify` naming what was changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::agent::{agent_in, json_of, repo, write_script};
use crate::common;

const MESSAGE: &str = "Ask the platform team (#dev-tools) for an exception.";

/// A user with a home, configuration and state of the test's own, under
/// the administrator's `managed` file (none when empty).
struct Machine {
    home: tempfile::TempDir,
    admin: tempfile::TempDir,
    managed: Option<PathBuf>,
}

impl Machine {
    /// The agent's own audit log for `workspace` on this machine.
    fn audit_log(&self, workspace: &Path) -> PathBuf {
        self.home
            .path()
            .join("state/agent/workspaces")
            .join(agent_base::paths::workspace_key(workspace))
            .join("logs/audit.jsonl")
    }

    fn new(managed: &str) -> Self {
        let admin = tempfile::tempdir().unwrap();
        let path = admin.path().join("managed.toml");
        let managed = (!managed.is_empty()).then(|| {
            std::fs::write(&path, managed).unwrap();
            path
        });
        Self {
            home: tempfile::tempdir().unwrap(),
            admin,
            managed,
        }
    }

    fn agent(&self, dir: &Path) -> Command {
        let mut cmd = agent_in(dir);
        let home = self.home.path();
        cmd.env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env_remove("AGENT_AUDIT_DIR")
            .env_remove("AGENT_MODEL");
        match &self.managed {
            Some(path) => cmd.env("AGENT_MANAGED_CONFIG", path),
            None => cmd.env_remove("AGENT_MANAGED_CONFIG"),
        };
        cmd
    }

    fn sink(&self) -> PathBuf {
        self.admin.path().join("audit")
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn finish_only(dir: &Path) -> PathBuf {
    write_script(
        dir,
        json!([r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add"}}"#]),
    )
}

#[test]
fn a_managed_file_forbidding_yolo_refuses_it_with_the_message() {
    let dir = repo();
    let machine = Machine::new(&format!(
        "allowed_modes = [\"human\", \"confirm\"]\nmessage = \"{MESSAGE}\"\n"
    ));
    let script = finish_only(dir.path());
    let out = machine
        .agent(dir.path())
        .args(["ask", "--mode", "yolo", "--script"])
        .arg(&script)
        .arg("Where is add defined?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("Your administrator does not allow --mode yolo"),
        "{err}"
    );
    assert!(err.contains(MESSAGE), "{err}");
    // An allowed mode runs.
    let out = machine
        .agent(dir.path())
        .args(["ask", "--json", "--mode", "confirm", "--script"])
        .arg(&script)
        .arg("Where is add defined?")
        .output()
        .unwrap();
    common::assert_success(&out);
    // `agent config show` refuses the same, and says where each rule came from.
    let out = machine
        .agent(dir.path())
        .args(["config", "show", "--mode", "yolo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = machine
        .agent(dir.path())
        .args(["config", "show", "--origin"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let managed = machine.managed.as_ref().unwrap().display().to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with("allowed_modes"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("[\"human\",\"confirm\"]") && line.contains(&format!("managed ({managed})")),
        "{line}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("mode ") && l.ends_with("# default")),
        "{text}"
    );
}

#[test]
fn a_model_off_the_allowlist_is_refused_with_its_sha256() {
    let dir = repo();
    let models = tempfile::tempdir().unwrap();
    let model = models.path().join("other.gguf");
    std::fs::write(&model, b"GGUF not really a model").unwrap();
    let sha = agent_base::models::sha256_file(&model, |_| {}).unwrap();
    let machine = Machine::new(&format!(
        "allowed_models = [\"{}\"]\nallowed_servers = []\nmessage = \"{MESSAGE}\"\n",
        "0".repeat(64)
    ));
    let out = machine
        .agent(dir.path())
        .args(["ask", "--model"])
        .arg(&model)
        .arg("hello")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("Your administrator does not allow the model"),
        "{err}"
    );
    assert!(err.contains(&sha), "{err}");
    // Hashed once: the hash is kept by path, size and mtime.
    let cache =
        std::fs::read_to_string(machine.home.path().join("state/agent/model-sha256.json")).unwrap();
    assert!(cache.contains(&sha), "{cache}");
    // No server either.
    let out = machine
        .agent(dir.path())
        .args(["ask", "--server", "http://127.0.0.1:9/v1", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not allow the model server"));
}

#[test]
fn an_mcp_server_off_the_allowlist_never_starts_even_when_trusted() {
    let dir = repo();
    // In the workspace: a server runs in the sandbox, which writes nowhere else.
    let marker = dir.path().join("server-ran");
    let server = json!({"mcpServers": {"shipped": {"command": "sh", "args": ["-c", format!("touch {}; exit 0", marker.display())]}}});
    std::fs::write(dir.path().join(".mcp.json"), server.to_string()).unwrap();
    // The user trusts it before the administrator's rule arrives.
    let user = Machine::new("");
    common::assert_success(
        &user
            .agent(dir.path())
            .args(["mcp", "trust", "shipped"])
            .output()
            .unwrap(),
    );
    let mut machine = Machine::new(&format!("mcp_allowlist = [\"docs:{}\"]\n", "a".repeat(64)));
    machine.home = user.home;
    let script = finish_only(dir.path());
    let ask = |machine: &Machine| {
        machine
            .agent(dir.path())
            .args(["ask", "--json", "--script"])
            .arg(&script)
            .arg("Where is add defined?")
            .output()
            .unwrap()
    };
    let out = ask(&machine);
    common::assert_success(&out);
    let err = stderr(&out);
    assert!(
        err.contains("Your administrator does not allow the MCP server shipped"),
        "{err}"
    );
    assert!(!marker.exists(), "a server off the allowlist ran");
    let out = machine
        .agent(dir.path())
        .args(["mcp", "trust", "shipped"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The refusal names the entry that would allow it; on the list, it starts.
    let entry = err
        .split("allowlist as ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap()
        .to_string();
    std::fs::write(
        machine.managed.as_ref().unwrap(),
        format!("mcp_allowlist = [\"{entry}\"]\n"),
    )
    .unwrap();
    let _ = ask(&machine);
    assert!(marker.exists(), "a server on the allowlist did not start");
}

#[test]
fn a_malformed_managed_file_fails_closed_with_line_and_column() {
    let dir = repo();
    let machine = Machine::new("require_sandbox = true\nallowed_modes = [\"human\", \"sudo\"]\n");
    let script = finish_only(dir.path());
    for args in [
        vec![
            "ask",
            "--mode",
            "yolo",
            "--script",
            script.to_str().unwrap(),
            "hi",
        ],
        vec!["config", "show"],
        vec!["mcp", "list"],
    ] {
        let out = machine.agent(dir.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("managed.toml:2:27:"), "{err}");
        assert!(err.contains("sudo"), "{err}");
    }
    let machine = Machine::new("allowed_modes = [\"human\"\nmessage = 3\n");
    let out = machine
        .agent(dir.path())
        .args(["config", "show"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("managed.toml:"), "{}", stderr(&out));
}

/// The workspace is trusted (`--trust`), so its policy.toml may loosen the
/// network rule; the managed file still wins.
#[test]
fn the_managed_network_rule_overrides_policy_toml() {
    let dir = repo();
    std::fs::create_dir_all(dir.path().join(".agent")).unwrap();
    std::fs::write(
        dir.path().join(".agent/policy.toml"),
        "allow_network = true\n",
    )
    .unwrap();
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "curl -s http://127.0.0.1:9/"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "done with calc.py"}}"#
        ]),
    );
    let curl_denied = |machine: &Machine| {
        let out = machine
            .agent(dir.path())
            .args(["ask", "--trust", "--json", "--mode", "yolo", "--script"])
            .arg(&script)
            .arg("Fix calc.py")
            .output()
            .unwrap();
        assert!(out.status.code() != Some(2), "{}", stderr(&out));
        let audit = std::fs::read_to_string(machine.audit_log(dir.path())).unwrap();
        let last = audit
            .lines()
            .rfind(|l| l.contains("\"tool_result\"") && l.contains("run_cmd"))
            .unwrap()
            .to_string();
        last.contains("rule: network")
    };
    assert!(!curl_denied(&Machine::new("")));
    let machine = Machine::new("allow_network = false\n");
    assert!(curl_denied(&machine));
    let network = config_entry(&machine, dir.path(), "allow_network");
    assert_eq!(network["value"], false, "{network}");
    assert_eq!(network["origin"], "managed", "{network}");
}

/// `key`'s entry in `agent config show --origin --json`: its value and origin.
fn config_entry(machine: &Machine, dir: &Path, key: &str) -> Value {
    let out = machine
        .agent(dir)
        .args(["config", "show", "--origin", "--json"])
        .output()
        .unwrap();
    json_of(&out)
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == key)
        .unwrap()
        .clone()
}

/// `agent audit verify FILE --json`: whether it passed, and the broken line.
fn verify(machine: &Machine, dir: &Path, file: &Path) -> (bool, Value) {
    let out = machine
        .agent(dir)
        .args(["audit", "verify", "--json"])
        .arg(file)
        .output()
        .unwrap();
    let report = json_of(&out)[0].clone();
    assert_eq!(out.status.success(), report["ok"] == true, "{report}");
    (out.status.success(), report)
}

/// The records without their chain fields (`seq`, `prev`), head excluded.
fn records(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut()
                .unwrap()
                .retain(|k, _| k != "seq" && k != "prev");
            v
        })
        .collect()
}

#[test]
fn audit_verify_passes_on_a_session_and_names_an_edit_a_deletion_and_a_cut_tail() {
    let dir = repo();
    let machine = Machine::new("");
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "look", "tool": "grep", "args": {"pattern": "def add"}}"#,
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "add is in calc.py"}}"#
        ]),
    );
    let out = machine
        .agent(dir.path())
        .env("AGENT_AUDIT_DIR", machine.sink())
        .args(["ask", "--json", "--script"])
        .arg(&script)
        .arg("Where is add defined?")
        .output()
        .unwrap();
    common::assert_success(&out);
    let own = machine.audit_log(dir.path());
    let sinks: Vec<PathBuf> = std::fs::read_dir(machine.sink())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(sinks.len(), 1, "{sinks:?}");
    let sink = &sinks[0];
    // The sink holds the same records, each naming who, where and what.
    assert_eq!(records(&own), records(sink));
    let first = &records(&own)[0];
    for key in ["user", "host", "workspace", "session_id", "trace_id"] {
        assert!(
            first[key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}: {first}"
        );
    }
    let out = machine
        .agent(dir.path())
        .env("AGENT_AUDIT_DIR", machine.sink())
        .args(["audit", "verify"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.matches("chain intact, tail matches its head").count(),
        2,
        "{text}"
    );

    let original = std::fs::read_to_string(&own).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    assert!(lines.len() >= 6, "{original}");
    let write = |lines: &[String]| std::fs::write(&own, lines.join("\n") + "\n").unwrap();
    let owned: Vec<String> = lines.iter().map(|l| l.to_string()).collect();

    let mut edited = owned.clone();
    edited[2] = edited[2].replacen("\"event\":\"", "\"event\":\"x", 1);
    write(&edited);
    let (ok, report) = verify(&machine, dir.path(), &own);
    assert!(!ok);
    assert_eq!(report["broken"]["line"], 3, "{report}");

    let mut deleted = owned.clone();
    deleted.remove(3);
    write(&deleted);
    let (ok, report) = verify(&machine, dir.path(), &own);
    assert!(!ok);
    assert_eq!(report["broken"]["line"], 4, "{report}");

    write(&owned[..owned.len() - 2]);
    let (ok, report) = verify(&machine, dir.path(), &own);
    assert!(!ok);
    assert!(
        report["broken"]["why"]
            .as_str()
            .unwrap()
            .contains("were removed"),
        "{report}"
    );

    std::fs::write(&own, &original).unwrap();
    let (ok, _) = verify(&machine, dir.path(), &own);
    assert!(ok);
    // Export: every record since an hour ago, one JSON object per line.
    let out = machine
        .agent(dir.path())
        .args(["audit", "export", "--since", "1h", "--json"])
        .arg(sink)
        .output()
        .unwrap();
    common::assert_success(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        lines.len()
    );
}

#[test]
fn a_required_sandbox_cannot_be_turned_off_and_protected_paths_are_not_written() {
    let dir = repo();
    let machine = Machine::new(&format!(
        "require_sandbox = true\nprotected_paths = [\"deploy/**\"]\nmessage = \"{MESSAGE}\"\n"
    ));
    let script = write_script(
        dir.path(),
        json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "deploy/prod.env", "content": "X=1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote deploy/prod.env"}}"#
        ]),
    );
    let ask = |extra: &[&str]| {
        machine
            .agent(dir.path())
            .args(["ask", "--json", "--mode", "yolo"])
            .args(extra)
            .arg("--script")
            .arg(&script)
            .arg("Create deploy/prod.env with X=1")
            .output()
            .unwrap()
    };
    let out = ask(&["--sandbox", "off"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("Your administrator does not allow --sandbox off"));
    let out = ask(&[]);
    assert!(out.status.code() != Some(2), "{}", stderr(&out));
    assert!(!dir.path().join("deploy/prod.env").exists());
    let audit = std::fs::read_to_string(machine.audit_log(dir.path())).unwrap();
    assert!(
        audit.contains("lies in the protected path deploy"),
        "{audit}"
    );
}

/// Issue 56: `allow_network` as a list of hosts, in policy.toml or as the
/// managed file's bound on a workspace's `true`: `run_cmd` reaches the
/// listed host through the agent's proxy, the other gets the proxy's 403
/// naming it, a connection bypassing the proxy fails, and the tool result
/// in the audit trail lists each connection with its rule.
#[test]
fn a_network_allowlist_lets_commands_reach_only_its_hosts() {
    let support = agent_sandbox::support();
    if agent_sandbox::landlock_abi().is_none() || !support.mounts() {
        agent_test_support::skip!("no Landlock or no user namespaces: no network allowlist here");
    }
    if !Path::new("/usr/bin/curl").exists() {
        agent_test_support::skip!("curl is not installed");
    }
    let allowed = agent_test_support::http_server("127.0.0.2", "allowed");
    let other = agent_test_support::http_server("127.0.0.3", "other");
    let rule = format!("127.0.0.2:{allowed}");
    let command = format!(
        "curl -sS --max-time 20 http://127.0.0.2:{allowed}/; \
         curl -sS --max-time 20 http://127.0.0.3:{other}/; \
         curl -sS --max-time 5 --noproxy '*' http://127.0.0.2:{allowed}/ || echo direct-failed"
    );
    // The workspace's own list; then its `true`, bounded by the managed list.
    let cases = [
        (
            format!("allow_network = [\"{rule}\"]\n"),
            String::new(),
            "workspace",
        ),
        (
            "allow_network = true\n".to_string(),
            format!("allow_network = [\"{rule}\", \"*.corp.example:443\"]\n"),
            "managed",
        ),
    ];
    for (policy, managed, origin) in cases {
        let dir = repo();
        std::fs::create_dir_all(dir.path().join(".agent")).unwrap();
        std::fs::write(dir.path().join(".agent/policy.toml"), &policy).unwrap();
        let script = write_script(
            dir.path(),
            json!([
                json!({"thought": "t", "tool": "run_cmd", "args": {"command": command}})
                    .to_string(),
                r#"{"thought": "t", "tool": "finish", "args": {"answer": "done with calc.py"}}"#
            ]),
        );
        let machine = Machine::new(&managed);
        let out = machine
            .agent(dir.path())
            .args(["ask", "--trust", "--json", "--mode", "yolo", "--script"])
            .arg(&script)
            .arg("Fix calc.py")
            .output()
            .unwrap();
        assert!(out.status.code() != Some(2), "{}", stderr(&out));
        let audit = std::fs::read_to_string(machine.audit_log(dir.path())).unwrap();
        let result: Value = audit
            .lines()
            .rfind(|l| l.contains("\"tool_result\"") && l.contains("run_cmd"))
            .map(|l| serde_json::from_str(l).unwrap())
            .unwrap();
        let text = result.to_string();
        assert!(text.contains("hello from allowed"), "{origin}: {text}");
        assert!(!text.contains("hello from other"), "{origin}: {text}");
        assert!(
            text.contains(&format!("does not include 127.0.0.3:{other}")),
            "{origin}: {text}"
        );
        assert!(text.contains("direct-failed"), "{origin}: {text}");
        assert!(
            text.contains(&format!("allowed 127.0.0.2:{allowed} (rule {rule})")),
            "{origin}: {text}"
        );
        assert!(
            text.contains(&format!("refused 127.0.0.3:{other}")),
            "{origin}: {text}"
        );
        let network = config_entry(&machine, dir.path(), "allow_network");
        // A workspace's `true` becomes the managed list, whole.
        let want = match origin {
            "managed" => json!([rule, "*.corp.example:443"]),
            _ => json!([rule]),
        };
        assert_eq!(network["value"], want, "{network}");
        assert_eq!(network["origin"], origin, "{network}");
    }
}
