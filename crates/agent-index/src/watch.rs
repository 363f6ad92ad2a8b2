//! `agent index --watch`: keep the index live as files change.
//!
//! notify reports file events; the debouncer coalesces a burst (a `git
//! checkout` touching a thousand files) into one batch. Each batch triggers
//! an ordinary incremental update, which stats every file but re-reads only
//! those whose mtime or size moved: one code path for create, modify,
//! delete, rename and ignore-file edits, with nothing to get out of sync.
//! Open and read events are ignored: inotify reports every open, and the
//! update's own walk opens each folder, so counting them made each update
//! trigger the next (a full walk every debounce period, forever).
//! [`Background`] runs the same on a thread of a process that does other
//! work meanwhile.
//!
//! Priority: `agent index --watch` drops every thread of the process to nice
//! 10 after its first pass. A background indexer (a chat's) drops only its
//! own thread, before it starts the embedder and the store, so their thread
//! pools inherit the low priority and the model in the same process keeps its
//! own.

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
use agent_base::cancel::CancelToken;

/// How long the watcher waits for a burst of events to settle. Short enough
/// that an edit is searchable well within half a second, long enough that an
/// editor's save (truncate, write, rename) or a checkout is one update.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// Nice value of background indexing: it yields the CPU to the editor, the
/// build and the model, and still runs when they idle.
const BACKGROUND_NICE: i32 = 10;

/// Who [`lower_priority`] applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The calling thread, and the threads it starts afterwards (the
    /// embedder's and the store's pools): a chat's background indexer must
    /// not slow the model running in the same process.
    Thread,
    /// Every thread of the process (`agent index --watch` after its first
    /// pass, whose embedder threads already exist).
    Process,
}

/// Moves indexing to a low CPU priority (best effort: a failure only means
/// normal priority).
pub fn lower_priority(scope: Scope) {
    // On Linux a nice value belongs to a thread and is inherited by the
    // threads it creates; elsewhere it belongs to the process.
    #[cfg(target_os = "linux")]
    let tids: Vec<libc::id_t> = match scope {
        Scope::Thread => vec![0],
        Scope::Process => std::fs::read_dir("/proc/self/task")
            .map(|tasks| {
                tasks
                    .filter_map(|t| t.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default(),
    };
    #[cfg(not(target_os = "linux"))]
    let tids: Vec<libc::id_t> = match scope {
        Scope::Thread => Vec::new(), // would nice the whole process
        Scope::Process => vec![0],
    };
    for tid in tids {
        // SAFETY: plain syscalls on ids of our own process. Never raises the
        // priority of what already runs nicer (`nice agent index --watch`).
        unsafe {
            if libc::getpriority(libc::PRIO_PROCESS, tid) < BACKGROUND_NICE {
                libc::setpriority(libc::PRIO_PROCESS, tid, BACKGROUND_NICE);
            }
        }
    }
}

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

/// Keeps a repository's index live from a thread of its own while the
/// process does something else (`agent chat`, `agent acp`, `agent mcp
/// serve`), when the repository has an index and no other writer (`agent
/// index --watch`) keeps it already. Stops when dropped.
pub struct Background {
    stop: CancelToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Starts watching `root`; `catch_up` first brings the index up to date
    /// with what changed while nothing watched. None when there is no local
    /// index to keep: a shared index is kept by its own writer, and this
    /// machine's changes reach searches through its overlay.
    pub fn start(root: &Path, catch_up: bool) -> Option<Self> {
        if !super::index_dir(root).is_dir() || super::shared::configured().is_some() {
            return None;
        }
        let stop = CancelToken::new();
        let thread_stop = stop.clone();
        let root = root.to_path_buf();
        let thread = std::thread::spawn(move || {
            // Before the index starts its threads, so they inherit it.
            lower_priority(Scope::Thread);
            let options = super::IndexOptions {
                background: true,
                ..Default::default()
            };
            let mut index = match Index::open_writer(&root, options) {
                Ok(index) => index,
                Err(e) => {
                    // Usually another writer: it keeps the index live already.
                    tracing::info!("no background indexing: {e:#}");
                    return;
                }
            };
            let report = &mut |r: Result<UpdateStats>| {
                if let Err(e) = r {
                    tracing::warn!("background index update failed: {e:#}");
                }
            };
            if catch_up {
                report(index.update(&thread_stop, &mut |_| {}));
            }
            if let Err(e) = watch(&mut index, DEFAULT_DEBOUNCE, &thread_stop, report) {
                tracing::warn!("background indexing stopped: {e:#}");
            }
        });
        Some(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        // SAFETY: reads the calling thread's nice value.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
    }

    #[test]
    fn a_background_indexer_lowers_its_own_threads_only() {
        let before = own_nice();
        let (mine, child) = std::thread::spawn(|| {
            lower_priority(Scope::Thread);
            let child = std::thread::spawn(own_nice).join().unwrap();
            (own_nice(), child)
        })
        .join()
        .unwrap();
        assert_eq!(mine, BACKGROUND_NICE.max(before));
        assert_eq!(child, mine, "threads it starts inherit it");
        assert_eq!(
            own_nice(),
            before,
            "the rest of the process keeps its priority"
        );
    }
}
