//! The agent end to end below the CLI: the loop against the real tools with
//! a scripted model (`scripted`), and the tool-call protocol on the real tiny
//! model (`real_model`). One test binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test: a panic is its failure, its output its report"
)]

#[path = "../../../../tests/common/model.rs"]
mod common;

mod conventions;
mod first_prompt;
mod intent_set;
mod native;
mod real_model;
mod rewind;
mod scripted;
mod window;
