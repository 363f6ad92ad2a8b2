//! What the intent gate decided a request is.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Label {
    CodingTask,
    RepoQuestion,
    CapabilityQuery,
    GeneralChat,
    #[default]
    Uncertain,
}

impl Label {
    pub const ALL: [Label; 5] = [
        Label::CodingTask,
        Label::RepoQuestion,
        Label::CapabilityQuery,
        Label::GeneralChat,
        Label::Uncertain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Label::CodingTask => "CODING_TASK",
            Label::RepoQuestion => "REPO_QUESTION",
            Label::CapabilityQuery => "CAPABILITY_QUERY",
            Label::GeneralChat => "GENERAL_CHAT",
            Label::Uncertain => "UNCERTAIN",
        }
    }

    pub fn parse(s: &str) -> Option<Label> {
        Label::ALL.into_iter().find(|l| l.as_str() == s.trim())
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Intent {
    pub label: Label,
    /// 0..1; from the heuristic's margin, or fixed for a model decision.
    pub confidence: f32,
    pub reason: String,
    /// The tool (beyond the built-in ones) the request names, if any: the
    /// request is for it, not for the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}
