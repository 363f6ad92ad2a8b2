//! Moving an old workspace's state out of `.agent/`, and the per-user key
//! that authenticates what the agent reads back from its state.
//!
//! Up to this layout `.agent/` held the index, sessions, logs, prompt cache
//! and checkpoints next to the team's files, with a `.gitignore` of `*`.
//! [`migrate`] moves the state entries ([`is_state`]) to the state folder
//! (`paths::state_dir`) once, leaves the team's files where they are, and
//! replaces that `.gitignore` with one that ignores only `*.local.toml`.
//! Entries are renamed (copied, then removed, across file systems); one
//! already there came from an interrupted run, so the old copy goes. When
//! nothing else is left, `.agent/` goes. `agent doctor` names the folder and
//! what is pending.
//!
//! A key ([`user_key`]: a file of the user's config folder, mode 0600, made
//! once; `kv.key` for the prompt cache) signs what the agent reads back, so
//! a prompt cache entry no one but this user's agent wrote is never loaded.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::paths::{self, TEAM_GITIGNORE};

/// The `.gitignore` every earlier version wrote into `.agent/`: it marks a
/// folder whose state is ours to move (a repository cannot commit it
/// without `-f`, so a cloned `.agent/` with state in it is not trusted).
pub const OLD_GITIGNORE: &str = "*\n";

/// Whether an entry of an old `.agent/` is the agent's own state.
pub fn is_state(name: &str) -> bool {
    const DIRS: &[&str] = &["index", "shared", "cache", "checkpoints", "logs"];
    const FILES: &[&str] = &["acp-sessions.json"];
    DIRS.contains(&name)
        || FILES.contains(&name)
        || name.starts_with("sessions.sqlite")
        || name.starts_with("repomap.sqlite")
        || name.starts_with("check-")
}

/// The state entries an old `.agent/` still holds (what [`migrate`] would
/// move); empty when there is nothing to migrate.
pub fn pending(workspace: &Path) -> Vec<PathBuf> {
    let team = paths::team_dir(workspace);
    if std::fs::read_to_string(team.join(".gitignore"))
        .ok()
        .as_deref()
        != Some(OLD_GITIGNORE)
    {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&team) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| is_state(&e.file_name().to_string_lossy()))
        // Never a symlink: it may point anywhere.
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Moves the old `.agent/` state of `workspace` into `state` (a rename, or
/// a copy then a removal across file systems). Idempotent, and safe to
/// interrupt: an entry already in `state` came from an earlier run, so its
/// old copy is removed. Team files stay; our old `.gitignore` (`*`) becomes
/// [`TEAM_GITIGNORE`], and a `.agent/` left with nothing else is removed.
pub fn migrate(workspace: &Path, state: &Path) -> anyhow::Result<()> {
    let team = paths::team_dir(workspace);
    let ignore = team.join(".gitignore");
    if std::fs::read_to_string(&ignore).ok().as_deref() != Some(OLD_GITIGNORE) {
        return Ok(());
    }
    let entries = pending(workspace);
    if !entries.is_empty() {
        paths::create_private_dir(state);
    }
    for from in entries {
        let Some(name) = from.file_name() else {
            continue;
        };
        let to = state.join(name);
        if name.to_string_lossy().starts_with("check-") {
            // A checker's build output: rebuilt on demand in the cache
            // folder (`paths::cache_dir`), not worth copying.
            remove(&from)?;
        } else if std::fs::symlink_metadata(&to).is_err() {
            move_entry(&from, &to)
                .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))?;
        } else {
            remove(&from)?;
        }
    }
    let rest: Vec<_> = std::fs::read_dir(&team)?
        .flatten()
        .filter(|e| e.file_name() != ".gitignore")
        .collect();
    if rest.is_empty() {
        std::fs::remove_file(&ignore)?;
        let _ = std::fs::remove_dir(&team);
    } else {
        crate::files::atomic_write(&ignore, TEAM_GITIGNORE.as_bytes(), None)?;
    }
    Ok(())
}

/// Renames `from` to `to`; across file systems, copies into a temporary
/// name beside `to`, renames that into place, then removes `from`.
fn move_entry(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Ok(()) => return Ok(()),
        Err(e) if e.raw_os_error() != Some(libc::EXDEV) => return Err(e),
        Err(_) => {}
    }
    let tmp = to.with_extension(format!("migrating-{}", std::process::id()));
    let _ = remove(&tmp);
    copy_tree(from, &tmp)?;
    std::fs::rename(&tmp, to)?;
    remove(from)
}

/// Copies files and folders, never following a symlink (those are skipped).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
    } else if meta.is_file() {
        std::fs::copy(from, to)?;
    }
    Ok(())
}

fn remove(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A 32-byte random key of this user, `config_dir()/NAME.key` (mode 0600,
/// created once). Outside every workspace, so no command the agent runs
/// can read or replace it; what it authenticates (the prompt cache) cannot
/// be forged from inside the sandbox.
pub fn user_key(name: &str) -> io::Result<[u8; 32]> {
    let dir = paths::config_dir()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no home folder for the key"))?;
    paths::create_private_dir(&dir);
    let path = dir.join(format!("{name}.key"));
    if let Some(key) = read_key(&path)? {
        return Ok(key);
    }
    let mut key = [0u8; 32];
    use io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    // Created whole under a temporary name, then linked into place: two
    // processes racing both end up with the one that won.
    let tmp = dir.join(format!(".{name}.key.{}", std::process::id()));
    {
        use io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&key)?;
        file.sync_all()?;
    }
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_key(&path)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "key file vanished")),
        Err(e) => Err(e),
    }
}

/// The key in `path`, None when there is none yet; an error when the file
/// is not 32 bytes or others may read it.
fn read_key(path: &Path) -> io::Result<Option<[u8; 32]>> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !meta.is_file() || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private file (mode 0600 expected); remove it and a new key is made",
                path.display()
            ),
        ));
    }
    let bytes = std::fs::read(path)?;
    bytes
        .try_into()
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a key is 32 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn old_layout(ws: &Path) {
        let team = ws.join(".agent");
        for dir in [
            "index/lance",
            "logs",
            "cache/kv",
            "checkpoints/1",
            "commands",
            "skills/x",
        ] {
            std::fs::create_dir_all(team.join(dir)).unwrap();
        }
        std::fs::write(team.join(".gitignore"), OLD_GITIGNORE).unwrap();
        std::fs::write(team.join("logs/audit.jsonl"), "{}\n").unwrap();
        std::fs::write(team.join("sessions.sqlite"), "db").unwrap();
        std::fs::write(team.join("repomap.sqlite"), "map").unwrap();
        std::fs::write(team.join("acp-sessions.json"), "{}").unwrap();
        std::fs::create_dir_all(team.join("check-cargo_target_dir")).unwrap();
        std::fs::write(team.join("policy.toml"), "deny = []\n").unwrap();
        std::fs::write(team.join("commands/review.md"), "Review.\n").unwrap();
        std::fs::write(team.join("skills/x/SKILL.md"), "---\n").unwrap();
    }

    #[test]
    fn old_state_moves_and_team_files_stay() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let state = dir.path().join("state");
        old_layout(&ws);
        assert_eq!(pending(&ws).len(), 8);
        migrate(&ws, &state).unwrap();
        for moved in [
            "index/lance",
            "logs/audit.jsonl",
            "sessions.sqlite",
            "repomap.sqlite",
            "acp-sessions.json",
            "cache/kv",
            "checkpoints/1",
        ] {
            assert!(state.join(moved).exists(), "{moved}");
            assert!(!ws.join(".agent").join(moved).exists(), "{moved}");
        }
        assert!(!ws.join(".agent/check-cargo_target_dir").exists());
        for kept in ["policy.toml", "commands/review.md", "skills/x/SKILL.md"] {
            assert!(ws.join(".agent").join(kept).exists(), "{kept}");
        }
        assert_eq!(
            std::fs::read_to_string(ws.join(".agent/.gitignore")).unwrap(),
            TEAM_GITIGNORE
        );
        assert!(pending(&ws).is_empty());
        // Again: nothing to do, nothing lost.
        migrate(&ws, &state).unwrap();
        assert!(state.join("sessions.sqlite").is_file());
    }

    #[test]
    fn an_interrupted_migration_finishes_and_state_only_leaves_no_folder() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let state = dir.path().join("state");
        std::fs::create_dir_all(ws.join(".agent/logs")).unwrap();
        std::fs::write(ws.join(".agent/.gitignore"), OLD_GITIGNORE).unwrap();
        std::fs::write(ws.join(".agent/logs/audit.jsonl"), "old").unwrap();
        // A run that copied the logs, then stopped before removing them.
        std::fs::create_dir_all(state.join("logs")).unwrap();
        std::fs::write(state.join("logs/audit.jsonl"), "old").unwrap();
        migrate(&ws, &state).unwrap();
        assert!(!ws.join(".agent").exists());
        assert_eq!(
            std::fs::read_to_string(state.join("logs/audit.jsonl")).unwrap(),
            "old"
        );
    }

    #[test]
    fn a_shipped_agent_folder_without_our_gitignore_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".agent/cache/kv")).unwrap();
        std::fs::write(ws.join(".agent/sessions.sqlite"), "forged").unwrap();
        assert!(pending(&ws).is_empty());
        migrate(&ws, &dir.path().join("state")).unwrap();
        assert!(ws.join(".agent/sessions.sqlite").exists());
        assert!(!dir.path().join("state").exists());
    }

    #[test]
    fn a_key_is_made_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key");
        assert!(read_key(&path).unwrap().is_none());
        std::fs::write(&path, [7u8; 32]).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_key(&path).is_err());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_key(&path).unwrap(), Some([7u8; 32]));
    }
}
