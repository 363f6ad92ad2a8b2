//! The answer's Markdown, rendered line by line as it streams.
//!
//! Each finished line goes to the scrollback at once, so blocks are read a
//! line at a time: headings, quotes, list items and rules from the line
//! itself, code fences with the state a line cannot hold (inside a fence,
//! its language, the block so far). A line's inline markup (bold, italic,
//! code, links) is pulldown-cmark's. An unfinished line is rendered the same
//! way without changing that state: a half-typed `**bold` shows as typed
//! until its closing `**` arrives.

use agent_base::term::escape_line;
use agent_lang::lang::Lang;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::{lang_of, Highlight};

/// Lines of a code block highlighted together: enough for the parser to
/// see its context, few enough that a long block costs no more per line.
const CODE_CONTEXT: usize = 60;

#[derive(Default)]
pub(crate) struct Markdown {
    fence: Option<Fence>,
    highlight: Highlight,
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
    /// A finished line of the answer.
    pub(crate) fn line(&mut self, text: &str) -> Line<'static> {
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

    /// The answer ended: a fence left open closes with it.
    pub(crate) fn reset(&mut self) {
        self.fence = None;
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
    let mut spans = Vec::new();
    let mut styles = vec![base];
    let mut links: Vec<String> = Vec::new();
    let mut link_text = String::new();
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        let style = *styles.last().unwrap_or(&base);
        let mut push = |s: &str, style: Style| {
            link_text.push_str(s);
            spans.push(Span::styled(escape_line(s).into_owned(), style));
        };
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => push(&t, style),
            Event::Code(t) => push(&t, style.fg(Color::Cyan)),
            Event::SoftBreak | Event::HardBreak => push(" ", style),
            Event::Start(Tag::Strong) => styles.push(style.add_modifier(Modifier::BOLD)),
            Event::Start(Tag::Emphasis) => styles.push(style.add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strikethrough) => {
                styles.push(style.add_modifier(Modifier::CROSSED_OUT))
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push(dest_url.to_string());
                link_text.clear();
                styles.push(style.fg(Color::Blue).add_modifier(Modifier::UNDERLINED));
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) => {
                styles.pop();
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                styles.pop();
                // The address after its text, unless the text is the address.
                if let Some(url) = links.pop().filter(|u| *u != link_text) {
                    spans.push(Span::styled(format!(" ({})", escape_line(&url)), dim()));
                }
            }
            _ => {}
        }
    }
    // What pulldown-cmark reads as something else (a link definition, an
    // HTML comment left open) would vanish: the text as written instead.
    if spans.is_empty() && !text.trim().is_empty() {
        spans.push(Span::styled(escape_line(text).into_owned(), base));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
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
        let h = md.line("## Plan");
        assert_eq!(text(&h), "Plan");
        assert!(span(&h, "Plan").style.add_modifier.contains(Modifier::BOLD));

        let item = md.line("  - a **bold** and `code` [docs](https://x.io)");
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

        assert_eq!(text(&md.line("3. third")), "3. third");
        assert_eq!(text(&md.line("> said *so*")), "│ said so");
        assert_eq!(text(&md.line("plain *")), "plain *");
        assert_eq!(text(&md.line("[ref]: https://x.io")), "[ref]: https://x.io");
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
        md.line("```python");
        let def = md.line("def f(): return \"x\"  # **not bold**");
        assert_eq!(text(&def), "def f(): return \"x\"  # **not bold**");
        assert_eq!(span(&def, "def").style.fg, Some(Color::Magenta));
        assert_eq!(text(&md.partial("**x")), "**x");
        md.line("```");
        let after = md.line("**bold**");
        assert_eq!(text(&after), "bold");
        // An unknown language: plain text, markup untouched.
        md.line("~~~nosuchlang");
        let code = md.line("a **b**");
        assert_eq!(text(&code), "a **b**");
        assert!(code.spans.iter().all(|s| s.style.fg.is_none()));
    }
}
