//! The tag cache: one SQLite row per file, keyed by path, holding the file's
//! content hash, size, mtime and tags (JSON).
//!
//! The cache is an optimisation only. Every failure is logged and survived:
//! an unreadable or corrupt database is deleted and rebuilt, a failed write
//! leaves correct tags in memory, and when no database can be written at all
//! the map keeps its tags in an in-memory database for the session.
//!
//! Its `files` table is not the index's (`agent_index::state`, another
//! database, whose failures are errors): only the content hash
//! ([`agent_base::files::sha256_hex`]) and removing a database are shared.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{params, Connection};

use super::tags::FileTags;

/// Bump whenever the table layout or the tag extraction changes: a cache
/// written by another version is dropped and rebuilt.
pub const SCHEMA_VERSION: i64 = 2;

/// One file as last tagged.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedFile {
    /// sha256 of the content, hex.
    pub hash: String,
    pub size: u64,
    pub mtime_ns: i64,
    /// Wall-clock time when `hash` was computed. A file modified within
    /// `RACY_NS` of that moment may change again without its mtime moving
    /// (coarse timestamps), so its mtime is not trusted until it is older.
    pub checked_ns: i64,
    pub tags: FileTags,
}

/// See `CachedFile::checked_ns`.
pub const RACY_NS: i64 = 2_000_000_000;

impl CachedFile {
    /// Whether an unchanged size and mtime prove the content is unchanged.
    pub fn stat_matches(&self, size: u64, mtime_ns: i64) -> bool {
        self.size == size
            && self.mtime_ns == mtime_ns
            && mtime_ns != 0
            && mtime_ns < self.checked_ns - RACY_NS
    }
}

pub struct TagCache {
    conn: Connection,
    /// `None` when the cache lives in memory only.
    path: Option<PathBuf>,
}

impl TagCache {
    /// Opens (or creates) the cache at `path` and loads every row. Never fails:
    /// a broken file is deleted and recreated; if even that fails, the cache
    /// lives in memory.
    pub fn open(path: &Path) -> (TagCache, BTreeMap<String, CachedFile>) {
        match Self::try_open(path) {
            Ok(opened) => opened,
            Err(err) => {
                tracing::warn!(
                    "repo map cache {} is unusable ({err:#}); rebuilding it",
                    path.display()
                );
                (Self::recreate(path), BTreeMap::new())
            }
        }
    }

    /// A fresh, empty cache at `path` (deleting whatever is there), or in memory.
    pub fn recreate(path: &Path) -> TagCache {
        agent_base::files::remove_sqlite(path);
        match Self::try_open(path) {
            Ok((cache, _)) => cache,
            Err(err) => {
                tracing::warn!(
                    "cannot create repo map cache {} ({err:#}); keeping tags in memory",
                    path.display()
                );
                Self::in_memory()
            }
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "an in-memory SQLite database fails to open only when memory is out"
    )]
    fn in_memory() -> TagCache {
        let conn = Connection::open_in_memory().expect("sqlite in-memory database");
        init_schema(&conn).expect("schema of an in-memory database");
        TagCache { conn, path: None }
    }

    fn try_open(path: &Path) -> anyhow::Result<(TagCache, BTreeMap<String, CachedFile>)> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // No fsync: this is a cache. A process crash still leaves the last
        // committed state; an OS crash may corrupt it, and a corrupt cache is
        // rebuilt. Set first, so switching to WAL does not sync either
        // (creating the cache drops from ~15 ms to ~1 ms).
        conn.pragma_update(None, "synchronous", "OFF")?;
        // WAL: readers (another agent process) never block the writer.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            conn.execute_batch("DROP TABLE IF EXISTS files;")?;
            init_schema(&conn)?;
        }
        let entries = load(&conn)?;
        Ok((
            TagCache {
                conn,
                path: Some(path.to_path_buf()),
            },
            entries,
        ))
    }

    /// Where the cache is stored; `None` when in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Writes `upserts` and deletes `removed` in one transaction.
    pub fn write(&mut self, upserts: &[Row], removed: &[String]) -> anyhow::Result<()> {
        if upserts.is_empty() && removed.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO files(rel, hash, mtime_ns, size, checked_ns, tags) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for row in upserts {
                put.execute(params![
                    row.rel,
                    row.hash,
                    row.mtime_ns,
                    row.size as i64,
                    row.checked_ns,
                    row.tags_json
                ])?;
            }
            let mut del = tx.prepare_cached("DELETE FROM files WHERE rel = ?1")?;
            for rel in removed {
                del.execute([rel])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// A file's row as stored, owned (so that a writer thread can take it) and
/// with its tags already in JSON (the taggers serialize in parallel).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub rel: String,
    pub hash: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub checked_ns: i64,
    pub tags_json: String,
}

impl Row {
    /// `tags_json` of `None` serializes `file.tags` here.
    pub fn new(rel: &str, file: &CachedFile, tags_json: Option<String>) -> Row {
        Row {
            rel: rel.to_string(),
            hash: file.hash.clone(),
            size: file.size,
            mtime_ns: file.mtime_ns,
            checked_ns: file.checked_ns,
            // Tags always serialize; were that ever to fail, the unreadable
            // row is skipped on load and the file re-tagged.
            tags_json: tags_json.unwrap_or_else(|| to_json(&file.tags)),
        }
    }
}

/// The stored form of a file's tags.
pub fn to_json(tags: &FileTags) -> String {
    serde_json::to_string(tags).unwrap_or_default()
}

fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS files(
             rel TEXT PRIMARY KEY,
             hash TEXT NOT NULL,
             mtime_ns INTEGER NOT NULL,
             size INTEGER NOT NULL,
             checked_ns INTEGER NOT NULL,
             tags TEXT NOT NULL
         );
         PRAGMA user_version = {SCHEMA_VERSION};"
    ))
}

/// Every row. A row whose tags do not parse is skipped (it will be re-tagged);
/// a database error fails the whole load, which makes `open` rebuild.
fn load(conn: &Connection) -> anyhow::Result<BTreeMap<String, CachedFile>> {
    let mut st = conn.prepare("SELECT rel, hash, mtime_ns, size, checked_ns, tags FROM files")?;
    let mut rows = st.query([])?;
    let mut out = BTreeMap::new();
    while let Some(row) = rows.next()? {
        let rel: String = row.get(0)?;
        let tags: String = row.get(5)?;
        match serde_json::from_str::<FileTags>(&tags) {
            Ok(tags) => {
                out.insert(
                    rel,
                    CachedFile {
                        hash: row.get(1)?,
                        mtime_ns: row.get(2)?,
                        size: row.get::<_, i64>(3)? as u64,
                        checked_ns: row.get(4)?,
                        tags,
                    },
                );
            }
            Err(err) => tracing::warn!("repo map cache: dropping unreadable tags of {rel}: {err}"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::{Def, DefKind};

    fn row(rel: &str, file: &CachedFile) -> Row {
        Row::new(rel, file, None)
    }

    fn entry(name: &str) -> CachedFile {
        CachedFile {
            hash: "ab".into(),
            size: 10,
            mtime_ns: 5,
            checked_ns: 7,
            tags: FileTags {
                defs: vec![Def {
                    name: name.into(),
                    kind: DefKind::Function,
                    line: 1,
                    signature: format!("pub fn {name}()"),
                    scope: None,
                    opens: None,
                    public: true,
                }],
                scopes: vec![],
                refs: vec![("other".into(), 2)],
                imports: vec![],
            },
        }
    }

    #[test]
    fn round_trip_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".agent/repomap.sqlite");
        let (mut cache, entries) = TagCache::open(&path);
        assert!(entries.is_empty());
        assert_eq!(cache.path(), Some(path.as_path()));
        let (a, b) = (entry("a"), entry("b"));
        cache
            .write(&[row("a.rs", &a), row("b.rs", &b)], &[])
            .unwrap();
        cache.write(&[], &["b.rs".to_string()]).unwrap();
        drop(cache);
        let (_, entries) = TagCache::open(&path);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries["a.rs"], a);
    }

    #[test]
    fn garbage_file_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repomap.sqlite");
        std::fs::write(
            &path,
            b"this is not a database, just garbage bytes \x00\x01\x02".repeat(200),
        )
        .unwrap();
        let (mut cache, entries) = TagCache::open(&path);
        assert!(entries.is_empty());
        assert!(cache.path().is_some(), "rebuilt on disk, not in memory");
        cache.write(&[row("a.rs", &entry("a"))], &[]).unwrap();
        drop(cache);
        assert_eq!(TagCache::open(&path).1.len(), 1);
    }

    #[test]
    fn other_schema_version_is_dropped_and_bad_rows_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repomap.sqlite");
        let (mut cache, _) = TagCache::open(&path);
        cache
            .write(&[row("a.rs", &entry("a")), row("b.rs", &entry("b"))], &[])
            .unwrap();
        cache
            .conn
            .execute("UPDATE files SET tags = '{not json' WHERE rel = 'b.rs'", [])
            .unwrap();
        drop(cache);
        let (cache, entries) = TagCache::open(&path);
        assert_eq!(entries.keys().collect::<Vec<_>>(), ["a.rs"]);
        cache
            .conn
            .pragma_update(None, "user_version", SCHEMA_VERSION + 100)
            .unwrap();
        drop(cache);
        assert!(TagCache::open(&path).1.is_empty());
    }

    #[test]
    fn unwritable_location_falls_back_to_memory() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"x").unwrap();
        // A path *under a regular file* can never be created.
        let (mut cache, entries) = TagCache::open(&blocker.join("sub/repomap.sqlite"));
        assert!(entries.is_empty());
        assert_eq!(cache.path(), None);
        cache.write(&[row("a.rs", &entry("a"))], &[]).unwrap();
    }

    #[test]
    fn racy_mtimes_are_not_trusted() {
        let mut e = entry("a");
        e.mtime_ns = 10 * RACY_NS;
        e.checked_ns = e.mtime_ns + RACY_NS / 2; // hashed right after the write
        assert!(!e.stat_matches(e.size, e.mtime_ns));
        e.checked_ns = e.mtime_ns + 2 * RACY_NS;
        assert!(e.stat_matches(e.size, e.mtime_ns));
        assert!(!e.stat_matches(e.size + 1, e.mtime_ns));
        assert!(!e.stat_matches(e.size, e.mtime_ns + 1));
    }
}
