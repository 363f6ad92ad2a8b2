//! The project's dependencies as a second index (`agent index --deps`,
//! `agent search --deps`, `read_file` of `NAME@VERSION/path`): the sources
//! the package managers downloaded, at the versions the project locks
//! ([`agent_deps::resolve`]), each indexed once per machine.
//!
//! One index per package version, under `paths::deps_cache_dir()` in
//! `ECOSYSTEM/NAME@VERSION`, shared by every workspace that locks the same
//! version: built by `agent_index` over the package's folder (read-only, the
//! package manager's), its tests, examples and benches left out, and only
//! the ecosystem's own source files. A package counts as indexed once its
//! marker ([`MARKER`]) is written, after its last vector: Ctrl-C before that
//! leaves an unmarked index the next run resumes (its embedding cache keeps
//! what was embedded), and no search reads it. A lockfile change resolves
//! to other folders: only the new versions are indexed, and searches follow
//! the lockfile (an old version's index stays for the workspaces locking
//! it).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use agent_base::cancel::CancelToken;
use agent_index::embed::Embedder;
use agent_index::{Index, IndexOptions, Progress, SearchMode, SearchQuery, SearchResult};
use agent_lang::walk::{self, WalkOptions};

pub use agent_deps::{Ecosystem, Missing, Package, Resolution};

/// Written in a package's index folder once it is complete.
pub const MARKER: &str = "indexed.json";

/// Written once every file's rows are in: the package is searchable (by
/// keyword; by meaning as its vectors come).
pub const ROWS_MARKER: &str = "rows-complete";

/// What the marker records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Indexed {
    pub id: String,
    pub files: usize,
    pub chunks: usize,
    pub seconds: f64,
    pub at: String,
    /// A crate's files compiled for one platform only
    /// (`agent_deps::rust_modules::platform_files`), worked out once here:
    /// a package version's files never change. None: not a crate, or a
    /// marker written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_files: Option<Vec<String>>,
}

/// The project's dependencies as they are on disk now.
pub fn resolve(root: &Path) -> Resolution {
    agent_deps::resolve(root, &agent_deps::Env::from_process())
}

/// Where a package's index lives: one folder per package version.
pub fn package_dir(p: &Package) -> PathBuf {
    agent_base::paths::deps_cache_dir()
        .join(p.ecosystem.name())
        .join(p.key())
}

/// Whether `p` can be searched: its rows are all in (its vectors may still
/// be coming).
pub fn searchable_now(p: &Package) -> bool {
    let dir = package_dir(p);
    dir.join(ROWS_MARKER).is_file() || dir.join(MARKER).is_file()
}

/// The marker of a complete index of `p`, if there is one.
pub fn indexed(p: &Package) -> Option<Indexed> {
    let text = std::fs::read_to_string(package_dir(p).join(MARKER)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Which dependencies `agent index --deps` indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Those the project names itself.
    Direct,
    /// Every locked one.
    All,
}

/// The two passes of `agent index --deps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Every package's rows: searchable by keyword.
    Keywords,
    /// The vectors of the files the project uses ([`used_surface`]).
    Surface,
    /// The rest of their vectors.
    Vectors,
}

/// What `agent index --deps` tells its front end as it goes.
pub enum Event<'a> {
    /// Starting package `n` (1-based) of `of` in a pass.
    Package {
        n: usize,
        of: usize,
        id: &'a str,
        pass: Pass,
    },
    /// The package's progress, as `agent index` reports a workspace's.
    Progress(&'a Progress),
}

/// One package indexed by this run.
#[derive(Debug, Clone, Serialize)]
pub struct Built {
    pub id: String,
    pub files: usize,
    pub chunks: usize,
    pub embedded: usize,
    pub seconds: f64,
    /// Every chunk has its vector (else the run was stopped).
    pub complete: bool,
}

/// What `agent index --deps` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub built: Vec<Built>,
    /// Already indexed (by this workspace or another locking the version).
    pub reused: Vec<String>,
    /// Resolved, but without a source file to index.
    pub empty: Vec<String>,
    pub missing: Vec<Missing>,
    /// Chunks embedded in the used-surface pass (also counted in their
    /// package's `built`, once its last pass began).
    pub surface_embedded: usize,
    pub interrupted: bool,
    pub seconds: f64,
}

impl Report {
    /// The report in lines: counts, time, and each missing package with why.
    pub fn lines(&self) -> Vec<String> {
        if self.built.is_empty()
            && self.reused.is_empty()
            && self.empty.is_empty()
            && self.missing.is_empty()
        {
            return vec![
                "no dependencies found: no Cargo.lock, Python environment (.venv, venv, $VIRTUAL_ENV), package.json or go.mod here".into(),
            ];
        }
        let done: Vec<&Built> = self.built.iter().filter(|b| b.complete).collect();
        let chunks: usize = done.iter().map(|b| b.chunks).sum();
        let embedded: usize = self.built.iter().map(|b| b.embedded).sum();
        let surface = if self.surface_embedded > 0 {
            format!(
                "; {} of the files the project imports first",
                self.surface_embedded
            )
        } else {
            String::new()
        };
        let mut lines = vec![format!(
            "dependencies: {} indexed now ({} chunks, {} embedded{surface}), {} already indexed, {} without source files, {} missing; in {:.1}s",
            done.len(),
            chunks,
            embedded,
            self.reused.len(),
            self.empty.len(),
            self.missing.len(),
            self.seconds
        )];
        for m in &self.missing {
            lines.push(format!(
                "  missing {}{}: {}",
                m.name,
                m.version
                    .as_deref()
                    .map(|v| format!("@{v}"))
                    .unwrap_or_default(),
                m.why
            ));
        }
        if self.interrupted {
            lines.push(
                "interrupted: the packages finished are kept, and those with their rows in are searchable by keyword; run `agent index --deps` again to finish"
                    .into(),
            );
        }
        lines
    }
}

/// Indexes the project's dependencies that are not indexed yet, in two
/// passes as `agent index` does a workspace: every package's rows first
/// (each searchable by keyword once its rows are in, [`ROWS_MARKER`]), then
/// their vectors, package by package ([`MARKER`] once complete). Stops
/// cleanly between steps when `cancel` trips; the next run resumes.
pub fn index(
    root: &Path,
    which: Which,
    threads: Option<usize>,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Report> {
    let started = Instant::now();
    let resolution = resolve(root);
    let wanted = |direct: bool| direct || which == Which::All;
    let mut report = Report {
        missing: resolution
            .missing
            .iter()
            .filter(|m| wanted(m.direct))
            .cloned()
            .collect(),
        ..Report::default()
    };
    let mut chosen: Vec<&Package> = Vec::new();
    for p in resolution.packages.iter().filter(|p| wanted(p.direct)) {
        match indexed(p) {
            Some(_) => report.reused.push(p.id()),
            None => chosen.push(p),
        }
    }
    let of = chosen.len();
    // Keywords first: every package searchable in minutes.
    let mut pending = Vec::new();
    for (i, p) in chosen.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        let id = p.id();
        on_event(Event::Package {
            n: i + 1,
            of,
            id: &id,
            pass: Pass::Keywords,
        });
        match write_rows(p, threads, cancel, on_event)? {
            Some(counts) => pending.push((*p, counts)),
            None if !cancel.is_cancelled() => report.empty.push(id),
            None => {}
        }
    }
    // Then the vectors, the embedder carried from package to package, the
    // smallest packages first: most are complete soon, whatever a few
    // large ones (libc's bindings, a big framework) take.
    pending.sort_by_key(|(p, (_, chunks))| (*chunks, p.id()));
    let mut embedder: Option<Embedder> = None;
    // First what the project uses of each: a large package's few files
    // the code imports answer most questions about it, long before the
    // rest of it (libc's bindings) is embedded.
    let names = imported_names(root);
    let mut first = std::collections::HashMap::new();
    for (i, (p, _)) in pending.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        let files = source_files(p);
        let surface = used_surface(&files, &names);
        if surface.is_empty() {
            continue;
        }
        let id = p.id();
        on_event(Event::Package {
            n: i + 1,
            of: pending.len(),
            id: &id,
            pass: Pass::Surface,
        });
        let embedded = fill_surface(p, files, &surface, threads, cancel, &mut embedder, on_event)?;
        report.surface_embedded += embedded;
        first.insert(id, embedded);
    }
    for (i, (p, (files, _))) in pending.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        let id = p.id();
        on_event(Event::Package {
            n: i + 1,
            of: pending.len(),
            id: &id,
            pass: Pass::Vectors,
        });
        let mut built = fill(p, *files, threads, cancel, &mut embedder, on_event)?;
        built.embedded += first.get(&id).copied().unwrap_or(0);
        report.built.push(built);
    }
    report.interrupted = cancel.is_cancelled();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The files of `p` worth indexing: its own source files in its
/// ecosystem's languages, without its tests, examples and benches.
pub fn source_files(p: &Package) -> HashSet<String> {
    let (files, _) = walk::walk(&p.root, &WalkOptions::default());
    files
        .into_iter()
        .map(|f| f.rel)
        .filter(|rel| p.owns(rel) && !agent_deps::is_auxiliary(rel) && is_source(p.ecosystem, rel))
        .collect()
}

/// The names the project's code imports or reaches through a path:
/// the words of its `use`/`import`/`from`/`require` lines and the parts of
/// its `a::b` paths, lower-cased. A dependency's files of those names are
/// its used surface ([`used_surface`]).
pub fn imported_names(root: &Path) -> HashSet<String> {
    let (files, _) = walk::walk(root, &WalkOptions::default());
    let mut names = HashSet::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f.path) else {
            continue;
        };
        for line in text.lines() {
            let t = line.trim_start();
            let importing = ["use ", "pub use ", "import ", "from ", "extern crate "]
                .iter()
                .any(|k| t.starts_with(k))
                || t.contains("require(");
            let pathed = t.contains("::");
            if !importing && !pathed {
                continue;
            }
            let words =
                t.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '.'));
            for word in words {
                let parts: Vec<&str> = word.split([':', '.']).filter(|w| !w.is_empty()).collect();
                if importing || parts.len() > 1 {
                    names.extend(parts.iter().map(|p| p.to_lowercase()));
                }
            }
        }
    }
    names
}

/// The files of `p` the project uses, by their names: a file whose stem
/// is an imported name (`time/timeout.rs` for `tokio::time::timeout`), a
/// module's entry (`mod.rs`, `__init__.py`, `index.*`) whose folder is one,
/// and the package's own entry files. Their vectors come first.
pub fn used_surface(files: &HashSet<String>, names: &HashSet<String>) -> Vec<String> {
    const ENTRIES: &[&str] = &["mod", "lib", "__init__", "index", "main"];
    let mut used: Vec<String> = files
        .iter()
        .filter(|rel| {
            let path = Path::new(rel.as_str());
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let stem = stem.trim_end_matches(".d").to_lowercase();
            let folder = path
                .parent()
                .and_then(|d| d.to_str())
                .map(|d| d.rsplit('/').next().unwrap_or(d).to_lowercase())
                .unwrap_or_default();
            names.contains(&stem)
                || (ENTRIES.contains(&stem.as_str())
                    && (folder.is_empty() || folder == "src" || names.contains(&folder)))
        })
        .cloned()
        .collect();
    used.sort();
    used
}

fn is_source(ecosystem: Ecosystem, rel: &str) -> bool {
    let exts: &[&str] = match ecosystem {
        Ecosystem::Cargo => &[".rs"],
        Ecosystem::Python => &[".py", ".pyi"],
        Ecosystem::Npm => &[".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"],
        Ecosystem::Go => &[".go"],
    };
    exts.iter().any(|e| rel.ends_with(e))
}

fn options(threads: Option<usize>, only: HashSet<String>) -> IndexOptions {
    let defaults = IndexOptions::default();
    IndexOptions {
        threads: threads.unwrap_or(defaults.threads),
        only: Some(only),
        ..defaults
    }
}

/// A package's rows (keyword-searchable, with what vectors its embedding
/// cache has), marked with [`ROWS_MARKER`] (which holds their count); its
/// files and chunks, None when it has no source file or the pass was
/// stopped.
fn write_rows(
    p: &Package,
    threads: Option<usize>,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Option<(usize, usize)>> {
    let only = source_files(p);
    if only.is_empty() {
        return Ok(None);
    }
    let files = only.len();
    let dir = package_dir(p);
    let marked = std::fs::read_to_string(dir.join(ROWS_MARKER)).ok();
    if let Some(chunks) = marked.and_then(|m| m.trim().parse().ok()) {
        return Ok(Some((files, chunks)));
    }
    let mut index = Index::open_writer_at(&p.root, &dir, options(threads, only))?;
    let stats = index.update_rows(cancel, &mut |pr| on_event(Event::Progress(pr)))?;
    if stats.interrupted {
        return Ok(None);
    }
    let chunks = index.status()?.chunks;
    agent_base::files::atomic_write(&dir.join(ROWS_MARKER), chunks.to_string().as_bytes(), None)?;
    Ok(Some((files, chunks)))
}

/// The vectors of `surface`, files of `p` (whose source files are
/// `files`); how many chunks were embedded.
fn fill_surface(
    p: &Package,
    files: HashSet<String>,
    surface: &[String],
    threads: Option<usize>,
    cancel: &CancelToken,
    embedder: &mut Option<Embedder>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<usize> {
    let mut index = Index::open_writer_at(&p.root, &package_dir(p), options(threads, files))?;
    if let Some(e) = embedder.take() {
        index.lend_embedder(e);
    }
    let mut stats = agent_index::UpdateStats::default();
    let filled = index.fill_vectors_of(surface, &mut stats, cancel, &mut |pr| {
        on_event(Event::Progress(pr))
    });
    *embedder = index.take_embedder();
    filled?;
    Ok(stats.chunks_embedded)
}

/// A package's vectors filled in (type declarations first), and the
/// package marked complete once every chunk has its vector.
fn fill(
    p: &Package,
    files: usize,
    threads: Option<usize>,
    cancel: &CancelToken,
    embedder: &mut Option<Embedder>,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Built> {
    let started = Instant::now();
    let only = source_files(p);
    // Type declarations first: they are a package's API in a few lines.
    let mut priority: Vec<String> = only
        .iter()
        .filter(|f| f.ends_with(".d.ts"))
        .cloned()
        .collect();
    priority.sort();
    let dir = package_dir(p);
    let mut index = Index::open_writer_at(&p.root, &dir, options(threads, only))?;
    if let Some(e) = embedder.take() {
        index.lend_embedder(e);
    }
    let mut stats = agent_index::UpdateStats::default();
    index.fill_vectors(&priority, &mut stats, cancel, &mut |pr| {
        on_event(Event::Progress(pr))
    })?;
    *embedder = index.take_embedder();
    let status = index.status()?;
    let built = Built {
        id: p.id(),
        files,
        chunks: status.chunks,
        embedded: stats.chunks_embedded,
        seconds: started.elapsed().as_secs_f64(),
        complete: !stats.interrupted && status.embedded_chunks == status.chunks,
    };
    if built.complete {
        let marker = Indexed {
            id: built.id.clone(),
            files,
            chunks: status.chunks,
            seconds: built.seconds,
            at: chrono::Utc::now().to_rfc3339(),
            platform_files: (p.ecosystem == Ecosystem::Cargo).then(|| {
                let mut files: Vec<String> = agent_deps::rust_modules::platform_files(&p.root)
                    .into_iter()
                    .collect();
                files.sort();
                files
            }),
        };
        agent_base::files::atomic_write(
            &dir.join(MARKER),
            serde_json::to_string_pretty(&marker)?.as_bytes(),
            None,
        )?;
    }
    Ok(built)
}

/// `agent doctor`'s line on the dependencies: `direct` found on disk,
/// `indexed` of them indexed, `all` indexed counting transitive ones,
/// `missing` direct ones not on disk.
pub fn doctor_line(
    direct: usize,
    indexed: usize,
    all: usize,
    missing: usize,
) -> crate::doctor::Check {
    let mut detail = format!("{indexed} of {direct} direct dependencies indexed");
    if all > indexed {
        detail.push_str(&format!(" ({} more transitive)", all - indexed));
    }
    if missing > 0 {
        detail.push_str(&format!(
            "; {missing} not on disk (`agent index --deps` lists them with why)"
        ));
    }
    crate::doctor::Check {
        name: "dependencies",
        ok: indexed == direct && missing == 0,
        required: false,
        detail,
        fix: (indexed < direct).then(|| {
            "agent index --deps (optional: lets `agent search --deps` and the agent answer from the versions this project locks)".into()
        }),
    }
}

/// Which index a search reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// The workspace's own files.
    #[default]
    Project,
    /// Its indexed dependencies.
    Deps,
    /// Both, merged by score.
    All,
}

impl Scope {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "project" => Some(Scope::Project),
            "deps" | "dependencies" => Some(Scope::Deps),
            "all" => Some(Scope::All),
            _ => None,
        }
    }
}

/// The dependency indices a search reads: every resolved package with a
/// complete index (only `package`'s when named: `NAME` or `NAME@VERSION`),
/// and a note on what is not indexed.
pub fn searchable(
    resolution: &Resolution,
    package: Option<&str>,
) -> Result<(Vec<Package>, Vec<String>)> {
    let candidates: Vec<&Package> = match package {
        Some(name) => match resolution.find(name) {
            Some(p) => vec![p],
            None => bail!("{name} is not among this project's locked dependencies"),
        },
        None => resolution.packages.iter().collect(),
    };
    let (ready, waiting): (Vec<&Package>, Vec<&Package>) =
        candidates.into_iter().partition(|p| searchable_now(p));
    let mut notes = Vec::new();
    let filling = ready.iter().filter(|p| indexed(p).is_none()).count();
    if filling > 0 {
        notes.push(format!(
            "{filling} dependencies are searched by keyword only until their vectors are filled in (`agent index --deps`)"
        ));
    }
    let direct_waiting = waiting.iter().filter(|p| p.direct).count();
    if direct_waiting > 0 {
        notes.push(format!(
            "{direct_waiting} direct dependencies are not indexed yet (`agent index --deps`)"
        ));
    }
    if ready.is_empty() {
        bail!(
            "no dependency of this project is indexed{}\n  fix: run `agent index --deps`",
            package.map(|p| format!(" as {p}")).unwrap_or_default()
        );
    }
    Ok((ready.into_iter().cloned().collect(), notes))
}

/// What a score is multiplied by in a dependency's results when the chunk
/// is not its API's front door: a private item, or a file compiled for one
/// platform only (the body behind a public wrapper of the same name).
const PRIVATE_FACTOR: f32 = 0.9;

/// Searches the dependencies' indices: `query` in each, the embedder
/// loaded once, results merged by [`comparable`] scores, their paths cited
/// as `NAME@VERSION/path`.
pub fn search_packages(
    packages: &[Package],
    query: &SearchQuery,
    embedder: &mut Option<Embedder>,
) -> Result<Vec<SearchResult>> {
    let mut all = Vec::new();
    for p in packages {
        let mut index = Index::open_reader_at(&p.root, &package_dir(p))?;
        if let Some(e) = embedder.take() {
            index.lend_embedder(e);
        }
        // Twice as many, for the in-file tests dropped below.
        let deeper = SearchQuery {
            k: query.k * 2,
            ..query.clone()
        };
        let found = comparable(&mut index, &deeper);
        *embedder = index.take_embedder().or(embedder.take());
        let id = p.id();
        let platform = platform_files(p);
        // A dependency's own tests answer how to test it, not how to use it.
        let mut found: Vec<SearchResult> = found?
            .into_iter()
            .filter(|r| {
                !agent_deps::is_test_symbol(&r.symbol) && !agent_deps::is_auxiliary(&r.path)
            })
            .collect();
        if !platform.is_empty() {
            credit_front_doors(&mut index, &platform, &mut found)?;
        }
        for r in &mut found {
            // Its API answers how to use it: a private helper or a
            // platform's body ranks lower.
            if platform.contains(&r.path)
                || !agent_deps::is_public(p.ecosystem, &r.path, &r.symbol, &r.text)
            {
                r.score *= PRIVATE_FACTOR;
            }
            r.path = format!("{id}/{}", r.path);
        }
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        all.extend(found.into_iter().take(query.k));
    }
    all.sort_by(|a, b| b.score.total_cmp(&a.score));
    all.truncate(query.k);
    Ok(all)
}

/// A crate's files compiled for one platform only: as its index's marker
/// keeps them, else (an index still embedding, or an older marker) worked
/// out from its sources.
fn platform_files(p: &Package) -> HashSet<String> {
    if p.ecosystem != Ecosystem::Cargo {
        return HashSet::new();
    }
    match indexed(p).and_then(|m| m.platform_files) {
        Some(files) => files.into_iter().collect(),
        None => agent_deps::rust_modules::platform_files(&p.root),
    }
}

/// At most this many front doors are looked up per package and search.
const FRONT_DOORS: usize = 4;

/// Credits a platform's body to the crate's front door: for a hit in a file
/// compiled for one platform only, the chunk defining the same name in a
/// file that is not (`filetime`'s `set_file_times` in `lib.rs`, a one-line
/// wrapper, for its body in `windows.rs`) scores what the body scored.
/// Without its documentation the wrapper is only a name, and the bodies,
/// which say what it does, would answer in its place.
fn credit_front_doors(
    index: &mut Index,
    platform: &HashSet<String>,
    found: &mut Vec<SearchResult>,
) -> Result<()> {
    let names_of = |symbol: &str| -> Vec<String> {
        symbol
            .split(", ")
            .map(|s| s.rsplit("::").next().unwrap_or(s).to_string())
            .collect()
    };
    let bodies: Vec<(String, f32)> = found
        .iter()
        .filter(|r| platform.contains(&r.path))
        .flat_map(|r| names_of(&r.symbol).into_iter().map(move |n| (n, r.score)))
        .collect();
    if bodies.is_empty() {
        return Ok(());
    }
    let symbols = index.symbols()?;
    let mut looked_up = 0;
    for (name, score) in bodies {
        let doors: Vec<String> = symbols
            .files_defining(&name)
            .into_iter()
            .filter(|f| !platform.contains(*f) && !f.contains(['*', '?', '[', '{']))
            .map(str::to_string)
            .collect();
        for door in doors {
            let defines = |r: &SearchResult| r.path == door && names_of(&r.symbol).contains(&name);
            if let Some(known) = found.iter_mut().find(|r| defines(r)) {
                known.score = known.score.max(score);
                continue;
            }
            if looked_up == FRONT_DOORS {
                return Ok(());
            }
            looked_up += 1;
            let by_name = SearchQuery {
                mode: SearchMode::Bm25,
                path_glob: Some(door.clone()),
                ..SearchQuery::new(name.clone(), 3)
            };
            if let Some(mut chunk) = index.search(&by_name)?.into_iter().find(|r| defines(r)) {
                chunk.score = score;
                found.push(chunk);
            }
        }
    }
    Ok(())
}

/// `query`'s results in `index`, scored so that results of several indices
/// can be merged: a hybrid score stands out of its own index's lists (a
/// one-file package's only chunk always scores high), so each result is
/// scored by its cosine similarity to the query (the same embedder made
/// every index), in the order the hybrid search ranked them; one the
/// vector leg did not return gets the lowest cosine it returned. Keyword
/// searches keep their scores.
pub fn comparable(index: &mut Index, query: &SearchQuery) -> Result<Vec<SearchResult>> {
    let mut results = index.search(query)?;
    if query.mode == SearchMode::Bm25 {
        return Ok(results);
    }
    let cosines: std::collections::HashMap<(String, u32), f32> = match query.mode {
        SearchMode::Vector => results
            .iter()
            .map(|r| ((r.path.clone(), r.start_line), r.score))
            .collect(),
        _ => index
            .search(&SearchQuery {
                mode: SearchMode::Vector,
                ..query.clone()
            })?
            .into_iter()
            .map(|r| ((r.path, r.start_line), r.score))
            .collect(),
    };
    let floor = cosines.values().copied().fold(f32::INFINITY, f32::min);
    let floor = if floor.is_finite() { floor } else { 0.0 };
    for r in &mut results {
        r.score = cosines
            .get(&(r.path.clone(), r.start_line))
            .copied()
            .unwrap_or(floor);
    }
    // Within one index, the hybrid ranking stands: scores never rise down the list.
    for i in 1..results.len() {
        results[i].score = results[i].score.min(results[i - 1].score);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_used_surface_is_the_files_the_project_imports_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "src/main.rs",
            "use tokio::time::timeout;\nfn main() { let _ = serde_json::from_str::<u8>(\"1\"); }\n// the net module is not used\n",
        );
        write(
            "app.py",
            "from click.core import Command\nimport pathspec\n",
        );
        let names = imported_names(dir.path());
        for name in [
            "tokio",
            "time",
            "timeout",
            "serde_json",
            "from_str",
            "click",
            "core",
            "pathspec",
        ] {
            assert!(names.contains(name), "{name}: {names:?}");
        }
        assert!(!names.contains("net"), "a comment's word is no import");
        let files: HashSet<String> = [
            "src/lib.rs",
            "src/time/mod.rs",
            "src/time/timeout.rs",
            "src/time/interval.rs",
            "src/net/tcp.rs",
            "src/net/mod.rs",
            "core.py",
            "__init__.py",
            "termui.py",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            used_surface(&files, &names),
            vec![
                "__init__.py",
                "core.py",
                "src/lib.rs",
                "src/time/mod.rs",
                "src/time/timeout.rs"
            ]
        );
    }

    #[test]
    fn the_report_counts_what_was_done_and_says_why_packages_are_missing() {
        let mut report = Report::default();
        assert!(report.lines()[0].starts_with("no dependencies found"));
        report.built.push(Built {
            id: "a@1.0.0".into(),
            files: 3,
            chunks: 40,
            embedded: 38,
            seconds: 2.0,
            complete: true,
        });
        report.reused.push("b@2.0.0".into());
        report.missing.push(Missing {
            ecosystem: Ecosystem::Cargo,
            name: "c".into(),
            version: Some("0.1.0".into()),
            direct: true,
            why: "not downloaded".into(),
        });
        report.seconds = 2.5;
        assert_eq!(
            report.lines(),
            vec![
                "dependencies: 1 indexed now (40 chunks, 38 embedded), 1 already indexed, 0 without source files, 1 missing; in 2.5s",
                "  missing c@0.1.0: not downloaded",
            ]
        );
    }

    #[test]
    fn the_doctor_line_counts_indexed_and_missing_dependencies() {
        let check = doctor_line(10, 4, 6, 1);
        assert_eq!(
            check.detail,
            "4 of 10 direct dependencies indexed (2 more transitive); 1 not on disk (`agent index --deps` lists them with why)"
        );
        assert!(!check.ok && check.fix.is_some());
        assert!(doctor_line(3, 3, 3, 0).ok);
    }
}
