//! What a Rust file imports: the names of its `use` declarations with the
//! module paths they come from.
//!
//! Why: a name defined in several files (regex-automata's seven `Cache`
//! types) has its references split among them evenly, so none ranks. A file
//! that writes `use crate::hybrid::dfa::{Cache, DFA};` says which one it
//! means; [`crate::rank`] hands its references to that one. `pub use` lines
//! (re-exports, the crate's front door) are kept too.
//!
//! Lexical, line-based: a declaration starts a line (`use`, `pub use`,
//! `pub(crate) use`) and ends at its `;`. A line inside a multi-line string
//! that looks like one is read as one; that only misdirects references.

use crate::defs::Import;

/// The imports of Rust source `src`, in source order. Globs (`use a::*;`)
/// have the name `*`; `use a::b::{self}` imports `b` from `a`; an alias
/// (`Cache as PikeVMCache`) is recorded under the original name.
pub fn rust(src: &str) -> Vec<Import> {
    let mut out = Vec::new();
    let mut lines = src.lines();
    while let Some(line) = lines.next() {
        let Some((public, rest)) = use_start(line.trim_start()) else {
            continue;
        };
        let mut text = strip_comment(rest).to_string();
        while !text.contains(';') {
            match lines.next() {
                Some(next) => {
                    text.push(' ');
                    text.push_str(strip_comment(next));
                }
                None => break,
            }
        }
        let decl = text.split(';').next().unwrap_or("");
        let tokens = tokenize(decl);
        let mut pos = 0;
        tree(&tokens, &mut pos, &mut Vec::new(), public, &mut out);
    }
    out
}

/// After `use`, `pub use` or `pub(..) use` at the start of `line`: whether
/// it is public (re-exported beyond its module) and the text after `use`.
fn use_start(line: &str) -> Option<(bool, &str)> {
    if let Some(rest) = line.strip_prefix("use ") {
        return Some((false, rest));
    }
    let rest = line.strip_prefix("pub")?;
    let (public, rest) = match rest.strip_prefix('(') {
        // `pub(crate)`, `pub(super)`, `pub(in path)`: not beyond the crate.
        Some(inner) => (false, inner.split_once(')')?.1),
        None => (true, rest),
    };
    rest.trim_start().strip_prefix("use ").map(|r| (public, r))
}

fn strip_comment(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

fn tokenize(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'#' || c >= 0x80 {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'#') || b[i] >= 0x80)
            {
                i += 1;
            }
            tokens.push(text[start..i].trim_start_matches("r#"));
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            tokens.push("::");
            i += 2;
        } else {
            if matches!(c, b'{' | b'}' | b',' | b'*') {
                tokens.push(&text[i..i + 1]);
            }
            i += 1;
        }
    }
    tokens
}

/// One use tree from `tokens[*pos]`: a path, then a leaf name, a glob or
/// a braced list of trees, each under `prefix`.
fn tree(
    tokens: &[&str],
    pos: &mut usize,
    prefix: &mut Vec<String>,
    public: bool,
    out: &mut Vec<Import>,
) {
    let depth = prefix.len();
    loop {
        match tokens.get(*pos).copied() {
            Some("::") => *pos += 1,
            Some("*") => {
                *pos += 1;
                out.push(import("*", prefix, public));
                break;
            }
            Some("{") => {
                *pos += 1;
                while !matches!(tokens.get(*pos).copied(), Some("}") | None) {
                    tree(tokens, pos, prefix, public, out);
                    if tokens.get(*pos) == Some(&",") {
                        *pos += 1;
                    }
                }
                *pos += 1;
                break;
            }
            Some(word) if word != "," && word != "}" => {
                *pos += 1;
                if tokens.get(*pos) == Some(&"::") {
                    prefix.push(word.to_string());
                    continue;
                }
                if tokens.get(*pos) == Some(&"as") {
                    *pos += 2; // `as alias`
                }
                if word == "self" {
                    if let Some((name, path)) = prefix.split_last() {
                        out.push(import(name, path, public));
                    }
                } else {
                    out.push(import(word, prefix, public));
                }
                break;
            }
            _ => break,
        }
    }
    prefix.truncate(depth);
}

fn import(name: &str, path: &[String], public: bool) -> Import {
    Import {
        name: name.to_string(),
        path: path.join("::"),
        public,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(src: &str) -> Vec<(String, String, bool)> {
        rust(src)
            .into_iter()
            .map(|i| (i.name, i.path, i.public))
            .collect()
    }

    #[test]
    fn nested_lists_aliases_globs_and_visibility() {
        let src = "use crate::{\n    meta::{\n        error::BuildError,\n        regex::{Cache, RegexInfo}, // why\n    },\n    util::*,\n};\nuse super::pikevm::{Cache as PikeVMCache, self};\npub use self::regex::Regex;\npub(crate) use x::Y;\n    let s = 1; // use a::b;\n";
        let got = pairs(src);
        let want = [
            ("BuildError", "crate::meta::error", false),
            ("Cache", "crate::meta::regex", false),
            ("RegexInfo", "crate::meta::regex", false),
            ("*", "crate::util", false),
            ("Cache", "super::pikevm", false),
            ("pikevm", "super", false),
            ("Regex", "self::regex", true),
            ("Y", "x", false),
        ];
        let want: Vec<(String, String, bool)> = want
            .iter()
            .map(|(n, p, b)| (n.to_string(), p.to_string(), *b))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_single_name_and_an_absolute_path() {
        assert_eq!(
            pairs("use ::std::fmt;\nuse regex_automata::meta::Cache;\n"),
            vec![
                ("fmt".into(), "std".into(), false),
                ("Cache".into(), "regex_automata::meta".into(), false)
            ]
        );
    }
}
