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

/// What the child enforces: the Landlock ruleset, and the namespaces that
/// leave the host's processes (and, offline, its network and services)
/// behind.
pub struct Prepared {
    ruleset: RulesetCreated,
    namespaces: Namespaces,
    /// The agent's pid: a child whose parent is no longer it was orphaned
    /// before it could arm its death signal, and must not run.
    parent: libc::pid_t,
}

struct Namespaces {
    /// uid_map and gid_map lines for an unprivileged user namespace.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Offline: listening Unix sockets of the host, to cover with /dev/null.
    offline: Option<Vec<CString>>,
}

/// Builds the ruleset and the namespace set-up. This runs in the parent,
/// since opening paths allocates, which is not safe between fork and exec;
/// the child only calls [`enforce`].
pub fn prepare(sandbox: &Sandbox) -> Result<Prepared, String> {
    // SAFETY: getuid/getgid/getpid cannot fail and touch no memory.
    let (uid, gid, parent) = unsafe { (libc::getuid(), libc::getgid(), libc::getpid()) };
    let offline = (!sandbox.allow_network).then(|| {
        let unix = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        host_sockets(&unix, &sandbox.writable)
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect()
    });
    Ok(Prepared {
        ruleset: ruleset(sandbox)?,
        namespaces: Namespaces {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            offline,
        },
        parent,
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
    // SAFETY: prctl and getppid take integers; see `die_with`.
    unsafe { die_with(prepared.parent) };
    // SAFETY: only system calls on what `prepare` built (see `isolate`).
    unsafe { isolate(&prepared.namespaces) };
    prepared
        .ruleset
        .restrict_self()
        .map(|_| ())
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Arms the death signal: when the agent dies (even by `kill -9`), so does
/// this process, and with it (through the PID namespace) everything the
/// command started. Exits at once if the agent is already gone.
///
/// # Safety
/// Only system calls; safe between fork and exec. The signal follows the
/// *thread* that forked: callers spawn and wait on one thread, which
/// `run_command` does.
unsafe fn die_with(parent: libc::pid_t) {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if libc::getppid() != parent {
        libc::_exit(127);
    }
}

/// Namespaces of the command's own, where the system allows them:
/// - a PID namespace with a fresh `/proc`: no process of the host is
///   visible (the agent's environment above all), and when the command's
///   first process ends, or the agent dies, the kernel ends all the rest
///   (background jobs, `setsid` daemons);
/// - a mount namespace (the `/proc` above, the masked sockets below);
/// - offline, a network namespace holding only a loopback that is down (no
///   UDP, no DNS, none of the host's abstract Unix sockets; Landlock covers
///   TCP), with the host's path-bound Unix sockets covered by /dev/null.
///
/// Privileged, `unshare` is enough; otherwise an unprivileged user namespace
/// maps our own uid and gid. Where neither is allowed (user namespaces
/// disabled), Landlock alone applies (and offline, a network namespace
/// where a container allows just that).
///
/// A new PID namespace takes effect for the children of the process that
/// made it, so this process forks once: the child becomes the namespace's
/// first process and goes on to exec the command; this one stays behind
/// only to wait for it and pass its exit status on.
///
/// # Safety
/// Plain system calls on buffers built before fork; no allocation.
unsafe fn isolate(ns: &Namespaces) {
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if ns.offline.is_some() {
        flags |= libc::CLONE_NEWNET;
    }
    if libc::unshare(flags) != 0 {
        if libc::unshare(libc::CLONE_NEWUSER | flags) != 0 {
            if ns.offline.is_some() {
                // A container may allow a network namespace but no mounts.
                libc::unshare(libc::CLONE_NEWNET);
            }
            return;
        }
        // The agent is not dumpable (its /proc entry is closed to other
        // processes), and neither is this child until it execs: the maps
        // below are files of its own /proc entry.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        write_proc(c"/proc/self/setgroups", b"deny");
        write_proc(c"/proc/self/uid_map", &ns.uid_map);
        write_proc(c"/proc/self/gid_map", &ns.gid_map);
    }
    // Our mounts must not propagate back to the host's namespace.
    let private = libc::mount(
        std::ptr::null(),
        c"/".as_ptr(),
        std::ptr::null(),
        libc::MS_REC | libc::MS_PRIVATE,
        std::ptr::null(),
    ) == 0;
    if private {
        for socket in ns.offline.iter().flatten() {
            libc::mount(
                c"/dev/null".as_ptr(),
                socket.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            );
        }
    }
    // Fork without glibc's atfork handlers: only system calls from here.
    let child = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
    if child < 0 {
        return; // no PID namespace after all; the command runs here
    }
    if child > 0 {
        wait_and_pass_on(child as libc::pid_t);
    }
    // The namespace's first process: dies with the one waiting for it
    // (whose pid, outside this namespace, it cannot see to check).
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if private {
        // A `/proc` of this namespace: the host's processes are not in it.
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        );
    }
}

/// The process left outside the PID namespace: holds no file (so pipes
/// reach end-of-file when the command's processes are done, and `spawn`'s
/// exec-error pipe belongs to the child alone), waits for the namespace's
/// first process, and exits as it did.
///
/// # Safety
/// Only system calls; never returns.
unsafe fn wait_and_pass_on(child: libc::pid_t) -> ! {
    if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
        for fd in 0..1024 {
            libc::close(fd);
        }
    }
    let mut status = 0;
    loop {
        let r = libc::waitpid(child, &mut status, 0);
        if r == child {
            break;
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(127);
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(libc::WEXITSTATUS(status))
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
