//! `agent init` and `/init`: an AGENTS.md written from what the agent
//! already knows about a repository: its build, test and lint commands (from
//! manifests, tox/nox, Makefiles and CI workflows), its languages, its
//! layout and its central modules (the repo map's ranking), with a short
//! overview by the model where it has one that the judge accepts.
//!
//! The file is written with the `write_file` tool, so it is shown as a diff,
//! confirmed like any write (AGENTS.md asks even in yolo mode, except when
//! `agent init --mode yolo` creates it) and undoable; an existing AGENTS.md
//! is never replaced without a yes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use agent_base::cancel::CancelToken;
use agent_llm::{CompletionRequest, Flow, Grammar, Message};
use agent_policy::Mode;
use agent_tools::{AlwaysApprove, Approval, Approver, Decision, ToolOutput};

use crate::{truncate, Agent, LoggingApprover};

/// The file it writes, at the workspace root.
pub const FILE: &str = agent_config::instructions::FILE_NAME;

/// What a command is for, in the order AGENTS.md lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    Install,
    Build,
    Test,
    Lint,
    Typecheck,
    Format,
    Docs,
}

impl Task {
    fn title(self) -> &'static str {
        match self {
            Task::Install => "Install",
            Task::Build => "Build",
            Task::Test => "Test",
            Task::Lint => "Lint",
            Task::Typecheck => "Type-check",
            Task::Format => "Format",
            Task::Docs => "Docs",
        }
    }
}

/// A command found in the repository, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    pub task: Task,
    pub command: String,
    /// The file that says so.
    pub source: String,
    /// A file of the project names this very command (CI, Makefile, tox,
    /// package scripts, README); false when it is only what the manifest's
    /// ecosystem usually runs (`cargo test` for a Cargo.toml), which is
    /// written as not verified (issue 53: `cargo test` failed on a crate
    /// whose tests need files from its parent repository).
    pub named: bool,
}

/// What the repository says about itself.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Language and number of files, most first.
    pub languages: Vec<(String, usize)>,
    /// Top-level folders and their number of files, and top-level files.
    pub layout: Vec<(String, usize)>,
    /// The files the repo map ranks highest.
    pub central: Vec<String>,
    pub commands: Vec<Found>,
}

/// Most commands listed per task, and central modules listed.
const PER_TASK: usize = 3;
const CENTRAL: usize = 8;

/// Everything [`Facts`] holds, read from `root`.
pub(crate) fn gather(root: &Path) -> Facts {
    let (files, _) = agent_lang::walk::walk(root, &agent_lang::walk::WalkOptions::default());
    let mut languages: BTreeMap<String, usize> = BTreeMap::new();
    let mut folders: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        if f.lang != agent_lang::walk::Lang::Text {
            *languages.entry(f.lang.as_str().to_string()).or_default() += 1;
        }
        if let Some((top, _)) = f.rel.split_once('/') {
            *folders.entry(format!("{top}/")).or_default() += 1;
        }
    }
    let mut languages: Vec<(String, usize)> = languages.into_iter().collect();
    languages.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    languages.truncate(6);
    let mut layout: Vec<(String, usize)> = folders.into_iter().collect();
    layout.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    layout.truncate(12);
    layout.sort();
    let (name, description) = identity(root);
    Facts {
        name,
        description,
        languages,
        layout,
        central: central_modules(root),
        commands: commands(root),
    }
}

/// The repo map's best-ranked code files (tests and docs left out).
fn central_modules(root: &Path) -> Vec<String> {
    use agent_repomap::{default_cache_path, RepoMap};
    let mut map = RepoMap::open(root, &default_cache_path(root));
    if let Err(e) = map.refresh() {
        tracing::warn!("no repo map for AGENTS.md: {e:#}");
        return Vec::new();
    }
    let ranked = map.ranked_files(&[]);
    map.flush();
    ranked
        .into_iter()
        .filter(|rel| {
            !rel.split('/').any(|part| {
                matches!(
                    part,
                    "tests" | "test" | "docs" | "doc" | "examples" | "benches"
                )
            }) && !rel.rsplit('/').next().unwrap_or(rel).starts_with("test_")
        })
        .take(CENTRAL)
        .collect()
}

/// The project's name and one-line description, from its manifest.
fn identity(root: &Path) -> (Option<String>, Option<String>) {
    let toml_field = |file: &str, table: &str| -> Option<(Option<String>, Option<String>)> {
        let value: toml::Value = toml::from_str(&read(root, file)?).ok()?;
        let t = value.get(table)?;
        let field = |k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
        Some((field("name"), field("description")))
    };
    if let Some(found) = toml_field("pyproject.toml", "project")
        .or_else(|| toml_field("Cargo.toml", "package"))
        .filter(|(n, _)| n.is_some())
    {
        return found;
    }
    if let Some(pkg) =
        read(root, "package.json").and_then(|t| serde_json::from_str::<Value>(&t).ok())
    {
        let field = |k: &str| pkg[k].as_str().map(str::to_string);
        return (field("name"), field("description"));
    }
    (None, None)
}

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel)).ok()
}

/// What a command line is for, by the tools it names; None for the rest
/// (setup, echo, uploads).
pub(crate) fn task_of(command: &str) -> Option<Task> {
    let c = format!(" {} ", command.to_lowercase());
    let has = |words: &[&str]| words.iter().any(|w| c.contains(w));
    if has(&[
        " echo ",
        " cd ",
        "upload",
        "codecov",
        "coverage report",
        " git ",
    ]) {
        return None;
    }
    if has(&[
        " mypy",
        " pyright",
        " tsc",
        "type-check",
        "typecheck",
        " cargo check",
    ]) {
        return Some(Task::Typecheck);
    }
    if has(&[
        "--check",
        " black --check",
        "cargo fmt",
        " gofmt",
        "prettier",
        " rustfmt",
        " isort",
    ]) && !has(&[" clippy", " lint"])
    {
        return Some(Task::Format);
    }
    if has(&[
        " clippy",
        " ruff",
        " flake8",
        " pylint",
        " eslint",
        "golangci",
        "pre-commit",
        " lint",
        " go vet",
    ]) {
        return Some(Task::Lint);
    }
    if has(&[
        "pytest", " test", "unittest", " tox", " nox", " ctest", " jest", " vitest", " mocha",
        " rspec", " phpunit",
    ]) {
        return Some(Task::Test);
    }
    if has(&["sphinx", "mkdocs", " doc ", "cargo doc", "rustdoc", " docs"]) {
        return Some(Task::Docs);
    }
    if has(&[
        " build",
        " make",
        " cmake",
        " compile",
        " mvn package",
        " gradle assemble",
    ]) {
        return Some(Task::Build);
    }
    if has(&[
        "pip install",
        "npm ci",
        "npm install",
        "pnpm install",
        "yarn install",
        "poetry install",
        "uv sync",
        "bundle install",
        " go mod download",
    ]) {
        return Some(Task::Install);
    }
    None
}

/// Every build, test and lint command the repository's files name, the
/// most specific sources first (manifests and tox before CI lines).
pub(crate) fn commands(root: &Path) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut add = |task: Task, command: &str, source: &str| {
        let command = command.trim();
        if !command.is_empty() && !out.iter().any(|f| f.command == command) {
            out.push(Found {
                task,
                command: command.to_string(),
                source: source.to_string(),
                named: false,
            });
        }
    };
    let exists = |rel: &str| root.join(rel).exists();

    if exists("Cargo.toml") {
        add(Task::Build, "cargo build", "Cargo.toml");
        add(Task::Test, "cargo test", "Cargo.toml");
        add(Task::Lint, "cargo clippy --all-targets", "Cargo.toml");
        add(Task::Format, "cargo fmt", "Cargo.toml");
    }
    if exists("go.mod") {
        add(Task::Build, "go build ./...", "go.mod");
        add(Task::Test, "go test ./...", "go.mod");
        add(Task::Lint, "go vet ./...", "go.mod");
    }
    if let Some(pkg) =
        read(root, "package.json").and_then(|t| serde_json::from_str::<Value>(&t).ok())
    {
        let runner = if exists("pnpm-lock.yaml") {
            "pnpm"
        } else if exists("yarn.lock") {
            "yarn"
        } else {
            "npm"
        };
        add(
            Task::Install,
            if runner == "npm" && exists("package-lock.json") {
                "npm ci"
            } else {
                match runner {
                    "pnpm" => "pnpm install",
                    "yarn" => "yarn install",
                    _ => "npm install",
                }
            },
            "package.json",
        );
        if let Some(scripts) = pkg["scripts"].as_object() {
            for (name, body) in scripts {
                let task = match name.as_str() {
                    "test" => Some(Task::Test),
                    "build" => Some(Task::Build),
                    "lint" => Some(Task::Lint),
                    "typecheck" | "type-check" | "tsc" => Some(Task::Typecheck),
                    "format" | "fmt" | "prettier" => Some(Task::Format),
                    "docs" => Some(Task::Docs),
                    _ => body
                        .as_str()
                        .and_then(task_of)
                        .filter(|t| *t != Task::Install),
                };
                if let Some(task) = task {
                    let command = match (runner, name.as_str()) {
                        ("npm", "test") => "npm test".to_string(),
                        ("npm", _) => format!("npm run {name}"),
                        (r, _) => format!("{r} {name}"),
                    };
                    add(task, &command, "package.json");
                }
            }
        }
    }
    python_commands(root, &mut add);
    if let Some(text) = read(root, "Makefile").or_else(|| read(root, "makefile")) {
        for target in make_targets(&text) {
            let task = match target.as_str() {
                "test" | "tests" | "check" => Task::Test,
                "build" | "all" => Task::Build,
                "lint" => Task::Lint,
                "fmt" | "format" => Task::Format,
                "docs" => Task::Docs,
                "install" | "deps" | "setup" => Task::Install,
                _ => continue,
            };
            add(task, &format!("make {target}"), "Makefile");
        }
    }
    if exists("CMakeLists.txt") {
        add(
            Task::Build,
            "cmake -S . -B build && cmake --build build",
            "CMakeLists.txt",
        );
        add(Task::Test, "ctest --test-dir build", "CMakeLists.txt");
    }
    if exists("pom.xml") {
        add(Task::Test, "mvn -q test", "pom.xml");
    }
    if exists("build.gradle") || exists("build.gradle.kts") {
        let gradle = if exists("gradlew") {
            "./gradlew"
        } else {
            "gradle"
        };
        add(Task::Build, &format!("{gradle} build"), "build.gradle");
        add(Task::Test, &format!("{gradle} test"), "build.gradle");
    }
    let ci = ci_lines(root);
    let readme = readme_lines(root);
    for (source, line) in ci.iter().chain(&readme) {
        if installs_ci_tooling(line) {
            continue;
        }
        if let Some(task) = task_of(line) {
            add(task, line, source);
        }
    }
    for found in &mut out {
        // "tox.ini (every environment)": the file is the source's first word.
        let file = found.source.split(' ').next().unwrap_or_default();
        found.named = NAMING_FILES.contains(&file)
            || found.source.starts_with(".github/")
            || ci.iter().chain(&readme).any(|(_, line)| {
                // The very command, not a longer one (`cargo test --lib`
                // names no `cargo test`).
                line.split(['&', ';', '|'])
                    .any(|part| part.trim() == found.command)
            });
    }
    // Within a task, what the project names comes before what is assumed.
    out.sort_by_key(|f| (f.task, !f.named));
    out
}

/// Files that name the commands they hold (unlike a manifest, whose
/// ecosystem's usual commands are only assumed).
const NAMING_FILES: &[&str] = &[
    ".gitlab-ci.yml",
    "Makefile",
    "makefile",
    "tox.ini",
    "noxfile.py",
    "package.json",
    "pyproject.toml",
    "setup.cfg",
    "README.md",
    "CONTRIBUTING.md",
];

/// The commands a README or CONTRIBUTING file shows: lines of its shell
/// code blocks (a `$ ` prompt dropped) and inline `code` spans.
fn readme_lines(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for source in ["README.md", "CONTRIBUTING.md"] {
        let Some(text) = read(root, source) else {
            continue;
        };
        let mut fence: Option<bool> = None; // Some(shell?) inside a block
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(info) = trimmed.strip_prefix("```") {
                fence = match fence {
                    Some(_) => None,
                    None => Some(matches!(
                        info.trim(),
                        "" | "sh" | "bash" | "shell" | "console" | "text"
                    )),
                };
                continue;
            }
            let mut candidates: Vec<&str> = Vec::new();
            match fence {
                Some(true) => candidates.push(trimmed.trim_start_matches("$ ")),
                Some(false) => {}
                None => candidates.extend(trimmed.split('`').skip(1).step_by(2)),
            }
            for c in candidates {
                let c = c.trim();
                if !c.is_empty() && !c.starts_with('#') {
                    out.push((source.to_string(), c.to_string()));
                }
            }
        }
    }
    out
}

/// tox, nox, pytest, ruff, mypy and requirements files.
fn python_commands(root: &Path, add: &mut dyn FnMut(Task, &str, &str)) {
    let pyproject: Option<toml::Value> =
        read(root, "pyproject.toml").and_then(|t| toml::from_str(&t).ok());
    let tool = |name: &str| pyproject.as_ref().and_then(|p| p.get("tool")?.get(name));
    let installable = root.join("pyproject.toml").exists() || root.join("setup.py").exists();
    if let Some(tox) = read(root, "tox.ini") {
        let ini = parse_ini(&tox);
        let mut requirements = Vec::new();
        let mut extras = Vec::new();
        for (section, key, value) in &ini {
            let Some(env) = section.strip_prefix("testenv") else {
                continue;
            };
            let env = env.trim_start_matches(':');
            if key == "deps" && env.is_empty() {
                requirements.extend(value.lines().filter_map(|l| {
                    let l = l.trim();
                    l.strip_prefix("-r").map(|r| format!("-r {}", r.trim()))
                }));
            }
            if key == "extras" && env.is_empty() {
                extras.extend(
                    value
                        .split([',', '\n'])
                        .map(str::trim)
                        .filter(|e| !e.is_empty()),
                );
            }
            if key != "commands" {
                continue;
            }
            let task = match env {
                "" => Some(Task::Test),
                "style" | "lint" | "pre-commit" | "flake8" => Some(Task::Lint),
                "typing" | "mypy" | "types" | "type" => Some(Task::Typecheck),
                "docs" => Some(Task::Docs),
                // Other environments (release chores, requirement updates)
                // are nothing to run while coding.
                _ => None,
            };
            let Some(task) = task else { continue };
            // `coverage: coverage combine` runs only in environments with
            // that factor: not a command of the project's own.
            for line in value.lines().filter(|l| !is_factor_conditional(l)) {
                add(task, &without_tox_substitutions(line), "tox.ini");
            }
        }
        let editable = match (installable, extras.is_empty()) {
            (false, _) => String::new(),
            (true, true) => "-e . ".into(),
            (true, false) => format!("-e \".[{}]\" ", extras.join(",")),
        };
        if !requirements.is_empty() || !editable.is_empty() {
            add(
                Task::Install,
                format!("pip install {editable}{}", requirements.join(" ")).trim_end(),
                "tox.ini",
            );
        }
        add(Task::Test, "tox", "tox.ini (every environment)");
    }
    if root.join("noxfile.py").exists() {
        add(Task::Test, "nox", "noxfile.py");
    }
    let setup_cfg_pytest = read(root, "setup.cfg").is_some_and(|t| t.contains("[tool:pytest]"));
    if tool("pytest").is_some() || setup_cfg_pytest || root.join("pytest.ini").exists() {
        add(Task::Test, "pytest", "pyproject.toml (tool.pytest)");
    }
    if tool("ruff").is_some() || root.join("ruff.toml").exists() {
        add(Task::Lint, "ruff check .", "pyproject.toml (tool.ruff)");
    }
    if tool("mypy").is_some() {
        add(Task::Typecheck, "mypy", "pyproject.toml (tool.mypy)");
    }
    if tool("poetry").is_some() {
        add(
            Task::Install,
            "poetry install",
            "pyproject.toml (tool.poetry)",
        );
    } else if root.join("uv.lock").exists() {
        add(Task::Install, "uv sync", "uv.lock");
    }
}

/// A tox line run only where an environment has a factor: `coverage: ...`,
/// `!py37: ...`, `py38,py39: ...`.
fn is_factor_conditional(line: &str) -> bool {
    line.trim().split_once(": ").is_some_and(|(factors, _)| {
        !factors.is_empty()
            && factors
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '!' | ',' | '-' | '_' | '.'))
    })
}

/// A CI line that only installs the CI's own tools (`pip install --upgrade
/// pip`, `python -m pip install tox coverage`): nothing a developer runs to
/// set the project up.
fn installs_ci_tooling(line: &str) -> bool {
    const TOOLING: &[&str] = &[
        "pip",
        "setuptools",
        "wheel",
        "tox",
        "nox",
        "coverage",
        "codecov",
        "build",
        "twine",
        "virtualenv",
        "pre-commit",
        "tox-gh-actions",
        "tox-gh",
        "uv",
        "pipx",
    ];
    let Some((_, packages)) = line.split_once("pip install") else {
        return false;
    };
    let names: Vec<&str> = packages
        .split_whitespace()
        .filter(|w| !w.starts_with('-'))
        .collect();
    !names.is_empty()
        && names.iter().all(|n| {
            let bare = n.trim_matches(['"', '\'']);
            let bare = bare.split(['=', '<', '>', '[', '~']).next().unwrap_or(bare);
            TOOLING.contains(&bare.to_lowercase().as_str())
        })
}

/// A tox command without `{posargs}`, `--basetemp={envtmpdir}` and the like:
/// what a person runs by hand.
fn without_tox_substitutions(line: &str) -> String {
    line.split_whitespace()
        .filter(|word| !(word.contains('{') && word.contains('}')))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `(section, key, value)` of an INI file; indented lines continue a value.
fn parse_ini(text: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.2.push('\n');
                last.2.push_str(trimmed);
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = name.trim().to_string();
        } else if let Some((key, value)) = trimmed.split_once('=') {
            out.push((
                section.clone(),
                key.trim().to_string(),
                value.trim().to_string(),
            ));
        }
    }
    for entry in &mut out {
        entry.2 = entry.2.trim().to_string();
    }
    out
}

/// Targets a Makefile defines, in order.
fn make_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with(['\t', ' ', '.', '#']) {
            continue;
        }
        let Some((target, rest)) = line.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') {
            continue; // `X := value`
        }
        for t in target.split_whitespace() {
            if t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !out.contains(&t.to_string())
            {
                out.push(t.to_string());
            }
        }
    }
    out
}

/// Each shell line the CI workflows run, with the workflow's path:
/// GitHub Actions' `run:` steps and GitLab CI's `script:` lists.
fn ci_lines(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(".github/workflows"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    files.push(root.join(".gitlab-ci.yml"));
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(doc) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
            continue;
        };
        let source = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let mut scripts = Vec::new();
        if let Some(jobs) = doc.get("jobs").and_then(|j| j.as_mapping()) {
            for job in jobs.values() {
                for step in job
                    .get("steps")
                    .and_then(|s| s.as_sequence())
                    .into_iter()
                    .flatten()
                {
                    if let Some(run) = step.get("run").and_then(|r| r.as_str()) {
                        scripts.push(run.to_string());
                    }
                }
            }
        } else if let Some(jobs) = doc.as_mapping() {
            for job in jobs.values() {
                let script = job.get("script");
                if let Some(line) = script.and_then(|s| s.as_str()) {
                    scripts.push(line.to_string());
                }
                for line in script.and_then(|s| s.as_sequence()).into_iter().flatten() {
                    if let Some(line) = line.as_str() {
                        scripts.push(line.to_string());
                    }
                }
            }
        }
        for script in scripts {
            for line in script.lines() {
                let line = line.trim();
                if !line.is_empty() && !line.starts_with('#') && !line.contains("${{") {
                    out.push((source.clone(), line.to_string()));
                }
            }
        }
    }
    out
}

/// The facts as plain lines, for the model and the judge.
fn facts_text(facts: &Facts) -> String {
    let mut out = String::new();
    if let Some(name) = &facts.name {
        out.push_str(&format!("Name: {name}\n"));
    }
    if let Some(d) = &facts.description {
        out.push_str(&format!("Description: {d}\n"));
    }
    let langs: Vec<String> = facts
        .languages
        .iter()
        .map(|(l, n)| format!("{l} ({n} files)"))
        .collect();
    out.push_str(&format!("Languages: {}\n", langs.join(", ")));
    let folders: Vec<String> = facts
        .layout
        .iter()
        .map(|(d, n)| format!("{d} ({n} files)"))
        .collect();
    out.push_str(&format!("Folders: {}\n", folders.join(", ")));
    out.push_str(&format!("Central modules: {}\n", facts.central.join(", ")));
    for f in &facts.commands {
        out.push_str(&format!(
            "{}: {} ({})\n",
            f.task.title(),
            f.command,
            f.source
        ));
    }
    out
}

/// What a folder usually holds, by its name.
fn folder_role(dir: &str) -> &'static str {
    match dir.trim_end_matches('/') {
        "src" | "lib" | "pkg" | "internal" | "app" => "source",
        "crates" | "packages" => "the workspace's packages",
        "tests" | "test" | "spec" => "tests",
        "docs" | "doc" => "documentation",
        "examples" | "example" => "examples",
        "scripts" | "tools" | "bin" => "scripts",
        "benches" | "benchmarks" => "benchmarks",
        ".github" => "CI workflows",
        "requirements" => "pinned requirements",
        _ => "",
    }
}

/// The commands [`render`] writes: at most [`PER_TASK`] of each task, in
/// the order found (tasks in order, what the project names first).
fn written(facts: &Facts) -> Vec<&Found> {
    let mut tasks: Vec<Task> = facts.commands.iter().map(|f| f.task).collect();
    tasks.dedup();
    tasks
        .into_iter()
        .flat_map(|t| {
            facts
                .commands
                .iter()
                .filter(move |f| f.task == t)
                .take(PER_TASK)
        })
        .collect()
}

/// How many of the commands found [`render`] writes.
pub fn written_commands(facts: &Facts) -> usize {
    written(facts).len()
}

/// The commands [`render`] writes that no file of the project names.
pub fn unverified_commands(facts: &Facts) -> Vec<&str> {
    written(facts)
        .into_iter()
        .filter(|f| !f.named)
        .map(|f| f.command.as_str())
        .collect()
}

/// The AGENTS.md text.
pub(crate) fn render(facts: &Facts, overview: Option<&str>) -> String {
    let mut out = String::from(
        "# AGENTS.md\n\nNotes for coding agents working on this repository. Written by `agent init` \
from the repository's manifests, CI files and code map; correct and extend it.\n",
    );
    let about = overview
        .map(str::to_string)
        .or_else(|| facts.description.clone());
    if facts.name.is_some() || about.is_some() {
        out.push_str("\n## Project\n\n");
        match (&facts.name, about) {
            (Some(name), Some(about)) => out.push_str(&format!("{name}: {about}\n")),
            (Some(name), None) => out.push_str(&format!("{name}\n")),
            (None, Some(about)) => out.push_str(&format!("{about}\n")),
            (None, None) => {}
        }
    }
    if !facts.commands.is_empty() {
        out.push_str("\n## Build and test\n\n");
        for f in written(facts) {
            let unverified = if f.named {
                ""
            } else {
                "; not verified: no CI file, Makefile or README names it"
            };
            out.push_str(&format!(
                "- {}: `{}` ({}{unverified})\n",
                f.task.title(),
                f.command,
                f.source
            ));
        }
    }
    if !facts.layout.is_empty() {
        out.push_str("\n## Layout\n\n");
        for (dir, files) in &facts.layout {
            let role = folder_role(dir);
            let role = if role.is_empty() {
                String::new()
            } else {
                format!(": {role}")
            };
            out.push_str(&format!("- `{dir}` ({files} files){role}\n"));
        }
    }
    if !facts.central.is_empty() {
        out.push_str("\n## Central modules\n\nThe files the rest of the code uses most (the repo map's ranking); read these first:\n\n");
        for rel in &facts.central {
            out.push_str(&format!("- `{rel}`\n"));
        }
    }
    if !facts.languages.is_empty() {
        let langs: Vec<String> = facts
            .languages
            .iter()
            .map(|(l, n)| format!("{l} ({n} files)"))
            .collect();
        out.push_str(&format!("\n## Languages\n\n{}\n", langs.join(", ")));
    }
    out
}

/// What the model is asked for the overview (the judge knows these words
/// as the agent's own).
pub(crate) const OVERVIEW_PROMPT: &str =
    "Write two or three sentences for this repository's AGENTS.md: \
what the project is, and how its code is organised. Say only what the facts above show. Reply \
with JSON: {\"overview\": \"...\"}";

/// How `agent init` went.
#[derive(Debug, Clone, Serialize)]
pub struct InitOutcome {
    pub path: PathBuf,
    pub content: String,
    /// Whether AGENTS.md was there before.
    pub existed: bool,
    /// The model's overview, or why there is none.
    pub overview: Result<String, String>,
    /// The write: ok, declined, unchanged.
    pub output: ToolOutput,
    pub facts: Facts,
}

/// Approves the one write `agent init --mode yolo` asked for when it
/// creates AGENTS.md; anything else (replacing one) goes to the user.
struct CreateApprover<'a> {
    inner: &'a mut dyn Approver,
    create: bool,
}

impl Approver for CreateApprover<'_> {
    fn approve(&mut self, request: &Approval) -> Decision {
        match request {
            Approval::Write { paths, .. } if self.create && paths == &[FILE] => Decision::Approve,
            _ => self.inner.approve(request),
        }
    }
}

impl Agent {
    /// Writes AGENTS.md from the repository's facts (and, with `use_model`,
    /// the model's overview), through `write_file`: a diff, confirmed by
    /// `approver`. `write: false` only composes it.
    pub fn init(
        &mut self,
        use_model: bool,
        write: bool,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> anyhow::Result<InitOutcome> {
        self.log.new_trace();
        let root = self.workspace.root().to_path_buf();
        let facts = gather(&root);
        let overview = if use_model {
            self.overview(&root, &facts, cancel)
        } else {
            Err("no model asked (--no-model)".to_string())
        };
        let content = render(&facts, overview.as_deref().ok());
        let path = root.join(FILE);
        let existed = path.exists();
        let output = if write {
            if existed {
                // The write tools change only what was read.
                self.call_tool(
                    "read_file",
                    &json!({"path": FILE}),
                    &mut AlwaysApprove,
                    cancel,
                );
            }
            let mut create = CreateApprover {
                inner: approver,
                create: !existed && self.policy.mode == Mode::Yolo,
            };
            let mut logged = LoggingApprover {
                inner: &mut create,
                decisions: Vec::new(),
            };
            let args = json!({"path": FILE, "content": content});
            let output = self.call_tool("write_file", &args, &mut logged, cancel);
            let decisions = std::mem::take(&mut logged.decisions);
            self.log_decisions(&decisions);
            output
        } else {
            ToolOutput::ok("not written (--print)")
        };
        self.log.audit(
            "init",
            json!({"path": path, "existed": existed, "ok": output.ok, "error": output.error,
                   "overview": overview.as_ref().err(), "commands": facts.commands}),
        );
        Ok(InitOutcome {
            path,
            content,
            existed,
            overview,
            output,
            facts,
        })
    }

    /// Two or three sentences on the project from the model, when the judge
    /// finds them about this repository.
    fn overview(
        &mut self,
        root: &Path,
        facts: &Facts,
        cancel: &CancelToken,
    ) -> Result<String, String> {
        let readme = ["README.md", "README.rst", "README.txt", "README"]
            .iter()
            .find_map(|name| read(root, name))
            .unwrap_or_default();
        let evidence = format!("{}\n{}", facts_text(facts), truncate(&readme, 2000));
        let user = format!(
            "What we know about this repository:\n{}\nThe start of its README:\n{}\n\n{OVERVIEW_PROMPT}",
            facts_text(facts),
            truncate(&readme, 2000)
        );
        let request = CompletionRequest {
            messages: vec![
                Message::system(
                    "You write AGENTS.md files: short, factual notes for coding agents about a repository.",
                ),
                Message::user(user),
            ],
            max_tokens: 256,
            sampling: self.config.sampling,
            grammar: self.provider.supports_grammar().then(|| {
                Grammar::new(
                    r#"root ::= "{" ws "\"overview\"" ws ":" ws "\"" char{1,500} "\"" ws "}"
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
ws ::= " "?
"#,
                )
            }),
            interrupt: Some(cancel.clone()),
            ..CompletionRequest::default()
        };
        // A minute of prefill on a laptop CPU: say what is happening.
        let spinner = agent_base::term::timed_spinner("asking the model for an overview…".into());
        let completion = self.provider.complete(&request, &mut |_| Flow::Continue);
        spinner.finish_and_clear();
        let completion = completion.map_err(|e| format!("the model could not write one ({e})"))?;
        self.log.trace(
            "init_response",
            json!({"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                   "completion_tokens": completion.completion_tokens}),
        );
        let text = completion.text.trim();
        let overview = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v["overview"].as_str().map(|s| s.trim().to_string()))
            .ok_or_else(|| {
                format!(
                    "the model's reply was not the JSON asked for ({})",
                    truncate(text, 120)
                )
            })?;
        if let Some(fault) = self.judge.check(&overview, "", Some(&evidence)) {
            return Err(format!("the model's overview {}", fault.reason()));
        }
        Ok(overview)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tox_commands_lose_their_substitutions_and_envs_pick_the_task() {
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tox.ini"),
            "[tox]\nenvlist = py3{12,11}\n\n[testenv]\ndeps =\n    -r requirements/tests.txt\ncommands = pytest -v --tb=short --basetemp={envtmpdir} {posargs}\n\n\
             [testenv:style]\ncommands = pre-commit run --all-files\n\n[testenv:typing]\ncommands = mypy\n\n\
             [testenv:update-requirements]\ncommands =\n    pip-compile -U build.in\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname = \"demo\"\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        )
        .unwrap();
        let found = commands(dir.path());
        let got: Vec<(Task, &str)> = found.iter().map(|f| (f.task, f.command.as_str())).collect();
        assert_eq!(
            got,
            [
                (Task::Install, "pip install -e . -r requirements/tests.txt"),
                (Task::Test, "pytest -v --tb=short"),
                (Task::Test, "tox"),
                (Task::Test, "pytest"),
                (Task::Lint, "pre-commit run --all-files"),
                (Task::Typecheck, "mypy"),
            ]
        );
    }

    /// pytest 7.4.0's tox.ini and CI, as a new user found them: factor lines
    /// were written as commands, `extras = testing` and `tox` were missed,
    /// and CI's `pip install --upgrade pip` was taken for the install step.
    #[test]
    fn tox_factor_lines_extras_and_ci_tooling_installs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("tox.ini"),
            "[tox]\nenvlist = py38,doctesting\n\n[testenv]\ncommands =\n    {env:_PYTEST_TOX_COVERAGE_RUN:} pytest {posargs:{env:_PYTEST_TOX_DEFAULT_POSARGS:}}\n    doctesting: {env:_PYTEST_TOX_COVERAGE_RUN:} pytest --doctest-modules --pyargs _pytest\n    coverage: coverage combine\n    coverage: coverage report -m\nextras = testing\n",
        )
        .unwrap();
        std::fs::write(root.join("setup.py"), "").unwrap();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::write(
            root.join(".github/workflows/test.yml"),
            "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: |\n          python -m pip install --upgrade pip\n          pip install tox coverage\n      - run: tox -e py38\n",
        )
        .unwrap();
        let found = commands(root);
        let got: Vec<(Task, &str)> = found.iter().map(|f| (f.task, f.command.as_str())).collect();
        assert_eq!(
            got,
            [
                (Task::Install, "pip install -e \".[testing]\""),
                (Task::Test, "pytest"),
                (Task::Test, "tox"),
                (Task::Test, "tox -e py38"),
            ]
        );
        assert!(is_factor_conditional("!py37: pytest"));
        assert!(is_factor_conditional("py38,py39: pytest"));
        assert!(!is_factor_conditional("pytest --deselect a.py::test_x"));
    }

    #[test]
    fn ci_workflows_makefiles_and_package_scripts_are_read() {
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::write(
            root.join(".github/workflows/ci.yml"),
            "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: npm ci\n      - run: |\n          npm run lint\n          npx vitest run\n      - run: echo ${{ matrix.x }}\n",
        )
        .unwrap();
        std::fs::write(
            root.join("package.json"),
            r#"{"name": "web", "description": "A shop", "scripts": {"test": "vitest", "build": "vite build", "dev": "vite"}}"#,
        )
        .unwrap();
        std::fs::write(root.join("package-lock.json"), "{}").unwrap();
        std::fs::write(
            root.join("Makefile"),
            "CC := gcc\n.PHONY: test\ntest: build\n\tnpm test\nrelease:\n\tnpm publish\n",
        )
        .unwrap();
        let found = commands(root);
        let has = |task: Task, cmd: &str, source: &str| {
            found
                .iter()
                .any(|f| f.task == task && f.command == cmd && f.source == source)
        };
        assert!(has(Task::Install, "npm ci", "package.json"), "{found:?}");
        assert!(has(Task::Test, "npm test", "package.json"), "{found:?}");
        assert!(
            has(Task::Build, "npm run build", "package.json"),
            "{found:?}"
        );
        assert!(has(Task::Test, "make test", "Makefile"), "{found:?}");
        assert!(
            has(Task::Lint, "npm run lint", ".github/workflows/ci.yml"),
            "{found:?}"
        );
        assert!(
            has(Task::Test, "npx vitest run", ".github/workflows/ci.yml"),
            "{found:?}"
        );
        assert!(
            !found
                .iter()
                .any(|f| f.command.contains("dev") || f.command.contains("publish")),
            "{found:?}"
        );
        assert_eq!(identity(root), (Some("web".into()), Some("A shop".into())));
    }

    #[test]
    fn commands_only_assumed_from_a_manifest_are_written_as_not_verified() {
        // Issue 53: `cargo test` fails on regex-automata (its tests need the
        // parent repository's files); nothing in the crate names it.
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        let facts = Facts {
            commands: commands(root),
            ..Facts::default()
        };
        let text = render(&facts, None);
        assert!(
            text.contains("- Test: `cargo test` (Cargo.toml; not verified"),
            "{text}"
        );
        assert!(unverified_commands(&facts).contains(&"cargo test"));

        // A README that shows the command names it, and what it names leads.
        std::fs::write(
            root.join("README.md"),
            "# x\n\nRun the tests:\n\n```sh\n$ cargo test --lib\n```\n\nand `cargo build` builds it.\n",
        )
        .unwrap();
        let facts = Facts {
            commands: commands(root),
            ..Facts::default()
        };
        let tests: Vec<&Found> = facts
            .commands
            .iter()
            .filter(|f| f.task == Task::Test)
            .collect();
        assert_eq!(tests[0].command, "cargo test --lib", "{tests:?}");
        assert!(tests[0].named);
        let build = facts
            .commands
            .iter()
            .find(|f| f.command == "cargo build")
            .unwrap();
        assert!(build.named, "the README names it: {build:?}");
        assert!(!unverified_commands(&facts).contains(&"cargo build"));
    }

    #[test]
    fn the_file_lists_what_was_found() {
        let facts = Facts {
            name: Some("demo".into()),
            description: Some("A demo.".into()),
            languages: vec![("python".into(), 12)],
            layout: vec![("src/".into(), 10), ("tests/".into(), 2)],
            central: vec!["src/demo/app.py".into()],
            commands: vec![Found {
                task: Task::Test,
                command: "pytest".into(),
                source: "pyproject.toml".into(),
                named: true,
            }],
        };
        let text = render(&facts, Some("Demo serves pages."));
        for part in [
            "demo: Demo serves pages.",
            "- Test: `pytest` (pyproject.toml)",
            "- `src/` (10 files): source",
            "- `src/demo/app.py`",
            "python (12 files)",
        ] {
            assert!(text.contains(part), "{part}:\n{text}");
        }
        assert!(render(&facts, None).contains("demo: A demo."));
    }
}
