//! The command line of `agent`: every subcommand, its flags and their help
//! (clap's derive), and the session's settings the flags make. The binary
//! parses with [`Cli`] and hands each command's arguments to its `cmd`
//! module; nothing here reads a file or opens a model, so the whole command
//! line is checked by a unit test (clap's `debug_assert`).

mod admin;
mod agent;
mod help;
mod index;

pub use admin::{
    AuditArgs, AuditCommand, ConfigArgs, ConfigCommand, DoctorArgs, McpArgs, McpCommand,
    ModelsArgs, SessionsArgs, SessionsCommand, TrustArgs,
};
pub use agent::{
    AcpArgs, AgentArgs, AskArgs, ChatArgs, GpuArgs, InitArgs, ModelArgs, OutputFormat, Speculation,
    Switch,
};
pub use index::{DepsWhich, IndexArgs, MapArgs, SearchArgs, SearchScope, StoreArgs};

use clap::{Parser, Subcommand};

use help::{
    ACP_HELP, AFTER_HELP, ASK_HELP, AUDIT_HELP, CHAT_HELP, CONFIG_HELP, INIT_HELP, TRUST_HELP,
};

#[derive(Debug, Parser)]
#[command(name = "agent", version, about = "A local-first coding agent", after_help = AFTER_HELP)]
pub struct Cli {
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

/// `agent` alone: the chat in its terminal UI on a terminal (`tui`: the
/// terminal UI can run here); elsewhere (a pipe, `TERM=dumb`) a subcommand
/// is needed, and clap's usage error ends the process.
pub fn default_command(tui: bool) -> Command {
    use clap::CommandFactory;
    if tui {
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
    pub fn index_store(&self) -> Option<&str> {
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
pub enum Command {
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
