//! A subagent's run inside one tool call of the loop (`explore`): the
//! events a front end shows nested under that call ([`Nested`], through
//! [`crate::Ui::nested`]), and how it ended ([`Ended`]).
//!
//! The subagent's own answer is its tool's result: it never streams as the
//! request's answer. Each run has an id (`explore-1`, `explore-2`, ... in a
//! session) that stream-json and the audit log carry as `parent` on the
//! subagent's events.

use serde::Serialize;

use crate::tool::{ToolCall, ToolOutput};

/// The tool that runs a read-only subagent in its own context.
pub const EXPLORE: &str = "explore";

/// One thing that happened in a subagent's run.
#[derive(Debug, Clone, Copy)]
pub enum Nested<'a> {
    /// The run began, for this question.
    Start {
        question: &'a str,
    },
    /// Its model's step `n` began.
    Step(usize),
    ToolCall(&'a ToolCall),
    ToolResult(&'a ToolCall, &'a ToolOutput),
    Notice(&'a str),
    /// The run is over; its report is the tool's result, reported next.
    End(&'a Ended),
}

/// How a subagent's run ended, as stream-json, `--json` and the audit log
/// report it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ended {
    pub steps: usize,
    pub tool_calls: usize,
    /// Prompt tokens it prefilled (not those its cache held) and tokens it
    /// wrote: what its budget counts.
    pub tokens: usize,
    /// `answered`, `step_budget`, `token_budget`, `no_answer`, `cancelled`.
    pub finish: &'static str,
}

/// One line for a nested event, as the line mode and the TUI's folded
/// cell show it (None: nothing to show).
pub fn line(event: &Nested<'_>) -> Option<String> {
    match event {
        Nested::Start { .. } | Nested::Step(_) => None,
        Nested::ToolCall(call) if call.tool == crate::FINISH => None,
        Nested::ToolCall(call) => Some(format!(
            "● {} {}",
            call.tool,
            crate::event::summarize_args(&call.args)
        )),
        Nested::ToolResult(call, _) if call.tool == crate::FINISH => None,
        Nested::ToolResult(_, output) => {
            let first = output.content.lines().next().unwrap_or_default();
            let first = agent_base::term::cut(first, 100);
            Some(if output.ok {
                match output.content.lines().count() {
                    0 | 1 => format!("  {first}"),
                    n => format!("  {first} ({n} lines)"),
                }
            } else {
                format!("  ✗ {first}")
            })
        }
        Nested::Notice(text) => Some(format!("  {text}")),
        Nested::End(ended) => Some(summary(ended)),
    }
}

/// `explored in 4 steps, 3 tool calls, 2,310 tokens`, and why it stopped
/// when it was not by its own report.
pub fn summary(ended: &Ended) -> String {
    let why = match ended.finish {
        "answered" => String::new(),
        "step_budget" => " (its step budget ran out)".into(),
        "token_budget" => " (its token budget ran out)".into(),
        "cancelled" => " (stopped)".into(),
        _ => " (it gave no answer that counts)".into(),
    };
    format!(
        "explored in {} step(s), {} tool call(s), {} tokens{why}",
        ended.steps, ended.tool_calls, ended.tokens
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_lines_name_the_call_and_the_first_line_of_its_result() {
        let call = ToolCall {
            thought: String::new(),
            tool: "read_file".into(),
            args: json!({"path": "calc.py"}),
        };
        assert_eq!(
            line(&Nested::ToolCall(&call)).unwrap(),
            "● read_file calc.py"
        );
        let out = ToolOutput::ok("1 def add(a, b):\n2     return a + b");
        assert_eq!(
            line(&Nested::ToolResult(&call, &out)).unwrap(),
            "  1 def add(a, b): (2 lines)"
        );
        let ended = Ended {
            steps: 3,
            tool_calls: 2,
            tokens: 900,
            finish: "step_budget",
        };
        assert!(line(&Nested::End(&ended))
            .unwrap()
            .ends_with("(its step budget ran out)"));
        assert_eq!(line(&Nested::Step(1)), None);
    }
}
