//! Keeping the stored conversation a prefix of every later prompt.
//!
//! Templates drop or rewrite earlier reasoning (Qwen3 shows it only after
//! the last request, QwQ and DeepSeek cut text before `</think>`), so a
//! turn stored with its reasoning renders differently once the conversation
//! moves on, and the KV cache of the previous request no longer matches.
//! Stored without reasoning, a turn renders the same every time: step N+1's
//! prompt starts with step N's prompt plus the generated turn, wherever the
//! template itself allows it.

use crate::family::{COMMAND_R_THINK, THINK};
use crate::message::{Message, Role, ToolCall};
use crate::parse::ParsedTurn;

/// The assistant message to store for a parsed turn: its text and its
/// calls, never its reasoning.
pub fn assistant_message(turn: &ParsedTurn) -> Message {
    Message::assistant_calls(turn.content.clone(), turn.calls.clone())
}

/// Removes an assistant message's reasoning: `reasoning_content`, and a
/// reasoning block that opens its text (as some servers send it).
pub fn strip_reasoning(message: &mut Message) {
    if message.role != Role::Assistant {
        return;
    }
    message.reasoning_content = None;
    for (open, close) in [THINK, COMMAND_R_THINK] {
        let Some(body) = message.content.trim_start().strip_prefix(open) else {
            continue;
        };
        if let Some(end) = body.find(close) {
            message.content = body[end + close.len()..].trim_start().to_string();
        }
    }
}

/// Gives each call without an id one that is unique in the conversation
/// (`call_STEP_INDEX`); templates link results to calls by id.
pub fn assign_call_ids(calls: &mut [ToolCall], step: usize) {
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("call_{step}_{i}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_is_removed_from_stored_messages() {
        let mut m =
            Message::assistant("<think>\nhmm\n</think>\n\nThe answer.").with_reasoning("hmm");
        strip_reasoning(&mut m);
        assert_eq!(m, Message::assistant("The answer."));
        // Text that only mentions the tags is left alone.
        let mut m = Message::assistant("Use </think> to close it.");
        strip_reasoning(&mut m);
        assert_eq!(m.content, "Use </think> to close it.");
        let mut m = Message::assistant("<|START_THINKING|>plan<|END_THINKING|>Done.");
        strip_reasoning(&mut m);
        assert_eq!(m.content, "Done.");
        let mut untouched = Message::user("<think>x</think>y");
        strip_reasoning(&mut untouched);
        assert_eq!(untouched.content, "<think>x</think>y");
    }

    #[test]
    fn stored_turns_keep_text_and_calls_and_get_ids() {
        let mut turn = ParsedTurn {
            reasoning: "secret".into(),
            content: "Reading it.".into(),
            calls: vec![
                ToolCall::new("", "read_file", json!({"path": "a"})),
                ToolCall::new("x1", "grep", json!({})),
            ],
            reasoning_unclosed: false,
        };
        assign_call_ids(&mut turn.calls, 3);
        let m = assistant_message(&turn);
        assert_eq!(m.reasoning_content, None);
        assert_eq!(m.content, "Reading it.");
        assert_eq!(m.tool_calls[0].id, "call_3_0");
        assert_eq!(m.tool_calls[1].id, "x1");
    }
}
