//! What a session says to the user besides the loop's events, and what it asks.

/// Something a session says to the user, as the front end shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Said as it is.
    Plain(String),
    /// Said quietly (dim): what was attached, what a command sends.
    Quiet(String),
    /// `note: …`
    Note(String),
    /// `warning: …`
    Warning(String),
    /// `! …`: something waits, or was left out.
    Alert(String),
    /// `✗ …`: what was asked did not happen.
    Failed(String),
    /// `error: …`
    Error(String),
    /// A unified diff, coloured by the front end.
    Diff(String),
}

impl Notice {
    /// The text without its kind.
    pub fn text(&self) -> &str {
        match self {
            Notice::Plain(t)
            | Notice::Quiet(t)
            | Notice::Note(t)
            | Notice::Warning(t)
            | Notice::Alert(t)
            | Notice::Failed(t)
            | Notice::Error(t)
            | Notice::Diff(t) => t,
        }
    }

    /// The word or sign the text follows (`note:`, `!`, `✗` …), the same on
    /// every front end; None for plain, quiet and diff notices.
    pub fn mark(&self) -> Option<&'static str> {
        match self {
            Notice::Note(_) => Some("note:"),
            Notice::Warning(_) => Some("warning:"),
            Notice::Alert(_) => Some("!"),
            Notice::Failed(_) => Some("✗"),
            Notice::Error(_) => Some("error:"),
            Notice::Plain(_) | Notice::Quiet(_) | Notice::Diff(_) => None,
        }
    }
}

/// Where a session's notices go.
pub type Say<'a> = &'a mut dyn FnMut(Notice);

/// How a session asks the user something: lines on a terminal, the
/// terminal UI's list and question.
pub trait Ask {
    /// The index of the item the user takes, or None.
    fn choose(&mut self, title: &str, items: &[String]) -> Option<usize>;
    /// Whether the user answers yes.
    fn confirm(&mut self, question: &str) -> bool;
}

/// Nobody to ask: nothing is chosen, nothing confirmed (an editor in the
/// middle of a turn; tests). A command that would ask says how to do
/// without (`/rewind N`).
pub struct NoAnswers;

impl Ask for NoAnswers {
    fn choose(&mut self, _: &str, _: &[String]) -> Option<usize> {
        None
    }
    fn confirm(&mut self, _: &str) -> bool {
        false
    }
}

/// A chat command as `/` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    /// What it does, after what it takes (`[focus] replace the …`).
    pub description: String,
    /// What it takes (`[focus]`), for an editor's input hint.
    pub hint: Option<String>,
}
