//! The `agent` binary end to end: real model, real files, real exit codes.

use crate::common;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::agent_bin;
use serde_json::Value;

#[test]
fn version_json_says_what_this_binary_is() {
    let out = agent_bin().args(["--version", "--json"]).output().unwrap();
    common::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["profile"], "release");
    assert!(v["llama_cpp"]["crate"]
        .as_str()
        .unwrap()
        .starts_with("llama-cpp-2 0.1."));
    assert!(
        v["llama_cpp"]["system_info"]
            .as_str()
            .unwrap()
            .contains("CPU"),
        "{v}"
    );
    // A source build's CPU kernels are linked in (compiled for this CPU).
    assert_eq!(v["llama_cpp"]["cpu_backend"], "built in", "{v}");
    assert!(v["llama_cpp"]["backends_dir"].is_null(), "{v}");
    let languages = v["languages"].as_array().unwrap();
    assert!(languages.iter().any(|l| l == "python") && languages.iter().any(|l| l == "rust"));
    // The plain flag is clap's, as before.
    let out = agent_bin().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("agent {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn ask_streams_an_answer_from_the_real_model() {
    common::tiny_model();
    let out = agent_bin()
        .args([
            "ask",
            "--no-tools",
            "--max-tokens",
            "24",
            "What is the capital of France?",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    common::assert_success(&out);
    assert!(stdout.contains("Paris"), "answer: {stdout}");
    // llama.cpp's own logging is kept off the terminal by default.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("llama_model_loader"),
        "stderr is noisy: {stderr}"
    );
}

#[test]
fn ask_json_reports_the_answer_and_token_counts() {
    let out = agent_bin()
        .args([
            "ask",
            "--no-tools",
            "--json",
            "--max-tokens",
            "8",
            "Say hi.",
        ])
        .output()
        .unwrap();
    common::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    assert!(!v["answer"].as_str().unwrap().is_empty());
    assert!(v["prompt_tokens"].as_u64().unwrap() > 5);
    assert!(v["completion_tokens"].as_u64().unwrap() <= 8);
}

#[test]
fn ask_with_a_json_schema_prints_schema_valid_json() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}"#,
    )
    .unwrap();
    let out = agent_bin()
        .args(["ask", "--no-tools", "--json-schema"])
        .arg(&schema)
        .args(["What is 3 + 4?"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("the answer is JSON");
    assert!(v["answer"].is_i64(), "{v}");
}

#[test]
fn ask_replays_a_script_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("turns.json");
    std::fs::write(&script, r#"["The answer is 42."]"#).unwrap();
    let out = agent_bin()
        .args(["ask", "--no-tools", "--script"])
        .arg(&script)
        .args(["--model", "/definitely/not/here.gguf", "question"])
        .output()
        .unwrap();
    common::assert_success(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "The answer is 42."
    );
}

#[test]
fn a_missing_model_names_the_fix_and_exits_1() {
    let out = agent_bin()
        .args(["ask", "--model", "/definitely/not/here.gguf", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The user named the file: the fix is the path, not a script of the
    // source tree an installed binary's user does not have.
    assert!(
        stderr.contains("/definitely/not/here.gguf")
            && stderr.contains("check the path")
            && stderr.contains("--model")
            && !stderr.contains("scripts/fetch-models"),
        "{stderr}"
    );
}

#[test]
fn a_file_where_a_folder_is_needed_says_so() {
    let out = agent_bin().args(["index", "/etc/passwd"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/etc/passwd is a file; this needs a folder")
            && stderr.contains("such as /etc")
            && !stderr.contains("Not a directory"),
        "{stderr}"
    );
}

#[test]
fn an_empty_prompt_is_bad_usage_like_a_missing_one() {
    for args in [&["ask", ""][..], &["ask", "  "][..]] {
        let out = agent_bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("the prompt is empty"));
    }
    let missing = agent_bin().args(["ask"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn doctor_lists_only_the_checkers_of_the_workspace_languages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"x\"\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("app.py"), "def f():\n    return 1\n").unwrap();
    let out = agent_bin()
        .args(["doctor", "--json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checkers = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "checkers")
        .unwrap_or_else(|| panic!("no checkers line: {v}"));
    let detail = checkers["detail"].as_str().unwrap();
    assert!(detail.contains("ruff"), "{detail}");
    for other in ["cargo check", "tsc", "go vet"] {
        assert!(!detail.contains(other), "{detail}");
    }
}

#[test]
fn a_file_that_is_not_gguf_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("model.gguf");
    std::fs::write(&fake, "<html>404 not found</html>").unwrap();
    let out = agent_bin()
        .args(["ask", "--model"])
        .arg(&fake)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a GGUF file"));
}

#[test]
fn attachments_reject_binary_and_huge_files() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("blob.bin");
    std::fs::write(&bin, [0u8, 1, 2, 3, 0, 255]).unwrap();
    let out = agent_bin()
        .args(["ask", "-f"])
        .arg(&bin)
        .arg("what is this")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("looks binary"));

    let big = dir.path().join("big.txt");
    std::fs::write(&big, "x".repeat(10 * 1024 * 1024)).unwrap();
    let out = agent_bin()
        .args(["ask", "-f"])
        .arg(&big)
        .arg("summarize")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("limited to"));
}

#[test]
fn an_attached_file_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let note = dir.path().join("note.txt");
    std::fs::write(&note, "The secret project codename is BLUEFALCON.").unwrap();
    let out = agent_bin()
        .args(["ask", "--no-tools", "--max-tokens", "30", "-f"])
        .arg(&note)
        .arg("What is the secret project codename? Reply with the codename only.")
        .output()
        .unwrap();
    common::assert_success(&out);
    let answer = String::from_utf8_lossy(&out.stdout).to_uppercase();
    assert!(
        answer.contains("BLUEFALCON") || answer.contains("BLUE FALCON"),
        "{answer}"
    );
}

#[test]
fn a_prompt_over_the_context_is_a_clear_error() {
    let out = agent_bin()
        .args(["ask", "--ctx-size", "128", &"word ".repeat(500)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("context window") && stderr.contains("--ctx-size"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_stops_generation_and_keeps_the_partial_answer() {
    let mut child = agent_bin()
        .args([
            "ask",
            "--no-tools",
            "--max-tokens",
            "4000",
            "--ctx-size",
            "4096",
            "Write a very long story about a dragon and a knight.",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    let n = stdout.read(&mut first).unwrap();
    assert!(n > 0, "no output before the interrupt");
    let started = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "did not stop promptly"
    );
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.contains("stopped"), "{stderr}");
}

#[test]
fn models_verifies_every_file() {
    let out = agent_bin().args(["models", "--json"]).output().unwrap();
    common::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert!(v["files"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["state"] == "ok"));
    assert_eq!(v["chat_model"]["architecture"], "llama");
}

#[test]
fn models_reports_a_damaged_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "garbage",
    )
    .unwrap();
    let out = agent_bin()
        .args(["models", "--json"])
        .env("AGENT_MODELS_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let states: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["state"].as_str().unwrap())
        .collect();
    assert!(
        states.contains(&"wrong_size") && states.contains(&"missing"),
        "{states:?}"
    );
    // The fix works from any folder: the clone's script by its full path
    // (an installed binary without its clone says where the files go).
    let elsewhere = tempfile::tempdir().unwrap();
    let out = agent_bin()
        .arg("models")
        .current_dir(elsewhere.path())
        .env("AGENT_MODELS_DIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let script = stderr
        .split("fix: run ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no fix to run: {stderr}"));
    assert!(
        std::path::Path::new(script).is_absolute() && std::path::Path::new(script).is_file(),
        "{stderr}"
    );
}

#[test]
fn doctor_passes_with_the_real_models_and_fails_with_a_bad_one() {
    let out = agent_bin().args(["doctor", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(out.status.success(), "{v}");
    assert_eq!(v["ready"], true);
    let ort = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "onnxruntime")
        .unwrap();
    assert_eq!(ort["ok"], true, "{ort}");
    // The threads an `ask` would give llama.cpp, AGENT_THREADS' if set.
    let threads = |v: &Value| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "llama.cpp")
            .unwrap()["detail"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let one = agent_bin()
        .args(["doctor", "--json"])
        .env("AGENT_THREADS", "1")
        .output()
        .unwrap();
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    assert!(
        threads(&one).starts_with("1 thread (AGENT_THREADS);"),
        "{}",
        threads(&one)
    );
    // The default model's limits are said plainly.
    let note = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "answers")
        .unwrap_or_else(|| panic!("no note on the default model: {v}"));
    assert!(note["detail"]
        .as_str()
        .unwrap()
        .contains("cannot be relied on"));
    assert!(note["fix"].as_str().unwrap().contains("--model"));

    let out = agent_bin()
        .args(["doctor", "--model", "/definitely/not/here.gguf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The user's own path is wrong: nothing to fetch, and no script an
    // installed binary's user does not have.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fix: check the path"), "{stdout}");
    assert!(!stdout.contains("scripts/fetch-models"), "{stdout}");

    // Weights that compute NaN: the header is fine, the model is not.
    let dir = tempfile::tempdir().unwrap();
    let nan = common::nan_model(dir.path());
    let out = agent_bin()
        .args(["doctor", "--model"])
        .arg(&nan)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("NaN"), "{stdout}");
    let out = agent_bin()
        .current_dir(dir.path())
        .args(["ask", "--no-map", "--model"])
        .arg(&nan)
        .arg("What is 2+2?")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("NaN"), "{stderr}");
}

/// The default build has no GPU backend: `doctor` says so and names the
/// rebuild, GPU requests still answer on the CPU with one warning, and a
/// device that does not exist is a clear error.
#[test]
fn a_cpu_only_build_says_so_and_runs_gpu_requests_on_the_cpu() {
    if !agent_engine::offload::compiled_backends().is_empty() {
        // A GPU build is not what CI tests (no GPU there): scripts/test-gpu covers it.
        agent_test_support::skip!(optional: "this build has a GPU backend (scripts/test-gpu covers it)");
    }
    let out = agent_bin().args(["doctor", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let devices = v["devices"].as_array().unwrap();
    assert!(devices.iter().any(|d| d["kind"] == "cpu"), "{v}");
    assert_eq!(v["offload"]["backend"], "CPU", "{v}");
    assert_eq!(v["offload"]["model_layers"], 31, "{v}");
    let gpu = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "gpu")
        .unwrap_or_else(|| panic!("no gpu line: {v}"));
    assert_eq!(gpu["ok"], false);
    assert_eq!(gpu["required"], false, "a CPU build is still ready: {gpu}");
    assert!(
        gpu["detail"]
            .as_str()
            .unwrap()
            .contains("this build has no GPU backend"),
        "{gpu}"
    );
    assert!(
        gpu["fix"].as_str().unwrap().contains("--features vulkan"),
        "{gpu}"
    );

    let out = agent_bin()
        .args([
            "ask",
            "--no-tools",
            "--json",
            "--context-chunks",
            "0",
            "--max-tokens",
            "8",
        ])
        .args(["--gpu-layers", "all", "Say hi."])
        .output()
        .unwrap();
    common::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!v["answer"].as_str().unwrap().is_empty(), "{v}");
    assert_eq!(v["engine"]["backend"], "CPU", "{v}");
    assert_eq!(v["engine"]["gpu_layers"], 0, "{v}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("running the model on the CPU").count(),
        1,
        "{stderr}"
    );

    let out = agent_bin()
        .env("AGENT_GPU_DEVICE", "3")
        .args(["ask", "--no-tools", "--context-chunks", "0", "Say hi."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no device 3") && stderr.contains("CPU"),
        "{stderr}"
    );
}

#[test]
fn help_teaches_the_quick_start() {
    let out = agent_bin().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    // `agent models` says how to get the model files, also to an installed
    // binary's user, who has no scripts/.
    assert!(
        help.contains("agent models") && help.contains("agent ask"),
        "{help}"
    );
    assert!(!help.contains("scripts/fetch-models"), "{help}");
    let out = agent_bin().args(["ask", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--json-schema"));
}

#[test]
fn a_closed_pipe_ends_output_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = agent_bin()
        .arg("models")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `agent models | head -c 0`: the reader is gone before the first line.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
    const SIGPIPE: i32 = 13;
    assert_eq!(out.status.signal(), Some(SIGPIPE), "{:?}", out.status);
}

#[test]
fn map_help_lists_no_gpu_or_server_options() {
    let out = agent_bin().args(["map", "--help"]).output().unwrap();
    common::assert_success(&out);
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--gpu-layers",
        "--gpu-device",
        "--threads",
        "--server",
        "--script",
    ] {
        assert!(!help.contains(option), "{option} in:\n{help}");
    }
    assert!(
        help.contains("--model") && help.contains("--tokens"),
        "{help}"
    );
}
