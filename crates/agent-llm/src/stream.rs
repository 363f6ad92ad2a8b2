//! Showing a turn while it is generated: its reasoning apart, its text as
//! it comes, never its call syntax. What the loop acts on is the parsed
//! turn; this is only what the user sees meanwhile.

use agent_chat::Family;

use crate::chat::{reasoning_markers, reasoning_state, ReasoningState};
use crate::{Event, Flow};

/// What a turn is expected to hold, for showing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// No tools: everything after the reasoning is text.
    Plain,
    /// Our JSON calls (`Generic`): only the `finish` call's answer is text.
    FinishAnswer,
    /// The family's native calls: text up to the first call.
    Native,
}

/// New pieces to show.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Deltas {
    pub reasoning: String,
    pub text: String,
}

impl Deltas {
    /// Sends the pieces as events; `Flow::Stop` if the receiver asks to stop.
    pub fn emit(&self, on_event: &mut dyn FnMut(Event<'_>) -> Flow) -> Flow {
        if !self.reasoning.is_empty() && on_event(Event::Reasoning(&self.reasoning)) == Flow::Stop {
            return Flow::Stop;
        }
        if !self.text.is_empty() && on_event(Event::Text(&self.text)) == Flow::Stop {
            return Flow::Stop;
        }
        Flow::Continue
    }
}

/// Splits a turn being generated into reasoning and text deltas. Text that
/// may still turn out to be markup (half an opener, half a closing tag) is
/// held back until it is known.
#[derive(Debug)]
pub struct TurnStreamer {
    family: Family,
    reasoning_open: bool,
    kind: TurnKind,
    text: String,
    shown_reasoning: usize,
    shown_text: usize,
    answer: AnswerStreamer,
}

impl TurnStreamer {
    pub fn new(family: Family, reasoning_open: bool, kind: TurnKind) -> Self {
        Self {
            family,
            reasoning_open,
            kind,
            text: String::new(),
            shown_reasoning: 0,
            shown_text: 0,
            answer: AnswerStreamer::default(),
        }
    }

    /// The whole turn so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn push(&mut self, piece: &str) -> Deltas {
        self.text.push_str(piece);
        self.view(false)
    }

    /// The turn is over: what was held back.
    pub fn finish(&mut self) -> Deltas {
        self.view(true)
    }

    fn view(&mut self, done: bool) -> Deltas {
        let (_, close) = reasoning_markers(self.family);
        let (reasoning, answer) =
            match reasoning_state(self.family, &self.text, self.reasoning_open) {
                ReasoningState::Undecided if !done => ("", ""),
                ReasoningState::Undecided => ("", self.text.as_str()),
                ReasoningState::Open { from } => {
                    let body = &self.text[from..];
                    (
                        if done {
                            body
                        } else {
                            hold_partial(body, &[close])
                        },
                        "",
                    )
                }
                ReasoningState::Answer { from } => {
                    let before = &self.text[..from];
                    let body = match before.rfind(close) {
                        Some(end) => {
                            let (open, _) = reasoning_markers(self.family);
                            let start = if self.reasoning_open {
                                0
                            } else {
                                before.find(open).map_or(0, |i| i + open.len())
                            };
                            &before[start.min(end)..end]
                        }
                        None => "",
                    };
                    (body, &self.text[from..])
                }
            };
        let mut out = Deltas::default();
        let reasoning = reasoning.trim_start();
        if reasoning.len() > self.shown_reasoning {
            out.reasoning = reasoning[self.shown_reasoning..].to_string();
            self.shown_reasoning = reasoning.len();
        }
        let text = match self.kind {
            TurnKind::Plain => answer_text(self.family, answer, done, false),
            TurnKind::Native => answer_text(self.family, answer, done, true),
            TurnKind::FinishAnswer => {
                // The answer streamer reads its input once, piece by piece.
                let new = &answer[self.answer.fed.min(answer.len())..];
                let new = new.to_string();
                self.answer.fed = answer.len();
                self.answer.push(&new);
                self.answer.shown.clone()
            }
        };
        if text.len() > self.shown_text && text.is_char_boundary(self.shown_text) {
            out.text = text[self.shown_text..].to_string();
            self.shown_text = text.len();
        }
        out
    }
}

/// `text` without a tail that could be the start of one of `markers`.
fn hold_partial<'a>(text: &'a str, markers: &[&str]) -> &'a str {
    let mut cut = text.len();
    for marker in markers {
        for (i, _) in text.char_indices().rev().take(marker.len()) {
            let tail = &text[i..];
            if tail.len() < marker.len() && marker.starts_with(tail) {
                cut = cut.min(i);
            }
        }
    }
    &text[..cut]
}

/// The text of an answer (what follows the reasoning) as far as it can be
/// shown: up to a call, without the family's answer markup.
fn answer_text(family: Family, answer: &str, done: bool, calls: bool) -> String {
    let answer = answer.trim_start();
    if family == Family::GptOss {
        return harmony_text(answer, done);
    }
    let mut end = answer.len();
    if calls {
        if family == Family::Llama3 && answer.starts_with('{') {
            // A call is the whole turn; an answer that is JSON shows when
            // the turn is read.
            return String::new();
        }
        if let Some(at) = family.openers().iter().filter_map(|o| answer.find(o)).min() {
            end = at;
        } else if !done {
            end = hold_partial(answer, family.openers()).len();
        }
    }
    let mut text = answer[..end].to_string();
    match family {
        Family::CommandR7B => {
            if let Some(stop) = text.find("<|END_RESPONSE|>") {
                text.truncate(stop);
            }
            text = text.replace("<|START_RESPONSE|>", "");
            if !done {
                text = hold_partial(&text, &["<|START_RESPONSE|>", "<|END_RESPONSE|>"]).to_string();
            }
        }
        Family::Granite => {
            text = text.replace("<response>", "").replace("</response>", "");
            if !done {
                text = hold_partial(&text, &["<response>", "</response>"]).to_string();
            }
        }
        _ => {}
    }
    text
}

/// gpt-oss: the bodies of `final` messages (and text outside the format).
fn harmony_text(answer: &str, done: bool) -> String {
    const FINAL: &str = "<|channel|>final<|message|>";
    let mut out = String::new();
    if !answer.contains("<|") && !done && answer.starts_with('<') {
        return out;
    }
    if !answer.contains("<|channel|>") && !answer.starts_with("<|") {
        return answer.to_string();
    }
    let mut rest = answer;
    while let Some(start) = rest.find(FINAL) {
        let body = &rest[start + FINAL.len()..];
        let end = ["<|end|>", "<|return|>", "<|start|>"]
            .iter()
            .filter_map(|m| body.find(m))
            .min();
        match end {
            Some(end) => {
                out.push_str(&body[..end]);
                rest = &body[end..];
            }
            None => {
                out.push_str(if done {
                    body
                } else {
                    hold_partial(body, &["<|end|>", "<|return|>", "<|start|>"])
                });
                break;
            }
        }
    }
    out
}

/// Pulls the `answer` string of a `finish` call out of our JSON while it is
/// generated, so the answer streams even though the reply is JSON. Replies
/// that are not a finish call show nothing.
#[derive(Debug, Default)]
pub struct AnswerStreamer {
    text: String,
    /// Byte offset in `text` where undecoded answer characters start.
    cursor: Option<usize>,
    done: bool,
    /// How much of the turn was fed (see `TurnStreamer`).
    fed: usize,
    /// Everything decoded so far.
    shown: String,
}

impl AnswerStreamer {
    /// Adds a piece; returns the newly decoded answer text.
    pub fn push(&mut self, piece: &str) -> String {
        self.text.push_str(piece);
        if self.done {
            return String::new();
        }
        if self.cursor.is_none() {
            self.cursor = answer_start(&self.text);
        }
        let Some(start) = self.cursor else {
            return String::new();
        };
        let mut out = String::new();
        let rest = &self.text[start..];
        let mut consumed = 0;
        let mut chars = rest.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.done = true;
                    consumed = i + 1;
                    break;
                }
                '\\' => {
                    let Some(&(_, e)) = chars.peek() else { break };
                    let decoded = match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '"' => '"',
                        '\\' => '\\',
                        '/' => '/',
                        'u' => {
                            let hex = rest.get(i + 2..i + 6);
                            match hex.and_then(|h| u32::from_str_radix(h, 16).ok()) {
                                Some(code) => {
                                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                                    for _ in 0..5 {
                                        chars.next();
                                    }
                                    consumed = i + 6;
                                    continue;
                                }
                                None => break, // incomplete escape: wait for more
                            }
                        }
                        other => other,
                    };
                    chars.next();
                    out.push(decoded);
                    consumed = i + 2;
                }
                c => {
                    out.push(c);
                    consumed = i + c.len_utf8();
                }
            }
        }
        self.cursor = Some(start + consumed);
        self.shown.push_str(&out);
        out
    }
}

/// Where the answer string's content begins in a finish call, once visible.
fn answer_start(text: &str) -> Option<usize> {
    let tool = text.find("\"tool\"")?;
    let after_tool = &text[tool + 6..];
    let name_start = after_tool.find('"')?;
    if !after_tool[name_start..].starts_with("\"finish\"") {
        return None;
    }
    let answer = text.find("\"answer\"")?;
    let after = &text[answer + 8..];
    let colon = after.find(':')?;
    let quote = after[colon..].find('"')?;
    Some(answer + 8 + colon + quote + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(family: Family, open: bool, kind: TurnKind, pieces: &[&str]) -> (String, String) {
        let mut s = TurnStreamer::new(family, open, kind);
        let (mut reasoning, mut text) = (String::new(), String::new());
        for piece in pieces {
            let d = s.push(piece);
            reasoning.push_str(&d.reasoning);
            text.push_str(&d.text);
        }
        let d = s.finish();
        reasoning.push_str(&d.reasoning);
        text.push_str(&d.text);
        (reasoning, text)
    }

    #[test]
    fn reasoning_and_text_stream_apart_and_calls_never_show() {
        let (r, t) = stream(
            Family::Hermes,
            false,
            TurnKind::Native,
            &[
                "<thi",
                "nk>\nLet me ",
                "look.</th",
                "ink>\n\nReading",
                " it.\n<tool",
                "_call>\n{\"name\": \"x\"}",
            ],
        );
        assert_eq!(r, "Let me look.");
        assert_eq!(t, "Reading it.\n");
        let (r, t) = stream(
            Family::DeepSeekR1,
            true,
            TurnKind::Native,
            &["Hmm", "\n</think>\n\nIt is 4."],
        );
        assert_eq!((r.as_str(), t.as_str()), ("Hmm\n", "It is 4."));
    }

    #[test]
    fn finish_answers_stream_decoded_piece_by_piece() {
        let (_, t) = stream(
            Family::Generic,
            false,
            TurnKind::FinishAnswer,
            &[
                "{\"tool\": \"fin",
                "ish\", \"args\": {\"answer\": \"Line one\\",
                "nIt is in \\\"src/a.rs\\\" \\u00e9",
                "\"}}",
            ],
        );
        assert_eq!(t, "Line one\nIt is in \"src/a.rs\" é");
        let (_, t) = stream(
            Family::Generic,
            false,
            TurnKind::FinishAnswer,
            &["{\"tool\": \"read_file\", \"args\": {\"path\": \"answer\"}}"],
        );
        assert_eq!(t, "");
    }

    #[test]
    fn harmony_shows_its_final_channel() {
        let (r, t) = stream(
            Family::GptOss,
            false,
            TurnKind::Native,
            &[
                "<|channel|>analysis<|message|>Think.<|end|>",
                "<|start|>assistant<|channel|>final<|message|>It is",
                " 4.<|return|>",
            ],
        );
        assert_eq!((r.as_str(), t.as_str()), ("Think.", "It is 4."));
    }
}
