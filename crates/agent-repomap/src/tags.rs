//! Tags: the definitions and references of one source file, from tree-sitter.
//!
//! Tree-sitter parses the file's skeleton ([`super::skeleton`]: bodies,
//! comments, attributes and `use` lines cut out, their references collected
//! lexically); the whole file only when the lexer cannot follow it.
//!
//! Our queries are a superset of the grammars' shipped `TAGS_QUERY` (a test
//! checks this): they add consts/statics, trait method signatures, associated
//! types, scoped calls (`Foo::new`), type uses, `use`/`import` names and, for
//! Rust, identifiers inside macro arguments. Rust items written inside
//! item-level macros (`cfg_rt! { pub fn spawn() .. }`, common in real crates)
//! are only token trees to the grammar, so their bodies are parsed again as
//! items with `set_included_ranges`, keeping real byte and line positions.

use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

use tree_sitter::{Language, Node, Parser, Query, QueryCursor, Range, StreamingIterator};

use agent_lang::walk::Lang;

pub use crate::defs::{
    squash, Def, DefKind, FileTags, Scope, ScopeKind, MAX_SIGNATURE_CHARS, MIN_REF_LEN,
};

/// How many levels of macros-inside-macros are parsed as items.
const MAX_MACRO_DEPTH: usize = 4;

/// Whether files of this language get tags.
pub fn is_taggable(lang: Lang) -> bool {
    // Every table language whose grammar is built in has a tags query (a
    // test in `lang` checks it); the query itself is compiled on first use.
    matches!(lang, Lang::Rust | Lang::Python)
        || (lang.spec().syntax.is_some() && lang.grammar().is_some())
}

/// Definitions, item-level macro invocations (their bodies are parsed again
/// as items) and the item lists to descend into (`@items`). The query runs on
/// one item list at a time, matching only at its top level
/// (`LangQuery::item_depth`), so it never walks signatures or bodies (nor
/// error nodes: items of macros with their own syntax, like
/// `mock! { pub File { .. } }`, are not found).
const RUST_DEFS_QUERY: &str = r#"
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.union
(type_item name: (type_identifier) @name) @def.type
(associated_type name: (type_identifier) @name) @def.type
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(trait_item name: (type_identifier) @name) @def.trait
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.macro
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.static

(macro_invocation) @macro

(impl_item body: (declaration_list) @items)
(trait_item body: (declaration_list) @items)
(mod_item body: (declaration_list) @items)
(foreign_mod_item body: (declaration_list) @items)
"#;

/// References, for files parsed whole (a skeleton's references are lexical).
const RUST_REFS_QUERY: &str = r#"
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(generic_function function: (identifier) @ref)
(generic_function function: (field_expression field: (field_identifier) @ref))
(scoped_identifier name: (identifier) @ref)
(scoped_identifier path: (identifier) @ref)
(scoped_type_identifier path: (identifier) @ref)
(scoped_use_list path: (identifier) @ref)
(use_list (identifier) @ref)
(use_as_clause path: (identifier) @ref)
(use_declaration argument: (identifier) @ref)
(macro_invocation macro: (identifier) @ref)
(type_identifier) @ref
(token_tree (identifier) @ref.macro_arg)
"#;

const PYTHON_DEFS_QUERY: &str = r#"
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.constant))
"#;

const PYTHON_REFS_QUERY: &str = r#"
(call function: (identifier) @ref)
(call function: (attribute attribute: (identifier) @ref))
(decorator (identifier) @ref)
(decorator (attribute attribute: (identifier) @ref))
(type (identifier) @ref)
(type (attribute attribute: (identifier) @ref))
(generic_type (identifier) @ref)
(class_definition superclasses: (argument_list (identifier) @ref))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @ref)))
(except_clause (identifier) @ref)
(import_from_statement module_name: (dotted_name (identifier) @ref))
(import_from_statement module_name: (relative_import (dotted_name (identifier) @ref)))
(import_from_statement name: (dotted_name (identifier) @ref))
(aliased_import name: (dotted_name (identifier) @ref))
(import_statement name: (dotted_name (identifier) @ref))
"#;

/// The compiled queries of one language and the meaning of their captures.
struct LangQuery {
    language: Language,
    defs: Query,
    name: u32,
    /// Item-level macro invocation (Rust only).
    macro_call: Option<u32>,
    /// An item list to descend into (Rust only).
    items: Option<u32>,
    /// Capture index → definition kind.
    kinds: Vec<Option<DefKind>>,
    /// How deep below the node it runs on the defs query starts matches:
    /// Rust items sit right under their list; Python definitions also inside
    /// `if`/`try` blocks and decorators, so Python scans the whole tree.
    item_depth: Option<u32>,
    refs_source: &'static str,
    /// Compiled on first use: only files the lexer cannot follow need it.
    refs: OnceLock<RefsQuery>,
}

struct RefsQuery {
    query: Query,
    reference: u32,
    /// An identifier inside macro arguments (Rust only).
    macro_arg: Option<u32>,
}

impl LangQuery {
    #[allow(
        clippy::expect_used,
        reason = "the query texts are constants checked by the tests: failing here is a bug"
    )]
    fn new(
        language: Language,
        defs: &str,
        refs_source: &'static str,
        item_depth: Option<u32>,
    ) -> LangQuery {
        // The query texts are constants checked by the tests: failing here is a bug.
        let query = Query::new(&language, defs).expect("built-in tags query is valid");
        let names = query.capture_names();
        let index = |n: &str| names.iter().position(|c| *c == n).map(|i| i as u32);
        let kinds = names
            .iter()
            .map(|c| {
                Some(match c.strip_prefix("def.")? {
                    "function" => DefKind::Function,
                    "struct" => DefKind::Struct,
                    "enum" => DefKind::Enum,
                    "union" => DefKind::Union,
                    "type" => DefKind::Type,
                    "trait" => DefKind::Trait,
                    "class" => DefKind::Class,
                    "module" => DefKind::Module,
                    "macro" => DefKind::Macro,
                    "constant" => DefKind::Constant,
                    "static" => DefKind::Static,
                    other => panic!("unknown capture def.{other}"),
                })
            })
            .collect();
        LangQuery {
            name: index("name").expect("@name capture"),
            macro_call: index("macro"),
            items: index("items"),
            kinds,
            item_depth,
            refs_source,
            refs: OnceLock::new(),
            language,
            defs: query,
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "the query texts are constants checked by the tests: failing here is a bug"
    )]
    fn refs(&self) -> &RefsQuery {
        self.refs.get_or_init(|| {
            let query =
                Query::new(&self.language, self.refs_source).expect("built-in refs query is valid");
            RefsQuery {
                reference: query.capture_index_for_name("ref").expect("@ref capture"),
                macro_arg: query.capture_index_for_name("ref.macro_arg"),
                query,
            }
        })
    }
}

/// Queries are compiled once per process and shared by all threads (`Query` is `Sync`).
fn lang_query(lang: Lang) -> Option<&'static LangQuery> {
    static RUST: OnceLock<LangQuery> = OnceLock::new();
    static PYTHON: OnceLock<LangQuery> = OnceLock::new();
    match lang {
        Lang::Rust => {
            let grammar = Lang::Rust.grammar()?;
            Some(
                RUST.get_or_init(|| {
                    LangQuery::new(grammar, RUST_DEFS_QUERY, RUST_REFS_QUERY, Some(1))
                }),
            )
        }
        Lang::Python => {
            let grammar = Lang::Python.grammar()?;
            Some(PYTHON.get_or_init(|| {
                LangQuery::new(grammar, PYTHON_DEFS_QUERY, PYTHON_REFS_QUERY, None)
            }))
        }
        _ => None,
    }
}

/// Extracts tags; one per thread, since a `Parser` must not be shared.
#[derive(Default)]
pub struct Tagger {
    rust: Option<Parser>,
    python: Option<Parser>,
    /// Parsers of the table-driven languages (`table_tags`).
    others: HashMap<Lang, Parser>,
    cursor: QueryCursor,
}

impl Tagger {
    pub fn new() -> Tagger {
        Tagger::default()
    }

    /// Tags of `src`; empty for languages without a grammar or text the parser gives up on.
    ///
    /// Function bodies and comments are cut out lexically first (see
    /// [`skeleton`](super::skeleton)) and tree-sitter parses the rest; if the
    /// lexer cannot follow the file, the whole file is parsed.
    pub fn tag(&mut self, lang: Lang, src: &str) -> FileTags {
        let mut refs: HashMap<&str, u32> = HashMap::default();
        let mut count = |r| *refs.entry(r).or_insert(0) += 1;
        let skeleton = match lang {
            Lang::Rust => super::skeleton::rust(src, &mut count),
            Lang::Python => super::skeleton::python(src, &mut count),
            Lang::Text => return FileTags::default(),
            _ => return super::table_tags::tag(&mut self.others, &mut self.cursor, lang, src),
        };
        let mut tags = match skeleton {
            Some(text) => self.tag_text(lang, &text, Some(refs)),
            None => self.tag_whole(lang, src),
        };
        if lang == Lang::Rust {
            tags.imports = super::imports::rust(src);
        }
        tags
    }

    /// Tags of the file at `rel`: [`Tagger::tag`], and for code in a
    /// language without a grammar ([`agent_lang::lang::is_untagged_code`]) its
    /// identifiers as references.
    pub fn tag_file(&mut self, lang: Lang, rel: &str, src: &str) -> FileTags {
        if lang == Lang::Text && agent_lang::lang::is_untagged_code(std::path::Path::new(rel)) {
            return FileTags {
                refs: lexical_refs(src),
                ..FileTags::default()
            };
        }
        self.tag(lang, src)
    }

    /// Tags of `src` parsed whole, references from tree-sitter queries too,
    /// without the skeleton pre-pass: slower; the fallback of [`Tagger::tag`]
    /// and its reference in tests.
    pub fn tag_whole(&mut self, lang: Lang, src: &str) -> FileTags {
        self.tag_text(lang, src, None)
    }

    /// `lexical_refs`: the file's references when the lexer found them all,
    /// `None` to take them from the trees.
    fn tag_text<'s>(
        &mut self,
        lang: Lang,
        src: &'s str,
        lexical_refs: Option<HashMap<&'s str, u32>>,
    ) -> FileTags {
        let Some(lq) = lang_query(lang) else {
            return FileTags::default();
        };
        let slot = if lang == Lang::Rust {
            &mut self.rust
        } else {
            &mut self.python
        };
        #[allow(
            clippy::expect_used,
            reason = "both grammars are built with this tree-sitter's ABI"
        )]
        let parser = slot.get_or_insert_with(|| {
            let mut p = Parser::new();
            p.set_language(&lq.language)
                .expect("grammar ABI is supported by tree-sitter 0.25");
            p
        });
        let query_refs = lexical_refs.is_none();
        let mut b = Builder::new(src, lang, lexical_refs.unwrap_or_default());
        // Layer 0 is the whole file; each further layer parses the bodies of the
        // item-level macros found in the previous one.
        let mut layer: Vec<MacroBody> = Vec::new();
        for depth in 0..=MAX_MACRO_DEPTH {
            if depth > 0 {
                if layer.is_empty() {
                    break;
                }
                let ranges: Vec<Range> = layer.iter().map(|m| m.range).collect();
                if parser.set_included_ranges(&ranges).is_err() {
                    break;
                }
            }
            let Some(tree) = parser.parse(src, None) else {
                break;
            };
            let outer = std::mem::take(&mut layer);
            b.collect(lq, &mut self.cursor, tree.root_node(), &outer, &mut layer);
            if query_refs {
                b.collect_refs(lq, &mut self.cursor, tree.root_node(), &layer);
            }
        }
        if lang == Lang::Rust {
            // Back to the whole document for the next file.
            let _ = parser.set_included_ranges(&[]);
        }
        b.finish()
    }
}

/// The inside of an item-level macro's `{ .. }`, to be parsed as items.
struct MacroBody {
    range: Range,
    /// Scope enclosing the macro invocation (e.g. the `impl` it sits in).
    scope: Option<u32>,
}

#[derive(Clone, Copy)]
enum Container {
    /// Encloses definitions that belong in the outline.
    Scope(ScopeKind),
    /// A function body or initialiser: definitions inside are local, not API.
    Local,
    /// Anything else: look further up.
    Transparent,
}

fn container(lang: Lang, node: Node) -> Container {
    match (lang, node.kind()) {
        (Lang::Rust, "impl_item") => {
            Container::Scope(if node.child_by_field_name("trait").is_some() {
                ScopeKind::TraitImpl
            } else {
                ScopeKind::Impl
            })
        }
        (Lang::Rust, "trait_item") => Container::Scope(ScopeKind::Trait),
        (Lang::Rust, "mod_item") => Container::Scope(ScopeKind::Module),
        (
            Lang::Rust,
            "function_item" | "closure_expression" | "const_item" | "static_item"
            | "macro_definition",
        ) => Container::Local,
        (Lang::Python, "class_definition") => Container::Scope(ScopeKind::Class),
        (Lang::Python, "function_definition" | "lambda") => Container::Local,
        _ => Container::Transparent,
    }
}

struct Builder<'s> {
    src: &'s str,
    lang: Lang,
    tags: FileTags,
    /// Tree node id → scope index, for the tree being collected (ids are per tree).
    scope_ids: HashMap<usize, u32>,
    refs: HashMap<&'s str, u32>,
}

impl<'s> Builder<'s> {
    fn new(src: &'s str, lang: Lang, refs: HashMap<&'s str, u32>) -> Self {
        Builder {
            src,
            lang,
            tags: FileTags::default(),
            scope_ids: HashMap::default(),
            refs,
        }
    }

    fn text(&self, node: Node) -> &'s str {
        &self.src[node.byte_range()]
    }

    /// Finds the definitions of one tree: the defs query runs on the root and
    /// then on each item list it reports. `outer` are the macro bodies this
    /// tree was parsed from (empty for the whole file); item-level macros found
    /// here go to `next`.
    fn collect(
        &mut self,
        lq: &LangQuery,
        cursor: &mut QueryCursor,
        root: Node,
        outer: &[MacroBody],
        next: &mut Vec<MacroBody>,
    ) {
        self.scope_ids.clear();
        let mut opened: Vec<(usize, usize)> = Vec::new(); // (def index, def node id)
        let mut lists = vec![root];
        while let Some(list) = lists.pop() {
            cursor.set_max_start_depth(lq.item_depth);
            let mut matches = cursor.matches(&lq.defs, list, self.src.as_bytes());
            while let Some(m) = matches.next() {
                let (mut name, mut def) = (None, None);
                for c in m.captures {
                    if c.index == lq.name {
                        name = Some(c.node);
                    } else if Some(c.index) == lq.items {
                        lists.push(c.node);
                    } else if Some(c.index) == lq.macro_call {
                        if let Some(body) = self.macro_body(c.node, outer) {
                            next.push(body);
                        }
                    } else if let Some(kind) = lq.kinds[c.index as usize] {
                        def = Some((kind, c.node));
                    }
                }
                if let (Some(name), Some((kind, node))) = (name, def) {
                    if let Some(i) = self.add_def(kind, node, name, outer) {
                        opened.push((i, node.id()));
                    }
                }
            }
        }
        // Item lists are visited out of order; macro bodies must be in order.
        next.sort_by_key(|m| m.range.start_byte);
        // Link trait/class/module definitions to the scope they open.
        for (i, id) in opened {
            self.tags.defs[i].opens = self.scope_ids.get(&id).copied();
        }
    }

    /// References of one tree from the refs query (files parsed whole).
    /// `macros` are the item-level macro bodies found in it: identifiers in
    /// macro arguments count, except there, where the items parsed from them
    /// count instead.
    fn collect_refs(
        &mut self,
        lq: &LangQuery,
        cursor: &mut QueryCursor,
        root: Node,
        macros: &[MacroBody],
    ) {
        let rq = lq.refs();
        cursor.set_max_start_depth(None);
        let mut matches = cursor.matches(&rq.query, root, self.src.as_bytes());
        while let Some(m) = matches.next() {
            for c in m.captures {
                let in_macro_body = || {
                    let at = c.node.start_byte();
                    macros
                        .iter()
                        .any(|m| (m.range.start_byte..m.range.end_byte).contains(&at))
                };
                if c.index == rq.reference || (Some(c.index) == rq.macro_arg && !in_macro_body()) {
                    self.add_ref(c.node);
                }
            }
        }
    }

    fn add_ref(&mut self, node: Node) {
        let name = self.text(node);
        if name.len() >= MIN_REF_LEN {
            *self.refs.entry(name).or_insert(0) += 1;
        }
    }

    /// Scope of the outer (macro) layer that contains byte `pos`.
    fn outer_scope(outer: &[MacroBody], pos: usize) -> Option<u32> {
        outer
            .iter()
            .find(|m| (m.range.start_byte..m.range.end_byte).contains(&pos))
            .and_then(|m| m.scope)
    }

    /// The innermost scope enclosing `node`, creating scope entries on the way;
    /// `None` when `node` is local to a function.
    fn scope_of(&mut self, node: Node, outer: &[MacroBody]) -> Option<Option<u32>> {
        let mut cur = node.parent();
        while let Some(p) = cur {
            match container(self.lang, p) {
                Container::Local => return None,
                Container::Transparent => cur = p.parent(),
                Container::Scope(kind) => {
                    if let Some(&id) = self.scope_ids.get(&p.id()) {
                        return Some(Some(id));
                    }
                    let parent = self.scope_of(p, outer)?;
                    let id = self.tags.scopes.len() as u32;
                    self.tags.scopes.push(Scope {
                        kind,
                        line: p.start_position().row as u32 + 1,
                        text: self.header(p),
                        parent,
                    });
                    self.scope_ids.insert(p.id(), id);
                    return Some(Some(id));
                }
            }
        }
        Some(Self::outer_scope(outer, node.start_byte()))
    }

    fn add_def(
        &mut self,
        kind: DefKind,
        node: Node,
        name: Node,
        outer: &[MacroBody],
    ) -> Option<usize> {
        let scope = self.scope_of(node, outer)?;
        let name = self.text(name);
        let scope_kind = scope.map(|i| self.tags.scopes[i as usize].kind);
        let kind = match (kind, scope_kind) {
            (
                DefKind::Function,
                Some(ScopeKind::Impl | ScopeKind::TraitImpl | ScopeKind::Trait | ScopeKind::Class),
            ) => DefKind::Method,
            (k, _) => k,
        };
        let public = match self.lang {
            Lang::Python => {
                !name.starts_with('_') || (name.starts_with("__") && name.ends_with("__"))
            }
            _ => {
                matches!(scope_kind, Some(ScopeKind::Trait | ScopeKind::TraitImpl))
                    || kind == DefKind::Macro // macro_rules! are used by name across the crate
                    || has_visibility(node)
            }
        };
        if self.lang == Lang::Python && kind == DefKind::Constant && name.starts_with("__") {
            return None; // __all__, __version__: bookkeeping, not API
        }
        if self.lang == Lang::Python && self.is_overload(node) {
            return None; // a typing stub: the implementation below is the entry
        }
        self.tags.defs.push(Def {
            name: name.to_string(),
            kind,
            line: node.start_position().row as u32 + 1,
            signature: self.header(node),
            scope,
            opens: None,
            public,
        });
        Some(self.tags.defs.len() - 1)
    }

    /// The `{ .. }` body of an item-level macro invocation, or `None` when the
    /// macro is local to a function, has no braces or nothing inside.
    fn macro_body(&mut self, node: Node, outer: &[MacroBody]) -> Option<MacroBody> {
        let tt = node.child(node.child_count().checked_sub(1)?)?;
        if tt.kind() != "token_tree" || tt.child_count() < 3 {
            return None;
        }
        let (open, close) = (tt.child(0)?, tt.child(tt.child_count() - 1)?);
        if open.kind() != "{" || close.kind() != "}" {
            return None;
        }
        let scope = self.scope_of(node, outer)?;
        Some(MacroBody {
            range: Range {
                start_byte: open.end_byte(),
                end_byte: close.start_byte(),
                start_point: open.end_position(),
                end_point: close.start_position(),
            },
            scope,
        })
    }

    /// One-line head of a definition or block: its text up to the body,
    /// whitespace collapsed, trailing `{`/`;` dropped, at most `MAX_SIGNATURE_CHARS`.
    fn header(&self, node: Node) -> String {
        let start = node.start_byte();
        let mut end = node.end_byte();
        if node.kind() == "macro_definition" {
            // `macro_rules! name`: the rules are no signature.
            end = node
                .child_by_field_name("name")
                .map_or(end, |n| n.end_byte());
        }
        let multiline = node.start_position().row != node.end_position().row;
        if let Some(body) = node.child_by_field_name("body") {
            if matches!(
                body.kind(),
                "block" | "declaration_list" | "field_declaration_list" | "enum_variant_list"
            ) {
                end = body.start_byte();
            }
            // Python: stop at the header's `:`; a comment after it would come along.
            if self.lang == Lang::Python {
                let colon = (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .take_while(|c| c.start_byte() < body.start_byte())
                    .filter(|c| c.kind() == ":")
                    .last();
                if let Some(colon) = colon {
                    end = colon.end_byte();
                }
            }
        } else if multiline {
            // Long initialisers and macro bodies: keep the part before the value.
            let cut = match node.kind() {
                "const_item" | "static_item" => node.child_by_field_name("value"),
                "assignment" => node.child_by_field_name("right"),
                _ => None,
            };
            if let Some(cut) = cut {
                let head = self.src[start..cut.start_byte()]
                    .trim_end()
                    .trim_end_matches('=');
                return squash(head, self.lang);
            }
        }
        squash(&self.src[start..end], self.lang)
    }

    /// A Python `def` under `@overload` (or `@typing.overload`).
    fn is_overload(&self, node: Node) -> bool {
        let Some(parent) = node.parent().filter(|p| p.kind() == "decorated_definition") else {
            return false;
        };
        let mut cursor = parent.walk();
        let found = parent.children(&mut cursor).any(|child| {
            child.kind() == "decorator"
                && matches!(
                    self.text(child).trim_start_matches('@').trim(),
                    "overload" | "typing.overload" | "t.overload"
                )
        });
        found
    }

    fn finish(mut self) -> FileTags {
        let python = self.lang == Lang::Python;
        let mut refs: Vec<(String, u32)> = self
            .refs
            .into_iter()
            .filter(|(k, _)| !(python && is_python_builtin(k)))
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        refs.sort_unstable();
        self.tags.refs = refs;
        // Query matches arrive in document order per layer; macro layers add
        // definitions later, so restore source order across layers.
        let mut order: Vec<usize> = (0..self.tags.defs.len()).collect();
        order.sort_by_key(|&i| (self.tags.defs[i].line, i));
        if order.iter().enumerate().any(|(pos, &i)| pos != i) {
            let defs = std::mem::take(&mut self.tags.defs);
            let mut slots: Vec<Option<Def>> = defs.into_iter().map(Some).collect();
            self.tags.defs = order.into_iter().filter_map(|i| slots[i].take()).collect();
        }
        self.tags
    }
}

/// Names Python code uses from the language itself (builtins, `typing`):
/// `str(x)` calls the builtin, not a project's `LineMatcher.str`, and
/// `from typing import TYPE_CHECKING` is no use of a module's own
/// `TYPE_CHECKING = False`; counted, they put such definitions atop the map.
fn is_python_builtin(name: &str) -> bool {
    matches!(
        name,
        "str"
            | "int"
            | "float"
            | "bool"
            | "bytes"
            | "list"
            | "dict"
            | "set"
            | "frozenset"
            | "tuple"
            | "type"
            | "object"
            | "len"
            | "range"
            | "print"
            | "isinstance"
            | "issubclass"
            | "getattr"
            | "setattr"
            | "hasattr"
            | "delattr"
            | "super"
            | "repr"
            | "hash"
            | "iter"
            | "next"
            | "open"
            | "min"
            | "max"
            | "sum"
            | "any"
            | "all"
            | "sorted"
            | "reversed"
            | "enumerate"
            | "zip"
            | "map"
            | "filter"
            | "format"
            | "vars"
            | "callable"
            | "property"
            | "staticmethod"
            | "classmethod"
            | "Exception"
            | "ValueError"
            | "TypeError"
            | "KeyError"
            | "IndexError"
            | "AttributeError"
            | "RuntimeError"
            | "NotImplementedError"
            | "TYPE_CHECKING"
            | "Optional"
            | "Union"
            | "Any"
            | "List"
            | "Dict"
            | "Tuple"
            | "Set"
            | "Callable"
            | "Iterable"
            | "Iterator"
            | "Sequence"
            | "Mapping"
            | "overload"
            | "cast"
            | "TypeVar"
            | "Generic"
    )
}

/// Identifiers of `src` (`[A-Za-z_][A-Za-z0-9_]*`, at least
/// [`MIN_REF_LEN`] long) with their counts, sorted: references for files no
/// grammar reads.
fn lexical_refs(src: &str) -> Vec<(String, u32)> {
    let mut refs: HashMap<&str, u32> = HashMap::default();
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if i - start >= MIN_REF_LEN {
                *refs.entry(&src[start..i]).or_insert(0) += 1;
            }
        } else if c.is_ascii_digit() {
            // `0x1f`, `1e9`: numbers, not names.
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    let mut refs: Vec<(String, u32)> = refs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    refs.sort_unstable();
    refs
}

/// Whether a Rust item starts with `pub`, `pub(crate)`, …
fn has_visibility(node: Node) -> bool {
    (0..node.child_count().min(3)).any(|i| {
        node.child(i)
            .is_some_and(|c| c.kind() == "visibility_modifier")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defs::truncate;

    fn tag(lang: Lang, src: &str) -> FileTags {
        Tagger::new().tag(lang, src)
    }

    /// Frozen copies of real Rust files of this project (their README says which).
    const RUST_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/rust");

    fn def<'a>(t: &'a FileTags, name: &str) -> &'a Def {
        t.defs
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no def {name}: {:#?}", t.defs))
    }

    const RUST_SRC: &str = r#"
use rustc_hash::FxHashMap as HashMap;
use crate::llm::{Provider, LlmError as Error};

/// The engine.
#[derive(Debug)]
pub struct LlamaEngine {
    model: Model,
}

pub const MAX_TOKENS: usize = 4096;
static COUNTER: AtomicUsize = AtomicUsize::new(0);
pub type Result<T> = std::result::Result<T, Error>;

pub enum Mode { Fast, Slow }

pub trait Backend: Send {
    type Output;
    fn generate(&self, prompt: &str) -> Result<String>;
    fn name(&self) -> &str {
        "backend"
    }
}

impl LlamaEngine {
    pub fn load(
        config: &EngineConfig,
        threads: usize,
    ) -> Result<Self> {
        let model = Model::open(&config.path)?;
        let helper = |x: u32| x + 1;
        fn local_helper() {}
        Ok(Self { model })
    }

    fn private_helper(&self) -> usize {
        self.model.vocab_size()
    }
}

impl Backend for LlamaEngine {
    type Output = String;
    fn generate(&self, prompt: &str) -> Result<String> {
        let tokens = tokenize(prompt);
        println!("{}", format_tokens(&tokens));
        Ok(String::new())
    }
}

macro_rules! cfg_net {
    ($($item:item)*) => { $( #[cfg(feature = "net")] $item )* }
}

cfg_net! {
    pub fn connect(addr: &str) -> TcpStream {
        TcpStream::connect(addr)
    }
    impl LlamaEngine {
        pub fn remote(&self) -> bool { true }
    }
}

pub mod net;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads() {
        let e = LlamaEngine::load(&EngineConfig::default(), 2).unwrap();
        assert!(e.private_helper() > 0);
    }
}
"#;

    #[test]
    fn rust_definitions_with_kind_signature_scope_and_visibility() {
        let t = tag(Lang::Rust, RUST_SRC);
        let engine = def(&t, "LlamaEngine");
        assert_eq!(
            (engine.kind, engine.line, engine.public),
            (DefKind::Struct, 7, true)
        );
        assert_eq!(engine.signature, "pub struct LlamaEngine");

        let load = def(&t, "load");
        assert_eq!(load.kind, DefKind::Method);
        assert_eq!(
            load.signature,
            "pub fn load(config: &EngineConfig, threads: usize) -> Result<Self>"
        );
        assert_eq!(t.scope_names(load), ["impl LlamaEngine"]);

        assert_eq!(
            def(&t, "MAX_TOKENS").signature,
            "pub const MAX_TOKENS: usize = 4096"
        );
        assert_eq!(def(&t, "MAX_TOKENS").kind, DefKind::Constant);
        assert_eq!(
            (def(&t, "COUNTER").kind, def(&t, "COUNTER").public),
            (DefKind::Static, false)
        );
        assert_eq!(def(&t, "Result").kind, DefKind::Type);
        assert_eq!(def(&t, "Mode").signature, "pub enum Mode");

        let backend = def(&t, "Backend");
        assert_eq!(
            (backend.kind, backend.signature.as_str()),
            (DefKind::Trait, "pub trait Backend: Send")
        );
        // Trait methods, with and without a body, are public methods scoped by the trait.
        let gens: Vec<&Def> = t.defs.iter().filter(|d| d.name == "generate").collect();
        assert_eq!(gens.len(), 2);
        assert_eq!(t.scope_names(gens[0]), ["pub trait Backend: Send"]);
        assert_eq!(
            gens[0].signature,
            "fn generate(&self, prompt: &str) -> Result<String>"
        );
        assert_eq!(t.scope_names(gens[1]), ["impl Backend for LlamaEngine"]);
        assert!(gens.iter().all(|d| d.public && d.kind == DefKind::Method));
        assert_eq!(backend.opens, gens[0].scope);
        assert_eq!(def(&t, "Output").kind, DefKind::Type);

        let private = def(&t, "private_helper");
        assert!(!private.public);
        assert_eq!(private.signature, "fn private_helper(&self) -> usize");

        // Functions local to a function body are not API.
        assert!(t.defs.iter().all(|d| d.name != "local_helper"));

        // Items inside an item-level macro are found, with the right scope and line.
        let connect = def(&t, "connect");
        assert_eq!(
            (connect.kind, connect.line, connect.public),
            (DefKind::Function, 55, true)
        );
        let remote = def(&t, "remote");
        assert_eq!(remote.kind, DefKind::Method);
        assert_eq!(t.scope_names(remote), ["impl LlamaEngine"]);
        assert_eq!(def(&t, "cfg_net").signature, "macro_rules! cfg_net");

        assert_eq!(def(&t, "net").signature, "pub mod net");
        let loads = def(&t, "loads");
        assert_eq!(t.scope_names(loads), ["mod tests"]);
        assert!(!loads.public);

        // Source order, even with macro layers.
        assert!(t.defs.windows(2).all(|w| w[0].line <= w[1].line));
    }

    #[test]
    fn rust_references_cover_calls_types_paths_imports_and_macro_args() {
        let t = tag(Lang::Rust, RUST_SRC);
        for name in [
            "HashMap",       // use path
            "Provider",      // use list
            "LlmError",      // use as
            "EngineConfig",  // type use
            "open",          // scoped call Model::open
            "Model",         // path of a scoped call
            "vocab_size",    // method call
            "tokenize",      // plain call
            "format_tokens", // call inside println!
            "private_helper",
            "AtomicUsize",
        ] {
            assert!(t.ref_count(name) > 0, "missing ref {name}: {:?}", t.refs);
        }
        assert_eq!(t.ref_count("load"), 1);
        assert_eq!(t.ref_count("connect"), 1); // TcpStream::connect, counted once despite the macro reparse
        assert_eq!(t.ref_count("id"), 0);
        assert!(
            t.refs.windows(2).all(|w| w[0].0 < w[1].0),
            "refs sorted and unique"
        );
    }

    const PY_SRC: &str = r#"
import os
from typing import Optional
from .adapters import HTTPAdapter, BaseAdapter as Base
from . import utils

DEFAULT_TIMEOUT = 30
_cache = {}
__all__ = ["Session"]
REDIRECT_CODES = (
    301,
    302,
)


class SessionError(Exception):
    pass


class Session(Base):
    """A session."""

    def __init__(self, timeout: Optional[int] = None):
        self.adapter = HTTPAdapter()
        self._timeout = timeout or DEFAULT_TIMEOUT

    @property
    def timeout(self) -> int:
        return self._timeout

    def _prepare(self, request: Request) -> PreparedRequest:
        def inner():
            pass
        return utils.prepare(request)

    async def send(
        self,
        request,
        stream=False,
    ):
        try:
            return await self.adapter.send(request)
        except SessionError:
            raise


def request(method, url, **kwargs):
    with Session() as session:
        return session.request(method=method, url=url, **kwargs)
"#;

    #[test]
    fn python_definitions_and_references() {
        let t = tag(Lang::Python, PY_SRC);
        let session = def(&t, "Session");
        assert_eq!(
            (session.kind, session.signature.as_str()),
            (DefKind::Class, "class Session(Base):")
        );
        let init = def(&t, "__init__");
        assert_eq!(init.kind, DefKind::Method);
        assert!(init.public, "dunder methods are public");
        assert_eq!(t.scope_names(init), ["class Session(Base):"]);
        assert_eq!(session.opens, init.scope);
        assert_eq!(
            init.signature,
            "def __init__(self, timeout: Optional[int] = None):"
        );
        assert_eq!(
            def(&t, "send").signature,
            "async def send(self, request, stream=False):"
        );
        assert!(!def(&t, "_prepare").public);
        assert_eq!(def(&t, "timeout").line, 28); // the `def` line, after its decorator
        assert_eq!(def(&t, "DEFAULT_TIMEOUT").kind, DefKind::Constant);
        assert!(!def(&t, "_cache").public);
        assert_eq!(def(&t, "REDIRECT_CODES").signature, "REDIRECT_CODES");
        assert!(t
            .defs
            .iter()
            .all(|d| d.name != "__all__" && d.name != "inner"));
        assert_eq!(def(&t, "request").kind, DefKind::Function);

        for name in [
            "HTTPAdapter", // import + call
            "BaseAdapter", // aliased import
            "adapters",    // module imported from
            "Request",     // type annotation
            "PreparedRequest",
            "Base",         // superclass
            "prepare",      // attribute call
            "SessionError", // except clause
            "Session",
            "utils",
        ] {
            assert!(t.ref_count(name) > 0, "missing ref {name}: {:?}", t.refs);
        }
        assert_eq!(t.ref_count("HTTPAdapter"), 2);
        // The language's own names (annotation, superclass, decorator) are
        // no uses of the project's definitions.
        for builtin in ["Optional", "Exception", "property"] {
            assert_eq!(t.ref_count(builtin), 0, "{builtin}");
        }
    }

    #[test]
    fn real_rust_source_walk_rs() {
        let src = std::fs::read_to_string(format!("{RUST_FIXTURES}/walk.rs")).expect("walk.rs");
        let t = tag(Lang::Rust, &src);
        let walk = def(&t, "walk");
        assert_eq!(walk.kind, DefKind::Function);
        assert!(walk.public);
        assert_eq!(
            walk.signature,
            "pub fn walk(root: &Path, opts: &WalkOptions) -> (Vec<SourceFile>, Vec<Skipped>)"
        );
        assert_eq!(
            def(&t, "SKIPPED_DIRS").signature,
            "const SKIPPED_DIRS: &[&str]"
        );
        assert_eq!(def(&t, "SourceFile").kind, DefKind::Struct);
        // `Lang` lives in lang.rs.
        let lang_src =
            std::fs::read_to_string(format!("{RUST_FIXTURES}/lang.rs")).expect("lang.rs");
        let l = tag(Lang::Rust, &lang_src);
        assert_eq!(def(&l, "from_path").kind, DefKind::Method);
        assert_eq!(l.scope_names(def(&l, "from_path")), ["impl Lang"]);
        assert_eq!(def(&l, "Lang").kind, DefKind::Enum);
        assert_eq!(
            t.scope_names(def(&t, "minified_text_is_detected")),
            ["mod tests"]
        );
        for name in [
            "WalkBuilder",
            "check_file",
            "sniff",
            "relative",
            "Path",
            "SourceFile",
        ] {
            assert!(t.ref_count(name) > 0, "missing ref {name}");
        }
    }

    /// Code without a grammar has no definitions, but its identifiers are
    /// references; prose and data files are not read at all.
    #[test]
    fn code_without_a_grammar_contributes_references_only() {
        let src =
            "object Main {\n  def run() = parse_config(load(\"a.toml\")) + parse_config(x)\n}\n";
        let t = Tagger::new().tag_file(Lang::Text, "src/Main.scala", src);
        assert!(t.defs.is_empty());
        assert_eq!(t.ref_count("parse_config"), 2);
        assert_eq!(t.ref_count("load"), 1);
        assert_eq!(t.ref_count("x"), 0, "shorter than MIN_REF_LEN");
        let t = Tagger::new().tag_file(Lang::Text, "README.md", src);
        assert_eq!(t, FileTags::default());
    }

    /// Every definition the grammars' shipped tags queries find (outside
    /// function bodies) is also one of ours.
    #[test]
    fn our_queries_cover_the_shipped_tags_queries() {
        for (lang, src, language, shipped) in [
            (
                Lang::Rust,
                RUST_SRC,
                Language::from(tree_sitter_rust::LANGUAGE),
                tree_sitter_rust::TAGS_QUERY,
            ),
            (
                Lang::Python,
                PY_SRC,
                Language::from(tree_sitter_python::LANGUAGE),
                tree_sitter_python::TAGS_QUERY,
            ),
        ] {
            let ours = tag(lang, src);
            let mut parser = Parser::new();
            parser.set_language(&language).unwrap();
            let tree = parser.parse(src, None).unwrap();
            let query = Query::new(&language, shipped).unwrap();
            let names = query.capture_names();
            let mut cursor = QueryCursor::new();
            let mut matches = cursor.matches(&query, tree.root_node(), src.as_bytes());
            let mut checked = 0;
            while let Some(m) = matches.next() {
                let name = m
                    .captures
                    .iter()
                    .find(|c| names[c.index as usize] == "name");
                let is_def = m
                    .captures
                    .iter()
                    .any(|c| names[c.index as usize].starts_with("definition."));
                let (Some(name), true) = (name, is_def) else {
                    continue;
                };
                let text = name.node.utf8_text(src.as_bytes()).unwrap();
                if ["local_helper", "inner", "__all__"].contains(&text) {
                    continue; // deliberately dropped: local to a function / bookkeeping
                }
                let line = name.node.start_position().row as u32 + 1;
                assert!(
                    ours.defs.iter().any(|d| d.name == text && d.line <= line),
                    "{lang:?}: shipped query finds {text} at line {line}, ours does not"
                );
                checked += 1;
            }
            assert!(checked > 5);
        }
    }

    /// The skeleton pre-pass is an optimisation: on real sources it finds the
    /// same definitions, lines, scopes and signatures as parsing whole files.
    #[test]
    fn skeleton_and_whole_file_agree_on_definitions() {
        let mut sources: Vec<(Lang, String)> =
            vec![(Lang::Rust, RUST_SRC.into()), (Lang::Python, PY_SRC.into())];
        for rel in ["walk.rs", "lang.rs", "engine.rs", "skeleton.rs"] {
            let path = format!("{RUST_FIXTURES}/{rel}");
            sources.push((Lang::Rust, std::fs::read_to_string(&path).expect(&path)));
        }
        assert!(sources.len() >= 4, "real sources found");
        let mut tagger = Tagger::new();
        for (lang, src) in &sources {
            let (fast, whole) = (tagger.tag(*lang, src), tagger.tag_whole(*lang, src));
            let key = |t: &FileTags| -> Vec<(String, DefKind, u32, bool, String, Vec<String>)> {
                t.defs
                    .iter()
                    .map(|d| {
                        let scopes = t.scope_names(d).iter().map(|s| s.to_string()).collect();
                        (
                            d.name.clone(),
                            d.kind,
                            d.line,
                            d.public,
                            d.signature.clone(),
                            scopes,
                        )
                    })
                    .collect()
            };
            assert_eq!(key(&fast), key(&whole));
            assert!(!fast.refs.is_empty());
        }
    }

    #[test]
    fn squash_and_truncate() {
        assert_eq!(
            squash("fn f(\n    a: A,\n    b: B,\n) -> C {", Lang::Rust),
            "fn f(a: A, b: B) -> C"
        );
        assert_eq!(
            squash("fn g<\n  T,\n>(x: T) // note\n  where T: Clone", Lang::Rust),
            "fn g<T>(x: T) where T: Clone"
        );
        let long = format!("fn {}()", "x".repeat(300));
        let s = squash(&long, Lang::Rust);
        assert_eq!(s.chars().count(), MAX_SIGNATURE_CHARS + 1);
        assert!(s.ends_with('…'));
        assert_eq!(truncate("héllo", 2), "hé…");
    }

    #[test]
    fn broken_and_unsupported_sources_do_not_panic() {
        let t = tag(
            Lang::Rust,
            "pub fn ok() {}\nfn broken( {{{ \nimpl X { pub fn y(&self) }",
        );
        assert!(t.defs.iter().any(|d| d.name == "ok"));
        assert_eq!(tag(Lang::Text, "fn x() {}"), FileTags::default());
        // Half-typed files (every prefix), through the lexer or its fallback.
        let mut tagger = Tagger::new();
        for (lang, src) in [(Lang::Rust, RUST_SRC), (Lang::Python, PY_SRC)] {
            for (cut, _) in src.char_indices().step_by(3) {
                let tags = tagger.tag(lang, &src[..cut]);
                assert!(tags.defs.windows(2).all(|w| w[0].line <= w[1].line));
            }
        }
        assert_eq!(tag(Lang::Python, ""), FileTags::default());
    }

    /// Found on pytest: `LineMatcher.str`, `ExceptionInfo.type` and
    /// `TYPE_CHECKING = False` led the map on the builtins' uses, and each
    /// `@overload` stub of `fixture` was an entry of its own.
    #[test]
    fn python_builtins_are_no_references_and_overload_stubs_no_definitions() {
        let src = "from typing import TYPE_CHECKING, overload\n\
TYPE_CHECKING = False\n\
\n\
class LineMatcher:\n    def str(self):\n        return str(self.lines) + type(self).__name__\n\
\n\
@overload\ndef fixture(f: int) -> int: ...\n\
@typing.overload\ndef fixture(f: str) -> str: ...\n\
def fixture(f):\n    return make_fixture(str(f), len(f))\n";
        for t in [
            tag(Lang::Python, src),
            Tagger::new().tag_whole(Lang::Python, src),
        ] {
            for builtin in ["str", "type", "len", "TYPE_CHECKING", "overload"] {
                assert_eq!(t.ref_count(builtin), 0, "{builtin}: {:?}", t.refs);
            }
            assert_eq!(t.ref_count("make_fixture"), 1, "{:?}", t.refs);
            let fixtures: Vec<u32> = t
                .defs
                .iter()
                .filter(|d| d.name == "fixture")
                .map(|d| d.line)
                .collect();
            assert_eq!(fixtures, [12], "{:?}", t.defs);
            assert!(t.defs.iter().any(|d| d.name == "str"), "{:?}", t.defs);
        }
    }
}
