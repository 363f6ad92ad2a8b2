//! In-process query latency on an existing index, for `scripts/bench
//! retrieval --swebench`.
//!
//! Usage: bench_query ROOT QUERIES_JSON
//! QUERIES_JSON is a list of strings (issue texts). Every query runs through
//! `Index::search` (hybrid, k = 10) twice: as the whole text and as its first
//! line (a one-line query); one warm-up pass first. Prints p50/p95 in ms of
//! each as JSON.

use std::time::Instant;

use agent::index::{Index, SearchQuery};

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(&args[1]);
    let queries: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&args[2])?)?;
    let mut index = Index::open_reader(&root)?;
    let one_line: Vec<String> = queries
        .iter()
        .map(|q| q.lines().next().unwrap_or("").to_string())
        .collect();
    let mut report = serde_json::Map::new();
    for (name, set) in [("issue_text", &queries), ("one_line", &one_line)] {
        for q in set.iter().take(3) {
            index.search(&SearchQuery::new(q.clone(), 10))?; // warm-up
        }
        let mut ms = Vec::new();
        for q in set {
            let t = Instant::now();
            index.search(&SearchQuery::new(q.clone(), 10))?;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        report.insert(
            name.into(),
            serde_json::json!({"queries": ms.len(), "p50_ms": percentile(ms.clone(), 0.5),
                               "p95_ms": percentile(ms, 0.95)}),
        );
    }
    println!("{}", serde_json::Value::Object(report));
    Ok(())
}
