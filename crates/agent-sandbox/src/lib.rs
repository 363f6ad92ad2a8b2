//! The OS sandbox for `run_cmd` and the checkers run after edits.
//!
//! The command policy reads command text, and text can be disguised
//! (`python3 -c`, a script the model just wrote). The sandbox is the fence
//! that text cannot get around: the kernel enforces it on the command's
//! process, so the shell and everything it starts inherit it. Nothing is
//! restored after the fact: what the kernel refuses never happens.
//!
//! - Files: read anywhere but the hidden set ([`Sandbox::deny_read`]: the
//!   user's credentials, the agent's own config and state) and the home
//!   folder beyond the toolchains' folders ([`Sandbox::home`]); write, create and
//!   delete only inside the workspace and a private temp dir (`TMPDIR`,
//!   removed when the command ends), except the read-only set inside them
//!   ([`Sandbox::read_only`]: `.git`, `.agent/`, `.mcp.json`, `AGENTS.md`,
//!   ...), plus the harmless device files (`/dev/null`, the terminal).
//! - Network, unless `allow_network = true` in policy.toml: no TCP, UDP or
//!   DNS, and no Unix sockets of the host's services (the Docker daemon, the
//!   session bus, an ssh-agent, a database listening in the workspace),
//!   which would let a command act outside the fence. Sockets the command
//!   makes itself still work (test servers, multiprocessing). With an
//!   [`Allowlist`] (Linux), the same, but for one way out: the agent's
//!   proxy ([`proxy`]), which connects only to the hosts it allows.
//! - The workspace as a copy-on-write layer ([`Sandbox::overlay`], Linux
//!   with overlayfs in user namespaces, 5.11+): the command's writes land in
//!   a folder of the caller's, which decides what reaches the workspace;
//!   the workspace itself is never written (but the bypass folders).
//! - Privilege: no capabilities, even when the agent runs as root; no device
//!   nodes made; a minimal `/dev`; limits on processes, memory, file size
//!   and CPU time ([`Limits`]).
//!
//! Linux ([`linux`]): a user, mount, PID and (offline) network namespace,
//! bind mounts for the read-only and hidden sets, then Landlock for writes
//! and TCP, all applied in the child between fork and exec, as codex-rs's
//! `linux-sandbox` and bubblewrap do. Where user namespaces are not allowed
//! (and the agent is not root), Landlock alone applies: the read-only and
//! hidden sets and the process limit are then NOT enforced, and
//! [`describe`] says so. macOS ([`seatbelt`]): the write and network rules as
//! a Seatbelt profile for `/usr/bin/sandbox-exec`. Elsewhere, or on a kernel
//! without Landlock, commands run unsandboxed and the policy asks before
//! each one, even in yolo mode; `--sandbox off` opts out.

use std::path::PathBuf;
use std::process::Command;

#[cfg(target_os = "linux")]
mod linux;
pub mod proxy;
#[cfg(any(target_os = "macos", test))]
mod seatbelt;

#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(target_os = "macos")]
use seatbelt as platform;

/// What every platform provides: whether and how it can sandbox.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod platform {
    use std::process::Command;

    pub fn landlock_abi() -> Option<i32> {
        None
    }

    pub fn describe() -> Result<String, String> {
        Err(
            "this system has no command sandbox (Linux Landlock or macOS sandbox-exec), \
             so each command asks first, even in --mode yolo"
                .into(),
        )
    }

    pub fn support() -> super::Support {
        super::Support::default()
    }

    pub fn overlay_support(_: &std::path::Path) -> Result<(), String> {
        Err("no copy-on-write layer on this system".into())
    }

    pub struct Prepared;

    pub fn prepare(_: &super::Sandbox) -> Result<Prepared, String> {
        Err("no sandbox on this system".into())
    }

    pub fn command(_: Prepared, program: &str) -> Command {
        Command::new(program)
    }
}

/// What the sandbox can enforce here, in a sentence (for `doctor`); the
/// error says why there is none.
pub use platform::describe;
/// The Landlock ABI this kernel speaks, if any (`None` off Linux).
pub use platform::landlock_abi;
/// Whether commands' writes can go to a copy-on-write layer whose upper
/// folder lives under `scratch` (probed once per process, in a throwaway
/// child: overlayfs in the command's namespaces, on that file system);
/// the error says why not.
pub use platform::overlay_support;
/// What this system lets the sandbox do, probed once.
pub use platform::support;
/// A sandbox made ready in the parent: everything that allocates or reads
/// files is done there, since the child may only make system calls.
pub use platform::Prepared;
pub use proxy::{Allowlist, Attempt};

/// The rules for one command.
#[derive(Debug, Clone, Default)]
pub struct Sandbox {
    /// Folders the command may write under (the workspace, its temp dir).
    pub writable: Vec<PathBuf>,
    pub allow_network: bool,
    /// The network allowlist, which wins over `allow_network`: the command
    /// is offline but for a proxy of the agent's ([`proxy`]) that connects
    /// only where the allowlist says (Linux; elsewhere preparing fails).
    pub allowlist: Option<Allowlist>,
    /// Paths inside `writable` the command may read but not change, nor
    /// rename or delete (bind-mounted read-only onto themselves: a write
    /// fails with EROFS, a rename or removal with EBUSY). Missing ones are
    /// skipped.
    pub read_only: Vec<PathBuf>,
    /// Paths the command cannot read: an empty read-only tmpfs over a
    /// folder, `/dev/null` over a file. Missing ones, and ones that hold a
    /// writable folder (hiding it would hide the workspace), are skipped.
    pub deny_read: Vec<PathBuf>,
    pub limits: Limits,
    /// The home folder hidden (an empty tmpfs over it), but for what
    /// [`Home::keep`] names and every writable or read-only path inside it,
    /// bound back as they are (Linux, with the mounts).
    pub home: Option<Home>,
    /// The workspace as a copy-on-write layer: the command's writes under
    /// [`Overlay::root`] land in [`Overlay::upper`], for the caller to
    /// admit, and the folder itself is never written.
    pub overlay: Option<Overlay>,
}

/// The user's home folder as a command sees it.
#[derive(Debug, Clone, Default)]
pub struct Home {
    pub dir: PathBuf,
    /// Files and folders inside it the command still sees (toolchains,
    /// caches); missing ones are skipped.
    pub keep: Vec<PathBuf>,
}

/// An overlayfs over one writable folder (Linux, where [`Support::overlay`]).
///
/// The command sees `root` as it was, with its own changes on top; new,
/// changed and deleted files (whiteouts: character devices 0/0) and folders
/// whose old contents it replaced (opaque: the `user.overlay.opaque` or
/// `trusted.overlay.opaque` attribute) are in `upper` when it ends.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// The folder the command writes through the layer (one of `writable`).
    pub root: PathBuf,
    /// Empty folders on one file system, outside `root`.
    pub upper: PathBuf,
    pub work: PathBuf,
    /// Folders inside `root` written directly, not through the layer (build
    /// output such as `target/`): bound over the layer as they are.
    pub bypass: Vec<PathBuf>,
}

/// Per-command resource limits (`None`: the system's own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads the command may have at once.
    pub processes: Option<u64>,
    /// Data (heap) of each process, MiB.
    pub memory_mb: Option<u64>,
    /// Largest file a process may write, MiB.
    pub file_size_mb: Option<u64>,
    /// CPU seconds of each process.
    pub cpu_s: Option<u64>,
}

/// What the kernel here lets the sandbox enforce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Support {
    /// Landlock ABI: writes fenced (and TCP from 4).
    pub landlock: Option<i32>,
    /// A user namespace of the command's own: the read-only and hidden sets,
    /// a minimal `/dev`, the process limit, no capabilities even as root.
    pub user_namespace: bool,
    /// A mount namespace without a user namespace (the agent is root):
    /// the same mounts, with capabilities dropped by hand.
    pub mount_namespace: bool,
    /// The agent runs as root.
    pub root: bool,
    /// A memory cgroup can be made per command: its memory limit holds all
    /// its processes (and its /dev/shm), not each process's heap alone.
    pub memory_cgroup: bool,
}

impl Support {
    /// Whether the read-only and hidden sets are enforced by mounts.
    pub fn mounts(&self) -> bool {
        self.user_namespace || self.mount_namespace
    }
}

impl Sandbox {
    /// Writes only in `writable`, offline, nothing else set.
    pub fn new(writable: Vec<PathBuf>) -> Self {
        Self {
            writable,
            ..Self::default()
        }
    }

    pub fn prepare(&self) -> Result<Prepared, String> {
        platform::prepare(self)
    }

    /// Whether the command gets a network namespace of its own (no network
    /// at all, or only the allowlist's proxy).
    pub fn offline(&self) -> bool {
        !self.allow_network || self.allowlist.is_some()
    }

    /// The variables that point the command's HTTP clients at the
    /// allowlist's proxy (none without an allowlist): set them after
    /// clearing the environment.
    pub fn proxy_env(&self) -> Vec<(&'static str, String)> {
        match self.allowlist {
            Some(_) => proxy::env(),
            None => Vec::new(),
        }
    }
}

/// Whether this system can sandbox commands at all.
pub fn available() -> bool {
    describe().is_ok()
}

/// A command for `program` that runs inside `prepared`; the caller adds the
/// arguments, environment and pipes as for any other command.
pub fn command(prepared: Prepared, program: &str) -> Command {
    platform::command(prepared, program)
}
