//! How a session starts the workspace's MCP servers: trusted ones only
//! (or, under the administrator's allowlist, those on it); the rest are
//! said and left out.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use crate::{Notice, Say};
use agent_base::term::untrusted;
use agent_mcp::config;
use agent_mcp::trust::TrustStore;
use agent_mcp::Hub;
use agent_policy::{Mode, Policy};

pub use agent_mcp::config::ServerConfig;
pub use agent_mcp::{ServerState, ServerStatus};

/// The workspace's MCP servers for a session, or None when it declares
/// none. In a trusted workspace (`workspace_trusted`) all start; else only
/// those approved one by one (`agent mcp trust NAME`); the rest are reported
/// and left out (the workspace's trust prompt has asked already). `extra`
/// servers (an editor's, passed over ACP) were chosen by the user in that
/// editor: they start as trusted.
pub fn start_for_session(
    root: &Path,
    policy: &Policy,
    workspace_trusted: bool,
    extra: Vec<ServerConfig>,
    say: Say<'_>,
) -> Result<Option<Arc<Hub>>> {
    let servers = config::load(root)?;
    if servers.is_empty() && extra.is_empty() {
        return Ok(None);
    }
    let (trusted, pending) = admitted(servers, extra, root, workspace_trusted, say)?;
    Ok(Some(start_hub(trusted, pending, root, policy, say)))
}

/// The servers that start and those that wait: the administrator's
/// allowlist decides when there is one; else `extra` and, in a trusted
/// workspace all, else the ones approved one by one.
#[allow(clippy::type_complexity)]
fn admitted(
    servers: Vec<ServerConfig>,
    extra: Vec<ServerConfig>,
    root: &Path,
    workspace_trusted: bool,
    say: Say<'_>,
) -> Result<(Vec<ServerConfig>, Vec<ServerConfig>)> {
    let mut all = extra.clone();
    all.extend(servers.iter().cloned());
    if let Ok(split) = admin_allowlist(all, root, say) {
        return Ok(split);
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
    Ok((trusted, pending))
}

/// Starts the admitted servers and says which did not start.
fn start_hub(
    trusted: Vec<ServerConfig>,
    pending: Vec<ServerConfig>,
    root: &Path,
    policy: &Policy,
    say: Say<'_>,
) -> Arc<Hub> {
    let hub = Hub::start(trusted, pending, root, policy);
    for s in hub
        .status()
        .iter()
        .filter(|s| s.state != ServerState::Running)
    {
        say(Notice::Alert(format!(
            "MCP server {}: {} (going on without it; `agent mcp list` shows all)",
            untrusted(&s.name),
            untrusted(s.reason.as_deref().unwrap_or_default())
        )));
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
    say: Say<'_>,
) -> Result<(Vec<ServerConfig>, Vec<ServerConfig>), Vec<ServerConfig>> {
    let managed = crate::admin::managed();
    if !managed.has_mcp_allowlist() {
        return Err(servers);
    }
    let (on, off): (Vec<_>, Vec<_>) = servers
        .into_iter()
        .partition(|s| managed.allows_mcp(&s.name, &agent_mcp::trust::fingerprint(s, root)));
    for s in &off {
        say(Notice::Alert(managed.refusal(&format!(
            "the MCP server {} (not on its allowlist as {}:{})",
            untrusted(&s.name),
            untrusted(&s.name),
            agent_mcp::trust::fingerprint(s, root)
        ))));
    }
    Ok((on, off))
}

/// `agent mcp list`: each of the workspace's servers started as a session
/// would start it (untrusted ones are listed, not started), with its tools.
pub fn status(root: &Path, say: Say<'_>) -> Result<Vec<ServerStatus>> {
    let servers = config::load(root)?;
    if servers.is_empty() {
        return Ok(Vec::new());
    }
    let workspace = crate::trust::workspace_trusted(root)?;
    let policy = Policy::load_for(&agent_base::paths::team_dir(root), Mode::Confirm, workspace)?;
    let (trusted, pending) = admitted(servers, Vec::new(), root, workspace, say)?;
    Ok(Hub::start(trusted, pending, root, &policy).status())
}

/// `agent mcp trust NAME…` (or `--revoke`): each server approved in this
/// workspace as it is declared now (its command, arguments, environment and
/// the files it runs, said so the user sees what they approved), or no
/// longer. Under the administrator's allowlist only revoking is the user's.
pub fn trust(root: &Path, names: &[String], revoke: bool, say: Say<'_>) -> Result<()> {
    let managed = crate::admin::managed();
    if managed.has_mcp_allowlist() && !revoke {
        return Err(crate::admin::Refused(managed.refusal(
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
            let was = if store.revoke(root, name)? {
                "no longer"
            } else {
                "was not"
            };
            say(Notice::Plain(format!("{shown}: {was} trusted in {at}")));
            if crate::trust::workspace_trusted(root)? {
                say(Notice::Plain("(the workspace itself is trusted, which starts every server; `agent trust --revoke` withdraws that)".into()));
            }
            continue;
        }
        let Some(server) = servers.iter().find(|s| &s.name == name) else {
            let known: Vec<String> = servers
                .iter()
                .map(|s| untrusted(&s.name).to_string())
                .collect();
            anyhow::bail!(
                "no MCP server `{shown}` in {at} (declared: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        };
        store.trust(root, server)?;
        let mut lines = vec![
            format!("{shown}: trusted in {at} as:"),
            format!("    command: {}", untrusted(&server.command)),
        ];
        for (i, arg) in server.args.iter().enumerate() {
            lines.push(format!("    arg {}: {}", i + 1, untrusted(arg)));
        }
        for (k, v) in &server.env {
            lines.push(format!("    env: {}={}", untrusted(k), untrusted(v)));
        }
        for file in server.files_run(root) {
            lines.push(format!("    runs: {}", untrusted(&file)));
        }
        say(Notice::Plain(lines.join("\n")));
    }
    Ok(())
}
