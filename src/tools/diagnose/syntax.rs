//! Diagnostics after a write: the errors a change brought into the files it
//! touched, so the model sees a broken edit at once instead of at the next
//! test run.
//!
//! Two checkers, fastest first, each bounded in time and output:
//! - a tree-sitter parse (Rust, Python): syntax errors and missing tokens;
//! - Python's own compiler (`compile()`, nothing written) when `python3` is
//!   installed: what the grammar accepts but Python does not (`return`
//!   outside a function, a bad `nonlocal`).
//!
//! Errors that were already in the file before the change are counted, not
//! listed: they are not the model's doing. `cargo check` and language servers
//! are too slow to run after every edit; `--verify` runs them when asked.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tree_sitter::{Node, Parser};

use crate::walk::Lang;

/// Most errors listed per file.
const MAX_LISTED: usize = 5;
/// How long Python's compiler may take.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(5);

/// One problem: its 1-based line and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

/// Syntax errors by tree-sitter, in source order.
fn parse_errors(lang: Lang, src: &str) -> Vec<Problem> {
    let Some(language) = lang.grammar() else {
        return Vec::new();
    };
    let mut parser = Parser::new();
    if parser.set_language(&language).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(src, None) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    collect(tree.root_node(), src, &mut out);
    out
}

fn collect(node: Node, src: &str, out: &mut Vec<Problem>) {
    if !node.has_error() {
        return;
    }
    if node.is_missing() {
        out.push(Problem {
            line: node.start_position().row + 1,
            message: format!("syntax error: missing `{}`", node.kind()),
        });
        return;
    }
    if node.is_error() {
        let text = src.get(node.byte_range()).unwrap_or("");
        let first = text.lines().next().unwrap_or("").trim();
        let snippet: String = first.chars().take(40).collect();
        out.push(Problem {
            line: node.start_position().row + 1,
            message: format!("syntax error near `{snippet}`"),
        });
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect(child, src, out);
    }
}

/// Python's own verdict on `src` (`None`: fine, or no python3 to ask).
fn python_error(src: &str, name: &str) -> Option<Problem> {
    const SCRIPT: &str = "import sys\n\
try:\n    compile(sys.stdin.read(), sys.argv[1], 'exec')\n\
except SyntaxError as e:\n    print(f'{e.lineno or 0}\\t{e.msg}')\n";
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT, name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Small sources fit the pipe; a writer thread keeps a big one from blocking us.
    let mut stdin = child.stdin.take()?;
    let text = src.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < PYTHON_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let _ = writer.join();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let (line, message) = out.trim().split_once('\t')?;
    Some(Problem {
        line: line.parse().unwrap_or(0),
        message: format!("python: {message}"),
    })
}

/// Every problem in `src`, tree-sitter's first, then Python's when it
/// names a line tree-sitter did not.
pub fn problems(path: &Path, src: &str) -> Vec<Problem> {
    let lang = Lang::from_path(path);
    let mut found = parse_errors(lang, src);
    if lang == Lang::Python {
        let name = path.display().to_string();
        if let Some(p) = python_error(src, &name) {
            if !found.iter().any(|f| f.line == p.line) {
                found.push(p);
            }
        }
    }
    found
}

/// The report for one written file, or `None` when the change brought no
/// new problem. `before` is the content the change replaced.
pub fn report(rel: &str, before: Option<&str>, after: &str) -> Option<String> {
    let path = Path::new(rel);
    if Lang::from_path(path) == Lang::Text {
        return None;
    }
    let now = problems(path, after);
    if now.is_empty() {
        return None;
    }
    // Matched by message, since the change moves lines.
    let mut old: Vec<String> = before
        .map(|b| problems(path, b).into_iter().map(|p| p.message).collect())
        .unwrap_or_default();
    let mut new = Vec::new();
    let mut kept = 0;
    for p in now {
        match old.iter().position(|m| *m == p.message) {
            Some(i) => {
                old.swap_remove(i);
                kept += 1;
            }
            None => new.push(p),
        }
    }
    if new.is_empty() {
        return None;
    }
    let mut out = format!(
        "diagnostics: this change broke {rel} ({} new error{}); fix it before going on:",
        new.len(),
        if new.len() == 1 { "" } else { "s" }
    );
    for p in new.iter().take(MAX_LISTED) {
        out.push_str(&format!("\n  {rel}:{}: {}", p.line, p.message));
    }
    if new.len() > MAX_LISTED {
        out.push_str(&format!("\n  ... and {} more", new.len() - MAX_LISTED));
    }
    if kept > 0 {
        out.push_str(&format!(
            "\n  ({kept} error(s) were already there before this change)"
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_python_edit_is_reported_with_its_line() {
        let before = "def add(a, b):\n    return a + b\n";
        let after = "def add(a, b):\n    return a +\n\n\ndef sub(a, b):\n    return a - b\n";
        let r = report("src/calc.py", Some(before), after).expect("a report");
        assert!(r.contains("src/calc.py:2:"), "{r}");
        assert_eq!(report("src/calc.py", Some(before), before), None);
        assert_eq!(report("notes.txt", None, "def (:"), None);
    }

    #[test]
    fn python_catches_what_the_grammar_accepts() {
        if Command::new("python3").arg("-V").output().is_err() {
            return; // no python3 here: only the parse runs
        }
        let r = report("m.py", None, "x = 1\nreturn x\n").expect("a report");
        assert!(
            r.contains("m.py:2: python: 'return' outside function"),
            "{r}"
        );
    }

    #[test]
    fn rust_errors_new_versus_already_there() {
        let before = "fn a() {\n    let x = ;\n}\n";
        let after = "fn a() {\n    let x = ;\n}\n\nfn b() {\n    let y = 1\n}\n";
        let r = report("src/lib.rs", Some(before), after).expect("a report");
        assert!(r.contains("src/lib.rs:6:"), "{r}");
        assert!(r.contains("1 error(s) were already there"), "{r}");
        assert!(!r.contains("src/lib.rs:2:"), "{r}");
        // The same old error alone is not the change's doing.
        assert_eq!(report("src/lib.rs", Some(before), before), None);
    }
}
