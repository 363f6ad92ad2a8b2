//! The OS sandbox for `run_cmd` (Linux, Landlock).
//!
//! The command policy reads command text, and text can be disguised
//! (`python3 -c`, a script the model just wrote). The sandbox is the fence
//! that text cannot get around: it is applied in the child, after fork and
//! before exec, so the shell and everything it starts inherit it.
//!
//! - Files: read anywhere; write, create and delete only inside the workspace
//!   and a private temp dir (`TMPDIR`, removed when the command ends), plus
//!   the harmless device files (`/dev/null`, the terminal).
//! - Network, unless `allow_network = true` in policy.toml: no TCP connect or
//!   bind (Landlock ABI 4, Linux 6.7+), and a network namespace of its own
//!   (no UDP, no DNS) where the system allows one (root, or unprivileged user
//!   namespaces). Neither can tell hosts apart, so a local server on
//!   127.0.0.1 is out of reach too.
//!
//! Without Landlock (older kernels, macOS) commands run unsandboxed and the
//! policy asks before each one, even in yolo mode; `--sandbox off` opts out.

use std::path::PathBuf;

#[cfg(target_os = "linux")]
pub use linux::{enforce, landlock_abi, Prepared};
#[cfg(not(target_os = "linux"))]
pub use other::{enforce, landlock_abi, Prepared};

/// What the sandbox can enforce here, in a sentence (for `doctor`).
pub fn describe() -> Result<String, String> {
    match landlock_abi() {
        Some(abi) if abi >= 4 => Ok(format!(
            "Landlock ABI {abi}: commands write only in the workspace and a private temp dir, \
             and reach no network unless allow_network = true (TCP by Landlock, the rest by a \
             network namespace where the system allows one)"
        )),
        Some(abi) => Ok(format!(
            "Landlock ABI {abi}: commands write only in the workspace and a private temp dir; \
             network blocking needs ABI 4 (Linux 6.7+), so only the command policy stops it"
        )),
        None => Err(
            "this system has no Landlock, so commands cannot be sandboxed and each one \
                     asks first, even in --mode yolo"
                .into(),
        ),
    }
}

/// The rules for one command.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// Folders the command may write under (the workspace, its temp dir).
    pub writable: Vec<PathBuf>,
    pub allow_network: bool,
}

#[cfg(not(target_os = "linux"))]
mod other {
    /// No Landlock outside Linux: commands ask first instead.
    pub fn landlock_abi() -> Option<i32> {
        None
    }

    pub struct Prepared;

    impl super::Sandbox {
        pub fn prepare(&self) -> Result<Prepared, String> {
            Err("no sandbox on this system".into())
        }
    }

    pub fn enforce(_: Prepared) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::Path;

    use landlock::{
        AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
        RulesetCreatedAttr, ABI,
    };

    use super::Sandbox;

    /// The Landlock ABI this kernel speaks, if any.
    pub fn landlock_abi() -> Option<i32> {
        // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
        // only returns the ABI version (or fails); it touches no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32,
            )
        };
        (v > 0).then_some(v as i32)
    }

    /// Devices any command may write (`> /dev/null`, the terminal).
    const WRITABLE_DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/ptmx",
        "/dev/pts",
        "/dev/shm",
    ];

    impl Sandbox {
        /// Builds the ruleset (and, for an offline command, the user-namespace
        /// maps). This runs in the parent, since opening the paths allocates,
        /// which is not safe between fork and exec; the child only calls
        /// [`enforce`].
        pub fn prepare(&self) -> Result<Prepared, String> {
            let offline = (!self.allow_network).then(|| {
                // SAFETY: getuid/getgid cannot fail and touch no memory.
                let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
                (
                    format!("{uid} {uid} 1\n").into_bytes(),
                    format!("{gid} {gid} 1\n").into_bytes(),
                )
            });
            Ok(Prepared {
                ruleset: self.ruleset()?,
                offline,
            })
        }

        fn ruleset(&self) -> Result<RulesetCreated, String> {
            let abi = ABI::V5;
            let fail = |e: &dyn std::fmt::Display| format!("cannot set up the sandbox: {e}");
            let mut ruleset = Ruleset::default()
                .handle_access(AccessFs::from_write(abi))
                .map_err(|e| fail(&e))?;
            if !self.allow_network && landlock_abi().is_some_and(|v| v >= 4) {
                ruleset = ruleset
                    .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                    .map_err(|e| fail(&e))?;
            }
            // Only writes are handled, so reads stay allowed everywhere.
            let write = AccessFs::from_write(abi);
            let mut created = ruleset.create().map_err(|e| fail(&e))?;
            for dir in &self.writable {
                let fd = PathFd::new(dir).map_err(|e| fail(&e))?;
                created = created
                    .add_rule(PathBeneath::new(fd, write))
                    .map_err(|e| fail(&e))?;
            }
            for dev in WRITABLE_DEVICES
                .iter()
                .map(Path::new)
                .filter(|p| p.exists())
            {
                let Ok(fd) = PathFd::new(dev) else { continue };
                let access = if dev.is_dir() {
                    write
                } else {
                    write & AccessFs::from_file(abi)
                };
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| fail(&e))?;
            }
            Ok(created)
        }
    }

    /// What the child enforces: the Landlock ruleset and, when the network
    /// is off, the uid/gid map lines for a network namespace of its own.
    pub struct Prepared {
        ruleset: RulesetCreated,
        offline: Option<(Vec<u8>, Vec<u8>)>,
    }

    /// Restricts the calling process (the command's child, before exec).
    pub fn enforce(prepared: Prepared) -> std::io::Result<()> {
        if let Some((uid_map, gid_map)) = &prepared.offline {
            isolate_network(uid_map, gid_map);
        }
        prepared
            .ruleset
            .restrict_self()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// A network namespace of its own, holding only a loopback that is down:
    /// no UDP, no DNS, no abstract Unix sockets of the host (Landlock covers
    /// TCP only). Privileged, `unshare(CLONE_NEWNET)` is enough; otherwise an
    /// unprivileged user namespace maps our own uid and gid. Where neither is
    /// allowed (user namespaces disabled), Landlock alone applies.
    fn isolate_network(uid_map: &[u8], gid_map: &[u8]) {
        // SAFETY: plain system calls on buffers built before fork; no
        // allocation happens here.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNET) == 0 {
                return;
            }
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                return;
            }
            write_proc(c"/proc/self/setgroups", b"deny");
            write_proc(c"/proc/self/uid_map", uid_map);
            write_proc(c"/proc/self/gid_map", gid_map);
        }
    }

    /// # Safety
    /// Only system calls; safe between fork and exec.
    unsafe fn write_proc(path: &std::ffi::CStr, data: &[u8]) {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, data.as_ptr().cast(), data.len());
            libc::close(fd);
        }
    }
}
