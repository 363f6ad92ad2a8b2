//! Approval modes: which classes of action ask the user first.

use serde::Serialize;

use crate::Policy;

/// What an action may touch (a tool declares its class); the mode says which
/// classes need the user's yes, and the intent gate which a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Reads the workspace; never asks for confirmation.
    Read,
    /// Changes files; checkpointed, shown as a diff, confirmed in `confirm` mode.
    Write,
    /// Runs a command; checked by the command policy, confirmed in `confirm` mode.
    Execute,
    /// Ends the turn (`finish`).
    Control,
    /// Keeps the session's plan (`todo`): touches nothing, never asks;
    /// given to coding tasks only.
    Plan,
    /// Follows the session's own background commands (`command_output`,
    /// `command_stop`): never asks, as the command was judged and approved
    /// when it started, reading what it printed touches nothing and
    /// stopping it only takes away (what it wrote is admitted as every
    /// command's is); given with `Execute`, to coding tasks only.
    Job,
}

/// How much the agent asks before it acts (`--mode`); the command policy
/// applies in every mode.
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
    /// Look, don't touch: reads and the plan (`todo`) only; a coding task
    /// ends with a plan the user approves before anything changes, and is
    /// then carried out in the mode the user planned from.
    Plan,
}

impl Mode {
    /// The mode after this one in the terminal UI's Shift+Tab cycle:
    /// human → confirm → yolo → plan → human.
    pub fn next(self) -> Mode {
        match self {
            Mode::Human => Mode::Confirm,
            Mode::Confirm => Mode::Yolo,
            Mode::Yolo => Mode::Plan,
            Mode::Plan => Mode::Human,
        }
    }

    /// Every mode, in the cycle's order from the default.
    pub const ALL: [Mode; 4] = [Mode::Confirm, Mode::Yolo, Mode::Plan, Mode::Human];
}

impl Policy {
    /// Whether an action of this class asks the user first.
    pub fn needs_approval(&self, access: Access) -> bool {
        match self.mode {
            Mode::Human => !matches!(access, Access::Control | Access::Plan | Access::Job),
            Mode::Confirm => matches!(access, Access::Write | Access::Execute),
            Mode::Yolo => false,
            // Nothing that writes or runs is offered; were it asked for, the
            // user would be.
            Mode::Plan => matches!(access, Access::Write | Access::Execute),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_decide_what_asks() {
        let p = Policy::builtin(Mode::Confirm);
        assert!(!p.needs_approval(Access::Read));
        assert!(p.needs_approval(Access::Write));
        assert!(p.needs_approval(Access::Execute));
        assert!(Policy::builtin(Mode::Human).needs_approval(Access::Read));
        assert!(!Policy::builtin(Mode::Yolo).needs_approval(Access::Execute));
        assert!(!Policy::builtin(Mode::Human).needs_approval(Access::Plan));
        let plan = Policy::builtin(Mode::Plan);
        assert!(!plan.needs_approval(Access::Read) && !plan.needs_approval(Access::Plan));
        assert!(plan.needs_approval(Access::Write) && plan.needs_approval(Access::Execute));
        assert!(!Policy::builtin(Mode::Human).needs_approval(Access::Job));
    }

    #[test]
    fn the_cycle_visits_every_mode_once() {
        let mut mode = Mode::ALL[0];
        let mut seen = Vec::new();
        for _ in Mode::ALL {
            seen.push(mode);
            mode = mode.next();
        }
        assert_eq!(seen, Mode::ALL);
        assert_eq!(mode, Mode::ALL[0], "the cycle closes");
    }
}
