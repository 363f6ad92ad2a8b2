//! What a chat command asks between turns (`/rewind`): one item of a list
//! (Up and Down move, Enter takes it, Esc cancels), then a yes/no question
//! (`y`; anything else is no). Asked from the chat's thread, answered on
//! the UI's.

use std::sync::mpsc::{self, Sender};

use agent_base::term::escape_line;
use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::app::{Event, Link};
use crate::cells::dim;

/// Items shown at once; the list scrolls with the selection.
const SHOWN: usize = 8;

/// A list waiting for the user's choice.
pub(crate) struct Choice {
    title: String,
    items: Vec<String>,
    selected: usize,
    reply: Sender<Option<usize>>,
}

impl Choice {
    /// A key; true when it ended the choice (the answer is sent).
    pub(crate) fn key(&mut self, key: KeyCode) -> bool {
        match key {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(self.items.len() - 1),
            KeyCode::Enter => return self.answer(Some(self.selected)),
            KeyCode::Esc => return self.answer(None),
            _ => {}
        }
        false
    }

    pub(crate) fn answer(&self, choice: Option<usize>) -> bool {
        let _ = self.reply.send(choice);
        true
    }

    /// The title, then the items around the selection, numbered from 1.
    pub(crate) fn lines(&self) -> Vec<Line<'static>> {
        let first = (self.selected + 1).saturating_sub(SHOWN);
        let mut out = vec![Line::styled(
            escape_line(&self.title).into_owned(),
            Style::default().add_modifier(Modifier::BOLD),
        )];
        for (i, item) in self.items.iter().enumerate().skip(first).take(SHOWN) {
            let text = format!("{:>3}  {}", i + 1, escape_line(item));
            out.push(if i == self.selected {
                Line::from(Span::styled(
                    format!("›{text}"),
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD),
                ))
            } else {
                Line::from(Span::styled(format!(" {text}"), Style::default()))
            });
        }
        out
    }
}

/// The yes/no question's line in the live area.
pub(crate) fn confirm_line(question: &str) -> Line<'static> {
    Line::from(vec![
        Span::styled("? ", Style::default().fg(Color::Yellow)),
        Span::raw(escape_line(question).into_owned()),
        Span::styled("  [y/N]", dim()),
    ])
}

/// The chat's side: asks on the UI's thread and waits for the answer.
pub struct Chooser {
    link: Link,
}

impl Chooser {
    pub(crate) fn new(link: Link) -> Self {
        Self { link }
    }

    /// The index of the item the user takes, or None (Esc, or no items).
    pub fn choose(&self, title: &str, items: &[String]) -> Option<usize> {
        if items.is_empty() {
            return None;
        }
        let (reply, answer) = mpsc::channel();
        self.link.send(Event::Choose(Choice {
            title: title.to_string(),
            items: items.to_vec(),
            selected: items.len() - 1,
            reply,
        }));
        answer.recv().ok().flatten()
    }

    /// Whether the user answers yes (`y`).
    pub fn confirm(&self, question: &str) -> bool {
        let (reply, answer) = mpsc::channel();
        self.link.send(Event::Confirm(question.to_string(), reply));
        answer.recv().unwrap_or(false)
    }
}
