//! `agent chat`: a saved, resumable conversation with the agent, in lines
//! or in the terminal UI; both drive one `agent_session::ChatSession`, and
//! show what it says.

use std::io::{BufRead, Write};

use agent_base::term::{untrusted, untrusted_text};
use anyhow::Result;
use console::style;

use super::exit;
use crate::session::{open_agent, print_outcome_on};
use crate::terminal::{self, LineAsk};
use agent_base::cancel::CancelToken;
use agent_cli::ChatArgs;
use agent_line::TerminalUi;
use agent_protocol::Ui;
use agent_session::settings::{mode_name, Mode, Sampling};
use agent_session::{chat, Ask, ChatSession, Reply};

pub(crate) fn run(args: &ChatArgs, cancel: &CancelToken, verbose: bool) -> Result<i32> {
    // Check the session before loading a model for it.
    let resume = resume_id(args)?;
    let sampling = Sampling {
        temperature: args.temperature,
        ..Sampling::greedy()
    };
    let session = open_agent(&args.agent, &args.model, args.max_tokens, sampling, resume)?;
    let tui = !args.no_tui && agent_tui::available();
    let resumed = session.agent.turns().len();
    eprintln!(
        "agent chat: {} in {}{}\n{}",
        session.agent.provider_name(),
        untrusted(session.agent.workspace()),
        if resumed > 0 {
            format!(
                " (resumed session {}, {resumed} messages)",
                session.agent.session_id()
            )
        } else {
            String::new()
        },
        if tui {
            "/help lists the commands; /exit, Ctrl-D or Ctrl-C twice quits; Esc stops the current step."
        } else {
            "/help lists the commands; /exit or Ctrl-D quits; Ctrl-C stops the current step."
        }
    );
    if resumed > 0 {
        chat::history(&session.agent.exchanges(), RESUME_SHOWN)
            .into_iter()
            .for_each(terminal::print);
        // The plan the session left unfinished (the UI pins it instead).
        if !tui && !session.agent.plan().is_empty() {
            TerminalUi::new(false, false).plan(session.agent.plan());
        }
    }
    // The index stays live, the agent's own edits included.
    let watcher = agent_session::index::Background::start(session.agent.workspace(), false);
    let mut chat = Chat {
        session,
        mode: args.agent.mode,
        verbose,
        refusals_told: Vec::new(),
        ask: Box::new(LineAsk),
    };
    if tui {
        chat.in_tui(cancel)?;
    } else {
        chat.in_lines(cancel)?;
    }
    drop(watcher);
    let agent = &mut chat.session.agent;
    if !agent.session_id().is_empty() {
        // After a turn the engine saves only a cache grown by half (an entry
        // is rewritten whole); the rest is saved here, for `--resume`.
        agent.save_prompt_cache();
        eprintln!(
            "session {} saved; continue with `agent chat --resume {}`",
            agent.session_id(),
            agent.session_id()
        );
    }
    Ok(exit::OK)
}

/// The session `--resume` names (the latest for a bare `--resume`).
fn resume_id(args: &ChatArgs) -> Result<Option<String>> {
    let Some(wanted) = args.resume.as_deref() else {
        return Ok(None);
    };
    let root = agent_base::paths::repo_root(None)?;
    chat::resume_id(&root, wanted).map(Some)
}

/// A chat in progress: the same turns and commands in the line mode and the UI.
struct Chat {
    session: ChatSession,
    mode: Mode,
    verbose: bool,
    /// The administrator's refusals already shown (Shift+Tab says each once).
    refusals_told: Vec<String>,
    /// How chat commands ask the user something.
    ask: Box<dyn Ask>,
}

/// After a line: go on, quit, or send the request that carries out the
/// plan the user just approved (in the mode planned from).
#[derive(PartialEq)]
enum Flow {
    Next,
    Quit,
    CarryOut(String),
}

impl Chat {
    /// The line mode: a `›` prompt on stderr, a request a line of stdin.
    fn in_lines(&mut self, cancel: &CancelToken) -> Result<()> {
        let mut ui = TerminalUi::new(self.verbose, self.mode == Mode::Yolo);
        let show_diffs = ui.show_diffs;
        let stdin = std::io::stdin();
        loop {
            eprint!("› ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            if stdin.lock().read_line(&mut line)? == 0 {
                break;
            }
            let mut flow = self.line(&line, &mut ui, show_diffs, true, cancel);
            loop {
                // `/plan` or an approved plan changed the mode: its approver.
                if self.mode != self.session.agent.mode() {
                    self.mode = self.session.agent.mode();
                    self.session.approver = crate::session::terminal_approver(self.mode);
                }
                let Flow::CarryOut(request) = flow else { break };
                flow = self.line(&request, &mut ui, show_diffs, true, cancel);
            }
            if flow == Flow::Quit {
                break;
            }
        }
        Ok(())
    }

    /// The terminal UI (`agent_tui`): the same lines, typed in its editor;
    /// what is printed on stderr meanwhile becomes its cells.
    fn in_tui(&mut self, cancel: &CancelToken) -> Result<()> {
        let root = self.session.agent.workspace().to_path_buf();
        let yolo = self.mode == Mode::Yolo;
        let mut tui = agent_tui::Tui::start(agent_tui::Options {
            state_dir: Some(agent_base::paths::state_dir(&root)),
            commands: chat::command_list(&root)
                .into_iter()
                .map(|c| agent_tui::CommandInfo {
                    name: c.name,
                    description: c.description,
                })
                .collect(),
            workspace: Some(root.clone()),
            status: self.status(),
            cancel: cancel.clone(),
            show_diffs: yolo,
            verbose: self.verbose,
        })?;
        self.session.approver = Box::new(tui.approver(yolo));
        self.ask = Box::new(TuiAsk(tui.chooser()));
        let mut ui = tui.ui();
        // A resumed session's plan, pinned from the start.
        tui.plan(self.session.agent.plan());
        while let Some(request) = tui.read_request() {
            let text = match request {
                agent_tui::Request::Line(text) => text,
                agent_tui::Request::NextMode => {
                    self.next_mode(&tui);
                    continue;
                }
            };
            tui.busy(true);
            let yolo = self.mode == Mode::Yolo;
            let mut flow = self.line(&text, &mut ui, yolo, false, cancel);
            while let Flow::CarryOut(request) = flow {
                self.mode_set(self.session.agent.mode(), &tui);
                let yolo = self.mode == Mode::Yolo;
                flow = self.line(&request, &mut ui, yolo, false, cancel);
            }
            // `/plan` may have changed the mode.
            if self.mode != self.session.agent.mode() {
                self.mode_set(self.session.agent.mode(), &tui);
            }
            tui.busy(false);
            tui.plan(self.session.agent.plan());
            tui.status(self.status());
            if flow == Flow::Quit {
                break;
            }
        }
        tui.finish();
        Ok(())
    }

    /// Shift+Tab: the next mode the administrator allows (yolo asked once
    /// first), for the approver and the status line too; why a mode was
    /// skipped is said once.
    fn next_mode(&mut self, tui: &agent_tui::Tui) {
        let (mode, refusals) = self.session.cycle_mode(self.ask.as_mut());
        for why in refusals {
            if !self.refusals_told.contains(&why) {
                eprintln!("{}", style(&why).yellow());
                self.refusals_told.push(why);
            }
        }
        self.mode_set(mode, tui);
    }

    /// The mode is now `mode`: the approver, the diffs and the status line follow.
    fn mode_set(&mut self, mode: Mode, tui: &agent_tui::Tui) {
        self.mode = mode;
        let yolo = mode == Mode::Yolo;
        self.session.approver = Box::new(tui.approver(yolo));
        tui.show_diffs(yolo);
        tui.status(self.status());
    }

    /// The status line's figures now.
    fn status(&self) -> agent_tui::Status {
        let (used, window) = self.session.agent.context_usage();
        agent_tui::Status {
            model: self.session.agent.provider_name(),
            context_used: used,
            context_window: window,
            generated: self.session.totals.generated,
            mode: mode_name(&self.mode),
            jobs: self
                .session
                .agent
                .jobs()
                .iter()
                .filter(|j| j.running())
                .count(),
        }
    }

    /// One line typed: a chat command, or a request for the agent.
    fn line(
        &mut self,
        line: &str,
        ui: &mut dyn Ui,
        show_diffs: bool,
        stdout: bool,
        cancel: &CancelToken,
    ) -> Flow {
        let line = line.trim();
        if line.is_empty() {
            return Flow::Next;
        }
        cancel.reset();
        let mut request = line.to_string();
        if let Some(command) = line.strip_prefix('/') {
            let say = &mut terminal::print;
            match self
                .session
                .command(command, ui, self.ask.as_mut(), cancel, say)
            {
                Reply::Quit => return Flow::Quit,
                Reply::Done => return Flow::Next,
                Reply::Init(outcome) => {
                    super::init::report(&outcome, show_diffs);
                    return Flow::Next;
                }
                Reply::Send(expanded) => request = expanded,
            }
        }
        match self
            .session
            .request(request.as_str(), ui, cancel, &mut terminal::print)
        {
            Ok(outcome) => {
                print_outcome_on(&outcome, stdout);
                let say = &mut terminal::print;
                if let Some(request) = self.session.approve_plan(&outcome, self.ask.as_mut(), say) {
                    cancel.reset();
                    return Flow::CarryOut(request);
                }
            }
            Err(e) => eprintln!("error: {}", untrusted_text(&format!("{e:#}"))),
        }
        cancel.reset();
        Flow::Next
    }
}

/// Exchanges shown when a session is resumed.
const RESUME_SHOWN: usize = 3;

/// The terminal UI's list and question, for the session's commands.
struct TuiAsk(agent_tui::Chooser);

impl Ask for TuiAsk {
    fn choose(&mut self, title: &str, items: &[String]) -> Option<usize> {
        self.0.choose(title, items)
    }

    fn confirm(&mut self, question: &str) -> bool {
        self.0.confirm(question)
    }
}
