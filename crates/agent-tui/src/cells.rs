//! Finished cells: the lines that go into the terminal's scrollback (a
//! request, a tool call and its result, a diff, a notice, a chat command's
//! report), and how a line wraps to the terminal's width.

use std::time::Duration;

use agent_base::term::{escape_controls, escape_line};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Lines of a tool's result shown under its call.
pub(crate) const RESULT_LINES: usize = 4;

/// Lines of a tool's result shown when expanded: a whole file read would
/// bury the session.
pub(crate) const FULL_LINES: usize = 400;

pub(crate) fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

/// One line in one style; control characters escaped.
pub(crate) fn styled(text: &str, style: Style) -> Line<'static> {
    Line::from(Span::styled(escape_line(text).into_owned(), style))
}

/// The request as it was sent, under a `›`.
pub(crate) fn request(text: &str) -> Vec<Line<'static>> {
    let mut out = vec![Line::default()];
    for (i, line) in text.lines().enumerate() {
        let lead = if i == 0 { "› " } else { "  " };
        out.push(Line::from(vec![
            Span::styled(lead, dim().add_modifier(Modifier::BOLD)),
            Span::styled(
                escape_line(line).into_owned(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ]));
    }
    out
}

/// The header of a tool call: `● tool summary`, and how it ended.
pub(crate) fn tool_header(
    tool: &str,
    summary: &str,
    end: Option<(bool, Duration)>,
) -> Line<'static> {
    let mut spans = vec![
        Span::styled("● ", Style::default().fg(Color::Cyan)),
        Span::styled(
            escape_line(tool).into_owned(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(" "),
        Span::styled(escape_line(summary).into_owned(), dim()),
    ];
    if let Some((ok, took)) = end {
        let (mark, color) = if ok {
            ("✓", Color::Green)
        } else {
            ("✗", Color::Red)
        };
        spans.push(Span::raw("  "));
        spans.push(Span::styled(mark, Style::default().fg(color)));
        spans.push(Span::styled(format!(" {:.1}s", took.as_secs_f64()), dim()));
    }
    Line::from(spans)
}

/// A finished tool call: its header, the diff it made (when shown), and
/// its result: whole (up to [`FULL_LINES`]) and folded to its first lines.
pub(crate) fn tool_done(
    tool: &str,
    summary: &str,
    ok: bool,
    took: Duration,
    content: &str,
    diff: Option<&str>,
) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let mut head = vec![tool_header(tool, summary, Some((ok, took)))];
    if let Some(diff) = diff {
        head.extend(crate::diff::diff_lines(diff));
    }
    let lines: Vec<&str> = content.lines().collect();
    let style = if ok {
        dim()
    } else {
        Style::default().fg(Color::Red)
    };
    let cell = |limit: usize| {
        let mut out = head.clone();
        for line in lines.iter().take(limit) {
            out.push(Line::from(vec![
                Span::styled("  │ ", dim()),
                Span::styled(escape_line(line).into_owned(), style),
            ]));
        }
        if lines.len() > limit {
            out.push(crate::fold::more(lines.len() - limit, "  │ … "));
        }
        out
    };
    (cell(FULL_LINES), cell(RESULT_LINES))
}

/// An exploration's cell (`explore`): its call's cell (`tool_done`'s
/// whole one, the report) with its steps under the header, whole and
/// folded to one line that counts them.
pub(crate) fn explored(
    call: Vec<Line<'static>>,
    steps: &[String],
) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let mut call = call.into_iter();
    let head: Vec<Line<'static>> = call.next().into_iter().collect();
    let report: Vec<Line<'static>> = call.collect();
    let mut full = head.clone();
    full.extend(steps.iter().map(|s| styled(&format!("  ┆ {s}"), dim())));
    full.extend(report.iter().cloned());
    let mut short = head;
    short.push(crate::fold::more(steps.len(), "  ┆ exploration: "));
    short.extend(report);
    (full, short)
}

/// Text that carries SGR colour sequences (what a chat command printed on
/// stderr) as styled lines; every other control character is escaped.
pub(crate) fn from_ansi(text: &str) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut style = Style::default();
    for raw in text.trim_end_matches('\n').split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let mut spans = Vec::new();
        let mut rest = raw;
        while let Some(at) = rest.find("\x1b[") {
            let (before, after) = rest.split_at(at);
            if !before.is_empty() {
                spans.push(Span::styled(escape_controls(before).into_owned(), style));
            }
            let body = &after[2..];
            let Some(end) = body.find(|c: char| !(c.is_ascii_digit() || c == ';')) else {
                rest = "";
                break;
            };
            if body[end..].starts_with('m') {
                style = sgr(style, &body[..end]);
            }
            rest = &body[end + 1..];
        }
        if !rest.is_empty() {
            spans.push(Span::styled(escape_controls(rest).into_owned(), style));
        }
        out.push(Line::from(spans));
    }
    out
}

/// A style after the SGR parameters `params` (`1;32`).
fn sgr(mut style: Style, params: &str) -> Style {
    const COLORS: [Color; 8] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
    ];
    for p in params.split(';') {
        match p.parse::<u8>().unwrap_or(0) {
            0 => style = Style::default(),
            1 => style = style.add_modifier(Modifier::BOLD),
            2 => style = style.add_modifier(Modifier::DIM),
            3 => style = style.add_modifier(Modifier::ITALIC),
            4 => style = style.add_modifier(Modifier::UNDERLINED),
            7 => style = style.add_modifier(Modifier::REVERSED),
            22 => style = style.remove_modifier(Modifier::BOLD | Modifier::DIM),
            n @ 30..=37 => style = style.fg(COLORS[usize::from(n - 30)]),
            39 => style = style.fg(Color::Reset),
            n @ 90..=97 => style = style.fg(COLORS[usize::from(n - 90)]),
            _ => {}
        }
    }
    style
}

/// `line` cut into rows of at most `width` columns, styles kept.
pub(crate) fn wrap(line: &Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width).max(1);
    let mut rows = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut col = 0;
    for span in &line.spans {
        let mut piece = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if col + w > width {
                if !piece.is_empty() {
                    row.push(Span::styled(std::mem::take(&mut piece), span.style));
                }
                rows.push(Line::from(std::mem::take(&mut row)));
                col = 0;
            }
            piece.push(c);
            col += w;
        }
        if !piece.is_empty() {
            row.push(Span::styled(piece, span.style));
        }
    }
    rows.push(Line::from(row));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn colours_become_styles_and_other_controls_are_escaped() {
        let lines = from_ansi("\x1b[32m+ added\x1b[0m\nplain \x1b]0;title\x07\n");
        assert_eq!(lines.len(), 2);
        assert_eq!(text(&lines[0]), "+ added");
        assert_eq!(lines[0].spans[0].style.fg, Some(Color::Green));
        assert!(!text(&lines[1]).contains('\x1b'), "{:?}", text(&lines[1]));
    }

    #[test]
    fn a_long_line_wraps_with_its_styles() {
        let line = Line::from(vec![Span::raw("abc"), Span::styled("defg", dim())]);
        let rows = wrap(&line, 3);
        let texts: Vec<_> = rows.iter().map(text).collect();
        assert_eq!(texts, ["abc", "def", "g"]);
        assert_eq!(rows[2].spans[0].style, dim());
    }

    #[test]
    fn a_tool_cell_says_how_it_ended_and_cuts_its_result() {
        let content = "1\n2\n3\n4\n5\n6";
        let (full, cell) = tool_done(
            "grep",
            "def add",
            true,
            Duration::from_millis(1500),
            content,
            None,
        );
        assert_eq!(full.len(), 1 + 6);
        assert!(
            text(&cell[0]).contains("grep def add  ✓ 1.5s"),
            "{}",
            text(&cell[0])
        );
        assert_eq!(cell.len(), 1 + RESULT_LINES + 1);
        assert!(text(&cell[5]).contains("2 more lines · Ctrl-T"));
    }
}
