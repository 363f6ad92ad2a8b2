//! Query side: identifier-aware text for BM25, and hybrid rank fusion.

use std::collections::HashMap;

use serde::Serialize;

use super::store::Hit;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Vector and BM25 results fused by reciprocal rank.
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
    /// How hybrid mode merges the two lists.
    pub fusion: Fusion,
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
}

impl std::str::FromStr for Fusion {
    type Err = String;
    /// `rrf:W` or `linear:W`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, w) = s
            .split_once(':')
            .ok_or_else(|| format!("{s}: expected rrf:W or linear:W"))?;
        let w: f32 = w.parse().map_err(|_| format!("{s}: bad weight"))?;
        match kind {
            "rrf" => Ok(Fusion::Rrf { vector_weight: w }),
            "linear" => Ok(Fusion::Linear { text_weight: w }),
            _ => Err(format!("{s}: expected rrf:W or linear:W")),
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
            fusion: super::DEFAULT_FUSION,
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
    query
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| WORDS.contains(&w.to_ascii_lowercase().as_str()))
}

/// Re-ranks so code comes before documentation of similar score: a doc
/// chunk's score is scaled by [`DOC_WEIGHT`]. The sort is stable.
pub fn code_first<T>(mut ranked: Vec<(T, f32)>, path: impl Fn(&T) -> &str) -> Vec<(T, f32)> {
    for (hit, score) in ranked.iter_mut() {
        if is_doc(path(hit)) {
            *score = if *score >= 0.0 {
                *score * DOC_WEIGHT
            } else {
                *score / DOC_WEIGHT
            };
        }
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_rank_after_code_unless_asked_for() {
        let ranked = vec![
            ("README.md", 0.60),
            ("docs/api.rst", 0.55),
            ("src/app.py", 0.50),
        ];
        let out = code_first(ranked, |p| p);
        assert_eq!(out[0].0, "src/app.py");
        // A much better doc still wins.
        let out = code_first(vec![("README.md", 0.9), ("src/app.py", 0.3)], |p| p);
        assert_eq!(out[0].0, "README.md");
        assert!(!wants_docs("where is the debug flag read"));
        assert!(wants_docs("what do the docs say about the debug flag"));
        assert!(wants_docs("What does this project do?"));
        assert!(is_doc("CHANGES.rst") && is_doc("README.md") && !is_doc("src/app.py"));
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
