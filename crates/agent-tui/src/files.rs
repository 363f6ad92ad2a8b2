//! `@` in the input: the workspace's files, fuzzy-matched on what follows
//! it (helix's `nucleo-matcher`), for the chat to attach to the request.
//! The workspace is walked once, on the first `@`, as the index walks it
//! (`agent_lang::walk::builder`), secret files left out; the chat attaches
//! each `@path` that names a file inside the workspace
//! (`agent_session::chat::with_attachments`, the fenced block of `agent ask
//! --file`).

use std::path::{Path, PathBuf};

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

/// Files listed at most: a walk of a huge tree stops here.
const MOST_FILES: usize = 50_000;

/// Matches offered at most.
const MOST_MATCHES: usize = 50;

pub(crate) struct Files {
    root: Option<PathBuf>,
    /// Walked on the first `@`: the chat may never need them.
    paths: Option<Vec<String>>,
    matcher: Matcher,
}

impl Files {
    pub(crate) fn new(root: Option<PathBuf>) -> Self {
        Self {
            root,
            paths: None,
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
        }
    }

    /// The files best matching `query`, best first.
    pub(crate) fn matches(&mut self, query: &str) -> Vec<String> {
        let root = self.root.clone();
        let paths = self
            .paths
            .get_or_insert_with(|| root.as_deref().map(list).unwrap_or_default());
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        pattern
            .match_list(paths.iter(), &mut self.matcher)
            .into_iter()
            .take(MOST_MATCHES)
            .map(|(path, _)| path.clone())
            .collect()
    }
}

/// The workspace's files as the index walks them (ignore files honoured),
/// secrets left out: an attachment goes to the model.
fn list(root: &Path) -> Vec<String> {
    agent_lang::walk::builder(root)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| agent_lang::walk::relative(root, e.path()))
        .filter(|rel| !agent_lang::walk::is_secret_file(rel))
        .take(MOST_FILES)
        .collect()
}

/// The `@` word at the end of `text`: what follows the `@`.
pub(crate) fn at_word(text: &str) -> Option<&str> {
    let word = text.rsplit(char::is_whitespace).next()?;
    word.strip_prefix('@')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_word_after_an_at_is_the_query_and_matches_are_fuzzy() {
        assert_eq!(at_word("look at @src/ma"), Some("src/ma"));
        assert_eq!(at_word("@"), Some(""));
        assert_eq!(at_word("mail me@ x"), None);
        assert_eq!(at_word("@a b"), None);
        let dir = std::env::temp_dir().join(format!("agent-tui-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(dir.join("README.md"), "hi\n").unwrap();
        std::fs::write(dir.join(".env"), "KEY=1\n").unwrap();
        let mut files = Files::new(Some(dir.clone()));
        assert_eq!(files.matches("smn"), ["src/main.rs"]);
        assert!(files.matches("env").is_empty());
        assert_eq!(files.matches("").len(), 2);
        let _ = std::fs::remove_dir_all(dir);
    }
}
