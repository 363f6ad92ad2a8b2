//! Which files of a repository count and what is in them: the language
//! table ([`lang`]), the walk that picks files ([`walk`]), the tree-sitter
//! chunker ([`chunk`]) and the analysis of long requests such as issue
//! texts ([`query`]). Every tree-sitter grammar of the build is linked here
//! (the `lang-*` features); the crate knows nothing of the index or the agent.

pub mod chunk;
pub mod lang;
pub mod query;
pub mod walk;

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
