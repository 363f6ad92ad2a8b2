//! How a session starts the workspace's MCP servers: trusted ones only
//! (or, under the administrator's allowlist, those on it); the rest are
//! said and left out.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;

use crate::{Notice, Say};
use agent_base::term::untrusted;
use agent_mcp::config::{self, ServerConfig};
use agent_mcp::trust::TrustStore;
use agent_mcp::{Hub, ServerState};
use agent_policy::Policy;

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
    let mut all = extra.clone();
    all.extend(servers.iter().cloned());
    if let Ok((trusted, refused)) = admin_allowlist(all, root, say) {
        return Ok(Some(start_hub(trusted, refused, root, policy, say)));
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
    Ok(Some(start_hub(trusted, pending, root, policy, say)))
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
pub fn admin_allowlist(
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
