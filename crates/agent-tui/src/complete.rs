//! The `/` completion list: the chat's built-in commands and the
//! workspace's `.agent/commands/*`, with their descriptions.

/// A command the list offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Without the `/`.
    pub name: String,
    pub description: String,
}

/// The list's rows at most.
pub const SHOWN: usize = 12;

#[derive(Default)]
pub struct Completion {
    commands: Vec<CommandInfo>,
    /// The matches of what is typed, and the one selected.
    matches: Vec<usize>,
    selected: usize,
}

impl Completion {
    pub fn new(commands: Vec<CommandInfo>) -> Self {
        Self {
            commands,
            ..Self::default()
        }
    }

    /// Follows the editor's text: a list while it is `/` and a partial name.
    pub fn update(&mut self, text: &str) {
        let typed = text
            .strip_prefix('/')
            .filter(|t| !t.contains(char::is_whitespace));
        let before = self.selected_name().map(str::to_string);
        self.matches = match typed {
            None => Vec::new(),
            Some(t) => (0..self.commands.len())
                .filter(|&i| self.commands[i].name.starts_with(t))
                .collect(),
        };
        // The selection stays on its command while it still matches.
        self.selected = self
            .matches
            .iter()
            .position(|&i| Some(self.commands[i].name.as_str()) == before.as_deref())
            .unwrap_or(0);
    }

    pub fn visible(&self) -> bool {
        !self.matches.is_empty()
    }

    pub fn hide(&mut self) {
        self.matches.clear();
    }

    pub fn move_selection(&mut self, delta: i32) {
        let n = self.matches.len();
        if n > 0 {
            self.selected = (self.selected as i64 + i64::from(delta)).rem_euclid(n as i64) as usize;
        }
    }

    fn selected_name(&self) -> Option<&str> {
        let i = *self.matches.get(self.selected)?;
        Some(&self.commands[i].name)
    }

    /// Tab: the text the editor gets, `/name ` of the selected command.
    pub fn complete(&self) -> Option<String> {
        self.selected_name().map(|n| format!("/{n} "))
    }

    /// The rows shown (a window of [`SHOWN`] around the selection), each
    /// with whether it is the selected one.
    pub fn rows(&self) -> Vec<(&CommandInfo, bool)> {
        let start = self.selected.saturating_sub(SHOWN - 1);
        self.matches
            .iter()
            .enumerate()
            .skip(start)
            .take(SHOWN)
            .map(|(k, &i)| (&self.commands[i], k == self.selected))
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
        let mut c = Completion::new(vec![info("help"), info("clear"), info("compact")]);
        c.update("/");
        assert_eq!(c.rows().len(), 3);
        c.update("/c");
        let names: Vec<_> = c.rows().iter().map(|(i, _)| i.name.clone()).collect();
        assert_eq!(names, ["clear", "compact"]);
        c.move_selection(1);
        assert_eq!(c.complete().as_deref(), Some("/compact "));
        c.update("/co");
        assert_eq!(c.complete().as_deref(), Some("/compact "));
        c.update("/compact now");
        assert!(!c.visible());
        c.update("plain text");
        assert!(!c.visible());
    }
}
