//! `agent map`: the repository map the agent's system prompt carries
//! (`agent_session::map`).

use anyhow::Result;

use super::exit;
use agent_base::paths;
use agent_cli::MapArgs;
use agent_session::map::MapRequest;

pub(crate) fn run(args: &MapArgs) -> Result<i32> {
    let root = paths::repo_root(args.root.as_deref())?;
    let model = agent_session::ModelSettings {
        model: args.model.clone(),
        ctx_size: args.ctx_size,
        script: args.script.clone(),
        ..Default::default()
    };
    let request = MapRequest {
        tokens: args.tokens,
        focus: args.focus.clone(),
        request: args.request.clone(),
    };
    let (out, budget) =
        agent_session::map::render(&root, &request, &model, &mut crate::terminal::print)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        // Names and signatures come from the repository: no control
        // character of theirs reaches the terminal.
        print!("{}", agent_base::term::escape_controls(&out.text));
        eprintln!(
            "({} tokens of {budget}; {} of {} definitions in {} files)",
            out.tokens, out.defs_shown, out.defs_total, out.files_shown
        );
    }
    Ok(exit::OK)
}
