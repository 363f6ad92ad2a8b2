//! The completion list: `/` lists the chat's built-in commands and the
//! workspace's `.agent/commands/*` with their descriptions; `@` the
//! workspace's files ([`crate::files`]).

use std::path::PathBuf;

use crate::files::{at_word, Files};

/// A command the list offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Without the `/`.
    pub name: String,
    pub description: String,
}

/// A row of the list: what it shows, and the editor's text Tab makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub label: String,
    pub description: String,
    text: String,
}

/// The list's rows at most.
pub(crate) const SHOWN: usize = 12;

pub(crate) struct Completion {
    commands: Vec<CommandInfo>,
    files: Files,
    /// The rows matching what is typed, and the one selected.
    matches: Vec<Item>,
    selected: usize,
}

impl Completion {
    /// `workspace`: where `@` finds files (None: `@` lists nothing).
    pub(crate) fn new(commands: Vec<CommandInfo>, workspace: Option<PathBuf>) -> Self {
        Self {
            commands,
            files: Files::new(workspace),
            matches: Vec::new(),
            selected: 0,
        }
    }

    /// Follows the editor's text: a list while it is `/` and a partial
    /// name, or ends in `@` and a partial path.
    pub(crate) fn update(&mut self, text: &str) {
        let before = self.matches.get(self.selected).map(|i| i.label.clone());
        self.matches = match text.strip_prefix('/') {
            Some(typed) if !typed.contains(char::is_whitespace) => self.command_items(typed),
            _ => match at_word(text) {
                Some(query) => self.file_items(text, query),
                None => Vec::new(),
            },
        };
        // The selection stays on its row while it still matches.
        self.selected = self
            .matches
            .iter()
            .position(|i| Some(&i.label) == before.as_ref())
            .unwrap_or(0);
    }

    fn command_items(&self, typed: &str) -> Vec<Item> {
        self.commands
            .iter()
            .filter(|c| c.name.starts_with(typed))
            .map(|c| Item {
                label: format!("/{}", c.name),
                description: c.description.clone(),
                text: format!("/{} ", c.name),
            })
            .collect()
    }

    /// The files matching `query`, the `@` word at the end of `text`.
    fn file_items(&mut self, text: &str, query: &str) -> Vec<Item> {
        let head = &text[..text.len() - query.len() - 1];
        self.files
            .matches(query)
            .into_iter()
            .map(|path| Item {
                label: format!("@{path}"),
                description: String::new(),
                text: format!("{head}@{path} "),
            })
            .collect()
    }

    pub(crate) fn visible(&self) -> bool {
        !self.matches.is_empty()
    }

    pub(crate) fn hide(&mut self) {
        self.matches.clear();
    }

    pub(crate) fn move_selection(&mut self, delta: i32) {
        let n = self.matches.len();
        if n > 0 {
            self.selected = (self.selected as i64 + i64::from(delta)).rem_euclid(n as i64) as usize;
        }
    }

    /// Tab: the editor's text with the selected row filled in.
    pub(crate) fn complete(&self) -> Option<String> {
        self.matches.get(self.selected).map(|i| i.text.clone())
    }

    /// The rows shown (a window of [`SHOWN`] around the selection), each
    /// with whether it is the selected one.
    pub(crate) fn rows(&self) -> Vec<(&Item, bool)> {
        let start = self.selected.saturating_sub(SHOWN - 1);
        self.matches
            .iter()
            .enumerate()
            .skip(start)
            .take(SHOWN)
            .map(|(k, item)| (item, k == self.selected))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> CommandInfo {
        CommandInfo {
            name: name.into(),
            description: format!("about {name}"),
        }
    }

    #[test]
    fn the_list_follows_the_typed_prefix_and_tab_completes() {
        let mut c = Completion::new(vec![info("help"), info("clear"), info("compact")], None);
        c.update("/");
        assert_eq!(c.rows().len(), 3);
        c.update("/c");
        let names: Vec<_> = c.rows().iter().map(|(i, _)| i.label.clone()).collect();
        assert_eq!(names, ["/clear", "/compact"]);
        c.move_selection(1);
        assert_eq!(c.complete().as_deref(), Some("/compact "));
        c.update("/co");
        assert_eq!(c.complete().as_deref(), Some("/compact "));
        c.update("/compact now");
        assert!(!c.visible());
        c.update("plain text");
        assert!(!c.visible());
    }

    #[test]
    fn an_at_word_lists_files_and_tab_keeps_the_text_before_it() {
        let dir = std::env::temp_dir().join(format!("agent-tui-complete-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/calc.py"), "x = 1\n").unwrap();
        let mut c = Completion::new(Vec::new(), Some(dir.clone()));
        c.update("look at @calc");
        assert_eq!(c.rows()[0].0.label, "@src/calc.py");
        assert_eq!(c.complete().as_deref(), Some("look at @src/calc.py "));
        c.update("look at @src/calc.py now");
        assert!(!c.visible());
        let _ = std::fs::remove_dir_all(dir);
    }
}
