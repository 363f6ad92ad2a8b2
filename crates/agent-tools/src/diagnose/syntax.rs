//! Syntax, the first and fastest check after a write: a tree-sitter parse
//! (every language in the table), then Python's own compiler
//! (`compile()`, nothing written) when `python3` is installed, for what the
//! grammar accepts but Python does not (`return` outside a function, a bad
//! `nonlocal`).
//!
//! The one program the agent runs unfenced, because it runs nothing of the
//! workspace: a fixed script reads the text on stdin and only `compile()`s
//! it (no `exec`, no import of it), under `python3 -I -S` (no user site, no
//! `PYTHON*` variables, no current folder on the path, no `site`), with an
//! empty environment but `PATH`, from `/`, killed after a timeout.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tree_sitter::{Node, Parser};

use super::Problem;
use agent_lang::lang::Lang;

/// How long Python's compiler may take.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(5);

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
    // Isolated (`-I`: no user site, no PYTHON* variables, no current folder
    // on the path) and without `site` (`-S`): nothing in the workspace runs.
    let mut child = Command::new("python3")
        .args(["-I", "-S", "-c", SCRIPT, name])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir("/")
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
pub(super) fn problems(path: &Path, src: &str) -> Vec<Problem> {
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
