//! `agent chat`: a saved, resumable conversation with the agent; and the
//! set-up `agent ask` shares with it.

use std::io::{BufRead, Write};

use anyhow::{bail, Result};

use super::exit;
use crate::agent::ui::{TerminalUi, Ui};
use crate::agent::{Agent, AgentConfig, Finish, IndexSearch, Outcome};
use crate::cancel::CancelToken;
use crate::cli::{AgentArgs, ChatArgs, ModelArgs};
use crate::llm::Sampling;
use crate::policy::Mode;
use crate::tools::{AlwaysApprove, Approver, SemanticSearch};

/// Exit code for "no answer within --max-steps".
pub const NO_ANSWER: i32 = 3;

/// An agent and the approver its mode calls for.
pub struct Session {
    pub agent: Agent,
    pub approver: Box<dyn Approver>,
}

/// Builds the agent for the workspace around the current directory.
pub fn open_agent(
    args: &AgentArgs,
    model: &ModelArgs,
    max_tokens: usize,
    sampling: Sampling,
    resume: Option<String>,
) -> Result<Session> {
    let root = crate::paths::repo_root(None)?;
    let provider = super::provider(model)?;
    let config = AgentConfig {
        mode: args.mode,
        max_steps: args.max_steps,
        max_tokens,
        sampling,
        verify: args.verify.clone(),
        repo_map: !args.no_map,
        resume,
        ..AgentConfig::new(&root)
    };
    let search = IndexSearch::for_workspace(&root).map(|s| Box::new(s) as Box<dyn SemanticSearch>);
    let agent = Agent::new(provider, config, search)?;
    let approver: Box<dyn Approver> = match args.mode {
        Mode::Yolo => Box::new(AlwaysApprove),
        Mode::Confirm | Mode::Human => Box::new(crate::agent::ui::TerminalApprover::new()),
    };
    Ok(Session { agent, approver })
}

/// Prints what the terminal UI did not already stream.
pub fn print_outcome(outcome: &Outcome) {
    match outcome.finish {
        Finish::Answered if outcome.answer.is_empty() => eprintln!("(empty answer)"),
        Finish::Answered => {}
        // The streamed text was the model's echo; this is the answer.
        Finish::Evidence => println!("\n{}", outcome.answer),
        Finish::StepBudget => eprintln!("{}", outcome.answer),
        Finish::Cancelled => eprintln!("(stopped)"),
    }
    if !outcome.changed_files.is_empty() {
        eprintln!("changed: {}", outcome.changed_files.join(", "));
    }
}

pub fn exit_code(outcome: &Outcome) -> i32 {
    match outcome.finish {
        Finish::Answered | Finish::Evidence => exit::OK,
        Finish::StepBudget => NO_ANSWER,
        Finish::Cancelled => exit::INTERRUPTED,
    }
}

pub fn run(args: &ChatArgs, cancel: &CancelToken, verbose: bool) -> Result<i32> {
    // Check the session before loading a model for it.
    let resume = match args.resume.as_deref() {
        None => None,
        Some(wanted) => {
            let root = crate::paths::repo_root(None)?;
            let store = crate::agent::session::SessionStore::open(&root.join(".agent"))?;
            let found = if wanted.is_empty() {
                store.latest()?
            } else {
                store.get(wanted)?.map(|s| s.id)
            };
            match found {
                Some(id) => Some(id),
                None if wanted.is_empty() => bail!(
                    "there is no saved session to resume in {}\n  fix: start one with `agent chat`",
                    root.display()
                ),
                None => bail!(
                    "no session {wanted} in {}\n  fix: `agent sessions list` shows the sessions",
                    root.display()
                ),
            }
        }
    };
    let sampling = Sampling {
        temperature: args.temperature,
        ..Sampling::greedy()
    };
    let mut session = open_agent(&args.agent, &args.model, args.max_tokens, sampling, resume)?;
    let resumed = session.agent.turns().len();
    eprintln!(
        "agent chat: {} in {}{}\nEmpty line or Ctrl-D quits; Ctrl-C stops the current step.",
        session.agent.provider_name(),
        session.agent.workspace().display(),
        if resumed > 0 {
            format!(
                " (resumed session {}, {resumed} messages)",
                session.agent.session_id()
            )
        } else {
            String::new()
        }
    );
    let watcher = IndexWatcher::start(session.agent.workspace());
    let mut ui = TerminalUi::new(verbose, args.agent.mode == Mode::Yolo);
    let stdin = std::io::stdin();
    loop {
        eprint!("› ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        cancel.reset();
        match session.agent.handle(
            line.trim(),
            &mut ui as &mut dyn Ui,
            session.approver.as_mut(),
            cancel,
        ) {
            Ok(outcome) => print_outcome(&outcome),
            Err(e) => eprintln!("error: {e:#}"),
        }
        cancel.reset();
    }
    drop(watcher);
    if !session.agent.session_id().is_empty() {
        eprintln!(
            "session {} saved; continue with `agent chat --resume {}`",
            session.agent.session_id(),
            session.agent.session_id()
        );
    }
    Ok(exit::OK)
}

/// Keeps the code index live during a chat, the agent's own edits included,
/// when the workspace has an index and no other writer (`agent index
/// --watch`) already keeps it. Stops when dropped.
struct IndexWatcher {
    stop: CancelToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IndexWatcher {
    fn start(root: &std::path::Path) -> Option<Self> {
        if !root.join(".agent/index").is_dir() {
            return None;
        }
        let stop = CancelToken::new();
        let thread_stop = stop.clone();
        let root = root.to_path_buf();
        let thread = std::thread::spawn(move || {
            let mut index = match crate::index::Index::open_writer(&root, Default::default()) {
                Ok(index) => index,
                Err(e) => {
                    // Usually another writer: it keeps the index live already.
                    tracing::info!("no background indexing in this chat: {e:#}");
                    return;
                }
            };
            let result = crate::index::watch::watch(
                &mut index,
                crate::index::watch::DEFAULT_DEBOUNCE,
                &thread_stop,
                &mut |r| {
                    if let Err(e) = r {
                        tracing::warn!("background index update failed: {e:#}");
                    }
                },
            );
            if let Err(e) = result {
                tracing::warn!("background indexing stopped: {e:#}");
            }
        });
        Some(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for IndexWatcher {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
