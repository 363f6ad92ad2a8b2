//! What the loop reports as it runs, to whichever front end shows it.

use serde::Serialize;

use agent_base::term::cut;

use crate::intent::Intent;
use crate::outcome::ToolAccess;
use crate::plan;
use crate::subagent::Nested;
use crate::tool::{ToolCall, ToolOutput};

/// The loop reports progress through this.
pub trait Ui {
    /// The request's intent and the tools it was given.
    fn intent(&mut self, intent: &Intent, tools: ToolAccess);
    fn step_start(&mut self, step: usize);
    /// A piece of the final answer, as it is generated.
    fn answer_text(&mut self, text: &str);
    /// A piece of the model's reasoning, as it is generated (never part of
    /// the answer).
    fn reasoning_text(&mut self, _text: &str) {}
    /// The model is still generating: `tokens` so far in this step. Sent
    /// every [`PROGRESS_EVERY`] while it does, shown or not (a call being
    /// written shows nothing).
    fn generating(&mut self, _step: usize, _tokens: usize) {}
    /// The model read `done` of the `total` prompt tokens it had to
    /// (those its cache did not hold), after each batch of them.
    fn prefilling(&mut self, _step: usize, _done: usize, _total: usize) {}
    fn step_end(&mut self);
    fn tool_call(&mut self, call: &ToolCall);
    fn tool_result(&mut self, call: &ToolCall, output: &ToolOutput);
    fn notice(&mut self, text: &str);
    /// A step that streams nothing has begun (a summary being written): a
    /// terminal keeps a spinner with the time spent under this line until
    /// the next event, so a minute of prefill does not look like a hang.
    fn working(&mut self, what: &str) {
        self.notice(what);
    }
    /// The conversation was compacted, or could not be ([`Compaction::fallback`]).
    fn compacted(&mut self, compaction: &Compaction) {
        self.notice(&compaction_line(compaction));
    }
    /// The model wrote its plan (`todo`): the whole list, after the call's
    /// [`Ui::tool_result`]; empty when it cleared it.
    fn plan(&mut self, _items: &[plan::Item]) {}
    /// Something happened in the subagent `id` (`explore-1`) that runs
    /// inside the tool call just reported ([`Ui::tool_call`]) and before
    /// its result: shown nested under that call, never as the request's own
    /// steps or answer.
    fn nested(&mut self, _id: &str, _event: Nested<'_>) {}
}

/// How often [`Ui::generating`] is called while the model generates.
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// One line on a compaction.
pub fn compaction_line(c: &Compaction) -> String {
    match (&c.fallback, c.compacted) {
        (Some(why), false) => format!("could not compact: {why}"),
        (fallback, true) => format!(
            "compacted: {} turns replaced by a summary, {} kept ({} → {} tokens){}",
            c.replaced_turns,
            c.kept_turns,
            c.tokens_before,
            c.tokens_after,
            fallback
                .as_ref()
                .map(|why| format!("; {why}"))
                .unwrap_or_default()
        ),
        (None, false) => "could not compact".into(),
    }
}

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

/// What a request's tools mean for the user, when they limit it: a
/// question reads only, a task in plan mode plans only.
pub fn access_note(intent: &Intent, tools: ToolAccess) -> Option<String> {
    match tools {
        ToolAccess::ReadOnly => Some(format!(
            "read-only: this looks like a question ({}), so no files will change; \
to change code, say what to change (\"Make X do Y in path\")",
            intent.label.as_str()
        )),
        ToolAccess::Plan => Some(
            "plan mode: the agent reads and writes a plan; nothing changes until you approve it"
                .into(),
        ),
        ToolAccess::None | ToolAccess::All => None,
    }
}

/// The plan's heading: `plan 1/3 done`, or that it was cleared.
pub fn plan_title(items: &[plan::Item]) -> String {
    if items.is_empty() {
        return "plan cleared".into();
    }
    format!("plan {}/{} done", plan::done(items), items.len())
}

/// `{"path": "src/a.rs", "start_line": 3}` → `src/a.rs start_line=3`.
pub fn summarize_args(args: &serde_json::Value) -> String {
    let Some(map) = args.as_object() else {
        return args.to_string();
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => s.replace('\n', "⏎"),
                serde_json::Value::Array(a) => format!("[{} item(s)]", a.len()),
                other => other.to_string(),
            };
            if k == "path" || k == "command" || k == "pattern" || k == "query" || k == "question" {
                cut(&v, 80)
            } else {
                format!("{k}={}", cut(&v, 40))
            }
        })
        .collect();
    parts.join(" ")
}

/// Shows nothing (`--json`, tests).
pub struct QuietUi;
impl Ui for QuietUi {
    fn intent(&mut self, _: &Intent, _: ToolAccess) {}
    fn step_start(&mut self, _: usize) {}
    fn answer_text(&mut self, _: &str) {}
    fn step_end(&mut self) {}
    fn tool_call(&mut self, _: &ToolCall) {}
    fn tool_result(&mut self, _: &ToolCall, _: &ToolOutput) {}
    fn notice(&mut self, _: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_short() {
        let s = summarize_args(&serde_json::json!({"path": "src/a.rs", "start_line": 3}));
        assert_eq!(s, "src/a.rs start_line=3");
    }
}
