//! The session's background commands (`run_cmd` with `background: true`),
//! as the front ends list them: the status line's count, `/jobs`.

use serde::Serialize;

/// The tools whose results carry a command's admitted changes (from its
/// layer, in no approval): `run_cmd`, and a background command's
/// `command_output` and `command_stop`, which admit them once it has ended.
pub const COMMAND_TOOLS: &[&str] = &["run_cmd", "command_output", "command_stop"];

/// Whether `tool`'s changes are a command's ([`COMMAND_TOOLS`]): shown in
/// every mode, counted as `command_changes`.
pub fn changes_are_a_commands(tool: &str) -> bool {
    COMMAND_TOOLS.contains(&tool)
}

/// Where a background command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Running,
    /// It ended by itself, with this code (a signal's death: 128 + the signal).
    Exited(i32),
    /// `command_stop`, its timeout or the end of the session stopped it.
    Stopped,
}

/// One background command of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Job {
    /// `job-1`, `job-2`, ...: what `command_output` and `command_stop` take.
    pub id: String,
    pub command: String,
    pub state: JobState,
    /// Bytes it has printed so far (stdout and stderr together).
    pub output_bytes: u64,
}

impl Job {
    pub fn running(&self) -> bool {
        self.state == JobState::Running
    }

    /// `running`, `exit 3` or `stopped`.
    pub fn state_text(&self) -> String {
        match self.state {
            JobState::Running => "running".into(),
            JobState::Exited(code) => format!("exit {code}"),
            JobState::Stopped => "stopped".into(),
        }
    }
}
