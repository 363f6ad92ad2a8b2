//! `agent sessions list|show`: the saved conversations of this workspace.

use anyhow::{bail, Result};

use super::exit;
use crate::cli::{SessionsArgs, SessionsCommand};
use agent_core::session::SessionStore;

pub fn run(args: &SessionsArgs) -> Result<i32> {
    let root = agent_base::paths::repo_root(None)?;
    let store = SessionStore::open(&root.join(".agent"))?;
    match &args.command {
        SessionsCommand::List { limit, json } => {
            let sessions = store.list(*limit)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&sessions)?);
            } else if sessions.is_empty() {
                eprintln!(
                    "no sessions yet in {}; start one with `agent chat` or `agent ask`",
                    root.display()
                );
            } else {
                for s in sessions {
                    println!(
                        "{}  {}  {:>4} msgs  {}",
                        s.id,
                        s.updated.get(..16).unwrap_or(&s.updated).replace('T', " "),
                        s.messages,
                        s.title.replace('\n', " ")
                    );
                }
            }
        }
        SessionsCommand::Show { id, json, script } => {
            let Some(info) = store.get(id)? else {
                bail!("no session {id}\n  fix: `agent sessions list` shows the sessions");
            };
            let messages = store.messages(id)?;
            if *script {
                // The model's side of the conversation, in order: replayed
                // with `agent ask --script`, the same calls hit the real tools.
                let turns: Vec<&str> = messages
                    .iter()
                    .filter(|m| m.kind == "call")
                    .map(|m| m.content.as_str())
                    .collect();
                println!("{}", serde_json::to_string_pretty(&turns)?);
            } else if *json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"session": info, "messages": messages})
                    )?
                );
            } else {
                println!("session {} ({}, {})", info.id, info.model, info.created);
                for m in messages {
                    println!("\n── {} · {} ──\n{}", m.kind, m.ts, m.content.trim_end());
                }
            }
        }
    }
    Ok(exit::OK)
}
