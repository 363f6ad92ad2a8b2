//! Peak memory of the index's own builds at monorepo size, for
//! `scripts/bench index --scale`: the BM25 index and the vector index over
//! a table of ROWS chunks, built by the store as `agent index` builds them.
//!
//! Usage:
//!   bench_index_memory make DIR ROWS   writes a table of ROWS synthetic chunks
//!   bench_index_memory build DIR       builds its indices; prints JSON
//!   bench_index_memory tree DIR CHUNKS writes a Python tree of about CHUNKS
//!                                      functions (for `agent index`)
//!   bench_index_memory prefill DIR N   fills DIR's embedding cache with
//!                                      synthetic vectors for all but N of its
//!                                      chunks, so `agent index DIR` embeds
//!                                      only N and the rest of its work runs
//!                                      at full size in minutes
//!
//! `make` and `build` are two processes, so the build is measured from a
//! baseline like the indexer's (a store opened on a table it did not write).
//!
//! Rows: clustered unit vectors (a few hundred random centres plus noise, so
//! k-means has structure to find) and about 120 words of identifier-like
//! text from a 50,000-word vocabulary, near a real chunk's size.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::path::Path;
use std::time::Instant;

use agent_index::bench::State;
use agent_index::bench::{Row, Store};
use agent_index::embed::{Embedder, DIM};
use agent_index::{chunk_file, chunk_key, index_dir};
use agent_lang::lang::Lang;
use agent_lang::walk::{walk, WalkOptions};
use anyhow::{bail, Context, Result};
use serde_json::json;

mod common;
use common::{peak_rss_mb, reset_peak_rss, rss_mb};

const WRITE_BATCH: usize = 20_000;
const CENTRES: usize = 512;
const VOCABULARY: u64 = 50_000;
const WORDS_PER_ROW: usize = 120;

/// splitmix64: reproducible noise; no crate needed for a benchmark.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn signed(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn make(dir: &Path, rows: usize) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    let store = Store::open(dir)?;
    let mut rng = Rng(7);
    let centres: Vec<Vec<f32>> = (0..CENTRES)
        .map(|_| normalised((0..DIM).map(|_| rng.signed()).collect()))
        .collect();
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    for i in 0..rows {
        let c = &centres[rng.next() as usize % CENTRES];
        let vector = normalised(c.iter().map(|x| x + 0.6 * rng.signed() / 20.0).collect());
        // Zipf-like word choice: squaring a uniform favours low ranks.
        let words: Vec<String> = (0..WORDS_PER_ROW).map(|_| word(&mut rng)).collect();
        let text = words.join(" ");
        batch.push(Row {
            id: format!("r{i}"),
            path: format!("synthetic/{}/{}.py", i / 2_000, i / 20),
            lang: "python".into(),
            symbol: format!("f{i}"),
            kind: "function".into(),
            start_line: 1,
            end_line: 30,
            hash: String::new(),
            search_text: text.clone(),
            text,
            vector,
            embedded: true,
        });
        if batch.len() == WRITE_BATCH {
            store.add(&batch)?;
            batch.clear();
        }
    }
    store.add(&batch)?;
    Ok(())
}

fn build(dir: &Path) -> Result<()> {
    let store = Store::open(dir)?;
    let rows = store.count_rows()?;
    let before = rss_mb();
    // The BM25 index first (the store builds it whatever the size), then
    // the vector index, each with its own peak.
    reset_peak_rss();
    let started = Instant::now();
    store.refresh_indices(false)?;
    let text_s = started.elapsed().as_secs_f64();
    let text_peak = peak_rss_mb();
    reset_peak_rss();
    let started = Instant::now();
    let built = store.refresh_indices(true)?;
    let vector_s = started.elapsed().as_secs_f64();
    let vector_peak = peak_rss_mb();
    let vector_index = store.vector_index()?.context("no vector index was built")?;
    println!(
        "{}",
        json!({
            "rows": rows,
            "rss_before_mb": before,
            "text_index": {"build_s": text_s, "peak_rss_mb": text_peak},
            "vector_index": {"kind": vector_index.kind, "built": built, "build_s": vector_s, "peak_rss_mb": vector_peak},
            "peak_rss_mb": text_peak.max(vector_peak),
        })
    );
    Ok(())
}

/// A word of the synthetic vocabulary, Zipf-like (low ranks favoured).
fn word(rng: &mut Rng) -> String {
    let u = (rng.next() % VOCABULARY) as f64 / VOCABULARY as f64;
    format!("w{}", (u * u * VOCABULARY as f64) as u64)
}

fn tree(dir: &Path, chunks: usize) -> Result<()> {
    const PER_FILE: usize = 20;
    let mut rng = Rng(11);
    for f in 0..chunks.div_ceil(PER_FILE) {
        let mut src = String::new();
        for i in 0..PER_FILE {
            let args: Vec<String> = (0..3).map(|_| word(&mut rng)).collect();
            src += &format!("def f{f}_{i}_{}({}):\n", word(&mut rng), args.join(", "));
            for _ in 0..8 {
                let words: Vec<String> = (0..6).map(|_| word(&mut rng)).collect();
                src += &format!(
                    "    {} = {}({})\n",
                    words[0],
                    words[1],
                    words[2..].join(", ")
                );
            }
            src += &format!("    return {}\n\n", args[0]);
        }
        let path = dir.join(format!("pkg{}/m{f}.py", f / 100));
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, src)?;
    }
    Ok(())
}

fn prefill(dir: &Path, leave: usize) -> Result<()> {
    let root = dir.canonicalize()?;
    let embedder = Embedder::load_default(1)?; // its tokenizer: no model run
    let (files, _) = walk(&root, &WalkOptions::default());
    let mut keys = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(&f.path)?;
        for c in chunk_file(&embedder, f, Lang::detect(&f.path, &src), &src) {
            keys.push(chunk_key(&c.symbol, &c.text));
        }
    }
    keys.sort();
    keys.dedup();
    let keep = keys.len().saturating_sub(leave);
    std::fs::create_dir_all(index_dir(&root))?;
    let mut state = State::open(&index_dir(&root).join("state.sqlite"))?;
    let mut rng = Rng(5);
    let centres: Vec<Vec<f32>> = (0..CENTRES)
        .map(|_| normalised((0..DIM).map(|_| rng.signed()).collect()))
        .collect();
    for part in keys[..keep].chunks(10_000) {
        let entries: Vec<(String, Vec<f32>)> = part
            .iter()
            .map(|k| {
                let c = &centres[rng.next() as usize % CENTRES];
                let v = normalised(c.iter().map(|x| x + 0.03 * rng.signed()).collect());
                (k.clone(), v)
            })
            .collect();
        state.store_vectors(&entries)?;
    }
    eprintln!("{} chunks, {keep} vectors cached", keys.len());
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("make") if args.len() == 4 => make(Path::new(&args[2]), args[3].parse()?),
        Some("build") if args.len() == 3 => build(Path::new(&args[2])),
        Some("tree") if args.len() == 4 => tree(Path::new(&args[2]), args[3].parse()?),
        Some("prefill") if args.len() == 4 => prefill(Path::new(&args[2]), args[3].parse()?),
        _ => bail!(
            "usage: bench_index_memory make DIR ROWS | build DIR | tree DIR CHUNKS | prefill DIR N"
        ),
    }
}
