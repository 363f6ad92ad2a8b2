//! `agent trust`, and the workspace trust every session starts with:
//! what the repository ships that runs code or widens the sandbox
//! ([`agent_core::trust`], MCP servers added here) takes effect only once
//! the user trusts it; until then it is pending, said in one line.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Result;
use console::style;

use crate::cli::TrustArgs;
use agent_core::trust::{Inventory, State, TrustStore};

/// `--trust` on the command line: trusted for this run.
static FLAG: OnceLock<bool> = OnceLock::new();

pub(crate) fn set_flag(trust: bool) {
    let _ = FLAG.set(trust);
}

fn flag() -> bool {
    FLAG.get().copied().unwrap_or(false)
}

/// Everything `root` ships that waits for trust, its MCP servers included.
pub(crate) fn inventory(root: &Path) -> Result<Inventory> {
    let mut inv = Inventory::collect(root)?;
    for s in agent_mcp::config::load(root)? {
        inv.add_server(&s.name, &s.command, &s.args, &s.env, &s.source);
    }
    Ok(inv)
}

/// What a session may use of what the workspace ships.
#[derive(Debug, Clone, Default)]
pub(crate) struct Decision {
    pub trusted: bool,
    /// What the sandbox keeps read-only: the files trusted hooks and
    /// servers run (those of servers approved one by one included).
    pub protected: Vec<PathBuf>,
}

/// The workspace's trust for a session: trusted, or trusted now (`--trust`
/// for this run, or a yes when `ask` may prompt on a terminal), or not,
/// and then one stderr line names what waits and `agent trust`.
pub(crate) fn for_session(root: &Path, may_ask: bool) -> Result<Decision> {
    let inv = inventory(root)?;
    let mut store = TrustStore::open_default()?;
    let state = store.state(root, &inv);
    let trusted = match &state {
        _ if trusted_now(&state) => true,
        State::Nothing | State::Trusted => true,
        State::Pending { changed } => {
            let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            if may_ask && terminal && prompt(&inv, changed)? {
                store.trust(root, &inv)?;
                true
            } else {
                eprintln!("{}", pending_line(&inv, changed));
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
        "{} this workspace is not trusted, so what it ships waits: {}{changed}; `agent trust --show` lists it, `agent trust` (or --trust for one run) lets it run",
        style("!").yellow(),
        inv.summary()
    )
}

/// Asks on the terminal, showing every fact one per line, escaped.
fn prompt(inv: &Inventory, changed: &[String]) -> Result<bool> {
    let why = if changed.is_empty() {
        "this workspace ships what runs code or widens the sandbox"
    } else {
        "this workspace changed since you trusted it"
    };
    eprintln!("{} {why}:", style("?").yellow().bold());
    for line in inv.lines() {
        eprintln!("    {line}");
    }
    eprint!("  trust this workspace as it is now? [y]es / [n]o: ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

/// Whether the workspace is trusted as a whole now (`agent trust`, `--trust`,
/// or nothing to trust).
pub(crate) fn workspace_trusted(root: &Path) -> Result<bool> {
    let inv = inventory(root)?;
    Ok(trusted_now(&TrustStore::open_default()?.state(root, &inv)))
}

/// Whether `state` lets what the workspace ships run (`--trust` included).
pub(crate) fn trusted_now(state: &State) -> bool {
    matches!(state, State::Nothing | State::Trusted) || flag()
}

/// The state in words, for `agent trust --show` and `agent doctor`.
pub(crate) fn state_words(state: &State) -> &'static str {
    match state {
        State::Nothing => "nothing to trust: the workspace ships no hooks, MCP servers, loosening policy or tool-declaring commands",
        State::Trusted => "trusted",
        State::Pending { changed } if changed.is_empty() => "not trusted: what it ships waits (`agent trust`)",
        State::Pending { .. } => "changed since you trusted it: what it ships waits (`agent trust` again)",
    }
}

pub(crate) fn run(args: &TrustArgs) -> Result<i32> {
    let root = agent_base::paths::repo_root(None)?;
    let inv = inventory(&root)?;
    let mut store = TrustStore::open_default()?;
    let state = store.state(&root, &inv);
    if args.revoke {
        let removed = store.revoke(&root)?;
        let said = if removed {
            "no longer trusted"
        } else {
            "was not trusted"
        };
        println!("{}: {said}", agent_base::term::untrusted(&root));
        return Ok(super::exit::OK);
    }
    if !args.show && !inv.is_empty() {
        store.trust(&root, &inv)?;
    }
    let now = if args.show {
        state
    } else {
        store.state(&root, &inv)
    };
    if args.json {
        let (label, changed) = match &now {
            State::Nothing => ("nothing", Vec::new()),
            State::Trusted => ("trusted", Vec::new()),
            State::Pending { changed } => ("pending", changed.clone()),
        };
        let report = serde_json::json!({
            "workspace": root, "state": label, "changed": changed,
            "items": inv.items, "files": inv.files,
            "store": store.path(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(super::exit::OK);
    }
    println!(
        "{}: {}",
        agent_base::term::untrusted(&root),
        state_words(&now)
    );
    for line in inv.lines() {
        println!("    {line}");
    }
    if let (State::Pending { changed }, true) = (&now, args.show) {
        if !changed.is_empty() {
            let changed: Vec<String> = changed
                .iter()
                .map(|f| agent_base::term::untrusted(f).to_string())
                .collect();
            println!("changed since: {}", changed.join(", "));
        }
    }
    Ok(super::exit::OK)
}
