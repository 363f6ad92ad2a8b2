//! Where things live on disk.

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

/// The agent's own state for one workspace: `state_root()/workspaces/KEY`,
/// where KEY is the folder's name and a hash of its canonical path (two
/// clones named alike never share a folder). Without a home, `.agent/state`
/// inside the workspace, as a last resort.
pub fn state_dir(workspace: &std::path::Path) -> PathBuf {
    match state_root() {
        Some(root) => root.join("workspaces").join(workspace_key(workspace)),
        None => workspace.join(".agent").join("state"),
    }
}

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

/// Keeps the agent's state folder (`.agent/`) out of the user's `git status`:
/// a `.gitignore` of `*` inside it, written once (a user's own is kept).
pub fn ignore_state_dir(state_dir: &std::path::Path) {
    let ignore = state_dir.join(".gitignore");
    if !ignore.exists() {
        let _ = std::fs::write(&ignore, "*\n");
    }
}

/// The repository a command acts on: `explicit` when given (it must exist),
/// else the workspace around the current directory.
pub fn repo_root(explicit: Option<&std::path::Path>) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    match explicit {
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
            Ok(root)
        }
        None => Ok(workspace_root(
            &std::env::current_dir().context("no current directory")?,
        )),
    }
}

/// The workspace a command acts on: the nearest ancestor of `start` that
/// holds an `.agent` folder or a `.git` entry, else `start` itself.
pub fn workspace_root(start: &std::path::Path) -> PathBuf {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start
        .ancestors()
        .find(|dir| dir.join(".agent").is_dir() || dir.join(".git").exists())
        .unwrap_or(&start)
        .to_path_buf()
}
