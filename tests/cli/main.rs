//! The `agent` binary end to end: real model, real files, real exit codes.
//! One test binary for everything that drives the binary (ripgrep's layout);
//! it links no heavy crate, only runs `agent`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test: a panic is its failure, its output its report"
)]

#[path = "../common/mod.rs"]
mod common;

mod acp;
mod admin;
mod agent;
mod architecture;
mod basics;
mod bundle;
mod conventions;
mod deps;
mod explore;
mod first_prompt;
mod jobs;
mod languages;
mod mcp_http;
mod mcp_serve;
mod output;
mod output_schema;
mod plan;
mod print_prompt;
mod prompt_cache;
mod server;
mod shared_index;
mod state;
mod trust;
mod tui;
mod window;
