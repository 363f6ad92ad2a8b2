//! Name search: asked for a function by its bare name, is its definition
//! the first result? For `scripts/bench retrieval --names`.
//!
//! Usage: bench_names ROOT [--limit N] [--misses] [FUSION...]   (FUSION: z:W, linear:W, rrf:W)
//! Indexes ROOT if need be. The names are those of functions and methods
//! (a lower-case or `_` first letter, four characters or more, no dunder)
//! that exactly one source file outside tests and docs defines; up to N of
//! them (default 400), spread evenly over the sorted list. Each is searched
//! (k = 3) with each mode; a hit is a result in the defining file whose
//! symbol (or one of the symbols of a chunk holding several small
//! definitions) ends with the name. Prints Acc@1 and Acc@3 per mode as JSON;
//! `--misses` also lists, on stderr, each name hybrid search did not rank
//! first, with what it ranked instead. Each FUSION adds a hybrid run with
//! it (for tuning).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use agent_base::cancel::CancelToken;
use agent_index::search::is_doc;
use agent_index::{Fusion, Index, IndexOptions, SearchMode, SearchQuery};
use agent_lang::lang::Lang;

/// Source code of the project itself: a file in a programming language
/// (not a YAML key or a TOML table), outside tests and the documentation's
/// examples.
fn is_project_code(path: &str) -> bool {
    Lang::from_path(std::path::Path::new(path)) != Lang::Text
        && !agent_index::search::is_test(path)
        && !is_doc(path)
        && !path.split('/').any(|part| part == "doc" || part == "docs")
}

/// Whether a result's symbol (one name, or the names of the small
/// definitions one chunk holds: `A.flush, A.isatty`) defines `name`.
fn defines(symbol: &str, name: &str) -> bool {
    symbol
        .split(", ")
        .any(|s| s.rsplit(['.', ':']).next() == Some(name))
}

fn names(index: &Index, limit: usize) -> anyhow::Result<Vec<(String, String)>> {
    let symbols = index.symbols()?;
    let mut out: Vec<(String, String)> = symbols
        .names()
        .filter(|(name, _)| {
            name.len() >= 4
                && name.starts_with(|c: char| c.is_lowercase() || c == '_')
                && !name.starts_with("__")
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
        .filter_map(|(name, files)| {
            let code: Vec<&str> = files.into_iter().filter(|f| is_project_code(f)).collect();
            match code.as_slice() {
                [one] => Some((name.to_string(), one.to_string())),
                _ => None,
            }
        })
        .collect();
    out.sort();
    let step = (out.len() as f64 / limit.max(1) as f64).max(1.0);
    Ok((0..out.len().min(limit))
        .map(|i| out[(i as f64 * step) as usize].clone())
        .collect())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(args.get(1).expect("usage: bench_names ROOT [--limit N]"));
    let limit = args
        .iter()
        .position(|a| a == "--limit")
        .and_then(|i| args.get(i + 1))
        .map_or(400, |n| n.parse().expect("--limit takes a number"));
    let show_misses = args.iter().any(|a| a == "--misses");
    let mut index = Index::open_writer(&root, IndexOptions::default())?;
    index.update(&CancelToken::new(), &mut |_| {})?;
    let names = names(&index, limit)?;
    let mut report = serde_json::Map::new();
    report.insert("names".into(), names.len().into());
    // `None`: the search's own choice for the query.
    let mut runs: Vec<(String, SearchMode, Option<Fusion>)> = vec![
        ("hybrid".into(), SearchMode::Hybrid, None),
        ("bm25".into(), SearchMode::Bm25, None),
        ("vector".into(), SearchMode::Vector, None),
    ];
    for f in args[2..].iter().filter(|a| a.contains(':')) {
        let fusion = f.parse().expect("fusion: rrf:W, linear:W or z:W");
        runs.push((format!("hybrid_{f}"), SearchMode::Hybrid, Some(fusion)));
    }
    for (run, mode, fusion) in runs {
        let (mut at1, mut at3) = (0, 0);
        for (name, file) in &names {
            let mut query = SearchQuery::new(name.clone(), 3);
            query.mode = mode;
            query.fusion = fusion;
            let results = index.search(&query)?;
            let rank = results
                .iter()
                .position(|r| &r.path == file && defines(&r.symbol, name));
            if show_misses && run == "hybrid" && rank != Some(0) {
                eprintln!("miss {name} ({file}), rank {rank:?}:");
                for r in &results {
                    eprintln!("    {}:{} {} [{}]", r.path, r.start_line, r.symbol, r.kind);
                }
            }
            at1 += usize::from(rank == Some(0));
            at3 += usize::from(rank.is_some());
        }
        let n = names.len().max(1) as f64;
        report.insert(
            run,
            serde_json::json!({"acc@1": at1 as f64 / n, "acc@3": at3 as f64 / n}),
        );
    }
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
