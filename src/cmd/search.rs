//! `agent search`: query the code index.

use anyhow::{bail, Result};

use super::exit;
use crate::cli::SearchArgs;
use crate::index::{Index, SearchQuery};
use crate::paths;

pub fn run(args: &SearchArgs) -> Result<i32> {
    let text = args.query.join(" ");
    if text.trim().is_empty() {
        bail!("the query is empty");
    }
    if let Some(lang) = &args.lang {
        if crate::lang::Lang::from_name(lang).is_none() {
            bail!(
                "unknown language {lang:?}: use one of {}",
                crate::lang::Lang::names().join(", ")
            );
        }
    }
    let root = paths::repo_root(args.root.as_deref())?;
    let mut index = Index::open_reader(&root)?;
    let results = index.search(&SearchQuery {
        text,
        k: args.k,
        mode: args.mode,
        path_glob: args.path.clone(),
        lang: args.lang.clone(),
        ..SearchQuery::new("", 0)
    })?;
    for note in index.notes()? {
        eprintln!("note: {note}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
        return Ok(exit::OK);
    }
    if results.is_empty() {
        eprintln!("no results");
    }
    for r in &results {
        println!(
            "{}:{}-{}  {}  {:.3}",
            r.path,
            r.start_line,
            r.end_line,
            if r.symbol.is_empty() { "-" } else { &r.symbol },
            r.score
        );
        for line in r.text.lines().filter(|l| !l.trim().is_empty()).take(3) {
            println!("    {}", truncate(line.trim_end(), 100));
        }
    }
    Ok(exit::OK)
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}
