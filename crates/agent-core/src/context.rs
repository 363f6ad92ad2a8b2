//! Fitting a conversation into the context window.
//!
//! The budget is the window minus a reserve for the reply, counted exactly
//! with the model's tokenizer over the rendered prompt. When a conversation
//! is over budget, the cheapest information goes first:
//! 1. old tool outputs become one-line stubs (the model can call the tool again);
//! 2. the oldest assistant/observation pairs go;
//! 3. as a last resort the newest observation is cut in the middle.
//!
//! The system prompt, the first request (or the summary that replaced the
//! turns before it, see [`crate::compact`]) and the latest request always
//! stay, and user/assistant alternation is preserved (strict templates reject
//! anything else).

use agent_llm::{Message, Role};

/// What a message is, beyond its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    System,
    Request,
    Call,
    Observation,
    /// The model's summary of the turns it replaced ([`crate::compact`]).
    Summary,
}

#[derive(Debug, Clone)]
pub struct Turn {
    pub kind: Kind,
    pub message: Message,
    /// Its number in the session store (None until stored, or never: an
    /// unrecorded session); a request's names the changes it made.
    pub seq: Option<i64>,
}

impl Turn {
    pub fn new(kind: Kind, content: impl Into<String>) -> Self {
        let role = match kind {
            Kind::System => Role::System,
            Kind::Request | Kind::Observation | Kind::Summary => Role::User,
            Kind::Call => Role::Assistant,
        };
        Self {
            kind,
            message: Message::new(role, content),
            seq: None,
        }
    }
}

/// Observations longer than this are worth stubbing.
const STUB_ABOVE_CHARS: usize = 200;

/// How much was removed to fit; for the trace log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Fitted {
    pub stubbed: usize,
    pub dropped_turns: usize,
    pub truncated: bool,
}

/// Returns the messages to send, within `limit` tokens as counted by `count`
/// when that is possible.
pub fn fit(
    turns: &[Turn],
    limit: usize,
    count: &dyn Fn(&[Message]) -> usize,
) -> (Vec<Message>, Fitted) {
    let mut turns = turns.to_vec();
    let mut fitted = Fitted::default();
    let messages = |t: &[Turn]| t.iter().map(|t| t.message.clone()).collect::<Vec<_>>();
    if count(&messages(&turns)) <= limit {
        return (messages(&turns), fitted);
    }

    // 1. Stub old observations, oldest first; the newest stays whole.
    let last_obs = turns.iter().rposition(|t| t.kind == Kind::Observation);
    for i in 0..turns.len() {
        if Some(i) == last_obs {
            break;
        }
        if turns[i].kind == Kind::Observation && turns[i].message.content.len() > STUB_ABOVE_CHARS {
            turns[i].message.content = stub(&turns[i].message.content);
            fitted.stubbed += 1;
            if count(&messages(&turns)) <= limit {
                return (messages(&turns), fitted);
            }
        }
    }

    // 2. Drop the oldest (call, observation) pairs before the latest request.
    let first_request = turns
        .iter()
        .position(|t| matches!(t.kind, Kind::Request | Kind::Summary));
    loop {
        let latest_request = turns.iter().rposition(|t| t.kind == Kind::Request);
        let start = first_request.map_or(1, |i| i + 1);
        let end = latest_request.unwrap_or(turns.len());
        // A pair must be an assistant turn followed by a user turn, both
        // strictly between the first and the latest request, or after the
        // latest request but not the newest pair.
        let candidate = (start..turns.len().saturating_sub(2)).find(|&i| {
            turns[i].message.role == Role::Assistant
                && turns[i + 1].message.role == Role::User
                && (i + 1 < end || (i > end && i + 2 < turns.len()))
        });
        let Some(i) = candidate else { break };
        // A turn of several calls goes with all of its observations.
        let results = 1 + turns[i + 2..end.max(i + 2)]
            .iter()
            .take_while(|t| t.kind == Kind::Observation)
            .count();
        turns.drain(i..i + 1 + results);
        fitted.dropped_turns += 1 + results;
        if count(&messages(&turns)) <= limit {
            return (messages(&turns), fitted);
        }
    }

    // 3. Cut the newest observation in the middle, halving until it fits.
    if let Some(i) = turns.iter().rposition(|t| t.kind == Kind::Observation) {
        while count(&messages(&turns)) > limit && turns[i].message.content.len() > 400 {
            turns[i].message.content = cut_middle(&turns[i].message.content);
            fitted.truncated = true;
        }
    }
    (messages(&turns), fitted)
}

fn stub(content: &str) -> String {
    let first = content.lines().next().unwrap_or_default();
    let first: String = first.chars().take(120).collect();
    format!(
        "{first} [older tool output elided to fit the context; call the tool again if you need it]"
    )
}

fn cut_middle(content: &str) -> String {
    let keep = content.len() / 4;
    let mut head = keep;
    while !content.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = content.len() - keep;
    while !content.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[... {} bytes cut to fit the context ...]\n{}",
        &content[..head],
        tail - head,
        &content[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(messages: &[Message]) -> usize {
        messages.iter().map(|m| m.content.len()).sum()
    }

    fn conversation(observations: usize) -> Vec<Turn> {
        let mut t = vec![
            Turn::new(Kind::System, "S".repeat(100)),
            Turn::new(Kind::Request, "first request"),
        ];
        for i in 0..observations {
            t.push(Turn::new(Kind::Call, format!("call {i}")));
            t.push(Turn::new(
                Kind::Observation,
                format!("obs {i} {}", "x".repeat(1000)),
            ));
        }
        t
    }

    fn alternates(messages: &[Message]) -> bool {
        messages[1..]
            .windows(2)
            .all(|w| w[0].role != w[1].role && w[0].role != Role::System)
    }

    #[test]
    fn under_budget_nothing_changes() {
        let turns = conversation(2);
        let (m, f) = fit(&turns, 100_000, &chars);
        assert_eq!(m.len(), turns.len());
        assert_eq!(f, Fitted::default());
    }

    #[test]
    fn old_outputs_are_stubbed_before_turns_are_dropped() {
        let turns = conversation(3);
        let (m, f) = fit(&turns, 1_600, &chars);
        assert!(chars(&m) <= 1_600);
        assert_eq!(f.dropped_turns, 0);
        assert!(f.stubbed >= 1);
        assert!(
            m.last().unwrap().content.len() > 1000,
            "newest output kept whole"
        );
        assert!(m[3].content.contains("elided"));
    }

    #[test]
    fn oldest_turns_go_and_system_first_request_and_alternation_stay() {
        let turns = conversation(12);
        let (m, f) = fit(&turns, 1_500, &chars);
        assert!(chars(&m) <= 1_500, "{}", chars(&m));
        assert!(f.dropped_turns > 0);
        assert_eq!(m[0].role, Role::System);
        assert_eq!(m[1].content, "first request");
        assert!(m.last().unwrap().content.starts_with("obs 11"));
        assert!(alternates(&m));
    }

    #[test]
    fn the_latest_request_is_kept() {
        let mut turns = conversation(4);
        turns.push(Turn::new(Kind::Call, "finish"));
        turns.push(Turn::new(Kind::Request, "second request"));
        turns.push(Turn::new(Kind::Call, "call x"));
        turns.push(Turn::new(Kind::Observation, "y".repeat(1000)));
        let (m, _) = fit(&turns, 1_300, &chars);
        assert!(m.iter().any(|m| m.content == "second request"));
        assert!(m.iter().any(|m| m.content == "first request"));
        assert!(alternates(&m));
    }

    #[test]
    fn a_huge_single_output_is_cut_in_the_middle() {
        let mut turns = conversation(0);
        turns.push(Turn::new(Kind::Call, "c"));
        turns.push(Turn::new(
            Kind::Observation,
            format!("HEAD{}TAIL", "z".repeat(20_000)),
        ));
        let (m, f) = fit(&turns, 3_000, &chars);
        assert!(f.truncated);
        let last = &m.last().unwrap().content;
        assert!(last.starts_with("HEAD") && last.ends_with("TAIL"));
        assert!(chars(&m) <= 3_000);
    }
}
