//! `--server` against the real llama-server (`AGENT_TEST_LLAMA_SERVER`, built
//! by scripts/test) started with `--jinja` and Qwen2.5's tool-capable
//! template: the request carries `tools`, the history an assistant
//! `tool_calls` turn and its `tool` result, and the server accepts them.
//! (The 135M model does not call tools, even under `tool_choice: required`,
//! which this llama-server lets write text first; a call coming back through
//! `tool_calls` is tested against canned streams in agent-llm.)

use crate::agent::{agent_in, json_of, repo};
use crate::common;

use std::time::{Duration, Instant};

/// A llama-server on loopback, killed on drop.
struct LlamaServer {
    child: std::process::Child,
    url: String,
}

impl LlamaServer {
    /// Logs verbosely into `log`: the prompts it renders are in there.
    fn start(binary: &std::ffi::OsStr, template: &std::path::Path, log: &std::path::Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(binary)
            .arg("-m")
            .arg(common::tiny_model())
            .arg("--jinja")
            .arg("--chat-template-file")
            .arg(template)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", "8192", "--threads", "2", "--parallel", "1", "-v"])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("llama-server starts");
        let server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let health = std::process::Command::new("curl")
                .args(["-sf", &format!("{}/health", server.url)])
                .output();
            if health.is_ok_and(|o| o.status.success()) {
                return server;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llama-server did not come up on {}", server.url);
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_real_llama_server_takes_tools_and_a_history_of_tool_calls() {
    let Some(binary) = std::env::var_os("AGENT_TEST_LLAMA_SERVER") else {
        eprintln!("skipped: AGENT_TEST_LLAMA_SERVER is set by scripts/test");
        return;
    };
    let template = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/agent-chat/tests/fixtures/templates/qwen2.5-instruct.jinja");
    let dir = repo();
    let log = dir.path().join(".git/llama-server.log");
    let server = LlamaServer::start(&binary, &template, &log);
    // With an index, the request starts with a search made for the model:
    // the one step's history holds an assistant call and its result.
    let indexed = agent_in(dir.path()).arg("index").output().unwrap();
    common::assert_success(&indexed);
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--max-steps", "1", "--max-tokens", "8"])
        .args(["--server", &format!("{}/v1", server.url)])
        .arg("Where is the function add defined?")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("model server"), "{stderr}");
    assert_ne!(out.status.code(), Some(1), "{stderr}");
    let v = json_of(&out);
    assert_eq!(v["steps"], 1, "{v}");
    let trace = std::fs::read_to_string(dir.path().join(".agent/logs/trace.jsonl")).unwrap();
    let request = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "llm_request")
        .expect("a request to the model");
    assert!(request["messages"].as_u64().unwrap() >= 4, "{request}");
    // The server's own count: the template rendered the tools' schemas.
    let response = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "llm_response")
        .expect("a reply");
    assert!(
        response["prompt_tokens"].as_u64().unwrap() > 500,
        "{response}"
    );
    // The server rendered our tools, the search call and its result its
    // own (Qwen's) way: the request spoke the chat API, not our JSON.
    drop(server);
    let rendered = std::fs::read_to_string(&log).unwrap();
    for part in ["<tools>", "<tool_call>", "<tool_response>"] {
        assert!(rendered.contains(part), "{part} not in the server's prompt");
    }
}
