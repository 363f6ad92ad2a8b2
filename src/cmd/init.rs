//! `agent init` (and chat's `/init`): AGENTS.md from what the agent knows
//! about the repository ([`agent_core::init`]), written like any change.

use anyhow::Result;
use console::style;

use super::exit;
use crate::cli::InitArgs;
use agent_base::cancel::CancelToken;
use agent_base::term::counted;
use agent_core::init::InitOutcome;
use agent_core::ui::{TerminalUi, Ui};
use agent_core::{Agent, AgentConfig};
use agent_llm::scripted::ScriptedProvider;
use agent_llm::Provider;
use agent_policy::Mode;

pub(crate) fn run(args: &InitArgs, cancel: &CancelToken) -> Result<i32> {
    let root = agent_base::paths::repo_root(None)?;
    let managed = super::admin::managed();
    managed
        .check_mode(args.mode)
        .map_err(super::admin::Refused)?;
    // Without a model the overview is skipped; the agent still needs a
    // provider, and this one is never asked.
    let provider: Box<dyn Provider> = if args.no_model {
        Box::new(ScriptedProvider::new(Vec::new()))
    } else {
        super::provider(&args.model)?
    };
    let config = AgentConfig {
        mode: args.mode,
        repo_map: false,
        prefetch: 0,
        managed: managed.clone(),
        audit: super::admin::audit_config(),
        ..AgentConfig::new(&root)
    };
    let mut agent = Agent::new(provider, config, None)?;
    let mut approver = crate::session::terminal_approver(args.mode);
    let outcome = agent.init(!args.no_model, !args.print, approver.as_mut(), cancel)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
        return Ok(exit_code(&outcome, args.print));
    }
    if args.print {
        // What the model wrote, as `--print` asks for it: AGENTS.md text.
        print!("{}", agent_base::term::untrusted_text(&outcome.content));
        report_overview(&outcome);
        return Ok(exit::OK);
    }
    Ok(report(&outcome, args.mode == Mode::Yolo))
}

fn exit_code(outcome: &InitOutcome, print: bool) -> i32 {
    if print || outcome.output.ok {
        exit::OK
    } else if declined_on_a_terminal(outcome) {
        exit::NOT_DONE
    } else {
        exit::FAILURE
    }
}

fn report_overview(outcome: &InitOutcome) {
    if let Err(why) = &outcome.overview {
        eprintln!("{}", style(format!("(no overview: {why})")).dim());
    }
}

/// The user said no to the write (without a terminal, no one was asked,
/// and the write failing is the error).
fn declined_on_a_terminal(outcome: &InitOutcome) -> bool {
    use std::io::IsTerminal;
    outcome.output.error == Some(agent_tools::ErrorClass::Declined)
        && std::io::stdin().is_terminal()
}

/// Says what happened to AGENTS.md; the exit code (1 when it was not written).
/// `show_diff`: the approver did not show the diff (it approved without asking).
pub(crate) fn report(outcome: &InitOutcome, show_diff: bool) -> i32 {
    let mut ui = TerminalUi::new(false, show_diff);
    let call = agent_core::protocol::ToolCall {
        thought: String::new(),
        tool: "write_file".into(),
        args: serde_json::json!({"path": agent_core::init::FILE}),
    };
    ui.tool_result(&call, &outcome.output);
    report_overview(outcome);
    let found = outcome.facts.commands.len();
    let written = agent_core::init::written_commands(&outcome.facts);
    if outcome.output.ok {
        let commands = match found - written {
            0 => counted(written, "command"),
            more => format!(
                "{} written, {more} more found (`agent init --print --json` lists them)",
                counted(written, "command")
            ),
        };
        eprintln!(
            "{} ({commands}; read it, correct it, and commit it with the code)",
            agent_base::term::untrusted(&outcome.path)
        );
        return exit::OK;
    }
    if declined_on_a_terminal(outcome) {
        // Saying no is an answer, not a failure: exit 3, as `ask` does.
        eprintln!(
            "{} was not written: you declined",
            agent_base::term::untrusted(&outcome.path)
        );
        return exit::NOT_DONE;
    }
    eprintln!(
        "{} {} was not written{}\n  fix: run `agent init` on a terminal and answer y, or `agent init --print > AGENTS.md.new` to compare",
        style("✗").red(),
        agent_base::term::untrusted(&outcome.path),
        if outcome.existed {
            " (it exists, and is only replaced with a yes)"
        } else {
            ""
        }
    );
    exit::FAILURE
}
