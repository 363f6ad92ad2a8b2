//! Tags for the table-driven languages (`agent_lang::lang`): C, Go, Java,
//! JavaScript, TypeScript.
//!
//! The whole file is parsed (no lexical pre-pass: `skeleton` knows Rust and
//! Python only) and the language's tags query (the grammar's own `tags.scm`
//! plus what it lacks) gives `@definition.KIND` and `@reference.KIND`
//! captures. Definitions inside a function are locals and left out;
//! definitions inside a class, interface or module get it as their scope.

use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

use tree_sitter::{Language, Node, Parser, Query, QueryCursor, StreamingIterator};

use super::skeleton::{braces as braces_skeleton, Braces};
use crate::defs::{squash, Def, DefKind, FileTags, Scope, ScopeKind, MIN_REF_LEN};
use agent_lang::lang::Lang;

/// A compiled tags query and what its captures mean.
pub struct TableQuery {
    language: Language,
    query: Query,
    name: u32,
    /// Capture index → definition kind, for `@definition.*` captures.
    defs: Vec<Option<DefKind>>,
    /// Capture index → whether it is a `@reference.*` capture.
    refs: Vec<bool>,
}

fn def_kind(lang: Lang, suffix: &str) -> DefKind {
    match suffix {
        "function" => DefKind::Function,
        "method" => DefKind::Method,
        // C's tags.scm calls structs and unions classes.
        "class" if lang == Lang::C => DefKind::Struct,
        "class" => DefKind::Class,
        "interface" => DefKind::Trait,
        "module" => DefKind::Module,
        "macro" => DefKind::Macro,
        "constant" => DefKind::Constant,
        "enum" => DefKind::Enum,
        _ => DefKind::Type,
    }
}

/// Compiled on first use, once per process and language (`Query` is
/// `Sync`): compiling a tags query takes milliseconds, so languages a
/// repository does not use cost nothing.
pub fn table_query(lang: Lang) -> Option<&'static TableQuery> {
    const COUNT: usize = Lang::Text as usize + 1;
    static QUERIES: [OnceLock<Option<TableQuery>>; COUNT] = [const { OnceLock::new() }; COUNT];
    QUERIES[lang as usize]
        .get_or_init(|| compile(lang))
        .as_ref()
}

#[allow(
    clippy::expect_used,
    reason = "the tags queries are built in, and agent-lang's tests compile every one"
)]
fn compile(lang: Lang) -> Option<TableQuery> {
    let language = lang.grammar()?;
    let source = lang.tags_query()?;
    let query = Query::new(&language, &source).expect("built-in tags query is valid");
    let names = query.capture_names();
    let name = query.capture_index_for_name("name")?;
    let defs = names
        .iter()
        .map(|c| c.strip_prefix("definition.").map(|k| def_kind(lang, k)))
        .collect();
    let refs = names.iter().map(|c| c.starts_with("reference.")).collect();
    Some(TableQuery {
        language,
        query,
        name,
        defs,
        refs,
    })
}

/// Tags of `src` in a table-driven language; empty when this build has no
/// grammar for it.
pub fn tag(
    parsers: &mut HashMap<Lang, Parser>,
    cursor: &mut QueryCursor,
    lang: Lang,
    src: &str,
) -> FileTags {
    // Go and Java: function bodies are cut lexically first (their
    // references counted on the way), so tree-sitter parses the rest only.
    let braces = match lang {
        Lang::Go => Some(Braces::Go),
        Lang::Java => Some(Braces::Java),
        _ => None,
    };
    if let Some(kind) = braces {
        let mut body_refs: HashMap<&str, u32> = HashMap::default();
        if let Some(skeleton) =
            braces_skeleton(src, kind, &mut |r| *body_refs.entry(r).or_insert(0) += 1)
        {
            return tag_text(parsers, cursor, lang, &skeleton, body_refs);
        }
    }
    tag_text(parsers, cursor, lang, src, HashMap::default())
}

/// Tags of `src` (a whole file or a skeleton); `refs` starts with the
/// references found outside the text (in cut bodies).
fn tag_text<'s>(
    parsers: &mut HashMap<Lang, Parser>,
    cursor: &mut QueryCursor,
    lang: Lang,
    src: &'s str,
    mut refs: HashMap<&'s str, u32>,
) -> FileTags {
    let Some(tq) = table_query(lang) else {
        return FileTags::default();
    };
    #[allow(
        clippy::expect_used,
        reason = "every grammar is built with this tree-sitter's ABI (agent-lang's tests load each)"
    )]
    let parser = parsers.entry(lang).or_insert_with(|| {
        let mut p = Parser::new();
        p.set_language(&tq.language)
            .expect("grammar ABI is supported by tree-sitter 0.25");
        p
    });
    let Some(tree) = parser.parse(src, None) else {
        return FileTags::default();
    };
    let mut found: Vec<(Node, Node, DefKind)> = Vec::new();
    let mut matches = cursor.matches(&tq.query, tree.root_node(), src.as_bytes());
    while let Some(m) = matches.next() {
        let name = m
            .captures
            .iter()
            .find(|c| c.index == tq.name)
            .map(|c| c.node);
        let Some(name) = name else { continue };
        for c in m.captures {
            if let Some(kind) = tq.defs[c.index as usize] {
                found.push((c.node, name, kind));
            } else if tq.refs[c.index as usize] {
                let text = &src[name.byte_range()];
                if text.len() >= MIN_REF_LEN {
                    *refs.entry(text).or_insert(0) += 1;
                }
            }
        }
    }
    for (node, _, _) in &mut found {
        *node = whole_definition(*node);
    }
    found.sort_by_key(|(node, _, _)| (node.start_byte(), std::cmp::Reverse(node.end_byte())));
    found.dedup_by_key(|(node, _, _)| node.id());

    let mut tags = FileTags::default();
    // Enclosing definitions: (end byte, scope index if a container, is local).
    let mut open: Vec<(usize, Option<u32>, bool)> = Vec::new();
    for (node, name, kind) in found {
        while open
            .last()
            .is_some_and(|(end, _, _)| *end <= node.start_byte())
        {
            open.pop();
        }
        let inside_function = open.last().is_some_and(|(_, _, local)| *local);
        let is_function = matches!(kind, DefKind::Function | DefKind::Method);
        if inside_function {
            // A local: neither listed nor a scope, but its own locals stay out too.
            open.push((node.end_byte(), None, true));
            continue;
        }
        let scope = open.iter().rev().find_map(|(_, s, _)| *s);
        let signature = signature(lang, src, node);
        let def_name = src[name.byte_range()].to_string();
        let kind = match kind {
            // A function inside a class is a method.
            DefKind::Function if scope.is_some() => DefKind::Method,
            k => k,
        };
        let public = is_public(lang, node, &def_name, &signature, scope.is_some());
        let opens = scope_kind(kind).map(|scope_kind| {
            tags.scopes.push(Scope {
                kind: scope_kind,
                line: node.start_position().row as u32 + 1,
                text: signature.clone(),
                parent: scope,
            });
            tags.scopes.len() as u32 - 1
        });
        tags.defs.push(Def {
            name: def_name,
            kind,
            line: node.start_position().row as u32 + 1,
            signature,
            scope,
            opens,
            public,
        });
        open.push((node.end_byte(), opens, is_function));
    }
    let mut refs: Vec<(String, u32)> = refs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    refs.sort_unstable();
    tags.refs = refs;
    tags
}

/// C's tags query captures a function's declarator (`f(int x)`): the
/// definition is the `function_definition` around it, with its return type,
/// storage class and body.
fn whole_definition(node: Node) -> Node {
    if node.kind() != "function_declarator" {
        return node;
    }
    let mut cur = node;
    while let Some(parent) = cur.parent() {
        match parent.kind() {
            "function_declarator" | "pointer_declarator" | "parenthesized_declarator" => {
                cur = parent
            }
            "function_definition" | "declaration" => return parent,
            _ => break,
        }
    }
    node
}

fn scope_kind(kind: DefKind) -> Option<ScopeKind> {
    match kind {
        DefKind::Class | DefKind::Struct | DefKind::Enum => Some(ScopeKind::Class),
        DefKind::Trait => Some(ScopeKind::Trait),
        DefKind::Module => Some(ScopeKind::Module),
        _ => None,
    }
}

/// The definition's head: its text up to the body, on one line.
fn signature(lang: Lang, src: &str, node: Node) -> String {
    let end = match node.kind() {
        // `#define F(a, b) \ ..`: the name and parameters.
        "preproc_function_def" => node.child_by_field_name("parameters").map(|p| p.end_byte()),
        _ => node.child_by_field_name("body").map(|b| b.start_byte()),
    }
    .unwrap_or_else(|| node.end_byte());
    let head = &src[node.start_byte()..end];
    // Values (`const f = () => ..`, `x = {..}`): keep the first line only.
    let head = match node.kind() {
        "variable_declarator" | "assignment_expression" | "pair" | "lexical_declaration" => {
            head.lines().next().unwrap_or(head)
        }
        // A Ruby class's body starts after the comments under its head.
        _ if lang == Lang::Ruby => head.lines().next().unwrap_or(head),
        // Go's `type T struct { .. }` has no body field: stop at the brace.
        _ if node.child_by_field_name("body").is_none() => {
            head.split_once('{').map_or(head, |(before, _)| before)
        }
        _ => head,
    };
    squash(head, lang)
}

/// Visible outside its file, by each language's convention.
fn is_public(lang: Lang, node: Node, name: &str, signature: &str, member: bool) -> bool {
    match lang {
        Lang::Go => name
            .rsplit('.')
            .next()
            .and_then(|n| n.chars().next())
            .is_some_and(char::is_uppercase),
        Lang::Java => {
            signature.contains("public ")
                || signature.contains("protected ")
                || node
                    .parent()
                    .and_then(|p| p.parent())
                    .is_some_and(|g| g.kind() == "interface_declaration")
        }
        Lang::C | Lang::Cpp => !signature.starts_with("static "),
        Lang::CSharp => {
            ["public ", "protected ", "internal "]
                .iter()
                .any(|m| signature.contains(m))
                || node
                    .parent()
                    .and_then(|p| p.parent())
                    .is_some_and(|g| g.kind() == "interface_declaration")
        }
        // Public unless said otherwise.
        Lang::Kotlin | Lang::Swift | Lang::Php => !["private ", "fileprivate ", "internal "]
            .iter()
            .any(|m| signature.contains(m)),
        Lang::Lua => !signature.starts_with("local "),
        Lang::Ruby | Lang::Bash => true,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
            if member {
                !name.starts_with('#') && !signature.starts_with("private ")
            } else {
                let mut cur = node.parent();
                // `export function f`, `export const f = ..` (declarator → declaration → export).
                for _ in 0..3 {
                    match cur {
                        Some(p) if p.kind() == "export_statement" => return true,
                        Some(p) => cur = p.parent(),
                        None => break,
                    }
                }
                false
            }
        }
        Lang::Rust | Lang::Python | Lang::Text => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skeleton path finds the definitions parsing the whole file finds.
    /// (On react-native-maps it drops one more: `run` of an anonymous class
    /// inside a constructor, whose body the whole-file path cannot tell
    /// from a class's, since Java's tags query has no constructors.)
    #[test]
    fn go_and_java_skeletons_keep_every_definition() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/lang");
        let mut checked = 0;
        for entry in std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()) {
            let lang = Lang::from_path(&entry);
            if !matches!(lang, Lang::Go | Lang::Java) {
                continue;
            }
            let src = std::fs::read_to_string(&entry).unwrap();
            let (mut parsers, mut cursor) = (HashMap::default(), QueryCursor::new());
            let fast = tag(&mut parsers, &mut cursor, lang, &src);
            let whole = tag_text(&mut parsers, &mut cursor, lang, &src, HashMap::default());
            let names = |t: &FileTags| {
                t.defs
                    .iter()
                    .map(|d| (d.name.clone(), d.line, d.kind))
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(&fast), names(&whole), "{}", entry.display());
            checked += 1;
        }
        assert!(checked >= 2);
    }
}
