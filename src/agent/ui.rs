//! What the user sees: streamed answers, tool calls as they happen, coloured
//! diffs, and the confirmation prompt.
//!
//! The answer streams to stdout; everything else (intent, tool calls, diffs,
//! notices) goes to stderr, so `agent ask ... > answer.txt` keeps only the answer.

use std::io::{BufRead, IsTerminal, Write};

use console::style;

use super::intent::Intent;
use super::protocol::{ToolCall, FINISH};
use crate::tools::diff::colored;
use crate::tools::{Approval, Approver, Decision, ToolOutput};

/// The loop reports progress through this.
pub trait Ui {
    fn intent(&mut self, intent: &Intent);
    fn step_start(&mut self, step: usize);
    /// A piece of the final answer, as it is generated.
    fn answer_text(&mut self, text: &str);
    fn step_end(&mut self);
    fn tool_call(&mut self, call: &ToolCall);
    fn tool_result(&mut self, call: &ToolCall, output: &ToolOutput);
    fn notice(&mut self, text: &str);
}

/// Shows nothing (`--json`, tests).
pub struct QuietUi;
impl Ui for QuietUi {
    fn intent(&mut self, _: &Intent) {}
    fn step_start(&mut self, _: usize) {}
    fn answer_text(&mut self, _: &str) {}
    fn step_end(&mut self) {}
    fn tool_call(&mut self, _: &ToolCall) {}
    fn tool_result(&mut self, _: &ToolCall, _: &ToolOutput) {}
    fn notice(&mut self, _: &str) {}
}

/// The interactive terminal.
pub struct TerminalUi {
    spinner: Option<indicatif::ProgressBar>,
    answering: bool,
    /// Print the thoughts and full tool output too (`-v`).
    pub verbose: bool,
}

impl TerminalUi {
    pub fn new(verbose: bool) -> Self {
        Self {
            spinner: None,
            answering: false,
            verbose,
        }
    }

    fn clear_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }
}

impl Ui for TerminalUi {
    fn intent(&mut self, intent: &Intent) {
        if self.verbose {
            eprintln!(
                "{}",
                style(format!(
                    "intent: {} ({:.2}; {})",
                    intent.label.as_str(),
                    intent.confidence,
                    intent.reason
                ))
                .dim()
            );
        }
    }

    fn step_start(&mut self, step: usize) {
        self.answering = false;
        self.spinner = Some(super::super::cmd::spinner(format!(
            "thinking (step {step})"
        )));
    }

    fn answer_text(&mut self, text: &str) {
        if !self.answering {
            self.clear_spinner();
            self.answering = true;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    }

    fn step_end(&mut self) {
        self.clear_spinner();
        if self.answering {
            println!();
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        if call.tool == FINISH {
            return;
        }
        if self.verbose && !call.thought.is_empty() {
            eprintln!("{}", style(format!("  {}", call.thought)).dim());
        }
        eprintln!(
            "{} {} {}",
            style("●").cyan(),
            style(&call.tool).bold(),
            style(summarize_args(&call.args)).dim()
        );
    }

    fn tool_result(&mut self, _call: &ToolCall, output: &ToolOutput) {
        if let Some(diff) = &output.diff {
            eprint!("{}", colored(diff));
        }
        let first = output.content.lines().next().unwrap_or_default();
        if output.ok {
            let lines = output.content.lines().count();
            eprintln!(
                "  {}",
                style(format!("{} ({lines} lines)", truncate_chars(first, 100))).dim()
            );
        } else {
            eprintln!("  {} {}", style("✗").red(), truncate_chars(first, 160));
        }
        if self.verbose {
            eprintln!("{}", style(&output.content).dim());
        }
    }

    fn notice(&mut self, text: &str) {
        self.clear_spinner();
        eprintln!("{}", style(text).yellow());
    }
}

/// `{"path": "src/a.rs", "start_line": 3}` → `src/a.rs start_line=3`.
fn summarize_args(args: &serde_json::Value) -> String {
    let Some(map) = args.as_object() else {
        return args.to_string();
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => s.replace('\n', "⏎"),
                other => other.to_string(),
            };
            if k == "path" || k == "command" || k == "pattern" || k == "query" {
                truncate_chars(&v, 80)
            } else {
                format!("{k}={}", truncate_chars(&v, 40))
            }
        })
        .collect();
    parts.join(" ")
}

fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n).collect();
    out.push('…');
    out
}

/// Asks on the terminal. Without a terminal it cannot ask, so it declines
/// and says how to allow the action.
pub struct TerminalApprover {
    interactive: bool,
    /// "always" was answered: approve the rest of the session.
    always: bool,
}

impl TerminalApprover {
    pub fn new() -> Self {
        Self {
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            always: false,
        }
    }
}

impl Default for TerminalApprover {
    fn default() -> Self {
        Self::new()
    }
}

impl Approver for TerminalApprover {
    fn approve(&mut self, request: &Approval) -> Decision {
        if self.always {
            return Decision::Approve;
        }
        let what = match request {
            Approval::Write { paths, diff } => {
                eprint!("{}", colored(diff));
                format!("apply this change to {}?", paths.join(", "))
            }
            Approval::Command { command, cwd } => {
                eprintln!("{} {}", style("$").bold(), style(command).bold());
                format!("run this command in {cwd}?")
            }
            Approval::Read { tool, summary } => format!("allow {tool} {summary}?"),
        };
        if !self.interactive {
            eprintln!(
                "{} {what} declined: no terminal to ask on (use --mode yolo to allow changes and commands)",
                style("!").yellow()
            );
            return Decision::Decline;
        }
        eprint!(
            "{} {what} [y]es / [n]o / [a]lways: ",
            style("?").yellow().bold()
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            return Decision::Decline;
        }
        match answer.trim().to_lowercase().as_str() {
            "y" | "yes" => Decision::Approve,
            "a" | "always" => {
                self.always = true;
                Decision::Approve
            }
            _ => Decision::Decline,
        }
    }
}

/// Pulls the `answer` string of a `finish` call out of a reply while it is
/// generated, so the answer streams even though the reply is JSON. Replies
/// that are not a finish call show nothing.
#[derive(Debug, Default)]
pub struct AnswerStreamer {
    text: String,
    /// Byte offset in `text` where undecoded answer characters start.
    cursor: Option<usize>,
    done: bool,
}

impl AnswerStreamer {
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

    fn stream(pieces: &[&str]) -> String {
        let mut s = AnswerStreamer::default();
        pieces.iter().map(|p| s.push(p)).collect()
    }

    #[test]
    fn finish_answers_stream_decoded_piece_by_piece() {
        let out = stream(&[
            "{\"thought\": \"done\", \"tool\": \"fin",
            "ish\", \"args\": {\"answer\": \"Line one\\",
            "nIt is in \\\"src/a.rs\\\" \\u00e9",
            "\"}}",
        ]);
        assert_eq!(out, "Line one\nIt is in \"src/a.rs\" é");
    }

    #[test]
    fn other_calls_show_nothing() {
        let out = stream(&[
            "{\"thought\": \"the answer is\", \"tool\": \"read_file\", \"args\": {\"path\": \"answer\"}}",
        ]);
        assert_eq!(out, "");
    }

    #[test]
    fn summaries_are_short() {
        let s = summarize_args(&serde_json::json!({"path": "src/a.rs", "start_line": 3}));
        assert_eq!(s, "src/a.rs start_line=3");
    }
}
