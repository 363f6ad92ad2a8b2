//! Searches an existing index with this build's code, for before/after
//! figures (issue 53, item 5: search while vectors are partial).
//!
//! `search_partial ROOT QUERIES.tsv [MODE]`: QUERIES.tsv has a query and the
//! file that answers it on each line, tab-separated; prints the query, that
//! file and the top 3 files (MODE: hybrid, bm25 or vector; hybrid unless
//! said). Opens the index as a reader, so it changes nothing.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example: printing is its output"
)]

use agent_index::{Index, SearchMode, SearchQuery};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, queries, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: search_partial ROOT QUERIES.tsv [hybrid|bm25|vector]");
    };
    let mode = match rest.first().map(String::as_str) {
        None | Some("hybrid") => SearchMode::Hybrid,
        Some("bm25") => SearchMode::Bm25,
        Some("vector") => SearchMode::Vector,
        Some(m) => anyhow::bail!("{m}: expected hybrid, bm25 or vector"),
    };
    let mut index = Index::open_reader(std::path::Path::new(root))?;
    let status = index.status()?;
    eprintln!(
        "vectors: {} of {} chunks",
        status.embedded_chunks, status.chunks
    );
    for line in std::fs::read_to_string(queries)?.lines() {
        let Some((text, want)) = line.split_once('\t') else {
            continue;
        };
        let mut query = SearchQuery::new(text, 10);
        query.mode = mode;
        let mut files: Vec<String> = Vec::new();
        for r in index.search(&query)? {
            if !files.contains(&r.path) {
                files.push(r.path);
            }
        }
        files.truncate(3);
        println!("{text}\t{want}\t{}", files.join(" | "));
    }
    Ok(())
}
