//! While the UI is up, file descriptor 2 is a pipe of ours: what any code
//! prints on stderr (a chat command's report, a warning, a log line) comes
//! back here and is shown as a cell in the scrollback, instead of landing
//! in the middle of the live area. The pipe is drained before each event the
//! chat sends (`Link::send`), so its text lands in order; SGR colours become
//! styles and every other control character is escaped. The terminal itself
//! is written through stdout.

use std::os::fd::RawFd;

pub(crate) struct Capture {
    /// The real stderr, put back by [`Capture::restore`].
    saved: RawFd,
    /// The pipe's read end (non-blocking).
    read: RawFd,
    /// The start of a UTF-8 sequence cut by the pipe.
    carry: Vec<u8>,
    restored: bool,
}

fn check(ret: libc::c_int) -> std::io::Result<libc::c_int> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl Capture {
    pub(crate) fn start() -> std::io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: plain syscalls on descriptors this function owns; fd 2 is
        // replaced by dup2, which is atomic.
        unsafe {
            check(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC))?;
            let flags = check(libc::fcntl(fds[0], libc::F_GETFL))?;
            check(libc::fcntl(fds[0], libc::F_SETFL, flags | libc::O_NONBLOCK))?;
            let saved = check(libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3))?;
            check(libc::dup2(fds[1], 2))?;
            libc::close(fds[1]);
            Ok(Self {
                saved,
                read: fds[0],
                carry: Vec::new(),
                restored: false,
            })
        }
    }

    /// What was written since the last call (complete characters only).
    pub(crate) fn drain(&mut self) -> String {
        let mut bytes = std::mem::take(&mut self.carry);
        let mut buf = [0u8; 8192];
        loop {
            // SAFETY: reads into a buffer of ours, within its length.
            let n = unsafe { libc::read(self.read, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n as usize]);
        }
        let cut = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        self.carry = bytes.split_off(cut);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// A copy of the real stderr, for a program that has the terminal (the
    /// user's editor).
    pub(crate) fn real_stderr(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        let real = if self.restored { 2 } else { self.saved };
        // SAFETY: duplicates a descriptor open while this value lives; the
        // copy is owned by the result.
        unsafe {
            let fd = check(libc::fcntl(real, libc::F_DUPFD_CLOEXEC, 3))?;
            Ok(std::os::fd::OwnedFd::from_raw_fd(fd))
        }
    }

    /// Puts the real stderr back; returns what was still in the pipe.
    pub(crate) fn restore(&mut self) -> String {
        if self.restored {
            return String::new();
        }
        self.restored = true;
        // SAFETY: dup2 back onto fd 2 of the descriptor saved at start.
        unsafe {
            libc::dup2(self.saved, 2);
        }
        let rest = self.drain();
        // SAFETY: closing descriptors this value owns, once.
        unsafe {
            libc::close(self.saved);
            libc::close(self.read);
        }
        rest
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let rest = self.restore();
        if !rest.is_empty() {
            // What was captured goes back where it was headed.
            #[allow(clippy::print_stderr)]
            {
                eprint!("{rest}");
            }
        }
    }
}
