//! What tagging a file yields: its definitions (with signature line and
//! scope) and the identifiers it references. The data model shared by the
//! taggers ([`crate::tags`] for Rust and Python, [`crate::table_tags`] for the
//! table's languages) and the skeleton pre-pass; it depends on none of them.

use serde::{Deserialize, Serialize};

use agent_lang::walk::Lang;

/// Longest signature kept, in characters; longer ones end with `…`.
pub const MAX_SIGNATURE_CHARS: usize = 160;
/// Shorter identifiers are too ambiguous to count as references (`a`, `id`, `fn`).
pub const MIN_REF_LEN: usize = 3;
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefKind {
    Function,
    Method,
    Struct,
    Enum,
    Union,
    /// Type alias or associated type.
    Type,
    Trait,
    Class,
    Module,
    Macro,
    /// Rust `const`, Python module-level assignment.
    Constant,
    Static,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    Impl,
    /// `impl Trait for Type`: its methods are public through the trait.
    TraitImpl,
    Trait,
    Module,
    Class,
}

/// A block that encloses definitions: `impl Engine`, `pub trait Provider`, `class Foo(Base):`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    pub kind: ScopeKind,
    /// 1-based line of the block's first line.
    pub line: u32,
    /// The block's header, as rendered (same normalisation as signatures).
    pub text: String,
    /// Index of the enclosing scope in `FileTags::scopes`.
    pub parent: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Def {
    pub name: String,
    pub kind: DefKind,
    /// 1-based line of the definition's first line (after attributes/decorators).
    pub line: u32,
    /// The definition's head on one line: up to its body, whitespace collapsed.
    pub signature: String,
    /// Innermost enclosing scope (index in `FileTags::scopes`).
    pub scope: Option<u32>,
    /// The scope this definition itself opens (a trait, class or inline module
    /// that encloses other definitions), so the outline prints it once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens: Option<u32>,
    /// Visible outside its file: Rust `pub`/trait items, Python names without a leading `_`.
    pub public: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileTags {
    /// In source order.
    pub defs: Vec<Def>,
    pub scopes: Vec<Scope>,
    /// Referenced identifiers with their number of occurrences, sorted by name.
    pub refs: Vec<(String, u32)>,
    /// Names brought in by `use` declarations (Rust), in source order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<Import>,
}

/// A name a file imports and the module path it comes from:
/// `use crate::hybrid::dfa::{Cache, DFA};` gives `Cache` from
/// `crate::hybrid::dfa` (see [`crate::imports`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// The imported name (not its alias); `*` for a glob.
    pub name: String,
    /// Its module path, `::`-separated as written (`crate`, `self`, `super` kept).
    pub path: String,
    /// `pub use`: re-exported from this module.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub public: bool,
}

impl FileTags {
    /// Scope indices enclosing `def`, outermost first.
    pub fn scope_chain(&self, def: &Def) -> Vec<u32> {
        let mut chain = Vec::new();
        let mut cur = def.scope;
        while let Some(i) = cur {
            chain.push(i);
            cur = self.scopes.get(i as usize).and_then(|s| s.parent);
        }
        chain.reverse();
        chain
    }

    /// Scope headers enclosing `def`, outermost first (e.g. `["mod tests", "impl Foo"]`).
    pub fn scope_names(&self, def: &Def) -> Vec<&str> {
        self.scope_chain(def)
            .into_iter()
            .map(|i| self.scopes[i as usize].text.as_str())
            .collect()
    }

    /// Occurrences of `name` among the references.
    pub fn ref_count(&self, name: &str) -> u32 {
        self.refs
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .map_or(0, |i| self.refs[i].1)
    }
}

/// Collapses a multi-line head into one readable line:
/// `fn f(\n    a: A,\n) -> B {` becomes `fn f(a: A) -> B`.
pub fn squash(text: &str, lang: Lang) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_SIGNATURE_CHARS + 8));
    for line in text.lines() {
        // A line comment inside a multi-line Rust signature would swallow the rest.
        let line = match (lang, line.find("//")) {
            (Lang::Rust, Some(i)) => &line[..i],
            _ => line,
        };
        for word in line.split_whitespace() {
            let glue = matches!(out.chars().last(), Some('(' | '[' | '<') | None)
                || word.starts_with([')', ']', '>', ','])
                || (out.ends_with(',') && word.starts_with([')', ']']));
            if !glue {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    // Trailing commas before a closing bracket: `(a: A,)` → `(a: A)`.
    for (from, to) in [(",)", ")"), (",]", "]"), (",>", ">")] {
        if out.contains(from) {
            out = out.replace(from, to);
        }
    }
    let trimmed = out.trim_end_matches(['{', ';', ' ']);
    let trimmed = if lang == Lang::Rust {
        trimmed
    } else {
        trimmed.trim_end()
    };
    truncate(trimmed, MAX_SIGNATURE_CHARS)
}

pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        None => s.to_string(),
        Some((i, _)) => format!("{}…", s[..i].trim_end()),
    }
}
