//! The model's plan (`todo`), pinned above the input while it lasts: one
//! row per item (✓ done and dimmed, ▸ in progress, · pending), at most
//! [`MAX_ROWS`] rows, the rest counted. The chat sets it again after each
//! line, so a finished plan, `/clear` and `/rewind` take it away.

use agent_base::term::escape_line;
use agent_protocol::plan::{Item, Status};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use crate::cells::dim;

/// Most rows the plan takes of the live area, its "+N more" included.
pub(crate) const MAX_ROWS: usize = 6;

/// The rows of `plan` at `width` columns; none for no plan.
pub(crate) fn lines(plan: &[Item], width: u16) -> Vec<Line<'static>> {
    if plan.is_empty() {
        return Vec::new();
    }
    let (start, shown) = window(plan);
    let mut out: Vec<Line<'static>> = plan[start..start + shown]
        .iter()
        .map(|item| row(item, width))
        .collect();
    let hidden = plan.len() - shown;
    if hidden > 0 {
        out.push(Line::styled(format!("  +{hidden} more"), dim()));
    }
    out
}

/// Which items fit: all of them, or a window that opens on the last done
/// item before the first one not done (what is next matters, what is done
/// less).
fn window(plan: &[Item]) -> (usize, usize) {
    if plan.len() <= MAX_ROWS {
        return (0, plan.len());
    }
    let shown = MAX_ROWS - 1;
    let next = plan
        .iter()
        .position(|i| i.status != Status::Done)
        .unwrap_or(plan.len());
    let start = next.saturating_sub(1).min(plan.len() - shown);
    (start, shown)
}

fn row(item: &Item, width: u16) -> Line<'static> {
    let (marker, style) = match item.status {
        Status::Done => (Style::default().fg(Color::Green), dim()),
        Status::InProgress => (
            Style::default().fg(Color::Cyan),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Status::Pending => (Style::default(), Style::default()),
    };
    let marker = if item.status == Status::Done {
        marker.add_modifier(Modifier::DIM)
    } else {
        marker
    };
    // The marker's two columns and a space either side.
    let room = usize::from(width).saturating_sub(4).max(1);
    Line::from(vec![
        Span::styled(format!("  {} ", item.status.marker()), marker),
        Span::styled(fit(&escape_line(&item.text), room), style),
    ])
}

/// `text` in at most `columns` columns, cut with "…".
fn fit(text: &str, columns: usize) -> String {
    let width = |c: char| c.width().unwrap_or(0);
    if text.chars().map(width).sum::<usize>() <= columns {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        if used + width(c) + 1 > columns {
            break;
        }
        out.push(c);
        used += width(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn plan(statuses: &[Status]) -> Vec<Item> {
        statuses
            .iter()
            .enumerate()
            .map(|(i, &status)| Item {
                text: format!("step {}", i + 1),
                status,
            })
            .collect()
    }

    #[test]
    fn each_item_is_a_row_with_its_marker_and_done_ones_are_dim() {
        use Status::*;
        let rows = lines(&plan(&[Done, InProgress, Pending]), 40);
        let texts: Vec<String> = rows.iter().map(text).collect();
        assert_eq!(texts, ["  ✓ step 1", "  ▸ step 2", "  · step 3"]);
        assert!(rows[0].spans[1].style.add_modifier.contains(Modifier::DIM));
        assert!(!rows[1].spans[1].style.add_modifier.contains(Modifier::DIM));
        assert!(lines(&[], 40).is_empty());
        let long = vec![Item {
            text: "a very long item that does not fit".into(),
            status: Pending,
        }];
        assert_eq!(text(&lines(&long, 14)[0]), "  · a very lo…");
    }

    #[test]
    fn a_long_plan_keeps_six_rows_around_what_is_next() {
        use Status::*;
        let long = plan(&[
            Done, Done, Done, InProgress, Pending, Pending, Pending, Pending,
        ]);
        let texts: Vec<String> = lines(&long, 40).iter().map(text).collect();
        assert_eq!(texts.len(), MAX_ROWS);
        assert_eq!(texts[0], "  ✓ step 3");
        assert_eq!(texts[1], "  ▸ step 4");
        assert_eq!(texts[5], "  +3 more");
        // At the end of the list, the window stops at the last item.
        let done = plan(&[Done; 8]);
        let texts: Vec<String> = lines(&done, 40).iter().map(text).collect();
        assert_eq!(texts[4], "  ✓ step 8");
    }
}
