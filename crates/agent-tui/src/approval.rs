//! Approvals in place: what is asked goes into the scrollback (an edit's
//! coloured diff; a command, its folder and why the policy asks), the
//! question waits in the live area for `y`, `n` or `a`, and for an edit
//! `e`: the user's editor opens on the proposed text (`agent_protocol::proposal`)
//! while the UI steps aside (live area cleared, cooked mode, the cursor
//! shown, the editor's stderr the real one, not the capture pipe), the diff
//! is shown again against what they saved, and the question is asked again;
//! a yes then writes their text.
//!
//! The rules are the line mode's (`agent_line::TerminalApprover`):
//! yolo approves what the policy could read, "always" approves the rest of
//! the session, and what is asked whatever the mode (`why`) is always asked.

use std::sync::mpsc;

use agent_base::term::cut;
use agent_base::term::escape_line;
use agent_protocol::proposal::Edits;
use agent_protocol::{Approval, Approver, Decision};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::app::{Event, Link};
use crate::cells::styled;
use crate::diff::diff_lines;

/// A question for the user, with the lines shown before it.
pub(crate) struct Ask {
    pub shown: Vec<Line<'static>>,
    pub question: String,
    /// `e` opens the user's editor on the proposed change.
    pub editable: bool,
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
    Ask {
        shown,
        question,
        editable: false,
    }
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
        let mut ask = describe(request);
        if self.always && !asked_anyway {
            // Shown, not asked: the rest of the session was approved.
            self.link.send(Event::Cell(ask.shown));
            return Decision::Approve;
        }
        let mut edits = match request {
            Approval::Write { proposed, .. } => Some(Edits::new(proposed)),
            _ => None,
        }
        .filter(Edits::editable);
        ask.editable = edits.is_some();
        loop {
            let question = ask.question.clone();
            let (tx, rx) = mpsc::channel();
            self.link.send(Event::Approval(ask, tx));
            let answer = rx.recv().unwrap_or('n');
            let yes = || edits.as_ref().map_or(Decision::Approve, Edits::approve);
            match answer {
                'e' => match edits.as_mut() {
                    Some(edits) => ask = self.edit(edits, question),
                    None => return Decision::Decline,
                },
                'y' => return yes(),
                'a' => {
                    self.always = true;
                    return yes();
                }
                _ => return Decision::Decline,
            }
        }
    }
}

impl TuiApprover {
    /// `e`: the user edits the proposal in their editor; the question comes
    /// back with the diff against what they saved, or says why not.
    fn edit(&self, edits: &mut Edits, question: String) -> Ask {
        let warn = |text: String| vec![styled(&text, Style::default().fg(Color::Yellow))];
        let shown = match self.run_editor(edits) {
            Ok(true) => {
                let mut shown = vec![styled("✎ your edit of the change:", dim_bold())];
                shown.extend(diff_lines(&edits.diff()));
                shown
            }
            Ok(false) => warn("! the file is unchanged".into()),
            Err(e) => warn(format!("! {e}")),
        };
        Ask {
            shown,
            question,
            editable: true,
        }
    }

    /// The user's edit, with the UI thread running the editor (it owns
    /// the terminal).
    fn run_editor(&self, edits: &mut Edits) -> std::io::Result<bool> {
        edits.edit_with(|files| {
            let (tx, rx) = mpsc::channel();
            self.link.send(Event::Edit(files.to_vec(), tx));
            rx.recv().map_err(std::io::Error::other)?
        })
    }
}

fn dim_bold() -> Style {
    crate::cells::dim().add_modifier(Modifier::BOLD)
}

/// The question's line in the live area.
pub(crate) fn question_line(question: &str, editable: bool) -> Line<'static> {
    Line::from(vec![
        Span::styled(
            "? ",
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(question.to_string()),
        Span::styled(
            if editable {
                "  [y]es / [n]o / [a]lways / [e]dit"
            } else {
                "  [y]es / [n]o / [a]lways"
            },
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ])
}

/// The answer, as it stays in the scrollback.
pub(crate) fn answered_line(question: &str, answer: char) -> Line<'static> {
    let (word, color) = match answer {
        'y' => ("yes", Color::Green),
        'a' => ("always", Color::Green),
        'e' => ("edit", Color::Cyan),
        _ => ("no", Color::Red),
    };
    Line::from(vec![
        Span::styled("? ", Style::default().fg(Color::Yellow)),
        Span::raw(question.to_string()),
        Span::raw(" "),
        Span::styled(word, Style::default().fg(color)),
    ])
}
