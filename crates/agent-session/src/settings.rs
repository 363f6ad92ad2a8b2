//! What a session is opened with: the command line's flags once parsed
//! (the binary turns its `clap` structs into these), with no parsing here.

use std::path::PathBuf;

// The flags' own types, so the front ends name them here.
pub use agent_engine::offload::GpuLayers;
pub use agent_index::SearchMode;
pub use agent_llm::{Sampling, Think};
pub use agent_policy::managed::{mode_help, mode_name};
pub use agent_policy::Mode;

/// Which model answers, and how it runs.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    /// A GGUF chat model; None: the default model of the models folder.
    pub model: Option<PathBuf>,
    pub ctx_size: Option<u32>,
    pub gpu_layers: GpuLayers,
    pub gpu_device: Option<usize>,
    pub threads: Option<i32>,
    /// An OpenAI-compatible server instead of the in-process engine.
    pub server: Option<String>,
    pub server_model: String,
    /// Replayed model turns instead of a model.
    pub script: Option<PathBuf>,
    pub chat_template_file: Option<PathBuf>,
    pub think: Think,
    pub think_budget: Option<usize>,
    /// Keep prompts' KV state on disk in the workspace's state folder.
    pub prompt_cache: bool,
    pub prompt_cache_mb: u64,
    pub speculative: Speculation,
}

impl Default for ModelSettings {
    /// The default model on the CPU, nothing kept on disk (`agent map`
    /// counts with it; front ends take the flags' defaults instead).
    fn default() -> Self {
        Self {
            model: None,
            ctx_size: None,
            gpu_layers: GpuLayers::default(),
            gpu_device: None,
            threads: None,
            server: None,
            server_model: "default".into(),
            script: None,
            chat_template_file: None,
            think: Think::Off,
            think_budget: None,
            prompt_cache: false,
            prompt_cache_mb: 0,
            speculative: Speculation::Off,
        }
    }
}

/// When to draft tokens for speculative decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speculation {
    Auto,
    On,
    Off,
}

/// How the tool loop runs.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub mode: Mode,
    pub max_steps: usize,
    /// Run after every write; a failure rolls the write back.
    pub verify: Option<String>,
    pub repo_map: bool,
    pub sandbox: bool,
    /// The `explore` subagent: offered to the model or not, and its budget.
    pub explore: agent_core::ExploreConfig,
}
