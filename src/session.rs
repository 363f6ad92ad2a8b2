//! What every front end of the agent does alike, on the terminal: open the
//! session for the workspace around the current directory
//! (`agent_session::open`, asking on the terminal), then show a request's
//! outcome. (The saved conversations are `agent_session::saved`.)

use agent_base::term::escape_controls;
use agent_line::TerminalApprover;
use agent_protocol::{Approver, Finish};
use agent_session::outcome::{changes_line, stats_line};
use agent_session::provider::Provider;
use agent_session::settings::{Mode, Sampling};
use agent_session::{Ask, ChatSession, Opening, Outcome};
use anyhow::Result;
use console::style;

use agent_cli::{AgentArgs, ModelArgs};

/// Opens the session for the workspace around the current directory.
pub(crate) fn open_agent(
    args: &AgentArgs,
    model: &ModelArgs,
    max_tokens: usize,
    sampling: Sampling,
    resume: Option<String>,
) -> Result<ChatSession> {
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
) -> Result<ChatSession> {
    let root = agent_base::paths::repo_root(None)?;
    let opening = Opening {
        agent: args.settings(),
        max_tokens,
        sampling,
        resume,
        extra_mcp: Vec::new(),
    };
    let mut ask = crate::terminal::ask();
    let agent = agent_session::open(
        &root,
        provider,
        opening,
        ask.as_mut().map(|a| a as &mut dyn Ask),
        &mut crate::terminal::print,
    )?;
    Ok(ChatSession::new(agent, terminal_approver(args.mode)))
}

/// Asks on the terminal, or (yolo) approves what the policy lets through.
pub(crate) fn terminal_approver(mode: Mode) -> Box<dyn Approver> {
    match mode {
        Mode::Yolo => Box::new(TerminalApprover::yolo()),
        Mode::Confirm | Mode::Human | Mode::Plan => Box::new(TerminalApprover::new()),
    }
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
