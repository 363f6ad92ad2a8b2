//! The workspace jail: every path a tool touches is resolved here.
//!
//! A model-given path (relative to the root, or absolute) is normalised
//! lexically (`.` and `..`), then its nearest existing ancestor is
//! canonicalized (resolving symlinks) and the rest appended. The result must
//! lie under the canonical root; a symlink inside the workspace that points
//! outside is an escape like any other. Writes additionally refuse `.agent/`
//! and `.git/` ([`Workspace::check_writable`]).

use std::path::{Component, Path, PathBuf};

use anyhow::Context;

/// The folder the agent may read and change (the repository root).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// Folders inside the workspace no tool may write into.
pub const PROTECTED_DIRS: &[&str] = &[".agent", ".git"];

impl Workspace {
    /// `root` is canonicalized; it must be an existing directory.
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        let root = root
            .canonicalize()
            .with_context(|| format!("workspace {} does not exist", root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("workspace {} is not a directory", root.display());
        }
        Ok(Self { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The agent's own state for this workspace (sessions, logs,
    /// checkpoints, checker caches), outside it: `paths::state_dir`.
    pub fn state_dir(&self) -> PathBuf {
        agent_base::paths::state_dir(&self.root)
    }

    /// `.agent/` inside the workspace: the team's files (policy, config,
    /// commands, skills, hooks).
    pub fn team_dir(&self) -> PathBuf {
        agent_base::paths::team_dir(&self.root)
    }

    /// Resolves a model-given path (relative to the root, or absolute) to a
    /// canonical path inside the workspace; the path itself may not exist yet
    /// (its nearest existing ancestor is canonicalized). Refuses escapes,
    /// symlinks included, with a message for the model.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let trimmed = path.trim();
        if trimmed.contains('\0') {
            return Err(format!("path {path:?} contains a NUL byte"));
        }
        let given = if trimmed.is_empty() { "." } else { trimmed };
        let expanded = if given == "~" || given.starts_with("~/") {
            // The model sometimes writes `~`; it is not the workspace.
            return Err(self.outside(given));
        } else {
            PathBuf::from(given)
        };
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            self.root.join(expanded)
        };
        let normal = normalize(&joined);
        // Nearest existing ancestor (symlinks count as existing, dangling or not).
        let mut existing = normal.clone();
        let mut rest: Vec<std::ffi::OsString> = Vec::new();
        while std::fs::symlink_metadata(&existing).is_err() {
            match (existing.file_name(), existing.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name.to_os_string());
                    existing = parent.to_path_buf();
                }
                _ => return Err(self.outside(given)),
            }
        }
        let canonical = existing.canonicalize().map_err(|_| {
            format!(
                "path {given} goes through a broken symlink ({}); use another path",
                self.display(&existing)
            )
        })?;
        let mut full = canonical;
        for part in rest.into_iter().rev() {
            full.push(part);
        }
        if !full.starts_with(&self.root) {
            return Err(self.outside(given));
        }
        Ok(full)
    }

    fn outside(&self, given: &str) -> String {
        format!(
            "path {given} is outside the workspace {}; use a path inside it (relative paths are \
             relative to the workspace root)",
            self.root.display()
        )
    }

    fn display(&self, p: &Path) -> String {
        if p.starts_with(&self.root) {
            self.relative(p)
        } else {
            p.display().to_string()
        }
    }

    /// The workspace-relative form of a resolved path, with `/` separators
    /// (`.` for the root itself).
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) => {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.is_empty() {
                    ".".into()
                } else {
                    parts.join("/")
                }
            }
            Err(_) => path.display().to_string(),
        }
    }

    /// `Err(message)` when a resolved path lies in `.agent/` or `.git/` (or is one of them).
    pub fn check_writable(&self, resolved: &Path) -> Result<(), String> {
        let Ok(rel) = resolved.strip_prefix(&self.root) else {
            return Err(self.outside(&resolved.display().to_string()));
        };
        if rel.as_os_str().is_empty() {
            return Err("cannot write the workspace root itself; give a file path".into());
        }
        for c in rel.components() {
            let s = c.as_os_str().to_string_lossy();
            if PROTECTED_DIRS.contains(&s.as_ref()) {
                return Err(format!(
                    "{} is inside {s}/, which the agent never writes; choose another path",
                    self.relative(resolved)
                ));
            }
        }
        Ok(())
    }
}

/// Removes `.` and resolves `..` lexically (`..` at the root stays at the root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "x").unwrap();
        let ws = Workspace::new(&root).unwrap();
        let canon = root.canonicalize().unwrap();

        assert_eq!(ws.resolve("src/a.rs").unwrap(), canon.join("src/a.rs"));
        assert_eq!(
            ws.resolve("./src/../src/a.rs").unwrap(),
            canon.join("src/a.rs")
        );
        assert_eq!(
            ws.resolve("new/dir/f.txt").unwrap(),
            canon.join("new/dir/f.txt")
        );
        assert_eq!(ws.resolve("").unwrap(), canon);
        assert_eq!(ws.resolve(".").unwrap(), canon);
        let abs = canon.join("src/a.rs");
        assert_eq!(ws.resolve(abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(ws.relative(&abs), "src/a.rs");
        assert_eq!(ws.relative(&canon), ".");

        let e = ws.resolve("../x").unwrap_err();
        assert!(e.contains("outside the workspace"), "{e}");
        assert!(ws.resolve("src/../../x").is_err());
        assert!(ws.resolve("/etc/passwd").is_err());
        assert!(ws.resolve("~/x").is_err());

        // Symlinks: pointing outside is an escape, inside is fine.
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("in")).unwrap();
        assert!(ws.resolve("out").is_err());
        assert!(ws.resolve("out/new.txt").is_err());
        assert_eq!(ws.resolve("in/a.rs").unwrap(), canon.join("src/a.rs"));
        // A dangling symlink to outside is refused too.
        std::os::unix::fs::symlink("/nonexistent/zzz", root.join("dangling")).unwrap();
        assert!(ws.resolve("dangling").is_err());
    }

    #[test]
    fn protected_dirs_are_not_writable() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        for p in [".agent/x", ".git/config", "sub/.git/HEAD", ".git"] {
            let r = ws.resolve(p).unwrap();
            assert!(ws.check_writable(&r).is_err(), "{p}");
        }
        assert!(ws.check_writable(&ws.resolve("src/x.rs").unwrap()).is_ok());
        assert!(ws.check_writable(&ws.resolve(".").unwrap()).is_err());
        assert!(ws
            .check_writable(&ws.resolve(".gitignore").unwrap())
            .is_ok());
    }
}
