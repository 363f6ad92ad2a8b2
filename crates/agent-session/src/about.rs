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

/// The llama.cpp this build runs: its crate's version, the CPU and GPU
/// features it was built with and uses, and where its CPU kernels come
/// from (`cpu_backend`: the variant a portable build loaded for this
/// processor, or `built in` for one compiled for the build machine's;
/// `backends_dir`: where a portable build loaded them from).
pub fn llama_cpp() -> serde_json::Value {
    serde_json::json!({
        "crate": format!("llama-cpp-2 {}", agent_engine::engine::LLAMA_CPP_CRATE_VERSION),
        "cpu_backend": cpu_backend(),
        "backends_dir": agent_engine::backends::loaded_from(),
        "system_info": agent_engine::engine::system_info(),
    })
}

/// The CPU kernels' variant in use, or `built in`.
pub fn cpu_backend() -> String {
    agent_engine::backends::cpu_variant().unwrap_or_else(|| "built in".into())
}

/// A GGUF model file's own metadata (name, architecture, context, whether
/// it carries a chat template), read without loading it.
pub fn gguf(path: &Path) -> Result<GgufInfo, GgufError> {
    agent_engine::gguf::inspect(path)
}
