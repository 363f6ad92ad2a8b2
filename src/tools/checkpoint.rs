//! Checkpoints for `undo`: the content of every file a change set touches,
//! saved under `.agent/checkpoints/` before the change is applied.

use std::path::Path;

#[derive(Debug)]
pub struct Checkpoints {}

impl Checkpoints {
    /// Opens (creating) the checkpoint store of a workspace.
    pub fn open(state_dir: &Path) -> anyhow::Result<Self> {
        todo!("helper")
    }
}
