//! Fitting a conversation into the context window.
//!
//! The budget is the window minus a reserve for the reply, counted exactly
//! with the model's tokenizer over the rendered prompt. When a conversation
//! is over budget, the cheapest information goes first:
//! 1. old tool outputs become one-line stubs (the model can call the tool again);
//! 2. the oldest assistant/observation pairs go;
//! 3. then the largest part left (a tool's output, an attached file, a
//!    summary's notes) is cut to an excerpt ([`crate::budget::excerpt`]),
//!    largest first, until the prompt fits; the user's own words are never
//!    cut.
//!
//! The system prompt, the first request (or the summary that replaced the
//! turns before it, see [`crate::compact`]) and the latest request always
//! stay, and user/assistant alternation is preserved (strict templates reject
//! anything else).

use std::ops::Range;

use agent_llm::{Message, Role};

use crate::budget::{self, CountText, MIN_EXCERPT_TOKENS};

pub(crate) use agent_store::turn::{Kind, Turn};

/// Observations longer than this are worth stubbing.
const STUB_ABOVE_CHARS: usize = 200;

/// How much was removed to fit; for the trace log and the budget.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Fitted {
    pub stubbed: usize,
    pub dropped_turns: usize,
    /// Outputs and attached files cut to an excerpt.
    pub excerpted: usize,
    /// Tokens left out (estimated): stubs, dropped turns, excerpts.
    pub cut_tokens: usize,
}

/// How a prompt is counted: whole, as sent (its tools included), and a
/// text alone.
pub(crate) struct Counter<'a> {
    pub prompt: &'a dyn Fn(&[Message]) -> usize,
    pub text: CountText<'a>,
}

/// Returns the turns to send, within `limit` tokens as `count` counts them
/// when that is possible (only the system prompt and the user's words
/// cannot be cut). `hints`: the latest request's words, which excerpts keep.
pub(crate) fn fit(
    turns: &[Turn],
    limit: usize,
    count: &Counter<'_>,
    hints: &[String],
) -> (Vec<Turn>, Fitted) {
    let mut turns = turns.to_vec();
    let mut fitted = Fitted::default();
    let over = |t: &[Turn]| tokens(t, count) > limit;
    if !over(&turns) {
        return (turns, fitted);
    }

    // 1. Stub old observations, oldest first; the newest stays whole.
    let last_obs = turns.iter().rposition(|t| t.kind == Kind::Observation);
    for i in 0..turns.len() {
        if Some(i) == last_obs {
            break;
        }
        if turns[i].kind == Kind::Observation && turns[i].message.content.len() > STUB_ABOVE_CHARS {
            let before = (count.text)(&turns[i].message.content);
            turns[i].message.content = stub(&turns[i].message.content);
            fitted.stubbed += 1;
            fitted.cut_tokens += before.saturating_sub((count.text)(&turns[i].message.content));
            if !over(&turns) {
                return (turns, fitted);
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
        fitted.cut_tokens += turns[i..i + 1 + results]
            .iter()
            .map(|t| (count.text)(&t.message.content))
            .sum::<usize>();
        turns.drain(i..i + 1 + results);
        fitted.dropped_turns += 1 + results;
        if !over(&turns) {
            return (turns, fitted);
        }
    }

    // 3. Excerpt the largest part left until the prompt fits.
    let mut spent: Vec<(usize, usize)> = Vec::new();
    loop {
        let total = tokens(&turns, count);
        if total <= limit {
            break;
        }
        let Some((i, range, name)) = largest_part(&turns, &spent) else {
            // Every part is as small as an excerpt goes: 4. the largest
            // become a line each saying so.
            leave_out(&mut turns, limit, count, &mut fitted);
            break;
        };
        let part = turns[i].message.content[range.clone()].to_string();
        let tokens = (count.text)(&part);
        let allowance = tokens
            .saturating_sub(total - limit + 32)
            .max(MIN_EXCERPT_TOKENS);
        // As small as an excerpt goes, or no smaller for it: the next part's turn.
        let as_small = match budget::excerpt(&name, &part, allowance, hints, count.text) {
            Some(mut cut) if cut.text.len() < part.len() => {
                if part.ends_with('\n') {
                    cut.text.push('\n');
                }
                turns[i]
                    .message
                    .content
                    .replace_range(range.clone(), &cut.text);
                fitted.excerpted += 1;
                fitted.cut_tokens += cut.cut_tokens;
                allowance == MIN_EXCERPT_TOKENS
            }
            _ => true,
        };
        if as_small {
            spent.push((i, range.start));
        }
    }
    (turns, fitted)
}

/// Replaces the cuttable parts, largest first, by a line saying they were
/// left out, until the prompt fits or none is left.
fn leave_out(turns: &mut [Turn], limit: usize, count: &Counter<'_>, fitted: &mut Fitted) {
    const LEFT_OUT: &str = "[left out to fit the context window]";
    while tokens(turns, count) > limit {
        let Some((i, range, _)) =
            largest_part(turns, &[]).filter(|(_, r, _)| r.len() > LEFT_OUT.len())
        else {
            return;
        };
        let part = &turns[i].message.content[range.clone()];
        fitted.cut_tokens += (count.text)(part);
        turns[i].message.content.replace_range(range, LEFT_OUT);
        fitted.excerpted += 1;
    }
}

/// Tokens `turns` take as a prompt.
fn tokens(turns: &[Turn], count: &Counter<'_>) -> usize {
    let messages: Vec<Message> = turns.iter().map(|t| t.message.clone()).collect();
    (count.prompt)(&messages)
}

/// The largest part of the turns that may be cut, not yet cut as far as it
/// goes (`spent`: turn and start): a tool's output, an attached file's text
/// in a request, a summary's notes and the files of the request it carries.
/// Its turn, byte range, and name.
fn largest_part(turns: &[Turn], spent: &[(usize, usize)]) -> Option<(usize, Range<usize>, String)> {
    let mut parts = Vec::new();
    for (i, turn) in turns.iter().enumerate() {
        let content = &turn.message.content;
        match turn.kind {
            Kind::Observation => parts.push((i, 0..content.len(), "the tool's output".to_string())),
            Kind::Request => parts.extend(
                crate::attach::blocks(content)
                    .into_iter()
                    .map(|(name, range)| (i, range, name)),
            ),
            // A summary's notes, not the request it carries verbatim, nor
            // the session's context before it.
            Kind::Summary => {
                let start = content.find(crate::compact::HEADING).unwrap_or(0);
                let end = content
                    .find(crate::compact::VERBATIM)
                    .unwrap_or(content.len());
                if start < end {
                    parts.push((i, start..end, "the summary".to_string()));
                }
                // The files attached to the request it carries.
                parts.extend(
                    crate::attach::blocks(content)
                        .into_iter()
                        .filter(|(_, range)| range.start >= end)
                        .map(|(name, range)| (i, range, name)),
                );
            }
            _ => {}
        }
    }
    parts
        .into_iter()
        .filter(|(i, range, _)| {
            range.len() > STUB_ABOVE_CHARS && !spent.contains(&(*i, range.start))
        })
        .max_by_key(|(_, range, _)| range.len())
}

fn stub(content: &str) -> String {
    let first = content.lines().next().unwrap_or_default();
    let first: String = first.chars().take(120).collect();
    format!(
        "{first} [older tool output elided to fit the context; call the tool again if you need it]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(messages: &[Message]) -> usize {
        messages.iter().map(|m| m.content.len()).sum()
    }

    fn text_chars(text: &str) -> usize {
        text.len()
    }

    const CHARS: Counter<'static> = Counter {
        prompt: &chars,
        text: &text_chars,
    };

    fn fit(turns: &[Turn], limit: usize) -> (Vec<Message>, Fitted) {
        let (turns, fitted) = super::fit(turns, limit, &CHARS, &[]);
        (turns.into_iter().map(|t| t.message).collect(), fitted)
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
        let (m, f) = fit(&turns, 100_000);
        assert_eq!(m.len(), turns.len());
        assert_eq!(f, Fitted::default());
    }

    #[test]
    fn old_outputs_are_stubbed_before_turns_are_dropped() {
        let turns = conversation(3);
        let (m, f) = fit(&turns, 1_600);
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
        let (m, f) = fit(&turns, 1_500);
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
        let (m, _) = fit(&turns, 1_300);
        assert!(m.iter().any(|m| m.content == "second request"));
        assert!(m.iter().any(|m| m.content == "first request"));
        assert!(alternates(&m));
    }

    #[test]
    fn a_huge_single_output_is_cut_to_an_excerpt() {
        let mut turns = conversation(0);
        turns.push(Turn::new(Kind::Call, "c"));
        let lines: String = (0..2_000).map(|i| format!("line {i}\n")).collect();
        turns.push(Turn::new(Kind::Observation, format!("[grep ok]\n{lines}")));
        let (m, f) = fit(&turns, 3_000);
        assert_eq!(f.excerpted, 1);
        assert!(f.cut_tokens > 10_000, "{f:?}");
        let last = &m.last().unwrap().content;
        assert!(last.starts_with("[grep ok]\nline 0\n"), "{last}");
        assert!(last.trim_end().ends_with("shows the others]"), "{last}");
        assert!(chars(&m) <= 3_000);
    }

    #[test]
    fn attached_files_are_cut_largest_first_and_the_users_words_stay() {
        let big: String = (0..3_000).map(|i| format!("big {i}\n")).collect();
        let small: String = (0..300).map(|i| format!("small {i}\n")).collect();
        let files = crate::attach::render(&[
            crate::attach::Attachment {
                name: "big.txt".into(),
                text: big.clone(),
            },
            crate::attach::Attachment {
                name: "small.txt".into(),
                text: small.clone(),
            },
        ]);
        let words = "Compare big.txt with small.txt, please.";
        let turns = vec![
            Turn::new(Kind::System, "S".repeat(100)),
            Turn::new(Kind::Request, format!("{files}{words}")),
        ];
        let (m, f) = fit(&turns, 8_000);
        assert!(chars(&m) <= 8_000, "{}", chars(&m));
        assert_eq!(f.excerpted, 1, "only the larger file was cut");
        assert!(m[1].content.ends_with(words));
        assert!(m[1].content.contains(small.trim_end()));
        let blocks = crate::attach::blocks(&m[1].content);
        assert_eq!(blocks.len(), 2, "both files are still fenced");
    }
}
