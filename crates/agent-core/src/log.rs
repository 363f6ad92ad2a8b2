//! Append-only JSONL logs under `.agent/logs/`:
//! - `audit.jsonl`: what the agent did (requests, intents, tool calls and
//!   their policy decisions, diffs, commands, final answers);
//! - `trace.jsonl`: each model request and response with token counts and
//!   timings.
//!
//! Both carry the request's `trace_id`, so one request can be followed across
//! the two. Each line is `{"ts", "trace_id", "session_id", "event", ...fields}`
//! and is flushed as written: a crash loses nothing already logged.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::Digest;

/// Which file an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Audit,
    Trace,
}

pub struct EventLog {
    audit: Option<File>,
    trace: Option<File>,
    dir: PathBuf,
    pub trace_id: String,
    pub session_id: String,
    /// Secret values never reach the logs, in any form the redactor knows.
    pub redactor: agent_policy::secrets::Redactor,
}

/// A fresh random-enough id (time and process entropy through sha256); not
/// for security, only to tell requests apart.
pub fn new_trace_id() -> String {
    let seed = format!(
        "{:?}{}{:?}",
        std::time::SystemTime::now(),
        std::process::id(),
        std::thread::current().id()
    );
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    hex::encode(&sha2::Sha256::digest(format!("{seed}{n}"))[..8])
}

impl EventLog {
    /// Opens the logs in `state_dir/logs`. A log that cannot be opened (read-
    /// only disk, full disk) is reported once and skipped: losing the log must
    /// not stop the user's work.
    pub fn open(state_dir: &Path, session_id: &str) -> Self {
        let dir = state_dir.join("logs");
        let open = |name: &str| {
            std::fs::create_dir_all(&dir)
                .and_then(|_| {
                    OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(dir.join(name))
                })
                .map_err(|e| tracing::warn!("cannot open {}/{name}: {e}", dir.display()))
                .ok()
        };
        Self {
            audit: open("audit.jsonl"),
            trace: open("trace.jsonl"),
            dir,
            trace_id: new_trace_id(),
            session_id: session_id.to_string(),
            redactor: Default::default(),
        }
    }

    /// Writes nothing from now on (a run that records nothing).
    pub fn mute(&mut self) {
        self.audit = None;
        self.trace = None;
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts a new request: a new trace id.
    pub fn new_trace(&mut self) {
        self.trace_id = new_trace_id();
    }

    /// Writes one event; `fields` must be a JSON object.
    pub fn event(&mut self, stream: Stream, event: &str, fields: Value) {
        let mut line = Map::new();
        line.insert(
            "ts".into(),
            chrono::Local::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                .into(),
        );
        line.insert("trace_id".into(), self.trace_id.clone().into());
        line.insert("session_id".into(), self.session_id.clone().into());
        line.insert("event".into(), event.into());
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let file = match stream {
            Stream::Audit => &mut self.audit,
            Stream::Trace => &mut self.trace,
        };
        if let Some(f) = file {
            let mut text = self.redactor.redact(&Value::Object(line).to_string());
            text.push('\n');
            if let Err(e) = f.write_all(text.as_bytes()) {
                tracing::warn!("log write failed ({e}); logging stops for this run");
                *file = None;
            }
        }
    }

    pub fn audit(&mut self, event: &str, fields: Value) {
        self.event(Stream::Audit, event, fields);
    }

    pub fn trace(&mut self, event: &str, fields: Value) {
        self.event(Stream::Trace, event, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_json_lines_with_the_shared_fields() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(dir.path(), "s1");
        log.audit(
            "intent",
            json!({"label": "REPO_QUESTION", "confidence": 0.9}),
        );
        log.trace("llm_request", json!({"prompt_tokens": 12}));
        let audit = std::fs::read_to_string(dir.path().join("logs/audit.jsonl")).unwrap();
        let line: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
        assert_eq!(line["event"], "intent");
        assert_eq!(line["session_id"], "s1");
        assert_eq!(line["trace_id"], log.trace_id.as_str());
        assert!(line["ts"].as_str().unwrap().contains('T'));
        let trace = std::fs::read_to_string(dir.path().join("logs/trace.jsonl")).unwrap();
        assert!(trace.contains("\"prompt_tokens\":12"));
    }

    #[test]
    fn trace_ids_differ() {
        assert_ne!(new_trace_id(), new_trace_id());
    }
}
