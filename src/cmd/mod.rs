//! One module per subcommand. Each `run` returns the process exit code.

pub(crate) mod acp;
pub(crate) mod ask;
pub(crate) mod audit;
pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod doctor;
pub(crate) mod index;
pub(crate) mod init;
pub(crate) mod map;
pub(crate) mod mcp;
pub(crate) mod models;
pub(crate) mod search;
pub(crate) mod sessions;
pub(crate) mod trust;
pub(crate) mod version;

use anyhow::Result;

use agent_base::cancel::CancelToken;
use agent_cli::ModelArgs;
use agent_session::provider::Provider;

pub(crate) use agent_session::{admin, exit};

/// Builds the provider the flags ask for: scripted, remote, or (default) the
/// in-process engine.
pub(crate) fn provider(args: &ModelArgs) -> Result<Box<dyn Provider>> {
    agent_session::provider::provider(&args.settings(), &mut crate::terminal::print)
}

/// `--print-prompt`: a provider that prints each request's prompt
/// (`agent_session::provider::prompt_printer`).
pub(crate) fn prompt_printer(
    args: &ModelArgs,
    json: bool,
    cancel: &CancelToken,
) -> Result<Box<dyn Provider>> {
    agent_session::provider::prompt_printer(&args.settings(), json, cancel)
}
