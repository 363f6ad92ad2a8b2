//! Sessions and their messages in SQLite (`sessions.sqlite` in the workspace's state folder,
//! `agent_base::paths::state_dir`).
//!
//! Every message is written as soon as it exists, so a crash or Ctrl-C loses
//! at most the step in flight, and `agent chat --resume` continues where the
//! conversation stopped.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::turn::{Kind, Turn};

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
    /// For a summary: how many of the turns before it stay after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<usize>,
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

/// Added after the first release: how many turns before a summary stay
/// after it (see [`SessionStore::append_summary`]).
const KEPT_COLUMN: &str = "ALTER TABLE messages ADD COLUMN kept INTEGER";

/// The kind of the message that records a `/rewind` (not a turn: the
/// model never reads it).
pub const REWIND: &str = "rewind";

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::System => "system",
        Kind::Request => "request",
        Kind::Call => "call",
        Kind::Observation => "observation",
        Kind::Summary => "summary",
    }
}

fn kind_from(name: &str) -> Option<Kind> {
    Some(match name {
        "system" => Kind::System,
        "request" => Kind::Request,
        "call" => Kind::Call,
        "observation" => Kind::Observation,
        "summary" => Kind::Summary,
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
        let has_kept = db
            .prepare("SELECT 1 FROM pragma_table_info('messages') WHERE name = 'kept'")?
            .exists([])?;
        if !has_kept {
            db.execute_batch(KEPT_COLUMN)?;
        }
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

    /// Stores a turn; returns its number in the session (`seq`).
    pub fn append(&self, session: &str, turn: &Turn) -> Result<i64> {
        self.insert(session, kind_name(turn.kind), &turn.message.content)
    }

    fn insert(&self, session: &str, kind: &str, content: &str) -> Result<i64> {
        let ts = now();
        let seq = self.db.query_row(
            "INSERT INTO messages (session_id, seq, kind, content, ts)
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?1), ?2, ?3, ?4)
             RETURNING seq",
            params![session, kind, content, ts],
            |r| r.get(0),
        )?;
        self.db.execute(
            "UPDATE sessions SET updated = ?2 WHERE id = ?1",
            params![session, ts],
        )?;
        Ok(seq)
    }

    /// Records a `/rewind`: the conversation goes on from its first `kept`
    /// turns. The turns cut stay in the log (`agent sessions show`), marked
    /// by `note`; [`SessionStore::turns`] no longer returns them.
    pub fn append_rewind(&self, session: &str, note: &str, kept: usize) -> Result<()> {
        let seq = self.insert(session, REWIND, note)?;
        self.db.execute(
            "UPDATE messages SET kept = ?3 WHERE session_id = ?1 AND seq = ?2",
            params![session, seq, kept as i64],
        )?;
        Ok(())
    }

    /// Records a compaction: `summary` replaces every turn after the system
    /// prompt but the last `kept`, which follow it. The replaced turns stay in
    /// the log (`agent sessions show`); [`SessionStore::turns`] no longer
    /// returns them.
    pub fn append_summary(&self, session: &str, summary: &Turn, kept: usize) -> Result<()> {
        self.append(session, summary)?;
        self.db.execute(
            "UPDATE messages SET kept = ?2 WHERE session_id = ?1
             AND seq = (SELECT MAX(seq) FROM messages WHERE session_id = ?1)",
            params![session, kept as i64],
        )?;
        Ok(())
    }

    /// The session's turns as the model sees them, for resuming: every
    /// message in order, each summary replacing what it summarized.
    pub fn turns(&self, session: &str) -> Result<Vec<Turn>> {
        let mut turns: Vec<Turn> = Vec::new();
        for m in self.messages(session)? {
            if m.kind == REWIND {
                turns.truncate(m.kept.unwrap_or(usize::MAX));
                continue;
            }
            let Some(kind) = kind_from(m.kind) else {
                continue;
            };
            let mut turn = Turn::new(kind, m.content);
            turn.seq = Some(m.seq);
            if let (Kind::Summary, Some(kept)) = (kind, m.kept) {
                let system = usize::from(turns.first().is_some_and(|t| t.kind == Kind::System));
                let from = turns.len().saturating_sub(kept).max(system);
                let kept_turns = turns.split_off(from);
                turns.truncate(system);
                turns.push(turn);
                turns.extend(kept_turns);
            } else {
                turns.push(turn);
            }
        }
        Ok(turns)
    }

    pub fn messages(&self, session: &str) -> Result<Vec<StoredMessage>> {
        let mut stmt = self.db.prepare(
            "SELECT seq, kind, content, ts, kept FROM messages WHERE session_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![session], |r| {
            let kind: String = r.get(1)?;
            Ok((r.get(0)?, kind, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, kind, content, ts, kept): (i64, String, String, String, Option<i64>) = row?;
            let (kind, role) = match kind_from(&kind) {
                Some(kind) => (kind_name(kind), Turn::new(kind, "").message.role),
                // The user's, as the request it cut back to.
                None if kind == REWIND => (REWIND, agent_chat::Role::User),
                None => (kind_name(Kind::Observation), agent_chat::Role::User),
            };
            out.push(StoredMessage {
                seq,
                kind,
                role: role.as_str().to_string(),
                content,
                ts,
                kept: kept.map(|k| k as usize),
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
    fn a_rewind_cuts_the_turns_after_its_kept_ones_and_stays_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let s = store.create("r", "m", dir.path()).unwrap();
        let mut seqs = Vec::new();
        for (kind, text) in [
            (Kind::System, "sys"),
            (Kind::Request, "r1"),
            (Kind::Call, "c1"),
            (Kind::Request, "r2"),
            (Kind::Call, "c2"),
        ] {
            seqs.push(store.append(&s, &Turn::new(kind, text)).unwrap());
        }
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        store.append_rewind(&s, "(rewound)", 3).unwrap();
        store.append(&s, &Turn::new(Kind::Request, "r2b")).unwrap();
        let turns = store.turns(&s).unwrap();
        let texts: Vec<&str> = turns.iter().map(|t| t.message.content.as_str()).collect();
        assert_eq!(texts, ["sys", "r1", "c1", "r2b"]);
        assert_eq!(turns[3].seq, Some(7));
        let kinds: Vec<&str> = store.messages(&s).unwrap().iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            ["system", "request", "call", "request", "call", "rewind", "request"]
        );
    }

    #[test]
    fn a_summary_replaces_the_turns_before_its_kept_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let s = store.create("long", "m", dir.path()).unwrap();
        for (kind, text) in [
            (Kind::System, "sys"),
            (Kind::Request, "r1"),
            (Kind::Call, "c1"),
            (Kind::Observation, "o1"),
            (Kind::Call, "c2"),
            (Kind::Observation, "o2"),
        ] {
            store.append(&s, &Turn::new(kind, text)).unwrap();
        }
        store
            .append_summary(&s, &Turn::new(Kind::Summary, "sum"), 2)
            .unwrap();
        store.append(&s, &Turn::new(Kind::Call, "c3")).unwrap();
        let texts = |turns: Vec<Turn>| -> Vec<String> {
            turns.into_iter().map(|t| t.message.content).collect()
        };
        assert_eq!(
            texts(store.turns(&s).unwrap()),
            ["sys", "sum", "c2", "o2", "c3"]
        );
        // A second summary folds in the first.
        store
            .append_summary(&s, &Turn::new(Kind::Summary, "sum2"), 1)
            .unwrap();
        assert_eq!(texts(store.turns(&s).unwrap()), ["sys", "sum2", "c3"]);
        // The log keeps everything.
        let all = store.messages(&s).unwrap();
        assert_eq!(all.len(), 9);
        assert_eq!(all[6].kind, "summary");
        assert_eq!(all[6].kept, Some(2));
    }

    #[test]
    fn a_store_from_before_summaries_gains_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let db = Connection::open(dir.path().join("sessions.sqlite")).unwrap();
        db.execute_batch(SCHEMA).unwrap();
        drop(db);
        let store = SessionStore::open(dir.path()).unwrap();
        let s = store.create("t", "m", dir.path()).unwrap();
        store
            .append_summary(&s, &Turn::new(Kind::Summary, "x"), 0)
            .unwrap();
        assert!(!dir.path().join("sessions.sqlite.corrupt").exists());
        assert_eq!(store.messages(&s).unwrap()[0].kept, Some(0));
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
