//! `agent search`: query the code index.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::exit;
use crate::cli::SearchArgs;
use agent_base::paths;
use agent_base::term::escape_line;
use agent_index::{Index, SearchQuery};
use agent_tools::search::Hit;
use agent_tools::SemanticSearch;

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

/// `search_semantic` over the workspace's code index, opened on first use
/// (loading the embedder costs a second; many requests never search).
pub(crate) struct IndexSearch {
    root: PathBuf,
    index: Option<Index>,
}

impl IndexSearch {
    /// None when the workspace has no index (of its own, or shared).
    pub(crate) fn for_workspace(root: &Path) -> Option<Self> {
        let has_index =
            agent_index::index_dir(root).is_dir() || agent_index::shared::configured().is_some();
        has_index.then(|| Self {
            root: root.to_path_buf(),
            index: None,
        })
    }

    /// Opened now, for one search (`ask --no-tools`); an error when there
    /// is no index to read.
    pub(crate) fn open(root: &Path) -> Result<Self> {
        Ok(Self {
            root: root.to_path_buf(),
            index: Some(Index::open_reader(root)?),
        })
    }
}

impl SemanticSearch for IndexSearch {
    fn search(&mut self, query: &str, k: usize) -> Result<Vec<Hit>> {
        if self.index.is_none() {
            self.index = Some(Index::open_reader(&self.root)?);
        }
        let index = self.index.as_mut().expect("just opened");
        Ok(index
            .search(&SearchQuery::new(query, k))?
            .into_iter()
            .map(|r| Hit {
                path: r.path,
                start_line: r.start_line as usize,
                end_line: r.end_line as usize,
                symbol: r.symbol,
                score: r.score,
                text: r.text,
            })
            .collect())
    }

    fn note(&mut self) -> Option<String> {
        let notes = self.index.as_ref()?.notes().unwrap_or_default();
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}
