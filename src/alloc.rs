//! One allocator for the whole process: mimalloc.
//!
//! Tagging a repository for the map is allocation-bound: tree-sitter builds
//! and frees a syntax tree per file and the tagger makes many small strings.
//! Against glibc's malloc, mimalloc takes about a tenth off the CPU time of
//! `scripts/bench map` on tokio (BENCHMARKS.md). Rust code gets it as the global
//! allocator; tree-sitter's C core gets it through [`route_tree_sitter`].

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
