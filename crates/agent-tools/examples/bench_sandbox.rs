//! `scripts/bench sandbox`: what the copy-on-write layer costs a command,
//! against the sandbox without it, on the same commands in one run, runs
//! alternating: `true` (the fixed cost), `cargo check` of a small crate (its `target/` bypassing the
//! layer, as git ignores it), a Python test suite (`pytest`, else
//! `unittest`), and `git status` in a 10,000-file repository (which
//! `run_cmd` runs with the workspace read-only and no layer, as a line that
//! only reads: measured here with the layer, the worst case). The layered
//! run includes reading the layer afterwards, as admission does. Where npm
//! is installed, `npm install` of lodash from npm's cache; with `--repo
//! PATH`, `cargo check` of one crate of that repository in place.
//!
//! Prints one JSON object per case: the median wall time of each mode and
//! their ratio (target: at most 1.15).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agent_base::cancel::CancelToken;
use agent_policy::{Mode, Policy};
use agent_tools::admit::Layer;
use agent_tools::shell::run_command;

fn sh(dir: &Path, script: &str) {
    let ok = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "set-up failed: {script}");
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The fixed cost: a command that does nothing.
fn true_case(dir: &Path) -> (String, String) {
    sh(dir, "git init -q");
    ("`true` (the layer's fixed cost)".into(), "true".into())
}

/// A crate of 20 modules, checked once so that later runs are incremental.
fn crate_case(dir: &Path) -> (String, String) {
    write(
        &dir.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(&dir.join(".gitignore"), "/target\n");
    let mut lib = String::new();
    for i in 0..20 {
        lib.push_str(&format!("pub mod m{i};\n"));
        write(
            &dir.join(format!("src/m{i}.rs")),
            &format!(
                "pub fn f{i}(x: u64) -> u64 {{\n    (0..x).map(|v| v * {i} + 1).sum()\n}}\n\n\
                 #[cfg(test)]\nmod tests {{\n    #[test]\n    fn t() {{\n        assert_eq!(super::f{i}(0), 0);\n    }}\n}}\n"
            ),
        );
    }
    write(&dir.join("src/lib.rs"), &lib);
    sh(
        dir,
        "git init -q && env -u CARGO_TARGET_DIR cargo check -q --offline 2>/dev/null",
    );
    (
        "cargo check of a 20-module crate".into(),
        "echo '// touched' >> src/m0.rs && cargo check -q --offline".into(),
    )
}

/// 30 test modules of 10 tests each.
fn python_case(dir: &Path) -> (String, String) {
    for m in 0..30 {
        let mut text = String::from("import unittest\n\n\nclass T(unittest.TestCase):\n");
        for t in 0..10 {
            text.push_str(&format!(
                "    def test_{t}(self):\n        self.assertEqual(sum(range({t})), {})\n",
                t * (t.max(1) - 1) / 2
            ));
        }
        write(&dir.join(format!("tests/test_m{m}.py")), &text);
    }
    write(&dir.join("tests/__init__.py"), "");
    sh(dir, "git init -q");
    let pytest = Command::new("python3")
        .args(["-c", "import pytest"])
        .status()
        .is_ok_and(|s| s.success());
    // No bytecode written in either mode: the bench reads a layer but does
    // not admit it, so a layered run would otherwise compile afresh each time.
    if pytest {
        (
            "pytest of 300 tests".into(),
            "PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider tests".into(),
        )
    } else {
        (
            "unittest of 300 tests (no pytest here)".into(),
            "PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests -q".into(),
        )
    }
}

/// A repository of 10,000 committed files.
fn git_case(dir: &Path) -> (String, String) {
    for i in 0..10_000 {
        write(
            &dir.join(format!("d{}/f{i}.txt", i % 100)),
            &format!("{i}\n"),
        );
    }
    sh(
        dir,
        "git init -q && git add -A && git -c user.name=b -c user.email=b@x commit -qm init && git status -s >/dev/null",
    );
    (
        "git status, 10,000 files".into(),
        "git status --porcelain | wc -l".into(),
    )
}

/// `npm install` of a real package from npm's cache (fetched once, by the
/// set-up, outside the sandbox; the command itself is offline), into a
/// `node_modules/` the layer holds (it is new: no bypass).
fn npm_case(dir: &Path) -> (String, String) {
    write(
        &dir.join("package.json"),
        "{\"name\": \"b\", \"version\": \"1.0.0\"}\n",
    );
    // npm's cache in the workspace (git ignores it): the sandbox writes
    // nowhere else.
    write(&dir.join(".gitignore"), "node_modules/\n.npm-cache/\n");
    let install = "npm install --cache .npm-cache --no-audit --no-fund --silent lodash@4.17.21";
    sh(
        dir,
        &format!("git init -q && {install} && rm -rf node_modules"),
    );
    // node_modules/ is removed before each run (by the bench, untimed): a
    // new one goes through the layer, then is moved in.
    (
        "npm install lodash (from the cache)".into(),
        format!("{install} --offline"),
    )
}

/// A case's set-up in a folder: its name and the command timed.
type Case = fn(&Path) -> (String, String);

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let reps: usize = std::env::args()
        .skip_while(|a| a != "--reps")
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let scratch = tempfile::tempdir().unwrap();
    let state = scratch.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    if let Err(why) = agent_sandbox::overlay_support(&state) {
        eprintln!("no copy-on-write layer here: {why}");
        std::process::exit(1);
    }
    let policy = Policy::builtin(Mode::Yolo);
    let cancel = CancelToken::new();
    let mut cases: Vec<Case> = vec![true_case, crate_case, python_case, git_case];
    let npm = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if npm {
        cases.push(npm_case);
    } else {
        eprintln!("npm is not installed: its case is left out");
    }
    // `--repo PATH`: `cargo check` of a crate of that repository in place
    // (its target/ as git ignores it), the sources touched, not changed.
    let repo = std::env::args().skip_while(|a| a != "--repo").nth(1);
    let mut runs: Vec<(std::path::PathBuf, String, String)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let dir = scratch.path().join(format!("case{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let (name, command) = case(&dir);
        runs.push((dir, name, command));
    }
    if let Some(repo) = repo {
        let repo = std::path::PathBuf::from(repo).canonicalize().unwrap();
        sh(
            &repo,
            "env -u CARGO_TARGET_DIR cargo check -q --offline -p agent-policy",
        );
        runs.push((
            repo,
            "cargo check -p agent-policy of this repository".into(),
            "touch crates/agent-policy/src/lib.rs && cargo check -q --offline -p agent-policy"
                .into(),
        ));
    }
    for (dir, name, command) in runs {
        let dir = dir.as_path();
        // The crate builds into its own target/ (git ignores it: bypassed).
        let env = policy.command_env();
        // Modes, alternating: the sandbox without a layer, with one, and
        // for a line that only reads, as run_cmd runs it (read-only, no layer).
        let modes = if policy.reads_only(&command) { 3 } else { 2 };
        let mut times = vec![Vec::new(); modes];
        for rep in 0..reps * modes {
            let mode = rep % modes;
            let mut sandbox = agent_tools::fence::sandbox(dir, &policy);
            let layer = (mode == 1)
                .then(|| Layer::attach(&mut sandbox, &state, dir, &[]).expect("a layer"));
            if mode == 2 {
                sandbox.writable.clear();
            }
            let _ = std::fs::remove_dir_all(dir.join("node_modules"));
            let started = Instant::now();
            let r = run_command(
                &command,
                dir,
                env.clone(),
                Duration::from_secs(600),
                &cancel,
                Some(&sandbox),
            )
            .unwrap();
            if let Some(layer) = &layer {
                let _ = layer.read();
            }
            let elapsed = started.elapsed();
            assert_eq!(r.exit_code, Some(0), "{name}: {}", r.output);
            times[mode].push(elapsed);
        }
        let (plain, layered) = (median(times[0].clone()), median(times[1].clone()));
        let mut row = serde_json::json!({"case": name, "reps": reps, "sandbox_ms": plain,
            "layer_ms": layered, "ratio": layered / plain});
        if modes == 3 {
            let read_only = median(times[2].clone());
            row["read_only_ms"] = read_only.into();
            row["read_only_ratio"] = (read_only / plain).into();
        }
        println!("{row}");
    }
}
