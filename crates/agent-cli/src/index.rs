//! The code index's commands: `index`, `search`, `map`.

use std::path::PathBuf;

use clap::Args;

use agent_session::settings::SearchMode;

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Repository to index (default: the enclosing repository of the current directory).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// After indexing, keep watching for changes until Ctrl-C.
    #[arg(long, conflicts_with = "status")]
    pub watch: bool,
    /// Show what is indexed instead of indexing.
    #[arg(long)]
    pub status: bool,
    /// Delete the index and build it again from scratch.
    #[arg(long, conflicts_with = "status")]
    pub rebuild: bool,
    /// Skip files larger than this many KiB.
    #[arg(long, default_value_t = 1024, value_name = "KIB")]
    pub max_file_kb: u64,

    /// Stop (with an error) past this many files: a folder that holds more
    /// is rarely one project (`/`, a home folder), and indexing it would run
    /// out of memory.
    #[arg(long, default_value_t = agent_session::index::DEFAULT_MAX_FILES, value_name = "N")]
    pub max_files: usize,

    /// Stop (with an error) once the files to index hold this many MiB.
    #[arg(long, default_value_t = agent_session::index::DEFAULT_MAX_TOTAL_BYTES >> 20, value_name = "MIB")]
    pub max_total_mb: u64,
    /// CPU threads for embedding (default: all cores). Fewer leave room for
    /// other work while a large repository indexes.
    #[arg(long, value_name = "N", env = "AGENT_THREADS", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Embed on a server instead of this machine's CPU: any server with
    /// OpenAI's embeddings API (llama-server --embeddings,
    /// text-embeddings-inference, vLLM), e.g. http://gpu-box:8080. The index
    /// records it, and searches send their queries there too
    /// (AGENT_EMBED_SERVER names its new address if it moves;
    /// AGENT_EMBED_API_KEY is sent as a bearer token). An index keeps one
    /// embedder: switching needs --rebuild.
    #[arg(
        long,
        value_name = "URL",
        env = "AGENT_EMBED_SERVER",
        conflicts_with = "status"
    )]
    pub embed_server: Option<String>,
    /// The model to ask the embeddings server for (default: the first it lists).
    #[arg(
        long,
        value_name = "NAME",
        env = "AGENT_EMBED_MODEL",
        requires = "embed_server"
    )]
    pub embed_model: Option<String>,
    /// Write the index to a shared store instead of this machine's state folder:
    /// s3://BUCKET/PREFIX (any S3-compatible service; credentials, region and
    /// endpoint from the usual AWS_* variables; needs a build with
    /// `--features s3`) or a folder on a shared disk. This is the job that
    /// keeps a team's shared index current (one writer, e.g. CI); everyone
    /// else searches it with `--store`. With --status, describes it.
    #[arg(long, value_name = "URI", env = "AGENT_INDEX_STORE")]
    pub store: Option<String>,
    /// Index the project's dependencies at their locked versions instead
    /// (Cargo.lock, a Python venv, node_modules, go.mod; offline, from what
    /// the package managers downloaded): the direct ones, or `all`. Each
    /// package version is indexed once per machine, in ~/.cache/agent/deps.
    /// `--deps=all` takes the value after `=`, so `--deps PATH` is a path.
    #[arg(long, value_name = "WHICH", num_args = 0..=1, default_missing_value = "direct",
          require_equals = true, value_enum,
          conflicts_with_all = ["watch", "status", "rebuild", "store"])]
    pub deps: Option<DepsWhich>,
    /// Print JSON (one object; with --watch, one line per update).
    #[arg(long)]
    pub json: bool,
}

/// Which dependencies `agent index --deps` indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DepsWhich {
    /// Those the project's manifests name.
    Direct,
    /// Every locked one.
    All,
}

/// Which index `agent search` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchScope {
    /// The project's own files.
    Project,
    /// Its indexed dependencies (`agent index --deps`).
    Deps,
    /// Both.
    All,
}

/// Which index searches read.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Search the shared index in this store (s3://BUCKET/PREFIX or a
    /// folder), read-only, instead of this repository's own; files that
    /// differ on this machine are indexed locally and searched on top.
    #[arg(long, value_name = "URI", env = "AGENT_INDEX_STORE")]
    pub store: Option<String>,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for: a description, identifiers, or a whole issue text
    /// (`"$(cat issue.md)"`), which is taken apart: its title, the names
    /// and paths it mentions and its prose each count for what they say.
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
    /// Number of results.
    #[arg(short, default_value_t = 10, value_name = "N")]
    pub k: usize,
    /// Only paths matching this glob, e.g. 'src/**/*.rs'.
    #[arg(long, value_name = "GLOB")]
    pub path: Option<String>,
    /// Only this language: bash, c, cpp, csharp, go, java, javascript, kotlin, lua,
    /// php, python, ruby, rust, swift, typescript, tsx, or text.
    #[arg(long, value_name = "L")]
    pub lang: Option<String>,
    /// Retrieval mode.
    #[arg(long, value_enum, default_value_t = SearchMode::Hybrid)]
    pub mode: SearchMode,
    /// Which index: the project's, its dependencies' (`agent index --deps`;
    /// results cited as NAME@VERSION/path), or both.
    #[arg(long, value_enum, default_value_t = SearchScope::Project)]
    pub scope: SearchScope,
    /// Search the dependencies (the same as --scope deps).
    #[arg(long, conflicts_with = "scope")]
    pub deps: bool,
    /// Only this dependency (NAME or NAME@VERSION); implies --scope deps.
    #[arg(long, value_name = "NAME")]
    pub package: Option<String>,
    /// Repository whose index to search (default: the enclosing one).
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print a JSON array of {path, start_line, end_line, symbol, score, text}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MapArgs {
    /// Token budget for the map (default: 1/8 of the model's context window).
    #[arg(long, value_name = "N")]
    pub tokens: Option<usize>,
    /// Files or identifiers to rank higher (repeatable).
    #[arg(long, value_name = "PATH_OR_IDENT")]
    pub focus: Vec<String>,
    /// Focus the map as the agent does for this request (an issue text, a
    /// question): on the paths and names it mentions.
    #[arg(long, value_name = "TEXT")]
    pub request: Option<String>,
    /// Repository to map (default: the enclosing one).
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,
    /// Print JSON: the text, its token count and the ranked files.
    #[arg(long)]
    pub json: bool,
    /// The GGUF chat model whose tokenizer counts the budget (default: the
    /// default chat model). Only its tokenizer and context size are used.
    #[arg(long, value_name = "PATH", env = "AGENT_MODEL")]
    pub model: Option<PathBuf>,
    /// Context window the default budget is a share of (default: the model's).
    #[arg(long, value_name = "N", env = "AGENT_CTX_SIZE")]
    pub ctx_size: Option<u32>,
    /// Count tokens as the scripted model does (about four characters each),
    /// with no model file: what `agent mcp serve`'s map does. For tests.
    #[arg(long, value_name = "FILE", hide = true)]
    pub script: Option<PathBuf>,
}
