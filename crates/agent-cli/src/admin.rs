//! The commands around the agent: its configuration, audit trail, trust,
//! MCP servers, saved sessions, model files and health.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use agent_session::settings::Mode;

use crate::agent::{GpuArgs, Switch};

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
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
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
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

/// `agent trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
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

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
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

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
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
pub struct ModelsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of a checklist.
    #[arg(long)]
    pub json: bool,
    /// Check this GGUF instead of the default chat model.
    #[arg(long, value_name = "PATH", env = "AGENT_MODEL")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub gpu: GpuArgs,
}
