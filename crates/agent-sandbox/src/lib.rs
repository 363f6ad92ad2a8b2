//! The OS sandbox for `run_cmd` and the checkers run after edits.
//!
//! The command policy reads command text, and text can be disguised
//! (`python3 -c`, a script the model just wrote). The sandbox is the fence
//! that text cannot get around: the kernel enforces it on the command's
//! process, so the shell and everything it starts inherit it.
//!
//! - Files: read anywhere; write, create and delete only inside the workspace
//!   and a private temp dir (`TMPDIR`, removed when the command ends), plus
//!   the harmless device files (`/dev/null`, the terminal).
//! - Network, unless `allow_network = true` in policy.toml: no TCP, UDP or
//!   DNS, and no Unix sockets of the host's services (the Docker daemon, the
//!   session bus, an ssh-agent), which would let a command act outside the
//!   fence. Sockets the command makes itself in the workspace or its temp
//!   dir still work (test servers, multiprocessing).
//!
//! Linux ([`linux`]): Landlock for files and TCP, applied in the child
//! between fork and exec; a network namespace of its own for the rest, and a
//! mount namespace where the host's listening Unix sockets are covered by
//! `/dev/null`. macOS ([`seatbelt`]): the same rules as a Seatbelt profile
//! for `/usr/bin/sandbox-exec`. Elsewhere, or on a kernel without Landlock,
//! commands run unsandboxed and the policy asks before each one, even in
//! yolo mode; `--sandbox off` opts out.

use std::path::PathBuf;
use std::process::Command;

#[cfg(target_os = "linux")]
mod linux;
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
/// A sandbox made ready in the parent: everything that allocates or reads
/// files is done there, since the child may only make system calls.
pub use platform::Prepared;

/// The rules for one command.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// Folders the command may write under (the workspace, its temp dir).
    pub writable: Vec<PathBuf>,
    pub allow_network: bool,
}

impl Sandbox {
    pub fn prepare(&self) -> Result<Prepared, String> {
        platform::prepare(self)
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
