//! Command-line definitions (clap). Each subcommand's behaviour lives in
//! `src/cmd/<name>.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use agent_session::settings::{GpuLayers, Mode, SearchMode, Think};

const AFTER_HELP: &str = "\
Quick start:
  agent models                         # once: are the model files in place (sha256)? says how to get them
  agent doctor                         # is everything in place? names the fix if not
  agent index                          # index the repository (optional; enables search_semantic)
  agent ask \"Where is the config parsed?\"       # the agent reads, searches, answers
  agent ask \"Add a --verbose flag to the CLI\"    # ...and changes code, asking before each write
  agent chat                           # a conversation; `agent chat --resume` continues the last one

Everything runs on this machine: llama.cpp in-process, no network at run time.
Environment: AGENT_MODELS_DIR (models folder), RUST_LOG (log filter).";

#[derive(Debug, Parser)]
#[command(name = "agent", version, about = "A local-first coding agent", after_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// More logs on stderr (-v: info, -vv: debug including llama.cpp, -vvv: trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Accept `/`, the home folder or a system folder (/etc, /usr, ...) as
    /// the workspace. Refused by default: the agent indexes, changes and runs
    /// commands in its workspace.
    #[arg(long, global = true)]
    pub allow_root_workspace: bool,

    /// Trust what this workspace ships (hooks, MCP servers, loosening policy.toml keys,
    /// commands and skills that declare tools) for this run, without asking and without
    /// remembering it: for scripts and CI. `agent trust` remembers it.
    #[arg(long, global = true)]
    pub trust: bool,

    /// None: `agent` alone, which is `agent chat` on a terminal ([`default_command`]).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `agent` alone: the chat in its terminal UI on a terminal; elsewhere
/// (a pipe, `TERM=dumb`) a subcommand is needed, as before.
pub(crate) fn default_command() -> Command {
    use clap::CommandFactory;
    if agent_tui::available() {
        if let Ok(Cli {
            command: Some(chat),
            ..
        }) = Cli::try_parse_from(["agent", "chat"])
        {
            return chat;
        }
    }
    Cli::command()
        .error(
            clap::error::ErrorKind::MissingSubcommand,
            "a subcommand is needed when not on a terminal (on one, `agent` alone opens the chat)",
        )
        .exit()
}

impl Command {
    /// The shared index store a command was given (`--store`), which every
    /// index reader in the process then uses.
    pub(crate) fn index_store(&self) -> Option<&str> {
        match self {
            Command::Ask(a) => a.store.store.as_deref(),
            Command::Chat(a) => a.store.store.as_deref(),
            Command::Index(a) => a.store.as_deref(),
            Command::Search(a) => a.store.store.as_deref(),
            _ => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Ask a question about the code or give a coding task; the agent uses tools to answer.
    #[command(after_help = ASK_HELP)]
    Ask(Box<AskArgs>),
    /// A conversation with the agent in this repository (saved; resumable).
    #[command(after_help = CHAT_HELP)]
    Chat(Box<ChatArgs>),
    /// List or show saved sessions.
    Sessions(SessionsArgs),
    /// Write an AGENTS.md for this repository: its build and test commands, layout and central modules.
    #[command(after_help = INIT_HELP)]
    Init(Box<InitArgs>),
    /// Build or update the code index of a repository (incremental; --watch keeps it live).
    #[command(
        after_help = "Examples:\n  agent index                  # index the current repository (only changed files are redone)\n  agent index --watch          # then keep it up to date as files change\n  agent index --status --json  # what is indexed\n  agent index --rebuild        # start from scratch\n  agent index --threads 1      # leave the other cores free\n  agent index --store s3://team-bucket/myrepo   # CI: keep the team's shared index current\n\nThe index lives in the repository's state folder outside it (~/.local/state/agent/workspaces/NAME-HASH/index/; `agent doctor` names it) (with --store, in the store; `agent search --store` and `agent ask --store` then read it, with this machine's changed files indexed locally on top). It honours .gitignore, .ignore and .agentignore. Past 50,000 chunks it also gets a vector index (IVF_PQ), so searches stay fast on large repositories. While watching, it runs at low CPU priority."
    )]
    Index(IndexArgs),
    /// Search the code index: hybrid (vector + BM25) by default.
    #[command(
        after_help = "Results are grouped by file, best file first (at most 3 chunks of a file). A long query, such as a whole issue text (`agent search -- \"$(cat issue.md)\"`), is taken apart: its code names, paths and tracebacks weigh more than its prose.\n\nExamples:\n  agent search \"where is the KV cache trimmed\"\n  agent search -k 5 --lang rust --path 'src/**' \"parse a GGUF header\"\n  agent search --mode bm25 LlamaEngine --json"
    )]
    Search(SearchArgs),
    /// Print a ranked map of the repository's definitions, fitted to a token budget.
    #[command(
        after_help = "Examples:\n  agent map                         # the map the agent's system prompt carries\n  agent map --tokens 400 --focus src/index/mod.rs --focus LlamaEngine\n  agent map --json                  # text, token count, ranked files\n  agent map --request \"$(cat issue.md)\"  # the map the agent would see for that request"
    )]
    Map(MapArgs),
    /// List the model files, verify their sha256, and show what the chat model is.
    Models(ModelsArgs),
    /// Check that models, ONNX Runtime and llama.cpp work; exit 0 only if `agent ask` can run.
    Doctor(DoctorArgs),
    /// MCP servers of this workspace (.mcp.json, .agent/config.toml): start them, show their tools.
    #[command(after_help = "Servers are declared in .mcp.json at the workspace root
  {\"mcpServers\": {\"docs\": {\"command\": \"python3\", \"args\": [\"docs_server.py\"], \"env\": {}}}}
or in .agent/config.toml
  [mcp_servers.docs]
  command = \"python3\"
  args = [\"docs_server.py\"]

A remote server (streamable HTTP) is declared by its url instead, with headers (${VAR} in a value
is read from the environment) and, for an internal CA, ca_bundle:
  {\"mcpServers\": {\"wiki\": {\"type\": \"http\", \"url\": \"https://wiki.corp/mcp\",
                 \"headers\": {\"Authorization\": \"Bearer ${WIKI_TOKEN}\"}}}}

A server is a program the agent starts outside the command sandbox, and these files come with
the repository, so a server starts only in a trusted workspace (`agent trust`, or a yes when
`agent ask` or `agent chat` asks on a terminal), or once you have approved its exact definition
(command, arguments, environment, and the sha256 of the script it runs in the workspace) alone:
`agent mcp trust NAME`. A changed definition or script needs approval again. Approvals are kept
in ~/.config/agent/ (trusted-workspaces.json, trusted-mcp.json).

Their tools reach the agent as mcp__SERVER__TOOL; calls ask first in confirm mode unless the
server marks the tool read-only, and deny rules of .agent/policy.toml apply to them.

Examples:
  agent mcp list                 # every declared server: running, untrusted or failed
  agent mcp trust docs           # approve the server `docs` as declared now
  agent mcp trust --revoke docs
  agent mcp list --json")]
    Mcp(McpArgs),
    /// Trust this workspace: its hooks, MCP servers, loosening policy.toml keys and
    /// commands/skills that declare tools take effect (as they are now).
    #[command(after_help = TRUST_HELP)]
    Trust(TrustArgs),
    /// Serve editors (Zed, JetBrains IDEs, Neovim) as an Agent Client Protocol agent over stdio.
    #[command(after_help = ACP_HELP)]
    Acp(Box<AcpArgs>),
    /// The effective configuration, and where each setting comes from.
    #[command(after_help = CONFIG_HELP)]
    Config(ConfigArgs),
    /// Check the audit trail's hash chain, or export its records for a SIEM.
    #[command(after_help = AUDIT_HELP)]
    Audit(AuditArgs),
}

const CONFIG_HELP: &str = "\
Precedence, highest first: the administrator's managed file (/etc/agent/managed.toml, or the file
AGENT_MANAGED_CONFIG names), the command line, the environment, the workspace (.agent/policy.toml,
.agent/config.toml), the user (~/.config/agent/), the defaults. The managed file wins only where
it restricts: it can forbid yolo or the network, never allow what a workspace turned off.

Examples:
  agent config show                     # key = value
  agent config show --origin            # ...and where each came from
  agent config show --origin --mode yolo --json";

const AUDIT_HELP: &str = "\
Every audit record carries the sha256 of the record before it; each file starts with a head
record, and the latest record's hash is also kept apart from the file (beside the administrator's
sink, or in ~/.local/state/agent/audit-heads/ for the workspace's own copy). `verify` names the
first record that was changed, deleted, inserted or reordered, and a tail that was cut off. It
cannot tell a whole chain rewritten together with its head by someone who can write both (the
user, for their own copy): an administrator's sink the user cannot write guards against that.

Without FILE: the workspace's own copy (logs/audit.jsonl in its state folder, `agent doctor` names it) and the sink, if one is set
(audit_dir in the managed file, or AGENT_AUDIT_DIR): DIR/USER.jsonl.

Examples:
  agent audit verify
  agent audit verify /var/log/agent/alice.jsonl --json
  agent audit export --since 24h --json > records.jsonl
  agent audit export --since 2026-11-27T00:00:00Z --json";

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the effective configuration of the workspace around the current directory.
    Show {
        /// Say where each setting comes from.
        #[arg(long)]
        origin: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The --mode a session would be given.
        #[arg(long, value_enum)]
        mode: Option<Mode>,
        /// The --sandbox a session would be given.
        #[arg(long, value_enum, value_name = "on|off")]
        sandbox: Option<Switch>,
        /// The --model a session would be given.
        #[arg(long, value_name = "PATH")]
        model: Option<PathBuf>,
        /// The --server a session would be given.
        #[arg(long, value_name = "URL")]
        server: Option<String>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Check the hash chain; exit 0 when intact, 1 when a record is broken.
    Verify {
        /// An audit file (default: the workspace's own copy and the sink).
        file: Option<PathBuf>,
        /// The head file to check the tail against (default: the one the file's head record names).
        #[arg(long, value_name = "FILE")]
        head: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the records since a time, for a SIEM.
    Export {
        /// An RFC 3339 time (2026-11-27T09:00:00Z) or a duration back from now (90s, 30m, 24h, 7d).
        #[arg(long, value_name = "TIME|DURATION")]
        since: String,
        /// An audit file (default: the sink if one is set, else the workspace's own copy).
        file: Option<PathBuf>,
        /// One JSON record per line (JSON Lines).
        #[arg(long)]
        json: bool,
    },
}

const TRUST_HELP: &str = "\
A repository can ship what runs code or widens the sandbox: hooks ([[hooks.*]] in
.agent/config.toml), MCP servers (.mcp.json, [mcp_servers.*]), policy.toml keys that loosen the
policy (allow_network = true, allow rules, timeouts above the defaults) and commands or skills
whose front matter declares tools (allowed-tools). Until you trust the workspace none of it takes
effect: `agent ask` and `agent chat` say so in one line (and ask on a terminal), `agent doctor`
lists it. Keys that restrict (deny, scrub_env, lower timeouts) always apply.

A trust is pinned by the sha256 of those files and of the files they run inside the workspace (a
hook's script, an MCP server's script): any change, by a commit or by a command, means asking
again. Trusts are kept in ~/.config/agent/trusted-workspaces.json, out of every workspace, and
the files trusted hooks and servers run are read-only to the agent's commands.

`agent mcp trust NAME` still approves one server alone; a trusted workspace starts all of them.

Examples:
  agent trust --show          # what this workspace ships, every argument and env var, escaped
  agent trust                 # trust it as it is now
  agent trust --revoke
  agent trust --show --json
  agent --trust ask \"...\"     # scripts, CI: trusted for this run only";

/// `agent trust`.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// Show what the workspace ships and whether it is trusted; change nothing.
    #[arg(long, conflicts_with = "revoke")]
    pub show: bool,
    /// Withdraw the trust of this workspace.
    #[arg(long)]
    pub revoke: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

const ACP_HELP: &str = "\
An editor starts `agent acp` itself and speaks the Agent Client Protocol (JSON-RPC) on its stdin
and stdout; you do not run it by hand. Each editor session is an agent session in the folder the
editor opened (saved like `agent chat`'s, and loadable again); the editor shows the answer, the
model's reasoning, every tool call with its status, and each edit as a diff.

Writes and commands that --mode would confirm are asked in the editor: allow once, always allow
(that kind of action, for the rest of the session) or reject. The editor's stop button cancels the
generation and the running command; what was done stays done (ask the agent to undo it). MCP
servers configured in the editor (stdio ones) join the workspace's trusted ones. When the editor
offers its file system, files are read and written through it: unsaved buffers are what the agent
sees and edits. Stdout carries
only protocol messages; logs go to stderr (-v for more); it ends when the editor closes its stdin.

Zed (settings.json):
  \"agent_servers\": {
    \"agent\": {
      \"type\": \"custom\",
      \"command\": \"agent\",
      \"args\": [\"acp\"],
      \"env\": {}
    }
  }
JetBrains IDEs (~/.jetbrains/acp.json): the same \"agent_servers\" entry.
Neovim (CodeCompanion, avante.nvim): a custom ACP adapter with command `agent`, args `acp`.

Examples:
  agent acp                                   # the default model, confirm mode
  agent acp --mode yolo --model ~/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf
  agent acp --server http://gpu-box:8080/v1   # a remote OpenAI-compatible server
  agent acp --script turns.json               # replay model turns (tests)";

/// `agent acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
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

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Start each trusted server, list every server's state and tools, stop them again.
    List {
        /// Print JSON instead of a list.
        #[arg(long)]
        json: bool,
    },
    /// Approve servers as declared now, so the agent may start them in this workspace.
    Trust {
        /// Server names, as in `agent mcp list`.
        #[arg(required = true)]
        names: Vec<String>,
        /// Withdraw the approval instead.
        #[arg(long)]
        revoke: bool,
    },
    /// Serve this repository's code index and map to other agents and editors (MCP over stdio).
    #[command(
        after_help = "Tools (all read-only, no model needed): search (hybrid, issue texts welcome;
lang and path filters, k), map (ranked outline focused on paths or symbols, token budget),
definitions (where a symbol is defined), index_status. While it runs, the index is kept live as
files change; without an index, search says how to build one (`agent index`) and the rest works.
Stdout carries only MCP messages, logs go to stderr; it ends when the client closes stdin.

Examples:
  claude mcp add agent-code -- agent mcp serve --repo /path/to/repo
  .mcp.json: {\"mcpServers\": {\"agent-code\": {\"command\": \"agent\", \"args\": [\"mcp\", \"serve\"]}}}
  ~/.codex/config.toml: [mcp_servers.agent-code] command = \"agent\" args = [\"mcp\", \"serve\"]"
    )]
    Serve {
        /// The repository to serve (default: the one containing the current directory).
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
    },
}

const ASK_HELP: &str = "\
How it works:
  An intent gate decides what the request needs: chat and questions about the agent are answered
  directly; questions about the repository get read-only tools (list_dir, read_file, glob, grep,
  search_semantic); coding tasks also get edit, apply_patch, write_file, undo and run_cmd.
  Every tool call is generated under a grammar, so it always parses. Writes show a diff.
  An answer that only repeats the question is sent back; on the last step the search results
  are shown instead, marked as such.

Permissions (--mode):
  confirm  ask before every write and command (default); reads never ask
  human    ask before every tool call, reads included
  yolo     never ask; the command policy still refuses dangerous commands, and a command whose
           program or target is decided at run time ($X, `... | sh`) still asks
  Commands are checked against built-in denials (rm -rf /, curl | sh, network tools, ...) and
  .agent/policy.toml, then run in a sandbox (--sandbox on, Linux Landlock): they write only in
  the workspace and a private temp dir and reach no network. Whatever a command starts ends with
  it. `undo` (or the model's undo tool) reverts the last change set.

Logs and state (outside the workspace, in ~/.local/state/agent/workspaces/NAME-HASH/, or under
$XDG_STATE_HOME; `agent doctor` names it; .agent/ holds only what a team commits):
  sessions.sqlite         every session and message (`agent sessions list`)
  logs/audit.jsonl        requests, intents, tool calls, decisions, diffs, commands
  logs/trace.jsonl        each model request/response with token counts and timings

Custom commands: `agent ask /NAME args` sends the prompt file .agent/commands/NAME.md (or
.claude/commands/, ~/.config/agent/commands/) with $ARGUMENTS replaced by the args.
Skills (SKILL.md folders in .agent/skills/, .claude/skills/, ~/.config/agent/skills/) are listed
to the model, which loads one with the skill tool. Hooks ([[hooks.pre_tool]], [[hooks.post_tool]]
in .agent/config.toml) run around tool calls, in the sandbox, with the call as JSON on stdin.

Examples:
  agent ask \"Where is the retry delay computed?\"
  agent ask --mode yolo --verify \"python3 -m unittest\" \"Fix the failing test in tests/test_math.py\"
  agent ask --json \"What does parse_config return?\"       # one JSON object for scripts
  agent ask --no-tools -f src/main.rs \"What does main do?\"  # plain answer, no tools
  agent ask --script turns.json \"...\"                      # replay recorded model turns
  agent ask --model ~/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf \"...\"

Exit codes: 0 answered, 1 error, 3 no answer (none within --max-steps, or the model's reply was
not an answer: what the search found is printed instead) or not done (a coding task whose
changes were all declined or refused), 130 interrupted (Ctrl-C).";

const CHAT_HELP: &str = "\
On a terminal the chat is a terminal UI (`agent` alone opens it too): Enter sends, Ctrl-J,
Shift+Enter or a trailing \\ starts a new line, a paste is one message, Up/Down recall earlier
requests (kept per workspace), / lists the commands and Tab completes one, Esc stops the current
step, Ctrl-C twice quits; edits and commands are approved in place (y, n, a for always).
Answers show their Markdown; reasoning and tool output are folded to their first lines, Ctrl-T
prints the last folded one in full and keeps the next ones whole (Ctrl-T again folds).
A pipe, TERM=dumb or --no-tui get the line mode:

Type a request and press Enter; /exit or Ctrl-D ends the chat (empty lines are ignored). Ctrl-C
stops the current step and returns to the prompt (twice quits). Every message is saved as it
happens; --resume shows the last exchanges first.

Commands (never sent to the model): /help, /clear (new conversation), /undo (the agent's last
change in this session; `agent sessions undo ID` for an earlier one), /model, /tokens (usage and how full the context is), /compact [focus] (replace the
conversation so far by the model's summary), /init (write AGENTS.md), /exit. Prompt files in
.agent/commands/NAME.md (or ~/.config/agent/commands/) are /NAME: `/review src/app.py` sends the
file's text with $ARGUMENTS replaced by `src/app.py`.

A conversation that passes 80% of the context window (compact_at in .agent/config.toml) is
compacted the same way; a model whose summary is no summary gets old turns pruned instead.

Examples:
  agent chat
  agent chat --resume            # continue the latest session
  agent chat --resume 20261122-213000-ab12
  agent chat --mode yolo --verify \"cargo test\"";

const INIT_HELP: &str = "\
What goes in: the install, build, test, lint and type-check commands the repository's files name
(Cargo.toml, go.mod, package.json scripts, pyproject.toml, tox.ini, noxfile.py, Makefile,
CMakeLists.txt, Maven/Gradle, GitHub Actions and GitLab CI), its languages and folders, and its
central modules (the repo map's ranking); with a model, two or three sentences on what the project
is, kept only when they are about this repository.

The file is shown as a diff and confirmed like any write; an existing AGENTS.md is never replaced
without a yes on a terminal, even with --mode yolo (which creates a new one without asking).
`agent chat` has the same as /init.

Examples:
  agent init                      # review the diff, answer y
  agent init --print --no-model   # only print what it would write
  agent init --mode yolo          # create AGENTS.md without asking (replacing one still asks)";

/// `agent init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
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
pub(crate) struct AgentArgs {
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
}

impl AgentArgs {
    /// The flags as the session takes them.
    pub(crate) fn settings(&self) -> agent_session::AgentSettings {
        agent_session::AgentSettings {
            mode: self.mode,
            max_steps: self.max_steps,
            verify: self.verify.clone(),
            repo_map: !self.no_map,
            sandbox: self.sandbox == Switch::On,
        }
    }
}

impl ModelArgs {
    /// The flags as the session takes them.
    pub(crate) fn settings(&self) -> agent_session::ModelSettings {
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
    pub(crate) fn format(&self) -> OutputFormat {
        match self.output_format {
            OutputFormat::Text if self.json => OutputFormat::Json,
            f => f,
        }
    }
}

/// How `agent ask` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Switch {
    On,
    Off,
}

/// When to draft tokens for speculative decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Speculation {
    Auto,
    On,
    Off,
}

/// Which model answers, and how it runs.
#[derive(Debug, Clone, Args)]
pub(crate) struct ModelArgs {
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
pub(crate) struct AskArgs {
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
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
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

#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// The saved sessions of this workspace, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// One session's messages.
    #[command(
        after_help = "Examples:\n  agent sessions show 20261122-213000-ab12\n  agent sessions show 20261122-213000-ab12 --script > turns.json\n  agent ask --script turns.json \"<the same request>\"   # replay it against the real tools"
    )]
    Show {
        /// The session id (`agent sessions list`).
        id: String,
        #[arg(long, conflicts_with = "script")]
        json: bool,
        /// Print the model's replies as a JSON list for `agent ask --script` (reproduce a session).
        #[arg(long)]
        script: bool,
    },
    /// Undo a session's last change to the files (`/undo` in a chat takes
    /// back only that chat's own).
    Undo {
        /// The session id (`agent sessions list`).
        id: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ModelsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print JSON instead of a checklist.
    #[arg(long)]
    pub json: bool,
    /// Check this GGUF instead of the default chat model.
    #[arg(long, value_name = "PATH", env = "AGENT_MODEL")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

/// Where the in-process model runs.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct GpuArgs {
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

#[derive(Debug, Args)]
pub(crate) struct IndexArgs {
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
    /// Print JSON (one object; with --watch, one line per update).
    #[arg(long)]
    pub json: bool,
}

/// Which index searches read.
#[derive(Debug, Clone, Args)]
pub(crate) struct StoreArgs {
    /// Search the shared index in this store (s3://BUCKET/PREFIX or a
    /// folder), read-only, instead of this repository's own; files that
    /// differ on this machine are indexed locally and searched on top.
    #[arg(long, value_name = "URI", env = "AGENT_INDEX_STORE")]
    pub store: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
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
pub(crate) struct MapArgs {
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own check of the definitions: every `conflicts_with` and
    /// `requires` names an argument, no two flags share a name.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
