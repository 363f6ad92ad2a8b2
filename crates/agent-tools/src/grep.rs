//! `grep`: regex search over the workspace with ripgrep's own crates
//! (grep-regex + grep-searcher), over the same ignore-aware walker as the
//! other tools. Binary files are skipped.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde_json::{json, Value};

use super::args::Args;
use super::fs::{compile_glob, not_found, resolve, walker};
use super::{Access, Tool, ToolContext, ToolOutput, ToolSpec};

/// Matches shown per call.
pub const GREP_CAP: usize = 50;
/// A matching line is cut after this many characters.
pub const GREP_LINE_CHARS: usize = 200;

pub struct Grep;

impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep",
            description: "Search file contents with a regex (ripgrep syntax); prints path:line: text. Use it to find where something is defined or used.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "regex, e.g. \"fn parse_\" or \"class \\\\w+Error\""},
                    "path": {"type": "string", "description": "folder or file to search (default \".\")"},
                    "glob": {"type": "string", "description": "only files matching this glob, e.g. \"*.py\""},
                    "case_insensitive": {"type": "boolean"}
                },
                "required": ["pattern"]
            }),
            access: Access::Read,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(args, "grep", r#"{"pattern": "fn main", "path": "src"}"#) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let pattern = match a.req_str("pattern") {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (path, glob, ci) = match (
            a.opt_str("path"),
            a.opt_str("glob"),
            a.opt_bool("case_insensitive"),
        ) {
            (Ok(p), Ok(g), Ok(c)) => (p.unwrap_or_else(|| ".".into()), g, c.unwrap_or(false)),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
        };
        if pattern.is_empty() {
            return a.error("`pattern` is empty");
        }
        let matcher = match RegexMatcherBuilder::new()
            .case_insensitive(ci)
            .line_terminator(Some(b'\n'))
            .build(&pattern)
        {
            Ok(m) => m,
            Err(e) => {
                return a.error(format_args!(
                    "invalid regex `{pattern}`: {e}. Escape special characters like ( ) [ ] {{ }} . * + ? with a backslash, or search for a plain word"
                ))
            }
        };
        let glob = match glob.as_deref().map(str::trim).filter(|g| !g.is_empty()) {
            Some(g) => match compile_glob(g) {
                Ok(m) => Some(m),
                Err(e) => return a.error(e),
            },
            None => None,
        };
        let abs = match resolve(ctx, &path) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if !abs.exists() {
            return not_found(ctx, &path, &abs);
        }
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        // A match line takes at most about its path and 200 characters: what
        // the context window has room for decides how many are shown.
        let cap = GREP_CAP.min((ctx.room / (GREP_LINE_CHARS + 60)).max(5));
        let mut shown: Vec<String> = Vec::new();
        let mut more_matches = 0usize;
        let mut more_files = 0usize;
        let mut files_searched = 0usize;
        for entry in walker(&abs, None, false).build() {
            if ctx.cancel.is_cancelled() {
                break;
            }
            let Ok(e) = entry else { continue };
            if !e.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = ctx.workspace.relative(e.path());
            if agent_lang::walk::is_secret_file(&rel) {
                continue;
            }
            if let Some((m, by_name)) = &glob {
                let hit = if *by_name {
                    m.is_match(e.file_name())
                } else {
                    m.is_match(&rel)
                };
                if !hit {
                    continue;
                }
            }
            files_searched += 1;
            let mut sink = Collect {
                keep: cap - shown.len().min(cap),
                lines: Vec::new(),
                hidden: 0,
                binary: false,
            };
            if searcher.search_path(&matcher, e.path(), &mut sink).is_err() || sink.binary {
                continue;
            }
            for (lnum, text) in sink.lines {
                shown.push(format!("{rel}:{lnum}: {text}"));
            }
            if sink.hidden > 0 {
                more_matches += sink.hidden;
                more_files += 1;
            }
        }
        let where_ = ctx.workspace.relative(&abs);
        if shown.is_empty() {
            return ToolOutput::ok(format!(
                "no matches for `{pattern}` in {where_} ({files_searched} files searched; ignored and binary files are skipped). Try a simpler pattern{}",
                if ci { "" } else { " or case_insensitive=true" }
            ));
        }
        let mut out = shown.join("\n");
        if more_matches > 0 {
            let why = if cap < GREP_CAP {
                " (the context window has room for these now)"
            } else {
                ""
            };
            out.push_str(&format!(
                "\n... {more_matches} more matches in {more_files} files{why}; narrow it with path, glob or a more specific pattern"
            ));
        }
        ToolOutput::ok(out)
    }
}

/// One file's matches: the first `keep` lines, a count of the rest, and
/// whether the file turned out binary (then all of it is dropped).
struct Collect {
    keep: usize,
    lines: Vec<(u64, String)>,
    hidden: usize,
    binary: bool,
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.lines.len() < self.keep {
            let text = String::from_utf8_lossy(m.bytes());
            let text = text.trim_end_matches(['\n', '\r']).trim_start();
            self.lines
                .push((m.line_number().unwrap_or(0), cut(text, GREP_LINE_CHARS)));
        } else {
            self.hidden += 1;
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

pub use agent_base::term::cut;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("abc", 3), "abc");
    }
}
