//! Checkpoints for `undo`: the content of every file a change set touches,
//! saved under `checkpoints/` in the state folder (`paths::state_dir`) before the change is applied.
//!
//! One folder per change set, named by a growing number (`000007/`), holding
//! `manifest.json` and the original bytes of each file (`0.bin`, `1.bin`, ...).
//! A set is written into a temporary folder and renamed into place, so a crash
//! never leaves half a set; leftovers are removed by the next `open`. Only the
//! last [`Checkpoints::MAX_SETS`] sets are kept. Files that commands
//! (`run_cmd`) change are not checkpointed: they cannot be undone. Git is never
//! touched.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::sha256_hex;

#[derive(Debug)]
pub struct Checkpoints {
    dir: PathBuf,
    /// The session whose changes are saved and undone ([`Checkpoints::set_session`]).
    session: Option<String>,
    /// The request of that session the changes are made for ([`Checkpoints::set_request`]).
    request: Option<i64>,
}

/// What `undo` can take back ([`Checkpoints::undoable`]).
#[derive(Debug)]
pub enum Undoable {
    /// The last change set of this session (of all, without a session).
    Set(ChangeSet),
    /// No change set at all.
    Nothing,
    /// None of this session's; the newest set is another run's.
    Elsewhere(ChangeSet),
}

/// One change set as saved: what each file was before.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChangeSet {
    pub id: String,
    /// RFC 3339 time of the change.
    pub created: String,
    /// What made it, e.g. `edit src/main.rs`.
    pub summary: String,
    pub files: Vec<SavedFile>,
    /// The session that made it (None: saved without one, or before
    /// sessions were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The request of that session that made it, as the session store
    /// numbers its messages: `/rewind` takes back a request's changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedFile {
    /// Workspace-relative path.
    pub path: String,
    /// Whether the file existed before the change (else the change created it).
    pub existed: bool,
    /// The blob holding the original bytes (when it existed).
    #[serde(default)]
    pub blob: Option<String>,
    /// Unix permission bits before the change.
    #[serde(default)]
    pub mode: Option<u32>,
    /// sha256 of the content the change wrote (`None`: the change deleted it).
    #[serde(default)]
    pub after: Option<String>,
}

/// What to save for one file of a change set.
pub struct Snapshot<'a> {
    pub rel: &'a str,
    /// The bytes before the change; `None` when the change creates the file.
    pub before: Option<&'a [u8]>,
    pub mode: Option<u32>,
    /// The bytes the change will write; `None` when it deletes the file.
    pub after: Option<&'a [u8]>,
}

const MANIFEST: &str = "manifest.json";
const TMP_PREFIX: &str = ".tmp-";

impl Checkpoints {
    /// Change sets kept; older ones are pruned when a new one is saved.
    pub const MAX_SETS: usize = 50;

    /// Opens (creating) the checkpoint store of a workspace.
    pub fn open(state_dir: &Path) -> anyhow::Result<Self> {
        let dir = state_dir.join("checkpoints");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // Leftovers of interrupted saves.
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(TMP_PREFIX)
                    || (name.parse::<u64>().is_ok() && !e.path().join(MANIFEST).exists())
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        Ok(Self {
            dir,
            session: None,
            request: None,
        })
    }

    /// Ties the store to a session: sets saved from now on name it, and
    /// [`Checkpoints::undoable`] offers only its own. An empty id is a
    /// session that has not started (it has no changes yet).
    pub fn set_session(&mut self, id: &str) {
        self.session = Some(id.to_string());
    }

    /// Names the request that sets saved from now on belong to (its number
    /// in the session store; None: the session is not stored).
    pub fn set_request(&mut self, request: Option<i64>) {
        self.request = request;
    }

    /// The change set `undo` takes back: this session's last one (the last
    /// of all when no session is set). Another run's change is never taken
    /// back by surprise: it is named instead ([`Undoable::Elsewhere`]).
    pub fn undoable(&self) -> anyhow::Result<Undoable> {
        let Some(session) = &self.session else {
            return Ok(self.last()?.map_or(Undoable::Nothing, Undoable::Set));
        };
        let ids = self.ids()?;
        let mut newest = None;
        for &id in ids.iter().rev() {
            let set = self.read_set(id)?;
            if !session.is_empty() && set.session.as_deref() == Some(session.as_str()) {
                return Ok(Undoable::Set(set));
            }
            newest.get_or_insert(set);
        }
        Ok(newest.map_or(Undoable::Nothing, Undoable::Elsewhere))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn ids(&self) -> anyhow::Result<Vec<u64>> {
        let mut ids: Vec<u64> = std::fs::read_dir(&self.dir)
            .with_context(|| format!("cannot list {}", self.dir.display()))?
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Saves a change set before it is applied; returns it.
    pub fn save(&mut self, summary: &str, files: &[Snapshot<'_>]) -> anyhow::Result<ChangeSet> {
        let ids = self.ids()?;
        let next = ids.last().map_or(1, |l| l + 1);
        let id = format!("{next:06}");
        let tmp = self
            .dir
            .join(format!("{TMP_PREFIX}{id}-{}", std::process::id()));
        std::fs::create_dir_all(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        let result = (|| -> anyhow::Result<ChangeSet> {
            let mut saved = Vec::with_capacity(files.len());
            for (i, f) in files.iter().enumerate() {
                let blob = match f.before {
                    Some(bytes) => {
                        let name = format!("{i}.bin");
                        std::fs::write(tmp.join(&name), bytes)?;
                        Some(name)
                    }
                    None => None,
                };
                saved.push(SavedFile {
                    path: f.rel.to_string(),
                    existed: f.before.is_some(),
                    blob,
                    mode: f.mode,
                    after: f.after.map(sha256_hex),
                });
            }
            let set = ChangeSet {
                id: id.clone(),
                created: chrono::Local::now().to_rfc3339(),
                summary: summary.to_string(),
                files: saved,
                session: self.session.clone().filter(|s| !s.is_empty()),
                request: self.request,
            };
            std::fs::write(tmp.join(MANIFEST), serde_json::to_vec_pretty(&set)?)?;
            std::fs::rename(&tmp, self.dir.join(&id))?;
            Ok(set)
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        let set = result
            .with_context(|| format!("cannot save a checkpoint in {}", self.dir.display()))?;
        // Prune the oldest sets.
        let mut all = ids;
        all.push(next);
        if all.len() > Self::MAX_SETS {
            for old in &all[..all.len() - Self::MAX_SETS] {
                let _ = std::fs::remove_dir_all(self.dir.join(format!("{old:06}")));
            }
        }
        Ok(set)
    }

    fn read_set(&self, id: u64) -> anyhow::Result<ChangeSet> {
        let path = self.dir.join(format!("{id:06}")).join(MANIFEST);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| format!("{} is damaged", path.display()))
    }

    /// Every saved change set, oldest first.
    pub fn list(&self) -> anyhow::Result<Vec<ChangeSet>> {
        self.ids()?
            .into_iter()
            .map(|id| self.read_set(id))
            .collect()
    }

    /// The most recent change set.
    pub fn last(&self) -> anyhow::Result<Option<ChangeSet>> {
        match self.ids()?.last() {
            Some(&id) => self.read_set(id).map(Some),
            None => Ok(None),
        }
    }

    /// The bytes a file had before the change (`None`: it did not exist).
    pub fn content(&self, set: &ChangeSet, file: &SavedFile) -> anyhow::Result<Option<Vec<u8>>> {
        if !file.existed {
            return Ok(None);
        }
        let blob = file
            .blob
            .as_deref()
            .with_context(|| format!("checkpoint {} lacks the content of {}", set.id, file.path))?;
        if blob.contains('/') || blob.contains("..") {
            anyhow::bail!("checkpoint {} is damaged (blob name {blob})", set.id);
        }
        let path = self.dir.join(&set.id).join(blob);
        std::fs::read(&path)
            .map(Some)
            .with_context(|| format!("cannot read {}", path.display()))
    }

    /// Drops a change set (after it was undone, or when its write failed).
    pub fn remove(&mut self, id: &str) -> anyhow::Result<()> {
        if id.is_empty() || id.contains('/') || id.contains("..") {
            anyhow::bail!("bad checkpoint id {id:?}");
        }
        let path = self.dir.join(id);
        std::fs::remove_dir_all(&path).with_context(|| format!("cannot remove {}", path.display()))
    }

    /// How many change sets can be undone.
    pub fn len(&self) -> usize {
        self.ids().map(|v| v.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_list_content_remove_and_prune() {
        let dir = tempfile::tempdir().unwrap();
        let mut cp = Checkpoints::open(dir.path()).unwrap();
        assert!(cp.is_empty());
        let set = cp
            .save(
                "edit a",
                &[
                    Snapshot {
                        rel: "a.txt",
                        before: Some(b"old"),
                        mode: Some(0o644),
                        after: Some(b"new"),
                    },
                    Snapshot {
                        rel: "n.txt",
                        before: None,
                        mode: None,
                        after: Some(b"x"),
                    },
                ],
            )
            .unwrap();
        assert_eq!(set.id, "000001");
        // Reopen: persisted.
        let cp2 = Checkpoints::open(dir.path()).unwrap();
        let last = cp2.last().unwrap().unwrap();
        assert_eq!(last.summary, "edit a");
        assert_eq!(cp2.content(&last, &last.files[0]).unwrap().unwrap(), b"old");
        assert_eq!(cp2.content(&last, &last.files[1]).unwrap(), None);
        assert_eq!(
            last.files[0].after.as_deref(),
            Some(sha256_hex(b"new").as_str())
        );

        for i in 0..Checkpoints::MAX_SETS + 3 {
            cp.save(&format!("s{i}"), &[]).unwrap();
        }
        assert_eq!(cp.len(), Checkpoints::MAX_SETS);
        let last = cp.last().unwrap().unwrap();
        cp.remove(&last.id).unwrap();
        assert_eq!(cp.len(), Checkpoints::MAX_SETS - 1);
    }

    #[test]
    fn a_session_undoes_only_its_own_sets_and_names_another_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut cp = Checkpoints::open(dir.path()).unwrap();
        cp.set_session("s1");
        cp.save("edit a", &[]).unwrap();
        cp.set_session("s2");
        assert!(
            matches!(cp.undoable().unwrap(), Undoable::Elsewhere(s) if s.session.as_deref() == Some("s1"))
        );
        cp.save("edit b", &[]).unwrap();
        cp.set_session("s1");
        assert!(matches!(cp.undoable().unwrap(), Undoable::Set(s) if s.summary == "edit a"));
        // Not started yet: nothing of its own.
        cp.set_session("");
        assert!(matches!(cp.undoable().unwrap(), Undoable::Elsewhere(s) if s.summary == "edit b"));
        let empty = tempfile::tempdir().unwrap();
        let mut none = Checkpoints::open(empty.path()).unwrap();
        none.set_session("s1");
        assert!(matches!(none.undoable().unwrap(), Undoable::Nothing));
    }

    #[test]
    fn incomplete_sets_are_dropped_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let cp = Checkpoints::open(dir.path()).unwrap();
        std::fs::create_dir_all(cp.dir().join(".tmp-000001-1")).unwrap();
        std::fs::create_dir_all(cp.dir().join("000002")).unwrap();
        let cp = Checkpoints::open(dir.path()).unwrap();
        assert!(cp.is_empty());
        assert_eq!(std::fs::read_dir(cp.dir()).unwrap().count(), 0);
    }
}
