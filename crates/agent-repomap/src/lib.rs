//! Repo map: a compact, ranked outline of the repository for the system prompt.
//!
//! So that even a small model knows where things are before it calls a tool,
//! the prompt carries the most relevant definitions of the repository as
//! signature lines grouped by file. How it is made:
//!
//! 1. **Tags** ([`tags`]): tree-sitter queries find definitions (functions,
//!    methods, structs/classes, traits, enums, consts, modules, macros) with
//!    their signature line and enclosing scope, for Rust and Python. A
//!    lexical pre-pass ([`skeleton`]) first cuts function bodies, comments,
//!    attributes and imports out, collecting the file's references (calls,
//!    type uses, paths, imports) on the way: tree-sitter then parses about a
//!    seventh of the bytes. Files the lexer cannot follow are parsed whole,
//!    with reference queries.
//! 2. **Cache** ([`cache`]): tags per file in SQLite (`repomap.sqlite` in the
//!    workspace's state folder, [`default_cache_path`]), keyed by content
//!    hash; unchanged size+mtime skips even reading the file. A corrupt cache
//!    is rebuilt, never fatal.
//! 3. **Rank** ([`rank`]): personalized PageRank over a graph from
//!    referencing files to defining files, seeded by the request's focus and
//!    recently edited files; definitions get the rank flowing to them (types
//!    also what flows to their members), those of tests, examples and docs
//!    a tenth of it. A Rust file's `use` of a name defined in several files
//!    ([`imports`]) sends its references to the one it imports.
//! 4. **Fit** ([`render`]): the longest ranked prefix whose outline fits the
//!    token budget, counted by the chat model's own tokenizer.
//!
//! The text is a pure function of the tags and [`MapOptions`]: while the
//! repository does not change, the same options give byte-identical text, so
//! the model's KV cache of the system prompt stays valid.
//!
//! ```no_run
//! # use agent::repomap::{RepoMap, MapOptions, default_cache_path};
//! # let root = std::path::Path::new(".");
//! let mut map = RepoMap::open(root, &default_cache_path(root));
//! map.refresh()?;
//! let out = map.render(&MapOptions::for_context(8192), &|s: &str| s.len() / 4);
//! println!("{}", out.text);
//! # anyhow::Ok(())
//! ```

pub mod cache;
pub mod defs;
pub mod external;
pub mod imports;
pub mod rank;
pub mod render;
pub mod skeleton;
pub mod table_tags;
pub mod tags;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use agent_lang::walk::{self, Lang, SourceFile, WalkOptions};
use cache::{CachedFile, Row, TagCache};
pub use tags::{Def, DefKind, FileTags, Scope, ScopeKind};

/// Default share of the model's context window given to the map.
pub const DEFAULT_BUDGET_FRACTION: f64 = 0.125;
/// Budget when nothing else is known (an 8k context at the default fraction).
pub const DEFAULT_TOKEN_BUDGET: usize = 1024;
/// Parallel taggers at most (the machine may have fewer cores).
const MAX_THREADS: usize = 8;

/// What to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapOptions {
    /// Upper bound on the map's size in the chat model's tokens.
    pub token_budget: usize,
    /// Paths (`src/llm/engine.rs`, `engine.rs`, `src/llm`) or identifiers
    /// (`LlamaEngine`, `Engine::load`) the request mentions.
    pub focus: Vec<String>,
    /// Recently edited files (paths relative to the root).
    pub recent_files: Vec<String>,
}

impl Default for MapOptions {
    fn default() -> Self {
        MapOptions {
            token_budget: DEFAULT_TOKEN_BUDGET,
            focus: Vec::new(),
            recent_files: Vec::new(),
        }
    }
}

impl MapOptions {
    /// Options with the default budget for a context window of `context_tokens`.
    pub fn for_context(context_tokens: usize) -> Self {
        MapOptions {
            token_budget: budget_for_context(context_tokens, DEFAULT_BUDGET_FRACTION),
            ..MapOptions::default()
        }
    }
}

/// What a request asks the map to focus on. A long request (an issue text)
/// is taken apart like a search query: the paths and the names in code
/// form it mentions, not every word of its prose. A short one gives its
/// words (of three letters or more), which the ranking reads as paths or
/// identifiers.
pub fn focus_from_request(request: &str) -> Vec<String> {
    use agent_lang::query;
    if query::is_long(request) {
        let q = query::analyze(request);
        return q.named_paths.into_iter().chain(q.code_terms).collect();
    }
    request
        .split(|c: char| c.is_whitespace() || c == '`' || c == ',' || c == '?')
        .filter(|w| w.len() > 2)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '/' && c != '.')
                .to_string()
        })
        .collect()
}

/// `fraction` of the context window, in tokens.
pub fn budget_for_context(context_tokens: usize, fraction: f64) -> usize {
    (context_tokens as f64 * fraction.clamp(0.0, 1.0)) as usize
}

/// The rendered map and what it holds (`agent map --json` prints this).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapOutput {
    pub text: String,
    /// `text` in the caller's tokens; at most the budget.
    pub tokens: usize,
    pub files_shown: usize,
    pub defs_shown: usize,
    /// Definitions in the repository (shown or not).
    pub defs_total: usize,
    /// Every tagged file with its rank, best first.
    pub ranked_files: Vec<(String, f64)>,
}

/// One place a symbol is defined ([`RepoMap::definitions`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Definition {
    /// Relative to the root, with `/`.
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub kind: DefKind,
    /// The definition's head on one line, as the map shows it.
    pub signature: String,
    /// The headers of its enclosing scopes, outermost first (`impl Engine`).
    pub scopes: Vec<String>,
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RefreshStats {
    /// Tagged files in the repository now.
    pub files: usize,
    /// Files (re)parsed because they are new or their content changed.
    pub parsed: usize,
    /// Files whose cached tags were kept (unchanged stat or hash).
    pub reused: usize,
    /// Files dropped because they vanished (or are no longer taggable).
    pub removed: usize,
}

/// `repomap.sqlite` in the state folder of `root` (`paths::state_dir`)
pub fn default_cache_path(root: &Path) -> PathBuf {
    agent_base::paths::state_dir(root).join("repomap.sqlite")
}

/// The repository's tags (in memory, mirrored in the SQLite cache) and the
/// means to render a map from them.
pub struct RepoMap {
    root: PathBuf,
    /// `None` while a write runs on its own thread (see `pending`).
    cache: Option<TagCache>,
    /// The cache write in flight: the map is ranked and rendered while SQLite
    /// commits, which is about a tenth of a cold map of a big crate.
    pending: Option<JoinHandle<(TagCache, anyhow::Result<()>)>>,
    cache_path: PathBuf,
    /// rel → tags; a `BTreeMap` so every pass sees files in path order.
    files: BTreeMap<String, CachedFile>,
}

/// A file to check: its content may have changed.
struct Job {
    rel: String,
    path: PathBuf,
    mtime_ns: i64,
}

enum Outcome {
    /// Same content as cached: only the stat and check time change.
    Unchanged { size: u64, mtime_ns: i64 },
    /// With the tags already in JSON for the cache (serialized on the tagger thread).
    Tagged(CachedFile, String),
    /// Vanished or unreadable since it was listed.
    Gone,
}

impl RepoMap {
    /// Opens the map of `root` with its tag cache at `cache_path`, loading the
    /// cached tags. Never fails: a broken cache is rebuilt, or kept in memory.
    /// Call [`RepoMap::refresh`] before rendering to pick up changes.
    pub fn open(root: &Path, cache_path: &Path) -> RepoMap {
        let (cache, files) = TagCache::open(cache_path);
        RepoMap {
            root: root.to_path_buf(),
            cache: Some(cache),
            pending: None,
            cache_path: cache_path.to_path_buf(),
            files,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Number of tagged files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every tagged file (path relative to the root) with its tags, in path order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &FileTags)> {
        self.files.iter().map(|(rel, f)| (rel.as_str(), &f.tags))
    }

    /// Tags of one file (path relative to the root), if it is tagged.
    pub fn tags(&self, rel: &str) -> Option<&FileTags> {
        self.files.get(rel).map(|f| &f.tags)
    }

    /// The items the project imports from `crates`, most used first (see
    /// [`external`]).
    pub fn external_uses(&self, crates: &[String]) -> Vec<external::ExternalUse> {
        external::external_uses(self.files(), crates)
    }

    /// Where `symbol` is defined: a bare name (`load`) or one qualified by
    /// its enclosing scopes (`LlamaEngine::load`, `Engine.load`), in path
    /// and line order.
    pub fn definitions(&self, symbol: &str) -> Vec<Definition> {
        let mut parts: Vec<&str> = symbol
            .split("::")
            .flat_map(|p| p.split('.'))
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let Some(name) = parts.pop() else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (rel, file) in &self.files {
            for def in file.tags.defs.iter().filter(|d| d.name == name) {
                let scopes: Vec<String> = file
                    .tags
                    .scope_names(def)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                // Each qualifier names an enclosing scope, as a word of its header.
                let qualified = parts.iter().all(|q| {
                    scopes.iter().any(|s| {
                        s.split(|c: char| !c.is_alphanumeric() && c != '_')
                            .any(|w| w == *q)
                    })
                });
                if qualified {
                    found.push(Definition {
                        path: rel.clone(),
                        line: def.line,
                        kind: def.kind,
                        signature: def.signature.clone(),
                        scopes,
                    });
                }
            }
        }
        found
    }

    /// Walks the repository and brings the tags up to date: files with an
    /// unchanged size and mtime are trusted without reading them, others are
    /// hashed and re-parsed only if their content changed, vanished files are
    /// dropped. Errors of single files are not errors of the refresh.
    pub fn refresh(&mut self) -> anyhow::Result<RefreshStats> {
        // Files are sniffed when they are read for tagging, not twice.
        let no_sniff = WalkOptions {
            sniff: false,
            ..WalkOptions::default()
        };
        let (listed, _skipped) = walk::walk(&self.root, &no_sniff);
        let listed: Vec<SourceFile> = listed
            .into_iter()
            .filter(|f| mappable(f.lang, &f.path))
            .collect();
        let mut stats = RefreshStats::default();
        let mut jobs = Vec::new();
        for f in &listed {
            match self.files.get(&f.rel) {
                Some(cached) if cached.stat_matches(f.size, f.mtime_ns) => stats.reused += 1,
                _ => jobs.push(Job {
                    rel: f.rel.clone(),
                    path: f.path.clone(),
                    mtime_ns: f.mtime_ns,
                }),
            }
        }
        // Both lists are sorted by path: a merge finds the vanished files.
        let mut removed = Vec::new();
        let mut present = listed.iter().map(|f| f.rel.as_str()).peekable();
        for rel in self.files.keys() {
            while present.next_if(|p| *p < rel.as_str()).is_some() {}
            if present.peek() != Some(&rel.as_str()) {
                removed.push(rel.clone());
            }
        }
        self.apply(jobs, removed, &mut stats);
        stats.files = self.files.len();
        Ok(stats)
    }

    /// Re-tags just these files (paths relative to the root), or drops them
    /// if they were deleted or are no longer worth tagging: for the file
    /// watcher, which filters ignored paths before calling.
    pub fn update_files(&mut self, rels: &[String]) -> anyhow::Result<RefreshStats> {
        let mut stats = RefreshStats::default();
        let (mut jobs, mut removed) = (Vec::new(), Vec::new());
        let mut rels: Vec<String> = rels.iter().map(|r| normalize_rel(r)).collect();
        rels.sort_unstable();
        rels.dedup();
        for rel in rels {
            let path = self.root.join(&rel);
            let lang = Lang::from_path(&path);
            let checked = path
                .is_file()
                .then(|| walk::check_file(&path, &WalkOptions::default()));
            match checked {
                Some(Ok((_size, mtime_ns))) if mappable(lang, &path) => jobs.push(Job {
                    rel,
                    path,
                    mtime_ns,
                }),
                _ if self.files.contains_key(&rel) => removed.push(rel),
                _ => {}
            }
        }
        self.apply(jobs, removed, &mut stats);
        stats.files = self.files.len();
        Ok(stats)
    }

    /// Every file's tags, and their ranking seeded by `focus` and
    /// `recent_files`.
    fn rank(
        &self,
        focus: &[String],
        recent_files: &[String],
    ) -> (Vec<(&str, &FileTags)>, rank::Ranking) {
        let files: Vec<(&str, &FileTags)> = self
            .files
            .iter()
            .map(|(rel, f)| (rel.as_str(), &f.tags))
            .collect();
        let seeds = rank::Seeds {
            focus: focus.to_vec(),
            recent_files: recent_files.iter().map(|r| normalize_rel(r)).collect(),
        };
        let ranking = rank::rank(&files, &seeds);
        (files, ranking)
    }

    /// Renders the map for `opts`, counting tokens with `count_tokens` (the
    /// chat model's tokenizer). Byte-identical for identical tags and options.
    pub fn render(&self, opts: &MapOptions, count_tokens: &dyn Fn(&str) -> usize) -> MapOutput {
        let (files, ranking) = self.rank(&opts.focus, &opts.recent_files);
        let fitted = render::fit(&files, &ranking, opts.token_budget, count_tokens);
        MapOutput {
            text: fitted.text,
            tokens: fitted.tokens,
            files_shown: fitted.files_shown,
            defs_shown: fitted.defs_shown,
            defs_total: ranking.defs.len(),
            ranked_files: rank::ranked_files(&files, &ranking),
        }
    }

    /// Files by rank, best first, with `recent_files` (say, what just
    /// changed) weighing in as they do for the map the agent sees.
    pub fn ranked_files(&self, recent_files: &[String]) -> Vec<String> {
        let (files, ranking) = self.rank(&[], recent_files);
        rank::ranked_files(&files, &ranking)
            .into_iter()
            .map(|(rel, _)| rel)
            .collect()
    }

    /// Waits for the cache write in flight, if any. A failed write rebuilds
    /// the cache from the tags in memory; a map that cannot be cached at all
    /// still works.
    pub fn flush(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let (cache, result) = match pending.join() {
            Ok((cache, result)) => (Some(cache), result),
            Err(_) => (None, Err(anyhow::anyhow!("the cache writer panicked"))),
        };
        if let Err(err) = result {
            // The tags in memory are right; only the cache is in trouble.
            tracing::warn!("repo map cache write failed ({err:#}); rebuilding the cache");
            drop(cache);
            let mut fresh = TagCache::recreate(&self.cache_path);
            let all: Vec<Row> = self
                .files
                .iter()
                .map(|(rel, f)| Row::new(rel, f, None))
                .collect();
            if let Err(err) = fresh.write(&all, &[]) {
                tracing::warn!("repo map cache rebuild failed ({err:#}); tags stay in memory");
            }
            self.cache = Some(fresh);
        } else {
            self.cache = cache;
        }
    }

    /// Tags `jobs` in parallel, drops `removed`, and starts persisting the
    /// changes on a thread of their own.
    fn apply(&mut self, jobs: Vec<Job>, removed: Vec<String>, stats: &mut RefreshStats) {
        self.flush();
        // Taken before reading: a write racing with the read is then within
        // the racy window and gets re-checked next time.
        let now = now_ns();
        let outcomes = tag_in_parallel(&jobs, &self.files);
        let mut upserts: Vec<Row> = Vec::new();
        let mut deletes: Vec<String> = Vec::new();
        for (job, outcome) in jobs.into_iter().zip(outcomes) {
            match outcome {
                Outcome::Unchanged { size, mtime_ns } => {
                    stats.reused += 1;
                    if let Some(f) = self.files.get_mut(&job.rel) {
                        (f.size, f.mtime_ns, f.checked_ns) = (size, mtime_ns, now);
                        upserts.push(Row::new(&job.rel, f, None));
                    }
                }
                Outcome::Tagged(mut f, tags_json) => {
                    stats.parsed += 1;
                    f.checked_ns = now;
                    upserts.push(Row::new(&job.rel, &f, Some(tags_json)));
                    self.files.insert(job.rel, f);
                }
                Outcome::Gone => {
                    if self.files.remove(&job.rel).is_some() {
                        stats.removed += 1;
                        deletes.push(job.rel);
                    }
                }
            }
        }
        for rel in removed {
            if self.files.remove(&rel).is_some() {
                stats.removed += 1;
            }
            deletes.push(rel);
        }
        if upserts.is_empty() && deletes.is_empty() {
            return;
        }
        let Some(mut cache) = self.cache.take() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("repomap-cache".into())
            .spawn(move || {
                let result = cache.write(&upserts, &deletes);
                (cache, result)
            });
        match spawned {
            Ok(handle) => self.pending = Some(handle),
            Err(err) => {
                // The rows went with the closure: reopen, and the files are
                // re-tagged next time.
                tracing::warn!("repo map cache: no writer thread ({err}); changes not cached");
                self.cache = Some(TagCache::open(&self.cache_path).0);
            }
        }
    }
}

impl Drop for RepoMap {
    /// Nothing is lost: the write in flight is committed before the map goes.
    fn drop(&mut self) {
        self.flush();
    }
}

/// Reads, hashes and (if the content changed) parses each job, on up to one
/// thread per core. Outcomes come back in job order.
fn tag_in_parallel(jobs: &[Job], cached: &BTreeMap<String, CachedFile>) -> Vec<Outcome> {
    if jobs.is_empty() {
        return Vec::new();
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
        .min(jobs.len());
    let next = AtomicUsize::new(0);
    let work = || {
        let mut tagger = tags::Tagger::new();
        let mut done = Vec::new();
        // Jobs are handed out one by one, so a few big files do not leave a thread idle.
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else { break };
            done.push((i, tag_one(&mut tagger, job, cached.get(&job.rel))));
        }
        done
    };
    let mut results: Vec<(usize, Outcome)> = if threads == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                // A tagger's panic goes on as this thread's.
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    results.sort_unstable_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, o)| o).collect()
}

/// Files the map reads: languages with tags, code in other languages (for
/// its references), and files without an extension (scripts, by their `#!`).
fn mappable(lang: Lang, path: &Path) -> bool {
    tags::is_taggable(lang)
        || agent_lang::lang::is_untagged_code(path)
        || path.extension().is_none()
}

fn tag_one(tagger: &mut tags::Tagger, job: &Job, cached: Option<&CachedFile>) -> Outcome {
    let Ok(bytes) = std::fs::read(&job.path) else {
        return Outcome::Gone;
    };
    let hash = agent_base::files::sha256_hex(&bytes);
    // The stat of the bytes we read, not of the listing (the file may have moved on since).
    let (size, mtime_ns) = (bytes.len() as u64, job.mtime_ns);
    if cached.is_some_and(|c| c.hash == hash) {
        return Outcome::Unchanged { size, mtime_ns };
    }
    // Binary, minified or generated files get no tags, but are cached like
    // the rest so that they are not read again until they change.
    let worth_tagging = walk::sniff(&bytes[..bytes.len().min(walk::SNIFF_BYTES)]).is_none();
    let tags = if worth_tagging {
        let text = String::from_utf8_lossy(&bytes);
        tagger.tag_file(Lang::detect(&job.path, &text), &job.rel, &text)
    } else {
        tags::FileTags::default()
    };
    let tags_json = cache::to_json(&tags);
    let file = CachedFile {
        hash,
        size,
        mtime_ns,
        checked_ns: 0,
        tags,
    };
    Outcome::Tagged(file, tags_json)
}

/// `./src\foo.rs` → `src/foo.rs`
fn normalize_rel(rel: &str) -> String {
    let rel = rel.replace('\\', "/");
    rel.trim_start_matches("./")
        .trim_start_matches('/')
        .to_string()
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

#[cfg(test)]
mod tests;
