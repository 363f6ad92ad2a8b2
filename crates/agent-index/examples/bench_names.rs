//! Name search: asked for a function by its bare name, is its definition
//! the first result? For `scripts/bench retrieval --names`.
//!
//! Usage: bench_names ROOT [--limit N]
//! Indexes ROOT if need be. The names are those of functions and methods
//! (a lower-case or `_` first letter, four characters or more, no dunder)
//! that exactly one file outside tests and docs defines; up to N of them
//! (default 400), spread evenly over the sorted list. Each is searched
//! (k = 3) with each mode; a hit is a result in the defining file whose
//! symbol ends with the name. Prints Acc@1 and Acc@3 per mode as JSON.

use agent_base::cancel::CancelToken;
use agent_index::search::is_doc;
use agent_index::{Index, IndexOptions, SearchMode, SearchQuery};

fn names(index: &Index, limit: usize) -> anyhow::Result<Vec<(String, String)>> {
    let symbols = index.symbols()?;
    let mut out: Vec<(String, String)> = symbols
        .names()
        .filter(|(name, _)| {
            name.len() >= 4
                && name.starts_with(|c: char| c.is_lowercase() || c == '_')
                && !name.starts_with("__")
        })
        .filter_map(|(name, files)| {
            let code: Vec<&str> = files
                .into_iter()
                .filter(|f| !agent_index::search::is_test(f) && !is_doc(f))
                .collect();
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
    let mut index = Index::open_writer(&root, IndexOptions::default())?;
    index.update(&CancelToken::new(), &mut |_| {})?;
    let names = names(&index, limit)?;
    let mut report = serde_json::Map::new();
    report.insert("names".into(), names.len().into());
    for mode in [SearchMode::Hybrid, SearchMode::Bm25, SearchMode::Vector] {
        let (mut at1, mut at3) = (0, 0);
        for (name, file) in &names {
            let mut query = SearchQuery::new(name.clone(), 3);
            query.mode = mode;
            let results = index.search(&query)?;
            let rank = results.iter().position(|r| {
                &r.path == file && r.symbol.rsplit(['.', ':']).next() == Some(name.as_str())
            });
            at1 += usize::from(rank == Some(0));
            at3 += usize::from(rank.is_some());
        }
        let n = names.len().max(1) as f64;
        report.insert(
            serde_json::to_value(mode)?.as_str().unwrap_or("?").into(),
            serde_json::json!({"acc@1": at1 as f64 / n, "acc@3": at3 as f64 / n}),
        );
    }
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
