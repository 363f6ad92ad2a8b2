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
        let mut from = 0;
        while let Some(at) = source[from..].find(mac) {
            let start = from + at + mac.len();
            // `println!(` inside `eprintln!(` is found once, as `eprintln!(`.
            let before = source[..from + at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                from = start;
                continue;
            }
            let (mut depth, mut in_str, mut escaped) = (1, false, false);
            let (mut args, mut current) = (Vec::new(), String::new());
            for c in source[start..].chars() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' if in_str => escaped = true,
                    '"' => in_str = !in_str,
                    '(' | '[' | '{' if !in_str => depth += 1,
                    ')' | ']' | '}' if !in_str => depth -= 1,
                    ',' if !in_str && depth == 1 => {
                        args.push(std::mem::take(&mut current));
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                current.push(c);
            }
            args.push(current);
            let line = source[..start].lines().count();
            out.extend(
                args.into_iter()
                    .skip(1)
                    .map(|a| (line, a.trim().to_string())),
            );
            from = start;
        }
    }
    out
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
    for dir in ["src/cmd", "crates/agent-core/src"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
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
}
