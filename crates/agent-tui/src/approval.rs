//! Approvals in place: what is asked goes into the scrollback (an edit's
//! coloured diff; a command, its folder and why the policy asks), the
//! question waits in the live area for `y`, `n` or `a`.
//!
//! The rules are the line mode's (`agent_core::ui::TerminalApprover`):
//! yolo approves what the policy could read, "always" approves the rest of
//! the session, and what is asked whatever the mode (`why`) is always asked.

use std::sync::mpsc;

use agent_base::term::escape_line;
use agent_tools::grep::cut;
use agent_tools::{Approval, Approver, Decision};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::app::{Event, Link};
use crate::cells::styled;
use crate::diff::diff_lines;

/// A question for the user, with the lines shown before it.
pub(crate) struct Ask {
    pub shown: Vec<Line<'static>>,
    pub question: String,
}

/// The [`Approver`] of the terminal UI: runs on the chat's thread, asks on the UI's.
pub struct TuiApprover {
    link: Link,
    yolo: bool,
    always: bool,
}

impl TuiApprover {
    pub(crate) fn new(link: Link, yolo: bool) -> Self {
        Self {
            link,
            yolo,
            always: false,
        }
    }
}

/// What is shown of `request`, and the question.
fn describe(request: &Approval) -> Ask {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut shown = Vec::new();
    let question = match request {
        Approval::Write { paths, diff, .. } => {
            shown.extend(diff_lines(diff));
            format!("apply this change to {}?", escape_line(&paths.join(", ")))
        }
        Approval::Command { command, cwd, .. } => {
            shown.push(Line::from(vec![
                Span::styled("$ ", bold),
                Span::styled(escape_line(command).into_owned(), bold),
            ]));
            shown.push(styled(
                &format!("  in {}", cwd_name(cwd)),
                crate::cells::dim(),
            ));
            format!("run this command in {}?", cwd_name(cwd))
        }
        Approval::Read { tool, summary } => {
            format!("allow {} {}?", escape_line(tool), escape_line(summary))
        }
        Approval::Tool { tool, args } => {
            shown.push(styled(&format!("⚙ {tool} {}", cut(args, 400)), bold));
            format!("call {}?", escape_line(tool))
        }
    };
    let why = match request {
        Approval::Command { why, .. } | Approval::Write { why, .. } => why.as_deref(),
        _ => None,
    };
    if let Some(why) = why {
        let lead = match request {
            Approval::Write { .. } => "this changes the agent's own settings",
            _ => "the policy cannot check this command",
        };
        shown.push(styled(
            &format!("! {lead}: {why}"),
            Style::default().fg(Color::Yellow),
        ));
    }
    Ask { shown, question }
}

/// The workspace-relative folder, `.` for its root.
fn cwd_name(cwd: &str) -> String {
    let name = escape_line(cwd).into_owned();
    if name.is_empty() {
        ".".into()
    } else {
        name
    }
}

impl Approver for TuiApprover {
    fn approve(&mut self, request: &Approval) -> Decision {
        let asked_anyway = matches!(
            request,
            Approval::Command { why: Some(_), .. } | Approval::Write { why: Some(_), .. }
        );
        if self.yolo && !asked_anyway {
            return Decision::Approve;
        }
        let ask = describe(request);
        if self.always && !asked_anyway {
            // Shown, not asked: the rest of the session was approved.
            self.link.send(Event::Cell(ask.shown));
            return Decision::Approve;
        }
        let (tx, rx) = mpsc::channel();
        self.link.send(Event::Approval(ask, tx));
        match rx.recv().unwrap_or('n') {
            'y' => Decision::Approve,
            'a' => {
                self.always = true;
                Decision::Approve
            }
            _ => Decision::Decline,
        }
    }
}

/// The question's line in the live area.
pub(crate) fn question_line(question: &str) -> Line<'static> {
    Line::from(vec![
        Span::styled(
            "? ",
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(question.to_string()),
        Span::styled(
            "  [y]es / [n]o / [a]lways",
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ])
}

/// The answer, as it stays in the scrollback.
pub(crate) fn answered_line(question: &str, answer: char) -> Line<'static> {
    let (word, color) = match answer {
        'y' => ("yes", Color::Green),
        'a' => ("always", Color::Green),
        _ => ("no", Color::Red),
    };
    Line::from(vec![
        Span::styled("? ", Style::default().fg(Color::Yellow)),
        Span::raw(question.to_string()),
        Span::raw(" "),
        Span::styled(word, Style::default().fg(color)),
    ])
}
