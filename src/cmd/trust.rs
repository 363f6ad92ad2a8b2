//! `agent trust`: what the workspace ships that waits for trust, and the
//! user's yes or no to it (the decisions are `agent_session::trust`).

use anyhow::Result;

use agent_cli::TrustArgs;
use agent_session::trust::{inventory, state_words, State, TrustStore};

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
