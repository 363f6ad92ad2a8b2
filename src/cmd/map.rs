//! `agent map`: the repository map the agent's system prompt carries.

use anyhow::Result;

use super::exit;
use crate::cli::MapArgs;
use agent_base::paths;
use agent_repomap::{
    budget_for_context, default_cache_path, focus_from_request, MapOptions, RepoMap,
    DEFAULT_BUDGET_FRACTION,
};

pub(crate) fn run(args: &MapArgs) -> Result<i32> {
    let root = paths::repo_root(args.root.as_deref())?;
    // The budget is counted with the chat model's own tokenizer; how the
    // model would run (GPU, threads, a server) does not matter here.
    let settings = agent_session::ModelSettings {
        model: args.model.clone(),
        ctx_size: args.ctx_size,
        script: args.script.clone(),
        ..Default::default()
    };
    let provider = agent_session::provider::provider(&settings, &mut crate::terminal::print)?;
    let mut map = RepoMap::open(&root, &default_cache_path(&root));
    map.refresh()?;
    let options = MapOptions {
        token_budget: args.tokens.unwrap_or_else(|| {
            budget_for_context(provider.context_size(), DEFAULT_BUDGET_FRACTION)
        }),
        focus: args
            .focus
            .iter()
            .cloned()
            .chain(
                args.request
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
    let out = map.render(&options, &count);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        // Names and signatures come from the repository: no control
        // character of theirs reaches the terminal.
        print!("{}", agent_base::term::escape_controls(&out.text));
        eprintln!(
            "({} tokens of {}; {} of {} definitions in {} files)",
            out.tokens, options.token_budget, out.defs_shown, out.defs_total, out.files_shown
        );
    }
    Ok(exit::OK)
}
