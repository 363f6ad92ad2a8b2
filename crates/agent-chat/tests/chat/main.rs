//! The crate end to end, one test binary: real templates rendered against
//! jinja2's output (`templates`), native turns parsed (`parse`), the lazy
//! call grammars checked without a model (`grammar`), and prompts that stay
//! prefixes of each other as a conversation grows (`incremental`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an integration test: its helpers are not #[test] fns, a panic is a test failure"
)]

mod grammar;
mod incremental;
mod parse;
mod templates;
