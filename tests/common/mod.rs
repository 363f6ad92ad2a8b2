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

pub fn agent_bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_agent"))
}
