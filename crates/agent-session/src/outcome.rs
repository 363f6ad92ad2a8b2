//! What a request's outcome says besides the answer, and the exit code it
//! ends a command with.

use agent_base::term::untrusted;
use agent_base::tokens::thousands;
use agent_core::{Finish, Outcome, ToolAccess};

/// Exit codes shared by all subcommands.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILURE: i32 = 1;
    /// Bad usage, as clap exits for a missing argument.
    pub const USAGE: i32 = 2;
    /// The request ended without what was asked: no answer within
    /// --max-steps, only the search results shown instead, a declined
    /// change (`agent init`), nothing to undo.
    pub const NOT_DONE: i32 = 3;
    /// Answered, but the answer could not be had in `--output-schema`'s
    /// shape (a server's reply that does not match it).
    pub const NO_RESULT: i32 = 4;
    pub const INTERRUPTED: i32 = 130;
}

/// What a coding task changed, always said (also when nothing changed);
/// None for requests that could not change files.
pub fn changes_line(outcome: &Outcome) -> Option<String> {
    let files = &outcome.changed_files;
    if outcome.tools != ToolAccess::All && files.is_empty() {
        return None;
    }
    let mut line = match files.len() {
        0 => "0 files changed".to_string(),
        1 => format!("1 file changed: {}", untrusted(&files[0])),
        n => format!(
            "{n} files changed: {}",
            files
                .iter()
                .map(|f| untrusted(f).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if outcome.declined > 0 {
        line.push_str(&format!(
            " ({} change(s) or command(s) declined)",
            outcome.declined
        ));
    }
    Some(line)
}

/// `2,345 prompt tokens (1,900 reused) + 120 generated · 3 steps · 4.2 s · 18.5 tokens/s`
pub fn stats_line(outcome: &Outcome) -> String {
    let tps = if outcome.decode_ms > 0 {
        format!(
            "{:.1} tokens/s",
            outcome.completion_tokens as f64 * 1000.0 / outcome.decode_ms as f64
        )
    } else {
        "- tokens/s".to_string()
    };
    format!(
        "{} prompt tokens ({} reused) + {} generated · {} step{} · {:.1} s · {tps}",
        thousands(outcome.prompt_tokens),
        thousands(outcome.reused_tokens),
        thousands(outcome.completion_tokens),
        outcome.steps,
        if outcome.steps == 1 { "" } else { "s" },
        outcome.wall_ms as f64 / 1000.0,
    )
}

/// The first prompt's sizes and what they follow, in a line (`--print-prompt`).
pub fn first_prompt(sizes: &agent_core::FirstPrompt) -> String {
    agent_core::describe_first_prompt(sizes)
}

/// 0 for an answer; 3 when there is none (the search results shown instead
/// are not an answer); 130 for Ctrl-C.
pub fn exit_code(outcome: &Outcome) -> i32 {
    if outcome.finish == Finish::Cancelled {
        exit::INTERRUPTED
    } else if outcome.finish.unanswered() {
        exit::NOT_DONE
    } else if outcome.result_error.is_some() {
        exit::NO_RESULT
    } else {
        exit::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(finish: Finish) -> Outcome {
        Outcome {
            finish,
            ..Outcome::default()
        }
    }

    #[test]
    fn the_exit_code_says_whether_there_is_an_answer() {
        assert_eq!(exit_code(&outcome(Finish::Answered)), exit::OK);
        assert_eq!(exit_code(&outcome(Finish::Evidence)), exit::NOT_DONE);
        assert_eq!(exit_code(&outcome(Finish::StepBudget)), exit::NOT_DONE);
        assert_eq!(exit_code(&outcome(Finish::Cancelled)), exit::INTERRUPTED);
        // Answered, but not in the shape --output-schema asked for.
        let unshaped = Outcome {
            result_error: Some("the JSON does not match the schema".into()),
            ..outcome(Finish::Answered)
        };
        assert_eq!(exit_code(&unshaped), exit::NO_RESULT);
    }

    #[test]
    fn a_coding_task_always_says_what_changed_and_a_question_never_does() {
        let mut o = outcome(Finish::Answered);
        o.tools = ToolAccess::All;
        assert_eq!(changes_line(&o).as_deref(), Some("0 files changed"));
        o.changed_files = vec!["a.rs".into(), "b\x1b[2J.rs".into()];
        o.declined = 1;
        let line = changes_line(&o).unwrap_or_default();
        assert!(line.starts_with("2 files changed: a.rs, b"), "{line}");
        assert!(!line.contains('\x1b'), "escaped: {line}");
        assert!(
            line.ends_with("(1 change(s) or command(s) declined)"),
            "{line}"
        );
        o.tools = ToolAccess::ReadOnly;
        o.changed_files.clear();
        assert_eq!(changes_line(&o), None);
    }

    #[test]
    fn the_stats_line_counts_tokens_steps_and_speed() {
        let mut o = outcome(Finish::Answered);
        o.prompt_tokens = 2345;
        o.reused_tokens = 1900;
        o.completion_tokens = 120;
        o.steps = 1;
        o.wall_ms = 4200;
        o.decode_ms = 2000;
        assert_eq!(
            stats_line(&o),
            "2,345 prompt tokens (1,900 reused) + 120 generated · 1 step · 4.2 s · 60.0 tokens/s"
        );
        o.decode_ms = 0;
        o.steps = 3;
        assert!(stats_line(&o).ends_with("3 steps · 4.2 s · - tokens/s"));
    }
}
