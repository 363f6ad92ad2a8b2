//! `search_semantic`: the code index behind a tool.

use serde::Serialize;
use serde_json::{json, Value};

use super::args::Args;
use super::grep::cut;
use super::{Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};

/// One retrieved chunk.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub path: String,
    pub start_line: usize,
    pub end_line: usize,
    pub symbol: String,
    pub score: f32,
    pub text: String,
}

/// Lines of each hit's text shown.
pub const SNIPPET_LINES: usize = 6;
/// Characters one result takes at most: its heading and snippet.
const HIT_CHARS: usize = 1200;

/// `search_semantic`: finds code by meaning through the code index.
pub struct SearchSemantic;

impl Tool for SearchSemantic {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_semantic",
            description: "Find code by meaning (e.g. \"where are HTTP retries handled\") in the code index; returns path:lines, symbol and a snippet. Use grep for exact names.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "k": {"type": "integer", "description": "how many results (default 5, max 20)"},
                    "scope": {"type": "string", "enum": ["project", "deps", "all"], "description": "project (default); deps: the project's dependencies at their locked versions, hits cited NAME@VERSION/path (read_file reads them); all: both"},
                    "package": {"type": "string", "description": "one dependency only (NAME or NAME@VERSION), with scope deps (the default then) or all"}
                },
                "required": ["query"]
            }),
            access: Access::Read,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(
            args,
            "search_semantic",
            r#"{"query": "where the config file is parsed", "k": 5}"#,
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let (query, k, scope) = match (a.req_str("query"), a.opt_int("k"), a.opt_str("scope")) {
            (Ok(q), Ok(k), Ok(s)) => (q, k.unwrap_or(5).clamp(1, 20) as usize, s),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
        };
        let package = match a.opt_str("package") {
            Ok(p) => p.filter(|p| !p.trim().is_empty()),
            Err(e) => return e,
        };
        let scope =
            scope.unwrap_or_else(|| if package.is_some() { "deps" } else { "project" }.into());
        if scope == "project" && package.is_some() {
            return a.error("`package` names a dependency: use it with scope deps or all");
        }
        if !["project", "deps", "all"].contains(&scope.as_str()) {
            return a.error(format_args!(
                "`scope` is project, deps or all, not {scope:?}"
            ));
        }
        if query.trim().is_empty() {
            return a.error("`query` is empty");
        }
        let Some(search) = ctx.search.as_deref_mut() else {
            return ToolOutput::error(
                ErrorClass::NotFound,
                "no code index for this workspace (the user can build it with `agent index`); use grep instead",
            );
        };
        // A result takes about its heading and six lines: what the context
        // window has room for decides how many.
        let asked = k;
        let k = k.min((ctx.room / HIT_CHARS).max(1));
        let hits = match search.search_in(&query, k, &scope, package.as_deref()) {
            Ok(h) => h,
            Err(e) => {
                return ToolOutput::error(
                    ErrorClass::Io,
                    format!("the code index failed: {e:#}; use grep instead"),
                )
            }
        };
        let note = search
            .note()
            .map(|n| format!("\n(note: {n})"))
            .unwrap_or_default();
        if hits.is_empty() {
            return ToolOutput::ok(format!(
                "no results for `{query}`; try other words, or grep for a name{note}"
            ));
        }
        let fewer = if k < asked && hits.len() == k {
            format!("\n(the {k} best of the {asked} asked for: the context window has room for these now)")
        } else {
            String::new()
        };
        ToolOutput::ok(format_hits(&hits) + &fewer + &note)
    }
}

/// What a hit's cut snippet tells the model; the user, shown the same
/// results as evidence, is told only how much was cut.
pub const MORE_LINES_HINT: &str = "; read_file to see them";

/// `path:start-end  symbol` and a trimmed snippet per hit.
pub fn format_hits(hits: &[Hit]) -> String {
    let mut out = String::new();
    for h in hits {
        let head = format!("{}:{}-{}  {}", h.path, h.start_line, h.end_line, h.symbol);
        out.push_str(head.trim_end());
        out.push('\n');
        let lines: Vec<&str> = h.text.lines().filter(|l| !l.trim().is_empty()).collect();
        for l in lines.iter().take(SNIPPET_LINES) {
            out.push_str("    ");
            out.push_str(&cut(l.trim_end(), 160));
            out.push('\n');
        }
        if lines.len() > SNIPPET_LINES {
            let more = lines.len() - SNIPPET_LINES;
            out.push_str(&format!(
                "    … ({more} more {}{MORE_LINES_HINT})\n",
                if more == 1 { "line" } else { "lines" }
            ));
        }
    }
    out.trim_end().to_string()
}
