//! `undo`: reverts the last change set from its checkpoint. A tool of its
//! own, apart from [`crate::checkpoint`] (which only stores): it writes
//! through [`crate::change`], which checkpoints through the store.
//!
//! Only the current session's sets: each records its session, and another
//! run's is named, not reverted (`agent sessions undo ID` reverts it). What a
//! command changed outside a layer cannot be undone.

use serde_json::{json, Value};

use super::args::Args;
use super::change::{self, FileChange};
use super::checkpoint::{ChangeSet, Undoable};
use super::{sha256_hex, Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};

/// `undo`: reverts the last change set.
pub(crate) struct Undo;

/// Why the last change is not undone here: it is another run's, named with
/// the command that undoes it.
fn another_runs(set: &ChangeSet) -> String {
    let when = set
        .created
        .get(..16)
        .unwrap_or(&set.created)
        .replace('T', " ");
    match &set.session {
        Some(session) => format!(
            "nothing of this session to undo; the last change (`{}`, {when}) was made by session {session}\n  fix: `agent sessions undo {session}` takes it back",
            set.summary
        ),
        None => format!(
            "nothing of this session to undo; the last change (`{}`, {when}) was made by an earlier run\n  fix: `git diff` shows it; `agent sessions list` shows the runs",
            set.summary
        ),
    }
}

impl Tool for Undo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "undo",
            description: "Revert the last change made by edit, apply_patch, write_file (or a previous undo-able change): restores the files as they were. Changes made by run_cmd cannot be undone.",
            parameters: json!({"type": "object", "properties": {}}),
            access: Access::Write,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        if let Err(e) = Args::new(args, "undo", "{}") {
            return e;
        }
        let set = match ctx.checkpoints.undoable() {
            Ok(Undoable::Set(s)) => s,
            Ok(Undoable::Nothing) => {
                return ToolOutput::ok("nothing to undo: no change of this workspace is recorded")
            }
            Ok(Undoable::Elsewhere(other)) => {
                return ToolOutput::error(ErrorClass::PolicyDenied, another_runs(&other))
            }
            Err(e) => {
                return ToolOutput::error(ErrorClass::Io, format!("cannot read checkpoints: {e:#}"))
            }
        };
        let mut changes = Vec::new();
        let mut changed_since = Vec::new();
        for f in &set.files {
            let abs = match ctx.workspace.resolve(&f.path) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(ErrorClass::PolicyDenied, e),
            };
            let current = match std::fs::symlink_metadata(&abs) {
                Ok(m) if m.is_dir() => {
                    return ToolOutput::error(
                        ErrorClass::Io,
                        format!("cannot undo: {} is now a directory", f.path),
                    )
                }
                Ok(_) => match ctx.files.read(&abs) {
                    Ok(b) => Some(b),
                    Err(e) => {
                        return ToolOutput::error(
                            ErrorClass::Io,
                            format!("cannot read {}: {e}", f.path),
                        )
                    }
                },
                Err(_) => None,
            };
            if current.as_deref().map(sha256_hex) != f.after {
                changed_since.push(f.path.clone());
            }
            let target = match ctx.checkpoints.content(&set, f) {
                Ok(t) => t,
                Err(e) => return ToolOutput::error(ErrorClass::Io, format!("cannot undo: {e:#}")),
            };
            changes.push(FileChange {
                abs,
                rel: f.path.clone(),
                old: current,
                new: target,
                mode: f.mode,
            });
        }
        let applied = match change::restore(ctx, changes, &format!("undo {}", set.summary)) {
            Ok(a) => a,
            Err(out) => return out,
        };
        if let Err(e) = ctx.checkpoints.remove(&set.id) {
            return ToolOutput::error(
                ErrorClass::Io,
                format!("the files were restored, but the checkpoint could not be dropped: {e:#}"),
            );
        }
        let mut content = if applied.stats.is_empty() {
            format!(
                "undid `{}`: the files already had their earlier content",
                set.summary
            )
        } else {
            let parts: Vec<String> = applied
                .stats
                .iter()
                .map(|s| match s.kind {
                    change::Kind::Added => format!("recreated {}", s.rel),
                    change::Kind::Deleted => format!("deleted {}", s.rel),
                    change::Kind::Modified => format!("restored {}", s.rel),
                })
                .collect();
            format!("undid `{}`: {}", set.summary, parts.join(", "))
        };
        if !changed_since.is_empty() {
            content.push_str(&format!(
                "\nnote: {} had changed after that change; those later changes are reverted too",
                changed_since.join(", ")
            ));
        }
        let left = ctx.checkpoints.len();
        if left > 0 {
            content.push_str(&format!(
                "\n{left} earlier change set(s) can still be undone"
            ));
        }
        ToolOutput {
            ok: true,
            content,
            diff: Some(applied.diff).filter(|d| !d.is_empty()),
            changed: applied.stats.into_iter().map(|s| s.rel).collect(),
            ..ToolOutput::default()
        }
    }
}
