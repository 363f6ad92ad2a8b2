//! What this install is, for `agent --version --json` and `agent models`:
//! the languages whose grammars the build links, llama.cpp's version and
//! what it uses of the CPU, and what a GGUF file says of itself.

use std::path::Path;

pub use agent_engine::gguf::{GgufError, GgufInfo};

/// The languages whose tree-sitter grammar this build links (the `lang-*` features).
pub fn languages() -> Vec<&'static str> {
    agent_lang::walk::Lang::names()
        .into_iter()
        .filter(|n| {
            agent_lang::walk::Lang::from_name(n)
                .and_then(|l| l.grammar())
                .is_some()
        })
        .collect()
}

/// The llama.cpp this build runs: its crate's version and the CPU and GPU
/// features it was built with and uses.
pub fn llama_cpp() -> serde_json::Value {
    serde_json::json!({
        "crate": format!("llama-cpp-2 {}", agent_engine::engine::LLAMA_CPP_CRATE_VERSION),
        "system_info": agent_engine::engine::system_info(),
    })
}

/// A GGUF model file's own metadata (name, architecture, context, whether
/// it carries a chat template), read without loading it.
pub fn gguf(path: &Path) -> Result<GgufInfo, GgufError> {
    agent_engine::gguf::inspect(path)
}
