//! The tools: `search`, `map`, `definitions`, `index_status`. Each takes its
//! arguments as a type that both parses them and describes them (the JSON
//! Schema clients see), and answers in Markdown that chat clients render:
//! paths with line ranges, code in fences.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use agent_base::tokens::estimate_tokens;
use agent_index::{Index, SearchMode, SearchQuery, SearchResult};
use agent_lang::walk::Lang;
use agent_repomap::{default_cache_path, MapOptions, RepoMap, DEFAULT_TOKEN_BUDGET};

use crate::{Answer, Failure};

/// What the server tells a client about itself at the handshake.
pub const INSTRUCTIONS: &str =
    "The code index and repo map of one repository, kept live as files change. \
Use `search` to find the code a question or an issue text is about (hybrid: meaning and keywords; \
`scope: \"deps\"` searches the project's dependencies at their locked versions), \
`definitions` to find where a symbol is defined, `map` for a ranked outline of the repository's \
definitions (focused on paths or symbols), and `index_status` to see how complete the index is.";

/// Most results of one search.
const MAX_K: usize = 50;
/// Lines of a chunk shown in a search result; the rest is named.
const MAX_CHUNK_LINES: usize = 40;
/// The largest map a client can ask for, in tokens.
const MAX_MAP_TOKENS: usize = 32_768;

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for: a description ("where is the retry delay computed"),
    /// identifiers, or a whole issue text or bug report, which is taken apart
    /// (its title, the names and paths it mentions, its prose).
    pub query: String,
    /// How many results, best first (default 10, at most 50).
    #[serde(default)]
    pub k: Option<usize>,
    /// Only this language: bash, c, cpp, csharp, go, java, javascript, kotlin,
    /// lua, php, python, ruby, rust, swift, typescript, tsx, or text.
    #[serde(default)]
    pub lang: Option<String>,
    /// Only paths matching this glob, relative to the repository root, e.g.
    /// "src/**/*.rs".
    #[serde(default)]
    pub path: Option<String>,
    /// What to search: "project" (default), "deps" (the project's
    /// dependencies at the versions it locks, indexed by `agent index
    /// --deps`, results cited NAME@VERSION/path) or "all" (both).
    #[serde(default)]
    pub scope: Option<String>,
    /// Only this dependency ("tokio" or "tokio@1.47.1"); implies "deps"
    /// unless scope is "all".
    #[serde(default)]
    pub package: Option<String>,
}

/// A search of the project's dependencies: the query, its scope ("deps" or
/// "all") and package; the results (paths cited NAME@VERSION/path) and
/// notes on what is not indexed. Given by the binary, which knows where
/// dependencies are resolved and indexed; this crate only serves.
pub type DepsSearch = Box<
    dyn FnMut(&SearchQuery, &str, Option<&str>) -> anyhow::Result<(Vec<SearchResult>, Vec<String>)>
        + Send,
>;

/// Arguments of `map`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapArgs {
    /// Paths ("src/engine.rs", "src/llm") or symbols ("LlamaEngine",
    /// "Engine::load") to rank higher, with what they use and what uses them.
    #[serde(default)]
    pub focus: Vec<String>,
    /// Size of the map in tokens, about four characters each (default 1024).
    #[serde(default)]
    pub tokens: Option<usize>,
}

/// Arguments of `definitions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionsArgs {
    /// A name ("load"), or one qualified by its enclosing type or module
    /// ("LlamaEngine::load", "ToolRunner.run_tool").
    pub symbol: String,
}

/// Arguments of `index_status` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A read-only tool's annotations: it changes nothing, asks nothing of the
/// world outside the repository, and the same call gives the same answer
/// while the files do not change.
fn read_only(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    title: &str,
    description: &'static str,
) -> Tool {
    Tool::new(name, description, schema_for_type::<T>())
        .with_title(title)
        .with_annotations(read_only(title))
}

/// The tools, as `tools/list` gives them.
pub fn specs() -> Vec<Tool> {
    vec![
        tool::<SearchArgs>(
            "search",
            "Search the code",
            "Hybrid search (meaning and keywords) of the repository's code index: the chunks \
             (functions, classes, sections) that best match a question, identifiers or a whole \
             issue text, grouped by file, best file first, with their code.",
        ),
        tool::<MapArgs>(
            "map",
            "Repository map",
            "A ranked outline of the repository's definitions (signatures grouped by file), \
             fitted to a token budget; focus it on paths or symbols to see them with what they \
             use and what uses them.",
        ),
        tool::<DefinitionsArgs>(
            "definitions",
            "Where is it defined",
            "Where a symbol is defined: file, line, kind and signature of each definition of the \
             name, from the repository's tags (tree-sitter, always current).",
        ),
        tool::<NoArgs>(
            "index_status",
            "Index status",
            "How complete and current the code index is: files, chunks, vectors, last update, \
             and whether this server keeps it live.",
        ),
    ]
}

/// The tools' state: the repository, its index reader (opened on first
/// use, reopened after an error) and its map.
pub struct Tools {
    root: PathBuf,
    index: Option<Index>,
    map: RepoMap,
    /// Whether this server's watcher keeps the index live.
    watching: bool,
    /// The dependencies' search, where the binary gives one.
    deps: Option<DepsSearch>,
}

impl Tools {
    pub fn open(root: &Path, watching: bool) -> Self {
        Self {
            root: root.to_path_buf(),
            index: None,
            map: RepoMap::open(root, &default_cache_path(root)),
            watching,
            deps: None,
        }
    }

    /// With `search`'s scopes "deps" and "all".
    pub fn with_deps(mut self, deps: Option<DepsSearch>) -> Self {
        self.deps = deps;
        self
    }

    /// Runs one call. Arguments that do not parse are the tool's error, said
    /// with what was expected, so a calling model can correct them.
    pub fn call(&mut self, name: &str, args: Value) -> Answer {
        match name {
            "search" => self.search(parse(name, args)?),
            "map" => self.render_map(parse(name, args)?),
            "definitions" => self.definitions(parse(name, args)?),
            "index_status" => parse::<NoArgs>(name, args).map(|_| self.status()),
            _ => Err(Failure::UnknownTool(format!(
                "unknown tool `{name}`; the tools are: {}",
                specs()
                    .iter()
                    .map(|t| t.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    fn search(&mut self, args: SearchArgs) -> Answer {
        if args.query.trim().is_empty() {
            return Err(Failure::Tool(
                "`query` is empty: give a question, identifiers or an issue text".into(),
            ));
        }
        let k = args.k.unwrap_or(10);
        if !(1..=MAX_K).contains(&k) {
            return Err(Failure::Tool(format!(
                "`k` is {k}: ask for 1 to {MAX_K} results"
            )));
        }
        if let Some(lang) = &args.lang {
            if Lang::from_name(lang).is_none() {
                return Err(Failure::Tool(format!(
                    "unknown language {lang:?}: use one of {}",
                    Lang::names().join(", ")
                )));
            }
        }
        let query = SearchQuery {
            text: args.query.clone(),
            k,
            mode: SearchMode::Hybrid,
            path_glob: args.path.clone(),
            lang: args.lang.clone(),
            ..SearchQuery::new("", 0)
        };
        let scope = match (args.scope.as_deref(), &args.package) {
            (None | Some("project"), Some(_)) => "deps",
            (None, None) => "project",
            (Some(s), _) => s,
        };
        if scope != "project" {
            return self.search_deps(&query, scope, args.package.as_deref());
        }
        let index = self.reader().map_err(Failure::Tool)?;
        let results = index.search(&query);
        let notes = index.notes().unwrap_or_default();
        let results = results.map_err(|e| {
            // The next call opens the index afresh (it may have been rebuilt).
            self.index = None;
            Failure::Tool(format!("the search failed: {e:#}"))
        })?;
        let mut out = notes_text(&notes);
        out.push_str(&format_results(&query, &results));
        Ok(out)
    }

    fn search_deps(&mut self, query: &SearchQuery, scope: &str, package: Option<&str>) -> Answer {
        if !["deps", "all"].contains(&scope) {
            return Err(Failure::Tool(format!(
                "`scope` is {scope:?}: use \"project\", \"deps\" or \"all\""
            )));
        }
        let Some(deps) = self.deps.as_mut() else {
            return Err(Failure::Tool(
                "this server searches the project only (started without its dependencies)".into(),
            ));
        };
        let (results, notes) = deps(query, scope, package)
            .map_err(|e| Failure::Tool(format!("the search of the dependencies failed: {e:#}")))?;
        let mut out = notes_text(&notes);
        out.push_str(&format_results(query, &results));
        Ok(out)
    }

    fn render_map(&mut self, args: MapArgs) -> Answer {
        let budget = args.tokens.unwrap_or(DEFAULT_TOKEN_BUDGET);
        if !(1..=MAX_MAP_TOKENS).contains(&budget) {
            return Err(Failure::Tool(format!(
                "`tokens` is {budget}: ask for 1 to {MAX_MAP_TOKENS}"
            )));
        }
        self.refresh_map()?;
        let options = MapOptions {
            token_budget: budget,
            focus: args.focus,
            recent_files: Vec::new(),
        };
        let out = self.map.render(&options, &estimate_tokens);
        let mut text = self.index_notes();
        if out.text.trim().is_empty() {
            text.push_str(
                "The map is empty: no definitions were found in the repository's code files.\n",
            );
            return Ok(text);
        }
        text.push_str(&out.text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "\n({} tokens of {budget}; {} of {} definitions in {} files)\n",
            out.tokens, out.defs_shown, out.defs_total, out.files_shown
        ));
        Ok(text)
    }

    fn definitions(&mut self, args: DefinitionsArgs) -> Answer {
        if args.symbol.trim().is_empty() {
            return Err(Failure::Tool(
                "`symbol` is empty: give a name such as \"load\" or \"LlamaEngine::load\"".into(),
            ));
        }
        self.refresh_map()?;
        let found = self.map.definitions(&args.symbol);
        let mut text = self.index_notes();
        if found.is_empty() {
            text.push_str(&format!(
                "No definition of `{}` among the {} tagged files; `search` finds where it is used or mentioned.\n",
                args.symbol,
                self.map.len()
            ));
            return Ok(text);
        }
        text.push_str(&format!(
            "{} definition{} of `{}`:\n",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            args.symbol
        ));
        for d in found {
            let kind = serde_json::to_value(d.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let within = if d.scopes.is_empty() {
                String::new()
            } else {
                format!(" (in {})", d.scopes.join(" › "))
            };
            text.push_str(&format!(
                "- {}:{} {kind}{within}: `{}`\n",
                d.path, d.line, d.signature
            ));
        }
        Ok(text)
    }

    fn status(&mut self) -> String {
        if !has_index(&self.root) {
            return format!("{}\n", no_index_note(&self.root));
        }
        let watching = self.watching;
        let described = self.reader().and_then(|index| {
            index
                .status()
                .map(|mut s| {
                    // The writer is this server's own watcher, said below.
                    s.writer_active &= !watching;
                    s.describe()
                })
                .map_err(|e| format!("The index cannot be read: {e:#}"))
        });
        let mut text = described.unwrap_or_else(|e| {
            self.index = None;
            format!("{e}\n")
        });
        text.push_str(if self.watching {
            "  live         this server updates it as files change\n"
        } else {
            "  live         no: another process writes it (or it is shared); it is current as of its last update\n"
        });
        text
    }

    /// The index reader, opened on first use.
    fn reader(&mut self) -> Result<&mut Index, String> {
        let index = match self.index.take() {
            Some(index) => index,
            None => {
                if !has_index(&self.root) && agent_index::shared::configured().is_none() {
                    return Err(no_index_note(&self.root));
                }
                Index::open_reader(&self.root)
                    .map_err(|e| format!("The index cannot be opened: {e:#}"))?
            }
        };
        Ok(self.index.insert(index))
    }

    /// The map's tags brought up to date (only changed files are parsed).
    fn refresh_map(&mut self) -> Result<(), Failure> {
        self.map
            .refresh()
            .map(|_| ())
            .map_err(|e| Failure::Tool(format!("the repository cannot be read: {e:#}")))
    }

    /// What every answer says about the index when it is missing or partial.
    fn index_notes(&mut self) -> String {
        if !has_index(&self.root) && agent_index::shared::configured().is_none() {
            return notes_text(&[no_index_note(&self.root)]);
        }
        let notes = match self.reader() {
            Ok(index) => index.notes().unwrap_or_default(),
            Err(e) => vec![e],
        };
        notes_text(&notes)
    }
}

fn has_index(root: &Path) -> bool {
    agent_index::index_dir(root).join("state.sqlite").is_file()
}

fn no_index_note(root: &Path) -> String {
    format!(
        "There is no code index of {} yet, so `search` has nothing to search: run `agent index` \
         there (keyword search works within seconds, vectors follow). `map` and `definitions` \
         work without it.",
        root.display()
    )
}

/// Parses a call's arguments, or says what was expected.
fn parse<T: DeserializeOwned + JsonSchema + 'static>(
    tool: &str,
    args: Value,
) -> Result<T, Failure> {
    serde_json::from_value(args).map_err(|e| {
        Failure::Tool(format!(
            "invalid arguments for `{tool}`: {e}. Expected an object matching this schema: {}",
            Value::Object(Arc::unwrap_or_clone(schema_for_type::<T>()))
        ))
    })
}

fn notes_text(notes: &[String]) -> String {
    notes.iter().map(|n| format!("> Note: {n}\n\n")).collect()
}

/// Search results as Markdown: a heading per chunk (`path:lines`, symbol,
/// score), then its code in a fence.
fn format_results(query: &SearchQuery, results: &[SearchResult]) -> String {
    if results.is_empty() {
        let filters = match (&query.lang, &query.path_glob) {
            (None, None) => String::new(),
            _ => " (with these filters; try without `lang` or `path`)".into(),
        };
        return format!("No results{filters}.\n");
    }
    let mut out = format!(
        "{} result{}, grouped by file, best file first:\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" }
    );
    for r in results {
        let symbol = if r.symbol.is_empty() {
            String::new()
        } else {
            format!(" `{}`", r.symbol)
        };
        out.push_str(&format!(
            "\n### {}:{}-{}{symbol} (score {:.3})\n",
            r.path, r.start_line, r.end_line, r.score
        ));
        let lines: Vec<&str> = r.text.lines().collect();
        let shown = lines.len().min(MAX_CHUNK_LINES);
        let code = lines[..shown].join("\n");
        let fence = fence_for(&code);
        let lang = Lang::from_path(Path::new(&r.path)).as_str();
        out.push_str(&format!("{fence}{lang}\n{code}\n{fence}\n"));
        if shown < lines.len() {
            let more = lines.len() - shown;
            out.push_str(&format!(
                "({more} more {}, to line {}: read the file for the rest)\n",
                if more == 1 { "line" } else { "lines" },
                r.end_line
            ));
        }
    }
    out
}

/// A code fence longer than any run of backticks in `code` (CommonMark), so
/// code that holds a fence of its own cannot end ours.
fn fence_for(code: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in code.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_read_only_and_has_an_object_schema() {
        let specs = specs();
        let names: Vec<&str> = specs.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["search", "map", "definitions", "index_status"]);
        for t in &specs {
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(true), "{}", t.name);
            assert_eq!(a.destructive_hint, Some(false), "{}", t.name);
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        }
        let search = serde_json::to_value(&specs[0]).unwrap();
        assert_eq!(
            search["inputSchema"]["required"],
            serde_json::json!(["query"])
        );
        assert!(search["inputSchema"]["properties"]["k"]["description"]
            .as_str()
            .unwrap()
            .contains("at most 50"));
    }

    #[test]
    fn bad_arguments_are_the_tools_error_with_what_was_expected() {
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.py"),
            "def add(a, b):\n    return a + b\n",
        )
        .unwrap();
        let mut tools = Tools::open(dir.path(), false);
        let Err(Failure::Tool(e)) = tools.call("search", serde_json::json!({"k": 3})) else {
            panic!("a search without a query ran");
        };
        assert!(
            e.contains("missing field `query`") && e.contains("\"properties\""),
            "{e}"
        );
        let Err(Failure::Tool(e)) = tools.call("map", serde_json::json!({"tokens": "many"})) else {
            panic!("a map of \"many\" tokens rendered");
        };
        assert!(e.contains("invalid type"), "{e}");
        assert!(matches!(
            tools.call("definitions", serde_json::json!({"symbol": "add", "x": 1})),
            Err(Failure::Tool(e)) if e.contains("unknown field `x`")
        ));
        assert!(matches!(
            tools.call("rm_rf", serde_json::json!({})),
            Err(Failure::UnknownTool(e)) if e.contains("search, map, definitions, index_status")
        ));
        // Without an index: search says how to build one, the map still works.
        let Err(Failure::Tool(e)) = tools.call("search", serde_json::json!({"query": "add"}))
        else {
            panic!("a search without an index answered");
        };
        assert!(e.contains("run `agent index`"), "{e}");
        let found = tools
            .call("definitions", serde_json::json!({"symbol": "add"}))
            .unwrap();
        assert!(found.contains("no code index"), "{found}");
        assert!(
            found.contains("- a.py:1 function: `def add(a, b):`"),
            "{found}"
        );
    }

    #[test]
    fn dependencies_are_searched_through_the_binarys_search() {
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        let mut tools = Tools::open(dir.path(), false);
        let Err(Failure::Tool(e)) = tools.call(
            "search",
            serde_json::json!({"query": "timeout", "scope": "deps"}),
        ) else {
            panic!("a server without dependencies searched them");
        };
        assert!(e.contains("project only"), "{e}");
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let deps: DepsSearch = Box::new(move |q, scope, package| {
            seen.lock()
                .unwrap()
                .push(format!("{}|{scope}|{}", q.text, package.unwrap_or("-")));
            let hit = SearchResult {
                path: "tokio@1.47.1/src/time/timeout.rs".into(),
                start_line: 3,
                end_line: 4,
                symbol: "timeout".into(),
                kind: "function".into(),
                score: 0.7,
                text: "pub fn timeout() {}\n".into(),
            };
            Ok((
                vec![hit],
                vec!["2 direct dependencies are not indexed yet".into()],
            ))
        });
        let mut tools = tools.with_deps(Some(deps));
        let out = tools
            .call(
                "search",
                serde_json::json!({"query": "timeout", "package": "tokio"}),
            )
            .unwrap();
        assert!(
            out.contains("tokio@1.47.1/src/time/timeout.rs:3-4"),
            "{out}"
        );
        assert!(out.contains("not indexed yet"), "{out}");
        tools
            .call(
                "search",
                serde_json::json!({"query": "timeout", "scope": "all"}),
            )
            .unwrap();
        assert!(matches!(
            tools.call("search", serde_json::json!({"query": "t", "scope": "web"})),
            Err(Failure::Tool(e)) if e.contains("\"deps\"")
        ));
        assert_eq!(
            *asked.lock().unwrap(),
            vec!["timeout|deps|tokio", "timeout|all|-"]
        );
    }

    #[test]
    fn code_fences_outrun_the_code() {
        assert_eq!(fence_for("let x = 1;"), "```");
        assert_eq!(fence_for("```rust\nfn f() {}\n```"), "````");
    }
}
