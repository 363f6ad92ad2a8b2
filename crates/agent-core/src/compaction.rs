//! What a compaction did: made by [`crate::compact`], reported through
//! [`crate::ui::Ui`] and in the request's outcome. Its own module, below
//! both, so that the loop's modules do not import each other in a circle.

use serde::Serialize;

/// Why a compaction happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The conversation passed `compact_at` of the window.
    Auto,
    /// `/compact`.
    Request,
}

/// What a compaction did, as `--json`, `stream-json` and the terminal report it.
#[derive(Debug, Clone, Serialize)]
pub struct Compaction {
    pub trigger: Trigger,
    /// Whether the turns were replaced by a summary.
    pub compacted: bool,
    /// The summary turn's text, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Why they were not, and what happens instead; or, when they were,
    /// why the model's summary was not taken (the summary was then made
    /// from the turns' own record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    pub replaced_turns: usize,
    pub kept_turns: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
}
