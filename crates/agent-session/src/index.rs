//! `agent index` as the session runs it: the index opened for writing with
//! the settings the command line gave, filled in two passes (every file's
//! rows first, so keyword search works at once; then the vectors, the repo
//! map's most important files first), and watched afterwards with the map
//! following it. What it did is said in words ([`summary`],
//! [`progress_message`]); the front end draws the progress.

use std::path::Path;

use anyhow::Result;

use agent_base::cancel::CancelToken;
use agent_base::term::{untrusted, untrusted_text};
use agent_index::{watch, IndexOptions};
use agent_lang::walk::{Skipped, WalkOptions};
use agent_repomap::{default_cache_path, RepoMap};

use crate::{Notice, Say};

pub use crate::deps;
pub use agent_index::shared::STORE_ENV;
pub use agent_index::watch::Background;
pub use agent_index::{Index, Progress, UpdateStats};
pub use agent_lang::walk::{DEFAULT_MAX_FILES, DEFAULT_MAX_TOTAL_BYTES};

/// What `agent index` was asked for.
#[derive(Debug, Clone, Default)]
pub struct IndexSettings {
    /// Start from an empty index.
    pub rebuild: bool,
    pub max_file_kb: u64,
    pub max_files: usize,
    pub max_total_mb: u64,
    /// Embedding threads (None: the index's default).
    pub threads: Option<usize>,
    /// An OpenAI-compatible embeddings server instead of the local embedder.
    pub embed_server: Option<String>,
    pub embed_model: Option<String>,
    /// A shared index (`s3://…`, a folder) to publish to.
    pub store: Option<String>,
}

impl IndexSettings {
    fn options(&self) -> IndexOptions {
        let defaults = IndexOptions::default();
        IndexOptions {
            walk: WalkOptions {
                max_file_bytes: self.max_file_kb * 1024,
                max_files: self.max_files,
                max_total_bytes: self.max_total_mb.saturating_mul(1 << 20),
                ..WalkOptions::default()
            },
            threads: self.threads.unwrap_or(defaults.threads),
            embedder: match &self.embed_server {
                Some(url) => agent_index::embed::Choice::Server {
                    url: url.clone(),
                    model: self.embed_model.clone(),
                    api_key: std::env::var("AGENT_EMBED_API_KEY").ok(),
                },
                None => agent_index::embed::Choice::AsRecorded,
            },
            store: self.store.clone(),
            ..defaults
        }
    }
}

/// The index of `root`, open for writing (emptied first with `rebuild`);
/// says when `root` is no git repository and when the chunks are redone.
pub fn open(root: &Path, settings: &IndexSettings, explicit: bool, say: Say) -> Result<Index> {
    let options = settings.options();
    let index = if settings.rebuild {
        Index::rebuild(root, options)?
    } else {
        Index::open_writer(root, options)?
    };
    if !explicit && !root.join(".git").exists() {
        say(Notice::Note(format!(
            "not inside a git repository; indexing {} (pass a path to index another folder)",
            untrusted(root)
        )));
    }
    if let Some(why) = index.rechunking() {
        say(Notice::Plain(why.to_string()));
    }
    Ok(index)
}

/// The files in the order their vectors should come: the repo map's
/// ranking, personalized by the files that just changed. The map's tag
/// cache follows the same updates (cheap: it re-tags only files whose size
/// or mtime moved). Not held during the fill: on a large tree its tags are
/// memory the vector index build needs.
pub fn priority(index: &Index, changed: &[String], say: Say) -> Vec<String> {
    let mut map = RepoMap::open(index.root(), &default_cache_path(index.root()));
    refresh(&mut map, say);
    map.ranked_files(changed)
}

fn refresh(map: &mut RepoMap, say: Say) {
    if let Err(e) = map.refresh() {
        say(Notice::Warning(format!(
            "repo map not updated: {}",
            untrusted_text(&format!("{e:#}"))
        )));
    }
}

/// `agent index --watch` after the first pass: an update per burst of file
/// events, at low priority, the repo map following, until Ctrl-C.
/// `on_update` hears every update that changed something.
pub fn watch(
    index: &mut Index,
    cancel: &CancelToken,
    on_update: &mut dyn FnMut(&UpdateStats),
    say: Say,
) -> Result<()> {
    watch::lower_priority(watch::Scope::Process);
    let mut map = RepoMap::open(index.root(), &default_cache_path(index.root()));
    watch::watch(
        index,
        watch::DEFAULT_DEBOUNCE,
        cancel,
        &mut |result| match result {
            Ok(stats) => {
                if stats.files_indexed + stats.files_removed > 0 {
                    // The map's tags follow the index (only moved files are re-tagged).
                    refresh(&mut map, say);
                }
                on_update(&stats);
            }
            Err(e) => say(Notice::Error(format!(
                "update failed (still watching): {}",
                untrusted_text(&format!("{e:#}"))
            ))),
        },
    )
}

/// How an interrupted update left the index.
pub fn interrupted(stats: &UpdateStats) -> String {
    if stats.chunks_unembedded > 0 {
        format!(
            "interrupted: every file is searchable by keyword; {} chunks still lack vectors. Run `agent index` again to finish",
            stats.chunks_unembedded
        )
    } else {
        "interrupted: the index is consistent; run `agent index` again to finish".into()
    }
}

/// `312 chunks written, 1,024 embedded (40/s), 96 to embed in this batch`
pub fn progress_message(p: &Progress, secs: f64) -> String {
    let rate = |n: usize| n as f64 / secs.max(1e-3);
    if p.searchable && p.building_indices {
        return "updating the vector index".into();
    }
    if p.searchable {
        return match p.chunks_embedded {
            0 => String::new(),
            n => format!("{:.0}/s", rate(n)),
        };
    }
    if p.building_indices {
        return format!(
            "{} chunks written, updating the search indices",
            p.chunks_done
        );
    }
    let mut msg = format!("{} chunks written", p.chunks_done);
    if p.chunks_embedded > 0 {
        msg.push_str(&format!(
            ", {} embedded ({:.0}/s)",
            p.chunks_embedded,
            rate(p.chunks_embedded)
        ));
    }
    if p.chunks_to_embed > 0 {
        msg.push_str(&format!(", embedding {} more", p.chunks_to_embed));
    }
    msg
}

/// What an update did, a line each: the counts, the vector index when it
/// was built, and the files skipped ([`skipped_lines`]).
pub fn summary(stats: &UpdateStats) -> Vec<String> {
    // Rows and vectors apart: a run that only fills vectors writes no chunk.
    let mut lines = vec![format!(
        "{} files seen: {} indexed ({} chunks written), {} removed, {} skipped; vectors: {} embedded, {} from cache; in {:.1}s",
        stats.files_seen,
        stats.files_indexed,
        stats.chunks_written,
        stats.files_removed,
        stats.skipped.len(),
        stats.chunks_embedded,
        stats.cache_hits,
        stats.seconds
    )];
    if stats.vector_index_built {
        lines.push(format!(
            "built the vector index: from {} chunks on, searches probe it instead of comparing every vector",
            agent_index::ANN_MIN_ROWS
        ));
    }
    lines.extend(skipped_lines(&stats.skipped));
    lines
}

/// Files skipped for a reason worth reading, the first ten by name, then
/// how many more; the expected kinds (binary, generated, minified) counted.
fn skipped_lines(skipped: &[Skipped]) -> Vec<String> {
    const SHOWN: usize = 10;
    let expected = |s: &&Skipped| matches!(s.reason.as_str(), "binary" | "generated" | "minified");
    let notable: Vec<&Skipped> = skipped.iter().filter(|s| !expected(s)).collect();
    let mut lines: Vec<String> = notable
        .iter()
        .take(SHOWN)
        .map(|s| {
            format!(
                "  skipped {}: {}",
                untrusted(if s.rel.is_empty() { "?" } else { &s.rel }),
                untrusted(&s.reason)
            )
        })
        .collect();
    if notable.len() > SHOWN {
        lines.push(format!(
            "  … and {} more skipped (`agent index --json` lists them all)",
            notable.len() - SHOWN
        ));
    }
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for s in skipped.iter().filter(expected) {
        match kinds.iter_mut().find(|(k, _)| *k == s.reason) {
            Some((_, n)) => *n += 1,
            None => kinds.push((s.reason.as_str(), 1)),
        }
    }
    if !kinds.is_empty() {
        let parts: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        lines.push(format!("  also skipped, as expected: {}", parts.join(", ")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(rel: &str, reason: &str) -> Skipped {
        Skipped {
            rel: rel.into(),
            reason: reason.into(),
        }
    }

    #[test]
    fn the_summary_names_ten_skipped_files_and_counts_the_expected_ones() {
        let mut stats = UpdateStats {
            files_seen: 14,
            files_indexed: 2,
            ..UpdateStats::default()
        };
        stats.skipped = (0..12)
            .map(|i| skipped(&format!("big{i}.json"), "too large"))
            .chain([skipped("a.png", "binary"), skipped("b.png", "binary")])
            .chain([skipped("c.min.js", "minified")])
            .collect();
        let lines = summary(&stats);
        assert!(
            lines[0].starts_with("14 files seen: 2 indexed"),
            "{lines:?}"
        );
        assert!(lines[0].contains("15 skipped"), "{lines:?}");
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("  skipped big"))
                .count(),
            10
        );
        assert!(
            lines.contains(&"  … and 2 more skipped (`agent index --json` lists them all)".into())
        );
        assert_eq!(
            lines.last().map(String::as_str),
            Some("  also skipped, as expected: 2 binary, 1 minified")
        );
    }

    #[test]
    fn progress_says_what_the_pass_is_doing() {
        let mut p = Progress {
            chunks_done: 312,
            chunks_embedded: 80,
            chunks_to_embed: 96,
            ..Progress::default()
        };
        assert_eq!(
            progress_message(&p, 2.0),
            "312 chunks written, 80 embedded (40/s), embedding 96 more"
        );
        p.searchable = true;
        assert_eq!(progress_message(&p, 2.0), "40/s");
        p.building_indices = true;
        assert_eq!(progress_message(&p, 2.0), "updating the vector index");
    }

    #[test]
    fn an_interrupted_update_says_whether_vectors_are_missing() {
        let mut stats = UpdateStats::default();
        assert!(interrupted(&stats).contains("consistent"));
        stats.chunks_unembedded = 7;
        assert!(interrupted(&stats).contains("7 chunks still lack vectors"));
    }
}
