//! Reasoning and tool output folded to their first lines. What is in the
//! scrollback cannot change, so "expand" (Ctrl+T) prints the last folded
//! cell again in full and keeps the cells after it whole until pressed again
//! (`-v` starts expanded). Reasoning is held until it ends, its latest line
//! live meanwhile.

use ratatui::text::Line;

use crate::cells::{dim, styled};

/// The key that expands and folds, as the hints and `/help` name it.
pub(crate) const KEY: &str = "Ctrl-T";

/// Lines of reasoning shown while folded.
pub(crate) const REASONING_LINES: usize = 2;

#[derive(Default)]
pub(crate) struct Fold {
    /// Cells go to the scrollback whole.
    pub expanded: bool,
    /// The whole of the last cell shown folded, for Ctrl+T.
    last: Option<Vec<Line<'static>>>,
}

impl Fold {
    pub(crate) fn new(expanded: bool) -> Self {
        Self {
            expanded,
            last: None,
        }
    }

    /// What of a cell goes to the scrollback: `full` when expanded or when
    /// `short` leaves nothing out, else `short` (and `full` is kept).
    pub(crate) fn show(
        &mut self,
        full: Vec<Line<'static>>,
        short: Vec<Line<'static>>,
    ) -> Vec<Line<'static>> {
        if self.expanded || short.len() >= full.len() {
            return full;
        }
        self.last = Some(full);
        short
    }

    /// Ctrl+T: expands (with the last folded cell, to print whole) or folds again.
    pub(crate) fn toggle(&mut self) -> Option<Vec<Line<'static>>> {
        self.expanded = !self.expanded;
        if self.expanded {
            self.last.take()
        } else {
            None
        }
    }
}

/// Reasoning as a cell: dimmed, whole and folded to its first lines.
pub(crate) fn reasoning(text: &str) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let full: Vec<Line<'static>> = text
        .trim()
        .lines()
        .map(|l| styled(&l.replace('\t', "    "), dim()))
        .collect();
    let mut short: Vec<Line<'static>> = full.iter().take(REASONING_LINES).cloned().collect();
    if full.len() > REASONING_LINES {
        short.push(more(full.len() - REASONING_LINES, "  … "));
    }
    (full, short)
}

/// The line that stands for what is folded: `… 12 more lines · Ctrl-T shows them`.
pub(crate) fn more(lines: usize, lead: &str) -> Line<'static> {
    styled(
        &format!("{lead}{lines} more lines · {KEY} shows them"),
        dim(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn reasoning_folds_to_its_first_lines_and_ctrl_t_gives_it_whole() {
        let mut fold = Fold::new(false);
        let (full, short) = reasoning("one\ntwo\nthree\nfour\n");
        let shown = fold.show(full, short);
        let texts: Vec<String> = shown.iter().map(text).collect();
        assert_eq!(
            texts,
            ["one", "two", "  … 2 more lines · Ctrl-T shows them"]
        );
        let whole = fold.toggle().expect("the folded cell");
        assert_eq!(whole.len(), 4);
        // Expanded: the next cell goes whole; a second Ctrl+T folds again.
        let (full, short) = reasoning("a\nb\nc\n");
        assert_eq!(fold.show(full, short).len(), 3);
        assert!(fold.toggle().is_none());
        let (full, short) = reasoning("short\n");
        assert_eq!(fold.show(full, short).len(), 1);
    }
}
