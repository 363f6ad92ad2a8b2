//! Text from the repository (file contents, file names, a model's answer
//! about them) on a terminal: control characters are made visible, so a file
//! cannot write the clipboard (OSC 52), retitle the window (OSC 0), clear the
//! screen (`CSI 2J`) or fake a line of output with a newline in its name.
//! Only for text mode; JSON output keeps every byte exact.

use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
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
    fn lines_and_tabs_stay_in_contents_but_not_in_names() {
        let text = "fn main() {\n\tprintln!(\"é\");\n}";
        assert!(matches!(escape_controls(text), Cow::Borrowed(_)));
        assert_eq!(escape_line("new\nline.py"), "new\\nline.py");
        assert_eq!(escape_line("tab\there"), "tab\\there");
        assert!(matches!(escape_line("plain/path.rs"), Cow::Borrowed(_)));
    }
}
