//! End-to-end tests of the repo map through its public API only, so the same
//! file runs as unit tests (`crate` is this module) and as the
//! integration test `tests/repomap.rs` (where `crate` re-exports
//! `agent::repomap`).

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::{default_cache_path, DefKind, MapOptions, RepoMap};

/// The tokenizer stand-in: about 4 characters per token.
fn approx_tokens(s: &str) -> usize {
    s.len().div_ceil(4)
}

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Moves a file's mtime into the past, beyond the racy window, as for a file
/// not touched for a while.
fn age(root: &Path, rel: &str) {
    let f = std::fs::File::options()
        .write(true)
        .open(root.join(rel))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

const ENGINE_RS: &str = r#"use crate::config::EngineConfig;

/// A loaded model.
pub struct LlamaEngine {
    n_ctx: usize,
}

impl LlamaEngine {
    pub fn load(config: &EngineConfig) -> Result<Self, LlmError> {
        Ok(LlamaEngine { n_ctx: config.n_ctx })
    }

    fn warm_up(&self) {}
}

pub fn system_info() -> String {
    String::from("cpu")
}
"#;

const CONFIG_RS: &str = r#"#[derive(Default)]
pub struct EngineConfig {
    pub n_ctx: usize,
}

pub fn unused_config_helper() -> u32 {
    7
}
"#;

const MAIN_RS: &str = r#"use agent::engine::{LlamaEngine, system_info};
use agent::config::EngineConfig;

fn main() {
    let engine = LlamaEngine::load(&EngineConfig::default()).unwrap();
    println!("{}", system_info());
}
"#;

const CLI_RS: &str = r#"use crate::engine::LlamaEngine;

pub fn run(config: &crate::config::EngineConfig) {
    let _ = LlamaEngine::load(config);
}
"#;

const TOOLS_PY: &str = r#"import os
from .client import Client


class ToolError(Exception):
    pass


class ToolRunner:
    def __init__(self, client: Client):
        self.client = client

    def run_tool(self, name):
        return self.client.call(name)

    def _log(self, msg):
        pass


def make_runner():
    return ToolRunner(Client())
"#;

const CLIENT_PY: &str = r#"class Client:
    def call(self, name):
        return name
"#;

fn repo() -> tempfile::TempDir {
    agent_base::paths::isolate_for_tests();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/engine.rs", ENGINE_RS);
    write(root, "src/config.rs", CONFIG_RS);
    write(root, "src/main.rs", MAIN_RS);
    write(root, "src/cli.rs", CLI_RS);
    write(root, "py/tools.py", TOOLS_PY);
    write(root, "py/client.py", CLIENT_PY);
    write(root, "README.md", "# not tagged\n");
    dir
}

fn open(root: &Path) -> RepoMap {
    RepoMap::open(root, &default_cache_path(root))
}

#[test]
fn refresh_extracts_rust_and_python_tags() {
    let dir = repo();
    let mut map = open(dir.path());
    let stats = map.refresh().unwrap();
    assert_eq!(
        (stats.files, stats.parsed, stats.reused, stats.removed),
        (6, 6, 0, 0)
    );
    assert!(default_cache_path(dir.path()).exists());

    let engine = map.tags("src/engine.rs").unwrap();
    let load = engine.defs.iter().find(|d| d.name == "load").unwrap();
    assert_eq!(load.kind, DefKind::Method);
    assert_eq!(
        load.signature,
        "pub fn load(config: &EngineConfig) -> Result<Self, LlmError>"
    );
    assert_eq!(engine.scope_names(load), ["impl LlamaEngine"]);
    assert!(engine.ref_count("EngineConfig") >= 2);

    let tools = map.tags("py/tools.py").unwrap();
    let run = tools.defs.iter().find(|d| d.name == "run_tool").unwrap();
    assert_eq!((run.kind, run.public), (DefKind::Method, true));
    assert_eq!(tools.scope_names(run), ["class ToolRunner:"]);
    assert!(!tools.defs.iter().find(|d| d.name == "_log").unwrap().public);
    assert!(tools.ref_count("Client") >= 2);
    assert!(map.tags("README.md").is_none());
}

#[test]
fn definitions_are_found_by_name_and_by_qualified_name() {
    let dir = repo();
    let mut map = open(dir.path());
    map.refresh().unwrap();
    let load = map.definitions("load");
    assert_eq!(load.len(), 1, "{load:?}");
    assert_eq!(
        (load[0].path.as_str(), load[0].line, load[0].kind),
        ("src/engine.rs", 9, DefKind::Method)
    );
    assert_eq!(load[0].scopes, ["impl LlamaEngine"]);
    assert_eq!(map.definitions("LlamaEngine::load"), load);
    assert!(map.definitions("EngineConfig::load").is_empty());
    let run = map.definitions("ToolRunner.run_tool");
    assert_eq!((run[0].path.as_str(), run[0].line), ("py/tools.py", 13));
    assert_eq!(map.definitions("EngineConfig")[0].path, "src/config.rs");
    assert!(map.definitions("no_such_symbol").is_empty());
    assert!(map.definitions(" :: ").is_empty());
}

#[test]
fn map_ranks_used_definitions_first_and_fits() {
    let dir = repo();
    let mut map = open(dir.path());
    map.refresh().unwrap();
    let out = map.render(&MapOptions::default(), &approx_tokens);
    assert!(out.tokens <= 1024 && out.tokens == approx_tokens(&out.text));
    assert_eq!(
        out.defs_shown, out.defs_total,
        "everything fits in 1024 tokens:\n{}",
        out.text
    );
    // The engine, its config, or the client class named like its module
    // (a front door, used by tools.py) leads.
    assert!(
        out.text.starts_with("src/engine.rs:\n")
            || out.text.starts_with("src/config.rs:\n")
            || out.text.starts_with("py/client.py:\n  class Client:\n")
    );
    assert!(out.text.contains(
        "  impl LlamaEngine\n    pub fn load(config: &EngineConfig) -> Result<Self, LlmError>\n"
    ));
    assert!(out.text.contains("py/tools.py:\n"));
    assert_eq!(out.ranked_files.len(), 6);

    // A small budget keeps the map's first lines: the file of the best
    // definition first (the whole map is one tier, see `render`).
    let small = map.render(
        &MapOptions {
            token_budget: 50,
            ..MapOptions::default()
        },
        &approx_tokens,
    );
    assert!(small.tokens <= 50 && small.defs_shown > 0 && small.defs_shown < out.defs_total);
    assert!(out.text.starts_with(&small.text), "{}", small.text);
    // LlamaEngine and load are used by two files; unused_config_helper by
    // none: in the ranking's first tier, not in its last lines.
    let last_lines: Vec<&str> = out.text.lines().rev().take(4).collect();
    assert!(
        !last_lines.iter().any(|l| l.contains("pub fn load(")),
        "{}",
        out.text
    );
}

#[test]
fn focus_changes_the_top_file() {
    let dir = repo();
    let mut map = open(dir.path());
    map.refresh().unwrap();
    let opts = |focus: &[&str]| MapOptions {
        token_budget: 60,
        focus: focus.iter().map(|s| s.to_string()).collect(),
        recent_files: vec![],
    };
    let base = map.render(&opts(&[]), &approx_tokens);
    assert_ne!(base.ranked_files[0].0, "py/client.py");
    for focus in [
        &["py/client.py"][..],
        &["client.py"],
        &["Client"],
        &["Client.call"],
    ] {
        let out = map.render(&opts(focus), &approx_tokens);
        assert_eq!(out.ranked_files[0].0, "py/client.py", "focus {focus:?}");
        assert!(
            out.text.starts_with("py/client.py:\n"),
            "focus {focus:?}:\n{}",
            out.text
        );
    }
    // An identifier focus brings its definition's file to the top even
    // from a weak file.
    let mut tight = opts(&["unused_config_helper"]);
    tight.token_budget = 20;
    let out = map.render(&tight, &approx_tokens);
    assert_eq!(
        out.text,
        "src/config.rs:\n  pub struct EngineConfig\n  pub fn unused_config_helper() -> u32\n"
    );
}

#[test]
fn render_never_exceeds_the_budget() {
    let dir = repo();
    let root = dir.path();
    // A bigger repository: 40 modules calling each other.
    for i in 0..40 {
        let mut src = format!(
            "use crate::m{}::shared_{};\n\npub struct Widget{i} {{ x: u32 }}\n\n",
            (i + 1) % 40,
            (i + 1) % 40
        );
        src.push_str(&format!("impl Widget{i} {{\n"));
        for j in 0..5 {
            src.push_str(&format!(
                "    pub fn method_{j}_with_a_longish_name(&self, first: u32, second: &str) -> Option<u32> {{ None }}\n"
            ));
        }
        src.push_str("}\n\n");
        src.push_str(&format!(
            "pub fn shared_{i}() -> u32 {{ shared_{}() + Widget{}::new() }}\n",
            (i + 7) % 40,
            (i + 3) % 40
        ));
        write(root, &format!("src/m{i}.rs"), &src);
    }
    let mut map = open(root);
    map.refresh().unwrap();
    let mut last = 0;
    for budget in (0..50)
        .chain((50..=2000).step_by(37))
        .chain([5000, 100_000])
    {
        let out = map.render(
            &MapOptions {
                token_budget: budget,
                ..MapOptions::default()
            },
            &approx_tokens,
        );
        assert!(
            out.tokens <= budget,
            "budget {budget}: {} tokens",
            out.tokens
        );
        assert_eq!(out.tokens, approx_tokens(&out.text));
        assert!(out.defs_shown >= last, "a bigger budget never shows less");
        last = out.defs_shown;
        // The smallest first entry, "py/client.py:\n  class Client:\n", is 8 tokens.
        if budget < 8 {
            assert_eq!(out.text, "", "tiny budget gives an empty map");
        }
    }
    assert_eq!(
        last,
        map.render(&MapOptions::default(), &approx_tokens)
            .defs_total
    );
}

#[test]
fn editing_one_file_reparses_only_that_file() {
    let dir = repo();
    let root = dir.path();
    let mut map = open(root);
    map.refresh().unwrap();
    let before_cli = map.tags("src/cli.rs").unwrap().clone();

    let unchanged = map.refresh().unwrap();
    assert_eq!(
        (unchanged.parsed, unchanged.reused, unchanged.removed),
        (0, 6, 0)
    );

    write(
        root,
        "src/config.rs",
        &CONFIG_RS.replace("unused_config_helper", "renamed_helper"),
    );
    let stats = map.refresh().unwrap();
    assert_eq!(
        (stats.files, stats.parsed, stats.reused, stats.removed),
        (6, 1, 5, 0)
    );
    let config = map.tags("src/config.rs").unwrap();
    assert!(config.defs.iter().any(|d| d.name == "renamed_helper"));
    assert!(config.defs.iter().all(|d| d.name != "unused_config_helper"));
    assert_eq!(map.tags("src/cli.rs").unwrap(), &before_cli);

    // The same through the watcher's entry point, and a deletion.
    write(
        root,
        "py/client.py",
        "class Client:\n    def call_v2(self):\n        pass\n",
    );
    std::fs::remove_file(root.join("src/cli.rs")).unwrap();
    let stats = map
        .update_files(&["py/client.py".into(), "./src/cli.rs".into()])
        .unwrap();
    assert_eq!((stats.files, stats.parsed, stats.removed), (5, 1, 1));
    assert!(map
        .tags("py/client.py")
        .unwrap()
        .defs
        .iter()
        .any(|d| d.name == "call_v2"));
    assert!(map.tags("src/cli.rs").is_none());

    // A new process sees the same tags from the cache, without parsing, once
    // the write in flight is committed.
    map.flush();
    let mut reopened = open(root);
    assert_eq!(reopened.len(), 5);
    let stats = reopened.refresh().unwrap();
    assert_eq!((stats.parsed, stats.reused), (0, 5));
    assert_eq!(reopened.tags("src/config.rs"), map.tags("src/config.rs"));
}

#[test]
fn unchanged_size_and_old_mtime_skip_reading() {
    let dir = repo();
    let root = dir.path();
    for rel in ["src/engine.rs", "src/config.rs"] {
        age(root, rel);
    }
    let mut map = open(root);
    map.refresh().unwrap();
    // Same size, mtime put back: the fast path trusts the stat and never reads
    // the file (which is why the stale tag survives).
    let mtime = std::fs::metadata(root.join("src/config.rs"))
        .unwrap()
        .modified()
        .unwrap();
    write(
        root,
        "src/config.rs",
        &CONFIG_RS.replace("unused_config_helper", "unused_config_helpex"),
    );
    std::fs::File::options()
        .write(true)
        .open(root.join("src/config.rs"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let stats = map.refresh().unwrap();
    assert_eq!(stats.parsed, 0);
    assert!(map
        .tags("src/config.rs")
        .unwrap()
        .defs
        .iter()
        .any(|d| d.name == "unused_config_helper"));
    // A real edit moves the mtime and is picked up.
    age(root, "src/config.rs");
    let stats = map.refresh().unwrap();
    assert_eq!(stats.parsed, 1);
    assert!(map
        .tags("src/config.rs")
        .unwrap()
        .defs
        .iter()
        .any(|d| d.name == "unused_config_helpex"));
}

#[test]
fn corrupt_cache_is_rebuilt() {
    let dir = repo();
    let root = dir.path();
    let cache = default_cache_path(root);
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, vec![0xA5u8; 64 * 1024]).unwrap();
    let mut map = open(root);
    assert!(map.is_empty());
    let stats = map.refresh().unwrap();
    assert_eq!(stats.parsed, 6);
    drop(map);
    // The rebuilt cache is a working one.
    let mut map = open(root);
    assert_eq!(map.len(), 6);
    assert_eq!(map.refresh().unwrap().parsed, 0);

    // Garbage written over a live cache (e.g. a crash of something else).
    std::fs::write(&cache, b"SQLite format 3\0 but then garbage".repeat(100)).unwrap();
    let _ = std::fs::remove_file(cache.with_extension("sqlite-wal"));
    let mut map = open(root);
    assert_eq!(map.refresh().unwrap().files, 6);
}

#[test]
fn output_is_byte_stable() {
    let dir = repo();
    let root = dir.path();
    let opts = MapOptions {
        token_budget: 200,
        focus: vec!["LlamaEngine".into()],
        recent_files: vec!["src/cli.rs".into()],
    };
    let mut one = open(root);
    one.refresh().unwrap();
    let first = one.render(&opts, &approx_tokens);
    assert_eq!(first, one.render(&opts, &approx_tokens));
    // Tags freshly parsed in another place (no cache) give the same text.
    let other = tempfile::tempdir().unwrap();
    let mut two = RepoMap::open(root, &other.path().join("c.sqlite"));
    two.refresh().unwrap();
    assert_eq!(first, two.render(&opts, &approx_tokens));
    // And tags loaded back from the cache, too.
    drop(one);
    let three = open(root);
    assert_eq!(first, three.render(&opts, &approx_tokens));
}

#[test]
fn generated_files_get_no_tags_and_are_not_reread() {
    let dir = repo();
    let generated =
        "// @generated by protoc. DO NOT EDIT.\npub fn generated_helper() -> u32 { 1 }\n";
    write(dir.path(), "src/proto.rs", generated);
    let rels = [
        "src/engine.rs",
        "src/config.rs",
        "src/main.rs",
        "src/cli.rs",
        "py/tools.py",
        "py/client.py",
        "src/proto.rs",
    ];
    for rel in rels {
        age(dir.path(), rel);
    }
    let mut map = open(dir.path());
    map.refresh().unwrap();
    assert!(map.tags("src/proto.rs").is_some_and(|t| t.defs.is_empty()));
    let out = map.render(&MapOptions::default(), &approx_tokens);
    assert!(!out.text.contains("generated_helper"), "{}", out.text);
    map.flush();
    // Known by its stat from now on, like every other file: nothing is read.
    let stats = open(dir.path()).refresh().unwrap();
    assert_eq!((stats.parsed, stats.reused), (0, rels.len()), "{stats:?}");
}

/// A tokenizer stand-in that splits as BPE pre-tokenizers do: runs of
/// letters or digits, single other characters.
fn words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut last_word = None;
    for (i, c) in s.char_indices() {
        let word = c.is_alphanumeric() || c == '_';
        if i > start && !(word && last_word == Some(true)) {
            out.push(&s[start..i]);
            start = i;
        }
        last_word = Some(word);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

#[test]
fn a_smaller_budget_gives_a_prefix_of_a_larger_ones_map() {
    // Real code: the fixture's four files of this repository.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/rust");
    let cache = tempfile::tempdir().unwrap();
    let mut map = RepoMap::open(&root, &cache.path().join("c.sqlite"));
    map.refresh().unwrap();
    let count = |s: &str| words(s).len();
    for focus in [vec![], vec!["walk".to_string(), "Chunk".to_string()]] {
        let at = |token_budget: usize| {
            let opts = MapOptions {
                token_budget,
                focus: focus.clone(),
                recent_files: Vec::new(),
            };
            map.render(&opts, &count)
        };
        let full = at(1_000_000);
        assert!(full.defs_shown > 100, "{}", full.defs_shown);
        let mut last = at(0);
        let mut grew = 0;
        for budget in (16..count(&full.text) + 64).step_by(37) {
            let out = at(budget);
            assert!(out.tokens <= budget, "{budget}: {}", out.tokens);
            assert!(
                out.text.starts_with(&last.text),
                "{budget}:\n{}\n--- not a prefix of ---\n{}",
                last.text,
                out.text
            );
            // Whole lines, each definition's after its headers.
            assert!(out.text.is_empty() || out.text.ends_with('\n'));
            assert!(!out.text.lines().last().unwrap_or("  x").ends_with(':'));
            // As tokens too: the smaller map's are the larger one's first.
            let (small, large) = (words(&last.text), words(&out.text));
            assert_eq!(small[..], large[..small.len()], "{budget}");
            grew += usize::from(out.defs_shown > last.defs_shown);
            last = out;
        }
        assert_eq!(last.text, full.text);
        assert!(grew > 20, "{grew}");
    }
}
