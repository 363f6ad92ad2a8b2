//! A tool call as the loop parsed it, and what the tool returned.

use serde::Serialize;
use serde_json::Value;

use crate::plan;

/// One parsed model turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub thought: String,
    pub tool: String,
    pub args: Value,
}

/// The name of the tool that ends a turn with an answer.
pub const FINISH: &str = "finish";

/// Why a tool call failed, for the model's feedback and the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Arguments missing, of the wrong type, or unknown tool.
    InvalidArgs,
    NotFound,
    /// A path outside the workspace, or a denied command (policy).
    PolicyDenied,
    /// The user said no.
    Declined,
    /// `edit` without a prior read, or the file changed since it was read.
    StaleRead,
    /// `edit`/`apply_patch` text did not match (or matched more than once).
    NoMatch,
    Syntax,
    MissingDependency,
    TestFailure,
    Permission,
    Timeout,
    /// A command exited non-zero for another reason.
    CommandFailed,
    Io,
}

/// The result of one tool call.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolOutput {
    pub ok: bool,
    /// The observation for the model: compact, with the fix in it when the call failed.
    pub content: String,
    /// Unified diff of what a write changed (shown to the user, logged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorClass>,
    /// Workspace-relative paths this call changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// The plan a `todo` call wrote (the loop keeps it, the front ends show it).
    #[serde(skip)]
    pub plan: Option<Vec<plan::Item>>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            ok: true,
            content: content.into(),
            ..Self::default()
        }
    }
    pub fn error(class: ErrorClass, content: impl Into<String>) -> Self {
        Self {
            ok: false,
            content: content.into(),
            error: Some(class),
            ..Self::default()
        }
    }
}
