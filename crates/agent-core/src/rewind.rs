//! `/rewind`: the conversation cut back to before one of its requests and,
//! when asked, the files put back as they were then.
//!
//! Every change set the tools save names the request that made it
//! ([`ChangeSet::request`]: the request's number in the session store).
//! Rewinding the files to before request N undoes this session's sets of N
//! and after, newest first, each through the `undo` tool: a file changed
//! since the agent wrote it is handled as `/undo` handles it (put back all
//! the same, and named in a note). The session store records the cut
//! ([`agent_store::session::SessionStore::append_rewind`]), which
//! `SessionStore::turns` applies, so `agent chat --resume` goes on from it,
//! and the audit log records it. The front ends only ask which request and
//! whether to undo (the line mode on the terminal, the terminal UI in its
//! list) and print.

use anyhow::{bail, Context as _, Result};
use serde::Serialize;
use serde_json::json;

use agent_base::cancel::CancelToken;
use agent_tools::checkpoint::{ChangeSet, Undoable};
use agent_tools::{AlwaysApprove, ReadLedger};

use crate::context::Kind;
use crate::{protocol, request_text, Agent};

/// One request of the conversation, as `/rewind` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct UserTurn {
    /// 1 for the first request still in the conversation.
    pub number: usize,
    /// The first line of the request, as the user wrote it.
    pub request: String,
    /// Files its changes touched (a file changed twice counts twice);
    /// what commands changed is not known.
    pub file_changes: usize,
}

/// What a rewind did.
#[derive(Debug, Clone, Serialize)]
pub struct Rewound {
    /// The request the conversation now stands before.
    pub number: usize,
    pub request: String,
    /// Requests taken out of the conversation: that one and those after it.
    pub requests_dropped: usize,
    /// Whether the files were rewound too.
    pub files: bool,
    /// The files put back (workspace-relative, once each).
    pub files_restored: Vec<String>,
    /// `undo`'s notes: files changed since the agent wrote them, whose
    /// later change was reverted too.
    pub notes: Vec<String>,
    /// Those requests ran commands: what those changed, no checkpoint holds.
    pub commands_ran: bool,
}

impl Agent {
    /// The requests of the conversation, oldest first.
    pub fn user_turns(&self) -> Vec<UserTurn> {
        let sets = self.session_change_sets();
        self.request_indexes()
            .into_iter()
            .enumerate()
            .map(|(n, i)| UserTurn {
                number: n + 1,
                request: first_line(request_text(i, &self.turns[i].message.content)),
                file_changes: sets
                    .iter()
                    .filter(|s| s.request.is_some() && s.request == self.turns[i].seq)
                    .map(|s| s.files.len())
                    .sum(),
            })
            .collect()
    }

    /// Cuts the conversation back to before request `number` (as
    /// [`Agent::user_turns`] numbers them): the model never sees it or what
    /// followed again. With `restore_files`, every change the agent's tools
    /// made for those requests is undone first, newest first; if that
    /// fails, the conversation stays as it was.
    pub fn rewind(
        &mut self,
        number: usize,
        restore_files: bool,
        cancel: &CancelToken,
    ) -> Result<Rewound> {
        let requests = self.request_indexes();
        let Some(&at) = number.checked_sub(1).and_then(|n| requests.get(n)) else {
            match requests.len() {
                0 => bail!("nothing to rewind: this conversation has no requests yet"),
                n => {
                    bail!("no request {number} to rewind to: this conversation has {n} (1 to {n})")
                }
            }
        };
        self.log.new_trace();
        let mut rewound = Rewound {
            number,
            request: first_line(request_text(at, &self.turns[at].message.content)),
            requests_dropped: requests.len() - (number - 1),
            files: restore_files,
            files_restored: Vec::new(),
            notes: Vec::new(),
            commands_ran: self.turns[at..]
                .iter()
                .filter(|t| t.kind == Kind::Call)
                .filter_map(|t| protocol::parse_call(&t.message.content).ok())
                .any(|call| call.tool == "run_cmd"),
        };
        if restore_files {
            self.undo_changes_since(at, &mut rewound, cancel)?;
        }
        if !self.log.session_id.is_empty() {
            let note = format!("(rewound to before request {number}: {})", rewound.request);
            self.sessions
                .append_rewind(&self.log.session_id, &note, at)
                .context("cannot save the rewind in the session")?;
        }
        self.turns.truncate(at);
        self.plan = crate::plan_of(&self.turns);
        // What the model read in the turns cut, it must read again.
        self.ledger = ReadLedger::default();
        self.log.audit(
            "user_rewind",
            json!({"request": number, "requests_dropped": rewound.requests_dropped,
                   "files": restore_files, "changed": rewound.files_restored}),
        );
        Ok(rewound)
    }

    /// Undoes this session's change sets made for the request at `at` and
    /// after it, newest first, as `/undo` undoes one.
    fn undo_changes_since(
        &mut self,
        at: usize,
        rewound: &mut Rewound,
        cancel: &CancelToken,
    ) -> Result<()> {
        // An unrecorded session's requests have no number: no set names them.
        let Some(from) = self.turns[at].seq else {
            return Ok(());
        };
        let due: Vec<ChangeSet> = self
            .session_change_sets()
            .into_iter()
            .filter(|s| s.request.is_some_and(|r| r >= from))
            .collect();
        let session = self.log.session_id.clone();
        for (done, set) in due.iter().rev().enumerate() {
            self.checkpoints.set_session(&session);
            // `undo` takes back the session's newest set, which is this
            // one unless another undo took it meanwhile.
            if !matches!(self.checkpoints.undoable(), Ok(Undoable::Set(newest)) if newest.id == set.id)
            {
                bail!(
                    "cannot rewind the files: the change `{}` is no longer this session's last \
                     ({done} of {} change(s) undone; the conversation is as it was)",
                    set.summary,
                    due.len()
                );
            }
            let output = self.call_tool("undo", &json!({}), &mut AlwaysApprove, cancel);
            if !output.ok {
                bail!(
                    "cannot rewind the files: {} ({done} of {} change(s) undone; the conversation \
                     is as it was)",
                    output.content,
                    due.len()
                );
            }
            for path in output.changed {
                if !rewound.files_restored.contains(&path) {
                    rewound.files_restored.push(path);
                }
            }
            let notes = output.content.lines().filter(|l| l.starts_with("note:"));
            rewound.notes.extend(notes.map(str::to_string));
        }
        Ok(())
    }

    /// Where each request turn is in the conversation.
    fn request_indexes(&self) -> Vec<usize> {
        (0..self.turns.len())
            .filter(|&i| self.turns[i].kind == Kind::Request)
            .collect()
    }

    /// This session's change sets, oldest first (none before it is stored).
    fn session_change_sets(&self) -> Vec<ChangeSet> {
        let id = self.log.session_id.as_str();
        if id.is_empty() {
            return Vec::new();
        }
        match self.checkpoints.list() {
            Ok(sets) => sets
                .into_iter()
                .filter(|s| s.session.as_deref() == Some(id))
                .collect(),
            Err(e) => {
                tracing::warn!("cannot read the checkpoints: {e:#}");
                Vec::new()
            }
        }
    }
}

/// The first line with text (a request may open with attached files).
fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}
