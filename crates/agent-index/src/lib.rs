//! The live code index: walk → chunk → embed → store, kept up to date
//! incrementally, and searched by `agent search` and the agent's
//! `search_semantic` tool.
//!
//! On disk, under `index/` in the workspace's state folder
//! (`agent_base::paths::state_dir`, outside the repository):
//! - `lance/`: the chunk table (LanceDB) with vectors and a BM25 index;
//! - `state.sqlite`: per-file hashes and mtimes;
//! - `embeddings.sqlite`: the embedding cache (its own file: it survives damage to the rest);
//! - `writer.lock`: held by the one process allowed to write.
//!
//! A shared index (`--store`) keeps the first three in a store instead, and
//! its readers search it with their own changes on top: see [`shared`].
//!
//! Consistency: files are processed in batches; a batch's rows replace the
//! old ones in one LanceDB commit (so a failed write, such as a full disk,
//! leaves the old rows), before its files are recorded in `state.sqlite`. A
//! crash or Ctrl-C between the two only means those files are redone next
//! time, and redoing a file replaces its rows, so the index is never left
//! half-updated.
//!
//! An update is progressive, in two halves:
//! 1. [`Index::update_rows`]: the walk, then for each file whose mtime or size
//!    moved, read, hash and, if the content really changed, chunk it; the rows
//!    take what vectors the embedding cache has (the others a zero vector and
//!    `embedded = false`) and replace the batch's rows (`Store::replace_paths`:
//!    a merge on `id` that also deletes the files' stale rows). Deleted files
//!    lose their rows, and the BM25 index is built: from here every file is
//!    searchable by keyword, seconds against minutes of embedding.
//! 2. [`Index::fill_vectors`] embeds the rows still without vectors, files in
//!    a given priority first (`agent index` passes the repo map's ranking,
//!    personalized by the files that just changed; the watcher, what changed),
//!    `EMBED_STEP` texts a step, each step's vectors straight into the cache,
//!    committed every `FILL_COMMIT` chunks, so searches gain vectors as it
//!    goes. Ctrl-C is checked between steps and loses no embedding work; the
//!    next update resumes the fill. The vector index waits for full coverage
//!    (zero vectors would skew its training).
//!
//! While any row lacks its vector, vector searches filter on `embedded = true`
//! (counted once per table version: the filter scans the column, 30 ms a
//! query at 1M rows, so a full table skips it), and a search says how much is
//! covered ([`Index::notes`]). An update marks the index incomplete (the meta
//! key `complete` in `state.sqlite`) until its rows are written, so `--status`
//! and searches can say when files are missing. Tables from before
//! progressive indexing (no `embedded` column) are rebuilt from the files and
//! the cache on the next writer open.
//!
//! One chunker per file: each file's row in `state.sqlite` records the
//! chunker version ([`agent_lang::chunk::VERSION`]) its chunks come from. An
//! update re-chunks the files of another version like changed files (batch by
//! batch, with the cache's vectors wherever a chunk's text stayed the same),
//! and `agent index` says why in one line ([`Index::rechunking`]). Files from
//! before versions were recorded count as version 0.
//!
//! Concurrency and damage: one writer per index (an OS file lock, which a
//! crash releases); readers open LanceDB with strong read consistency and see
//! each commit. An unreadable `state.sqlite` or chunk table is rebuilt by the
//! next writer from the files on disk and the embedding cache, so neither
//! costs an embedding; a damaged cache is started anew. Damage that opening
//! does not reveal is found by `check` when a writer opens (and by
//! `--status`, which then exits 1): every data file read once
//! (`Store::verify`), the row count compared with the chunks the files
//! recorded (a deleted table), one BM25 query run. A broken BM25 or vector
//! index is dropped and rebuilt; a broken table is rebuilt from the cache.
//! Readers get an error that says to run `agent index`, never "no results"
//! from a table that is gone.
//!
//! Memory: index builds (all of `agent index`) run under
//! `agent_base::alloc::Frugal`, which hands freed pages back at once; the
//! embedder's session is made at the first embedding (chunking needs only the
//! tokenizer) and let go of before a vector index build, which trains on at
//! most 64k vectors, and the BM25 build writes out past 128 MB. Searches keep
//! the allocator's defaults, which fault less. Peak RSS stays near 0.6 GB at
//! any size (BENCHMARKS.md, "Memory at scale").

pub mod embed;
pub mod search;
pub mod shared;
mod state;
mod store;
pub mod watch;

pub use store::ANN_MIN_ROWS;

/// The storage layers under [`Index`], for the benchmarks in `examples/`
/// and the index's own integration tests: not API. (A `bench` feature would
/// compile the crate and everything above it a second time.)
#[doc(hidden)]
pub mod bench {
    pub use crate::state::State;
    pub use crate::store::{AnnKind, AnnSearch, Row, Store};
}

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use agent_base::cancel::CancelToken;
use agent_base::files::{remove_sqlite, sha256_hex};
use agent_lang::chunk::{self, chunk_source, ChunkLimits};
use agent_lang::walk::{self, Lang, Skipped, SourceFile, WalkOptions};
use embed::{Embedder, Identity};
pub use search::{Fusion, SearchMode, SearchQuery, SearchResult};
use shared::{LocalChanges, SharedStore};
use state::{FileState, State};
use store::{Damage, Row, Store, TableLocation};

/// Files per write batch: small enough that Ctrl-C loses little work, large
/// enough that embedding batches stay full.
const FILE_BATCH: usize = 64;

/// Texts embedded between progress reports, cache writes and Ctrl-C checks
/// (two ONNX Runtime calls; a few seconds on two cores).
const EMBED_STEP: usize = 64;

/// Where an index lives for a repository root: `index/` in its state
/// folder (`paths::state_dir`), outside the repository.
pub fn index_dir(root: &Path) -> PathBuf {
    agent_base::paths::state_dir(root).join("index")
}

#[derive(Debug, Clone)]
pub struct IndexOptions {
    pub walk: WalkOptions,
    /// Threads for the embedder.
    pub threads: usize,
    /// Chunks embedded between two commits of the fill ([`FILL_COMMIT`]).
    pub fill_commit: usize,
    /// Which embedder (the one the index was made with, unless a server is
    /// named).
    pub embedder: embed::Choice,
    /// A shared store to write the index to (`agent index --store`), instead
    /// of `index/` in the workspace's state folder.
    pub store: Option<String>,
    /// Index only these files (the rest count as absent): a shared index's
    /// local overlay holds just the files that differ here.
    pub only: Option<HashSet<String>>,
    /// A session's background indexer ([`watch::Background`]): when the
    /// session ends it stops the fill, and the next writer resumes it; that
    /// is the normal end of a session, not an interrupted update.
    pub background: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            walk: WalkOptions::default(),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            fill_commit: FILL_COMMIT,
            embedder: embed::Choice::AsRecorded,
            store: None,
            only: None,
            background: false,
        }
    }
}

/// Reported after every file read and chunked, and after every embedding
/// call, so a progress bar moves even while one batch is embedded.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Progress {
    pub files_total: usize,
    /// Files read and chunked (their rows are written batch by batch).
    pub files_done: usize,
    /// Chunks written to the table.
    pub chunks_done: usize,
    /// Chunks embedded so far in this update (the rest come from the cache).
    pub chunks_embedded: usize,
    /// Chunks the current batch still has to embed.
    pub chunks_to_embed: usize,
    /// The rows are written; the BM25 and vector indices are being brought
    /// up to them.
    pub building_indices: bool,
    /// Every file's rows are written and BM25 finds them: searches work,
    /// and what is left is filling in vectors.
    pub searchable: bool,
    /// Chunks whose vectors are not filled in yet (while filling).
    pub chunks_unembedded: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct UpdateStats {
    pub files_seen: usize,
    /// Files whose content changed (or new files, or files an older
    /// chunker chunked) and were re-chunked.
    pub files_indexed: usize,
    pub files_removed: usize,
    pub chunks_written: usize,
    /// Chunks embedded now (the rest came from the cache).
    pub chunks_embedded: usize,
    pub cache_hits: usize,
    pub skipped: Vec<Skipped>,
    pub interrupted: bool,
    pub seconds: f64,
    /// What was found damaged and rebuilt when the index was opened, one
    /// note per repair (empty when nothing was).
    pub recovered: Vec<String>,
    /// Set when this update built the ANN index: the table reached
    /// [`store::ANN_MIN_ROWS`] chunks.
    pub vector_index_built: bool,
    /// Seconds until every file was searchable by BM25 (before vectors).
    pub searchable_seconds: f64,
    /// Chunks whose vectors are still zeros (an interrupted fill).
    pub chunks_unembedded: usize,
    /// Files whose rows this update rewrote: the fill embeds them first.
    #[serde(skip)]
    pub changed_paths: Vec<String>,
    /// Why this update re-chunked files whose content did not change:
    /// another chunker version chunked them ([`Index::rechunking`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rechunking: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub root: PathBuf,
    pub index_dir: PathBuf,
    /// The shared store the index lives in (`--store`), if not local.
    pub store: Option<String>,
    pub files: usize,
    /// Files per language (`agent_lang::lang`), most first.
    pub languages: Vec<(String, usize)>,
    pub chunks: usize,
    /// Chunks with their vectors filled in; the rest are found by BM25 only
    /// until `agent index` (or the watcher) fills them.
    pub embedded_chunks: usize,
    /// The model the vectors come from.
    pub embedder: Identity,
    pub cached_embeddings: u64,
    pub text_index: bool,
    /// The ANN index, once the table has passed [`store::ANN_MIN_ROWS`]
    /// chunks; below that, every search compares every vector.
    pub vector_index: Option<store::VectorIndexInfo>,
    pub last_update: Option<String>,
    pub writer_active: bool,
    pub disk_bytes: u64,
    /// False after an update that was interrupted (Ctrl-C, a crash) and not
    /// finished since: some files are missing or out of date.
    pub complete: bool,
    /// The last update was stopped before its end (in its rows or while
    /// filling vectors) and no update has finished since.
    pub interrupted: bool,
    /// What is broken, when something is (`agent index` repairs it).
    pub damage: Option<String>,
}

impl Status {
    /// The status as `agent index --status` prints it: one line per fact,
    /// what is missing or broken said with the command that fixes it.
    pub fn describe(&self) -> String {
        let status = self;
        let mut lines = Vec::new();
        lines.push(format!("index of {}", status.root.display()));
        if let Some(store) = &status.store {
            lines.push(format!("  store        {store} (shared)"));
        }
        let langs: Vec<String> = status
            .languages
            .iter()
            .map(|(lang, n)| format!("{n} {lang}"))
            .collect();
        lines.push(format!(
            "  files        {} ({})",
            status.files,
            langs.join(", ")
        ));
        lines.push(format!("  chunks       {}", status.chunks));
        if status.embedded_chunks < status.chunks {
            lines.push(format!(
                "  vectors      {} of {} chunks ({:.0}%); the rest are found by keyword only until `agent index` fills them in",
                status.embedded_chunks,
                status.chunks,
                100.0 * status.embedded_chunks as f64 / status.chunks.max(1) as f64
            ));
        }
        lines.push(format!(
            "  embeddings   {} cached",
            status.cached_embeddings
        ));
        lines.push(format!("  embedder     {}", status.embedder.describe()));
        lines.push(format!(
            "  BM25 index   {}",
            if status.text_index { "yes" } else { "not yet" }
        ));
        match &status.vector_index {
            Some(v) if v.unindexed_rows > 0 => lines.push(format!(
                "  vector index {} over {} chunks ({} newer ones searched exactly)",
                v.kind, v.indexed_rows, v.unindexed_rows
            )),
            Some(v) => lines.push(format!(
                "  vector index {} over {} chunks",
                v.kind, v.indexed_rows
            )),
            None => lines.push(format!(
                "  vector index none: exact search (built from {} chunks)",
                store::ANN_MIN_ROWS
            )),
        }
        lines.push(format!(
            "  last update  {}",
            status.last_update.as_deref().unwrap_or("never")
        ));
        lines.push(format!(
            "  on disk      {:.1} MB in {}",
            status.disk_bytes as f64 / 1e6,
            status.index_dir.display()
        ));
        if let Some(damage) = &status.damage {
            lines.push(format!(
                "  DAMAGED      {damage}; run `agent index` to repair it"
            ));
        }
        if !status.complete {
            lines.push(
                "  partial      the last update was interrupted; run `agent index` to finish it"
                    .into(),
            );
        } else if status.interrupted {
            lines.push(format!(
                "  interrupted  the last update was stopped while embedding: {} chunks lack vectors; run `agent index` to finish it",
                status.chunks.saturating_sub(status.embedded_chunks)
            ));
        }
        if status.writer_active {
            lines.push("  a writer (agent index --watch?) is running".into());
        }
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }
}

/// The note searches carry while a writer (a session's background indexer,
/// `agent index --watch`) is part-way through an update.
pub const UPDATING_NOTE: &str = "the index is being updated right now, so files changed in the last seconds may be missing from these results";

/// The note searches of a partial index carry.
pub const PARTIAL_NOTE: &str = "the index is partial (its last update was interrupted), so some files are missing from these results; run `agent index` to finish it";

/// The note searches carry while vectors are being filled in.
pub fn coverage_note(embedded: usize, chunks: usize) -> Option<String> {
    (embedded < chunks).then(|| {
        format!(
            "vectors cover {} of {chunks} chunks so far ({:.0}%); the rest are found by keyword only until indexing finishes (`agent index`)",
            embedded,
            100.0 * embedded as f64 / chunks.max(1) as f64
        )
    })
}

/// Chunks embedded between two commits of the fill: each commit is a table
/// version (pruned later), and Ctrl-C loses at most what is not committed
/// (its vectors are cached anyway).
const FILL_COMMIT: usize = 512;

/// The one-writer rule, enforced with an OS file lock that dies with its
/// process (a crash never leaves a stale lock behind).
struct WriterLock(#[allow(dead_code)] File);

/// How long a writer waits for a lock that is being let go.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

fn lock_writer(dir: &Path) -> Result<WriterLock> {
    let path = dir.join("writer.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // A writer that is just closing (or a child forked a moment ago, still
    // holding a copy of its descriptor until it execs) keeps the lock for an
    // instant: wait that out before calling the index busy.
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    let mut attempt = file.try_lock();
    while matches!(attempt, Err(std::fs::TryLockError::WouldBlock))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
        attempt = file.try_lock();
    }
    match attempt {
        Ok(()) => {
            let _ = file.set_len(0);
            let _ = std::fs::write(&path, std::process::id().to_string());
            Ok(WriterLock(file))
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "another process (pid {}) is already updating this index; searches still work.\n  fix: wait for it, or stop it (for example a running `agent index --watch`)",
                pid.trim()
            )
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e).context("cannot lock the index"),
    }
}

fn writer_active(dir: &Path) -> bool {
    std::fs::File::open(dir.join("writer.lock"))
        .is_ok_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

pub struct Index {
    root: PathBuf,
    dir: PathBuf,
    state: State,
    store: Store,
    embedder: Option<Embedder>,
    /// The model the index's vectors come from (and its queries go to).
    identity: Identity,
    options: IndexOptions,
    /// The one-writer lock, held while this index is open for writing
    /// (None: opened read-only).
    writer_lock: Option<WriterLock>,
    recovered: Vec<String>,
    /// Set when the index lives in a shared store.
    shared: Option<SharedStore>,
    /// A shared index's reader: this machine's changes, indexed locally.
    overlay: Option<Overlay>,
    /// Why the overlay could not be brought up to date, said with results.
    overlay_note: Option<String>,
    /// Why the next update re-chunks files (another chunker version made
    /// their chunks), until an update has re-chunked them all.
    rechunking: Option<String>,
}

/// The local side of a shared index (see [`shared`]): an ordinary index of
/// the files that differ here, searched with the shared table, which no
/// longer answers for them.
struct Overlay {
    index: Box<Index>,
    changes: LocalChanges,
    memo: shared::HashMemo,
}

impl Index {
    /// Opens the index for writing, creating it if needed. A damaged index
    /// is rebuilt (the embedding cache survives when it is intact).
    pub fn open_writer(root: &Path, options: IndexOptions) -> Result<Self> {
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot open {}", root.display()))?;
        let (dir, shared) = writer_location(&root, &options)?;
        Self::open_writer_in(root, dir, options, shared)
    }

    /// An index of a folder that is not a workspace (a dependency's
    /// sources, read-only) kept in `dir` (a cache shared by the workspaces
    /// that use it): written as [`Index::open_writer`] writes a repository's.
    pub fn open_writer_at(root: &Path, dir: &Path, options: IndexOptions) -> Result<Self> {
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot open {}", root.display()))?;
        Self::open_writer_in(root, dir.to_path_buf(), options, None)
    }

    /// A reader of the index [`Index::open_writer_at`] wrote in `dir`.
    pub fn open_reader_at(root: &Path, dir: &Path) -> Result<Self> {
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot open {}", root.display()))?;
        let state = State::open(&dir.join("state.sqlite"))?;
        let identity = state.embedder()?.unwrap_or_else(Identity::local);
        let store = Store::open_with_dim(&dir.join("lance"), identity.dim)?;
        Ok(Self::reader(
            root,
            dir.to_path_buf(),
            state,
            store,
            identity,
            None,
        ))
    }

    /// Hands the loaded embedder over (None when none is loaded), so that
    /// many small indices searched or built in a row load the model once
    /// ([`Index::lend_embedder`] gives it to the next).
    pub fn take_embedder(&mut self) -> Option<Embedder> {
        self.embedder_slot().take()
    }

    /// Gives this index an embedder another one loaded; one of another
    /// model than this index's vectors is dropped (this index loads its own).
    pub fn lend_embedder(&mut self, embedder: Embedder) {
        if embedder.identity().same_model(&self.identity) {
            *self.embedder_slot() = Some(embedder);
        }
    }

    /// [`Index::open_writer`] with the local folder given: the repository's
    /// index, a shared store's working copies, or its reader's overlay.
    fn open_writer_in(
        root: PathBuf,
        dir: PathBuf,
        options: IndexOptions,
        shared: Option<SharedStore>,
    ) -> Result<Self> {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let lock = lock_writer(&dir)?;
        if let Some(shared) = &shared {
            fetch_working_copies(shared, &dir)?;
        }
        let table = table_location(&dir, shared.as_ref())?;
        let mut recovered = Vec::new();
        let state = match State::open(&dir.join("state.sqlite")) {
            Ok(s) => s,
            Err(e) if is_transient(&e) => return Err(e.context(TRANSIENT)),
            Err(e) => {
                // The chunk table is rebuilt from the files on disk and the
                // embedding cache (a file of its own): nothing is re-embedded.
                recovered.push(format!(
                    "the index state was damaged ({e:#}); rebuilt it from the files and the embedding cache"
                ));
                remove_sqlite(&dir.join("state.sqlite"));
                let _ = remove_table(&dir, shared.as_ref());
                State::open(&dir.join("state.sqlite"))?
            }
        };
        if let Some(note) = &state.cache_recovered {
            recovered.push(note.clone());
        }
        let (embedder, identity) = choose_embedder(&options.embedder, state.embedder()?)?;
        state.set_embedder(&identity)?;
        let new_table = |state: &State| -> Result<Store> {
            remove_table(&dir, shared.as_ref())?;
            state.clear_files()?;
            Store::open_at(&table, identity.dim, true)
        };
        let store = match Store::open_at(&table, identity.dim, true) {
            Ok(s) => s,
            Err(e) if is_transient(&e) => return Err(e.context(TRANSIENT)),
            Err(e) => {
                recovered.push(format!("the chunk table was damaged ({e:#}); rebuilt it"));
                new_table(&state)?
            }
        };
        // A table from before progressive indexing has no `embedded`
        // column: rebuilt from the files and the cache, nothing re-embedded.
        let store = if store.is_legacy() || store.dim() != identity.dim {
            if store.count_rows()? > 0 {
                recovered.push(
                    "the chunk table was made by an older version; rebuilt it from the files and the embedding cache (nothing is embedded again)".into(),
                );
            }
            drop(store);
            new_table(&state)?
        } else {
            store
        };
        // Damage that opening does not see (deleted or truncated data files,
        // a table that lost rows, a broken BM25 or vector index), repaired here: the
        // rows come back from the files and the embedding cache.
        // Reading a whole shared table back on every update would cost its
        // size in downloads: there, only the row count is compared.
        let store = match check(&store, &state, shared.is_none()) {
            None => store,
            Some(Damage::TextIndex(why)) => {
                store
                    .rebuild_text_index()
                    .context("cannot rebuild the damaged BM25 index")?;
                recovered.push(format!("the BM25 index was damaged ({why}); rebuilt it"));
                store
            }
            Some(Damage::VectorIndex(why)) => {
                store
                    .drop_vector_index()
                    .and_then(|()| store.refresh_indices(true))
                    .context("cannot rebuild the damaged vector index")?;
                recovered.push(format!("the vector index was damaged ({why}); rebuilt it"));
                store
            }
            Some(Damage::Table(why)) => {
                recovered.push(format!(
                    "the chunk table was damaged ({why}); rebuilt it from the files and the embedding cache"
                ));
                drop(store);
                new_table(&state)?
            }
        };
        let rechunking = state
            .chunker_behind(chunk::VERSION)?
            .map(|(old, files)| rechunking_note(old, files));
        Ok(Self {
            root,
            dir,
            state,
            store,
            embedder,
            identity,
            options,
            writer_lock: Some(lock),
            recovered,
            shared,
            overlay: None,
            overlay_note: None,
            rechunking,
        })
    }

    /// Opens an existing index for searching, alongside any writer: the
    /// shared one when a store is configured (`--store`,
    /// `AGENT_INDEX_STORE`), else the repository's own.
    pub fn open_reader(root: &Path) -> Result<Self> {
        let root = root
            .canonicalize()
            .with_context(|| format!("cannot open {}", root.display()))?;
        if let Some(uri) = shared::configured() {
            return Self::open_shared_reader(root, &uri);
        }
        let dir = index_dir(&root);
        if !dir.join("state.sqlite").is_file() {
            bail!(
                "no index in {}\n  fix: run `agent index` first",
                root.display()
            );
        }
        let damaged = |e: anyhow::Error| {
            anyhow!("the index is damaged ({e:#})\n  fix: run `agent index` (it rebuilds a damaged index)")
        };
        let state = State::open(&dir.join("state.sqlite")).map_err(damaged)?;
        let identity = state.embedder()?.unwrap_or_else(Identity::local);
        let store = Store::open_with_dim(&dir.join("lance"), identity.dim).map_err(damaged)?;
        Ok(Self::reader(root, dir, state, store, identity, None))
    }

    /// A read-only index of these parts (no lock, no embedder until a
    /// search needs one).
    fn reader(
        root: PathBuf,
        dir: PathBuf,
        state: State,
        store: Store,
        identity: Identity,
        shared: Option<SharedStore>,
    ) -> Self {
        Self {
            root,
            dir,
            state,
            store,
            embedder: None,
            identity,
            options: IndexOptions::default(),
            writer_lock: None,
            recovered: Vec::new(),
            shared,
            overlay: None,
            overlay_note: None,
            rechunking: None,
        }
    }

    /// A reader of the shared index in `uri`: the store's state, fetched,
    /// and its table, read in place. This machine's changes join at the
    /// first search (the overlay).
    fn open_shared_reader(root: PathBuf, uri: &str) -> Result<Self> {
        let shared = SharedStore::open(&root, uri, false)?;
        let dir = shared.local.join("published");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let state_path = dir.join(shared::STATE_FILE);
        remove_sqlite(&state_path);
        if !shared.fetch(shared::STATE_FILE, &state_path)? {
            bail!("{}", shared::no_index_yet(uri));
        }
        let damaged = |e: anyhow::Error| {
            anyhow!("the shared index in {uri} is damaged ({e:#})\n  fix: run `agent index --store {uri}` (it repairs it)")
        };
        let state = State::open(&state_path).map_err(damaged)?;
        let identity = state.embedder()?.unwrap_or_else(Identity::local);
        let store = Store::open_at(&shared.table, identity.dim, false).map_err(damaged)?;
        Ok(Self::reader(
            root,
            dir,
            state,
            store,
            identity,
            Some(shared),
        ))
    }

    /// Deletes the index (keeping nothing) so the next update starts fresh.
    pub fn rebuild(root: &Path, options: IndexOptions) -> Result<Self> {
        let root = root.canonicalize()?;
        let (dir, shared) = writer_location(&root, &options)?;
        if dir.exists() {
            // Take the lock first so a running writer is not pulled from under.
            let lock = lock_writer(&dir)?;
            remove_sqlite(&dir.join("state.sqlite"));
            remove_sqlite(&dir.join(state::CACHE_FILE));
            match &shared {
                // The store's copies too, or the writer would fetch them back.
                Some(s) => s.clear()?,
                None => {
                    let _ = remove_table(&dir, None);
                }
            }
            drop(lock);
        }
        Self::open_writer_in(root, dir, options, shared)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// One line saying why the next update re-chunks files whose content
    /// did not change, when it will: another chunker version made their
    /// chunks (`re-chunking: the index was built by chunker v1, this is
    /// v2`). They are re-chunked like changed files, batch by batch, so the
    /// index stays searchable; their vectors come from the embedding cache
    /// wherever a chunk's text is the same.
    pub fn rechunking(&self) -> Option<&str> {
        self.rechunking.as_deref()
    }

    fn embedder(&mut self) -> Result<&mut Embedder> {
        // A shared index's reader embeds queries with its overlay's model
        // (the same one): loaded once.
        if let Some(overlay) = &mut self.overlay {
            return overlay.index.embedder();
        }
        let embedder = match self.embedder.take() {
            Some(embedder) => embedder,
            None => match self.identity.server {
                Some(_) => connect_recorded(&self.identity)?,
                None => Embedder::load_default(self.options.threads)?,
            },
        };
        Ok(self.embedder.insert(embedder))
    }

    /// Where the embedder lives: here, or in a shared reader's overlay.
    fn embedder_slot(&mut self) -> &mut Option<Embedder> {
        match &mut self.overlay {
            Some(overlay) => overlay.index.embedder_slot(),
            None => &mut self.embedder,
        }
    }

    /// Brings the index up to date with the files on disk, touching only
    /// what changed: first every changed file's rows (searchable by BM25 at
    /// once), then their vectors ([`Index::fill_vectors`], recently changed
    /// files first). Stops cleanly between batches when `cancel` trips.
    pub fn update(
        &mut self,
        cancel: &CancelToken,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<UpdateStats> {
        let mut stats = self.update_rows(cancel, on_progress)?;
        if !stats.interrupted {
            let recent = std::mem::take(&mut stats.changed_paths);
            self.fill_vectors(&recent, &mut stats, cancel, on_progress)?;
        }
        Ok(stats)
    }

    /// The first half of an update: every changed file's rows, with the
    /// vectors the cache already has, and the BM25 index over them. After
    /// it, searches find every file by keyword; vectors may be missing.
    pub fn update_rows(
        &mut self,
        cancel: &CancelToken,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<UpdateStats> {
        let started = Instant::now();
        if self.writer_lock.is_none() {
            bail!("this index was opened read-only");
        }
        let mut stats = UpdateStats {
            recovered: std::mem::take(&mut self.recovered),
            rechunking: self.rechunking.clone(),
            ..UpdateStats::default()
        };
        if let Some(why) = &stats.rechunking {
            tracing::info!("{why}");
        }
        // An update that was cut short (even after its last batch) may not
        // have built the BM25 index: this one finishes that work too.
        let was_complete = self.is_complete()?;
        let (mut files, skipped) = walk::walk(&self.root, &self.options.walk);
        // A partial list would drop the files past the ceiling from the index.
        if let Some(why) = walk::stopped(&skipped) {
            bail!("{why}");
        }
        if let Some(only) = &self.options.only {
            files.retain(|f| only.contains(&f.rel));
        }
        stats.files_seen = files.len();
        stats.skipped = skipped;
        let known = self.state.files()?;
        let present: HashSet<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        let mut removed: Vec<String> = known
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        removed.sort();

        let candidates: Vec<&SourceFile> = files
            .iter()
            .filter(|f| {
                known.get(&f.rel).is_none_or(|k| {
                    k.mtime_ns != f.mtime_ns || k.size != f.size || k.chunker != chunk::VERSION
                })
            })
            .collect();
        let mut progress = Progress {
            files_total: candidates.len(),
            ..Progress::default()
        };
        on_progress(&progress);
        // Stopped before it wrote anything (a session ending as the watcher
        // starts an update): the index is as complete as it was.
        if cancel.is_cancelled() {
            stats.interrupted = true;
            return Ok(stats);
        }
        if !candidates.is_empty() || !removed.is_empty() {
            // Until this update finishes, a crash or Ctrl-C leaves it partial.
            self.state.set_meta(COMPLETE_KEY, "no")?;
            self.publish(false)?;
        }
        for batch in candidates.chunks(FILE_BATCH) {
            if cancel.is_cancelled() {
                stats.interrupted = true;
                break;
            }
            let vanished =
                self.index_batch(batch, &known, &mut stats, &mut progress, on_progress)?;
            removed.extend(vanished);
            progress.chunks_done = stats.chunks_written;
            on_progress(&progress);
        }
        if !removed.is_empty() && !stats.interrupted {
            self.store.delete_paths(&removed)?;
            self.state.commit_files(&[], &removed)?;
            stats.files_removed = removed.len();
        }
        let changed = stats.files_indexed > 0 || stats.files_removed > 0 || !was_complete;
        if changed {
            progress.building_indices = true;
            on_progress(&progress);
            // BM25 now; the vector index waits for the vectors.
            self.store.refresh_indices(false)?;
            self.store.tidy()?;
            self.store.reopen()?;
        }
        self.state.set_meta("last_update", &now_rfc3339())?;
        if stats.interrupted {
            self.state.set_meta(INTERRUPTED_KEY, "yes")?;
        } else {
            self.state.set_meta(COMPLETE_KEY, "yes")?;
            // Every file is the current chunker's now.
            self.rechunking = None;
        }
        self.publish(false)?;
        progress.building_indices = false;
        progress.searchable = true;
        on_progress(&progress);
        stats.seconds = started.elapsed().as_secs_f64();
        stats.searchable_seconds = stats.seconds;
        Ok(stats)
    }

    /// The second half of an update: embeds the chunks whose vectors are
    /// missing (or takes them from the cache), files in `priority` order
    /// first (best first: the map's ranking, recently changed files), then
    /// the rest; commits every [`FILL_COMMIT`] chunks, so searches gain
    /// vectors as it goes. Then the vector index is brought up to date (and
    /// built, once the table is large enough). Also resumes a fill that an
    /// earlier run left unfinished.
    pub fn fill_vectors(
        &mut self,
        priority: &[String],
        stats: &mut UpdateStats,
        cancel: &CancelToken,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        self.fill(priority, false, stats, cancel, on_progress)
    }

    /// Embeds the missing vectors of `files` only (a dependency's used
    /// surface before the rest of it): the vector index is left for the
    /// fill that completes the table.
    pub fn fill_vectors_of(
        &mut self,
        files: &[String],
        stats: &mut UpdateStats,
        cancel: &CancelToken,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        self.fill(files, true, stats, cancel, on_progress)
    }

    fn fill(
        &mut self,
        priority: &[String],
        only: bool,
        stats: &mut UpdateStats,
        cancel: &CancelToken,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let started = Instant::now();
        if self.writer_lock.is_none() {
            bail!("this index was opened read-only");
        }
        let mut pending = self.store.unembedded_paths()?;
        let rank: HashMap<&str, usize> = priority
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str(), i))
            .collect();
        if only {
            pending.retain(|(path, _)| rank.contains_key(path.as_str()));
        }
        pending.sort_by_key(|(path, _)| {
            (
                rank.get(path.as_str()).copied().unwrap_or(usize::MAX),
                path.clone(),
            )
        });
        let mut progress = Progress {
            searchable: true,
            chunks_done: stats.chunks_written,
            chunks_unembedded: pending.iter().map(|(_, n)| n).sum(),
            ..Progress::default()
        };
        on_progress(&progress);
        let mut group: Vec<String> = Vec::new();
        let mut group_chunks = 0;
        let mut filled_any = false;
        let last = pending.len();
        for (i, (path, n)) in pending.into_iter().enumerate() {
            group.push(path);
            group_chunks += n;
            if group_chunks < self.options.fill_commit && i + 1 < last {
                continue;
            }
            if cancel.is_cancelled() {
                stats.interrupted = true;
                break;
            }
            let mut rows = self.store.unembedded_rows(&group)?;
            let whole =
                self.attach_vectors(&mut rows, stats, &mut progress, on_progress, cancel)?;
            // Stopped part-way: the vectors embedded so far go in too, so
            // the table, the cache and the counts say the same.
            rows.retain(|r| r.embedded);
            if !rows.is_empty() {
                self.store.fill_vectors(&rows).context(
                    "cannot write vectors to the chunk table (free disk space, then run `agent index` again)",
                )?;
                filled_any = true;
            }
            progress.chunks_unembedded = progress.chunks_unembedded.saturating_sub(rows.len());
            on_progress(&progress);
            if !whole {
                stats.interrupted = true;
                break;
            }
            // Small commits pile up as small data files: merged as they go.
            self.store.tidy()?;
            group.clear();
            group_chunks = 0;
        }
        stats.chunks_unembedded = progress.chunks_unembedded;
        if only {
            if filled_any {
                self.store.tidy()?;
                self.store.reopen()?;
                self.publish(true)?;
            }
            stats.seconds += started.elapsed().as_secs_f64();
            return Ok(());
        }
        if filled_any || !stats.interrupted {
            progress.building_indices = true;
            on_progress(&progress);
            // Also with nothing filled: a table that passed the ANN
            // threshold under an older version gets its vector index here.
            // Not after Ctrl-C, though: that build can take a minute.
            // That build needs the memory the local model holds more.
            if !stats.interrupted && self.store.vector_index_due()? {
                if let Some(embedder) = &mut self.embedder {
                    embedder.release_model();
                }
            }
            stats.vector_index_built = self.store.refresh_indices(!stats.interrupted)?;
            if filled_any || stats.vector_index_built {
                self.store.tidy()?;
                self.store.reopen()?;
            }
        }
        // The update ends here, not when its rows were written.
        self.state.set_meta("last_update", &now_rfc3339())?;
        let interrupted = stats.interrupted && !self.options.background;
        self.state
            .set_meta(INTERRUPTED_KEY, if interrupted { "yes" } else { "no" })?;
        if filled_any {
            self.publish(true)?;
        }
        stats.seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Indexes one batch of files whose mtime or size changed. Returns the
    /// files that vanished while we looked at them, or None when cancelled
    /// before the batch was written.
    fn index_batch(
        &mut self,
        batch: &[&SourceFile],
        known: &HashMap<String, FileState>,
        stats: &mut UpdateStats,
        progress: &mut Progress,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Vec<String>> {
        let mut vanished = Vec::new();
        // Counted once the batch is written (a cancelled batch indexes nothing).
        let mut indexed = 0;
        let mut upserts: Vec<(String, FileState)> = Vec::new();
        let mut replaced: Vec<String> = Vec::new();
        let mut rows: Vec<Row> = Vec::new();
        for file in batch {
            progress.files_done += 1;
            on_progress(progress);
            let bytes = match std::fs::read(&file.path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if known.contains_key(&file.rel) {
                        vanished.push(file.rel.clone());
                    }
                    continue;
                }
                Err(e) => {
                    stats.skipped.push(Skipped {
                        rel: file.rel.clone(),
                        reason: format!("unreadable: {e}"),
                    });
                    continue;
                }
            };
            let hash = sha256_hex(&bytes);
            let mut file_state = FileState {
                hash,
                mtime_ns: file.mtime_ns,
                size: file.size,
                chunks: 0,
                chunker: chunk::VERSION,
            };
            if let Some(k) = known
                .get(&file.rel)
                .filter(|k| k.hash == file_state.hash && k.chunker == chunk::VERSION)
            {
                // Touched but not changed: only the mtime moves.
                file_state.chunks = k.chunks;
                upserts.push((file.rel.clone(), file_state));
                continue;
            }
            let Ok(text) = String::from_utf8(bytes) else {
                stats.skipped.push(Skipped {
                    rel: file.rel.clone(),
                    reason: "not valid UTF-8".into(),
                });
                if known.contains_key(&file.rel) {
                    vanished.push(file.rel.clone());
                }
                continue;
            };
            let embedder = self.embedder()?;
            let lang = Lang::detect(&file.path, &text);
            let chunks = chunk_file(embedder, file, lang, &text);
            file_state.chunks = chunks.len() as u32;
            for c in chunks {
                let key = chunk_key(&c.symbol, &c.text);
                rows.push(Row {
                    id: format!("{}:{}-{}", file.rel, c.start_line, c.end_line),
                    path: file.rel.clone(),
                    lang: lang.as_str().to_string(),
                    search_text: search::searchable_text(&file.rel, &c.symbol, &c.text),
                    symbol: c.symbol,
                    kind: c.kind,
                    start_line: c.start_line,
                    end_line: c.end_line,
                    hash: key,
                    text: c.text,
                    vector: Vec::new(),
                    embedded: false,
                });
            }
            replaced.push(file.rel.clone());
            upserts.push((file.rel.clone(), file_state));
            indexed += 1;
        }
        self.attach_cached_vectors(&mut rows, stats)?;
        // Rows first, in one commit, then the bookkeeping (see the module docs).
        unique_ids(&mut rows);
        self.store.replace_paths(&replaced, &rows).context(
            "cannot write the chunk table; its rows are as before the update (free disk space, then run `agent index` again)",
        )?;
        self.state.commit_files(&upserts, &[])?;
        stats.chunks_written += rows.len();
        stats.files_indexed += indexed;
        stats.changed_paths.extend(replaced);
        Ok(vanished)
    }

    /// The vectors the cache has; the other rows get zeros and
    /// `embedded = false`, for [`Index::fill_vectors`].
    fn attach_cached_vectors(&mut self, rows: &mut [Row], stats: &mut UpdateStats) -> Result<()> {
        let keys: Vec<String> = rows.iter().map(|r| r.hash.clone()).collect();
        let cached = self.state.cached_vectors(&keys)?;
        for r in rows.iter_mut() {
            match cached.get(&r.hash) {
                Some(v) => {
                    r.vector = v.clone();
                    r.embedded = true;
                    stats.cache_hits += 1;
                }
                None => {
                    r.vector = vec![0.0; self.store.dim()];
                    r.embedded = false;
                }
            }
        }
        Ok(())
    }

    /// Fills in vectors from the cache, embedding only unseen texts (once
    /// each). Returns false when cancelled: then only the rows whose vectors
    /// exist are marked embedded (what was embedded is cached).
    fn attach_vectors(
        &mut self,
        rows: &mut [Row],
        stats: &mut UpdateStats,
        progress: &mut Progress,
        on_progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<bool> {
        let keys: Vec<String> = rows.iter().map(|r| r.hash.clone()).collect();
        let mut cached = self.state.cached_vectors(&keys)?;
        let mut todo: Vec<(String, String)> = Vec::new();
        let mut queued = HashSet::new();
        for r in rows.iter() {
            if !cached.contains_key(&r.hash) && queued.insert(r.hash.clone()) {
                todo.push((r.hash.clone(), embedding_text(&r.path, &r.symbol, &r.text)));
            }
        }
        stats.cache_hits += rows.len() - todo.len();
        // Similar lengths together: little compute is spent on padding.
        todo.sort_by_key(|(_, t)| t.len());
        progress.chunks_to_embed = todo.len();
        let mut whole = true;
        for step in todo.chunks(EMBED_STEP) {
            on_progress(progress);
            if cancel.is_cancelled() {
                whole = false;
                break;
            }
            let texts: Vec<String> = step.iter().map(|(_, t)| t.clone()).collect();
            let vectors = self.embedder()?.embed(&texts)?;
            let entries: Vec<(String, Vec<f32>)> =
                step.iter().map(|(k, _)| k.clone()).zip(vectors).collect();
            self.state.store_vectors(&entries)?;
            stats.chunks_embedded += entries.len();
            progress.chunks_embedded += entries.len();
            progress.chunks_to_embed -= entries.len();
            cached.extend(entries);
        }
        for r in rows.iter_mut() {
            if let Some(vector) = cached.get(&r.hash) {
                r.vector = vector.clone();
                r.embedded = true;
            }
        }
        Ok(whole)
    }

    /// Brings a shared index's overlay up to this machine's files: finds
    /// what differs from the shared index and indexes just that, locally.
    /// A failure is said with the results, which then come from the shared
    /// index alone.
    fn refresh_overlay(&mut self) {
        if let Err(e) = self.try_refresh_overlay() {
            tracing::warn!("the local overlay of the shared index failed: {e:#}");
            self.overlay = None;
            self.overlay_note = Some(format!(
                "this machine's changes are not searched (the local overlay failed: {e:#}); results come from the shared index as it is"
            ));
        }
    }

    fn try_refresh_overlay(&mut self) -> Result<()> {
        let shared = self
            .shared
            .as_ref()
            .context("only a shared index has a local overlay")?;
        if self.overlay.is_none() {
            let dir = shared.local.join("overlay");
            let options = IndexOptions {
                embedder: embed::Choice::matching(&self.identity),
                only: Some(HashSet::new()),
                ..IndexOptions::default()
            };
            let open =
                || Self::open_writer_in(self.root.clone(), dir.clone(), options.clone(), None);
            let index = match open() {
                Ok(i) => i,
                // Another search is updating it: its results stand.
                Err(e) if format!("{e:#}").contains("already updating") => return Err(e),
                // Damaged, or made for an earlier shared index with another
                // embedder: the overlay is only a cache, started anew.
                Err(_) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    open()?
                }
            };
            self.overlay = Some(Overlay {
                index: Box::new(index),
                changes: LocalChanges::default(),
                memo: shared::HashMemo::new(),
            });
        }
        let files = self.state.files()?;
        let overlay = self
            .overlay
            .as_mut()
            .context("the overlay was just opened")?;
        overlay.changes = shared::local_changes(&self.root, &files, &mut overlay.memo);
        overlay.index.options.only = Some(overlay.changes.changed.clone());
        overlay.index.update(&CancelToken::new(), &mut |_| {})?;
        self.overlay_note = None;
        Ok(())
    }

    /// Publishes a shared index's state (and with `cache`, its embedding
    /// cache) to its store; nothing for a local index. Only writers update,
    /// so only writers publish.
    fn publish(&self, cache: bool) -> Result<()> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let state_out = self.dir.join("outgoing-state.sqlite");
        let cache_out = self.dir.join("outgoing-cache.sqlite");
        self.state
            .snapshot(&state_out, cache.then_some(cache_out.as_path()))?;
        // The cache first: a state that names vectors the store's cache
        // lacks would only cost embeddings, never a wrong result.
        if cache {
            shared.publish(&cache_out, state::CACHE_FILE)?;
            remove_sqlite(&cache_out);
        }
        shared.publish(&state_out, shared::STATE_FILE)?;
        remove_sqlite(&state_out);
        Ok(())
    }

    pub fn status(&self) -> Result<Status> {
        let files = self.state.files()?;
        let mut languages: HashMap<&str, usize> = HashMap::new();
        for path in files.keys() {
            *languages
                .entry(Lang::from_path(Path::new(path)).as_str())
                .or_default() += 1;
        }
        let mut languages: Vec<(String, usize)> = languages
            .into_iter()
            .map(|(l, n)| (l.to_string(), n))
            .collect();
        languages.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(Status {
            root: self.root.clone(),
            index_dir: self.dir.clone(),
            store: self.shared.as_ref().map(|s| s.uri.clone()),
            files: files.len(),
            languages,
            chunks: self.store.count_rows()?,
            // Reads the table's data: a damaged table has none to count
            // (`damage` says why).
            embedded_chunks: self.store.embedded_rows().unwrap_or(0),
            embedder: self.identity.clone(),
            cached_embeddings: self.state.cached_vector_count()?,
            text_index: self.store.has_text_index()?,
            vector_index: self.store.vector_index()?,
            last_update: self.state.meta("last_update")?,
            writer_active: self.writer_lock.is_none() && writer_active(&self.dir),
            disk_bytes: dir_size(&self.dir),
            complete: self.is_complete()?,
            interrupted: self.state.meta(INTERRUPTED_KEY)?.as_deref() == Some("yes"),
            damage: check(&self.store, &self.state, true).map(|d| d.to_string()),
        })
    }

    /// Which files define each name, over this index's own table.
    pub fn symbols(&self) -> Result<std::sync::Arc<store::Symbols>> {
        self.store.symbols(None)
    }

    /// Whether the last update ran to its end (see [`Status::complete`]).
    pub fn is_complete(&self) -> Result<bool> {
        Ok(self.state.meta(COMPLETE_KEY)?.as_deref() != Some("no"))
    }

    /// What searches should say about the index: partial after an
    /// interrupted update, or vectors still being filled in.
    pub fn notes(&self) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        if !self.is_complete()? {
            notes.push(if self.writer_lock.is_none() && writer_active(&self.dir) {
                UPDATING_NOTE.to_string()
            } else {
                PARTIAL_NOTE.to_string()
            });
        }
        let (embedded, chunks) = (self.store.embedded_rows()?, self.store.count_rows()?);
        notes.extend(coverage_note(embedded, chunks));
        if let (Some(shared), None) = (&self.shared, &self.writer_lock) {
            let updated = self.state.meta("last_update")?;
            let local = self.overlay.as_ref().map_or(0, |o| o.changes.len());
            notes.push(format!(
                "searching the shared index in {} (updated {}){}",
                shared.uri,
                updated.as_deref().unwrap_or("never"),
                match local {
                    0 => String::new(),
                    1 => ", with the 1 file changed or deleted here on top".into(),
                    n => format!(", with the {n} files changed or deleted here on top"),
                }
            ));
        }
        notes.extend(self.overlay_note.clone());
        Ok(notes)
    }
}

/// What is wrong with an index, if anything: unreadable data, fewer rows
/// than the files recorded (a deleted table), or a broken BM25 index. Not
/// `thorough`, only the row count is compared.
fn check(store: &Store, state: &State, thorough: bool) -> Option<Damage> {
    let expected = match state.total_chunks() {
        Ok(n) => n,
        Err(e) => return Some(Damage::Table(format!("{e:#}"))),
    };
    let rows = if thorough {
        store.verify()
    } else {
        store
            .count_rows()
            .map_err(|e| Damage::Table(format!("{e:#}")))
    };
    match rows {
        Ok(rows) if rows < expected => Some(Damage::Table(format!(
            "{rows} rows where the files recorded {expected}"
        ))),
        Ok(_) => None,
        Err(damage) => Some(damage),
    }
}

/// Why an open failed when the failure is the disk's, not the index's.
const TRANSIENT: &str = "the index could not be opened for writing (nothing was changed; \
free space or fix the permissions, then run `agent index` again)";

/// Whether an error is the system's (a full or read-only disk, no
/// permission, a lock) rather than damage to the index: only damage is
/// repaired by rebuilding, and rebuilding on a full disk would lose the
/// vectors and the embedding cache that were fine.
pub(crate) fn is_transient(e: &anyhow::Error) -> bool {
    use rusqlite::ErrorCode;
    e.chain().any(|cause| {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                StorageFull
                    | QuotaExceeded
                    | ReadOnlyFilesystem
                    | PermissionDenied
                    | Interrupted
                    | WouldBlock
                    | ResourceBusy
                    | OutOfMemory
            ) {
                return true;
            }
        }
        if let Some(rusqlite::Error::SqliteFailure(f, _)) = cause.downcast_ref::<rusqlite::Error>()
        {
            if matches!(
                f.code,
                ErrorCode::DiskFull
                    | ErrorCode::ReadOnly
                    | ErrorCode::PermissionDenied
                    | ErrorCode::DatabaseBusy
                    | ErrorCode::DatabaseLocked
                    | ErrorCode::OutOfMemory
                    | ErrorCode::CannotOpen
                    | ErrorCode::SystemIoFailure
            ) {
                return true;
            }
        }
        // LanceDB and object stores carry the OS error as text.
        let text = cause.to_string();
        [
            "No space left on device",
            "database or disk is full",
            "Read-only file system",
            "Disk quota exceeded",
            "Permission denied",
        ]
        .iter()
        .any(|m| text.contains(m))
    })
}

const UNREADABLE: &str =
    "the index could not be read (it may be damaged)\n  fix: run `agent index`, which repairs it";

/// State key: "no" while an update is under way or was cut short.
const COMPLETE_KEY: &str = "complete";

/// State key: "yes" when the last update was stopped (its rows or its
/// vectors) and none has finished since.
const INTERRUPTED_KEY: &str = "interrupted";

/// Chunks a file so that each chunk, with its `path | symbol` header, fits
/// the embedder's input (the symbol is given a fixed allowance).
pub fn chunk_file(
    embedder: &Embedder,
    file: &SourceFile,
    lang: Lang,
    text: &str,
) -> Vec<chunk::Chunk> {
    let count = |s: &str| embedder.count_tokens(s);
    let header_room = count(&file.rel) + 16;
    let limits = ChunkLimits {
        max_tokens: embed::MAX_TOKENS.saturating_sub(header_room).max(64),
        ..ChunkLimits::default()
    };
    chunk_source(lang, text, limits, &count)
}

/// Why files are re-chunked: `old` (the oldest version among them, 0 for
/// before versions were recorded) is not this chunker's version.
fn rechunking_note(old: u32, files: usize) -> String {
    let built_by = match old {
        0 => "a chunker from before versions were recorded".to_string(),
        v => format!("chunker v{v}"),
    };
    format!(
        "re-chunking {files} file(s): the index was built by {built_by}, this is v{} (searchable meanwhile; unchanged chunks keep their vectors)",
        chunk::VERSION
    )
}

/// Row ids are `path:start-end`; two chunks of one range (windows of a
/// single huge line) get `#2`, `#3`, ... so the merge on `id` stays exact.
fn unique_ids(rows: &mut [Row]) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in rows.iter_mut() {
        let n = seen.entry(r.id.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            r.id = format!("{}#{n}", r.id);
        }
    }
}

/// The embedding cache's key for a chunk: its symbol and text, not its path,
/// so a chunk that moves keeps its vector.
pub fn chunk_key(symbol: &str, text: &str) -> String {
    hex::encode(Sha256::digest(format!("{symbol}\0{text}")))
}

/// What the embedder sees: a header with the path and symbol, then the code.
pub fn embedding_text(path: &str, symbol: &str, text: &str) -> String {
    if symbol.is_empty() {
        format!("{path}\n{text}")
    } else {
        format!("{path} | {symbol}\n{text}")
    }
}

/// The embedder for an index opened with `choice`, whose vectors (if any)
/// came from `recorded`; `None` stands for the local model, loaded when
/// first needed. Two models never share an index.
fn choose_embedder(
    choice: &embed::Choice,
    recorded: Option<Identity>,
) -> Result<(Option<Embedder>, Identity)> {
    let embedder = match (choice, recorded) {
        (
            embed::Choice::Server {
                url,
                model,
                api_key,
            },
            recorded,
        ) => {
            let embedder = Embedder::from_server(url, model.as_deref(), api_key.clone())?;
            let identity = embedder.identity();
            if let Some(r) = recorded.filter(|r| !r.same_model(&identity)) {
                bail!(
                    "this index's vectors come from {}, and {} would mix a second embedder into it, whose vectors cannot be compared with them\n  fix: use the same embedder (drop --embed-server, or point it at a server running {}), or start over with `agent index --rebuild` and the embedder you want",
                    r.describe(),
                    identity.describe(),
                    r.model
                );
            }
            embedder
        }
        // Checked against the recorded model as it connects.
        (embed::Choice::AsRecorded, Some(r)) if r.server.is_some() => connect_recorded(&r)?,
        (embed::Choice::AsRecorded, recorded) => {
            return Ok((None, recorded.unwrap_or_else(Identity::local)))
        }
    };
    let identity = embedder.identity();
    Ok((Some(embedder), identity))
}

/// The server an index was made with, at `AGENT_EMBED_SERVER` when it has
/// moved, with `AGENT_EMBED_API_KEY`.
fn connect_recorded(recorded: &Identity) -> Result<Embedder> {
    let url = std::env::var("AGENT_EMBED_SERVER")
        .ok()
        .or_else(|| recorded.server.clone())
        .unwrap_or_default();
    let key = std::env::var("AGENT_EMBED_API_KEY").ok();
    let embedder = Embedder::from_server(&url, Some(&recorded.model), key).with_context(|| {
        format!(
            "this index embeds with {}, which cannot be reached (set AGENT_EMBED_SERVER if it moved)",
            recorded.describe()
        )
    })?;
    let identity = embedder.identity();
    if !recorded.same_model(&identity) {
        bail!(
            "this index's vectors come from {}, but {url} now serves {}\n  fix: point AGENT_EMBED_SERVER at a server with {}, or start over with `agent index --rebuild`",
            recorded.describe(),
            identity.describe(),
            recorded.model
        );
    }
    Ok(embedder)
}

/// Where a writer keeps its files (the repository's index folder, or a
/// shared store's working copies), and the store when there is one.
fn writer_location(root: &Path, options: &IndexOptions) -> Result<(PathBuf, Option<SharedStore>)> {
    match &options.store {
        Some(uri) => {
            let shared = SharedStore::open(root, uri, true)?;
            Ok((shared.local.clone(), Some(shared)))
        }
        None => Ok((index_dir(root), None)),
    }
}

/// Where the chunk table of the index kept in `dir` lives.
fn table_location(dir: &Path, shared: Option<&SharedStore>) -> Result<TableLocation> {
    match shared {
        Some(s) => Ok(s.table.clone()),
        None => TableLocation::local(&dir.join("lance")),
    }
}

/// Removes the chunk table (to be made anew: the callers forget its files).
fn remove_table(dir: &Path, shared: Option<&SharedStore>) -> Result<()> {
    match shared {
        Some(s) => s.remove_table(),
        None => {
            let lance = dir.join("lance");
            if lance.exists() {
                std::fs::remove_dir_all(&lance).with_context(|| {
                    format!("cannot remove the chunk table {}", lance.display())
                })?;
            }
            Ok(())
        }
    }
}

/// A shared index's writer starts from the store's state and cache: the
/// store is the truth, and a CI runner starts with neither. A store without
/// a state is a new index (the local cache, if any, is kept).
fn fetch_working_copies(shared: &SharedStore, dir: &Path) -> Result<()> {
    let state_path = dir.join(shared::STATE_FILE);
    remove_sqlite(&state_path);
    shared.fetch(shared::STATE_FILE, &state_path)?;
    let fetched = dir.join("fetched-cache.sqlite");
    if shared.fetch(state::CACHE_FILE, &fetched)? {
        let cache_path = dir.join(state::CACHE_FILE);
        remove_sqlite(&cache_path);
        std::fs::rename(&fetched, &cache_path)
            .with_context(|| format!("cannot write {}", cache_path.display()))?;
    }
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
