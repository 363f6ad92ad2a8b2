//! `agent search`: query the code index.

use anyhow::{bail, Result};

use super::exit;
use crate::cli::SearchArgs;
use agent_base::paths;
use agent_base::term::escape_line;
use agent_index::{Index, SearchQuery};

pub(crate) fn run(args: &SearchArgs) -> Result<i32> {
    let text = args.query.join(" ");
    if text.trim().is_empty() {
        bail!("the query is empty");
    }
    if let Some(lang) = &args.lang {
        if agent_lang::lang::Lang::from_name(lang).is_none() {
            bail!(
                "unknown language {lang:?}: use one of {}",
                agent_lang::lang::Lang::names().join(", ")
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
    // Text mode escapes the repository's control characters (escape
    // sequences in a file, a newline in its name); JSON keeps them exact.
    for r in &results {
        println!(
            "{}:{}-{}  {}  {:.3}",
            escape_line(&r.path),
            r.start_line,
            r.end_line,
            if r.symbol.is_empty() {
                "-".into()
            } else {
                escape_line(&r.symbol)
            },
            r.score
        );
        for line in r.text.lines().filter(|l| !l.trim().is_empty()).take(3) {
            println!("    {}", truncate(&escape_line(line.trim_end()), 100));
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
