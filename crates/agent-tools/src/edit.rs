//! `edit`: exact string replacement in a file the model has read.
//!
//! `old_text` must match exactly once (or `replace_all`). When it does not,
//! the error lists where the text probably is (lines whose trimmed text
//! equals the first line of `old_text`, else the most similar lines) so the
//! model can re-read and retry; when it matches several times, it lists the
//! line of each match.

use serde_json::{json, Value};

use super::args::Args;
use super::change::{self, FileChange};
use super::fs::{check_fresh, not_found, resolve_writable};
use super::grep::cut;
use super::{Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};

pub(crate) struct Edit;

/// Candidate lines listed when `old_text` is not found.
const CANDIDATES: usize = 5;

impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit",
            description: "Replace old_text with new_text in a file you have read. old_text must match the file exactly (indentation included) and only once; include a few surrounding lines to make it unique, or set replace_all.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                },
                "required": ["path", "old_text", "new_text"]
            }),
            access: Access::Write,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(
            args,
            "edit",
            r#"{"path": "src/app.py", "old_text": "    return a - b\n", "new_text": "    return a + b\n"}"#,
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (path, old_text, new_text, all) = match (
            a.req_str("path"),
            a.req_str("old_text"),
            a.req_str("new_text"),
            a.opt_bool("replace_all"),
        ) {
            (Ok(p), Ok(o), Ok(n), Ok(r)) => (p, o, n, r.unwrap_or(false)),
            (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => return e,
        };
        if old_text.is_empty() {
            return a.error("`old_text` is empty; copy the exact lines to replace from read_file output (without the line numbers). To create a file use write_file");
        }
        if old_text == new_text {
            return a.error("`old_text` and `new_text` are the same, so nothing would change");
        }
        let abs = match resolve_writable(ctx, &path) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let rel = ctx.workspace.relative(&abs);
        match std::fs::metadata(&abs) {
            Ok(m) if m.is_dir() => {
                return ToolOutput::error(
                    ErrorClass::InvalidArgs,
                    format!("{rel} is a folder, not a file"),
                )
            }
            Ok(m) if !m.is_file() => return super::fs::not_regular(&rel),
            Ok(_) => {}
            Err(_) => {
                let mut out = not_found(ctx, &path, &abs);
                out.content
                    .push_str(" (to create a new file use write_file)");
                return out;
            }
        }
        let bytes = match ctx.files.read(&abs) {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(ErrorClass::Io, format!("cannot read {rel}: {e}")),
        };
        if let Err(e) = check_fresh(ctx, &abs, &rel, &bytes) {
            return e;
        }
        let Ok(content) = String::from_utf8(bytes.clone()) else {
            return ToolOutput::error(
                ErrorClass::InvalidArgs,
                format!("{rel} is not valid UTF-8 text; edit cannot change it safely"),
            );
        };
        // A model writes `\n`; a CRLF file has `\r\n`.
        let (old_text, new_text) = if content.contains("\r\n") && !old_text.contains('\r') {
            (
                old_text.replace('\n', "\r\n"),
                new_text.replace('\n', "\r\n"),
            )
        } else {
            (old_text, new_text)
        };
        let positions: Vec<usize> = content.match_indices(&old_text).map(|(i, _)| i).collect();
        if positions.is_empty() {
            return ToolOutput::error(
                ErrorClass::NoMatch,
                no_match_message(&rel, &content, &old_text),
            );
        }
        if positions.len() > 1 && !all {
            let lines: Vec<String> = positions
                .iter()
                .map(|&p| line_of(&content, p).to_string())
                .collect();
            return ToolOutput::error(
                ErrorClass::NoMatch,
                format!(
                    "old_text matches {} times in {rel} (at lines {}); add surrounding lines to old_text so it matches exactly once, or set replace_all=true to change every one",
                    positions.len(),
                    lines.join(", ")
                ),
            );
        }
        let updated = if all {
            content.replace(&old_text, &new_text)
        } else {
            content.replacen(&old_text, &new_text, 1)
        };
        let first_line = line_of(&content, positions[0]);
        let new_lines = new_text.lines().count().max(1);
        let change = FileChange {
            abs,
            rel: rel.clone(),
            old: Some(bytes),
            new: Some(updated.into_bytes()),
            mode: None,
        };
        let applied = match change::apply(ctx, vec![change], &format!("edit {rel}")) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let Some(stat) = applied.stats.first() else {
            return ToolOutput::ok(format!("{rel} unchanged"));
        };
        let where_ = if positions.len() > 1 {
            format!("{} places", positions.len())
        } else if new_text.is_empty() {
            format!("text removed at line {first_line}")
        } else {
            format!(
                "new text at lines {first_line}-{}",
                first_line + new_lines - 1
            )
        };
        ToolOutput {
            ok: true,
            content: applied.report(format!(
                "edited {rel}: +{} -{} lines ({where_})",
                stat.added, stat.removed
            )),
            diff: Some(applied.diff.clone()),
            changed: vec![rel],
            ..ToolOutput::default()
        }
    }
}

/// 1-based line number of a byte offset.
fn line_of(content: &str, offset: usize) -> usize {
    content[..offset].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Says where `old_text` probably is: lines equal to its first non-blank line
/// after trimming, else the most similar lines.
pub(crate) fn no_match_message(rel: &str, content: &str, old_text: &str) -> String {
    let first = old_text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let lines: Vec<&str> = content.lines().collect();
    let mut cands: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !first.is_empty() && l.trim() == first)
        .map(|(i, _)| i)
        .take(CANDIDATES)
        .collect();
    let mut why = "lines that match the first line of old_text when whitespace is ignored";
    if cands.is_empty() && !first.is_empty() && lines.len() <= 20_000 {
        why = "the most similar lines";
        let mut scored: Vec<(f32, usize)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (similarity(first, l.trim()), i))
            .filter(|(s, _)| *s >= 0.5)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        cands = scored.into_iter().take(3).map(|(_, i)| i).collect();
        cands.sort_unstable();
    }
    let mut msg = format!("old_text was not found in {rel}.");
    if cands.is_empty() {
        msg.push_str(" No similar line either; read the file again and copy old_text exactly (including indentation), without the line-number prefix.");
        return msg;
    }
    msg.push_str(&format!(" Candidates ({why}):\n"));
    for i in cands {
        msg.push_str(&format!("{:>4}| {}\n", i + 1, cut(lines[i], 160)));
    }
    msg.push_str("Read the file around these lines and copy old_text exactly (indentation and every character), without the line-number prefix.");
    msg
}

/// Character-level similarity in 0..=1 (1 = equal).
fn similarity(a: &str, b: &str) -> f32 {
    if a.len() > 400 || b.len() > 400 {
        return if a == b { 1.0 } else { 0.0 };
    }
    similar::TextDiff::from_chars(a, b).ratio()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_match_lists_candidates() {
        let content = "def f():\n    return 1\n\ndef g():\n    return 2\n";
        let m = no_match_message("x.py", content, "  def g():\n  return 3\n");
        assert!(m.contains("   4| def g():"), "{m}");
        let m = no_match_message("x.py", content, "def gg():\n");
        assert!(m.contains("most similar"), "{m}");
        assert!(m.contains("   4| def g():"), "{m}");
        let m = no_match_message("x.py", content, "zzzzzzzzzzzzzzzz");
        assert!(m.contains("No similar line"), "{m}");
    }

    #[test]
    fn line_numbers_of_offsets() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }
}
