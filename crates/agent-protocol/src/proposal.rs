//! The user's own edit of a proposed change (`e` at an approval): each
//! file's proposed text goes to a folder of the system's temporary
//! directory (never the workspace), the user's editor opens it, and what
//! they saved comes back as [`Decision::ApproveEdited`], which the write
//! path writes instead of the model's text.
//!
//! The `Approval::Write` carries each file's text before and after
//! (`proposed`, left out of its JSON: the audit log, `--json` and ACP keep the
//! diff). The editor is `$VISUAL`, else `$EDITOR`, else `vi`, run through
//! `sh -c` as git does ([`editor_command`]); the approver then asks again with
//! the diff against what was saved, and a yes writes the edited text
//! (checkpoint and read ledger included), the tool's result telling the model,
//! with the final diff. The editor runs unfenced: the user asked for it, and
//! it runs nothing of the workspace's.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::{diff, Decision};

/// One file of a change set as the model proposes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    /// Workspace-relative path.
    pub path: String,
    /// The file's text now; `None` when the change creates it.
    pub old: Option<String>,
    /// The proposed text; `None` when the change deletes the file (which
    /// cannot be edited).
    pub new: Option<String>,
}

/// A file the user edited before approving, and what they saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edited {
    pub path: String,
    /// Out of the audit log: the tool's diff says what was written.
    #[serde(skip)]
    pub content: String,
}

/// A proposal as the user edits it: each file's text so far.
#[derive(Debug, Clone)]
pub struct Edits {
    proposed: Vec<Proposed>,
    /// The text now of each file of `proposed` (`None`: a deletion).
    current: Vec<Option<String>>,
}

/// The files of a proposal written out for the editor; the folder is
/// removed when this is dropped.
pub struct Draft {
    _dir: tempfile::TempDir,
    /// The index in the proposal and the temporary file of each editable file.
    files: Vec<(usize, PathBuf)>,
}

impl Draft {
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|(_, p)| p.clone()).collect()
    }
}

impl Edits {
    pub fn new(proposed: &[Proposed]) -> Self {
        Self {
            current: proposed.iter().map(|p| p.new.clone()).collect(),
            proposed: proposed.to_vec(),
        }
    }

    /// Whether any file can be edited (not only deletions).
    pub fn editable(&self) -> bool {
        self.current.iter().any(Option::is_some)
    }

    /// Whether the user's text differs from the model's anywhere.
    pub fn edited(&self) -> bool {
        self.proposed
            .iter()
            .zip(&self.current)
            .any(|(p, c)| p.new != *c)
    }

    /// The unified diff of the change as the user has it now.
    pub fn diff(&self) -> String {
        self.proposed
            .iter()
            .zip(&self.current)
            .map(|(p, now)| {
                diff::file_diff(
                    p.old.is_some().then_some(p.path.as_str()),
                    now.is_some().then_some(p.path.as_str()),
                    p.old.as_deref().unwrap_or_default(),
                    now.as_deref().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// The answer for a yes: the files the user changed, if any.
    pub fn approve(&self) -> Decision {
        let edited: Vec<Edited> = self
            .proposed
            .iter()
            .zip(&self.current)
            .filter(|(p, now)| p.new != **now)
            .filter_map(|(p, now)| {
                Some(Edited {
                    path: p.path.clone(),
                    content: now.clone()?,
                })
            })
            .collect();
        if edited.is_empty() {
            Decision::Approve
        } else {
            Decision::ApproveEdited(edited)
        }
    }

    /// Writes each editable file's text now to a new temporary folder,
    /// under its own name (the editor picks its highlighting by it).
    pub fn draft(&self) -> std::io::Result<Draft> {
        let dir = tempfile::Builder::new().prefix("agent-edit-").tempdir()?;
        let mut files = Vec::new();
        for (i, (p, now)) in self.proposed.iter().zip(&self.current).enumerate() {
            let Some(text) = now else { continue };
            // One subfolder per file: two files of the same name stay apart.
            let name = Path::new(&p.path)
                .file_name()
                .map_or_else(|| "file".into(), |n| n.to_os_string());
            let path = dir.path().join(i.to_string()).join(name);
            std::fs::create_dir_all(path.parent().unwrap_or(dir.path()))?;
            std::fs::write(&path, text)?;
            files.push((i, path));
        }
        Ok(Draft { _dir: dir, files })
    }

    /// Reads back what the user saved in `draft`; true when it changed
    /// anything.
    pub fn read(&mut self, draft: &Draft) -> std::io::Result<bool> {
        let mut changed = false;
        for (i, path) in &draft.files {
            let bytes = std::fs::read(path)?;
            let text = String::from_utf8(bytes).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")
            })?;
            if self.current[*i].as_deref() != Some(text.as_str()) {
                self.current[*i] = Some(text);
                changed = true;
            }
        }
        Ok(changed)
    }

    /// The user's edit: the draft written, `run` (the user's editor, run
    /// however the front end runs it) on its files, and what they saved
    /// read back; true when it changed anything. An editor that fails
    /// leaves the change as it was.
    pub fn edit_with(
        &mut self,
        run: impl FnOnce(&[PathBuf]) -> std::io::Result<std::process::ExitStatus>,
    ) -> std::io::Result<bool> {
        let draft = self.draft()?;
        let status = run(&draft.paths())?;
        if !status.success() {
            return Err(std::io::Error::other(format!(
                "the editor exited with {status}; the change is as it was"
            )));
        }
        self.read(&draft)
    }
}

/// The user's editor on `files`, found and run as git does: `$VISUAL`,
/// else `$EDITOR`, else `vi`; a command line (`code --wait`, say), run by
/// `sh -c` with the files as its arguments. The shell `exec`s the editor:
/// a shell left waiting for it (dash) dies of the Ctrl-C the user types in
/// the editor, and the agent would take the terminal back from a live one.
pub fn editor_command(files: &[PathBuf]) -> Command {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty())
        .map_or_else(|| "vi".to_string(), |v| v.to_string_lossy().into_owned());
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("exec {editor} \"$@\""))
        .arg(editor)
        .args(files);
    command
}

/// Runs `command` (from [`editor_command`]) with the terminal the user's:
/// the agent ignores Ctrl-C meanwhile, as git does while its editor runs.
pub fn run_editor(command: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    agent_base::cancel::ignoring_ctrl_c(|| command.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal() -> Vec<Proposed> {
        vec![
            Proposed {
                path: "src/a.rs".into(),
                old: Some("fn a() {}\n".into()),
                new: Some("fn a() { 1 }\n".into()),
            },
            Proposed {
                path: "gone.txt".into(),
                old: Some("x\n".into()),
                new: None,
            },
        ]
    }

    #[test]
    fn a_draft_holds_the_proposal_and_reads_back_the_users_text() {
        let mut edits = Edits::new(&proposal());
        assert!(edits.editable());
        let draft = edits.draft().unwrap();
        let paths = draft.paths();
        assert_eq!(paths.len(), 1, "a deletion is not editable");
        assert!(paths[0].ends_with("a.rs"), "{paths:?}");
        assert!(!paths[0].starts_with(std::env::current_dir().unwrap()));
        assert_eq!(
            std::fs::read_to_string(&paths[0]).unwrap(),
            "fn a() { 1 }\n"
        );
        assert!(
            !edits.read(&draft).unwrap(),
            "nothing saved, nothing changed"
        );
        assert_eq!(edits.approve(), Decision::Approve);
        std::fs::write(&paths[0], "fn a() { 2 }\n").unwrap();
        assert!(edits.read(&draft).unwrap());
        assert!(edits.edited());
        assert!(edits.diff().contains("+fn a() { 2 }"), "{}", edits.diff());
        assert!(
            edits.diff().contains("-x"),
            "the deletion stays in the diff"
        );
        let Decision::ApproveEdited(files) = edits.approve() else {
            panic!("{:?}", edits.approve());
        };
        assert_eq!(files[0].path, "src/a.rs");
        assert_eq!(files[0].content, "fn a() { 2 }\n");
        let dir = paths[0].parent().unwrap().parent().unwrap().to_path_buf();
        drop(draft);
        assert!(!dir.exists(), "the draft's folder is removed");
    }

    #[test]
    fn the_edited_content_stays_out_of_the_json() {
        let edited = Decision::ApproveEdited(vec![Edited {
            path: "a.rs".into(),
            content: "secret text".into(),
        }]);
        let json = serde_json::to_string(&edited).unwrap();
        assert!(
            json.contains("approve_edited") && json.contains("a.rs"),
            "{json}"
        );
        assert!(!json.contains("secret"), "{json}");
    }
}
