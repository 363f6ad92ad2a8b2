//! One allocator for the whole process: mimalloc.
//!
//! Tagging a repository for the map is allocation-bound: tree-sitter builds
//! and frees a syntax tree per file and the tagger makes many small strings.
//! Against glibc's malloc, mimalloc takes about a tenth off the CPU time of
//! `scripts/bench map` on tokio (BENCHMARKS.md). Rust code gets it as the global
//! allocator; tree-sitter's C core gets it through [`route_tree_sitter`].
//! [`configure`] keeps its peaks near glibc's.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sets mimalloc's options for a long-lived process with bursts of
/// multi-threaded work (LanceDB's index builds run on every core). Call it
/// first thing in `main`. With the defaults, building the vector index over
/// 100k chunks peaked at 1.8 GB RSS against 0.55 GB with glibc's malloc:
/// arenas backed by transparent huge pages turn each touched 4 KiB into
/// 2 MiB, and freed pages are returned only after a delay, so peaks stack.
/// Without huge pages and with immediate purging it peaks at 0.58 GB; cold
/// `bench_map` costs about 4% more (BENCHMARKS.md, "Memory").
pub fn configure() {
    use libmimalloc_sys::{mi_option_set, mi_option_t};
    // mimalloc v2's option numbers (mimalloc.h); the crate names only some.
    const PURGE_DELAY: mi_option_t = 15;
    const ALLOW_THP: mi_option_t = 37;
    // SAFETY: plain setters of global options, safe to call at any time.
    unsafe {
        mi_option_set(PURGE_DELAY, 0);
        mi_option_set(ALLOW_THP, 0);
    }
    // mimalloc reads ALLOW_THP when it starts, before `main`, and asks for
    // huge pages on the arena it reserves then; this stops them for the
    // process, as mimalloc itself does when the option is set by env.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
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

/// Routes tree-sitter's C allocations to mimalloc as well. Call it first
/// thing in `main`, before any parser, tree or query exists: memory must be
/// freed by the allocator that made it, so switching later would be unsound.
pub fn route_tree_sitter() {
    use libmimalloc_sys::{mi_calloc, mi_free, mi_malloc, mi_realloc};
    // SAFETY: called before any tree-sitter object is allocated (see above),
    // and the four functions have the C signatures tree-sitter expects.
    unsafe {
        tree_sitter::set_allocator(
            Some(mi_malloc),
            Some(mi_calloc),
            Some(mi_realloc),
            Some(mi_free),
        );
    }
}
