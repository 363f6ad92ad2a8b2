//! The sandbox on Linux: a user, mount, PID and network namespace of the
//! command's own, bind mounts for the read-only and hidden sets, a minimal
//! `/dev`, limits, no capabilities, then Landlock.
//!
//! Everything that allocates or reads files is done here, in the parent
//! ([`prepare`]); the child, between fork and exec, only makes system calls
//! on what was built ([`child`]). What holds, as codex-rs's `linux-sandbox`
//! and bubblewrap (`--ro-bind`, `--tmpfs`, `--dev`, `--cap-drop ALL`) have it:
//!
//! - *A user namespace of its own, always*, also when the agent is root (uid
//!   and gid mapped to themselves), plus mount, PID and (offline) network
//!   namespaces. The mounts below need it; without it (user namespaces
//!   disabled, not root) Landlock alone applies, and [`describe`] and `agent
//!   doctor` say exactly which of these guarantees are then missing.
//! - *The read-only set* is bind-mounted onto itself read-only
//!   (`mount_setattr`, or a remount keeping the locked flags), before
//!   Landlock: writes fail with EROFS, renames and removals with EBUSY.
//! - *The hidden set*: an empty read-only tmpfs over a folder, `/dev/null`
//!   over a file (only those that exist and do not hold the workspace). The
//!   home folder is an empty tmpfs with the allowed folders and every
//!   writable or read-only path inside it bound back, opened before the tmpfs
//!   covers them.
//! - *No privilege*: bounding and ambient sets cleared, securebits
//!   `NOROOT|NO_SETUID_FIXUP` locked (uid 0 regains nothing at exec), the
//!   effective, permitted and inheritable sets emptied, `no_new_privs`;
//!   Landlock never grants `MakeChar`/`MakeBlock`; `/dev` is a tmpfs holding
//!   only null, zero, full, random, urandom, tty, a devpts of its own and
//!   `/dev/shm`.
//! - *Limits* per command ([`Limits`]): processes (RLIMIT_NPROC, counted per
//!   user namespace; root is exempt from it, so for root a pids cgroup where
//!   one is writable), memory (a memory cgroup of the command's where one is
//!   writable, holding all its processes and its `/dev/shm`, a tmpfs of a
//!   quarter of the limit; RLIMIT_DATA per process besides, not RLIMIT_AS,
//!   which breaks V8 and Go), file size, CPU seconds. A command's cgroup is
//!   named by pid, time made and count, so no folder left by an earlier
//!   holder of a reused pid is taken for it; those of finished commands are
//!   swept.
//! - *Fail closed*: once the namespace is ours, a mount that fails fails the
//!   command, and so does a pids cgroup that cannot be made where one is
//!   promised: a command never runs believing itself fenced when it is not.
//! - *Network*: Landlock cannot exclude one folder from a writable tree
//!   (hence the mounts) and covers TCP only, so an offline command also gets
//!   a network namespace of its own (skipped where the system forbids it),
//!   and in its mount namespace every path-bound Unix socket the host
//!   listens on (read from `/proc/net/unix` before the fork) is covered by
//!   `/dev/null`: the Docker socket would otherwise be a way out. Neither
//!   tells hosts apart: `allow_network = false` also blocks 127.0.0.1.
//! - *The network allowlist* ([`crate::proxy`]): offline as above, but the
//!   child brings its namespace's loopback up, makes a socket listening on
//!   127.0.0.1:[`crate::proxy::PORT`] there and sends it to the agent over
//!   a socket pair (a socket belongs to the namespace it was made in); the
//!   agent serves it from its own namespace, so nothing of the proxy runs
//!   inside, and the command keeps no copy. Landlock allows TCP connects
//!   to that port alone. The process that waits for the command keeps its
//!   end of the pair, whose hang-up stops the proxy. A namespace the child
//!   cannot configure fails the command: a list never opens everything.

mod child;

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use landlock::{
    AccessFs, AccessNet, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, ABI,
};

use super::{Limits, Sandbox, Support};

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

/// What this system lets the sandbox do, probed once (in a throwaway child).
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let user_namespace = child::probe(true);
        Support {
            landlock: landlock_abi(),
            user_namespace,
            mount_namespace: !user_namespace && root && child::probe(false),
            root,
            memory_cgroup: child::cgroup_base("memory").is_some(),
        }
    })
}

/// A layer whose upper folder says all by itself: every changed file whole
/// (no metacopy, whose data stays below), a renamed folder copied (no
/// redirect), whatever the kernel's defaults; what the caller reads is
/// files, whiteouts and opaque folders only.
const PLAIN_LAYER: &str = "metacopy=off,redirect_dir=nofollow,";

/// The mount options of a layer: `userxattr` in a user namespace (its marks
/// are `user.overlay.*` attributes), [`PLAIN_LAYER`], and its three folders.
fn layer_options(user: bool, [lower, upper, work]: [impl std::fmt::Display; 3]) -> String {
    format!(
        "{}{PLAIN_LAYER}lowerdir={lower},upperdir={upper},workdir={work}",
        if user { "userxattr," } else { "" }
    )
}

/// Whether a copy-on-write layer with its upper folder under `scratch` can
/// be mounted in a command's namespaces: probed once per process, in a
/// throwaway child, with a file deleted through it (a whiteout needs the
/// file system's extended attributes and the kernel's leave).
pub fn overlay_support(scratch: &Path) -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED.get_or_init(|| probe_overlay(scratch)).clone()
}

fn probe_overlay(scratch: &Path) -> Result<(), String> {
    let s = support();
    if !s.mounts() {
        return Err("no mount namespace for commands here (user namespaces are off)".into());
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let dir = scratch.join(format!("probe-{}-{nanos}", std::process::id()));
    let made = (|| {
        for sub in ["lower", "upper", "work"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        std::fs::write(dir.join("lower/a"), "a")
    })();
    let result = match made {
        Err(e) => Err(format!(
            "cannot make a layer under {}: {e}",
            scratch.display()
        )),
        Ok(()) => {
            let options = layer_options(
                s.user_namespace,
                [&dir.join("lower"), &dir.join("upper"), &dir.join("work")].map(|p| p.display()),
            );
            match (cstring(&dir.join("lower")), CString::new(options)) {
                (Some(target), Ok(options)) => {
                    child::probe_overlay(s.user_namespace, &target, &options)
                        .map_err(|e| format!("overlayfs over {}: {e}", scratch.display()))
                }
                _ => Err(format!("{} is not a usable path", scratch.display())),
            }
        }
    };
    // The work folder holds a root-owned, mode-0 `work` inside.
    let _ = std::fs::remove_dir_all(&dir);
    result
}

pub fn describe() -> Result<String, String> {
    let Some(abi) = landlock_abi() else {
        return Err(
            "this kernel has no Landlock, so commands cannot be sandboxed and each one asks \
             first, even in --mode yolo"
                .into(),
        );
    };
    let s = support();
    let mut text = if abi >= 4 {
        format!(
            "Landlock ABI {abi}: commands write only in the workspace and a private temp dir, \
             and reach no network and no Unix socket of the host's services unless \
             allow_network = true"
        )
    } else {
        format!(
            "Landlock ABI {abi}: commands write only in the workspace and a private temp dir; \
             blocking TCP needs ABI 4 (Linux 6.7+), so only a network namespace and the \
             command policy keep commands offline"
        )
    };
    if s.mounts() {
        text.push_str(&format!(
            "; {}: the read-only set (.git, .agent/, .mcp.json, AGENTS.md, protected_paths) \
             is bind-mounted read-only and the deny-read set hidden; /dev is minimal; no \
             capabilities (bounding and ambient sets cleared, securebits noroot, \
             no_new_privs); no device nodes; limits: {}",
            if s.user_namespace {
                "a user namespace of its own"
            } else {
                "a mount namespace (no user namespace here; capabilities dropped by hand)"
            },
            process_limit_note(&s)
        ));
    } else {
        text.push_str(
            "; NO user namespace here (disabled, or refused to this user): Landlock alone. \
             The read-only set (.git, .agent/, AGENTS.md) is NOT protected from commands \
             (only the check after each command is), the deny-read set (credentials) is \
             readable, /dev is the host's, and the process limit is not applied; memory, \
             file size and CPU limits still are",
        );
    }
    Ok(text)
}

/// How the limits are enforced here.
fn process_limit_note(s: &Support) -> String {
    let memory = if s.memory_cgroup {
        "memory by a cgroup of the command's (all its processes, its /dev/shm included)"
    } else {
        "memory (RLIMIT_DATA, per process)"
    };
    if !s.root {
        format!(
            "processes by RLIMIT_NPROC (counted in the command's own user namespace), {memory}, \
             file size, CPU time"
        )
    } else if child::pids_cgroup_base().is_some() {
        format!(
            "processes by a pids cgroup (root is exempt from RLIMIT_NPROC), {memory}, file size, \
             CPU time"
        )
    } else {
        format!(
            "{memory}, file size, CPU time; the process limit is NOT enforced (root is exempt \
             from RLIMIT_NPROC and no pids cgroup is writable)"
        )
    }
}

/// Devices any command may write (`> /dev/null`, the terminal), when the
/// host's `/dev` is all there is.
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

/// What the child enforces: the namespaces and mounts, the limits, the
/// Landlock ruleset.
pub struct Prepared {
    ruleset: RulesetCreated,
    child: child::Plan,
}

/// Builds the ruleset and the plan for the child. This runs in the parent,
/// since opening paths allocates, which is not safe between fork and exec;
/// the child only calls [`enforce`].
pub(crate) fn prepare(sandbox: &Sandbox) -> Result<Prepared, String> {
    // SAFETY: getuid/getgid/getpid cannot fail and touch no memory.
    let (uid, gid, parent) = unsafe { (libc::getuid(), libc::getgid(), libc::getpid()) };
    let offline = sandbox.offline().then(|| {
        let unix = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        host_sockets(&unix)
            .iter()
            .filter_map(|p| cstring(p))
            .collect()
    });
    let ruleset = ruleset(sandbox)?;
    let fail = |e: &dyn std::fmt::Display| format!("cannot set up the sandbox: {e}");
    let proxy = match &sandbox.allowlist {
        Some(allow) => Some(start_proxy(allow.clone())?),
        None => None,
    };
    let overlay = match &sandbox.overlay {
        Some(o) => Some(overlay_plan(o).map_err(|e| fail(&e))?),
        None => None,
    };
    let ruleset_fd: Option<OwnedFd> = ruleset.try_clone().map_err(|e| fail(&e))?.into();
    let (dev_dir, dev_file) = device_access();
    let (hide_dirs, hide_files) = hidden(sandbox);
    let limits = rlimits(&sandbox.limits);
    let root = uid == 0;
    // Root is exempt from RLIMIT_NPROC: a pids cgroup holds its commands,
    // where one can be made (`doctor` says which). Memory is held by a
    // cgroup of the command's wherever one can be made: all its processes
    // together, its /dev/shm included (RLIMIT_DATA counts one process).
    const MIB: u64 = 1024 * 1024;
    let processes = sandbox.limits.processes.filter(|_| root);
    let memory = sandbox.limits.memory_mb.map(|m| m * MIB);
    let cgroup_procs = child::command_cgroups(processes, memory).map_err(|e| {
        fail(&format!(
            "cannot make a cgroup for the command's limits: {e}"
        ))
    })?;
    // A quarter of the memory limit, at most 1 GiB: enough for Python's
    // multiprocessing and a test's shared memory, not a way around it.
    let shm_mb = sandbox
        .limits
        .memory_mb
        .map_or(1024, |m| (m / 4).clamp(16, 1024));
    let shm_options = CString::new(format!("mode=1777,size={shm_mb}m")).map_err(|e| fail(&e))?;
    Ok(Prepared {
        ruleset,
        child: child::Plan {
            parent,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            offline,
            proxy,
            read_only: read_only(sandbox),
            hide_dirs,
            hide_files,
            host_devices: WRITABLE_DEVICES
                .iter()
                .map(Path::new)
                .filter(|p| p.exists())
                .filter_map(|p| Some((cstring(p)?, p.is_dir())))
                .collect(),
            ruleset_fd,
            dev_dir,
            dev_file,
            limits,
            processes: sandbox.limits.processes.map(|n| n as libc::rlim_t),
            cgroup_procs,
            shm_options,
            // A layer is never silently dropped: without the mounts the
            // command would write the workspace itself.
            expect_mounts: support().mounts() || overlay.is_some(),
            overlay,
            home: home_plan(sandbox),
        },
    })
}

/// The allowlist's proxy, started for one command: a thread that waits for
/// the listening socket the child makes in its network namespace, then
/// serves it until the command is done (the socket pair hangs up). Returns
/// the child's end. Needs a network namespace the child can configure
/// (a user namespace, or root): without one, a list fails closed.
fn start_proxy(allow: crate::Allowlist) -> Result<OwnedFd, String> {
    use std::os::fd::FromRawFd;
    if !support().mounts() {
        return Err(
            "allow_network as a list of hosts needs a network namespace of the command's own, \
             which this system refuses (user namespaces are off); set allow_network = true or \
             false"
                .into(),
        );
    }
    let mut fds = [-1; 2];
    // SAFETY: socketpair fills the array we own with two new descriptors.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(format!(
            "cannot set up the network allowlist: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both are new descriptors nothing else owns.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    std::thread::Builder::new()
        .name("agent-netproxy".into())
        .spawn(move || {
            if let Some(listener) = child::receive_fd(&ours) {
                crate::proxy::serve(std::net::TcpListener::from(listener), ours, allow);
            }
        })
        .map_err(|e| format!("cannot start the network allowlist's proxy: {e}"))?;
    Ok(theirs)
}

/// The overlay as the child mounts it: a handle held on each folder here
/// reserves the number the child's own handle takes ([`child::OverlayPlan`]).
fn overlay_plan(o: &super::Overlay) -> std::io::Result<child::OverlayPlan> {
    use std::os::fd::AsRawFd;
    let nul = || std::io::Error::other("a path with a NUL byte");
    let mut reopen = Vec::new();
    let mut folders = vec![&o.root, &o.upper, &o.work];
    // Only folders inside the workspace, and only ones that exist.
    folders.extend(
        o.bypass
            .iter()
            .filter(|d| d.starts_with(&o.root) && **d != o.root && d.is_dir()),
    );
    for dir in folders {
        let c = cstring(dir).ok_or_else(nul)?;
        let fd = std::fs::File::open(dir)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        reopen.push((c, OwnedFd::from(fd)));
    }
    let fd = |i: usize| reopen[i].1.as_raw_fd();
    let options = |user: bool| {
        let [lower, upper, work] = [0, 1, 2].map(|i| format!("/proc/self/fd/{}", fd(i)));
        CString::new(layer_options(user, [lower, upper, work])).map_err(std::io::Error::other)
    };
    Ok(child::OverlayPlan {
        target: cstring(&o.root).ok_or_else(nul)?,
        options_user: options(true)?,
        options_root: options(false)?,
        reopen,
    })
}

/// The home folder to hide, where the mounts are had: what it keeps, and
/// every writable, read-only and layered path inside it, none inside
/// another (a recursive bind brings those along). None when the home
/// folder is the root, holds nothing, or lies in what the command writes.
fn home_plan(sandbox: &Sandbox) -> Option<child::HomePlan> {
    let home = sandbox.home.as_ref()?;
    let dir = home.dir.canonicalize().ok()?;
    if !support().mounts() || dir == Path::new("/") {
        return None;
    }
    if sandbox.writable.iter().any(|w| dir.starts_with(w)) {
        return None;
    }
    let mut keep: Vec<PathBuf> = home
        .keep
        .iter()
        .chain(&sandbox.writable)
        .chain(&sandbox.read_only)
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| p.starts_with(&dir) && *p != dir)
        .collect();
    keep.sort();
    keep.dedup();
    // Sorted, a path's parent comes first: keep only the outermost.
    let mut outer: Vec<PathBuf> = Vec::new();
    for p in keep {
        if !outer.iter().any(|o| p.starts_with(o)) {
            outer.push(p);
        }
    }
    outer.truncate(child::MAX_HOME_KEEP);
    Some(child::HomePlan {
        dir: cstring(&dir)?,
        keep: outer
            .iter()
            .filter_map(|p| Some((cstring(p)?, p.is_dir())))
            .collect(),
    })
}

fn cstring(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// The read-only set as the child mounts it: paths that exist, with the
/// flags their mount has now (a remount inside a user namespace must keep
/// them: the kernel locks nosuid, nodev, noexec and atime flags).
fn read_only(sandbox: &Sandbox) -> Vec<(CString, libc::c_ulong)> {
    let mut out = Vec::new();
    for path in &sandbox.read_only {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        let Some(c) = cstring(path) else { continue };
        // SAFETY: statvfs fills the struct we own from a NUL-terminated path.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            continue;
        }
        let pairs = [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
            (libc::ST_NOATIME, libc::MS_NOATIME),
            (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            (libc::ST_RELATIME, libc::MS_RELATIME),
        ];
        let mut flags = pairs
            .iter()
            .filter(|(st_bit, _)| st.f_flag & st_bit != 0)
            .fold(0, |acc, (_, ms_bit)| acc | ms_bit);
        if flags & (libc::MS_NOATIME | libc::MS_RELATIME) == 0 {
            flags |= libc::MS_STRICTATIME;
        }
        out.push((c, flags));
    }
    out.sort();
    out.dedup();
    out
}

/// The deny-read set split into folders (an empty tmpfs over them) and
/// files (`/dev/null` over them): only paths that exist and hold no
/// writable folder.
fn hidden(sandbox: &Sandbox) -> (Vec<CString>, Vec<CString>) {
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    for path in &sandbox.deny_read {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        let holds_writable = sandbox.writable.iter().any(|w| {
            let w = w.canonicalize().unwrap_or_else(|_| w.clone());
            w.starts_with(&real)
        });
        if holds_writable {
            continue;
        }
        let Some(c) = cstring(path) else { continue };
        if meta.is_dir() {
            dirs.push(c);
        } else {
            files.push(c);
        }
    }
    (dirs, files)
}

/// The limits as `setrlimit` takes them (the process limit apart: it only
/// means something in the command's own user namespace). Never above the
/// agent's own hard limits.
fn rlimits(limits: &Limits) -> Vec<(libc::__rlimit_resource_t, libc::rlim_t)> {
    const MIB: u64 = 1024 * 1024;
    let wanted = [
        (libc::RLIMIT_DATA, limits.memory_mb.map(|m| m * MIB)),
        (libc::RLIMIT_FSIZE, limits.file_size_mb.map(|m| m * MIB)),
        (libc::RLIMIT_CPU, limits.cpu_s),
    ];
    wanted
        .into_iter()
        .filter_map(|(resource, value)| {
            let value = value? as libc::rlim_t;
            // SAFETY: getrlimit fills the struct we own.
            let mut now: libc::rlimit = unsafe { std::mem::zeroed() };
            unsafe { libc::getrlimit(resource, &mut now) };
            Some((resource, value.min(now.rlim_max)))
        })
        .collect()
}

/// Everything a write can do except make device nodes, for folders and for
/// files (as the kernel here knows them): what the child grants on `/dev`.
fn device_access() -> (u64, u64) {
    let abi = ABI::from(landlock_abi().unwrap_or(0).min(5));
    let write = AccessFs::from_write(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let file = write & AccessFs::from_file(abi);
    (write.bits(), file.bits())
}

pub(crate) fn command(prepared: Prepared, program: &str) -> Command {
    let mut cmd = Command::new(program);
    let mut prepared = Some(prepared);
    // SAFETY: runs in the child between fork and exec; `enforce` only makes
    // system calls (unshare, mount, prctl, setrlimit, capset, writes to
    // /proc/self, landlock_*) on what `prepare` built in the parent.
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
    let fence_tcp = sandbox.offline() && landlock_abi().is_some_and(|v| v >= 4);
    if fence_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| fail(&e))?;
    }
    // Only writes are handled, so reads stay allowed everywhere (the
    // deny-read set is hidden by mounts). No folder may get a device node:
    // `mknod` of a disk or of `/dev/kmsg` in the workspace is refused.
    let write = AccessFs::from_write(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    // The allowlist's one way out: the proxy's port (the namespace holds
    // nothing else to connect to but the command's own listeners).
    if fence_tcp && sandbox.allowlist.is_some() {
        created = created
            .add_rule(NetPort::new(crate::proxy::PORT, AccessNet::ConnectTcp))
            .map_err(|e| fail(&e))?;
    }
    // The layer's folder gets its rule in the child, once the layer is
    // mounted (Landlock ties a rule to the folder's inode, and the mount's
    // root is another one); the folder beneath stays unwritable.
    let layered = sandbox.overlay.as_ref().map(|o| &o.root);
    for dir in sandbox.writable.iter().filter(|d| Some(*d) != layered) {
        let fd = PathFd::new(dir).map_err(|e| fail(&e))?;
        created = created
            .add_rule(PathBeneath::new(fd, write))
            .map_err(|e| fail(&e))?;
    }
    Ok(created)
}

/// The host's listening Unix sockets a command must not reach, from the
/// text of `/proc/net/unix`: bound to a path (abstract ones stay behind in
/// the host's network namespace) and still a socket on disk. Those inside
/// the workspace too (a dev server's, a database's): every one listening
/// before the command starts is another program's; the sockets the command
/// binds itself come after and work.
fn host_sockets(proc_net_unix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = proc_net_unix
        .lines()
        .skip(1)
        // Num RefCount Protocol Flags Type St Inode Path
        .filter_map(|line| line.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()))
        .collect();
    out.sort();
    out.dedup();
    out.truncate(MAX_MASKED_SOCKETS);
    out
}

/// Restricts the calling process (the command's child, before exec).
pub(crate) fn enforce(prepared: Prepared) -> std::io::Result<()> {
    // SAFETY: only system calls on what `prepare` built (see `child`).
    unsafe { child::enforce(&prepared.child)? };
    prepared
        .ruleset
        .restrict_self()
        .map(|_| ())
        .map_err(|e| std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests;
