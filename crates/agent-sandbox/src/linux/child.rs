//! What the command's process does to itself between fork and exec: plain
//! system calls on buffers built before the fork, no allocation.
//!
//! Order matters: namespaces first (a user namespace gives the capabilities
//! the mounts need, inside it only), then the mounts, then the limits, then
//! every capability is given up, and Landlock comes last (it forbids mounts).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// What `prepare` built for the child.
pub(super) struct Plan {
    /// The agent's pid: a child whose parent is no longer it was orphaned
    /// before it could arm its death signal, and must not run.
    pub parent: libc::pid_t,
    /// uid_map and gid_map lines: the agent's own ids, mapped to themselves
    /// (root stays uid 0, but without a capability outside the namespace).
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
    /// Offline: listening Unix sockets of the host, to cover with /dev/null.
    pub offline: Option<Vec<CString>>,
    /// The network allowlist: the agent's end of a socket pair, over which
    /// the child sends the proxy's listening socket, made in its own
    /// network namespace; kept open by the process that waits for the
    /// command, so the agent's end hangs up when the command is done.
    pub proxy: Option<OwnedFd>,
    /// Paths to bind-mount read-only onto themselves, with the mount flags
    /// to keep.
    pub read_only: Vec<(CString, libc::c_ulong)>,
    /// The deny-read set: folders to cover with an empty tmpfs, files with
    /// /dev/null.
    pub hide_dirs: Vec<CString>,
    pub hide_files: Vec<CString>,
    /// The host's harmless devices (and whether each is a folder), for
    /// Landlock rules when no minimal /dev could be mounted.
    pub host_devices: Vec<(CString, bool)>,
    /// A second handle on the Landlock ruleset: rules for the /dev the child
    /// ends up with are added there.
    pub ruleset_fd: Option<OwnedFd>,
    /// Landlock rights on a device folder and on a device file.
    pub dev_dir: u64,
    pub dev_file: u64,
    pub limits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    /// RLIMIT_NPROC, applied only in a user namespace of the command's own,
    /// where the kernel counts that namespace's processes alone.
    pub processes: Option<libc::rlim_t>,
    /// `cgroup.procs` of the cgroups made for this command: its process
    /// limit (root, whom RLIMIT_NPROC does not bind) and its memory between
    /// all its processes.
    pub cgroup_procs: Vec<CString>,
    /// The options of the command's own `/dev/shm` (its size: what it
    /// holds is memory no rlimit counts).
    pub shm_options: CString,
    /// The probe found the namespaces and mounts possible (so `doctor` says
    /// they are enforced): if the child cannot get them after all, the
    /// command fails rather than run without them.
    pub expect_mounts: bool,
    /// The workspace's copy-on-write layer, mounted before everything else.
    pub overlay: Option<OverlayPlan>,
    /// The home folder to hide, and what to bind back into it.
    pub home: Option<HomePlan>,
}

/// See [`crate::Home`]: the folder, and each path inside it to bind back
/// (no one inside another) with whether it is a folder.
pub(super) struct HomePlan {
    pub dir: CString,
    pub keep: Vec<(CString, bool)>,
}

/// Most paths bound back into a hidden home.
pub(super) const MAX_HOME_KEEP: usize = 64;

/// An overlayfs over the workspace (see [`crate::Overlay`]).
///
/// A mount takes no folder of another mount namespace (EINVAL), so the
/// folders are opened again in the command's own: each onto the number of
/// a handle the parent holds, which the options and binds name as
/// `/proc/self/fd/N` (no path needs escaping in the options).
pub(super) struct OverlayPlan {
    /// The workspace: where the layer is mounted, over itself.
    pub target: CString,
    /// Mount options in a user namespace (`userxattr`: the layer's marks
    /// are `user.overlay.*` attributes) and without one (root's `trusted.*`).
    pub options_user: CString,
    pub options_root: CString,
    /// Lower, upper, work, then the bypass folders: each path and the
    /// handle whose number it takes over.
    pub reopen: Vec<(CString, OwnedFd)>,
}

impl OverlayPlan {
    /// The bypass folders: the handles after lower, upper and work.
    fn bypass(&self) -> &[(CString, OwnedFd)] {
        self.reopen.get(3..).unwrap_or_default()
    }
}

/// What the child got.
#[derive(Default)]
struct Applied {
    user_namespace: bool,
    /// A minimal /dev replaced the host's.
    dev: bool,
}

fn errno() -> io::Error {
    io::Error::last_os_error()
}

/// # Safety
/// Only system calls on `plan`; safe between fork and exec.
pub(super) unsafe fn enforce(plan: &Plan) -> io::Result<()> {
    die_with(plan.parent);
    for procs in &plan.cgroup_procs {
        // Before leaving the host's user namespace: "0" is this process.
        if !write_file(procs, b"0") {
            return Err(errno());
        }
    }
    let applied = isolate(plan)?;
    for &(resource, value) in &plan.limits {
        set_limit(resource, value)?;
    }
    if let (true, Some(n)) = (applied.user_namespace, plan.processes) {
        set_limit(libc::RLIMIT_NPROC, n)?;
    }
    drop_capabilities()?;
    device_rules(plan, applied.dev)
}

unsafe fn set_limit(resource: libc::__rlimit_resource_t, value: libc::rlim_t) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    if libc::setrlimit(resource, &limit) != 0 {
        return Err(errno());
    }
    Ok(())
}

/// Arms the death signal: when the agent dies (even by `kill -9`), so does
/// this process, and with it (through the PID namespace) everything the
/// command started. Exits at once if the agent is already gone.
///
/// The signal follows the *thread* that forked: callers spawn and wait on
/// one thread, which `run_command` does.
unsafe fn die_with(parent: libc::pid_t) {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if libc::getppid() != parent {
        libc::_exit(127);
    }
}

/// Namespaces of the command's own, where the system allows them:
/// - a user namespace, always (the agent's uid and gid mapped to
///   themselves): whatever capabilities the command's process has there
///   count in it alone, never on the host, even when the agent is root;
/// - a PID namespace with a fresh `/proc`: no process of the host is
///   visible, and when the command's first process ends, or the agent dies,
///   the kernel ends all the rest;
/// - a mount namespace: the read-only and hidden sets, the masked sockets,
///   the minimal /dev, the /proc above;
/// - offline, a network namespace holding only a loopback that is down.
///
/// Without user namespaces, root still gets the mount, PID and network
/// namespaces (its capabilities are dropped afterwards); anyone else gets
/// Landlock alone (and offline, a network namespace where a container
/// allows just that). Once the mount namespace is ours, a mount of the
/// read-only or hidden sets that fails fails the command: it never runs
/// believing itself fenced when it is not.
///
/// A new PID namespace takes effect for the children of the process that
/// made it, so this process forks once: the child becomes the namespace's
/// first process and goes on to exec the command; this one stays behind
/// only to wait for it and pass its exit status on.
unsafe fn isolate(plan: &Plan) -> io::Result<Applied> {
    let mut applied = Applied::default();
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if plan.offline.is_some() {
        flags |= libc::CLONE_NEWNET;
    }
    if libc::unshare(libc::CLONE_NEWUSER | flags) == 0 {
        applied.user_namespace = true;
        // The agent is not dumpable (its /proc entry is closed to other
        // processes), and neither is this child until it execs: the maps
        // below are files of its own /proc entry.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        write_file(c"/proc/self/setgroups", b"deny");
        if !write_file(c"/proc/self/uid_map", &plan.uid_map)
            || !write_file(c"/proc/self/gid_map", &plan.gid_map)
        {
            return Err(errno());
        }
    } else if libc::unshare(flags) != 0 {
        if plan.expect_mounts || plan.proxy.is_some() {
            return Err(errno());
        }
        if plan.offline.is_some() {
            // A container may allow a network namespace but no mounts.
            libc::unshare(libc::CLONE_NEWNET);
        }
        return Ok(applied);
    }
    if let Some(channel) = &plan.proxy {
        open_proxy(channel.as_raw_fd())?;
    }
    // Our mounts must not propagate back to the host's namespace.
    let private = libc::mount(
        std::ptr::null(),
        c"/".as_ptr(),
        std::ptr::null(),
        libc::MS_REC | libc::MS_PRIVATE,
        std::ptr::null(),
    ) == 0;
    if !private && plan.expect_mounts {
        return Err(errno());
    }
    if private {
        if let Some(overlay) = &plan.overlay {
            mount_overlay(overlay, applied.user_namespace)?;
        }
        for socket in plan.offline.iter().flatten() {
            bind(c"/dev/null", socket, 0);
        }
        mount_sets(plan)?;
        if let Some(home) = &plan.home {
            hide_home(home)?;
        }
        applied.dev = minimal_dev(&plan.shm_options);
        if plan.overlay.is_some() || plan.home.is_some() {
            enter_again()?;
        }
    }
    // Fork without glibc's atfork handlers: only system calls from here.
    let child = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
    if child < 0 {
        if plan.proxy.is_some() {
            // The proxy stops when the waiting process ends: none, no proxy.
            return Err(errno());
        }
        return Ok(applied); // no PID namespace after all; the command runs here
    }
    if child > 0 {
        let keep = plan.proxy.as_ref().map_or(-1, |fd| fd.as_raw_fd());
        wait_and_pass_on(child as libc::pid_t, keep);
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
    Ok(applied)
}

/// The layer over the workspace, then the bypass folders bound over it as
/// they are.
unsafe fn mount_overlay(overlay: &OverlayPlan, user_namespace: bool) -> io::Result<()> {
    reopen(overlay)?;
    let options = if user_namespace {
        &overlay.options_user
    } else {
        &overlay.options_root
    };
    let r = libc::mount(
        c"overlay".as_ptr(),
        overlay.target.as_ptr(),
        c"overlay".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV,
        options.as_ptr().cast(),
    );
    if r != 0 {
        return Err(errno());
    }
    for (target, fd) in overlay.bypass() {
        let mut buf = [0u8; 32];
        if !bind(fd_path(fd.as_raw_fd(), &mut buf), target, libc::MS_REC) {
            return Err(errno());
        }
    }
    Ok(())
}

/// Opens the layer's folders in this mount namespace, each onto its
/// reserved number.
unsafe fn reopen(overlay: &OverlayPlan) -> io::Result<()> {
    for (path, fd) in &overlay.reopen {
        let new = libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        );
        if new < 0 {
            return Err(errno());
        }
        let moved = libc::dup3(new, fd.as_raw_fd(), libc::O_CLOEXEC);
        libc::close(new);
        if moved < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// An empty tmpfs over the home folder, then what it keeps bound back
/// where it was: opened first (after that the paths are gone), each place
/// made in the tmpfs, each bound recursively (the layer, read-only and
/// hidden mounts below it come along).
unsafe fn hide_home(home: &HomePlan) -> io::Result<()> {
    let mut fds = [-1; MAX_HOME_KEEP];
    for (fd, (path, _)) in fds.iter_mut().zip(&home.keep) {
        *fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
    }
    let r = libc::mount(
        c"tmpfs".as_ptr(),
        home.dir.as_ptr(),
        c"tmpfs".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV,
        c"mode=0755,size=1m".as_ptr().cast(),
    );
    if r != 0 {
        return Err(errno());
    }
    for (fd, (path, is_dir)) in fds.into_iter().zip(&home.keep) {
        if fd < 0 {
            continue; // missing: nothing to keep
        }
        let placed = make_place(home.dir.to_bytes().len(), path, *is_dir);
        let mut buf = [0u8; 32];
        let bound = placed && bind(fd_path(fd, &mut buf), path, libc::MS_REC);
        libc::close(fd);
        if !bound {
            return Err(errno());
        }
    }
    Ok(())
}

/// Makes `path`'s folders below the first `skip` bytes, and the path itself
/// (a folder, or an empty file to bind a file over), in the home's tmpfs.
unsafe fn make_place(skip: usize, path: &CStr, is_dir: bool) -> bool {
    let bytes = path.to_bytes();
    let mut buf = [0u8; 4096];
    if bytes.len() >= buf.len() {
        return false;
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    for i in skip + 1..bytes.len() {
        if buf[i] == b'/' {
            buf[i] = 0;
            libc::mkdir(buf.as_ptr().cast(), 0o755);
            buf[i] = b'/';
        }
    }
    if is_dir {
        libc::mkdir(path.as_ptr(), 0o755);
    } else {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
            0o644,
        );
        if fd >= 0 {
            libc::close(fd);
        }
    }
    true
}

/// The working folder was entered (by `Command::current_dir`) before the
/// layer covered it: entered again by its path, it is the layer's, and a
/// relative write goes through the layer like any other.
unsafe fn enter_again() -> io::Result<()> {
    let mut buf = [0u8; 4096];
    if libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null()
        || libc::chdir(buf.as_ptr().cast()) != 0
    {
        return Err(errno());
    }
    Ok(())
}

/// The read-only and the hidden sets; the first failure is the error.
unsafe fn mount_sets(plan: &Plan) -> io::Result<()> {
    for (path, flags) in &plan.read_only {
        read_only(path, *flags)?;
    }
    for dir in &plan.hide_dirs {
        let r = libc::mount(
            c"tmpfs".as_ptr(),
            dir.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"mode=0555,size=4k".as_ptr().cast(),
        );
        if r != 0 {
            return Err(errno());
        }
    }
    for file in &plan.hide_files {
        if !bind(c"/dev/null", file, 0) {
            return Err(errno());
        }
    }
    Ok(())
}

unsafe fn bind(source: &CStr, target: &CStr, extra: libc::c_ulong) -> bool {
    libc::mount(
        source.as_ptr(),
        target.as_ptr(),
        std::ptr::null(),
        libc::MS_BIND | extra,
        std::ptr::null(),
    ) == 0
}

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 1;

/// Binds `path` onto itself and makes that mount (and any below it)
/// read-only: writes fail with EROFS, and the path, now a mount point,
/// cannot be renamed or removed (EBUSY).
unsafe fn read_only(path: &CStr, flags: libc::c_ulong) -> io::Result<()> {
    if !bind(path, path, libc::MS_REC) {
        return Err(errno());
    }
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let r = libc::syscall(
        libc::SYS_mount_setattr,
        libc::AT_FDCWD,
        path.as_ptr(),
        libc::AT_RECURSIVE as libc::c_uint,
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>(),
    );
    if r == 0 {
        return Ok(());
    }
    // Before Linux 5.12: a remount, keeping the flags the kernel locks.
    let remount = libc::MS_REMOUNT | libc::MS_RDONLY | flags;
    let r = libc::mount(
        std::ptr::null(),
        path.as_ptr(),
        std::ptr::null(),
        libc::MS_BIND | remount,
        std::ptr::null(),
    );
    if r != 0 {
        return Err(errno());
    }
    Ok(())
}

/// The devices a command gets, as bubblewrap's `--dev`: a tmpfs over `/dev`
/// holding the host's null, zero, full, random, urandom and tty (bound in),
/// a devpts of its own, `/dev/shm`, and the `/dev/fd` links. The host's
/// disks, `/dev/kmsg` and the rest are not there to open. False when the
/// tmpfs could not be mounted (the host's `/dev` stays, fenced by Landlock).
unsafe fn minimal_dev(shm_options: &CStr) -> bool {
    const DEVICES: [&CStr; 6] = [
        c"/dev/null",
        c"/dev/zero",
        c"/dev/full",
        c"/dev/random",
        c"/dev/urandom",
        c"/dev/tty",
    ];
    let mut fds = [-1; DEVICES.len()];
    for (fd, dev) in fds.iter_mut().zip(DEVICES) {
        *fd = libc::open(dev.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
    }
    let mounted = libc::mount(
        c"tmpfs".as_ptr(),
        c"/dev".as_ptr(),
        c"tmpfs".as_ptr(),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        c"mode=0755,size=64k".as_ptr().cast(),
    ) == 0;
    for (fd, dev) in fds.into_iter().zip(DEVICES) {
        if fd < 0 {
            continue;
        }
        if mounted {
            let created = libc::open(
                dev.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                0o666,
            );
            if created >= 0 {
                libc::close(created);
                let mut buf = [0u8; 32];
                bind(fd_path(fd, &mut buf), dev, 0);
            }
        }
        libc::close(fd);
    }
    if !mounted {
        return false;
    }
    libc::mkdir(c"/dev/pts".as_ptr(), 0o755);
    libc::mount(
        c"devpts".as_ptr(),
        c"/dev/pts".as_ptr(),
        c"devpts".as_ptr(),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
    );
    libc::symlink(c"pts/ptmx".as_ptr(), c"/dev/ptmx".as_ptr());
    libc::mkdir(c"/dev/shm".as_ptr(), 0o1777);
    libc::mount(
        c"tmpfs".as_ptr(),
        c"/dev/shm".as_ptr(),
        c"tmpfs".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV,
        shm_options.as_ptr().cast(),
    );
    for (target, link) in [
        (c"/proc/self/fd", c"/dev/fd"),
        (c"/proc/self/fd/0", c"/dev/stdin"),
        (c"/proc/self/fd/1", c"/dev/stdout"),
        (c"/proc/self/fd/2", c"/dev/stderr"),
    ] {
        libc::symlink(target.as_ptr(), link.as_ptr());
    }
    true
}

/// `/proc/self/fd/N` in `buf`, without allocating.
fn fd_path(fd: libc::c_int, buf: &mut [u8; 32]) -> &CStr {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd.unsigned_abs(), 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let slots = &mut buf[PREFIX.len()..PREFIX.len() + len];
    for (slot, digit) in slots.iter_mut().zip(digits[..len].iter().rev()) {
        *slot = *digit;
    }
    buf[PREFIX.len() + len] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/dev/null")
}

/// `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Lets the command write the devices it has: those of the minimal /dev
/// and its /dev/shm, or else the host's harmless ones.
unsafe fn device_rules(plan: &Plan, own_dev: bool) -> io::Result<()> {
    let Some(ruleset) = &plan.ruleset_fd else {
        return Ok(()); // Landlock is not enforced here at all
    };
    let add = |path: &CStr, access: u64| {
        let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let attr = PathBeneathAttr {
            allowed_access: access,
            parent_fd: fd,
        };
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            1 as libc::c_int, // LANDLOCK_RULE_PATH_BENEATH
            &attr as *const PathBeneathAttr,
            0u32,
        );
        libc::close(fd);
    };
    if let Some(overlay) = &plan.overlay {
        // The layer's root and the bypass folders as mounted now: a write
        // there is a write into the layer (or the build folder).
        add(&overlay.target, plan.dev_dir);
        for (target, _) in overlay.bypass() {
            add(target, plan.dev_dir);
        }
    }
    if own_dev {
        // The device files may be written, nothing made beside them
        // (`> /dev/kmsg` makes no file); /dev/shm is a folder to write in.
        add(c"/dev", plan.dev_file);
        add(c"/dev/shm", plan.dev_dir);
    } else {
        for (path, is_dir) in &plan.host_devices {
            add(path, if *is_dir { plan.dev_dir } else { plan.dev_file });
        }
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Gives up every capability, for good. The bounding set is cleared (no
/// exec can bring one back from a file's capabilities), the ambient set
/// emptied, the securebits set so that uid 0 gains nothing at exec
/// (`NOROOT`) and keeps nothing over a uid change, all locked; then the
/// effective, permitted and inheritable sets are emptied, and
/// `no_new_privs` closes setuid binaries. Where the process lacks
/// CAP_SETPCAP (no user namespace, not root) the first steps fail, and it
/// has nothing to give up but what no_new_privs already denies.
unsafe fn drop_capabilities() -> io::Result<()> {
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
            && errno().raw_os_error() == Some(libc::EINVAL)
        {
            break; // past the last capability this kernel knows
        }
    }
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    let bits = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0);
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let none = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()) != 0 {
        return Err(errno());
    }
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        return Err(errno());
    }
    Ok(())
}

/// The process left outside the PID namespace: holds no file (so pipes
/// reach end-of-file when the command's processes are done, and `spawn`'s
/// exec-error pipe belongs to the child alone), waits for the namespace's
/// first process, and exits as it did.
///
/// Only `keep` stays open (the allowlist's channel to the agent, -1 for
/// none): its hang-up tells the agent's proxy the command is done.
unsafe fn wait_and_pass_on(child: libc::pid_t, keep: libc::c_int) -> ! {
    let close = |from: libc::c_int, to: libc::c_int| {
        if from > to {
            return;
        }
        if libc::syscall(libc::SYS_close_range, from as u32, to as u32, 0u32) != 0 {
            for fd in from..=to.min(1023) {
                libc::close(fd);
            }
        }
    };
    if keep < 0 {
        close(0, libc::c_int::MAX);
    } else {
        close(0, keep - 1);
        close(keep + 1, libc::c_int::MAX);
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

/// The allowlist's proxy socket: loopback brought up in the command's new
/// network namespace, a socket listening on 127.0.0.1:[`PORT`] made there
/// (a socket stays in the namespace it was made in), and sent to the agent
/// over `channel`, which serves it from its own namespace. This process's
/// copy closes: the command never holds the listener.
///
/// [`PORT`]: crate::proxy::PORT
unsafe fn open_proxy(channel: libc::c_int) -> io::Result<()> {
    loopback_up()?;
    let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(errno());
    }
    let mut addr: libc::sockaddr_in = std::mem::zeroed();
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = crate::proxy::PORT.to_be();
    addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
    let bound = libc::bind(
        s,
        (&raw const addr).cast(),
        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    ) == 0;
    let ok = bound && libc::listen(s, 128) == 0 && send_fd(channel, s);
    let err = errno();
    libc::close(s);
    if ok {
        Ok(())
    } else {
        Err(err)
    }
}

/// `ip link set lo up`: a new network namespace's loopback is down.
unsafe fn loopback_up() -> io::Result<()> {
    let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if s < 0 {
        return Err(errno());
    }
    let mut req: libc::ifreq = std::mem::zeroed();
    for (d, c) in req.ifr_name.iter_mut().zip(b"lo") {
        *d = *c as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    let r = libc::ioctl(s, libc::SIOCSIFFLAGS as _, &raw mut req);
    let err = errno();
    libc::close(s);
    if r == 0 {
        Ok(())
    } else {
        Err(err)
    }
}

/// Room for one descriptor's control message, aligned as `cmsghdr` is.
type FdControl = [u64; 4];

/// Sends descriptor `fd` over the Unix socket `channel` (SCM_RIGHTS).
unsafe fn send_fd(channel: libc::c_int, fd: libc::c_int) -> bool {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control: FdControl = [0; 4];
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
    let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
    if cmsg.is_null() {
        return false;
    }
    (*cmsg).cmsg_level = libc::SOL_SOCKET;
    (*cmsg).cmsg_type = libc::SCM_RIGHTS;
    (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
    std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
    libc::sendmsg(channel, &raw const msg, libc::MSG_NOSIGNAL) == 1
}

/// The descriptor [`send_fd`] sent (in the agent); None when the other end
/// closed without sending one (the command never started).
pub(super) fn receive_fd(channel: &OwnedFd) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control: FdControl = [0; 4];
    // SAFETY: recvmsg into buffers we own; the descriptor it returns, if
    // any, is new and ours.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of::<FdControl>() as _;
        loop {
            let n = libc::recvmsg(channel.as_raw_fd(), &raw mut msg, libc::MSG_CMSG_CLOEXEC);
            if n > 0 {
                break;
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            return None;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    }
}

/// Writes `data` to a file that exists (a /proc or cgroup file).
unsafe fn write_file(path: &CStr, data: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    libc::close(fd);
    n == data.len() as isize
}

/// Runs `then` in a throwaway child that has entered the namespaces a
/// command gets (mount and PID, and a user namespace if `user`, the
/// agent's ids mapped to themselves) with its mounts made private: the
/// child's exit code, which is 1 when the namespaces could not be had and
/// `then`'s otherwise. This process is unchanged; None if no child ran.
fn in_probe_child(user: bool, then: impl Fn() -> i32) -> Option<i32> {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let uid_map = format!("{uid} {uid} 1\n");
    let gid_map = format!("{gid} {gid} 1\n");
    // SAFETY: the child only makes system calls on buffers made above (and
    // whatever `then` makes, system calls too) and leaves with _exit; the
    // parent waits for it.
    unsafe {
        let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
        if pid < 0 {
            return None;
        }
        if pid == 0 {
            let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
            if user {
                flags |= libc::CLONE_NEWUSER;
            }
            if libc::unshare(flags) != 0 {
                libc::_exit(1);
            }
            if user {
                write_file(c"/proc/self/setgroups", b"deny");
                if !write_file(c"/proc/self/uid_map", uid_map.as_bytes())
                    || !write_file(c"/proc/self/gid_map", gid_map.as_bytes())
                {
                    libc::_exit(1);
                }
            }
            let private = libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            );
            libc::_exit(if private == 0 { then() } else { 1 });
        }
        let mut status = 0;
        while libc::waitpid(pid as libc::pid_t, &mut status, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                return None;
            }
        }
        libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
    }
}

/// Whether a child can get the namespaces the sandbox uses and make its
/// mounts private there: with a user namespace (`user`), or as root
/// without one.
pub(super) fn probe(user: bool) -> bool {
    in_probe_child(user, || 0) == Some(0)
}

/// Whether a throwaway child, in the namespaces a command gets (a user
/// namespace if `user`), can mount an overlay at `target` with `options`
/// and delete a file through it (`a`, which makes a whiteout).
pub(super) fn probe_overlay(user: bool, target: &CStr, options: &CStr) -> Result<(), String> {
    let file = {
        let mut bytes = target.to_bytes().to_vec();
        bytes.extend_from_slice(b"/a");
        CString::new(bytes).map_err(|e| e.to_string())?
    };
    // SAFETY: mount and unlink on NUL-terminated strings made above.
    let code = in_probe_child(user, || unsafe {
        let mounted = libc::mount(
            c"overlay".as_ptr(),
            target.as_ptr(),
            c"overlay".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        );
        if mounted != 0 {
            2
        } else if libc::unlink(file.as_ptr()) != 0 {
            3
        } else {
            0
        }
    });
    match code {
        Some(0) => Ok(()),
        None => Err("the probe did not run to its end".into()),
        Some(1) => Err("no mount namespace for a command".into()),
        Some(2) => Err(
            "the kernel refuses to mount overlayfs there (it needs Linux 5.11+ in a \
                        user namespace, and a file system that can hold an upper layer)"
                .into(),
        ),
        Some(_) => Err(
            "a file cannot be deleted through the layer (the file system keeps no \
                        extended attributes or whiteouts)"
                .into(),
        ),
    }
}

/// The folder under which this process may make cgroups of `controller`
/// (`pids`, `memory`): the controller's folder for this process in cgroup
/// v1, or a cgroup v2 one that delegates it to its children; and whether
/// it is v2. None where no such folder is writable (most unprivileged
/// setups, where the rlimits do the job).
pub(super) fn cgroup_base(controller: &str) -> Option<(PathBuf, bool)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount_of = |v2: bool| {
        mounts.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split_whitespace();
            let (fstype, _, options) = (r.next()?, r.next()?, r.next()?);
            let fits = if v2 {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup" && options.split(',').any(|o| o == controller)
            };
            fits.then(|| PathBuf::from(left.split_whitespace().nth(4).unwrap_or("/")))
        })
    };
    let v1 = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    });
    let (base, v2) = match v1 {
        Some(path) => (mount_of(false)?.join(path.trim_start_matches('/')), false),
        None => {
            let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
            let base = mount_of(true)?.join(path.trim_start_matches('/'));
            let delegated = std::fs::read_to_string(base.join("cgroup.subtree_control"))
                .is_ok_and(|s| s.split_whitespace().any(|c| c == controller));
            if !delegated {
                return None;
            }
            (base, true)
        }
    };
    let writable = CString::new(base.as_os_str().as_encoded_bytes())
        .ok()
        // SAFETY: access(2) on a NUL-terminated path.
        .is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0);
    writable.then_some((base, v2))
}

/// The folder for pids cgroups (root's process limit), if any.
pub(super) fn pids_cgroup_base() -> Option<PathBuf> {
    cgroup_base("pids").map(|(base, _)| base)
}

/// Names of the cgroups this crate makes: `agent-cmd-<pid>-<nonce>`.
const CGROUP_PREFIX: &str = "agent-cmd-";

/// A pids cgroup for one command (see [`command_cgroups`]).
#[cfg(test)]
pub(super) fn pids_cgroup(max: u64) -> Result<Option<CString>, String> {
    Ok(command_cgroups(Some(max), None)?.into_iter().next())
}

/// The cgroups of one command, holding at most `processes` processes and
/// threads and `memory` bytes (its `/dev/shm` included) between all its
/// processes: each `cgroup.procs`, for the child to join (one in cgroup
/// v2, one per controller in v1). A controller with no writable folder is
/// left out (the rlimits stand in); the caller asks for `processes` only
/// where it promised a pids cgroup.
///
/// A folder stays until it is empty and a few seconds old (the child joins
/// it as it starts); this process removes its own then, and its first call
/// per folder removes those that processes which have exited left behind.
/// An error means a promised limit cannot be had, and the command must not
/// run.
pub(super) fn command_cgroups(
    processes: Option<u64>,
    memory: Option<u64>,
) -> Result<Vec<CString>, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static MADE: Mutex<Vec<(PathBuf, Instant)>> = Mutex::new(Vec::new());
    static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    // Each folder with the files to write in it.
    let mut wanted: Vec<(PathBuf, Vec<(&str, u64)>)> = Vec::new();
    let limits = [("pids", processes), ("memory", memory)];
    for (controller, value) in limits {
        let Some(value) = value else { continue };
        let Some((base, v2)) = cgroup_base(controller) else {
            continue;
        };
        let file = match (controller, v2) {
            ("pids", _) => "pids.max",
            (_, true) => "memory.max",
            (_, false) => "memory.limit_in_bytes",
        };
        match wanted.iter_mut().find(|(b, _)| *b == base) {
            Some((_, files)) => files.push((file, value)),
            None => wanted.push((base, vec![(file, value)])),
        }
    }
    let mut made = MADE.lock().map_err(|e| e.to_string())?;
    made.retain(|(dir, when)| {
        when.elapsed() < Duration::from_secs(10)
            || std::fs::remove_dir(dir).is_err_and(|e| e.kind() != std::io::ErrorKind::NotFound)
    });
    // The time in the name: a pid is reused, and a folder left by an
    // earlier holder of ours must never be taken for a new one.
    let name = format!(
        "{CGROUP_PREFIX}{}-{}-{}",
        std::process::id(),
        since_epoch().as_nanos(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut procs = Vec::new();
    for (base, files) in wanted {
        if let Ok(mut swept) = SWEPT.lock() {
            if !swept.contains(&base) {
                sweep_stale(&base);
                swept.push(base.clone());
            }
        }
        let dir = base.join(&name);
        let fail = |e: std::io::Error| format!("{}: {e}", dir.display());
        std::fs::create_dir(&dir).map_err(fail)?;
        made.push((dir.clone(), Instant::now()));
        for (file, value) in files {
            std::fs::write(dir.join(file), value.to_string()).map_err(fail)?;
            // No swap beyond the limit, where the kernel has the knob.
            let swap = match file {
                "memory.max" => Some(("memory.swap.max", 0)),
                "memory.limit_in_bytes" => Some(("memory.memsw.limit_in_bytes", value)),
                _ => None,
            };
            if let Some((knob, v)) = swap.filter(|(k, _)| dir.join(k).exists()) {
                let _ = std::fs::write(dir.join(knob), v.to_string());
            }
        }
        procs.push(
            CString::new(dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
                .map_err(|e| e.to_string())?,
        );
    }
    Ok(procs)
}

/// Removes the pids cgroups of commands that are over, left by processes
/// that exited before they could. The time a folder was made is in its name
/// (cgroupfs gives a folder the time its inode was last cached): one a
/// minute old is long past the moment its command's child joined it. A
/// name without a time is an older agent's, left if its process lives. A
/// folder with processes in it cannot be removed, so nothing live is touched.
pub(super) fn sweep_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let now = since_epoch().as_nanos();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(CGROUP_PREFIX)) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('-').collect();
        let stale = match parts[..] {
            [_, made, _] => made
                .parse::<u128>()
                .is_ok_and(|made| now.saturating_sub(made) > 60_000_000_000),
            [pid, _] => pid.parse::<libc::pid_t>().is_ok_and(|pid| {
                // SAFETY: kill with signal 0 only asks whether the process exists.
                (unsafe { libc::kill(pid, 0) }) != 0 && errno().raw_os_error() == Some(libc::ESRCH)
            }),
            _ => false,
        };
        if stale {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn since_epoch() -> std::time::Duration {
    let now = std::time::SystemTime::now();
    now.duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
}
