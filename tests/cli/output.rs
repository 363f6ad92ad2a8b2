//! Text from a repository, a model or a session reaches the terminal only
//! through `agent_base::term::untrusted` (or the escaping helpers): a check
//! over the printers' source, so a new `println!` of such a field fails
//! here instead of in an attack.

use std::path::Path;

/// Fields that hold repository, model or session text.
const FIELDS: &[&str] = &[
    "title",
    "content",
    "description",
    "command",
    "args",
    "answer",
    "thought",
    "reason",
    "detail",
    "summary",
    "problem",
    "model",
    "request",
    "text",
    "tools",
    "name",
    "path",
    "rel",
];

/// The argument expressions of each print macro in `source` (after the
/// format string), with the line each starts on.
fn print_arguments(source: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for mac in ["println!(", "eprintln!(", "print!(", "eprint!("] {
        for (at, _) in source.match_indices(mac) {
            // `println!(` inside `eprintln!(` is found once, as `eprintln!(`.
            let before = source[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let start = at + mac.len();
            let line = source[..start].lines().count();
            out.extend(
                split_arguments(&source[start..])
                    .into_iter()
                    .skip(1)
                    .map(|a| (line, a)),
            );
        }
    }
    out
}

/// The comma-separated arguments up to the closing parenthesis, strings
/// and char literals (`'('`, `'"'`) skipped over.
fn split_arguments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let (mut args, mut current) = (Vec::new(), String::new());
    let (mut depth, mut in_str, mut i) = (1, false, 0);
    while i < chars.len() {
        let c = chars[i];
        let mut take = 1;
        match c {
            '\\' if in_str => take = 2,
            '"' => in_str = !in_str,
            '\'' if !in_str => {
                // A char literal: 'x' or '\x'; a lifetime has no closing quote.
                if chars.get(i + 1) == Some(&'\\') && chars.get(i + 3) == Some(&'\'') {
                    take = 4;
                } else if chars.get(i + 2) == Some(&'\'') {
                    take = 3;
                }
            }
            '(' | '[' | '{' if !in_str => depth += 1,
            ')' | ']' | '}' if !in_str => depth -= 1,
            ',' if !in_str && depth == 1 => {
                args.push(std::mem::take(&mut current).trim().to_string());
                i += 1;
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            break;
        }
        current.extend(&chars[i..(i + take).min(chars.len())]);
        i += take;
    }
    args.push(current.trim().to_string());
    args
}

/// Whether an argument prints one of [`FIELDS`] raw.
fn raw_field(arg: &str) -> Option<&'static str> {
    if ["untrusted", "escape_", "serde_json::"]
        .iter()
        .any(|w| arg.contains(w))
    {
        return None;
    }
    FIELDS.iter().copied().find(|f| {
        arg.match_indices(&format!(".{f}")).any(|(i, _)| {
            let after = arg[i + f.len() + 1..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

#[test]
fn printers_of_untrusted_text_escape_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in [
        "src",
        "src/cmd",
        "crates/agent-core/src",
        "crates/agent-line/src",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            for (line, arg) in print_arguments(&source) {
                if let Some(field) = raw_field(&arg) {
                    found.push(format!("{}:{line}: .{field} in `{arg}`", path.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "printed without agent_base::term::untrusted:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_raw_field() {
    let source = "println!(\"{} {}\", s.id, s.title);\neprintln!(\"{}\", untrusted(&s.title));";
    let args = print_arguments(source);
    assert_eq!(args.len(), 3, "{args:?}");
    assert_eq!(raw_field(&args[1].1), Some("title"));
    assert_eq!(raw_field(&args[2].1), None);
    assert_eq!(raw_field("s.titles_count"), None);
    let tricky = split_arguments("\"{}\", x.split('(').count(), s.trim_matches('\"').len()) + 1");
    assert_eq!(tricky.len(), 3, "{tricky:?}");
}
