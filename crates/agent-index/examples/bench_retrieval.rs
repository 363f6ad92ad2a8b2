//! Retrieval quality for `scripts/bench retrieval` on one labelled corpus.
//!
//! Usage: bench_retrieval CORPUS_DIR QUERIES_JSON [FUSION...]   (FUSION: rrf:W or linear:W)
//! QUERIES_JSON is a list of {"query": ..., "target": "relative/path"}.
//! Indexes CORPUS_DIR with the real pipeline, runs every query through
//! `Index::search` (the function behind `agent search`) in bm25, vector and
//! hybrid modes, and prints MRR@10, R@1 and R@10 per mode as JSON. Extra
//! fusion settings add hybrid runs with them (for tuning on dev data).
//! `hybrid_vs_legs` compares hybrid with each leg query by query: the mean
//! difference of reciprocal ranks and its 95% bootstrap interval, so "hybrid
//! is not below its best leg" is a claim the sample supports or not.
//! With BENCH_DUMP=FILE, each query's ranked paths and scores per mode go
//! to FILE as JSON (for trying fusions offline).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use agent_base::cancel::CancelToken;
use agent_index::{Fusion, Index, IndexOptions, SearchMode, SearchQuery};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Labelled {
    query: String,
    target: String,
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(&args[1]);
    let queries: Vec<Labelled> = serde_json::from_str(&std::fs::read_to_string(&args[2])?)?;
    let fusions: Vec<(String, Fusion)> = args[3..]
        .iter()
        .map(|f| {
            (
                f.clone(),
                f.parse().expect("fusion: rrf:W, linear:W or z:W"),
            )
        })
        .collect();

    let mut index = Index::open_writer(&root, IndexOptions::default())?;
    let stats = index.update(&CancelToken::new(), &mut |_| {})?;
    // `None`: the search's own choice for the query.
    let mut runs: Vec<(String, SearchMode, Option<Fusion>)> = vec![
        ("bm25".into(), SearchMode::Bm25, None),
        ("vector".into(), SearchMode::Vector, None),
        ("hybrid".into(), SearchMode::Hybrid, None),
    ];
    for (name, f) in fusions {
        runs.push((format!("hybrid_{name}"), SearchMode::Hybrid, Some(f)));
    }
    let mut report = serde_json::Map::new();
    let mut dump = serde_json::Map::new();
    let mut reciprocal: std::collections::HashMap<String, Vec<f64>> = Default::default();
    for (name, mode, fusion) in runs {
        let mut ranked = Vec::new();
        let mut rr = Vec::new();
        let (mut mrr, mut r1, mut r10) = (0.0, 0.0, 0.0);
        for q in &queries {
            let mut sq = SearchQuery::new(q.query.clone(), 30);
            sq.mode = mode;
            sq.fusion = fusion;
            // Rank files, not chunks: a long function may span chunks.
            let mut files: Vec<String> = Vec::new();
            let mut scores = Vec::new();
            for r in index.search(&sq)? {
                if !files.contains(&r.path) {
                    scores.push(json!([r.path, r.score]));
                    files.push(r.path);
                }
            }
            ranked.push(json!({"query": q.query, "target": q.target, "ranked": scores}));
            let pos = files.iter().take(10).position(|p| *p == q.target);
            rr.push(pos.map_or(0.0, |p| 1.0 / (p as f64 + 1.0)));
            if let Some(pos) = pos {
                mrr += 1.0 / (pos as f64 + 1.0);
                r10 += 1.0;
                if pos == 0 {
                    r1 += 1.0;
                }
            }
        }
        dump.insert(name.clone(), json!(ranked));
        reciprocal.insert(name.clone(), rr);
        let n = queries.len() as f64;
        report.insert(
            name,
            json!({"mrr10": mrr / n, "r1": r1 / n, "r10": r10 / n}),
        );
    }
    let hybrid = &reciprocal["hybrid"];
    let versus: serde_json::Map<String, serde_json::Value> = ["bm25", "vector"]
        .iter()
        .map(|leg| {
            let diffs: Vec<f64> = hybrid
                .iter()
                .zip(&reciprocal[*leg])
                .map(|(h, l)| h - l)
                .collect();
            let (mean, lo, hi) = paired_bootstrap(&diffs);
            (
                leg.to_string(),
                json!({"mrr10_diff": mean, "ci95": [lo, hi]}),
            )
        })
        .collect();
    report.insert("hybrid_vs_legs".into(), versus.into());
    report.insert("queries".into(), json!(queries.len()));
    report.insert("files".into(), json!(stats.files_seen));
    report.insert("chunks".into(), json!(index.status()?.chunks));
    if let Ok(path) = std::env::var("BENCH_DUMP") {
        std::fs::write(path, serde_json::Value::Object(dump).to_string())?;
    }
    println!("{}", serde_json::Value::Object(report));
    Ok(())
}

/// Mean of per-query differences and its 95% bootstrap interval (2,000
/// resamples, fixed seed: the same data gives the same interval).
fn paired_bootstrap(diffs: &[f64]) -> (f64, f64, f64) {
    let n = diffs.len().max(1);
    let mean = diffs.iter().sum::<f64>() / n as f64;
    // xorshift64: a bench needs repeatable draws, not a crate for them.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut means: Vec<f64> = (0..2000)
        .map(|_| {
            (0..n)
                .map(|_| diffs.get(next()).copied().unwrap_or(0.0))
                .sum::<f64>()
                / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    (mean, means[50], means[1949])
}
