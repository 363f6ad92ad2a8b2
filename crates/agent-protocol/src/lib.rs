//! The types that pass between the agent and every front end (the line
//! mode, the terminal UI, ACP, `--json`), as codex-rs keeps its `protocol`
//! crate: the loop's events ([`Ui`]), what it asks before it acts
//! ([`Approval`], answered by an [`Approver`] with a [`Decision`]), the
//! intent it gave a request, how a request ended ([`Finish`]), what a
//! session says and asks besides ([`Notice`], [`Ask`]), a request with its
//! attachments ([`Request`]), the session's background commands
//! ([`Job`]), a subagent's run inside a tool call ([`Nested`]), and where
//! the tools read and write files ([`FileAccess`], an editor's buffers
//! under ACP).
//!
//! Front ends depend on this crate and on `agent-session`, never on the
//! loop's or the tools' crates (the architecture test checks it); the loop
//! and the tools depend on it too, so both sides speak the same types.

pub mod approval;
pub mod diff;
pub mod event;
pub mod files;
pub mod intent;
pub mod job;
pub mod notice;
pub mod outcome;
pub mod plan;
pub mod proposal;
pub mod request;
pub mod subagent;
pub mod tool;

pub use approval::{AlwaysApprove, AlwaysDecline, Approval, Approver, Decision};
pub use event::{Compaction, Trigger, Ui};
pub use files::{Disk, FileAccess};
pub use intent::{Intent, Label};
pub use job::{Job, JobState};
pub use notice::{Ask, CommandInfo, NoAnswers, Notice, Say};
pub use outcome::{Finish, ToolAccess};
pub use request::{Attachment, Request};
pub use subagent::{Nested, EXPLORE};
pub use tool::{ErrorClass, ToolCall, ToolOutput, FINISH};
