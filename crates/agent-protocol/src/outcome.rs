//! How a request ended and which tools it was given.

use serde::Serialize;

/// How a request ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// The model called `finish`.
    #[default]
    Answered,
    /// No usable answer (it restated the request or our prompts, said
    /// nothing about the code, or the model kept repeating a call): the
    /// answer is what the last search found, marked as such.
    Evidence,
    /// No usable answer and no search results to show instead.
    NoAnswer,
    /// The step budget ran out without an answer.
    StepBudget,
    /// Ctrl-C.
    Cancelled,
    /// A coding task whose changes were all declined or refused: nothing
    /// changed, whatever the model says.
    NotDone,
}

impl Finish {
    /// Ended with no answer of the model's, and not by Ctrl-C: the outcome's
    /// answer is what the search found or why there is none, which no front
    /// end has streamed yet (so each shows it after the run, and the command
    /// line exits with "no answer").
    pub fn unanswered(self) -> bool {
        matches!(
            self,
            Finish::Evidence | Finish::NoAnswer | Finish::StepBudget | Finish::NotDone
        )
    }
}

/// Which tools a request was given, from its intent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolAccess {
    /// Only `finish`: chat and questions about the agent itself.
    #[default]
    None,
    /// Reading and searching: questions about the repository.
    ReadOnly,
    /// Everything, writes and commands included: coding tasks.
    All,
    /// Reading and the plan: a coding task in plan mode, changed nothing
    /// until the user approves its plan.
    Plan,
}
