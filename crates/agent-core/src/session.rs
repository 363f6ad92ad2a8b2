//! Sessions and their messages in SQLite (`.agent/sessions.sqlite`).
//!
//! Every message is written as soon as it exists, so a crash or Ctrl-C loses
//! at most the step in flight, and `agent chat --resume` continues where the
//! conversation stopped.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use super::context::{Kind, Turn};

pub struct SessionStore {
    db: Connection,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub created: String,
    pub updated: String,
    pub title: String,
    pub model: String,
    pub messages: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct StoredMessage {
    pub seq: i64,
    pub kind: &'static str,
    pub role: String,
    pub content: String,
    pub ts: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    title TEXT NOT NULL,
    model TEXT NOT NULL,
    workspace TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    ts TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);";

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::System => "system",
        Kind::Request => "request",
        Kind::Call => "call",
        Kind::Observation => "observation",
    }
}

fn kind_from(name: &str) -> Option<Kind> {
    Some(match name {
        "system" => Kind::System,
        "request" => Kind::Request,
        "call" => Kind::Call,
        "observation" => Kind::Observation,
        _ => return None,
    })
}

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl SessionStore {
    /// Opens (creating) the store in `state_dir`. A file that is not a
    /// database is moved aside (`.corrupt`) and a fresh one started: sessions
    /// are history, not a reason to refuse work.
    pub fn open(state_dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("cannot create {}", state_dir.display()))?;
        let path = state_dir.join("sessions.sqlite");
        let db = match Self::open_at(&path) {
            Ok(db) => db,
            Err(e) => {
                let aside = path.with_extension("sqlite.corrupt");
                tracing::warn!(
                    "session store {} unusable ({e:#}); moved to {}",
                    path.display(),
                    aside.display()
                );
                std::fs::rename(&path, &aside)
                    .with_context(|| format!("cannot move {} aside", path.display()))?;
                Self::open_at(&path)?
            }
        };
        Ok(Self { db })
    }

    fn open_at(path: &Path) -> Result<Connection> {
        let db = Connection::open(path)?;
        db.busy_timeout(std::time::Duration::from_secs(5))?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.execute_batch(SCHEMA)?;
        Ok(db)
    }

    /// Starts a session; its id sorts by time (`YYYYMMDD-HHMMSS-xxxx`).
    pub fn create(&self, title: &str, model: &str, workspace: &Path) -> Result<String> {
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        let nonce = &crate::log::new_trace_id()[..4];
        let id = format!("{stamp}-{nonce}");
        let ts = now();
        let title: String = title.chars().take(80).collect();
        self.db.execute(
            "INSERT INTO sessions (id, created, updated, title, model, workspace) VALUES (?1, ?2, ?2, ?3, ?4, ?5)",
            params![id, ts, title, model, workspace.display().to_string()],
        )?;
        Ok(id)
    }

    pub fn append(&self, session: &str, turn: &Turn) -> Result<()> {
        let ts = now();
        self.db.execute(
            "INSERT INTO messages (session_id, seq, kind, content, ts)
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?1), ?2, ?3, ?4)",
            params![session, kind_name(turn.kind), turn.message.content, ts],
        )?;
        self.db.execute(
            "UPDATE sessions SET updated = ?2 WHERE id = ?1",
            params![session, ts],
        )?;
        Ok(())
    }

    /// The session's turns in order, for resuming.
    pub fn turns(&self, session: &str) -> Result<Vec<Turn>> {
        Ok(self
            .messages(session)?
            .into_iter()
            .filter_map(|m| kind_from(m.kind).map(|k| Turn::new(k, m.content)))
            .collect())
    }

    pub fn messages(&self, session: &str) -> Result<Vec<StoredMessage>> {
        let mut stmt = self.db.prepare(
            "SELECT seq, kind, content, ts FROM messages WHERE session_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![session], |r| {
            let kind: String = r.get(1)?;
            Ok((r.get(0)?, kind, r.get(2)?, r.get(3)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, kind, content, ts): (i64, String, String, String) = row?;
            let kind = kind_from(&kind).unwrap_or(Kind::Observation);
            out.push(StoredMessage {
                seq,
                kind: kind_name(kind),
                role: Turn::new(kind, "").message.role.as_str().to_string(),
                content,
                ts,
            });
        }
        Ok(out)
    }

    /// Sessions, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<SessionInfo>> {
        let mut stmt = self.db.prepare(
            "SELECT s.id, s.created, s.updated, s.title, s.model,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
             FROM sessions s ORDER BY s.updated DESC, s.id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map(params![limit as i64], |r| {
            Ok(SessionInfo {
                id: r.get(0)?,
                created: r.get(1)?,
                updated: r.get(2)?,
                title: r.get(3)?,
                model: r.get(4)?,
                messages: r.get::<_, i64>(5)? as usize,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn get(&self, id: &str) -> Result<Option<SessionInfo>> {
        Ok(self.list(usize::MAX >> 1)?.into_iter().find(|s| s.id == id))
    }

    /// The most recently updated session, if any.
    pub fn latest(&self) -> Result<Option<String>> {
        Ok(self
            .db
            .query_row(
                "SELECT id FROM sessions ORDER BY updated DESC, id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_round_trip_and_list_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let a = store.create("first", "m", dir.path()).unwrap();
        store.append(&a, &Turn::new(Kind::System, "sys")).unwrap();
        store.append(&a, &Turn::new(Kind::Request, "hi")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = store.create("second", "m", dir.path()).unwrap();
        store.append(&b, &Turn::new(Kind::Request, "yo")).unwrap();

        let reopened = SessionStore::open(dir.path()).unwrap();
        let turns = reopened.turns(&a).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[1].kind, Kind::Request);
        assert_eq!(turns[1].message.content, "hi");
        let list = reopened.list(10).unwrap();
        assert_eq!(list[0].id, b);
        assert_eq!(list[1].messages, 2);
        assert_eq!(reopened.latest().unwrap().as_deref(), Some(b.as_str()));
    }

    #[test]
    fn a_corrupt_store_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sessions.sqlite"), b"not a database at all").unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        assert!(store.list(10).unwrap().is_empty());
        assert!(dir.path().join("sessions.sqlite.corrupt").exists());
    }
}
