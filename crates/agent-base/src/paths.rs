//! Where things live on disk: the models ([`models_dir`]), the user's
//! configuration ([`config_dir`]), the agent's state for a workspace
//! ([`state_dir`]), a cache commands may write ([`cache_dir`]), the team's
//! `.agent/` ([`team_dir`]), and which folder is the workspace.
//!
//! The state folder is the one answer every crate asks for:
//! `$XDG_STATE_HOME/agent/workspaces/NAME-HASH` (else under
//! `~/.local/state/agent/`; HASH is 16 hex digits of the sha256 of the
//! canonical path, [`workspace_key`]). Index, sessions, logs (audit, trace,
//! MCP servers' stderr), checkpoints, the repo map's cache, ACP session ids,
//! the prompt cache and prefill rates are all there; no crate builds a state
//! path of its own. It is outside the workspace, so the sandbox (which writes
//! the workspace and a private temp dir) keeps commands off it. Checkers'
//! build output (`cargo check`'s target) is a cache commands do write, so it
//! is elsewhere ([`cache_dir`]), writable to the checker only.
//!
//! Not a project: [`check_workspace`] refuses `/`, the home folder (and the
//! folders above it) and system folders, from every entry ([`repo_root`] for
//! the CLI and `mcp serve`, ACP's `session/new` and `session/load`), with exit
//! 2 and the fix, unless `--allow-root-workspace`. The ancestor walk of
//! [`workspace_root`] never stops at such a folder, and an `.agent` counts as
//! a marker only with team files in it, so a stray `/.agent` captures nothing.

use std::path::PathBuf;

/// The models folder: `$AGENT_MODELS_DIR` when set, else the one an install
/// put beside this binary ([`beside_binary`]), else `models/` in the source
/// tree the binary was built from, else the installed copy in
/// `~/.local/share/agent/models`, else `./models`.
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENT_MODELS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = beside_binary() {
        return dir;
    }
    let built_in = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
    if built_in.join("manifest.json").is_file() {
        return built_in;
    }
    if let Some(installed) = installed_models_dir() {
        if installed.join("manifest.json").is_file() {
            return installed;
        }
    }
    PathBuf::from("models")
}

/// The models an installer put beside this binary, checked first so that an
/// installed copy (the offline bundle's `install.sh`) uses its own files
/// even where a source tree or an older install also has some:
/// `BIN/../share/agent/models` (`~/.local/bin/agent` →
/// `~/.local/share/agent/models`) or `BIN/../models` (`/opt/agent/bin/agent`
/// → `/opt/agent/models`), whichever holds a manifest.
pub fn beside_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let prefix = exe.parent()?.parent()?;
    [prefix.join("share/agent/models"), prefix.join("models")]
        .into_iter()
        .find(|dir| dir.join("manifest.json").is_file())
}

/// Where `scripts/install` copies the model files, for a binary whose clone
/// is gone: `$XDG_DATA_HOME/agent/models`, else `~/.local/share/agent/models`.
pub fn installed_models_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .map(|d| d.join("agent/models"))
}

/// The default chat model inside the models folder.
pub const DEFAULT_CHAT_MODEL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The ONNX Runtime shared library inside the models folder.
pub const ONNX_RUNTIME_LIB: &str = "onnxruntime/libonnxruntime.so";

pub fn default_chat_model() -> PathBuf {
    models_dir().join(DEFAULT_CHAT_MODEL)
}

/// The user's own configuration folder, outside every workspace:
/// `$XDG_CONFIG_HOME/agent`, else `~/.config/agent`. What a repository or a
/// command cannot write: personal instructions, the MCP servers trusted.
pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("agent"))
}

/// The root of what the agent keeps per user and machine (indexes, sessions,
/// logs, prompt cache, checkpoints): `$XDG_STATE_HOME/agent`, else
/// `~/.local/state/agent`. Outside every workspace, so no command the agent
/// runs can write it (the sandbox writes only the workspace and a temp dir)
/// and no repository ships it.
pub fn state_root() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .map(|d| d.join("agent"))
}

/// Where the agent's own state for one workspace lives:
/// `state_root()/workspaces/KEY`, where KEY is the folder's name and a hash
/// of its canonical path (two clones named alike never share a folder).
/// Without a home, `.agent/state` inside the workspace, as a last resort.
/// Only says where; [`state_dir`] also migrates and creates it.
pub fn state_location(workspace: &std::path::Path) -> PathBuf {
    match state_root() {
        Some(root) => root.join("workspaces").join(workspace_key(workspace)),
        None => team_dir(workspace).join("state"),
    }
}

/// The agent's own state for one workspace (index, sessions, logs, prompt
/// cache, checkpoints, repo-map cache): [`state_location`], created (mode
/// 0700) and, once per process, filled from an old `.agent/` by
/// [`crate::state::migrate`]. The one function every crate asks.
pub fn state_dir(workspace: &std::path::Path) -> PathBuf {
    static MIGRATED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let dir = state_location(workspace);
    let mut done = MIGRATED.lock().unwrap_or_else(|e| e.into_inner());
    let canonical = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    // A stray `.agent` in `/` or `~` is nobody's old state to take in.
    if !done.contains(&dir) && not_a_project(&canonical).is_none() {
        if let Err(e) = crate::state::migrate(workspace, &dir) {
            #[allow(
                clippy::print_stderr,
                reason = "the user must learn that their old state stayed behind, whichever \
                          front end runs; this crate has no logger"
            )]
            {
                eprintln!(
                    "agent: could not move the old state in {} to {}: {e:#}",
                    team_dir(workspace).display(),
                    dir.display()
                );
            }
        }
        done.push(dir.clone());
    }
    create_private_dir(&dir);
    dir
}

/// Creates `dir` and its parents, the new ones readable by the user only.
pub fn create_private_dir(dir: &std::path::Path) {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
}

/// A cache for one workspace that commands may write (a checker's build
/// output, such as `cargo check`'s target folder): `$XDG_CACHE_HOME/agent/
/// workspaces/KEY`, else `~/.cache/agent/workspaces/KEY`. Never the state
/// folder: what is here can be rebuilt and is trusted by nothing.
pub fn cache_dir(workspace: &std::path::Path) -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("agent/workspaces").join(workspace_key(workspace)))
        .unwrap_or_else(|| team_dir(workspace).join("cache"))
}

/// The indices of dependencies' sources, one per package version, shared
/// by every workspace that locks it: `$XDG_CACHE_HOME/agent/deps`, else
/// `~/.cache/agent/deps` (rebuildable from the package managers' files).
pub fn deps_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("agent/deps")
}

/// `.agent/` inside a workspace: what a team commits (commands, skills,
/// hooks, `config.toml`, `policy.toml`), and the personal `*.local.toml`
/// overrides its `.gitignore` leaves out. None of the agent's own state.
pub fn team_dir(workspace: &std::path::Path) -> PathBuf {
    workspace.join(".agent")
}

/// What a team keeps in `.agent/`: an `.agent` folder holding one of these
/// marks a workspace; one holding none (a stray, or only old state) does not.
pub const TEAM_FILES: &[&str] = &[
    "config.toml",
    "policy.toml",
    "config.local.toml",
    "policy.local.toml",
    "commands",
    "skills",
    "hooks",
];

/// The `.gitignore` the agent keeps in `.agent/`: personal overrides stay
/// out of the repository, everything else is the team's to commit.
pub const TEAM_GITIGNORE: &str = "*.local.toml\n";

/// A folder name for `workspace`: its base name (letters, digits, `-_.`
/// only) and 16 hex digits of the sha256 of its canonical path.
pub fn workspace_key(workspace: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    let canonical = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = hex::encode(Sha256::digest(canonical.as_os_str().as_bytes()));
    format!("{name}-{}", &hash[..16])
}

/// For tests that run the agent's code in their own process: points
/// `XDG_STATE_HOME`, `XDG_CONFIG_HOME` and `XDG_CACHE_HOME` at a folder of
/// this process (removed at exit), once, so no test reads or writes the
/// real home. Tests stay apart by their workspace (a temp folder each: its
/// own key under the state root).
#[doc(hidden)]
pub fn isolate_for_tests() -> PathBuf {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agent-test-home-{}", std::process::id()));
        for (var, sub) in [
            ("XDG_STATE_HOME", "state"),
            ("XDG_CONFIG_HOME", "config"),
            ("XDG_CACHE_HOME", "cache"),
        ] {
            let _ = std::fs::create_dir_all(dir.join(sub));
            std::env::set_var(var, dir.join(sub));
        }
        extern "C" fn remove_test_home() {
            let dir = std::env::temp_dir().join(format!("agent-test-home-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(dir);
        }
        // SAFETY: registers a plain function to run at exit.
        unsafe { libc::atexit(remove_test_home) };
        dir
    })
    .clone()
}

/// Set by `--allow-root-workspace`: `/`, the home folder and system folders
/// are accepted as a workspace.
static ALLOW_ROOT_WORKSPACE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Accepts `/`, the home folder and system folders as a workspace from now
/// on (`--allow-root-workspace`).
pub fn allow_root_workspace(allow: bool) {
    ALLOW_ROOT_WORKSPACE.store(allow, std::sync::atomic::Ordering::Relaxed);
}

/// System folders that are never a project.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/share",
    "/var",
    "/opt",
    "/srv",
    "/run",
    "/sbin",
    "/snap",
    "/sys",
    "/proc",
    "/tmp",
    "/var/tmp",
    "/mnt",
    "/media",
    "/home",
    "/Users",
    "/System",
    "/Library",
    "/Applications",
    "/private",
    "/Volumes",
    "/nix",
    "/nix/store",
];

/// Why `dir` (canonical) is not a project: `/`, the home folder or one
/// above it, a system folder, or inside `/proc`, `/sys` or `/dev`.
pub fn not_a_project(dir: &std::path::Path) -> Option<&'static str> {
    use std::path::Path;
    if dir == Path::new("/") {
        return Some("the root of the file system");
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .map(|h| h.canonicalize().unwrap_or(h));
    if let Some(home) = &home {
        if dir == home {
            return Some("your home folder");
        }
        if home.starts_with(dir) {
            return Some("a folder that holds home folders");
        }
    }
    if SYSTEM_DIRS.iter().any(|s| dir == Path::new(s)) {
        return Some("a system folder");
    }
    if ["/proc", "/sys", "/dev"].iter().any(|s| dir.starts_with(s)) {
        return Some("a system folder");
    }
    None
}

/// Refuses a workspace that is not a project (see [`not_a_project`]),
/// unless `--allow-root-workspace` was given: indexing `/` ran out of
/// memory, and commands would write system folders.
pub fn check_workspace(root: &std::path::Path) -> anyhow::Result<()> {
    if ALLOW_ROOT_WORKSPACE.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(());
    }
    if let Some(what) = not_a_project(root) {
        return Err(NotAProject(format!(
            "{} is {what}, not a project: the agent indexes, changes and runs commands in its workspace\n  \
             fix: run it inside a project folder (cd ~/src/myproject, or --repo PATH / an editor's project), \
             or pass --allow-root-workspace if this is really meant",
            root.display()
        ))
        .into());
    }
    Ok(())
}

/// The error of a workspace that is not a project ([`check_workspace`]):
/// a usage error (exit 2), whatever entry it came through.
#[derive(Debug)]
pub struct NotAProject(pub String);

impl std::fmt::Display for NotAProject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotAProject {}

/// The repository a command acts on: `explicit` when given (it must exist),
/// else the workspace around the current directory. Refused when it is not
/// a project ([`check_workspace`]).
pub fn repo_root(explicit: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let root = match explicit {
        Some(path) => {
            let root = path
                .canonicalize()
                .with_context(|| format!("cannot open {}", path.display()))?;
            if !root.is_dir() {
                let parent = root.parent().unwrap_or(std::path::Path::new("/"));
                anyhow::bail!(
                    "{} is a file; this needs a folder (a repository)\n  fix: give its folder instead, such as {}",
                    path.display(),
                    parent.display()
                );
            }
            root
        }
        None => workspace_root(&std::env::current_dir().context("no current directory")?),
    };
    check_workspace(&root)?;
    Ok(root)
}

/// The workspace a command acts on: the nearest ancestor of `start` that
/// holds a `.git` entry or an `.agent` folder with team files in it
/// ([`TEAM_FILES`]), else `start` itself. The walk never stops at `/`, the
/// home folder or a system folder: a stray `/.agent` or a dotfiles
/// repository in `~` would make every folder below one workspace.
pub fn workspace_root(start: &std::path::Path) -> PathBuf {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start
        .ancestors()
        .filter(|dir| not_a_project(dir).is_none())
        .find(|dir| dir.join(".git").exists() || has_team_files(&team_dir(dir)))
        .unwrap_or(&start)
        .to_path_buf()
}

/// Files whose presence makes a folder a project whatever else it holds:
/// version control and the build manifests of the common ecosystems.
const PROJECT_MARKERS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".jj",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "requirements.txt",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "CMakeLists.txt",
    "Makefile",
    "meson.build",
    "Gemfile",
    "composer.json",
    "mix.exs",
    "deno.json",
    "Package.swift",
    "AGENTS.md",
];

/// Whether `dir` says it is a project: version control, a build manifest,
/// `AGENTS.md` or the team's `.agent` files. A folder without any may still
/// hold source files; the caller decides what their absence means.
pub fn has_project_markers(dir: &std::path::Path) -> bool {
    PROJECT_MARKERS.iter().any(|name| dir.join(name).exists())
        || has_team_files(&team_dir(dir))
        || std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".sln") || name.ends_with(".csproj") || name.ends_with(".cabal")
            })
        })
}

/// Whether `.agent` folder `dir` holds something a team keeps there.
pub fn has_team_files(dir: &std::path::Path) -> bool {
    dir.is_dir() && TEAM_FILES.iter().any(|name| dir.join(name).exists())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_stray_agent_folder_above_does_not_capture_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let below = top.join("a/b");
        std::fs::create_dir_all(&below).unwrap();
        // Empty, or holding only old state: not a workspace marker.
        std::fs::create_dir_all(top.join(".agent/index")).unwrap();
        assert_eq!(workspace_root(&below), below);
        // Team files make it one.
        std::fs::create_dir_all(top.join(".agent/commands")).unwrap();
        assert_eq!(workspace_root(&below), top);
    }

    #[test]
    fn root_home_and_system_folders_are_not_projects() {
        for dir in ["/", "/etc", "/usr", "/proc/self", "/var", "/tmp"] {
            let err = check_workspace(Path::new(dir)).unwrap_err().to_string();
            assert!(err.contains("--allow-root-workspace"), "{dir}: {err}");
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            let home = home.canonicalize().unwrap_or(home);
            if home != Path::new("/") {
                assert!(check_workspace(&home).is_err());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        assert!(check_workspace(dir.path()).is_ok());
        assert!(check_workspace(Path::new("/usr/src/linux")).is_ok());
    }

    #[test]
    fn the_state_folder_is_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let location = state_location(dir.path());
        if state_root().is_some() {
            assert!(!location.starts_with(dir.path()));
        }
        assert_eq!(TEAM_GITIGNORE, "*.local.toml\n");
    }
}
