//! Diagnostics after a write: the errors a change brought into the files it
//! touched, so the model sees a broken edit at once instead of at the next
//! test run. Every write through `change::apply` gets them, with `file:line`.
//!
//! Two layers, fastest first, each bounded in time and output:
//! - [`syntax`]: a tree-sitter parse, and Python's compiler for `.py`;
//! - [`checkers`]: the language's own checker where it is installed
//!   (`cargo check`, `tsc`, `go vet`, `ruff`, `pyright`), sandboxed and
//!   time-capped, on the files whose syntax is clean.
//!
//! Errors that were already there before the change are counted, not
//! listed: they are not the model's doing. A parse compares the old content
//! with the new; a checker's errors are compared with a run before the write,
//! matched by message on the lines the diff left alone, so an error that was
//! there stays unlisted and a caller broken in another file is listed.

mod checkers;
mod syntax;

pub use checkers::{programs, Checks};

/// Most errors listed per file.
const MAX_LISTED: usize = 5;

/// One problem: its 1-based line and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

/// Splits `now` into the problems that are new and the number that were
/// already in `before`, matched by message, since a change moves lines.
fn split_new(now: Vec<Problem>, before: &[String]) -> (Vec<Problem>, usize) {
    let mut old: Vec<&String> = before.iter().collect();
    let mut new = Vec::new();
    let mut kept = 0;
    for p in now {
        match old.iter().position(|m| **m == p.message) {
            Some(i) => {
                old.swap_remove(i);
                kept += 1;
            }
            None => new.push(p),
        }
    }
    (new, kept)
}

/// The syntax report for one written file, or `None` when the change
/// brought no new syntax error. `before` is the content the change replaced.
pub fn report(rel: &str, before: Option<&str>, after: &str) -> Option<String> {
    let path = std::path::Path::new(rel);
    if agent_lang::lang::Lang::from_path(path) == agent_lang::lang::Lang::Text {
        return None;
    }
    let now = syntax::problems(path, after);
    if now.is_empty() {
        return None;
    }
    let old: Vec<String> = before
        .map(|b| {
            syntax::problems(path, b)
                .into_iter()
                .map(|p| p.message)
                .collect()
        })
        .unwrap_or_default();
    let (new, kept) = split_new(now, &old);
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
    use std::process::Command;

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
