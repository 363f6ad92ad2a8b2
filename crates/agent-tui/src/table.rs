//! Markdown tables (pulldown-cmark's tables option) laid out as aligned
//! columns: each column as wide as its widest cell, aligned as the
//! delimiter row says, the header bold over a rule. A table wider than the
//! terminal has its widest columns narrowed, their cells wrapped.

use pulldown_cmark::{Alignment, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use unicode_width::UnicodeWidthChar;

use crate::cells::dim;
use crate::markdown::Inline;

/// Between two columns.
const GAP: &str = " │ ";
/// A column is not narrowed below this.
const MIN_COLUMN: usize = 3;

type Cell = Vec<Span<'static>>;

/// A parsed table: its columns' alignments and its rows, the header first.
pub(crate) struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Cell>>,
}

/// Whether `text` may be a table's row: it has a `|`.
pub(crate) fn is_row(text: &str) -> bool {
    text.contains('|') && !text.trim().is_empty()
}

/// The cells of a row as written, for counting: outer pipes dropped.
fn split(text: &str) -> Vec<&str> {
    let t = text.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(str::trim).collect()
}

/// Whether `text` is the delimiter row (`| --- | :-: |`) under `header`.
pub(crate) fn is_delimiter(text: &str, header: &str) -> bool {
    let cells = split(text);
    let dashes = |c: &str| {
        let c = c.strip_prefix(':').unwrap_or(c);
        let c = c.strip_suffix(':').unwrap_or(c);
        !c.is_empty() && c.chars().all(|x| x == '-')
    };
    text.contains('-') && cells.iter().all(|c| dashes(c)) && cells.len() == split(header).len()
}

impl Table {
    /// The table in `markdown`; None when pulldown-cmark reads none there.
    pub(crate) fn parse(markdown: &str) -> Option<Self> {
        let mut aligns = None;
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        let mut cell: Option<Inline> = None;
        let mut head = false;
        let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
        for event in Parser::new_ext(markdown, options) {
            match event {
                Event::Start(Tag::Table(a)) => aligns = Some(a),
                Event::Start(Tag::TableHead) => {
                    head = true;
                    rows.push(Vec::new());
                }
                Event::End(TagEnd::TableHead) => head = false,
                Event::Start(Tag::TableRow) => rows.push(Vec::new()),
                Event::Start(Tag::TableCell) => {
                    let base = if head {
                        Style::default().add_modifier(Modifier::BOLD)
                    } else {
                        Style::default()
                    };
                    cell = Some(Inline::new(base));
                }
                Event::End(TagEnd::TableCell) => {
                    if let (Some(done), Some(row)) = (cell.take(), rows.last_mut()) {
                        row.push(done.spans);
                    }
                }
                event => {
                    if let Some(cell) = cell.as_mut() {
                        cell.event(event);
                    }
                }
            }
        }
        Some(Self {
            aligns: aligns?,
            rows,
        })
    }

    /// The table's lines within `width` columns.
    pub(crate) fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let n = self.aligns.len();
        if n == 0 {
            return Vec::new();
        }
        let natural: Vec<usize> = (0..n)
            .map(|c| {
                let widest = self.rows.iter().filter_map(|r| r.get(c)).map(cell_width);
                widest.max().unwrap_or(0).max(1)
            })
            .collect();
        let room = usize::from(width).saturating_sub(GAP.width() * (n - 1));
        let widths = fit(&natural, room);
        let mut out = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            out.extend(self.row_lines(row, &widths));
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push(Line::styled(rule.join("─┼─"), dim()));
            }
        }
        out
    }

    /// One row: each cell wrapped to its column, padded as the column aligns.
    fn row_lines(&self, row: &[Cell], widths: &[usize]) -> Vec<Line<'static>> {
        let wrapped: Vec<Vec<Line<'static>>> = widths
            .iter()
            .enumerate()
            .map(|(c, w)| {
                let cell = row.get(c).map_or(&[][..], Vec::as_slice);
                wrap_words(cell, *w)
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|k| {
                let mut spans = Vec::new();
                for (c, w) in widths.iter().enumerate() {
                    if c > 0 {
                        spans.push(Span::styled(GAP, dim()));
                    }
                    let piece = wrapped[c].get(k).map(|l| l.spans.clone());
                    let piece = piece.unwrap_or_default();
                    let used = cell_width(&piece);
                    let (left, right) = pad(self.aligns[c], w.saturating_sub(used));
                    spans.push(Span::raw(" ".repeat(left)));
                    spans.extend(piece);
                    spans.push(Span::raw(" ".repeat(right)));
                }
                Line::from(spans)
            })
            .collect()
    }
}

/// A cell cut into rows of at most `width` columns, at a space where the
/// row has one, styles kept.
fn wrap_words(cell: &[Span<'static>], width: usize) -> Vec<Line<'static>> {
    let chars: Vec<(char, Style)> = cell
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();
    let mut rows: Vec<&[(char, Style)]> = Vec::new();
    let mut rest = &chars[..];
    while !rest.is_empty() {
        let (mut end, mut used) = (0, 0);
        while end < rest.len() && used + rest[end].0.width().unwrap_or(0) <= width.max(1) {
            used += rest[end].0.width().unwrap_or(0);
            end += 1;
        }
        end = end.max(1);
        if end < rest.len() {
            // Back to the last space of the row, if the row has one.
            if let Some(space) = rest[..end].iter().rposition(|(c, _)| *c == ' ') {
                end = space.max(1);
            }
        }
        rows.push(&rest[..end]);
        rest = &rest[end..];
        while rest.first().is_some_and(|(c, _)| *c == ' ') {
            rest = &rest[1..];
        }
    }
    if rows.is_empty() {
        return vec![Line::default()];
    }
    rows.into_iter().map(styled_row).collect()
}

/// Characters and their styles as spans, a span per run of one style.
fn styled_row(row: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    for (c, style) in row {
        match spans.last_mut() {
            Some(last) if last.style == *style => last.content.to_mut().push(*c),
            _ => spans.push(Span::styled(c.to_string(), *style)),
        }
    }
    Line::from(spans)
}

fn cell_width(cell: &Cell) -> usize {
    cell.iter().map(|s| s.content.width()).sum()
}

/// The spaces left and right of a cell `spare` columns narrower than its column.
fn pad(align: Alignment, spare: usize) -> (usize, usize) {
    match align {
        Alignment::Right => (spare, 0),
        Alignment::Center => (spare / 2, spare - spare / 2),
        Alignment::Left | Alignment::None => (0, spare),
    }
}

/// Columns' widths within `room`: as wide as their content if all fit,
/// else the widest capped to the largest width that fits (not below
/// [`MIN_COLUMN`]; then the terminal wraps the rows).
fn fit(natural: &[usize], room: usize) -> Vec<usize> {
    let total = |cap: usize| natural.iter().map(|w| (*w).min(cap)).sum::<usize>();
    let mut cap = natural.iter().copied().max().unwrap_or(0);
    while cap > MIN_COLUMN && total(cap) > room {
        cap -= 1;
    }
    natural.iter().map(|w| (*w).min(cap)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let t: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                t.trim_end().to_string()
            })
            .collect()
    }

    const TABLE: &str = "| name | size | kind |\n|:-----|-----:|:----:|\n| **a.rs** | 12 | file |\n| src | 3400 | dir |";

    #[test]
    fn columns_are_as_wide_as_their_cells_and_aligned() {
        let table = Table::parse(TABLE).unwrap();
        let lines = table.lines(80);
        assert_eq!(
            texts(&lines),
            [
                "name │ size │ kind",
                "─────┼──────┼─────",
                "a.rs │   12 │ file",
                "src  │ 3400 │ dir",
            ]
        );
        let bold = |l: &Line, s: &str| {
            l.spans
                .iter()
                .find(|x| x.content == s)
                .unwrap()
                .style
                .add_modifier
                .contains(Modifier::BOLD)
        };
        assert!(bold(&lines[0], "name"), "the header is bold");
        assert!(bold(&lines[2], "a.rs"), "inline markup is kept");
        assert!(!bold(&lines[3], "src"));
    }

    #[test]
    fn a_table_wider_than_the_terminal_wraps_its_widest_column() {
        let md =
            "| key | what it does |\n|---|---|\n| y | approves this change and writes it now |";
        let lines = Table::parse(md).unwrap().lines(24);
        let rows = texts(&lines);
        assert!(rows.iter().all(|t| t.width() <= 24), "{rows:#?}");
        assert_eq!(rows[0], "key │ what it does");
        assert_eq!(rows[1], "────┼───────────────────");
        // Cut at spaces: the widest column narrowed to what is left.
        assert_eq!(rows[2], "y   │ approves this");
        assert_eq!(rows[3], "    │ change and writes");
        assert_eq!(rows[4], "    │ it now");
        assert_eq!(rows.len(), 5);
        // A word longer than its column is cut where it must be.
        let md = "| a | b |\n|---|---|\n| x | abcdefghijklmnopqrstuvwxyz |";
        let long = texts(&Table::parse(md).unwrap().lines(14));
        assert_eq!(long[2], "x │ abcdefghij");
        assert_eq!(long[3], "  │ klmnopqrst");
    }

    #[test]
    fn missing_cells_are_empty_and_a_delimiter_row_is_recognised() {
        let lines = Table::parse("a | b\n--|--\n1").unwrap().lines(40);
        assert_eq!(texts(&lines), ["a │ b", "──┼──", "1 │"]);
        assert!(is_delimiter("|:--|--:|", "| a | b |"));
        assert!(!is_delimiter("|---|", "| a | b |"));
        assert!(!is_delimiter("a | b", "a | b"));
        assert!(Table::parse("a | b\nc | d").is_none());
    }
}
