//! Shared helpers for the integration tests.
#![allow(dead_code)]

mod llama_server;
mod model;
pub use llama_server::*;
pub use model::*;

/// The binary, run from a neutral directory so that no repository index
/// around the test's working directory leaks into its prompts. Not the temp
/// dir itself: the `.agent/` a command creates there would become the
/// workspace of every test repository below it that has no `.git`.
pub fn agent_bin() -> std::process::Command {
    let neutral = std::env::temp_dir().join("agent-tests-cwd");
    std::fs::create_dir_all(&neutral).expect("a neutral working directory");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent"));
    // Not the user's own configuration (trusted MCP servers, instructions).
    cmd.env("XDG_CONFIG_HOME", neutral.join("config"));
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

/// Runs `cmd` with `input` on its stdin (then closed), capturing stdout
/// and stderr.
pub fn output_with_input(cmd: &mut std::process::Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}
