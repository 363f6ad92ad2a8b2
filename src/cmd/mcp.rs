//! `agent mcp list`, `agent mcp trust` and `agent mcp serve`, and how the agent's sessions
//! start the workspace's MCP servers: trusted ones only, after asking on a
//! terminal where it may.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use console::style;

use crate::cli::{McpArgs, McpCommand};
use agent_base::term::untrusted;
use agent_mcp::config::{self, ServerConfig};
use agent_mcp::trust::TrustStore;
use agent_mcp::{Hub, ServerState};
use agent_policy::{Mode, Policy};

pub(crate) fn run(args: &McpArgs) -> Result<i32> {
    if let McpCommand::Serve { repo } = &args.command {
        let root = agent_base::paths::repo_root(repo.as_deref())?;
        agent_mcp_server::serve(&root, protocol_output()?)?;
        return Ok(crate::cmd::exit::OK);
    }
    let root = agent_base::paths::repo_root(None)?;
    match &args.command {
        McpCommand::List { json } => list(&root, *json),
        McpCommand::Trust { names, revoke } => trust(&root, names, *revoke),
        McpCommand::Serve { .. } => unreachable!("served above"),
    }
}

/// The real stdout, for the protocol alone: file descriptor 1 is pointed at
/// stderr, so whatever else writes there (a library's print, ONNX Runtime's
/// or llama.cpp's C code) lands in the log instead of corrupting a message.
pub(crate) fn protocol_output() -> Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let stdout = std::io::stdout().as_raw_fd();
    // SAFETY: dup and dup2 of the process's own open descriptors; the
    // duplicate is owned by the returned File alone.
    unsafe {
        let protocol = libc::dup(stdout);
        if protocol < 0 || libc::dup2(std::io::stderr().as_raw_fd(), stdout) < 0 {
            bail!(
                "cannot set stdout aside for the protocol: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(std::fs::File::from_raw_fd(protocol))
    }
}

fn list(root: &Path, json: bool) -> Result<i32> {
    let servers = config::load(root)?;
    let status = if servers.is_empty() {
        Vec::new()
    } else {
        let workspace = super::trust::workspace_trusted(root)?;
        let policy =
            Policy::load_for(&agent_base::paths::team_dir(root), Mode::Confirm, workspace)?;
        let store = TrustStore::open_default()?;
        let (trusted, pending) = match admin_allowlist(servers, root) {
            Ok(split) => split,
            Err(servers) => servers
                .into_iter()
                .partition(|s| workspace || store.is_trusted(root, s)),
        };
        Hub::start(trusted, pending, root, &policy).status()
    };
    let failed = status.iter().any(|s| s.state != ServerState::Running);
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else if status.is_empty() {
        println!(
            "no MCP servers in {} (declare them in .mcp.json or .agent/config.toml; see `agent mcp --help`)",
            untrusted(root)
        );
    } else {
        for s in &status {
            let mark = match s.state {
                ServerState::Running => style("ok  ").green(),
                ServerState::Untrusted => style("NEW ").yellow(),
                _ => style("FAIL").red(),
            };
            let why = s
                .reason
                .as_deref()
                .map(|r| format!("  ({})", untrusted(r)))
                .unwrap_or_default();
            println!(
                "[{mark}] {}  {}{why}",
                untrusted(&s.name),
                untrusted(&s.command)
            );
            for t in &s.tools {
                let ro = if t.read_only { " [read-only]" } else { "" };
                println!(
                    "       mcp__{}__{}{ro}: {}",
                    untrusted(&s.name),
                    untrusted(&t.name),
                    untrusted(&agent_tools::grep::cut(&t.description, 100))
                );
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}

fn trust(root: &Path, names: &[String], revoke: bool) -> Result<i32> {
    let managed = super::admin::managed();
    if managed.has_mcp_allowlist() && !revoke {
        return Err(super::admin::Refused(managed.refusal(
            "approving MCP servers yourself: only those on the administrator's allowlist start",
        ))
        .into());
    }
    let servers = config::load(root)?;
    let mut store = TrustStore::open_default()?;
    let at = untrusted(root);
    for name in names {
        let shown = untrusted(name);
        if revoke {
            if store.revoke(root, name)? {
                println!("{shown}: no longer trusted in {at}");
            } else {
                println!("{shown}: was not trusted in {at}");
            }
            if super::trust::workspace_trusted(root)? {
                println!("(the workspace itself is trusted, which starts every server; `agent trust --revoke` withdraws that)");
            }
            continue;
        }
        let Some(server) = servers.iter().find(|s| &s.name == name) else {
            let known: Vec<String> = servers
                .iter()
                .map(|s| untrusted(&s.name).to_string())
                .collect();
            bail!(
                "no MCP server `{shown}` in {at} (declared: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        };
        store.trust(root, server)?;
        println!("{shown}: trusted in {at} as:");
        println!("    command: {}", untrusted(&server.command));
        for (i, arg) in server.args.iter().enumerate() {
            println!("    arg {}: {}", i + 1, untrusted(arg));
        }
        for (k, v) in &server.env {
            println!("    env: {}={}", untrusted(k), untrusted(v));
        }
        for file in server.files_run(root) {
            println!("    runs: {}", untrusted(&file));
        }
    }
    Ok(0)
}

/// The workspace's MCP servers for a session, or None when it declares
/// none. In a trusted workspace (`workspace_trusted`) all start; else only
/// those approved one by one (`agent mcp trust NAME`); the rest are reported
/// and left out (the workspace's trust prompt has asked already). `extra`
/// servers (an editor's, passed over ACP) were chosen by the user in that
/// editor: they start as trusted.
pub(crate) fn start_for_session(
    root: &Path,
    policy: &Policy,
    workspace_trusted: bool,
    extra: Vec<ServerConfig>,
) -> Result<Option<Arc<Hub>>> {
    let servers = config::load(root)?;
    if servers.is_empty() && extra.is_empty() {
        return Ok(None);
    }
    let mut all = extra.clone();
    all.extend(servers.iter().cloned());
    if let Ok((trusted, refused)) = admin_allowlist(all, root) {
        return Ok(Some(start_hub(trusted, refused, root, policy)));
    }
    let store = TrustStore::open_default()?;
    let (mut trusted, mut pending) = (extra, Vec::new());
    for server in servers {
        if workspace_trusted || store.is_trusted(root, &server) {
            trusted.push(server);
        } else {
            pending.push(server);
        }
    }
    Ok(Some(start_hub(trusted, pending, root, policy)))
}

/// Starts the admitted servers and says which did not start.
fn start_hub(
    trusted: Vec<ServerConfig>,
    pending: Vec<ServerConfig>,
    root: &Path,
    policy: &Policy,
) -> Arc<Hub> {
    let hub = Hub::start(trusted, pending, root, policy);
    for s in hub
        .status()
        .iter()
        .filter(|s| s.state != ServerState::Running)
    {
        eprintln!(
            "{} MCP server {}: {} (going on without it; `agent mcp list` shows all)",
            style("!").yellow(),
            untrusted(&s.name),
            untrusted(s.reason.as_deref().unwrap_or_default())
        );
    }
    hub
}

/// With the administrator's MCP allowlist, which replaces the user's
/// approvals (an editor's servers included): the servers on it and the
/// others, each of which is named with the entry that would allow it. Without
/// one, the servers back (`Err`) for the user's trust to decide.
#[allow(clippy::type_complexity)]
fn admin_allowlist(
    servers: Vec<ServerConfig>,
    root: &Path,
) -> Result<(Vec<ServerConfig>, Vec<ServerConfig>), Vec<ServerConfig>> {
    let managed = super::admin::managed();
    if !managed.has_mcp_allowlist() {
        return Err(servers);
    }
    let (on, off): (Vec<_>, Vec<_>) = servers
        .into_iter()
        .partition(|s| managed.allows_mcp(&s.name, &agent_mcp::trust::fingerprint(s, root)));
    for s in &off {
        eprintln!(
            "{} {}",
            style("!").yellow(),
            managed.refusal(&format!(
                "the MCP server {} (not on its allowlist as {}:{})",
                untrusted(&s.name),
                untrusted(&s.name),
                agent_mcp::trust::fingerprint(s, root)
            ))
        );
    }
    Ok((on, off))
}
