//! What every crate of the agent may use, and nothing else: cancellation
//! ([`cancel`]), where files live ([`paths`]), the model manifest
//! ([`models`]), the user's lists of approvals ([`approvals`]), the
//! process's allocator ([`alloc`]), how repository text
//! reaches a terminal ([`term`]) and token estimates ([`tokens`]). It depends on no
//! other crate of the workspace.

pub mod alloc;
pub mod approvals;
pub mod cancel;
pub mod files;
pub mod models;
pub mod paths;
pub mod state;
pub mod term;
pub mod tokens;
