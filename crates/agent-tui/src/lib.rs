//! The terminal UI of `agent chat` (and of `agent` alone on a terminal).
//!
//! The design is codex-rs's: an inline viewport at the bottom of the
//! terminal (ratatui's `Viewport::Inline`) holds the live area (what is
//! streaming, the running tool, a question, the model's plan, the `/` list,
//! the input and the status line); every finished cell is inserted above it
//! (`insert_before`, with scroll regions), into the terminal's own
//! scrollback, so the user scrolls, searches and copies with their terminal.
//! No alternate screen. A pipe, `TERM=dumb` or `--no-tui` keep the line mode
//! ([`available`]).
//!
//! Two threads: the chat's (the caller's: it owns the [`agent_session::Agent`]
//! and runs the same loop and chat commands as the line mode) and the UI's
//! (it owns the terminal, reads the keys through crossterm, with bracketed
//! paste and the keyboard protocol where the terminal has it, and draws at
//! most every 40 ms). The chat's side is [`Tui`]:
//! [`Tui::read_request`] waits for the next request, [`Tui::ui`] is the
//! loop's [`agent_protocol::event::Ui`], [`Tui::approver`] its
//! [`agent_protocol::Approver`]; they send events over a channel to the UI's
//! thread, and an approval blocks the chat's thread on a reply channel until
//! the user answers. While the UI is up, stderr is a pipe whose text
//! becomes cells (`capture`), so a chat command's report or a warning
//! printed by any code lands in the scrollback, in order.
//!
//! Keys the chat acts on: Esc trips the chat's `CancelToken` (Ctrl-C's
//! meaning, said as Esc), and a second Ctrl-C within two seconds quits
//! (during a turn at once, exit 130); `/exit`, `/quit` or Ctrl-D during a
//! turn trip it too, and the chat quits when the turn has stopped.
//! Shift+Tab sends [`Request::NextMode`] to the chat's thread, read between
//! turns (a turn keeps the mode it began in): the chat moves to the next
//! mode the administrator allows (`agent_session::ChatSession::cycle_mode`,
//! which asks before the chat's first move into yolo; the agent audits the
//! move) and gives the approver and the status line the new mode.

mod app;
mod approval;
mod capture;
mod cells;
mod choose;
mod complete;
mod diff;
mod editor;
mod files;
mod fold;
mod frames;
mod highlight;
mod history;
mod markdown;
mod notify;
mod plan;
mod progress;
mod search;
mod status;
mod table;
mod term;

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use agent_base::cancel::CancelToken;
use agent_base::term::escape_controls;
use agent_protocol::event::{access_note, compaction_line, summarize_args, Ui};
use agent_protocol::Compaction;
use agent_protocol::Intent;
use agent_protocol::ToolAccess;
use agent_protocol::ToolOutput;
use agent_protocol::{ToolCall, FINISH};
use ratatui::style::{Color, Style};

use app::{App, Event, Input, Link, ToolDone};
pub use approval::TuiApprover;
pub use choose::Chooser;
pub use complete::CommandInfo;
pub use history::FILE as HISTORY_FILE;
pub use status::Status;

/// What `examples/tui_bench.rs` times (`scripts/bench tui`); not an API.
#[doc(hidden)]
pub mod bench {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;

    /// Draws answers' Markdown as the UI draws it into the scrollback.
    /// Kept across frames, as the UI keeps it: each language's highlight
    /// query is compiled once.
    #[derive(Default)]
    pub struct Answers(crate::markdown::Markdown);

    impl Answers {
        /// Each line rendered (code highlighted), wrapped to `width`, drawn
        /// into a buffer; the rows drawn.
        pub fn draw(&mut self, markdown: &str, width: u16) -> usize {
            let md = &mut self.0;
            md.set_width(width);
            let mut lines: Vec<_> = markdown.lines().flat_map(|l| md.line(l)).collect();
            lines.extend(md.end());
            let rows: Vec<_> = lines
                .iter()
                .flat_map(|l| crate::cells::wrap(l, width))
                .collect();
            let mut buffer = Buffer::empty(Rect::new(0, 0, width, rows.len() as u16));
            for (i, row) in rows.iter().enumerate() {
                row.render(Rect::new(0, i as u16, width, 1), &mut buffer);
            }
            rows.len()
        }
    }
}

/// Whether this process can show the UI: stdin, stdout and stderr are
/// terminals and `TERM` is not `dumb`.
pub fn available() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// How the UI starts.
pub struct Options {
    /// The workspace's state folder, for the input history (None: none kept).
    pub state_dir: Option<PathBuf>,
    /// What `/` lists.
    pub commands: Vec<CommandInfo>,
    /// Where `@` finds the files it lists (None: nowhere).
    pub workspace: Option<PathBuf>,
    pub status: Status,
    /// The token Esc and Ctrl-C trip (the chat's own).
    pub cancel: CancelToken,
    /// Show each write's diff under its tool call (yolo: nothing asked first).
    pub show_diffs: bool,
    /// Thoughts and full tool output too (`-v`).
    pub verbose: bool,
}

/// What the user asks of the chat between turns.
pub enum Request {
    /// A request or a chat command, as typed.
    Line(String),
    /// Shift+Tab: the next permission mode the administrator allows.
    NextMode,
}

/// The chat's side of the running UI.
pub struct Tui {
    link: Link,
    input: mpsc::Receiver<Input>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    verbose: bool,
}

impl Tui {
    /// Opens the live area under the cursor and starts the UI thread.
    pub fn start(options: Options) -> std::io::Result<Self> {
        // The viewport asks the terminal where the cursor is: before stderr
        // becomes a pipe, so nothing is in the way.
        let screen = term::Screen::open(2)?;
        let capture = match capture::Capture::start() {
            Ok(c) => Arc::new(Mutex::new(c)),
            Err(e) => {
                term::restore();
                return Err(e);
            }
        };
        let (tx, events) = mpsc::channel();
        let (input_tx, input) = mpsc::channel();
        let link = Link { tx, capture };
        let app = App::new(
            screen,
            link.clone(),
            events,
            input_tx,
            options.cancel,
            history::History::open(options.state_dir.as_deref()),
            complete::Completion::new(options.commands, options.workspace),
            options.status,
            options.show_diffs,
            options.verbose,
        );
        let thread = std::thread::Builder::new()
            .name("tui".into())
            .spawn(move || app.run())?;
        Ok(Self {
            link,
            input,
            thread: Some(thread),
            verbose: options.verbose,
        })
    }

    /// What the user asks next (a request, a chat command, another
    /// mode); None to quit.
    pub fn read_request(&mut self) -> Option<Request> {
        self.link.send(Event::Ready);
        match self.input.recv() {
            Ok(Input::Submit(text)) => Some(Request::Line(text)),
            Ok(Input::NextMode) => Some(Request::NextMode),
            Ok(Input::Quit) | Err(_) => None,
        }
    }

    /// Whether each write's diff is shown under its tool call (yolo: nothing asked first).
    pub fn show_diffs(&self, on: bool) {
        self.link.send(Event::ShowDiffs(on));
    }

    /// New figures for the status line.
    pub fn status(&self, status: Status) {
        self.link.send(Event::Status(status));
    }

    /// A turn begins (true) or ends.
    pub fn busy(&self, on: bool) {
        self.link.send(Event::Busy(on));
    }

    /// The plan to pin above the input (between turns: the session's, which
    /// a finished plan, `/clear` or `/rewind` leave empty).
    pub fn plan(&self, plan: &[agent_protocol::plan::Item]) {
        self.link.send(Event::Plan(plan.to_vec()));
    }

    /// The loop's [`Ui`] for a turn.
    pub fn ui(&self) -> TuiUi {
        TuiUi {
            link: self.link.clone(),
            verbose: self.verbose,
        }
    }

    /// The approver for the session; `yolo` asks only what the policy cannot read.
    pub fn approver(&self, yolo: bool) -> TuiApprover {
        TuiApprover::new(self.link.clone(), yolo)
    }

    /// What chat commands ask the user with (a list, a yes/no question).
    pub fn chooser(&self) -> Chooser {
        Chooser::new(self.link.clone())
    }

    /// Closes the live area, puts the terminal and stderr back; what was
    /// still to be shown is printed as plain text.
    pub fn finish(mut self) {
        self.close();
    }

    fn close(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.link.send(Event::Close);
        let _ = thread.join();
        term::restore();
        let rest = self
            .link
            .capture
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .restore();
        if !rest.is_empty() {
            // What was captured goes back where it was headed.
            #[allow(clippy::print_stderr)]
            {
                eprint!("{rest}");
            }
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.close();
    }
}

/// The second Ctrl-C during a turn: the terminal back, then exit 130 at
/// once, as the line mode does.
fn exit_now() -> ! {
    term::restore();
    // stderr is still the pipe: the word goes to the terminal itself.
    if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
        use std::io::Write;
        let _ = writeln!(tty, "interrupted");
    }
    std::process::exit(130)
}

/// The agent loop's [`Ui`], sending what happens to the UI thread.
pub struct TuiUi {
    link: Link,
    verbose: bool,
}

impl Ui for TuiUi {
    fn intent(&mut self, intent: &Intent, tools: ToolAccess) {
        if let Some(note) = access_note(intent, tools) {
            self.link
                .send(Event::Cell(vec![cells::styled(&note, cells::dim())]));
        }
        if self.verbose {
            let line = format!(
                "intent: {} ({:.2}; {})",
                intent.label.as_str(),
                intent.confidence,
                intent.reason
            );
            self.link
                .send(Event::Cell(vec![cells::styled(&line, cells::dim())]));
        }
    }

    fn step_start(&mut self, step: usize) {
        self.link.send(Event::StepStart(step));
    }

    fn answer_text(&mut self, text: &str) {
        self.link
            .send(Event::Answer(escape_controls(text).into_owned()));
    }

    fn reasoning_text(&mut self, text: &str) {
        self.link
            .send(Event::Reasoning(escape_controls(text).into_owned()));
    }

    fn generating(&mut self, _step: usize, tokens: usize) {
        self.link.send(Event::Generating(tokens));
    }

    fn prefilling(&mut self, _step: usize, done: usize, total: usize) {
        self.link.send(Event::Prefill { done, total });
    }

    fn step_end(&mut self) {
        self.link.send(Event::StepEnd);
    }

    fn working(&mut self, what: &str) {
        self.link
            .send(Event::Working(escape_controls(what).into_owned()));
    }

    fn tool_call(&mut self, call: &ToolCall) {
        if call.tool == FINISH {
            return;
        }
        if self.verbose && !call.thought.is_empty() {
            self.link.send(Event::Cell(vec![cells::styled(
                &format!("  {}", call.thought),
                cells::dim(),
            )]));
        }
        self.link.send(Event::ToolStart {
            tool: call.tool.clone(),
            summary: summarize_args(&call.args),
        });
    }

    fn tool_result(&mut self, _call: &ToolCall, output: &ToolOutput) {
        self.link.send(Event::ToolDone(ToolDone {
            ok: output.ok,
            content: output.content.clone(),
            diff: output.diff.clone(),
        }));
    }

    fn nested(&mut self, _id: &str, event: agent_protocol::Nested<'_>) {
        if let Some(line) = agent_protocol::subagent::line(&event) {
            self.link.send(Event::Nested(line));
        }
    }

    fn notice(&mut self, text: &str) {
        self.link.send(Event::Cell(vec![cells::styled(
            text,
            Style::default().fg(Color::Yellow),
        )]));
    }

    fn plan(&mut self, items: &[agent_protocol::plan::Item]) {
        self.link.send(Event::Plan(items.to_vec()));
    }

    fn compacted(&mut self, compaction: &Compaction) {
        let mut lines = vec![cells::styled(&compaction_line(compaction), cells::dim())];
        if let Some(summary) = &compaction.summary {
            lines.extend(
                summary
                    .trim_end()
                    .lines()
                    .map(|l| cells::styled(l, cells::dim())),
            );
        }
        self.link.send(Event::Cell(lines));
    }
}
