//! What policy.toml says about the sandbox: extra read-only and hidden
//! paths, the per-command limits, and which commands write the git
//! repository (those ask, and run with `.git` writable).
//!
//! ```toml
//! protected_paths = ["tools/*.py", "Makefile"]  # read-only for commands (globs, workspace-relative)
//! deny_read = ["~/.vault-token", "/srv/keys"]   # hidden from commands
//! [limits]            # per command; 0 = no limit
//! processes = 1024    # processes and threads at once
//! memory_mb = 8192    # the command's memory, all its processes (a cgroup; else each process's heap)
//! file_size_mb = 16384
//! cpu_s = 3600        # CPU seconds of each process
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::SimpleCommand;

/// Per-command resource limits (`None`: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads at once (`cargo test` and `pytest -n` start
    /// many threads; a fork flood stops here).
    pub processes: Option<u64>,
    /// Data of each process, MiB: `RLIMIT_DATA`, not `RLIMIT_AS`, which
    /// counts address space merely reserved (V8 and Go reserve gigabytes
    /// they never touch, and fail under it).
    pub memory_mb: Option<u64>,
    /// Largest file a process may write, MiB.
    pub file_size_mb: Option<u64>,
    /// CPU seconds of each process.
    pub cpu_s: Option<u64>,
}

impl Default for Limits {
    /// Roomy for `cargo test` and `pytest` on a developer's machine, tight
    /// enough that one command cannot take the machine down.
    fn default() -> Self {
        Self {
            processes: Some(1024),
            memory_mb: Some(default_memory_mb()),
            file_size_mb: Some(16 * 1024),
            cpu_s: Some(3600),
        }
    }
}

/// Half the machine's memory (8 GiB if unknown), at least 1 GiB: what a
/// user would call safe for one command beside their editor and browser.
fn default_memory_mb() -> u64 {
    let total_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .unwrap_or(16 * 1024 * 1024);
    (total_kb / 1024 / 2).max(1024)
}

/// `[limits]` of policy.toml; 0 is no limit.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsFile {
    processes: Option<u64>,
    memory_mb: Option<u64>,
    file_size_mb: Option<u64>,
    cpu_s: Option<u64>,
}

impl LimitsFile {
    /// Whether these limits are looser than the defaults somewhere (0, no
    /// limit, counts as looser): what an untrusted workspace may not set.
    pub(crate) fn loosens(&self) -> bool {
        let defaults = Limits::default();
        [
            (self.processes, defaults.processes),
            (self.memory_mb, defaults.memory_mb),
            (self.file_size_mb, defaults.file_size_mb),
            (self.cpu_s, defaults.cpu_s),
        ]
        .into_iter()
        .any(|(set, default)| match (set, default) {
            (Some(0), _) => true,
            (Some(v), Some(d)) => v > d,
            _ => false,
        })
    }

    pub(crate) fn apply(&self, limits: &mut Limits) {
        let set = |slot: &mut Option<u64>, v: Option<u64>| {
            if let Some(v) = v {
                *slot = (v > 0).then_some(v);
            }
        };
        set(&mut limits.processes, self.processes);
        set(&mut limits.memory_mb, self.memory_mb);
        set(&mut limits.file_size_mb, self.file_size_mb);
        set(&mut limits.cpu_s, self.cpu_s);
    }
}

/// The files under `root` that workspace-relative `globs` name (`*` and `?`
/// within a name, `**` for any depth), plus plain names as given even when
/// missing. Never outside `root`.
pub fn expand_globs(root: &Path, globs: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for glob in globs {
        let parts: Vec<&str> = glob
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.contains(&"..") || parts.is_empty() {
            continue;
        }
        expand(root, &parts, &mut out, 0);
    }
    out.sort();
    out.dedup();
    out
}

fn expand(dir: &Path, parts: &[&str], out: &mut Vec<PathBuf>, depth: usize) {
    let Some((first, rest)) = parts.split_first() else {
        out.push(dir.to_path_buf());
        return;
    };
    if depth > 32 {
        return;
    }
    if !first.contains(['*', '?']) {
        let next = dir.join(first);
        if rest.is_empty() || next.is_dir() {
            expand(&next, rest, out, depth + 1);
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if *first == "**" {
            // Zero folders here, or one more and still `**`.
            if is_dir {
                expand(&path, parts, out, depth + 1);
            }
            if rest
                .first()
                .is_some_and(|r| crate::secrets::glob_match(r, &name))
            {
                expand(&path, &rest[1..], out, depth + 1);
            }
        } else if crate::secrets::glob_match(first, &name) && (rest.is_empty() || is_dir) {
            expand(&path, rest, out, depth + 1);
        }
    }
}

impl crate::Policy {
    /// The policy.toml glob that protects `rel` (workspace-relative), or a
    /// folder it lies in, if any: the path need not exist yet.
    pub fn protected_by_glob(&self, rel: &Path) -> Option<&str> {
        let names: Vec<&str> = rel
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => n.to_str(),
                _ => None,
            })
            .collect();
        self.protected_globs
            .iter()
            .map(String::as_str)
            .find(|glob| {
                let parts: Vec<&str> = glob
                    .split('/')
                    .filter(|p| !p.is_empty() && *p != ".")
                    .collect();
                !parts.is_empty()
                    && (1..=names.len()).any(|n| glob_parts_match(&parts, &names[..n]))
            })
    }
}

/// Whether path components match glob components (`**`: any number of them).
fn glob_parts_match(parts: &[&str], names: &[&str]) -> bool {
    match (parts.split_first(), names.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => {
            glob_parts_match(rest, names)
                || (!names.is_empty() && glob_parts_match(parts, &names[1..]))
        }
        (Some((part, rest)), Some((name, more))) => {
            crate::secrets::glob_match(part, name) && glob_parts_match(rest, more)
        }
        _ => false,
    }
}

/// A deny_read entry as a path: `~/` is the home folder, a relative path
/// is the workspace's.
pub fn deny_read_path(entry: &str, workspace: &Path) -> Option<PathBuf> {
    if let Some(rest) = entry.strip_prefix("~/") {
        return std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest));
    }
    let path = Path::new(entry);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        workspace.join(path)
    })
}

/// Git subcommands that write the repository (`.git`): objects, refs, the
/// index, the config. `git status`, `log`, `diff`, `show` and the like read.
const GIT_WRITERS: &[&str] = &[
    "add",
    "am",
    "branch",
    "checkout",
    "cherry-pick",
    "clean",
    "commit",
    "config",
    "fetch",
    "gc",
    "init",
    "merge",
    "mv",
    "notes",
    "prune",
    "pull",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "reset",
    "restore",
    "revert",
    "rm",
    "sparse-checkout",
    "stash",
    "submodule",
    "switch",
    "tag",
    "update-index",
    "update-ref",
    "worktree",
];

/// Programs that only read the files they are given.
const READERS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo", "printf",
    "stat", "file", "du", "df", "tree", "realpath", "basename", "dirname", "diff", "cmp", "sort",
    "uniq", "cut", "tr", "nl", "true", "false", "test", "[", "which", "type", "date", "whoami",
    "id", "uname", "env", "printenv",
];

/// git's subcommands that only read the repository and the tree.
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "blame",
    "grep",
    "shortlog",
    "describe",
    "cat-file",
    "rev-list",
    "whatchanged",
];

/// Whether every command of the line only reads files: each is a known
/// reader (`ls`, `grep`, `git status`, ...), and nothing is written through
/// a redirection. Such a line runs with the workspace read-only and no
/// layer to admit (a misjudged one fails to write; it never writes more).
pub fn reads_only(line: &str, commands: &[SimpleCommand]) -> bool {
    if line.contains('>') || line.contains('`') || line.contains("$(") || commands.is_empty() {
        return false;
    }
    commands.iter().all(|c| {
        let words = c.effective();
        let Some((first, args)) = words.split_first() else {
            return true;
        };
        match crate::command_line::basename(first) {
            "git" => {
                let n = crate::command_line::flags_len(args, GIT_VALUE_FLAGS);
                args.get(n)
                    .is_some_and(|sub| GIT_READERS.contains(&sub.as_str()))
                    && !args
                        .iter()
                        .any(|a| a == "--output" || a.starts_with("--output="))
            }
            "find" => !args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-delete"
                        | "-exec"
                        | "-execdir"
                        | "-ok"
                        | "-okdir"
                        | "-fprint"
                        | "-fprintf"
                        | "-fls"
                )
            }),
            "sort" => !args.iter().any(|a| a == "-o" || a.starts_with("--output")),
            "env" | "printenv" => args.is_empty(),
            name => READERS.contains(&name),
        }
    })
}

/// Options of git that take a value before the subcommand.
const GIT_VALUE_FLAGS: &[&str] = &["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

/// The git subcommand among `commands` that writes the repository, if
/// any: such a command asks the user in every mode, and runs with `.git`
/// writable when approved. `git branch` and `git config` only count when
/// they change something (not when they list or read).
pub fn git_writer(commands: &[SimpleCommand]) -> Option<String> {
    commands.iter().find_map(|c| {
        let words = c.effective();
        let (first, args) = words.split_first()?;
        if crate::command_line::basename(first) != "git" {
            return None;
        }
        let n = crate::command_line::flags_len(args, GIT_VALUE_FLAGS);
        let sub = args.get(n)?.as_str();
        let rest = &args[n + 1..];
        let reads = match sub {
            "branch" => {
                rest.is_empty()
                    || rest.iter().all(|a| {
                        a.starts_with("--list")
                            || a == "-a"
                            || a == "-r"
                            || a == "-v"
                            || a == "-vv"
                            || a == "--show-current"
                    })
            }
            "config" => rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--get" | "--get-all" | "--get-regexp" | "--list" | "-l" | "get" | "list"
                )
            }),
            "stash" => matches!(rest.first().map(String::as_str), Some("list" | "show")),
            "tag" => rest.is_empty() || rest.iter().any(|a| a == "-l" || a == "--list"),
            "remote" => {
                rest.is_empty()
                    || rest
                        .iter()
                        .all(|a| a == "-v" || a == "show" || a == "get-url")
            }
            "worktree" => matches!(rest.first().map(String::as_str), Some("list")),
            "notes" => matches!(rest.first().map(String::as_str), Some("list" | "show")),
            _ => false,
        };
        (GIT_WRITERS.contains(&sub) && !reads).then(|| format!("git {sub}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mode, Policy};

    #[test]
    fn commands_that_write_the_repository_are_recognised() {
        let p = Policy::builtin(Mode::Yolo);
        for cmd in [
            "git commit -m x",
            "git add -A && git commit -qm 'msg'",
            "git checkout -b feature",
            "git -C sub stash",
            "cd x; git switch main",
            "git branch new",
            "git config extensions.worktreeConfig true",
            "git tag v1",
            "env GIT_DIR=.git git reset --hard",
        ] {
            assert!(p.git_writer(cmd).is_some(), "{cmd}");
        }
        for cmd in [
            "git status",
            "git log --oneline",
            "git diff HEAD",
            "git branch",
            "git branch --show-current",
            "git config --get user.name",
            "git stash list",
            "echo git commit",
            "cargo test",
        ] {
            assert!(p.git_writer(cmd).is_none(), "{cmd}");
        }
        let why = p.git_writer("git commit -m x").unwrap();
        assert!(why.contains("git commit") && why.contains(".git"), "{why}");
    }

    #[test]
    fn policy_toml_adds_protected_and_hidden_paths_and_limits() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".agent")).unwrap();
        std::fs::create_dir_all(ws.join("tools/sub")).unwrap();
        std::fs::write(ws.join("tools/server.py"), "").unwrap();
        std::fs::write(ws.join("tools/sub/deep.py"), "").unwrap();
        std::fs::write(ws.join("tools/notes.txt"), "").unwrap();
        std::fs::write(
            ws.join(".agent/policy.toml"),
            "protected_paths = [\"tools/*.py\", \"**/deep.py\", \"Makefile\", \"../x\"]\n\
             deny_read = [\"/srv/keys\", \"secrets\"]\n\
             [limits]\nprocesses = 100\nmemory_mb = 0\n",
        )
        .unwrap();
        let p = Policy::load(&ws.join(".agent"), Mode::Yolo).unwrap();
        let mut want = vec![
            ws.join("Makefile"),
            ws.join("tools/server.py"),
            ws.join("tools/sub/deep.py"),
        ];
        want.sort();
        assert_eq!(p.protected_paths, want);
        // Judged by the globs too, for a path made anew.
        for (rel, hit) in [
            ("tools/new.py", true),
            ("a/b/deep.py", true),
            ("Makefile", true),
            ("tools/sub/x.py", false),
            ("src/main.py", false),
        ] {
            assert_eq!(p.protected_by_glob(Path::new(rel)).is_some(), hit, "{rel}");
        }
        assert_eq!(
            p.deny_read,
            vec![PathBuf::from("/srv/keys"), ws.join("secrets")]
        );
        assert_eq!(p.limits.processes, Some(100));
        assert_eq!(p.limits.memory_mb, None);
        assert_eq!(p.limits.cpu_s, Limits::default().cpu_s);
        let bad = ws.join(".agent/policy.toml");
        std::fs::write(&bad, "[limits]\nthreads = 3\n").unwrap();
        assert!(Policy::load(&ws.join(".agent"), Mode::Yolo).is_err());
    }

    #[test]
    fn lines_that_only_read_are_told_from_those_that_may_write() {
        let p = crate::Policy::builtin(crate::Mode::Yolo);
        for line in [
            "git status --porcelain",
            "git -C sub log --oneline | head -5",
            "ls -la src && grep -rn foo src | wc -l",
            "find . -name '*.rs'",
            "cat README.md",
        ] {
            assert!(p.reads_only(line), "{line}");
        }
        for line in [
            "git commit -qm x",
            "cat a > b",
            "echo x >> notes.md",
            "find . -delete",
            "sort -o out.txt in.txt",
            "python3 -m pytest",
            "ls $(touch x)",
            "git diff --output=patch.diff",
            "cargo test",
        ] {
            assert!(!p.reads_only(line), "{line}");
        }
    }
}
