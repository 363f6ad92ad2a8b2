//! A lexical pre-pass that cuts function bodies and comments out of a file
//! before tree-sitter parses it.
//!
//! Why: the map needs definitions, signatures and scopes (tree-sitter's job)
//! but from function bodies only the names they reference. Bodies and
//! comments are most of a file (three quarters of tokio's non-blank bytes),
//! and tree-sitter parses about 10 MB/s, so parsing only the skeleton makes
//! tagging several times faster. The file's references are collected here,
//! lexically, in the same pass: calls (`foo(`, `.foo(`), paths (`foo::`,
//! `::foo`), macros (`foo!`), capitalised names (types, classes) and Python
//! imports. Local variables and fields are skipped, as the queries skip them.
//!
//! The skeleton keeps every newline, so tree-sitter's line numbers are the
//! file's (Rust skeletons also lose attributes, `use` lines and indentation;
//! Python needs its indentation). Anything the lexer cannot follow (an unterminated string or
//! comment, unbalanced braces) returns `None` and the caller parses the whole
//! file instead.
//!
//! [`braces`] does the same, more simply, for Go and Java (bodies and
//! comments only), whose whole-file parses made the map slower than ctags.

/// The skeleton of a Rust file; `on_ref` gets each referenced identifier of
/// the file (outside attributes). Besides bodies and comments, attributes and
/// `use` declarations go, and so does indentation: tree-sitter lexes
/// whitespace byte by byte, and none of it is needed.
pub fn rust<'s>(src: &'s str, on_ref: &mut dyn FnMut(&'s str)) -> Option<String> {
    let b = src.as_bytes();
    let mut out = Cutter::new(src);
    let mut i = 0;
    // `fn name` (or `struct name`, …) seen and its body not yet reached;
    // `depth` counts () and [] since then.
    let mut pending_body = false;
    let mut depth = 0i32;
    // The last two significant bytes, and whether the last word was `fn`,
    // `struct`, … (then this word is a definition's name, no reference).
    let (mut prev, mut prev2) = (b';', b' ');
    let mut after_item_keyword = false;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii_whitespace() && !is_ident_start(c) && !c.is_ascii_digit() {
            (prev2, prev) = (prev, c);
        }
        match c {
            b'\n' => {
                let indent = b[i + 1..]
                    .iter()
                    .take_while(|&&c| c == b' ' || c == b'\t')
                    .count();
                out.cut(i + 1, i + 1 + indent);
                i += 1 + indent;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = line_end(b, i);
                out.cut(i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = rust_block_comment(b, i)?;
                out.cut(i, end);
                i = end;
            }
            b'#' => match attribute_open(b, i) {
                // `#[attr]` / `#![attr]`: its names (`doc`, `cfg`, `test`,
                // `derive(Debug)`) are attributes and std traits, not the
                // repository's code.
                Some(open) => {
                    let end = rust_group(b, open, b'[', b']', &mut |_| {})?;
                    out.cut(i, end);
                    i = end;
                }
                None => i += 1,
            },
            b'"' => i = rust_string(b, i + 1)?,
            b'\'' => i = rust_quote(b, i),
            b'(' | b'[' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' => {
                depth -= 1;
                i += 1;
            }
            b';' | b'}' => {
                if depth <= 0 {
                    pending_body = false;
                }
                i += 1;
            }
            b'{' if pending_body && depth <= 0 => {
                let end = rust_group(b, i, b'{', b'}', on_ref)?;
                // Keep the braces: `fn f() {}` still parses as a function with a body.
                out.cut(i + 1, end - 1);
                pending_body = false;
                i = end;
            }
            c if is_ident_start(c) => {
                let end = ident_end(b, i);
                let word = &src[i..end];
                match rust_prefixed_literal(b, word, end) {
                    Probe::End(e) => {
                        i = e;
                        continue;
                    }
                    Probe::Unterminated => return None,
                    Probe::Absent => {}
                }
                let named = || next_significant(b, end).is_some_and(|(_, c)| is_ident_start(c));
                match word {
                    // `fn name(` is an item; `fn(u32) -> u32` is a pointer type.
                    // Struct, enum and union bodies go too: fields are no definitions.
                    "fn" | "struct" | "enum" | "union" if named() => {
                        pending_body = true;
                        depth = 0;
                    }
                    "macro_rules" => {
                        // `macro_rules! name { .. }`: the rules are templates, not items.
                        let body = next_significant(b, end)
                            .filter(|&(_, c)| c == b'!')
                            .and_then(|(k, _)| next_significant(b, k + 1))
                            .filter(|&(_, c)| is_ident_start(c))
                            .and_then(|(k, _)| next_significant(b, ident_end(b, k)));
                        if let Some((open, c @ (b'{' | b'(' | b'['))) = body {
                            let close = match c {
                                b'{' => b'}',
                                b'(' => b')',
                                _ => b']',
                            };
                            let group_end = rust_group(b, open, c, close, on_ref)?;
                            out.cut(open + 1, group_end - 1);
                            i = group_end;
                            continue;
                        }
                    }
                    "use" | "pub" => match rust_use(b, i, end, on_ref) {
                        Probe::End(e) => {
                            out.cut(i, e);
                            i = e;
                            continue;
                        }
                        Probe::Unterminated => return None,
                        Probe::Absent => {}
                    },
                    _ => {}
                }
                if !after_item_keyword && rust_is_ref(b, word, end, prev, prev2) {
                    on_ref(word);
                }
                after_item_keyword = matches!(
                    word,
                    "fn" | "struct"
                        | "enum"
                        | "union"
                        | "trait"
                        | "type"
                        | "mod"
                        | "const"
                        | "static"
                );
                (prev2, prev) = (prev, b'a');
                i = end;
            }
            c if c.is_ascii_digit() => i = ident_end(b, i),
            _ => i += 1,
        }
    }
    Some(out.finish())
}

/// Whether the identifier `word` (ending at `end`, after the significant
/// bytes `prev2 prev`) is worth counting as a reference: a call (`foo(`,
/// `.foo(`), a macro (`foo!`), a path segment (`foo::`, `::foo`) or a
/// capitalised name (type, trait, variant, constant). Plain lowercase names
/// are locals, fields and parameters.
fn rust_is_ref(b: &[u8], word: &str, end: usize, prev: u8, prev2: u8) -> bool {
    if word.len() < crate::defs::MIN_REF_LEN || is_rust_keyword(word) {
        return false;
    }
    let shape = match next_significant(b, end) {
        Some((_, b'(')) => true,
        Some((k, b'!')) => b.get(k + 1) != Some(&b'='),
        Some((k, b':')) => b.get(k + 1) == Some(&b':'),
        _ => false,
    };
    shape || (prev == b':' && prev2 == b':') || word.as_bytes()[0].is_ascii_uppercase()
}

/// At a `#`: the index of the `[` if an attribute (`#[..]`, `#![..]`) starts here.
fn attribute_open(b: &[u8], i: usize) -> Option<usize> {
    let (k, c) = next_significant(b, i + 1)?;
    let (k, c) = if c == b'!' {
        next_significant(b, k + 1)?
    } else {
        (k, c)
    };
    (c == b'[').then_some(k)
}

/// What the lexer found when it looked for a construct at a position.
enum Probe {
    /// Not that construct.
    Absent,
    /// The construct, ending just before this index.
    End(usize),
    /// The construct, never closed: the lexer gives up on the file.
    Unterminated,
}

/// At `use` or `pub` (ending at `end`): if this starts a `use` declaration
/// (`use a::{b, c};`, `pub(crate) use x;`), hands all its names to `on_ref`
/// and finds the end of its `;`.
fn rust_use<'s>(b: &'s [u8], start: usize, end: usize, on_ref: &mut dyn FnMut(&'s str)) -> Probe {
    let mut k = end;
    if &b[start..end] == b"pub" {
        let after_vis = || {
            let (mut at, mut c) = next_significant(b, end)?;
            if c == b'(' {
                at += b[at..].iter().position(|&c| c == b')')? + 1;
                (at, c) = next_significant(b, at)?;
            }
            (is_ident_start(c) && &b[at..ident_end(b, at)] == b"use").then(|| ident_end(b, at))
        };
        match after_vis() {
            Some(after_use) => k = after_use,
            None => return Probe::Absent,
        }
    }
    while k < b.len() {
        match b[k] {
            b';' => return Probe::End(k + 1),
            b'/' if b.get(k + 1) == Some(&b'/') => k = line_end(b, k),
            b'/' if b.get(k + 1) == Some(&b'*') => k = rust_block_comment(b, k).unwrap_or(b.len()),
            c if is_ident_start(c) => {
                let e = ident_end(b, k);
                let word = std::str::from_utf8(&b[k..e]).unwrap_or("");
                if word.len() >= crate::defs::MIN_REF_LEN && !is_rust_keyword(word) {
                    on_ref(word);
                }
                k = e;
            }
            _ => k += 1,
        }
    }
    Probe::Unterminated
}

/// Scans a bracketed group (a function body `{ .. }`, an attribute `[ .. ]`)
/// from its opening byte at `start` to just past the matching close, handing
/// referenced names to `on_ref`.
fn rust_group<'s>(
    b: &'s [u8],
    start: usize,
    open: u8,
    close: u8,
    on_ref: &mut dyn FnMut(&'s str),
) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    // The last two significant (non-blank) bytes before the current token.
    let (mut prev, mut prev2) = (open, b' ');
    while i < b.len() {
        let c = b[i];
        match c {
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = line_end(b, i);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = rust_block_comment(b, i)?;
                continue;
            }
            b'"' => {
                i = rust_string(b, i + 1)?;
                (prev2, prev) = (prev, b'"');
                continue;
            }
            b'\'' => {
                i = rust_quote(b, i);
                (prev2, prev) = (prev, b'\'');
                continue;
            }
            b'#' if c != open => {
                // Attributes inside bodies and macro rules: no references (see `rust`).
                if let Some(attr) = attribute_open(b, i) {
                    i = rust_group(b, attr, b'[', b']', &mut |_| {})?;
                    continue;
                }
            }
            c if is_ident_start(c) => {
                let end = ident_end(b, i);
                // Safe: identifiers start and end on char boundaries of the &str we came from.
                let word = std::str::from_utf8(&b[i..end]).ok()?;
                match rust_prefixed_literal(b, word, end) {
                    Probe::End(e) => {
                        i = e;
                        (prev2, prev) = (prev, b'"');
                        continue;
                    }
                    Probe::Unterminated => return None,
                    Probe::Absent => {}
                }
                if rust_is_ref(b, word, end, prev, prev2) {
                    on_ref(word);
                }
                (prev2, prev) = (prev, b'a');
                i = end;
                continue;
            }
            c if c.is_ascii_digit() => {
                i = ident_end(b, i);
                (prev2, prev) = (prev, b'0');
                continue;
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            (prev2, prev) = (prev, c);
        }
        i += 1;
    }
    None
}

/// A literal with a prefix word (`r"…"`, `r#"…"#`, `b"…"`, `br"…"`, `c"…"`,
/// `b'x'`) starting at the word that ends at `end`.
fn rust_prefixed_literal(b: &[u8], word: &str, end: usize) -> Probe {
    let next = b.get(end).copied();
    match (word, next) {
        ("b", Some(b'\'')) => Probe::End(rust_quote(b, end)),
        ("b" | "c", Some(b'"')) => rust_string(b, end + 1).map_or(Probe::Unterminated, Probe::End),
        ("r" | "br" | "cr", Some(b'"' | b'#')) => {
            let hashes = b[end..].iter().take_while(|&&c| c == b'#').count();
            if b.get(end + hashes) != Some(&b'"') {
                return Probe::Absent; // r#ident: a raw identifier
            }
            let mut i = end + hashes + 1;
            loop {
                let Some(p) = b[i..].iter().position(|&c| c == b'"') else {
                    return Probe::Unterminated;
                };
                let q = i + p;
                if b.len() >= q + 1 + hashes && b[q + 1..q + 1 + hashes].iter().all(|&c| c == b'#')
                {
                    return Probe::End(q + 1 + hashes);
                }
                i = q + 1;
            }
        }
        _ => Probe::Absent,
    }
}

/// After the opening `"` of a (non-raw) string: the index past its closing quote.
fn rust_string(b: &[u8], mut i: usize) -> Option<usize> {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// At a `'`: skips a char literal (`'x'`, `'\n'`, `'é'`), or only the quote of
/// a lifetime or label (`'a`, `'static`).
fn rust_quote(b: &[u8], i: usize) -> usize {
    match b.get(i + 1) {
        Some(b'\\') => {
            // Escapes are short (`'\u{10FFFF}'` is the longest).
            let limit = (i + 14).min(b.len());
            (i + 3..limit)
                .find(|&j| b[j] == b'\'')
                .map_or(i + 1, |j| j + 1)
        }
        Some(&c) => {
            let len = utf8_len(c);
            if b.get(i + 1 + len) == Some(&b'\'') {
                i + 2 + len
            } else {
                i + 1
            }
        }
        None => i + 1,
    }
}

/// At `/*`: the index past the matching `*/` (Rust block comments nest).
fn rust_block_comment(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0;
    while i + 1 < b.len() {
        match (b[i], b[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn is_rust_keyword(w: &str) -> bool {
    matches!(
        w,
        "as" | "async"
            | "macro_rules"
            | "await"
            | "break"
            | "const"
            | "continue"
            | "crate"
            | "dyn"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "for"
            | "impl"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "self"
            | "Self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
    )
}

/// The skeleton of a Python file: each function body becomes `pass` (on the
/// body's first line, at its indentation) and comments go; `on_ref` gets the
/// referenced identifiers of the file.
pub fn python<'s>(src: &'s str, on_ref: &mut dyn FnMut(&'s str)) -> Option<String> {
    let b = src.as_bytes();
    let mut out = Cutter::new(src);
    // While cutting a body: the `def`'s indentation and where the cut started.
    let mut cutting: Option<(usize, usize)> = None;
    let mut pass_written = false;
    let mut line = 0usize; // start of the current physical line
    while line < b.len() {
        let indent = b[line..]
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
        let first = line + indent;
        let blank = matches!(b.get(first), None | Some(b'\n' | b'\r' | b'#'));
        if let Some((def_indent, cut_from)) = cutting {
            if blank || indent > def_indent {
                // Still in the body: collect its references, drop the line.
                let end = py_logical_line(b, first, on_ref)?;
                if !blank && !pass_written {
                    // `pass` keeps the def well-formed for tree-sitter.
                    out.cut(cut_from, line);
                    out.insert(line + indent, "pass");
                    out.cut(line + indent, end);
                    cutting = Some((def_indent, end));
                    pass_written = true;
                }
                line = end + 1;
                continue;
            }
            if pass_written {
                out.cut(cut_from, line);
            }
            cutting = None;
        }
        if blank {
            // Comment-only or empty line outside bodies: drop the comment.
            let end = line_end(b, first);
            out.cut(first, end);
            line = end + 1;
            continue;
        }
        let word_end = ident_end(b, first);
        let mut word = &src[first..word_end];
        if word == "async" {
            let (k, _) = next_significant(b, word_end).unwrap_or((word_end, b' '));
            word = &src[k..ident_end(b, k)];
        }
        let end = py_logical_line(b, first, on_ref)?;
        if word == "def" {
            // The header ends at the `:` outside brackets; a body on the same
            // line (`def f(): return 1`) is rare and kept.
            let header = &b[first..end];
            let tail = py_header_tail(header).map(|c| first + c + 1);
            if let Some(t) = tail {
                let rest = b[t..end].iter().find(|c| !c.is_ascii_whitespace());
                if matches!(rest, None | Some(b'#')) {
                    out.cut(t, end);
                    cutting = Some((indent, (end + 1).min(b.len())));
                    pass_written = false;
                }
            }
        } else {
            out.cut_comments(b, first, end);
        }
        line = end + 1;
    }
    if let Some((_, cut_from)) = cutting {
        if pass_written {
            out.cut(cut_from, b.len());
        }
    }
    Some(out.finish())
}

/// Offset of the `:` that ends a `def` header (outside brackets, strings, comments).
fn py_header_tail(h: &[u8]) -> Option<usize> {
    let mut depth = 0i32;
    let mut i = 0;
    while i < h.len() {
        match h[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b':' if depth == 0 => return Some(i),
            b'#' => i = line_end(h, i),
            b'"' | b'\'' => {
                i = py_string(h, i)?;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// From `start`, the end (index of the `\n`, or the length) of the logical
/// line: brackets, backslashes and strings continue it. Hands the referenced
/// identifiers on the way to `on_ref`: calls, decorators, capitalised names
/// (classes) and every name of an `import` line.
fn py_logical_line<'s>(
    b: &'s [u8],
    start: usize,
    on_ref: &mut dyn FnMut(&'s str),
) -> Option<usize> {
    let mut depth = 0i32;
    let mut i = start;
    let mut import_line = false;
    let mut first_word = true;
    let mut prev = b'\n';
    let mut prev_word = "";
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' if depth <= 0 => return Some(i),
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if b.get(i + 1) == Some(&b'\r') => i += 3,
            b'#' => i = line_end(b, i),
            b'"' | b'\'' => i = py_string(b, i)?,
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth -= 1;
                i += 1;
            }
            c if is_ident_start(c) => {
                let end = ident_end(b, i);
                if matches!(b.get(end), Some(b'"' | b'\'')) && is_py_string_prefix(&b[i..end]) {
                    i = py_string(b, end)?;
                    continue;
                }
                let word = std::str::from_utf8(&b[i..end]).ok()?;
                if first_word {
                    import_line = matches!(word, "import" | "from");
                    first_word = false;
                }
                let call = next_significant(b, end).is_some_and(|(_, c)| c == b'(');
                let is_ref =
                    import_line || call || prev == b'@' || word.as_bytes()[0].is_ascii_uppercase();
                let defined_here = matches!(prev_word, "def" | "class");
                if is_ref
                    && !defined_here
                    && word.len() >= crate::defs::MIN_REF_LEN
                    && !is_py_keyword(word)
                {
                    on_ref(word);
                }
                prev_word = word;
                prev = b'a';
                i = end;
                continue;
            }
            c if c.is_ascii_digit() => {
                i = ident_end(b, i);
                continue;
            }
            _ => i += 1,
        }
        if !c.is_ascii_whitespace() {
            prev = c;
        }
    }
    Some(b.len())
}

fn is_py_string_prefix(p: &[u8]) -> bool {
    p.len() <= 2
        && p.iter()
            .all(|c| matches!(c.to_ascii_lowercase(), b'r' | b'b' | b'u' | b'f' | b't'))
}

/// At a quote: the index past the string (single or triple quoted).
fn py_string(b: &[u8], i: usize) -> Option<usize> {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            c if c == q => {
                if !triple {
                    return Some(j + 1);
                }
                if b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q) {
                    return Some(j + 3);
                }
                j += 1;
            }
            b'\n' if !triple => return None,
            _ => j += 1,
        }
    }
    None
}

fn is_py_keyword(w: &str) -> bool {
    matches!(
        w,
        "and"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "import"
            | "lambda"
            | "nonlocal"
            | "not"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
            | "None"
            | "True"
            | "False"
            | "self"
            | "cls"
    )
}

/// Builds the skeleton: copies the source except cut ranges, which leave
/// only their newlines behind (and one space, so tokens never glue together).
/// Brace languages whose function bodies the skeleton cuts (`braces`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Braces {
    /// `func ... {`: bodies of top-level functions and methods.
    Go,
    /// `... name(...) ... {` inside a class body: methods and constructors.
    Java,
}

/// The skeleton of a Go or Java file: function and method bodies and
/// comments cut (their newlines kept), everything else as it is. `on_ref` gets the
/// references inside the cut bodies: calls (`foo(`), members (`.foo`),
/// capitalised names and, in Go, composite literals (`withStack{`). The
/// rest of the file is left to the tags query. `None` when the lexer
/// cannot follow the file (an unterminated string, unbalanced braces).
pub fn braces<'s>(src: &'s str, lang: Braces, on_ref: &mut dyn FnMut(&'s str)) -> Option<String> {
    let b = src.as_bytes();
    let mut out = Cutter::new(src);
    // What each open `{` is: true for a class-like body (Java), where
    // methods are found; Go looks at depth 0 only.
    let mut open: Vec<bool> = Vec::new();
    // The current declaration's head since the last `;`, `{` or `}`.
    let mut head_start = 0;
    let mut parens = 0i32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            // Comments go too: doc comments are a large part of Go and Java files.
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => {
                let end = c_comment_end(b, i)?;
                out.cut(i, end);
                // A comment before a declaration is not part of its head.
                if src[head_start..i].trim().is_empty() {
                    head_start = end;
                }
                i = end;
            }
            b'"' | b'\'' | b'`' => i = quoted_end(b, i)?,
            b'(' => {
                parens += 1;
                i += 1;
            }
            b')' => {
                parens -= 1;
                i += 1;
            }
            b';' if parens == 0 => {
                head_start = i + 1;
                i += 1;
            }
            b'{' if parens == 0 => {
                let head = &src[head_start..i];
                let class_body = open.last().copied().unwrap_or(true);
                let is_body = match lang {
                    Braces::Go => open.is_empty() && go_decl_is_func(head) && !type_brace(head),
                    Braces::Java => {
                        class_body
                            && head.contains('(')
                            && !is_class_head(head)
                            && !head.contains("->")
                            && !head.contains('=')
                    }
                };
                if is_body {
                    let end = body_end(b, i)?;
                    body_refs(src, i + 1, end, lang, on_ref);
                    out.cut(i + 1, end);
                    // Past the closing brace, which stays.
                    i = end + 1;
                    head_start = i;
                    continue;
                }
                open.push(lang == Braces::Java && is_class_head(head));
                head_start = i + 1;
                i += 1;
            }
            b'}' if parens == 0 => {
                open.pop()?;
                head_start = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    (open.is_empty() && parens == 0).then(|| out.finish())
}

/// Go has no `;` between declarations: the one a `{` belongs to starts on
/// the last line of `head` that begins in column 0 (a `)` closing a
/// multi-line parameter list aside).
fn go_decl_is_func(head: &str) -> bool {
    head.lines()
        .rev()
        .find(|l| l.starts_with(|c: char| !c.is_whitespace() && c != ')'))
        .is_some_and(|l| l.starts_with("func ") || l.starts_with("func("))
}

/// `func f() interface{` / `struct{`: a type's brace in a Go signature.
fn type_brace(head: &str) -> bool {
    let head = head.trim_end();
    head.ends_with("interface") || head.ends_with("struct")
}

fn is_class_head(head: &str) -> bool {
    head.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '@')
        .any(|w| matches!(w, "class" | "interface" | "enum" | "record" | "@interface"))
}

/// Where the `//` or `/* */` comment starting at `i` ends (Go and Java
/// block comments do not nest, unlike Rust's); `None` if it never does.
fn c_comment_end(b: &[u8], i: usize) -> Option<usize> {
    if b[i + 1] == b'/' {
        return Some(line_end(b, i));
    }
    b[i + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map(|p| i + 2 + p + 2)
}

/// Where the string, char or raw string starting at `i` ends (after it).
fn quoted_end(b: &[u8], i: usize) -> Option<usize> {
    let q = b[i];
    // Java text blocks: `"""` .. `"""`.
    if q == b'"' && b[i..].starts_with(b"\"\"\"") {
        let rest = &b[i + 3..];
        return rest
            .windows(3)
            .position(|w| w == b"\"\"\"")
            .map(|p| i + 3 + p + 3);
    }
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if q != b'`' => j += 2,
            c if c == q => return Some(j + 1),
            b'\n' if q != b'`' => return None,
            _ => j += 1,
        }
    }
    None
}

/// The index of the `}` that closes the `{` at `open`.
fn body_end(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => i = c_comment_end(b, i)?,
            b'"' | b'\'' | b'`' => i = quoted_end(b, i)?,
            b'{' => {
                depth += 1;
                i += 1;
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// References inside a cut body (see [`braces`]).
fn body_refs<'s>(
    src: &'s str,
    from: usize,
    to: usize,
    lang: Braces,
    on_ref: &mut dyn FnMut(&'s str),
) {
    let b = src.as_bytes();
    let mut i = from;
    while i < to {
        let c = b[i];
        if c == b'"' || c == b'\'' || c == b'`' {
            i = quoted_end(b, i).unwrap_or(to).min(to);
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            i = line_end(b, i).min(to);
            continue;
        }
        if !is_ident_start(c) {
            i += 1;
            continue;
        }
        let end = ident_end(b, i).min(to);
        let word = &src[i..end];
        let member = i > 0 && b[i - 1] == b'.';
        let next = next_significant(b, end).map(|(_, c)| c);
        let is_ref = word.len() >= 3
            && !is_brace_keyword(word)
            && (member
                || next == Some(b'(')
                || word.as_bytes()[0].is_ascii_uppercase()
                || (lang == Braces::Go && next == Some(b'{')));
        if is_ref {
            on_ref(word);
        }
        i = end;
    }
}

fn is_brace_keyword(w: &str) -> bool {
    matches!(
        w,
        "func"
            | "return"
            | "for"
            | "range"
            | "switch"
            | "case"
            | "default"
            | "defer"
            | "else"
            | "break"
            | "continue"
            | "select"
            | "chan"
            | "struct"
            | "interface"
            | "var"
            | "const"
            | "type"
            | "nil"
            | "true"
            | "false"
            | "new"
            | "this"
            | "super"
            | "null"
            | "while"
            | "try"
            | "catch"
            | "finally"
            | "throw"
            | "throws"
            | "static"
            | "final"
            | "public"
            | "private"
            | "protected"
            | "void"
            | "int"
            | "long"
            | "boolean"
            | "double"
            | "float"
            | "char"
            | "byte"
            | "short"
            | "instanceof"
            | "synchronized"
            | "String"
            | "Object"
    )
}

struct Cutter<'s> {
    src: &'s str,
    out: String,
    /// Source up to here is already in `out` (or cut).
    done: usize,
}

impl<'s> Cutter<'s> {
    fn new(src: &'s str) -> Self {
        Cutter {
            src,
            out: String::with_capacity(src.len() / 2),
            done: 0,
        }
    }

    /// Drops `src[from..to]` (ranges come in increasing order), keeping its newlines.
    fn cut(&mut self, from: usize, to: usize) {
        if to <= from || from < self.done {
            return;
        }
        self.out.push_str(&self.src[self.done..from]);
        let newlines = self.src.as_bytes()[from..to]
            .iter()
            .filter(|&&c| c == b'\n')
            .count();
        if !self.out.ends_with([' ', '\n', '\t']) {
            self.out.push(' ');
        }
        for _ in 0..newlines {
            self.out.push('\n');
        }
        self.done = to;
    }

    /// Copies up to `at`, then `text`.
    fn insert(&mut self, at: usize, text: &str) {
        if at >= self.done {
            self.out.push_str(&self.src[self.done..at]);
            self.done = at;
        }
        self.out.push_str(text);
    }

    /// Drops the comments in `src[from..to]` (a logical line outside bodies).
    fn cut_comments(&mut self, b: &[u8], from: usize, to: usize) {
        let mut i = from;
        while i < to {
            match b[i] {
                b'#' => {
                    let end = line_end(b, i).min(to);
                    self.cut(i, end);
                    i = end;
                }
                b'"' | b'\'' => i = py_string(b, i).unwrap_or(to),
                c if is_ident_start(c) => {
                    let end = ident_end(b, i);
                    if matches!(b.get(end), Some(b'"' | b'\'')) && is_py_string_prefix(&b[i..end]) {
                        i = py_string(b, end).unwrap_or(to);
                    } else {
                        i = end;
                    }
                }
                _ => i += 1,
            }
        }
    }

    fn finish(mut self) -> String {
        self.out.push_str(&self.src[self.done..]);
        self.out
    }
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

/// End of an identifier (or number) starting at `i`; non-ASCII bytes count as
/// identifier characters, so the end is always a char boundary.
fn ident_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
        i += 1;
    }
    i
}

/// Index of the `\n` ending the line that contains `i` (or the length).
fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p)
}

/// The next non-whitespace byte at or after `i`, with its index.
fn next_significant(b: &[u8], i: usize) -> Option<(usize, u8)> {
    b[i..]
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .map(|p| (i + p, b[i + p]))
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust_refs(src: &str) -> (String, Vec<String>) {
        let mut refs = Vec::new();
        let out = rust(src, &mut |r| refs.push(r.to_string())).expect("lexes");
        refs.sort();
        (out, refs)
    }

    #[test]
    fn rust_bodies_comments_attributes_and_uses_are_cut_keeping_lines() {
        let src = "/// Doc.\nuse crate::walk::{walk, Lang};\npub(crate) use std::fmt::Display;\n#[derive(Debug)]\npub fn a(x: u32) -> u32 {\n    let s = \"}{\";\n    helper(x) // call\n}\n/* c\n */ struct S { f: fn(u32) -> u32 }\n#![allow(x)]\nimpl S {\n    fn b(&self) { Other::new(); }\n}\n";
        let (out, refs) = rust_refs(src);
        assert_eq!(out.lines().count(), src.lines().count());
        assert_eq!(
            out,
            " \n\n\n\npub fn a(x: u32) -> u32 { \n\n\n}\n\n struct S { }\n\nimpl S {\nfn b(&self) { }\n}\n"
        );
        assert_eq!(
            refs,
            ["Display", "Lang", "Other", "fmt", "helper", "new", "std", "walk", "walk"]
        );
    }

    #[test]
    fn rust_lexer_handles_literals_lifetimes_and_raw_strings() {
        let src = r####"
fn f<'a>(x: &'a str) -> char {
    let c = '{';
    let d = '\'';
    let e = b'}';
    let r = r#"a "quoted" } string"#;
    let br = br##"}"##;
    'outer: loop { break 'outer; }
    let u = 'é';
    vec.iter().map(|v| v.len()).collect::<Vec<_>>();
    println!("{}", format_it(x));
    Self::make(1u32, 0xFFu8 as usize != 2)
}
pub fn after() {}
"####;
        let (out, refs) = rust_refs(src);
        assert!(out.contains("pub fn after() {}"), "{out}");
        assert_eq!(out.lines().count(), src.lines().count());
        assert_eq!(
            refs,
            [
                "Vec",
                "collect",
                "format_it",
                "iter",
                "len",
                "make",
                "map",
                "println"
            ]
        );
    }

    #[test]
    fn rust_lexer_gives_up_on_unbalanced_input() {
        assert!(rust("fn f() { let s = \"open", &mut |_| {}).is_none());
        assert!(rust("fn f() { {", &mut |_| {}).is_none());
        assert!(rust("/* open", &mut |_| {}).is_none());
    }

    #[test]
    fn python_bodies_become_pass() {
        let src = "import os\n\n# comment\nclass A(Base):\n    \"\"\"Doc.\"\"\"\n\n    @property\n    def f(self, x: int = 1) -> Dict[str, int]:  # note\n        \"\"\"Doc\n        string.\"\"\"\n        from .utils import helper\n\n        return helper(x) + Other.make()\n\n    def g(self): return 1\n\n\nasync def h(\n    a,\n):\n    await run(a)\nX = 1\n";
        let mut refs = Vec::new();
        let out = python(src, &mut |r| refs.push(r.to_string())).expect("lexes");
        refs.sort();
        assert_eq!(out.lines().count(), src.lines().count(), "{out}");
        assert_eq!(
            out,
            "import os\n\n\nclass A(Base):\n    \"\"\"Doc.\"\"\"\n\n    @property\n    def f(self, x: int = 1) -> Dict[str, int]: \n        pass \n\n\n\n\n\n    def g(self): return 1\n\n\nasync def h(\n    a,\n):\n    pass \nX = 1\n"
        );
        // Bodies and item level alike; `A`, `f`, `g`, `h` are defined here.
        assert_eq!(
            refs,
            ["Base", "Dict", "Other", "helper", "helper", "make", "property", "run", "utils"]
        );
    }

    /// Editors save half-typed code: every prefix of a file must lex or give
    /// up cleanly, never panic, and a skeleton keeps the line count.
    #[test]
    fn truncated_sources_never_panic() {
        let rust_src = r####"
#![doc = "x"]
use a::{b, c as d};
pub(crate) use e::f;
/// doc
#[derive(Debug)] pub struct S<'a> { f: &'a str, g: fn(u8) -> u8 }
impl<'a> S<'a> {
    pub fn new(x: &'a str) -> Self { let c = '{'; let r = r#"}"#; let b = b'}'; Self { f: x, g: |v| v } }
    /* block /* nested */ */ fn other(&self) -> char { '\'' }
}
macro_rules! m { ($x:expr) => { $x + 1 }; }
cfg_x! { pub fn inside() { m!(1); } }
"####;
        let py_src = "import os\nclass A(B):\n    '''doc'''\n    @dec\n    def f(self, x=(1, 2)):  # c\n        return g(x) + \\\n            h(\"s\")\n\nasync def k():\n    pass\n";
        for (src, is_rust) in [(rust_src, true), (py_src, false)] {
            for (cut, _) in src.char_indices() {
                let prefix = &src[..cut];
                let skeleton = if is_rust {
                    rust(prefix, &mut |_| {})
                } else {
                    python(prefix, &mut |_| {})
                };
                if let Some(out) = skeleton {
                    assert_eq!(
                        out.matches('\n').count(),
                        prefix.matches('\n').count(),
                        "{prefix:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn python_lexer_gives_up_on_unterminated_strings() {
        assert!(python("def f():\n    x = \"\"\"open\n", &mut |_| {}).is_none());
    }

    /// Go and Java bodies are cut, their newlines kept, their calls reported.
    #[test]
    fn go_and_java_bodies_are_cut() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/lang/");
        for (file, kind, call) in [
            ("errors.go", Braces::Go, "callers"),
            (
                "RNLocalizeModuleImpl.java",
                Braces::Java,
                "getCountryCodeForLocale",
            ),
        ] {
            let src = std::fs::read_to_string(format!("{dir}{file}")).unwrap();
            let mut refs = Vec::new();
            let out = braces(&src, kind, &mut |r| refs.push(r))
                .unwrap_or_else(|| panic!("{file}: no skeleton"));
            assert_eq!(out.lines().count(), src.lines().count(), "{file}");
            assert!(
                out.len() * 2 < src.len(),
                "{file}: {} of {} bytes left",
                out.len(),
                src.len()
            );
            assert!(refs.contains(&call), "{file}: {refs:?}");
        }
    }
}
