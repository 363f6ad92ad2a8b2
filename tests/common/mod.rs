//! Shared helpers for the integration tests.
#![allow(dead_code)]

mod llama_server;
mod model;
pub(crate) use llama_server::*;
pub(crate) use model::*;

/// The binary, run from a neutral directory so that no repository index
/// around the test's working directory leaks into its prompts, with a home
/// of the test's own for its state, configuration and caches
/// ([`test_home`]): no test reads the user's, and none shares another's.
pub(crate) fn agent_bin() -> std::process::Command {
    let neutral = std::env::temp_dir().join("agent-tests-cwd");
    std::fs::create_dir_all(&neutral).expect("a neutral working directory");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent"));
    let home = test_home();
    cmd.env("XDG_CONFIG_HOME", home.join("config"));
    cmd.env("XDG_STATE_HOME", home.join("state"));
    cmd.env("XDG_CACHE_HOME", home.join("cache"));
    cmd.current_dir(neutral);
    cmd
}

/// This test's own home for the agent's XDG folders: named after the test
/// (libtest names each test's thread), in a folder of this process that is
/// removed when it exits.
pub(crate) fn test_home() -> std::path::PathBuf {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| {
        extern "C" fn remove_homes() {
            let _ = std::fs::remove_dir_all(homes_root());
        }
        // SAFETY: registers a plain function to run at exit.
        unsafe { libc::atexit(remove_homes) };
        homes_root()
    });
    let name: String = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let home = root.join(name);
    std::fs::create_dir_all(&home).expect("a home for the test");
    home
}

fn homes_root() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("agent-test-homes-{}", std::process::id()))
}

/// The state and cache homes of [`agent_bin`], for a command that starts
/// the binary itself (a client, `script`).
pub(crate) fn state_env() -> [(&'static str, std::path::PathBuf); 2] {
    let home = test_home();
    [
        ("XDG_STATE_HOME", home.join("state")),
        ("XDG_CACHE_HOME", home.join("cache")),
    ]
}

/// Where the binary run by [`agent_bin`] in this test keeps its state for
/// `workspace` (as `agent_base::paths::state_dir` computes it there).
pub(crate) fn state_dir(workspace: &std::path::Path) -> std::path::PathBuf {
    test_home()
        .join("state/agent/workspaces")
        .join(agent_base::paths::workspace_key(workspace))
}

/// A temp folder for a test that runs the agent's code in this process,
/// whose state then goes to this process's own homes
/// (`agent_base::paths::isolate_for_tests`).
pub(crate) fn tempdir() -> tempfile::TempDir {
    agent_base::paths::isolate_for_tests();
    tempfile::tempdir().unwrap()
}

/// Fails with the command's stderr unless it exited with 0.
pub(crate) fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` with `input` on its stdin (then closed), capturing stdout
/// and stderr.
pub(crate) fn output_with_input(
    cmd: &mut std::process::Command,
    input: &[u8],
) -> std::process::Output {
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
