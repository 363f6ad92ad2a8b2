//! Background commands: `run_cmd` with `background: true` returns a job id
//! at once, `command_output` reads what the job printed, `command_stop`
//! ends it. A dev server or a test watcher runs while the agent works.
//!
//! A job is started as every command is (`run_cmd`'s policy check,
//! approval, sandbox, limits and copy-on-write layer; nothing is widened),
//! on a thread of its own that forks it and waits for it: the sandbox's
//! death signal follows that thread, so when the agent dies, even by
//! `kill -9`, the job's PID namespace dies with it. When the session ends
//! ([`Jobs`] dropped) every job is stopped, and what any of them left
//! running is ended by its run id, as for a foreground command.
//!
//! Its output (stdout and stderr together) goes to a file in the state
//! folder (`jobs/PID-N.log`), bounded: past [`LOG_CAP`] bytes the oldest
//! half is dropped, and offsets keep counting every byte ever printed.
//! Its file changes stay in its layer until it has ended: they are admitted
//! (diff, checkpoint, undo) by the `command_output` that first reports the
//! end, or by `command_stop`; a job still running when the session ends is
//! stopped and its layer thrown away.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::args::Args;
use super::shell::{self, After, Prepared};
use super::{Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};
use agent_protocol::{Job as JobInfo, JobState};

/// Jobs running at once, at most.
pub const MAX_RUNNING: usize = 4;
/// Bytes of a job's output kept in its file; past it the oldest half goes.
pub const LOG_CAP: u64 = 256 * 1024;
/// Bytes one `command_output` returns, at most.
const READ_MAX: usize = 8 * 1024;
/// Ended jobs kept in the table (with their output) before the oldest goes.
const KEPT_ENDED: usize = 16;

/// The session's background commands. Dropping it stops them all.
#[derive(Default)]
pub struct Jobs {
    table: Mutex<Vec<Arc<Job>>>,
    next: AtomicU64,
}

/// One background command.
struct Job {
    id: String,
    command: String,
    inner: Mutex<Inner>,
    stop: AtomicBool,
    /// The thread that forked the command and waits for it.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Its layer (or guards), until its changes are admitted.
    after: Mutex<Option<After>>,
}

struct Inner {
    log: Log,
    /// None while it runs.
    end: Option<End>,
    /// Where the last `command_output` stopped reading.
    cursor: u64,
}

#[derive(Debug, Clone, Copy)]
struct End {
    state: JobState,
    timed_out: bool,
    /// Processes it left running that were ended with it.
    leftovers: usize,
}

/// A job's output in a file of its own, bounded: bytes `base..total` of
/// everything it printed are in the file.
struct Log {
    path: PathBuf,
    file: File,
    base: u64,
    total: u64,
}

impl Log {
    fn create(path: PathBuf) -> std::io::Result<Log> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        Ok(Log {
            path,
            file,
            base: 0,
            total: 0,
        })
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.file.seek(SeekFrom::End(0)).is_err() || self.file.write_all(bytes).is_err() {
            return; // a full disk costs output, never the job
        }
        self.total += bytes.len() as u64;
        if self.total - self.base > LOG_CAP {
            self.trim();
        }
    }

    /// Keeps the newest half of the cap.
    fn trim(&mut self) {
        let keep = LOG_CAP / 2;
        let mut tail = Vec::with_capacity(keep as usize);
        let from = (self.total - self.base).saturating_sub(keep);
        let read = self.file.seek(SeekFrom::Start(from)).is_ok()
            && (&self.file).take(keep).read_to_end(&mut tail).is_ok();
        if !read {
            return;
        }
        if self.file.set_len(0).is_ok() && self.file.rewind().is_ok() {
            let _ = self.file.write_all(&tail);
            self.base = self.total - tail.len() as u64;
        }
    }

    /// Up to `max` bytes from offset `since` (or from the oldest kept), cut
    /// at a character's end; and the offset they start at.
    fn read(&mut self, since: u64, max: usize) -> (Vec<u8>, u64) {
        let from = since.clamp(self.base, self.total);
        let mut out = Vec::new();
        if self.file.seek(SeekFrom::Start(from - self.base)).is_ok() {
            let _ = (&self.file).take(max as u64).read_to_end(&mut out);
        }
        if out.len() == max {
            if let Err(e) = std::str::from_utf8(&out) {
                if e.error_len().is_none() {
                    out.truncate(e.valid_up_to().max(1));
                }
            }
        }
        (out, from)
    }
}

impl Job {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn info(&self) -> JobInfo {
        let inner = self.inner();
        JobInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            state: inner.end.map_or(JobState::Running, |e| e.state),
            output_bytes: inner.log.total,
        }
    }

    /// Asks the job to stop and waits until it has.
    fn stop_and_wait(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

/// Where a job's output goes: `STATE/jobs/PID-N.log`. The files of agents
/// that are gone are removed the first time.
fn log_path(state_dir: &Path, n: u64) -> PathBuf {
    let dir = state_dir.join("jobs");
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep(&dir));
    dir.join(format!("{}-{n}.log", std::process::id()))
}

fn sweep(dir: &Path) {
    for path in super::admit::left_by_gone_agents(dir) {
        let _ = std::fs::remove_file(path);
    }
}

/// What [`Jobs::launch`] needs to start a command.
pub(crate) struct Launch {
    pub command: String,
    pub dir: PathBuf,
    pub prepared: Prepared,
    /// Killed after this long; None: runs until stopped or the session ends.
    pub timeout: Option<Duration>,
}

impl Jobs {
    fn table(&self) -> MutexGuard<'_, Vec<Arc<Job>>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find(&self, id: &str) -> Option<Arc<Job>> {
        let id = id.trim();
        let table = self.table();
        table
            .iter()
            .find(|j| j.id == id || j.id.strip_prefix("job-") == Some(id))
            .cloned()
    }

    /// Every job of the session, oldest first.
    pub fn list(&self) -> Vec<JobInfo> {
        self.table().iter().map(|j| j.info()).collect()
    }

    /// How many are running.
    pub fn running(&self) -> usize {
        self.list().iter().filter(|j| j.running()).count()
    }

    /// Starts a job; its id, or why not (the limit, a failed start).
    pub(crate) fn launch(&self, state_dir: &Path, launch: Launch) -> Result<String, String> {
        let running: Vec<JobInfo> = self.list().into_iter().filter(|j| j.running()).collect();
        if running.len() >= MAX_RUNNING {
            let names: Vec<String> = running
                .iter()
                .map(|j| format!("{} `{}`", j.id, j.command))
                .collect();
            return Err(format!(
                "{MAX_RUNNING} background commands are running already, the most at once ({}); stop one with command_stop first",
                names.join(", ")
            ));
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let log = Log::create(log_path(state_dir, n))
            .map_err(|e| format!("cannot keep its output in the state folder: {e}"))?;
        let Launch {
            command,
            dir,
            prepared,
            timeout,
        } = launch;
        let job = Arc::new(Job {
            id: format!("job-{n}"),
            command: command.clone(),
            inner: Mutex::new(Inner {
                log,
                end: None,
                cursor: 0,
            }),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            after: Mutex::new(Some(prepared.after)),
        });
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let env = prepared.env;
        let sandbox = prepared.sandbox;
        let handle = {
            let job = Arc::clone(&job);
            std::thread::Builder::new()
                .name(job.id.clone())
                .spawn(move || {
                    let started = Instant::now();
                    let (reader, writer) = match std::io::pipe() {
                        Ok(pipe) => pipe,
                        Err(e) => return drop(started_tx.send(Err(e))),
                    };
                    let spawned = writer.try_clone().and_then(|err| {
                        shell::spawn_shell(
                            &command,
                            &dir,
                            env,
                            sandbox.as_ref(),
                            std::process::Stdio::null(),
                            writer,
                            err,
                        )
                    });
                    match spawned {
                        Ok(spawned) => {
                            let _ = started_tx.send(Ok(()));
                            supervise(&job, spawned, reader, started, timeout);
                            // Its connections through the allowlist's proxy, logged.
                            shell::note_network(&command, sandbox.as_ref(), &mut String::new());
                        }
                        Err(e) => drop(started_tx.send(Err(e))),
                    }
                })
                .map_err(|e| format!("cannot start the command: {e}"))?
        };
        match started_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = handle.join();
                let _ = std::fs::remove_file(&job.inner().log.path);
                return Err(format!("cannot start the command: {e}"));
            }
            Err(_) => return Err("cannot start the command".into()),
        }
        *job.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        let mut table = self.table();
        table.push(Arc::clone(&job));
        forget_old(&mut table);
        Ok(job.id.clone())
    }

    /// Stops every job and waits for them.
    pub fn stop_all(&self) {
        let jobs: Vec<Arc<Job>> = self.table().clone();
        for job in &jobs {
            job.stop.store(true, Ordering::SeqCst);
        }
        for job in &jobs {
            job.stop_and_wait();
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Drops the oldest ended jobs whose changes are settled past
/// [`KEPT_ENDED`], with their output files.
fn forget_old(table: &mut Vec<Arc<Job>>) {
    let settled = |j: &Arc<Job>| {
        j.inner().end.is_some() && j.after.lock().map(|a| a.is_none()).unwrap_or(true)
    };
    while table.iter().filter(|j| settled(j)).count() > KEPT_ENDED {
        let Some(at) = table.iter().position(settled) else {
            break;
        };
        let job = table.remove(at);
        let _ = std::fs::remove_file(&job.inner().log.path);
    }
}

/// The job's thread: reads its output into the log, waits for it, kills
/// its process group when asked to stop or at its timeout, then ends
/// whatever it left running.
fn supervise(
    job: &Arc<Job>,
    spawned: shell::Spawned,
    reader: std::io::PipeReader,
    started: Instant,
    timeout: Option<Duration>,
) {
    let shell::Spawned {
        mut child,
        run_id,
        tmp: _tmp,
    } = spawned;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    {
        let job = Arc::clone(job);
        let mut reader = reader;
        std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => job.inner().log.push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let _ = done_tx.send(());
        });
    }
    let pgid = child.id();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        timed_out = timeout.is_some_and(|t| started.elapsed() >= t);
        if timed_out || job.stop.load(Ordering::SeqCst) {
            shell::kill_group(pgid);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // As for a foreground command: nothing outlives it.
    if done_rx.recv_timeout(Duration::from_millis(300)).is_err() {
        shell::kill_group(pgid);
    }
    let leftovers = shell::end_run(&run_id);
    let _ = done_rx.recv_timeout(Duration::from_secs(2));
    use std::os::unix::process::ExitStatusExt;
    let state = match status {
        Some(s) => JobState::Exited(s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))),
        None => JobState::Stopped,
    };
    job.inner().end = Some(End {
        state,
        timed_out,
        leftovers,
    });
}

/// Starts `command` in the background for `run_cmd`, after its gate,
/// approval and preparation: what the model is told.
pub(crate) fn start(jobs: &Jobs, ctx: &ToolContext<'_>, launch: Launch) -> ToolOutput {
    let command = launch.command.clone();
    match jobs.launch(&ctx.workspace.state_dir(), launch) {
        Ok(id) => ToolOutput::ok(format!(
            "started {id} in the background: `{command}`. Read its output with command_output {{\"id\": \"{id}\"}}; stop it with command_stop. Its file changes are admitted once it has ended."
        )),
        Err(why) => ToolOutput::error(ErrorClass::CommandFailed, why),
    }
}

/// The job a call names, or an error listing those there are.
fn named(jobs: &Jobs, a: &Args<'_>) -> Result<Arc<Job>, ToolOutput> {
    let id = a.req_str("id")?;
    jobs.find(&id).ok_or_else(|| {
        let known: Vec<String> = jobs
            .list()
            .iter()
            .map(|j| format!("{} ({})", j.id, j.state_text()))
            .collect();
        ToolOutput::error(
            ErrorClass::NotFound,
            if known.is_empty() {
                format!("no background command `{id}`: none was started (run_cmd with \"background\": true starts one)")
            } else {
                format!(
                    "no background command `{id}`; there are: {}",
                    known.join(", ")
                )
            },
        )
    })
}

/// How a job stands, for the model: `job-1 (`cmd`): running`, or its end.
fn headline(job: &Job, end: Option<End>) -> String {
    let state = match end {
        None => "running".to_string(),
        Some(End {
            timed_out: true, ..
        }) => "stopped at its timeout".to_string(),
        Some(End {
            state: JobState::Exited(code),
            ..
        }) => format!("ended, exit code {code}"),
        Some(_) => "stopped".to_string(),
    };
    let mut line = format!("{} (`{}`): {state}", job.id, job.command);
    if let Some(n) = end.map(|e| e.leftovers).filter(|n| *n > 0) {
        line.push_str(&format!(
            "; {n} background process(es) it left running were stopped"
        ));
    }
    line
}

/// Once a job has ended, its changes admitted (once): appended to `out`.
fn settle(job: &Job, ctx: &mut ToolContext<'_>, out: &mut ToolOutput) {
    let after = job.after.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(after) = after else {
        return;
    };
    match after.settle(ctx, &job.command, true) {
        Ok(Some(admitted)) => {
            if let Some(text) = super::admit::report(&admitted) {
                out.content = format!("{}\n{text}", out.content.trim_end());
            }
            out.diff = (!admitted.diff.is_empty()).then_some(admitted.diff);
            out.changed = admitted.changed;
        }
        Ok(None) => {}
        Err(tampered) => {
            out.ok = false;
            out.error = Some(ErrorClass::PolicyDenied);
            out.content = format!("{}\n{tampered}", out.content.trim_end());
        }
    }
}

/// `command_output`: what a background command printed since an offset.
pub struct CommandOutput(pub Arc<Jobs>);

impl Tool for CommandOutput {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "command_output",
            description: "Read the new output of a background command (run_cmd with background: true) and whether it has ended; once it has, its file changes are admitted.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "since": {"type": "integer", "description": "byte offset to read from (default: where the last read ended)"}
                },
                "required": ["id"]
            }),
            access: Access::Job,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(args, "command_output", r#"{"id": "job-1"}"#) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let job = match named(&self.0, &a) {
            Ok(job) => job,
            Err(e) => return e,
        };
        let since = match a.opt_int("since") {
            Ok(since) => since.map(|s| s.max(0) as u64),
            Err(e) => return e,
        };
        let max = READ_MAX.min(ctx.room.max(512));
        let (end, text, from, next, total) = {
            let mut inner = job.inner();
            let since = since.unwrap_or(inner.cursor);
            let (bytes, from) = inner.log.read(since, max);
            let next = from + bytes.len() as u64;
            inner.cursor = next;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            (inner.end, text, from, next, inner.log.total)
        };
        let mut body = headline(&job, end);
        body.push_str(&format!(
            "\noutput bytes {from}..{next} of {total}; next since: {next}"
        ));
        if since.is_some_and(|s| s < from) {
            body.push_str(&format!(" (bytes before {from} are no longer kept)"));
        }
        if next < total {
            body.push_str(" (more to read)");
        }
        body.push('\n');
        body.push_str(if text.is_empty() {
            "(no new output)"
        } else {
            &text
        });
        let mut out = ToolOutput::ok(body);
        if let Some(end) = end {
            if let JobState::Exited(code) = end.state {
                out.exit_code = Some(code);
            }
            settle(&job, ctx, &mut out);
        }
        out
    }
}

/// `command_stop`: ends a background command and everything it started.
pub struct CommandStop(pub Arc<Jobs>);

/// Bytes of a stopped job's last output shown.
const STOP_TAIL: u64 = 2048;

impl Tool for CommandStop {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "command_stop",
            description: "Stop a background command and everything it started; its file changes are then admitted.",
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"]
            }),
            access: Access::Job,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(args, "command_stop", r#"{"id": "job-1"}"#) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let job = match named(&self.0, &a) {
            Ok(job) => job,
            Err(e) => return e,
        };
        job.stop_and_wait();
        let (end, text, total) = {
            let mut inner = job.inner();
            let total = inner.log.total;
            let (bytes, _) = inner
                .log
                .read(total.saturating_sub(STOP_TAIL), STOP_TAIL as usize);
            inner.cursor = total;
            (
                inner.end,
                String::from_utf8_lossy(&bytes).into_owned(),
                total,
            )
        };
        let mut body = headline(&job, end);
        body.push_str(&format!(
            "\n{total} bytes of output in all; the last of them:\n"
        ));
        body.push_str(if text.is_empty() {
            "(no output)"
        } else {
            &text
        });
        let mut out = ToolOutput::ok(body);
        if let Some(JobState::Exited(code)) = end.map(|e| e.state) {
            out.exit_code = Some(code);
        }
        settle(&job, ctx, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(jobs: &Jobs, state: &Path, command: &str) -> Result<String, String> {
        jobs.launch(
            state,
            Launch {
                command: command.into(),
                dir: state.to_path_buf(),
                prepared: Prepared {
                    env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
                    sandbox: None,
                    after: After::nothing(),
                },
                timeout: None,
            },
        )
    }

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "waited for {what}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    use crate::shell::tests::alive;

    #[test]
    fn a_job_runs_on_while_its_output_is_read_by_offset() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::default();
        let id = launch(&jobs, dir.path(), "echo one; sleep 0.3; echo two; exit 3").unwrap();
        assert_eq!(id, "job-1");
        assert_eq!(jobs.running(), 1);
        let job = jobs.find("1").unwrap();
        wait_until("the end", || job.inner().end.is_some());
        let info = &jobs.list()[0];
        assert_eq!(
            (info.state, info.output_bytes, info.command.as_str()),
            (
                JobState::Exited(3),
                8,
                "echo one; sleep 0.3; echo two; exit 3"
            )
        );
        let (bytes, from) = job.inner().log.read(4, 100);
        assert_eq!((bytes.as_slice(), from), (&b"two\n"[..], 4));
        // Its output is in the state folder.
        let file = dir
            .path()
            .join(format!("jobs/{}-1.log", std::process::id()));
        assert_eq!(std::fs::read_to_string(file).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn past_the_limit_a_job_is_refused_until_one_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::default();
        for _ in 0..MAX_RUNNING {
            launch(&jobs, dir.path(), "sleep 30").unwrap();
        }
        let why = launch(&jobs, dir.path(), "sleep 30").unwrap_err();
        assert!(
            why.contains("4 background commands are running already")
                && why.contains("job-1 `sleep 30`"),
            "{why}"
        );
        let t = Instant::now();
        jobs.find("job-2").unwrap().stop_and_wait();
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(jobs.list()[1].state, JobState::Stopped);
        assert_eq!(launch(&jobs, dir.path(), "sleep 30").unwrap(), "job-5");
    }

    #[test]
    fn nothing_a_job_started_outlives_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let jobs = Jobs::default();
        // Its own child, a setsid'd one that leaves the group, and a job
        // that has "ended" while its background child runs on.
        let cmd = format!(
            "sleep 30 & echo $! >> {p}; setsid sleep 31 >/dev/null 2>&1 < /dev/null & echo $! >> {p}; sleep 30",
            p = pids.display()
        );
        launch(&jobs, dir.path(), &cmd).unwrap();
        wait_until("two pids", || {
            std::fs::read_to_string(&pids).is_ok_and(|s| s.lines().count() == 2)
        });
        let pids: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        assert!(pids.iter().all(|p| alive(*p)));
        drop(jobs);
        std::thread::sleep(Duration::from_millis(100));
        let left: Vec<i32> = pids.into_iter().filter(|p| alive(*p)).collect();
        assert!(left.is_empty(), "still running: {left:?}");
    }

    #[test]
    fn the_log_keeps_the_newest_bytes_and_counts_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::create(dir.path().join("x.log")).unwrap();
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..5 {
            log.push(&chunk);
        }
        log.push(b"END");
        assert_eq!(log.total, 5 * 64 * 1024 + 3);
        assert!(
            log.base > 0 && log.total - log.base <= LOG_CAP,
            "{}",
            log.base
        );
        assert!(std::fs::metadata(&log.path).unwrap().len() <= LOG_CAP);
        // An offset that is gone reads from the oldest kept.
        let (_, from) = log.read(0, 10);
        assert_eq!(from, log.base);
        let (bytes, _) = log.read(log.total - 3, 100);
        assert_eq!(bytes, b"END");
        // A read cut inside a character ends before it.
        let mut log = Log::create(dir.path().join("y.log")).unwrap();
        log.push("aé".as_bytes());
        assert_eq!(log.read(0, 2).0, b"a");
    }
}
