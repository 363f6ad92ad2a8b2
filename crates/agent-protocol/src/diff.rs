//! Unified diffs of what a write changes (`similar`), and their terminal colouring.

use std::time::Duration;

use similar::TextDiff;

/// Lines of context around each change.
pub const CONTEXT: usize = 3;

/// A unified diff of one file with `a/…` and `b/…` headers; `None` on a side
/// means the file does not exist there (`/dev/null`, as git writes it).
/// Empty when nothing changed.
pub fn file_diff(old_path: Option<&str>, new_path: Option<&str>, old: &str, new: &str) -> String {
    if old == new && old_path == new_path {
        return String::new();
    }
    let a = old_path.map_or_else(|| "/dev/null".to_string(), |p| format!("a/{p}"));
    let b = new_path.map_or_else(|| "/dev/null".to_string(), |p| format!("b/{p}"));
    if old == new {
        // A pure rename.
        return format!("--- {a}\n+++ {b}\n");
    }
    let diff = TextDiff::configure()
        .timeout(Duration::from_secs(2))
        .diff_lines(old, new);
    let mut out = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&a, &b)
        .to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Lines added and removed in a unified diff (headers excluded).
pub fn count(diff: &str) -> (usize, usize) {
    let mut added = 0;
    let mut removed = 0;
    for line in diff.lines() {
        if line.starts_with("+++ ") || line.starts_with("--- ") {
            continue;
        }
        if line.starts_with('+') {
            added += 1;
        } else if line.starts_with('-') {
            removed += 1;
        }
    }
    (added, removed)
}

/// The diff coloured for a terminal: additions green, removals red, hunk
/// headers cyan, file headers bold. Colours follow `console`'s detection
/// (off when stdout is not a terminal or `NO_COLOR` is set).
pub fn colored(diff: &str) -> String {
    use console::style;
    let mut out = String::with_capacity(diff.len() + diff.len() / 4);
    for line in diff.split_inclusive('\n') {
        let (text, nl) = match line.strip_suffix('\n') {
            Some(t) => (t, "\n"),
            None => (line, ""),
        };
        let styled = if text.starts_with("+++ ") || text.starts_with("--- ") {
            style(text).bold().to_string()
        } else if text.starts_with('+') {
            style(text).green().to_string()
        } else if text.starts_with('-') {
            style(text).red().to_string()
        } else if text.starts_with("@@") {
            style(text).cyan().to_string()
        } else {
            text.to_string()
        };
        out.push_str(&styled);
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_has_headers_context_and_counts() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = file_diff(Some("x.txt"), Some("x.txt"), old, new);
        assert!(
            d.starts_with("--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,7 @@\n"),
            "{d}"
        );
        assert!(d.contains("-e\n+E\n"), "{d}");
        assert_eq!(count(&d), (1, 1));
        assert_eq!(file_diff(Some("x"), Some("x"), old, old), "");

        let created = file_diff(None, Some("n.txt"), "", "1\n2\n");
        assert!(
            created.starts_with("--- /dev/null\n+++ b/n.txt\n"),
            "{created}"
        );
        assert_eq!(count(&created), (2, 0));
        let deleted = file_diff(Some("n.txt"), None, "1\n2\n", "");
        assert_eq!(count(&deleted), (0, 2));
    }

    #[test]
    fn colouring_keeps_the_text() {
        let d = file_diff(Some("x"), Some("x"), "a\n", "b\n");
        let c = colored(&d);
        assert_eq!(console::strip_ansi_codes(&c), d);
    }
}
