//! Long requests: an issue text of prose, code, tracebacks and names, taken
//! apart so that each search leg gets what it is good at.
//!
//! A one-line query goes to both legs as it is. A long one (a bug report, a
//! feature request) is split into:
//! - passages for the vector leg: MiniLM reads 256 tokens, an issue runs to
//!   thousands, so the text is cut at paragraph boundaries and each piece is
//!   embedded;
//! - terms for BM25: names written in code form (`LatexPrinter`,
//!   `_print_Mul`, `sympy.printing.latex`) and everything inside code blocks
//!   and tracebacks, kept apart from the prose words so they can weigh more;
//!   filler words of bug reports ("expected", "following") are dropped;
//! - the files it names: paths (tracebacks, text) and dotted module paths,
//!   which the file ranking looks up in the repository.

use std::collections::HashSet;

/// Queries with more words than this (or more than a few lines) are long.
const SHORT_QUERY_WORDS: usize = 40;
/// Words per vector passage: about 256 MiniLM tokens of mixed prose and code.
const PASSAGE_WORDS: usize = 150;
/// Passages embedded per query: each costs one embedder call.
pub const MAX_PASSAGES: usize = 6;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LongQuery {
    /// Pieces of the text for the vector leg, in text order.
    pub passages: Vec<String>,
    /// Names in code form and words from code blocks, tracebacks and inline
    /// code, as BM25 query text (identifier parts included).
    pub code_terms: Vec<String>,
    /// The remaining prose words, lower-case, without filler.
    pub prose_terms: Vec<String>,
    /// Paths the text names, with `/` separators and no leading `./` or
    /// absolute prefix; dotted module paths become `a/b/c` (no extension).
    pub named_paths: Vec<String>,
    /// The first line when it reads as a title (an issue's summary).
    pub title: Option<String>,
}

impl LongQuery {
    /// The names whose definitions the file ranking looks up: the names in
    /// code form, but for one- and two-letter ones (`x`, `df`).
    pub fn lookup_names(&self) -> HashSet<String> {
        self.code_terms
            .iter()
            .filter(|n| n.len() > 2)
            .cloned()
            .collect()
    }
}

/// Whether `text` is long enough to be taken apart.
pub fn is_long(text: &str) -> bool {
    text.split_whitespace().count() > SHORT_QUERY_WORDS
        || text.lines().filter(|l| !l.trim().is_empty()).count() > 3
}

/// What a query is, which decides how search weighs its legs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A name or a few, as code writes them (`getfixturevalue`,
    /// `FixtureRequest.getfixturevalue`, `parse_into()`): BM25 and the
    /// definitions know them; a sentence embedder hardly does.
    Names,
    /// Words: a question or a description, what the vector leg is for.
    Prose,
    /// A long text (an issue), taken apart by [`analyze`].
    Issue,
}

/// Most words a query of names has (`Config.getoption addinivalue_line`).
const MAX_NAMES_IN_A_QUERY: usize = 3;

/// The shape of a query: a long text is an issue; one word, or up to three
/// all in code form, are names; the rest is prose.
pub fn shape(text: &str) -> Shape {
    if is_long(text) {
        return Shape::Issue;
    }
    let words = query_words(text);
    let is_name = |w: &str| {
        let bare = w.trim_end_matches("()");
        !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':'))
    };
    let code_form = |w: &str| {
        let bare = w.trim_end_matches("()");
        w.ends_with("()") || bare.contains(['.', ':']) || is_code_form(bare)
    };
    match words.as_slice() {
        [one] if is_name(one) => Shape::Names,
        many if many.len() <= MAX_NAMES_IN_A_QUERY
            && many.iter().all(|w| is_name(w) && code_form(w)) =>
        {
            Shape::Names
        }
        _ => Shape::Prose,
    }
}

/// A one-line query's words, without the quotes, backticks and
/// punctuation a question wraps names in.
fn query_words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '?' | ',' | ';' | '!')))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Takes a long query apart (see the module docs).
pub fn analyze(text: &str) -> LongQuery {
    let text = &without_console_noise(&without_template(text));
    let mut q = LongQuery {
        passages: passages(text),
        title: title(text),
        ..LongQuery::default()
    };
    let mut seen_code = HashSet::new();
    let mut seen_prose = HashSet::new();
    let mut seen_path = HashSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let code_line = in_fence
            || trimmed.starts_with(">>>")
            || trimmed.starts_with("... ")
            || trimmed.starts_with("File \"")
            || line.starts_with("    ")
            || line.starts_with('\t')
            || looks_like_error(trimmed);
        for path in paths_in(line) {
            push_once(&mut q.named_paths, &mut seen_path, path);
        }
        let mut in_backticks = false;
        for (token, after, backticked) in tokens(line, &mut in_backticks) {
            if (code_line || backticked) && is_module_path(&token) {
                push_once(&mut q.named_paths, &mut seen_path, token.replace('.', "/"));
            }
            for part in token.split('.').filter(|p| !p.is_empty()) {
                let code = code_line || backticked || after == '(' || is_code_form(part);
                if code {
                    if is_keyword(part) || part.chars().all(|c| c.is_ascii_digit() || c == '_') {
                        continue;
                    }
                    push_once(&mut q.code_terms, &mut seen_code, part.to_string());
                } else {
                    let w = part.to_lowercase();
                    if w.len() > 2 && !is_filler(&w) && !w.chars().all(|c| c.is_ascii_digit()) {
                        push_once(&mut q.prose_terms, &mut seen_prose, w);
                    }
                }
            }
        }
    }
    q.prose_terms.retain(|w| !seen_code.contains(w.as_str()));
    q
}

/// The text's first line, when it is short enough to be a title, without
/// a tracker's tag (`[Bug]: `, `BUG: `).
fn title(text: &str) -> Option<String> {
    let mut first = text.lines().find(|l| !l.trim().is_empty())?.trim();
    if let Some((tag, rest)) = first.strip_prefix('[').and_then(|r| r.split_once(']')) {
        if !tag.contains(' ') {
            first = rest.trim_start_matches(':').trim();
        }
    }
    if let Some((tag, rest)) = first.split_once(": ") {
        if tag.len() <= 5 && tag.chars().all(|c| c.is_ascii_uppercase()) {
            first = rest.trim();
        }
    }
    let words = first.split_whitespace().count();
    (2..=20).contains(&words).then(|| first.to_string())
}

/// The text without what issue templates add: their short section headings
/// (`### Bug summary`, `#### Steps/Code to Reproduce`), the same words in
/// every issue, and their environment sections (`### Matplotlib Version`,
/// `#### Versions`, `### Operating system`), whose package lists and
/// version numbers match the project's own version-reporting code.
fn without_template(text: &str) -> String {
    const ENVIRONMENT: &[&str] = &[
        "version",
        "operating system",
        "backend",
        "installation",
        "environment",
        "system info",
        "platform",
    ];
    let mut out = String::with_capacity(text.len());
    let (mut in_fence, mut skipping) = (false, false);
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_fence = !in_fence;
        }
        let heading = if in_fence || t.starts_with("```") {
            None
        } else if let Some(h) = t.strip_prefix('#') {
            let h = h.trim_start_matches('#');
            h.starts_with(' ').then(|| h.trim())
        } else {
            t.strip_prefix("**")
                .and_then(|h| h.trim_end_matches(':').strip_suffix("**"))
                .filter(|h| !h.contains("**"))
        };
        if let Some(h) = heading {
            let lower = h.to_lowercase();
            skipping = ENVIRONMENT.iter().any(|w| lower.contains(w));
            if skipping || h.split_whitespace().count() <= 4 {
                continue;
            }
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Appends `item` unless it was seen before (text order, no repeats).
fn push_once(list: &mut Vec<String>, seen: &mut HashSet<String>, item: String) {
    if seen.insert(item.clone()) {
        list.push(item);
    }
}

/// The text without what interactive sessions add around the code: the
/// banner of an IPython or Python session (its version and help lines) and
/// the `In [3]:` / `Out[3]:` prompts. Pasted sessions are common in bug
/// reports, and their words otherwise match the project's own REPL code.
fn without_console_noise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let t = line.trim_start();
        let starts_with_version = |prefix: &str| {
            t.strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        };
        let banner = starts_with_version("Python ")
            || starts_with_version("IPython ")
            || t.starts_with("Type \"copyright\"")
            || t.starts_with("Type \"help\"")
            || t.split_once(" -> ").is_some_and(|(head, _)| {
                let head = head.trim();
                !head.is_empty() && !head.contains(' ')
            });
        if banner {
            continue;
        }
        out.push_str(strip_prompt(t).unwrap_or(line));
        out.push('\n');
    }
    out
}

/// The code after an IPython prompt (`In [3]: x`, `Out[3]: y`).
fn strip_prompt(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("In [")
        .or_else(|| line.strip_prefix("Out["))?;
    let (n, after) = rest.split_once("]:")?;
    n.chars()
        .all(|c| c.is_ascii_digit())
        .then(|| after.trim_start())
}

/// `Error:` / `Exception:` lines of a traceback or log.
fn looks_like_error(line: &str) -> bool {
    let head = line.split(':').next().unwrap_or("");
    !head.contains(' ')
        && (head.ends_with("Error") || head.ends_with("Exception") || head.ends_with("Warning"))
        && line.len() > head.len()
}

/// Identifier-like tokens with the character after each and whether the
/// token sits in `inline code`. Dots join parts (`a.b.C`); a trailing dot
/// (sentence end) is dropped.
fn tokens(line: &str, in_backticks: &mut bool) -> Vec<(String, char, bool)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in line.chars() {
        let part_of = c.is_alphanumeric() || c == '_' || (c == '.' && !cur.is_empty());
        if part_of {
            cur.push(c);
            continue;
        }
        if !cur.is_empty() {
            let token = cur.trim_end_matches('.').to_string();
            if !token.is_empty() {
                out.push((token, c, *in_backticks));
            }
            cur.clear();
        }
        if c == '`' {
            *in_backticks = !*in_backticks;
        }
    }
    if !cur.is_empty() {
        let token = cur.trim_end_matches('.').to_string();
        if !token.is_empty() {
            out.push((token, ' ', *in_backticks));
        }
    }
    out
}

/// `package.module` or `package.module.Name`: lower-case parts, perhaps a
/// capitalised last one; not an attribute of a local (`self.x`) nor a file
/// name (`basic.py`).
fn is_module_path(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    let last = parts.len() - 1;
    parts.len() >= 2
        && !["self", "cls", "other", "np", "os", "sys", "re"].contains(&parts[0])
        && ![
            "py", "pyi", "rs", "txt", "rst", "md", "c", "h", "cfg", "toml",
        ]
        .contains(&parts[last])
        && parts.iter().enumerate().all(|(i, p)| {
            !p.is_empty()
                && p.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                && (i == last || !p.chars().any(|c| c.is_uppercase()))
        })
}

/// The names a one-line query asks for by name, whose definitions search
/// puts first: the whole query when it is one identifier (`getfixturevalue`,
/// `FixtureRequest.getfixturevalue`, `Engine::load`, `reuse_prefix()`), else
/// its words in code form (`how is parse_args used`). The last part of a
/// qualified name is the one defined.
pub fn named_identifiers(text: &str) -> Vec<String> {
    let is_ident = |w: &str| {
        w.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let last_part = |w: &str| -> Option<String> {
        let w = w.trim_end_matches("()");
        let last = w.rsplit(['.', ':']).next()?;
        (last.len() > 2 && is_ident(last)).then(|| last.to_string())
    };
    let words = query_words(text);
    let mut names: Vec<String> = match words.as_slice() {
        [one] => last_part(one).into_iter().collect(),
        _ => words
            .iter()
            .filter(|w| {
                let bare = w.trim_end_matches("()");
                is_code_form(bare.rsplit(['.', ':']).next().unwrap_or(bare))
                    || w.ends_with("()")
                    // `Cache::reset`: a path only code writes.
                    || bare.contains("::")
            })
            .filter_map(|w| last_part(w))
            .collect(),
    };
    names.dedup();
    names
}

/// What a question asks of a name besides its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// "what calls X", "who uses X", "where is X called": the code that
    /// refers to X.
    Callers,
    /// "which tests cover X", "tests for X": the tests that call X.
    Tests,
    /// "how does X choose/decide/pick Y", "how is Y chosen": the code that
    /// builds a Y or dispatches on one. The name is Y's words as written
    /// ("strategy", "start state").
    Chooses,
}

/// The relation a one-line question asks about and the name it asks it of
/// (as written: `minimize`, `Cache::reset`). Issue 53: "what calls
/// minimize" was answered with `minimize`'s own definition.
pub fn relation(text: &str) -> Option<(Relation, String)> {
    let words: Vec<&str> = query_words(text)
        .into_iter()
        .map(|w| w.trim_end_matches(['.', ':']))
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let at = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    let name_at = |i: usize| -> Option<String> {
        let w = words.get(i)?.trim_end_matches("()");
        let last = w.rsplit(['.', ':']).next()?;
        let ident = last.len() > 1
            && last
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
            && last.chars().all(|c| c.is_alphanumeric() || c == '_');
        (ident && !RELATION_FILLER.contains(&last.to_lowercase().as_str())).then(|| w.to_string())
    };
    let chooses = |i: usize| chosen_at(&lower, i).map(|n| (Relation::Chooses, n));
    let callers = |i: usize| name_at(i).map(|n| (Relation::Callers, n));
    let tests = |i: usize| name_at(i).map(|n| (Relation::Tests, n));
    (0..lower.len()).find_map(|i| match (at(i), at(i + 1)) {
        // "what calls X", "who uses X", "which functions call X"
        ("calls" | "uses" | "invokes" | "call" | "use" | "invoke", _)
            if i > 0
                && matches!(
                    at(i - 1),
                    "what" | "who" | "which" | "functions" | "code" | "methods"
                ) =>
        {
            callers(i + 1)
        }
        ("callers" | "usages" | "users" | "uses" | "references", "of" | "to") => callers(i + 2),
        ("call", "sites") if at(i + 2) == "of" => callers(i + 3),
        // "where is X called", "where is X tested"
        ("where", "is" | "are" | "does") => match at(i + 3) {
            "called" | "used" | "invoked" | "referenced" => callers(i + 2),
            "tested" => tests(i + 2),
            _ => None,
        },
        // "tests for X", "which tests cover X"
        ("tests" | "test", "for" | "of" | "cover" | "covers" | "exercise" | "exercises") => {
            tests(i + 2)
        }
        // "how does meta::Regex choose a strategy", "how is the strategy chosen"
        (verb, _) if lower[..i].contains(&"how".to_string()) && CHOOSE.contains(&verb) => {
            chooses(i + 1)
        }
        ("how", "is" | "are") if CHOSEN.contains(&at(lower.len() - 1)) && lower.len() > 3 => {
            chosen_at(&lower[..lower.len() - 1], i + 2).map(|n| (Relation::Chooses, n))
        }
        _ => None,
    })
}

/// Verbs of "how does X choose Y".
const CHOOSE: &[&str] = &[
    "choose",
    "chooses",
    "decide",
    "decides",
    "pick",
    "picks",
    "select",
    "selects",
    "determine",
    "determines",
];
/// Their participles, for "how is Y chosen".
const CHOSEN: &[&str] = &["chosen", "decided", "picked", "selected", "determined"];

/// The chosen thing's words from `lower[i]` on: past an article or "which",
/// up to a word that ends the noun ("to", "for", "when", ...), at most three.
fn chosen_at(lower: &[String], mut i: usize) -> Option<String> {
    while lower.get(i).is_some_and(|w| {
        matches!(
            w.as_str(),
            "a" | "an" | "the" | "its" | "which" | "what" | "between"
        )
    }) {
        i += 1;
    }
    let words: Vec<&str> = lower[i.min(lower.len())..]
        .iter()
        .map(String::as_str)
        .take_while(|w| {
            !matches!(
                *w,
                "to" | "for"
                    | "when"
                    | "if"
                    | "whether"
                    | "how"
                    | "in"
                    | "on"
                    | "of"
                    | "at"
                    | "by"
                    | "and"
                    | "or"
                    | "from"
                    | "with"
            )
        })
        .take(3)
        .collect();
    let ok = !words.is_empty()
        && words.len() < 3
        && words
            .iter()
            .all(|w| w.len() > 1 && w.chars().all(|c| c.is_alphanumeric() || c == '_'));
    ok.then(|| words.join(" "))
}

/// Words after a relation that are no name ("what calls the parser").
const RELATION_FILLER: &[&str] = &[
    "the", "a", "an", "this", "that", "it", "my", "our", "of", "to",
];

/// Names only code writes: `snake_case`, `camelCase`, `CamelCase` with a
/// second capital, `__dunder__`.
pub fn is_code_form(word: &str) -> bool {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    if letters < 2 {
        return false;
    }
    if word.contains('_') && word.trim_matches('_').len() > 1 {
        return true;
    }
    let mut prev_lower = false;
    let mut capitals = 0;
    for c in word.chars() {
        if c.is_uppercase() {
            capitals += 1;
            if prev_lower {
                return true; // camelCase or CamelCase
            }
        }
        prev_lower = c.is_lowercase();
    }
    // `HTTPError`-like: capitals then lower case, more than one capital.
    capitals >= 2 && word.chars().any(|c| c.is_lowercase())
}

/// Paths the line names: `a/b/c.py`, `./x.rs`, `/usr/lib/.../site-packages/pkg/m.py`.
/// The site-packages (or dist-packages) prefix of installed code is cut, so
/// the rest matches the repository's own layout.
fn paths_in(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in line.split(|c: char| c.is_whitespace() || "\"'`(),;:<>[]{}".contains(c)) {
        let raw = raw.trim_end_matches('.');
        if !raw.contains('/') || !raw.contains('.') {
            continue;
        }
        let Some((_, ext)) = raw.rsplit_once('.') else {
            continue;
        };
        if ext.is_empty()
            || ext.len() > 5
            || !ext.chars().all(|c| c.is_ascii_alphanumeric())
            || raw.contains("://")
        {
            continue;
        }
        let mut p = raw;
        for marker in ["site-packages/", "dist-packages/"] {
            if let Some(i) = p.rfind(marker) {
                p = &p[i + marker.len()..];
            }
        }
        let p = p.trim_start_matches("./").trim_start_matches('/');
        if p.split('/').all(|s| !s.is_empty() && s != "..") {
            out.push(p.to_string());
        }
    }
    out
}

/// Paragraphs packed into passages of about [`PASSAGE_WORDS`] words, in
/// text order; a long paragraph is cut into pieces. At most
/// [`MAX_PASSAGES`]: the opening one, which states the problem, and then
/// the ones richest in names.
fn passages(text: &str) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let flush = |current: &mut Vec<&str>, pieces: &mut Vec<String>| {
        let words: Vec<&str> = current.iter().flat_map(|l| l.split_whitespace()).collect();
        for piece in words.chunks(PASSAGE_WORDS) {
            pieces.push(piece.join(" "));
        }
        current.clear();
    };
    let mut words_in_current = 0;
    for line in text.lines() {
        let n = line.split_whitespace().count();
        if line.trim().is_empty() && words_in_current >= PASSAGE_WORDS / 2 {
            flush(&mut current, &mut pieces);
            words_in_current = 0;
            continue;
        }
        if words_in_current + n > PASSAGE_WORDS && words_in_current > 0 {
            flush(&mut current, &mut pieces);
            words_in_current = 0;
        }
        current.push(line);
        words_in_current += n;
    }
    flush(&mut current, &mut pieces);
    pieces.retain(|p| p.split_whitespace().count() >= 3);
    if pieces.len() <= MAX_PASSAGES {
        return pieces;
    }
    let names = |p: &str| {
        p.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| is_code_form(w))
            .count()
    };
    let mut rest: Vec<usize> = (1..pieces.len()).collect();
    rest.sort_by_key(|&i| std::cmp::Reverse(names(&pieces[i])));
    let mut keep: Vec<usize> = std::iter::once(0)
        .chain(rest.into_iter().take(MAX_PASSAGES - 1))
        .collect();
    keep.sort_unstable();
    keep.into_iter().map(|i| pieces[i].clone()).collect()
}

fn is_keyword(w: &str) -> bool {
    #[rustfmt::skip]
    const KEYWORDS: &[&str] = &[
        "def", "class", "import", "from", "return", "self", "None", "True", "False", "print", "in",
        "for", "if", "else", "elif", "and", "or", "not", "is", "lambda", "with", "as", "try",
        "except", "raise", "pass", "while", "assert", "yield", "fn", "let", "mut", "pub", "use",
        "impl", "struct", "enum", "match", "const", "static", "mod", "crate", "super", "File",
        "line", "Traceback", "most", "recent", "call", "last", "the", "a", "an", "to", "of", "it",
        "at", "be", "this", "that", "python", "Python", "In", "Out",
    ];
    KEYWORDS.contains(&w)
}

/// English stop words and the filler of bug reports.
fn is_filler(w: &str) -> bool {
    #[rustfmt::skip]
    const FILLER: &[&str] = &[
        "the", "and", "for", "that", "this", "with", "are", "was", "but", "not", "you", "have",
        "has", "had", "can", "will", "would", "should", "could", "there", "their", "what", "when",
        "which", "where", "who", "how", "why", "then", "than", "them", "they", "these", "those",
        "its", "also", "from", "into", "out", "all", "any", "some", "one", "two", "been", "being",
        "were", "does", "did", "doing", "just", "like", "more", "most", "other", "such", "only",
        "same", "very", "about", "because", "here", "now", "get", "gets", "got", "use", "used",
        "using", "make", "makes", "see", "seems", "seem", "think", "know", "want", "need", "way",
        "thing", "things", "case", "cases", "example", "examples", "following", "expected",
        "actual", "result", "results", "output", "outputs", "issue", "issues", "bug", "bugs",
        "problem", "error", "errors", "work", "works", "working", "version", "versions", "code",
        "run", "running", "returns", "return", "correct", "correctly", "wrong", "instead", 
        "shouldn", "doesn", "isn", "don", "didn", "it's", "i'm", "thanks", "please", "hi", "hello",
        "maybe", "may", "might", "must", "well", "still", "even", "each", "both", "after", "before",
        "while", "our", "your", "his", "her", "him", "she", "yes", "via", "per", "etc", "lot",
        "new", "old",
    ];
    FILLER.contains(&w)
}

#[cfg(test)]
mod tests {
    use super::{relation, Relation};

    #[test]
    fn relation_questions_name_what_they_ask_of() {
        let callers = |n: &str| Some((Relation::Callers, n.to_string()));
        let tests = |n: &str| Some((Relation::Tests, n.to_string()));
        assert_eq!(relation("what calls minimize"), callers("minimize"));
        assert_eq!(relation("who uses Cache::reset?"), callers("Cache::reset"));
        assert_eq!(
            relation("where is search_slots called"),
            callers("search_slots")
        );
        assert_eq!(relation("callers of `find_iter`"), callers("find_iter"));
        assert_eq!(relation("which tests cover find_iter"), tests("find_iter"));
        assert_eq!(
            relation("tests for PikeVM::search_slots"),
            tests("PikeVM::search_slots")
        );
        assert_eq!(relation("where is minimize tested?"), tests("minimize"));
        assert_eq!(relation("what does Cache::reset do"), None);
        assert_eq!(relation("where is PikeVM defined"), None);
        assert_eq!(relation("what calls the"), None);
    }

    #[test]
    fn how_x_chooses_y_names_the_chosen_thing() {
        let chooses = |n: &str| Some((Relation::Chooses, n.to_string()));
        assert_eq!(
            relation("how does meta::Regex choose a strategy"),
            chooses("strategy")
        );
        assert_eq!(
            relation("How does the lazy DFA pick the start state?"),
            chooses("start state")
        );
        assert_eq!(
            relation("how does the builder decide which strategy to use"),
            chooses("strategy")
        );
        assert_eq!(
            relation("how is the match kind chosen"),
            chooses("match kind")
        );
        assert_eq!(relation("choose a strategy"), None);
        assert_eq!(
            relation("how does Regex decide whether to use a prefilter"),
            None
        );
        assert_eq!(relation("how does search work"), None);
    }

    #[test]
    fn names_prose_and_issues_have_their_shapes() {
        use super::{shape, Shape};
        for names in [
            "getfixturevalue",
            "`FixtureRequest.getfixturevalue`",
            "parse_into()",
            "Config.getoption addinivalue_line",
            "cache",
        ] {
            assert_eq!(shape(names), Shape::Names, "{names}");
        }
        for prose in [
            "python check if a string is a number",
            "how does the cache provider decide which tests failed",
            "cache provider",
            "What does getfixturevalue return?",
            "Config.getoption getini",
        ] {
            assert_eq!(shape(prose), Shape::Prose, "{prose}");
        }
        let issue = "Title\n\nSteps:\n1. run it\n2. see the error\n";
        assert_eq!(shape(issue), Shape::Issue);
    }

    #[test]
    fn a_one_line_query_names_identifiers() {
        assert_eq!(named_identifiers("getfixturevalue"), ["getfixturevalue"]);
        assert_eq!(
            named_identifiers("`FixtureRequest.getfixturevalue`"),
            ["getfixturevalue"]
        );
        assert_eq!(named_identifiers("Engine::load"), ["load"]);
        assert_eq!(named_identifiers("reuse_prefix()"), ["reuse_prefix"]);
        assert_eq!(named_identifiers("how is parse_args used?"), ["parse_args"]);
        assert_eq!(named_identifiers("where is getConfig read"), ["getConfig"]);
        // Prose names nothing; a single short or non-identifier word neither.
        assert!(named_identifiers("how does the cache provider decide").is_empty());
        assert!(named_identifiers("io").is_empty());
        assert!(named_identifiers("src/app.py").is_empty());
    }
    use super::*;

    const ISSUE: &str = "latex printer does not support full inverse trig function names for acsc and asec

For example
`latex(asin(x), inv_trig_style=\"full\")` works as expected returning `'\\\\arcsin{\\\\left (x \\\\right )}'`
But `latex(acsc(x), inv_trig_style=\"full\")` gives `'\\\\operatorname{acsc}{\\\\left (x \\\\right )}'` instead.

A fix seems to be to change line 743 of sympy/printing/latex.py from
`inv_trig_table = [\"asin\", \"acos\", \"atan\", \"acot\"]` to
`inv_trig_table = [\"asin\", \"acos\", \"atan\", \"acsc\", \"asec\", \"acot\"]`

Traceback (most recent call last):
  File \"/usr/lib/python3/site-packages/sympy/core/basic.py\", line 12, in __eq__
    return self._hashable_content() == other._hashable_content()
AttributeError: 'Foo' object has no attribute '_hashable_content'
";

    #[test]
    fn an_issue_is_taken_apart() {
        assert!(is_long(ISSUE));
        assert!(!is_long("where is the config parsed"));
        let q = analyze(ISSUE);
        for name in [
            "inv_trig_style",
            "inv_trig_table",
            "latex",
            "acsc",
            "_hashable_content",
            "AttributeError",
            "__eq__",
        ] {
            assert!(
                q.code_terms.iter().any(|t| t == name),
                "{name}: {:?}",
                q.code_terms
            );
        }
        for word in ["printer", "inverse", "trig", "names"] {
            assert!(
                q.prose_terms.iter().any(|t| t == word),
                "{word}: {:?}",
                q.prose_terms
            );
        }
        for filler in ["the", "expected", "example", "latex"] {
            assert!(!q.prose_terms.iter().any(|t| t == filler), "{filler}");
        }
        assert_eq!(
            q.named_paths,
            ["sympy/printing/latex.py", "sympy/core/basic.py"]
        );
        assert!(!q.passages.is_empty() && q.passages.len() <= MAX_PASSAGES);
        assert!(q.passages[0].starts_with("latex printer does not support"));
    }

    #[test]
    fn console_banners_and_prompts_are_dropped() {
        let text = "Wrong result with apart\n```\nPython 3.6.0 |Continuum Analytics, Inc.| (default)\nType \"copyright\", \"credits\" or \"license\" for more information.\n\nIPython 5.1.0 -- An enhanced Interactive Python.\n?         -> Introduction and overview of IPython's features.\n%quickref -> Quick reference.\n\nIn [1]: from sympy import symbols\n\nIn [8]: bug.apart(t)\nOut[8]: -a*t\n```\nThe result x -> y is wrong.";
        let clean = without_console_noise(text);
        assert!(!clean.contains("Continuum") && !clean.contains("quickref"));
        assert!(!clean.contains("copyright") && !clean.contains("IPython"));
        assert!(clean.contains("\nfrom sympy import symbols\n"));
        assert!(clean.contains("\nbug.apart(t)\n-a*t\n"));
        assert!(clean.contains("The result x -> y is wrong."));
        let q = analyze(text);
        assert!(!q.code_terms.iter().any(|t| t == "In" || t == "Out"));
        assert!(q.code_terms.iter().any(|t| t == "apart"));
    }

    #[test]
    fn code_form_names_are_told_from_words() {
        for w in [
            "snake_case",
            "camelCase",
            "LatexPrinter",
            "HTTPError",
            "__init__",
        ] {
            assert!(is_code_form(w), "{w}");
        }
        for w in ["The", "printer", "OK", "I", "_", "x"] {
            assert!(!is_code_form(w), "{w}");
        }
    }

    #[test]
    fn dotted_module_paths_in_code_become_paths() {
        let q = analyze(
            "Importing fails\n\n```\nfrom sklearn.utils.validation import check_array\n```\n\nsee `matplotlib.axes._base` too. End of sentence. More words here to pass.",
        );
        assert!(q
            .named_paths
            .contains(&"sklearn/utils/validation".to_string()));
        assert!(q.named_paths.contains(&"matplotlib/axes/_base".to_string()));
        assert!(!q.named_paths.iter().any(|p| p.contains("sentence")));
        assert!(q.code_terms.contains(&"check_array".to_string()));
    }

    #[test]
    fn issue_template_headings_and_environment_are_dropped() {
        let text = "[Bug]: Colorbar extend triangles are drawn wrong\n\n### Bug summary\n\nThe colorbar draws its edges wrong.\n\n### Code for reproduction\n\n```python\n# make a figure\nfig, ax = plt.subplots()\n```\n\n### Matplotlib Version\n\n3.5.1\n\n### Operating system\n\nWindows 10\n\n#### Versions\n```\nnumpy: 1.21\nscipy: 1.7\n```\n\n## A longer heading that says something real\nmore text";
        let clean = without_template(text);
        assert!(clean.contains("The colorbar draws its edges wrong."));
        assert!(clean.contains("# make a figure"), "a comment in code stays");
        assert!(clean.contains("A longer heading that says something real"));
        assert!(clean.contains("more text"));
        for gone in [
            "Bug summary",
            "Code for reproduction",
            "3.5.1",
            "Windows",
            "numpy",
            "scipy",
        ] {
            assert!(!clean.contains(gone), "{gone} in {clean}");
        }
        let q = analyze(text);
        assert_eq!(
            q.title.as_deref(),
            Some("Colorbar extend triangles are drawn wrong")
        );
        assert!(!q
            .prose_terms
            .iter()
            .any(|w| w == "windows" || w == "summary"));
        assert_eq!(
            title("BUG: loss of precision in LinearRegression"),
            Some("loss of precision in LinearRegression".into())
        );
        assert_eq!(title("Error"), None, "one word is no title");
    }

    #[test]
    fn many_paragraphs_keep_the_opening_and_the_richest() {
        let mut text = String::from("Title line about the failure here\n\n");
        for i in 0..20 {
            let names = if i == 13 {
                "foo_bar baz_qux FooBar "
            } else {
                ""
            };
            text.push_str(&format!("{names}{}\n\n", "plain words ".repeat(80)));
        }
        let p = passages(&text);
        assert_eq!(p.len(), MAX_PASSAGES);
        assert!(p[0].starts_with("Title line"));
        assert!(p.iter().any(|x| x.contains("foo_bar")));
    }
}
