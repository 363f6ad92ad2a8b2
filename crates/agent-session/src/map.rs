//! `agent map`: the repository map the agent's system prompt carries, at
//! the budget the chat model's window gives it, counted with the model's
//! own tokenizer.

use std::path::Path;

use anyhow::Result;

use agent_repomap::{
    budget_for_context, default_cache_path, focus_from_request, MapOptions, RepoMap,
    DEFAULT_BUDGET_FRACTION,
};

pub use agent_repomap::MapOutput;

use crate::{ModelSettings, Say};

/// What `agent map` asks for.
#[derive(Debug, Clone, Default)]
pub struct MapRequest {
    /// The budget in tokens (None: the share of the model's window the agent gives it).
    pub tokens: Option<usize>,
    /// Paths or identifiers to rank first.
    pub focus: Vec<String>,
    /// A request whose words rank what they name first.
    pub request: Option<String>,
}

/// The map of `root` as `request` asks, and the budget it was fitted to.
pub fn render(
    root: &Path,
    request: &MapRequest,
    model: &ModelSettings,
    say: Say,
) -> Result<(MapOutput, usize)> {
    // How the model would run (GPU, threads, a server) does not matter here:
    // only its window and its tokenizer.
    let provider = crate::provider::provider(model, say)?;
    let mut map = RepoMap::open(root, &default_cache_path(root));
    map.refresh()?;
    let options = MapOptions {
        token_budget: request.tokens.unwrap_or_else(|| {
            budget_for_context(provider.context_size(), DEFAULT_BUDGET_FRACTION)
        }),
        focus: request
            .focus
            .iter()
            .cloned()
            .chain(
                request
                    .request
                    .as_deref()
                    .map(focus_from_request)
                    .unwrap_or_default(),
            )
            .collect(),
        recent_files: Vec::new(),
    };
    let count = |s: &str| {
        provider
            .count_tokens(s)
            .unwrap_or_else(|_| s.len().div_ceil(4))
    };
    Ok((map.render(&options, &count), options.token_budget))
}
