//! The code index end to end: real files, the real embedder, real LanceDB.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test: a panic is its failure, its output its report"
)]

#[path = "../common/mod.rs"]
mod common;

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_base::cancel::CancelToken;
use agent_index::{watch, Index, IndexOptions, SearchMode, SearchQuery, UpdateStats};

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


def slugify(title):
    return "-".join(title.lower().split())
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

pub struct ConfigLoader {
    path: String,
}

impl ConfigLoader {
    pub fn parseTomlConfig(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }
}
"#;

/// The binary, with this process's state home: the index the test opened
/// in-process is the one it finds.
fn agent_bin() -> std::process::Command {
    agent_base::paths::isolate_for_tests();
    let mut cmd = common::agent_bin();
    for var in ["XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"] {
        if let Some(value) = std::env::var_os(var) {
            cmd.env(var, value);
        }
    }
    cmd
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    // The index in-process and the binary share one state home.
    agent_base::paths::isolate_for_tests();
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// 40 files of two functions, each big enough to be a chunk of its own (80
/// chunks); `op` is the first function's operator, to make a second version.
fn sensor_files(root: &Path, op: &str) {
    let body = "    \"\"\"Scale the measured value by the calibration factor of the sensor, \
clamp it to the valid range of the device, and round it to the precision the display supports.\"\"\"\n";
    for i in 0..40 {
        write(
            root,
            &format!("m/f{i}.py"),
            format!("def function_{i}(x):\n{body}    return x {op} {i}\n\n\ndef other_{i}(y):\n{body}    return y - {i}\n").as_bytes(),
        );
    }
}

fn repo() -> tempfile::TempDir {
    common::tiny_model(); // the models folder is in place
    let dir = common::tempdir();
    write(dir.path(), "pkg/strings.py", STRINGS_PY.as_bytes());
    write(dir.path(), "src/net.rs", NET_RS.as_bytes());
    write(
        dir.path(),
        "README.md",
        b"# Demo\n\nA small repository for tests.\n",
    );
    dir
}

fn update(index: &mut Index) -> UpdateStats {
    index
        .update(&CancelToken::new(), &mut |_| {})
        .expect("update succeeds")
}

/// A test repository, indexed, and a token to stop a watcher on it.
fn indexed_repo() -> (tempfile::TempDir, Index, CancelToken) {
    let dir = repo();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    update(&mut index);
    (dir, index, CancelToken::new())
}

fn options() -> IndexOptions {
    agent_base::paths::isolate_for_tests();
    IndexOptions {
        threads: 1,
        ..IndexOptions::default()
    }
}

fn top(index: &mut Index, query: &str, mode: SearchMode) -> Vec<(String, String)> {
    let mut q = SearchQuery::new(query, 3);
    q.mode = mode;
    index
        .search(&q)
        .unwrap()
        .into_iter()
        .map(|r| (r.path, r.symbol))
        .collect()
}

#[test]
fn finds_functions_by_description_and_by_identifier_parts() {
    let dir = repo();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert_eq!(stats.files_seen, 3);
    assert_eq!(stats.files_indexed, 3);
    assert!(stats.chunks_written >= 3);

    for mode in [SearchMode::Vector, SearchMode::Hybrid] {
        let hits = top(&mut index, "edit distance between two strings", mode);
        assert_eq!(
            hits[0],
            ("pkg/strings.py".into(), "levenshtein".into()),
            "{mode:?}: {hits:?}"
        );
        let hits = top(
            &mut index,
            "retry a network connection with exponential backoff",
            mode,
        );
        assert_eq!(hits[0].0, "src/net.rs", "{mode:?}: {hits:?}");
    }
    // BM25 over split identifiers: "toml config" finds parseTomlConfig.
    let mut q = SearchQuery::new("toml config", 3);
    q.mode = SearchMode::Bm25;
    let hits = index.search(&q).unwrap();
    assert!(hits[0].text.contains("parseTomlConfig"), "{hits:?}");

    // Filters.
    let mut q = SearchQuery::new("function", 10);
    q.lang = Some("python".into());
    assert!(index
        .search(&q)
        .unwrap()
        .iter()
        .all(|r| r.path.ends_with(".py")));
    let mut q = SearchQuery::new("function", 10);
    q.path_glob = Some("src/**".into());
    let results = index.search(&q).unwrap();
    assert!(!results.is_empty() && results.iter().all(|r| r.path.starts_with("src/")));
}

#[test]
fn incremental_updates_touch_only_changed_files_and_handle_delete_and_rename() {
    let dir = repo();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let first = update(&mut index);
    let total_chunks = index.status().unwrap().chunks;

    let again = update(&mut index);
    assert_eq!(
        (
            again.files_indexed,
            again.chunks_embedded,
            again.files_removed
        ),
        (0, 0, 0)
    );

    // Touch without changing: nothing is re-chunked.
    std::thread::sleep(Duration::from_millis(20));
    write(
        dir.path(),
        "README.md",
        b"# Demo\n\nA small repository for tests.\n",
    );
    assert_eq!(update(&mut index).files_indexed, 0);

    // Edit one file: only it is redone, and only its new chunk is embedded.
    write(
        dir.path(),
        "pkg/strings.py",
        format!("{STRINGS_PY}\n\ndef shout(s):\n    return s.upper() + '!'\n").as_bytes(),
    );
    let edit = update(&mut index);
    assert_eq!(edit.files_indexed, 1);
    assert!(
        edit.chunks_embedded >= 1 && edit.chunks_embedded < first.chunks_embedded,
        "{edit:?}"
    );
    assert!(top(
        &mut index,
        "convert text to upper case and add an exclamation mark",
        SearchMode::Hybrid
    )
    .iter()
    .any(|(_, s)| s.contains("shout")));

    // Rename: the old path disappears, the new one costs no embedding.
    std::fs::rename(
        dir.path().join("src/net.rs"),
        dir.path().join("src/network.rs"),
    )
    .unwrap();
    let renamed = update(&mut index);
    assert_eq!(
        (
            renamed.files_indexed,
            renamed.files_removed,
            renamed.chunks_embedded
        ),
        (1, 1, 0),
        "{renamed:?}"
    );
    let paths: Vec<String> = top(&mut index, "tcp connect retry", SearchMode::Hybrid)
        .into_iter()
        .map(|h| h.0)
        .collect();
    assert!(
        paths.contains(&"src/network.rs".to_string()) && !paths.contains(&"src/net.rs".to_string())
    );

    // Delete.
    std::fs::remove_file(dir.path().join("README.md")).unwrap();
    let deleted = update(&mut index);
    assert_eq!(deleted.files_removed, 1);
    let status = index.status().unwrap();
    assert_eq!(status.files, 2);
    assert!(status.chunks < total_chunks + 2);
}

#[test]
fn identical_chunks_are_embedded_once_across_files_and_runs() {
    let dir = common::tempdir();
    common::tiny_model();
    write(dir.path(), "a/one.rs", NET_RS.as_bytes());
    write(dir.path(), "b/two.rs", NET_RS.as_bytes());
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert_eq!(stats.chunks_written % 2, 0);
    assert_eq!(stats.chunks_embedded, stats.chunks_written / 2, "{stats:?}");
    drop(index);

    // A later run that finds a third copy embeds nothing: the cache persists.
    write(dir.path(), "c/three.rs", NET_RS.as_bytes());
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    assert_eq!(update(&mut index).chunks_embedded, 0);
}

#[test]
fn bad_files_are_skipped_with_reasons() {
    let dir = repo();
    write(dir.path(), "bad_utf8.py", &[b'x', b'=', 0xff, 0xfe, b'\n']);
    write(dir.path(), "huge.rs", &vec![b'a'; 10 * 1024 * 1024]);
    write(
        dir.path(),
        "image.png",
        &[0x89, b'P', b'N', b'G', 0, 0, 0, 13],
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    let reason = |rel: &str| {
        stats
            .skipped
            .iter()
            .find(|s| s.rel == rel)
            .map(|s| s.reason.clone())
    };
    assert_eq!(reason("bad_utf8.py").as_deref(), Some("not valid UTF-8"));
    assert!(reason("huge.rs").unwrap().contains("larger than"));
    assert_eq!(reason("image.png").as_deref(), Some("binary"));
    assert_eq!(stats.files_indexed, 3, "{stats:?}");
}

#[test]
fn a_second_writer_is_refused_but_readers_work() {
    let dir = repo();
    let mut writer = Index::open_writer(dir.path(), options()).unwrap();
    update(&mut writer);
    let err = Index::open_writer(dir.path(), options())
        .err()
        .expect("second writer refused");
    assert!(err.to_string().contains("already updating"), "{err}");
    let mut reader = Index::open_reader(dir.path()).unwrap();
    assert!(reader.status().unwrap().writer_active);
    assert!(!reader
        .search(&SearchQuery::new("levenshtein", 3))
        .unwrap()
        .is_empty());
    drop(writer);
    assert!(Index::open_writer(dir.path(), options()).is_ok());
}

#[test]
fn a_corrupt_index_is_rebuilt_without_losing_files() {
    let dir = repo();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    update(&mut index);
    drop(index);
    let idx = agent_index::index_dir(dir.path());
    // Garbage over the state database.
    std::fs::write(idx.join("state.sqlite"), vec![0x42u8; 8192]).unwrap();
    let _ = std::fs::remove_file(idx.join("state.sqlite-wal"));
    assert!(Index::open_reader(dir.path())
        .err()
        .unwrap()
        .to_string()
        .contains("agent index"));
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert!(!stats.recovered.is_empty());
    assert_eq!(stats.files_indexed, 3);
    // The embedding cache lives in its own file and survived.
    assert_eq!(stats.chunks_embedded, 0, "{stats:?}");
    assert!(!index
        .search(&SearchQuery::new("levenshtein", 3))
        .unwrap()
        .is_empty());
    drop(index);

    // Garbage in the chunk table's manifests.
    for entry in walkdir(&idx.join("lance")) {
        if entry.to_string_lossy().contains("_versions") {
            std::fs::write(&entry, b"not a manifest").unwrap();
        }
    }
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert!(!stats.recovered.is_empty(), "{stats:?}");
    assert_eq!(stats.chunks_embedded, 0, "the embedding cache survived");
    assert!(!index
        .search(&SearchQuery::new("levenshtein", 3))
        .unwrap()
        .is_empty());
    drop(index);

    // Garbage over the embedding cache: started anew, said so, and the
    // index itself is untouched.
    std::fs::write(idx.join("embeddings.sqlite"), vec![0x42u8; 8192]).unwrap();
    let _ = std::fs::remove_file(idx.join("embeddings.sqlite-wal"));
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    let note = stats.recovered.join("; ");
    assert!(note.contains("embedding cache"), "{stats:?}");
    assert_eq!(index.status().unwrap().files, 3);
}

#[test]
fn an_old_state_file_keeps_its_embedding_cache() {
    // Schema 1 kept the cache inside state.sqlite; opening moves it.
    let dir = common::tempdir();
    let path = dir.path().join("state.sqlite");
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE files(rel TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
                 size INTEGER NOT NULL, chunks INTEGER NOT NULL);
             CREATE TABLE embeddings(key TEXT PRIMARY KEY, vector BLOB NOT NULL);
             CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO embeddings VALUES ('k', x'0000803f');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let state = agent_index::bench::State::open(&path).unwrap();
    assert_eq!(state.cached_vector_count().unwrap(), 1);
    assert_eq!(
        state.cached_vectors(&["k".into()]).unwrap()["k"],
        vec![1.0f32]
    );
    assert!(dir.path().join("embeddings.sqlite").is_file());
}

/// The chunker version every file of the index records.
fn recorded_chunkers(dir: &Path) -> Vec<u32> {
    let state = agent_index::index_dir(dir).join("state.sqlite");
    let db = rusqlite::Connection::open(state).unwrap();
    let mut stmt = db
        .prepare("SELECT chunker FROM files ORDER BY rel")
        .unwrap();
    let versions = stmt.query_map([], |r| r.get(0)).unwrap();
    versions.map(Result::unwrap).collect()
}

#[test]
fn an_index_an_older_chunker_built_is_re_chunked_by_the_next_update() {
    let dir = repo();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    update(&mut index);
    assert!(index.rechunking().is_none());
    drop(index);
    let current = agent_lang::chunk::VERSION;
    assert_eq!(recorded_chunkers(dir.path()), [current; 3]);

    // The state as a build from before chunker versions wrote it (schema 2).
    let state = agent_index::index_dir(dir.path()).join("state.sqlite");
    rusqlite::Connection::open(&state)
        .unwrap()
        .execute_batch("ALTER TABLE files DROP COLUMN chunker; PRAGMA user_version = 2;")
        .unwrap();
    let out = agent_bin().arg("index").arg(dir.path()).output().unwrap();
    common::assert_success(&out);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("re-chunking"))
        .collect();
    assert_eq!(said.len(), 1, "one line says why: {stderr}");
    assert!(
        said[0].contains("before versions were recorded")
            && said[0].contains(&format!("this is v{current}")),
        "{stderr}"
    );
    // Every file re-chunked, and the same chunks cost no embedding.
    assert!(
        stdout.contains("3 files seen: 3 indexed") && stdout.contains("vectors: 0 embedded"),
        "{stdout}"
    );
    assert_eq!(recorded_chunkers(dir.path()), [current; 3]);
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    assert!(index.rechunking().is_none());
    assert_eq!(
        top(
            &mut index,
            "edit distance between two strings",
            SearchMode::Hybrid
        )[0],
        ("pkg/strings.py".into(), "levenshtein".into())
    );
    // Done once: the next update leaves every file alone.
    let again = update(&mut index);
    assert_eq!((again.files_indexed, again.rechunking), (0, None));
    drop(index);

    // One file of an older chunker version (as a build of that version
    // recorded it): that file alone is re-chunked, and said so.
    rusqlite::Connection::open(&state)
        .unwrap()
        .execute(
            "UPDATE files SET chunker = ?1 WHERE rel = 'src/net.rs'",
            [current - 1],
        )
        .unwrap();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert_eq!(
        (stats.files_indexed, stats.chunks_embedded),
        (1, 0),
        "{stats:?}"
    );
    let why = stats.rechunking.expect("the update says why");
    assert!(why.contains("re-chunking 1 file"), "{why}");
    assert_eq!(recorded_chunkers(dir.path()), [current; 3]);
    assert_eq!(
        top(
            &mut index,
            "retry a network connection with exponential backoff",
            SearchMode::Hybrid
        )[0]
        .0,
        "src/net.rs"
    );
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walkdir(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn cancelling_leaves_a_consistent_index_that_the_next_run_completes() {
    let dir = common::tempdir();
    common::tiny_model();
    for i in 0..150 {
        write(
            dir.path(),
            &format!("m/f{i}.py"),
            format!("def function_{i}(x):\n    return x * {i}\n").as_bytes(),
        );
    }
    let cancel = CancelToken::new();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = index
        .update(&cancel, &mut |p| {
            if p.chunks_done > 0 {
                cancel.cancel(); // after the first batch
            }
        })
        .unwrap();
    assert!(stats.interrupted);
    assert!(stats.files_indexed > 0 && stats.files_indexed < 150);
    let status = index.status().unwrap();
    assert_eq!(status.files, stats.files_indexed);
    assert!(!status.complete);

    // While this writer is open, a search says the index is being updated;
    // once it is gone, that the index is partial.
    let search = || {
        let out = agent_bin()
            .args(["search", "--json", "--root"])
            .arg(dir.path())
            .arg("function")
            .output()
            .unwrap();
        common::assert_success(&out);
        out
    };
    assert!(String::from_utf8_lossy(&search().stderr).contains("being updated"));
    drop(index);

    // A partial index says so, in --status and in search.
    let out = agent_bin()
        .args(["index", "--status"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("partial"));
    let out = search();
    assert!(String::from_utf8_lossy(&out.stderr).contains("the index is partial"));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON stays clean");

    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let resumed = update(&mut index);
    assert_eq!(resumed.files_indexed, 150 - stats.files_indexed);
    let status = index.status().unwrap();
    assert_eq!(status.files, 150);
    assert!(status.complete);
}

#[test]
fn ctrl_c_while_embedding_stops_within_a_step_and_keeps_what_was_embedded() {
    let dir = common::tempdir();
    common::tiny_model();
    sensor_files(dir.path(), "*");
    let cancel = CancelToken::new();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = index
        .update(&cancel, &mut |p| {
            if p.chunks_embedded > 0 {
                cancel.cancel(); // one embedding step into the fill
            }
        })
        .unwrap();
    assert!(stats.interrupted);
    // Every file's rows were written before embedding began: all of it is
    // searchable by keyword, and the vectors are what is left.
    assert_eq!(stats.files_indexed, 40);
    let status = index.status().unwrap();
    assert_eq!((status.files, status.chunks), (40, 80));
    assert!(
        status.cached_embeddings > 0 && status.complete && status.embedded_chunks < 80,
        "{status:?}"
    );
    assert_eq!(stats.chunks_unembedded, 80 - status.embedded_chunks);
    let resumed = update(&mut index);
    assert_eq!(resumed.files_indexed, 0);
    assert_eq!(index.status().unwrap().embedded_chunks, 80);
    assert!(resumed.cache_hits as u64 >= status.cached_embeddings - status.embedded_chunks as u64);
    assert!(resumed.chunks_embedded < 80, "{resumed:?}");
}

#[test]
fn after_ctrl_c_while_embedding_every_count_agrees_and_status_says_interrupted() {
    let dir = common::tempdir();
    common::tiny_model();
    sensor_files(dir.path(), "*");
    let cancel = CancelToken::new();
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let mut stopped_at = None;
    let stats = index
        .update(&cancel, &mut |p| {
            if p.chunks_embedded > 0 && stopped_at.is_none() {
                stopped_at = Some(chrono::Utc::now());
                // The rows were written well before the fill stops.
                std::thread::sleep(Duration::from_millis(1100));
                cancel.cancel();
            }
        })
        .unwrap();
    assert!(stats.interrupted);
    let status = index.status().unwrap();
    // What this run embedded is in the table, in the cache and in the
    // count of what is left: one set of numbers.
    assert!(stats.chunks_embedded > 0, "{stats:?}");
    assert_eq!(status.embedded_chunks, stats.chunks_embedded, "{status:?}");
    assert_eq!(status.cached_embeddings, stats.chunks_embedded as u64);
    assert_eq!(
        stats.chunks_unembedded,
        status.chunks - status.embedded_chunks
    );
    assert!(status.complete && status.interrupted, "{status:?}");
    let text = status.describe();
    assert!(
        text.contains(&format!(
            "interrupted  the last update was stopped while embedding: {} chunks lack vectors",
            stats.chunks_unembedded
        )),
        "{text}"
    );
    // "last update" is when it ended, not when its rows were written.
    let last: chrono::DateTime<chrono::Utc> = status.last_update.unwrap().parse().unwrap();
    let stopped = stopped_at.unwrap().timestamp();
    assert!(last.timestamp() >= stopped, "{last} before {stopped}");

    let resumed = update(&mut index);
    assert_eq!(
        resumed.chunks_embedded + resumed.cache_hits,
        80 - stats.chunks_embedded,
        "{resumed:?}"
    );
    let status = index.status().unwrap();
    assert_eq!(status.embedded_chunks, 80);
    assert!(!status.interrupted);
    assert!(!status.describe().contains("interrupted"));
}

/// Found as a new user: after a chat, `index --status` said "partial: the
/// last update was interrupted" (4 of 4 runs), because the session's end
/// stopped its background indexer as the watcher started an update, or while
/// it filled vectors. That is how a session ends, not an interruption.
#[test]
fn a_session_ending_leaves_the_index_neither_partial_nor_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    common::tiny_model();
    sensor_files(dir.path(), "*");
    // Small fill groups: the end of the session is seen between two.
    let background = || IndexOptions {
        background: true,
        fill_commit: 4,
        ..options()
    };
    let mut index = Index::open_writer(dir.path(), background()).unwrap();
    update(&mut index);
    // The watcher starts an update as the session ends.
    write(
        dir.path(),
        "pkg/new.py",
        b"def brand_new():\n    return 1\n",
    );
    let ended = CancelToken::new();
    ended.cancel();
    assert!(index.update(&ended, &mut |_| {}).unwrap().interrupted);
    let status = index.status().unwrap();
    assert!(status.complete && !status.interrupted, "{status:?}");
    // The session ends while the fill embeds: the rest waits for the next
    // writer, which the status says without an alarm.
    sensor_files(dir.path(), "+");
    let ending = CancelToken::new();
    let stats = index
        .update(&ending, &mut |p| {
            if p.chunks_embedded > 0 {
                ending.cancel();
            }
        })
        .unwrap();
    assert!(stats.chunks_unembedded > 0, "{stats:?}");
    let status = index.status().unwrap();
    assert!(status.complete && !status.interrupted, "{status:?}");
    let text = status.describe();
    assert!(
        !text.contains("interrupted") && !text.contains("partial"),
        "{text}"
    );
    assert!(text.contains("until `agent index` fills them in"), "{text}");
    drop(index);
    // The next session (or `agent index`) finishes the fill.
    let mut index = Index::open_writer(dir.path(), background()).unwrap();
    update(&mut index);
    let status = index.status().unwrap();
    assert_eq!(status.embedded_chunks, status.chunks);
}

#[test]
fn files_are_searchable_by_keyword_first_then_get_vectors_in_priority_order() {
    let dir = common::tempdir();
    common::tiny_model();
    sensor_files(dir.path(), "*");
    let options = IndexOptions {
        fill_commit: 4,
        ..options()
    };
    let mut index = Index::open_writer(dir.path(), options).unwrap();
    let cancel = CancelToken::new();
    let mut stats = index.update_rows(&cancel, &mut |_| {}).unwrap();
    assert!(!stats.interrupted);
    let status = index.status().unwrap();
    assert_eq!(
        (status.files, status.chunks, status.embedded_chunks),
        (40, 80, 0)
    );
    // Keyword search finds every file already; no vector is in yet, and
    // searches say so.
    assert_eq!(
        top(&mut index, "function_17", SearchMode::Bm25)[0].0,
        "m/f17.py"
    );
    assert!(top(&mut index, "scale the measured value", SearchMode::Vector).is_empty());
    let notes = index.notes().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("vectors cover 0 of 80 chunks")),
        "{notes:?}"
    );
    // The fill goes in the order it is given: stopped after its first
    // commit, only the first two files have vectors.
    let priority = ["m/f31.py".to_string(), "m/f5.py".to_string()];
    index
        .fill_vectors(&priority, &mut stats, &cancel, &mut |p| {
            if p.chunks_unembedded < 80 {
                cancel.cancel();
            }
        })
        .unwrap();
    assert!(stats.interrupted);
    let mut q = SearchQuery::new("scale the measured value", 10);
    q.mode = SearchMode::Vector;
    let paths: HashSet<String> = index
        .search(&q)
        .unwrap()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(
        paths,
        HashSet::from(["m/f31.py".to_string(), "m/f5.py".to_string()])
    );
    // The next update finishes the fill, and the notes go.
    update(&mut index);
    assert_eq!(index.status().unwrap().embedded_chunks, 80);
    assert!(index.notes().unwrap().is_empty());
}

#[test]
fn kill_9_while_embedding_loses_at_most_one_step() {
    let dir = common::tempdir();
    common::tiny_model();
    sensor_files(dir.path(), "*");
    let mut child = agent_bin()
        .args(["index", "--json"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Watch the cache file; kill -9 once the first embedding step is saved.
    let cache = agent_base::paths::state_dir(dir.path()).join("index/embeddings.sqlite");
    let cached = || -> i64 {
        rusqlite::Connection::open_with_flags(&cache, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|db| db.query_row("SELECT count(*) FROM embeddings", [], |r| r.get(0)))
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while cached() == 0 && Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let kept = cached();
    assert!(kept > 0, "nothing was cached before the kill");
    // The next run finishes the index and embeds only what was not kept.
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    let status = index.status().unwrap();
    assert_eq!((status.files, status.chunks), (40, 80), "{status:?}");
    assert!(status.complete);
    assert!(stats.cache_hits as i64 >= kept, "{stats:?}, {kept} cached");
    assert!(stats.chunks_embedded < 80, "{stats:?}");
}

#[test]
fn progress_moves_per_file_and_per_embedded_chunk() {
    let dir = common::tempdir();
    common::tiny_model();
    // 80 chunks: more than one embedding step.
    sensor_files(dir.path(), "*");
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let mut seen: Vec<agent_index::Progress> = Vec::new();
    index
        .update(&CancelToken::new(), &mut |p| seen.push(p.clone()))
        .unwrap();
    // Every file is reported on its own, before its batch is written...
    let files: Vec<usize> = seen.iter().map(|p| p.files_done).collect();
    for n in 1..=40 {
        assert!(files.contains(&n), "{files:?}");
    }
    // ...then, with every file searchable, embedding reports as it goes.
    let first_embedding = seen.iter().position(|p| p.chunks_embedded > 0).unwrap();
    assert!(seen[..first_embedding].iter().any(|p| p.searchable));
    let embedding: Vec<usize> = seen
        .iter()
        .filter(|p| p.searchable)
        .map(|p| p.chunks_embedded)
        .collect();
    let last = seen.last().unwrap();
    assert!(last.chunks_embedded >= 80, "{last:?}");
    assert!(
        embedding.iter().any(|&e| e > 0 && e < last.chunks_embedded),
        "{embedding:?}"
    );
}

#[test]
fn code_ranks_before_docs_unless_the_query_asks_for_docs() {
    common::tiny_model();
    let dir = common::tempdir();
    write(
        dir.path(),
        "flask/helpers.py",
        b"import os\n\n\ndef get_debug_flag():\n    \"\"\"Get whether debug mode should be enabled for the app.\"\"\"\n    val = os.environ.get(\"FLASK_DEBUG\")\n    return bool(val and val.lower() not in {\"0\", \"false\", \"no\"})\n",
    );
    write(
        dir.path(),
        "docs/config.rst",
        b"Debug Mode\n==========\n\nDebug mode is enabled when the FLASK_DEBUG environment variable is set.\nThe debug flag enables the debugger and the reloader. Do not enable debug mode in production.\n",
    );
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    update(&mut index);
    let first = |index: &mut Index, q: &str| {
        index.search(&SearchQuery::new(q, 2)).unwrap()[0]
            .path
            .clone()
    };
    assert_eq!(
        first(&mut index, "how is debug mode enabled"),
        "flask/helpers.py"
    );
    assert_eq!(
        first(&mut index, "what do the docs say about debug mode"),
        "docs/config.rst"
    );
}

#[test]
fn indexing_keeps_state_out_of_git_and_names_its_root_outside_a_repository() {
    let dir = repo();
    let out = agent_bin()
        .current_dir(dir.path())
        .arg("index")
        .output()
        .unwrap();
    common::assert_success(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let root = dir.path().canonicalize().unwrap();
    assert!(
        err.contains("not inside a git repository") && err.contains(&root.display().to_string()),
        "{err}"
    );
    // The index is in the state folder, nothing of the agent's in the folder.
    assert!(agent_base::paths::state_dir(dir.path())
        .join("index/state.sqlite")
        .is_file());
    assert!(!dir.path().join(".agent").exists());
}

#[test]
fn the_watcher_makes_an_edit_searchable() {
    let (dir, mut index, cancel) = indexed_repo();
    let root = dir.path().to_path_buf();
    let stopper = cancel.clone();
    let editor = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        write(
            &root,
            "pkg/geometry.py",
            b"def circle_area(radius):\n    return 3.14159 * radius * radius\n",
        );
        // Give up after 30 s so a broken watcher fails the test instead of hanging it.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !stopper.is_cancelled() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        stopper.cancel();
    });
    let started = Instant::now();
    let mut seen = false;
    let watch_cancel = cancel.clone();
    watch::watch(&mut index, Duration::from_millis(100), &cancel, &mut |r| {
        let stats = r.expect("update in watcher");
        if stats.files_indexed > 0 {
            seen = true;
            watch_cancel.cancel();
        }
    })
    .unwrap();
    editor.join().unwrap();
    assert!(
        seen,
        "the watcher never indexed the new file (waited {:?})",
        started.elapsed()
    );
    let hits = top(
        &mut index,
        "area of a circle from its radius",
        SearchMode::Hybrid,
    );
    assert_eq!(hits[0].0, "pkg/geometry.py", "{hits:?}");
}

#[test]
fn the_watcher_stays_idle_when_files_are_only_read() {
    let (dir, mut index, cancel) = indexed_repo();
    let root = dir.path().to_path_buf();
    let stopper = cancel.clone();
    let reader = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        // What an editor, `grep -r` or the agent's own tools do all day.
        for entry in walkdir(&root) {
            let _ = std::fs::read(entry);
        }
        std::thread::sleep(Duration::from_millis(1500));
        stopper.cancel();
    });
    let mut updates = 0;
    watch::watch(&mut index, Duration::from_millis(100), &cancel, &mut |r| {
        r.expect("update in watcher");
        updates += 1;
    })
    .unwrap();
    reader.join().unwrap();
    // Opening files changes nothing, and an update's own walk must not
    // trigger the next update (that loop ran every debounce period).
    assert_eq!(updates, 0, "updates without any change");
}

#[test]
fn cli_index_status_and_search_json() {
    let dir = repo();
    let out = agent_bin()
        .args(["index", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    common::assert_success(&out);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["files_indexed"], 3);

    let out = agent_bin()
        .args(["search", "--json", "-k", "2", "--root"])
        .arg(dir.path())
        .arg("edit distance")
        .output()
        .unwrap();
    common::assert_success(&out);
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &results[0];
    for key in ["path", "start_line", "end_line", "symbol", "score", "text"] {
        assert!(!first[key].is_null(), "missing {key} in {first}");
    }
    assert_eq!(first["symbol"], "levenshtein");

    let out = agent_bin()
        .args(["index", "--status", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["files"], 3);

    // Searching where there is no index names the fix.
    let empty = common::tempdir();
    let out = agent_bin()
        .args(["search", "--root"])
        .arg(empty.path())
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent index"));
}

/// A watcher process (`agent index --watch --json`) on `dir`, ended on drop
/// so a failing assertion never leaves one running, and its reports.
struct Watcher(std::process::Child);

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_watcher(dir: &Path) -> (Watcher, std::sync::mpsc::Receiver<serde_json::Value>) {
    use std::io::BufRead;
    let mut child = Watcher(
        agent_bin()
            .args(["index", "--watch", "--json"])
            .arg(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn cli_watch_keeps_the_repo_map_current() {
    let dir = repo();
    let (mut child, rx) = spawn_watcher(dir.path());
    // The first report is the initial update; then the watcher is running.
    let initial = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("initial update");
    assert!(initial["files_indexed"].as_u64().unwrap() > 0, "{initial}");
    std::thread::sleep(Duration::from_millis(300));
    write(
        dir.path(),
        "pkg/extra.py",
        b"def brand_new_helper(x):\n    return x * 2\n",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let stats = rx
            .recv_timeout(left)
            .expect("the watcher reported the edit");
        if stats["files_indexed"].as_u64() > Some(0) {
            break;
        }
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.0.wait().unwrap();
    // Loaded from the cache alone, no refresh: the watcher kept it current.
    let root = dir.path();
    let map = agent_repomap::RepoMap::open(root, &agent_repomap::default_cache_path(root));
    let tags = map
        .tags("pkg/extra.py")
        .expect("the new file is in the map's cache");
    assert!(
        tags.defs.iter().any(|d| d.name == "brand_new_helper"),
        "{tags:?}"
    );
}

/// inotify watches and open descriptors of a process.
fn watches_and_fds(pid: u32) -> (usize, usize) {
    let mut watches = 0;
    let mut fds = 0;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        fds += 1;
        let is_inotify =
            std::fs::read_link(entry.path()).is_ok_and(|t| t.to_string_lossy().contains("inotify"));
        if is_inotify {
            let info = format!("/proc/{pid}/fdinfo/{}", entry.file_name().to_string_lossy());
            let info = std::fs::read_to_string(info).unwrap_or_default();
            watches += info
                .lines()
                .filter(|l| l.starts_with("inotify wd:"))
                .count();
        }
    }
    (watches, fds)
}

#[test]
fn the_watcher_holds_steady_and_stays_in_the_repository() {
    let dir = repo();
    // Links out of the repository: a tree of 200 folders, and `/` itself.
    let outside = common::tempdir();
    for i in 0..200 {
        std::fs::create_dir_all(outside.path().join(format!("d{i}"))).unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), dir.path().join("big")).unwrap();
    std::os::unix::fs::symlink("/", dir.path().join("rootfs")).unwrap();
    let (child, rx) = spawn_watcher(dir.path());
    let pid = child.0.id();
    rx.recv_timeout(Duration::from_secs(60))
        .expect("initial update");
    // The watch starts after the initial update is reported.
    std::thread::sleep(Duration::from_millis(500));
    let edit_and_wait = |i: usize| {
        // Each edit changes the size, so no update can take it for unchanged.
        let content = format!("{STRINGS_PY}\n#{}\n", "x".repeat(i + 1));
        write(dir.path(), "pkg/strings.py", content.as_bytes());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let stats = rx
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("the watcher did not report edit {i}: {e:?}"));
            if stats["files_indexed"].as_u64() > Some(0) {
                break;
            }
        }
    };
    edit_and_wait(0);
    let (watches, fds_before) = watches_and_fds(pid);
    // The repository has a handful of folders; the links are not followed.
    assert!(watches < 20, "{watches} inotify watches");
    for i in 1..=20 {
        edit_and_wait(i);
    }
    let (_, fds_after) = watches_and_fds(pid);
    // Before: two more descriptors per update (every old BM25 index kept open).
    assert!(
        fds_after <= fds_before + 4,
        "descriptors grew from {fds_before} to {fds_after} over 20 updates"
    );
}

#[test]
fn a_crash_before_the_bm25_index_is_built_is_finished_by_the_next_run() {
    let dir = repo();
    {
        let mut index = Index::open_writer(dir.path(), options()).unwrap();
        // Die (as kill -9 would) once the last batch is saved, before the
        // full-text index is built.
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            index.update(&CancelToken::new(), &mut |p| {
                if p.files_total > 0 && p.chunks_done > 0 && p.files_done == p.files_total {
                    panic!("crash after the last batch");
                }
            })
        }));
        assert!(crashed.is_err());
        let status = index.status().unwrap();
        assert!(
            status.chunks > 0 && !status.text_index && !status.complete,
            "{status:?}"
        );
    }
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert_eq!(stats.files_indexed, 0, "nothing left to embed");
    let status = index.status().unwrap();
    assert!(status.text_index && status.complete, "{status:?}");
    let hits = top(&mut index, "toml config", SearchMode::Bm25);
    assert_eq!(hits[0].0, "src/net.rs", "{hits:?}");
}

/// A tmpfs of `kib` KiB mounted for the test's lifetime (None without the
/// privilege to mount).
struct SmallDisk(std::path::PathBuf);
impl SmallDisk {
    /// A tmpfs over `dir` (which exists); `None` where root's `mount` fails
    /// (a user who is not root cannot mount at all, which
    /// [`skip_unless_root`] says first).
    fn mount_at(dir: std::path::PathBuf, kib: usize) -> Option<Self> {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self(dir))
    }
}
/// Skips the test, as optional, for a user who is not root (CI runs as
/// root, where a mount that fails is a broken set-up).
macro_rules! skip_unless_root {
    () => {
        // SAFETY: geteuid reads the process's credentials and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            agent_test_support::skip!(optional: "mounting a tmpfs needs root, and this user is not");
        }
    };
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_full_disk_never_deletes_rows() {
    common::tiny_model();
    skip_unless_root!();
    // The index lives in the state folder: that is the disk that fills.
    agent_base::paths::isolate_for_tests();
    let root = common::tempdir().keep().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let state = agent_base::paths::state_dir(&root);
    std::fs::create_dir_all(&state).unwrap();
    let Some(disk) = SmallDisk::mount_at(state.clone(), 16 * 1024) else {
        agent_test_support::skip!("root cannot mount a tmpfs here");
    };
    let version = |op: &str| sensor_files(&root, op);
    // Both versions indexed once, so going back embeds nothing: the only
    // big write left is the chunk table's.
    version("*");
    let mut index = Index::open_writer(&root, options()).unwrap();
    update(&mut index);
    version("+");
    update(&mut index);
    let before = index.status().unwrap();
    assert_eq!(before.files, 40);
    version("*");

    // Fill the disk, leaving a few pages for SQLite's bookkeeping.
    let filler = disk.0.join("filler.bin");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 64 * 1024];
    while std::io::Write::write_all(&mut f, &block).is_ok() {}
    let full = f.metadata().unwrap().len();
    f.set_len(full.saturating_sub(64 * 1024)).unwrap();
    drop(f);

    let failed = index.update(&CancelToken::new(), &mut |_| {});
    assert!(failed.is_err(), "the disk is full: {failed:?}");
    let message = format!("{:#}", failed.unwrap_err());
    assert!(message.contains("rows are as before"), "{message}");
    let status = index.status().unwrap();
    assert_eq!(status.chunks, before.chunks, "rows were lost");
    let hits = top(
        &mut index,
        "scale the value by the calibration factor",
        SearchMode::Vector,
    );
    assert_eq!(hits.len(), 3, "{hits:?}");

    // With room again, the next run completes.
    std::fs::remove_file(&filler).unwrap();
    let stats = update(&mut index);
    assert_eq!(stats.files_indexed, 40);
    assert_eq!(stats.chunks_embedded, 0);
    assert_eq!(index.status().unwrap().chunks, before.chunks);
}

/// The issue's path through the binary: a full disk while new content is
/// embedded (the embedding cache and the state cannot grow either) fails the
/// update, and once there is room again the last good index is searchable
/// as before: nothing was mistaken for damage and thrown away.
#[test]
fn a_failed_update_on_a_full_disk_leaves_the_last_index_searchable() {
    common::tiny_model();
    skip_unless_root!();
    agent_base::paths::isolate_for_tests();
    let root = common::tempdir().keep().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let state = agent_base::paths::state_dir(&root);
    std::fs::create_dir_all(&state).unwrap();
    let Some(disk) = SmallDisk::mount_at(state.clone(), 4 * 1024) else {
        agent_test_support::skip!("root cannot mount a tmpfs here");
    };
    for i in 0..20 {
        write(
            &root,
            &format!("m/f{i}.py"),
            format!("def handler_{i}(request):\n    \"\"\"Answer request {i} with the cached page.\"\"\"\n    return {i}\n").as_bytes(),
        );
    }
    let agent = |args: &[&str]| agent_bin().current_dir(&root).args(args).output().unwrap();
    common::assert_success(&agent(&["index"]));
    let files_found = || {
        let out = agent(&[
            "search",
            "--json",
            "-k",
            "20",
            "answer the request with the cached page",
        ]);
        common::assert_success(&out);
        let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let files: HashSet<String> = hits
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap().to_string())
            .collect();
        (
            files.len(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (before, _) = files_found();
    assert!(before >= 10, "{before} files found");

    let filler = disk.0.join("filler.bin");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 16 * 1024];
    while std::io::Write::write_all(&mut f, &block).is_ok() {}
    drop(f);
    for i in 0..3 {
        // Same size, so the edit itself fits on the full disk.
        write(
            &root,
            &format!("m/f{i}.py"),
            format!("def handler_{i}(request):\n    \"\"\"Reply to request {i} with a fresh page.\"\"\"\n    return {i}\n").as_bytes(),
        );
    }
    let out = agent(&["index"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&filler).unwrap();

    let (after, notes) = files_found();
    assert!(
        after >= before - 3,
        "{after} of {before} files found after the failure; {notes}"
    );
    assert!(!notes.contains("vectors cover 0"), "{notes}");
    let status = agent(&["index", "--status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(
        status["embedded_chunks"].as_u64().unwrap_or(0) >= 17,
        "{status}"
    );
    // And the next run finishes the update.
    common::assert_success(&agent(&["index"]));
    assert_eq!(files_found().0, before);
}

/// `agent index --status --json` in `dir`: (exit code, damage).
fn status_damage(dir: &Path) -> (Option<i32>, serde_json::Value) {
    let out = agent_bin()
        .args(["index", "--status", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!("no JSON: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code(), v["damage"].clone())
}

/// Opens a writer, updates, and returns what it said it repaired.
fn repair(dir: &Path) -> UpdateStats {
    let mut index = Index::open_writer(dir, options()).unwrap();
    let stats = update(&mut index);
    assert_eq!(
        stats.chunks_embedded, 0,
        "repaired from the cache: {stats:?}"
    );
    assert_eq!(index.status().unwrap().files, 3);
    for mode in [SearchMode::Vector, SearchMode::Bm25, SearchMode::Hybrid] {
        assert!(
            !top(&mut index, "levenshtein edit distance", mode).is_empty(),
            "{mode:?}"
        );
    }
    stats
}

#[test]
fn damage_is_detected_and_repaired_without_re_embedding() {
    let (dir, index, _) = indexed_repo();
    drop(index);
    let lance = agent_index::index_dir(dir.path()).join("lance");

    // A truncated data file: searches say what to run, status says damaged.
    let data: Vec<_> = walkdir(&lance)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "lance") && p.to_string_lossy().contains("/data/")
        })
        .collect();
    assert!(!data.is_empty());
    for file in &data {
        let len = std::fs::metadata(file).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(file)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    }
    let mut reader = Index::open_reader(dir.path()).unwrap();
    let err = reader
        .search(&SearchQuery::new("levenshtein", 3))
        .map(|_| ())
        .unwrap_err();
    assert!(format!("{err:#}").contains("run `agent index`"), "{err:#}");
    drop(reader);
    let (code, damage) = status_damage(dir.path());
    assert_eq!(code, Some(1));
    assert!(damage.as_str().unwrap().contains("damaged"), "{damage}");
    let stats = repair(dir.path());
    assert!(stats.recovered.join("; ").contains("chunk table"));
    assert_eq!(
        status_damage(dir.path()),
        (Some(0), serde_json::Value::Null)
    );

    // The whole table deleted: not "no results".
    std::fs::remove_dir_all(&lance).unwrap();
    let out = agent_bin()
        .args(["search", "--root"])
        .arg(dir.path())
        .arg("levenshtein")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `agent index`"));
    let (code, _) = status_damage(dir.path());
    assert_eq!(code, Some(1));
    let stats = repair(dir.path());
    assert!(stats.recovered.join("; ").contains("chunk table"));

    // A damaged BM25 index: rebuilt on its own.
    let fts: Vec<_> = walkdir(&lance.join("chunks.lance/_indices"));
    assert!(!fts.is_empty());
    for file in &fts {
        std::fs::write(file, b"not an index").unwrap();
    }
    let stats = repair(dir.path());
    let note = stats.recovered.join("; ");
    assert!(
        note.contains("BM25") || note.contains("chunk table"),
        "{note}"
    );
}

/// An issue text as the query: the file the issue is about comes first, its
/// test file after it, and results come grouped by file.
#[test]
fn an_issue_text_finds_the_file_it_is_about() {
    common::tiny_model();
    let dir = common::tempdir();
    let root = dir.path();
    let mut latex = String::from(
        "class LatexPrinter:\n    \"\"\"Renders expressions as LaTeX.\"\"\"\n\n    def _print_Function(self, expr, exp=None):\n        inv_trig_style = self._settings['inv_trig_style']\n        inv_trig_table = [\"asin\", \"acos\", \"atan\", \"acot\"]\n        func = expr.func.__name__\n        if func in inv_trig_table and inv_trig_style == \"full\":\n            func = \"arc\" + func[1:]\n        return func\n",
    );
    for i in 0..6 {
        latex.push_str(&format!(
            "\n    def _print_Other{i}(self, expr):\n        \"\"\"Prints variant {i} of an expression with braces.\"\"\"\n        return '{{' + str(expr) + '}}'\n"
        ));
    }
    write(root, "pkg/printing/latex.py", latex.as_bytes());
    let mut tests = String::new();
    for f in ["asin", "acos", "acsc", "asec"] {
        tests.push_str(&format!(
            "def test_latex_{f}():\n    assert latex({f}(x), inv_trig_style=\"full\") == '\\\\arc{f}'\n    assert latex({f}(x), inv_trig_style=\"power\") == '{f}'\n\n\n"
        ));
    }
    write(root, "pkg/printing/tests/test_latex.py", tests.as_bytes());
    write(
        root,
        "pkg/core/basic.py",
        b"class Basic:\n    \"\"\"Base class for all objects.\"\"\"\n\n    def __eq__(self, other):\n        return self._hashable_content() == other._hashable_content()\n",
    );
    write(
        root,
        "README.md",
        b"# pkg\n\nSymbolic maths. The latex printer supports inverse trig functions.\n",
    );
    let issue = "latex printer does not support full inverse trig function names for acsc and asec\n\n\
For example `latex(asin(x), inv_trig_style=\"full\")` works as expected returning `'\\\\arcsin{x}'`.\n\
But `latex(acsc(x), inv_trig_style=\"full\")` gives `'\\\\operatorname{acsc}{x}'` instead.\n\n\
A fix seems to be to change line 743 of pkg/printing/latex.py from\n\
`inv_trig_table = [\"asin\", \"acos\", \"atan\", \"acot\"]` to\n\
`inv_trig_table = [\"asin\", \"acos\", \"atan\", \"acsc\", \"asec\", \"acot\"]`\n\n\
It seems to work for me with this change and the output is what I would expect then.";
    let mut index = Index::open_writer(root, options()).unwrap();
    update(&mut index);
    for mode in [SearchMode::Hybrid, SearchMode::Bm25, SearchMode::Vector] {
        let mut q = SearchQuery::new(issue, 10);
        q.mode = mode;
        let hits = index.search(&q).unwrap();
        let files: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(files[0], "pkg/printing/latex.py", "{mode:?}: {files:?}");
        // Grouped: a file's chunks are together, at most 3 of them.
        let mut seen: Vec<&str> = Vec::new();
        for f in &files {
            if seen.last() != Some(f) {
                assert!(!seen.contains(f), "{mode:?}: {f} is split: {files:?}");
                seen.push(f);
            }
            assert!(files.iter().filter(|g| *g == f).count() <= 3, "{files:?}");
        }
        if let Some(t) = seen.iter().position(|f| f.contains("tests/")) {
            assert!(t > 0, "{mode:?}: the test file first: {files:?}");
        }
    }
}

#[test]
fn a_server_embeds_an_index_its_searches_and_no_second_embedder() {
    let Some(binary) = std::env::var_os("AGENT_TEST_LLAMA_SERVER") else {
        agent_test_support::skip!("AGENT_TEST_LLAMA_SERVER is set by scripts/test");
    };
    // The default chat model's embeddings, on loopback.
    let args = [
        "--embeddings",
        "--pooling",
        "mean",
        "-c",
        "4096",
        "-b",
        "4096",
        "-ub",
        "4096",
        "--threads",
        "1",
        "--parallel",
        "1",
    ];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let server = common::LlamaServer::start(&binary, &args, std::process::Stdio::null());
    let dir = repo();
    let options = || IndexOptions {
        embedder: agent_index::embed::Choice::Server {
            url: server.url.clone(),
            model: None,
            api_key: None,
        },
        ..options()
    };
    let mut index = Index::open_writer(dir.path(), options()).unwrap();
    let stats = update(&mut index);
    assert!(stats.chunks_embedded > 0, "{stats:?}");
    let status = index.status().unwrap();
    // SmolLM2-135M's hidden size, not MiniLM's 384.
    assert_eq!(status.embedder.dim, 576, "{status:?}");
    assert!(status.embedder.server.is_some(), "{status:?}");
    assert_eq!(status.embedded_chunks, status.chunks);
    assert!(!top(&mut index, "levenshtein edit distance", SearchMode::Vector).is_empty());
    drop(index);

    // Readers and later writers use the recorded server without being told.
    let mut reader = Index::open_reader(dir.path()).unwrap();
    let hits = top(&mut reader, "levenshtein edit distance", SearchMode::Hybrid);
    assert_eq!(hits[0].0, "pkg/strings.py", "{hits:?}");
    drop(reader);
    let out = agent_bin()
        .args(["index", "--status"])
        .arg(dir.path())
        .output()
        .unwrap();
    common::assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(576-d) at http://127.0.0.1:"), "{text}");
    write(
        dir.path(),
        "pkg/more.py",
        b"def crc32_of(data):\n    return sum(data) % 2**32\n",
    );
    let mut index = Index::open_writer(dir.path(), self::options()).unwrap();
    assert!(update(&mut index).chunks_embedded > 0);
    drop(index);

    // An index embedded on this machine refuses the server's vectors.
    let (local, index, _) = indexed_repo();
    drop(index);
    let err = Index::open_writer(local.path(), options())
        .err()
        .expect("a second embedder is refused");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("would mix a second embedder") && msg.contains("--rebuild"),
        "{msg}"
    );
}
