//! The status line under the input: model, context used of the window,
//! tokens generated, permission mode; and what the keys do now.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// What the chat loop knows between turns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub model: String,
    /// Tokens the conversation takes, and the model's window.
    pub context_used: usize,
    pub context_window: usize,
    /// Tokens generated in this chat, before the current turn.
    pub generated: usize,
    /// `confirm`, `human` or `yolo`.
    pub mode: String,
    /// Background commands running (`/jobs` lists them).
    pub jobs: usize,
}

use agent_base::tokens::thousands;

/// The model's file name without its folder.
fn short_model(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// The line: `model · ctx 1,234/8,192 (15%) · 56 tokens · mode confirm`,
/// the step's `progress` (prefill, speed) before the tokens, then `hint`
/// (what Esc, Enter, Ctrl-C do now).
pub(crate) fn line(
    status: &Status,
    live_tokens: usize,
    progress: Option<&str>,
    hint: &str,
) -> Line<'static> {
    let dim = Style::default().add_modifier(Modifier::DIM);
    let percent = status.context_used * 100 / status.context_window.max(1);
    let ctx_style = if percent >= 80 {
        Style::default().fg(Color::Yellow)
    } else {
        dim
    };
    let mode_style = match status.mode.as_str() {
        "yolo" => Style::default().fg(Color::Red),
        "plan" => Style::default().fg(Color::Magenta),
        _ => Style::default().fg(Color::Cyan),
    };
    let mut spans = vec![
        Span::styled(short_model(&status.model).to_string(), dim),
        Span::styled(" · ", dim),
        Span::styled(
            format!(
                "ctx {}/{} ({percent}%)",
                thousands(status.context_used),
                thousands(status.context_window)
            ),
            ctx_style,
        ),
        Span::styled(" · ", dim),
    ];
    if let Some(progress) = progress {
        spans.push(Span::styled(
            progress.to_string(),
            Style::default().fg(Color::Cyan),
        ));
        spans.push(Span::styled(" · ", dim));
    }
    spans.extend([
        Span::styled(
            format!("{} tokens", thousands(status.generated + live_tokens)),
            dim,
        ),
        Span::styled(" · ", dim),
        Span::styled(format!("mode {}", status.mode), mode_style),
    ]);
    if status.jobs > 0 {
        spans.push(Span::styled(" · ", dim));
        spans.push(Span::styled(
            format!(
                "{} job{} running",
                status.jobs,
                if status.jobs == 1 { "" } else { "s" }
            ),
            Style::default().fg(Color::Cyan),
        ));
    }
    spans.push(Span::styled(format!("  {hint}"), dim));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_every_figure() {
        let status = Status {
            model: "/m/SmolLM2-135M.gguf".into(),
            context_used: 1234,
            context_window: 8192,
            generated: 50,
            mode: "confirm".into(),
            jobs: 0,
        };
        let text: String = line(&status, 6, None, "Esc stops")
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(
            text,
            "SmolLM2-135M.gguf · ctx 1,234/8,192 (15%) · 56 tokens · mode confirm  Esc stops"
        );
        let text: String = line(&status, 6, Some("12.0 tokens/s"), "")
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert!(
            text.contains("(15%) · 12.0 tokens/s · 56 tokens · mode"),
            "{text}"
        );
        let jobs = Status { jobs: 2, ..status };
        let text: String = line(&jobs, 0, None, "")
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert!(text.ends_with("mode confirm · 2 jobs running  "), "{text}");
    }
}
