//! Vector search at scale, for `scripts/bench index --scale`: exact search
//! against the ANN indexes LanceDB offers, on tables of 10k to 1M rows.
//!
//! Usage: bench_ann WORK_DIR QUERIES_JSON SCALES KINDS [REAL_LANCE_DIR]
//!   QUERIES_JSON  a list of query texts, embedded here with the real embedder
//!   SCALES        rows per table, comma-separated (real,10000,100000,1000000);
//!                 `real` is the real index's table as it is
//!   KINDS         indexes to build, comma-separated (ivf_pq,ivf_hnsw_sq)
//!   REAL_LANCE_DIR a real index's chunk table (`.agent/index/lance`): its
//!                 vectors seed the synthetic rows and it is measured itself
//!
//! Rows: the real vectors first, then synthetic ones, each the normalised
//! mix of two real vectors plus noise, so the table keeps the real
//! embeddings' shape (clusters, directions) at any size. Without a real
//! index, the queries' own vectors seed it.
//!
//! For each table: exact search (every vector compared) p50/p95; then per
//! index kind its build time and peak RSS, and per search setting
//! (nprobes, refine_factor or ef) the p50/p95 and recall@10 against the exact
//! top 10. Prints one JSON object.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use agent_index::bench::{AnnKind, AnnSearch, Row, Store};
use agent_index::embed::{Embedder, DIM};
use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::Array;
use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use serde_json::{json, Value};

mod common;
use common::{peak_rss_mb, percentile, reset_peak_rss, rss_mb};

const K: usize = 10;
const WRITE_BATCH: usize = 50_000;

/// xorshift64*: a reproducible stream for the synthetic rows; no crate
/// needed for a benchmark's noise.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Roughly normal: the sum of four uniforms, centred.
    fn gauss(&mut self) -> f32 {
        (self.unit() + self.unit() + self.unit() + self.unit() - 2.0) * 1.732
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn synthetic(base: &[Vec<f32>], rng: &mut Rng) -> Vec<f32> {
    let a = &base[rng.next() as usize % base.len()];
    let b = &base[rng.next() as usize % base.len()];
    let w = 0.2 + 0.8 * rng.unit();
    let noise = 0.3 / (DIM as f32).sqrt();
    normalised(
        (0..DIM)
            .map(|i| a[i] + w * b[i] + noise * rng.gauss())
            .collect(),
    )
}

fn row(i: usize, vector: Vec<f32>) -> Row {
    Row {
        id: format!("r{i}"),
        path: format!("synthetic/{}.py", i / 20),
        lang: "python".into(),
        symbol: String::new(),
        kind: "block".into(),
        start_line: 1,
        end_line: 1,
        hash: String::new(),
        text: String::new(),
        search_text: String::new(),
        vector,
        embedded: true,
    }
}

fn read_vectors(lance_dir: &Path) -> Result<Vec<Vec<f32>>> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let db = lancedb::connect(lance_dir.to_str().context("path")?)
            .execute()
            .await?;
        let table = db.open_table("chunks").execute().await?;
        let batches: Vec<_> = table
            .query()
            .select(Select::columns(&["vector"]))
            .execute()
            .await?
            .try_collect()
            .await?;
        let mut out = Vec::new();
        for b in batches {
            let list = b.column(0).as_fixed_size_list();
            for i in 0..list.len() {
                let v = list.value(i);
                out.push(v.as_primitive::<Float32Type>().values().to_vec());
            }
        }
        Ok(out)
    })
}

fn build_table(dir: &Path, rows: usize, base: &[Vec<f32>]) -> Result<Store> {
    let _ = std::fs::remove_dir_all(dir);
    let store = Store::open(dir)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    for i in 0..rows {
        let v = match base.get(i) {
            Some(v) => v.clone(),
            None => synthetic(base, &mut rng),
        };
        batch.push(row(i, v));
        if batch.len() == WRITE_BATCH {
            store.add(&batch)?;
            batch.clear();
        }
    }
    store.add(&batch)?;
    Ok(store)
}

/// Exact top-k ids and latencies.
fn exact(store: &Store, queries: &[Vec<f32>]) -> Result<(Vec<Vec<String>>, Value)> {
    let mut ids = Vec::new();
    let mut ms = Vec::new();
    for q in queries {
        let t = Instant::now();
        let hits = store.exact_vector_search(q, K, None)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        ids.push(hits.into_iter().map(|h| h.row.id).collect());
    }
    Ok((ids, latency(ms)))
}

fn latency(ms: Vec<f64>) -> Value {
    json!({"p50_ms": percentile(ms.clone(), 0.5), "p95_ms": percentile(ms, 0.95)})
}

fn ann(store: &Store, queries: &[Vec<f32>], truth: &[Vec<String>]) -> Result<Value> {
    let mut ms = Vec::new();
    let mut found = 0usize;
    let mut total = 0usize;
    for (q, want) in queries.iter().zip(truth) {
        let t = Instant::now();
        let hits = store.vector_search(q, K, None)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        found += hits.iter().filter(|h| want.contains(&h.row.id)).count();
        total += want.len();
    }
    let mut v = latency(ms);
    v["recall_at_10"] = json!(found as f64 / total.max(1) as f64);
    Ok(v)
}

fn settings(kind: AnnKind) -> Vec<AnnSearch> {
    let d = AnnSearch::default();
    match kind {
        AnnKind::IvfPq => [
            (40, 20),
            (80, 20),
            (160, 20),
            (160, 40),
            (240, 20),
            (320, 20),
        ]
        .into_iter()
        .map(|(nprobes, refine_factor)| AnnSearch {
            nprobes,
            refine_factor,
            ..d
        })
        .collect(),
        AnnKind::IvfHnswSq => [(10, 100), (20, 100), (40, 100), (40, 200)]
            .into_iter()
            .map(|(nprobes, ef)| AnnSearch {
                nprobes,
                ef,
                refine_factor: 1,
            })
            .collect(),
    }
}

/// Every measurement on one table.
fn measure(mut store: Store, queries: &[Vec<f32>], kinds: &[AnnKind]) -> Result<Value> {
    let rows = store.count_rows()?;
    // Warm the page cache and the runtime before timing anything.
    for q in queries.iter().take(3) {
        store.exact_vector_search(q, K, None)?;
    }
    let (truth, exact_latency) = exact(&store, queries)?;
    eprintln!("  {rows} rows, exact: {exact_latency}");
    let mut out = json!({"rows": rows, "exact": exact_latency, "indexes": {}});
    for &kind in kinds {
        reset_peak_rss();
        let rss_before = rss_mb();
        let t = Instant::now();
        store.build_vector_index(kind)?;
        let build_s = t.elapsed().as_secs_f64();
        let build_rss = peak_rss_mb();
        eprintln!(
            "  {} built in {build_s:.1} s, peak RSS {build_rss:.0} MB (from {rss_before:.0} MB)",
            kind.name()
        );
        let mut sweep = Vec::new();
        for s in settings(kind) {
            store.set_ann_search(s);
            for q in queries.iter().take(3) {
                store.vector_search(q, K, None)?;
            }
            let mut m = ann(&store, queries, &truth)?;
            m["nprobes"] = json!(s.nprobes);
            let (knob, value) = match kind {
                AnnKind::IvfPq => ("refine_factor", s.refine_factor as usize),
                AnnKind::IvfHnswSq => ("ef", s.ef),
            };
            m[knob] = json!(value);
            eprintln!("  {} {m}", kind.name());
            sweep.push(m);
        }
        store.set_ann_search(AnnSearch::default());
        let default = ann(&store, queries, &truth)?;
        out["indexes"][kind.name()] = json!({
            "build_s": build_s, "build_peak_rss_mb": build_rss, "rss_before_build_mb": rss_before,
            "default": default, "sweep": sweep,
        });
    }
    Ok(out)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        anyhow::bail!("usage: bench_ann WORK_DIR QUERIES_JSON SCALES KINDS [REAL_LANCE_DIR]");
    }
    let work = PathBuf::from(&args[1]);
    let texts: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&args[2])?)?;
    let measure_real = args[3].split(',').any(|s| s == "real");
    let scales: Vec<usize> = args[3]
        .split(',')
        .filter(|s| *s != "real")
        .map(|s| s.parse())
        .collect::<std::result::Result<_, _>>()?;
    let kinds: Vec<AnnKind> = args[4]
        .split(',')
        .map(|s| s.parse())
        .collect::<Result<_>>()?;
    let real = args.get(5).map(PathBuf::from);

    let mut embedder = Embedder::load_default(2)?;
    let queries = embedder.embed(&texts)?;
    let base = match &real {
        Some(dir) => read_vectors(dir)?,
        None => queries.clone(),
    };
    eprintln!("{} queries, {} real vectors", queries.len(), base.len());
    std::fs::create_dir_all(&work)?;

    let mut report = json!({"queries": queries.len(), "base_vectors": base.len(), "k": K,
                            "default_search": format!("{:?}", AnnSearch::default())});
    if real.is_some() && measure_real {
        // The real corpus alone, in a table of its own (not the original:
        // building an index there would change the benchmark's input).
        eprintln!("real corpus");
        let store = build_table(&work.join("real"), base.len(), &base)?;
        report["real"] = measure(store, &queries, &kinds)?;
        let _ = std::fs::remove_dir_all(work.join("real"));
    }
    let mut by_scale = serde_json::Map::new();
    for &rows in &scales {
        eprintln!("scale {rows}");
        reset_peak_rss();
        let t = Instant::now();
        let store = build_table(&work.join("scale"), rows, &base)?;
        eprintln!("  written in {:.0} s", t.elapsed().as_secs_f64());
        by_scale.insert(rows.to_string(), measure(store, &queries, &kinds)?);
        let _ = std::fs::remove_dir_all(work.join("scale"));
    }
    report["scales"] = Value::Object(by_scale);
    println!("{report}");
    Ok(())
}
