//! The audit trail as a hash chain: an edit, a deletion, a reordering or a
//! cut tail shows.
//!
//! Each file starts with a head record (`"event": "audit_head"`, `seq` 0, a
//! random `file_id`, `prev` the sha256 of nothing); every record after it
//! carries `seq` (one more than the line before) and `prev`, the sha256 of
//! the previous line's bytes. A writer holds an exclusive lock on the file
//! (flock) from reading the last line to appending its own, so two
//! processes writing one file keep one chain. After each append the latest
//! `(file_id, seq, hash)` is written to a small head file kept apart from the
//! log (beside the administrator's sink, or in the user's state dir for the
//! workspace's own copy): what [`verify`] compares the tail with.
//!
//! What this detects: a changed, deleted, inserted or reordered record; a
//! cut tail (against the head file); a file started over (its head record
//! names the head it replaced). What it cannot: a writer who rewrites the
//! whole chain *and* the head file (anyone with write access to both, such
//! as the user for their own copy); only an append-only sink the user cannot
//! write (an administrator's `audit_dir`, `chattr +a`, a remote collector)
//! guards against that. No command the agent runs can write either file:
//! both lie outside the workspace, and the sandbox writes only there and in
//! a temp dir.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The first record's event.
pub const HEAD_EVENT: &str = "audit_head";

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The latest record of a file, kept apart from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Head {
    pub file: PathBuf,
    pub file_id: String,
    pub seq: u64,
    /// sha256 of the last line.
    pub hash: String,
}

/// Where the head of the workspace's own audit copy is kept: in the user's
/// state dir (no command writes there), named by the log's path.
pub fn own_head_path(log: &Path) -> PathBuf {
    let canonical = log
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.join(log.file_name().unwrap_or_default()))
        .unwrap_or_else(|| log.to_path_buf());
    let key = sha256_hex(canonical.as_os_str().as_encoded_bytes());
    match agent_base::paths::state_root() {
        Some(root) => root
            .join("audit-heads")
            .join(format!("{}.head", &key[..16])),
        None => log.with_extension("head"),
    }
}

/// The head beside a sink file: `USER.jsonl` → `USER.head`.
pub fn sink_head_path(log: &Path) -> PathBuf {
    log.with_extension("head")
}

/// One chained file, open for appending.
pub struct Chain {
    path: PathBuf,
    file: File,
    head_path: PathBuf,
    /// The id of the file's (last) head record, once known.
    file_id: Option<String>,
}

impl Chain {
    /// Opens (creating) `path` for appending (O_APPEND), readable by its
    /// owner only.
    pub fn open(path: &Path, head_path: PathBuf) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            head_path,
            file_id: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` (a JSON object) with its `seq` and `prev`, after a
    /// head record when the file is empty; `finish` turns the record into
    /// the line's text (redaction). Locked against other writers throughout.
    pub fn append(
        &mut self,
        record: &Map<String, Value>,
        finish: &dyn Fn(String) -> String,
    ) -> std::io::Result<()> {
        self.file.lock()?;
        let result = self.append_locked(record, finish);
        let _ = self.file.unlock();
        result
    }

    fn append_locked(
        &mut self,
        record: &Map<String, Value>,
        finish: &dyn Fn(String) -> String,
    ) -> std::io::Result<()> {
        let mut out = Vec::new();
        // The last chained line; none for an empty file, or one whose last
        // line predates the chain or is not a record (a new head follows it).
        let last = last_line(&self.path)?.and_then(|line| {
            let v: Value = serde_json::from_slice(&line).ok()?;
            v.get("prev")?;
            Some((v["seq"].as_u64()?, line))
        });
        let (prev, seq) = match last {
            Some((seq, line)) => (sha256_hex(&line), seq + 1),
            None => {
                let id = random_id();
                let head = self.head_record(record, &id);
                let line = finish(Value::Object(head).to_string());
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
                self.file_id = Some(id);
                (sha256_hex(line.as_bytes()), 1)
            }
        };
        let file_id = match &self.file_id {
            Some(id) => id.clone(),
            None => self.file_id.insert(file_id_of(&self.path)).clone(),
        };
        let mut full = Map::new();
        full.insert("seq".into(), seq.into());
        full.insert("prev".into(), prev.into());
        full.extend(record.clone());
        let line = finish(Value::Object(full).to_string());
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        let hash = sha256_hex(line.as_bytes());
        // One write: with O_APPEND it lands whole at the end.
        self.file.write_all(&out)?;
        let head = Head {
            file: self.path.clone(),
            file_id,
            seq,
            hash,
        };
        let text = serde_json::to_string(&head)? + "\n";
        if let Some(dir) = self.head_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        agent_base::files::atomic_write(&self.head_path, text.as_bytes(), Some(0o600))
    }

    /// The head record: the record's identifying fields (time, user, ...),
    /// the file id, where the head is kept, and the head it replaces (a
    /// file started over shows as such).
    fn head_record(&self, record: &Map<String, Value>, file_id: &str) -> Map<String, Value> {
        let mut head = Map::new();
        head.insert("seq".into(), 0.into());
        head.insert("prev".into(), sha256_hex(b"").into());
        for key in ["ts", "trace_id", "session_id"] {
            if let Some(v) = record.get(key) {
                head.insert(key.into(), v.clone());
            }
        }
        head.insert("event".into(), HEAD_EVENT.into());
        for key in ["user", "host", "workspace"] {
            if let Some(v) = record.get(key) {
                head.insert(key.into(), v.clone());
            }
        }
        head.insert("file_id".into(), file_id.into());
        head.insert(
            "head_file".into(),
            self.head_path.display().to_string().into(),
        );
        if let Some(old) = read_head(&self.head_path) {
            head.insert(
                "replaces".into(),
                serde_json::to_value(old).unwrap_or_default(),
            );
        }
        head
    }
}

/// The file id of the last head record of a chain (read once per process).
fn file_id_of(path: &Path) -> String {
    use std::io::BufRead;
    let Ok(file) = File::open(path) else {
        return String::new();
    };
    let mut id = String::new();
    for line in std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
    {
        if line
            .windows(HEAD_EVENT.len())
            .any(|w| w == HEAD_EVENT.as_bytes())
        {
            let v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
            if v["event"] == HEAD_EVENT {
                id = v["file_id"].as_str().unwrap_or_default().to_string();
            }
        }
    }
    id
}

pub fn read_head(path: &Path) -> Option<Head> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// 16 random bytes from the kernel, in hex; the time as a fallback.
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_err()
    {
        return sha256_hex(format!("{:?}", std::time::SystemTime::now()).as_bytes())[..32]
            .to_string();
    }
    hex::encode(bytes)
}

/// The last complete line of a file (without its newline), read from the end.
fn last_line(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut end = len;
    let mut tail: Vec<u8> = Vec::new();
    const CHUNK: u64 = 8192;
    loop {
        // Skip the final newline, then look for the one before it.
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail[..]);
        if let Some(i) = body.iter().rposition(|&c| c == b'\n') {
            return Ok(Some(body[i + 1..].to_vec()));
        }
        if end == 0 {
            return Ok((!body.is_empty()).then(|| body.to_vec()));
        }
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        end = start;
    }
}

/// The first record that breaks a chain.
#[derive(Debug, Clone, Serialize)]
pub struct Broken {
    /// 1-based line number in the file.
    pub line: usize,
    pub why: String,
}

/// What [`verify`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub file: PathBuf,
    pub ok: bool,
    /// Lines in the file, the head record included.
    pub records: usize,
    /// Lines before the head record, written before audit files were
    /// chained: not checked.
    pub unchained: usize,
    pub file_id: Option<String>,
    pub broken: Option<Broken>,
    /// The head file compared with the tail, if one was found.
    pub head_file: Option<PathBuf>,
    /// Whether the tail could be checked (a head file was found).
    pub tail_checked: bool,
    pub notes: Vec<String>,
}

/// Checks `file`'s chain, and its tail against the head file (`head`, else
/// the one its head record names).
pub fn verify(file: &Path, head: Option<&Path>) -> anyhow::Result<Report> {
    let bytes =
        std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let mut report = Report {
        file: file.to_path_buf(),
        ok: true,
        records: 0,
        unchained: 0,
        file_id: None,
        broken: None,
        head_file: head.map(Path::to_path_buf),
        tail_checked: false,
        notes: Vec::new(),
    };
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes[..]);
    let lines: Vec<&[u8]> = if body.is_empty() {
        Vec::new()
    } else {
        body.split(|&c| c == b'\n').collect()
    };
    report.records = lines.len();
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        report
            .notes
            .push("the last line is incomplete (a write cut short)".into());
    }
    if let Some(b) = check_chain(&lines, &mut report) {
        report.ok = false;
        report.broken = Some(b);
        return Ok(report);
    }
    check_tail(&lines, &mut report);
    Ok(report)
}

/// Where the chain starts: the first head record, after lines written
/// before audit files were chained (they have no `prev`). A chained line
/// before it means the head was removed.
fn chain_start(lines: &[&[u8]]) -> Result<usize, Broken> {
    for (i, line) in lines.iter().enumerate() {
        let record: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
        if record["event"] == HEAD_EVENT && record["seq"] == 0 && record["prev"] == sha256_hex(b"")
        {
            return Ok(i);
        }
        if record.get("prev").is_some() || record.is_null() {
            break;
        }
    }
    Err(Broken {
        line: 1,
        why: "the file has no head record where its chain starts: the start of the file was removed or changed".into(),
    })
}

/// The first broken record of `lines`, if any; fills in the file id and head file.
fn check_chain(lines: &[&[u8]], report: &mut Report) -> Option<Broken> {
    let broken = |line: usize, why: String| Some(Broken { line, why });
    let start = match chain_start(lines) {
        Ok(i) => i,
        Err(b) => return Some(b),
    };
    report.unchained = start;
    if start > 0 {
        report.notes.push(format!(
            "lines 1-{start} were written before audit files were chained: not checked"
        ));
    }
    let head: Value = serde_json::from_slice(lines[start]).unwrap_or(Value::Null);
    report.file_id = head["file_id"].as_str().map(String::from);
    if report.head_file.is_none() {
        report.head_file = head["head_file"].as_str().map(PathBuf::from);
    }
    if let Some(old) = head.get("replaces").filter(|v| !v.is_null()) {
        report.notes.push(format!(
            "this file started over; the one before it (file id {}) ended at seq {}",
            old["file_id"].as_str().unwrap_or("?"),
            old["seq"]
        ));
    }
    for (i, pair) in lines[start..].windows(2).enumerate() {
        let (before, line) = (pair[0], pair[1]);
        let (n, want) = (start + i + 2, i as u64 + 1);
        let Ok(record) = serde_json::from_slice::<Value>(line) else {
            return broken(n, format!("line {n} is not a JSON record (edited or cut)"));
        };
        let seq = record["seq"].as_u64();
        if seq != Some(want) {
            return broken(
                n,
                format!(
                    "line {n} has seq {}, not {want}: records before it were deleted, inserted or reordered",
                    seq.map_or("none".into(), |s| s.to_string()),
                ),
            );
        }
        if record["prev"] != sha256_hex(before) {
            return broken(
                n - 1,
                format!(
                    "line {} (seq {}) was changed: it no longer hashes to the prev of line {n}",
                    n - 1,
                    want - 1
                ),
            );
        }
    }
    None
}

/// Compares the last line with the head kept apart from the file.
fn check_tail(lines: &[&[u8]], report: &mut Report) {
    let Some(path) = report.head_file.clone() else {
        report
            .notes
            .push("no head file named: a cut tail cannot be detected".into());
        return;
    };
    let Some(head) = read_head(&path) else {
        report.notes.push(format!(
            "no head at {} (another user's, or removed): a cut tail cannot be detected",
            path.display()
        ));
        return;
    };
    report.tail_checked = true;
    let last = lines.len();
    // The seq of the last line.
    let last_seq = (last - report.unchained - 1) as u64;
    let why = if Some(&head.file_id) != report.file_id.as_ref() {
        Some((
            report.unchained + 1,
            format!(
                "the head at {} belongs to another file (id {}): this file was replaced",
                path.display(),
                head.file_id
            ),
        ))
    } else if head.seq > last_seq {
        Some((
            last + 1,
            format!(
                "the file ends at line {last} (seq {last_seq}), but its head at {} says seq {}: the records after line {last} were removed",
                path.display(),
                head.seq
            ),
        ))
    } else if head.seq == last_seq && sha256_hex(lines[last - 1]) != head.hash {
        Some((
            last,
            format!(
                "line {last} (seq {last_seq}, the last) was changed: it does not match its head at {}",
                path.display()
            ),
        ))
    } else {
        if head.seq < last_seq {
            // Appended by a writer that did not update the head (or after a copy).
            report.notes.push(format!(
                "{} records after the head's seq {} are not covered by it",
                last_seq - head.seq,
                head.seq
            ));
        }
        None
    };
    if let Some((line, why)) = why {
        report.ok = false;
        report.broken = Some(Broken { line, why });
    }
}

/// Records of `file` at or after `since` (the head record included), as
/// parsed JSON; lines that do not parse are skipped (verify names them).
pub fn export(
    file: &Path,
    since: chrono::DateTime<chrono::FixedOffset>,
) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| {
            r["ts"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| t >= since)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(n: u64) -> Map<String, Value> {
        let Value::Object(map) =
            json!({"ts": "2026-11-27T10:00:00.000Z", "event": "tool_call", "n": n, "user": "u"})
        else {
            unreachable!()
        };
        map
    }

    fn chain(dir: &Path, n: u64) -> (PathBuf, PathBuf) {
        let log = dir.join("audit.jsonl");
        let head = dir.join("audit.head");
        let mut c = Chain::open(&log, head.clone()).unwrap();
        for i in 0..n {
            c.append(&record(i), &|s| s).unwrap();
        }
        (log, head)
    }

    fn lines(log: &Path) -> Vec<String> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    fn write(log: &Path, lines: &[String]) {
        std::fs::write(log, lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn an_intact_chain_verifies_with_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = chain(dir.path(), 5);
        let r = verify(&log, None).unwrap();
        assert!(r.ok && r.tail_checked, "{r:?}");
        assert_eq!(r.records, 6);
        let all = lines(&log);
        let head: Value = serde_json::from_str(&all[0]).unwrap();
        assert_eq!(head["event"], HEAD_EVENT);
        assert_eq!(head["user"], "u");
    }

    #[test]
    fn an_edit_a_deletion_a_reorder_and_a_cut_tail_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = chain(dir.path(), 5);
        let all = lines(&log);
        let broken = |lines: &[String]| {
            write(&log, lines);
            let r = verify(&log, None).unwrap();
            assert!(!r.ok);
            r.broken.unwrap()
        };
        let mut edited = all.clone();
        edited[2] = edited[2].replace("\"n\":1", "\"n\":7");
        assert_eq!(broken(&edited).line, 3);
        let mut deleted = all.clone();
        deleted.remove(3);
        let b = broken(&deleted);
        assert_eq!(b.line, 4, "{b:?}");
        let mut swapped = all.clone();
        swapped.swap(2, 3);
        assert_eq!(broken(&swapped).line, 3);
        let b = broken(&all[..4]);
        assert!(b.why.contains("were removed"), "{b:?}");
        let mut last = all.clone();
        *last.last_mut().unwrap() = last.last().unwrap().replace("\"n\":4", "\"n\":9");
        assert_eq!(broken(&last).line, 6);
    }

    #[test]
    fn lines_from_before_the_chain_are_left_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        std::fs::write(&log, "{\"event\":\"request\"}\n{\"event\":\"final\"}\n").unwrap();
        let mut c = Chain::open(&log, dir.path().join("audit.head")).unwrap();
        c.append(&record(0), &|s| s).unwrap();
        c.append(&record(1), &|s| s).unwrap();
        let r = verify(&log, None).unwrap();
        assert!(r.ok && r.tail_checked, "{r:?}");
        assert_eq!((r.unchained, r.records), (2, 5));
        // A chained line before the head is no legacy line: the head was moved.
        let mut all = lines(&log);
        all.swap(1, 2);
        write(&log, &all);
        assert!(!verify(&log, None).unwrap().ok);
    }

    #[test]
    fn two_writers_keep_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let head = dir.path().join("audit.head");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (log, head) = (log.clone(), head.clone());
                std::thread::spawn(move || {
                    let mut c = Chain::open(&log, head).unwrap();
                    for i in 0..25 {
                        c.append(&record(i), &|s| s).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let r = verify(&log, None).unwrap();
        assert!(r.ok && r.tail_checked, "{r:?}");
        assert_eq!(r.records, 101);
    }
}
