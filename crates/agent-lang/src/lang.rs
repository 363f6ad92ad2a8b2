//! The languages the agent understands, in one table.
//!
//! Each entry says how a language is recognised (extensions), parsed (its
//! tree-sitter grammar, behind a `lang-*` cargo feature), chunked (which
//! syntax nodes are items, where their names are, which hold members) and
//! tagged for the repo map (a tags query: the grammar's own `tags.scm`, plus
//! what it lacks). The chunker, the tagger, `agent search --lang` and
//! `agent index --status` all read it; adding a language is one entry.
//!
//! Rust and Python came first and keep hand-written rules (chunk roles in
//! `index::chunk`, queries and a lexical pre-pass in `repomap`); their entries
//! here carry only what is shared.

use std::path::Path;

use serde::Serialize;
use tree_sitter::Language;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Rust,
    Python,
    Bash,
    C,
    Cpp,
    CSharp,
    Go,
    Java,
    JavaScript,
    Kotlin,
    Lua,
    Php,
    Ruby,
    Swift,
    TypeScript,
    Tsx,
    /// Any other text file; chunked by lines. The extension is kept in `SourceFile::ext`.
    Text,
}

/// How the chunker finds an item's name.
#[derive(Debug, Clone, Copy)]
pub enum Name {
    /// A field of the node (`name`).
    Field(&'static str),
    /// C declarators: follow `declarator` fields down to the identifier
    /// (`static int *f(void)` → `f`).
    Declarator,
    /// The `name` of the first `variable_declarator` child
    /// (`const f = () => ..`).
    FirstDeclarator,
    /// Go methods: `Receiver.Method` (`func (s *stack) Format(..)` → `stack.Format`).
    GoMethod,
    /// Go type declarations: the first `type_spec`'s name.
    GoType,
}

/// A syntax node that is a chunk of its own.
#[derive(Debug, Clone, Copy)]
pub struct Item {
    pub node: &'static str,
    /// function, method, class, interface, struct, enum, type, module, const.
    pub kind: &'static str,
    pub name: Name,
    /// Field (or, failing that, child kind) holding the members, for
    /// containers split when too big.
    pub body: Option<&'static str>,
}

const fn item(node: &'static str, kind: &'static str, name: Name) -> Item {
    Item {
        node,
        kind,
        name,
        body: None,
    }
}

const fn container(node: &'static str, kind: &'static str, name: Name) -> Item {
    Item {
        node,
        kind,
        name,
        body: Some("body"),
    }
}

/// Chunking rules of a table-driven language.
#[derive(Debug)]
pub struct Syntax {
    pub items: &'static [Item],
    /// Comment node kinds: they go with the item after them.
    pub comments: &'static [&'static str],
    /// Nodes that wrap an item in a field (`export function f`): the item is
    /// found in the field (`*`: the last named child, as in C++'s
    /// `template <..> class X`) and the chunk covers the wrapper.
    pub wrappers: &'static [(&'static str, &'static str)],
    /// Nodes whose children (or the children of their field) are chunked as
    /// if they stood in their place (`#ifdef` blocks, `extern "C" { .. }`).
    pub transparent: &'static [(&'static str, Option<&'static str>)],
    /// Namespaces and modules, which only group items (`namespace geo { .. }`,
    /// `module Checkout`): never a chunk of their own, their members (the
    /// `body` field) are chunked in their place with the namespace's `name`
    /// added to the symbol path. One without a body (`namespace Shop.Jobs;`)
    /// names the siblings after it.
    pub namespaces: &'static [&'static str],
}

pub struct LangSpec {
    pub lang: Lang,
    /// What `--lang` takes and `--status` shows.
    pub name: &'static str,
    pub extensions: &'static [&'static str],
    /// Interpreters named on a `#!` line, for scripts without an extension.
    pub interpreters: &'static [&'static str],
    /// Joins symbol path parts: `Engine::load`, `Client.get`.
    pub separator: &'static str,
    /// None for Rust and Python (hand-written rules) and Text.
    pub syntax: Option<&'static Syntax>,
}

const FUNCTION: Name = Name::Field("name");

static JAVASCRIPT_SYNTAX: Syntax = Syntax {
    items: &[
        item("function_declaration", "function", FUNCTION),
        item("generator_function_declaration", "function", FUNCTION),
        container("class_declaration", "class", FUNCTION),
        item("method_definition", "method", FUNCTION),
        item("lexical_declaration", "const", Name::FirstDeclarator),
        item("variable_declaration", "const", Name::FirstDeclarator),
    ],
    comments: &["comment"],
    wrappers: &[("export_statement", "declaration")],
    transparent: &[],
    namespaces: &[],
};

static TYPESCRIPT_SYNTAX: Syntax = Syntax {
    items: &[
        item("function_declaration", "function", FUNCTION),
        item("generator_function_declaration", "function", FUNCTION),
        item("function_signature", "function", FUNCTION),
        container("class_declaration", "class", FUNCTION),
        container("abstract_class_declaration", "class", FUNCTION),
        container("interface_declaration", "interface", FUNCTION),
        container("enum_declaration", "enum", FUNCTION),
        item("type_alias_declaration", "type", FUNCTION),
        item("method_definition", "method", FUNCTION),
        item("abstract_method_signature", "method", FUNCTION),
        item("lexical_declaration", "const", Name::FirstDeclarator),
        item("variable_declaration", "const", Name::FirstDeclarator),
    ],
    comments: &["comment"],
    wrappers: &[
        ("export_statement", "declaration"),
        // `declare module "x" { .. }`, `declare function f(): T;`
        ("ambient_declaration", "*"),
        // A top-level `namespace X { .. }` can parse as an expression.
        ("expression_statement", "*"),
    ],
    transparent: &[],
    namespaces: &["internal_module", "module"],
};

static GO_SYNTAX: Syntax = Syntax {
    items: &[
        item("function_declaration", "function", FUNCTION),
        item("method_declaration", "method", Name::GoMethod),
        item("type_declaration", "type", Name::GoType),
    ],
    comments: &["comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &[],
};

static JAVA_SYNTAX: Syntax = Syntax {
    items: &[
        container("class_declaration", "class", FUNCTION),
        container("interface_declaration", "interface", FUNCTION),
        container("enum_declaration", "enum", FUNCTION),
        container("record_declaration", "class", FUNCTION),
        container("annotation_type_declaration", "interface", FUNCTION),
        item("method_declaration", "method", FUNCTION),
        item("constructor_declaration", "method", FUNCTION),
    ],
    comments: &["line_comment", "block_comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &[],
};

static C_SYNTAX: Syntax = Syntax {
    items: &[
        item("function_definition", "function", Name::Declarator),
        item("type_definition", "type", Name::Declarator),
        item("struct_specifier", "struct", FUNCTION),
        item("union_specifier", "struct", FUNCTION),
        item("enum_specifier", "enum", FUNCTION),
        item("preproc_function_def", "macro", FUNCTION),
    ],
    comments: &["comment"],
    wrappers: &[],
    transparent: PREPROC,
    namespaces: &[],
};

const PREPROC: &[(&str, Option<&str>)] = &[
    ("preproc_ifdef", None),
    ("preproc_if", None),
    ("preproc_else", None),
    ("preproc_elif", None),
];

static CPP_SYNTAX: Syntax = Syntax {
    items: &[
        item("function_definition", "function", Name::Declarator),
        item("type_definition", "type", Name::Declarator),
        item("alias_declaration", "type", FUNCTION),
        container("class_specifier", "class", FUNCTION),
        container("struct_specifier", "struct", FUNCTION),
        container("union_specifier", "struct", FUNCTION),
        item("enum_specifier", "enum", FUNCTION),
        item("preproc_function_def", "macro", FUNCTION),
    ],
    comments: &["comment"],
    wrappers: &[("template_declaration", "*")],
    transparent: &[
        ("preproc_ifdef", None),
        ("preproc_if", None),
        ("preproc_else", None),
        ("preproc_elif", None),
        ("linkage_specification", Some("body")),
    ],
    namespaces: &["namespace_definition"],
};

static CSHARP_SYNTAX: Syntax = Syntax {
    items: &[
        container("class_declaration", "class", FUNCTION),
        container("struct_declaration", "struct", FUNCTION),
        container("interface_declaration", "interface", FUNCTION),
        container("record_declaration", "class", FUNCTION),
        container("enum_declaration", "enum", FUNCTION),
        item("method_declaration", "method", FUNCTION),
        item("constructor_declaration", "method", FUNCTION),
        item("property_declaration", "const", FUNCTION),
        item("delegate_declaration", "type", FUNCTION),
    ],
    comments: &["comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &["namespace_declaration", "file_scoped_namespace_declaration"],
};

static RUBY_SYNTAX: Syntax = Syntax {
    items: &[
        container("class", "class", FUNCTION),
        item("method", "method", FUNCTION),
        item("singleton_method", "method", FUNCTION),
    ],
    comments: &["comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &["module"],
};

static PHP_SYNTAX: Syntax = Syntax {
    items: &[
        item("function_definition", "function", FUNCTION),
        container("class_declaration", "class", FUNCTION),
        container("interface_declaration", "interface", FUNCTION),
        container("trait_declaration", "interface", FUNCTION),
        container("enum_declaration", "enum", FUNCTION),
        item("method_declaration", "method", FUNCTION),
    ],
    comments: &["comment"],
    wrappers: &[],
    transparent: &[],
    // `namespace App\Models;` names the rest of the file.
    namespaces: &["namespace_definition"],
};

static BASH_SYNTAX: Syntax = Syntax {
    items: &[item("function_definition", "function", FUNCTION)],
    comments: &["comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &[],
};

static LUA_SYNTAX: Syntax = Syntax {
    items: &[item("function_declaration", "function", FUNCTION)],
    comments: &["comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &[],
};

/// Kotlin's class bodies are children, not fields.
const fn kotlin_class(node: &'static str) -> Item {
    Item {
        node,
        kind: "class",
        name: FUNCTION,
        body: Some("class_body"),
    }
}

static KOTLIN_SYNTAX: Syntax = Syntax {
    items: &[
        kotlin_class("class_declaration"),
        kotlin_class("object_declaration"),
        kotlin_class("companion_object"),
        item("function_declaration", "function", FUNCTION),
    ],
    comments: &["line_comment", "block_comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &[],
};

static SWIFT_SYNTAX: Syntax = Syntax {
    items: &[
        container("class_declaration", "class", FUNCTION),
        container("protocol_declaration", "interface", FUNCTION),
        item("function_declaration", "function", FUNCTION),
        item("protocol_function_declaration", "function", FUNCTION),
        item("init_declaration", "method", FUNCTION),
        item("typealias_declaration", "type", FUNCTION),
    ],
    comments: &["comment", "multiline_comment"],
    wrappers: &[],
    transparent: &[],
    namespaces: &[],
};

#[rustfmt::skip]
pub static LANGS: &[LangSpec] = &[
    LangSpec { lang: Lang::Rust, name: "rust", extensions: &["rs"], interpreters: &[], separator: "::", syntax: None },
    LangSpec { lang: Lang::Python, name: "python", extensions: &["py", "pyi"], interpreters: &["python", "python2", "python3", "pypy", "pypy3"], separator: ".", syntax: None },
    LangSpec { lang: Lang::Bash, name: "bash", extensions: &["sh", "bash"], interpreters: &["sh", "bash", "dash", "ksh"], separator: ".", syntax: Some(&BASH_SYNTAX) },
    LangSpec { lang: Lang::C, name: "c", extensions: &["c", "h"], interpreters: &[], separator: ".", syntax: Some(&C_SYNTAX) },
    LangSpec { lang: Lang::Cpp, name: "cpp", extensions: &["cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp"], interpreters: &[], separator: "::", syntax: Some(&CPP_SYNTAX) },
    LangSpec { lang: Lang::CSharp, name: "csharp", extensions: &["cs"], interpreters: &[], separator: ".", syntax: Some(&CSHARP_SYNTAX) },
    LangSpec { lang: Lang::Go, name: "go", extensions: &["go"], interpreters: &[], separator: ".", syntax: Some(&GO_SYNTAX) },
    LangSpec { lang: Lang::Java, name: "java", extensions: &["java"], interpreters: &[], separator: ".", syntax: Some(&JAVA_SYNTAX) },
    LangSpec { lang: Lang::JavaScript, name: "javascript", extensions: &["js", "mjs", "cjs", "jsx"], interpreters: &["node", "nodejs"], separator: ".", syntax: Some(&JAVASCRIPT_SYNTAX) },
    LangSpec { lang: Lang::Kotlin, name: "kotlin", extensions: &["kt", "kts"], interpreters: &[], separator: ".", syntax: Some(&KOTLIN_SYNTAX) },
    LangSpec { lang: Lang::Lua, name: "lua", extensions: &["lua"], interpreters: &["lua", "luajit"], separator: ".", syntax: Some(&LUA_SYNTAX) },
    LangSpec { lang: Lang::Php, name: "php", extensions: &["php"], interpreters: &["php"], separator: "::", syntax: Some(&PHP_SYNTAX) },
    LangSpec { lang: Lang::Ruby, name: "ruby", extensions: &["rb", "rake", "gemspec"], interpreters: &["ruby"], separator: ".", syntax: Some(&RUBY_SYNTAX) },
    LangSpec { lang: Lang::Swift, name: "swift", extensions: &["swift"], interpreters: &[], separator: ".", syntax: Some(&SWIFT_SYNTAX) },
    LangSpec { lang: Lang::TypeScript, name: "typescript", extensions: &["ts", "mts", "cts"], interpreters: &["ts-node", "tsx", "deno", "bun"], separator: ".", syntax: Some(&TYPESCRIPT_SYNTAX) },
    LangSpec { lang: Lang::Tsx, name: "tsx", extensions: &["tsx"], interpreters: &[], separator: ".", syntax: Some(&TYPESCRIPT_SYNTAX) },
    LangSpec { lang: Lang::Text, name: "text", extensions: &[], interpreters: &[], separator: ".", syntax: None },
];

impl Lang {
    pub fn from_path(path: &Path) -> Lang {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            return Lang::Text;
        };
        LANGS
            .iter()
            .find(|spec| spec.extensions.contains(&ext))
            .map_or(Lang::Text, |spec| spec.lang)
    }

    /// The language of a file: by extension, or for a script without one,
    /// by the interpreter its `#!` line names (`#!/usr/bin/env python3`).
    pub fn detect(path: &Path, text: &str) -> Lang {
        let by_path = Lang::from_path(path);
        if by_path != Lang::Text || path.extension().is_some() {
            return by_path;
        }
        text.lines()
            .next()
            .and_then(Lang::from_shebang)
            .unwrap_or(Lang::Text)
    }

    /// `#!/bin/bash`, `#!/usr/bin/env -S python3 -u` → the language.
    pub fn from_shebang(line: &str) -> Option<Lang> {
        let mut words = line.strip_prefix("#!")?.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            program = words.find(|w| !w.starts_with('-'))?;
        }
        // `python3.11` → `python3`; `python3` is listed as it is.
        let program = program.trim_end_matches(|c: char| c == '.' || c.is_ascii_digit());
        LANGS
            .iter()
            .find(|s| {
                s.interpreters
                    .iter()
                    .any(|i| i.trim_end_matches(|c: char| c.is_ascii_digit()) == program)
            })
            .map(|s| s.lang)
    }

    #[allow(
        clippy::expect_used,
        reason = "LANGS has an entry for every Lang (a test checks it)"
    )]
    pub fn spec(self) -> &'static LangSpec {
        LANGS
            .iter()
            .find(|spec| spec.lang == self)
            .expect("every Lang has an entry")
    }

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    pub fn from_name(name: &str) -> Option<Lang> {
        LANGS.iter().find(|s| s.name == name).map(|s| s.lang)
    }

    /// Names `--lang` takes.
    pub fn names() -> Vec<&'static str> {
        LANGS.iter().map(|s| s.name).collect()
    }

    /// The tree-sitter grammar, when this build has it (`lang-*` features).
    pub fn grammar(self) -> Option<Language> {
        match self {
            Lang::Rust => Some(tree_sitter_rust::LANGUAGE.into()),
            Lang::Python => Some(tree_sitter_python::LANGUAGE.into()),
            Lang::Bash => grammars::bash(),
            Lang::C => grammars::c(),
            Lang::Cpp => grammars::cpp(),
            Lang::CSharp => grammars::csharp(),
            Lang::Kotlin => grammars::kotlin(),
            Lang::Lua => grammars::lua(),
            Lang::Php => grammars::php(),
            Lang::Ruby => grammars::ruby(),
            Lang::Swift => grammars::swift(),
            Lang::Go => grammars::go(),
            Lang::Java => grammars::java(),
            Lang::JavaScript => grammars::javascript(),
            Lang::TypeScript => grammars::typescript(),
            Lang::Tsx => grammars::tsx(),
            Lang::Text => None,
        }
    }

    /// The repo map's query for a table-driven language: `@definition.KIND`
    /// and `@reference.KIND` captures with `@name`, as in the grammars' own
    /// `tags.scm` (which it includes).
    pub fn tags_query(self) -> Option<String> {
        match self {
            Lang::Bash => grammars::bash_tags(),
            Lang::C => grammars::c_tags(),
            Lang::Cpp => grammars::cpp_tags(),
            Lang::CSharp => grammars::csharp_tags(),
            Lang::Kotlin => grammars::kotlin_tags(),
            Lang::Lua => grammars::lua_tags(),
            Lang::Php => grammars::php_tags(),
            Lang::Ruby => grammars::ruby_tags(),
            Lang::Swift => grammars::swift_tags(),
            Lang::Go => grammars::go_tags(),
            Lang::Java => grammars::java_tags(),
            Lang::JavaScript => grammars::javascript_tags(),
            Lang::TypeScript | Lang::Tsx => grammars::typescript_tags(),
            Lang::Rust | Lang::Python | Lang::Text => None,
        }
    }

    /// The grammar's own `highlights.scm`, for code shown in the terminal;
    /// a dialect's patterns come before its base language's, as the first
    /// pattern that matches wins (C++ over C, TypeScript over JavaScript).
    pub fn highlights_query(self) -> Option<String> {
        match self {
            Lang::Rust => Some(tree_sitter_rust::HIGHLIGHTS_QUERY.into()),
            Lang::Python => Some(tree_sitter_python::HIGHLIGHTS_QUERY.into()),
            Lang::Bash => grammars::bash_highlights(),
            Lang::C => grammars::c_highlights(),
            Lang::Cpp => grammars::cpp_highlights(),
            Lang::CSharp => grammars::csharp_highlights(),
            Lang::Lua => grammars::lua_highlights(),
            Lang::Php => grammars::php_highlights(),
            Lang::Ruby => grammars::ruby_highlights(),
            Lang::Swift => grammars::swift_highlights(),
            Lang::Go => grammars::go_highlights(),
            Lang::Java => grammars::java_highlights(),
            Lang::JavaScript => grammars::javascript_highlights(),
            Lang::TypeScript => grammars::typescript_highlights(),
            Lang::Tsx => grammars::tsx_highlights(),
            // kotlin-ng ships no highlight query.
            Lang::Kotlin | Lang::Text => None,
        }
    }
}

/// Extensions of text that is prose or data, not code.
const NOT_CODE: &[&str] = &[
    "md", "markdown", "rst", "txt", "adoc", "org", "json", "jsonl", "ndjson", "yaml", "yml",
    "toml", "lock", "csv", "tsv", "html", "htm", "xml", "svg", "ini", "cfg", "conf", "log", "css",
    "scss", "less", "ipynb", "pem", "crt",
];

/// A file in a language the table does not know but that is code by its
/// extension (`.scala`, `.ex`, `.hs`, `.sql`, ...): no grammar, so no
/// definitions, but its identifiers still count as references in the map.
pub fn is_untagged_code(path: &Path) -> bool {
    Lang::from_path(path) == Lang::Text
        && path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| !NOT_CODE.contains(&e.to_ascii_lowercase().as_str()))
}

/// The name of an item node, by its rule (see [`Name`]).
pub fn item_name(src: &str, node: tree_sitter::Node, rule: Name) -> Option<String> {
    let text = |n: tree_sitter::Node| n.utf8_text(src.as_bytes()).ok().map(str::to_string);
    match rule {
        Name::Field(field) => node.child_by_field_name(field).and_then(text),
        Name::Declarator => {
            let mut cur = node.child_by_field_name("declarator")?;
            // Pointers, arrays, parentheses and function declarators nest
            // the identifier under further `declarator` fields.
            while let Some(inner) = cur.child_by_field_name("declarator") {
                cur = inner;
            }
            matches!(
                cur.kind(),
                "identifier"
                    | "type_identifier"
                    | "field_identifier"
                    | "primitive_type"
                    | "qualified_identifier"
                    | "destructor_name"
                    | "operator_name"
            )
            .then(|| text(cur))
            .flatten()
        }
        Name::FirstDeclarator => {
            let mut cursor = node.walk();
            let first = node
                .named_children(&mut cursor)
                .find(|c| c.kind() == "variable_declarator")?;
            let name = first.child_by_field_name("name")?;
            (name.kind() == "identifier").then(|| text(name)).flatten()
        }
        Name::GoMethod => {
            let method = node.child_by_field_name("name").and_then(text)?;
            // `(s *stack)` → `stack`; generic receivers `(l *List[T])` → `List`.
            let receiver = node.child_by_field_name("receiver").and_then(text)?;
            let ty = receiver
                .trim_matches(|c| c == '(' || c == ')')
                .split_whitespace()
                .last()?
                .trim_start_matches('*')
                .split('[')
                .next()?
                .to_string();
            Some(format!("{ty}.{method}"))
        }
        Name::GoType => {
            let mut cursor = node.walk();
            let spec = node
                .named_children(&mut cursor)
                .find(|c| matches!(c.kind(), "type_spec" | "type_alias"))?;
            spec.child_by_field_name("name").and_then(text)
        }
    }
}

/// Grammars and queries behind their features; without one, a language is
/// still recognised and searchable, chunked by lines like text.
mod grammars {
    use tree_sitter::Language;

    macro_rules! grammar {
        ($name:ident, $feature:literal, $language:expr) => {
            pub(super) fn $name() -> Option<Language> {
                #[cfg(feature = $feature)]
                return Some($language.into());
                #[cfg(not(feature = $feature))]
                None
            }
        };
    }
    macro_rules! tags {
        ($name:ident, $feature:literal, $($part:expr),+) => {
            pub(super) fn $name() -> Option<String> {
                #[cfg(feature = $feature)]
                return Some([$($part),+].join("\n"));
                #[cfg(not(feature = $feature))]
                None
            }
        };
    }

    grammar!(bash, "lang-bash", tree_sitter_bash::LANGUAGE);
    grammar!(c, "lang-c", tree_sitter_c::LANGUAGE);
    grammar!(cpp, "lang-cpp", tree_sitter_cpp::LANGUAGE);
    grammar!(csharp, "lang-csharp", tree_sitter_c_sharp::LANGUAGE);
    grammar!(kotlin, "lang-kotlin", tree_sitter_kotlin_ng::LANGUAGE);
    grammar!(lua, "lang-lua", tree_sitter_lua::LANGUAGE);
    grammar!(php, "lang-php", tree_sitter_php::LANGUAGE_PHP);
    grammar!(ruby, "lang-ruby", tree_sitter_ruby::LANGUAGE);
    grammar!(swift, "lang-swift", tree_sitter_swift::LANGUAGE);
    grammar!(go, "lang-go", tree_sitter_go::LANGUAGE);
    grammar!(java, "lang-java", tree_sitter_java::LANGUAGE);
    grammar!(
        javascript,
        "lang-javascript",
        tree_sitter_javascript::LANGUAGE
    );
    grammar!(
        typescript,
        "lang-typescript",
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT
    );
    grammar!(tsx, "lang-typescript", tree_sitter_typescript::LANGUAGE_TSX);

    // C's tags.scm has definitions only: macros, calls and type uses are added.
    tags!(c_tags, "lang-c", tree_sitter_c::TAGS_QUERY, C_REFS);
    // Bash and Kotlin ship no tags query; C++ and Swift ship definitions only.
    tags!(bash_tags, "lang-bash", BASH_TAGS);
    tags!(cpp_tags, "lang-cpp", tree_sitter_cpp::TAGS_QUERY, CPP_REFS);
    tags!(csharp_tags, "lang-csharp", tree_sitter_c_sharp::TAGS_QUERY);
    tags!(kotlin_tags, "lang-kotlin", KOTLIN_TAGS);
    tags!(lua_tags, "lang-lua", tree_sitter_lua::TAGS_QUERY);
    tags!(php_tags, "lang-php", tree_sitter_php::TAGS_QUERY);
    tags!(ruby_tags, "lang-ruby", tree_sitter_ruby::TAGS_QUERY);
    tags!(
        swift_tags,
        "lang-swift",
        tree_sitter_swift::TAGS_QUERY,
        SWIFT_REFS
    );
    tags!(go_tags, "lang-go", tree_sitter_go::TAGS_QUERY);
    tags!(java_tags, "lang-java", tree_sitter_java::TAGS_QUERY);
    tags!(
        javascript_tags,
        "lang-javascript",
        tree_sitter_javascript::TAGS_QUERY
    );
    // TypeScript's tags.scm covers only what TypeScript adds to JavaScript.
    tags!(
        typescript_tags,
        "lang-typescript",
        TS_JAVASCRIPT_TAGS,
        tree_sitter_typescript::TAGS_QUERY
    );

    tags!(
        bash_highlights,
        "lang-bash",
        tree_sitter_bash::HIGHLIGHT_QUERY
    );
    tags!(c_highlights, "lang-c", tree_sitter_c::HIGHLIGHT_QUERY);
    tags!(
        cpp_highlights,
        "lang-cpp",
        tree_sitter_cpp::HIGHLIGHT_QUERY,
        tree_sitter_c::HIGHLIGHT_QUERY
    );
    tags!(
        csharp_highlights,
        "lang-csharp",
        tree_sitter_c_sharp::HIGHLIGHTS_QUERY
    );
    tags!(
        lua_highlights,
        "lang-lua",
        tree_sitter_lua::HIGHLIGHTS_QUERY
    );
    tags!(
        php_highlights,
        "lang-php",
        tree_sitter_php::HIGHLIGHTS_QUERY
    );
    tags!(
        ruby_highlights,
        "lang-ruby",
        tree_sitter_ruby::HIGHLIGHTS_QUERY
    );
    tags!(
        swift_highlights,
        "lang-swift",
        tree_sitter_swift::HIGHLIGHTS_QUERY
    );
    tags!(go_highlights, "lang-go", tree_sitter_go::HIGHLIGHTS_QUERY);
    tags!(
        java_highlights,
        "lang-java",
        tree_sitter_java::HIGHLIGHTS_QUERY
    );
    tags!(
        javascript_highlights,
        "lang-javascript",
        tree_sitter_javascript::HIGHLIGHT_QUERY
    );
    tags!(
        typescript_highlights,
        "lang-typescript",
        tree_sitter_typescript::HIGHLIGHTS_QUERY,
        tree_sitter_javascript::HIGHLIGHT_QUERY
    );
    tags!(
        tsx_highlights,
        "lang-typescript",
        tree_sitter_typescript::HIGHLIGHTS_QUERY,
        tree_sitter_javascript::JSX_HIGHLIGHT_QUERY,
        tree_sitter_javascript::HIGHLIGHT_QUERY
    );

    #[cfg(feature = "lang-c")]
    const C_REFS: &str = r#"
(preproc_function_def name: (identifier) @name) @definition.macro
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(type_identifier) @name @reference.type
"#;

    #[cfg(feature = "lang-bash")]
    const BASH_TAGS: &str = r#"
(function_definition name: (word) @name) @definition.function
(command name: (command_name (word) @name)) @reference.call
"#;

    #[cfg(feature = "lang-cpp")]
    const CPP_REFS: &str = r#"
(preproc_function_def name: (identifier) @name) @definition.macro
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
(type_identifier) @name @reference.type
"#;

    #[cfg(feature = "lang-kotlin")]
    const KOTLIN_TAGS: &str = r#"
(class_declaration name: (identifier) @name) @definition.class
(object_declaration name: (identifier) @name) @definition.class
(function_declaration name: (identifier) @name) @definition.function
(call_expression (identifier) @name) @reference.call
(user_type (identifier) @name) @reference.type
"#;

    #[cfg(feature = "lang-swift")]
    const SWIFT_REFS: &str = r#"
(call_expression (simple_identifier) @name) @reference.call
(user_type (type_identifier) @name) @reference.type
"#;

    /// JavaScript's tags without the node kinds the TypeScript grammar
    /// renamed (`function` → `function_expression` exists in both; JSX-only
    /// nodes are not in TypeScript's grammar).
    #[cfg(feature = "lang-typescript")]
    const TS_JAVASCRIPT_TAGS: &str = r#"
(method_definition name: (property_identifier) @name) @definition.method
(class_declaration name: (_) @name) @definition.class
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function)
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (member_expression property: (property_identifier) @name)) @reference.call
(new_expression constructor: (_) @name) @reference.class
"#;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lang_has_one_entry_and_extensions_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for spec in LANGS {
            assert_eq!(spec.lang.spec().name, spec.name);
            assert_eq!(Lang::from_name(spec.name), Some(spec.lang));
            for ext in spec.extensions {
                assert!(seen.insert(*ext), "{ext} claimed twice");
                let path = format!("x.{ext}");
                assert_eq!(Lang::from_path(Path::new(&path)), spec.lang);
            }
        }
        assert_eq!(Lang::from_path(Path::new("README")), Lang::Text);
        // Scripts without an extension, by their `#!` line.
        let detect = |first: &str| Lang::detect(Path::new("bin/tool"), &format!("{first}\necho\n"));
        assert_eq!(detect("#!/bin/bash"), Lang::Bash);
        assert_eq!(detect("#!/usr/bin/env bash"), Lang::Bash);
        assert_eq!(detect("#!/usr/bin/env -S python3.11 -u"), Lang::Python);
        assert_eq!(detect("#!/usr/bin/env node"), Lang::JavaScript);
        assert_eq!(detect("#!/usr/bin/ruby -w"), Lang::Ruby);
        assert_eq!(detect("#!/usr/bin/perl"), Lang::Text);
        assert_eq!(detect("no shebang"), Lang::Text);
        // An extension wins over the `#!` line.
        assert_eq!(Lang::detect(Path::new("x.md"), "#!/bin/bash\n"), Lang::Text);
        assert_eq!(Lang::from_path(Path::new("a.md")), Lang::Text);
    }

    /// Every grammar this build has loads, and its tags query compiles
    /// against it.
    #[test]
    fn every_grammar_loads_and_every_tags_query_compiles() {
        for spec in LANGS {
            let Some(grammar) = spec.lang.grammar() else {
                assert!(matches!(spec.lang, Lang::Text) || spec.syntax.is_some());
                continue;
            };
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&grammar)
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            if let Some(query) = spec.lang.tags_query() {
                let q = tree_sitter::Query::new(&grammar, &query)
                    .unwrap_or_else(|e| panic!("{} tags query: {e}", spec.name));
                let names = q.capture_names();
                assert!(names.contains(&"name"), "{}: {names:?}", spec.name);
                assert!(
                    names.iter().any(|n| n.starts_with("definition.")),
                    "{}: {names:?}",
                    spec.name
                );
                assert!(
                    names.iter().any(|n| n.starts_with("reference.")),
                    "{}: no references in {names:?}",
                    spec.name
                );
            }
            if let Some(syntax) = spec.syntax {
                // Every node kind the chunker names exists in the grammar.
                let kinds = syntax
                    .items
                    .iter()
                    .map(|i| i.node)
                    .chain(syntax.comments.iter().copied())
                    .chain(syntax.wrappers.iter().map(|w| w.0))
                    .chain(syntax.transparent.iter().map(|t| t.0))
                    .chain(syntax.namespaces.iter().copied());
                for kind in kinds {
                    assert!(
                        grammar.id_for_node_kind(kind, true) != 0,
                        "{}: no node kind {kind}",
                        spec.name
                    );
                }
            }
        }
    }
}
