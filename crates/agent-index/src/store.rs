//! Chunk storage in LanceDB (`index/lance/` in the workspace's state folder):
//! one `chunks` table with the text, metadata and vector of every chunk, plus
//! a full-text (BM25) index over an identifier-aware copy of the text.
//!
//! Rows are written before they are embedded (progressive indexing): such a
//! row has `embedded = false` and a zero vector, is found by BM25 at once,
//! and is left out of vector searches until its vector is filled in.
//!
//! The vector index: below [`ANN_MIN_ROWS`] chunks a vector search compares
//! every vector, exactly. From there the writer's [`Store::refresh_indices`]
//! builds an IVF_PQ index (√rows partitions, PQ sub-vectors that divide the
//! model's width); queries probe a share of the partitions and re-rank the
//! best candidates on their full vectors ([`AnnSearch`]). Rows added later are
//! compared exactly until the next update folds them in as a delta segment,
//! and past `ANN_MAX_SEGMENTS` segments they are merged. IVF_PQ was chosen
//! over IVF_HNSW_SQ by `scripts/bench index --scale`: better recall at 1M rows
//! in half the build time (BENCHMARKS.md).
//!
//! Keeping it lean ([`Store::tidy`]): every update adds data files and a table
//! version; once more than `COMPACT_ABOVE_SMALL_FRAGMENTS` small files pile
//! up the writer compacts them, and past `KEEP_VERSIONS` versions it prunes
//! those older than `PRUNE_AFTER_SECONDS`, so a watcher running for days keeps
//! searches fast.
//!
//! LanceDB is async; the store owns a small Tokio runtime and exposes a
//! blocking API, which is what the CLI and the agent's tools want.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt32Type};
use arrow_array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, RecordBatch, StringArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancedb::index::scalar::{
    BooleanQuery, FtsIndexBuilder, FullTextSearchQuery, MatchQuery, Occur,
};
use lancedb::index::vector::{IvfHnswSqIndexBuilder, IvfPqIndexBuilder};
use lancedb::index::Index;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::{CompactionOptions, OptimizeAction, OptimizeOptions};
use lancedb::{Connection, DistanceType, Table};

use super::embed::DIM;

const TABLE: &str = "chunks";
/// Rows are deleted by path in groups of this many (SQL `IN` lists).
const DELETE_GROUP: usize = 256;
/// Small data files above which a writer compacts the table: every
/// incremental update adds files, and a watcher running for days would
/// otherwise slow every search down with thousands of them.
const COMPACT_ABOVE_SMALL_FRAGMENTS: usize = 32;
/// Table versions kept before old ones are pruned: every update is a new
/// version with its own BM25 index files, ~0.5 MB each on a small repo, and
/// a watcher makes one per save.
const KEEP_VERSIONS: usize = 16;
/// Only versions older than this are pruned: readers reload the latest
/// version on every query, and no query runs this long.
const PRUNE_AFTER_SECONDS: i64 = 30;

/// Rows from which vector search goes through an ANN index rather than a
/// scan of every vector (see BENCHMARKS.md, "Vector search at scale").
pub const ANN_MIN_ROWS: usize = 50_000;
/// Full vectors an ANN query re-ranks at most (each is a random read):
/// the top 10 of any list is then as good as of a top-10 query at the
/// default refine factor, and a deep list (a long query asks for 200) costs
/// no more to refine.
const ANN_MAX_REFINE_ROWS: usize = 400;
/// Delta segments an ANN index may gather from incremental updates (each
/// update indexes its new rows as a small segment of its own) before they
/// are merged: every query searches every segment.
const ANN_MAX_SEGMENTS: u32 = 8;
/// Vectors the IVF partitions are trained on, at most (about 100 MB of
/// 384-d vectors): LanceDB samples 256 per partition by default, which
/// grows with the table (256k vectors and 1.2 GB peak RSS at 1M rows).
const ANN_MAX_TRAINING_ROWS: u32 = 65_536;
/// Memory the BM25 build may hold before it writes a partition out
/// (LanceDB's default is 2 GiB per worker).
const TEXT_INDEX_MEMORY_MB: u64 = 128;

/// The vector indexes the store can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnKind {
    /// IVF partitions of product-quantized codes, re-ranked on the full
    /// vectors (`refine_factor`).
    IvfPq,
    /// IVF partitions each holding an HNSW graph over 8-bit scalar codes.
    IvfHnswSq,
}

impl AnnKind {
    pub const ALL: [AnnKind; 2] = [AnnKind::IvfPq, AnnKind::IvfHnswSq];

    pub fn name(self) -> &'static str {
        match self {
            AnnKind::IvfPq => "ivf_pq",
            AnnKind::IvfHnswSq => "ivf_hnsw_sq",
        }
    }

    /// The index for a table of `rows` rows of `dim` dimensions: about
    /// √rows partitions (LanceDB's own rule), PQ sub-vectors of 8 dimensions
    /// (48 for MiniLM's 384), or of the nearest size that divides `dim`.
    fn index(self, rows: usize, dim: usize) -> Index {
        let sub_vectors = (1..=dim / 8)
            .rev()
            .find(|n| dim.is_multiple_of(*n))
            .unwrap_or(1);
        let partitions = ((rows as f64).sqrt() as u32).clamp(1, 4096);
        let sample_rate = |partitions: u32| (ANN_MAX_TRAINING_ROWS / partitions).clamp(16, 256);
        match self {
            AnnKind::IvfPq => Index::IvfPq(
                IvfPqIndexBuilder::default()
                    .distance_type(DistanceType::Cosine)
                    .num_partitions(partitions)
                    .sample_rate(sample_rate(partitions))
                    .num_sub_vectors(sub_vectors as u32),
            ),
            AnnKind::IvfHnswSq => Index::IvfHnswSq(
                // HNSW partitions are searched by graph, so they can be
                // larger: fewer centroids to compare the query with.
                IvfHnswSqIndexBuilder::default()
                    .distance_type(DistanceType::Cosine)
                    .num_partitions((partitions / 4).max(1))
                    .sample_rate(sample_rate((partitions / 4).max(1))),
            ),
        }
    }
}

impl std::str::FromStr for AnnKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        AnnKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| anyhow!("unknown vector index kind {s:?} (ivf_pq or ivf_hnsw_sq)"))
    }
}

/// How an ANN query trades speed for recall (ignored without an index).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnnSearch {
    /// IVF partitions searched.
    pub nprobes: usize,
    /// IVF_PQ: candidates re-ranked on the full vectors, × the limit.
    pub refine_factor: u32,
    /// IVF_HNSW: candidates kept while walking each partition's graph (at
    /// least the candidates to re-rank).
    pub ef: usize,
}

impl Default for AnnSearch {
    /// Chosen on 1M rows (about 1,000 partitions) for recall@10 ≥ 0.95 at a
    /// p50 near 10 ms (BENCHMARKS.md); smaller tables get more of their
    /// partitions searched, so higher recall.
    fn default() -> Self {
        Self {
            nprobes: 160,
            refine_factor: 40,
            ef: 100,
        }
    }
}

/// The vector index of a table, as [`Store::vector_index`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VectorIndexInfo {
    pub kind: String,
    pub indexed_rows: usize,
    pub unindexed_rows: usize,
    /// Segments: the trained index plus the deltas of later updates.
    pub segments: u32,
}

/// One chunk as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: String,
    pub path: String,
    pub lang: String,
    pub symbol: String,
    pub kind: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Hash of the embedded text (the embedding cache key).
    pub hash: String,
    pub text: String,
    /// Text with identifiers split (`parseHttp` → `parse http`) for BM25.
    pub search_text: String,
    pub vector: Vec<f32>,
    /// Whether `vector` is the chunk's embedding yet (else it is zeros, and
    /// vector searches skip the row).
    pub embedded: bool,
}

/// Which files define each name: every part of a chunk's symbol is a name
/// its file defines (`BlockMatrix._entry` defines `BlockMatrix` and
/// `_entry`).
#[derive(Debug, Default)]
pub struct Symbols {
    files_by_name: HashMap<String, Vec<u32>>,
    paths: Vec<String>,
}

impl Symbols {
    /// The files that define `name`, each once.
    pub fn files_defining(&self, name: &str) -> Vec<&str> {
        let mut ids = self.files_by_name.get(name).cloned().unwrap_or_default();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|i| self.paths[i as usize].as_str())
            .collect()
    }

    /// Every name with the files that define it (for benchmarks).
    pub fn names(&self) -> impl Iterator<Item = (&str, Vec<&str>)> {
        self.files_by_name
            .keys()
            .map(|name| (name.as_str(), self.files_defining(name)))
    }
}

/// A search result before fusion: the row and the raw score of its leg.
#[derive(Debug, Clone)]
pub struct Hit {
    pub row: Row,
    /// Cosine similarity for vector hits, BM25 score for text hits.
    pub score: f32,
}

pub struct Store {
    location: TableLocation,
    // Dropped before the runtime it was opened on (fields drop in order).
    table: Table,
    rt: tokio::runtime::Runtime,
    /// (table version, rows without a vector) as last counted.
    unembedded: std::sync::Mutex<Option<(u64, usize)>>,
    /// (table version, its symbols) as last read.
    symbols: std::sync::Mutex<Option<(u64, Arc<Symbols>)>>,
    /// Set once the BM25 index is seen: it is never dropped afterwards, so
    /// searches need not list the table's indices again.
    text_index_seen: std::sync::atomic::AtomicBool,
    /// Versions younger than this are kept ([`PRUNE_AFTER_SECONDS`]).
    prune_after_seconds: i64,
    /// Search effort once the table has a vector index.
    ann: AnnSearch,
    /// The index [`Store::refresh_indices`] builds past `ann_min_rows`.
    ann_kind: AnnKind,
    /// [`ANN_MIN_ROWS`], lowered by tests.
    ann_min_rows: usize,
    /// The table has the `embedded` column (tables made before progressive
    /// indexing do not, and every row of theirs is embedded).
    progressive: bool,
    /// Dimensions of its vectors.
    dim: usize,
}

/// Only rows whose vector is filled in take part in vector searches.
const EMBEDDED: &str = "embedded = true";
/// Rows still to embed.
const NOT_EMBEDDED: &str = "embedded = false";

fn schema(dim: usize) -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("id"),
        text("path"),
        text("lang"),
        text("symbol"),
        text("kind"),
        Field::new("start_line", DataType::UInt32, false),
        Field::new("end_line", DataType::UInt32, false),
        text("hash"),
        text("text"),
        text("search_text"),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                dim as i32,
            ),
            false,
        ),
        Field::new("embedded", DataType::Boolean, false),
    ]))
}

fn to_batch(rows: &[Row], dim: usize) -> Result<RecordBatch> {
    let strings = |f: fn(&Row) -> &str| {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f))) as ArrayRef
    };
    let flat: Vec<f32> = rows.iter().flat_map(|r| r.vector.iter().copied()).collect();
    let vectors = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        dim as i32,
        Arc::new(Float32Array::from(flat)),
        None,
    )?;
    Ok(RecordBatch::try_new(
        schema(dim),
        vec![
            strings(|r| &r.id),
            strings(|r| &r.path),
            strings(|r| &r.lang),
            strings(|r| &r.symbol),
            strings(|r| &r.kind),
            Arc::new(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.start_line),
            )),
            Arc::new(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.end_line),
            )),
            strings(|r| &r.hash),
            strings(|r| &r.text),
            strings(|r| &r.search_text),
            Arc::new(vectors),
            Arc::new(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.embedded)),
            )),
        ],
    )?)
}

fn from_batch(batch: &RecordBatch, score_column: &str) -> Result<Vec<Hit>> {
    let col = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| anyhow!("column {name} missing from results"))
    };
    let string = |name: &str| -> Result<Vec<String>> {
        Ok(col(name)?
            .as_string::<i32>()
            .iter()
            .map(|s| s.unwrap_or_default().to_string())
            .collect())
    };
    let (id, path, lang, symbol, kind, hash, text) = (
        string("id")?,
        string("path")?,
        string("lang")?,
        string("symbol")?,
        string("kind")?,
        string("hash")?,
        string("text")?,
    );
    // Only rows read back to be rewritten carry it, and no score.
    let search_text = match batch.column_by_name("search_text") {
        Some(_) => string("search_text")?,
        None => Vec::new(),
    };
    let start = col("start_line")?.as_primitive::<UInt32Type>().clone();
    let end = col("end_line")?.as_primitive::<UInt32Type>().clone();
    let score = match score_column {
        "" => None,
        name => Some(col(name)?.as_primitive::<Float32Type>().clone()),
    };
    Ok((0..batch.num_rows())
        .map(|i| Hit {
            row: Row {
                id: id[i].clone(),
                path: path[i].clone(),
                lang: lang[i].clone(),
                symbol: symbol[i].clone(),
                kind: kind[i].clone(),
                start_line: start.value(i),
                end_line: end.value(i),
                hash: hash[i].clone(),
                text: text[i].clone(),
                search_text: search_text.get(i).cloned().unwrap_or_default(),
                vector: Vec::new(),
                embedded: true,
            },
            score: score.as_ref().map_or(0.0, |s| s.value(i)),
        })
        .collect())
}

/// `'it''s'`: a SQL string literal.
fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

const RESULT_COLUMNS: &[&str] = &[
    "id",
    "path",
    "lang",
    "symbol",
    "kind",
    "start_line",
    "end_line",
    "hash",
    "text",
];

/// The result columns plus the leg's score column, named explicitly (LanceDB
/// warns when a score column is projected implicitly).
fn columns_with(score: &str) -> Vec<&str> {
    RESULT_COLUMNS
        .iter()
        .copied()
        .chain(std::iter::once(score))
        .collect()
}

/// What [`Store::verify`] found broken.
#[derive(Debug, Clone)]
pub enum Damage {
    /// Data files missing or unreadable: the table must be rebuilt.
    Table(String),
    /// Only the BM25 index: it can be rebuilt from the table.
    TextIndex(String),
    /// Only the vector index: it can be rebuilt from the table.
    VectorIndex(String),
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Table(why) => write!(f, "the chunk table is damaged: {why}"),
            Damage::TextIndex(why) => write!(f, "the BM25 index is damaged: {why}"),
            Damage::VectorIndex(why) => write!(f, "the vector index is damaged: {why}"),
        }
    }
}

/// Where a chunk table lives: a local folder, or a URI LanceDB opens with
/// its storage options (a shared index on S3, `index::shared`).
#[derive(Debug, Clone)]
pub struct TableLocation {
    pub uri: String,
    pub options: Vec<(String, String)>,
}

impl TableLocation {
    pub fn local(dir: &Path) -> Result<Self> {
        let uri = dir
            .to_str()
            .ok_or_else(|| anyhow!("index path is not UTF-8: {}", dir.display()))?;
        Ok(Self {
            uri: uri.to_string(),
            options: Vec::new(),
        })
    }
}

/// A fresh handle on the chunk table at `location`, created when absent
/// unless `create` is false (a reader of a shared index writes nothing).
fn open_table(
    rt: &tokio::runtime::Runtime,
    location: &TableLocation,
    dim: usize,
    create: bool,
) -> Result<Table> {
    let table = rt.block_on(async {
        // Strong read consistency: a long-lived reader (the agent, a
        // benchmark) sees what a concurrent writer committed.
        let db: Connection = lancedb::connect(&location.uri)
            .storage_options(location.options.iter().cloned())
            .read_consistency_interval(std::time::Duration::ZERO)
            .execute()
            .await?;
        match db.open_table(TABLE).execute().await {
            Ok(t) => Ok(t),
            Err(lancedb::Error::TableNotFound { .. }) if create => {
                db.create_empty_table(TABLE, schema(dim)).execute().await
            }
            Err(e) => Err(e),
        }
    })?;
    Ok(table)
}

impl Store {
    /// Opens the chunk table under `dir`, creating it for the default
    /// embedder's vectors when absent.
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with_dim(dir, DIM)
    }

    /// Opens the chunk table under `dir`, creating it for vectors of `dim`
    /// dimensions when absent (an existing table keeps its own).
    pub fn open_with_dim(dir: &Path, dim: usize) -> Result<Self> {
        Self::open_at(&TableLocation::local(dir)?, dim, true)
    }

    /// Opens the chunk table at `location`; with `create`, an absent one is
    /// created for vectors of `dim` dimensions.
    pub fn open_at(location: &TableLocation, dim: usize, create: bool) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the storage runtime")?;
        let table = open_table(&rt, location, dim, create)?;
        let schema = rt.block_on(table.schema())?;
        let progressive = schema.field_with_name("embedded").is_ok();
        let dim = match schema.field_with_name("vector").map(|f| f.data_type()) {
            Ok(DataType::FixedSizeList(_, n)) => *n as usize,
            _ => dim,
        };
        Ok(Self {
            progressive,
            dim,
            location: location.clone(),
            table,
            rt,
            text_index_seen: std::sync::atomic::AtomicBool::new(false),
            unembedded: std::sync::Mutex::new(None),
            symbols: std::sync::Mutex::new(None),
            prune_after_seconds: PRUNE_AFTER_SECONDS,
            ann: AnnSearch::default(),
            ann_kind: AnnKind::IvfPq,
            ann_min_rows: ANN_MIN_ROWS,
        })
    }

    /// Dimensions of the table's vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn count_rows(&self) -> Result<usize> {
        Ok(self.rt.block_on(self.table.count_rows(None))?)
    }

    /// Whether the table was made before progressive indexing (no
    /// `embedded` column): the writer rebuilds it.
    pub fn is_legacy(&self) -> bool {
        !self.progressive
    }

    /// Rows whose vector is filled in.
    pub fn embedded_rows(&self) -> Result<usize> {
        Ok(self.count_rows()? - self.unembedded_count()?)
    }

    /// Rows whose vector is not filled in, counted once per table version:
    /// searches ask on every query, and a count scans the whole column.
    fn unembedded_count(&self) -> Result<usize> {
        if !self.progressive {
            return Ok(0);
        }
        let version = self.rt.block_on(self.table.version())?;
        let mut cache = self.unembedded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((v, n)) = *cache {
            if v == version {
                return Ok(n);
            }
        }
        let n = self
            .rt
            .block_on(self.table.count_rows(Some(NOT_EMBEDDED.into())))?;
        *cache = Some((version, n));
        Ok(n)
    }

    /// Files with rows still to embed, and how many each has.
    pub fn unembedded_paths(&self) -> Result<Vec<(String, usize)>> {
        if !self.progressive {
            return Ok(Vec::new());
        }
        let batches: Vec<RecordBatch> = self.rt.block_on(async {
            self.table
                .query()
                .only_if(NOT_EMBEDDED)
                .select(Select::columns(&["path"]))
                .execute()
                .await?
                .try_collect()
                .await
        })?;
        let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
        for b in &batches {
            let paths = b
                .column_by_name("path")
                .ok_or_else(|| anyhow!("column path missing from results"))?
                .as_string::<i32>();
            for p in paths.iter().flatten() {
                *counts.entry(p.to_string()).or_default() += 1;
            }
        }
        Ok(counts.into_iter().collect())
    }

    /// The rows of `paths` still to embed, whole but for their vectors.
    pub fn unembedded_rows(&self, paths: &[String]) -> Result<Vec<Row>> {
        let list: Vec<String> = paths.iter().map(|p| sql_string(p)).collect();
        let filter = format!("{NOT_EMBEDDED} AND path IN ({})", list.join(","));
        let columns: Vec<&str> = RESULT_COLUMNS
            .iter()
            .copied()
            .chain(["search_text"])
            .collect();
        let batches: Vec<RecordBatch> = self.rt.block_on(async {
            self.table
                .query()
                .only_if(filter)
                .select(Select::columns(&columns))
                .execute()
                .await?
                .try_collect()
                .await
        })?;
        let mut rows = Vec::new();
        for b in &batches {
            rows.extend(from_batch(b, "")?.into_iter().map(|h| Row {
                embedded: false,
                ..h.row
            }));
        }
        Ok(rows)
    }

    /// Writes the vectors of rows read by [`Store::unembedded_rows`], in one
    /// commit; rows deleted meanwhile stay deleted.
    pub fn fill_vectors(&self, rows: &[Row]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch = to_batch(rows, self.dim)?;
        let schema = batch.schema();
        let reader = arrow_array::RecordBatchIterator::new(vec![Ok(batch)], schema);
        let mut merge = self.table.merge_insert(&["id"]);
        merge.when_matched_update_all(None);
        self.rt.block_on(merge.execute(Box::new(reader)))?;
        Ok(())
    }

    /// Removes every chunk of `paths`.
    pub fn delete_paths(&self, paths: &[String]) -> Result<()> {
        for group in paths.chunks(DELETE_GROUP) {
            let list: Vec<String> = group.iter().map(|p| sql_string(p)).collect();
            self.rt
                .block_on(self.table.delete(&format!("path IN ({})", list.join(","))))?;
        }
        Ok(())
    }

    /// Replaces every chunk of `paths` with `rows` in one commit (a merge on
    /// `id` that deletes the paths' rows the new set lacks), so a write that
    /// fails half-way (a full disk) leaves the old rows in place rather than
    /// none. `rows` must belong to `paths` and have unique ids.
    pub fn replace_paths(&self, paths: &[String], rows: &[Row]) -> Result<()> {
        if rows.is_empty() {
            return self.delete_paths(paths);
        }
        let list: Vec<String> = paths.iter().map(|p| sql_string(p)).collect();
        let batch = to_batch(rows, self.dim)?;
        let schema = batch.schema();
        let reader = arrow_array::RecordBatchIterator::new(vec![Ok(batch)], schema);
        let mut merge = self.table.merge_insert(&["id"]);
        merge
            .when_matched_update_all(None)
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(Some(format!("path IN ({})", list.join(","))));
        self.rt.block_on(merge.execute(Box::new(reader)))?;
        Ok(())
    }

    pub fn add(&self, rows: &[Row]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch = to_batch(rows, self.dim)?;
        self.rt.block_on(self.table.add(batch).execute())?;
        Ok(())
    }

    /// Brings the indices up to the table after a write: builds the BM25
    /// index when missing, builds the vector index once the table reaches
    /// [`ANN_MIN_ROWS`] (when `may_build_ann`), and folds rows added since
    /// into both. Returns whether it built the vector index (tens of seconds
    /// on 1M rows). Cheap when there is nothing to do.
    pub fn refresh_indices(&self, may_build_ann: bool) -> Result<bool> {
        let _frugal = agent_base::alloc::Frugal::new();
        let built = self.rt.block_on(async {
            let indices = self.table.list_indices().await?;
            let rows = self.table.count_rows(None).await?;
            let mut behind = false;
            match indices.iter().find(|i| i.columns == ["search_text"]) {
                Some(fts) => {
                    let stats = self.table.index_stats(&fts.name).await?;
                    behind |= stats.is_some_and(|s| s.num_unindexed_rows > 0);
                }
                None if rows > 0 => {
                    // Our own search_text column already splits identifiers,
                    // so the plain tokenizer with stemming suits it.
                    let params = FtsIndexBuilder::default()
                        .with_position(false)
                        .memory_limit_mb(TEXT_INDEX_MEMORY_MB);
                    let started = std::time::Instant::now();
                    self.table
                        .create_index(&["search_text"], Index::FTS(params))
                        .execute()
                        .await?;
                    tracing::debug!("built the BM25 index in {:?}", started.elapsed());
                }
                None => {}
            }
            let mut merge = None;
            let mut built = false;
            match indices.iter().find(|i| i.columns == ["vector"]) {
                Some(vector) => {
                    if let Some(stats) = self.table.index_stats(&vector.name).await? {
                        behind |= stats.num_unindexed_rows > 0;
                        if stats.num_indices.unwrap_or(1) > ANN_MAX_SEGMENTS {
                            merge = Some(ANN_MAX_SEGMENTS as usize);
                        }
                    }
                }
                None if may_build_ann && self.ann_due(rows).await? => {
                    let started = std::time::Instant::now();
                    self.table
                        .create_index(&["vector"], self.ann_kind.index(rows, self.dim))
                        .execute()
                        .await?;
                    tracing::debug!("built the vector index in {:?}", started.elapsed());
                    built = true;
                }
                None => {}
            }
            if behind || merge.is_some() {
                // New rows become a delta segment of each index; a merge
                // folds the deltas back into one.
                let options = OptimizeOptions::default().num_indices_to_merge(merge);
                self.table.optimize(OptimizeAction::Index(options)).await?;
            }
            Ok::<_, lancedb::Error>(built)
        })?;
        Ok(built)
    }

    /// Whether a table of `rows` rows without a vector index should get
    /// one: it has reached the threshold and every row has its vector (zero
    /// vectors would skew the partitions it trains).
    async fn ann_due(&self, rows: usize) -> lancedb::Result<bool> {
        Ok(rows >= self.ann_min_rows
            && (!self.progressive || self.table.count_rows(Some(NOT_EMBEDDED.into())).await? == 0))
    }

    /// Whether the next [`Store::refresh_indices`] that may build the
    /// vector index will build it (tens of seconds, hundreds of MB).
    pub fn vector_index_due(&self) -> Result<bool> {
        self.rt
            .block_on(async {
                let indices = self.table.list_indices().await?;
                if indices.iter().any(|i| i.columns == ["vector"]) {
                    return Ok(false);
                }
                let rows = self.table.count_rows(None).await?;
                self.ann_due(rows).await
            })
            .map_err(Into::into)
    }

    /// The table's vector index, if it has one.
    pub fn vector_index(&self) -> Result<Option<VectorIndexInfo>> {
        self.rt.block_on(async {
            let indices = self.table.list_indices().await?;
            let Some(index) = indices.iter().find(|i| i.columns == ["vector"]) else {
                return Ok(None);
            };
            Ok(self
                .table
                .index_stats(&index.name)
                .await?
                .map(|s| VectorIndexInfo {
                    kind: s.index_type.to_string(),
                    indexed_rows: s.num_indexed_rows,
                    unindexed_rows: s.num_unindexed_rows,
                    segments: s.num_indices.unwrap_or(1),
                }))
        })
    }

    /// Builds (or rebuilds) the vector index of `kind` over every row now in
    /// the table, whatever its size; [`Store::refresh_indices`] does this by
    /// itself past [`ANN_MIN_ROWS`].
    pub fn build_vector_index(&self, kind: AnnKind) -> Result<()> {
        let _frugal = agent_base::alloc::Frugal::new();
        self.rt.block_on(async {
            let rows = self.table.count_rows(None).await?;
            self.table
                .create_index(&["vector"], kind.index(rows, self.dim))
                .replace(true)
                .execute()
                .await
        })?;
        Ok(())
    }

    /// Sets the search effort of ANN queries.
    pub fn set_ann_search(&mut self, ann: AnnSearch) {
        self.ann = ann;
    }

    /// Keeps the table lean after an update: merges small data files once
    /// they pile up, and prunes old versions once there are more than
    /// [`KEEP_VERSIONS`]. Returns whether it compacted. Indices are remapped
    /// by the compaction itself.
    pub fn tidy(&self) -> Result<bool> {
        self.rt
            .block_on(async {
                let stats = self.table.stats().await?;
                let compact =
                    stats.fragment_stats.num_small_fragments > COMPACT_ABOVE_SMALL_FRAGMENTS;
                if compact {
                    let _frugal = agent_base::alloc::Frugal::new();
                    self.table
                        .optimize(OptimizeAction::Compact {
                            options: CompactionOptions::default(),
                            remap_options: None,
                        })
                        .await?;
                }
                if compact || self.table.list_versions().await?.len() > KEEP_VERSIONS {
                    self.table
                        .optimize(OptimizeAction::Prune {
                            older_than: Some(lancedb::table::Duration::seconds(
                                self.prune_after_seconds,
                            )),
                            delete_unverified: None,
                            error_if_tagged_old_versions: None,
                        })
                        .await?;
                }
                Ok::<_, lancedb::Error>(compact)
            })
            .map_err(Into::into)
    }

    /// Opens the table afresh, dropping what the old handle cached: each
    /// update writes a new BM25 index, and a long-lived handle keeps the files
    /// of every one it has read open (two descriptors per update, in a
    /// watcher, until it runs out).
    pub fn reopen(&mut self) -> Result<()> {
        // On the same runtime; the old handle drops here, its files with it.
        self.table = open_table(&self.rt, &self.location, self.dim, false)?;
        Ok(())
    }

    /// Data files in the table: (all, small).
    pub fn fragments(&self) -> Result<(usize, usize)> {
        let stats = self.rt.block_on(self.table.stats())?;
        Ok((
            stats.fragment_stats.num_fragments,
            stats.fragment_stats.num_small_fragments,
        ))
    }

    pub fn has_text_index(&self) -> Result<bool> {
        use std::sync::atomic::Ordering;
        if self.text_index_seen.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let indices = self.rt.block_on(self.table.list_indices())?;
        let found = indices.iter().any(|i| i.columns == ["search_text"]);
        self.text_index_seen.store(found, Ordering::Relaxed);
        Ok(found)
    }

    /// Reads the whole table once (every column of every data file) and
    /// runs one BM25 query: what a truncated or missing data file, or a
    /// damaged text index, breaks. Returns the rows read.
    pub fn verify(&self) -> std::result::Result<usize, Damage> {
        let rows = self
            .rt
            .block_on(async {
                let mut stream = self.table.query().execute().await?;
                let mut rows = 0;
                while let Some(batch) = stream.try_next().await? {
                    rows += batch.num_rows();
                }
                Ok::<_, lancedb::Error>(rows)
            })
            .map_err(|e| Damage::Table(e.to_string()))?;
        let counted = self
            .count_rows()
            .map_err(|e| Damage::Table(format!("{e:#}")))?;
        if counted != rows {
            return Err(Damage::Table(format!("{rows} rows readable of {counted}")));
        }
        if self.has_text_index().unwrap_or(false) {
            self.text_search("index check", 1, None)
                .map_err(|e| Damage::TextIndex(format!("{e:#}")))?;
        }
        let has_vector_index = self
            .vector_index()
            .map_err(|e| Damage::VectorIndex(format!("{e:#}")))?
            .is_some();
        if has_vector_index {
            let mut probe = vec![0.0; self.dim];
            probe[0] = 1.0;
            self.vector_search(&probe, 1, None)
                .map_err(|e| Damage::VectorIndex(format!("{e:#}")))?;
        }
        Ok(rows)
    }

    /// Drops the indices on `column`.
    fn drop_indices_on(&self, column: &str) -> Result<()> {
        self.rt.block_on(async {
            for index in self.table.list_indices().await? {
                if index.columns == [column] {
                    self.table.drop_index(&index.name).await?;
                }
            }
            Ok::<_, lancedb::Error>(())
        })?;
        Ok(())
    }

    /// Drops the vector index: searches compare every vector until
    /// [`Store::refresh_indices`] builds it again.
    pub fn drop_vector_index(&self) -> Result<()> {
        self.drop_indices_on("vector")
    }

    /// Drops the BM25 index and builds it again.
    pub fn rebuild_text_index(&self) -> Result<()> {
        self.drop_indices_on("search_text")?;
        self.text_index_seen
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.refresh_indices(false).map(|_| ())
    }

    /// Nearest chunks by cosine similarity: through the vector index when
    /// the table has one (rows added since it was last refreshed are
    /// compared exactly), else by comparing every vector.
    pub fn vector_search(
        &self,
        query: &[f32],
        limit: usize,
        filter: Option<&str>,
    ) -> Result<Vec<Hit>> {
        self.nearest(query, limit, filter, true)
    }

    /// Nearest chunks by comparing every vector, index or not: the ground
    /// truth ANN recall is measured against.
    pub fn exact_vector_search(
        &self,
        query: &[f32],
        limit: usize,
        filter: Option<&str>,
    ) -> Result<Vec<Hit>> {
        self.nearest(query, limit, filter, false)
    }

    fn nearest(
        &self,
        query: &[f32],
        limit: usize,
        filter: Option<&str>,
        use_index: bool,
    ) -> Result<Vec<Hit>> {
        // Only while vectors are being filled in: the filter is a scan of
        // every row (25 ms a query at 1M rows, more than the ANN search).
        let skip_unembedded = self.unembedded_count()? > 0;
        let mut hits = self.rt.block_on(async {
            let mut q = self
                .table
                .query()
                .nearest_to(query)?
                .distance_type(DistanceType::Cosine)
                .select(Select::columns(&columns_with("_distance")))
                .limit(limit);
            q = if use_index {
                let refine = (ANN_MAX_REFINE_ROWS / limit.max(1))
                    .clamp(1, self.ann.refine_factor.max(1) as usize);
                q.nprobes(self.ann.nprobes)?
                    .refine_factor(refine as u32)
                    // HNSW refuses an ef below the candidates it must return.
                    .ef(self.ann.ef.max(limit * refine))
            } else {
                q.bypass_vector_index()
            };
            let filter = match (filter, skip_unembedded) {
                (Some(f), true) => Some(format!("({f}) AND {EMBEDDED}")),
                (None, true) => Some(EMBEDDED.to_string()),
                (f, false) => f.map(str::to_string),
            };
            collect_hits(q, filter.as_deref(), "_distance").await
        })?;
        // Cosine distance → similarity.
        for h in &mut hits {
            h.score = 1.0 - h.score;
        }
        Ok(hits)
    }

    /// Which files define each name ([`Symbols`]), read once per table
    /// version: the scan of two columns takes 40-100 ms at 90k rows, the
    /// lookups after it microseconds. With a filter (`--lang`) it is read
    /// afresh.
    pub fn symbols(&self, filter: Option<&str>) -> Result<Arc<Symbols>> {
        let version = self.rt.block_on(self.table.version())?;
        if filter.is_none() {
            let cache = self.symbols.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((v, symbols)) = &*cache {
                if *v == version {
                    return Ok(symbols.clone());
                }
            }
        }
        let batches: Vec<RecordBatch> = self.rt.block_on(async {
            let q = self
                .table
                .query()
                .select(Select::columns(&["path", "symbol"]));
            let q = match filter {
                Some(f) => q.only_if(f),
                None => q,
            };
            q.execute().await?.try_collect().await
        })?;
        let mut symbols = Symbols::default();
        let mut path_ids: HashMap<String, u32> = HashMap::new();
        for b in &batches {
            let col = |name: &str| {
                b.column_by_name(name)
                    .map(|c| c.as_string::<i32>())
                    .ok_or_else(|| anyhow!("column {name} missing from results"))
            };
            let (path, symbol) = (col("path")?, col("symbol")?);
            for i in 0..b.num_rows() {
                let symbol = symbol.value(i);
                if symbol.is_empty() {
                    continue;
                }
                let path = path.value(i);
                let id = *path_ids.entry(path.to_string()).or_insert_with(|| {
                    symbols.paths.push(path.to_string());
                    symbols.paths.len() as u32 - 1
                });
                // `Engine::load`, `mod.fn`, and a chunk of several small
                // items: `set_file_mtime, set_file_atime`.
                for part in symbol.split(['.', ':', ',', ' ']).filter(|p| !p.is_empty()) {
                    let files = symbols.files_by_name.entry(part.to_string()).or_default();
                    if files.last() != Some(&id) {
                        files.push(id);
                    }
                }
            }
        }
        let symbols = Arc::new(symbols);
        if filter.is_none() {
            *self.symbols.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((version, symbols.clone()));
        }
        Ok(symbols)
    }

    /// Best chunks by BM25 over the identifier-aware text.
    pub fn text_search(&self, query: &str, limit: usize, filter: Option<&str>) -> Result<Vec<Hit>> {
        self.weighted_text_search(&[(query.to_string(), 1.0)], limit, filter)
    }

    /// BM25 with groups of terms that weigh differently (the names in an
    /// issue text count for more than its prose): a chunk's score is the
    /// sum over the groups of its BM25 score for the group × the weight.
    pub fn weighted_text_search(
        &self,
        groups: &[(String, f32)],
        limit: usize,
        filter: Option<&str>,
    ) -> Result<Vec<Hit>> {
        let groups: Vec<&(String, f32)> = groups
            .iter()
            .filter(|(q, _)| !q.trim().is_empty())
            .collect();
        if groups.is_empty() || !self.has_text_index()? {
            return Ok(Vec::new());
        }
        let query = match groups.as_slice() {
            [(q, w)] if *w == 1.0 => FullTextSearchQuery::new(q.clone()),
            _ => FullTextSearchQuery::new_query(
                BooleanQuery::new(groups.iter().map(|(q, w)| {
                    let clause = MatchQuery::new(q.clone())
                        .with_column(Some("search_text".into()))
                        .with_boost(*w);
                    (Occur::Should, clause.into())
                }))
                .into(),
            ),
        };
        self.rt.block_on(async {
            let q = self
                .table
                .query()
                .full_text_search(query)
                .select(Select::columns(&columns_with("_score")))
                .limit(limit);
            collect_hits(q, filter, "_score").await
        })
    }
}

impl Store {
    /// The chunks that define one of `names`: a symbol that is the name or
    /// ends with it (`FixtureRequest.getfixturevalue`, `Engine::load`). At
    /// most `limit`; score 0 (the caller ranks them).
    pub fn definitions(
        &self,
        names: &[String],
        limit: usize,
        filter: Option<&str>,
    ) -> Result<Vec<Hit>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        // SQL's `_` is a wildcard in LIKE; the exact match is checked below.
        let clauses: Vec<String> = names
            .iter()
            .flat_map(|n| {
                [
                    format!("symbol = {}", sql_string(n)),
                    format!("symbol LIKE {}", sql_string(&format!("%.{n}"))),
                    format!("symbol LIKE {}", sql_string(&format!("%:{n}"))),
                ]
            })
            .collect();
        let mut condition = format!("({})", clauses.join(" OR "));
        if let Some(f) = filter {
            condition = format!("{condition} AND ({f})");
        }
        let hits = self.rt.block_on(async {
            let q = self
                .table
                .query()
                .select(Select::columns(RESULT_COLUMNS))
                .limit(limit);
            collect_hits(q, Some(&condition), "").await
        })?;
        Ok(hits
            .into_iter()
            .filter(|h| {
                let last = h.row.symbol.rsplit(['.', ':']).next().unwrap_or("");
                names.iter().any(|n| n == last)
            })
            .collect())
    }
}

/// Applies the optional SQL filter, runs the query and reads its rows.
async fn collect_hits(
    query: impl ExecutableQuery + QueryBase,
    filter: Option<&str>,
    score_column: &str,
) -> Result<Vec<Hit>> {
    let query = match filter {
        Some(f) => query.only_if(f),
        None => query,
    };
    let batches: Vec<RecordBatch> = query.execute().await?.try_collect().await?;
    let mut hits = Vec::new();
    for b in &batches {
        hits.extend(from_batch(b, score_column)?);
    }
    Ok(hits)
}

/// A `lang = '...'` filter in the store's SQL dialect.
pub(crate) fn lang_filter(lang: &str) -> String {
    format!("lang = {}", sql_string(lang))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, text: &str, v: f32) -> Row {
        let mut vector = vec![0.0; DIM];
        vector[0] = v;
        vector[1] = 1.0 - v;
        Row {
            id: format!("{path}:1"),
            path: path.into(),
            lang: "rust".into(),
            symbol: "f".into(),
            kind: "function".into(),
            start_line: 1,
            end_line: 2,
            hash: "h".into(),
            text: text.into(),
            search_text: text.into(),
            vector,
            embedded: true,
        }
    }

    /// A unit vector that differs for every `i` (no two alike, no structure).
    fn scattered(i: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..DIM)
            .map(|d| ((i * 7919 + d * 104_729) as f32 * 0.618).sin())
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    fn scattered_row(i: usize) -> Row {
        Row {
            id: format!("r{i}"),
            path: format!("f{i}.rs"),
            vector: scattered(i),
            ..row("x", "text", 0.0)
        }
    }

    #[test]
    fn past_the_threshold_searches_go_through_a_vector_index_that_keeps_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.ann_min_rows = 1000;
        let rows: Vec<Row> = (0..999).map(scattered_row).collect();
        store.add(&rows).unwrap();
        store.refresh_indices(true).unwrap();
        assert_eq!(store.vector_index().unwrap(), None, "below the threshold");
        assert!(!store.vector_index_due().unwrap());

        store.add(&[scattered_row(999)]).unwrap();
        assert!(store.vector_index_due().unwrap(), "at the threshold");
        store.refresh_indices(true).unwrap();
        assert!(!store.vector_index_due().unwrap(), "built");
        let info = store
            .vector_index()
            .unwrap()
            .expect("built at the threshold");
        assert_eq!((info.indexed_rows, info.unindexed_rows), (1000, 0));

        // The index's answers are the exact ones, near enough.
        let mut found = 0;
        for i in (0..1000).step_by(50) {
            let q = scattered(i + 5000);
            let exact: Vec<String> = store
                .exact_vector_search(&q, 10, None)
                .unwrap()
                .into_iter()
                .map(|h| h.row.id)
                .collect();
            let ann = store.vector_search(&q, 10, None).unwrap();
            found += ann.iter().filter(|h| exact.contains(&h.row.id)).count();
        }
        assert!(found >= 180, "recall@10 {found}/200");
        assert_eq!(
            store.vector_search(&scattered(17), 1, None).unwrap()[0]
                .row
                .id,
            "r17"
        );

        // Rows written after the index are searched exactly until it is
        // refreshed; replaced rows are gone at once.
        store.add(&[scattered_row(2000)]).unwrap();
        store
            .replace_paths(
                &["f17.rs".into()],
                &[Row {
                    vector: scattered(3000),
                    ..scattered_row(17)
                }],
            )
            .unwrap();
        assert_eq!(
            store.vector_search(&scattered(2000), 1, None).unwrap()[0]
                .row
                .id,
            "r2000"
        );
        assert_eq!(
            store.vector_search(&scattered(3000), 1, None).unwrap()[0]
                .row
                .id,
            "r17"
        );
        assert_ne!(
            store.vector_search(&scattered(17), 1, None).unwrap()[0]
                .row
                .id,
            "r17"
        );
        store.refresh_indices(true).unwrap();
        assert_eq!(store.vector_index().unwrap().unwrap().unindexed_rows, 0);

        // A watcher's many small updates each add a delta segment, merged
        // once there are too many.
        let mut most = 0;
        for i in 0..(ANN_MAX_SEGMENTS as usize + 4) {
            store.add(&[scattered_row(4000 + i)]).unwrap();
            store.refresh_indices(true).unwrap();
            let info = store.vector_index().unwrap().unwrap();
            assert_eq!(info.unindexed_rows, 0);
            most = most.max(info.segments);
        }
        assert_eq!(most, ANN_MAX_SEGMENTS + 1, "merged as the limit is passed");
        assert!(store.vector_index().unwrap().unwrap().segments < ANN_MAX_SEGMENTS);

        // A vector index with its files gone is damage of its own, repaired
        // from the table.
        assert!(store.verify().is_ok());
        let indices = dir.path().join(format!("{TABLE}.lance/_indices"));
        for entry in std::fs::read_dir(&indices).unwrap() {
            let part = entry.unwrap().path();
            if part.join("auxiliary.idx").exists() {
                std::fs::remove_file(part.join("index.idx")).unwrap();
            }
        }
        store.reopen().unwrap();
        let damage = store.verify().unwrap_err();
        assert!(matches!(damage, Damage::VectorIndex(_)), "{damage}");
        store.drop_vector_index().unwrap();
        assert!(store.refresh_indices(true).unwrap(), "rebuilt");
        assert!(store.verify().is_ok());
        assert_eq!(
            store.vector_search(&scattered(4003), 1, None).unwrap()[0]
                .row
                .id,
            "r4003"
        );
    }

    #[test]
    fn symbols_say_which_files_define_a_name_and_follow_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let with_symbol = |path: &str, symbol: &str| Row {
            id: format!("{path}:{symbol}"),
            symbol: symbol.into(),
            ..row(path, "text", 1.0)
        };
        store
            .add(&[
                with_symbol("blockmatrix.py", "BlockMatrix._entry"),
                with_symbol("blockmatrix.py", "BlockMatrix.shape"),
                with_symbol("dense.py", "DenseMatrix.shape"),
                with_symbol("readme.md", ""),
            ])
            .unwrap();
        let symbols = store.symbols(None).unwrap();
        assert_eq!(symbols.files_defining("BlockMatrix"), ["blockmatrix.py"]);
        assert_eq!(symbols.files_defining("_entry"), ["blockmatrix.py"]);
        let mut shape = symbols.files_defining("shape");
        shape.sort();
        assert_eq!(shape, ["blockmatrix.py", "dense.py"]);
        assert!(symbols.files_defining("missing").is_empty());
        // Read once per table version: a write is seen by the next read.
        store.delete_paths(&["dense.py".into()]).unwrap();
        assert_eq!(
            store.symbols(None).unwrap().files_defining("shape"),
            ["blockmatrix.py"]
        );
    }

    #[test]
    fn many_small_writes_are_compacted_and_stay_searchable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for i in 0..(COMPACT_ABOVE_SMALL_FRAGMENTS + 4) {
            store
                .add(&[row(&format!("f{i}.rs"), &format!("word{i} shared"), 1.0)])
                .unwrap();
        }
        store.refresh_indices(true).unwrap();
        let (_, small) = store.fragments().unwrap();
        assert!(small > COMPACT_ABOVE_SMALL_FRAGMENTS, "{small}");
        assert!(store.tidy().unwrap());
        let (all, _) = store.fragments().unwrap();
        assert!(all < 4, "{all} fragments after compaction");
        assert_eq!(
            store.count_rows().unwrap(),
            COMPACT_ABOVE_SMALL_FRAGMENTS + 4
        );
        let hits = store.text_search("word7", 5, None).unwrap();
        assert_eq!(hits[0].row.path, "f7.rs");
        let mut q = vec![0.0; DIM];
        q[0] = 1.0;
        assert_eq!(
            store.vector_search(&q, 50, None).unwrap().len(),
            COMPACT_ABOVE_SMALL_FRAGMENTS + 4
        );
        assert!(!store.tidy().unwrap(), "nothing left to compact");
    }

    #[test]
    fn old_versions_are_pruned_once_they_pile_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.prune_after_seconds = 0;
        let files = |sub: &str| walkdir_count(&dir.path().join(format!("{TABLE}.lance/{sub}")));
        // What a watcher does on every save: new rows, a refreshed BM25 index.
        for i in 0..(KEEP_VERSIONS + 8) {
            store
                .replace_paths(
                    &["f.rs".into()],
                    &[row("f.rs", &format!("word{i} shared"), 1.0)],
                )
                .unwrap();
            store.refresh_indices(true).unwrap();
        }
        let before = (files("_versions"), files("_indices"));
        store.tidy().unwrap();
        let after = (files("_versions"), files("_indices"));
        assert!(
            after.0 < 4 && after.0 < before.0,
            "versions {before:?} -> {after:?}"
        );
        assert!(
            after.1 < before.1 / 4,
            "index files {before:?} -> {after:?}"
        );
        // Still whole.
        assert_eq!(store.count_rows().unwrap(), 1);
        let last = format!("word{}", KEEP_VERSIONS + 7);
        assert_eq!(store.text_search(&last, 5, None).unwrap().len(), 1);
        store.reopen().unwrap();
        assert_eq!(store.text_search(&last, 5, None).unwrap().len(), 1);
    }

    fn walkdir_count(dir: &Path) -> usize {
        let mut n = 0;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    n += 1;
                }
            }
        }
        n
    }

    #[test]
    fn add_search_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .add(&[
                row("a.rs", "parse the config file", 1.0),
                row("b's.rs", "open a socket", 0.0),
            ])
            .unwrap();
        store.refresh_indices(true).unwrap();
        assert_eq!(store.count_rows().unwrap(), 2);

        let mut q = vec![0.0; DIM];
        q[0] = 1.0;
        let hits = store.vector_search(&q, 2, None).unwrap();
        assert_eq!(hits[0].row.path, "a.rs");
        assert!(hits[0].score > 0.99);

        let hits = store.text_search("socket", 5, None).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].row.path, "b's.rs");

        store.delete_paths(&["b's.rs".into()]).unwrap();
        assert_eq!(store.count_rows().unwrap(), 1);
        // Rows added after the index was built are still found.
        store.add(&[row("c.rs", "socket again", 0.5)]).unwrap();
        assert_eq!(
            store.text_search("socket", 5, None).unwrap()[0].row.path,
            "c.rs"
        );
        drop(store);
        // Reopening finds the same table.
        assert_eq!(Store::open(dir.path()).unwrap().count_rows().unwrap(), 2);
    }
}
