//! What a session leaves: its conversation in the session store (SQLite,
//! [`session`], of [`turn`]s), the JSONL event logs ([`log`]) and the
//! hash-chained audit trail ([`audit`]).
//!
//! Invariants:
//! - Everything lives in the workspace's state folder
//!   (`agent_base::paths::state_dir`) or the administrator's sink, outside
//!   the workspace: no command the agent runs can write it.
//! - Written as it happens: a message is stored and an event logged (and
//!   flushed) as soon as it exists, so a crash loses at most the step in
//!   flight.
//! - Append-only: the logs are only appended to, and every audit record is
//!   chained to the one before, so an edit, a deletion, a reordering or a
//!   cut tail shows ([`audit::verify`]).

pub mod audit;
pub mod log;
pub mod session;
pub mod turn;
