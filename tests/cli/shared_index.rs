//! A shared index (`agent index --store`, `agent search/ask --store`): one
//! writer keeps it in a store, other clones search it read-only with their
//! own changes on top. Through the real binary, the real embedder and real
//! LanceDB, on a folder store here and on a real S3 server (moto, on
//! loopback) where `scripts/test-s3` provides one.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

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
"#;

const STRINGS_PY_EDITED: &str = r#"
def hamming_distance(a, b):
    """Count the positions at which two equal-length strings differ."""
    if len(a) != len(b):
        raise ValueError("hamming distance needs strings of equal length")
    return sum(ca != cb for ca, cb in zip(a, b))
"#;

const NET_RS: &str = r#"
use std::net::TcpStream;

/// Opens a TCP connection, retrying a few times with a growing delay.
pub fn connect_with_retry(addr: &str, attempts: u32) -> std::io::Result<TcpStream> {
    let mut delay = 10;
    let mut last = None;
    for _ in 0..attempts {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(delay));
        delay *= 2;
    }
    Err(last.unwrap())
}
"#;

const LEGACY_PY: &str = r#"
def parse_legacy_ini_settings(path):
    """Read the old INI settings file format into a dictionary."""
    settings = {}
    for line in open(path):
        if "=" in line:
            key, value = line.split("=", 1)
            settings[key.strip()] = value.strip()
    return settings
"#;

const CHECKSUM_PY: &str = r#"
def compute_crc32_checksum(data):
    """The CRC-32 checksum of a byte string, as an unsigned integer."""
    import zlib
    return zlib.crc32(data) & 0xFFFFFFFF
"#;

const SOCKET_RS: &str = r#"
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Opens a socket that gives up after a timeout instead of hanging.
pub fn open_socket_with_timeout(addr: &str, seconds: u64) -> std::io::Result<TcpStream> {
    let addr = addr.to_socket_addrs()?.next().expect("an address");
    TcpStream::connect_timeout(&addr, Duration::from_secs(seconds))
}
"#;

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// The repository as the CI job sees it.
fn upstream(root: &Path) {
    write(root, "pkg/strings.py", STRINGS_PY);
    write(root, "src/net.rs", NET_RS);
    write(root, "legacy.py", LEGACY_PY);
    write(
        root,
        "README.md",
        "# Demo\n\nA small repository for tests.\n",
    );
    std::fs::create_dir_all(root.join(".git")).unwrap();
}

/// The binary with the store's environment (credentials for S3).
fn agent(env: &[(&str, String)]) -> Command {
    let mut cmd = common::agent_bin();
    cmd.stdin(Stdio::null()).env_remove("AGENT_INDEX_STORE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn index(store: &str, env: &[(&str, String)], root: &Path) -> Value {
    let out = agent(env)
        .args(["index", "--json", "--store", store])
        .arg(root)
        .output()
        .unwrap();
    common::assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `agent search --store` in `root`: the (path, symbol) of each result, and
/// what it printed on stderr.
fn search(
    store: &str,
    env: &[(&str, String)],
    root: &Path,
    query: &str,
) -> (Vec<(String, String)>, String) {
    let out = agent(env)
        .args(["search", "--json", "-k", "3", "--store", store, "--root"])
        .arg(root)
        .arg(query)
        .output()
        .unwrap();
    common::assert_success(&out);
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hits = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["symbol"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (hits, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn paths(hits: &[(String, String)]) -> Vec<&str> {
    hits.iter().map(|(p, _)| p.as_str()).collect()
}

/// The whole workflow against one store; `listing` lists what the store
/// holds (object names and sizes), to check that readers write nothing.
fn shared_index_workflow(
    store: &str,
    env: &[(&str, String)],
    listing: &dyn Fn() -> BTreeMap<String, u64>,
) {
    common::tiny_model(); // the models folder is in place
    let tmp = tempfile::tempdir().unwrap();
    let ci = tmp.path().join("ci");
    upstream(&ci);

    // No index in the store yet: searching says how to make one.
    let out = agent(env)
        .args(["search", "--store", store, "--root"])
        .arg(&ci)
        .arg("anything")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("agent index --store"), "{err}");

    // The CI job builds it.
    let stats = index(store, env, &ci);
    assert_eq!(stats["files_indexed"], 4, "{stats}");
    assert!(stats["chunks_embedded"].as_u64().unwrap() > 0, "{stats}");
    assert!(
        !common::state_dir(&ci).join("index").exists(),
        "a shared index writes no local index"
    );

    // A developer's clone: one file edited, one deleted, one added, and no
    // index of its own.
    let dev = tmp.path().join("dev");
    upstream(&dev);
    write(&dev, "pkg/strings.py", STRINGS_PY_EDITED);
    std::fs::remove_file(dev.join("legacy.py")).unwrap();
    write(&dev, "tools/checksum.py", CHECKSUM_PY);
    let before = listing();

    // Unchanged files come from the shared index...
    let (hits, err) = search(store, env, &dev, "connect with retry and a growing delay");
    assert_eq!(
        hits[0],
        ("src/net.rs".into(), "connect_with_retry".into()),
        "{hits:?}"
    );
    assert!(err.contains("searching the shared index in"), "{err}");
    assert!(err.contains("3 files changed or deleted here"), "{err}");
    // ...this clone's version of a file replaces the shared one...
    let (hits, _) = search(store, env, &dev, "positions where two strings differ");
    assert_eq!(
        hits[0],
        ("pkg/strings.py".into(), "hamming_distance".into()),
        "{hits:?}"
    );
    let (hits, _) = search(store, env, &dev, "levenshtein edit distance");
    assert!(
        !hits.iter().any(|(_, s)| s == "levenshtein"),
        "the shared version of an edited file must not answer: {hits:?}"
    );
    // ...a file deleted here is gone, and a new one is found.
    let (hits, _) = search(store, env, &dev, "parse legacy INI settings");
    assert!(!paths(&hits).contains(&"legacy.py"), "{hits:?}");
    let (hits, _) = search(store, env, &dev, "crc32 checksum of bytes");
    assert_eq!(hits[0].0, "tools/checksum.py", "{hits:?}");
    // The same through the environment variable instead of the flag.
    let out = agent(env)
        .env("AGENT_INDEX_STORE", store)
        .args(["search", "--json", "-k", "1", "--root"])
        .arg(&dev)
        .arg("crc32 checksum of bytes")
        .output()
        .unwrap();
    common::assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("tools/checksum.py"));

    // Reverting the edit puts the shared version back.
    write(&dev, "pkg/strings.py", STRINGS_PY);
    let (hits, err) = search(store, env, &dev, "levenshtein edit distance");
    assert_eq!(
        hits[0],
        ("pkg/strings.py".into(), "levenshtein".into()),
        "{hits:?}"
    );
    assert!(err.contains("2 files changed or deleted here"), "{err}");

    // The agent's own search tool reads the shared index too.
    let turns = serde_json::json!([
        r#"{"thought": "search", "tool": "search_semantic", "args": {"query": "crc32 checksum of bytes"}}"#,
        r#"{"thought": "found", "tool": "finish", "args": {"answer": "in tools/checksum.py"}}"#
    ]);
    let script = tmp.path().join("turns.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    let out = agent(env)
        .current_dir(&dev)
        .args([
            "ask",
            "--output-format",
            "stream-json",
            "--store",
            store,
            "--script",
        ])
        .arg(&script)
        .arg("Which function computes the CRC-32 checksum, and where is it defined?")
        .output()
        .unwrap();
    common::assert_success(&out);
    let events = String::from_utf8_lossy(&out.stdout);
    // The prefetch and the scripted call: both find the file this clone added.
    let results: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"tool_result\"") && l.contains("search_semantic"))
        .collect();
    assert_eq!(results.len(), 2, "{events}");
    for r in results {
        assert!(
            r.contains("tools/checksum.py") && r.contains("shared index"),
            "{r}"
        );
    }

    // Readers wrote nothing to the store.
    assert_eq!(listing(), before, "a reader changed the store");

    // `--status` describes the shared index.
    let out = agent(env)
        .args(["index", "--status", "--json", "--store", store])
        .arg(&dev)
        .output()
        .unwrap();
    common::assert_success(&out);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["files"], 4, "{status}");
    assert_eq!(status["store"], store, "{status}");
    assert_eq!(status["complete"], true, "{status}");

    // The CI job keeps it current: an update redoes only what changed, and a
    // fresh runner (a new clone, no local state) embeds nothing again.
    write(&ci, "src/socket.rs", SOCKET_RS);
    let stats = index(store, env, &ci);
    assert_eq!(stats["files_indexed"], 1, "{stats}");
    let runner = tmp.path().join("runner");
    upstream(&runner);
    write(&runner, "src/socket.rs", SOCKET_RS);
    let stats = index(store, env, &runner);
    assert_eq!(stats["files_indexed"], 0, "{stats}");
    assert_eq!(stats["chunks_embedded"], 0, "{stats}");
    // A clone that matches the new version searches it with nothing on top.
    let (hits, err) = search(store, env, &runner, "open a socket with a timeout");
    assert_eq!(
        hits[0],
        ("src/socket.rs".into(), "open_socket_with_timeout".into()),
        "{hits:?}"
    );
    assert!(err.contains("searching the shared index"), "{err}");
    assert!(!err.contains("changed or deleted"), "{err}");
}

/// Every file under `dir` with its size (a folder store's listing).
fn folder_listing(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, e.metadata().map_or(0, |m| m.len()));
            }
        }
    }
    out
}

#[test]
fn a_shared_index_in_a_folder_is_searched_with_local_changes_on_top() {
    let store = tempfile::tempdir().unwrap();
    let uri = store.path().join("team-index");
    let uri = uri.to_str().unwrap().to_string();
    let listed = uri.clone();
    shared_index_workflow(&uri, &[], &move || folder_listing(Path::new(&listed)));
}

#[test]
fn an_unsupported_store_is_refused_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    upstream(tmp.path());
    let out = agent(&[])
        .args(["index", "--store", "gs://bucket/x"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s3://") && err.contains("fix:"), "{err}");
    #[cfg(not(feature = "s3"))]
    {
        let out = agent(&[])
            .args(["search", "--store", "s3://bucket/x", "--root"])
            .arg(tmp.path())
            .arg("x")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--features s3"), "{err}");
    }
}

/// A real S3 server: moto's server mode (`AGENT_TEST_MOTO_SERVER`, set up by
/// `scripts/test-s3`), on a free loopback port, stopped on drop.
#[cfg(feature = "s3")]
struct Moto {
    child: std::process::Child,
    endpoint: String,
}

#[cfg(feature = "s3")]
impl Moto {
    fn start(server: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let endpoint = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if ureq::get(&format!("{endpoint}/moto-api/")).call().is_ok() {
                return Self { child, endpoint };
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("moto_server did not answer on {endpoint}");
    }

    /// Object names and sizes in `bucket` (moto answers unsigned requests).
    fn listing(&self, bucket: &str) -> BTreeMap<String, u64> {
        let xml = ureq::get(&format!(
            "{}/{bucket}?list-type=2&max-keys=1000",
            self.endpoint
        ))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
        let field = |chunk: &str, tag: &str| -> String {
            let open = format!("<{tag}>");
            let start = chunk.find(&open).map(|i| i + open.len()).unwrap_or(0);
            let end = chunk[start..].find('<').map_or(start, |i| start + i);
            chunk[start..end].to_string()
        };
        xml.split("<Contents>")
            .skip(1)
            .map(|c| (field(c, "Key"), field(c, "Size").parse().unwrap_or(0)))
            .collect()
    }
}

#[cfg(feature = "s3")]
impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(feature = "s3")]
#[test]
fn a_shared_index_on_s3_is_searched_with_local_changes_on_top() {
    // Built only with --features s3, which scripts/test-s3 runs with moto.
    let server = std::env::var("AGENT_TEST_MOTO_SERVER")
        .expect("AGENT_TEST_MOTO_SERVER names moto_server: run scripts/test-s3");
    let moto = Moto::start(&server);
    ureq::put(&format!("{}/team-bucket", moto.endpoint))
        .call()
        .expect("the bucket is created");
    let env = [
        ("AWS_ACCESS_KEY_ID", "testing".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
        ("AWS_ENDPOINT_URL", moto.endpoint.clone()),
        ("AWS_ALLOW_HTTP", "true".to_string()),
    ];
    shared_index_workflow("s3://team-bucket/repos/demo", &env, &|| {
        moto.listing("team-bucket")
    });
    let objects = moto.listing("team-bucket");
    assert!(
        objects.contains_key("repos/demo/state.sqlite"),
        "{objects:?}"
    );
    assert!(
        objects.contains_key("repos/demo/embeddings.sqlite"),
        "{objects:?}"
    );
    assert!(
        objects
            .keys()
            .any(|k| k.starts_with("repos/demo/lance/chunks.lance/")),
        "{objects:?}"
    );
}
