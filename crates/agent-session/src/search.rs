//! The loop's `search_semantic`, joined to the workspace's code index:
//! agent-tools knows the trait, agent-index the index, and neither the other.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

pub use agent_index::SearchResult;
use agent_index::{Index, SearchMode, SearchQuery};
use agent_tools::search::Hit;
use agent_tools::SemanticSearch;

use crate::deps::{self, Scope};

/// `search_semantic` over the workspace's code index, opened on first use
/// (loading the embedder costs a second; many requests never search).
pub struct IndexSearch {
    root: PathBuf,
    index: Option<Index>,
    /// The project's dependencies, resolved at the first call that needs them.
    deps: Option<deps::Resolution>,
    /// The embedder, between searches of the dependencies' indices.
    embedder: Option<agent_index::embed::Embedder>,
}

impl IndexSearch {
    /// None when the workspace has no index (of its own, or shared).
    pub fn for_workspace(root: &Path) -> Option<Self> {
        let has_index =
            agent_index::index_dir(root).is_dir() || agent_index::shared::configured().is_some();
        let mut search = Self {
            root: root.to_path_buf(),
            index: None,
            deps: None,
            embedder: None,
        };
        // Without an index of its own, a workspace whose dependencies are
        // indexed still searches and reads them.
        (has_index || search.has_indexed_deps()).then_some(search)
    }

    fn resolution(&mut self) -> &deps::Resolution {
        let root = &self.root;
        self.deps.get_or_insert_with(|| deps::resolve(root))
    }

    fn has_indexed_deps(&mut self) -> bool {
        self.resolution().packages.iter().any(deps::searchable_now)
    }

    fn deps_hits(
        &mut self,
        query: &str,
        k: usize,
        package: Option<&str>,
    ) -> Result<Vec<SearchResult>> {
        let (packages, _) = deps::searchable(self.resolution(), package)?;
        deps::search_packages(&packages, &SearchQuery::new(query, k), &mut self.embedder)
    }

    /// Opened now, for one search (`ask --no-tools`); an error when there
    /// is no index to read.
    pub fn open(root: &Path) -> Result<Self> {
        Ok(Self {
            root: root.to_path_buf(),
            index: Some(Index::open_reader(root)?),
            deps: None,
            embedder: None,
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
            .map(hit)
            .collect())
    }

    fn search_in(
        &mut self,
        query: &str,
        k: usize,
        scope: &str,
        package: Option<&str>,
    ) -> Result<Vec<Hit>> {
        let scope = Scope::parse(scope).unwrap_or_default();
        if scope == Scope::Project {
            if let Some(p) = package {
                bail!("`package` ({p}) is searched with scope deps or all");
            }
            return self.search(query, k);
        }
        // One embedder for both: the project's index lends its own.
        if let (Some(index), None) = (&mut self.index, &self.embedder) {
            self.embedder = index.take_embedder();
        }
        let found = self.deps_hits(query, k, package);
        if let (Some(index), Some(e)) = (&mut self.index, self.embedder.take()) {
            index.lend_embedder(e);
        }
        let mut hits: Vec<Hit> = found?.into_iter().map(hit).collect();
        // A workspace with only its dependencies indexed searches those.
        if scope == Scope::All && (self.index.is_some() || has_own_index(&self.root)) {
            let index = match &mut self.index {
                Some(index) => index,
                None => self.index.insert(Index::open_reader(&self.root)?),
            };
            // Scored as the dependencies' hits are, so the two lists merge.
            let own = deps::comparable(index, &SearchQuery::new(query, k))?;
            hits.extend(own.into_iter().map(hit));
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(k);
        }
        Ok(hits)
    }

    fn dependency_file(&mut self, cited: &str) -> Option<Result<PathBuf, String>> {
        let (id, _) = agent_deps::split_cited(cited)?;
        let resolution = self.resolution();
        // A path that does not name a locked package is the workspace's.
        let name = id.rsplit_once('@').map_or(id, |(n, _)| n);
        resolution
            .packages
            .iter()
            .any(|p| p.name == name)
            .then(|| resolution.locate(cited).map(|(_, path)| path))
    }

    fn dependencies(&mut self) -> Vec<String> {
        let mut names: Vec<String> = self
            .resolution()
            .packages
            .iter()
            .filter(|p| deps::searchable_now(p))
            .map(|p| p.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn note(&mut self) -> Option<String> {
        let notes = self.index.as_ref()?.notes().unwrap_or_default();
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

fn has_own_index(root: &Path) -> bool {
    agent_index::index_dir(root).is_dir() || agent_index::shared::configured().is_some()
}

fn hit(r: SearchResult) -> Hit {
    Hit {
        path: r.path,
        start_line: r.start_line as usize,
        end_line: r.end_line as usize,
        symbol: r.symbol,
        score: r.score,
        text: r.text,
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
    /// The project's index, its dependencies' ([`crate::deps`]), or both.
    pub scope: Scope,
    /// Only this dependency (`NAME` or `NAME@VERSION`; implies its scope).
    pub package: Option<String>,
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
    let scope = match query.package {
        Some(_) if query.scope == Scope::Project => Scope::Deps,
        _ => query.scope,
    };
    let wanted = SearchQuery {
        text: query.text,
        k: query.k,
        mode: query.mode,
        path_glob: query.path_glob,
        lang: query.lang,
        ..SearchQuery::new("", 0)
    };
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let mut embedder = None;
    if scope != Scope::Deps {
        let mut index = Index::open_reader(root)?;
        results = match scope {
            Scope::All => deps::comparable(&mut index, &wanted)?,
            _ => index.search(&wanted)?,
        };
        notes = index.notes()?;
        embedder = index.take_embedder();
    }
    if scope != Scope::Project {
        let (packages, waiting) = deps::searchable(&deps::resolve(root), query.package.as_deref())?;
        results.extend(deps::search_packages(&packages, &wanted, &mut embedder)?);
        results.sort_by(|a, b| b.score.total_cmp(&a.score));
        results.truncate(wanted.k);
        notes.extend(waiting);
    }
    Ok((results, notes))
}
