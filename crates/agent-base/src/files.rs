//! Writing a file so that a reader sees the old content or the new, whole:
//! a temporary file in the same folder, then a rename.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes through a temporary file in the same folder and a rename, keeping
/// the permissions of the file it replaces (or `mode` for a new file).
/// Missing parent folders are created.
pub fn atomic_write(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a file path has a parent folder"))?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.agent-tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let keep = std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
        .or(mode);
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        drop(f);
        if let Some(m) = keep {
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(m))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The sha256 of a file's bytes (hex), None when it cannot be read.
pub fn sha256_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(sha256_hex(&bytes))
}

/// The sha256 of `bytes` (hex): a file's content hash as the agent records
/// it, in the index's and the repo map's `files` tables alike (each in a
/// database of its own), so a hash means the same in both.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Removes a SQLite database and the files SQLite keeps beside it (the
/// write-ahead log, its shared memory, a rollback journal), whichever
/// exist: how the index and the repo map start a database anew.
pub fn remove_sqlite(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
}

/// Programs whose first argument that is not a flag is the script they run.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "python", "python3", "node", "deno", "bun", "ruby", "perl", "php",
    "lua", "Rscript",
];

/// The files inside `root` that a command line runs: its program, and for
/// an interpreter (`python3 tools/server.py`, `sh hook.sh`) its script; `sh -c
/// "..."` is looked into. Not every argument: a hook `pytest tests/x.py`
/// runs pytest, and pinning the test file would un-trust the workspace on
/// every edit. Canonical paths of regular files inside `root`, sorted.
pub fn files_run(root: &Path, words: &[String]) -> Vec<std::path::PathBuf> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    collect_run(&root, words, &mut out, 0);
    out.sort();
    out.dedup();
    out
}

/// The first symlink on the way from `root` to `path` (`path` itself
/// included), if any. Files that configure the agent (`.agent/`, `.mcp.json`,
/// `AGENTS.md`, ...) are never read through a link: a command or a
/// repository could point one at a file of its choosing.
pub fn link_on_the_way(root: &Path, path: &Path) -> Option<std::path::PathBuf> {
    let rel = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(at);
        }
    }
    None
}

/// The refusal of a configuration file reached through `link`, with the fix.
pub fn link_refused(link: &Path) -> String {
    format!(
        "{} is a symlink: the agent never follows a link among the files that configure it\n  \
         fix: replace the link with the file itself (cp --remove-destination \"$(readlink -f {0})\" {0}), or remove it",
        link.display()
    )
}

/// Reads a file that configures the agent, inside `root`: `Ok(None)` when
/// it does not exist, an error ([`link_refused`]) when a symlink is on its way.
pub fn read_config(root: &Path, path: &Path) -> Result<Option<String>, String> {
    if let Some(link) = link_on_the_way(root, path) {
        return Err(link_refused(&link));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Most files a server's load set holds; past it the set stops growing.
const MAX_LOADED: usize = 2000;

/// The files inside `root` a long-lived program (an MCP server) can load,
/// for a trust to pin: [`files_run`], and for an interpreter what it
/// imports beside its script. Python puts the script's folder first on
/// its module path (a planted `tools/json.py` is imported before the
/// standard library's `json`), and `-m pkg.mod` the working folder (the
/// workspace: its top-level modules, and the package); node and its kin
/// resolve relative imports from the script's folder. So the source files
/// of those folders, below them too (`node_modules` and hidden folders
/// apart), are pinned. Canonical paths, sorted.
pub fn files_loaded(root: &Path, words: &[String]) -> Vec<std::path::PathBuf> {
    let mut out = files_run(root, words);
    let Ok(root) = root.canonicalize() else {
        return out;
    };
    let base = words
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or_default();
    let python = base == "python" || base.starts_with("python3");
    let js = matches!(base, "node" | "deno" | "bun");
    let sources: &[&str] = if python {
        &["py", "pth"]
    } else if js {
        &["js", "mjs", "cjs", "ts", "mts", "json"]
    } else {
        return out;
    };
    let mut rest = words.iter().skip(1);
    while let Some(arg) = rest.next() {
        if python && arg == "-m" {
            // The module's top package, and the workspace's own modules.
            if let Some(module) = rest.next() {
                let top = module.split('.').next().unwrap_or(module);
                collect_sources(&root.join(top), sources, true, &mut out);
                collect_sources(&root, sources, false, &mut out);
            }
            break;
        }
        if arg.starts_with('-') {
            continue;
        }
        if let Some(dir) = root
            .join(arg)
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            if dir.starts_with(&root) {
                collect_sources(&dir, sources, true, &mut out);
            }
        }
        break;
    }
    out.sort();
    out.dedup();
    out
}

/// The files of `dir` with one of `extensions`, and below it when `deep`.
fn collect_sources(dir: &Path, extensions: &[&str], deep: bool, out: &mut Vec<std::path::PathBuf>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            if out.len() >= MAX_LOADED {
                return;
            }
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if deep && !name.starts_with('.') && name != "node_modules" && name != "__pycache__"
                {
                    stack.push(path);
                }
            } else if kind.is_file()
                && path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| extensions.contains(&e))
            {
                out.push(path);
            }
        }
    }
}

fn collect_run(root: &Path, words: &[String], out: &mut Vec<std::path::PathBuf>, depth: usize) {
    let Some(program) = words.first() else {
        return;
    };
    let mut named = vec![program.as_str()];
    let base = program.rsplit('/').next().unwrap_or(program);
    let interpreter = INTERPRETERS.contains(&base)
        || base
            .strip_prefix("python3.")
            .is_some_and(|v| v.parse::<u32>().is_ok());
    if interpreter {
        let mut rest = words[1..].iter();
        while let Some(arg) = rest.next() {
            if arg == "-c" && base.ends_with("sh") {
                if let Some(inline) = rest.next().filter(|_| depth < 2) {
                    let inner: Vec<String> = inline.split_whitespace().map(String::from).collect();
                    collect_run(root, &inner, out, depth + 1);
                }
                break;
            }
            if arg == "-c" || arg == "-m" || arg == "-e" {
                break; // inline code or a module: no file named
            }
            if !arg.starts_with('-') {
                named.push(arg);
                break;
            }
        }
    }
    for word in named {
        let word = word.trim_matches(|c| c == '\'' || c == '"');
        let Ok(path) = root.join(word).canonicalize() else {
            continue;
        };
        if path.starts_with(root) && path.is_file() {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_database_goes_with_the_files_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "s.sqlite",
            "s.sqlite-wal",
            "s.sqlite-shm",
            "s.sqlite-journal",
            "other.sqlite",
        ] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        remove_sqlite(&dir.path().join("s.sqlite"));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["other.sqlite"]);
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_files_a_command_line_runs_are_found_inside_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("tools")).unwrap();
        for f in ["tools/server.py", "hook.sh", "conf.json", "test_x.py"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            files_run(
                &root,
                &words(&["python3", "-u", "tools/server.py", "--stdio"])
            ),
            [root.join("tools/server.py")]
        );
        assert_eq!(
            files_run(&root, &words(&["sh", "-c", "./hook.sh --config=conf.json"])),
            [root.join("hook.sh")]
        );
        // What a program reads is not what it runs.
        assert!(files_run(&root, &words(&["pytest", "test_x.py"])).is_empty());
        // Outside the workspace, or not a file: not the repository's.
        assert!(files_run(&root, &words(&["/bin/sh", "../x"])).is_empty());
        assert!(files_run(&root, &words(&["bash", "tools"])).is_empty());
        let abs = root.join("hook.sh").display().to_string();
        assert_eq!(files_run(&root, &[abs]), [root.join("hook.sh")]);
    }

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        atomic_write(&p, b"new", None).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let n = dir.path().join("a/b/new.txt");
        atomic_write(&n, b"x", Some(0o600)).unwrap();
        assert_eq!(
            std::fs::metadata(&n).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_servers_load_set_is_what_its_interpreter_imports() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in [
            "tools/server.py",
            "tools/json.py",
            "tools/sub/util.py",
            "tools/README.md",
            "pkg/__init__.py",
            "pkg/server.py",
            "top.py",
            "other/x.py",
            "web/index.js",
            "web/lib/a.js",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rel = |v: Vec<std::path::PathBuf>| -> Vec<String> {
            v.iter()
                .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(
            rel(files_loaded(&root, &words(&["python3", "tools/server.py"]))),
            ["tools/json.py", "tools/server.py", "tools/sub/util.py"]
        );
        assert_eq!(
            rel(files_loaded(
                &root,
                &words(&["python3", "-m", "pkg.server"])
            )),
            ["pkg/__init__.py", "pkg/server.py", "top.py"]
        );
        assert_eq!(
            rel(files_loaded(&root, &words(&["node", "web/index.js"]))),
            ["web/index.js", "web/lib/a.js"]
        );
        assert_eq!(
            rel(files_loaded(&root, &words(&["sh", "top.py"]))),
            ["top.py"]
        );
    }
}
