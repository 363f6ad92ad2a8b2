//! A project's dependencies at the versions it locks, found on disk with no
//! network: the sources the package managers already downloaded.
//!
//! - **Rust** ([`cargo`]): `Cargo.lock` → `$CARGO_HOME/registry/src/*/NAME-VERSION`.
//!   Direct: what the workspace's members depend on in the lock (their
//!   `dependencies` lists, which name the exact version when two are locked).
//! - **Python** ([`python`]): the project's environment (`.venv`, `venv`,
//!   `$VIRTUAL_ENV`), its `*.dist-info` folders (`METADATA` for the name and
//!   version, `RECORD` for the files). Direct: the names in `pyproject.toml`
//!   and `requirements*.txt`.
//! - **JavaScript/TypeScript** ([`node`]): `package-lock.json`'s packages under
//!   `node_modules/`, else the versions installed there. Direct: `package.json`.
//! - **Go** ([`gomod`]): `go.mod`'s requirements in `$GOMODCACHE`. Direct:
//!   those not marked `// indirect`.
//!
//! What cannot be found is listed with why ([`Missing`]), never guessed. This
//! crate only reads files: indexing and searching them is the session's.

pub mod cargo;
pub mod gomod;
pub mod node;
pub mod python;
pub mod rust_modules;

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

/// A package manager's world: names are only unique within one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Cargo,
    Python,
    Npm,
    Go,
}

impl Ecosystem {
    pub fn name(self) -> &'static str {
        match self {
            Ecosystem::Cargo => "cargo",
            Ecosystem::Python => "python",
            Ecosystem::Npm => "npm",
            Ecosystem::Go => "go",
        }
    }
}

/// One dependency at its locked version, with its sources on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Package {
    pub ecosystem: Ecosystem,
    pub name: String,
    pub version: String,
    /// The folder its files are under (read-only: the package manager's).
    pub root: PathBuf,
    /// Only these files under `root` belong to it (a Python distribution
    /// shares `site-packages` with others); None: all of `root`.
    pub files: Option<Vec<String>>,
    /// Named by the project itself, not only by another dependency.
    pub direct: bool,
}

impl Package {
    /// `NAME@VERSION`: how answers cite it (`tokio@1.47.1/src/lib.rs`).
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// A folder name for it: `NAME@VERSION` with `/` (npm scopes, Go module
    /// paths) and other unsafe characters replaced.
    pub fn key(&self) -> String {
        self.id()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.@+".contains(c) {
                    c
                } else {
                    '+'
                }
            })
            .collect()
    }

    /// Whether `rel` (relative to `root`, `/`-separated) is one of its files.
    pub fn owns(&self, rel: &str) -> bool {
        self.files
            .as_ref()
            .is_none_or(|files| files.iter().any(|f| f == rel))
    }
}

/// A dependency the project names (or locks) whose sources are not here.
#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    pub ecosystem: Ecosystem,
    pub name: String,
    pub version: Option<String>,
    pub direct: bool,
    /// Why, with what would fix it when something would.
    pub why: String,
}

/// Every dependency found for a project, and those that were not.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Resolution {
    pub packages: Vec<Package>,
    pub missing: Vec<Missing>,
    /// The lockfiles and environments read, for the record.
    pub sources: Vec<String>,
}

impl Resolution {
    /// The direct dependencies found.
    pub fn direct(&self) -> impl Iterator<Item = &Package> {
        self.packages.iter().filter(|p| p.direct)
    }

    /// The package a citation names: `NAME@VERSION` or `NAME` (the one
    /// locked version; the direct one when several are).
    pub fn find(&self, name: &str) -> Option<&Package> {
        if let Some(p) = self.packages.iter().find(|p| p.id() == name) {
            return Some(p);
        }
        let mut named: Vec<&Package> = self.packages.iter().filter(|p| p.name == name).collect();
        named.sort_by_key(|p| !p.direct);
        named.first().copied()
    }

    /// The file a path like `tokio@1.47.1/src/lib.rs` names, when it is one
    /// of a resolved package's own files; else why not. Nothing outside the
    /// resolved set is reachable: no `..`, no links out of the package.
    pub fn locate(&self, cited: &str) -> Result<(&Package, PathBuf), String> {
        let (id, rel) = split_cited(cited).ok_or_else(|| {
            format!("{cited:?} is not a dependency path (NAME@VERSION/path/in/package)")
        })?;
        let package = self
            .packages
            .iter()
            .find(|p| p.id() == id)
            .ok_or_else(|| format!("{id} is not among this project's locked dependencies"))?;
        let rel = rel.trim_start_matches('/');
        if rel.is_empty()
            || Path::new(rel)
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(format!("{cited:?}: the path must lead into the package"));
        }
        if !package.owns(rel) {
            return Err(format!("{rel} is not a file of {id}"));
        }
        let path = package.root.join(rel);
        let inside = match (path.canonicalize(), package.root.canonicalize()) {
            (Ok(p), Ok(root)) => p.starts_with(root),
            _ => return Err(format!("{id} has no file {rel}")),
        };
        if !inside {
            return Err(format!("{cited} leads out of {id}"));
        }
        Ok((package, path))
    }
}

/// `NAME@VERSION/rest` split into `NAME@VERSION` and `rest`; an npm scope's
/// leading `@` is part of the name.
pub fn split_cited(cited: &str) -> Option<(&str, &str)> {
    let at = cited.get(1..)?.find('@')? + 1;
    let slash = cited[at..].find('/').map(|i| at + i)?;
    (at > 0 && slash > at + 1).then(|| (&cited[..slash], &cited[slash + 1..]))
}

/// Where the package managers keep what they downloaded: from the
/// environment ([`Env::from_process`]) or given (tests).
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `$CARGO_HOME` (else `~/.cargo`).
    pub cargo_home: Option<PathBuf>,
    /// `$GOMODCACHE` (else `$GOPATH/pkg/mod`, else `~/go/pkg/mod`).
    pub go_mod_cache: Option<PathBuf>,
    /// `$VIRTUAL_ENV`, looked at after the project's own `.venv` and `venv`.
    pub virtual_env: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME");
        Self {
            cargo_home: var("CARGO_HOME").or_else(|| home.as_ref().map(|h| h.join(".cargo"))),
            go_mod_cache: var("GOMODCACHE")
                .or_else(|| var("GOPATH").map(|p| p.join("pkg/mod")))
                .or_else(|| home.as_ref().map(|h| h.join("go/pkg/mod"))),
            virtual_env: var("VIRTUAL_ENV"),
        }
    }
}

/// Every ecosystem's dependencies of the project at `root`.
pub fn resolve(root: &Path, env: &Env) -> Resolution {
    let mut all = Resolution::default();
    for part in [
        cargo::resolve(root, env),
        python::resolve(root, env),
        node::resolve(root),
        gomod::resolve(root, env),
    ] {
        all.packages.extend(part.packages);
        all.missing.extend(part.missing);
        all.sources.extend(part.sources);
    }
    all
}

/// A dependency's own tests, examples, benchmarks and fixtures: kept out of
/// its index (they would answer "how is X used" with the library's test
/// scaffolding rather than its API).
pub fn is_auxiliary(rel: &str) -> bool {
    // (In-file test modules are chunks, not files: `is_test_symbol`.)
    const DIRS: &[&str] = &[
        "tests",
        "test",
        "examples",
        "example",
        "benches",
        "bench",
        "testdata",
        "fixtures",
        "__tests__",
        "__snapshots__",
    ];
    let mut parts: Vec<&str> = rel.split('/').collect();
    let file = parts.pop().unwrap_or_default();
    parts.iter().any(|p| DIRS.contains(p))
        || matches!(file, "tests.rs" | "test.rs" | "conftest.py")
        || file.ends_with("_tests.rs")
        || file.ends_with("_test.go")
        || (file.starts_with("test_") && file.ends_with(".py"))
        || file.contains(".test.")
        || file.contains(".spec.")
}

/// A chunk of a dependency's in-file tests (`mod tests` in Rust): its
/// symbol has a `tests` or `test` module in its path.
pub fn is_test_symbol(symbol: &str) -> bool {
    let parts: Vec<&str> = symbol.split("::").collect();
    parts[..parts.len().saturating_sub(1)]
        .iter()
        .any(|m| *m == "tests" || *m == "test" || m.starts_with("tests_"))
}

/// Whether a chunk of a dependency is part of its public API, as far as
/// the chunk says: Rust items declared without `pub` (or `pub(crate)`),
/// Python names and modules with a leading `_` (not dunders), Go names
/// starting lower-case are not. An `impl` block, a module's header or a
/// JavaScript chunk counts as public: nothing says otherwise.
pub fn is_public(ecosystem: Ecosystem, rel: &str, symbol: &str, text: &str) -> bool {
    let name = symbol.rsplit([':', '.']).next().unwrap_or(symbol);
    match ecosystem {
        Ecosystem::Cargo => {
            let code = text.lines().map(str::trim_start).find(|l| {
                !l.is_empty()
                    && !l.starts_with("//")
                    && !l.starts_with("#[")
                    && !l.starts_with("#!")
            });
            let Some(code) = code else {
                return true;
            };
            const PRIVATE: &[&str] = &[
                "fn ",
                "struct ",
                "enum ",
                "const ",
                "static ",
                "type ",
                "trait ",
                "mod ",
                "async fn ",
                "unsafe fn ",
                "const fn ",
                "union ",
                "macro_rules! ",
                "pub(",
            ];
            !PRIVATE.iter().any(|k| code.starts_with(k))
        }
        Ecosystem::Python => {
            let hidden = |part: &str| part.starts_with('_') && !part.starts_with("__");
            let module_hidden = rel
                .trim_end_matches(".py")
                .trim_end_matches(".pyi")
                .split('/')
                .any(|part| part.starts_with('_') && part != "__init__" && part != "__main__");
            !(hidden(name) || module_hidden)
        }
        Ecosystem::Go => !name.starts_with(|c: char| c.is_ascii_lowercase()),
        Ecosystem::Npm => true,
    }
}

/// A package manager's name as its registry compares it: PEP 503 for
/// Python (case, `-`, `_` and `.` alike); npm, Cargo and Go as written.
pub fn normalize(ecosystem: Ecosystem, name: &str) -> String {
    match ecosystem {
        Ecosystem::Python => name
            .to_ascii_lowercase()
            .replace(['_', '.'], "-")
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-"),
        _ => name.to_string(),
    }
}

/// What the resolvers' tests lay out on disk.
#[cfg(test)]
mod test_files {
    use std::path::Path;

    /// `text` at `path`, its folders made.
    pub(crate) fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_paths_split_at_the_version() {
        assert_eq!(
            split_cited("tokio@1.47.1/src/lib.rs"),
            Some(("tokio@1.47.1", "src/lib.rs"))
        );
        assert_eq!(
            split_cited("@types/node@20.1.0/index.d.ts"),
            Some(("@types/node@20.1.0", "index.d.ts"))
        );
        assert_eq!(
            split_cited("github.com/pkg/errors@v0.9.1/errors.go"),
            Some(("github.com/pkg/errors@v0.9.1", "errors.go"))
        );
        assert_eq!(split_cited("src/lib.rs"), None);
        assert_eq!(split_cited("tokio@1.0"), None);
    }

    #[test]
    fn public_items_are_told_from_private_ones_per_ecosystem() {
        use Ecosystem::*;
        let rs = |text: &str| is_public(Cargo, "src/lib.rs", "f", text);
        assert!(rs("/// Docs.\n#[inline]\npub fn f() {}"));
        assert!(rs("impl Foo {\n    fn f() {}\n}"));
        assert!(!rs("/// Docs.\nfn f() {}"));
        assert!(!rs("pub(crate) struct S;"));
        assert!(is_public(
            Python,
            "core.py",
            "Command.invoke",
            "def invoke(self):"
        ));
        assert!(is_public(
            Python,
            "core.py",
            "Command.__init__",
            "def __init__(self):"
        ));
        assert!(!is_public(
            Python,
            "core.py",
            "Command._parse",
            "def _parse(self):"
        ));
        assert!(!is_public(
            Python,
            "_compat.py",
            "is_ascii",
            "def is_ascii():"
        ));
        assert!(is_public(Python, "__init__.py", "echo", "def echo():"));
        assert!(is_public(
            Go,
            "client.go",
            "Client.Do",
            "func (c *Client) Do()"
        ));
        assert!(!is_public(
            Go,
            "client.go",
            "Client.send",
            "func (c *Client) send()"
        ));
    }

    #[test]
    fn auxiliary_files_are_tests_examples_and_benches() {
        assert!(is_auxiliary("tests/it.rs"));
        assert!(is_auxiliary("src/tests/x.rs"));
        assert!(is_auxiliary("examples/a.rs"));
        assert!(is_auxiliary("benches/b.rs"));
        assert!(is_auxiliary("pkg/foo_test.go"));
        assert!(is_auxiliary("src/datetime/tests.rs"));
        assert!(is_auxiliary("lib/a.test.js"));
        assert!(!is_auxiliary("src/lib.rs"));
        assert!(!is_auxiliary("src/testing.rs"));
    }

    #[test]
    fn in_file_test_modules_are_told_by_their_symbols() {
        assert!(is_test_symbol("tests::timestamp_from_datetime"));
        assert!(is_test_symbol("tests_to_then_from_ffi::test_duration"));
        assert!(is_test_symbol("a::tests::b"));
        assert!(!is_test_symbol("tests"));
        assert!(!is_test_symbol("Error::msg"));
    }

    #[test]
    fn python_names_compare_as_pep_503_says() {
        assert_eq!(normalize(Ecosystem::Python, "Foo_Bar.baz"), "foo-bar-baz");
        assert_eq!(normalize(Ecosystem::Npm, "Foo_Bar"), "Foo_Bar");
    }

    #[test]
    fn locate_refuses_what_is_outside_the_resolved_set() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("demo-1.0.0");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("src/out.rs")).unwrap();
        let res = Resolution {
            packages: vec![Package {
                ecosystem: Ecosystem::Cargo,
                name: "demo".into(),
                version: "1.0.0".into(),
                root: root.clone(),
                files: None,
                direct: true,
            }],
            ..Resolution::default()
        };
        let (p, path) = res.locate("demo@1.0.0/src/lib.rs").unwrap();
        assert_eq!((p.name.as_str(), path), ("demo", root.join("src/lib.rs")));
        for refused in [
            "demo@2.0.0/src/lib.rs",
            "other@1.0.0/src/lib.rs",
            "demo@1.0.0/../secret.txt",
            "demo@1.0.0/src/out.rs",
            "demo@1.0.0//etc/passwd",
            "src/lib.rs",
        ] {
            assert!(res.locate(refused).is_err(), "{refused} was let through");
        }
    }
}
