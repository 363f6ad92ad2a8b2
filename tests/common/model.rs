//! The real model for tests, shared by the crates' test binaries and the
//! root's (included by `#[path]`: a test-support crate for two functions
//! would cost a crate).
#![allow(dead_code)]

use std::path::PathBuf;

/// The real default chat model. Tests that need it fail (not skip) when it is
/// missing: the README's test command fetches it first.
pub(crate) fn tiny_model() -> PathBuf {
    let path = agent_base::paths::default_chat_model();
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
pub(crate) fn nan_model(dir: &std::path::Path) -> PathBuf {
    let mut bytes = std::fs::read(tiny_model()).unwrap();
    let from = bytes.len() * 3 / 10;
    bytes[from..].fill(0xFF);
    let path = dir.join("nan.gguf");
    std::fs::write(&path, bytes).unwrap();
    path
}
