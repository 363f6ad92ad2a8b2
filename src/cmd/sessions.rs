//! `agent sessions list|show|undo`: the saved conversations of this
//! workspace, and undoing what one of them changed.

use anyhow::Result;

use super::exit;
use agent_base::term::{untrusted, untrusted_text};
use agent_cli::{SessionsArgs, SessionsCommand};
use agent_session::saved;

pub(crate) fn run(args: &SessionsArgs) -> Result<i32> {
    let root = agent_base::paths::repo_root(None)?;
    let store = saved::store(&root)?;
    match &args.command {
        SessionsCommand::List { limit, json } => {
            let sessions = store.list(*limit)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&sessions)?);
            } else if sessions.is_empty() {
                eprintln!(
                    "no sessions yet in {}; start one with `agent chat` or `agent ask`",
                    untrusted(&root)
                );
            } else {
                for s in sessions {
                    println!(
                        "{}  {}  {:>4} msgs  {}",
                        untrusted(&s.id),
                        untrusted(&s.updated.get(..16).unwrap_or(&s.updated).replace('T', " ")),
                        s.messages,
                        untrusted(&s.title.replace('\n', " "))
                    );
                }
            }
        }
        SessionsCommand::Undo { id } => return undo(&root, &store, id),
        SessionsCommand::Show { id, json, script } => {
            let info = saved::get(&store, id)?;
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
                // A stored session holds the model's and the repository's
                // text: shown escaped, exact only in --json.
                println!(
                    "session {} ({}, {})",
                    untrusted(&info.id),
                    untrusted(&info.model),
                    untrusted(&info.created)
                );
                for (i, m) in messages.iter().enumerate() {
                    if m.kind == "system" {
                        // The same few KB opens every session: folded, so
                        // the conversation starts on the first screen.
                        let size = m.content.chars().count();
                        println!(
                            "\n── system · {} ── ({size} characters; `agent sessions show {} --json` has it whole)",
                            untrusted(&m.ts),
                            untrusted(&info.id)
                        );
                        continue;
                    }
                    // The session's context (environment, repo map) opens
                    // the first request and any summary: shown on its own,
                    // so the request reads as the user wrote it.
                    let (context, text) = if i == 1 || m.kind == "summary" {
                        saved::split_context(&m.content)
                    } else {
                        (None, m.content.as_str())
                    };
                    if let Some(context) = context {
                        println!(
                            "\n── context · {} ──\n{}",
                            untrusted(&m.ts),
                            untrusted_text(context.trim_end())
                        );
                    }
                    println!(
                        "\n── {} · {} ──\n{}",
                        untrusted(&m.kind),
                        untrusted(&m.ts),
                        untrusted_text(text.trim_end())
                    );
                }
            }
        }
    }
    Ok(exit::OK)
}

/// `agent sessions undo ID`: that session's last change set, restored as
/// `/undo` in the session itself would (the user named it: no question).
fn undo(root: &std::path::Path, store: &saved::SessionStore, id: &str) -> Result<i32> {
    let out = saved::undo(root, store, id)?;
    if let Some(diff) = &out.diff {
        eprint!("{}", agent_protocol::diff::colored(diff));
    }
    if out.ok {
        eprintln!("{}", agent_base::term::untrusted_text(&out.content));
        // Nothing to undo is not a success a script should build on.
        Ok(if out.changed.is_empty() {
            exit::NOT_DONE
        } else {
            exit::OK
        })
    } else {
        eprintln!("error: {}", agent_base::term::untrusted_text(&out.content));
        Ok(exit::FAILURE)
    }
}
