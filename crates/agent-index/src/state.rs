//! The index's bookkeeping in SQLite: what was indexed from each file
//! (`index/state.sqlite` in the workspace's state folder), and the embedding
//! cache (`index/embeddings.sqlite`).
//!
//! The embedding cache maps a hash of a chunk's symbol and text to its vector,
//! so identical text is embedded once: across files, across runs, and across
//! renames and branch switches (the path is deliberately not in the key,
//! though the embedded text carries a `path | symbol` header for context). It
//! is the expensive part, so it lives in a file of its own: a damaged state
//! file is rebuilt from the files on disk and the cache, with no embedding.
//!
//! The `files` table here is the index's own record, not the repo map's
//! table of that name (`agent_repomap::cache`, in a database of its own):
//! the two keep other things of a file (chunks and the chunker version;
//! tags and when the hash was taken) under versions and failure rules of
//! their own. What they share is in `agent_base::files`: the content hash
//! both record ([`agent_base::files::sha256_hex`]) and removing a database.

use std::collections::HashMap;
use std::path::Path;

use agent_base::files::remove_sqlite;
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

/// 2: the embedding cache moved to its own file (version 1 kept it here).
/// 3: each file records the chunker version that made its chunks (files
/// of versions 1 and 2 get 0: chunked before versions were recorded).
const SCHEMA_VERSION: i64 = 3;

/// The embedding cache's file, beside the state file.
pub(crate) const CACHE_FILE: &str = "embeddings.sqlite";

/// Meta key: the embedder, also kept with the state (the cache's copy is the
/// one a writer checks; readers of a shared index have only the state).
const EMBEDDER_KEY: &str = "embedder";

/// What the index last saw of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub hash: String,
    pub mtime_ns: i64,
    pub size: u64,
    pub chunks: u32,
    /// The chunker version ([`agent_lang::chunk::VERSION`]) its chunks
    /// come from (0: from before versions were recorded).
    pub chunker: u32,
}

pub struct State {
    conn: Connection,
    cache: Connection,
    /// Set when the embedding cache was damaged and started anew.
    pub cache_recovered: Option<String>,
}

fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

fn open_cache(path: &Path) -> Result<Connection> {
    let cache = connect(path)?;
    // `about` names the embedder the vectors came from (the cache's
    // vectors are only good for that model).
    cache.execute_batch(
        "CREATE TABLE IF NOT EXISTS embeddings(key TEXT PRIMARY KEY, vector BLOB NOT NULL);
         CREATE TABLE IF NOT EXISTS about(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    )?;
    cache.query_row("SELECT count(*) FROM embeddings", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(cache)
}

impl State {
    /// Opens (or creates) the state database at `path` and the embedding
    /// cache beside it. A damaged cache is started anew (and said so in
    /// `cache_recovered`); a damaged state file is reported as an error, and
    /// the caller decides to rebuild it (the cache file is left alone).
    pub fn open(path: &Path) -> Result<Self> {
        let cache_path = path.with_file_name(CACHE_FILE);
        let mut cache_recovered = None;
        let cache = match open_cache(&cache_path) {
            Ok(c) => c,
            // A full disk or a read-only one is not damage: starting anew
            // would throw away every embedding for nothing.
            Err(e) if crate::is_transient(&e) => return Err(e),
            Err(e) => {
                cache_recovered = Some(format!(
                    "the embedding cache was damaged ({e:#}); started a new one"
                ));
                remove_sqlite(&cache_path);
                open_cache(&cache_path)?
            }
        };
        let conn = connect(path)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == 1 {
            // Schema 1 kept the cache here: move it, it is the expensive part.
            conn.execute(
                "ATTACH DATABASE ?1 AS cache",
                [cache_path.to_string_lossy()],
            )?;
            conn.execute_batch(
                "INSERT OR IGNORE INTO cache.embeddings(key, vector)
                     SELECT key, vector FROM main.embeddings;
                 DROP TABLE main.embeddings;
                 DETACH DATABASE cache;",
            )?;
        } else if !matches!(version, 2 | SCHEMA_VERSION) {
            conn.execute_batch(
                "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS embeddings; DROP TABLE IF EXISTS meta;",
            )?;
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS files(
                 rel TEXT PRIMARY KEY, hash TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
                 size INTEGER NOT NULL, chunks INTEGER NOT NULL,
                 chunker INTEGER NOT NULL DEFAULT 0);
             CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )?;
        // Schemas 1 and 2 kept no chunker version: their files are re-chunked.
        let has_chunker: bool = conn.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info('files') WHERE name = 'chunker'",
            [],
            |r| r.get(0),
        )?;
        if !has_chunker {
            conn.execute_batch("ALTER TABLE files ADD COLUMN chunker INTEGER NOT NULL DEFAULT 0;")?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        // Fail now, not halfway through a run, if the file is not a database.
        conn.query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0))?;
        Ok(Self {
            conn,
            cache,
            cache_recovered,
        })
    }

    pub fn files(&self) -> Result<HashMap<String, FileState>> {
        let mut stmt = self
            .conn
            .prepare("SELECT rel, hash, mtime_ns, size, chunks, chunker FROM files")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                FileState {
                    hash: r.get(1)?,
                    mtime_ns: r.get(2)?,
                    size: r.get::<_, i64>(3)? as u64,
                    chunks: r.get(4)?,
                    chunker: r.get(5)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records files as indexed and forgets removed ones, in one transaction.
    pub fn commit_files(
        &mut self,
        upserts: &[(String, FileState)],
        removed: &[String],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO files(rel, hash, mtime_ns, size, chunks, chunker)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (rel, f) in upserts {
                put.execute(params![
                    rel,
                    f.hash,
                    f.mtime_ns,
                    f.size as i64,
                    f.chunks,
                    f.chunker
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

    /// The files chunked by another chunker version than `current`: the
    /// oldest such version and how many files, or None when every file
    /// is `current`'s.
    pub fn chunker_behind(&self, current: u32) -> Result<Option<(u32, usize)>> {
        let (oldest, files): (Option<u32>, i64) = self.conn.query_row(
            "SELECT min(chunker), count(*) FROM files WHERE chunker != ?1",
            [current],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(oldest.map(|v| (v, files as usize)))
    }

    /// Chunks the recorded files should have in the table.
    pub fn total_chunks(&self) -> Result<usize> {
        Ok(self
            .conn
            .query_row("SELECT coalesce(sum(chunks), 0) FROM files", [], |r| {
                r.get::<_, i64>(0)
            })? as usize)
    }

    pub fn clear_files(&self) -> Result<()> {
        self.conn.execute("DELETE FROM files", [])?;
        Ok(())
    }

    /// Cached vectors for the given keys (missing keys are absent).
    pub fn cached_vectors(&self, keys: &[String]) -> Result<HashMap<String, Vec<f32>>> {
        let mut stmt = self
            .cache
            .prepare_cached("SELECT vector FROM embeddings WHERE key = ?1")?;
        let mut found = HashMap::new();
        for key in keys {
            if found.contains_key(key) {
                continue;
            }
            let blob: Option<Vec<u8>> = stmt.query_row([key], |r| r.get(0)).optional()?;
            if let Some(blob) = blob {
                found.insert(key.clone(), blob_to_vector(&blob));
            }
        }
        Ok(found)
    }

    pub fn store_vectors(&mut self, entries: &[(String, Vec<f32>)]) -> Result<()> {
        let tx = self.cache.transaction()?;
        {
            let mut put = tx
                .prepare_cached("INSERT OR REPLACE INTO embeddings(key, vector) VALUES (?1, ?2)")?;
            for (key, v) in entries {
                let blob: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
                put.execute(params![key, blob])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    pub fn cached_vector_count(&self) -> Result<u64> {
        Ok(self
            .cache
            .query_row("SELECT count(*) FROM embeddings", [], |r| {
                r.get::<_, i64>(0)
            })? as u64)
    }

    /// The embedder the cached vectors (and so the index's) came from; for
    /// a cache from before this was recorded, the local default when it
    /// holds any vector.
    pub fn embedder(&self) -> Result<Option<super::embed::Identity>> {
        let recorded: Option<String> = self
            .cache
            .query_row("SELECT value FROM about WHERE key = 'embedder'", [], |r| {
                r.get(0)
            })
            .optional()?;
        // A reader of a shared index has the state without the cache.
        let recorded = match recorded {
            Some(json) => Some(json),
            None => self.meta(EMBEDDER_KEY)?,
        };
        match recorded {
            Some(json) => Ok(Some(serde_json::from_str(&json).with_context(|| {
                format!("the embedding cache names an unreadable embedder: {json}")
            })?)),
            None if self.cached_vector_count()? > 0 => Ok(Some(super::embed::Identity::local())),
            None => Ok(None),
        }
    }

    pub fn set_embedder(&self, identity: &super::embed::Identity) -> Result<()> {
        let json = serde_json::to_string(identity)?;
        self.cache.execute(
            "INSERT OR REPLACE INTO about(key, value) VALUES ('embedder', ?1)",
            [&json],
        )?;
        self.set_meta(EMBEDDER_KEY, &json)
    }

    /// Consistent copies of the state (and with `cache_to`, the embedding
    /// cache) as single files, whatever a write-ahead log holds: what a
    /// shared index publishes.
    pub fn snapshot(&self, state_to: &Path, cache_to: Option<&Path>) -> Result<()> {
        let copy = |conn: &Connection, to: &Path| -> Result<()> {
            remove_sqlite(to);
            conn.execute("VACUUM INTO ?1", [to.to_string_lossy()])
                .with_context(|| format!("cannot write {}", to.display()))?;
            Ok(())
        };
        copy(&self.conn, state_to)?;
        if let Some(to) = cache_to {
            copy(&self.cache, to)?;
        }
        Ok(())
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
            [key, value],
        )?;
        Ok(())
    }
}

fn blob_to_vector(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_vectors_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = State::open(&dir.path().join("s.sqlite")).unwrap();
        let f = FileState {
            hash: "h".into(),
            mtime_ns: 5,
            size: 10,
            chunks: 2,
            chunker: 1,
        };
        s.commit_files(&[("a.rs".into(), f.clone())], &[]).unwrap();
        assert_eq!(s.files().unwrap()["a.rs"], f);
        s.commit_files(&[], &["a.rs".into()]).unwrap();
        assert!(s.files().unwrap().is_empty());
        s.store_vectors(&[("k".into(), vec![1.0, -2.5])]).unwrap();
        let got = s.cached_vectors(&["k".into(), "missing".into()]).unwrap();
        assert_eq!(got["k"], vec![1.0, -2.5]);
        assert!(!got.contains_key("missing"));
    }

    #[test]
    fn a_garbage_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        assert!(State::open(&path).is_err());
    }
}
