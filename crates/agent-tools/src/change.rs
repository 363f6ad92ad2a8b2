//! The one path every write takes: diff, approval, checkpoint, atomic write,
//! ledger update. A declined or failed change leaves no file and no
//! checkpoint behind.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::checkpoint::Snapshot;
use super::diagnose;
use super::proposal::{Edited, Proposed};
use super::{diff, sha256_hex, Access, Approval, Decision, ErrorClass, ToolContext, ToolOutput};

/// The observation when the user's own edit of a change undid all of it
/// (a note to the model, which the judge refuses as an answer).
pub const EDITED_BACK_NOTE: &str = "the user edited your change back to the files as they were; \
nothing was written. Ask the user what they want";

/// One file of a change set.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// Resolved (canonical) path.
    pub abs: PathBuf,
    /// Workspace-relative path.
    pub rel: String,
    /// Content now; `None` when the file does not exist.
    pub old: Option<Vec<u8>>,
    /// Content to write; `None` deletes the file.
    pub new: Option<Vec<u8>>,
    /// Permission bits for a file that is (re)created; existing files keep theirs.
    pub mode: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Added,
    Modified,
    Deleted,
}

#[derive(Debug, Clone)]
pub(crate) struct FileStat {
    pub rel: String,
    pub kind: Kind,
    pub added: usize,
    pub removed: usize,
}

impl FileStat {
    /// `M src/a.rs (+3 -1)`.
    pub(crate) fn line(&self) -> String {
        let k = match self.kind {
            Kind::Added => "A",
            Kind::Modified => "M",
            Kind::Deleted => "D",
        };
        format!("{k} {} (+{} -{})", self.rel, self.added, self.removed)
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Applied {
    pub diff: String,
    pub stats: Vec<FileStat>,
    /// Errors the change brought into the files it wrote ([`diagnose`]).
    pub diagnostics: Vec<String>,
    /// Files the user edited before approving: what was written is theirs.
    pub edited: Vec<String>,
}

/// The most of the final diff a tool result shows after the user's edit.
const EDITED_DIFF_MAX: usize = 4000;

impl Applied {
    /// A tool's result text, with what the user's edit changed and the
    /// diagnostics after it.
    pub(crate) fn report(&self, mut content: String) -> String {
        if !self.edited.is_empty() {
            content.push_str(&format!(
                "\nthe user edited your change to {} before approving it: the files hold \
                 their text, not yours. ",
                self.edited.join(", ")
            ));
            if self.diff.len() <= EDITED_DIFF_MAX {
                content.push_str("What was written:\n");
                content.push_str(self.diff.trim_end());
            } else {
                content.push_str("Read the files again before changing them.");
            }
        }
        if self.diagnostics.is_empty() {
            return content;
        }
        format!("{content}\n{}", self.diagnostics.join("\n"))
    }
}

fn text(bytes: &Option<Vec<u8>>) -> String {
    bytes
        .as_deref()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// The diff of one change and its stats.
pub(crate) fn describe(c: &FileChange) -> (String, FileStat) {
    let d = diff::file_diff(
        c.old.is_some().then_some(c.rel.as_str()),
        c.new.is_some().then_some(c.rel.as_str()),
        &text(&c.old),
        &text(&c.new),
    );
    let (added, removed) = diff::count(&d);
    let kind = match (&c.old, &c.new) {
        (None, _) => Kind::Added,
        (_, None) => Kind::Deleted,
        _ => Kind::Modified,
    };
    (
        d,
        FileStat {
            rel: c.rel.clone(),
            kind,
            added,
            removed,
        },
    )
}

/// Applies a change set: drops no-op changes, refuses protected paths, asks
/// approval (when the mode wants it) with the combined diff, checkpoints the
/// files for `undo`, writes atomically, updates the read ledger. On any
/// failure nothing is left changed.
pub(crate) fn apply(
    ctx: &mut ToolContext<'_>,
    changes: Vec<FileChange>,
    summary: &str,
) -> Result<Applied, ToolOutput> {
    write(ctx, changes, summary, Origin::Tool)
}

/// Admits what a command wrote to its layer ([`crate::admit`]): as
/// [`apply`], but asked for only when `why` says so (then whatever the
/// mode), with no jail of its own (the caller classified every path) and
/// no checkers run (the command's own output says how it went).
pub(crate) fn admit(
    ctx: &mut ToolContext<'_>,
    changes: Vec<FileChange>,
    summary: &str,
    why: Option<String>,
) -> Result<Applied, ToolOutput> {
    write(ctx, changes, summary, Origin::Command(why))
}

/// Applies a change set that restores a checkpoint (`undo`): as [`apply`],
/// but saves no checkpoint of its own (undoing an undo is not offered).
pub(crate) fn restore(
    ctx: &mut ToolContext<'_>,
    changes: Vec<FileChange>,
    summary: &str,
) -> Result<Applied, ToolOutput> {
    write(ctx, changes, summary, Origin::Undo)
}

/// Who changes the files, which decides the checks on the way.
#[derive(PartialEq)]
enum Origin {
    /// A file tool: jailed, asked as the mode says, checkpointed, checked.
    Tool,
    /// `undo`: as a tool, without a checkpoint of its own.
    Undo,
    /// A command's admitted changes: asked only with the reason given.
    Command(Option<String>),
}

fn write(
    ctx: &mut ToolContext<'_>,
    changes: Vec<FileChange>,
    summary: &str,
    origin: Origin,
) -> Result<Applied, ToolOutput> {
    let mut changes: Vec<FileChange> = changes.into_iter().filter(|c| c.old != c.new).collect();
    if changes.is_empty() {
        return Ok(Applied::default());
    }
    let tool = !matches!(origin, Origin::Command(_));
    for c in changes.iter().filter(|_| tool) {
        ctx.workspace
            .check_writable(&c.abs)
            .map_err(|e| ToolOutput::error(ErrorClass::PolicyDenied, e))?;
        crate::fs::check_protected(ctx, &c.abs)?;
    }
    let mut applied = described(&changes);
    let (why, by_mode) = match &origin {
        Origin::Command(why) => (why.clone(), false),
        _ => (
            changes
                .iter()
                .find_map(|c| crate::state_guard::agent_file(&c.rel)),
            ctx.policy.needs_approval(Access::Write),
        ),
    };
    if why.is_some() || by_mode {
        let request = Approval::Write {
            paths: changes.iter().map(|c| c.rel.clone()).collect(),
            diff: applied.diff.clone(),
            why,
            proposed: changes.iter().map(proposed).collect(),
        };
        match ctx.approver.approve(&request) {
            Decision::Approve => {}
            Decision::ApproveEdited(edits) => {
                (changes, applied) = take_edits(changes, edits)?;
            }
            Decision::Decline => {
                return Err(ToolOutput::error(
                    ErrorClass::Declined,
                    "the user declined this change; nothing was written. Ask the user what they \
                     want, or try something else",
                ))
            }
        }
    }
    let set_id = if origin != Origin::Undo {
        let modes: Vec<Option<u32>> = changes.iter().map(|c| current_mode(&c.abs)).collect();
        let snaps: Vec<Snapshot<'_>> = changes
            .iter()
            .zip(&modes)
            .map(|(c, m)| Snapshot {
                rel: &c.rel,
                before: c.old.as_deref(),
                mode: *m,
                after: c.new.as_deref(),
            })
            .collect();
        match ctx.checkpoints.save(summary, &snaps) {
            Ok(set) => Some(set.id),
            Err(e) => {
                return Err(ToolOutput::error(
                    ErrorClass::Io,
                    format!("{e:#}; nothing was written"),
                ))
            }
        }
    } else {
        None
    };
    // Syntax first; the project's checkers take the files that parse, and
    // see them once before the write, to tell the change's errors apart. A
    // command's changes get neither: nothing to check is planned.
    let syntax: Vec<Option<String>> = changes
        .iter()
        .filter(|_| tool)
        .map(|c| {
            let after = std::str::from_utf8(c.new.as_deref()?).ok()?;
            let before = c.old.as_deref().and_then(|b| std::str::from_utf8(b).ok());
            diagnose::report(&c.rel, before, after)
        })
        .collect();
    let clean: Vec<&FileChange> = changes
        .iter()
        .zip(&syntax)
        .filter(|(c, s)| s.is_none() && c.new.is_some())
        .map(|(c, _)| c)
        .collect();
    let mut checks = diagnose::Checks::plan(ctx.workspace, ctx.policy, &clean);
    checks.before(ctx.cancel);
    for (i, c) in changes.iter().enumerate() {
        if let Err(e) = write_one(ctx, c.abs.as_path(), c.new.as_deref(), c.mode) {
            // Put back what was already written, newest first.
            for done in changes[..i].iter().rev() {
                let _ = write_one(ctx, &done.abs, done.old.as_deref(), current_mode(&done.abs));
            }
            if let Some(id) = &set_id {
                let _ = ctx.checkpoints.remove(id);
            }
            return Err(ToolOutput::error(
                ErrorClass::Io,
                format!("cannot write {}: {e}; nothing was changed", c.rel),
            ));
        }
    }
    for c in &changes {
        match &c.new {
            Some(bytes) => {
                ctx.ledger.hashes.insert(c.abs.clone(), sha256_hex(bytes));
            }
            None => {
                ctx.ledger.hashes.remove(&c.abs);
                remove_empty_parents(&c.abs, ctx.workspace.root());
            }
        }
    }
    applied.diagnostics = syntax.into_iter().flatten().collect();
    applied.diagnostics.extend(checks.after(ctx.cancel));
    Ok(applied)
}

/// The diff and stats of a change set.
fn described(changes: &[FileChange]) -> Applied {
    let mut applied = Applied::default();
    for c in changes {
        let (d, stat) = describe(c);
        applied.diff.push_str(&d);
        applied.stats.push(stat);
    }
    applied
}

/// A file of a change set as the approver sees it, to let the user edit it.
fn proposed(c: &FileChange) -> Proposed {
    Proposed {
        path: c.rel.clone(),
        old: c.old.is_some().then(|| text(&c.old)),
        new: c.new.is_some().then(|| text(&c.new)),
    }
}

/// The user edited the change before approving it: their text replaces the
/// model's, and the model is told (`Applied::edited`). An edit that puts a
/// file back as it was drops it from the set; when none is left, nothing is
/// written.
fn take_edits(
    mut changes: Vec<FileChange>,
    edits: Vec<Edited>,
) -> Result<(Vec<FileChange>, Applied), ToolOutput> {
    let mut edited = Vec::new();
    for e in edits {
        if let Some(c) = changes
            .iter_mut()
            .find(|c| c.rel == e.path && c.new.is_some())
        {
            c.new = Some(e.content.into_bytes());
            edited.push(e.path);
        }
    }
    changes.retain(|c| c.old != c.new);
    if changes.is_empty() {
        return Err(ToolOutput::error(ErrorClass::Declined, EDITED_BACK_NOTE));
    }
    let mut applied = described(&changes);
    applied.edited = edited;
    Ok((changes, applied))
}

/// After a deletion: removes the folders it left empty, up to (not including) `root`.
fn remove_empty_parents(path: &Path, root: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

fn current_mode(path: &Path) -> Option<u32> {
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

fn write_one(
    ctx: &ToolContext<'_>,
    path: &Path,
    content: Option<&[u8]>,
    mode: Option<u32>,
) -> std::io::Result<()> {
    match content {
        Some(bytes) => ctx.files.write(path, bytes, mode),
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        },
    }
}
