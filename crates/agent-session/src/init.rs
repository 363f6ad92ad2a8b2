//! `agent init` (and chat's `/init`): AGENTS.md from what the agent knows
//! about the repository, written like any change (a diff, approved), and
//! what happened said with its exit code.

use std::path::Path;

use anyhow::Result;

use agent_base::cancel::CancelToken;
use agent_base::term::{counted, untrusted};
use agent_core::{Agent, AgentConfig};
use agent_llm::scripted::ScriptedProvider;
use agent_llm::Provider;
use agent_policy::Mode;
use agent_protocol::{Approver, ErrorClass};

pub use agent_core::{InitOutcome, AGENTS_MD as FILE};

use crate::outcome::exit;
use crate::{ModelSettings, Notice, Say};

/// What `agent init` was asked for.
#[derive(Debug, Clone)]
pub struct InitSettings {
    pub mode: Mode,
    /// Ask the model for an overview (`--no-model` skips it).
    pub use_model: bool,
    /// Write AGENTS.md (`--print` only composes it).
    pub write: bool,
}

/// AGENTS.md for `root`, composed and (with `write`) written through
/// `approver`; the administrator's rules hold as in any session.
pub fn init(
    root: &Path,
    settings: &InitSettings,
    model: &ModelSettings,
    approver: &mut dyn Approver,
    cancel: &CancelToken,
    say: Say,
) -> Result<InitOutcome> {
    let managed = crate::admin::managed();
    managed
        .check_mode(settings.mode)
        .map_err(crate::admin::Refused)?;
    // Without a model the overview is skipped; the agent still needs a
    // provider, and this one is never asked.
    let provider: Box<dyn Provider> = if settings.use_model {
        crate::provider::provider(model, say)?
    } else {
        Box::new(ScriptedProvider::new(Vec::new()))
    };
    let config = AgentConfig {
        mode: settings.mode,
        repo_map: false,
        prefetch: 0,
        managed: managed.clone(),
        audit: crate::admin::audit_config(),
        ..AgentConfig::new(root)
    };
    let mut agent = Agent::new(provider, config, None)?;
    agent.init(settings.use_model, settings.write, approver, cancel)
}

/// What happened to AGENTS.md, and the exit code: 0 written, 3 when the
/// user declined (`asked`: someone was there to say no), 1 when it was not
/// written otherwise. The write's own result (its diff) is the front end's
/// to show before.
pub fn report(outcome: &InitOutcome, asked: bool) -> (Vec<Notice>, i32) {
    let mut said = overview(outcome);
    let path = untrusted(&outcome.path);
    if outcome.output.ok {
        let found = outcome.facts.commands.len();
        let written = agent_core::written_commands(&outcome.facts);
        let commands = match found - written {
            0 => counted(written, "command"),
            more => format!(
                "{} written, {more} more found (`agent init --print --json` lists them)",
                counted(written, "command")
            ),
        };
        said.push(Notice::Plain(format!(
            "{path} ({commands}; read it, correct it, and commit it with the code)"
        )));
        let unverified = agent_core::unverified_commands(&outcome.facts);
        if !unverified.is_empty() {
            let list: Vec<String> = unverified.iter().map(|c| format!("`{c}`")).collect();
            said.push(Notice::Plain(format!(
                "not verified: {} (what the manifest's ecosystem usually runs; no CI file, Makefile or README names them): run them once and correct {path} if they fail",
                list.join(", ")
            )));
        }
        return (said, exit::OK);
    }
    if asked && outcome.output.error == Some(ErrorClass::Declined) {
        // Saying no is an answer, not a failure: exit 3, as `ask` does.
        said.push(Notice::Plain(format!(
            "{path} was not written: you declined"
        )));
        return (said, exit::NOT_DONE);
    }
    said.push(Notice::Failed(format!(
        "{path} was not written{}\n  fix: run `agent init` on a terminal and answer y, or `agent init --print > AGENTS.md.new` to compare",
        if outcome.existed {
            " (it exists, and is only replaced with a yes)"
        } else {
            ""
        }
    )));
    (said, exit::FAILURE)
}

/// Why there is no overview, when there is none.
pub fn overview(outcome: &InitOutcome) -> Vec<Notice> {
    match &outcome.overview {
        Err(why) => vec![Notice::Quiet(format!("(no overview: {why})"))],
        Ok(_) => Vec::new(),
    }
}
