//! The workspace trust every session starts with: what the repository
//! ships that runs code or widens the sandbox ([`agent_config::trust`], MCP
//! servers added here) takes effect only once the user trusts it; until
//! then it is pending, said in one notice.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Result;

use crate::{Ask, Notice, Say};
pub use agent_config::trust::{Inventory, State, TrustStore};

/// `--trust` on the command line: trusted for this run.
static FLAG: OnceLock<bool> = OnceLock::new();

pub fn set_flag(trust: bool) {
    let _ = FLAG.set(trust);
}

fn flag() -> bool {
    FLAG.get().copied().unwrap_or(false)
}

/// Everything `root` ships that waits for trust, its MCP servers included.
pub fn inventory(root: &Path) -> Result<Inventory> {
    let mut inv = Inventory::collect(root)?;
    for s in agent_mcp::config::load(root)? {
        inv.add_server(&s.name, &s.command, &s.args, &s.env, &s.source);
    }
    Ok(inv)
}

/// What a session may use of what the workspace ships.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub trusted: bool,
    /// What the sandbox keeps read-only: the files trusted hooks and
    /// servers run (those of servers approved one by one included).
    pub protected: Vec<PathBuf>,
}

/// The workspace's trust for a session: trusted, or trusted now (`--trust`
/// for this run, or a yes when `ask` is given: a front end on a terminal),
/// or not, and then a notice names what waits and `agent trust`.
pub fn for_session(root: &Path, ask: Option<&mut dyn Ask>, say: Say<'_>) -> Result<Decision> {
    let inv = inventory(root)?;
    let mut store = TrustStore::open_default()?;
    let state = store.state(root, &inv);
    let trusted = match &state {
        _ if trusted_now(&state) => true,
        State::Nothing | State::Trusted => true,
        State::Pending { changed } => {
            if ask.is_some_and(|ask| ask.confirm(&question(&inv, changed))) {
                store.trust(root, &inv)?;
                true
            } else {
                say(Notice::Alert(pending_line(&inv, changed)));
                false
            }
        }
    };
    let mut protected = if trusted {
        inv.run_files.clone()
    } else {
        Vec::new()
    };
    // A server approved alone still starts: what it runs is kept read-only.
    let servers = agent_mcp::trust::TrustStore::open_default()?;
    for s in agent_mcp::config::load(root)? {
        if servers.is_trusted(root, &s) {
            protected.extend(s.files_run(root));
        }
    }
    protected.sort();
    protected.dedup();
    Ok(Decision { trusted, protected })
}

/// One line: what waits, and how to let it run.
fn pending_line(inv: &Inventory, changed: &[String]) -> String {
    let changed = if changed.is_empty() {
        String::new()
    } else {
        format!(
            " (changed since you trusted it: {})",
            changed
                .iter()
                .map(|f| agent_base::term::untrusted(f).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "this workspace is not trusted, so what it ships waits: {}{changed}; `agent trust --show` lists it, `agent trust` (or --trust for one run) lets it run",
        inv.summary()
    )
}

/// The question a front end asks: every fact one per line, escaped.
fn question(inv: &Inventory, changed: &[String]) -> String {
    let why = if changed.is_empty() {
        "this workspace ships what runs code or widens the sandbox"
    } else {
        "this workspace changed since you trusted it"
    };
    let mut text = format!("? {why}:\n");
    for line in inv.lines() {
        text.push_str(&format!("    {line}\n"));
    }
    text.push_str("  trust this workspace as it is now?");
    text
}

/// Whether the workspace is trusted as a whole now (`agent trust`, `--trust`,
/// or nothing to trust).
pub fn workspace_trusted(root: &Path) -> Result<bool> {
    let inv = inventory(root)?;
    Ok(trusted_now(&TrustStore::open_default()?.state(root, &inv)))
}

/// Whether `state` lets what the workspace ships run (`--trust` included).
pub fn trusted_now(state: &State) -> bool {
    matches!(state, State::Nothing | State::Trusted) || flag()
}

/// The state in words, for `agent trust --show` and `agent doctor`.
pub fn state_words(state: &State) -> &'static str {
    match state {
        State::Nothing => "nothing to trust: the workspace ships no hooks, MCP servers, loosening policy or tool-declaring commands",
        State::Trusted => "trusted",
        State::Pending { changed } if changed.is_empty() => "not trusted: what it ships waits (`agent trust`)",
        State::Pending { .. } => "changed since you trusted it: what it ships waits (`agent trust` again)",
    }
}
