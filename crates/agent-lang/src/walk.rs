//! Which files of a repository the index and the repo map look at.
//!
//! `ignore` does the walking (it honours .gitignore, .ignore and our own
//! `.agentignore`, also outside git repositories); this module adds what a
//! code index needs on top: a size limit, and skipping binary, minified,
//! generated and vendored files, each with a reason the caller can report.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

/// Default per-file size limit: larger files are almost never hand-written code.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Default ceiling on the files one walk lists: a large monorepo has a few
/// hundred thousand; past this it is more likely `/` or a home folder, whose
/// walk (and index) would run the machine out of memory.
pub const DEFAULT_MAX_FILES: usize = 300_000;

/// Default ceiling on the bytes of the files one walk lists (each at most
/// `max_file_bytes`): what the indexer will read, chunk and embed.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 4 << 30;

/// The reason of the [`Skipped`] entry that says a walk stopped at a ceiling.
pub const WALK_STOPPED: &str = "walk stopped";

/// Never indexed, listed, searched or written: the agent's state and git's.
pub const HIDDEN_DIRS: &[&str] = &[".git", ".agent"];

/// Folders of dependencies, caches, vendored code and build output, even
/// where no ignore file says so: never indexed, and the agent's file tools
/// (agent-tools' walker) show them but descend into them only when asked.
pub const HEAVY_DIRS: &[&str] = &[
    ".hg",
    ".svn",
    "node_modules",
    "vendor",
    "third_party",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "target",
    "dist",
    "build",
    ".gradle",
    ".next",
    ".cache",
];

/// Lock files and other machine-written files, by name.
const GENERATED_NAMES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "go.sum",
    "composer.lock",
    "Gemfile.lock",
];

/// Text formats that are pictures or data, not code: matplotlib alone ships
/// 10 MB of `.svg` test baselines, which would crowd search results.
const DATA_EXTENSIONS: &[&str] = &["svg", "eps", "ps"];

pub use crate::lang::Lang;

#[derive(Debug, Clone, Serialize)]
pub struct SourceFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Path relative to the root, with `/` separators: the file's identity.
    pub rel: String,
    pub lang: Lang,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (0 when unknown).
    pub mtime_ns: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub rel: String,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct WalkOptions {
    pub max_file_bytes: u64,
    /// Read each file's first bytes to skip binary, minified and generated
    /// files. Callers that read whole files anyway can turn this off and run
    /// [`sniff`] on the bytes they read, sparing a second open per file.
    pub sniff: bool,
    /// The walk stops after this many files ([`stopped`] says so).
    pub max_files: usize,
    /// ... or once the files listed hold this many bytes together.
    pub max_total_bytes: u64,
}

impl Default for WalkOptions {
    fn default() -> Self {
        Self {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            sniff: true,
            max_files: DEFAULT_MAX_FILES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

/// Why a walk stopped short (its file or byte ceiling), with the fix; None
/// when it listed everything.
pub fn stopped(skipped: &[Skipped]) -> Option<&str> {
    skipped
        .iter()
        .find(|s| s.rel.is_empty() && s.reason.starts_with(WALK_STOPPED))
        .map(|s| s.reason.as_str())
}

/// The relative, `/`-separated form of `path` under `root`.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// An `ignore` walker configured like `walk` (for callers that need matchers too).
pub fn builder(root: &Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(root);
    b.hidden(false) // dotfiles such as .github/ are code too; .git is skipped below
        .follow_links(false) // no symlink loops, no escaping the repository
        .require_git(false)
        .add_custom_ignore_filename(".agentignore")
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && is_skipped_dir(&e.file_name().to_string_lossy()))
        });
    b
}

fn is_skipped_dir(name: &str) -> bool {
    HIDDEN_DIRS.contains(&name) || HEAVY_DIRS.contains(&name)
}

/// Every indexable file under `root`, sorted by relative path, plus the files
/// skipped and why. Unreadable entries are reported, never fatal.
pub fn walk(root: &Path, opts: &WalkOptions) -> (Vec<SourceFile>, Vec<Skipped>) {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut total_bytes = 0u64;
    for entry in builder(root).build() {
        if files.len() >= opts.max_files || total_bytes >= opts.max_total_bytes {
            skipped.push(Skipped {
                rel: String::new(),
                reason: ceiling_reason(root, files.len(), opts),
            });
            break;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                skipped.push(Skipped {
                    rel: String::new(),
                    reason: format!("walk error: {err}"),
                });
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let Some(rel) = relative(root, path) else {
            continue;
        };
        match check_file(path, opts) {
            Ok(file_meta) => {
                total_bytes += file_meta.0;
                files.push(SourceFile {
                    path: path.to_path_buf(),
                    lang: Lang::from_path(path),
                    rel,
                    size: file_meta.0,
                    mtime_ns: file_meta.1,
                })
            }
            Err(reason) => skipped.push(Skipped { rel, reason }),
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    (files, skipped)
}

fn ceiling_reason(root: &Path, files: usize, opts: &WalkOptions) -> String {
    let what = if files >= opts.max_files {
        format!("more than {} files", opts.max_files)
    } else {
        format!("more than {} MiB of files", opts.max_total_bytes >> 20)
    };
    format!(
        "{WALK_STOPPED} at {what} under {}: is this the project's folder?\n  \
         fix: run in the project (or give its path), add what is not code to .agentignore, \
         or raise the ceiling with --max-files N / --max-total-mb N",
        root.display()
    )
}

/// Files that hold credentials by convention (`.env`, keys, `.netrc`,
/// `.git/config`): never indexed, read or searched by the agent, so their
/// contents never reach a model, a session or a log. Templates such as
/// `.env.example` are fine.
pub fn is_secret_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let lower = name.to_ascii_lowercase();
    let template = [".example", ".sample", ".template", ".dist", ".defaults"]
        .iter()
        .any(|t| lower.ends_with(t));
    (lower == ".env" || lower.starts_with(".env.")) && !template
        || matches!(
            lower.as_str(),
            ".netrc"
                | ".npmrc"
                | ".pypirc"
                | ".git-credentials"
                | ".htpasswd"
                | "credentials"
                | ".envrc"
                | ".pgpass"
                | ".vault-token"
                | "secrets.yaml"
                | "secrets.yml"
        )
        || lower.starts_with("terraform.tfstate")
        || (lower.ends_with(".json") && lower.contains("credentials"))
        || rel.ends_with(".docker/config.json")
        || ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"]
            .iter()
            .any(|k| lower == *k)
        || [".pem", ".key", ".p12", ".pfx", ".keystore", ".jks"]
            .iter()
            .any(|ext| lower.ends_with(ext))
        || rel == ".git/config"
        || rel.ends_with("/.git/config")
}

/// Test code, by path: a `tests`/`test`/`testing` folder, or a file named
/// `test_*.py`, `*_test.py`, `*_test.go`, `*_spec.rb`, `*.test.ts`, ...
pub fn is_test(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut parts = lower.split('/').rev();
    let file = parts.next().unwrap_or("");
    let stem = file.split('.').next().unwrap_or("");
    parts.any(|d| matches!(d, "tests" | "test" | "testing" | "__tests__" | "spec"))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || file.contains(".test.")
        || file.contains(".spec.")
        || stem == "conftest"
}

/// Size and mtime of a file worth indexing, or why it is not.
pub fn check_file(path: &Path, opts: &WalkOptions) -> Result<(u64, i64), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if is_secret_file(&name) {
        return Err("holds secrets".into());
    }
    if GENERATED_NAMES.contains(&name.as_str())
        || name.ends_with(".min.js")
        || name.ends_with(".min.css")
    {
        return Err("generated".into());
    }
    if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| DATA_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
    {
        return Err("image or data".into());
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("unreadable: {e}"))?;
    if meta.len() > opts.max_file_bytes {
        return Err(format!("larger than {} KiB", opts.max_file_bytes / 1024));
    }
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);
    if !opts.sniff {
        return Ok((meta.len(), mtime_ns));
    }
    let mut head = vec![0u8; SNIFF_BYTES.min(meta.len() as usize)];
    {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| format!("unreadable: {e}"))?;
        let n = f.read(&mut head).map_err(|e| format!("unreadable: {e}"))?;
        head.truncate(n);
    }
    if let Some(reason) = sniff(&head) {
        return Err(reason.into());
    }
    Ok((meta.len(), mtime_ns))
}

/// How many leading bytes [`sniff`] looks at.
pub const SNIFF_BYTES: usize = 8192;

/// Classifies a file by its first bytes: binary, minified or generated.
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.contains(&0) {
        return Some("binary");
    }
    let text = String::from_utf8_lossy(head);
    let first_lines: String = text.lines().take(5).collect::<Vec<_>>().join("\n");
    // Cython's C output ships in sdists (15 MB of it in scikit-learn 0.19).
    if first_lines.contains("@generated")
        || first_lines.contains("DO NOT EDIT")
        || first_lines.contains("Generated by Cython")
    {
        return Some("generated");
    }
    let lines = text.lines().count().max(1);
    if head.len() >= 4096 && head.len() / lines > 500 {
        return Some("minified");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_ceiling_stops_the_walk_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("f{i}.py")), "x = 1\n").unwrap();
        }
        let opts = WalkOptions {
            max_files: 5,
            ..WalkOptions::default()
        };
        let (files, skipped) = walk(dir.path(), &opts);
        assert_eq!(files.len(), 5);
        let why = stopped(&skipped).expect("the walk says it stopped");
        assert!(
            why.contains("more than 5 files") && why.contains("--max-files"),
            "{why}"
        );
        let (files, skipped) = walk(dir.path(), &WalkOptions::default());
        assert_eq!(files.len(), 20);
        assert!(stopped(&skipped).is_none());
        let bytes = WalkOptions {
            max_total_bytes: 12,
            ..WalkOptions::default()
        };
        let (files, skipped) = walk(dir.path(), &bytes);
        assert_eq!(files.len(), 2);
        assert!(stopped(&skipped).unwrap().contains("MiB of files"));
    }

    #[test]
    fn walk_respects_ignore_files_and_skips_junk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, content: &[u8]| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        };
        write("src/lib.rs", b"pub fn a() {}\n");
        write("app/main.py", b"def main():\n    pass\n");
        write("README.md", b"# hi\n");
        write(".gitignore", b"ignored.rs\n");
        write("ignored.rs", b"fn x() {}\n");
        write(".agentignore", b"secret/\n");
        write("secret/key.rs", b"fn k() {}\n");
        write("node_modules/x/index.js", b"x\n");
        write("blob.bin", &[0, 1, 2, 3]);
        write("gen.rs", b"// @generated by a tool\nfn g() {}\n");
        write("app.min.js", b"var a=1;");
        write("big.txt", &vec![b'a'; 2 * 1024 * 1024]);
        write("Cargo.lock", b"# lock\n");
        write("cython.c", b"/* Generated by Cython 0.26.1 */\nint x;\n");
        write("baseline.svg", b"<svg></svg>\n");

        let (files, skipped) = walk(root, &WalkOptions::default());
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                ".agentignore",
                ".gitignore",
                "README.md",
                "app/main.py",
                "src/lib.rs"
            ]
        );
        assert_eq!(files[3].lang, Lang::Python);
        assert_eq!(files[4].lang, Lang::Rust);
        let reason = |r: &str| {
            skipped
                .iter()
                .find(|s| s.rel == r)
                .map(|s| s.reason.clone())
        };
        assert_eq!(reason("blob.bin").as_deref(), Some("binary"));
        assert_eq!(reason("gen.rs").as_deref(), Some("generated"));
        assert_eq!(reason("app.min.js").as_deref(), Some("generated"));
        assert_eq!(reason("Cargo.lock").as_deref(), Some("generated"));
        assert_eq!(reason("cython.c").as_deref(), Some("generated"));
        assert_eq!(reason("baseline.svg").as_deref(), Some("image or data"));
        assert!(reason("big.txt").unwrap().contains("larger than"));
    }

    #[test]
    fn minified_text_is_detected() {
        let line = "a".repeat(8192);
        assert_eq!(sniff(line.as_bytes()), Some("minified"));
        assert_eq!(sniff(b"fn main() {}\n"), None);
    }
}
