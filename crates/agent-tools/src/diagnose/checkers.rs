//! The project's own checkers after an edit: what a parse cannot see (types,
//! names, borrows) from the tools the language ships, when installed.
//!
//! | files | checker | project root |
//! |---|---|---|
//! | Rust | `cargo check --all-targets` | nearest `Cargo.toml` |
//! | TypeScript | `tsc --noEmit` (the project's own, else `$PATH`) | nearest `tsconfig.json` |
//! | Go | `go vet` on the changed packages | nearest `go.mod` |
//! | Python | `ruff` (syntax and undefined names only), `pyright` | nearest `pyproject.toml`, `setup.py` or `setup.cfg` |
//!
//! Each runs offline, inside the command sandbox (its writes to the
//! workspace go to a layer that is thrown away), for at most
//! `check_timeout_s` (policy.toml, default 20; 0 turns them off). `cargo
//! check` runs the project's build scripts and macros, so without a sandbox
//! it runs only in yolo mode. Errors are compared with a run before the
//! change, so only the change's own are listed; that earlier run is kept
//! per project, and reused while the files it saw are unchanged.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use regex::Regex;

use crate::change::FileChange;
use crate::shell::run_command;
use crate::Workspace;
use agent_base::cancel::CancelToken;
use agent_lang::lang::Lang;
use agent_policy::{Mode, Policy};
use agent_sandbox::{self as sandbox, Sandbox};

/// Most errors listed per checker run.
const MAX_LISTED: usize = 8;

/// One checker: which files it checks, where its project starts, how it
/// is run and which of its lines are errors.
struct Checker {
    name: &'static str,
    langs: &'static [Lang],
    /// Files that mark the project root, looked for upward from the file.
    markers: &'static [&'static str],
    /// Whether the root must have a marker (else the workspace root serves).
    needs_marker: bool,
    /// The program, found in the project (`node_modules/.bin`, `.venv/bin`)
    /// or on `$PATH`.
    program: &'static str,
    /// The rest of the command line, given the changed files relative to
    /// the root (already quoted).
    args: fn(&[String]) -> String,
    /// Whether a line's message (after `path:line:`) is an error.
    is_error: fn(&str) -> bool,
    /// A `grep -E` pattern for the lines worth keeping, where the checker
    /// prints much else (warnings) that would crowd the captured output.
    keep: Option<&'static str>,
    /// Runs the project's own code (build scripts, macros).
    runs_project_code: bool,
    /// Environment for an offline, non-interactive run.
    env: &'static [(&'static str, &'static str)],
    /// The variable naming where it writes its build output or cache, and
    /// whether its default (unset) lies outside the project. The sandbox
    /// lets it write only in the workspace, so a folder under `.agent/`
    /// stands in for one outside.
    build_dir: Option<(&'static str, bool)>,
}

fn starts_with_error(msg: &str) -> bool {
    msg.starts_with("error")
}

const CHECKERS: &[Checker] = &[
    Checker {
        name: "cargo check",
        langs: &[Lang::Rust],
        markers: &["Cargo.toml"],
        needs_marker: true,
        program: "cargo",
        args: |_| "check --offline --all-targets --message-format=short --color=never".into(),
        is_error: starts_with_error,
        keep: Some(": error"),
        runs_project_code: true,
        env: &[("CARGO_TERM_COLOR", "never"), ("CARGO_NET_OFFLINE", "true")],
        build_dir: Some(("CARGO_TARGET_DIR", false)),
    },
    Checker {
        name: "tsc",
        langs: &[Lang::TypeScript, Lang::Tsx],
        markers: &["tsconfig.json"],
        needs_marker: true,
        program: "tsc",
        args: |_| "--noEmit --pretty false -p .".into(),
        is_error: |msg| msg.starts_with("error TS"),
        keep: Some("error TS"),
        runs_project_code: false,
        env: &[],
        build_dir: None,
    },
    Checker {
        name: "go vet",
        langs: &[Lang::Go],
        markers: &["go.mod"],
        needs_marker: true,
        program: "go",
        args: |files| {
            let mut dirs: Vec<String> = files
                .iter()
                .map(|f| match Path::new(f).parent() {
                    Some(p) if !p.as_os_str().is_empty() => format!("./{}", p.display()),
                    _ => ".".into(),
                })
                .collect();
            dirs.sort();
            dirs.dedup();
            format!("vet {}", dirs.join(" "))
        },
        is_error: |_| true,
        keep: None,
        runs_project_code: false,
        env: &[("GOPROXY", "off"), ("GOTOOLCHAIN", "local")],
        build_dir: Some(("GOCACHE", true)),
    },
    Checker {
        name: "ruff",
        langs: &[Lang::Python],
        markers: &["pyproject.toml", "setup.py", "setup.cfg", "ruff.toml"],
        needs_marker: false,
        program: "ruff",
        // Errors, not style: syntax, undefined names, misused comparisons
        // (flake8's `E9,F63,F7,F82`, the set CI templates fail on).
        args: |files| {
            format!(
                "check --no-cache --quiet --output-format concise --select E9,F63,F7,F82 -- {}",
                files.join(" ")
            )
        },
        is_error: |_| true,
        keep: None,
        runs_project_code: false,
        env: &[],
        build_dir: None,
    },
    Checker {
        name: "pyright",
        langs: &[Lang::Python],
        markers: &[
            "pyrightconfig.json",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
        ],
        needs_marker: false,
        program: "pyright",
        args: |files| format!("-- {}", files.join(" ")),
        is_error: |msg| msg.starts_with("- error"),
        keep: Some(" - error"),
        runs_project_code: false,
        env: &[],
        build_dir: None,
    },
];

/// One error a checker printed, its path as printed.
#[derive(Debug, Clone)]
struct Found {
    path: String,
    line: usize,
    message: String,
}

/// `path:line[:col]: msg` (cargo, go, ruff, gcc), `path(line,col): msg`
/// (tsc), `path:line:col - msg` (pyright).
#[allow(
    clippy::expect_used,
    reason = "a literal regex, compiled by the tests of each checker's output"
)]
fn parse_line(line: &str) -> Option<Found> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?:vet: )?(?P<path>[^\s:()][^:()]*?)(?::(?P<a>\d+)(?::\d+)?:\s|\((?P<b>\d+),\d+\):\s|:(?P<c>\d+):\d+\s+(?P<dash>-\s))(?P<msg>.+)$",
        )
        .expect("a valid regex")
    });
    let caps = re.captures(line)?;
    let number = caps.name("a").or(caps.name("b")).or(caps.name("c"))?;
    let dash = caps.name("dash").map_or("", |d| d.as_str());
    Some(Found {
        path: caps["path"].trim().to_string(),
        line: number.as_str().parse().ok()?,
        message: format!("{dash}{}", caps["msg"].trim()),
    })
}

/// A checker's run over one project.
#[derive(Debug, Clone)]
struct Run {
    /// When it started: files changed since are not what it saw.
    started: SystemTime,
    found: Vec<Found>,
}

/// The last run of each checker on each project root, across the session:
/// the next change's "before".
fn last_runs() -> &'static Mutex<HashMap<(&'static str, PathBuf), Run>> {
    static RUNS: OnceLock<Mutex<HashMap<(&'static str, PathBuf), Run>>> = OnceLock::new();
    RUNS.get_or_init(Default::default)
}

/// Checkers that ran out of time on a project root: not run there again
/// this session (a cold `cargo check` of a big workspace would cost every
/// edit its time cap), after saying so once.
fn too_slow() -> &'static Mutex<HashSet<(&'static str, PathBuf)>> {
    static SLOW: OnceLock<Mutex<HashSet<(&'static str, PathBuf)>>> = OnceLock::new();
    SLOW.get_or_init(Default::default)
}

/// The checkers one change calls for, made before it is written.
pub struct Checks {
    planned: Vec<Planned>,
    timeout: Duration,
    sandbox: Option<Sandbox>,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    workspace: PathBuf,
    /// Where a checker's build output goes when it would leave the
    /// workspace: a cache of its own (`paths::cache_dir`), writable in the
    /// sandbox, apart from the agent's state that commands may not write.
    build_cache: PathBuf,
}

struct Planned {
    checker: &'static Checker,
    root: PathBuf,
    program: PathBuf,
    /// Changed files: absolute, as the model knows them, and which of
    /// their old lines are which new ones.
    files: Vec<(PathBuf, String, LineMap)>,
    before: Option<Run>,
    /// Why the "before" run gave nothing to compare with.
    skipped: Option<String>,
}

impl Checks {
    /// The checkers for `changes` (files whose new content parsed cleanly),
    /// as the policy allows.
    pub fn plan(workspace: &Workspace, policy: &Policy, changes: &[&FileChange]) -> Self {
        let sandboxed = policy.sandbox && sandbox::available();
        let mut planned: Vec<Planned> = Vec::new();
        if policy.check_timeout_s > 0 {
            for change in changes {
                let (abs, rel) = (&change.abs, &change.rel);
                let lang = Lang::from_path(abs);
                for checker in CHECKERS.iter().filter(|c| c.langs.contains(&lang)) {
                    if checker.runs_project_code
                        && !sandboxed
                        && (policy.mode != Mode::Yolo || policy.require_sandbox)
                    {
                        continue;
                    }
                    let Some(root) = project_root(workspace.root(), abs, checker) else {
                        continue;
                    };
                    let Some(program) = find_program(&root, checker.program) else {
                        continue;
                    };
                    // Said once, when it ran out of time.
                    let slow = too_slow()
                        .lock()
                        .is_ok_and(|s| s.contains(&(checker.name, root.clone())));
                    if slow {
                        continue;
                    }
                    let file = (abs.clone(), rel.clone(), LineMap::of(change));
                    match planned
                        .iter_mut()
                        .find(|p| p.checker.name == checker.name && p.root == root)
                    {
                        Some(p) => p.files.push(file),
                        None => planned.push(Planned {
                            checker,
                            root,
                            program,
                            files: vec![file],
                            before: None,
                            skipped: None,
                        }),
                    }
                }
            }
        }
        let build_cache = agent_base::paths::cache_dir(workspace.root());
        let mut writable = vec![workspace.root().to_path_buf()];
        if planned.iter().any(|p| p.checker.build_dir.is_some()) {
            agent_base::paths::create_private_dir(&build_cache);
            writable.push(build_cache.clone());
        }
        let mut sandbox = sandboxed.then(|| Sandbox {
            writable,
            allow_network: false,
            allowlist: None,
            ..crate::fence::sandbox(workspace.root(), policy)
        });
        // A checker installed in the home folder (a venv's ruff, a
        // typescript package the project links to) stays in sight there.
        if let Some(home) = sandbox.as_mut().and_then(|s| s.home.as_mut()) {
            for p in &planned {
                crate::fence::keep_installation(home, &p.program);
            }
        }
        Self {
            planned,
            timeout: Duration::from_secs(policy.check_timeout_s),
            sandbox,
            env: policy.command_env(),
            workspace: workspace.root().to_path_buf(),
            build_cache,
        }
    }

    /// Before the change is written: what each checker says now, from its
    /// last run when the files are as it saw them, else from a new run.
    pub fn before(&mut self, cancel: &CancelToken) {
        let runs = last_runs();
        for i in 0..self.planned.len() {
            let p = &self.planned[i];
            let key = (p.checker.name, p.root.clone());
            let cached = runs.lock().ok().and_then(|r| r.get(&key).cloned());
            let fresh = cached.filter(|run| {
                p.files.iter().all(|(abs, _, _)| {
                    std::fs::metadata(abs)
                        .and_then(|m| m.modified())
                        .map_or(true, |t| t <= run.started)
                })
            });
            let run = match fresh {
                Some(run) => Ok(run),
                None => self.run(&self.planned[i], cancel),
            };
            match run {
                Ok(run) => self.planned[i].before = Some(run),
                Err(why) => self.planned[i].skipped = Some(why),
            }
        }
    }

    /// After the change is written: the report of each checker that found
    /// errors the change brought, one string each.
    pub fn after(&self, cancel: &CancelToken) -> Vec<String> {
        let mut reports = Vec::new();
        for p in &self.planned {
            let name = p.checker.name;
            if let Some(why) = &p.skipped {
                reports.push(format!("diagnostics: {name} not run: {why}"));
                continue;
            }
            let Some(before) = &p.before else { continue };
            let after = match self.run(p, cancel) {
                Ok(run) => run,
                Err(why) => {
                    reports.push(format!("diagnostics: {name} not run: {why}"));
                    continue;
                }
            };
            if let Ok(mut runs) = last_runs().lock() {
                runs.insert((name, p.root.clone()), after.clone());
            }
            reports.extend(report(p, before, &after));
        }
        reports
    }

    fn run(&self, p: &Planned, cancel: &CancelToken) -> Result<Run, String> {
        let started = SystemTime::now();
        let rels: Vec<String> = p
            .files
            .iter()
            .filter_map(|(abs, _, _)| abs.strip_prefix(&p.root).ok())
            .map(|r| quote(&r.display().to_string()))
            .collect();
        let mut command = format!(
            "{} {}",
            quote(&p.program.display().to_string()),
            (p.checker.args)(&rels)
        );
        if let Some(pattern) = p.checker.keep {
            command = format!("{command} 2>&1 | grep -E {}", quote(pattern));
        }
        let mut env = self.env.clone();
        env.extend(p.checker.env.iter().map(|(k, v)| (k.into(), v.into())));
        if let Some((var, default_outside)) = p.checker.build_dir {
            let inside = match std::env::var_os(var) {
                Some(dir) => Path::new(&dir).starts_with(&self.workspace),
                None => !default_outside,
            };
            if !inside {
                let dir = self
                    .build_cache
                    .join(format!("check-{}", var.to_lowercase()));
                env.retain(|(k, _)| k != var);
                env.push((var.into(), dir.into()));
            }
        }
        // A checker runs project code (build scripts, macros) and has no
        // business changing the workspace: it writes a layer that is
        // thrown away (build folders git ignores bypass it, as for commands).
        let mut sandbox = self.sandbox.clone();
        let state = agent_base::paths::state_dir(&self.workspace);
        let layer = sandbox
            .as_mut()
            .and_then(|s| crate::admit::Layer::attach(s, &state, &self.workspace, &[]));
        let result = run_command(
            &command,
            &p.root,
            env,
            self.timeout,
            cancel,
            sandbox.as_ref(),
        )
        .map_err(|e| format!("cannot start it: {e}"))?;
        if let Some(found) = layer.map(|l| l.read()).filter(|f| !f.is_empty()) {
            tracing::info!(
                checker = p.checker.name,
                "its writes to the workspace were discarded: {found:?}"
            );
        }
        if result.timed_out {
            let why = format!(
                "it took longer than {} s on this project, so it is skipped for the rest of the session (raise check_timeout_s in .agent/policy.toml); run it with run_cmd to see its errors",
                self.timeout.as_secs()
            );
            if let Ok(mut slow) = too_slow().lock() {
                slow.insert((p.checker.name, p.root.clone()));
            }
            return Err(why);
        }
        if result.cancelled {
            return Err("cancelled".into());
        }
        let found = result
            .output
            .lines()
            .filter_map(parse_line)
            .filter(|f| (p.checker.is_error)(&f.message))
            .collect();
        Ok(Run { started, found })
    }
}

/// Which old line became which new line in a changed file: errors on
/// lines the change left alone are matched across it by line and message.
struct LineMap(HashMap<usize, usize>);

impl LineMap {
    fn of(change: &FileChange) -> Self {
        let text = |b: &Option<Vec<u8>>| {
            String::from_utf8_lossy(b.as_deref().unwrap_or_default()).into_owned()
        };
        let (old, new) = (text(&change.old), text(&change.new));
        let mut map = HashMap::new();
        for op in similar::TextDiff::from_lines(&old, &new).ops() {
            if let similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = *op
            {
                map.extend((0..len).map(|i| (old_index + i + 1, new_index + i + 1)));
            }
        }
        Self(map)
    }
}

/// The errors in `after` that are not in `before`: in a changed file, an
/// error already there sits on an unchanged line, moved by the change; in
/// other files lines do not move.
fn new_errors(p: &Planned, before: &Run, after: &Run) -> (Vec<(String, Found)>, usize) {
    let located = |run: &Run| -> Vec<(PathBuf, Found)> {
        run.found
            .iter()
            .filter_map(|f| Some((resolve(&p.root, &f.path)?, f.clone())))
            .collect()
    };
    let mut old = located(before);
    let mut new = Vec::new();
    let mut kept_in_changed = 0;
    for (abs, f) in located(after) {
        let changed = p.files.iter().find(|(a, _, _)| *a == abs);
        let same = |(a, o): &(PathBuf, Found)| {
            *a == abs
                && o.message == f.message
                && match changed {
                    Some((_, _, map)) => map.0.get(&o.line) == Some(&f.line),
                    None => o.line == f.line,
                }
        };
        match old.iter().position(same) {
            Some(i) => {
                old.swap_remove(i);
                kept_in_changed += usize::from(changed.is_some());
            }
            None => {
                let name = changed.map_or_else(|| f.path.clone(), |(_, rel, _)| rel.clone());
                new.push((name, f, changed.is_some()));
            }
        }
    }
    // The changed files' errors first.
    new.sort_by_key(|(_, _, in_changed)| !in_changed);
    let new = new.into_iter().map(|(name, f, _)| (name, f)).collect();
    (new, kept_in_changed)
}

/// The report of one checker: its new errors, those in the changed files
/// first, then those in files the change broke elsewhere (the callers of a
/// function whose signature moved).
fn report(p: &Planned, before: &Run, after: &Run) -> Option<String> {
    let (new, kept) = new_errors(p, before, after);
    if new.is_empty() {
        return None;
    }
    let n = new.len();
    let mut out = format!(
        "diagnostics: {} found {n} new error{} after this change; fix {} before going on:",
        p.checker.name,
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "them" },
    );
    for (name, f) in new.iter().take(MAX_LISTED) {
        out.push_str(&format!("\n  {name}:{}: {}", f.line, f.message));
    }
    if n > MAX_LISTED {
        out.push_str(&format!("\n  ... and {} more", n - MAX_LISTED));
    }
    if kept > 0 {
        out.push_str(&format!(
            "\n  ({kept} error(s) in the changed files were already there before this change)"
        ));
    }
    Some(out)
}

/// A printed path as an absolute one: as is, or under the root or one of
/// its parents (cargo prints paths from its workspace root, which may be
/// above the package's own).
fn resolve(root: &Path, printed: &str) -> Option<PathBuf> {
    let printed = Path::new(printed);
    if printed.is_absolute() {
        return Some(printed.to_path_buf());
    }
    root.ancestors()
        .map(|dir| dir.join(printed))
        .find(|p| p.exists())
        .map(|p| p.components().collect())
}

/// Each checker that applies to the workspace at `root` (files of its
/// language, and its marker file when it needs one), by name, and the
/// program it would run from `root` (for `doctor`).
pub fn programs(root: &Path) -> Vec<(&'static str, Option<PathBuf>)> {
    let (langs, names) = shallow_tree(root);
    CHECKERS
        .iter()
        .filter(|c| c.langs.iter().any(|l| langs.contains(l)))
        .filter(|c| !c.needs_marker || c.markers.iter().any(|m| names.contains(*m)))
        .map(|c| (c.name, find_program(root, c.program)))
        .collect()
}

/// The languages and file names in the top levels of `root` (enough to
/// tell a Python repository from a Rust one without walking all of it).
fn shallow_tree(root: &Path) -> (HashSet<Lang>, HashSet<String>) {
    const DEPTH: usize = 3;
    const MOST_ENTRIES: usize = 5000;
    let (mut langs, mut names) = (HashSet::new(), HashSet::new());
    let mut folders = vec![(root.to_path_buf(), 0)];
    let mut seen = 0;
    while let Some((dir, depth)) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MOST_ENTRIES {
                return (langs, names);
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let skip = name.starts_with('.') || matches!(name.as_str(), "node_modules" | "target");
            match entry.file_type() {
                Ok(t) if t.is_dir() && !skip && depth + 1 < DEPTH => {
                    folders.push((entry.path(), depth + 1))
                }
                Ok(t) if t.is_file() => {
                    langs.insert(Lang::from_path(&entry.path()));
                    names.insert(name);
                }
                _ => {}
            }
        }
    }
    (langs, names)
}

/// The nearest folder at or above `file` holding one of the checker's
/// markers, within the workspace; the workspace root for checkers that
/// need none.
fn project_root(workspace: &Path, file: &Path, checker: &Checker) -> Option<PathBuf> {
    let found = file
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(workspace))
        .find(|dir| checker.markers.iter().any(|m| dir.join(m).is_file()));
    match found {
        Some(dir) => Some(dir.to_path_buf()),
        None if !checker.needs_marker => Some(workspace.to_path_buf()),
        None => None,
    }
}

/// The project's own copy of a program (`node_modules/.bin/tsc`,
/// `.venv/bin/ruff`), else the one on `$PATH`.
fn find_program(root: &Path, name: &str) -> Option<PathBuf> {
    let local = ["node_modules/.bin", ".venv/bin", "venv/bin"]
        .iter()
        .map(|d| root.join(d).join(name));
    let path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    local
        .chain(path.into_iter().map(|d| d.join(name)))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| "''".into(), |q| q.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checker_lines_are_read_in_each_format() {
        let cases = [
            (
                "src/lib.rs:6:18: error[E0308]: mismatched types",
                ("src/lib.rs", 6, "error[E0308]: mismatched types"),
            ),
            (
                "src/app.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.",
                (
                    "src/app.ts",
                    12,
                    "error TS2322: Type 'string' is not assignable to type 'number'.",
                ),
            ),
            (
                "  /w/pkg/m.py:3:7 - error: \"y\" is not defined (reportUndefinedVariable)",
                (
                    "/w/pkg/m.py",
                    3,
                    "- error: \"y\" is not defined (reportUndefinedVariable)",
                ),
            ),
            (
                "vet: ./cmd/main.go:9:2: undefined: x",
                ("./cmd/main.go", 9, "undefined: x"),
            ),
            (
                "m.py:1:8: F821 Undefined name `os`",
                ("m.py", 1, "F821 Undefined name `os`"),
            ),
        ];
        for (line, (path, n, msg)) in cases {
            let f = parse_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (f.path.as_str(), f.line, f.message.as_str()),
                (path, n, msg)
            );
        }
        for noise in [
            "error: could not compile `calc` (lib) due to 1 previous error",
            "   Compiling calc v0.1.0 (/w)",
            "# example.com/m",
            "Found 1 error.",
        ] {
            assert!(parse_line(noise).is_none(), "{noise}");
        }
    }

    #[test]
    fn a_project_root_is_the_nearest_marker_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("crates/a/src")).unwrap();
        std::fs::write(ws.join("Cargo.toml"), "").unwrap();
        std::fs::write(ws.join("crates/a/Cargo.toml"), "").unwrap();
        let cargo = &CHECKERS[0];
        let ruff = CHECKERS.iter().find(|c| c.name == "ruff").unwrap();
        let file = ws.join("crates/a/src/lib.rs");
        assert_eq!(project_root(ws, &file, cargo), Some(ws.join("crates/a")));
        // No marker: cargo has no project, ruff takes the workspace.
        let loose = ws.join("scripts/x.py");
        assert_eq!(project_root(&ws.join("scripts"), &loose, cargo), None);
        assert_eq!(
            project_root(&ws.join("scripts"), &loose, ruff),
            Some(ws.join("scripts"))
        );
        // cargo prints paths from the workspace root above the package.
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            resolve(&ws.join("crates/a"), "crates/a/src/lib.rs"),
            Some(file.clone())
        );
        assert_eq!(resolve(&ws.join("crates/a"), "./src/lib.rs"), Some(file));
    }
}
