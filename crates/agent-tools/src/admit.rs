//! A command's changes, admitted: a command never writes the workspace. It
//! writes a copy-on-write layer over it ([`agent_sandbox::Overlay`], a
//! [`Layer`] in the agent's state folder), and when it ends the agent reads
//! the layer and lets its changes in through the path every edit takes
//! (diff, checkpoint, ledger; `undo` reverts them):
//!
//! - ordinary files: admitted as they are;
//! - the files that configure the agent, git or the user's tools
//!   ([`Class::Ask`]: `.agent/`, `.claude/`, `.mcp.json`, every `AGENTS.md`
//!   and `CLAUDE.md`, git hook folders, `.envrc`, ...): shown as a diff and
//!   asked for whatever the mode (declined where no one can be asked);
//! - never: anything in a `.git` folder or beside a `gitdir:` file at any
//!   depth, the policy's protected paths, symlinks that leave the workspace
//!   or land on the above, devices, FIFOs and sockets ([`Class::Refuse`]).
//!
//! Build output the repository ignores (`target/`, `node_modules/`, ...)
//! bypasses the layer where the folder exists ([`bypass`]); one a command
//! makes is moved in whole, unreviewed, as the bypass would have written it.

use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_policy::Policy;
use agent_sandbox::Overlay;

use super::change::{self, FileChange};
use super::{ToolContext, Workspace};

/// Top-level folders that hold build output, written directly when the
/// repository ignores them ([`bypass`]).
pub const BUILD_DIRS: &[&str] = &[
    "target",
    "node_modules",
    ".venv",
    "venv",
    "build",
    "dist",
    ".gradle",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
];

/// Files and folders (by name, at any depth) that configure the agent, git
/// or a tool that runs code, and why a change to one is asked for.
const ASKED: &[(&str, &str)] = &[
    (
        ".agent",
        "the team's agent settings, commands, skills and hooks",
    ),
    (".claude", "another agent's settings, commands and skills"),
    (".husky", "git hooks the user's git runs"),
    (".githooks", "git hooks the user's git runs"),
    ("AGENTS.md", "instructions the agent follows"),
    ("CLAUDE.md", "instructions agents follow"),
    (".mcp.json", "the programs the agent starts (MCP servers)"),
    (".pre-commit-config.yaml", "the hooks pre-commit runs"),
    (
        ".envrc",
        "a script direnv runs when the user enters the folder",
    ),
];

/// A layer for one command under the workspace's state folder: removed,
/// with whatever is left in it, when dropped.
pub struct Layer {
    dir: PathBuf,
    upper: PathBuf,
    work: PathBuf,
}

impl Layer {
    /// A new, empty layer; `None` (and why) where commands cannot have one
    /// here (then they write the workspace under the older guards).
    pub fn new(state_dir: &Path) -> Result<Layer, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = state_dir.join("layers");
        std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
        agent_sandbox::overlay_support(&base)?;
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep(&base));
        let dir = base.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = remove_all(&dir); // a leftover of an earlier process's pid
        let (upper, work) = (dir.join("upper"), dir.join("work"));
        for d in [&upper, &work] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Ok(Layer { dir, upper, work })
    }

    /// A new layer over `root` for `sandbox` to mount, with the build
    /// folders git ignores (and `also`) bypassing it; `None` (logged) where
    /// no layer can be had here, and then the command writes `root` itself.
    pub fn attach(
        sandbox: &mut agent_sandbox::Sandbox,
        state_dir: &Path,
        root: &Path,
        also: &[PathBuf],
    ) -> Option<Layer> {
        let layer = Layer::new(state_dir)
            .map_err(|e| tracing::info!("commands write the workspace directly: {e}"))
            .ok()?;
        let mut through = bypass(root);
        through.extend_from_slice(also);
        sandbox.overlay = Some(layer.overlay(root, through));
        Some(layer)
    }

    /// The overlay a sandbox mounts for this layer over `root`.
    fn overlay(&self, root: &Path, bypass: Vec<PathBuf>) -> Overlay {
        Overlay {
            root: root.to_path_buf(),
            upper: self.upper.clone(),
            work: self.work.clone(),
            bypass,
        }
    }

    /// What the command left in the layer.
    pub fn read(&self) -> Found {
        let mut found = Found::default();
        scan(&self.upper, &self.upper, &mut found);
        found
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        let _ = remove_all(&self.dir);
    }
}

/// Removes a folder whatever its modes (overlayfs leaves `work/work` at 0):
/// every folder under it opened up first, without following links.
fn remove_all(dir: &Path) -> std::io::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if !std::fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(&d) {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    std::fs::remove_dir_all(dir)
}

/// Removes the layers of agents that are gone (killed before they could).
fn sweep(base: &Path) {
    for path in left_by_gone_agents(base) {
        let _ = remove_all(&path);
    }
}

/// The entries of `dir` named `PID-...` whose agent process is gone: what
/// an agent killed before it could clean up left in the state folder.
pub(crate) fn left_by_gone_agents(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.split('-').next()?.parse::<i32>().ok())
            else {
                return false;
            };
            // SAFETY: kill with signal 0 only asks whether the process exists.
            let signalled = unsafe { libc::kill(pid, 0) };
            signalled != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        })
        .map(|entry| entry.path())
        .collect()
}

/// The layer's contents, by workspace-relative path.
#[derive(Debug, Default)]
pub struct Found {
    /// Regular files written (new or changed) and their mode.
    pub files: Vec<(String, u32)>,
    /// Whiteouts: paths the command deleted.
    pub deleted: Vec<String>,
    /// Folders whose earlier contents the command replaced (opaque), and
    /// folders it made.
    pub opaque: Vec<String>,
    pub dirs: Vec<String>,
    /// Symlinks and where they point.
    pub links: Vec<(String, PathBuf)>,
    /// Devices, FIFOs and sockets.
    pub special: Vec<String>,
}

impl Found {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.deleted.is_empty()
            && self.dirs.is_empty()
            && self.links.is_empty()
            && self.special.is_empty()
    }
}

fn scan(top: &Path, dir: &Path, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let rel = path
            .strip_prefix(top)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let kind = meta.file_type();
        if kind.is_dir() {
            if has_mark(&path, "opaque") {
                found.opaque.push(rel.clone());
            }
            found.dirs.push(rel);
            scan(top, &path, found);
        } else if kind.is_file() && has_mark(&path, "whiteout") && meta.len() == 0 {
            found.deleted.push(rel);
        } else if kind.is_file() {
            found.files.push((rel, meta.permissions().mode() & 0o7777));
        } else if kind.is_symlink() {
            found
                .links
                .push((rel, std::fs::read_link(&path).unwrap_or_default()));
        } else if kind.is_char_device() && meta.rdev() == 0 {
            found.deleted.push(rel);
        } else {
            found.special.push(rel);
        }
    }
}

/// Whether overlayfs marked `path` (`opaque`, `whiteout`): the
/// `user.overlay.*` attribute in a user namespace, `trusted.overlay.*` as
/// root without one.
fn has_mark(path: &Path, mark: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    ["user", "trusted"].iter().any(|ns| {
        let Ok(name) = std::ffi::CString::new(format!("{ns}.overlay.{mark}")) else {
            return false;
        };
        let mut value = [0u8; 4];
        // SAFETY: lgetxattr writes at most value.len() bytes into our buffer.
        let n = unsafe {
            libc::lgetxattr(
                c.as_ptr(),
                name.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        // A whiteout's mark may be empty; opaque is "y" (or "x": opaque
        // with whiteouts inside, still opaque).
        n >= 0 && (mark == "whiteout" || matches!(value[0], b'y' | b'x'))
    })
}

/// How a path a command changed may reach the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    Admit,
    /// Shown and asked for whatever the mode.
    Ask(String),
    /// Never admitted, and why.
    Refuse(String),
}

/// The class of `rel` (workspace-relative, after the change): the first
/// rule that holds, by every component, so renaming a parent evades none.
pub fn classify(
    rel: &str,
    hooks_path: Option<&str>,
    protected: impl Fn(&Path) -> Option<PathBuf>,
) -> Class {
    let path = Path::new(rel);
    let names: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    if names.contains(&".git") {
        return Class::Refuse(format!(
            "{rel} is git's own data (a `.git` at any depth runs code in the user's next \
             git command); commands never change it"
        ));
    }
    if let Some(p) = protected(path) {
        return Class::Refuse(format!(
            "{rel} lies in the protected path {}: nothing may change it",
            p.display()
        ));
    }
    if let Some((name, why)) = ASKED.iter().find(|(n, _)| names.contains(n)) {
        return Class::Ask(format!("{rel} is {why} ({name})"));
    }
    if names.len() >= 2 && names[0] == ".vscode" && names[1] == "tasks.json" {
        return Class::Ask(format!("{rel} holds tasks the editor runs"));
    }
    if let Some(hooks) = hooks_path.filter(|h| !h.is_empty() && path.starts_with(h)) {
        return Class::Ask(format!(
            "{rel} is in {hooks}, the git hooks folder the repository's config names"
        ));
    }
    Class::Admit
}

/// `core.hooksPath` from the workspace's `.git/config`, relative to the
/// workspace (read as text: the agent runs no git to ask).
pub fn hooks_path(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join(".git/config")).ok()?;
    let mut in_core = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .to_ascii_lowercase()
                .starts_with("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_core && key.trim().eq_ignore_ascii_case("hookspath") {
            let value = value.trim().trim_matches('"');
            let rel = Path::new(value)
                .strip_prefix(root)
                .unwrap_or(Path::new(value))
                .to_string_lossy()
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_string();
            return Some(rel);
        }
    }
    None
}

/// The build folders of [`BUILD_DIRS`] at `root` that git ignores: real
/// folders (not links) a command may write directly.
pub fn bypass(root: &Path) -> Vec<PathBuf> {
    let ignore = gitignore(root);
    BUILD_DIRS
        .iter()
        .map(|d| root.join(d))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .filter(|p| ignore.matched(p, true).is_ignore())
        .collect()
}

/// The workspace's top-level `.gitignore`, what "git ignores" means here.
fn gitignore(root: &Path) -> ignore::gitignore::Gitignore {
    ignore::gitignore::Gitignore::new(root.join(".gitignore")).0
}

/// Caches every project leaves out of git, wherever they are.
const CACHE_NAMES: &[&str] = &[
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
    ".eslintcache",
    ".turbo",
    ".parcel-cache",
];

/// Whether a changed file is output a command leaves behind (git ignores
/// it, or it is a cache or bytecode): it reaches the workspace as written,
/// outside the change set, so a test run's `.pyc` files are no diff.
fn is_output(ignore: &ignore::gitignore::Gitignore, root: &Path, rel: &str) -> bool {
    Path::new(rel)
        .components()
        .any(|c| CACHE_NAMES.contains(&c.as_os_str().to_string_lossy().as_ref()))
        || rel.ends_with(".pyc")
        || ignore
            .matched_path_or_any_parents(root.join(rel), false)
            .is_ignore()
}

/// Whether `rel`'s top folder is build output a command made: a folder of
/// [`BUILD_DIRS`] git ignores, new at the root.
fn new_build_dir(ignore: &ignore::gitignore::Gitignore, root: &Path, rel: &str) -> bool {
    BUILD_DIRS.contains(&rel)
        && !root.join(rel).exists()
        && ignore.matched(root.join(rel), true).is_ignore()
}

/// What became of a command's changes.
#[derive(Debug, Default)]
pub struct Admitted {
    /// The diff of what was admitted, and the paths.
    pub diff: String,
    pub changed: Vec<String>,
    /// Lines for the model and the user: refused paths, moved build output.
    pub notes: Vec<String>,
}

/// A layer's changes sorted by [`Class`]; what needs no review (moved build
/// output, links, empty folders) already made.
struct Sorted {
    admit: Vec<FileChange>,
    /// Output git ignores ([`is_output`]): written as it is, no review.
    output: Vec<FileChange>,
    asked: Vec<(FileChange, String)>,
    /// Existing files whose mode alone (or too) changed.
    modes: Vec<(String, u32)>,
    notes: Vec<String>,
}

/// The class of a workspace-relative path under `policy` (see [`classify`]):
/// the administrator's paths, policy.toml's globs, and the files trusted
/// servers and hooks run (absolute) are the protected ones.
fn classifier<'a>(root: &'a Path, policy: &'a Policy) -> impl Fn(&str) -> Class + 'a {
    let hooks = hooks_path(root);
    move |rel: &str| {
        classify(rel, hooks.as_deref(), |p| {
            policy
                .protected(p)
                .map(Path::to_path_buf)
                .or_else(|| policy.protected_by_glob(p).map(PathBuf::from))
                .or_else(|| {
                    let abs = root.join(p);
                    let hit = policy.protected_paths.iter().find(|a| abs.starts_with(a))?;
                    Some(hit.strip_prefix(root).unwrap_or(hit).to_path_buf())
                })
        })
    }
}

/// Moves the build folders a command made (new at the root, of
/// [`BUILD_DIRS`], ignored by git) from the layer into the workspace as
/// they are, as the bypass would have written them: their names, and a
/// note each. Kept even when the rest of a layer is not (`--verify`'s).
pub(crate) fn move_build_output(workspace: &Workspace, policy: &Policy, layer: &Layer) {
    let root = workspace.root();
    let found = layer.read();
    let class = classifier(root, policy);
    move_new_build_dirs(root, layer, &found, &gitignore(root), &class);
}

/// [`move_build_output`] with the matcher and classes the caller has.
fn move_new_build_dirs(
    root: &Path,
    layer: &Layer,
    found: &Found,
    ignore: &ignore::gitignore::Gitignore,
    class: &dyn Fn(&str) -> Class,
) -> (BTreeSet<String>, Vec<String>) {
    let (mut moved, mut notes) = (BTreeSet::new(), Vec::new());
    for dir in found.dirs.iter().filter(|d| !d.contains('/')) {
        if new_build_dir(ignore, root, dir) && class(dir) == Class::Admit {
            notes.push(match move_in(&layer.upper.join(dir), &root.join(dir)) {
                Ok(()) => format!("{dir}/: new build output (ignored by git), moved in as it is"),
                Err(e) => format!("{dir}/: not admitted: cannot move it in: {e}"),
            });
            moved.insert(dir.clone());
        }
    }
    (moved, notes)
}

fn sort(workspace: &Workspace, policy: &Policy, layer: &Layer, found: &Found) -> Sorted {
    let root = workspace.root();
    let class = classifier(root, policy);
    let ignore = gitignore(root);
    let (moved, mut notes) = move_new_build_dirs(root, layer, found, &ignore, &class);
    let outside_moved = |rel: &str| !moved.iter().any(|m| Path::new(rel).starts_with(m));
    let (changes, mut modes, more) = changes(workspace, &layer.upper, found, &outside_moved);
    notes.extend(more);
    let (mut admit, mut asked, mut output) = (Vec::new(), Vec::new(), Vec::new());
    for c in changes {
        match class(&c.rel) {
            Class::Admit if is_output(&ignore, root, &c.rel) => output.push(c),
            Class::Admit => admit.push(c),
            Class::Ask(why) => asked.push((c, why)),
            Class::Refuse(why) => notes.push(format!("not admitted: {why}")),
        }
    }
    modes.retain(|(rel, _)| class(rel) == Class::Admit);
    for (rel, target) in found.links.iter().filter(|(r, _)| outside_moved(r)) {
        notes.push(link(workspace, rel, target, &class));
    }
    for rel in found.special.iter().filter(|r| outside_moved(r)) {
        notes.push(format!("not admitted: {rel} is a device, FIFO or socket"));
    }
    for rel in found.dirs.iter().filter(|d| outside_moved(d)) {
        // A folder the command made and left empty (`mkdir out`): made
        // too, outside the change set (undo leaves an empty folder).
        let empty = std::fs::read_dir(layer.upper.join(rel)).is_ok_and(|mut d| d.next().is_none());
        if empty && class(rel) == Class::Admit && !root.join(rel).exists() {
            let _ = std::fs::create_dir_all(root.join(rel));
        }
    }
    Sorted {
        admit,
        output,
        asked,
        modes,
        notes,
    }
}

/// Admits what the command left in `layer` into the workspace (see the
/// module's rules). Refusals and declines are notes; the rest is written.
pub(crate) fn admit(ctx: &mut ToolContext<'_>, layer: &Layer, command: &str) -> Admitted {
    let found = layer.read();
    if found.is_empty() {
        return Admitted::default();
    }
    let sorted = sort(ctx.workspace, ctx.policy, layer, &found);
    let mut out = Admitted {
        notes: sorted.notes,
        ..Admitted::default()
    };
    let summary = format!("run_cmd: {}", super::grep::cut(command, 80));
    write_unreviewed(sorted.output, &mut out, true);
    take(ctx, sorted.admit, &summary, None, &mut out);
    for (c, why) in sorted.asked {
        take(ctx, vec![c], &summary, Some(why), &mut out);
    }
    set_modes(ctx.workspace.root(), &sorted.modes, &mut out);
    out
}

/// Admits a layer's ordinary changes with no one to review them (a hook
/// of the trusted team's, with no change set to join): written as they
/// are; what would be asked for is refused.
pub fn admit_unreviewed(workspace: &Workspace, policy: &Policy, layer: &Layer) -> Admitted {
    let found = layer.read();
    if found.is_empty() {
        return Admitted::default();
    }
    let sorted = sort(workspace, policy, layer, &found);
    let mut out = Admitted {
        notes: sorted.notes,
        ..Admitted::default()
    };
    for (c, why) in sorted.asked {
        out.notes.push(format!(
            "not admitted: {why}; no one was there to approve it ({})",
            c.rel
        ));
    }
    write_unreviewed(sorted.output, &mut out, true);
    write_unreviewed(sorted.admit, &mut out, false);
    set_modes(workspace.root(), &sorted.modes, &mut out);
    out
}

/// Writes changes as they are (no checkpoint, no diff); the paths go to
/// `out.changed`, or for `output`, one note counting them.
fn write_unreviewed(changes: Vec<FileChange>, out: &mut Admitted, output: bool) {
    let mut written = 0;
    for c in changes.into_iter().filter(|c| c.old != c.new) {
        let done = match &c.new {
            Some(bytes) => {
                if let Some(dir) = c.abs.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                agent_base::files::atomic_write(&c.abs, bytes, c.mode)
            }
            None => std::fs::remove_file(&c.abs),
        };
        match done {
            Ok(()) if output => written += 1,
            Ok(()) => out.changed.push(c.rel),
            Err(e) => out.notes.push(format!("not admitted: {}: {e}", c.rel)),
        }
    }
    if written > 0 {
        out.notes.push(format!(
            "{written} file(s) git ignores or caches (build output) written as they are, \
             outside the change set"
        ));
    }
}

fn set_modes(root: &Path, modes: &[(String, u32)], out: &mut Admitted) {
    for (rel, mode) in modes {
        let path = root.join(rel);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())
            && std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).is_ok()
        {
            out.notes.push(format!("{rel}: mode set to {mode:o}"));
        }
    }
}

/// Writes one change set through [`change::admit`]; its diff and paths, or
/// why it was not written, go to `out`.
fn take(
    ctx: &mut ToolContext<'_>,
    changes: Vec<FileChange>,
    summary: &str,
    why: Option<String>,
    out: &mut Admitted,
) {
    if changes.is_empty() {
        return;
    }
    let paths: Vec<String> = changes.iter().map(|c| c.rel.clone()).collect();
    match change::admit(ctx, changes, summary, why) {
        Ok(applied) => {
            out.diff.push_str(&applied.diff);
            out.changed
                .extend(applied.stats.iter().map(|s| s.rel.clone()));
        }
        Err(e) => out
            .notes
            .push(format!("not admitted: {}: {}", paths.join(", "), e.content)),
    }
}

/// The file changes a layer holds: written files (and, for existing ones,
/// a new mode apart), deleted files, and the earlier contents of folders
/// it replaced. Paths that cross a symlink of the workspace are refused.
fn changes(
    workspace: &Workspace,
    upper: &Path,
    found: &Found,
    keep: &dyn Fn(&str) -> bool,
) -> (Vec<FileChange>, Vec<(String, u32)>, Vec<String>) {
    let root = workspace.root();
    let mut out: Vec<FileChange> = Vec::new();
    let mut modes = Vec::new();
    let mut notes = Vec::new();
    let mut seen = BTreeSet::new();
    let mut push =
        |rel: String, new: Option<Vec<u8>>, mode: Option<u32>, notes: &mut Vec<String>| {
            if !seen.insert(rel.clone()) {
                return;
            }
            let abs = root.join(&rel);
            // The path as the workspace resolves it must be the plain one: a
            // symlink on the way (one the command replaced by a folder) would
            // send the write elsewhere.
            if workspace.resolve(&rel).ok().as_deref() != Some(abs.as_path()) {
                notes.push(format!(
                    "not admitted: {rel} crosses a symlink of the workspace"
                ));
                return;
            }
            let old = match std::fs::symlink_metadata(&abs) {
                Ok(m) if m.is_file() => std::fs::read(&abs).ok(),
                Ok(m) if m.is_dir() && new.is_some() => {
                    notes.push(format!("not admitted: {rel} replaces a folder with a file"));
                    return;
                }
                Ok(m) if m.file_type().is_symlink() => {
                    notes.push(format!("not admitted: {rel} replaces a symlink"));
                    return;
                }
                _ => None,
            };
            out.push(FileChange {
                abs,
                rel,
                old,
                new,
                mode,
            });
        };
    for (rel, mode) in found.files.iter().filter(|(r, _)| keep(r)) {
        let Ok(bytes) = std::fs::read(upper.join(rel)) else {
            notes.push(format!("not admitted: {rel} cannot be read from the layer"));
            continue;
        };
        let before = std::fs::symlink_metadata(root.join(rel)).ok();
        if let Some(m) = before.filter(|m| m.is_file()) {
            if m.permissions().mode() & 0o7777 != *mode {
                modes.push((rel.clone(), *mode));
            }
        }
        push(rel.clone(), Some(bytes), Some(*mode), &mut notes);
    }
    for rel in found.deleted.iter().filter(|r| keep(r)) {
        for file in files_under(&root.join(rel)) {
            push(relative(root, &file), None, None, &mut notes);
        }
    }
    for rel in found.opaque.iter().filter(|r| keep(r)) {
        for file in files_under(&root.join(rel)) {
            let r = relative(root, &file);
            if !upper.join(&r).exists() && std::fs::symlink_metadata(upper.join(&r)).is_err() {
                push(r, None, None, &mut notes);
            }
        }
    }
    (out, modes, notes)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The regular files at or under `path` in the workspace (no links followed).
fn files_under(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Vec::new();
    };
    if meta.is_file() {
        return vec![path.to_path_buf()];
    }
    if !meta.is_dir() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            out.extend(files_under(&e.path()));
        }
    }
    out.sort();
    out
}

/// A symlink the command made: made in the workspace when it points, by a
/// relative path, at something inside it that may be admitted; else refused.
fn link(workspace: &Workspace, rel: &str, target: &Path, class: &dyn Fn(&str) -> Class) -> String {
    let root = workspace.root();
    let parent = Path::new(rel).parent().unwrap_or(Path::new(""));
    let mut resolved = PathBuf::new();
    let mut escapes = target.is_absolute();
    for c in parent.join(target).components() {
        match c {
            Component::Normal(n) => resolved.push(n),
            Component::ParentDir => escapes |= !resolved.pop(),
            _ => {}
        }
    }
    let landing = resolved.to_string_lossy().into_owned();
    if escapes {
        return format!(
            "not admitted: {rel} is a symlink to {} outside the workspace",
            target.display()
        );
    }
    for (what, c) in [(rel, class(rel)), (landing.as_str(), class(&landing))] {
        if let Class::Ask(why) | Class::Refuse(why) = c {
            return format!("not admitted: the symlink {rel} ({what}): {why}");
        }
    }
    let abs = root.join(rel);
    if workspace.resolve(rel).ok().as_deref() != Some(abs.as_path()) {
        return format!("not admitted: {rel} crosses a symlink of the workspace");
    }
    if std::fs::symlink_metadata(&abs).is_ok() {
        return format!("not admitted: the symlink {rel} would replace what is there");
    }
    if let Some(p) = abs.parent() {
        let _ = std::fs::create_dir_all(p);
    }
    match std::os::unix::fs::symlink(target, &abs) {
        Ok(()) => format!("{rel}: symlink to {} made", target.display()),
        Err(e) => format!("not admitted: the symlink {rel}: {e}"),
    }
}

/// Moves a folder from the layer into the workspace: a rename, or a copy
/// across file systems.
fn move_in(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("cp -a exited with {status}")))
    }
}

/// The text the model gets after a command's output, naming what was
/// admitted and what was not.
pub(crate) fn report(admitted: &Admitted) -> Option<String> {
    if admitted.changed.is_empty() && admitted.notes.is_empty() {
        return None;
    }
    let mut text = String::new();
    if !admitted.changed.is_empty() {
        text.push_str(&format!(
            "files the command changed (admitted; undo reverts them): {}",
            admitted.changed.join(", ")
        ));
    }
    for note in &admitted.notes {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(note);
    }
    Some(text)
}
