//! The sandbox on Linux: Landlock, plus network and mount namespaces.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

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

pub fn describe() -> Result<String, String> {
    match landlock_abi() {
        Some(abi) if abi >= 4 => Ok(format!(
            "Landlock ABI {abi}: commands write only in the workspace and a private temp dir, \
             and reach no network and no Unix socket of the host's services unless \
             allow_network = true (TCP by Landlock, the rest by network and mount namespaces \
             where the system allows them)"
        )),
        Some(abi) => Ok(format!(
            "Landlock ABI {abi}: commands write only in the workspace and a private temp dir; \
             blocking TCP needs ABI 4 (Linux 6.7+), so only a network namespace (where the \
             system allows one) and the command policy keep commands offline"
        )),
        None => Err(
            "this kernel has no Landlock, so commands cannot be sandboxed and each one asks \
             first, even in --mode yolo"
                .into(),
        ),
    }
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

/// Most host sockets covered per command; a desktop has a few dozen.
const MAX_MASKED_SOCKETS: usize = 512;

/// What the child enforces: the Landlock ruleset and, when the network is
/// off, what it needs to leave the host's network and services behind.
pub struct Prepared {
    ruleset: RulesetCreated,
    offline: Option<Offline>,
}

struct Offline {
    /// uid_map and gid_map lines for an unprivileged user namespace.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Listening Unix sockets of the host, to cover with /dev/null.
    sockets: Vec<CString>,
}

/// Builds the ruleset and, for an offline command, the namespace set-up.
/// This runs in the parent, since opening paths allocates, which is not safe
/// between fork and exec; the child only calls [`enforce`].
pub fn prepare(sandbox: &Sandbox) -> Result<Prepared, String> {
    let offline = (!sandbox.allow_network).then(|| {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let unix = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        Offline {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            sockets: host_sockets(&unix, &sandbox.writable)
                .iter()
                .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
                .collect(),
        }
    });
    Ok(Prepared {
        ruleset: ruleset(sandbox)?,
        offline,
    })
}

pub fn command(prepared: Prepared, program: &str) -> Command {
    let mut cmd = Command::new(program);
    let mut prepared = Some(prepared);
    // SAFETY: runs in the child between fork and exec; `enforce` only makes
    // system calls (unshare, mount, writes to /proc/self, prctl,
    // landlock_restrict_self) on what `prepare` built in the parent.
    unsafe {
        cmd.pre_exec(move || match prepared.take() {
            Some(p) => enforce(p),
            None => Ok(()),
        });
    }
    cmd
}

fn ruleset(sandbox: &Sandbox) -> Result<RulesetCreated, String> {
    let abi = ABI::V5;
    let fail = |e: &dyn std::fmt::Display| format!("cannot set up the sandbox: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_write(abi))
        .map_err(|e| fail(&e))?;
    if !sandbox.allow_network && landlock_abi().is_some_and(|v| v >= 4) {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| fail(&e))?;
    }
    // Only writes are handled, so reads stay allowed everywhere.
    let write = AccessFs::from_write(abi);
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    for dir in &sandbox.writable {
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

/// The host's listening Unix sockets a command must not reach, from the
/// text of `/proc/net/unix`: bound to a path (abstract ones stay behind in
/// the host's network namespace), still a socket on disk, and outside the
/// folders the command may write (its own sockets are its business).
fn host_sockets(proc_net_unix: &str, writable: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = proc_net_unix
        .lines()
        .skip(1)
        // Num RefCount Protocol Flags Type St Inode Path
        .filter_map(|line| line.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| !writable.iter().any(|w| p.starts_with(w)))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()))
        .collect();
    out.sort();
    out.dedup();
    out.truncate(MAX_MASKED_SOCKETS);
    out
}

/// Restricts the calling process (the command's child, before exec).
pub fn enforce(prepared: Prepared) -> std::io::Result<()> {
    if let Some(offline) = &prepared.offline {
        isolate(offline);
    }
    prepared
        .ruleset
        .restrict_self()
        .map(|_| ())
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// A network namespace of its own, holding only a loopback that is down (no
/// UDP, no DNS, none of the host's abstract Unix sockets; Landlock covers
/// TCP), and a mount namespace in which the host's path-bound Unix sockets
/// are /dev/null, so connecting to them fails. Privileged, `unshare` is
/// enough; otherwise an unprivileged user namespace maps our own uid and gid.
/// Where neither is allowed (user namespaces disabled), Landlock alone
/// applies.
fn isolate(offline: &Offline) {
    // SAFETY: plain system calls on buffers built before fork; no allocation
    // happens here.
    unsafe {
        let namespaces = libc::CLONE_NEWNET | libc::CLONE_NEWNS;
        if libc::unshare(namespaces) != 0 {
            if libc::unshare(libc::CLONE_NEWUSER | namespaces) != 0 {
                // A container may allow a network namespace but no mounts.
                libc::unshare(libc::CLONE_NEWNET);
                return;
            }
            write_proc(c"/proc/self/setgroups", b"deny");
            write_proc(c"/proc/self/uid_map", &offline.uid_map);
            write_proc(c"/proc/self/gid_map", &offline.gid_map);
        }
        // Our mounts must not propagate back to the host's namespace.
        let root = c"/";
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return;
        }
        let null = c"/dev/null";
        for socket in &offline.sockets {
            libc::mount(
                null.as_ptr(),
                socket.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_sockets_are_the_path_bound_ones_outside_the_writable_folders() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let host = dir.path().join("docker.sock");
        let own = ws.join("test.sock");
        let _l1 = std::os::unix::net::UnixListener::bind(&host).unwrap();
        let _l2 = std::os::unix::net::UnixListener::bind(&own).unwrap();
        let gone = dir.path().join("gone.sock");
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, "x").unwrap();
        let table = format!(
            "Num       RefCount Protocol Flags    Type St Inode Path\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 1001 {}\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 1002 {}\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 1003 @/tmp/.X11-unix/X0\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 1004 {}\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 1005 {}\n\
             0000000000000000: 00000003 00000000 00000000 0001 03 1006\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 1001 {}\n",
            host.display(),
            own.display(),
            gone.display(),
            plain.display(),
            host.display(),
        );
        assert_eq!(host_sockets(&table, &[ws]), vec![host]);
    }
}
