//! `--server` against the real llama-server (`AGENT_TEST_LLAMA_SERVER`, built
//! by scripts/test) started with `--jinja` and Qwen2.5's tool-capable
//! template: the request carries `tools`, the history an assistant
//! `tool_calls` turn and its `tool` result, and the server accepts them.
//! The 135M model does not call tools, even under `tool_choice: required`
//! (this llama-server lets it write text first), so for a call coming back
//! through `tool_calls` a proxy forces the words of one into the first
//! reply (tests/fixtures/prefill_proxy.py); the server's own parser turns
//! them into the streamed `tool_calls` the agent runs.

use crate::agent::{agent_in, json_of, repo};
use crate::common::{self, LlamaServer};

/// The real llama-server with `--jinja` and `template`, logging verbosely
/// into `log`: the prompts it renders are in there.
fn start_jinja(
    binary: &std::ffi::OsStr,
    template: &std::path::Path,
    log: &std::path::Path,
) -> LlamaServer {
    let args = [
        "--jinja",
        "--chat-template-file",
        template.to_str().unwrap(),
        "-c",
        "8192",
        "--threads",
        "2",
        "--parallel",
        "1",
        "-v",
    ];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    LlamaServer::start(binary, &args, std::fs::File::create(log).unwrap().into())
}

#[test]
fn the_real_llama_server_takes_tools_and_a_history_of_tool_calls() {
    let Some(binary) = std::env::var_os("AGENT_TEST_LLAMA_SERVER") else {
        agent_test_support::skip!("AGENT_TEST_LLAMA_SERVER is set by scripts/test");
    };
    let template = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/agent-chat/tests/fixtures/templates/qwen2.5-instruct.jinja");
    let dir = repo();
    let log = dir.path().join(".git/llama-server.log");
    let server = start_jinja(&binary, &template, &log);
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
    let trace =
        std::fs::read_to_string(common::state_dir(dir.path()).join("logs/trace.jsonl")).unwrap();
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

/// `tests/fixtures/prefill_proxy.py` in front of `upstream`, killed on drop.
struct PrefillProxy {
    child: std::process::Child,
    url: String,
}

impl PrefillProxy {
    fn start(upstream: &str, log: &std::path::Path, prefill: &str) -> Self {
        use std::io::BufRead;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/prefill_proxy.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .args([upstream, log.to_str().unwrap(), prefill])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the proxy");
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let url = format!("http://127.0.0.1:{}", port.trim());
        Self { child, url }
    }
}

impl Drop for PrefillProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_tool_call_comes_back_from_the_real_llama_server_through_tool_calls() {
    let Some(binary) = std::env::var_os("AGENT_TEST_LLAMA_SERVER") else {
        agent_test_support::skip!("AGENT_TEST_LLAMA_SERVER is set by scripts/test");
    };
    let template = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "crates/agent-chat/tests/fixtures/templates/NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
    );
    let dir = repo();
    let server = start_jinja(&binary, &template, &dir.path().join(".git/llama.log"));
    // The 135M model never calls a tool on its own: the proxy writes the
    // call's words for it, and the server's Hermes parser turns them into
    // `tool_calls`, as it would the words of a model that calls tools.
    let log = dir.path().join(".git/proxy.jsonl");
    let prefill =
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}\n</tool_call>";
    let proxy = PrefillProxy::start(&server.url, &log, prefill);
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--max-steps", "2", "--max-tokens", "8"])
        .args(["--server", &format!("{}/v1", proxy.url)])
        .arg("What does calc.py do?")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("model server"), "{stderr}");
    drop(proxy);
    let exchanges: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The server answered the first request with a streamed call.
    let first = exchanges.get(1).and_then(|e| e["response"].as_str());
    let first = first.expect("a response to the first request");
    assert!(
        first.contains("\"finish_reason\":\"tool_calls\""),
        "{first}"
    );
    assert!(first.contains("\"tool_calls\""), "{first}");
    // The agent ran it: the next request carries the call and the file.
    let second = &exchanges.get(2).expect("a second request")["request"];
    let messages = second["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant's turn");
    let function = &call["tool_calls"][0]["function"];
    assert_eq!(function["name"], "read_file", "{call}");
    let args = function["arguments"].as_str().map_or_else(
        || function["arguments"].clone(),
        |s| serde_json::from_str(s).unwrap(),
    );
    assert_eq!(args["path"], "calc.py", "{call}");
    let result = messages.last().unwrap();
    assert_eq!(result["role"], "tool", "{second}");
    assert!(
        result["content"].as_str().unwrap().contains("return a + b"),
        "{result}"
    );
    assert_eq!(json_of(&out)["steps"], 2, "{stderr}");
}
