//! The agent's commands (`ask`, `chat`, `acp`, `init`) and the flags they
//! share: how the tool loop runs and which model answers, each turned into
//! the session's settings.

use std::path::PathBuf;

use clap::Args;

use agent_session::settings::{GpuLayers, Mode, Think};

use crate::index::StoreArgs;

/// `agent acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Most tokens per model reply.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy and deterministic.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub temperature: f32,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `agent init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Which writes ask first: confirm (default) shows the diff and asks; yolo creates a new
    /// AGENTS.md without asking; replacing an existing one always asks.
    #[arg(long, value_enum, default_value_t = Mode::Confirm)]
    pub mode: Mode,
    /// Print the AGENTS.md it would write on stdout instead of writing it.
    #[arg(long)]
    pub print: bool,
    /// Leave the model out: no overview sentences, no model loaded.
    #[arg(long)]
    pub no_model: bool,
    /// Print one JSON object: the path, whether it was written, the text, the commands found.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// How the tool loop runs.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// Which actions ask for confirmation first.
    #[arg(long, value_enum, default_value_t = Mode::Confirm)]
    pub mode: Mode,
    /// Most model calls per request (the last one may only be the answer).
    #[arg(long, default_value_t = 12, value_name = "N")]
    pub max_steps: usize,
    /// Run this command after every write; when it fails the write is rolled back.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Leave the repository map out of the system prompt.
    #[arg(long)]
    pub no_map: bool,
    /// Run commands in the OS sandbox: writes only in the workspace and a private temp dir, no
    /// network unless policy.toml allows it (Linux Landlock; see `agent doctor`).
    #[arg(long, value_enum, default_value_t = Switch::On, value_name = "on|off")]
    pub sandbox: Switch,
    /// Offer the model `explore(question)`: a read-only subagent that searches and reads in a
    /// context of its own and returns a short report with paths and line numbers.
    #[arg(long, value_enum, default_value_t = Switch::Off, value_name = "on|off")]
    pub explore: Switch,
    /// Most model calls per exploration, its report included.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub explore_steps: usize,
    /// Most tokens per exploration: prompt tokens prefilled plus tokens written, over its steps.
    #[arg(long, default_value_t = 16_000, value_name = "N")]
    pub explore_tokens: usize,
}

impl AgentArgs {
    /// The flags as the session takes them.
    pub fn settings(&self) -> agent_session::AgentSettings {
        agent_session::AgentSettings {
            mode: self.mode,
            max_steps: self.max_steps,
            verify: self.verify.clone(),
            repo_map: !self.no_map,
            sandbox: self.sandbox == Switch::On,
            explore: agent_session::ExploreConfig {
                enabled: self.explore == Switch::On,
                max_steps: self.explore_steps,
                max_tokens: self.explore_tokens,
                ..Default::default()
            },
        }
    }
}

impl ModelArgs {
    /// The flags as the session takes them.
    pub fn settings(&self) -> agent_session::ModelSettings {
        agent_session::ModelSettings {
            model: self.model.clone(),
            ctx_size: self.ctx_size,
            gpu_layers: self.gpu.gpu_layers,
            gpu_device: self.gpu.gpu_device,
            threads: self.threads,
            server: self.server.clone(),
            server_model: self.server_model.clone(),
            script: self.script.clone(),
            chat_template_file: self.chat_template_file.clone(),
            think: self.think,
            think_budget: self.think_budget,
            prompt_cache: self.prompt_cache == Switch::On,
            prompt_cache_mb: self.prompt_cache_mb,
            speculative: match self.speculative {
                Speculation::Auto => agent_session::Speculation::Auto,
                Speculation::On => agent_session::Speculation::On,
                Speculation::Off => agent_session::Speculation::Off,
            },
        }
    }
}

impl AskArgs {
    /// The output format, `--json` included.
    pub fn format(&self) -> OutputFormat {
        match self.output_format {
            OutputFormat::Text if self.json => OutputFormat::Json,
            f => f,
        }
    }
}

/// How `agent ask` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// When to draft tokens for speculative decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Speculation {
    Auto,
    On,
    Off,
}

/// Which model answers, and how it runs.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Any GGUF chat model (default: the SmolLM2-135M file in the models folder).
    #[arg(long, value_name = "PATH", env = "AGENT_MODEL")]
    pub model: Option<PathBuf>,
    /// Context window in tokens (default: the model's training context,
    /// fitted to the memory of the device it runs on; on the CPU at most 32768).
    #[arg(long, value_name = "N", env = "AGENT_CTX_SIZE")]
    pub ctx_size: Option<u32>,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// CPU threads for llama.cpp (default: all cores).
    #[arg(long, value_name = "N", env = "AGENT_THREADS")]
    pub threads: Option<i32>,
    /// Use an OpenAI-compatible server instead of the in-process engine, e.g. http://gpu-box:8080/v1.
    #[arg(long, value_name = "URL", conflicts_with = "script")]
    pub server: Option<String>,
    /// Model name to request from --server.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "default",
        requires = "server"
    )]
    pub server_model: String,
    /// Replay model turns from a JSON list instead of running a model (tests, bug reports).
    /// With --chat-template-file, the turns are read in that template's call syntax.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// A Jinja chat template to use instead of the model's own (as llama-server's flag).
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    pub chat_template_file: Option<PathBuf>,
    /// Let the model reason before it answers: on, off, or auto (on for templates that think).
    #[arg(long, value_name = "on|off|auto", default_value = "auto")]
    pub think: Think,
    /// Most tokens a reply may spend reasoning; the engine closes the reasoning there
    /// (default: an eighth of the context, between 256 and 4096).
    #[arg(long, value_name = "N")]
    pub think_budget: Option<usize>,
    /// Keep prompts' KV state (cache/kv/ in the workspace's state folder, outside it), so the next run prefills only what changed.
    #[arg(
        long,
        value_name = "on|off",
        default_value = "on",
        env = "AGENT_PROMPT_CACHE"
    )]
    pub prompt_cache: Switch,
    /// Most megabytes the prompt cache may hold; the least recently used entries go first.
    #[arg(
        long,
        value_name = "MB",
        default_value_t = 2048,
        env = "AGENT_PROMPT_CACHE_MB"
    )]
    pub prompt_cache_mb: u64,
    /// Speculative decoding by prompt lookup (greedy decoding): copied text (edits, quotes)
    /// is confirmed several tokens per step. auto drafts while the model confirms enough
    /// of its drafts (the same answer every run), on always drafts. On one thread the
    /// answer is plain decoding's bit for bit; on more, llama.cpp rounds a lone token
    /// and a batch differently past 512 cached tokens, so a near-tie may flip.
    #[arg(long, value_name = "auto|on|off", default_value = "auto")]
    pub speculative: Speculation,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question or instruction.
    #[arg(required = true, value_name = "PROMPT")]
    pub prompt: Vec<String>,
    /// Answer directly, without the intent gate and the tool loop.
    #[arg(long)]
    pub no_tools: bool,
    /// Attach a file's contents to the request (repeatable).
    #[arg(short, long = "file", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// With --no-tools: code chunks retrieved from the repository's index
    /// (`agent index`) and added as context; 0 turns retrieval off.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub context_chunks: usize,
    /// Replace the default system prompt (with --no-tools).
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Most tokens per model reply.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy and deterministic.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub temperature: f32,
    /// Nucleus sampling threshold (with --temperature > 0).
    #[arg(long, default_value_t = 0.95, value_name = "P")]
    pub top_p: f32,
    /// Penalise repeating recent tokens; 1.0 turns it off (default: 1.15 for
    /// plain answers, off for tool calls, whose JSON repeats by nature).
    #[arg(long, value_name = "X")]
    pub repeat_penalty: Option<f32>,
    /// Random seed (with --temperature > 0).
    #[arg(long, default_value_t = 42)]
    pub seed: u32,
    /// Constrain the answer with a GBNF grammar file (with --no-tools).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "json_schema",
        requires = "no_tools"
    )]
    pub grammar: Option<PathBuf>,
    /// Constrain the answer to JSON matching this JSON Schema file (with --no-tools).
    #[arg(long, value_name = "FILE", requires = "no_tools")]
    pub json_schema: Option<PathBuf>,
    /// Print one JSON object (answer, finish, intent, steps, tool calls, tokens, session) instead of streaming text
    /// (the same as --output-format json).
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// text: streamed for a person; json: one object at the end; stream-json: one JSON event per
    /// line as it happens (intent, step, text, tool_call, tool_result, notice, final).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "FORMAT")]
    pub output_format: OutputFormat,
    /// Print the rendered prompt of each model request instead of generating (with --json: one
    /// object per request with template, messages, tools, bos_token, eos_token and prompt).
    /// Reads only the model's GGUF header and vocabulary; with --script the turns play out.
    #[arg(long, conflicts_with = "server")]
    pub print_prompt: bool,
    /// Also give the answer as JSON matching this JSON Schema file (a tool run; --json-schema is
    /// --no-tools' own): written under a grammar made from the schema, in `--json` as `result`,
    /// in text as the last line. Exit 4 when it cannot be had.
    #[arg(long, value_name = "FILE", conflicts_with = "no_tools")]
    pub output_schema: Option<PathBuf>,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Keep the line mode on a terminal too (it is what a pipe or `TERM=dumb` gets).
    #[arg(long)]
    pub no_tui: bool,
    /// Continue a saved session: the latest, or the one with this id.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Most tokens per model reply.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy and deterministic.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub temperature: f32,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Where the in-process model runs.
#[derive(Debug, Clone, Default, Args)]
pub struct GpuArgs {
    /// Model layers on the GPU: auto (as many as fit its free memory), all,
    /// or a number; 0 runs on the CPU. Needs a GPU build (`--features vulkan`,
    /// cuda or metal); others run on the CPU and `agent doctor` says why.
    #[arg(
        long,
        value_name = "auto|all|N",
        default_value = "auto",
        env = "AGENT_GPU_LAYERS"
    )]
    pub gpu_layers: GpuLayers,
    /// The GPU to use, by the index `agent doctor` lists (default: the one
    /// with the most free memory).
    #[arg(long, value_name = "INDEX", env = "AGENT_GPU_DEVICE")]
    pub gpu_device: Option<usize>,
}
