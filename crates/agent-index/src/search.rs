//! The search pipeline (`Index::search`: plan, the vector and BM25 legs on
//! each table, fusion, the file ranking) and its pieces: identifier-aware
//! text for BM25, rank fusion, file-level ranking.
//!
//! - **Two legs.** Vector (cosine) and BM25 each fetch a deep list. BM25 runs
//!   over `search_text`: path, symbol and code plus the parts of every
//!   compound identifier, so `parse http` finds `parseHttpRequest` and
//!   `parse_http_request`. `--lang` filters before retrieval, `--path` globs
//!   after it (with over-fetch).
//! - **Fusion** ([`fusion_for`], by the query's shape): z-score fusion for a
//!   one-line query (each list standardised over itself, so a leg counts by
//!   how far a hit stands out of its own list), the legs even for a query of
//!   names, linear fusion for an issue text (cosine plus a tenth of BM25 over
//!   the best BM25); each chosen on dev data (CoSQA dev, the doc-comment
//!   pairs, SWE-bench's dev instances). Reciprocal rank fusion stays
//!   available. Prose files (.md, .rst, .txt, ...) and tests weigh less unless
//!   the query asks for them ([`wants_docs`]): a question in words matches
//!   prose better than code, and READMEs would crowd the code out.
//! - **Long queries** (more than 40 words or 3 lines: an issue text, a bug
//!   report) are taken apart by [`agent_lang::query::analyze`], after the
//!   issue template's short headings and environment sections are dropped.
//!   The vector leg embeds up to 6 passages (the opening one, then those
//!   richest in code names) and the title (weighted as three passages) and
//!   searches with their mean direction; BM25 gets three weighted clauses
//!   (the names in code form, the prose words without bug-report filler, the
//!   title); paths and dotted module paths the text names are looked up among
//!   the indexed files, and the names among the table's symbols
//!   (`Store::symbols`, read once per table version). The BM25 leg and the
//!   symbol lookup run on a second thread while the query is embedded.
//! - **Files first** ([`rank_by_file`]): a file scores its best chunk plus
//!   (for long queries) a tenth of its next four, plus bonuses when the query
//!   names the file, names a symbol one of its chunks defines, uses names the
//!   file defines (weighted by how few files define them), or has title words
//!   among its folders and name; each file contributes at most 3 chunks,
//!   grouped, best file first. `agent search`, `search_semantic` and the
//!   agent's prefetch all see this order.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::Serialize;

use anyhow::{bail, Context, Result};

use crate::shared::LocalChanges;
use crate::store::{self, Hit, Store};
use crate::{Embedder, UNREADABLE};
use agent_lang::query;

// The pipeline: one search from query to ranked files. `Index::search` plans
// the query, runs both legs on each table (the shared index's and the local
// overlay's), fuses them and ranks by file; the pieces below are its stages.

impl crate::Index {
    /// Runs a search (the function behind `agent search` and `search_semantic`).
    pub fn search(&mut self, query: &SearchQuery) -> Result<Vec<SearchResult>> {
        let plan = SearchPlan::new(query)?;
        if self.shared.is_some() && self.writer_lock.is_none() {
            self.refresh_overlay();
        }
        let mut embedder = match query.mode {
            SearchMode::Bm25 => None,
            _ => {
                self.embedder()?;
                self.embedder_slot().take()
            }
        };
        let legs = self.legs(query, &plan, embedder.as_mut());
        *self.embedder_slot() = embedder;
        let Legs {
            vector: vector_hits,
            text: text_hits,
            definitions,
            defining,
            referencing,
            coverage,
        } = legs?;
        if vector_hits.is_empty()
            && text_hits.is_empty()
            && self.store.count_rows()? == 0
            && self.state.total_chunks()? > 0
        {
            // Not "no results": the table is gone (deleted, or lost).
            bail!("the chunk table is empty, but the index records indexed files: {UNREADABLE}");
        }
        let ranked = fuse_legs(query, &plan, vector_hits, text_hits, coverage);
        let ranked = code_first(ranked, &query.text, |h| h.row.path.as_str());
        let ranked = match &plan.relation {
            Some((query::Relation::Chooses, chosen)) => deciders_first(ranked, chosen),
            Some((relation, name)) => {
                references_first(ranked, defining, referencing, *relation, name)
            }
            None => definitions_first(ranked, defining, &query.text),
        };
        let mut signals = FileSignals::default();
        if let Some(l) = plan.long {
            // The file list is read only when the query names paths.
            if !l.named_paths.is_empty() {
                let files = self.state.files()?;
                let local = self.overlay.iter().flat_map(|o| &o.changes.changed);
                signals.named_files = resolve_named_files(
                    &l.named_paths,
                    files
                        .keys()
                        .map(String::as_str)
                        .chain(local.map(String::as_str)),
                );
            }
            signals.defined = definition_weights(&definitions);
            signals.names = l.code_terms.into_iter().collect();
            signals.accumulate = true;
            signals.title_words = l
                .title
                .iter()
                .flat_map(|t| t.split(|c: char| !c.is_alphanumeric()))
                .filter(|w| w.len() >= 3)
                .map(fold_word)
                .collect();
        }
        let ranked = rank_by_file(ranked, &signals, CHUNKS_PER_FILE);
        Ok(ranked
            .into_iter()
            .take(plan.k)
            .map(|(h, score)| SearchResult {
                path: h.row.path,
                start_line: h.row.start_line,
                end_line: h.row.end_line,
                symbol: h.row.symbol,
                kind: h.row.kind,
                score,
                text: h.row.text,
            })
            .collect())
    }

    /// The legs of a search over this index's tables (a shared index's
    /// reader has two: the shared table, minus the files changed here, and
    /// the local overlay with them). The legs that need no query vector
    /// (BM25, the definitions) run on a second thread while the query is
    /// embedded and the vector leg runs: an issue text takes tens of
    /// milliseconds in each.
    fn legs(
        &self,
        query: &SearchQuery,
        plan: &SearchPlan,
        embedder: Option<&mut Embedder>,
    ) -> Result<Legs> {
        let mut tables: Vec<(&Store, Option<&LocalChanges>)> = vec![(&self.store, None)];
        if let Some(overlay) = &self.overlay {
            tables[0].1 = Some(&overlay.changes);
            tables.push((&overlay.index.store, None));
        }
        // A path a table answers for: this machine's version of a file wins
        // over the shared one, and `--path` filters.
        let keep = |changes: Option<&LocalChanges>, path: &str| {
            changes.is_none_or(|c| !c.shadows(path))
                && plan.glob.as_ref().is_none_or(|g| g.is_match(path))
        };
        let mine = |changes: Option<&LocalChanges>, hits: Vec<store::Hit>| {
            hits.into_iter()
                .filter(|h| keep(changes, &h.row.path))
                .collect::<Vec<_>>()
        };
        let filter = plan.lang_filter.as_deref();
        let (vector, words) = std::thread::scope(|s| {
            let words = s.spawn(|| -> Result<_> {
                let started = Instant::now();
                let (mut text, mut definitions) = (Vec::new(), HashMap::new());
                let (mut defining, mut referencing) = (Vec::new(), Vec::new());
                let names = match (&plan.long, query.mode, &plan.relation) {
                    // "how does X choose a strategy": no name to look up.
                    (_, _, Some((query::Relation::Chooses, _))) => Vec::new(),
                    // "what calls minimize": its definition is looked up to
                    // be told apart from the code that refers to it.
                    (None, SearchMode::Hybrid | SearchMode::Bm25, Some((_, name))) => {
                        vec![last_part(name).to_string()]
                    }
                    (None, SearchMode::Hybrid | SearchMode::Bm25, None) => {
                        query::named_identifiers(&query.text)
                    }
                    _ => Vec::new(),
                };
                for (store, changes) in &tables {
                    let hits = store
                        .definitions(&names, MAX_DEFINITIONS, filter)
                        .context(UNREADABLE)?;
                    defining.extend(mine(*changes, hits));
                    if let Some((query::Relation::Callers | query::Relation::Tests, name)) =
                        &plan.relation
                    {
                        let hits = store
                            .text_search(last_part(name), REFERENCES_DEPTH, filter)
                            .context(UNREADABLE)?;
                        referencing.extend(mine(*changes, hits));
                    }
                    if query.mode != SearchMode::Vector {
                        let hits = text_leg(store, query, plan).context(UNREADABLE)?;
                        text.extend(mine(*changes, hits));
                    }
                    tracing::debug!("search: BM25 leg in {:?}", started.elapsed());
                    if let (Some(l), SearchMode::Hybrid) = (&plan.long, query.mode) {
                        let symbols = store.symbols(filter).context(UNREADABLE)?;
                        for name in l.lookup_names() {
                            let files = symbols
                                .files_defining(&name)
                                .into_iter()
                                .filter(|p| keep(*changes, p));
                            let entry: &mut HashSet<String> = definitions.entry(name).or_default();
                            entry.extend(files.map(str::to_string));
                        }
                    }
                }
                tracing::debug!("search: BM25 leg and symbols in {:?}", started.elapsed());
                Ok((text, definitions, defining, referencing))
            });
            let vector = || -> Result<Vec<store::Hit>> {
                let Some(embedder) = embedder else {
                    return Ok(Vec::new());
                };
                let started = Instant::now();
                let v = query_vector(embedder, query, plan)?;
                tracing::debug!("search: embedded in {:?}", started.elapsed());
                let started = Instant::now();
                let mut hits = Vec::new();
                for (store, changes) in &tables {
                    let leg = store
                        .vector_search(&v, plan.depth, filter)
                        .context(UNREADABLE)?;
                    hits.extend(mine(*changes, leg));
                }
                tracing::debug!("search: vector leg in {:?}", started.elapsed());
                Ok(hits)
            };
            let vector = vector();
            (vector, words.join())
        });
        let (mut text, definitions, defining, referencing) = match words {
            Ok(words) => words?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut vector = vector?;
        // The tables' lists merge before fusion, which weighs each leg by
        // its spread.
        for leg in [&mut vector, &mut text] {
            leg.sort_by(|a, b| b.score.total_cmp(&a.score));
            leg.truncate(plan.depth);
        }
        // The share of the searched chunks that have vectors (1 once the
        // fill is done): hybrid fusion weighs the vector leg by it.
        let coverage = if query.mode == SearchMode::Hybrid {
            let (mut embedded, mut rows) = (0, 0);
            for (store, _) in &tables {
                embedded += store.embedded_rows().context(UNREADABLE)?;
                rows += store.count_rows().context(UNREADABLE)?;
            }
            if rows == 0 {
                1.0
            } else {
                embedded as f32 / rows as f32
            }
        } else {
            1.0
        };
        Ok(Legs {
            vector,
            text,
            definitions,
            defining,
            referencing,
            coverage,
        })
    }
}

/// What the tables give a search: the two legs, and for each name a long
/// query mentions, the files that define it.
struct Legs {
    vector: Vec<store::Hit>,
    text: Vec<store::Hit>,
    definitions: HashMap<String, HashSet<String>>,
    /// For a one-line query that names identifiers, the chunks defining them.
    defining: Vec<store::Hit>,
    /// For a question by relation, the chunks whose words hold the name,
    /// deeper than the BM25 leg: a caller is often a long function that
    /// names it once ("what calls minimize": `build_from_nfa`).
    referencing: Vec<store::Hit>,
    /// The share of the tables' chunks that have vectors (0 to 1).
    coverage: f32,
}

/// What a query asks of each table it is run on.
struct SearchPlan {
    glob: Option<globset::GlobMatcher>,
    lang_filter: Option<String>,
    k: usize,
    /// Candidates each leg fetches.
    depth: usize,
    /// An issue text, taken apart; None for a one-line query.
    long: Option<query::LongQuery>,
    /// Names, prose or an issue: how hybrid search fuses the legs.
    shape: query::Shape,
    /// "what calls X", "tests for X": the code referring to X leads.
    relation: Option<(query::Relation, String)>,
}

impl SearchPlan {
    fn new(query: &SearchQuery) -> Result<Self> {
        let glob = match &query.path_glob {
            Some(g) => Some(
                globset::Glob::new(g)
                    .with_context(|| format!("bad --path glob {g:?}"))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let k = query.k.max(1);
        // Over-fetch: fusion needs depth, and the glob filters afterwards.
        let depth = if glob.is_some() {
            (k * 10).max(100)
        } else {
            (k * 4).max(40)
        };
        // An issue text is taken apart; a one-line query is used as it is.
        let shape = query::shape(&query.text);
        let long = (shape == query::Shape::Issue).then(|| query::analyze(&query.text));
        let depth = if long.is_some() {
            depth.max(LONG_QUERY_DEPTH)
        } else {
            depth
        };
        Ok(Self {
            glob,
            lang_filter: query.lang.as_deref().map(store::lang_filter),
            k,
            depth,
            long,
            shape,
            relation: query::relation(&query.text),
        })
    }
}

/// The legs of a search, merged into one ranked list by the query's mode.
fn fuse_legs(
    query: &SearchQuery,
    plan: &SearchPlan,
    vector_hits: Vec<store::Hit>,
    text_hits: Vec<store::Hit>,
    coverage: f32,
) -> Vec<(store::Hit, f32)> {
    let depth = plan.depth;
    match query.mode {
        SearchMode::Vector => vector_hits
            .into_iter()
            .map(|h| {
                let score = h.score;
                (h, score)
            })
            .collect(),
        SearchMode::Bm25 => text_hits
            .into_iter()
            .map(|h| {
                let score = h.score;
                (h, score)
            })
            .collect(),
        SearchMode::Hybrid => match query
            .fusion
            .unwrap_or_else(|| fusion_for(plan.shape))
            .at_coverage(coverage)
        {
            Fusion::Rrf { vector_weight } => {
                fuse(&[(&vector_hits, vector_weight), (&text_hits, 1.0)], depth)
            }
            Fusion::Linear { text_weight } => {
                fuse_linear(&vector_hits, &text_hits, text_weight, depth)
            }
            Fusion::ZScore { text_weight } => {
                fuse_zscore(&vector_hits, &text_hits, text_weight, depth)
            }
        },
    }
}

/// How hybrid search fuses the legs of a query of this shape (unless the
/// query says).
pub fn fusion_for(shape: query::Shape) -> Fusion {
    match shape {
        query::Shape::Names => NAME_QUERY_FUSION,
        query::Shape::Prose => SHORT_QUERY_FUSION,
        query::Shape::Issue => LONG_QUERY_FUSION,
    }
}

/// How hybrid search fuses the two lists of a one-line query in words;
/// chosen on the CoSQA dev split and the doc-comment sets (see
/// BENCHMARKS.md), never on the test split.
pub const SHORT_QUERY_FUSION: Fusion = Fusion::ZScore { text_weight: 0.3 };
/// How it fuses them for a query of names, where BM25 is the strong leg
/// (name search on flask: BM25 Acc@1 0.995, vectors 0.615): the legs weigh
/// the same. The definitions of the name rank first whatever the weight
/// ([`definitions_first`]); it orders what follows them.
pub const NAME_QUERY_FUSION: Fusion = Fusion::ZScore { text_weight: 0.5 };
/// How it fuses them for an issue text; chosen on the SWE-bench dev
/// instances (sympy 1.0 and 1.1).
pub const LONG_QUERY_FUSION: Fusion = Fusion::Linear { text_weight: 0.1 };

/// Chunks of one file in search results: the rest of a file's matches would
/// push other files out of a short list.
const CHUNKS_PER_FILE: usize = 3;
/// Candidates each leg returns for a long query: the file ranking and the
/// name bonuses need a deeper list than a top-k.
const LONG_QUERY_DEPTH: usize = 200;
/// BM25 weight of the names in an issue text against its prose words.
const LONG_QUERY_NAME_WEIGHT: f32 = 2.0;
/// BM25 weight of an issue's title, on top of its words' own clauses: the
/// title is the report in one line.
const LONG_QUERY_TITLE_WEIGHT: f32 = 1.0;
/// The title's weight in an issue's query vector, against each passage's 1:
/// a passage of a long report is often a traceback or an environment dump.
/// SWE-bench dev (sympy 1.0, 1.1): Acc@1 0.48 -> 0.52, Acc@5 0.72 -> 0.76.
const TITLE_PASSAGE_WEIGHT: f32 = 3.0;

/// A table's BM25 leg: for an issue text, its names weigh more than its
/// prose.
fn text_leg(store: &Store, query: &SearchQuery, plan: &SearchPlan) -> Result<Vec<store::Hit>> {
    let groups = match &plan.long {
        Some(l) => vec![
            (
                searchable_query(&l.code_terms.join(" ")),
                LONG_QUERY_NAME_WEIGHT,
            ),
            (l.prose_terms.join(" "), 1.0),
            (
                l.title.as_deref().map(searchable_query).unwrap_or_default(),
                LONG_QUERY_TITLE_WEIGHT,
            ),
        ],
        None => vec![(searchable_query(&query.text), 1.0)],
    };
    store.weighted_text_search(&groups, plan.depth, plan.lang_filter.as_deref())
}

/// The query's vector: an issue text's passages embedded and averaged, a
/// one-line query as it is.
fn query_vector(
    embedder: &mut Embedder,
    query: &SearchQuery,
    plan: &SearchPlan,
) -> Result<Vec<f32>> {
    Ok(match &plan.long {
        Some(l) if l.passages.len() > 1 => {
            let mut texts = l.passages.clone();
            texts.extend(l.title.clone());
            let mut vectors = embedder.embed(&texts)?;
            // One vector per text: the title's is the last.
            if let (Some(_), Some(title)) = (&l.title, vectors.last_mut()) {
                title.iter_mut().for_each(|x| *x *= TITLE_PASSAGE_WEIGHT);
            }
            mean_direction(&vectors)
        }
        _ => embedder.embed_one(&query.text)?,
    })
}

/// The normalised mean of unit vectors: one query vector for several
/// passages, pointing where they agree.
fn mean_direction(vectors: &[Vec<f32>]) -> Vec<f32> {
    let mut mean = vec![0.0f32; vectors.first().map_or(0, Vec::len)];
    for v in vectors {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += x;
        }
    }
    let norm = mean
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    mean.iter_mut().for_each(|m| *m /= norm);
    mean
}

// The ranking functions the pipeline uses.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Vector and BM25 results fused (each list weighed by how far a hit
    /// stands out of it), ranked by file.
    #[default]
    Hybrid,
    /// Embedding similarity only.
    Vector,
    /// Keyword (BM25) only.
    Bm25,
}

#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub text: String,
    pub k: usize,
    pub mode: SearchMode,
    /// Only paths matching this glob (e.g. `src/**/*.rs`).
    pub path_glob: Option<String>,
    /// Only this language (`rust`, `python`, `text`).
    pub lang: Option<String>,
    /// How hybrid mode merges the two lists; `None`: by the query's kind
    /// ([`super::SHORT_QUERY_FUSION`], [`super::LONG_QUERY_FUSION`]).
    pub fusion: Option<Fusion>,
}

/// How hybrid search merges the vector and BM25 lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion; the vector list weighs `vector_weight`, BM25 1.
    Rrf { vector_weight: f32 },
    /// Cosine similarity plus `text_weight` × BM25 score / best BM25 score.
    /// Keeps the vector list's fine-grained scores, which rank-only fusion
    /// throws away when one retriever is much stronger than the other.
    Linear { text_weight: f32 },
    /// Each list's scores standardised (mean 0, standard deviation 1 over
    /// the list), then `(1 - text_weight)` × vector + `text_weight` × BM25.
    /// The legs count by how far a candidate stands out of their own list,
    /// not by their raw scales, so whichever leg separates its top hits
    /// more has the say (BM25 when a doc comment uses the code's own words,
    /// the vectors for a web-style question).
    ZScore { text_weight: f32 },
}

impl Fusion {
    /// This fusion with the vector leg weighed by `coverage`, the share of
    /// the chunks that have vectors (issue 53: after Ctrl-C at 7% vectors,
    /// the vector leg ranks only the embedded chunks; standardised over
    /// those few, its best stand out as far as in a full index and crowded
    /// out what BM25 found in the other 93%). At 0 the ranking is BM25's,
    /// at 1 the fusion is unchanged, in between the vector leg counts as
    /// much as the share of the code it has seen. A single weight rather
    /// than a rule per candidate (BM25 alone for a chunk without a vector):
    /// the candidates' scores stay on one scale, and a few embedded chunks
    /// cannot outrank BM25's best on the vector leg's say alone.
    pub fn at_coverage(self, coverage: f32) -> Fusion {
        if coverage >= 1.0 {
            return self;
        }
        let c = coverage.max(0.0);
        match self {
            Fusion::Rrf { vector_weight } => Fusion::Rrf {
                vector_weight: vector_weight * c,
            },
            // cosine × c + text_weight × BM25, ranked alike when divided by
            // c; with no vectors at all, BM25 alone.
            Fusion::Linear { text_weight } => Fusion::Linear {
                text_weight: if c > 0.0 { text_weight / c } else { f32::MAX },
            },
            // (1 - w) × c × vector + w × BM25, the weights brought back to
            // a sum of 1.
            Fusion::ZScore { text_weight } => {
                let vector = (1.0 - text_weight) * c;
                Fusion::ZScore {
                    text_weight: text_weight / (text_weight + vector).max(f32::EPSILON),
                }
            }
        }
    }
}

impl std::str::FromStr for Fusion {
    type Err = String;
    /// `rrf:W`, `linear:W` or `z:W`.
    fn from_str(s: &str) -> Result<Self, String> {
        let expected = || format!("{s}: expected rrf:W, linear:W or z:W");
        let (kind, w) = s.split_once(':').ok_or_else(expected)?;
        let w: f32 = w.parse().map_err(|_| format!("{s}: bad weight"))?;
        match kind {
            "rrf" => Ok(Fusion::Rrf { vector_weight: w }),
            "linear" => Ok(Fusion::Linear { text_weight: w }),
            "z" => Ok(Fusion::ZScore { text_weight: w }),
            _ => Err(expected()),
        }
    }
}

impl SearchQuery {
    pub fn new(text: impl Into<String>, k: usize) -> Self {
        Self {
            text: text.into(),
            k,
            mode: SearchMode::Hybrid,
            path_glob: None,
            lang: None,
            fusion: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchResult {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: String,
    pub kind: String,
    pub score: f32,
    pub text: String,
}

/// Splits an identifier into lower-case words: `parseHTTPResponse2` →
/// `parse http response 2`, `max_file_bytes` → `max file bytes`.
pub fn split_identifier(ident: &str) -> Vec<String> {
    let chars: Vec<char> = ident.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let boundary = match prev {
            Some(p) if p.is_alphanumeric() => {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_uppercase()
                        && c.is_uppercase()
                        && next.is_some_and(|n| n.is_lowercase()))
                    || (p.is_alphabetic() != c.is_alphabetic())
            }
            _ => false,
        };
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The text BM25 indexes: the path, the symbol and the code, followed by
/// the parts of every compound identifier, so `parse http` finds
/// `parseHttpRequest` and `parse_http_request`.
pub fn searchable_text(path: &str, symbol: &str, text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for part in [path, symbol, text] {
        out.push_str(part);
        out.push('\n');
    }
    let mut seen = std::collections::HashSet::new();
    for source in [path, symbol, text] {
        for ident in source.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if ident.len() < 3 || !seen.insert(ident) {
                continue;
            }
            let words = split_identifier(ident);
            if words.len() > 1 {
                out.push_str(&words.join(" "));
                out.push(' ');
            }
        }
    }
    out
}

/// The query as BM25 sees it: the words plus the parts of any identifiers.
pub fn searchable_query(query: &str) -> String {
    let mut terms: Vec<String> = Vec::new();
    for ident in query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
    {
        terms.push(ident.to_lowercase());
        let words = split_identifier(ident);
        if words.len() > 1 {
            terms.extend(words);
        }
    }
    terms.join(" ")
}

/// Reciprocal rank fusion: each list contributes `weight / (K + rank)`.
/// Rank-based, so the incomparable scales of cosine and BM25 never mix.
pub fn fuse(lists: &[(&[Hit], f32)], k: usize) -> Vec<(Hit, f32)> {
    const K: f32 = 60.0;
    let mut scores: HashMap<&str, (f32, &Hit)> = HashMap::new();
    for (hits, weight) in lists {
        for (rank, hit) in hits.iter().enumerate() {
            let entry = scores.entry(hit.row.id.as_str()).or_insert((0.0, hit));
            entry.0 += weight / (K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(Hit, f32)> = scores.into_values().map(|(s, h)| (h.clone(), s)).collect();
    fused.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| a.0.row.id.cmp(&b.0.row.id))
    });
    fused.truncate(k);
    fused
}

/// Linear fusion: cosine + `text_weight` × normalised BM25. A candidate
/// missing from the vector list gets that list's lowest similarity (it was
/// at best that close), one missing from BM25 gets 0.
pub fn fuse_linear(vector: &[Hit], text: &[Hit], text_weight: f32, k: usize) -> Vec<(Hit, f32)> {
    let floor = vector.iter().map(|h| h.score).fold(f32::INFINITY, f32::min);
    let floor = if floor.is_finite() { floor } else { 0.0 };
    let best_text = text
        .iter()
        .map(|h| h.score)
        .fold(0.0f32, f32::max)
        .max(f32::EPSILON);
    let mut scores: HashMap<&str, (f32, f32, &Hit)> = HashMap::new();
    for h in vector {
        scores.insert(h.row.id.as_str(), (h.score, 0.0, h));
    }
    for h in text {
        scores.entry(h.row.id.as_str()).or_insert((floor, 0.0, h)).1 = h.score / best_text;
    }
    let mut fused: Vec<(Hit, f32)> = scores
        .into_values()
        .map(|(v, t, h)| (h.clone(), v + text_weight * t))
        .collect();
    fused.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| a.0.row.id.cmp(&b.0.row.id))
    });
    fused.truncate(k);
    fused
}

/// Cosine similarities closer than this say nothing: an embedder that
/// cannot tell the candidates apart (all within a few hundredths, as a chat
/// model's hidden states are) must not outvote BM25 by its standardised
/// noise. MiniLM's lists spread wider (standard deviation 0.03 at the 5th
/// percentile on CoSQA and the doc-comment pairs), so this rarely binds.
const MIN_COSINE_SD: f32 = 0.02;

/// Z-score fusion (see [`Fusion::ZScore`]). A candidate missing from a list
/// takes that list's lowest standardised score (it was at best that good),
/// or missing from a BM25 list that holds every match, BM25's 0 standardised
/// (so a lone match still counts); the fused scores are shifted so the lowest is 0, since later steps scale
/// scores (documentation × 0.7) and divide by the best one.
pub fn fuse_zscore(vector: &[Hit], text: &[Hit], text_weight: f32, k: usize) -> Vec<(Hit, f32)> {
    /// Standardised scores by row id, and what a candidate missing from the
    /// list gets: the lowest of them, or, when `floor` is given and the list
    /// was not cut off at `k` (every match is in it), the standardised
    /// `floor` (BM25 0 for no match). A spread under `min_sd` counts as
    /// `min_sd`: differences that small are noise.
    fn standardise(
        hits: &[Hit],
        min_sd: f32,
        floor: Option<f32>,
        k: usize,
    ) -> (HashMap<&str, f32>, f32) {
        let n = hits.len() as f32;
        if hits.is_empty() {
            return (HashMap::new(), 0.0);
        }
        let mean = hits.iter().map(|h| h.score).sum::<f32>() / n;
        let var = hits.iter().map(|h| (h.score - mean).powi(2)).sum::<f32>() / n;
        // One hit, or all equal: no hit stands out.
        let sd = if var > f32::EPSILON {
            var.sqrt().max(min_sd)
        } else {
            1.0
        };
        let z: HashMap<&str, f32> = hits
            .iter()
            .map(|h| (h.row.id.as_str(), (h.score - mean) / sd))
            .collect();
        let missing = match floor {
            Some(raw) if hits.len() < k => (raw - mean) / sd,
            _ => z.values().copied().fold(f32::INFINITY, f32::min),
        };
        (z, missing)
    }
    let (zv, floor_v) = standardise(vector, MIN_COSINE_SD, None, k);
    let (zt, floor_t) = standardise(text, 0.0, Some(0.0), k);
    let mut hits: HashMap<&str, &Hit> = HashMap::new();
    for h in vector.iter().chain(text) {
        hits.entry(h.row.id.as_str()).or_insert(h);
    }
    let mut fused: Vec<(Hit, f32)> = hits
        .into_iter()
        .map(|(id, h)| {
            let v = zv.get(id).copied().unwrap_or(floor_v);
            let t = zt.get(id).copied().unwrap_or(floor_t);
            (h.clone(), (1.0 - text_weight) * v + text_weight * t)
        })
        .collect();
    let lowest = fused.iter().map(|(_, s)| *s).fold(f32::INFINITY, f32::min);
    for (_, s) in &mut fused {
        *s -= lowest;
    }
    fused.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| a.0.row.id.cmp(&b.0.row.id))
    });
    fused.truncate(k);
    fused
}

/// What the file ranking knows of a query besides the chunks it matched.
#[derive(Debug, Default)]
pub struct FileSignals {
    /// Repository files the query names, by path or module path.
    pub named_files: HashSet<String>,
    /// Names in code form the query mentions (`LatexPrinter`, `_print_Mul`).
    pub names: HashSet<String>,
    /// Whether a file's other matching chunks add to its score. Yes for a
    /// long query (an issue touches several parts of the file it is about);
    /// no for a short one, where the best chunk should decide: there, long
    /// functions split into several chunks would otherwise win too often
    /// (docstring pairs: MRR@10 0.557 → 0.502 with the share).
    pub accumulate: bool,
    /// Files that define names the query mentions, each weighted by how
    /// specific its names are ([`definition_weights`]).
    pub defined: HashMap<String, f32>,
    /// The title's words, lower case, singular (for matching path parts).
    pub title_words: HashSet<String>,
}

/// A word folded for matching a path part: lower case, a plural `s` dropped.
pub fn fold_word(w: &str) -> String {
    let w = w.to_lowercase();
    match w.strip_suffix('s') {
        Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
        _ => w,
    }
}

/// How many of `words` name a part of `path` (a folder or the file's stem,
/// also split at `_`).
pub fn path_words_matched(path: &str, words: &HashSet<String>) -> usize {
    if words.is_empty() {
        return 0;
    }
    let mut parts: HashSet<String> = HashSet::new();
    for part in path.split('/') {
        let stem = part.split('.').next().unwrap_or(part);
        parts.insert(fold_word(stem));
        for piece in stem.split('_').filter(|p| p.len() >= 3) {
            parts.insert(fold_word(piece));
        }
    }
    words.iter().filter(|w| parts.contains(*w)).count()
}

/// How much defining the query's names says about each file: the sum over
/// the names a file defines of 1 / the number of files defining that name.
/// `nthroot_mod`, defined once, points at its file; `__eq__`, defined in
/// fifty, says little about any.
pub fn definition_weights(
    files_by_name: &HashMap<String, HashSet<String>>,
) -> HashMap<String, f32> {
    let mut weights: HashMap<String, f32> = HashMap::new();
    for files in files_by_name.values() {
        for f in files {
            *weights.entry(f.clone()).or_default() += 1.0 / files.len() as f32;
        }
    }
    weights
}

/// Share of a file's other matching chunks added to its best one (for long
/// queries): a file with several good chunks beats one with a single equal
/// chunk, but one strong chunk still beats many weak ones.
const REST_SHARE: f32 = 0.1;
/// Chunks of a file counted in its score besides the best.
const REST_CHUNKS: usize = 4;
/// Bonus (in units of the best score) for a file the query names.
const NAMED_FILE_BONUS: f32 = 0.3;
/// Bonus for a chunk that defines a name the query mentions.
const NAMED_SYMBOL_BONUS: f32 = 0.1;
/// Bonus for a file by how specific the names it defines are (see
/// [`definition_weights`], capped at 1): SWE-bench sympy and matplotlib
/// (62 instances) Acc@1 0.63 -> 0.68, Acc@5 unchanged.
const DEFINED_NAMES_BONUS: f32 = 0.2;
/// Bonus for each word of an issue's title that names a folder or the file
/// (`pretty printing` -> `printing/pretty/pretty.py`), up to
/// [`TITLE_PATH_WORDS`] of them.
const TITLE_PATH_BONUS: f32 = 0.1;
const TITLE_PATH_WORDS: usize = 2;

/// Ranks files, not chunks: what the agent needs first is the file. A file
/// scores its best chunk (plus, for long queries, [`REST_SHARE`] of its next
/// ones), with bonuses
/// for being named by the query and for defining names it mentions. The
/// chunks come back grouped by file, best file first, at most `per_file`
/// of each, each with its own score.
pub fn rank_by_file(
    ranked: Vec<(Hit, f32)>,
    signals: &FileSignals,
    per_file: usize,
) -> Vec<(Hit, f32)> {
    /// A chunk with its own score and its weight in its file's score.
    struct Candidate {
        hit: Hit,
        score: f32,
        weight: f32,
    }
    let top = ranked.iter().map(|(_, s)| *s).fold(f32::EPSILON, f32::max);
    let mut files: HashMap<String, Vec<Candidate>> = HashMap::new();
    for (hit, score) in ranked {
        let defines_named = hit
            .row
            .symbol
            .split(['.', ':'])
            .any(|part| signals.names.contains(part));
        let bonus = if defines_named {
            NAMED_SYMBOL_BONUS
        } else {
            0.0
        };
        files
            .entry(hit.row.path.clone())
            .or_default()
            .push(Candidate {
                weight: score / top + bonus,
                hit,
                score,
            });
    }
    let mut scored: Vec<(f32, String, Vec<Candidate>)> = files
        .into_iter()
        .map(|(path, mut chunks)| {
            chunks.sort_by(|a, b| b.weight.total_cmp(&a.weight));
            let rest: f32 = chunks
                .iter()
                .skip(1)
                .take(REST_CHUNKS)
                .map(|c| c.weight)
                .sum();
            let named = if signals.named_files.contains(&path) {
                NAMED_FILE_BONUS
            } else {
                0.0
            };
            let share = if signals.accumulate { REST_SHARE } else { 0.0 };
            let defined =
                DEFINED_NAMES_BONUS * signals.defined.get(&path).map_or(0.0, |w| w.min(1.0));
            let titled = TITLE_PATH_BONUS
                * path_words_matched(&path, &signals.title_words).min(TITLE_PATH_WORDS) as f32;
            (
                chunks[0].weight + share * rest + named + defined + titled,
                path,
                chunks,
            )
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored
        .into_iter()
        .flat_map(|(_, _, chunks)| chunks.into_iter().take(per_file))
        .map(|c| (c.hit, c.score))
        .collect()
}

/// The repository files that paths named in a query refer to. A named path
/// matches a file it is a suffix of (`core/basic.py`); a module path
/// (`sympy/printing/latex`, from `sympy.printing.latex`) matches its `.py`
/// file or package, also after dropping a last part that names a class or
/// function in it. Single-part names are too vague to count.
pub fn resolve_named_files<'a>(
    named: &[String],
    files: impl Iterator<Item = &'a str> + Clone,
) -> HashSet<String> {
    let mut out = HashSet::new();
    let ends_with = |file: &str, tail: &str| {
        file == tail || (file.ends_with(tail) && file[..file.len() - tail.len()].ends_with('/'))
    };
    for name in named {
        let parts: Vec<&str> = name.split('/').collect();
        let has_ext = parts.last().is_some_and(|p| p.contains('.'));
        let candidates: Vec<Vec<String>> = if has_ext {
            vec![vec![name.clone()]]
        } else {
            // The whole module path first; without its last part only if
            // that matched nothing.
            (2..=parts.len())
                .rev()
                .take(2)
                .map(|n| {
                    let m = parts[..n].join("/");
                    vec![
                        format!("{m}.py"),
                        format!("{m}/__init__.py"),
                        format!("{m}.rs"),
                    ]
                })
                .collect()
        };
        for tails in candidates {
            let before = out.len();
            for file in files.clone() {
                // Either may be the longer: `core/basic.py` names `sympy/core/basic.py`,
                // and `/home/u/src/sympy/core/basic.py` names it too.
                if tails
                    .iter()
                    .any(|c| ends_with(file, c) || (file.contains('/') && ends_with(c, file)))
                {
                    out.insert(file.to_string());
                }
            }
            if out.len() > before {
                break;
            }
        }
    }
    out
}

/// Score factor for documentation chunks when the query does not ask for
/// docs: prose matches a natural-language question better than code does,
/// so without it READMEs and .rst pages crowd the code out of the results.
const DOC_WEIGHT: f32 = 0.7;

/// Prose documentation, by extension.
pub fn is_doc(path: &str) -> bool {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    matches!(
        ext.to_ascii_lowercase().as_str(),
        "md" | "markdown" | "rst" | "txt" | "adoc" | "asciidoc" | "org" | "rdoc"
    )
}

/// Whether a query asks for documentation (or about the project as a
/// whole, which the README answers best).
pub fn wants_docs(query: &str) -> bool {
    const WORDS: &[&str] = &[
        "doc",
        "docs",
        "documentation",
        "documented",
        "document",
        "readme",
        "guide",
        "tutorial",
        "changelog",
        "changes",
        "manual",
        "faq",
        "howto",
        "md",
        "rst",
        "project",
        "overview",
        "introduction",
        "license",
        "contributing",
    ];
    mentions_any(query, WORDS)
}

/// Whether the query has one of `words` (lower case) as a word of its own.
fn mentions_any(query: &str, words: &[&str]) -> bool {
    query
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| words.contains(&w.to_ascii_lowercase().as_str()))
}

/// Score factor for test files when the query does not mention tests: a
/// test calls the code it tests by name, so it matches a request about that
/// code by words almost as well as the code itself does.
const TEST_WEIGHT: f32 = 0.8;

pub use agent_lang::walk::is_test;

/// Whether a query is about tests.
pub fn wants_tests(query: &str) -> bool {
    mentions_any(
        query,
        &[
            "test", "tests", "testing", "pytest", "unittest", "spec", "specs",
        ],
    )
}

/// Most chunks a one-line query's definition lookup returns per table.
const MAX_DEFINITIONS: usize = 50;
/// Chunks searched for the name of a question by relation.
const REFERENCES_DEPTH: usize = 200;

/// Puts the chunks that define what a one-line query names above every
/// other result: asked for `getfixturevalue`, the user wants its `def`, not
/// the hundred places that call it (which BM25 and vectors rank as well or
/// better). Among the definitions the fused score orders them, and a test's
/// or a doc's weighs less, as in [`code_first`].
pub fn definitions_first(
    mut ranked: Vec<(Hit, f32)>,
    defining: Vec<Hit>,
    query: &str,
) -> Vec<(Hit, f32)> {
    if defining.is_empty() {
        return ranked;
    }
    let top = ranked
        .iter()
        .map(|(_, s)| s.abs())
        .fold(f32::EPSILON, f32::max);
    // "what does Cache::reset do": the `reset` inside `Cache` before every
    // other `reset` (issue 53: `Core::reset_cache`'s neighbour came first).
    let qualified: Vec<&str> = query
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '?' | ',' | '(' | ')'))
        .filter(|w| w.contains("::") || (w.contains('.') && !w.ends_with('.')))
        .collect();
    let exact = |symbol: &str| {
        qualified.iter().any(|q| {
            symbol == *q
                || symbol
                    .strip_suffix(*q)
                    .is_some_and(|head| head.ends_with([':', '.']))
        })
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut boosted: Vec<(Hit, f32)> = Vec::new();
    for hit in defining {
        if !seen.insert(hit.row.id.clone()) {
            continue;
        }
        let fused = ranked
            .iter()
            .position(|(h, _)| h.row.id == hit.row.id)
            .map(|i| ranked.remove(i).1);
        let share = fused.map_or(0.0, |s| (s / top).clamp(0.0, 1.0));
        let named = if symbols(&hit).any(exact) { 1.0 } else { 0.0 };
        boosted.push((hit, top * (2.0 + named + share)));
    }
    let mut boosted = code_first(boosted, query, |h| h.row.path.as_str());
    boosted.append(&mut ranked);
    boosted.sort_by(|a, b| b.1.total_cmp(&a.1));
    boosted
}

/// `reset` of `Cache::reset`, `b` of `a.b`: the part a definition is named by.
fn last_part(name: &str) -> &str {
    name.rsplit(['.', ':']).next().unwrap_or(name)
}

/// The definitions a chunk holds ("Minimizer::run, Minimizer::find_waiting").
fn symbols(hit: &Hit) -> impl Iterator<Item = &str> {
    hit.row.symbol.split(", ")
}

/// Whether `text` uses `name` in code: as a whole word on a line that is no
/// comment, called (`name(`, `x.name(`, `name!`) or, for a type, reached
/// through (`Name::new`, `Name<T>`, `Name {`); not a field read
/// (`self.minimize`) or a mention in prose.
fn uses_in_code(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let a_type = name.starts_with(|c: char| c.is_uppercase());
    text.lines()
        .filter(|line| {
            let t = line.trim_start();
            !["//", "#", "*", "/*", "--"]
                .iter()
                .any(|c| t.starts_with(c))
        })
        .any(|line| {
            line.match_indices(name).any(|(at, _)| {
                let rest = &line[at + name.len()..];
                let after = rest.trim_start().chars().next();
                !line[..at].chars().next_back().is_some_and(is_ident)
                    && !rest.chars().next().is_some_and(is_ident)
                    && (matches!(after, Some('(' | '!'))
                        || (a_type && matches!(after, Some(':' | '<' | '{'))))
            })
        })
}

/// Whether a chunk is test code: in a test file, or a test function.
fn is_test_chunk(hit: &Hit) -> bool {
    is_test(&hit.row.path)
        || symbols(hit).any(|s| last_part(s).starts_with("test"))
        || hit.row.text.contains("#[test]")
        || hit.row.text.contains("@Test")
}

/// For a question by relation ("what calls minimize", "tests for
/// find_iter"): the chunks that use the name without defining it (for
/// tests, only test code; for callers, the library's own calls before the
/// tests', which a caller question is rarely after) above everything, then
/// its definitions, then the rest, each group in fused order. The name's definition is what a plain
/// search ranks first, and the one thing the question does not ask for.
pub fn references_first(
    mut ranked: Vec<(Hit, f32)>,
    defining: Vec<Hit>,
    referencing: Vec<Hit>,
    relation: query::Relation,
    name: &str,
) -> Vec<(Hit, f32)> {
    let bare = last_part(name);
    // Callers the legs did not rank join at the bottom of the fused order.
    let ranked_ids: HashSet<String> = ranked.iter().map(|(h, _)| h.row.id.clone()).collect();
    let mut joined: HashSet<String> = HashSet::new();
    for hit in referencing {
        if !ranked_ids.contains(&hit.row.id)
            && joined.insert(hit.row.id.clone())
            && uses_in_code(&hit.row.text, bare)
        {
            ranked.push((hit, 0.0));
        }
    }
    let top = ranked
        .iter()
        .map(|(_, s)| s.abs())
        .fold(f32::EPSILON, f32::max);
    let defines = |hit: &Hit| symbols(hit).any(|s| last_part(s) == bare);
    let mut out: Vec<(Hit, f32)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (hit, score) in ranked {
        let share = (score / top).clamp(0.0, 1.0);
        let in_test = is_test_chunk(&hit);
        let refers = !defines(&hit)
            && uses_in_code(&hit.row.text, bare)
            && (relation == query::Relation::Callers || in_test);
        let score = if refers && relation == query::Relation::Callers && !in_test {
            top * (4.0 + share)
        } else if refers {
            top * (3.0 + share)
        } else if defines(&hit) {
            top * (2.0 + share)
        } else {
            score
        };
        seen.insert(hit.row.id.clone());
        out.push((hit, score));
    }
    // Definitions the legs did not fetch still come before the rest.
    for hit in defining {
        if seen.insert(hit.row.id.clone()) {
            out.push((hit, top * 2.0));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// For "how does X choose Y": the chunks that decide a Y ([`decides`]) above
/// the rest, each group in fused order; among them, more branches and more
/// mentions of the chosen thing first (the function that weighs the
/// options, not a one-line constructor nor one option's own).
/// Asked how `meta::Regex` chooses a strategy, `strategy::new` (which
/// returns `Arc<dyn Strategy>` after a dozen tests) answers, not
/// `Regex::is_accelerated`, which merely asks the strategy.
pub fn deciders_first(ranked: Vec<(Hit, f32)>, chosen: &str) -> Vec<(Hit, f32)> {
    let chosen = fold_name(chosen);
    let top = ranked
        .iter()
        .map(|(_, s)| s.abs())
        .fold(f32::EPSILON, f32::max);
    let mut out: Vec<(Hit, f32)> = ranked
        .into_iter()
        .map(|(hit, score)| {
            if !decides(&hit, &chosen) {
                return (hit, score);
            }
            let share = (score / top).clamp(0.0, 1.0);
            let cap = |n: usize| n.min(MAX_BRANCHES) as f32 / MAX_BRANCHES as f32;
            let weighs = cap(branches(&hit.row.text)) + cap(mentions(&hit.row.text, &chosen));
            (hit, top * (3.0 + share + weighs))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// Branches (and mentions) counted up to this many in [`deciders_first`].
const MAX_BRANCHES: usize = 8;

/// `StartState`, `start_state`, "start state" → `startstate`.
fn fold_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether a chunk decides a `chosen` (folded, see [`fold_name`]): its
/// head returns one (`-> Arc<dyn Strategy>`), it is a constructor or
/// chooser of the chosen thing's own type or, outside any type, of its own
/// file (`Strategy::build`, `strategy.rs: new`), or it dispatches on its
/// variants (`match` and two or more `Strategy::` paths).
fn decides(hit: &Hit, chosen: &str) -> bool {
    let text = &hit.row.text;
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(fold_name)
            .collect()
    };
    // The head: up to the body's `{` or a Python `:` line end.
    let head_end = text
        .find(['{'])
        .into_iter()
        .chain(text.find(":\n"))
        .min()
        .unwrap_or(text.len().min(400));
    let head = &text[..head_end];
    if let Some((_, ret)) = head.split_once("->") {
        if words(ret).iter().any(|w| *w == chosen) {
            return true;
        }
    }
    let stem = hit.row.path.rsplit('/').next().unwrap_or("");
    let stem = stem.split('.').next().unwrap_or(stem);
    let chooser = |s: &str| {
        let bare = fold_name(last_part(s));
        ["new", "build", "create", "make"].contains(&bare.as_str())
            || ["choose", "select", "pick", "decide", "determine"]
                .iter()
                .any(|p| bare.starts_with(p))
    };
    // `strategy.rs: new` or `Strategy::new`; not `ReverseSuffix::new`
    // beside it, which builds one option.
    let in_own_place = |s: &str| match s.rsplit_once(['.', ':']) {
        Some((owner, _)) => fold_name(last_part(owner.trim_end_matches(':'))) == chosen,
        None => fold_name(stem) == chosen,
    };
    if symbols(hit).any(|s| chooser(s) && in_own_place(s)) {
        return true;
    }
    let paths = text
        .match_indices("::")
        .filter(|(at, _)| {
            let before = &text[..*at];
            let start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            fold_name(&before[start..]) == chosen
        })
        .count();
    text.contains("match ") && paths >= 2
}

/// How often `text` names `chosen` (folded): `Strategy`, "strategy",
/// `start_state`, "start state".
fn mentions(text: &str, chosen: &str) -> usize {
    let folded: String = text
        .chars()
        .filter(|c| !matches!(c, '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    folded.matches(chosen).count()
}

/// How many branches a chunk's text has (`if`, `match` arms' `=>`, `elif`).
fn branches(text: &str) -> usize {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '=' || c == '>'))
        .filter(|w| matches!(*w, "if" | "elif" | "=>" | "case"))
        .count()
}

/// Re-ranks so code comes before documentation and tests of similar score:
/// a doc chunk's score is scaled by [`DOC_WEIGHT`] unless the query asks for
/// docs, a test's by [`TEST_WEIGHT`] unless it mentions tests. The sort is
/// stable.
pub fn code_first<T>(
    mut ranked: Vec<(T, f32)>,
    query: &str,
    path: impl Fn(&T) -> &str,
) -> Vec<(T, f32)> {
    let doc_weight = if wants_docs(query) { 1.0 } else { DOC_WEIGHT };
    let test_weight = if wants_tests(query) { 1.0 } else { TEST_WEIGHT };
    for (hit, score) in ranked.iter_mut() {
        let p = path(hit);
        let weight = if is_doc(p) {
            doc_weight
        } else if is_test(p) {
            test_weight
        } else {
            1.0
        };
        *score = if *score >= 0.0 {
            *score * weight
        } else {
            *score / weight
        };
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, line: u32, symbol: &str) -> Hit {
        Hit {
            row: super::super::store::Row {
                id: format!("{path}:{line}"),
                path: path.into(),
                lang: "python".into(),
                symbol: symbol.into(),
                kind: "function".into(),
                start_line: line,
                end_line: line + 5,
                hash: String::new(),
                text: String::new(),
                search_text: String::new(),
                vector: Vec::new(),
                embedded: true,
            },
            score: 0.0,
        }
    }

    fn order(ranked: &[(Hit, f32)]) -> Vec<String> {
        ranked.iter().map(|(h, _)| h.row.id.clone()).collect()
    }

    fn scored(path: &str, score: f32) -> Hit {
        Hit {
            score,
            ..hit(path, 1, "f")
        }
    }

    #[test]
    fn zscore_fusion_lets_an_outlier_of_either_list_lead() {
        // The vectors rank a.py first by a step no larger than the others;
        // BM25's c.py stands far out of its list.
        let mut vector = vec![scored("a.py", 0.60), scored("c.py", 0.58)];
        let mut text = vec![
            scored("c.py", 12.0),
            scored("a.py", 2.0),
            scored("e.py", 1.9),
        ];
        for i in 0..8 {
            vector.push(scored(&format!("d{i}.py"), 0.56 - 0.02 * i as f32));
        }
        for i in 0..7 {
            text.push(scored(&format!("d{i}.py"), 1.8 - 0.1 * i as f32));
        }
        let fused = fuse_zscore(&vector, &text, 0.3, 20);
        assert_eq!(order(&fused)[0], "c.py:1");
        // With BM25 given no say, the vectors' order stands.
        assert_eq!(order(&fuse_zscore(&vector, &text, 0.0, 20))[0], "a.py:1");
        // Every candidate once, the lowest at 0, none negative (documents
        // are scaled down later, which must lower them).
        assert_eq!(fused.len(), 11);
        assert!(fused.iter().all(|(_, s)| *s >= 0.0));
        assert_eq!(fused.last().unwrap().1, 0.0);
        // Only in BM25 (e.py) takes the vector list's floor: below a.py,
        // which both lists have, though their BM25 scores are close.
        let pos = |id: &str| order(&fused).iter().position(|x| x == id).unwrap();
        assert!(pos("a.py:1") < pos("e.py:1"));
        // A lone BM25 match (the list holds every match) still counts, and
        // cosines a few thousandths apart do not outvote it.
        let flat = [
            scored("a.py", 0.51),
            scored("b.py", 0.50),
            scored("c.py", 0.49),
        ];
        let lone = [scored("b.py", 3.0)];
        assert_eq!(order(&fuse_zscore(&flat, &lone, 0.3, 40))[0], "b.py:1");
        // A leg with one hit (no spread) adds nothing odd.
        let one = fuse_zscore(&vector[..1], &text[..1], 0.3, 10);
        assert!(one.iter().all(|(_, s)| s.is_finite()));
        assert_eq!(
            "z:0.3".parse::<Fusion>(),
            Ok(Fusion::ZScore { text_weight: 0.3 })
        );
    }

    #[test]
    fn partial_vectors_weigh_the_vector_leg_by_their_share() {
        // Every fusion is unchanged once all chunks have vectors.
        for f in [
            SHORT_QUERY_FUSION,
            NAME_QUERY_FUSION,
            LONG_QUERY_FUSION,
            Fusion::Rrf { vector_weight: 1.0 },
        ] {
            assert_eq!(f.at_coverage(1.0), f);
        }
        // The vector leg saw only three embedded chunks, none the answer;
        // BM25 ranks the answer (not embedded) first.
        let vector = vec![
            scored("id.rs", 0.62),
            scored("start.rs", 0.55),
            scored("wire.rs", 0.41),
        ];
        let mut text = vec![scored("dfa.rs", 12.0), scored("regex.rs", 7.0)];
        text.extend((0..20).map(|i| scored(&format!("t{i}.rs"), 5.0 - i as f32 * 0.2)));
        let fused = |f: Fusion| match f {
            Fusion::ZScore { text_weight } => fuse_zscore(&vector, &text, text_weight, 40),
            Fusion::Linear { text_weight } => fuse_linear(&vector, &text, text_weight, 40),
            Fusion::Rrf { vector_weight } => fuse(&[(&vector, vector_weight), (&text, 1.0)], 40),
        };
        // At full weight the few vectors lead (what the issue saw).
        assert_eq!(order(&fused(SHORT_QUERY_FUSION))[0], "id.rs:1");
        for f in [
            SHORT_QUERY_FUSION,
            NAME_QUERY_FUSION,
            LONG_QUERY_FUSION,
            Fusion::Rrf { vector_weight: 1.0 },
        ] {
            // At 8% of the chunks embedded, BM25's answer stays first.
            assert_eq!(order(&fused(f.at_coverage(0.08)))[0], "dfa.rs:1", "{f:?}");
            // With no vectors, the order is BM25's.
            let bm25 = order(&fused(f.at_coverage(0.0)));
            assert_eq!(&bm25[..2], ["dfa.rs:1", "regex.rs:1"], "{f:?}");
        }
    }

    #[test]
    fn files_rank_by_best_chunk_plus_a_share_of_the_rest() {
        let ranked = vec![
            (hit("a.py", 1, "f"), 0.80),
            (hit("b.py", 1, "g"), 0.78),
            (hit("b.py", 10, "h"), 0.70),
            (hit("b.py", 20, "i"), 0.60),
            (hit("b.py", 30, "j"), 0.50),
            (hit("c.py", 1, "k"), 0.30),
        ];
        let none = FileSignals {
            accumulate: true,
            ..FileSignals::default()
        };
        // b's three other chunks lift it past a's single slightly better one,
        // and only `per_file` chunks of b are kept, grouped.
        assert_eq!(
            order(&rank_by_file(ranked.clone(), &none, 3)),
            ["b.py:1", "b.py:10", "b.py:20", "a.py:1", "c.py:1"]
        );
        // For a short query the best chunk alone decides.
        let short = FileSignals::default();
        assert_eq!(
            order(&rank_by_file(ranked.clone(), &short, 1)),
            ["a.py:1", "b.py:1", "c.py:1"]
        );
        // A named file, or a chunk defining a named symbol, moves up.
        let mut ranked = ranked;
        ranked[5].1 = 0.75;
        assert_eq!(
            order(&rank_by_file(ranked.clone(), &none, 1)),
            ["b.py:1", "a.py:1", "c.py:1"]
        );
        let named = FileSignals {
            named_files: HashSet::from(["c.py".to_string()]),
            names: HashSet::new(),
            accumulate: true,
            ..FileSignals::default()
        };
        assert_eq!(
            order(&rank_by_file(ranked.clone(), &named, 1)),
            ["c.py:1", "b.py:1", "a.py:1"]
        );
        let names = FileSignals {
            named_files: HashSet::new(),
            names: HashSet::from(["k".to_string()]),
            accumulate: true,
            ..FileSignals::default()
        };
        assert_eq!(
            order(&rank_by_file(ranked, &names, 1)),
            ["b.py:1", "c.py:1", "a.py:1"]
        );
    }

    #[test]
    fn named_paths_resolve_to_repository_files() {
        let files = [
            "sympy/core/basic.py",
            "sympy/printing/latex.py",
            "sympy/printing/__init__.py",
            "sympy/printing/tests/test_latex.py",
            "setup.py",
        ];
        let named = |names: &[&str]| {
            let mut v: Vec<String> = resolve_named_files(
                &names.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                files.iter().copied(),
            )
            .into_iter()
            .collect();
            v.sort();
            v
        };
        assert_eq!(named(&["core/basic.py"]), ["sympy/core/basic.py"]);
        assert_eq!(
            named(&["home/u/src/sympy/core/basic.py"]),
            ["sympy/core/basic.py"]
        );
        assert_eq!(
            named(&["sympy/printing/latex"]),
            ["sympy/printing/latex.py"]
        );
        // A class after the module: `sympy.printing.latex.LatexPrinter`.
        assert_eq!(
            named(&["sympy/printing/latex/LatexPrinter"]),
            ["sympy/printing/latex.py"]
        );
        assert_eq!(named(&["sympy/printing"]), ["sympy/printing/__init__.py"]);
        assert!(named(&["numpy/linalg"]).is_empty());
    }

    #[test]
    fn specific_definitions_weigh_more_than_common_ones() {
        let by_name: HashMap<String, HashSet<String>> = [
            ("nthroot_mod", vec!["residue_ntheory.py"]),
            (
                "__eq__",
                vec!["expr.py", "numbers.py", "basic.py", "residue_ntheory.py"],
            ),
        ]
        .into_iter()
        .map(|(n, files)| (n.to_string(), files.into_iter().map(String::from).collect()))
        .collect();
        let w = definition_weights(&by_name);
        assert_eq!(w["residue_ntheory.py"], 1.25);
        assert_eq!(w["expr.py"], 0.25);
        // In the file ranking, the file defining the specific name moves up.
        let ranked = vec![
            (hit("expr.py", 1, "Expr.__eq__"), 0.80),
            (hit("residue_ntheory.py", 1, "nthroot_mod"), 0.70),
        ];
        let signals = FileSignals {
            defined: w,
            accumulate: true,
            ..FileSignals::default()
        };
        assert_eq!(
            order(&rank_by_file(ranked, &signals, 1)),
            ["residue_ntheory.py:1", "expr.py:1"]
        );
    }

    #[test]
    fn title_words_match_path_parts() {
        let words: HashSet<String> = "vectors break pretty printing"
            .split(' ')
            .map(fold_word)
            .collect();
        assert_eq!(
            path_words_matched("sympy/printing/pretty/pretty.py", &words),
            2
        );
        assert_eq!(path_words_matched("sympy/vector/vector.py", &words), 1);
        assert_eq!(path_words_matched("sympy/core/numbers.py", &words), 0);
        assert_eq!(
            path_words_matched("lib/matplotlib/offsetbox.py", &["offsetbox".into()].into()),
            1
        );
        // Parts of a snake_case file name count too.
        assert_eq!(
            path_words_matched(
                "sklearn/compose/_column_transformer.py",
                &["transformer".into()].into()
            ),
            1
        );
        assert_eq!(fold_word("Classes"), "classe");
        assert_eq!(fold_word("axis"), "axi");
        assert_eq!(fold_word("class"), "class");
    }

    /// Found on pytest: `agent search getfixturevalue` ranked example
    /// fixtures and callers first, the definition out of the top 10.
    fn with_text(mut hit: Hit, text: &str) -> Hit {
        hit.row.text = text.into();
        hit
    }

    #[test]
    fn a_question_by_relation_ranks_the_code_using_the_name_first() {
        // Issue 53: "what calls minimize" gave `Minimizer::run`; the caller
        // at dense.rs:1262 never appeared.
        let definition = with_text(
            hit("src/dfa/minimize.rs", 60, "Minimizer::run"),
            "pub fn run(mut self) { ... }",
        );
        let defining = with_text(
            hit("src/dfa/dense.rs", 1250, "OwnedDFA::minimize"),
            "pub fn minimize(&mut self) { Minimizer::new(self).run(); }",
        );
        let caller = with_text(
            hit("src/dfa/dense.rs", 1262, "Builder::build_from_nfa"),
            "if self.config.get_minimize() { dfa.minimize(); }",
        );
        let a_test = with_text(
            hit("tests/dfa/suite.rs", 10, "minimized_matches"),
            "#[test]\nfn minimized_matches() { let mut d = dfa(); d.minimize(); }",
        );
        let unrelated = with_text(hit("src/util/lazy.rs", 5, "Lazy::get"), "minimizes");
        // A field read and a comment are no calls.
        let field = with_text(
            hit("src/dfa/dense.rs", 962, "Config::get_minimize"),
            "// minimize() is slow\npub fn get_minimize(&self) -> bool { self.minimize.unwrap_or(false) }",
        );
        let ranked = vec![
            (field, 0.95),
            (definition.clone(), 0.9),
            (defining.clone(), 0.8),
            (unrelated, 0.7),
            (a_test.clone(), 0.3),
        ];
        // The caller is a long function that names it once: not in the
        // legs' lists, only in the deeper search for the name, with a
        // chunk that mentions it in a comment only.
        let mention = with_text(
            hit("src/dfa/onepass.rs", 40, "Builder::build"),
            "// no minimize() here\nfn build() {}",
        );
        let out = order(&references_first(
            ranked.clone(),
            vec![defining.clone()],
            vec![caller.clone(), mention],
            query::Relation::Callers,
            "minimize",
        ));
        assert!(
            !out.contains(&"src/dfa/onepass.rs:40".to_string()),
            "{out:?}"
        );
        // regex-automata's tests call the config's `minimize(true)` over
        // and over; the library's one call is what the question is after.
        assert_eq!(
            &out[..3],
            [
                "src/dfa/dense.rs:1262",
                "tests/dfa/suite.rs:10",
                "src/dfa/dense.rs:1250"
            ],
            "the library's callers, the tests', then the definition: {out:?}"
        );
        let out = order(&references_first(
            ranked,
            vec![defining],
            vec![caller],
            query::Relation::Tests,
            "minimize",
        ));
        assert_eq!(out[0], "tests/dfa/suite.rs:10", "{out:?}");
        assert_eq!(out[1], "src/dfa/dense.rs:1250", "{out:?}");
    }

    #[test]
    fn how_x_chooses_y_ranks_the_code_that_builds_or_dispatches_on_y_first() {
        // Issue 53: "how does meta::Regex choose a strategy" gave
        // `Regex::is_accelerated`, which asks the strategy.
        let asks = with_text(
            hit("src/meta/regex.rs", 1700, "Regex::is_accelerated"),
            "pub fn is_accelerated(&self) -> bool { self.imp.strat.is_accelerated() }",
        );
        let chooser = with_text(
            hit("src/meta/strategy.rs", 100, "new"),
            "pub(super) fn new(\n    info: RegexInfo,\n) -> Result<Arc<dyn Strategy>, BuildError> {\n    if a { debug!(\"using {} strategy\", x); return x; }\n    if b { debug!(\"using {} strategy\", y); return y; }\n    if c { return z; }\n}",
        );
        let constructor = with_text(
            hit("src/meta/strategy.rs", 300, "Pre::new"),
            "fn new(pre: P) -> Arc<dyn Strategy> { Arc::new(Pre { pre }) }",
        );
        let dispatch = with_text(
            hit("src/py/engine.py", 10, "Engine.run"),
            "def run(self):\n    match self.kind:\n        case Strategy::Fast: pass\n        case Strategy::Slow: pass\n",
        );
        let one_option = with_text(
            hit("src/meta/strategy.rs", 1149, "ReverseSuffix::new"),
            "    if x { return Err(core); }\n    if y { return Err(core); }\n    if z { return Err(core); }",
        );
        let mentions = with_text(
            hit("src/meta/mod.rs", 1, "docs"),
            "// the strategy is chosen once: Strategy::new and Strategy::old",
        );
        let ranked = vec![
            (asks, 0.9),
            (one_option, 0.85),
            (mentions, 0.8),
            (constructor, 0.5),
            (dispatch, 0.3),
            (chooser, 0.2),
        ];
        let out = order(&deciders_first(ranked, "strategy"));
        assert_eq!(
            &out[..3],
            [
                "src/meta/strategy.rs:100",
                "src/py/engine.py:10",
                "src/meta/strategy.rs:300"
            ],
            "the deciders, most branches first: {out:?}"
        );
        assert_eq!(fold_name("start state"), fold_name("StartState"));
        assert_eq!(fold_name("start_state"), "startstate");
    }

    #[test]
    fn a_qualified_name_prefers_the_definition_inside_its_type() {
        // Issue 53: "what does Cache::reset do" had `Core::reset_cache`
        // first and the real `Cache::reset` fifth.
        let ranked = vec![
            (hit("src/meta/strategy.rs", 1, "Core::reset"), 0.9),
            (hit("src/hybrid/dfa.rs", 2, "Cache::reset"), 0.1),
        ];
        let defining = vec![
            hit("src/meta/strategy.rs", 1, "Core::reset"),
            hit("src/hybrid/dfa.rs", 2, "Cache::reset"),
        ];
        let out = order(&definitions_first(
            ranked,
            defining,
            "what does Cache::reset do",
        ));
        assert_eq!(out[0], "src/hybrid/dfa.rs:2", "{out:?}");
    }

    #[test]
    fn a_definition_of_the_named_identifier_ranks_first() {
        let ranked = vec![
            (hit("doc/en/example/fixtures.py", 1, "fixture_a"), 0.9),
            (hit("src/_pytest/python.py", 10, "call_it"), 0.8),
            (
                hit("testing/test_fixtures.py", 5, "test_getfixturevalue"),
                0.7,
            ),
            (
                hit(
                    "src/_pytest/fixtures.py",
                    568,
                    "FixtureRequest.getfixturevalue",
                ),
                0.1,
            ),
        ];
        let defining = vec![
            hit(
                "src/_pytest/fixtures.py",
                568,
                "FixtureRequest.getfixturevalue",
            ),
            hit("testing/helpers.py", 3, "Helper.getfixturevalue"),
        ];
        let out = order(&definitions_first(ranked, defining, "getfixturevalue"));
        assert_eq!(out[0], "src/_pytest/fixtures.py:568", "{out:?}");
        assert_eq!(out[1], "testing/helpers.py:3", "{out:?}");
        assert_eq!(out.len(), 5);
        // Nothing defines the names: the ranking is left alone.
        let ranked = vec![(hit("a.py", 1, "f"), 0.5), (hit("b.py", 1, "g"), 0.4)];
        assert_eq!(
            order(&definitions_first(ranked, Vec::new(), "x")),
            ["a.py:1", "b.py:1"]
        );
    }

    #[test]
    fn docs_rank_after_code_unless_asked_for() {
        let ranked = vec![
            ("README.md", 0.60),
            ("docs/api.rst", 0.55),
            ("src/app.py", 0.50),
        ];
        let q = "where is the app started";
        let out = code_first(ranked.clone(), q, |p| p);
        assert_eq!(out[0].0, "src/app.py");
        assert_eq!(code_first(ranked, "the docs", |p| p)[0].0, "README.md");
        // A much better doc still wins.
        let out = code_first(vec![("README.md", 0.9), ("src/app.py", 0.3)], q, |p| p);
        assert_eq!(out[0].0, "README.md");
        assert!(!wants_docs("where is the debug flag read"));
        assert!(wants_docs("what do the docs say about the debug flag"));
        assert!(wants_docs("What does this project do?"));
        assert!(is_doc("CHANGES.rst") && is_doc("README.md") && !is_doc("src/app.py"));
    }

    #[test]
    fn tests_rank_after_code_unless_asked_for() {
        for p in [
            "sympy/printing/tests/test_latex.py",
            "pkg/foo_test.go",
            "src/app.test.ts",
            "conftest.py",
            "spec/models/user_spec.rb",
        ] {
            assert!(is_test(p), "{p}");
        }
        for p in [
            "sympy/printing/latex.py",
            "src/testing_utils_not.rs",
            "latest.py",
        ] {
            assert!(!is_test(p), "{p}");
        }
        let ranked = vec![("pkg/tests/test_app.py", 0.6), ("pkg/app.py", 0.55)];
        assert_eq!(
            code_first(ranked.clone(), "app crashes", |p| p)[0].0,
            "pkg/app.py"
        );
        assert_eq!(
            code_first(ranked, "the app test fails", |p| p)[0].0,
            "pkg/tests/test_app.py"
        );
    }

    #[test]
    fn identifiers_split_on_case_underscores_and_digits() {
        assert_eq!(
            split_identifier("parseHTTPResponse2"),
            ["parse", "http", "response", "2"]
        );
        assert_eq!(split_identifier("max_file_bytes"), ["max", "file", "bytes"]);
        assert_eq!(split_identifier("LlamaEngine"), ["llama", "engine"]);
        assert_eq!(split_identifier("x"), ["x"]);
    }

    #[test]
    fn searchable_text_adds_identifier_parts_once() {
        let t = searchable_text(
            "src/kv_cache.rs",
            "reuse_prefix",
            "fn reuse_prefix() { reuse_prefix() }",
        );
        assert!(t.contains("kv cache"));
        assert_eq!(t.matches("reuse prefix").count(), 1);
        assert_eq!(
            searchable_query("where is loadModel"),
            "where is loadmodel load model"
        );
    }
}
