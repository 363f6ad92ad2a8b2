//! A unified diff, coloured: additions green, removals red, hunks cyan; where
//! a run of removed lines is replaced by as many added lines, each pair's
//! changed words are highlighted (`similar`'s word diff), so a one-word edit
//! in a long line is seen at once, unless the pair shares too little to be
//! an edit.

use agent_base::term::escape_line;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use similar::{utils::diff_words, Algorithm, ChangeTag};

/// Below this share of unchanged text a pair is a rewrite, not an edit:
/// highlighting nearly every word would say nothing.
const SIMILAR_ENOUGH: f32 = 0.4;

/// The diff as styled lines.
pub(crate) fn diff_lines(diff: &str) -> Vec<Line<'static>> {
    let lines: Vec<&str> = diff.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let removed = run(&lines[i..], '-');
        let added = run(&lines[i + removed..], '+');
        if removed > 0 && removed == added {
            // Removed lines first, then the added ones, as in the diff.
            let (olds, news): (Vec<_>, Vec<_>) = (0..removed)
                .map(|k| word_pair(&lines[i + k][1..], &lines[i + removed + k][1..]))
                .unzip();
            out.extend(olds);
            out.extend(news);
            i += 2 * removed;
        } else {
            out.push(plain_line(lines[i]));
            i += 1;
        }
    }
    out
}

/// How many lines from the start are changes of `sign` (file headers excluded).
fn run(lines: &[&str], sign: char) -> usize {
    let header = if sign == '-' { "--- " } else { "+++ " };
    lines
        .iter()
        .take_while(|l| l.starts_with(sign) && !l.starts_with(header))
        .count()
}

fn plain_line(text: &str) -> Line<'static> {
    let style = if text.starts_with("+++ ") || text.starts_with("--- ") {
        Style::default().add_modifier(Modifier::BOLD)
    } else if text.starts_with('+') {
        Style::default().fg(Color::Green)
    } else if text.starts_with('-') {
        Style::default().fg(Color::Red)
    } else if text.starts_with("@@") {
        Style::default().fg(Color::Cyan)
    } else {
        Style::default()
    };
    Line::styled(escape_line(text).into_owned(), style)
}

/// A removed line and the line that replaced it, their changed words reversed.
fn word_pair(old: &str, new: &str) -> (Line<'static>, Line<'static>) {
    let red = Style::default().fg(Color::Red);
    let green = Style::default().fg(Color::Green);
    let changes = diff_words(Algorithm::Patience, old, new);
    let same: usize = changes
        .iter()
        .filter(|(tag, _)| *tag == ChangeTag::Equal)
        .map(|(_, s)| s.len())
        .sum();
    let longest = old.len().max(new.len()).max(1);
    if (same as f32) / (longest as f32) < SIMILAR_ENOUGH {
        return (
            plain_line(&format!("-{old}")),
            plain_line(&format!("+{new}")),
        );
    }
    let mut old_spans = vec![Span::styled("-", red)];
    let mut new_spans = vec![Span::styled("+", green)];
    let marked = Modifier::REVERSED;
    for (tag, text) in changes {
        let text = escape_line(text).into_owned();
        match tag {
            ChangeTag::Equal => {
                old_spans.push(Span::styled(text.clone(), red));
                new_spans.push(Span::styled(text, green));
            }
            ChangeTag::Delete => old_spans.push(Span::styled(text, red.add_modifier(marked))),
            ChangeTag::Insert => new_spans.push(Span::styled(text, green.add_modifier(marked))),
        }
    }
    (Line::from(old_spans), Line::from(new_spans))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn marked(line: &Line) -> Vec<String> {
        line.spans
            .iter()
            .filter(|s| s.style.add_modifier.contains(Modifier::REVERSED))
            .map(|s| s.content.to_string())
            .collect()
    }

    #[test]
    fn a_changed_word_is_highlighted_in_both_lines() {
        let diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-total = price * count\n-keep = 1\n+total = price * amount\n+keep = 2\n ctx\n";
        let lines = diff_lines(diff);
        let texts: Vec<String> = lines.iter().map(text).collect();
        assert_eq!(
            texts,
            [
                "--- a/x.py",
                "+++ b/x.py",
                "@@ -1,2 +1,2 @@",
                "-total = price * count",
                "-keep = 1",
                "+total = price * amount",
                "+keep = 2",
                " ctx"
            ]
        );
        assert_eq!(marked(&lines[3]), ["count"]);
        assert_eq!(marked(&lines[5]), ["amount"]);
        assert_eq!(lines[5].spans[1].style.fg, Some(Color::Green));
    }

    #[test]
    fn a_rewrite_or_an_uneven_run_is_only_coloured() {
        let lines = diff_lines("-one two three\n+completely different\n-a\n-b\n+c\n");
        assert!(lines.iter().all(|l| marked(l).is_empty()));
        assert_eq!(lines[0].style.fg, Some(Color::Red));
        assert_eq!(lines.len(), 5);
    }
}
