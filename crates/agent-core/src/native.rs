//! The loop's calls in a model's own language, for models whose chat
//! template has tools (Qwen, Llama 3.x, Mistral, DeepSeek, gpt-oss, ...).
//!
//! The loop keeps one record of a session: each call turn is its own JSON
//! ([`crate::protocol`]), each result an observation. For such a model the
//! request is translated at the edge: the tools go to the template as
//! OpenAI function schemas, a call turn becomes an assistant message with
//! `tool_calls` (its thought as the text), the observation after it a `tool`
//! message, a `finish` call the answer in text. The translation is a pure
//! function of the record, so step N+1's prompt starts with step N's and
//! the KV cache holds. The reply comes back parsed in the family's syntax
//! and is stored as the loop's JSON again, without its reasoning.

use agent_llm::{Completion, Message, Role, ToolCall as ChatCall, ToolSpec as ChatSpec};
use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::protocol::{self, FINISH};

/// The tools a native model may call, as function schemas; `finish` is not
/// one of them (such a model answers in text).
pub(crate) fn tool_specs(allowed: &[agent_tools::ToolSpec]) -> Vec<ChatSpec> {
    allowed
        .iter()
        .filter(|t| t.name != FINISH)
        .map(|t| ChatSpec::new(t.name, t.description, t.parameters.clone()))
        .collect()
}

/// The loop's messages in chat form: call turns as assistant `tool_calls`
/// (ids numbered in order), the results after them as their `tool`
/// messages (one per call, in order), `finish` calls as the answer text.
/// Anything else stays as it is.
pub(crate) fn messages(history: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(history.len());
    let mut ids = 0;
    // The calls of the last call turn still waiting for their results.
    let mut pending: VecDeque<(String, String)> = VecDeque::new();
    for message in history {
        match message.role {
            Role::Assistant => {
                pending.clear();
                match protocol::parse_calls(&message.content) {
                    Ok(calls) if calls.len() == 1 && calls[0].tool == FINISH => {
                        let answer = calls[0].args.get("answer").and_then(|a| a.as_str());
                        out.push(Message::assistant(answer.unwrap_or(&message.content)));
                    }
                    Ok(calls) => {
                        let thought = calls[0].thought.clone();
                        let calls: Vec<ChatCall> = calls
                            .into_iter()
                            .map(|call| {
                                ids += 1;
                                let id = format!("call_{ids}");
                                pending.push_back((id.clone(), call.tool.clone()));
                                ChatCall::new(id, call.tool, call.args)
                            })
                            .collect();
                        out.push(Message::assistant_calls(thought, calls));
                    }
                    Err(_) => out.push(message.clone()),
                }
            }
            Role::User => match pending.pop_front() {
                Some((id, name)) => {
                    out.push(Message::tool_result(id, name, message.content.clone()))
                }
                None => out.push(message.clone()),
            },
            _ => {
                pending.clear();
                out.push(message.clone());
            }
        }
    }
    out
}

/// A native reply as the loop's own call JSON: its call (with the text
/// before it as the thought), or the list of its calls when it made
/// several, else a `finish` with its text as the answer. Err: why its
/// calls could not be read, written for the model.
pub(crate) fn reply_call(completion: &Completion) -> Result<String, String> {
    if let Some(problem) = &completion.invalid_call {
        return Err(problem.clone());
    }
    let thought = completion.content.trim();
    let calls: Vec<Value> = completion
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            // The text before the calls is the first one's thought.
            let thought = if i == 0 { thought } else { "" };
            json!({"thought": thought, "tool": call.name, "args": call.arguments})
        })
        .collect();
    let call = match calls.len() {
        0 => json!({"thought": "", "tool": FINISH, "args": {"answer": thought}}),
        1 => calls[0].clone(),
        _ => Value::Array(calls),
    };
    Ok(call.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_become_tool_calls_and_results_tool_messages() {
        let history = vec![
            Message::system("sys"),
            Message::user("where is add?"),
            Message::assistant(
                r#"{"thought": "search", "tool": "grep", "args": {"pattern": "add"}}"#,
            ),
            Message::user("grep: ok\nsrc/lib.rs:1"),
            Message::assistant(
                r#"{"thought": "", "tool": "finish", "args": {"answer": "In src/lib.rs."}}"#,
            ),
            Message::user("and sub?"),
            Message::assistant("not json"),
            Message::user("Format error: ..."),
        ];
        let m = messages(&history);
        assert_eq!(m.len(), history.len());
        assert_eq!(m[2].content, "search");
        assert_eq!(m[2].tool_calls[0].name, "grep");
        assert_eq!(m[2].tool_calls[0].arguments, json!({"pattern": "add"}));
        assert_eq!(m[3].role, Role::Tool);
        assert_eq!(
            m[3].tool_call_id.as_deref(),
            Some(m[2].tool_calls[0].id.as_str())
        );
        assert_eq!(
            (m[4].role, m[4].content.as_str()),
            (Role::Assistant, "In src/lib.rs.")
        );
        assert_eq!(m[5].role, Role::User);
        assert_eq!((m[6].content.as_str(), m[7].role), ("not json", Role::User));
        // A pure function of the record: the next prompt starts with this one.
        assert_eq!(messages(&history[..4]), m[..4].to_vec());
    }

    #[test]
    fn a_turn_of_several_calls_is_one_assistant_message_and_a_tool_message_each() {
        let history = vec![
            Message::system("sys"),
            Message::user("where are add and sub?"),
            Message::assistant(
                r#"[{"thought": "both", "tool": "grep", "args": {"pattern": "add"}}, {"thought": "", "tool": "grep", "args": {"pattern": "sub"}}]"#,
            ),
            Message::user("grep: add found"),
            Message::user("grep: sub found"),
            Message::assistant(r#"{"thought": "", "tool": "read_file", "args": {"path": "a"}}"#),
            Message::user("a's text"),
        ];
        let m = messages(&history);
        assert_eq!(m.len(), history.len());
        assert_eq!(m[2].content, "both");
        let ids: Vec<&str> = m[2].tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_1", "call_2"]);
        assert_eq!(m[3].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(
            (m[4].tool_call_id.as_deref(), m[4].content.as_str()),
            (Some("call_2"), "grep: sub found")
        );
        assert_eq!(m[6].tool_call_id.as_deref(), Some("call_3"));
    }

    #[test]
    fn a_reply_is_stored_as_the_loops_own_call() {
        let mut c = Completion {
            content: "Let me look.".into(),
            tool_calls: vec![ChatCall::new("x", "read_file", json!({"path": "a.rs"}))],
            reasoning: "secret thoughts".into(),
            ..Completion::default()
        };
        let stored = reply_call(&c).unwrap();
        let call = protocol::parse_call(&stored).unwrap();
        assert_eq!(
            (call.tool.as_str(), call.thought.as_str()),
            ("read_file", "Let me look.")
        );
        assert!(!stored.contains("secret"), "{stored}");
        c.tool_calls
            .push(ChatCall::new("y", "grep", json!({"pattern": "add"})));
        let calls = protocol::parse_calls(&reply_call(&c).unwrap()).unwrap();
        assert_eq!(
            calls
                .iter()
                .map(|c| (c.tool.as_str(), c.thought.as_str()))
                .collect::<Vec<_>>(),
            [("read_file", "Let me look."), ("grep", "")]
        );
        c.tool_calls.clear();
        c.content = "It is in a.rs.".into();
        let call = protocol::parse_call(&reply_call(&c).unwrap()).unwrap();
        assert_eq!(
            (call.tool.as_str(), call.args["answer"].as_str()),
            (FINISH, Some("It is in a.rs."))
        );
        c.invalid_call = Some("unknown tool `nope`".into());
        assert_eq!(reply_call(&c).unwrap_err(), "unknown tool `nope`");
    }
}
