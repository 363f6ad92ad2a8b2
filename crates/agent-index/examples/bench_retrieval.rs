//! Retrieval quality for `scripts/bench retrieval` on one labelled corpus.
//!
//! Usage: bench_retrieval CORPUS_DIR QUERIES_JSON [FUSION...]   (FUSION: rrf:W or linear:W)
//! QUERIES_JSON is a list of {"query": ..., "target": "relative/path"}.
//! Indexes CORPUS_DIR with the real pipeline, runs every query through
//! `Index::search` (the function behind `agent search`) in bm25, vector and
//! hybrid modes, and prints MRR@10, R@1 and R@10 per mode as JSON. Extra
//! fusion settings add hybrid runs with them (for tuning on dev data).

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
    for (name, mode, fusion) in runs {
        let (mut mrr, mut r1, mut r10) = (0.0, 0.0, 0.0);
        for q in &queries {
            let mut sq = SearchQuery::new(q.query.clone(), 30);
            sq.mode = mode;
            sq.fusion = fusion;
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
