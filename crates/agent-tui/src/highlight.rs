//! Code blocks coloured by the tree-sitter grammars agent-lang links, with
//! each grammar's own `highlights.scm` (`tree-sitter-highlight`,
//! `agent_lang::lang::Lang::highlights_query`). A language this build has no
//! grammar or query for stays plain. Each new line re-highlights the block's
//! last lines (`CODE_CONTEXT` in `markdown`), so a line is coloured as part
//! of its block. A language's query is compiled on its first block, on the
//! UI thread (2-80 ms; Swift's about 450 ms at a load average of 7).

use std::collections::HashMap;
use std::path::Path;

use agent_lang::lang::Lang;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};

/// The capture names we colour; a capture takes the longest that prefixes
/// it (`function.method` is a `function`).
const NAMES: [&str; 14] = [
    "keyword",
    "string",
    "escape",
    "comment",
    "number",
    "constant",
    "boolean",
    "function",
    "constructor",
    "type",
    "attribute",
    "label",
    "variable.builtin",
    "embedded",
];

/// The style of each of [`NAMES`], in order.
fn style_of(index: usize) -> Style {
    let fg = |c: Color| Style::default().fg(c);
    match NAMES[index] {
        "keyword" => fg(Color::Magenta),
        "string" => fg(Color::Green),
        "escape" | "attribute" | "label" => fg(Color::Cyan),
        "comment" => fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
        "number" | "constant" | "boolean" | "constructor" => fg(Color::Yellow),
        "function" => fg(Color::Blue),
        "type" => fg(Color::Cyan),
        "variable.builtin" => fg(Color::Red),
        _ => Style::default(),
    }
}

/// The language a code fence names (`rust`, `rs`, `py`, `shell`, `c++`).
pub(crate) fn lang_of(tag: &str) -> Option<Lang> {
    let tag = tag.trim().to_ascii_lowercase();
    let tag = match tag.as_str() {
        "sh" | "shell" | "zsh" | "console" | "shellscript" => "bash",
        "c#" | "cs" => "csharp",
        "golang" => "go",
        "js" | "node" => "javascript",
        "ts" => "typescript",
        other => other,
    };
    Lang::from_name(tag).or_else(
        || match Lang::from_path(Path::new(&format!("code.{tag}"))) {
            Lang::Text => None,
            lang => Some(lang),
        },
    )
}

/// Highlights code; each language's query is compiled once, when first used.
#[derive(Default)]
pub(crate) struct Highlight {
    configs: HashMap<Lang, Option<HighlightConfiguration>>,
    highlighter: Option<Highlighter>,
}

impl Highlight {
    /// `code` as lines, coloured when the language is known (tabs as four spaces).
    pub(crate) fn lines(&mut self, lang: Option<Lang>, code: &str) -> Vec<Line<'static>> {
        let code = code.replace('\t', "    ");
        let code = agent_base::term::escape_controls(&code).into_owned();
        let Some(lang) = lang else {
            return plain(&code);
        };
        let config = self.configs.entry(lang).or_insert_with(|| configure(lang));
        let Some(config) = config.as_ref() else {
            return plain(&code);
        };
        let highlighter = self.highlighter.get_or_insert_with(Highlighter::new);
        let Ok(events) = highlighter.highlight(config, code.as_bytes(), None, |_| None) else {
            return plain(&code);
        };
        let mut lines = vec![Vec::new()];
        let mut styles: Vec<Style> = Vec::new();
        for event in events {
            match event {
                Ok(HighlightEvent::HighlightStart(h)) => styles.push(style_of(h.0)),
                Ok(HighlightEvent::HighlightEnd) => {
                    styles.pop();
                }
                Ok(HighlightEvent::Source { start, end }) => {
                    let style = styles.last().copied().unwrap_or_default();
                    push_text(&mut lines, &code[start..end], style);
                }
                Err(_) => return plain(&code),
            }
        }
        if code.ends_with('\n') {
            lines.pop();
        }
        lines.into_iter().map(Line::from).collect()
    }
}

fn configure(lang: Lang) -> Option<HighlightConfiguration> {
    let query = lang.highlights_query()?;
    let mut config =
        HighlightConfiguration::new(lang.grammar()?, lang.as_str(), &query, "", "").ok()?;
    config.configure(&NAMES);
    Some(config)
}

/// Appends `text` to the last line, starting a new line at each newline.
fn push_text(lines: &mut Vec<Vec<Span<'static>>>, text: &str, style: Style) {
    for (i, piece) in text.split('\n').enumerate() {
        if i > 0 {
            lines.push(Vec::new());
        }
        if !piece.is_empty() {
            if let Some(line) = lines.last_mut() {
                line.push(Span::styled(piece.to_string(), style));
            }
        }
    }
}

fn plain(code: &str) -> Vec<Line<'static>> {
    code.lines().map(|l| Line::raw(l.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_keywords_and_strings_are_coloured_and_unknown_code_is_plain() {
        let mut highlight = Highlight::default();
        let lines = highlight.lines(lang_of("rs"), "fn main() {\n    let s = \"hi\";\n}\n");
        assert_eq!(lines.len(), 3);
        let first = &lines[0].spans[0];
        assert_eq!(first.content, "fn");
        assert_eq!(first.style.fg, Some(Color::Magenta));
        assert!(lines[1]
            .spans
            .iter()
            .any(|s| s.content == "\"hi\"" && s.style.fg == Some(Color::Green)));
        assert_eq!(lang_of("no-such-language"), None);
        let plain = highlight.lines(None, "a\tb\n");
        assert_eq!(plain[0].spans[0].content, "a    b");
        assert_eq!(plain[0].spans[0].style, Style::default());
    }

    #[test]
    fn every_linked_grammar_s_query_compiles() {
        for name in Lang::names() {
            let lang = Lang::from_name(name).unwrap();
            if lang.grammar().is_some() && lang.highlights_query().is_some() {
                let started = std::time::Instant::now();
                assert!(configure(lang).is_some(), "{name}'s highlights.scm");
                eprintln!("{name}: {:?}", started.elapsed());
            }
        }
    }

    #[test]
    fn fence_names_map_to_languages() {
        assert_eq!(lang_of("python"), Some(Lang::Python));
        assert_eq!(lang_of("py"), Some(Lang::Python));
        assert_eq!(lang_of("Shell"), Some(Lang::Bash));
        assert_eq!(lang_of("c++"), Some(Lang::Cpp));
    }
}
