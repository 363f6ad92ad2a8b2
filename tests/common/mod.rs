//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The real default chat model. Tests that need it fail (not skip) when it is
/// missing: the README's test command fetches it first.
pub fn tiny_model() -> PathBuf {
    let path = agent::paths::default_chat_model();
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-models (the README test command does)",
        path.display()
    );
    path
}

/// The real model with its weights (the back 70% of the file, all tensor
/// data) overwritten by 0xFF bytes, NaN as f16 and f32, header intact: a
/// model that loads and computes NaN. Written as `dir/nan.gguf`.
pub fn nan_model(dir: &std::path::Path) -> PathBuf {
    let mut bytes = std::fs::read(tiny_model()).unwrap();
    let from = bytes.len() * 3 / 10;
    bytes[from..].fill(0xFF);
    let path = dir.join("nan.gguf");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The binary, run from a neutral directory so that no repository index
/// around the test's working directory leaks into its prompts. Not the temp
/// dir itself: the `.agent/` a command creates there would become the
/// workspace of every test repository below it that has no `.git`.
pub fn agent_bin() -> std::process::Command {
    let neutral = std::env::temp_dir().join("agent-tests-cwd");
    std::fs::create_dir_all(&neutral).expect("a neutral working directory");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.current_dir(neutral);
    cmd
}

/// Fails with the command's stderr unless it exited with 0.
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
