//! The loop's `search_semantic`, joined to the workspace's code index:
//! agent-tools knows the trait, agent-index the index, and neither the other.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

pub use agent_index::SearchResult;
use agent_index::{Index, SearchMode, SearchQuery};
use agent_tools::search::Hit;
use agent_tools::SemanticSearch;

/// `search_semantic` over the workspace's code index, opened on first use
/// (loading the embedder costs a second; many requests never search).
pub struct IndexSearch {
    root: PathBuf,
    index: Option<Index>,
}

impl IndexSearch {
    /// None when the workspace has no index (of its own, or shared).
    pub fn for_workspace(root: &Path) -> Option<Self> {
        let has_index =
            agent_index::index_dir(root).is_dir() || agent_index::shared::configured().is_some();
        has_index.then(|| Self {
            root: root.to_path_buf(),
            index: None,
        })
    }

    /// Opened now, for one search (`ask --no-tools`); an error when there
    /// is no index to read.
    pub fn open(root: &Path) -> Result<Self> {
        Ok(Self {
            root: root.to_path_buf(),
            index: Some(Index::open_reader(root)?),
        })
    }
}

impl SemanticSearch for IndexSearch {
    fn search(&mut self, query: &str, k: usize) -> Result<Vec<Hit>> {
        let index = match &mut self.index {
            Some(index) => index,
            None => self.index.insert(Index::open_reader(&self.root)?),
        };
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

/// What `agent search` asks the index.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    pub k: usize,
    pub mode: SearchMode,
    pub path_glob: Option<String>,
    pub lang: Option<String>,
}

/// `query` over the index of `root`, and the index's notes on its results
/// (a partial index, a shared store); an unknown language or an empty query
/// is an error that says what to give.
pub fn search(root: &Path, query: Query) -> Result<(Vec<SearchResult>, Vec<String>)> {
    if query.text.trim().is_empty() {
        bail!("the query is empty");
    }
    if let Some(lang) = &query.lang {
        if agent_lang::lang::Lang::from_name(lang).is_none() {
            bail!(
                "unknown language {lang:?}: use one of {}",
                agent_lang::lang::Lang::names().join(", ")
            );
        }
    }
    let mut index = Index::open_reader(root)?;
    let results = index.search(&SearchQuery {
        text: query.text,
        k: query.k,
        mode: query.mode,
        path_glob: query.path_glob,
        lang: query.lang,
        ..SearchQuery::new("", 0)
    })?;
    Ok((results, index.notes()?))
}
