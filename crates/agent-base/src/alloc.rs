//! One allocator for the whole process: mimalloc.
//!
//! Tagging a repository for the map is allocation-bound: tree-sitter builds
//! and frees a syntax tree per file and the tagger makes many small strings.
//! Against glibc's malloc, mimalloc takes about a tenth off the CPU time of
//! `scripts/bench map` on tokio (BENCHMARKS.md). Rust code gets it as the global
//! allocator; tree-sitter's C core gets it through `agent_lang::route_tree_sitter`.
//! [`Frugal`] keeps the index builds' peaks near glibc's.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// While alive, the process holds only the memory it uses: freed pages go
/// back to the OS at once and no new transparent huge pages are made. For
/// LanceDB's index builds, which allocate and free on every core: with
/// mimalloc's defaults the vector index build over 100k chunks peaked at
/// 1.8 GB RSS (0.55 GB with glibc's malloc), since a touched 4 KiB of a huge
/// page commits 2 MiB and freed pages wait before going back, so peaks
/// stack. Under this guard it peaks at 0.59 GB. Not for searches: the same
/// settings doubled the p50 of a one-line query (pages faulted anew each
/// time; BENCHMARKS.md, "Memory at scale"). Guards nest.
pub struct Frugal(());

/// mimalloc v2's option number (mimalloc.h); the crate does not name it.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Open guards, and the settings to restore when the last one closes.
static FRUGAL: std::sync::Mutex<(usize, std::ffi::c_long, i32)> = std::sync::Mutex::new((0, 0, 0));

impl Frugal {
    pub fn new() -> Self {
        let mut state = FRUGAL.lock().unwrap_or_else(|e| e.into_inner());
        if state.0 == 0 {
            // SAFETY: getters and setters of process-wide settings; prctl
            // takes integer arguments only.
            unsafe {
                state.1 = libmimalloc_sys::mi_option_get(PURGE_DELAY);
                libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
                #[cfg(target_os = "linux")]
                {
                    state.2 = libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0);
                    libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
                }
            }
        }
        state.0 += 1;
        Self(())
    }
}

impl Default for Frugal {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Frugal {
    fn drop(&mut self) {
        let mut state = FRUGAL.lock().unwrap_or_else(|e| e.into_inner());
        state.0 -= 1;
        if state.0 == 0 {
            // SAFETY: as in `new`.
            unsafe {
                libmimalloc_sys::mi_option_set(PURGE_DELAY, state.1);
                #[cfg(target_os = "linux")]
                if state.2 == 0 {
                    libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
                }
            }
        }
    }
}

/// Hands memory freed since to the OS: C++ libraries (ONNX Runtime)
/// allocate with the C library's malloc, which keeps freed heap for reuse.
pub fn return_freed_memory() {
    // SAFETY: both only release free memory; no pointer is invalidated.
    unsafe {
        libmimalloc_sys::mi_collect(true);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> (std::ffi::c_long, i32) {
        // SAFETY: getters of process-wide settings.
        unsafe {
            (
                libmimalloc_sys::mi_option_get(PURGE_DELAY),
                #[cfg(target_os = "linux")]
                libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0),
                #[cfg(not(target_os = "linux"))]
                0,
            )
        }
    }

    #[test]
    fn frugal_guards_nest_and_restore_the_defaults() {
        // Other tests open guards too (every index build does): the checks
        // of the defaults hold the lock, so none opens in between.
        let frugal = (0, if cfg!(target_os = "linux") { 1 } else { 0 });
        let outer = Frugal::new();
        let inner = Frugal::new();
        assert_eq!(settings(), frugal);
        drop(inner);
        assert_eq!(settings(), frugal, "the outer guard still holds");
        drop(outer);
        let state = FRUGAL.lock().unwrap();
        if state.0 == 0 {
            assert_ne!(settings().0, 0, "mimalloc's purge delay is back");
            assert_eq!(settings().1, state.2, "so is the huge-page setting");
        }
    }
}
