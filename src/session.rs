//! What every front end of the agent does alike: open the agent for a
//! workspace (`agent ask`, `agent chat` in lines or in the terminal UI,
//! `agent acp`), then show a request's outcome and pick the exit code.
//! (The saved conversations are `agent_core::session`.)

use std::path::Path;

use agent_base::term::{escape_controls, untrusted};
use agent_base::tokens::thousands;
use agent_core::ui::TerminalApprover;
use agent_core::{Agent, AgentConfig, Finish, Outcome, ToolAccess};
use agent_llm::{Provider, Sampling};
use agent_mcp::config::ServerConfig;
use agent_policy::Mode;
use agent_tools::{Approver, SemanticSearch};
use anyhow::Result;
use console::style;

use crate::cli::{AgentArgs, ModelArgs, Switch};
use crate::cmd::{admin, exit, mcp, search::IndexSearch, trust};

/// An agent and the approver its mode calls for.
pub(crate) struct Session {
    pub agent: Agent,
    pub approver: Box<dyn Approver>,
}

/// Builds the agent for the workspace around the current directory.
pub(crate) fn open_agent(
    args: &AgentArgs,
    model: &ModelArgs,
    max_tokens: usize,
    sampling: Sampling,
    resume: Option<String>,
) -> Result<Session> {
    let provider = crate::cmd::provider(model)?;
    open_agent_with(provider, args, max_tokens, sampling, resume)
}

/// [`open_agent`] with a provider of the caller's (`--print-prompt`).
pub(crate) fn open_agent_with(
    provider: Box<dyn Provider>,
    args: &AgentArgs,
    max_tokens: usize,
    sampling: Sampling,
    resume: Option<String>,
) -> Result<Session> {
    let root = agent_base::paths::repo_root(None)?;
    let agent = agent_in(
        &root,
        provider,
        args,
        max_tokens,
        sampling,
        resume,
        Vec::new(),
    )?;
    Ok(Session {
        agent,
        approver: terminal_approver(args.mode),
    })
}

/// Asks on the terminal, or (yolo) approves what the policy lets through.
pub(crate) fn terminal_approver(mode: Mode) -> Box<dyn Approver> {
    match mode {
        Mode::Yolo => Box::new(TerminalApprover::yolo()),
        Mode::Confirm | Mode::Human => Box::new(TerminalApprover::new()),
    }
}

/// The agent for the workspace at `root` on `provider`, with the
/// workspace's trusted MCP servers and `extra_mcp` ones (an editor's, over ACP).
pub(crate) fn agent_in(
    root: &Path,
    provider: Box<dyn Provider>,
    args: &AgentArgs,
    max_tokens: usize,
    sampling: Sampling,
    resume: Option<String>,
    extra_mcp: Vec<ServerConfig>,
) -> Result<Agent> {
    admin::check_agent(args)?;
    let root = root.to_path_buf();
    // What the repository ships runs only in a trusted workspace.
    let trust = trust::for_session(&root, true)?;
    let config = AgentConfig {
        mode: args.mode,
        max_steps: args.max_steps,
        max_tokens,
        sampling,
        verify: args.verify.clone(),
        repo_map: !args.no_map,
        sandbox: args.sandbox == Switch::On,
        resume,
        trusted: trust.trusted,
        protected_paths: trust.protected,
        managed: admin::managed().clone(),
        audit: admin::audit_config(),
        ..AgentConfig::new(&root)
    };
    let search = IndexSearch::for_workspace(&root).map(|s| Box::new(s) as Box<dyn SemanticSearch>);
    let mut agent = Agent::new(provider, config, search)?;
    // A skill folder that cannot be read is the team's to fix: say so, and
    // go on with the others.
    for problem in &agent.skills().problems {
        eprintln!(
            "{} {}",
            style("warning:").yellow(),
            escape_controls(problem)
        );
    }
    // The team's own tools: trusted servers only; one that fails is
    // reported and left out.
    if let Some(hub) = mcp::start_for_session(&root, agent.policy(), trust.trusted, extra_mcp)? {
        agent.add_tools(hub.tools());
    }
    Ok(agent)
}

/// Prints what the terminal UI did not already stream: the fallback answer,
/// what changed, and one dim line of tokens and time.
pub(crate) fn print_outcome(outcome: &Outcome) {
    print_outcome_on(outcome, true)
}

/// [`print_outcome`]; the fallback answer on stdout or, under the terminal
/// UI (whose stderr becomes cells), on stderr.
pub(crate) fn print_outcome_on(outcome: &Outcome, stdout: bool) {
    let found = |text: &str| {
        if stdout {
            println!("\n{}", escape_controls(text))
        } else {
            eprintln!("\n{}", escape_controls(text))
        }
    };
    match outcome.finish {
        Finish::Answered if outcome.answer.is_empty() => eprintln!("(empty answer)"),
        Finish::Answered => {}
        // The streamed text was no answer; this is what the search found.
        Finish::Evidence => found(&outcome.answer),
        Finish::NoAnswer | Finish::StepBudget | Finish::NotDone => {
            eprintln!("{}", escape_controls(&outcome.answer))
        }
        Finish::Cancelled => {
            // What the tools found before Ctrl-C, if anything.
            if !outcome.answer.is_empty() {
                found(&outcome.answer);
            }
            eprintln!("(stopped)")
        }
    }
    if let Some(line) = changes_line(outcome) {
        eprintln!("{line}");
    }
    eprintln!("{}", style(stats_line(outcome)).dim());
}

/// What a coding task changed, always said (also when nothing changed);
/// None for requests that could not change files.
fn changes_line(outcome: &Outcome) -> Option<String> {
    let files = &outcome.changed_files;
    if outcome.tools != ToolAccess::All && files.is_empty() {
        return None;
    }
    let mut line = match files.len() {
        0 => "0 files changed".to_string(),
        1 => format!("1 file changed: {}", untrusted(&files[0])),
        n => format!(
            "{n} files changed: {}",
            files
                .iter()
                .map(|f| untrusted(f).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if outcome.declined > 0 {
        line.push_str(&format!(
            " ({} change(s) or command(s) declined)",
            outcome.declined
        ));
    }
    Some(line)
}

/// `2,345 prompt tokens (1,900 reused) + 120 generated · 3 steps · 4.2 s · 18.5 tokens/s`
fn stats_line(outcome: &Outcome) -> String {
    let tps = if outcome.decode_ms > 0 {
        format!(
            "{:.1} tokens/s",
            outcome.completion_tokens as f64 * 1000.0 / outcome.decode_ms as f64
        )
    } else {
        "- tokens/s".to_string()
    };
    format!(
        "{} prompt tokens ({} reused) + {} generated · {} step{} · {:.1} s · {tps}",
        thousands(outcome.prompt_tokens),
        thousands(outcome.reused_tokens),
        thousands(outcome.completion_tokens),
        outcome.steps,
        if outcome.steps == 1 { "" } else { "s" },
        outcome.wall_ms as f64 / 1000.0,
    )
}

/// 0 for an answer; 3 when there is none (the search results shown instead
/// are not an answer); 130 for Ctrl-C.
pub(crate) fn exit_code(outcome: &Outcome) -> i32 {
    if outcome.finish == Finish::Cancelled {
        exit::INTERRUPTED
    } else if outcome.finish.unanswered() {
        exit::NOT_DONE
    } else {
        exit::OK
    }
}
