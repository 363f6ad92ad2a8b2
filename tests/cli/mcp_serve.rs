//! `agent mcp serve`: the code index and the map as an MCP server, driven by
//! a real client (the `mcp` package's stdio client, tests/fixtures/
//! mcp_client.py) over a repository indexed by the real binary with the
//! real embedder; and by hand, to see every byte the server writes.

use crate::agent::{agent_in, mcp_python};
use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const NET_RS: &str = r#"use std::net::TcpStream;
use std::time::Duration;

/// How often and how patiently to retry a connection.
pub struct RetryPolicy {
    pub attempts: u32,
    pub base_delay_ms: u64,
}

impl RetryPolicy {
    /// The delay before attempt `n`: doubled after each failure.
    pub fn delay(&self, n: u32) -> Duration {
        Duration::from_millis(self.base_delay_ms << n)
    }
}

/// Opens a TCP connection, retrying with a growing delay.
pub fn connect_with_retry(addr: &str, policy: &RetryPolicy) -> std::io::Result<TcpStream> {
    let mut last = None;
    for n in 0..policy.attempts {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(policy.delay(n));
    }
    Err(last.unwrap())
}
"#;

const STRINGS_PY: &str = r#"
def levenshtein(a, b):
    """Number of single-character edits that turn a into b."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


class Matcher:
    """Finds the closest of a list of words."""

    def __init__(self, words):
        self.words = words

    def closest(self, word):
        return min(self.words, key=lambda w: levenshtein(w, word))
"#;

const CHECKSUM_PY: &str = r#"
def compute_crc32_checksum(data):
    """The CRC-32 checksum of a byte string, as an unsigned integer."""
    import zlib
    return zlib.crc32(data) & 0xFFFFFFFF
"#;

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// A small repository, indexed by `agent index` (real embedder, LanceDB).
fn indexed_repo() -> tempfile::TempDir {
    common::tiny_model(); // the models folder is in place
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    write(dir.path(), "src/net.rs", NET_RS);
    write(dir.path(), "pkg/strings.py", STRINGS_PY);
    write(dir.path(), "README.md", "# Demo\n\nA small repository.\n");
    let out = agent_in(dir.path()).args(["index"]).output().unwrap();
    common::assert_success(&out);
    dir
}

/// The real MCP client, with `agent mcp serve` as its server.
struct Client {
    process: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
}

impl Client {
    fn start(python: &str, repo: &Path) -> (Self, Value) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_client.py");
        let mut process = Command::new(python)
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_agent"))
            .args(["mcp", "serve", "--repo"])
            .arg(repo)
            .env("XDG_CONFIG_HOME", repo.join(".git/test-config"))
            .envs(common::state_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let requests = process.stdin.take().unwrap();
        let answers = BufReader::new(process.stdout.take().unwrap());
        let mut client = Self {
            process,
            requests,
            answers,
        };
        let hello = client.next_answer();
        (client, hello)
    }

    fn next_answer(&mut self) -> Value {
        let mut line = String::new();
        self.answers.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("the client said {line:?}: {e}"))
    }

    fn ask(&mut self, request: Value) -> Value {
        writeln!(self.requests, "{request}").unwrap();
        self.next_answer()
    }

    /// A tool call's result: whether it is an error, and its text.
    fn call(&mut self, name: &str, args: Value) -> (bool, String) {
        let answer = self.ask(json!({"op": "call", "name": name, "args": args}));
        let text = answer["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} {args}: {answer}"));
        (answer["isError"] == true, text.to_string())
    }

    /// A call that must succeed.
    fn text(&mut self, name: &str, args: Value) -> String {
        let (error, text) = self.call(name, args.clone());
        assert!(!error, "{name} {args} failed: {text}");
        text
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The files of a search's results, in order (the `### path:lines` heads).
fn result_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|h| h.split(':').next().unwrap().to_string())
        .collect()
}

/// `agent map` as a user runs it, with the same token count as the server
/// (a scripted model counts about four characters per token): its map and
/// the summary it prints on stderr.
fn agent_map(repo: &Path, args: &[&str]) -> (String, String) {
    let script = repo.join(".git/no-turns.json");
    std::fs::write(&script, "[]").unwrap();
    let out = agent_in(repo)
        .args(["map", "--script"])
        .arg(&script)
        .args(args)
        .output()
        .unwrap();
    common::assert_success(&out);
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap().trim().to_string(),
    )
}

#[test]
fn mcp_serve_answers_a_real_client_from_a_live_index() {
    let Some(python) = mcp_python() else {
        agent_test_support::skip!("AGENT_TEST_MCP_PYTHON is not set (scripts/test sets it up)");
    };
    let repo = indexed_repo();
    let (mut client, hello) = Client::start(&python, repo.path());
    assert_eq!(hello["server"], "agent", "{hello}");

    // The tools, each read-only with a schema.
    let listed = client.ask(json!({"op": "list"}));
    let tools = listed["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["search", "map", "definitions", "index_status"],
        "{listed}"
    );
    for t in tools {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
        assert_eq!(t["annotations"]["destructiveHint"], false, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }

    // Search finds the right file, by meaning and by name, and filters.
    let found = client.text(
        "search",
        json!({"query": "how many single-character edits turn one word into another", "k": 3}),
    );
    assert_eq!(result_paths(&found)[0], "pkg/strings.py", "{found}");
    assert!(found.contains("def levenshtein(a, b):"), "{found}");
    let found = client.text("search", json!({"query": "connect_with_retry", "k": 5}));
    assert_eq!(result_paths(&found)[0], "src/net.rs", "{found}");
    let rust_only = client.text(
        "search",
        json!({"query": "edit distance between words", "lang": "rust", "k": 5}),
    );
    let paths = result_paths(&rust_only);
    assert!(
        !paths.is_empty() && paths.iter().all(|p| p.ends_with(".rs")),
        "{rust_only}"
    );
    let under_pkg = client.text(
        "search",
        json!({"query": "retry delay", "path": "pkg/**", "k": 5}),
    );
    let paths = result_paths(&under_pkg);
    assert!(
        !paths.is_empty() && paths.iter().all(|p| p.starts_with("pkg/")),
        "{under_pkg}"
    );

    // Definitions: where `agent map` shows them.
    let defs = client.text("definitions", json!({"symbol": "RetryPolicy::delay"}));
    assert!(
        defs.starts_with("1 definition of `RetryPolicy::delay`:"),
        "{defs}"
    );
    assert!(
        defs.contains("- src/net.rs:12 method (in impl RetryPolicy): `pub fn delay(&self, n: u32) -> Duration`"),
        "{defs}"
    );
    let (map, _) = agent_map(repo.path(), &["--tokens", "4000"]);
    assert!(
        map.contains("    pub fn delay(&self, n: u32) -> Duration\n"),
        "{map}"
    );
    let defs = client.text("definitions", json!({"symbol": "Matcher.closest"}));
    assert!(defs.contains("- pkg/strings.py:19 method"), "{defs}");
    let none = client.text("definitions", json!({"symbol": "no_such_thing"}));
    assert!(none.contains("No definition of `no_such_thing`"), "{none}");

    // The map is the one `agent map` prints, at the same budget and focus.
    let served = client.text("map", json!({"tokens": 60, "focus": ["pkg/strings.py"]}));
    let (map, summary) = agent_map(
        repo.path(),
        &["--tokens", "60", "--focus", "pkg/strings.py"],
    );
    assert!(map.starts_with("pkg/strings.py:\n"), "{map}");
    assert_eq!(served, format!("{map}\n{summary}\n"));

    // A bad argument is an error result the caller can read, and the
    // server goes on serving.
    let (error, text) = client.call("search", json!({"query": "retry", "k": "many"}));
    assert!(error, "{text}");
    assert!(
        text.contains("invalid arguments for `search`") && text.contains("\"k\""),
        "{text}"
    );
    let (error, text) = client.call("search", json!({"query": "retry", "lang": "klingon"}));
    assert!(
        error && text.contains("unknown language \"klingon\""),
        "{text}"
    );
    let unknown = client.ask(json!({"op": "call", "name": "rm_rf", "args": {}}));
    assert!(
        unknown["error"]
            .as_str()
            .unwrap()
            .contains("unknown tool `rm_rf`"),
        "{unknown}"
    );

    let status = client.text("index_status", json!({}));
    assert!(status.contains("files        3"), "{status}");
    assert!(
        status.contains("this server updates it as files change"),
        "{status}"
    );

    // An edit while the server runs is found by the next searches.
    write(repo.path(), "tools/checksum.py", CHECKSUM_PY);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = client.text(
            "search",
            json!({"query": "crc32 checksum of a byte string", "k": 3}),
        );
        if result_paths(&found).first().map(String::as_str) == Some("tools/checksum.py") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new file was not found within 60 s: {found}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let defs = client.text("definitions", json!({"symbol": "compute_crc32_checksum"}));
    assert!(defs.contains("- tools/checksum.py:2 function"), "{defs}");
}

/// The server by hand: one JSON-RPC message per line each way.
struct Raw {
    server: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    /// Every line the server wrote to stdout.
    seen: Vec<String>,
}

impl Raw {
    fn start(repo: &Path) -> Self {
        let mut server = agent_in(repo)
            .args(["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let input = server.stdin.take();
        let output = BufReader::new(server.stdout.take().unwrap());
        let mut raw = Self {
            server,
            input,
            output,
            seen: Vec::new(),
        };
        let init = raw.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "agent", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, message: Value) {
        writeln!(self.input.as_mut().unwrap(), "{message}").unwrap();
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "stdout closed"
            );
            self.seen.push(line.clone());
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a protocol message on stdout ({e}): {line:?}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    /// A tool call's result text and whether it is an error.
    fn call(&mut self, id: u64, name: &str, args: Value) -> (bool, String) {
        let answer = self.request(id, "tools/call", json!({"name": name, "arguments": args}));
        let result = &answer["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"));
        (result["isError"] == true, text.to_string())
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

#[test]
fn mcp_serve_without_an_index_says_so_and_ends_when_the_client_leaves() {
    let dir = crate::agent::repo(); // calc.py and a README, no index
    let mut raw = Raw::start(dir.path());

    // Search cannot answer, and says how to make it; the rest answers and
    // says what is missing.
    let (error, text) = raw.call(2, "search", json!({"query": "add two numbers"}));
    assert!(error, "{text}");
    assert!(
        text.contains("no code index") && text.contains("run `agent index`"),
        "{text}"
    );
    let (error, text) = raw.call(3, "definitions", json!({"symbol": "add"}));
    assert!(!error, "{text}");
    assert!(text.starts_with("> Note: There is no code index"), "{text}");
    assert!(
        text.contains("- calc.py:1 function: `def add(a, b):`"),
        "{text}"
    );
    let (error, text) = raw.call(4, "map", json!({}));
    assert!(
        !error && text.contains("calc.py:\n  def add(a, b):"),
        "{text}"
    );
    let (error, text) = raw.call(5, "index_status", json!({}));
    assert!(!error && text.contains("no code index"), "{text}");
    assert!(
        !common::state_dir(dir.path()).join("index").exists(),
        "serving wrote an index"
    );

    // The client goes away: the server ends, having written nothing but
    // protocol messages.
    drop(raw.input.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = raw.server.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the server outlived its client by 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut raw.output, &mut rest).unwrap();
    raw.seen.extend(rest.lines().map(String::from));
    for line in &raw.seen {
        let message: Value = serde_json::from_str(line).unwrap();
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}
