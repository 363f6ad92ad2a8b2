//! One session behind every front end. The binary parses flags into
//! [`settings`]; this crate decides the rest: the model a session runs
//! ([`provider`]), the administrator's checks ([`admin`]), the workspace's
//! trust ([`trust`]) and MCP servers ([`mcp`]), the index the loop searches
//! ([`search`]), the agent opened from all of them ([`open`]), what an
//! outcome says and exits with ([`outcome`]), the chat's commands and `@`
//! mentions ([`chat`]), `agent doctor`'s checks ([`doctor`]), and the
//! effective settings with where each came from ([`config`]). The line
//! mode, the terminal UI and ACP drive the same session; what they show is
//! theirs.
//!
//! Nothing here prints: what a session has to say goes to the front end as
//! a [`Notice`], and what it has to ask goes through [`Ask`].

pub mod about;
pub mod admin;
pub mod ask;
pub mod audit;
pub mod chat;
pub mod config;
pub mod deps;
pub mod doctor;
pub mod index;
pub mod init;
pub mod map;
pub mod mcp;
pub mod open;
pub mod outcome;
pub mod provider;
pub mod saved;
pub mod search;
pub mod settings;
pub mod shared;
pub mod trust;

pub use agent_protocol::{Ask, CommandInfo, NoAnswers, Notice, Say};
// The loop's API the front ends drive: the agent a session opened, what a
// request returns, what `/init` did.
pub use agent_core::InitOutcome;
pub use agent_core::{Agent, ExploreConfig, Outcome};
pub use chat::{ChatSession, Reply, Totals};
pub use open::{open, Opening};
// Called first in `main`, before any parser exists (see its docs).
pub use agent_lang::route_tree_sitter;
pub use outcome::exit;
pub use settings::{AgentSettings, ModelSettings, Speculation};
