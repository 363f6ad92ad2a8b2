//! The model's plan (the `todo` tool's list), as the loop keeps it and the
//! front ends show it.

use serde::{Deserialize, Serialize};

/// The tool that writes the plan.
pub const TOOL: &str = "todo";

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Done,
}

impl Status {
    /// The status a model meant: the three names, and the synonyms models
    /// use for them (`completed`, `in-progress`, ...).
    pub fn parse(text: &str) -> Option<Status> {
        match text
            .trim()
            .to_ascii_lowercase()
            .replace(['-', ' '], "_")
            .as_str()
        {
            "pending" | "todo" | "to_do" | "not_started" | "open" => Some(Status::Pending),
            "in_progress" | "active" | "doing" | "current" | "started" => Some(Status::InProgress),
            "done" | "completed" | "complete" | "finished" => Some(Status::Done),
            _ => None,
        }
    }

    /// The one-character marker the front ends show: ✓ done, ▸ in progress, · pending.
    pub fn marker(self) -> &'static str {
        match self {
            Status::Done => "✓",
            Status::InProgress => "▸",
            Status::Pending => "·",
        }
    }
}

/// One item of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub text: String,
    pub status: Status,
}

/// Whether every item of `plan` is done (an empty plan is not).
pub fn all_done(plan: &[Item]) -> bool {
    !plan.is_empty() && plan.iter().all(|i| i.status == Status::Done)
}

/// How many of the plan's items are done.
pub fn done(plan: &[Item]) -> usize {
    plan.iter().filter(|i| i.status == Status::Done).count()
}

/// The plan as the model and the line mode read it: a count, then one line
/// per item with its marker.
pub fn render(plan: &[Item]) -> String {
    if plan.is_empty() {
        return "Plan cleared.".into();
    }
    let mut out = format!("Plan ({}/{} done):", done(plan), plan.len());
    for item in plan {
        out.push_str(&format!("\n{} {}", item.status.marker(), item.text));
    }
    out
}
