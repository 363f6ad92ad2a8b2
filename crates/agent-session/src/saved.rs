//! The workspace's saved conversations (`agent sessions`): listed, shown,
//! and what one of them changed undone, as `/undo` in the session itself
//! would.

use std::path::Path;

use anyhow::{bail, Result};

use agent_base::cancel::CancelToken;
use agent_policy::{Mode, Policy};
use agent_protocol::{AlwaysApprove, ToolOutput};
use agent_tools::checkpoint::Checkpoints;
use agent_tools::{ReadLedger, ToolContext, Toolbox, Workspace};

pub use agent_core::split_context;
pub use agent_store::session::{SessionInfo, SessionStore, StoredMessage};

/// The saved conversations of the workspace at `root`.
pub fn store(root: &Path) -> Result<SessionStore> {
    SessionStore::open(&agent_base::paths::state_dir(root))
}

/// Session `id` of `store`, or an error that says how to find one.
pub fn get(store: &SessionStore, id: &str) -> Result<SessionInfo> {
    match store.get(id)? {
        Some(info) => Ok(info),
        None => bail!("no session {id}\n  fix: `agent sessions list` shows the sessions"),
    }
}

/// `agent sessions undo ID`: that session of `store` (the workspace's at
/// `root`) has its last change set restored (the user named it: no
/// question), as the `undo` tool reports it.
pub fn undo(root: &Path, store: &SessionStore, id: &str) -> Result<ToolOutput> {
    get(store, id)?;
    let workspace = Workspace::new(root)?;
    let state = workspace.state_dir();
    let policy = Policy::load(&workspace.team_dir(), Mode::default())?;
    let mut checkpoints = Checkpoints::open(&state)?;
    checkpoints.set_session(id);
    let mut ledger = ReadLedger::default();
    let cancel = CancelToken::new();
    let toolbox = Toolbox::standard();
    let mut ctx = ToolContext {
        room: usize::MAX,
        workspace: &workspace,
        ledger: &mut ledger,
        checkpoints: &mut checkpoints,
        policy: &policy,
        approver: &mut AlwaysApprove,
        search: None,
        cancel: &cancel,
        files: toolbox.files(),
    };
    Ok(toolbox.call("undo", &serde_json::json!({}), &mut ctx))
}
