//! The team's and the user's configuration of the agent: `AGENTS.md`
//! instructions ([`instructions`]), skills ([`skills`]), prompt files as
//! commands ([`commands`]), hooks around tool calls ([`hooks`]),
//! `.agent/config.toml` ([`settings`]), and the workspace's trust
//! ([`trust`]).
//!
//! Invariants:
//! - This crate reads configuration; it runs nothing. Hooks are described
//!   and their answers read here, and run by the loop (agent-core).
//! - What a repository ships that runs code or widens the sandbox (hooks,
//!   skills and commands that declare tools, loosening policy keys, MCP
//!   servers) is pending until the user trusts the workspace as it is now
//!   ([`trust`], pinned by sha256).
//! - What goes into the system prompt (instructions, skill names and
//!   descriptions) is read once per session and capped, so the prompt stays
//!   byte-stable and small.
//! - No loop code: the crate depends on neither agent-core nor a model.

pub mod commands;
pub mod hooks;
pub mod instructions;
pub mod settings;
pub mod skills;
pub mod trust;
