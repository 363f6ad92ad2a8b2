//! `apply_patch`: the Codex-style patch format models know well.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.py
//! +line
//! *** Update File: path/old.rs
//! *** Move to: path/renamed.rs        (optional)
//! @@ fn name                          (optional: a line before the hunk)
//!  context line
//! -removed
//! +added
//! *** End of File                     (optional: the hunk ends the file)
//! *** Delete File: path/gone.txt
//! *** End Patch
//! ```
//!
//! Parsing is strict (errors name the patch line); matching is tolerant of
//! whitespace: each hunk's context and removed lines are sought from where the
//! previous hunk ended, first exactly, then ignoring trailing whitespace, then
//! ignoring all surrounding whitespace. Context lines keep the file's own text.
//! All or nothing: every new content is computed before anything is written,
//! under one approval and one checkpoint.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::args::Args;
use super::change::{self, FileChange};
use super::fs::resolve_writable;
use super::grep::cut;
use super::{Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    Keep,
    Remove,
    Add,
}

/// One `@@` hunk of an Update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// The text after `@@`: a line that comes before the hunk.
    pub context: Option<String>,
    pub lines: Vec<(Tag, String)>,
    /// `*** End of File`: the hunk must match at the end of the file.
    pub eof: bool,
    /// Patch line where the hunk starts (1-based).
    pub line_no: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
    Delete {
        path: String,
    },
}

impl Op {
    pub(crate) fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Update { path, .. } | Op::Delete { path } => path,
        }
    }
}

const FORMAT_HINT: &str = "The format is:\n*** Begin Patch\n*** Update File: path\n@@ optional line before the change\n context line\n-removed line\n+added line\n*** End Patch\n(also *** Add File: path with + lines, *** Delete File: path)";

/// Parses a patch; errors name the patch line.
pub(crate) fn parse(text: &str) -> Result<Vec<Op>, String> {
    let all: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let (lo, hi) = envelope(&all)?;
    let mut parser = Parser {
        all: &all,
        i: lo + 1,
        end: hi - 1,
    };
    let mut ops = Vec::new();
    while parser.i < parser.end {
        if let Some(op) = parser.section()? {
            ops.push(op);
        }
    }
    if ops.is_empty() {
        return Err("the patch has no file sections".into());
    }
    Ok(ops)
}

/// The lines of `*** Begin Patch` and `*** End Patch` (as `lo` and `hi - 1`),
/// skipping surrounding blank lines and a Markdown fence.
fn envelope(all: &[&str]) -> Result<(usize, usize), String> {
    let mut lo = 0;
    let mut hi = all.len();
    while lo < hi && (all[lo].trim().is_empty() || all[lo].trim_start().starts_with("```")) {
        lo += 1;
    }
    while hi > lo && (all[hi - 1].trim().is_empty() || all[hi - 1].trim_start().starts_with("```"))
    {
        hi -= 1;
    }
    if lo >= hi || all[lo].trim() != "*** Begin Patch" {
        return Err(format!(
            "line {}: the patch must start with `*** Begin Patch`",
            lo + 1
        ));
    }
    if hi - 1 == lo || all[hi - 1].trim() != "*** End Patch" {
        return Err(format!(
            "line {}: the patch must end with `*** End Patch`",
            hi
        ));
    }
    Ok((lo, hi))
}

/// The path after a section header such as `*** Add File:`.
fn header(line: &str, prefix: &str) -> Option<String> {
    line.strip_prefix(prefix).map(|p| p.trim().to_string())
}

/// A cursor over the patch's lines between its envelope.
struct Parser<'a> {
    all: &'a [&'a str],
    /// The next line (0-based; its patch line is `i + 1`).
    i: usize,
    /// The `*** End Patch` line.
    end: usize,
}

impl Parser<'_> {
    /// The file section starting at the current line (None for a blank line).
    fn section(&mut self) -> Result<Option<Op>, String> {
        let line = self.all[self.i];
        let n = self.i + 1;
        if line.trim().is_empty() {
            self.i += 1;
            return Ok(None);
        }
        if let Some(path) = header(line, "*** Add File:") {
            if path.is_empty() {
                return Err(format!("line {n}: `*** Add File:` needs a path"));
            }
            self.i += 1;
            self.add(path).map(Some)
        } else if let Some(path) = header(line, "*** Delete File:") {
            if path.is_empty() {
                return Err(format!("line {n}: `*** Delete File:` needs a path"));
            }
            self.i += 1;
            Ok(Some(Op::Delete { path }))
        } else if let Some(path) = header(line, "*** Update File:") {
            if path.is_empty() {
                return Err(format!("line {n}: `*** Update File:` needs a path"));
            }
            self.i += 1;
            self.update(path, n).map(Some)
        } else if line.starts_with("*** Move to:") {
            Err(format!(
                "line {n}: `*** Move to:` must come right after `*** Update File:`"
            ))
        } else {
            Err(format!(
                "line {n}: expected `*** Add File:`, `*** Update File:`, `*** Delete File:` or `*** End Patch`, found `{}`",
                cut(line, 60)
            ))
        }
    }

    /// The `+` lines of an Add section (blank lines between them kept).
    fn add(&mut self, path: String) -> Result<Op, String> {
        let mut lines = Vec::new();
        let mut pending_blank = 0;
        while self.i < self.end && !self.all[self.i].starts_with("*** ") {
            let l = self.all[self.i];
            if let Some(t) = l.strip_prefix('+') {
                lines.extend(std::iter::repeat_n(String::new(), pending_blank));
                pending_blank = 0;
                lines.push(t.to_string());
            } else if l.is_empty() {
                pending_blank += 1;
            } else {
                return Err(format!(
                    "line {}: in `*** Add File: {path}` every line must start with `+` (found `{}`)",
                    self.i + 1,
                    cut(l, 60)
                ));
            }
            self.i += 1;
        }
        Ok(Op::Add { path, lines })
    }

    /// An Update section after its header (patch line `n`): an optional
    /// `*** Move to:`, then its hunks.
    fn update(&mut self, path: String, n: usize) -> Result<Op, String> {
        let mut move_to = None;
        if self.i < self.end {
            if let Some(to) = header(self.all[self.i], "*** Move to:") {
                if to.is_empty() {
                    return Err(format!("line {}: `*** Move to:` needs a path", self.i + 1));
                }
                move_to = Some(to);
                self.i += 1;
            }
        }
        let chunks = checked_hunks(self.hunks(&path)?)?;
        if chunks.is_empty() && move_to.is_none() {
            return Err(format!("line {n}: `*** Update File: {path}` has no hunks"));
        }
        Ok(Op::Update {
            path,
            move_to,
            chunks,
        })
    }

    /// The hunks of an Update section, up to the next `*** ` line.
    fn hunks(&mut self, path: &str) -> Result<Vec<Chunk>, String> {
        let mut chunks: Vec<Chunk> = Vec::new();
        while self.i < self.end {
            let l = self.all[self.i];
            let n = self.i + 1;
            let end_of_file = l.trim() == "*** End of File";
            if l.starts_with("*** ") && !end_of_file {
                break; // the next section
            }
            self.i += 1;
            if end_of_file {
                match chunks.last_mut() {
                    Some(c) => c.eof = true,
                    None => return Err(format!("line {n}: `*** End of File` before any hunk")),
                }
                continue;
            }
            if let Some(rest) = l.strip_prefix("@@") {
                chunks.push(Chunk {
                    context: hunk_context(rest),
                    lines: Vec::new(),
                    eof: false,
                    line_no: n,
                });
                continue;
            }
            let (tag, text) = match l.chars().next() {
                Some(' ') => (Tag::Keep, &l[1..]),
                Some('-') => (Tag::Remove, &l[1..]),
                Some('+') => (Tag::Add, &l[1..]),
                None => (Tag::Keep, ""),
                Some(_) => {
                    return Err(format!(
                        "line {n}: in `*** Update File: {path}` every line must start with ` ` (context), `-`, `+` or `@@` (found `{}`); context lines need a leading space",
                        cut(l, 60)
                    ))
                }
            };
            let line = (tag, text.to_string());
            match chunks.last_mut() {
                Some(c) => c.lines.push(line),
                None => chunks.push(Chunk {
                    context: None,
                    lines: vec![line],
                    eof: false,
                    line_no: n,
                }),
            }
        }
        Ok(chunks)
    }
}

/// Hunks without their trailing separator lines; empty ones dropped, and
/// an error for one with no lines or no change.
fn checked_hunks(mut chunks: Vec<Chunk>) -> Result<Vec<Chunk>, String> {
    // Bare blank lines at the end of a hunk are separators, not context.
    for c in &mut chunks {
        while c
            .lines
            .last()
            .is_some_and(|(t, s)| *t == Tag::Keep && s.is_empty())
        {
            c.lines.pop();
        }
    }
    chunks.retain(|c| !c.lines.is_empty() || c.context.is_some());
    if let Some(c) = chunks.iter().find(|c| c.lines.is_empty()) {
        return Err(format!("line {}: hunk has no lines", c.line_no));
    }
    if let Some(c) = chunks
        .iter()
        .find(|c| c.lines.iter().all(|(t, _)| *t == Tag::Keep))
    {
        return Err(format!(
            "line {}: hunk changes nothing (no `-` or `+` lines)",
            c.line_no
        ));
    }
    Ok(chunks)
}

/// The text after `@@`, ignoring a unified-diff range like `-3,4 +3,5 @@`.
fn hunk_context(rest: &str) -> Option<String> {
    let mut r = rest.trim();
    if r.starts_with('-') && r.contains(" +") {
        // `-3,4 +3,5 @@ fn name`
        let after = r.find("@@").map_or("", |p| &r[p + 2..]);
        r = after.trim();
    }
    (!r.is_empty()).then(|| r.to_string())
}

/// Finds `pattern` in `lines` at or after `from`: exactly, then ignoring
/// trailing whitespace, then ignoring surrounding whitespace. With `eof`, a
/// match at the very end is preferred.
pub(crate) fn seek(lines: &[String], pattern: &[String], from: usize, eof: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(if eof {
            lines.len()
        } else {
            from.min(lines.len())
        });
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    let tiers: [fn(&str, &str) -> bool; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    for eq in tiers {
        let at = |s: usize| {
            pattern
                .iter()
                .enumerate()
                .all(|(k, p)| eq(&lines[s + k], p))
        };
        if eof && last_start >= from && at(last_start) {
            return Some(last_start);
        }
        if from <= last_start {
            if let Some(s) = (from..=last_start).find(|&s| at(s)) {
                return Some(s);
            }
        }
    }
    None
}

/// A file's lines and how to join them back.
struct Lines {
    lines: Vec<String>,
    eol: &'static str,
    final_newline: bool,
}

fn split_lines(content: &str) -> Lines {
    let eol = if content.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let final_newline = content.ends_with('\n') || content.is_empty();
    let mut lines: Vec<String> = content
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    if content.ends_with('\n') || content.is_empty() {
        lines.pop();
    }
    Lines {
        lines,
        eol,
        final_newline,
    }
}

/// Applies an Update's hunks to a file's content; errors say which hunk failed
/// and show the nearest lines.
pub(crate) fn apply_chunks(content: &str, chunks: &[Chunk], path: &str) -> Result<String, String> {
    let Lines {
        mut lines,
        eol,
        final_newline,
    } = split_lines(content);
    let mut cursor = 0usize;
    for (k, chunk) in chunks.iter().enumerate() {
        let mut from = cursor;
        if let Some(ctx_line) = &chunk.context {
            // A hint, not a requirement: when found, the hunk comes after it.
            if let Some(p) = seek(&lines, std::slice::from_ref(ctx_line), cursor, false) {
                from = p + 1;
            }
        }
        let old: Vec<String> = chunk
            .lines
            .iter()
            .filter(|(t, _)| *t != Tag::Add)
            .map(|(_, s)| s.clone())
            .collect();
        let pos = if old.is_empty() {
            // Pure insertion: after the @@ line, else at the end of the file.
            Some(if chunk.context.is_some() && from > cursor {
                from
            } else {
                lines.len()
            })
        } else {
            seek(&lines, &old, from, chunk.eof).or_else(|| {
                // The @@ line may have matched too late; retry from the cursor.
                (from != cursor)
                    .then(|| seek(&lines, &old, cursor, chunk.eof))
                    .flatten()
            })
        };
        let Some(pos) = pos else {
            return Err(hunk_error(path, k, chunk, &old, &lines, cursor));
        };
        let mut replacement = Vec::with_capacity(chunk.lines.len());
        let mut j = pos;
        for (tag, text) in &chunk.lines {
            match tag {
                Tag::Keep => {
                    replacement.push(lines[j].clone());
                    j += 1;
                }
                Tag::Remove => j += 1,
                Tag::Add => replacement.push(text.clone()),
            }
        }
        let added = replacement.len();
        lines.splice(pos..pos + old.len(), replacement);
        cursor = pos + added;
    }
    let mut out = lines.join(eol);
    if !lines.is_empty() && final_newline {
        out.push_str(eol);
    }
    Ok(out)
}

fn hunk_error(
    path: &str,
    k: usize,
    chunk: &Chunk,
    old: &[String],
    lines: &[String],
    cursor: usize,
) -> String {
    let mut msg = format!(
        "{path}: hunk {} (patch line {}) does not match the file",
        k + 1,
        chunk.line_no
    );
    if cursor > 0 {
        msg.push_str(&format!(
            " after line {cursor} (hunks must be in file order)"
        ));
    }
    msg.push_str(". Expected these lines:\n");
    for l in old.iter().take(8) {
        msg.push_str(&format!("  {}\n", cut(l, 120)));
    }
    if old.len() > 8 {
        msg.push_str(&format!("  … ({} more)\n", old.len() - 8));
    }
    // Nearest place: the line most like the first non-blank expected line.
    let probe = old
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let best = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let t = l.trim();
            let score = if t == probe {
                2.0
            } else if t.len() <= 400 && probe.len() <= 400 {
                similar::TextDiff::from_chars(probe, t).ratio()
            } else {
                0.0
            };
            (score, i)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    match best {
        Some((score, i)) if score >= 0.5 => {
            msg.push_str("Nearest lines in the file:\n");
            let lo = i.saturating_sub(1);
            let hi = (i + old.len().max(2) + 1).min(lines.len()).min(lo + 10);
            for (n, l) in lines.iter().enumerate().take(hi).skip(lo) {
                msg.push_str(&format!("{:>4}| {}\n", n + 1, cut(l, 120)));
            }
        }
        _ => msg.push_str("No similar lines found; read the file again.\n"),
    }
    msg.push_str("Nothing was written. Fix the hunk (context and - lines must be copied exactly from the file) and send the whole patch again.");
    msg
}

pub(crate) struct ApplyPatch;

impl Tool for ApplyPatch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch",
            description: "Change several files at once with a patch: *** Begin Patch, then *** Update File: path (hunks of ' ' context, '-' removed, '+' added lines, optionally after an @@ line), *** Add File: path (+ lines), *** Delete File: path, then *** End Patch. All or nothing.",
            parameters: json!({
                "type": "object",
                "properties": {"patch": {"type": "string"}},
                "required": ["patch"]
            }),
            access: Access::Write,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(
            args,
            "apply_patch",
            r#"{"patch": "*** Begin Patch\n*** Update File: src/a.py\n@@ def f():\n-    return 1\n+    return 2\n*** End Patch"}"#,
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let text = match a.req_str("patch") {
            Ok(t) => t,
            Err(e) => return e,
        };
        let ops = match parse(&text) {
            Ok(o) => o,
            Err(e) => {
                return ToolOutput::error(
                    ErrorClass::InvalidArgs,
                    format!("cannot parse the patch: {e}. Nothing was written. {FORMAT_HINT}"),
                )
            }
        };
        let changes = match plan(ctx, &ops) {
            Ok(c) => c,
            Err(e) => return e,
        };
        let summary = format!(
            "apply_patch {}",
            ops.iter().map(Op::path).collect::<Vec<_>>().join(", ")
        );
        let applied = match change::apply(ctx, changes, &summary) {
            Ok(a) => a,
            Err(e) => return e,
        };
        if applied.stats.is_empty() {
            return ToolOutput::ok(
                "the patch changes nothing: the files already have this content",
            );
        }
        ToolOutput {
            ok: true,
            content: applied.report(format!(
                "applied patch: {}",
                applied
                    .stats
                    .iter()
                    .map(|s| s.line())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            diff: Some(applied.diff),
            changed: applied.stats.into_iter().map(|s| s.rel).collect(),
            ..ToolOutput::default()
        }
    }
}

/// Computes every file's new content; the first problem is the error and
/// nothing is written.
fn plan(ctx: &ToolContext<'_>, ops: &[Op]) -> Result<Vec<FileChange>, ToolOutput> {
    let mut seen = HashSet::new();
    let mut changes = Vec::new();
    let fail =
        |class, msg: String| ToolOutput::error(class, format!("{msg}. Nothing was written."));
    let target = |path: &str,
                  seen: &mut HashSet<std::path::PathBuf>|
     -> Result<(std::path::PathBuf, String), ToolOutput> {
        let abs = resolve_writable(ctx, path)?;
        let rel = ctx.workspace.relative(&abs);
        if !seen.insert(abs.clone()) {
            return Err(fail(
                ErrorClass::InvalidArgs,
                format!("{rel} appears twice in the patch; put all its hunks under one `*** Update File:`"),
            ));
        }
        Ok((abs, rel))
    };
    let read_existing = |abs: &std::path::Path,
                         rel: &str,
                         verb: &str|
     -> Result<Vec<u8>, ToolOutput> {
        match std::fs::metadata(abs) {
            Ok(m) if m.is_dir() => Err(fail(ErrorClass::InvalidArgs, format!("cannot {verb} {rel}: it is a folder"))),
            Ok(m) if !m.is_file() => Err(fail(ErrorClass::InvalidArgs, format!("cannot {verb} {rel}: it is not a regular file (a pipe, socket or device)"))),
            Ok(_) => ctx.files.read(abs)
                .map_err(|e| fail(ErrorClass::Io, format!("cannot read {rel}: {e}"))),
            Err(_) => Err(fail(
                ErrorClass::NotFound,
                format!("cannot {verb} {rel}: it does not exist (use `*** Add File:` to create it; check the path with glob)"),
            )),
        }
    };
    for op in ops {
        match op {
            Op::Add { path, lines } => {
                let (abs, rel) = target(path, &mut seen)?;
                if abs.exists() {
                    return Err(fail(
                        ErrorClass::InvalidArgs,
                        format!("cannot add {rel}: it already exists; use `*** Update File: {rel}` to change it"),
                    ));
                }
                let mut content = lines.join("\n");
                if !lines.is_empty() {
                    content.push('\n');
                }
                changes.push(FileChange {
                    abs,
                    rel,
                    old: None,
                    new: Some(content.into_bytes()),
                    mode: None,
                });
            }
            Op::Delete { path } => {
                let (abs, rel) = target(path, &mut seen)?;
                let old = read_existing(&abs, &rel, "delete")?;
                changes.push(FileChange {
                    abs,
                    rel,
                    old: Some(old),
                    new: None,
                    mode: None,
                });
            }
            Op::Update {
                path,
                move_to,
                chunks,
            } => {
                let (abs, rel) = target(path, &mut seen)?;
                let old = read_existing(&abs, &rel, "update")?;
                let Ok(text) = std::str::from_utf8(&old) else {
                    return Err(fail(
                        ErrorClass::InvalidArgs,
                        format!("{rel} is not UTF-8 text; it cannot be patched"),
                    ));
                };
                let new = apply_chunks(text, chunks, &rel)
                    .map_err(|e| ToolOutput::error(ErrorClass::NoMatch, e))?;
                match move_to {
                    Some(to) => {
                        let (dest, dest_rel) = target(to, &mut seen)?;
                        if dest.exists() {
                            return Err(fail(
                                ErrorClass::InvalidArgs,
                                format!(
                                    "cannot move {rel} to {dest_rel}: {dest_rel} already exists"
                                ),
                            ));
                        }
                        let mode = std::fs::metadata(&abs).ok().map(|m| {
                            use std::os::unix::fs::PermissionsExt;
                            m.permissions().mode() & 0o7777
                        });
                        changes.push(FileChange {
                            abs,
                            rel,
                            old: Some(old),
                            new: None,
                            mode: None,
                        });
                        changes.push(FileChange {
                            abs: dest,
                            rel: dest_rel,
                            old: None,
                            new: Some(new.into_bytes()),
                            mode,
                        });
                    }
                    None => changes.push(FileChange {
                        abs,
                        rel,
                        old: Some(old),
                        new: Some(new.into_bytes()),
                        mode: None,
                    }),
                }
            }
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upd(chunks: &str) -> Vec<Chunk> {
        let p = format!("*** Begin Patch\n*** Update File: x\n{chunks}\n*** End Patch");
        match parse(&p).unwrap().remove(0) {
            Op::Update { chunks, .. } => chunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_all_sections() {
        let p = "```\n*** Begin Patch\n*** Add File: a.py\n+x = 1\n+\n+y = 2\n*** Update File: b.rs\n*** Move to: c.rs\n@@ fn main() {\n     let a = 1;\n-    let b = 2;\n+    let b = 3;\n*** End of File\n*** Delete File: d.txt\n*** End Patch\n```\n";
        let ops = parse(p).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            Op::Add {
                path: "a.py".into(),
                lines: vec!["x = 1".into(), "".into(), "y = 2".into()]
            }
        );
        match &ops[1] {
            Op::Update {
                path,
                move_to,
                chunks,
            } => {
                assert_eq!(path, "b.rs");
                assert_eq!(move_to.as_deref(), Some("c.rs"));
                assert_eq!(chunks.len(), 1);
                assert_eq!(chunks[0].context.as_deref(), Some("fn main() {"));
                assert!(chunks[0].eof);
                assert_eq!(chunks[0].lines[1], (Tag::Remove, "    let b = 2;".into()));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ops[2],
            Op::Delete {
                path: "d.txt".into()
            }
        );
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert!(parse("*** Update File: x\n")
            .unwrap_err()
            .contains("Begin Patch"));
        let e = parse("*** Begin Patch\n*** Update File: x\n-a\n+b\n").unwrap_err();
        assert!(e.contains("End Patch"), "{e}");
        let e = parse("*** Begin Patch\n*** Update File: x\n-a\nfoo\n*** End Patch").unwrap_err();
        assert!(e.starts_with("line 4:"), "{e}");
        let e = parse("*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch").unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
        let e = parse("*** Begin Patch\nhello\n*** End Patch").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(parse("*** Begin Patch\n*** End Patch").is_err());
    }

    #[test]
    fn applies_hunks_in_order_with_whitespace_tolerance() {
        let file = "fn a() {\n    1\n}\n\nfn b() {\n    1\n}\n";
        // The second `1` is changed thanks to the @@ line.
        let out = apply_chunks(file, &upd("@@ fn b() {\n-    1\n+    2"), "x").unwrap();
        assert_eq!(out, "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n");
        // Trailing whitespace and indentation differences are tolerated; context keeps the file's text.
        let out = apply_chunks(file, &upd(" fn a() {  \n-  1\n+    10\n  }"), "x").unwrap();
        assert_eq!(out, "fn a() {\n    10\n}\n\nfn b() {\n    1\n}\n");
        // Two hunks in order.
        let out = apply_chunks(file, &upd("@@\n-    1\n+    5\n@@\n-    1\n+    6"), "x").unwrap();
        assert_eq!(out, "fn a() {\n    5\n}\n\nfn b() {\n    6\n}\n");
        // CRLF and a missing final newline survive.
        let out = apply_chunks("a\r\nb\r\nc", &upd(" a\n-b\n+B"), "x").unwrap();
        assert_eq!(out, "a\r\nB\r\nc");
        // Pure insertion at the end.
        let out = apply_chunks("a\n", &upd("+b"), "x").unwrap();
        assert_eq!(out, "a\nb\n");
        // End of file anchoring picks the last match.
        let out = apply_chunks("x\ny\nx\n", &upd("-x\n+z\n*** End of File"), "x").unwrap();
        assert_eq!(out, "x\ny\nz\n");
    }

    #[test]
    fn failing_hunk_shows_nearest_lines() {
        let file = "def f():\n    return 1\n";
        let e = apply_chunks(
            file,
            &upd(" def f():\n-    return 2\n+    return 3"),
            "m.py",
        )
        .unwrap_err();
        assert!(e.contains("m.py: hunk 1"), "{e}");
        assert!(e.contains("   1| def f():"), "{e}");
        assert!(e.contains("Nothing was written"), "{e}");
    }

    #[test]
    fn unified_diff_style_headers_are_tolerated() {
        let c = upd("@@ -1,2 +1,2 @@\n a\n-b\n+c");
        assert_eq!(c[0].context, None);
        let c = upd("@@ -1,2 +1,2 @@ fn x()\n a\n-b\n+c");
        assert_eq!(c[0].context.as_deref(), Some("fn x()"));
    }
}
