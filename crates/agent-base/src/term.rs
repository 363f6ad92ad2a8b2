//! Text from the repository (file contents, file names, a model's answer
//! about them) on a terminal: control characters are made visible, so a file
//! cannot write the clipboard (OSC 52), retitle the window (OSC 0), clear the
//! screen (`CSI 2J`) or fake a line of output with a newline in its name.
//! Only for text mode; JSON output keeps every byte exact.
//!
//! Printers of repository, model or session text take it as [`Untrusted`]
//! (`untrusted(&s.title)`, `untrusted_text(&m.content)`): the one type that
//! escapes on the way out, so a new printer has one obvious thing to use
//! (and `tests/cli/output.rs` flags a raw field in a printer).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt;

/// Text from outside the agent (a repository, a model, a stored session),
/// escaped when displayed: one line by default ([`untrusted`]), or keeping
/// newlines and tabs ([`untrusted_text`]).
#[derive(Debug, Clone)]
pub struct Untrusted<'a> {
    text: Cow<'a, str>,
    multi_line: bool,
}

/// A one-line field (a name, a path, a command, an argument): every control
/// character, newline included, is shown escaped.
pub fn untrusted<S: AsRef<OsStr> + ?Sized>(text: &S) -> Untrusted<'_> {
    Untrusted {
        text: text.as_ref().to_string_lossy(),
        multi_line: false,
    }
}

/// Multi-line text (a message, a file's contents): newlines and tabs kept,
/// every other control character escaped.
pub fn untrusted_text<S: AsRef<OsStr> + ?Sized>(text: &S) -> Untrusted<'_> {
    Untrusted {
        text: text.as_ref().to_string_lossy(),
        multi_line: true,
    }
}

impl fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = if self.multi_line {
            escape_controls(&self.text)
        } else {
            escape_line(&self.text)
        };
        // Padding (`{:<15}`) applies to what is shown.
        f.pad(&shown)
    }
}

/// `text` with every control character but newline and tab shown as an
/// escape (`\x1b`, `\u{9b}`), for multi-line text such as file contents.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// `text` on one line: as [`escape_controls`], and newlines and tabs
/// escaped too. For file names, symbols and other one-line fields.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_control(c) && !keep(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                _ => out.push_str(&format!("\\x{:02x}", c as u32)),
            }
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// C0 controls, DEL, and the C1 controls (U+0080..U+009F), which some
/// terminals read as escape sequences (`\u{9b}` is a one-character CSI);
/// also the bidirectional overrides that reorder what a line appears to say.
fn is_control(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A count with its noun, singular or plural as English wants it:
/// `1 line`, `2 lines` (nouns with a regular plural).
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The first `max` characters of `s`, with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A spinner on stderr; invisible when stderr is not a terminal.
pub fn spinner(message: String) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner().with_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

/// A spinner that counts the seconds, for work that shows nothing else.
pub fn timed_spinner(message: String) -> indicatif::ProgressBar {
    let bar = spinner(message);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    bar
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(super::counted(1, "line"), "1 line");
        assert_eq!(super::counted(0, "line"), "0 lines");
        assert_eq!(super::counted(12, "command"), "12 commands");
    }

    use super::*;

    #[test]
    fn escape_sequences_become_visible() {
        let osc52 = "copy \x1b]52;c;ZXZpbA==\x07 done";
        assert_eq!(escape_controls(osc52), "copy \\x1b]52;c;ZXZpbA==\\x07 done");
        assert_eq!(escape_controls("\x1b[2J"), "\\x1b[2J");
        assert_eq!(escape_controls("a\u{9b}31mb"), "a\\u{9b}31mb");
        assert_eq!(escape_controls("over\rwrite"), "over\\rwrite");
        assert_eq!(escape_controls("bidi \u{202e}txt"), "bidi \\u{202e}txt");
    }

    #[test]
    fn untrusted_text_is_escaped_when_displayed() {
        let args = "safe-docs-server --stdio\x1b[1A\x1b[2K\r";
        assert_eq!(
            untrusted(args).to_string(),
            "safe-docs-server --stdio\\x1b[1A\\x1b[2K\\r"
        );
        assert_eq!(untrusted("a\nb").to_string(), "a\\nb");
        assert_eq!(
            untrusted_text("a\nb\x1b]52;c;eA==\x07").to_string(),
            "a\nb\\x1b]52;c;eA==\\x07"
        );
        assert_eq!(format!("[{:<6}]", untrusted("ab")), "[ab    ]");
        let path = std::path::Path::new("skills/\x1b[2Jx");
        assert_eq!(untrusted(path).to_string(), "skills/\\x1b[2Jx");
    }

    #[test]
    fn lines_and_tabs_stay_in_contents_but_not_in_names() {
        let text = "fn main() {\n\tprintln!(\"é\");\n}";
        assert!(matches!(escape_controls(text), Cow::Borrowed(_)));
        assert_eq!(escape_line("new\nline.py"), "new\\nline.py");
        assert_eq!(escape_line("tab\there"), "tab\\there");
        assert!(matches!(escape_line("plain/path.rs"), Cow::Borrowed(_)));
    }
}
