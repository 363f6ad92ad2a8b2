//! `agent init` (and chat's `/init`): AGENTS.md from what the agent knows
//! about the repository (`agent_session::init`), written like any change.

use std::io::IsTerminal;

use anyhow::Result;

use super::exit;
use crate::terminal::print;
use agent_base::cancel::CancelToken;
use agent_cli::InitArgs;
use agent_line::TerminalUi;
use agent_protocol::{ToolCall, Ui};
use agent_session::init::{InitOutcome, InitSettings, FILE};
use agent_session::settings::Mode;

pub(crate) fn run(args: &InitArgs, cancel: &CancelToken) -> Result<i32> {
    let root = agent_base::paths::repo_root(None)?;
    let settings = InitSettings {
        mode: args.mode,
        use_model: !args.no_model,
        write: !args.print,
    };
    let mut approver = crate::session::terminal_approver(args.mode);
    let outcome = agent_session::init::init(
        &root,
        &settings,
        &args.model.settings(),
        approver.as_mut(),
        cancel,
        &mut print,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
        let (_, code) = agent_session::init::report(&outcome, asked());
        return Ok(if args.print { exit::OK } else { code });
    }
    if args.print {
        // What the model wrote, as `--print` asks for it: AGENTS.md text.
        print!("{}", agent_base::term::untrusted_text(&outcome.content));
        agent_session::init::overview(&outcome)
            .into_iter()
            .for_each(print);
        return Ok(exit::OK);
    }
    Ok(report(&outcome, args.mode == Mode::Yolo))
}

/// Someone was there to say no (without a terminal no one was asked, and
/// the write failing is the error).
fn asked() -> bool {
    std::io::stdin().is_terminal()
}

/// Shows the write (its diff when the approver did not: `show_diff`) and
/// what happened to AGENTS.md; the exit code.
pub(crate) fn report(outcome: &InitOutcome, show_diff: bool) -> i32 {
    let mut ui = TerminalUi::new(false, show_diff);
    let call = ToolCall {
        thought: String::new(),
        tool: "write_file".into(),
        args: serde_json::json!({ "path": FILE }),
    };
    ui.tool_result(&call, &outcome.output);
    let (said, code) = agent_session::init::report(outcome, asked());
    said.into_iter().for_each(print);
    code
}
