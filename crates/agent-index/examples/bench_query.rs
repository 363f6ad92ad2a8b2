//! In-process query latency on an existing index, for `scripts/bench
//! retrieval --swebench`.
//!
//! Usage: bench_query ROOT QUERIES_JSON [--compare-exact]
//! QUERIES_JSON is a list of strings (issue texts). Every query runs through
//! `Index::search` (hybrid, k = 10) twice: as the whole text and as its first
//! line (a one-line query); one warm-up pass first. Prints p50/p95 in ms of
//! each as JSON. With --compare-exact, the same again on a copy of the index
//! without its vector index (every vector compared), under "exact".
//! RUST_LOG=agent=debug shows where each query's time goes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::path::Path;
use std::time::Instant;

use agent_index::bench::Store;
use agent_index::{index_dir, Index, SearchQuery};
use serde_json::Value;

mod common;
use common::percentile;

fn measure(root: &Path, queries: &[String]) -> anyhow::Result<Value> {
    let mut index = Index::open_reader(root)?;
    let one_line: Vec<String> = queries
        .iter()
        .map(|q| q.lines().next().unwrap_or("").to_string())
        .collect();
    let mut report = serde_json::Map::new();
    for (name, set) in [("issue_text", queries), ("one_line", &one_line[..])] {
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
    Ok(Value::Object(report))
}

fn main() -> anyhow::Result<()> {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(&args[1]);
    let queries: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&args[2])?)?;
    let mut report = measure(&root, &queries)?;
    if args.iter().any(|a| a == "--compare-exact") {
        let copy = tempfile::tempdir()?;
        // The index of the copy is where its state folder says.
        let copied = index_dir(copy.path());
        std::fs::create_dir_all(copied.parent().unwrap())?;
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(index_dir(&root))
            .arg(&copied)
            .status()?;
        anyhow::ensure!(status.success(), "cannot copy the index");
        Store::open(&index_dir(copy.path()).join("lance"))?.drop_vector_index()?;
        report["exact"] = measure(copy.path(), &queries)?;
    }
    println!("{report}");
    Ok(())
}
