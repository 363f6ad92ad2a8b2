//! The input editor: a multi-line text with a cursor, and how it wraps
//! into the rows of the input area.

use unicode_width::UnicodeWidthChar;

/// The prompt before the first row, and the indent of the others.
pub(crate) const PROMPT: &str = "› ";
const INDENT: &str = "  ";

/// Multi-line text with a cursor (a byte offset on a char boundary).
#[derive(Debug, Default, Clone)]
pub(crate) struct Editor {
    text: String,
    cursor: usize,
}

impl Editor {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub(crate) fn set(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
    }

    /// Empties the editor and gives back what it held.
    pub(crate) fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    pub(crate) fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Inserts a paste as it is (line breaks kept, `\r\n` and `\r` read as `\n`).
    pub(crate) fn insert_str(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
    }

    /// Enter after a trailing `\`: the backslash becomes a line break.
    /// Returns whether it did.
    pub(crate) fn continue_line(&mut self) -> bool {
        if self.cursor == self.text.len() && self.text.ends_with('\\') {
            self.text.pop();
            self.cursor -= 1;
            self.insert('\n');
            return true;
        }
        false
    }

    pub(crate) fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    pub(crate) fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub(crate) fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub(crate) fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Ctrl-U: deletes the whole input, every line of it. A chat box is
    /// one message: a line break left behind (Ctrl-J, then Ctrl-U) would
    /// make the next `/command` text for the model.
    pub(crate) fn clear(&mut self) {
        self.take();
    }

    /// Ctrl-K: deletes from the cursor to the end of the line.
    pub(crate) fn kill_to_end(&mut self) {
        let end = self.line_end();
        self.text.replace_range(self.cursor..end, "");
    }

    /// Ctrl-W: deletes the word before the cursor.
    pub(crate) fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Whether the cursor is on the first line (Up then recalls history).
    pub(crate) fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line (Down then recalls history).
    pub(crate) fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves to the line above or below (`delta` -1 or 1), keeping the column.
    pub(crate) fn vertical(&mut self, delta: i32) {
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let target = if delta < 0 {
            let start = self.line_start();
            if start == 0 {
                return;
            }
            self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1)
        } else {
            let end = self.line_end();
            if end == self.text.len() {
                return;
            }
            end + 1
        };
        let line_end = self.text[target..]
            .find('\n')
            .map_or(self.text.len(), |i| target + i);
        let mut at = target;
        for c in self.text[target..line_end].chars().take(column) {
            at += c.len_utf8();
        }
        self.cursor = at;
    }

    /// The text as rows of at most `width` columns (the prompt included),
    /// and the cursor's (row, column).
    pub(crate) fn layout(&self, width: u16) -> (Vec<String>, (u16, u16)) {
        let width = usize::from(width).max(4);
        let mut rows = Vec::new();
        let mut cursor = (0, PROMPT.chars().count());
        let mut offset = 0;
        for (i, line) in self.text.split('\n').enumerate() {
            let mut row = String::from(if i == 0 { PROMPT } else { INDENT });
            let mut col = 2;
            for (j, c) in line.char_indices() {
                let w = c.width().unwrap_or(0);
                if col + w > width {
                    rows.push(std::mem::replace(&mut row, INDENT.to_string()));
                    col = 2;
                }
                if offset + j == self.cursor {
                    cursor = (rows.len(), col);
                }
                row.push(c);
                col += w;
            }
            if offset + line.len() == self.cursor {
                cursor = (rows.len(), col);
            }
            rows.push(row);
            offset += line.len() + 1;
        }
        let (r, c) = cursor;
        (rows, (r as u16, c.min(width - 1) as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_backslash_continues_the_line() {
        let mut e = Editor::default();
        e.insert_str("first \\");
        assert!(e.continue_line());
        e.insert_str("second");
        assert_eq!(e.text(), "first \nsecond");
        assert!(!e.continue_line());
    }

    #[test]
    fn a_paste_keeps_its_lines_and_the_cursor_follows() {
        let mut e = Editor::default();
        e.insert_str("a\r\nb\rc");
        assert_eq!(e.text(), "a\nb\nc");
        assert!(!e.on_first_line() && e.on_last_line());
        e.vertical(-1);
        e.vertical(-1);
        assert!(e.on_first_line());
        e.end();
        e.insert('!');
        assert_eq!(e.text(), "a!\nb\nc");
    }

    #[test]
    fn words_and_lines_are_deleted() {
        let mut e = Editor::default();
        e.insert_str("fix the  bug");
        e.delete_word();
        assert_eq!(e.text(), "fix the  ");
        e.delete_word();
        assert_eq!(e.text(), "fix ");
        e.clear();
        assert!(e.is_empty());
    }

    #[test]
    fn ctrl_u_clears_every_line_wherever_the_cursor_is() {
        let mut e = Editor::default();
        e.insert_str("first");
        e.insert('\n');
        e.insert_str("second");
        e.vertical(-1);
        e.clear();
        assert!(e.is_empty());
        e.insert_str("/model");
        assert_eq!(e.text(), "/model");
        assert!(e.on_first_line());
    }

    #[test]
    fn long_lines_wrap_and_the_cursor_is_placed() {
        let mut e = Editor::default();
        e.insert_str("abcdefgh\nxy");
        let (rows, cursor) = e.layout(6);
        assert_eq!(rows, ["› abcd", "  efgh", "  xy"]);
        assert_eq!(cursor, (2, 4));
        e.vertical(-1);
        let (_, cursor) = e.layout(6);
        assert_eq!(cursor, (0, 4));
    }
}
