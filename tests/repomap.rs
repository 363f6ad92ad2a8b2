//! The repo map end to end, through `agent::repomap`'s public API.
//!
//! The tests themselves live in `src/repomap/tests.rs`, where they also run as
//! unit tests; this shim makes `crate::repomap` name the library's module.

mod repomap {
    pub use agent::repomap::*;
}

#[path = "../src/repomap/tests.rs"]
mod end_to_end;
