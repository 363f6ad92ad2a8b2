//! Remote MCP servers over streamable HTTP: a real server (Python `mcp`,
//! FastMCP) on 127.0.0.1, declared in `.mcp.json`, trusted like a local one.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::agent::{agent_in, json_of, mcp_python, repo, trust, write_script};
use crate::common;

const TOKEN: &str = "team-blue-42";

/// A port nothing listens on (for a moment: the test's own server takes it,
/// or it stays closed).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The fixture server on `port`, its log in `log`; ended when dropped.
struct Server(Child);

impl Server {
    fn start(python: &str, port: u16, log: &Path) -> Server {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_http_server.py");
        let child = Command::new(python)
            .arg(script)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let server = Server(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the fixture server did not listen: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn list(dir: &Path) -> (Option<i32>, Value) {
    let out = agent_in(dir)
        .env("AGENT_TEST_TEAM_TOKEN", TOKEN)
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    (out.status.code(), json_of(&out))
}

fn server<'a>(servers: &'a Value, name: &str) -> &'a Value {
    servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {servers}"))
}

/// Every file under `dir`, for a secret that must not be in any.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        if std::fs::read(&entry).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)) {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_remote_mcp_server_over_http_is_trusted_listed_and_called_with_headers_from_env() {
    let Some(python) = mcp_python() else {
        agent_test_support::skip!("AGENT_TEST_MCP_PYTHON is not set (scripts/test sets it up)");
    };
    let dir = repo();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("server.log");
    let port = free_port();
    let _server = Server::start(&python, port, &log);
    let declare = |host: &str| {
        std::fs::write(
            dir.path().join(".mcp.json"),
            serde_json::json!({"mcpServers": {
                "remote": {"type": "http", "url": format!("http://{host}:{port}/mcp"),
                           "headers": {"Authorization": "Bearer ${AGENT_TEST_TEAM_TOKEN}"}},
            }})
            .to_string(),
        )
        .unwrap();
    };
    declare("127.0.0.1");

    // Not trusted: listed, never contacted.
    let (code, servers) = list(dir.path());
    assert_eq!(code, Some(1));
    assert_eq!(
        server(&servers, "remote")["state"],
        "untrusted",
        "{servers}"
    );
    assert!(server(&servers, "remote")["command"]
        .as_str()
        .unwrap()
        .contains("Authorization"));
    assert!(!std::fs::read_to_string(&log).unwrap().contains("POST /mcp"));

    trust(dir.path(), &["remote"]);
    let (code, servers) = list(dir.path());
    assert_eq!(code, Some(0), "{servers}");
    let remote = server(&servers, "remote");
    assert_eq!(remote["state"], "running", "{servers}");
    let tools: Vec<&str> = remote["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["lookup", "whoami"], "{servers}");

    // A session calls it; the header's value came from the environment.
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "mcp__remote__lookup", "args": {"ticket": 3}}"#,
            r#"{"thought": "t", "tool": "mcp__remote__whoami", "args": {}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "ticket 3: the deploy waits on a review"}}"#
        ]),
    );
    let out = agent_in(dir.path())
        .env("AGENT_TEST_TEAM_TOKEN", TOKEN)
        .args(["ask", "--trust", "--json", "--mode", "yolo", "--script"])
        .arg(&script)
        // Names the tool's words, so the gate hands it over (the gate's
        // own tests cover the routing).
        .arg("Look up ticket 3: what holds it up?")
        .output()
        .unwrap();
    common::assert_success(&out);
    assert_eq!(json_of(&out)["finish"], "answered");
    let audit =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/audit.jsonl")).unwrap();
    let results: Vec<String> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "tool_result")
        .map(|e| e["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        results[0].contains("the deploy waits on a review"),
        "{results:?}"
    );
    // The server echoes the header reversed; the token, reversed or not, is
    // a secret of the environment, so the log holds it redacted: it arrived.
    assert!(
        results[1].contains("authorization reversed: [redacted] reraeB"),
        "{results:?}"
    );
    // The secret itself is in no file the agent wrote.
    assert_eq!(files_holding(dir.path(), TOKEN), Vec::<String>::new());

    // Without the variable it does not start, and says which one is missing.
    let out = agent_in(dir.path())
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    let servers = json_of(&out);
    let reason = server(&servers, "remote")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("AGENT_TEST_TEAM_TOKEN") && reason.contains("not set"),
        "{servers}"
    );

    // A changed URL is a new server: asked about again.
    declare("localhost");
    let (_, servers) = list(dir.path());
    assert_eq!(
        server(&servers, "remote")["state"],
        "untrusted",
        "{servers}"
    );
}

#[test]
fn remote_mcp_servers_that_cannot_be_reached_are_reported_and_the_session_goes_on() {
    let dir = repo();
    let closed = free_port();
    std::fs::write(
        dir.path().join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "closed": {"type": "http", "url": format!("http://127.0.0.1:{closed}/mcp"), "startup_timeout_s": 5},
            "badurl": {"type": "streamable-http", "url": "ftp://127.0.0.1/mcp"},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        }})
        .to_string(),
    )
    .unwrap();
    trust(dir.path(), &["closed", "badurl", "old"]);
    let started = Instant::now();
    let (code, servers) = list(dir.path());
    assert_eq!(code, Some(1));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let reason = |name: &str| {
        let s = server(&servers, name);
        assert_eq!(s["state"], "failed", "{servers}");
        s["reason"].as_str().unwrap().to_string()
    };
    let closed_why = reason("closed");
    assert!(
        closed_why.contains("nothing answers") && closed_why.contains("is the server running"),
        "{closed_why}"
    );
    assert!(
        reason("badurl").contains("starts with https://"),
        "{servers}"
    );
    assert!(reason("old").contains("SSE"), "{servers}");

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
    assert!(
        stderr.contains("MCP server closed") && stderr.contains("nothing answers"),
        "{stderr}"
    );
    assert!(stderr.contains("MCP server badurl"), "{stderr}");
    common::assert_success(&out);
    assert_eq!(json_of(&out)["finish"], "answered");
}
