//! The workspace jail: every path a tool touches is resolved here.

use std::path::{Path, PathBuf};

/// The folder the agent may read and change (the repository root).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// `root` is canonicalized; it must be an existing directory.
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        todo!("helper")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `.agent/` inside the workspace (sessions, logs, checkpoints, policy).
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(".agent")
    }

    /// Resolves a model-given path (relative to the root, or absolute) to a
    /// canonical path inside the workspace; the path itself may not exist yet
    /// (its nearest existing ancestor is canonicalized). Refuses escapes,
    /// symlinks included, with a message for the model.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        todo!("helper")
    }

    /// The workspace-relative form of a resolved path, with `/` separators.
    pub fn relative(&self, path: &Path) -> String {
        todo!("helper")
    }
}
