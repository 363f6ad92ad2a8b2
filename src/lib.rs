//! `agent`: a local-first coding agent.
//!
//! The crate is split by concern; `ARCHITECTURE.md` at the repository root
//! walks through how the pieces fit together.
//!
//! - [`agent`]: the intent gate and the ReAct loop (tool calls under a grammar, context budget,
//!   sessions, audit/trace logs, terminal UX).
//! - [`llm`]: the model providers (in-process llama.cpp, scripted, OpenAI-compatible HTTP)
//!   behind one [`llm::Provider`] trait, plus prompts, grammars and GGUF validation.
//! - [`models`]: the model manifest, where model files live and how they are verified.
//! - [`index`]: the live code index (chunk, embed, store in LanceDB, watch, hybrid search).
//! - [`repomap`]: ranked, token-budgeted map of the repository's definitions.
//! - [`tools`]: what the agent can do to the workspace (read, search, edit, patch, run), jailed and checkpointed.
//! - [`policy`]: confirmation modes and the command policy.
//! - [`walk`]: which files of a repository are looked at.
//! - [`alloc`]: the process-wide allocator (mimalloc, tree-sitter included).
//! - [`cmd`]: one module per CLI subcommand; `src/main.rs` only parses and dispatches.

pub mod agent;
pub mod alloc;
pub mod cancel;
pub mod cli;
pub mod cmd;
pub mod index;
pub mod lang;
pub mod llm;
pub mod mcp;
pub mod models;
pub mod paths;
pub mod policy;
pub mod repomap;
pub mod tools;
pub mod walk;
