//! Issue 54: the project's locked dependencies indexed offline, with the
//! real chunker and embedder, on dependency trees made here: a fake Cargo
//! registry with a Cargo.lock, a venv with an installed distribution
//! (dist-info, RECORD), a node_modules with a small package.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an integration test: its helpers are not #[test] fns, a panic is a test failure"
)]

use std::path::{Path, PathBuf};

use agent_base::cancel::CancelToken;
use agent_session::deps::{self, Report, Scope, Which};
use agent_session::search::{search, IndexSearch, Query};
use agent_tools::SemanticSearch;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const REG: &str = "source = \"registry+https://github.com/rust-lang/crates.io-index\"";

/// A crate version in the fake registry: its library, and a test and an
/// example that must stay out of its index.
fn registry_crate(reg: &Path, name: &str, version: &str, lib: &str) {
    let dir = reg.join(format!("{name}-{version}"));
    write(
        &dir.join("Cargo.toml"),
        &format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n"),
    );
    write(&dir.join("src/lib.rs"), lib);
    write(
        &dir.join("tests/it.rs"),
        "#[test]\nfn escapes_quotes_in_the_test_suite() {}\n",
    );
    write(
        &dir.join("examples/demo.rs"),
        "fn main() { println!(\"escape demo\"); }\n",
    );
}

fn lock(tinyjson: &str) -> String {
    format!(
        "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"ringbuf\", \"tinyjson\"]\n\n\
         [[package]]\nname = \"ringbuf\"\nversion = \"1.0.0\"\n{REG}\n\n\
         [[package]]\nname = \"tinyjson\"\nversion = \"{tinyjson}\"\n{REG}\n"
    )
}

/// A project locking `tinyjson` at `version`, with a venv and a
/// node_modules of one package each.
fn project(root: &Path, tinyjson: &str) {
    write(
        &root.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    write(&root.join("Cargo.lock"), &lock(tinyjson));
    write(
        &root.join("src/main.rs"),
        "use tinyjson::escape_string;\nfn main() {}\n",
    );
    // The venv: one distribution, installed as pip lays it out.
    let site = root.join(".venv/lib/python3.12/site-packages");
    write(&root.join(".venv/pyvenv.cfg"), "home = /usr/bin\n");
    write(&root.join("requirements.txt"), "slugify-lite==0.4\n");
    write(
        &site.join("slugify_lite/__init__.py"),
        "def slugify(text):\n    \"\"\"Turn a title into a lower-case URL slug joined by hyphens.\"\"\"\n    return '-'.join(text.lower().split())\n",
    );
    write(
        &site.join("slugify_lite-0.4.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: slugify-lite\nVersion: 0.4\n\n",
    );
    write(
        &site.join("slugify_lite-0.4.dist-info/RECORD"),
        "slugify_lite/__init__.py,sha256=x,120\nslugify_lite-0.4.dist-info/RECORD,,\n",
    );
    // node_modules: one package with its types.
    write(
        &root.join("package.json"),
        r#"{"dependencies": {"tiny-fmt": "^2"}}"#,
    );
    write(
        &root.join("package-lock.json"),
        r#"{"lockfileVersion": 3, "packages": {"": {}, "node_modules/tiny-fmt": {"version": "2.1.0"}}}"#,
    );
    let pkg = root.join("node_modules/tiny-fmt");
    write(
        &pkg.join("package.json"),
        r#"{"name": "tiny-fmt", "version": "2.1.0"}"#,
    );
    write(
        &pkg.join("index.d.ts"),
        "/** Pads a number with leading zeros to the given width. */\nexport declare function zeroPad(n: number, width: number): string;\n",
    );
    write(
        &pkg.join("index.js"),
        "function zeroPad(n, width) { return String(n).padStart(width, '0'); }\nmodule.exports = { zeroPad };\n",
    );
}

fn files_under(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push((p.clone(), e.metadata().unwrap().modified().unwrap()));
        }
    }
    out.sort();
    out
}

fn run(root: &Path, cancel: &CancelToken) -> Report {
    deps::index(root, Which::Direct, Some(1), cancel, &mut |_| {}).unwrap()
}

fn ids(report: &Report) -> Vec<String> {
    let mut ids: Vec<String> = report.built.iter().map(|b| b.id.clone()).collect();
    ids.sort();
    ids
}

fn deps_search(root: &Path, text: &str, package: Option<&str>) -> Vec<String> {
    let query = Query {
        text: text.into(),
        k: 5,
        mode: agent_index::SearchMode::Hybrid,
        path_glob: None,
        lang: None,
        scope: Scope::Deps,
        package: package.map(String::from),
    };
    search(root, query)
        .unwrap()
        .0
        .into_iter()
        .map(|r| r.path)
        .collect()
}

#[test]
fn dependencies_are_indexed_once_per_version_searched_and_read_within_bounds() {
    agent_base::paths::isolate_for_tests();
    let models = agent_base::paths::models_dir();
    if !models.join("minilm").is_dir() {
        agent_test_support::skip!(
            "no MiniLM in {} (run scripts/fetch-models, or set AGENT_MODELS_DIR)",
            models.display()
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let cargo_home = dir.path().join("cargo");
    let reg = cargo_home.join("registry/src/index.crates.io-0000");
    let escape = "/// Escapes quotes and backslashes so the text can sit inside a JSON string.\npub fn escape_string(s: &str) -> String {\n    s.replace('\\\\', \"\\\\\\\\\").replace('\"', \"\\\\\\\"\")\n}\n";
    registry_crate(&reg, "tinyjson", "0.2.0", escape);
    registry_crate(
        &reg,
        "tinyjson",
        "0.3.0",
        &escape.replace("escape_string", "escape_json_string"),
    );
    registry_crate(
        &reg,
        "ringbuf",
        "1.0.0",
        "/// A fixed-size circular buffer that overwrites its oldest element when full.\npub struct RingBuffer<T> { items: Vec<T>, head: usize }\n",
    );
    // SAFETY: this is the binary's only test; nothing else reads the environment concurrently.
    std::env::set_var("CARGO_HOME", &cargo_home);
    std::env::remove_var("VIRTUAL_ENV");
    std::env::remove_var("GOMODCACHE");
    let registry_before = files_under(&cargo_home);

    let a = dir.path().join("a");
    project(&a, "0.2.0");

    // Resolution: the locked versions, each ecosystem's, direct ones marked.
    let resolved = deps::resolve(&a);
    let mut found: Vec<(String, bool)> = resolved
        .packages
        .iter()
        .map(|p| (p.id(), p.direct))
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("ringbuf@1.0.0".into(), true),
            ("slugify-lite@0.4".into(), true),
            ("tiny-fmt@2.1.0".into(), true),
            ("tinyjson@0.2.0".into(), true),
        ]
    );
    let tinyjson = resolved.find("tinyjson").unwrap();
    let mut sources: Vec<String> = deps::source_files(tinyjson).into_iter().collect();
    sources.sort();
    assert_eq!(sources, vec!["src/lib.rs"], "tests and examples stay out");

    // Ctrl-C during the first package: nothing is marked indexed, and the
    // next run finishes it.
    let cancel = CancelToken::new();
    let stopped = deps::index(&a, Which::Direct, Some(1), &cancel, &mut |e| {
        if matches!(e, deps::Event::Progress(_)) {
            cancel.cancel();
        }
    })
    .unwrap();
    assert!(stopped.interrupted);
    assert!(resolved.packages.iter().all(|p| deps::indexed(p).is_none()));
    assert!(!resolved.packages.iter().any(deps::searchable_now));

    // Ctrl-C once the rows are in: every package is searchable by keyword,
    // none is complete.
    let cancel = CancelToken::new();
    let stopped = deps::index(&a, Which::Direct, Some(1), &cancel, &mut |e| {
        if matches!(
            e,
            deps::Event::Package {
                pass: deps::Pass::Surface,
                ..
            }
        ) {
            cancel.cancel();
        }
    })
    .unwrap();
    assert!(stopped.interrupted);
    assert!(resolved.packages.iter().all(deps::searchable_now));
    assert!(resolved.packages.iter().all(|p| deps::indexed(p).is_none()));
    let query = Query {
        text: "RingBuffer".into(),
        k: 3,
        mode: agent_index::SearchMode::Bm25,
        path_glob: None,
        lang: None,
        scope: Scope::Deps,
        package: None,
    };
    let (hits, notes) = search(&a, query).unwrap();
    assert_eq!(hits[0].path, "ringbuf@1.0.0/src/lib.rs");
    assert!(
        notes.iter().any(|n| n.contains("keyword only")),
        "{notes:?}"
    );

    let first = run(&a, &CancelToken::new());
    assert!(!first.interrupted, "{:?}", first.lines());
    assert_eq!(
        ids(&first),
        vec![
            "ringbuf@1.0.0",
            "slugify-lite@0.4",
            "tiny-fmt@2.1.0",
            "tinyjson@0.2.0"
        ]
    );
    assert!(
        first.built.iter().all(|b| b.chunks > 0),
        "{:?}",
        first.built
    );
    assert!(first.built.iter().map(|b| b.embedded).sum::<usize>() > 0);
    // The files the project imports were embedded before the rest.
    assert!(first.surface_embedded > 0, "{:?}", first.lines());
    assert_eq!(
        files_under(&cargo_home),
        registry_before,
        "the registry is read, never written"
    );

    // Search: answers from the locked version, cited NAME@VERSION/path.
    let hits = deps_search(&a, "escape quotes for a JSON string", None);
    assert_eq!(
        hits.first().map(String::as_str),
        Some("tinyjson@0.2.0/src/lib.rs"),
        "{hits:?}"
    );
    let hits = deps_search(&a, "turn a title into a url slug", Some("slugify-lite"));
    assert_eq!(hits, vec!["slugify-lite@0.4/__init__.py"]);
    let hits = deps_search(&a, "pad a number with zeros", Some("tiny-fmt"));
    assert!(
        hits.contains(&"tiny-fmt@2.1.0/index.d.ts".to_string()),
        "{hits:?}"
    );

    // A second workspace locking the same versions reuses every index.
    let b = dir.path().join("b");
    project(&b, "0.2.0");
    let second = run(&b, &CancelToken::new());
    assert!(second.built.is_empty(), "{:?}", second.built);
    assert_eq!(second.reused.len(), 4);

    // read_file's boundary: a resolved package's own files only.
    let mut tools = IndexSearch::for_workspace(&a).expect("indexed dependencies make a search");
    let ok = tools
        .dependency_file("tinyjson@0.2.0/src/lib.rs")
        .unwrap()
        .unwrap();
    assert_eq!(ok, reg.join("tinyjson-0.2.0/src/lib.rs"));
    for refused in [
        "tinyjson@0.3.0/src/lib.rs",
        "tinyjson@0.2.0/../ringbuf-1.0.0/src/lib.rs",
        "slugify-lite@0.4/../../../../pyvenv.cfg",
    ] {
        let answer = tools.dependency_file(refused);
        assert!(matches!(answer, Some(Err(_))), "{refused}: {answer:?}");
    }
    assert!(tools.dependency_file("src/main.rs").is_none());
    let hits = tools
        .search_in(
            "circular buffer that overwrites the oldest",
            3,
            "deps",
            None,
        )
        .unwrap();
    assert_eq!(hits[0].path, "ringbuf@1.0.0/src/lib.rs");
    // The gate is told which dependencies can be searched; one named is
    // searched alone.
    assert_eq!(
        tools.dependencies(),
        vec!["ringbuf", "slugify-lite", "tiny-fmt", "tinyjson"]
    );
    let hits = tools
        .search_in(
            "escape quotes for a JSON string",
            3,
            "deps",
            Some("ringbuf"),
        )
        .unwrap();
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h.path.starts_with("ringbuf@1.0.0/")),
        "{:?}",
        hits.iter().map(|h| &h.path).collect::<Vec<_>>()
    );
    assert!(tools
        .search_in("escape quotes", 3, "project", Some("ringbuf"))
        .is_err());

    // A lockfile change: only the new version is indexed, and searches follow.
    write(&a.join("Cargo.lock"), &lock("0.3.0"));
    let third = run(&a, &CancelToken::new());
    assert_eq!(ids(&third), vec!["tinyjson@0.3.0"]);
    assert_eq!(third.reused.len(), 3);
    let hits = deps_search(&a, "escape quotes for a JSON string", None);
    assert_eq!(
        hits.first().map(String::as_str),
        Some("tinyjson@0.3.0/src/lib.rs"),
        "{hits:?}"
    );
    // The other workspace still locks 0.2.0 and still finds it.
    let hits = deps_search(&b, "escape quotes for a JSON string", Some("tinyjson"));
    assert_eq!(hits, vec!["tinyjson@0.2.0/src/lib.rs"]);
}
