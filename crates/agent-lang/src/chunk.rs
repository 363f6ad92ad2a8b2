//! Splitting source files into chunks for embedding and search.
//!
//! Code is chunked along its syntax with tree-sitter: one chunk per function,
//! method, class, impl, trait or type, with doc comments and attributes kept
//! with the item they describe. A container too big for one chunk (an impl,
//! a class, a module) is split into its members, whose symbol path records
//! where they live (`Engine::load`, `Client.get`); a single function too big
//! for one chunk is split into line windows with a short overlap. Runs of
//! small top-level items (imports, constants) become one block, and tiny
//! neighbours are merged. Files without a grammar are cut into line windows,
//! at Markdown headings where there are any.
//!
//! Namespaces and modules (`namespace geo { .. }`, `module Checkout`) are
//! never chunks themselves: what they hold is chunked as if it stood at the
//! top, its symbol path starting with the namespace
//! (`geo::MeshSimplifier::collapseShortEdges`), so a search finds the class
//! and the method, not the wrapper.
//!
//! Every chunk fits `max_tokens` as counted by the embedder's own tokenizer,
//! which the caller passes in.

use serde::Serialize;
use tree_sitter::{Node, Parser};

use crate::lang::{Name, Syntax};
use crate::walk::Lang;

/// The chunker's version, recorded with every indexed file
/// (`agent_index::state`): files chunked by another version are chunked
/// again by the next update. Bump it with any change to the chunks a text
/// gives (boundaries, symbols, kinds, limits), here or in the indexer's call
/// (`agent_index::chunk_file`). Indexes from before it was recorded count as
/// version 0.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chunk {
    /// Enclosing symbol path, e.g. `LlamaEngine::load`; empty for module-level blocks.
    pub symbol: String,
    /// function, method, class, impl, trait, struct, enum, module, macro, const, type, block, lines.
    pub kind: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

#[derive(Debug, Clone, Copy)]
pub struct ChunkLimits {
    /// Most tokens of chunk text (the embedder's limit minus room for the header).
    pub max_tokens: usize,
    /// Neighbouring chunks both smaller than this are merged.
    pub min_tokens: usize,
    /// Lines repeated between consecutive windows of a split item.
    pub overlap_lines: usize,
}

impl Default for ChunkLimits {
    fn default() -> Self {
        Self {
            max_tokens: 224,
            min_tokens: 48,
            overlap_lines: 2,
        }
    }
}

/// Chunks `src`; never fails (unparsable code falls back to line windows).
pub fn chunk_source(
    lang: Lang,
    src: &str,
    limits: ChunkLimits,
    count: &dyn Fn(&str) -> usize,
) -> Vec<Chunk> {
    let mut chunker = Chunker {
        src,
        lines: line_starts(src),
        limits,
        count,
        separator: lang.spec().separator,
        out: Vec::new(),
    };
    let tree = lang.grammar().and_then(|g| {
        let mut parser = Parser::new();
        parser.set_language(&g).ok()?;
        parser.parse(src, None)
    });
    match tree {
        Some(tree) => {
            let root = tree.root_node();
            let children: Vec<Node> = named_children(root);
            chunker.items(lang, &children, &[], false, None);
        }
        None => chunker.text_windows(),
    }
    let merged = merge_small(chunker.out, limits, count);
    merged
        .into_iter()
        .filter(|c| !c.text.trim().is_empty())
        .collect()
}

struct Chunker<'a> {
    src: &'a str,
    /// Byte offset where each line starts.
    lines: Vec<usize>,
    limits: ChunkLimits,
    count: &'a dyn Fn(&str) -> usize,
    /// Joins symbol path parts: `::` for Rust, `.` for Python.
    separator: &'static str,
    out: Vec<Chunk>,
}

fn line_starts(src: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// What a syntax node means for chunking.
enum Role<'t> {
    /// A named item; `body` holds members when it is a container.
    Item {
        kind: &'static str,
        name: String,
        body: Option<Vec<Node<'t>>>,
    },
    /// Comments and attributes: they belong to the next item.
    Leading,
    /// Anything else (imports, statements, fields).
    Other,
    /// A node whose children stand in its place (`#ifdef` blocks).
    Transparent(Vec<Node<'t>>),
    /// A namespace: its members stand in its place, inside its name; `None`
    /// (`namespace Shop.Jobs;`) for the siblings after it.
    Namespace {
        name: String,
        members: Option<Vec<Node<'t>>>,
    },
}

impl<'a> Chunker<'a> {
    fn text(&self, start_line: usize, end_line: usize) -> String {
        // Lines are 0-based here; `end_line` inclusive.
        let start = self.lines[start_line];
        let end = self
            .lines
            .get(end_line + 1)
            .copied()
            .unwrap_or(self.src.len());
        self.src[start..end].trim_end_matches('\n').to_string()
    }

    fn role<'t>(&self, lang: Lang, node: Node<'t>) -> Role<'t> {
        let src = self.src.as_bytes();
        let field = |n: Node, f: &str| {
            n.child_by_field_name(f)
                .and_then(|c| c.utf8_text(src).ok())
                .map(str::to_string)
        };
        let body = |n: Node<'t>| n.child_by_field_name("body").map(named_children);
        match (lang, node.kind()) {
            (
                Lang::Rust,
                "line_comment" | "block_comment" | "attribute_item" | "inner_attribute_item",
            ) => Role::Leading,
            (Lang::Python, "comment") => Role::Leading,
            (Lang::Rust, "function_item" | "function_signature_item") => {
                item("function", field(node, "name"), None)
            }
            (Lang::Rust, "struct_item") => item("struct", field(node, "name"), None),
            (Lang::Rust, "enum_item") => item("enum", field(node, "name"), None),
            (Lang::Rust, "union_item") => item("struct", field(node, "name"), None),
            (Lang::Rust, "type_item") => item("type", field(node, "name"), None),
            (Lang::Rust, "const_item" | "static_item") => item("const", field(node, "name"), None),
            (Lang::Rust, "macro_definition") => item("macro", field(node, "name"), None),
            (Lang::Rust, "trait_item") => item("trait", field(node, "name"), body(node)),
            (Lang::Rust, "mod_item") => item("module", field(node, "name"), body(node)),
            (Lang::Rust, "impl_item") => {
                let ty = field(node, "type").map(|t| strip_generics(&t));
                item("impl", ty, body(node))
            }
            (Lang::Python, "function_definition") => item("function", field(node, "name"), None),
            (Lang::Python, "class_definition") => item("class", field(node, "name"), body(node)),
            (Lang::Python, "decorated_definition") => {
                match node.child_by_field_name("definition") {
                    Some(def) => match self.role(lang, def) {
                        Role::Item { kind, name, body } => Role::Item { kind, name, body },
                        _ => Role::Other,
                    },
                    None => Role::Other,
                }
            }
            _ => match lang.spec().syntax {
                Some(syntax) => self.table_role(syntax, node),
                None => Role::Other,
            },
        }
    }

    /// The role of a node in a table-driven language (`crate::lang`).
    fn table_role<'t>(&self, syntax: &Syntax, node: Node<'t>) -> Role<'t> {
        let kind = node.kind();
        if syntax.comments.contains(&kind) {
            return Role::Leading;
        }
        if node.is_error() {
            // Code the grammar could not follow (macros that open a
            // namespace, say): its items are still items.
            return Role::Transparent(named_children(node));
        }
        if let Some((_, field)) = syntax.transparent.iter().find(|(t, _)| *t == kind) {
            let children = match field {
                Some(field) => node
                    .child_by_field_name(field)
                    .map(named_children)
                    .unwrap_or_default(),
                // The condition line stays with the block before; the rest is chunked.
                None => named_children(node)
                    .into_iter()
                    .filter(|c| node.child_by_field_name("condition") != Some(*c))
                    .filter(|c| node.child_by_field_name("name") != Some(*c))
                    .collect(),
            };
            return Role::Transparent(children);
        }
        if syntax.namespaces.contains(&kind) {
            // `"express"` of `declare module "express"` names it too.
            let name = node
                .child_by_field_name("name")
                .and_then(|n| n.utf8_text(self.src.as_bytes()).ok())
                .map(|n| n.trim_matches(['"', '\'']).to_string());
            return Role::Namespace {
                name: name.unwrap_or_default(),
                members: node.child_by_field_name("body").map(named_children),
            };
        }
        if let Some((_, field)) = syntax.wrappers.iter().find(|(w, _)| *w == kind) {
            let inner = match *field {
                "*" => named_children(node).pop(),
                field => node.child_by_field_name(field),
            };
            return match inner {
                Some(inner) => match self.table_role(syntax, inner) {
                    role @ (Role::Item { .. } | Role::Namespace { .. }) => role,
                    _ => Role::Other,
                },
                None => Role::Other,
            };
        }
        let Some(rule) = syntax.items.iter().find(|i| i.node == kind) else {
            return Role::Other;
        };
        // `type_caster<std::function<R(A...)>>` → `type_caster`, as for Rust impls.
        let name = crate::lang::item_name(self.src, node, rule.name).map(|n| {
            if n.starts_with("operator") {
                n
            } else {
                strip_generics(&n)
            }
        });
        // Kotlin's `companion object { .. }` is called `Companion`.
        let name = name.or_else(|| (kind == "companion_object").then(|| "Companion".into()));
        if name.is_none() && matches!(rule.name, Name::FirstDeclarator | Name::Declarator) {
            // `struct { .. } x;`, destructuring: not an item of its own.
            return Role::Other;
        }
        let body = rule
            .body
            .and_then(|f| {
                node.child_by_field_name(f)
                    .or_else(|| named_children(node).into_iter().find(|c| c.kind() == f))
            })
            .map(named_children);
        item(rule.kind, name, body)
    }

    /// Chunks a sequence of sibling nodes inside `scope`, the members of a
    /// type when `in_type` (its functions are methods); `lead` is the first
    /// line of what goes with the first of them (a namespace's header).
    fn items<'t>(
        &mut self,
        lang: Lang,
        nodes: &[Node<'t>],
        scope: &[String],
        in_type: bool,
        lead: Option<usize>,
    ) {
        // A run of non-item lines waiting to become a block chunk, and where
        // the comments/attributes right before the next item begin.
        let mut block: Option<(usize, usize)> = None;
        let mut leading: Option<usize> = lead;
        for (i, &node) in nodes.iter().enumerate() {
            let (start, end) = (node.start_position().row, node.end_position().row);
            match self.role(lang, node) {
                Role::Leading => {
                    if leading.is_none() {
                        leading = Some(start);
                    }
                }
                Role::Other => {
                    if let Some(l) = leading.take() {
                        block = Some((block.map_or(l, |b| b.0), end.max(l)));
                    }
                    block = Some((block.map_or(start, |b| b.0), end));
                }
                Role::Transparent(children) => {
                    if let Some(l) = leading.take() {
                        block = Some((block.map_or(l, |b| b.0), l));
                    }
                    if let Some((bs, be)) = block.take() {
                        self.emit_block(scope, bs, be);
                    }
                    self.items(lang, &children, scope, in_type, None);
                }
                Role::Namespace { name, members } => {
                    // Its header (`namespace geo {`) goes with what comes first inside.
                    let lead = leading.take().unwrap_or(start);
                    if let Some((bs, be)) = block.take() {
                        self.emit_block(scope, bs, be);
                    }
                    let mut path = scope.to_vec();
                    path.push(name);
                    match members {
                        Some(members) if !members.is_empty() => {
                            self.items(lang, &members, &path, false, Some(lead))
                        }
                        Some(_) => self.emit_block(&path, lead, end),
                        None => return self.items(lang, &nodes[i + 1..], &path, false, Some(lead)),
                    }
                }
                Role::Item { kind, name, body } => {
                    let start = leading.take().unwrap_or(start);
                    if let Some((bs, be)) = block.take() {
                        self.emit_block(scope, bs, be.min(start.saturating_sub(1)).max(bs));
                    }
                    let mut path = scope.to_vec();
                    path.push(name);
                    self.item(lang, kind, &path, (start, end), body, in_type);
                }
            }
        }
        if let Some(l) = leading {
            block = Some((
                block.map_or(l, |b| b.0),
                nodes.last().map_or(l, |n| n.end_position().row),
            ));
        }
        if let Some((bs, be)) = block {
            self.emit_block(scope, bs, be);
        }
    }

    fn item<'t>(
        &mut self,
        lang: Lang,
        kind: &str,
        path: &[String],
        (start, end): (usize, usize),
        body: Option<Vec<Node<'t>>>,
        in_type: bool,
    ) {
        let text = self.text(start, end);
        let kind = if kind == "function" && in_type {
            "method"
        } else {
            kind
        };
        if (self.count)(&text) <= self.limits.max_tokens {
            self.push(path, kind, start, end, text);
            return;
        }
        match body.filter(|b| !b.is_empty()) {
            Some(members) => {
                // The container's own lines before its first member (signature,
                // fields) become a chunk of their own; members are chunked
                // inside the container's scope.
                let first = members[0].start_position().row;
                if first > start {
                    self.windows(path, kind, start, first - 1);
                }
                self.items(lang, &members, path, true, None);
            }
            None => self.windows(path, kind, start, end),
        }
    }

    fn emit_block(&mut self, scope: &[String], start: usize, end: usize) {
        let kind = "block";
        let text = self.text(start, end);
        if (self.count)(&text) <= self.limits.max_tokens {
            self.push(scope, kind, start, end, text);
        } else {
            self.windows(scope, kind, start, end);
        }
    }

    /// Splits lines `start..=end` into windows that fit, overlapping a little.
    fn windows(&mut self, path: &[String], kind: &str, start: usize, end: usize) {
        let mut first = start;
        while first <= end {
            let mut last = first;
            // Grow line by line; per-line counts keep this linear.
            let mut tokens = (self.count)(&self.text(first, first));
            while last < end {
                let next = (self.count)(&self.text(last + 1, last + 1));
                if tokens + next > self.limits.max_tokens {
                    break;
                }
                tokens += next;
                last += 1;
            }
            if kind == "lines" && last < end {
                last = self.natural_break(first, last);
            }
            let mut text = self.text(first, last);
            let mut exact = (self.count)(&text);
            // Per-line sums can undercount at line joins; shrink until exact.
            while last > first && exact > self.limits.max_tokens {
                last -= 1;
                text = self.text(first, last);
                exact = (self.count)(&text);
            }
            if exact > self.limits.max_tokens {
                text = truncate_to_fit(&text, self.limits.max_tokens, self.count);
            }
            self.push(path, kind, first, last, text);
            if last >= end {
                break;
            }
            first = (last + 1)
                .saturating_sub(self.limits.overlap_lines)
                .max(first + 1);
        }
    }

    /// Where a full window of a file without a grammar should end: after
    /// the last blank line in its second half, else before the last line
    /// that dedents to the window's first indentation (a new block), else
    /// where it is full (`last`).
    fn natural_break(&self, first: usize, last: usize) -> usize {
        let line = |i: usize| self.text(i, i);
        let indent = |l: &str| l.len() - l.trim_start().len();
        let floor = first + (last - first) / 2;
        if let Some(b) = (floor..last).rev().find(|&b| line(b).trim().is_empty()) {
            return b;
        }
        let base = indent(&line(first));
        (floor..last)
            .rev()
            .find(|&b| {
                let next = line(b + 1);
                !next.trim().is_empty() && indent(&next) <= base
            })
            .unwrap_or(last)
    }

    /// Line windows for files without a grammar, cut at Markdown headings.
    fn text_windows(&mut self) {
        let n = self.lines.len();
        if self.src.is_empty() {
            return;
        }
        let mut section_start = 0;
        let mut heading = String::new();
        let mut section_heading = String::new();
        for i in 0..=n {
            let is_heading = i < n && {
                let line = self.text(i, i);
                line.starts_with("# ") || line.starts_with("## ") || line.starts_with("### ")
            };
            if i == n || (is_heading && i > section_start) {
                let path: Vec<String> = if section_heading.is_empty() {
                    vec![]
                } else {
                    vec![section_heading.clone()]
                };
                self.windows(
                    &path,
                    "lines",
                    section_start,
                    i.saturating_sub(1).max(section_start),
                );
                section_start = i;
            }
            if is_heading {
                heading = self.text(i, i).trim_start_matches('#').trim().to_string();
            }
            if i == section_start {
                section_heading = heading.clone();
            }
        }
    }

    fn push(&mut self, path: &[String], kind: &str, start: usize, end: usize, text: String) {
        self.out.push(Chunk {
            symbol: path
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(self.separator),
            kind: kind.to_string(),
            start_line: start as u32 + 1,
            end_line: end as u32 + 1,
            text,
        });
    }
}

fn item<'t>(kind: &'static str, name: Option<String>, body: Option<Vec<Node<'t>>>) -> Role<'t> {
    Role::Item {
        kind,
        name: name.unwrap_or_default(),
        body,
    }
}

/// `Engine<'a, T>` → `Engine`: symbol paths name types, not instantiations.
fn strip_generics(ty: &str) -> String {
    ty.split('<').next().unwrap_or(ty).trim().to_string()
}

/// Cuts `text` by characters until it fits (a single enormous line).
fn truncate_to_fit(text: &str, max_tokens: usize, count: &dyn Fn(&str) -> usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if count(&chars[..mid].iter().collect::<String>()) <= max_tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    chars[..lo].iter().collect()
}

/// Merges adjacent chunks that are both small, while the result still fits.
fn merge_small(
    chunks: Vec<Chunk>,
    limits: ChunkLimits,
    count: &dyn Fn(&str) -> usize,
) -> Vec<Chunk> {
    let mut out: Vec<Chunk> = Vec::with_capacity(chunks.len());
    let mut last_tokens = 0;
    for chunk in chunks {
        let tokens = count(&chunk.text);
        if let Some(prev) = out.last_mut() {
            let adjacent =
                chunk.start_line > prev.end_line && chunk.start_line <= prev.end_line + 2;
            if adjacent && tokens < limits.min_tokens && last_tokens < limits.min_tokens {
                let joined = format!("{}\n{}", prev.text, chunk.text);
                let joined_tokens = count(&joined);
                if joined_tokens <= limits.max_tokens {
                    prev.text = joined;
                    prev.end_line = chunk.end_line;
                    if prev.symbol.is_empty() {
                        prev.symbol = chunk.symbol;
                    } else if !chunk.symbol.is_empty() && prev.symbol != chunk.symbol {
                        prev.symbol = format!("{}, {}", prev.symbol, chunk.symbol);
                    }
                    if prev.kind != chunk.kind {
                        prev.kind = "block".into();
                    }
                    last_tokens = joined_tokens;
                    continue;
                }
            }
        }
        last_tokens = tokens;
        out.push(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    fn limits(max: usize) -> ChunkLimits {
        ChunkLimits {
            max_tokens: max,
            min_tokens: 4,
            overlap_lines: 1,
        }
    }

    const RUST: &str = r#"use std::io;
use std::fmt;

/// Adds two numbers.
#[inline]
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

pub struct Engine {
    threads: usize,
}

impl Engine {
    /// Makes an engine with a lot of threads for the work that must be done.
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        Engine { threads }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }
}
"#;

    #[test]
    fn rust_items_become_chunks_with_doc_comments_attached() {
        let chunks = chunk_source(Lang::Rust, RUST, limits(200), &words);
        let add = chunks
            .iter()
            .find(|c| c.symbol == "add")
            .expect("add chunk");
        assert_eq!(add.kind, "function");
        assert!(
            add.text.starts_with("/// Adds two numbers.\n#[inline]"),
            "{}",
            add.text
        );
        assert_eq!((add.start_line, add.end_line), (4, 8));
        let imports = &chunks[0];
        assert_eq!(imports.kind, "block");
        assert!(imports.text.contains("use std::fmt;"));
        // Engine's impl fits whole at this budget.
        assert!(chunks
            .iter()
            .any(|c| c.symbol == "Engine" && c.kind == "impl"));
    }

    #[test]
    fn big_containers_split_into_members_with_symbol_paths() {
        let chunks = chunk_source(Lang::Rust, RUST, limits(20), &words);
        let new = chunks
            .iter()
            .find(|c| c.symbol == "Engine::new")
            .expect("method chunk");
        assert_eq!(new.kind, "method");
        assert!(new.text.contains("/// Makes an engine"));
        assert!(chunks.iter().all(|c| words(&c.text) <= 20), "{chunks:#?}");
    }

    #[test]
    fn huge_functions_split_into_overlapping_windows() {
        let body: String = (0..100)
            .map(|i| format!("    let v{i} = {i} + 1;\n"))
            .collect();
        let src = format!("fn big() {{\n{body}}}\n");
        let chunks = chunk_source(Lang::Rust, &src, limits(40), &words);
        assert!(chunks.len() > 3);
        assert!(chunks
            .iter()
            .all(|c| c.symbol == "big" && words(&c.text) <= 40));
        for pair in chunks.windows(2) {
            assert!(pair[1].start_line <= pair[0].end_line, "windows overlap");
        }
        assert_eq!(chunks.last().unwrap().end_line, 102);
    }

    const PYTHON: &str = r#"import os
import sys

CONSTANT = 3


class Client:
    """A client."""

    timeout = 5

    def get(self, url):
        """Fetch a URL."""
        return self.request("GET", url)

    @property
    def name(self):
        return "client"


def helper(x):
    # double it
    return x * 2
"#;

    #[test]
    fn python_classes_methods_and_decorators() {
        let chunks = chunk_source(Lang::Python, PYTHON, limits(12), &words);
        let get = chunks
            .iter()
            .find(|c| c.symbol == "Client.get")
            .expect("method");
        assert_eq!(get.kind, "method");
        let name = chunks
            .iter()
            .find(|c| c.symbol == "Client.name")
            .expect("decorated method");
        assert!(name.text.contains("@property"));
        let helper = chunks
            .iter()
            .find(|c| c.symbol.contains("helper"))
            .expect("function");
        assert!(helper.text.contains("return x * 2"));
        assert!(chunks.iter().all(|c| words(&c.text) <= 12), "{chunks:#?}");
    }

    #[test]
    fn small_neighbours_merge() {
        let src = "fn a() {}\nfn b() {}\nfn c() {}\n";
        let chunks = chunk_source(
            Lang::Rust,
            src,
            ChunkLimits {
                max_tokens: 100,
                min_tokens: 10,
                overlap_lines: 1,
            },
            &words,
        );
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].symbol, "a, b, c");
        assert_eq!((chunks[0].start_line, chunks[0].end_line), (1, 3));
    }

    #[test]
    fn markdown_is_cut_at_headings() {
        let src = "# Title\nintro text here\n## Install\nrun the script\n## Usage\ncall it\n";
        let chunks = chunk_source(
            Lang::Text,
            src,
            ChunkLimits {
                max_tokens: 100,
                min_tokens: 1,
                overlap_lines: 0,
            },
            &words,
        );
        let symbols: Vec<&str> = chunks.iter().map(|c| c.symbol.as_str()).collect();
        assert_eq!(symbols, ["Title", "Install", "Usage"]);
    }

    /// Code no grammar reads is cut where its blocks end: at blank lines,
    /// else where the indentation returns to the window's own.
    #[test]
    fn files_without_a_grammar_break_at_blank_lines_and_dedents() {
        let block = |name: &str| {
            format!("def {name}(x: Int): Int = {{\n  val y = x + 1\n  val z = y * 2\n  z - x\n}}\n")
        };
        let src = [block("one"), block("two"), block("three"), block("four")].join("\n");
        // Blocks of 5 lines and 18 words, blank lines between; a window
        // holds 40 words, so it ends at the blank line after one block (the
        // next starts there: one line of overlap).
        let chunks = chunk_source(Lang::Text, &src, limits(40), &words);
        let ranges: Vec<(u32, u32)> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
        assert_eq!(ranges, [(1, 6), (6, 12), (12, 18), (18, 24)]);
        for c in &chunks {
            let first = c.text.lines().find(|l| !l.trim().is_empty()).unwrap();
            assert!(
                first.starts_with("def "),
                "a window starts mid-block: {c:?}"
            );
        }
        // Without blank lines, a dedent is the break.
        let src = [block("one"), block("two"), block("three")].concat();
        let chunks = chunk_source(Lang::Text, &src, limits(40), &words);
        for c in &chunks {
            assert!(
                c.text.starts_with("def ") || c.text.starts_with("}"),
                "{c:?}"
            );
        }
    }

    #[test]
    fn broken_code_and_odd_input_never_panic() {
        for src in [
            "fn (((",
            "",
            "\n\n\n",
            "class :\n  def",
            &"x".repeat(10_000),
        ] {
            for lang in [Lang::Rust, Lang::Python, Lang::Text] {
                let chunks = chunk_source(lang, src, limits(30), &|s: &str| s.len() / 4 + 1);
                assert!(chunks.iter().all(|c| c.text.len() / 4 < 31));
            }
        }
    }

    #[test]
    fn real_source_file_chunks_fit() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/rust/engine.rs"
        ))
        .unwrap();
        let count = |s: &str| s.len().div_ceil(4);
        let chunks = chunk_source(Lang::Rust, &src, ChunkLimits::default(), &count);
        assert!(
            chunks.iter().any(|c| c.symbol == "LlamaEngine::load"),
            "{:?}",
            chunks.iter().map(|c| &c.symbol).collect::<Vec<_>>()
        );
        assert!(chunks.iter().all(|c| count(&c.text) <= 224));
        // Every line of the file is covered by some chunk (a split
        // container's lone closing brace carries nothing worth embedding).
        let lines = src.lines().count() as u32;
        let mut covered = vec![false; lines as usize + 1];
        for c in &chunks {
            for l in c.start_line..=c.end_line {
                covered[l as usize] = true;
            }
        }
        let uncovered: Vec<usize> = (1..=lines as usize)
            .filter(|&l| {
                !covered[l] && !matches!(src.lines().nth(l - 1).unwrap().trim(), "" | "}" | "};")
            })
            .collect();
        assert!(uncovered.is_empty(), "uncovered lines {uncovered:?}");
    }
}
