//! What the agent may do without asking, and what it may never do.
//!
//! `--mode human|confirm|yolo` decides which actions ask the user; the
//! command policy (built-in denials plus `.agent/policy.toml`) decides which
//! commands are refused outright, whatever the mode.

use std::path::Path;

use serde::Serialize;

use crate::tools::Access;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Ask before every tool call, reads included.
    Human,
    /// Ask before writes and commands; reads never ask.
    #[default]
    Confirm,
    /// Never ask (the command policy still applies).
    Yolo,
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: Mode,
}

impl Policy {
    /// The built-in policy plus `.agent/policy.toml` of the workspace, if any.
    /// A malformed file is an error naming the file and the line.
    pub fn load(state_dir: &Path, mode: Mode) -> anyhow::Result<Self> {
        todo!("helper")
    }

    /// Whether an action of this class asks the user first.
    pub fn needs_approval(&self, access: Access) -> bool {
        match self.mode {
            Mode::Human => access != Access::Control,
            Mode::Confirm => matches!(access, Access::Write | Access::Execute),
            Mode::Yolo => false,
        }
    }

    /// `Err(reason)` when the command is denied.
    pub fn check_command(&self, command: &str) -> Result<(), String> {
        todo!("helper")
    }
}
