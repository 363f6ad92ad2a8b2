//! File tools: `list_dir`, `read_file`, `glob`, `write_file`, and the
//! ignore-aware walker the search tools share.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::args::Args;
use super::change::{self, FileChange};
use super::{sha256_hex, Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};

/// Folders shown by `list_dir` but never descended into by the tools
/// (dependencies, caches, build output), unless asked for directly; and
/// those never listed, searched or written (the agent's state and git's).
/// One list with the index's walk, which skips both.
pub(crate) use agent_lang::walk::{HEAVY_DIRS, HIDDEN_DIRS};

/// An `ignore` walker from `start` (a resolved path inside the workspace):
/// .gitignore/.ignore/.agentignore honoured (also outside git), hidden files
/// included, symlinks not followed, `.git/` and `.agent/` never entered.
/// Heavy folders are entered only when `start` is inside one; with
/// `show_heavy` they are still yielded (for `list_dir`).
pub(crate) fn walker(
    start: &Path,
    max_depth: Option<usize>,
    show_heavy: bool,
) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(start);
    let start = start.to_path_buf();
    b.hidden(false)
        .follow_links(false)
        .require_git(false)
        .add_custom_ignore_filename(".agentignore")
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            let name = e.file_name().to_string_lossy();
            if HIDDEN_DIRS.contains(&name.as_ref()) {
                return false;
            }
            // Contents of a heavy folder below the start: never.
            if let Some(parent) = e.path().parent() {
                if parent != start
                    && parent
                        .file_name()
                        .is_some_and(|n| HEAVY_DIRS.contains(&n.to_string_lossy().as_ref()))
                {
                    return false;
                }
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            show_heavy || !(is_dir && HEAVY_DIRS.contains(&name.as_ref()))
        });
    b
}

/// Resolves a path argument, or the PolicyDenied output.
pub(crate) fn resolve(ctx: &ToolContext<'_>, path: &str) -> Result<PathBuf, ToolOutput> {
    ctx.workspace
        .resolve(path)
        .map_err(|e| ToolOutput::error(ErrorClass::PolicyDenied, e))
}

/// [`resolve`], refusing paths the agent may not write (`.git/`, `.agent/`, the root).
pub(crate) fn resolve_writable(ctx: &ToolContext<'_>, path: &str) -> Result<PathBuf, ToolOutput> {
    let abs = resolve(ctx, path)?;
    ctx.workspace
        .check_writable(&abs)
        .map_err(|e| ToolOutput::error(ErrorClass::PolicyDenied, e))?;
    check_protected(ctx, &abs)?;
    Ok(abs)
}

/// Refuses a resolved path under one of the policy's protected paths (an
/// administrator's `protected_paths`).
pub(crate) fn check_protected(ctx: &ToolContext<'_>, abs: &Path) -> Result<(), ToolOutput> {
    let rel = abs.strip_prefix(ctx.workspace.root()).unwrap_or(abs);
    match ctx.policy.protected(rel) {
        Some(p) => Err(ToolOutput::error(
            ErrorClass::PolicyDenied,
            format!(
                "{} lies in the protected path {}: no tool may change it. Do not retry; ask the user",
                rel.display(),
                p.display()
            ),
        )),
        None => Ok(()),
    }
}

/// A NotFound output that suggests files with the same name elsewhere.
/// A FIFO, socket or device: reading one can block forever, so the tools
/// never open them.
pub(crate) fn not_regular(rel: &str) -> ToolOutput {
    ToolOutput::error(
        ErrorClass::InvalidArgs,
        format!("{rel} is not a regular file (a pipe, socket or device); the tools only open regular files"),
    )
}

pub(crate) fn not_found(ctx: &ToolContext<'_>, given: &str, abs: &Path) -> ToolOutput {
    let rel = ctx.workspace.relative(abs);
    let name = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut similar = Vec::new();
    if !name.is_empty() {
        let mut seen = 0;
        for e in walker(ctx.workspace.root(), None, false).build().flatten() {
            seen += 1;
            if seen > 50_000 || similar.len() >= 5 {
                break;
            }
            if e.file_name().to_string_lossy() == name && e.path() != abs {
                similar.push(ctx.workspace.relative(e.path()));
            }
        }
    }
    let hint = if similar.is_empty() {
        // Said as a path: a small model that passes a tool's name as the
        // path ("list_dir") read "list_dir does not exist" as the tool's.
        "list_dir on a folder shows what is in it; glob finds a file by name".to_string()
    } else {
        format!("did you mean: {}?", similar.join(", "))
    };
    let shown = if given.trim().is_empty() {
        rel
    } else {
        given.to_string()
    };
    ToolOutput::error(
        ErrorClass::NotFound,
        format!("no file or folder \"{shown}\" in the workspace; {hint}"),
    )
}

fn human_size(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else if bytes >= 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

// ---------------------------------------------------------------------------

/// `list_dir`: a tree of a folder.
pub(crate) struct ListDir;

pub(crate) const LIST_CAP: usize = 200;
const LIST_COUNT_LIMIT: usize = 100_000;

impl Tool for ListDir {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir",
            description: "List files and folders as a tree (folders end with /), skipping ignored files. Use it to see how the project is laid out.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "folder, relative to the workspace root (default \".\")"},
                    "depth": {"type": "integer", "description": "how many levels to show (default 2, max 4)"}
                }
            }),
            access: Access::Read,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(args, "list_dir", r#"{"path": "src", "depth": 2}"#) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (path, depth) = match (a.opt_str("path"), a.opt_int("depth")) {
            (Ok(p), Ok(d)) => (p.unwrap_or_else(|| ".".into()), d.unwrap_or(2)),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let depth = depth.clamp(1, 4) as usize;
        let abs = match resolve(ctx, &path) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let meta = match std::fs::metadata(&abs) {
            Ok(m) => m,
            Err(_) => return not_found(ctx, &path, &abs),
        };
        let rel = ctx.workspace.relative(&abs);
        if !meta.is_dir() {
            return ToolOutput::ok(format!(
                "{rel} is a file ({}); use read_file to read it",
                human_size(meta.len())
            ));
        }
        let mut lines = Vec::new();
        let mut more = 0usize;
        for entry in walker(&abs, Some(depth), true).build() {
            if ctx.cancel.is_cancelled() {
                break;
            }
            let Ok(e) = entry else { continue };
            if e.depth() == 0 {
                continue;
            }
            if lines.len() >= LIST_CAP {
                more += 1;
                if more >= LIST_COUNT_LIMIT {
                    break;
                }
                continue;
            }
            let name = e.file_name().to_string_lossy();
            let indent = "  ".repeat(e.depth() - 1);
            let ft = e.file_type();
            let line = if ft.is_some_and(|t| t.is_symlink()) {
                let target = std::fs::read_link(e.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                format!("{indent}{name} -> {target}")
            } else if ft.is_some_and(|t| t.is_dir()) {
                if HEAVY_DIRS.contains(&name.as_ref()) {
                    format!("{indent}{name}/ (not expanded)")
                } else {
                    format!("{indent}{name}/")
                }
            } else {
                format!("{indent}{name}")
            };
            lines.push(line);
        }
        let header = if rel == "." {
            "./".to_string()
        } else {
            format!("{rel}/")
        };
        let mut out = header;
        out.push('\n');
        if lines.is_empty() {
            out.push_str("(empty)\n");
        }
        for l in &lines {
            out.push_str(l);
            out.push('\n');
        }
        if more > 0 {
            let n = if more >= LIST_COUNT_LIMIT {
                format!("{more}+")
            } else {
                more.to_string()
            };
            out.push_str(&format!(
                "... {n} more entries; list a subfolder or use a smaller depth\n"
            ));
        }
        ToolOutput::ok(out.trim_end().to_string())
    }
}

// ---------------------------------------------------------------------------

/// `read_file`: numbered lines of a text file.
pub(crate) struct ReadFile;

/// Lines per call.
pub(crate) const READ_MAX_LINES: usize = 400;
/// Bytes of text per call.
pub(crate) const READ_MAX_BYTES: usize = 24 * 1024;
/// A longer line is cut.
pub(crate) const READ_MAX_LINE_BYTES: usize = 2000;
/// Bytes a call reads however full the context is: one screen.
const READ_MIN_BYTES: usize = 2048;

impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file",
            description: "Read a text file with line numbers (up to 400 lines per call; use start_line/end_line for more). Read a file before you edit it.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start_line": {"type": "integer", "description": "first line, 1-based (default 1)"},
                    "end_line": {"type": "integer", "description": "last line, inclusive"}
                },
                "required": ["path"]
            }),
            access: Access::Read,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(
            args,
            "read_file",
            r#"{"path": "src/main.rs", "start_line": 1}"#,
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (path, start, end) = match (
            a.req_str("path"),
            a.opt_int("start_line"),
            a.opt_int("end_line"),
        ) {
            (Ok(p), Ok(s), Ok(e)) => (p, s, e),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
        };
        let start = start.unwrap_or(1).max(1) as usize;
        if let Some(e) = end {
            if e < start as i64 {
                return a.error(format_args!(
                    "end_line ({e}) is before start_line ({start})"
                ));
            }
        }
        let end = end.map(|e| e as usize);
        // `NAME@VERSION/path`: a dependency's file (read-only, only inside
        // the project's resolved dependencies), when the workspace has none
        // of that name.
        let dependency = match ctx.workspace.resolve(&path) {
            Ok(abs) if abs.exists() => None,
            _ => ctx
                .search
                .as_deref_mut()
                .and_then(|s| s.dependency_file(&path)),
        };
        let (abs, rel) = match dependency {
            Some(Ok(abs)) => (abs, path.clone()),
            Some(Err(why)) => return ToolOutput::error(ErrorClass::PolicyDenied, why),
            None => match resolve(ctx, &path) {
                Ok(abs) => {
                    let rel = ctx.workspace.relative(&abs);
                    (abs, rel)
                }
                Err(e) => return e,
            },
        };
        let meta = match std::fs::metadata(&abs) {
            Ok(m) => m,
            Err(_) => return not_found(ctx, &path, &abs),
        };
        if meta.is_dir() {
            return ToolOutput::error(
                ErrorClass::InvalidArgs,
                format!("{rel} is a folder; use list_dir to see what is in it"),
            );
        }
        if !meta.is_file() {
            return not_regular(&rel);
        }
        if agent_lang::walk::is_secret_file(&rel) {
            return ToolOutput::error(
                ErrorClass::PolicyDenied,
                format!("{rel} holds secrets (credentials by convention), so the agent does not read it; ask the user for the part you need"),
            );
        }
        // What the context window has room for, within the per-call caps.
        let max_bytes = READ_MAX_BYTES.min(ctx.room.max(READ_MIN_BYTES));
        let read = match ctx
            .files
            .open(&abs)
            .and_then(|f| read_range(f, start, end, max_bytes))
        {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(ErrorClass::Io, format!("cannot read {rel}: {e}")),
        };
        let Some(read) = read else {
            return ToolOutput::error(
                ErrorClass::InvalidArgs,
                format!(
                    "{rel} is a binary file ({}); read_file only shows text. Use run_cmd with a tool like `file` or `xxd | head` if you must inspect it",
                    human_size(meta.len())
                ),
            );
        };
        ctx.ledger.hashes.insert(abs.clone(), read.sha256.clone());
        let size = if read.bytes > 100 * 1024 {
            format!(", {}", human_size(read.bytes))
        } else {
            String::new()
        };
        if read.total_lines == 0 {
            return ToolOutput::ok(format!("{rel} is empty (0 lines)"));
        }
        if start > read.total_lines {
            return ToolOutput::error(
                ErrorClass::InvalidArgs,
                format!(
                    "start_line {start} is past the end: {rel} has {} lines{size}",
                    read.total_lines
                ),
            );
        }
        let first = start;
        let last = first + read.lines.len().saturating_sub(1);
        let width = last.to_string().len().max(4);
        let mut out = if first == 1 && last == read.total_lines {
            format!("{rel} ({} lines{size})\n", read.total_lines)
        } else {
            format!("{rel} lines {first}-{last} of {}{size}\n", read.total_lines)
        };
        for (i, line) in read.lines.iter().enumerate() {
            out.push_str(&format!("{:>width$}| {line}\n", first + i));
        }
        let wanted_end = end.unwrap_or(read.total_lines).min(read.total_lines);
        if last < wanted_end && max_bytes < READ_MAX_BYTES {
            out.push_str(&format!(
                "[{} more not shown: the context window has room for about {} KB of this file now; call read_file with start_line={} to continue]\n",
                agent_base::term::counted(wanted_end - last, "line"),
                max_bytes.div_ceil(1024),
                last + 1
            ));
        } else if last < wanted_end {
            out.push_str(&format!(
                "[{} more not shown (limit {READ_MAX_LINES} lines / {} KB per call); call read_file with start_line={} to continue]\n",
                agent_base::term::counted(wanted_end - last, "line"),
                READ_MAX_BYTES / 1024,
                last + 1
            ));
        } else if last < read.total_lines {
            out.push_str(&format!("[{rel} has {} lines]\n", read.total_lines));
        }
        ToolOutput::ok(out.trim_end().to_string())
    }
}

/// What [`read_range`] found.
pub(crate) struct RangeRead {
    /// The lines from the start (lossy UTF-8, `\r` stripped, long lines cut).
    pub lines: Vec<String>,
    pub total_lines: usize,
    pub bytes: u64,
    /// sha256 of the whole file.
    pub sha256: String,
}

/// Streams a file once: hashes all of it, counts its lines and keeps lines
/// `start..=end` within the per-call line cap and `max_bytes`. `None` for binary files (a NUL in
/// the first 8 KiB).
pub(crate) fn read_range(
    mut f: impl Read,
    start: usize,
    end: Option<usize>,
    max_bytes: usize,
) -> std::io::Result<Option<RangeRead>> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut lines = Vec::new();
    let mut out_bytes = 0usize;
    let mut collecting = true;
    let mut line_no = 1usize;
    let mut cur: Vec<u8> = Vec::new();
    let mut cur_len = 0usize;
    let mut total = 0u64;
    let mut last_byte = b'\n';
    let mut first_chunk = true;
    let end = end.unwrap_or(usize::MAX);
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        if first_chunk {
            first_chunk = false;
            if chunk[..n.min(8192)].contains(&0) {
                return Ok(None);
            }
        }
        hasher.update(chunk);
        total += n as u64;
        last_byte = chunk[n - 1];
        let mut rest = chunk;
        loop {
            let nl = rest.iter().position(|&b| b == b'\n');
            let seg = &rest[..nl.unwrap_or(rest.len())];
            let in_range = collecting && line_no >= start && line_no <= end;
            if in_range && cur.len() < READ_MAX_LINE_BYTES {
                let take = seg.len().min(READ_MAX_LINE_BYTES - cur.len());
                cur.extend_from_slice(&seg[..take]);
            }
            cur_len += seg.len();
            let Some(nl) = nl else { break };
            if in_range {
                let text = finish_line(&cur, cur_len);
                if lines.len() >= READ_MAX_LINES || out_bytes + text.len() > max_bytes {
                    collecting = false;
                } else {
                    out_bytes += text.len() + 1;
                    lines.push(text);
                }
            }
            cur.clear();
            cur_len = 0;
            line_no += 1;
            rest = &rest[nl + 1..];
        }
    }
    // A last line without a newline.
    let total_lines = if total == 0 {
        0
    } else if last_byte == b'\n' {
        line_no - 1
    } else {
        if collecting && line_no >= start && line_no <= end {
            let text = finish_line(&cur, cur_len);
            if lines.len() < READ_MAX_LINES && out_bytes + text.len() <= max_bytes {
                lines.push(text);
            }
        }
        line_no
    };
    Ok(Some(RangeRead {
        lines,
        total_lines,
        bytes: total,
        sha256: hex::encode(hasher.finalize()),
    }))
}

fn finish_line(kept: &[u8], full_len: usize) -> String {
    let mut s = String::from_utf8_lossy(kept).into_owned();
    if s.ends_with('\r') {
        s.pop();
    }
    if full_len > kept.len() {
        s.push_str(&format!(
            " … [line cut: {} more bytes]",
            full_len - kept.len()
        ));
    }
    s
}

// ---------------------------------------------------------------------------

/// `glob`: files whose path matches a pattern.
pub(crate) struct Glob;

pub(crate) const GLOB_CAP: usize = 100;

/// Compiles a user glob: without a `/` it matches file names anywhere
/// (`*.rs`), with one it matches workspace-relative paths (`src/**/*.rs`).
pub(crate) fn compile_glob(pattern: &str) -> Result<(globset::GlobMatcher, bool), String> {
    let p = pattern.trim().trim_start_matches("./");
    let by_name = !p.contains('/');
    let glob = globset::GlobBuilder::new(p)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("invalid glob `{pattern}`: {e}"))?;
    Ok((glob.compile_matcher(), by_name))
}

impl Tool for Glob {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob",
            description: "Find files by path pattern, e.g. \"src/**/*.rs\" or \"*.py\" (a pattern without / matches file names anywhere).",
            parameters: json!({
                "type": "object",
                "properties": {"pattern": {"type": "string"}},
                "required": ["pattern"]
            }),
            access: Access::Read,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(args, "glob", r#"{"pattern": "src/**/*.rs"}"#) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let pattern = match a.req_str("pattern") {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (matcher, by_name) = match compile_glob(&pattern) {
            Ok(m) => m,
            Err(e) => return a.error(e),
        };
        let root = ctx.workspace.root().to_path_buf();
        let mut found = Vec::new();
        let mut more = 0usize;
        for e in walker(&root, None, false).build().flatten() {
            if ctx.cancel.is_cancelled() {
                break;
            }
            if !e.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = ctx.workspace.relative(e.path());
            let hit = if by_name {
                matcher.is_match(e.file_name())
            } else {
                matcher.is_match(&rel)
            };
            if hit {
                if found.len() < GLOB_CAP {
                    found.push(rel);
                } else {
                    more += 1;
                }
            }
        }
        if found.is_empty() {
            return ToolOutput::ok(format!(
                "no files match `{pattern}` (ignored files are skipped); try a broader pattern like \"**/*{}\" or use list_dir",
                Path::new(&pattern)
                    .extension()
                    .map(|e| format!(".{}", e.to_string_lossy()))
                    .unwrap_or_default()
            ));
        }
        let mut out = found.join("\n");
        if more > 0 {
            out.push_str(&format!("\n... {more} more files; use a narrower pattern"));
        }
        ToolOutput::ok(out)
    }
}

// ---------------------------------------------------------------------------

/// `write_file`: creates a file, or replaces one the model has read.
pub(crate) struct WriteFile;

impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file",
            description: "Create a new file with the given content (folders are created). To replace an existing file you must read_file it first; for small changes prefer edit.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"}
                },
                "required": ["path", "content"]
            }),
            access: Access::Write,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(
            args,
            "write_file",
            r#"{"path": "src/new.py", "content": "print('hi')\n"}"#,
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (path, content) = match (a.req_str("path"), a.req_str("content")) {
            (Ok(p), Ok(c)) => (p, c),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let abs = match resolve_writable(ctx, &path) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let rel = ctx.workspace.relative(&abs);
        let old = match std::fs::metadata(&abs) {
            Ok(m) if m.is_dir() => {
                return ToolOutput::error(
                    ErrorClass::InvalidArgs,
                    format!("{rel} is a folder; give a file path"),
                )
            }
            Ok(_) => match ctx.files.read(&abs) {
                Ok(b) => Some(b),
                Err(e) => {
                    return ToolOutput::error(ErrorClass::Io, format!("cannot read {rel}: {e}"))
                }
            },
            Err(_) => None,
        };
        if let Some(old) = &old {
            if let Err(e) = check_fresh(ctx, &abs, &rel, old) {
                return e;
            }
        }
        let created = old.is_none();
        let change = FileChange {
            abs,
            rel: rel.clone(),
            old,
            new: Some(content.clone().into_bytes()),
            mode: None,
        };
        let applied = match change::apply(ctx, vec![change], &format!("write_file {rel}")) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let lines = content.lines().count();
        let text = match applied.stats.first() {
            None => format!("{rel} already has exactly this content; nothing changed"),
            Some(_) if created => format!("created {rel} ({lines} lines)"),
            Some(s) => format!(
                "wrote {rel}: +{} -{} lines ({lines} lines now)",
                s.added, s.removed
            ),
        };
        ToolOutput {
            ok: true,
            content: applied.report(text),
            diff: Some(applied.diff).filter(|d| !d.is_empty()),
            changed: applied.stats.into_iter().map(|s| s.rel).collect(),
            ..ToolOutput::default()
        }
    }
}

/// The ledger rule for changing an existing file: read first, unchanged since.
pub(crate) fn check_fresh(
    ctx: &ToolContext<'_>,
    abs: &Path,
    rel: &str,
    current: &[u8],
) -> Result<(), ToolOutput> {
    match ctx.ledger.hashes.get(abs) {
        None => Err(ToolOutput::error(
            ErrorClass::StaleRead,
            format!("you have not read {rel} yet; call read_file on it first, then retry"),
        )),
        Some(h) if *h != sha256_hex(current) => Err(ToolOutput::error(
            ErrorClass::StaleRead,
            format!(
                "{rel} changed since you read it (by the user or a command); read it again with read_file, then retry"
            ),
        )),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_range_counts_hashes_and_caps() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        let content: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, &content).unwrap();
        let r = read_range(std::fs::File::open(&p).unwrap(), 1, None, READ_MAX_BYTES)
            .unwrap()
            .unwrap();
        assert_eq!(r.total_lines, 1000);
        assert_eq!(r.lines.len(), READ_MAX_LINES);
        assert_eq!(r.lines[0], "line 1");
        assert_eq!(r.sha256, sha256_hex(content.as_bytes()));
        let r = read_range(
            std::fs::File::open(&p).unwrap(),
            998,
            Some(2000),
            READ_MAX_BYTES,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.lines, ["line 998", "line 999", "line 1000"]);

        std::fs::write(&p, "a\r\nb").unwrap();
        let r = read_range(std::fs::File::open(&p).unwrap(), 1, None, READ_MAX_BYTES)
            .unwrap()
            .unwrap();
        assert_eq!(r.total_lines, 2);
        assert_eq!(r.lines, ["a", "b"]);

        std::fs::write(&p, "").unwrap();
        assert_eq!(
            read_range(std::fs::File::open(&p).unwrap(), 1, None, READ_MAX_BYTES)
                .unwrap()
                .unwrap()
                .total_lines,
            0
        );

        std::fs::write(&p, b"\x00\x01bin").unwrap();
        assert!(
            read_range(std::fs::File::open(&p).unwrap(), 1, None, READ_MAX_BYTES)
                .unwrap()
                .is_none()
        );

        let long = "x".repeat(5000);
        std::fs::write(&p, format!("{long}\nshort\n")).unwrap();
        let r = read_range(std::fs::File::open(&p).unwrap(), 1, None, READ_MAX_BYTES)
            .unwrap()
            .unwrap();
        assert!(
            r.lines[0].contains("line cut: 3000 more bytes"),
            "{}",
            &r.lines[0][1990..]
        );
        assert_eq!(r.lines[1], "short");

        std::fs::write(&p, b"caf\xe9\n").unwrap();
        let r = read_range(std::fs::File::open(&p).unwrap(), 1, None, READ_MAX_BYTES)
            .unwrap()
            .unwrap();
        assert_eq!(r.lines[0], "caf\u{fffd}");
    }

    #[test]
    fn globs_by_name_or_path() {
        let (m, by_name) = compile_glob("*.rs").unwrap();
        assert!(by_name && m.is_match("main.rs"));
        let (m, by_name) = compile_glob("src/**/*.rs").unwrap();
        assert!(!by_name);
        assert!(m.is_match("src/a/b.rs") && m.is_match("src/b.rs"));
        assert!(!m.is_match("tests/b.rs"));
        assert!(compile_glob("src/[").is_err());
    }
}
