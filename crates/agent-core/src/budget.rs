//! The context window as a budget: what one request's prompt spends
//! ([`Budget`], shown by `/tokens`, `--json` and the status line), and the
//! cut that makes a text fit its share ([`excerpt`]).
//!
//! A text too large for its share (an attached file, a tool's output) keeps
//! its head and the lines nearest the request, the outline of what was left
//! out (the map's tree-sitter definitions, with their line numbers) and a
//! line saying how to read the rest: the model can ask for any of it, and
//! the prompt never passes the window.

use std::path::Path;

use serde::Serialize;

use agent_lang::walk::Lang;

/// One request's prompt, in tokens, as it was sent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// The model's context window (the server's, with `--server`).
    pub window: usize,
    /// Kept for the reply.
    pub reserve: usize,
    /// The system prompt and the tools' definitions.
    pub fixed: usize,
    /// The turns before this request, as kept (summarised, pruned).
    pub conversation: usize,
    /// This request: the user's words, the attached files, the tool results.
    pub new: usize,
    /// Left out to fit: the parts of files and results not shown, the turns
    /// pruned.
    pub cut: usize,
}

impl Budget {
    /// Tokens the prompt takes.
    pub fn used(&self) -> usize {
        self.fixed + self.conversation + self.new
    }
}

/// The prompt's room in a window of `window` tokens: what the reply's
/// `max_tokens` leaves, the reply never taking more than a quarter.
pub(crate) fn prompt_room(window: usize, max_tokens: usize) -> usize {
    window.saturating_sub(max_tokens.min(window / 4))
}

/// Counts tokens with the model's tokenizer (an estimate where it is remote).
pub(crate) type CountText<'a> = &'a dyn Fn(&str) -> usize;

/// A text made to fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    pub text: String,
    /// Tokens of the original left out (estimated).
    pub cut_tokens: usize,
}

/// Fewest tokens an excerpt is given: its note, a head and an outline.
pub(crate) const MIN_EXCERPT_TOKENS: usize = 96;
/// Longest line shown whole, in characters (a minified file's one line).
const MAX_LINE_CHARS: usize = 600;
/// Lines shown around a line that names what the request asks about.
const AROUND: (usize, usize) = (2, 4);

/// `text` (the file or output `name`) cut to `allowance` tokens, or None
/// when it fits already. `hints` are the request's words: the lines that
/// name them are kept with their neighbours.
pub fn excerpt(
    name: &str,
    text: &str,
    allowance: usize,
    hints: &[String],
    count: CountText<'_>,
) -> Option<Excerpt> {
    let total = count(text);
    if total <= allowance {
        return None;
    }
    let allowance = allowance.max(MIN_EXCERPT_TOKENS);
    let lines: Vec<&str> = text.lines().collect();
    let per_char = total as f64 / text.chars().count().max(1) as f64;
    let cost = |line: &str| {
        ((line.chars().count().min(MAX_LINE_CHARS) + 1) as f64 * per_char).ceil() as usize
    };
    let costs: Vec<usize> = lines.iter().map(|l| cost(l)).collect();
    let outline = outline_of(name, text);
    let scores: Vec<usize> = lines.iter().map(|l| score(l, hints)).collect();
    let mut target = allowance;
    for _ in 0..6 {
        let keep = choose(&costs, &scores, target.saturating_sub(target / 5 + 48));
        let rendered = render(name, &lines, &keep, &outline, target / 5, per_char);
        let used = count(&rendered);
        if used <= allowance {
            return Some(Excerpt {
                text: rendered,
                cut_tokens: total.saturating_sub(used),
            });
        }
        target = target.saturating_sub(used - allowance + 16).max(16);
    }
    // Past any estimate: the head alone, by characters.
    let chars = (allowance as f64 / per_char * 0.8) as usize;
    let head: String = text.chars().take(chars.saturating_sub(200)).collect();
    let text = format!(
        "{head}\n[{name}: the rest left out to fit the context window; read_file with start_line shows it]"
    );
    Some(Excerpt {
        cut_tokens: total.saturating_sub(count(&text)),
        text,
    })
}

/// The request's words worth looking for in a file: identifiers and paths
/// of three characters or more, lowercased, without common English.
pub fn hints(request: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "the", "and", "what", "does", "how", "this", "that", "with", "for", "from", "file",
        "explain", "where", "which", "when", "why", "into", "about", "code", "function", "please",
        "are", "is", "can", "you", "there", "its", "it's", "show", "tell", "make", "should",
        "would", "could", "have", "has", "not", "all", "any", "them", "they", "their", "then",
        "than", "way", "work", "works", "doing", "done", "use", "used", "uses",
    ];
    let mut out: Vec<String> = Vec::new();
    for word in request.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.to_lowercase();
        if word.len() >= 3 && !COMMON.contains(&word.as_str()) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// How many of the request's words a line names.
fn score(line: &str, hints: &[String]) -> usize {
    if hints.is_empty() {
        return 0;
    }
    let line = line.to_lowercase();
    hints.iter().filter(|h| line.contains(h.as_str())).count()
}

/// Which lines to keep within `budget` tokens: the head, the lines that
/// name the request's words with their neighbours, then more of the head.
fn choose(costs: &[usize], scores: &[usize], budget: usize) -> Vec<bool> {
    let mut keep = vec![false; costs.len()];
    let mut spent = 0;
    let take = |i: usize, keep: &mut Vec<bool>, spent: &mut usize| -> bool {
        if keep[i] {
            return true;
        }
        if *spent + costs[i] > budget {
            return false;
        }
        keep[i] = true;
        *spent += costs[i];
        true
    };
    let head_budget = budget * 2 / 5;
    for (i, cost) in costs.iter().enumerate() {
        if spent + cost > head_budget || !take(i, &mut keep, &mut spent) {
            break;
        }
    }
    let mut named: Vec<usize> = (0..costs.len()).filter(|&i| scores[i] > 0).collect();
    named.sort_by_key(|&i| (std::cmp::Reverse(scores[i]), i));
    'named: for i in named {
        for j in i.saturating_sub(AROUND.0)..(i + AROUND.1).min(costs.len()) {
            if !take(j, &mut keep, &mut spent) {
                break 'named;
            }
        }
    }
    for i in 0..costs.len() {
        if !take(i, &mut keep, &mut spent) {
            break;
        }
    }
    keep
}

/// Definitions of a file, `(line, signature)`, from the map's tagger
/// (none for a language without a grammar).
fn outline_of(name: &str, text: &str) -> Vec<(usize, String)> {
    let lang = Lang::detect(Path::new(name), text);
    if lang == Lang::Text {
        return Vec::new();
    }
    let tags = agent_repomap::tags::Tagger::new().tag(lang, text);
    tags.defs
        .iter()
        .map(|d| (d.line as usize, d.signature.clone()))
        .collect()
}

/// The kept lines in order, each gap marked; then the outline of the left
/// out lines (within `outline_budget` tokens) and how to read them.
fn render(
    name: &str,
    lines: &[&str],
    keep: &[bool],
    outline: &[(usize, String)],
    outline_budget: usize,
    per_char: f64,
) -> String {
    let mut out = String::new();
    let mut i = 0;
    let mut left_out = 0;
    while i < lines.len() {
        if keep[i] {
            let line = lines[i];
            match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((at, _)) => {
                    out.push_str(&line[..at]);
                    out.push_str("…\n");
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && !keep[i] {
            i += 1;
        }
        left_out += i - start;
        out.push_str(&format!("[… lines {}–{} left out …]\n", start + 1, i));
    }
    let missing: Vec<&(usize, String)> = outline
        .iter()
        .filter(|(line, _)| *line >= 1 && *line <= keep.len() && !keep[line - 1])
        .collect();
    if !missing.is_empty() {
        out.push_str("[outline of the lines left out]\n");
        let mut spent = 0.0;
        for (line, signature) in missing {
            let entry = format!("{line}: {signature}\n");
            spent += entry.chars().count() as f64 * per_char;
            if spent > outline_budget as f64 {
                break;
            }
            out.push_str(&entry);
        }
    }
    out.push_str(&format!(
        "[{name}: {} of {} lines shown to fit the context window; read_file with start_line and end_line shows the others]",
        lines.len() - left_out,
        lines.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> usize {
        text.split_whitespace().count() + text.lines().count()
    }

    fn python(functions: usize) -> String {
        (0..functions)
            .map(|i| format!("def handler_{i}(request):\n    value = request.get('{i}')\n    return value * {i}\n\n"))
            .collect()
    }

    #[test]
    fn a_text_that_fits_is_left_alone() {
        assert_eq!(excerpt("a.py", "x = 1\n", 100, &[], &words), None);
    }

    #[test]
    fn the_head_the_named_lines_and_an_outline_of_the_rest_fit() {
        let text = python(400);
        let hints = hints("What does handler_321 do?");
        let cut = excerpt("app.py", &text, 600, &hints, &words).unwrap();
        assert!(words(&cut.text) <= 600, "{}", words(&cut.text));
        assert!(
            cut.text.starts_with("def handler_0(request):"),
            "{}",
            cut.text
        );
        assert!(
            cut.text
                .contains("def handler_321(request):\n    value = request.get('321')"),
            "{}",
            cut.text
        );
        assert!(
            cut.text.contains("[outline of the lines left out]\n"),
            "{}",
            cut.text
        );
        assert!(
            cut.text.contains(": def handler_40(request)"),
            "{}",
            cut.text
        );
        assert!(cut
            .text
            .ends_with("read_file with start_line and end_line shows the others]"));
        assert!(cut.cut_tokens > 0);
    }

    #[test]
    fn one_endless_line_is_cut_too() {
        let text = "x".repeat(200_000);
        let count = |t: &str| t.len() / 4;
        let cut = excerpt("min.js", &text, 1000, &[], &count).unwrap();
        assert!(count(&cut.text) <= 1000, "{}", count(&cut.text));
    }

    #[test]
    fn hints_are_the_requests_own_words() {
        assert_eq!(
            hints("Where is `Cache::reset` defined, and what does it do?"),
            vec!["cache", "reset", "defined"]
        );
    }
}
