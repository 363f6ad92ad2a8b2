//! A list of what the user approved (trusted workspaces, trusted MCP
//! servers), kept in their configuration folder, which no workspace
//! reaches: `{"trusted": [...]}`, read whole, and written whole through a
//! rename, readable by the user alone.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The file's form: `L` is the list read, or a borrow of the one written.
#[derive(Serialize, Deserialize)]
struct File<L> {
    trusted: L,
}

/// The approvals of one kind, and the file they are kept in.
#[derive(Debug)]
pub struct Approvals<T> {
    path: Option<PathBuf>,
    /// What the list holds, as an error message says it ("trusted workspaces").
    what: &'static str,
    pub entries: Vec<T>,
}

impl<T: Serialize + DeserializeOwned> Approvals<T> {
    /// `file_name` in the user's configuration folder; empty where there is
    /// no home to keep it in, and then nothing can be approved.
    pub fn open_default(file_name: &str, what: &'static str) -> Result<Self> {
        match crate::paths::config_dir() {
            Some(dir) => Self::open(&dir.join(file_name), what),
            None => Ok(Self {
                path: None,
                what,
                entries: Vec::new(),
            }),
        }
    }

    pub fn open(path: &Path, what: &'static str) -> Result<Self> {
        let entries = match std::fs::read_to_string(path) {
            Ok(text) => {
                let file: File<Vec<T>> = serde_json::from_str(&text).with_context(|| {
                    format!(
                        "{} is not a valid list of {what} (fix or delete it)",
                        path.display()
                    )
                })?;
                file.trusted
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        Ok(Self {
            path: Some(path.to_path_buf()),
            what,
            entries,
        })
    }

    /// The file it is kept in.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Adds `entry` in place of those `replaces` matches, and saves.
    pub fn replace(&mut self, replaces: impl Fn(&T) -> bool, entry: T) -> Result<()> {
        self.entries.retain(|e| !replaces(e));
        self.entries.push(entry);
        self.save()
    }

    /// Drops the entries `matches` picks, saving if there were any; whether
    /// there were.
    pub fn remove(&mut self, matches: impl Fn(&T) -> bool) -> Result<bool> {
        let before = self.entries.len();
        self.entries.retain(|e| !matches(e));
        let removed = self.entries.len() != before;
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    fn save(&self) -> Result<()> {
        let Some(path) = &self.path else {
            anyhow::bail!(
                "no home folder to keep {} in (set HOME or XDG_CONFIG_HOME)",
                self.what
            );
        };
        let file = File {
            trusted: &self.entries,
        };
        let text = serde_json::to_string_pretty(&file)? + "\n";
        crate::files::atomic_write(path, text.as_bytes(), Some(0o600))
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_list_is_saved_whole_for_the_user_alone_and_a_damaged_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/trusted.json");
        let mut list = Approvals::<String>::open(&path, "trusted things").unwrap();
        assert!(list.entries.is_empty() && !path.exists());
        list.replace(|e| e.starts_with("a"), "a1".into()).unwrap();
        list.replace(|e| e.starts_with("a"), "a2".into()).unwrap();
        list.replace(|e| e.starts_with("b"), "b".into()).unwrap();
        let again = Approvals::<String>::open(&path, "trusted things").unwrap();
        assert_eq!(again.entries, ["a2", "b"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!list.remove(|e| e == "c").unwrap());
        assert!(list.remove(|e| e == "b").unwrap());
        assert_eq!(
            Approvals::<String>::open(&path, "x").unwrap().entries,
            ["a2"]
        );
        std::fs::write(&path, "{").unwrap();
        let err = Approvals::<String>::open(&path, "trusted things").unwrap_err();
        assert!(
            format!("{err}").contains("is not a valid list of trusted things (fix or delete it)")
        );
    }
}
