//! `run_cmd`: a shell command under the policy, in its own process group.
//!
//! Order: the command policy first (a denied command never runs; one whose
//! verdict is `Ask`, because its text cannot tell what runs, asks even in
//! yolo mode), then the approval, then `sh -c` with stdin closed and the
//! environment scrubbed of secrets ([`agent_policy::Policy::command_env`]),
//! inside the sandbox ([`crate::fence::sandbox`]) with a private `TMPDIR`.
//! The process group is killed on timeout or Ctrl-C, and whatever the command
//! left running is ended when it ends: every process still carrying its
//! `AGENT_RUN_ID` (`setsid` and double-forked daemons leave the group, not the
//! environment). Combined stdout+stderr is kept as its first and last 4 KiB.
//! A failure is classified from the output (syntax, missing dependency, test
//! failure, permission, timeout) with a one-line hint for the model.
//!
//! In the sandbox a command writes a copy-on-write layer, not the
//! workspace; what it changed is admitted afterwards as one change set
//! (shown as a diff, checkpointed, undoable), and what configures the agent
//! or git is asked for or refused ([`admit`]). Where no layer can be had
//! (`--sandbox off`, no overlayfs) a command writes the workspace directly,
//! its changes are not checkpointed (which is why commands are confirmed),
//! and `state_guard` puts back the `.agent/` settings it changed.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::admit;
use super::args::Args;
use super::fence;
use super::fs::{not_found, resolve};
use super::grep::cut;
use super::jobs::{self, Jobs, Launch};
use super::state_guard::{ConfigGuard, StateGuard};
use super::{Access, Approval, Decision, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};
use agent_base::cancel::CancelToken;
use agent_policy::{Verdict, MAX_TIMEOUT_S};
use agent_sandbox::{self as sandbox, Sandbox};

/// Bytes kept from the start of the output.
pub const OUTPUT_HEAD: usize = 4096;
/// Bytes kept from the end of the output.
pub const OUTPUT_TAIL: usize = 4096;

/// Set for every command: no pagers, no prompts, no colours.
const FIXED_ENV: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("NO_COLOR", "1"),
    ("CARGO_TERM_COLOR", "never"),
    ("PYTHONUNBUFFERED", "1"),
];

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

const SIGKILL: i32 = 9;

pub(crate) fn kill_group(pgid: u32) {
    // SAFETY: kill(2) has no memory effects; a negative pid names the
    // process group the child leads (set up by `process_group(0)`).
    unsafe {
        kill(-(pgid as i32), SIGKILL);
    }
}

/// Every process a command starts inherits this variable, so those that
/// leave its process group (`setsid`, `nohup ... &`, daemons) can still be
/// found and ended with it. One that clears its environment escapes; the
/// sandbox is the fence for that.
const RUN_ID_VAR: &str = "AGENT_RUN_ID";

fn next_run_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Processes (other than this one) whose environment holds `entry`.
fn processes_with_env(entry: &[u8]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            // Unreadable (another user's) or gone: not ours. A zombie's is empty.
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == entry))
        })
        .collect()
}

/// Kills every process still carrying this run's id; returns how many.
pub(crate) fn end_run(run_id: &str) -> usize {
    end_processes_with(&format!("{RUN_ID_VAR}={run_id}"))
}

/// Kills every process (but this one) whose environment holds `entry`
/// (`NAME=value`); returns how many. It scans again until none is left,
/// since a process may fork while dying.
pub fn end_processes_with(entry: &str) -> usize {
    let mut killed = std::collections::HashSet::new();
    for _ in 0..50 {
        let alive = processes_with_env(entry.as_bytes());
        if alive.is_empty() {
            break;
        }
        for pid in alive {
            // SAFETY: kill(2) has no memory effects.
            unsafe {
                kill(pid, SIGKILL);
            }
            killed.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    killed.len()
}

/// First and last bytes of a stream, and how long it was.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < OUTPUT_HEAD {
            let take = bytes.len().min(OUTPUT_HEAD - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= OUTPUT_TAIL {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - OUTPUT_TAIL..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(OUTPUT_TAIL);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    fn render(&self) -> String {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&tail);
        if kept >= self.total {
            format!("{head}{tail}")
        } else {
            format!(
                "{head}\n... {} bytes omitted ...\n{tail}",
                self.total - kept
            )
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone)]
pub struct CmdResult {
    /// Exit code; a signal death is 128 + the signal; `None` when killed by us.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// Processes it left behind (background, `setsid`) that were ended.
    pub leftovers: usize,
    /// Combined stdout+stderr, capped (head and tail); stdout alone with
    /// [`Io::split_stderr`].
    pub output: String,
    pub output_bytes: u64,
    /// Stderr, capped, with [`Io::split_stderr`]; empty otherwise.
    pub stderr: String,
    pub elapsed: Duration,
}

/// A command outside the sandbox (`--sandbox off`) that still dies with
/// the agent, even when the agent is killed with `kill -9`.
fn unsandboxed(program: &str) -> Command {
    let mut cmd = Command::new(program);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid and _exit are system calls, safe between
        // fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != parent {
                    libc::_exit(127);
                }
                Ok(())
            });
        }
    }
    cmd
}

/// Runs `sh -c command` in `cwd` with exactly `env`, in its own process
/// group, stdin null, inside `sandbox` when given (with a private `TMPDIR`);
/// kills the group on timeout or cancellation.
pub fn run_command(
    command: &str,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    cancel: &CancelToken,
    sandbox: Option<&Sandbox>,
) -> std::io::Result<CmdResult> {
    run_command_with(command, cwd, env, timeout, cancel, sandbox, Io::default())
}

/// What a command reads on stdin and how its output is kept: hooks get the
/// call as JSON on stdin and speak back on stdout and stderr apart.
#[derive(Debug, Clone, Default)]
pub struct Io {
    /// Written to the command's stdin, which is then closed (default: no stdin).
    pub stdin: Option<Vec<u8>>,
    /// Keep stderr apart, in [`CmdResult::stderr`], instead of in the output.
    pub split_stderr: bool,
}

/// Reads a pipe to its end on a thread of its own, keeping head and tail;
/// the receiver hears when it is done.
fn capture(
    mut reader: std::io::PipeReader,
) -> (Arc<Mutex<Capture>>, std::sync::mpsc::Receiver<()>) {
    let capture = Arc::new(Mutex::new(Capture::default()));
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let kept = Arc::clone(&capture);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(mut c) = kept.lock() {
                        c.push(&buf[..n]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = done_tx.send(());
    });
    (capture, done_rx)
}

/// A shell started by [`spawn_shell`]: the child, leading its own process
/// group, the run id every process it starts carries, and its private temp
/// folder (removed when dropped, once the command has ended).
pub(crate) struct Spawned {
    pub child: std::process::Child,
    pub run_id: String,
    pub tmp: Option<tempfile::TempDir>,
}

/// Starts `sh -c command` in `cwd` with exactly `env` (plus the fixed
/// variables and a run id), in its own process group, inside `sandbox` when
/// given (with a private `TMPDIR`), else still dying with the agent.
///
/// The sandbox's death signal follows the thread that forks: call it on
/// the thread that waits for the child.
pub(crate) fn spawn_shell(
    command: &str,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    sandbox: Option<&Sandbox>,
    stdin: Stdio,
    stdout: std::io::PipeWriter,
    stderr: std::io::PipeWriter,
) -> std::io::Result<Spawned> {
    let run_id = next_run_id();
    // A sandboxed command gets a temp dir of its own, writable, removed when
    // the command ends with whatever it left there.
    let (tmp, mut cmd) = match sandbox {
        Some(sandbox) => {
            let tmp = tempfile::Builder::new().prefix("agent-cmd-").tempdir()?;
            let mut sandbox = sandbox.clone();
            sandbox.writable.push(tmp.path().to_path_buf());
            let prepared = sandbox.prepare().map_err(std::io::Error::other)?;
            (Some(tmp), sandbox::command(prepared, "sh"))
        }
        None => (None, unsandboxed("sh")),
    };
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .env_clear()
        .envs(env)
        .envs(FIXED_ENV.iter().copied())
        .env("PWD", cwd)
        .env(RUN_ID_VAR, &run_id)
        .process_group(0);
    if let Some(tmp) = &tmp {
        for var in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(var, tmp.path());
        }
    }
    if let Some(sandbox) = sandbox {
        cmd.envs(sandbox.proxy_env());
    }
    let child = cmd.spawn()?;
    // Our copies of the write ends close with `cmd`, or the readers would
    // never see EOF.
    drop(cmd);
    Ok(Spawned { child, run_id, tmp })
}

/// [`run_command`] with a given stdin, and stderr kept apart when asked.
pub fn run_command_with(
    command: &str,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    cancel: &CancelToken,
    sandbox: Option<&Sandbox>,
    io: Io,
) -> std::io::Result<CmdResult> {
    let start = Instant::now();
    let (reader, writer) = std::io::pipe()?;
    let (err_reader, err_writer) = if io.split_stderr {
        let (r, w) = std::io::pipe()?;
        (Some(r), w)
    } else {
        (None, writer.try_clone()?)
    };
    let stdin = if io.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let Spawned {
        mut child,
        run_id,
        tmp: _private_tmp,
    } = spawn_shell(command, cwd, env, sandbox, stdin, writer, err_writer)?;
    if let (Some(input), Some(mut stdin)) = (io.stdin, child.stdin.take()) {
        // On a thread: a command that does not read its input must not
        // block us; one that exits early only breaks the pipe.
        std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, &input);
        });
    }
    let pgid = child.id();
    let (output, done_rx) = capture(reader);
    let errors = err_reader.map(capture);
    let mut timed_out = false;
    let mut cancelled = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            timed_out = true;
        } else if cancel.is_cancelled() {
            cancelled = true;
        }
        if timed_out || cancelled {
            kill_group(pgid);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(15));
    };
    // Background processes may still hold the pipes: give them a moment, then
    // end them and any that left the group: nothing outlives its command.
    let grace = Duration::from_millis(500);
    let pipes_open = done_rx.recv_timeout(grace).is_err()
        || errors
            .as_ref()
            .is_some_and(|(_, done)| done.recv_timeout(grace).is_err());
    if pipes_open {
        kill_group(pgid);
    }
    let leftovers = end_run(&run_id);
    let _ = done_rx.recv_timeout(Duration::from_secs(2));
    let rendered = |c: &Arc<Mutex<Capture>>| match c.lock() {
        Ok(c) => (c.render(), c.total),
        Err(_) => (String::new(), 0),
    };
    let (output, output_bytes) = rendered(&output);
    let stderr = match &errors {
        Some((capture, done)) => {
            let _ = done.recv_timeout(Duration::from_secs(2));
            rendered(capture).0
        }
        None => String::new(),
    };
    let exit_code = status.map(|s| s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)));
    Ok(CmdResult {
        exit_code,
        timed_out,
        cancelled,
        leftovers,
        output,
        output_bytes,
        stderr,
        elapsed: start.elapsed(),
    })
}

/// A program the agent starts on its own account (a hook), run as `run_cmd`
/// runs a command, without the approval: the policy's scrubbed environment
/// plus `extra_env`, in the workspace root, inside the sandbox when the policy
/// has it on and the system provides one (else unfenced, as `--verify` runs).
/// In the sandbox it writes a layer whose ordinary changes are admitted
/// unreviewed ([`admit::admit_unreviewed`]) and the rest refused; without a
/// layer the agent's settings are put back afterwards. Returns the result,
/// whether it was fenced, and what was refused or put back. Its output is
/// not redacted yet.
pub fn run_fenced(
    command: &str,
    stdin: Vec<u8>,
    extra_env: &[(&str, String)],
    workspace: &super::Workspace,
    policy: &agent_policy::Policy,
    timeout: Duration,
    cancel: &CancelToken,
) -> std::io::Result<(CmdResult, bool, Vec<String>)> {
    let mut sandbox = (policy.sandbox && sandbox::available())
        .then(|| super::fence::sandbox(workspace.root(), policy));
    if sandbox.is_none() && policy.require_sandbox {
        return Err(std::io::Error::other(NO_SANDBOX_REQUIRED));
    }
    let mut env = policy.command_env();
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let root = workspace.root();
    let layer = sandbox
        .as_mut()
        .and_then(|s| admit::Layer::attach(s, &workspace.state_dir(), root, &[]));
    let guards = layer.is_none().then(|| {
        (
            StateGuard::snapshot(&workspace.team_dir()),
            ConfigGuard::snapshot(root),
        )
    });
    let io = Io {
        stdin: Some(stdin),
        split_stderr: true,
    };
    let result = run_command_with(command, root, env, timeout, cancel, sandbox.as_ref(), io);
    let refused = match (layer, guards) {
        (Some(layer), _) => admit::admit_unreviewed(workspace, policy, &layer)
            .notes
            .into_iter()
            .filter(|n| n.starts_with("not admitted"))
            .collect(),
        (None, Some((guard, config_guard))) => {
            let mut tampered = guard.restore();
            tampered.extend(config_guard.restore());
            tampered
        }
        (None, None) => Vec::new(),
    };
    Ok((result?, sandbox.is_some(), refused))
}

/// What kind of failure an output shows, and a one-line hint (with the line
/// that gave it away).
pub fn classify(exit_code: i32, output: &str) -> (ErrorClass, String) {
    let find = |needles: &[&str]| -> Option<String> {
        output
            .lines()
            .find(|l| needles.iter().any(|n| l.contains(n)))
            .map(|l| cut(l.trim(), 160))
    };
    const MISSING: &[&str] = &[
        "ModuleNotFoundError",
        "No module named",
        "command not found",
        "unresolved import",
        "can't find crate",
        "cannot find -l",
        "Cannot find module",
        "error[E0432]",
        "error[E0433]",
        "error[E0463]",
        "ImportError",
        "package not found",
        "not installed",
    ];
    const SYNTAX: &[&str] = &[
        "SyntaxError",
        "IndentationError",
        "TabError",
        "error: expected",
        "error[E",
        "syntax error",
        "Syntax error",
        "ParseError",
        "parse error",
        "Unexpected token",
        "unexpected token",
    ];
    const TESTS: &[&str] = &[
        "test result: FAILED",
        "AssertionError",
        "FAILED (",
        "FAILED ",
        "failures:",
        "FAIL:",
        "--- FAIL",
        "Tests failed",
        "tests failed",
        "assertion failed",
        "AssertionFailedError",
    ];
    const PERMISSION: &[&str] = &["Permission denied", "EACCES", "Operation not permitted"];
    if let Some(l) = find(MISSING).or_else(|| {
        (exit_code == 127).then(|| find(&["not found"]).unwrap_or_else(|| "exit code 127".into()))
    }) {
        return (
            ErrorClass::MissingDependency,
            format!("missing dependency: {l}. Check the name; if it is really missing, tell the user (installing needs their OK) or use what is installed"),
        );
    }
    if let Some(l) = find(SYNTAX) {
        return (
            ErrorClass::Syntax,
            format!(
                "syntax/compile error: {l}. Open the file at the reported line, fix it, run again"
            ),
        );
    }
    let counted_failures = output.lines().find(|l| {
        // pytest: "=== 1 failed, 2 passed in 0.1s ==="
        let w: Vec<&str> = l
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        w.windows(2).any(|p| {
            p[0].parse::<u32>().is_ok_and(|n| n > 0) && (p[1] == "failed" || p[1] == "failing")
        })
    });
    if let Some(l) = find(TESTS).or_else(|| counted_failures.map(|l| cut(l.trim(), 160))) {
        return (
            ErrorClass::TestFailure,
            format!("tests failed: {l}. Read the failure above, fix the code (or the test if it is wrong), run the tests again"),
        );
    }
    if let Some(l) = find(PERMISSION).or_else(|| (exit_code == 126).then(|| "exit code 126".into()))
    {
        return (
            ErrorClass::Permission,
            format!("permission denied: {l}. Do not use sudo; use a path inside the workspace or make a script executable with chmod +x"),
        );
    }
    (
        ErrorClass::CommandFailed,
        format!("the command failed with exit code {exit_code}; read the output above"),
    )
}

/// Whether a command's output says it ran into the sandbox's read-only set.
fn hit_read_only(output: &str) -> bool {
    [
        "Read-only file system",
        "[Errno 30]",
        "Device or resource busy",
    ]
    .iter()
    .any(|s| output.contains(s))
}

/// Why a command asks when the sandbox is on but the kernel cannot provide it.
const NO_SANDBOX: &str =
    "this system has no sandbox (Landlock, sandbox-exec), so the command would run with all of the user's rights";

/// Why a command is refused when the administrator requires the sandbox and
/// there is none.
pub const NO_SANDBOX_REQUIRED: &str = "Your administrator does not allow commands outside the sandbox, and this system cannot set one up (Landlock, sandbox-exec). Do not retry commands; answer from the files, or ask the user";

/// `run_cmd`; its background jobs go to the session's [`Jobs`].
pub struct RunCmd {
    pub jobs: Arc<Jobs>,
}

impl Tool for RunCmd {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_cmd",
            description: "Run a shell command (sh -c) in the workspace, e.g. tests or a build; returns the exit code and output. Each call is a fresh shell (use cwd instead of cd). No network, no sudo. .git, .agent/, .mcp.json and AGENTS.md are read-only; a git command that writes the repository (git commit) asks the user. The files it changes are shown to the user and undo reverts them. background: true starts it and returns a job id at once (a dev server, a watcher): then command_output and command_stop.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "cwd": {"type": "string", "description": "folder relative to the workspace root (default \".\")"},
                    "timeout_s": {"type": "integer", "description": "seconds before the command is killed (default 60, max 600; in the background: none unless given)"},
                    "background": {"type": "boolean"}
                },
                "required": ["command"]
            }),
            access: Access::Execute,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match Args::new(
            args,
            "run_cmd",
            r#"{"command": "python3 -m pytest -q", "timeout_s": 120}"#,
        ) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let background = match a.opt_bool("background") {
            Ok(b) => b.unwrap_or(false),
            Err(e) => return e,
        };
        let result = command_args(&a, ctx).and_then(|(command, cwd, timeout_s)| {
            let gate = Gate::judge(ctx, &command)?;
            let dir = command_dir(ctx, &a, &cwd)?;
            gate.confirm(ctx, &command, &dir)?;
            // `--verify` judges the change; what it writes is not kept (its
            // rollback undoes the last change set, which must be the edit's).
            let keep = args.get("discard_changes") != Some(&Value::Bool(true));
            if background && keep {
                // The same gate, approval, fence and layer; only the wait differs.
                let timeout = args
                    .get("timeout_s")
                    .is_some()
                    .then(|| Duration::from_secs(timeout_s));
                let launch = Launch {
                    prepared: gate.prepare(ctx, &command),
                    command,
                    dir,
                    timeout,
                };
                return Ok(jobs::start(&self.jobs, ctx, launch));
            }
            let (r, admitted) = gate.execute(ctx, &command, &dir, timeout_s, keep)?;
            let mut output = report(ctx, r, timeout_s);
            if let Some(admitted) = admitted {
                if let Some(text) = admit::report(&admitted) {
                    output.content = format!("{}\n{text}", output.content.trim_end());
                }
                output.diff = (!admitted.diff.is_empty()).then_some(admitted.diff);
                output.changed = admitted.changed;
            }
            Ok(output)
        });
        result.unwrap_or_else(|e| e)
    }
}

/// `run_cmd`'s arguments: the command, its folder and its timeout (the
/// policy's unless given, capped).
fn command_args(a: &Args<'_>, ctx: &ToolContext<'_>) -> Result<(String, String, u64), ToolOutput> {
    let (command, cwd, timeout) = match (
        a.req_str("command"),
        a.opt_str("cwd"),
        a.opt_int("timeout_s"),
    ) {
        (Ok(c), Ok(d), Ok(t)) => (c, d.unwrap_or_else(|| ".".into()), t),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Err(e),
    };
    if command.trim().is_empty() {
        return Err(a.error("`command` is empty"));
    }
    let timeout_s = timeout
        .map(|t| t.clamp(1, MAX_TIMEOUT_S as i64) as u64)
        .unwrap_or(ctx.policy.timeout_s);
    Ok((command, cwd, timeout_s))
}

/// The folder a command runs in: inside the workspace, existing, a folder.
fn command_dir(ctx: &ToolContext<'_>, a: &Args<'_>, cwd: &str) -> Result<PathBuf, ToolOutput> {
    let dir = resolve(ctx, cwd)?;
    if !dir.exists() {
        return Err(not_found(ctx, cwd, &dir));
    }
    if !dir.is_dir() {
        return Err(a.error(format_args!("cwd `{cwd}` is a file, not a folder")));
    }
    Ok(dir)
}

/// What the policy and the system decided about a command before it runs.
struct Gate {
    /// Why the user must approve it even in yolo mode, if they must.
    ask_why: Option<String>,
    /// Why it writes the repository, if it does (then .git is writable to it).
    git_writer: Option<String>,
    /// The fence it runs in (None: unsandboxed).
    sandbox: Option<Sandbox>,
}

impl Gate {
    /// The command policy's verdict, the git writer check and the sandbox.
    fn judge(ctx: &ToolContext<'_>, command: &str) -> Result<Gate, ToolOutput> {
        // Asked even in yolo mode: what it runs is decided at run time, or
        // nothing fences it in.
        let mut ask_why = match ctx.policy.check_command(command) {
            Verdict::Deny(reason) => {
                return Err(ToolOutput::error(ErrorClass::PolicyDenied, reason))
            }
            Verdict::Ask(why) => Some(why),
            Verdict::Allow => None,
        };
        // In the sandbox, a git command that writes the repository asks in
        // every mode, and approved, runs with .git writable (git's hooks and
        // fsmonitor off). Outside it, .git is writable anyway.
        let git_writer = ctx
            .policy
            .sandbox
            .then(|| ctx.policy.git_writer(command))
            .flatten();
        if let Some(why) = &git_writer {
            ask_why.get_or_insert_with(|| why.clone());
        }
        let sandbox = match (ctx.policy.sandbox, sandbox::available()) {
            (false, _) if !ctx.policy.require_sandbox => None,
            (_, true) => {
                let mut s = fence::sandbox(ctx.workspace.root(), ctx.policy);
                if git_writer.is_some() {
                    fence::allow_git_writes(&mut s, ctx.workspace.root());
                }
                Some(s)
            }
            // The administrator's rule: never the unsandboxed fallback.
            (_, false) if ctx.policy.require_sandbox => {
                return Err(ToolOutput::error(
                    ErrorClass::PolicyDenied,
                    NO_SANDBOX_REQUIRED,
                ))
            }
            (_, false) => {
                ask_why.get_or_insert_with(|| NO_SANDBOX.to_string());
                None
            }
        };
        Ok(Gate {
            ask_why,
            git_writer,
            sandbox,
        })
    }

    /// The user's approval, when the mode or the gate asks for it.
    fn confirm(
        &self,
        ctx: &mut ToolContext<'_>,
        command: &str,
        dir: &Path,
    ) -> Result<(), ToolOutput> {
        if self.ask_why.is_none() && !ctx.policy.needs_approval(Access::Execute) {
            return Ok(());
        }
        let request = Approval::Command {
            command: command.to_string(),
            cwd: ctx.workspace.relative(dir),
            why: self.ask_why.clone(),
        };
        if ctx.approver.approve(&request) != Decision::Decline {
            return Ok(());
        }
        Err(ToolOutput::error(
            ErrorClass::Declined,
            match &self.ask_why {
                Some(why) if why == NO_SANDBOX || self.git_writer.as_ref() == Some(why) => {
                    format!("not run: {why}, and the user did not approve it; ask the user")
                }
                Some(why) => format!(
                    "not run: {why}, so it needs the user's OK and did not get it. Write the command out plainly (no variables or substitutions in what it runs or deletes, no piping into a shell), or ask the user"
                ),
                None => "the user declined to run this command; ask the user or try something else".into(),
            },
        ))
    }

    /// What the command runs with: the policy's environment and the fence,
    /// with a layer to write in the sandbox, else guards on the agent's
    /// settings. A line that only reads (`git status`, `grep`) gets the
    /// workspace read-only instead of a layer: nothing to admit, and no
    /// layer's cost on a large tree.
    pub(crate) fn prepare(&self, ctx: &ToolContext<'_>, command: &str) -> Prepared {
        let mut env = ctx.policy.command_env();
        if self.git_writer.is_some() {
            env.extend(fence::git_hardening_env());
        }
        let root = ctx.workspace.root().to_path_buf();
        let mut sandbox = self.sandbox.clone();
        let reads_only = self.git_writer.is_none() && ctx.policy.reads_only(command);
        if let Some(s) = sandbox.as_mut().filter(|_| reads_only) {
            s.writable.retain(|w| *w != root);
            if let Some(home) = s.home.as_mut() {
                home.keep.push(root.clone()); // in sight still, if inside it
            }
        }
        // An approved git command writes the repository's data directly
        // (its config, hooks and info stay read-only).
        let git: Vec<PathBuf> = self.git_writer.iter().map(|_| root.join(".git")).collect();
        let state = ctx.workspace.state_dir();
        let layer = sandbox
            .as_mut()
            .filter(|_| !reads_only)
            .and_then(|s| admit::Layer::attach(s, &state, &root, &git));
        let fenced_read = reads_only && sandbox.is_some();
        let guards = (layer.is_none() && !fenced_read).then(|| {
            (
                StateGuard::snapshot(&ctx.workspace.team_dir()),
                ConfigGuard::snapshot(&root),
            )
        });
        Prepared {
            env,
            sandbox,
            after: After { layer, guards },
        }
    }

    /// Runs the command, then admits its changes ([`After::settle`]).
    fn execute(
        &self,
        ctx: &mut ToolContext<'_>,
        command: &str,
        dir: &Path,
        timeout_s: u64,
        keep: bool,
    ) -> Result<(CmdResult, Option<admit::Admitted>), ToolOutput> {
        let Prepared {
            env,
            sandbox,
            after,
        } = self.prepare(ctx, command);
        let mut r = run_command(
            command,
            dir,
            env,
            Duration::from_secs(timeout_s),
            ctx.cancel,
            sandbox.as_ref(),
        )
        .map_err(|e| ToolOutput::error(ErrorClass::Io, format!("cannot start the command: {e}")))?;
        note_network(command, sandbox.as_ref(), &mut r.output);
        match after.settle(ctx, command, keep) {
            Ok(admitted) => Ok((r, admitted)),
            Err(tampered) => {
                let output = ctx.policy.redact(r.output.trim_end());
                Err(ToolOutput::error(
                    ErrorClass::PolicyDenied,
                    format!(
                        "{tampered}\nexit code {}\n{output}",
                        r.exit_code.unwrap_or(-1)
                    ),
                ))
            }
        }
    }
}

/// Most connections through the allowlist's proxy listed in a command's
/// output (all of them go to the log).
const MAX_NETWORK_LINES: usize = 20;

/// Each connection the command asked the allowlist's proxy for, allowed or
/// refused: logged, and listed after its output (where the model sees why
/// a host was refused, and the audit trail's tool result keeps it).
pub(crate) fn note_network(command: &str, sandbox: Option<&Sandbox>, output: &mut String) {
    let lines = super::fence::network_log(sandbox);
    for line in &lines {
        tracing::info!(command = %command, "network allowlist: {line}");
    }
    if lines.is_empty() {
        return;
    }
    output.push_str("\n[network allowlist]");
    for line in lines.iter().take(MAX_NETWORK_LINES) {
        output.push('\n');
        output.push_str(line);
    }
    if lines.len() > MAX_NETWORK_LINES {
        output.push_str(&format!(
            "\n... and {} more",
            lines.len() - MAX_NETWORK_LINES
        ));
    }
}

/// A command ready to start ([`Gate::prepare`]).
pub(crate) struct Prepared {
    pub env: Vec<(OsString, OsString)>,
    pub sandbox: Option<Sandbox>,
    pub after: After,
}

/// What is done once a command has ended: its layer admitted, or the
/// agent's settings put back where it had no layer.
pub(crate) struct After {
    layer: Option<admit::Layer>,
    guards: Option<(StateGuard, ConfigGuard)>,
}

impl After {
    /// Nothing to do afterwards (a command with no layer and no guards).
    #[cfg(test)]
    pub(crate) fn nothing() -> After {
        After {
            layer: None,
            guards: None,
        }
    }

    /// In the sandbox, the layer's changes admitted ([`admit`]; with `keep`
    /// false, only a new build folder is kept); without a layer, the
    /// agent's settings put back, and an error (what it changed) when the
    /// command had changed them.
    pub(crate) fn settle(
        self,
        ctx: &mut ToolContext<'_>,
        command: &str,
        keep: bool,
    ) -> Result<Option<admit::Admitted>, String> {
        match self.layer {
            Some(layer) if keep => return Ok(Some(admit::admit(ctx, &layer, command))),
            Some(layer) => {
                // Nothing it wrote is kept but a new build folder, which the
                // next run would otherwise build again from nothing.
                admit::move_build_output(ctx.workspace, ctx.policy, &layer);
                return Ok(None);
            }
            None => {}
        }
        let Some((guard, config_guard)) = self.guards else {
            return Ok(None);
        };
        let mut tampered = guard.restore();
        tampered.extend(config_guard.restore());
        if tampered.is_empty() {
            return Ok(None);
        }
        let what = tampered.join("; ");
        tracing::warn!(command = %command, "a command changed the agent's settings: {what}");
        Err(format!(
            "commands may not change the agent's own settings: {what}. Do not do this again; the user's settings are theirs to change."
        ))
    }
}

/// What the model sees of a command that ran: its exit code and (redacted)
/// output, and for a failure its class and a hint.
fn report(ctx: &ToolContext<'_>, r: CmdResult, timeout_s: u64) -> ToolOutput {
    let mut body = if r.output.trim().is_empty() {
        "(no output)".to_string()
    } else {
        // Never into the model's context, the session or the logs.
        ctx.policy.redact(r.output.trim_end())
    };
    if r.leftovers > 0 {
        body.push_str(&format!(
            "\nnote: {} background process(es) it left running were stopped; nothing outlives its command",
            r.leftovers
        ));
    }
    if r.timed_out {
        return ToolOutput {
            ok: false,
            content: format!(
                "timed out after {timeout_s}s; the command and its children were killed. Use a larger timeout_s (max {MAX_TIMEOUT_S}) or a faster command. Output so far:\n{body}"
            ),
            error: Some(ErrorClass::Timeout),
            ..ToolOutput::default()
        };
    }
    if r.cancelled {
        return ToolOutput {
            ok: false,
            content: format!(
                "cancelled by the user (Ctrl-C); the command was stopped. Output so far:\n{body}"
            ),
            error: Some(ErrorClass::CommandFailed),
            ..ToolOutput::default()
        };
    }
    let code = r.exit_code.unwrap_or(-1);
    if code == 0 {
        return ToolOutput {
            ok: true,
            content: format!("exit code 0\n{body}"),
            exit_code: Some(0),
            ..ToolOutput::default()
        };
    }
    let (mut class, mut hint) = classify(code, &r.output);
    if hit_read_only(&r.output) {
        class = ErrorClass::Permission;
        hint = fence::READ_ONLY_HINT.to_string();
    }
    ToolOutput {
        ok: false,
        content: format!("exit code {code}\nhint: {hint}\n{body}"),
        exit_code: Some(code),
        error: Some(class),
        ..ToolOutput::default()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn run(cmd: &str, timeout: u64) -> CmdResult {
        run_command(
            cmd,
            Path::new("/tmp"),
            std::env::vars_os().collect(),
            Duration::from_secs(timeout),
            &CancelToken::new(),
            None,
        )
        .unwrap()
    }

    #[test]
    fn captures_combined_output_and_exit_code() {
        let r = run("echo out; echo err 1>&2; exit 3", 10);
        assert_eq!(r.exit_code, Some(3));
        assert!(
            r.output.contains("out\n") && r.output.contains("err\n"),
            "{}",
            r.output
        );
    }

    #[test]
    fn stdin_is_given_and_stderr_kept_apart_when_asked() {
        let io = Io {
            stdin: Some(b"{\"tool_name\": \"run_cmd\"}".to_vec()),
            split_stderr: true,
        };
        let r = run_command_with(
            "cat; echo; echo to-stderr 1>&2; exit 2",
            Path::new("/tmp"),
            vec![],
            Duration::from_secs(10),
            &CancelToken::new(),
            None,
            io,
        )
        .unwrap();
        assert_eq!(r.exit_code, Some(2));
        assert_eq!(r.output, "{\"tool_name\": \"run_cmd\"}\n");
        assert_eq!(r.stderr, "to-stderr\n");
        // A command that never reads its input is not held up by it.
        let io = Io {
            stdin: Some(vec![b'x'; 1 << 20]),
            split_stderr: true,
        };
        let r = run_command_with(
            "echo done",
            Path::new("/tmp"),
            vec![],
            Duration::from_secs(10),
            &CancelToken::new(),
            None,
            io,
        )
        .unwrap();
        assert_eq!((r.exit_code, r.output.as_str()), (Some(0), "done\n"));
    }

    #[test]
    fn timeout_kills_the_group() {
        let t = Instant::now();
        let r = run("sleep 10 & sleep 10; echo never", 1);
        assert!(r.timed_out);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(!r.output.contains("never"));
    }

    #[test]
    fn cancellation_stops_the_command() {
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            c2.cancel();
        });
        let t = Instant::now();
        let r = run_command(
            "sleep 10",
            Path::new("/tmp"),
            vec![],
            Duration::from_secs(30),
            &cancel,
            None,
        )
        .unwrap();
        assert!(r.cancelled);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    pub(crate) fn alive(pid: i32) -> bool {
        // A zombie waiting for init to reap it counts as ended.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    #[test]
    fn nothing_a_command_starts_outlives_it() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        // Background, nohup'd, setsid'd and double-forked daemons.
        let cmd = format!(
            "sleep 30 & echo $! > {p}; nohup sleep 31 >/dev/null 2>&1 & echo $! >> {p}; \
             setsid sleep 32 >/dev/null 2>&1 < /dev/null & echo $! >> {p}; \
             (setsid sh -c 'sleep 33 & echo $! >> {p}' &) ; sleep 0.3; echo started",
            p = pids.display()
        );
        let r = run(&cmd, 20);
        assert_eq!(r.exit_code, Some(0), "{}", r.output);
        let pids: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        assert_eq!(pids.len(), 4, "{pids:?}");
        std::thread::sleep(Duration::from_millis(100));
        let left: Vec<i32> = pids.into_iter().filter(|p| alive(*p)).collect();
        assert!(left.is_empty(), "still running: {left:?}");
        // The two that left the process group are found only by their run id.
        assert!(r.leftovers >= 2, "{}", r.leftovers);
    }

    #[test]
    fn output_cap_keeps_head_and_tail() {
        let mut c = Capture::default();
        c.push(b"HEAD");
        c.push(&vec![b'x'; 20_000]);
        c.push(b"TAIL");
        let s = c.render();
        assert!(s.starts_with("HEAD"));
        assert!(s.ends_with("TAIL"));
        assert!(
            s.contains(&format!(
                "... {} bytes omitted ...",
                20_008 - OUTPUT_HEAD - OUTPUT_TAIL
            )),
            "{}",
            &s[4000..4200]
        );
        let mut small = Capture::default();
        small.push(b"abc");
        small.push(b"def");
        assert_eq!(small.render(), "abcdef");
    }

    #[test]
    fn classification() {
        assert_eq!(
            classify(1, "ModuleNotFoundError: No module named 'x'").0,
            ErrorClass::MissingDependency
        );
        assert_eq!(
            classify(127, "sh: 1: nosuch: not found").0,
            ErrorClass::MissingDependency
        );
        assert_eq!(
            classify(1, "  File \"x.py\", line 1\nSyntaxError: invalid syntax").0,
            ErrorClass::Syntax
        );
        assert_eq!(
            classify(101, "error[E0308]: mismatched types").0,
            ErrorClass::Syntax
        );
        assert_eq!(
            classify(101, "error[E0432]: unresolved import `foo`").0,
            ErrorClass::MissingDependency
        );
        assert_eq!(
            classify(101, "test result: FAILED. 1 passed; 1 failed").0,
            ErrorClass::TestFailure
        );
        assert_eq!(
            classify(1, "==== 2 failed, 3 passed in 0.2s ====").0,
            ErrorClass::TestFailure
        );
        assert_eq!(
            classify(1, "cat: x: Permission denied").0,
            ErrorClass::Permission
        );
        assert_eq!(classify(2, "something odd").0, ErrorClass::CommandFailed);
        let (_, hint) = classify(
            1,
            "Traceback\nModuleNotFoundError: No module named 'nosuchmod'",
        );
        assert!(hint.contains("No module named 'nosuchmod'"), "{hint}");
    }
}
