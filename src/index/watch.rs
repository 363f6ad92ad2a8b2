//! `agent index --watch`: keep the index live as files change.
//!
//! notify reports file events; the debouncer coalesces a burst (a `git
//! checkout` touching a thousand files) into one batch. Each batch triggers
//! an ordinary incremental update, which stats every file but re-reads only
//! those whose mtime or size moved: one code path for create, modify,
//! delete, rename and ignore-file edits, with nothing to get out of sync.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result};
use notify_debouncer_full::notify::event::{AccessKind, AccessMode, EventKind};
use notify_debouncer_full::notify::{Config, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{
    new_debouncer_opt, DebounceEventResult, DebouncedEvent, Debouncer, RecommendedCache,
};

use super::{Index, UpdateStats};
use crate::cancel::CancelToken;

/// How long the watcher waits for a burst of events to settle. Short enough
/// that an edit is searchable well within half a second, long enough that an
/// editor's save (truncate, write, rename) or a checkout is one update.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// Whether an event path can affect the index: our own `.agent/` folder and
/// git's internals change on every write and are not source files.
fn relevant(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    !matches!(first.as_deref(), Some(".agent" | ".git"))
}

/// Whether an event can change what is indexed. Opening or reading a file
/// cannot, and counting those would be worse than wasteful: every update's
/// walk opens each directory, so each update would trigger the next, forever.
fn may_change(root: &Path, event: &DebouncedEvent) -> bool {
    let read_only = matches!(
        &event.kind,
        EventKind::Access(kind) if *kind != AccessKind::Close(AccessMode::Write)
    );
    event.need_rescan() || (!read_only && event.paths.iter().any(|p| relevant(root, p)))
}

/// Watches `index.root()` until `cancel` trips, updating after each burst.
/// Errors in an update are reported through `on_update` and watching goes on.
pub fn watch(
    index: &mut Index,
    debounce: Duration,
    cancel: &CancelToken,
    on_update: &mut dyn FnMut(Result<UpdateStats>),
) -> Result<()> {
    let root = index.root().to_path_buf();
    let (tx, rx) = mpsc::channel::<DebounceEventResult>();
    // Symlinks are not followed, as the walk does not follow them: a link to
    // `/usr` would add thousands of watches, and one to `/` stop the watcher.
    let config = Config::default().with_follow_symlinks(false);
    let mut debouncer: Debouncer<RecommendedWatcher, RecommendedCache> =
        new_debouncer_opt(debounce, None, tx, RecommendedCache::new(), config)
            .context("cannot start the file watcher")?;
    debouncer
        .watch(&root, RecursiveMode::Recursive)
        .with_context(|| format!("cannot watch {}", root.display()))?;
    while !cancel.is_cancelled() {
        let batch = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(batch) => batch,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut changed = match batch {
            Ok(events) => events.iter().any(|e| may_change(&root, e)),
            Err(errors) => {
                for e in errors {
                    tracing::warn!("file watcher: {e}");
                }
                true // unknown what changed: rescan
            }
        };
        // Fold in anything that arrived meanwhile: one update per burst.
        while let Ok(more) = rx.try_recv() {
            changed |= more.map_or(true, |events| events.iter().any(|e| may_change(&root, e)));
        }
        if changed {
            on_update(index.update(cancel, &mut |_| {}));
        }
    }
    Ok(())
}
