//! Index measurements for `scripts/bench index` on one corpus folder.
//!
//! Usage: bench_index CORPUS_DIR  → one JSON object on stdout:
//! files, chunks, index_s (cold, from nothing), embed_only_s (the same unique
//! chunk texts through the embedder alone: the floor), overhead_ratio,
//! peak_rss_mb, incr_p50_ms/incr_p95_ms (edit a file → new text searchable,
//! through the real watcher and its debounce), query_p50_ms/query_p95_ms
//! (hybrid search, k=10, in-process).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_base::cancel::CancelToken;
use agent_index::embed::Embedder;
use agent_index::{
    chunk_file, embedding_text, watch, Index, IndexOptions, SearchMode, SearchQuery,
};
use agent_lang::walk::{walk, WalkOptions};
use serde_json::json;

mod common;
use common::{peak_rss_mb, percentile};

/// The unique embedding texts the indexer produced for this corpus.
fn unique_texts(root: &Path, embedder: &Embedder) -> Vec<String> {
    let (files, _) = walk(root, &WalkOptions::default());
    let mut seen = HashSet::new();
    let mut texts = Vec::new();
    for f in files {
        let Ok(src) = std::fs::read_to_string(&f.path) else {
            continue;
        };
        for c in chunk_file(
            embedder,
            &f,
            agent_lang::lang::Lang::detect(&f.path, &src),
            &src,
        ) {
            if seen.insert(format!("{}\0{}", c.symbol, c.text)) {
                texts.push(embedding_text(&f.rel, &c.symbol, &c.text));
            }
        }
    }
    texts
}

fn main() -> anyhow::Result<()> {
    let root = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: bench_index CORPUS_DIR"),
    );
    let _ = std::fs::remove_dir_all(agent_index::index_dir(&root));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());

    // Cold index.
    let started = Instant::now();
    let mut index = Index::open_writer(&root, IndexOptions::default())?;
    let stats = index.update(&CancelToken::new(), &mut |_| {})?;
    let index_s = started.elapsed().as_secs_f64();
    let status = index.status()?;
    let rss_after_index = peak_rss_mb();

    // The floor: embedding the same unique texts, nothing else.
    let mut embedder = Embedder::load_default(threads)?;
    let texts = unique_texts(&root, &embedder);
    let t = Instant::now();
    embedder.embed(&texts)?;
    let embed_only_s = t.elapsed().as_secs_f64();
    drop(embedder);

    // Query latency (in-process, hybrid, k = 10).
    let queries = [
        "parse a regular expression",
        "open a file and read it",
        "http request with timeout",
        "iterate over directory entries",
        "error handling",
        "compile the pattern",
        "match case insensitive",
        "send a json body",
        "cookie jar",
        "session",
        "glob pattern matching",
        "ignore hidden files",
        "build a router",
        "template rendering",
        "unicode classes",
        "thread pool",
        "cache results",
        "parse headers",
        "redirect",
        "walk parallel",
    ];
    let mut query_ms = Vec::new();
    for round in 0..5 {
        for q in queries {
            let t = Instant::now();
            index.search(&SearchQuery::new(q, 10))?;
            if round > 0 {
                query_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }

    // Incremental: the real watcher in a thread; this thread edits a file and
    // polls a reader until the new text is searchable.
    let victim = walk(&root, &WalkOptions::default())
        .0
        .into_iter()
        .find(|f| f.rel.ends_with(".py") || f.rel.ends_with(".rs"))
        .expect("a source file");
    let original = std::fs::read_to_string(&victim.path)?;
    let cancel = CancelToken::new();
    let watcher_cancel = cancel.clone();
    let watcher = std::thread::spawn(move || {
        watch::watch(
            &mut index,
            watch::DEFAULT_DEBOUNCE,
            &watcher_cancel,
            &mut |r| {
                if let Err(e) = r {
                    eprintln!("update failed: {e:#}");
                }
            },
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut reader = Index::open_reader(&root)?;
    let mut incr_ms = Vec::new();
    for i in 0..15 {
        let marker = format!("zqxmarker{i}");
        let addition = if victim.rel.ends_with(".py") {
            format!("\n\ndef {marker}():\n    return {i}\n")
        } else {
            format!("\n\npub fn {marker}() -> u32 {{\n    {i}\n}}\n")
        };
        std::fs::write(&victim.path, format!("{original}{addition}"))?;
        let t = Instant::now();
        let mut q = SearchQuery::new(marker.clone(), 1);
        q.mode = SearchMode::Bm25;
        loop {
            if reader
                .search(&q)?
                .first()
                .is_some_and(|r| r.text.contains(&marker))
            {
                break;
            }
            if t.elapsed() > Duration::from_secs(30) {
                anyhow::bail!("edit {i} never became searchable");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        incr_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(300));
    }
    std::fs::write(&victim.path, &original)?;
    cancel.cancel();
    watcher.join().expect("watcher thread")?;

    println!(
        "{}",
        json!({
            "files": status.files,
            "chunks": status.chunks,
            "chunks_embedded": stats.chunks_embedded,
            "index_s": index_s,
            "embed_only_s": embed_only_s,
            "overhead_ratio": index_s / embed_only_s,
            "peak_rss_mb": rss_after_index,
            "incr_p50_ms": percentile(incr_ms.clone(), 0.5),
            "incr_p95_ms": percentile(incr_ms, 0.95),
            "query_p50_ms": percentile(query_ms.clone(), 0.5),
            "query_p95_ms": percentile(query_ms, 0.95),
        })
    );
    Ok(())
}
