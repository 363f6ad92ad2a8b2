//! What the agent asks the user before it acts, and what they answer.

use serde::Serialize;

use crate::proposal;

/// What the user is asked to approve.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Approval {
    /// A change set: the paths and the unified diff that would be applied;
    /// `why` it is asked whatever the mode, when it changes a file the agent
    /// reads as its own configuration or instructions.
    /// `proposed` holds each file's text before and after, for an approver
    /// that lets the user edit the change (`e`); kept out of the JSON (the
    /// audit log, `--json`, ACP), where the diff says it.
    Write {
        paths: Vec<String>,
        diff: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<String>,
        #[serde(skip)]
        proposed: Vec<proposal::Proposed>,
    },
    /// A command and the workspace-relative directory it would run in;
    /// `why` it is asked whatever the mode, when the policy cannot read it.
    Command {
        command: String,
        cwd: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// A read, asked only in `human` mode.
    Read { tool: String, summary: String },
    /// A call to an MCP server's tool that may change things, and its arguments (JSON).
    Tool { tool: String, args: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    /// A change approved after the user edited it: what they saved for each
    /// file they changed, written instead of the model's text (a write only).
    ApproveEdited(Vec<proposal::Edited>),
    Decline,
}

/// Asks the user (terminal prompt), or answers for them (tests, `yolo`).
pub trait Approver {
    fn approve(&mut self, request: &Approval) -> Decision;
}

/// Approves everything; `--mode yolo` and tests.
pub struct AlwaysApprove;
impl Approver for AlwaysApprove {
    fn approve(&mut self, _: &Approval) -> Decision {
        Decision::Approve
    }
}

/// Declines everything; tests of the declined path, non-interactive `confirm`.
pub struct AlwaysDecline;
impl Approver for AlwaysDecline {
    fn approve(&mut self, _: &Approval) -> Decision {
        Decision::Decline
    }
}
