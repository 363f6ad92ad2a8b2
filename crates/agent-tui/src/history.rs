//! The requests typed in a workspace, kept in its state folder
//! (`tui-history.jsonl`: one JSON string a line, so a multi-line request
//! stays one entry) and recalled with Up and Down across restarts.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file's name in the workspace's state folder.
pub const FILE: &str = "tui-history.jsonl";

/// Entries kept in memory (the file keeps every one).
const KEPT: usize = 1000;

pub(crate) struct History {
    path: Option<PathBuf>,
    entries: Vec<String>,
    /// Where Up/Down is: an index into `entries`, or None for the draft.
    at: Option<usize>,
    /// What was being typed when the recall began.
    draft: String,
}

impl History {
    /// The history in `state_dir`; empty when the file is missing or unreadable.
    pub(crate) fn open(state_dir: Option<&Path>) -> Self {
        let path = state_dir.map(|d| d.join(FILE));
        let mut entries: Vec<String> = path
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<String>(l).ok())
            .collect();
        let skip = entries.len().saturating_sub(KEPT);
        entries.drain(..skip);
        Self {
            path,
            entries,
            at: None,
            draft: String::new(),
        }
    }

    /// Adds a sent request (not a repeat of the last one) and appends it to the file.
    pub(crate) fn push(&mut self, entry: &str) {
        self.at = None;
        if entry.trim().is_empty() || self.entries.last().is_some_and(|l| l == entry) {
            return;
        }
        self.entries.push(entry.to_string());
        if let Some(path) = &self.path {
            let line = serde_json::Value::String(entry.to_string()).to_string();
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                })
                .and_then(|mut f| writeln!(f, "{line}"));
            if written.is_err() {
                // Kept for this session; the next one will not recall it.
                self.path = None;
            }
        }
    }

    /// The latest entry before `before` (of all, when None) containing
    /// `query`, without telling case apart unless the query has capitals;
    /// an entry the same as `before`'s is passed over.
    pub(crate) fn find(&self, query: &str, before: Option<usize>) -> Option<usize> {
        let end = before.unwrap_or(self.entries.len()).min(self.entries.len());
        let seen = before.and_then(|i| self.entries.get(i));
        let smart_case = query.chars().any(char::is_uppercase);
        let query_lower = query.to_lowercase();
        self.entries[..end].iter().rposition(|entry| {
            let hit = if smart_case {
                entry.contains(query)
            } else {
                entry.to_lowercase().contains(&query_lower)
            };
            hit && Some(entry) != seen
        })
    }

    pub(crate) fn get(&self, index: usize) -> Option<&str> {
        self.entries.get(index).map(String::as_str)
    }

    /// The entry before the current one; `current` is the editor's text,
    /// kept as the draft when the recall starts.
    pub(crate) fn previous(&mut self, current: &str) -> Option<&str> {
        let next = match self.at {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_string();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.at = Some(next);
        Some(&self.entries[next])
    }

    /// The entry after the current one, or the draft after the last.
    pub(crate) fn next(&mut self) -> Option<&str> {
        let i = self.at?;
        if i + 1 < self.entries.len() {
            self.at = Some(i + 1);
            Some(&self.entries[i + 1])
        } else {
            self.at = None;
            Some(&self.draft)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_restart_and_the_draft_comes_back() {
        let dir = tempfile_dir();
        let mut h = History::open(Some(&dir));
        h.push("first");
        h.push("two\nlines");
        h.push("two\nlines");
        let mut h = History::open(Some(&dir));
        assert_eq!(h.previous("typing"), Some("two\nlines"));
        assert_eq!(h.previous(""), Some("first"));
        assert_eq!(h.previous(""), None);
        assert_eq!(h.next(), Some("two\nlines"));
        assert_eq!(h.next(), Some("typing"));
        assert_eq!(h.next(), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn find_goes_to_older_matches_and_passes_over_repeats() {
        let mut h = History::open(None);
        for entry in ["alpha one", "beta", "Alpha two", "alpha two", "gamma"] {
            h.push(entry);
        }
        assert_eq!(h.find("alpha", None), Some(3));
        // "Alpha two" differs in case only: shown, then "alpha one".
        assert_eq!(h.find("alpha", Some(3)), Some(2));
        assert_eq!(h.find("alpha", Some(2)), Some(0));
        assert_eq!(h.find("alpha", Some(0)), None);
        assert_eq!(h.find("Alpha", None), Some(2));
        assert_eq!(h.find("delta", None), None);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agent-tui-history-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
