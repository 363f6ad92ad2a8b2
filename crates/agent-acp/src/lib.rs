//! The agent as an Agent Client Protocol agent (`agent acp`): an editor
//! (Zed, a JetBrains IDE, Neovim) starts it, speaks JSON-RPC on its stdin and
//! stdout, and shows the real loop's work as it happens.
//!
//! - [`protocol`]: the ACP v1 messages this agent reads and writes.
//! - `rpc`: newline-delimited JSON-RPC, with a reader thread so that
//!   `session/cancel` and permission answers arrive while a prompt runs.
//! - `bridge`: the loop's [`agent_protocol::event::Ui`] events as `session/update`
//!   notifications and its [`agent_protocol::Approver`] questions as
//!   `session/request_permission` requests.
//! - `client_fs`: the tools' reads and writes through the client's file
//!   system when it offers one (unsaved buffers are seen).
//! - `server`: the methods (initialize, session/new, session/load,
//!   session/prompt); the binary opens the agents ([`Sessions`]).

mod bridge;
mod client_fs;
pub mod protocol;
mod rpc;
mod server;

pub use protocol::StdioServer;
pub use server::{serve, Sessions};
