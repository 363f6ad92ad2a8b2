//! Append-only JSONL logs under `logs/` in the workspace's state folder
//! (`agent_base::paths::state_dir`, outside the workspace):
//! - `audit.jsonl`: what the agent did (requests, intents, tool calls and
//!   their policy decisions, diffs, commands, final answers);
//! - `trace.jsonl`: each model request and response with token counts and
//!   timings.
//!
//! Both carry the request's `trace_id`, so one request can be followed across
//! the two. Each line is `{"ts", "trace_id", "session_id", "event", ...fields}`
//! and is flushed as written: a crash loses nothing already logged.
//!
//! Audit records also name the user, host, workspace and model (sha256,
//! when known), and are hash-chained ([`crate::audit`]); with a sink
//! ([`AuditConfig::sink_dir`]: the administrator's `audit_dir`, or
//! `AGENT_AUDIT_DIR`) each goes to `SINK/USER.jsonl` as well.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::Digest;

use crate::audit::{self, Chain};

/// Who and what the audit records name, and where else they go.
#[derive(Debug, Clone, Default)]
pub struct AuditConfig {
    /// Records also go to `DIR/USER.jsonl` (the head beside it).
    pub sink_dir: Option<PathBuf>,
    /// The sink is the administrator's: no session when it cannot be opened.
    pub sink_required: bool,
    pub user: String,
    pub host: String,
    pub model_sha256: Option<String>,
}

impl AuditConfig {
    /// User and host as the environment and the kernel name them (the
    /// binary passes the account's own name).
    pub fn from_env() -> Self {
        let user = ["USER", "LOGNAME"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .unwrap_or_else(|| "unknown".into());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        Self {
            user,
            host,
            ..Self::default()
        }
    }

    /// The sink file for this user: `DIR/USER.jsonl`.
    pub fn sink_file(&self) -> Option<PathBuf> {
        let safe: String = self
            .user
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Some(self.sink_dir.as_ref()?.join(format!("{safe}.jsonl")))
    }
}

/// Which file an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Audit,
    Trace,
}

pub struct EventLog {
    /// The workspace's own copy, then the sink.
    audit: Vec<Chain>,
    /// user, host, workspace, model_sha256: on every audit record.
    stamp: Map<String, Value>,
    trace: Option<File>,
    dir: PathBuf,
    pub trace_id: String,
    pub session_id: String,
    /// The subagent run (`explore-1`) whose events these are, named on
    /// each record as `parent`; None for the request's own.
    pub parent: Option<String>,
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
        let own = dir.join("audit.jsonl");
        let audit = std::fs::create_dir_all(&dir)
            .and_then(|_| Chain::open(&own, audit::own_head_path(&own)))
            .map_err(|e| tracing::warn!("cannot open {}: {e}", own.display()))
            .ok();
        Self {
            audit: audit.into_iter().collect(),
            stamp: Map::new(),
            trace: open("trace.jsonl"),
            dir,
            trace_id: new_trace_id(),
            session_id: session_id.to_string(),
            parent: None,
            redactor: Default::default(),
        }
    }

    /// Names the user, host, workspace and model on every audit record, and
    /// opens the sink. A required sink that cannot be opened is an error.
    pub fn attach(&mut self, config: &AuditConfig, workspace: &Path) -> anyhow::Result<()> {
        self.stamp.insert("user".into(), config.user.clone().into());
        self.stamp.insert("host".into(), config.host.clone().into());
        self.stamp
            .insert("workspace".into(), workspace.display().to_string().into());
        if let Some(sha) = &config.model_sha256 {
            self.stamp.insert("model_sha256".into(), sha.clone().into());
        }
        let Some(file) = config.sink_file() else {
            return Ok(());
        };
        match Chain::open(&file, audit::sink_head_path(&file)) {
            Ok(chain) => self.audit.push(chain),
            Err(e) if config.sink_required => anyhow::bail!(
                "Your administrator requires an audit trail in {}, and it cannot be written ({e}); the agent does not run without it",
                file.display()
            ),
            Err(e) => tracing::warn!("cannot open the audit sink {}: {e}", file.display()),
        }
        Ok(())
    }

    /// The audit files written: the workspace's own copy, then the sink.
    pub fn audit_files(&self) -> Vec<PathBuf> {
        self.audit.iter().map(|c| c.path().to_path_buf()).collect()
    }

    /// Writes nothing from now on (a run that records nothing).
    pub fn mute(&mut self) {
        self.audit.clear();
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
        if let Some(parent) = &self.parent {
            line.insert("parent".into(), parent.clone().into());
        }
        if stream == Stream::Audit {
            line.extend(self.stamp.clone());
        }
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        if stream == Stream::Audit {
            let redactor = &self.redactor;
            self.audit.retain_mut(|chain| {
                let written = chain.append(&line, &|text| redactor.redact(&text));
                if let Err(e) = &written {
                    tracing::warn!(
                        "audit write to {} failed ({e}); it stops for this run",
                        chain.path().display()
                    );
                }
                written.is_ok()
            });
            return;
        }
        if let Some(f) = &mut self.trace {
            let mut text = self.redactor.redact(&Value::Object(line).to_string());
            text.push('\n');
            if let Err(e) = f.write_all(text.as_bytes()) {
                tracing::warn!("log write failed ({e}); logging stops for this run");
                self.trace = None;
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
        let head: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
        assert_eq!(head["event"], crate::audit::HEAD_EVENT);
        let line: Value = serde_json::from_str(audit.lines().nth(1).unwrap()).unwrap();
        assert_eq!(line["event"], "intent");
        assert_eq!(line["seq"], 1);
        assert_eq!(line["session_id"], "s1");
        assert_eq!(line["trace_id"], log.trace_id.as_str());
        assert!(line["ts"].as_str().unwrap().contains('T'));
        let trace = std::fs::read_to_string(dir.path().join("logs/trace.jsonl")).unwrap();
        assert!(trace.contains("\"prompt_tokens\":12"));
    }

    #[test]
    fn a_subagents_records_name_their_parent() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::open(dir.path(), "s1");
        log.parent = Some("explore-1".into());
        log.audit("tool_call", json!({"tool": "read_file"}));
        log.parent = None;
        log.audit("tool_call", json!({"tool": "explore"}));
        let audit = std::fs::read_to_string(dir.path().join("logs/audit.jsonl")).unwrap();
        let lines: Vec<Value> = audit
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["parent"], "explore-1");
        assert!(lines[1].get("parent").is_none());
    }

    #[test]
    fn trace_ids_differ() {
        assert_ne!(new_trace_id(), new_trace_id());
    }
}
