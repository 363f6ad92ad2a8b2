//! The answer's Markdown, rendered line by line as it streams.
//!
//! Each finished line goes to the scrollback at once, so blocks are read a
//! line at a time: headings, quotes, list items and rules from the line
//! itself, code fences with the state a line cannot hold (inside a fence,
//! its language, the block so far). A line's inline markup (bold, italic,
//! code, links) is pulldown-cmark's. An unfinished line is rendered the same
//! way without changing that state: a half-typed `**bold` shows as typed
//! until its closing `**` arrives.
//!
//! A table is the exception: its columns' widths need all its rows, so a
//! line with a `|` is held until the next says whether it is a table's
//! header (the delimiter row), and a table's rows until it ends; the live
//! area shows them laid out meanwhile ([`Markdown::pending`]).

use agent_base::term::escape_line;
use agent_lang::lang::Lang;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::{lang_of, Highlight};
use crate::table::{self, Table};

/// Lines of a code block highlighted together: enough for the parser to
/// see its context, few enough that a long block costs no more per line.
const CODE_CONTEXT: usize = 60;

#[derive(Default)]
pub(crate) struct Markdown {
    fence: Option<Fence>,
    highlight: Highlight,
    /// The lines of a table so far: one, a row that may be a header; more,
    /// a table (header, delimiter, rows).
    table: Vec<String>,
    /// The terminal's width, for a table's layout.
    width: u16,
}

/// An open code fence.
struct Fence {
    /// The opening run (```` ``` ````, `~~~~`): a closing line repeats it.
    marker: String,
    lang: Option<Lang>,
    /// The block's lines so far (the last [`CODE_CONTEXT`]).
    code: Vec<String>,
}

fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

impl Markdown {
    /// The terminal's width, for the tables laid out from now on.
    pub(crate) fn set_width(&mut self, width: u16) {
        self.width = width;
    }

    /// A finished line of the answer: the lines it lets go to the
    /// scrollback (none while a table may be growing, a table's at its end).
    pub(crate) fn line(&mut self, text: &str) -> Vec<Line<'static>> {
        if self.fence.is_none() {
            let table = match self.table.len() {
                0 => table::is_row(text),
                1 => table::is_delimiter(text, &self.table[0]),
                _ => table::is_row(text),
            };
            if table {
                self.table.push(text.to_string());
                return Vec::new();
            }
            if !self.table.is_empty() {
                let mut out = self.flush();
                out.extend(self.line(text));
                return out;
            }
        }
        vec![self.block(text)]
    }

    /// One line outside a table.
    fn block(&mut self, text: &str) -> Line<'static> {
        if let Some(fence) = &mut self.fence {
            if closes(&fence.marker, text) {
                self.fence = None;
                return Line::styled(escape_line(text).into_owned(), dim());
            }
            fence.code.push(text.to_string());
            if fence.code.len() > CODE_CONTEXT {
                fence.code.remove(0);
            }
            let code = fence.code.join("\n");
            let lines = self.highlight.lines(fence.lang, &code);
            return lines.into_iter().last().unwrap_or_default();
        }
        if let Some((marker, info)) = opens(text) {
            self.fence = Some(Fence {
                marker,
                lang: info.split_whitespace().next().and_then(lang_of),
                code: Vec::new(),
            });
            return Line::styled(escape_line(text).into_owned(), dim());
        }
        block_line(text)
    }

    /// The held lines laid out: a table, or a line that was not its header.
    fn layout(&self, width: u16) -> Vec<Line<'static>> {
        let table = (self.table.len() > 1)
            .then(|| Table::parse(&self.table.join("\n")))
            .flatten();
        match table {
            Some(table) => table.lines(width),
            None => self.table.iter().map(|l| block_line(l)).collect(),
        }
    }

    /// The held lines, for the scrollback.
    fn flush(&mut self) -> Vec<Line<'static>> {
        let out = self.layout(self.width);
        self.table.clear();
        out
    }

    /// What is held back (a table growing), as the live area shows it.
    pub(crate) fn pending(&self, width: u16) -> Vec<Line<'static>> {
        self.layout(width)
    }

    /// The unfinished last line, as the live area shows it.
    pub(crate) fn partial(&self, text: &str) -> Line<'static> {
        if self.fence.is_some() {
            return Line::raw(escape_line(&text.replace('\t', "    ")).into_owned());
        }
        if opens(text).is_some() {
            return Line::styled(escape_line(text).into_owned(), dim());
        }
        block_line(text)
    }

    /// The answer ended: what was held goes out, a fence left open closes.
    pub(crate) fn end(&mut self) -> Vec<Line<'static>> {
        self.fence = None;
        self.flush()
    }
}

/// A fence's opening line: its marker and info string (` ```rust `).
fn opens(text: &str) -> Option<(String, &str)> {
    let body = text.trim_start_matches(' ');
    if text.len() - body.len() > 3 {
        return None;
    }
    let c = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = body.len() - body.trim_start_matches(c).len();
    let info = &body[run..];
    // A backtick fence's info string cannot hold a backtick (that is inline code).
    (run >= 3 && !(c == '`' && info.contains('`'))).then(|| (body[..run].to_string(), info))
}

fn closes(marker: &str, text: &str) -> bool {
    let body = text.trim();
    let c = marker.chars().next().unwrap_or('`');
    body.len() >= marker.len() && body.chars().all(|x| x == c)
}

/// A line outside code: its block (heading, quote, list item, rule) and inline markup.
fn block_line(text: &str) -> Line<'static> {
    let body = text.trim_start_matches(' ');
    let indent = " ".repeat(text.len() - body.len());
    let mut spans = vec![Span::raw(indent)];
    if is_rule(body) {
        spans.push(Span::styled("─".repeat(40), dim()));
        return Line::from(spans);
    }
    let (content, style) = if let Some((level, rest)) = heading(body) {
        let style = match level {
            1 => Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            2 => Style::default().add_modifier(Modifier::BOLD),
            _ => Style::default().add_modifier(Modifier::BOLD | Modifier::ITALIC),
        };
        (rest, style)
    } else if let Some(rest) = quote(body, &mut spans) {
        (rest, Style::default().add_modifier(Modifier::ITALIC))
    } else if let Some((marker, rest)) = list_item(body) {
        spans.push(Span::styled(marker, Style::default().fg(Color::Cyan)));
        (rest, Style::default())
    } else {
        (body, Style::default())
    };
    spans.extend(inline(content, style));
    Line::from(spans)
}

/// `# Title` → (1, "Title").
fn heading(body: &str) -> Option<(usize, &str)> {
    let level = body.len() - body.trim_start_matches('#').len();
    let rest = &body[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim_end()))
}

/// `> text`: a bar per level into `spans`, and the text.
fn quote<'a>(body: &'a str, spans: &mut Vec<Span<'static>>) -> Option<&'a str> {
    let mut rest = body.strip_prefix('>')?;
    loop {
        spans.push(Span::styled("│ ", Style::default().fg(Color::DarkGray)));
        rest = rest.strip_prefix(' ').unwrap_or(rest);
        match rest.strip_prefix('>') {
            Some(deeper) => rest = deeper,
            None => return Some(rest),
        }
    }
}

/// `- item` → ("• ", "item"); `3. item` → ("3. ", "item").
fn list_item(body: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = body.strip_prefix(bullet) {
            return Some(("• ".into(), rest));
        }
    }
    let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &body[digits..];
    let rest = rest
        .strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))?;
    (1..=9)
        .contains(&digits)
        .then(|| (format!("{} ", &body[..digits + 1]), rest))
}

/// `---`, `***` or `___` (spaces allowed between).
fn is_rule(body: &str) -> bool {
    let marks: String = body.chars().filter(|c| *c != ' ').collect();
    marks.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| marks.chars().all(|c| c.to_string() == *m))
}

/// One line's inline markup as spans over `base`.
fn inline(text: &str, base: Style) -> Vec<Span<'static>> {
    let mut state = Inline::new(base);
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        state.event(event);
    }
    let spans = state.spans;
    // What pulldown-cmark reads as something else (a link definition, an
    // HTML comment left open) would vanish: the text as written instead.
    if spans.is_empty() && !text.trim().is_empty() {
        return vec![Span::styled(escape_line(text).into_owned(), base)];
    }
    spans
}

/// Inline markup (bold, italic, code, links) turned into spans, an event at a time.
pub(crate) struct Inline {
    pub spans: Vec<Span<'static>>,
    base: Style,
    styles: Vec<Style>,
    links: Vec<String>,
    link_text: String,
}

impl Inline {
    pub(crate) fn new(base: Style) -> Self {
        Self {
            spans: Vec::new(),
            base,
            styles: vec![base],
            links: Vec::new(),
            link_text: String::new(),
        }
    }

    pub(crate) fn event(&mut self, event: Event<'_>) {
        let style = *self.styles.last().unwrap_or(&self.base);
        let mut push = |s: &str, style: Style| {
            self.link_text.push_str(s);
            self.spans
                .push(Span::styled(escape_line(s).into_owned(), style));
        };
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => push(&t, style),
            Event::Code(t) => push(&t, style.fg(Color::Cyan)),
            Event::SoftBreak | Event::HardBreak => push(" ", style),
            Event::Start(Tag::Strong) => self.styles.push(style.add_modifier(Modifier::BOLD)),
            Event::Start(Tag::Emphasis) => self.styles.push(style.add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strikethrough) => {
                self.styles.push(style.add_modifier(Modifier::CROSSED_OUT))
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                self.links.push(dest_url.to_string());
                self.link_text.clear();
                self.styles
                    .push(style.fg(Color::Blue).add_modifier(Modifier::UNDERLINED));
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) => {
                self.styles.pop();
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                self.styles.pop();
                // The address after its text, unless the text is the address.
                if let Some(url) = self.links.pop().filter(|u| *u != self.link_text) {
                    self.spans
                        .push(Span::styled(format!(" ({})", escape_line(&url)), dim()));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    /// A line that goes out at once.
    fn one(md: &mut Markdown, text: &str) -> Line<'static> {
        let mut lines = md.line(text);
        assert_eq!(lines.len(), 1, "{text:?}: {lines:?}");
        lines.remove(0)
    }

    fn span<'a>(line: &'a Line<'static>, content: &str) -> &'a Span<'static> {
        line.spans
            .iter()
            .find(|s| s.content == content)
            .unwrap_or_else(|| panic!("no {content:?} in {line:?}"))
    }

    #[test]
    fn headings_lists_quotes_and_inline_markup() {
        let mut md = Markdown::default();
        let h = one(&mut md, "## Plan");
        assert_eq!(text(&h), "Plan");
        assert!(span(&h, "Plan").style.add_modifier.contains(Modifier::BOLD));

        let item = one(&mut md, "  - a **bold** and `code` [docs](https://x.io)");
        assert_eq!(text(&item), "  • a bold and code docs (https://x.io)");
        assert!(span(&item, "bold")
            .style
            .add_modifier
            .contains(Modifier::BOLD));
        assert_eq!(span(&item, "code").style.fg, Some(Color::Cyan));
        assert!(span(&item, "docs")
            .style
            .add_modifier
            .contains(Modifier::UNDERLINED));

        assert_eq!(text(&one(&mut md, "3. third")), "3. third");
        assert_eq!(text(&one(&mut md, "> said *so*")), "│ said so");
        assert_eq!(text(&one(&mut md, "plain *")), "plain *");
        assert_eq!(
            text(&one(&mut md, "[ref]: https://x.io")),
            "[ref]: https://x.io"
        );
    }

    #[test]
    fn a_half_written_line_shows_as_typed() {
        let md = Markdown::default();
        assert_eq!(text(&md.partial("a **bol")), "a **bol");
        assert_eq!(text(&md.partial("``")), "``");
        assert_eq!(text(&md.partial("```py")), "```py");
    }

    #[test]
    fn a_fenced_block_is_highlighted_until_it_closes() {
        let mut md = Markdown::default();
        one(&mut md, "```python");
        let def = one(&mut md, "def f(): return \"x\"  # **not bold**");
        assert_eq!(text(&def), "def f(): return \"x\"  # **not bold**");
        assert_eq!(span(&def, "def").style.fg, Some(Color::Magenta));
        assert_eq!(text(&md.partial("**x")), "**x");
        one(&mut md, "```");
        let after = one(&mut md, "**bold**");
        assert_eq!(text(&after), "bold");
        // An unknown language: plain text, markup untouched.
        one(&mut md, "~~~nosuchlang");
        let code = one(&mut md, "a **b**");
        assert_eq!(text(&code), "a **b**");
        assert!(code.spans.iter().all(|s| s.style.fg.is_none()));
    }

    #[test]
    fn a_table_is_held_until_it_ends_then_laid_out() {
        let mut md = Markdown::default();
        md.set_width(80);
        assert!(md.line("| tool | use |").is_empty());
        assert_eq!(md.pending(80).len(), 1, "the row shows while held");
        assert!(md.line("|---|--:|").is_empty());
        assert!(md.line("| grep | 12 |").is_empty());
        let shown: Vec<String> = md.pending(80).iter().map(text).collect();
        assert_eq!(shown[0].trim_end(), "tool │ use");
        let out: Vec<String> = md
            .line("after")
            .iter()
            .map(|l| text(l).trim_end().to_string())
            .collect();
        assert_eq!(out, ["tool │ use", "─────┼────", "grep │  12", "after"]);
        assert!(md.pending(80).is_empty());

        // A line with a pipe but no delimiter under it is text after all.
        assert!(md.line("use a | b").is_empty());
        let out: Vec<String> = md.line("or c").iter().map(text).collect();
        assert_eq!(out, ["use a | b", "or c"]);

        // The answer ends inside a table: it goes out then.
        md.line("a | b");
        md.line("- | -");
        md.line("1 | 2");
        let out: Vec<String> = md
            .end()
            .iter()
            .map(|l| text(l).trim_end().to_string())
            .collect();
        assert_eq!(out, ["a │ b", "──┼──", "1 │ 2"]);

        // In a code block, pipes are code.
        one(&mut md, "```sh");
        assert_eq!(text(&one(&mut md, "ls | wc -l")), "ls | wc -l");
    }
}
