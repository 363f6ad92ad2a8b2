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
use serde_json::json;

use crate::protocol::{self, FINISH};

/// The tools a native model may call, as function schemas; `finish` is not
/// one of them (such a model answers in text).
pub fn tool_specs(allowed: &[agent_tools::ToolSpec]) -> Vec<ChatSpec> {
    allowed
        .iter()
        .filter(|t| t.name != FINISH)
        .map(|t| ChatSpec::new(t.name, t.description, t.parameters.clone()))
        .collect()
}

/// The loop's messages in chat form: call turns as assistant `tool_calls`
/// (ids numbered in order), the result after each as its `tool` message,
/// `finish` calls as the answer text. Anything else stays as it is.
pub fn messages(history: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(history.len());
    let mut calls = 0;
    let mut pending: Option<(String, String)> = None;
    for message in history {
        match message.role {
            Role::Assistant => {
                pending = None;
                match protocol::parse_call(&message.content) {
                    Ok(call) if call.tool == FINISH => {
                        let answer = call.args.get("answer").and_then(|a| a.as_str());
                        out.push(Message::assistant(answer.unwrap_or(&message.content)));
                    }
                    Ok(call) => {
                        calls += 1;
                        let id = format!("call_{calls}");
                        pending = Some((id.clone(), call.tool.clone()));
                        out.push(Message::assistant_calls(
                            call.thought,
                            vec![ChatCall::new(id, call.tool, call.args)],
                        ));
                    }
                    Err(_) => out.push(message.clone()),
                }
            }
            Role::User => match pending.take() {
                Some((id, name)) => {
                    out.push(Message::tool_result(id, name, message.content.clone()))
                }
                None => out.push(message.clone()),
            },
            _ => {
                pending = None;
                out.push(message.clone());
            }
        }
    }
    out
}

/// A native reply as the loop's own call JSON: its first call (with the
/// text before it as the thought), else a `finish` with its text as the
/// answer. Err: why its calls could not be read, written for the model.
pub fn reply_call(completion: &Completion) -> Result<String, String> {
    if let Some(problem) = &completion.invalid_call {
        return Err(problem.clone());
    }
    let call = match completion.tool_calls.first() {
        Some(call) => {
            json!({"thought": completion.content.trim(), "tool": call.name, "args": call.arguments})
        }
        None => {
            json!({"thought": "", "tool": FINISH, "args": {"answer": completion.content.trim()}})
        }
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
