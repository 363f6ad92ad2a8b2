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

/// `agent ask` about notes.txt: a short answer as JSON.
fn ask_about_notes(dir: &Path) -> std::process::Command {
    common::tiny_model();
    let mut cmd = agent_bin();
    cmd.current_dir(dir).args([
        "ask",
        "--no-tools",
        "--json",
        "--max-tokens",
        "8",
        "-f",
        "notes.txt",
    ]);
    cmd
}

fn ask(dir: &Path, extra: &[&str], question: &str) -> (Value, String) {
    let out = ask_about_notes(dir)
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
    let kv = common::state_dir(dir).join("cache/kv");
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

    // Damaged (same length, a flipped byte): the HMAC catches it.
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
    let spawn = |question: &str| {
        ask_about_notes(dir.path())
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
    // The steps were timed: lone and batched ones add up in the rate file
    // (beside the prefill rate) into what a drafted token costs here, for
    // later runs' `--speculative auto`.
    let rates =
        std::fs::read_to_string(common::state_dir(dir.path()).join("cache/prefill.json")).unwrap();
    let rates: Value = serde_json::from_str(&rates).unwrap();
    let steps: Vec<&Value> = rates
        .as_object()
        .unwrap()
        .values()
        .map(|r| &r["decode_steps"])
        .collect();
    assert!(
        steps.len() == 1
            && steps[0]["lone_steps"].as_u64() > Some(0)
            && steps[0]["batch_steps"].as_u64() > Some(0),
        "decode steps not timed: {rates}"
    );
}

/// `agent chat` on the real model in `dir` with `input` on stdin (`-v`);
/// returns stderr.
fn chat(dir: &Path, extra: &[&str], input: &str) -> String {
    common::tiny_model();
    let out = common::output_with_input(
        agent_bin()
            .current_dir(dir)
            .args(["chat", "-v", "--mode", "yolo", "--max-steps", "2"])
            .args(["--max-tokens", "48", "--speculative", "on"])
            .args(extra),
        input.as_bytes(),
    );
    common::assert_success(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The number after `before` in the last line that has it (`1,234` → 1234).
fn number_after(text: &str, before: &str) -> usize {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(before))
        .unwrap_or_else(|| panic!("no `{before}` in:\n{text}"));
    let rest = &line[line.find(before).unwrap() + before.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| c.is_ascii_digit())
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after `{before}` in {line}"))
}

#[test]
fn chat_resume_loads_the_whole_conversation_from_the_prompt_cache() {
    let dir = workspace();
    let first = chat(
        dir.path(),
        &[],
        "What does notes.txt say on line 3?\nAnd on line 5?\n/tokens\n/exit\n",
    );
    // At exit the whole conversation is saved, also the second turn that
    // grew it too little for a save after the request.
    let saved = number_after(&first, "prompt cache: saved");
    let context = number_after(&first, "context now:");
    assert!(
        saved + 16 >= context,
        "saved {saved} of {context}:\n{first}"
    );

    let resumed = chat(
        dir.path(),
        &["--resume"],
        "And on line 7?\n/tokens\n/exit\n",
    );
    assert!(resumed.contains("resumed session"), "{resumed}");
    let loaded = number_after(&resumed, "prompt cache on disk:");
    assert!(
        loaded + 8 >= saved,
        "loaded {loaded} of the {saved} saved:\n{resumed}"
    );
    // `/tokens` says what speculation drafted and the model confirmed: the
    // tiny model's answers repeat words of the file.
    let drafted = number_after(&resumed, "speculative decoding:");
    let confirmed = number_after(&resumed, "drafted,");
    let rate = number_after(&resumed, "confirmed (");
    assert!(drafted >= confirmed && confirmed > 0, "{resumed}");
    assert!(
        (rate as f64 - confirmed as f64 * 100.0 / drafted as f64).abs() <= 0.5,
        "{resumed}"
    );
}

/// `agent ask` through the agent loop (a saved session) in `dir`, its files
/// capped at `max_file` bytes when given: writing beyond it fails with EFBIG,
/// as a full disk fails with ENOSPC.
fn agent_ask(dir: &Path, question: &str, max_file: Option<u64>) -> (std::process::Output, Value) {
    use std::os::unix::process::CommandExt;
    common::tiny_model();
    let mut cmd = agent_bin();
    cmd.current_dir(dir)
        .args(["ask", "--json", "-v", "--mode", "yolo", "--max-steps", "2"])
        .args(["--max-tokens", "32"])
        .arg(question);
    if let Some(limit) = max_file {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // Ignored, SIGXFSZ lets the write fail instead of killing.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let cap = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &cap) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "stdout is not one JSON object:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, v)
}

#[test]
fn a_full_disk_while_saving_loses_nothing_but_the_entry() {
    let dir = workspace();
    // The tiny model may find no answer (exit 3); it must not fail.
    let answered = |out: &std::process::Output| {
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let (out, before) = agent_ask(dir.path(), "What is on line 3 of notes.txt?", None);
    answered(&out);
    let kept = entries(dir.path());
    assert!(!kept.is_empty(), "{before}");
    let sizes: Vec<u64> = kept.iter().map(|f| f.metadata().unwrap().len()).collect();

    // Files may grow to 4 MB: the session database and the logs fit, the
    // KV state of the agent's prompt (tens of MB) does not.
    let question = "What is on line 9 of notes.txt?";
    let (out, full) = agent_ask(dir.path(), question, Some(4 << 20));
    answered(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(full["prompt_cache"]["saved_tokens"], 0, "{full}");
    assert!(
        stderr.contains("prompt cache: cannot save") && stderr.contains("File too large"),
        "{stderr}"
    );
    // Nothing but the entry is lost: no temporary file, the entries before
    // are whole, the session is saved, and the answer is the one a run with
    // room gives.
    assert_eq!(entries(dir.path()), kept, "{stderr}");
    let now: Vec<u64> = kept.iter().map(|f| f.metadata().unwrap().len()).collect();
    assert_eq!(now, sizes);
    let id = full["session_id"].as_str().unwrap();
    let listed = agent_bin()
        .current_dir(dir.path())
        .args(["sessions", "list"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(id),
        "{listed:?}"
    );

    let (again, room) = agent_ask(dir.path(), question, None);
    assert_eq!(again.status.code(), out.status.code());
    assert_eq!(room["answer"], full["answer"]);
    assert!(
        room["prompt_cache"]["saved_tokens"].as_u64().unwrap() > 100,
        "{room}"
    );
    assert!(loaded(&room) > 100, "{room}");
}
