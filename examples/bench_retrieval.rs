//! Retrieval quality for `scripts/bench retrieval` on one labelled corpus.
//!
//! Usage: bench_retrieval CORPUS_DIR QUERIES_JSON [VECTOR_WEIGHT...]
//! QUERIES_JSON is a list of {"query": ..., "target": "relative/path"}.
//! Indexes CORPUS_DIR with the real pipeline, runs every query through
//! `Index::search` (the function behind `agent search`) in bm25, vector and
//! hybrid modes, and prints MRR@10, R@1 and R@10 per mode as JSON. Extra
//! weights add hybrid runs with that vector weight (for tuning on dev data).

use agent::cancel::CancelToken;
use agent::index::{Index, IndexOptions, SearchMode, SearchQuery};
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
    let weights: Vec<f32> = args[3..]
        .iter()
        .map(|w| w.parse().expect("weight"))
        .collect();

    let mut index = Index::open_writer(&root, IndexOptions::default())?;
    let stats = index.update(&CancelToken::new(), &mut |_| {})?;
    let mut runs: Vec<(String, SearchMode, f32)> = vec![
        ("bm25".into(), SearchMode::Bm25, 1.0),
        ("vector".into(), SearchMode::Vector, 1.0),
        (
            "hybrid".into(),
            SearchMode::Hybrid,
            agent::index::VECTOR_WEIGHT,
        ),
    ];
    for w in weights {
        runs.push((format!("hybrid_w{w}"), SearchMode::Hybrid, w));
    }
    let mut report = serde_json::Map::new();
    for (name, mode, weight) in runs {
        let (mut mrr, mut r1, mut r10) = (0.0, 0.0, 0.0);
        for q in &queries {
            let mut sq = SearchQuery::new(q.query.clone(), 30);
            sq.mode = mode;
            sq.vector_weight = weight;
            // Rank files, not chunks: a long function may span chunks.
            let mut files: Vec<String> = Vec::new();
            for r in index.search(&sq)? {
                if !files.contains(&r.path) {
                    files.push(r.path);
                }
            }
            if let Some(pos) = files.iter().take(10).position(|p| *p == q.target) {
                mrr += 1.0 / (pos as f64 + 1.0);
                r10 += 1.0;
                if pos == 0 {
                    r1 += 1.0;
                }
            }
        }
        let n = queries.len() as f64;
        report.insert(
            name,
            json!({"mrr10": mrr / n, "r1": r1 / n, "r10": r10 / n}),
        );
    }
    report.insert("queries".into(), json!(queries.len()));
    report.insert("files".into(), json!(stats.files_seen));
    report.insert("chunks".into(), json!(index.status()?.chunks));
    println!("{}", serde_json::Value::Object(report));
    Ok(())
}
