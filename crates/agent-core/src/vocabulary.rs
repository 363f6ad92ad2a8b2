//! What the workspace holds, in words: the intent gate's knowledge of the
//! repository.
//!
//! "Where is the secret key used to sign sessions?" is a question about
//! flask in a flask checkout and general knowledge anywhere else; only the
//! workspace can tell. The vocabulary is built from the repo map's tags (every
//! identifier defined outside tests, split into its words) and the file tree
//! (file and folder names), and [`Vocabulary::anchors`] finds what in a
//! request names something here:
//!
//! - a name in code form the workspace defines or a path it holds
//!   (`NullSession`, `should_set_cookie`, `engine.rs`);
//! - adjacent words that spell an identifier ("the session cookie" →
//!   `SESSION_COOKIE_NAME`, "test client" → `test_client`);
//! - a class or type, file or folder name ("blueprints", "sandbox");
//! - "the" before a word the workspace uses often ("the watcher").
//!
//! Words are compared by their Snowball stem, so "deployed" meets `deploy`
//! and "checkpoints" meets `Checkpoint`.

use std::collections::{HashMap, HashSet};

use agent_repomap::{DefKind, FileTags};

/// How a request names something in the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnchorKind {
    /// An identifier the workspace defines or a path it holds, written as code.
    Code,
    /// Adjacent words that spell an identifier (`session cookie`).
    Phrase,
    /// A class, type, file or folder name written as a word.
    Name,
    /// "the" before a word many of the workspace's identifiers use.
    Definite,
}

impl AnchorKind {
    /// How much it says that the request is about this workspace.
    pub fn weight(self) -> f32 {
        match self {
            AnchorKind::Code => 3.0,
            AnchorKind::Phrase => 2.0,
            AnchorKind::Name => 1.5,
            AnchorKind::Definite => 1.0,
        }
    }

    /// Names one thing of this workspace (not just a word it uses).
    pub fn is_specific(self) -> bool {
        matches!(self, AnchorKind::Code | AnchorKind::Phrase)
    }
}

/// One thing of the workspace a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub kind: AnchorKind,
    /// The request's own words.
    pub text: String,
}

/// Words of the workspace, for the intent gate.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    /// Every identifier defined, as written.
    names: HashSet<String>,
    /// Stems of one-word class, struct, enum, trait and type names.
    types: HashSet<String>,
    /// Stems of file names (without extension) and folder names.
    paths: HashSet<String>,
    /// Every file, relative to the root.
    files: Vec<String>,
    /// Stem → how many identifiers (outside tests) have it as a word.
    words: HashMap<String, u32>,
    /// Consecutive word stems of identifiers, in either order: "session
    /// cookie" names `SecureCookieSession` as well as `session_cookie`.
    phrases: HashSet<(String, String)>,
}

/// Identifiers that share a word at least this often make it the
/// workspace's word ("the watcher", "the app").
const COMMON_WORD: u32 = 3;

/// Folder and file names every project has: they say nothing about this one.
const GENERIC_PATHS: &[&str] = &[
    "src",
    "lib",
    "main",
    "mod",
    "__init__",
    "__main__",
    "index",
    "tests",
    "test",
    "docs",
    "doc",
    "examples",
    "example",
    "scripts",
    "bin",
    "crates",
    "pkg",
    "internal",
    "util",
    "utils",
    "common",
    "readme",
    "license",
    "changelog",
    "makefile",
    "make",
    "setup",
    "conftest",
    "build",
    "config",
    "init",
    "app",
    "core",
    "base",
];

impl Vocabulary {
    /// The vocabulary of tagged files (path, tags); tests count for their
    /// paths only (a test's helper names are not what users ask about).
    pub fn from_tags<'a>(files: impl IntoIterator<Item = (&'a str, &'a FileTags)>) -> Self {
        let mut v = Vocabulary::default();
        for (rel, tags) in files {
            v.add_path(rel);
            if agent_lang::walk::is_test(rel) {
                continue;
            }
            let mut seen: HashSet<&str> = HashSet::new();
            for def in &tags.defs {
                if !seen.insert(def.name.as_str()) {
                    continue;
                }
                v.names.insert(def.name.clone());
                let parts = identifier_words(&def.name);
                let is_type = matches!(
                    def.kind,
                    DefKind::Struct
                        | DefKind::Enum
                        | DefKind::Union
                        | DefKind::Trait
                        | DefKind::Class
                        | DefKind::Type
                );
                if is_type && parts.len() == 1 {
                    v.types.insert(parts[0].clone());
                }
                let unique: HashSet<&String> = parts.iter().collect();
                for p in unique {
                    *v.words.entry(p.clone()).or_default() += 1;
                }
                for pair in parts.windows(2) {
                    v.phrases.insert(phrase(&pair[0], &pair[1]));
                }
            }
        }
        v.files.sort_unstable();
        v
    }

    fn add_path(&mut self, rel: &str) {
        self.files.push(rel.to_string());
        let segments: Vec<&str> = rel.split('/').collect();
        for (i, segment) in segments.iter().enumerate() {
            let name = if i + 1 == segments.len() {
                segment
                    .rsplit_once('.')
                    .filter(|(stem, _)| !stem.is_empty())
                    .map_or(*segment, |(stem, _)| stem)
            } else {
                segment
            };
            let lower = name.to_lowercase();
            if lower.len() > 2 && !GENERIC_PATHS.contains(&lower.as_str()) {
                self.paths.insert(stem(&lower));
            }
        }
    }

    /// Nothing known: no tagged file (an empty folder, or no map).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// A word many identifiers here use, or a type, file or folder name.
    fn knows(&self, stem: &str) -> bool {
        self.types.contains(stem)
            || self.paths.contains(stem)
            || self.words.get(stem).is_some_and(|&n| n >= COMMON_WORD)
    }

    /// `word`, written without code form, is the name of a definition here
    /// that is no plain English word: `getfixturevalue`, `safeformat`
    /// (methods and functions named in one lower-case run). A word that
    /// many identifiers use as a part (`value`, `request`) names none of them.
    fn defines_as_word(&self, word: &str) -> bool {
        word.len() >= 6
            && self.names.contains(word)
            && is_content_word(&word.to_lowercase())
            && self
                .words
                .get(&stem(&word.to_lowercase()))
                .is_none_or(|&n| n <= 2)
    }

    /// `word` names a definition here, in a request framed as a question
    /// about a function ([`asks_about_a_function`]): there even a plain
    /// English name (`abort`, `copy`, `update`) is the definition's.
    fn defines_framed(&self, word: &str) -> bool {
        word.len() >= 3
            && self.names.contains(word)
            && is_content_word(&word.to_lowercase())
            && !FUNCTION_FRAME.contains(&word.to_lowercase().as_str())
    }

    /// A path the workspace holds: a file (by its path or the end of it)
    /// or a folder.
    fn holds_path(&self, path: &str) -> bool {
        let path = path.trim_start_matches("./").trim_end_matches('/');
        if path.is_empty() {
            return false;
        }
        let suffix = format!("/{path}");
        let folder = format!("{path}/");
        self.files
            .iter()
            .any(|f| f == path || f.ends_with(&suffix) || f.starts_with(&folder))
    }

    /// What in `request` names something of this workspace.
    pub fn anchors(&self, request: &str) -> Vec<Anchor> {
        let mut out = Vec::new();
        for token in code_tokens(request) {
            let name = token.trim_end_matches("()");
            let known = self.names.contains(name)
                || name
                    .rsplit(['.', ':'])
                    .next()
                    .is_some_and(|last| self.names.contains(last) && name.contains(['.', ':']))
                || (name.contains(['/', '.']) && self.holds_path(name));
            if known {
                out.push(Anchor {
                    kind: AnchorKind::Code,
                    text: token.to_string(),
                });
            }
        }
        let framed = asks_about_a_function(request);
        for word in plain_words(request) {
            let named = self.defines_as_word(word) || (framed && self.defines_framed(word));
            if named && !out.iter().any(|a| a.text == word) {
                out.push(Anchor {
                    kind: AnchorKind::Code,
                    text: word.to_string(),
                });
            }
        }
        let words = words(request);
        let content: Vec<(usize, &str)> = words
            .iter()
            .enumerate()
            .filter(|(_, w)| is_content_word(w))
            .map(|(i, w)| (i, w.as_str()))
            .collect();
        let stems: Vec<String> = content.iter().map(|(_, w)| stem(w)).collect();
        for (k, pair) in content.windows(2).enumerate() {
            let adjacent = pair[1].0 == pair[0].0 + 1;
            if adjacent && self.phrases.contains(&phrase(&stems[k], &stems[k + 1])) {
                out.push(Anchor {
                    kind: AnchorKind::Phrase,
                    text: format!("{} {}", pair[0].1, pair[1].1),
                });
            }
        }
        for (k, &(i, word)) in content.iter().enumerate() {
            let s = &stems[k];
            if self.types.contains(s) || self.paths.contains(s) {
                out.push(Anchor {
                    kind: AnchorKind::Name,
                    text: word.to_string(),
                });
            } else if i > 0 && words[i - 1] == "the" && self.knows(s) {
                out.push(Anchor {
                    kind: AnchorKind::Definite,
                    text: format!("the {word}"),
                });
            }
        }
        out
    }
}

/// Words that frame a request as one about a function's behaviour: "what
/// does abort return", "which errors does copy raise", "where is update
/// defined". Found on flask and pytest: one name in thirteen is a plain
/// word (`abort`, `group`, `resolve`), and without the frame the gate took
/// those questions for general knowledge.
const FUNCTION_FRAME: &[&str] = &[
    "return",
    "returns",
    "raise",
    "raises",
    "throw",
    "throws",
    "yield",
    "yields",
    "defined",
    "implemented",
    "signature",
    "parameters",
    "arguments",
    "overrides",
    "calls",
];

/// Whether `request` is framed as a question about a function ([`FUNCTION_FRAME`]).
fn asks_about_a_function(request: &str) -> bool {
    words(request)
        .iter()
        .any(|w| FUNCTION_FRAME.contains(&w.as_str()))
}

/// The request's words as written (case kept): runs of letters, digits
/// and `_` that are not already code-shaped (those are [`code_tokens`]).
fn plain_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !looks_like_code(w))
}

/// Two adjacent word stems as the vocabulary keeps them (order-free).
fn phrase(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// The request's words, lower case, split at anything but letters, digits,
/// `_` and apostrophes inside a word.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\'' || c == '’'))
        .map(|w| w.trim_matches(['\'', '’']).to_lowercase().replace('’', "'"))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Tokens written as code: `snake_case`, `CamelCase`, `a.b`, `f()`,
/// `path/to.rs`, `Type::method`, `--flag` (not).
pub(crate) fn code_tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '?' | '`' | '\'' | '"' | ';'))
        .map(|w| {
            w.trim_matches(|c: char| {
                !c.is_alphanumeric() && !matches!(c, '_' | '/' | '.' | ':' | '(' | ')')
            })
            .trim_end_matches(['.', ':'])
            .trim_start_matches('(')
        })
        .filter(|w| looks_like_code(w))
        .collect()
}

fn looks_like_code(w: &str) -> bool {
    if w.starts_with('-') || w.len() < 3 {
        return false;
    }
    let inner_upper =
        w.chars().skip(1).any(|c| c.is_uppercase()) && w.chars().any(|c| c.is_lowercase());
    let has_letter = w.chars().any(|c| c.is_alphabetic());
    has_letter
        && ((w.contains('_') && w.trim_matches('_').len() > 1)
            || inner_upper
            || w.contains("::")
            || w.ends_with("()")
            || w.contains('/')
            || w.rsplit_once('.')
                .is_some_and(|(stem, ext)| !stem.is_empty() && is_code_extension(ext)))
}

/// File extensions a request names files by.
pub(crate) fn is_code_extension(ext: &str) -> bool {
    matches!(
        ext,
        "rs" | "py"
            | "toml"
            | "md"
            | "rst"
            | "js"
            | "jsx"
            | "ts"
            | "tsx"
            | "go"
            | "c"
            | "h"
            | "cc"
            | "cpp"
            | "hpp"
            | "cs"
            | "java"
            | "kt"
            | "rb"
            | "php"
            | "swift"
            | "lua"
            | "json"
            | "yaml"
            | "yml"
            | "sh"
            | "txt"
            | "cfg"
            | "ini"
            | "html"
            | "css"
            | "sql"
            | "lock"
    )
}

/// An identifier's words, stemmed: `SecureCookieSession` → `secur`,
/// `cooki`, `session`; `MAX_COOKIE_SIZE` → `max`, `cooki`, `size`.
pub(crate) fn identifier_words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = name.chars().collect();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(stem(&word.to_lowercase()));
            word.clear();
        }
    };
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        // `fooBar` and the `B` of `HTTPBody` (an upper case letter followed by lower case) start a word.
        let boundary = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
            });
        if boundary {
            flush(&mut word, &mut out);
        }
        word.push(c);
    }
    flush(&mut word, &mut out);
    out
}

/// The Snowball (Porter 2) stem of a lower-case word, after a possessive `'s`.
pub(crate) fn stem(word: &str) -> String {
    static STEMMER: std::sync::OnceLock<frostem::Stemmer> = std::sync::OnceLock::new();
    let word = word.strip_suffix("'s").unwrap_or(word);
    STEMMER
        .get_or_init(|| frostem::Stemmer::new(frostem::Algorithm::English))
        .stem(word)
        .into_owned()
}

/// A word that carries meaning: not a function word, filler or number.
pub(crate) fn is_content_word(word: &str) -> bool {
    !STOP_WORDS.contains(&word) && !word.chars().all(|c| c.is_ascii_digit())
}

/// Function words, question words and the fillers of typed requests.
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are",
    "aren't", "arent", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "but", "by", "can", "can't", "cant", "could", "did", "didn't", "didnt", "do", "does",
    "doesn't", "doesnt", "doing", "don't", "dont", "down", "during", "each", "few", "for", "from",
    "further", "get", "gets", "got", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "i", "i'd", "i'm", "if", "im", "in", "into", "is", "isn't", "isnt", "it",
    "it's", "its", "just", "let", "let's", "lets", "like", "me", "more", "most", "must", "my",
    "no", "nor", "not", "now", "of", "off", "ok", "okay", "on", "once", "only", "or", "other",
    "our", "ours", "out", "over", "own", "please", "pls", "really", "same", "she", "should",
    "shouldnt", "so", "some", "still", "such", "than", "that", "the", "their", "them", "then",
    "there", "there's", "theres", "these", "they", "this", "those", "through", "to", "too", "u",
    "under", "until", "up", "ur", "us", "very", "was", "we", "were", "what", "what's", "whats",
    "when", "where", "where's", "wheres", "whre", "which", "while", "who", "who's", "whom", "whos",
    "why", "will", "with", "won't", "wont", "would", "yet", "you", "you're", "your", "yours",
    "yourself", "actually", "actualy",
];

#[cfg(test)]
mod tests {
    use super::*;
    use agent_lang::walk::Lang;
    use agent_repomap::tags::Tagger;

    fn vocabulary(files: &[(&str, &str)]) -> Vocabulary {
        let mut tagger = Tagger::new();
        let tags: Vec<(&str, FileTags)> = files
            .iter()
            .map(|(rel, src)| {
                (
                    *rel,
                    tagger.tag(Lang::from_path(std::path::Path::new(rel)), src),
                )
            })
            .collect();
        Vocabulary::from_tags(tags.iter().map(|(r, t)| (*r, t)))
    }

    const SESSIONS: &str = "class SessionInterface:\n    def get_cookie_name(self, app):\n        return app.config['SESSION_COOKIE_NAME']\n\n\
class NullSession(dict):\n    pass\n\n\
class SecureCookieSessionInterface(SessionInterface):\n    salt = 'cookie-session'\n    def get_signing_serializer(self, app):\n        pass\n    def should_set_cookie(self, app, session):\n        pass\n";

    fn kinds(v: &Vocabulary, request: &str) -> Vec<(AnchorKind, String)> {
        v.anchors(request)
            .into_iter()
            .map(|a| (a.kind, a.text))
            .collect()
    }

    #[test]
    fn identifiers_are_split_into_stemmed_words() {
        assert_eq!(
            identifier_words("SecureCookieSessionInterface"),
            ["secur", "cooki", "session", "interfac"]
        );
        assert_eq!(
            identifier_words("MAX_COOKIE_SIZE"),
            ["max", "cooki", "size"]
        );
        assert_eq!(identifier_words("HTTPBody"), ["http", "bodi"]);
        assert_eq!(stem("deployed"), stem("deploy"));
        assert_eq!(stem("tickets"), "ticket");
    }

    #[test]
    fn a_request_naming_the_workspace_has_anchors() {
        let v = vocabulary(&[
            ("src/flask/sessions.py", SESSIONS),
            ("src/flask/sandbox/__init__.py", "def run():\n    pass\n"),
        ]);
        // The question: words that spell identifiers of this workspace.
        let found = kinds(&v, "Where is the secret key used to sign sessions?");
        assert!(
            found.contains(&(AnchorKind::Name, "sessions".into())),
            "{found:?}"
        );
        let found = kinds(&v, "how does the session cookie get its expiry date");
        assert!(
            found.contains(&(AnchorKind::Phrase, "session cookie".into())),
            "{found:?}"
        );
        let found = kinds(&v, "who calls should_set_cookie");
        assert_eq!(found, [(AnchorKind::Code, "should_set_cookie".into())]);
        let found = kinds(&v, "what is NullSession for, see sessions.py");
        assert!(found.contains(&(AnchorKind::Code, "NullSession".into())));
        assert!(found.contains(&(AnchorKind::Code, "sessions.py".into())));
        assert!(
            kinds(&v, "what does the sandbox do").contains(&(AnchorKind::Name, "sandbox".into()))
        );
        // General knowledge names nothing here.
        assert_eq!(kinds(&v, "what is the capital of France?"), []);
        assert_eq!(kinds(&v, "whats a mutex"), []);
        // A name in code form that nothing here defines is no anchor.
        assert_eq!(kinds(&v, "enable dark_mode for staging"), []);
    }

    /// pytest's `getfixturevalue` and `safeformat`: defined names written as
    /// plain words (found as a new user: the gate answered from general
    /// knowledge). A plain word that many identifiers use is not one.
    #[test]
    fn a_definition_named_as_a_plain_word_is_an_anchor() {
        const FIXTURES: &str = "class FixtureRequest:\n    def getfixturevalue(self, argname):\n        pass\n    def addfinalizer(self, finalizer):\n        pass\n\n\
def safeformat(obj):\n    pass\n\ndef request():\n    pass\n\ndef get_request():\n    pass\n\ndef request_context():\n    pass\n\ndef make_request():\n    pass\n";
        let v = vocabulary(&[("src/_pytest/fixtures.py", FIXTURES)]);
        for (request, name) in [
            ("What does getfixturevalue return?", "getfixturevalue"),
            ("when is addfinalizer called", "addfinalizer"),
            ("what does safeformat do with broken reprs", "safeformat"),
        ] {
            assert_eq!(
                kinds(&v, request),
                [(AnchorKind::Code, name.into())],
                "{request}"
            );
        }
        // `request` is defined, but it is a word four identifiers share.
        assert_eq!(kinds(&v, "how do I send a request with curl"), []);
        // Asked about as a function, a plain word that is a definition here
        // is that definition (flask's `abort`, pytest's `update`).
        assert_eq!(
            kinds(&v, "What does request return?"),
            [(AnchorKind::Code, "request".into())]
        );
        assert_eq!(kinds(&v, "what is a good request timeout"), []);
    }

    #[test]
    fn test_helpers_are_not_the_workspace_vocabulary() {
        let v = vocabulary(&[("tests/test_hello.py", "class Hello:\n    pass\n")]);
        assert!(!v.types.contains("hello"));
        assert!(!v.is_empty());
        assert!(Vocabulary::default().is_empty());
    }
}
