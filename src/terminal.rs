//! What a session says and asks, on the terminal: notices on stderr in
//! their style, questions answered by a line of stdin.

use std::io::{BufRead, IsTerminal, Write};

use agent_base::term::escape_controls;
use agent_session::{Ask, Notice};
use console::style;

/// Prints a session's notice on stderr.
pub(crate) fn print(notice: Notice) {
    eprintln!("{}", shown(&notice));
}

/// A notice as the terminal shows it: its mark and style, its text escaped.
pub(crate) fn shown(notice: &Notice) -> String {
    let text = escape_controls(notice.text());
    let mark = |mark| match notice {
        Notice::Warning(_) | Notice::Alert(_) => style(mark).yellow(),
        Notice::Failed(_) => style(mark).red(),
        _ => style(mark),
    };
    match (notice, notice.mark()) {
        (Notice::Quiet(_), _) => style(text).dim().to_string(),
        (Notice::Diff(_), _) => agent_protocol::diff::colored(&text).trim_end().to_string(),
        (_, Some(m)) => format!("{} {text}", mark(m)),
        (_, None) => text.into_owned(),
    }
}

/// Asks on the terminal, when stdin and stderr are one.
pub(crate) fn ask() -> Option<LineAsk> {
    (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(LineAsk)
}

/// The line mode's: the items numbered on stderr, each answer a line of stdin.
pub(crate) struct LineAsk;

impl Ask for LineAsk {
    fn choose(&mut self, title: &str, items: &[String]) -> Option<usize> {
        eprintln!("{title}");
        for (i, item) in items.iter().enumerate() {
            eprintln!("{:>3}  {}", i + 1, escape_controls(item));
        }
        let answer = read_answer(&format!("number (1 to {}; Enter cancels): ", items.len()))?;
        match answer.parse::<usize>() {
            Ok(n) if (1..=items.len()).contains(&n) => Some(n - 1),
            _ if answer.is_empty() => None,
            _ => {
                eprintln!(
                    "{} {} is not in the list",
                    style("✗").red(),
                    escape_controls(&answer)
                );
                None
            }
        }
    }

    fn confirm(&mut self, question: &str) -> bool {
        let answer =
            read_answer(&format!("{} [y/N] ", escape_controls(question))).unwrap_or_default();
        matches!(answer.to_lowercase().as_str(), "y" | "yes")
    }
}

/// A line of stdin after `prompt`, trimmed; None at its end.
fn read_answer(prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => Some(line.trim().to_string()),
        _ => None,
    }
}
