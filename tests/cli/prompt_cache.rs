//! The prompt cache on disk across `agent ask` processes, and the
//! speculative decoding report, with the real tiny model.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, agent_bin};

/// A workspace (it has `.git`) with a file to attach: a prompt long enough
/// to be worth a cache entry.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let text: String = (1..=30)
        .map(|i| format!("line {i}: the quick brown fox jumps over lazy dog number {i}\n"))
        .collect();
    std::fs::write(dir.path().join("notes.txt"), text).unwrap();
    dir
}

fn ask(dir: &Path, extra: &[&str], question: &str) -> (Value, String) {
    common::tiny_model();
    let out = agent_bin()
        .current_dir(dir)
        .args([
            "ask",
            "--no-tools",
            "--json",
            "--max-tokens",
            "8",
            "-f",
            "notes.txt",
        ])
        .args(extra)
        .arg(question)
        .output()
        .unwrap();
    common::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    (v, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn loaded(v: &Value) -> u64 {
    v["prompt_cache"]["loaded_tokens"].as_u64().unwrap()
}

fn saved(v: &Value) -> u64 {
    v["prompt_cache"]["saved_tokens"].as_u64().unwrap()
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let kv = dir.join(".agent/cache/kv");
    let mut out: Vec<PathBuf> = std::fs::read_dir(kv)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn the_prompt_cache_survives_a_restart_and_is_used() {
    let dir = workspace();
    let (first, _) = ask(dir.path(), &[], "What is on line 3?");
    assert_eq!(loaded(&first), 0, "{first}");
    assert!(saved(&first) > 100, "{first}");
    assert_eq!(entries(dir.path()).len(), 1);
    // A new process, another question about the same file: the shared
    // prefix (system prompt and file) comes from disk.
    let (second, _) = ask(dir.path(), &[], "What is on line 7?");
    assert!(loaded(&second) > 100, "{second}");
    assert!(second["ttft_ms"].as_f64().unwrap() > 0.0);
    // The same question again: the same answer as without the cache.
    let (again, _) = ask(dir.path(), &[], "What is on line 3?");
    let (plain, _) = ask(dir.path(), &["--prompt-cache", "off"], "What is on line 3?");
    assert!(loaded(&again) >= loaded(&second), "{again}");
    assert_eq!(again["answer"], first["answer"]);
    assert_eq!(plain["answer"], first["answer"]);
    assert_eq!((loaded(&plain), saved(&plain)), (0, 0));
}

#[test]
fn an_entry_of_another_context_size_or_a_damaged_file_is_removed() {
    let dir = workspace();
    let q = "What is on line 5?";
    ask(dir.path(), &["--ctx-size", "1024"], q);
    let small = entries(dir.path());
    assert_eq!(small.len(), 1);
    let (other, stderr) = ask(dir.path(), &["--ctx-size", "2048", "-v"], q);
    assert_eq!(loaded(&other), 0, "{other}");
    assert!(!small[0].exists(), "the other context's entry stays");
    assert!(
        stderr.contains("another model, build or context size"),
        "{stderr}"
    );

    // Truncated: ignored, removed and replaced by a whole entry.
    let entry = entries(dir.path()).pop().unwrap();
    let bytes = std::fs::read(&entry).unwrap();
    std::fs::write(&entry, &bytes[..bytes.len() / 2]).unwrap();
    let (cut, stderr) = ask(dir.path(), &["--ctx-size", "2048", "-v"], q);
    assert_eq!(loaded(&cut), 0, "{cut}");
    assert!(stderr.contains("truncated"), "{stderr}");
    assert_eq!(std::fs::read(&entry).unwrap().len(), bytes.len());

    // Damaged (same length, a flipped byte): the digest catches it.
    let mut damaged = bytes.clone();
    let at = damaged.len() - 10;
    damaged[at] ^= 0x55;
    std::fs::write(&entry, &damaged).unwrap();
    let (bad, stderr) = ask(dir.path(), &["--ctx-size", "2048", "-v"], q);
    assert_eq!(loaded(&bad), 0, "{bad}");
    assert!(stderr.contains("damaged"), "{stderr}");
    let (good, _) = ask(dir.path(), &["--ctx-size", "2048"], q);
    assert!(loaded(&good) > 100, "{good}");
}

#[test]
fn two_processes_at_once_leave_a_valid_cache() {
    let dir = workspace();
    common::tiny_model();
    let spawn = |question: &str| {
        agent_bin()
            .current_dir(dir.path())
            .args([
                "ask",
                "--no-tools",
                "--json",
                "--max-tokens",
                "8",
                "-f",
                "notes.txt",
            ])
            .arg(question)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("What is on line 2?"), spawn("What is on line 9?"));
    for child in [a, b] {
        common::assert_success(&child.wait_with_output().unwrap());
    }
    let files = entries(dir.path());
    assert!(!files.is_empty());
    assert!(
        files
            .iter()
            .all(|f| f.extension().is_some_and(|e| e == "kv")),
        "temporary files left: {files:?}"
    );
    let (next, _) = ask(dir.path(), &["-v"], "What is on line 4?");
    assert!(loaded(&next) > 100, "{next}");
}

#[test]
fn speculation_is_reported_and_can_be_turned_off() {
    let dir = workspace();
    let repeat = "Repeat the file exactly.";
    let run = |switch: &str| {
        common::tiny_model();
        let out = agent_bin()
            .current_dir(dir.path())
            .args(["ask", "--no-tools", "--json", "--max-tokens", "96"])
            .args(["--prompt-cache", "off", "--speculative", switch])
            .args(["-f", "notes.txt", repeat])
            .output()
            .unwrap();
        common::assert_success(&out);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let (on, off) = (run("on"), run("off"));
    assert_eq!(on["answer"], off["answer"]);
    assert_eq!(off["speculative"]["drafted"], 0);
    // The tiny model copies a line or two of the file: drafted from it.
    let accepted = on["speculative"]["accepted"].as_u64().unwrap();
    assert!(accepted > 0, "{on}");
    assert!(on["speculative"]["acceptance"].as_f64().unwrap() > 0.0);
}
