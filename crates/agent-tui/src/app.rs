//! The UI thread: its state, the events it gets from the chat's thread
//! and the keys it reads, and the live area it draws.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_base::cancel::CancelToken;
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::approval::{answered_line, question_line, Ask};
use crate::capture::Capture;
use crate::cells::{self, dim, from_ansi};
use crate::choose::{confirm_line, Choice};
use crate::complete::Completion;
use crate::editor::Editor;
use crate::fold::{self, Fold};
use crate::frames::FrameTimes;
use crate::history::History;
use crate::markdown::Markdown;
use crate::notify::{Notify, LONG_TURN};
use crate::progress::Progress;
use crate::search::ReverseSearch;
use crate::status::{self, Status};
use crate::term::Screen;

/// What the chat's thread tells the UI.
pub(crate) enum Event {
    /// What was printed on stderr (SGR colours kept).
    Output(String),
    /// Finished lines for the scrollback.
    Cell(Vec<Line<'static>>),
    StepStart(usize),
    Answer(String),
    Reasoning(String),
    Generating(usize),
    /// Prompt tokens the model has read of those it must.
    Prefill {
        done: usize,
        total: usize,
    },
    StepEnd,
    /// A step that streams nothing began (a summary being written): shown
    /// with a spinner and its time until the next event that is not progress.
    Working(String),
    ToolStart {
        tool: String,
        summary: String,
    },
    ToolDone(ToolDone),
    /// A step of the exploration the running tool call is (`explore`):
    /// one line, folded into that call's cell when it ends.
    Nested(String),
    Approval(Ask, Sender<char>),
    /// The user's editor on these files, the UI stepped aside meanwhile.
    Edit(Vec<PathBuf>, Sender<std::io::Result<ExitStatus>>),
    /// A chat command asks for one item of a list, then maybe yes or no.
    Choose(Choice),
    Confirm(String, Sender<bool>),
    Status(Status),
    /// Whether each write's diff is shown under its tool call (yolo).
    ShowDiffs(bool),
    /// A turn began (true) or ended.
    Busy(bool),
    /// The model's plan, whole (empty: none to pin).
    Plan(Vec<agent_protocol::plan::Item>),
    /// The chat waits for the next request.
    Ready,
    /// The chat is over: restore the terminal and end the thread.
    Close,
}

pub(crate) struct ToolDone {
    pub ok: bool,
    pub content: String,
    pub diff: Option<String>,
}

/// What the UI tells the chat's thread.
pub(crate) enum Input {
    Submit(String),
    /// Shift+Tab between turns: the next permission mode.
    NextMode,
    Quit,
}

/// The chat's end of the UI: events go through here, after whatever was
/// printed on stderr before them, so the scrollback keeps their order.
#[derive(Clone)]
pub(crate) struct Link {
    pub tx: Sender<Event>,
    pub capture: Arc<Mutex<Capture>>,
}

impl Link {
    pub(crate) fn send(&self, event: Event) {
        let mut capture = self.capture.lock().unwrap_or_else(|e| e.into_inner());
        let printed = capture.drain();
        if !printed.is_empty() {
            let _ = self.tx.send(Event::Output(printed));
        }
        let _ = self.tx.send(event);
    }

    /// Forwards what was printed (from any thread) since the last time.
    pub(crate) fn flush(&self) {
        let mut capture = self.capture.lock().unwrap_or_else(|e| e.into_inner());
        let printed = capture.drain();
        if !printed.is_empty() {
            let _ = self.tx.send(Event::Output(printed));
        }
    }
}

/// How often the UI wakes without a key (spinner, elapsed time, stderr).
const TICK: Duration = Duration::from_millis(40);

/// A second Ctrl-C within this quits.
const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

/// A second Esc on an empty prompt within this opens `/rewind`.
const DOUBLE_ESC: Duration = Duration::from_secs(1);

const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

pub(crate) struct App {
    pub screen: Screen,
    pub link: Link,
    pub events: Receiver<Event>,
    pub input: Sender<Input>,
    pub cancel: CancelToken,
    pub editor: Editor,
    pub history: History,
    pub completion: Completion,
    pub status: Status,
    /// A turn is running.
    busy: Option<Instant>,
    /// The chat waits for a request.
    ready: bool,
    step: usize,
    live_tokens: usize,
    progress: Progress,
    /// The answer's unfinished last line.
    answer: String,
    /// The step's reasoning so far: one cell when it ends.
    reasoning: String,
    markdown: Markdown,
    fold: Fold,
    tool: Option<(String, String, Instant)>,
    /// The running call's exploration steps ([`Event::Nested`]).
    nested: Vec<String>,
    /// What streams nothing but takes time (`/compact`'s summary), since when.
    working: Option<(String, Instant)>,
    approval: Option<(Ask, Sender<char>)>,
    choice: Option<Choice>,
    confirm: Option<(String, Sender<bool>)>,
    search: Option<ReverseSearch>,
    ctrl_c: Option<Instant>,
    /// When Esc was last pressed on an empty prompt.
    esc: Option<Instant>,
    note: Option<String>,
    /// The model's plan, pinned above the input.
    plan: Vec<agent_protocol::plan::Item>,
    pub show_diffs: bool,
    closed: bool,
    started: Instant,
    /// The terminal has the user's eyes (until it reports focus lost).
    focused: bool,
    notify: Notify,
    frames: FrameTimes,
}

impl App {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        screen: Screen,
        link: Link,
        events: Receiver<Event>,
        input: Sender<Input>,
        cancel: CancelToken,
        history: History,
        completion: Completion,
        status: Status,
        show_diffs: bool,
        expanded: bool,
    ) -> Self {
        Self {
            screen,
            link,
            events,
            input,
            cancel,
            editor: Editor::default(),
            history,
            completion,
            status,
            busy: None,
            ready: false,
            step: 0,
            live_tokens: 0,
            progress: Progress::default(),
            answer: String::new(),
            reasoning: String::new(),
            markdown: Markdown::default(),
            fold: Fold::new(expanded),
            tool: None,
            nested: Vec::new(),
            working: None,
            approval: None,
            choice: None,
            confirm: None,
            search: None,
            ctrl_c: None,
            esc: None,
            note: None,
            plan: Vec::new(),
            show_diffs,
            closed: false,
            started: Instant::now(),
            focused: true,
            notify: Notify::from_env(),
            frames: FrameTimes::from_env(),
        }
    }

    /// Runs until the chat closes the UI (or the user quits at once).
    pub(crate) fn run(mut self) -> std::io::Result<()> {
        while !self.closed {
            self.link.flush();
            while let Ok(event) = self.events.try_recv() {
                self.on_event(event)?;
                if self.closed {
                    break;
                }
            }
            if self.closed {
                break;
            }
            let frame = self.frames.start();
            self.draw()?;
            self.frames.end(frame);
            if event::poll(TICK)? {
                match event::read()? {
                    TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
                    TermEvent::Paste(text) => {
                        self.editor.insert_str(&text);
                        self.completion.update(self.editor.text());
                    }
                    TermEvent::FocusLost => self.focused = false,
                    TermEvent::FocusGained => self.focused = true,
                    _ => {}
                }
            }
        }
        self.screen.close();
        self.frames.save();
        Ok(())
    }

    fn on_event(&mut self, event: Event) -> std::io::Result<()> {
        if !is_progress(&event) {
            self.working = None;
        }
        match event {
            Event::Output(text) => self.screen.insert(&from_ansi(&text))?,
            Event::Cell(lines) => self.screen.insert(&lines)?,
            Event::StepStart(step) => {
                self.step = step;
                self.live_tokens = 0;
                self.progress.step_start(Instant::now());
            }
            Event::Answer(text) => self.stream(&text, false)?,
            Event::Reasoning(text) => self.stream(&text, true)?,
            Event::Generating(tokens) => {
                self.live_tokens = tokens;
                self.progress.generated(tokens, Instant::now());
            }
            Event::Prefill { done, total } => self.progress.prefilled(done, total, Instant::now()),
            Event::StepEnd => self.end_step()?,
            Event::Working(what) => {
                self.live_tokens = 0;
                self.progress.step_start(Instant::now());
                self.working = Some((what, Instant::now()));
            }
            Event::ToolStart { tool, summary } => {
                self.end_step()?;
                self.nested.clear();
                self.tool = Some((tool, summary, Instant::now()));
            }
            Event::ToolDone(done) => self.tool_done(done)?,
            Event::Nested(line) => self.nested.push(line),
            Event::Approval(ask, reply) => {
                self.end_step()?;
                self.notify("agent: an approval is waiting")?;
                self.screen.insert(&ask.shown)?;
                self.approval = Some((ask, reply));
            }
            Event::Edit(files, reply) => {
                let status = self.run_editor(&files);
                let _ = reply.send(status);
            }
            Event::Choose(choice) => {
                self.end_step()?;
                self.choice = Some(choice);
            }
            Event::Confirm(question, reply) => self.confirm = Some((question, reply)),
            Event::Status(status) => self.status = status,
            Event::ShowDiffs(on) => self.show_diffs = on,
            Event::Busy(on) => {
                if let (false, Some(started)) = (on, self.busy) {
                    if started.elapsed() >= LONG_TURN {
                        self.notify("agent: the turn is done")?;
                    }
                }
                self.busy = on.then(Instant::now);
                self.live_tokens = 0;
                self.progress = Progress::default();
                self.note = None;
            }
            Event::Plan(plan) => self.plan = plan,
            Event::Ready => self.ready = true,
            Event::Close => self.closed = true,
        }
        Ok(())
    }

    /// Runs the user's editor with the terminal theirs (cooked mode, the
    /// live area cleared), then takes it back. Its stderr is the terminal,
    /// not the pipe that catches ours.
    fn run_editor(&mut self, files: &[PathBuf]) -> std::io::Result<ExitStatus> {
        let mut command = agent_protocol::proposal::editor_command(files);
        let stderr = self
            .link
            .capture
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .real_stderr();
        if let Ok(fd) = stderr {
            command.stderr(fd);
        }
        self.screen.suspend();
        let status = agent_protocol::proposal::run_editor(&mut command);
        self.screen.resume()?;
        status
    }

    /// Tells a user who looked away (the terminal is not focused).
    fn notify(&mut self, message: &str) -> std::io::Result<()> {
        if self.focused {
            return Ok(());
        }
        let mut out = std::io::stdout();
        out.write_all(self.notify.sequence(message).as_bytes())?;
        out.flush()
    }

    /// Streamed text: the answer's whole lines go to the scrollback as
    /// Markdown, its last stays live; reasoning waits for its end.
    fn stream(&mut self, text: &str, reasoning: bool) -> std::io::Result<()> {
        if reasoning {
            self.reasoning.push_str(text);
            return Ok(());
        }
        self.end_reasoning()?;
        self.answer.push_str(text);
        let Some(cut) = self.answer.rfind('\n') else {
            return Ok(());
        };
        let done: String = self.answer.drain(..=cut).collect();
        self.markdown.set_width(self.screen.size().0);
        // Only the last newline ends the piece: a blank line before it
        // (`"\n\n"` is often one token) is a line of its own.
        let done = done.strip_suffix('\n').unwrap_or(&done);
        let lines: Vec<Line<'static>> = done
            .split('\n')
            .flat_map(|l| self.markdown.line(l))
            .collect();
        self.screen.insert(&lines)
    }

    /// The reasoning is over: it goes to the scrollback, folded unless expanded.
    fn end_reasoning(&mut self) -> std::io::Result<()> {
        let text = std::mem::take(&mut self.reasoning);
        if text.trim().is_empty() {
            return Ok(());
        }
        let (full, short) = fold::reasoning(&text);
        let lines = self.fold.show(full, short);
        self.screen.insert(&lines)
    }

    /// A step ended: what is left of its streamed lines goes to the scrollback.
    fn end_step(&mut self) -> std::io::Result<()> {
        self.end_reasoning()?;
        let answer = std::mem::take(&mut self.answer);
        self.markdown.set_width(self.screen.size().0);
        let mut lines = Vec::new();
        if !answer.is_empty() {
            lines = self.markdown.line(&answer);
        }
        lines.extend(self.markdown.end());
        self.screen.insert(&lines)
    }

    fn tool_done(&mut self, done: ToolDone) -> std::io::Result<()> {
        let (tool, summary, started) = self
            .tool
            .take()
            .unwrap_or_else(|| (String::new(), String::new(), Instant::now()));
        // A command's admitted changes were in no approval: shown in every mode.
        let diff = done
            .diff
            .as_deref()
            .filter(|_| self.show_diffs || agent_protocol::job::changes_are_a_commands(&tool));
        let (full, short) = cells::tool_done(
            &tool,
            &summary,
            done.ok,
            started.elapsed(),
            &done.content,
            diff,
        );
        let nested = std::mem::take(&mut self.nested);
        let (full, short) = if nested.is_empty() {
            (full, short)
        } else {
            cells::explored(full, &nested)
        };
        let lines = self.fold.show(full, short);
        self.screen.insert(&lines)
    }

    /// Ctrl+T: the last folded cell in full and the next ones whole, or folded again.
    fn toggle_fold(&mut self) {
        if let Some(whole) = self.fold.toggle() {
            let _ = self.screen.insert(&whole);
        }
        self.note = Some(if self.fold.expanded {
            format!("output in full · {} folds", fold::KEY)
        } else {
            format!("output folded · {} expands", fold::KEY)
        });
    }

    fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if ctrl && key.code == KeyCode::Char('t') {
            return self.toggle_fold();
        }
        if self.approval.is_some() {
            return self.answer_approval(key);
        }
        if let Some(choice) = self.choice.as_mut() {
            if choice.key(key.code) {
                self.choice = None;
            }
            return;
        }
        if self.confirm.is_some() {
            return self.answer_confirm(key.code == KeyCode::Char('y'));
        }
        if self.search.is_some() && !self.search_key(key) {
            return;
        }
        match key.code {
            KeyCode::Esc if self.busy.is_some() => {
                self.cancel.cancel_by("Esc");
                self.note = Some("stopping…".into());
            }
            KeyCode::Esc if self.editor.is_empty() && self.ready => self.esc_on_empty(),
            KeyCode::Esc => self.completion.hide(),
            KeyCode::Char('d') if ctrl && self.editor.is_empty() => self.quit("Ctrl-D"),
            KeyCode::Char('r') if ctrl => self.start_search(),
            KeyCode::Enter | KeyCode::Char('j') if is_newline(&key) => self.editor.insert('\n'),
            KeyCode::Enter => self.enter(),
            KeyCode::Tab => {
                if let Some(text) = self.completion.complete() {
                    self.editor.set(&text);
                }
            }
            KeyCode::BackTab => self.next_mode(),
            KeyCode::Up if self.completion.visible() => self.completion.move_selection(-1),
            KeyCode::Down if self.completion.visible() => self.completion.move_selection(1),
            KeyCode::Up if self.editor.on_first_line() => {
                if let Some(entry) = self.history.previous(self.editor.text()) {
                    let entry = entry.to_string();
                    self.editor.set(&entry);
                }
            }
            KeyCode::Down if self.editor.on_last_line() => {
                if let Some(entry) = self.history.next() {
                    let entry = entry.to_string();
                    self.editor.set(&entry);
                }
            }
            _ => self.edit(key),
        }
        if !matches!(key.code, KeyCode::Up | KeyCode::Down) {
            self.completion.update(self.editor.text());
        }
    }

    /// Keys that change the text.
    fn edit(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let e = &mut self.editor;
        match key.code {
            KeyCode::Up => e.vertical(-1),
            KeyCode::Down => e.vertical(1),
            KeyCode::Char('a') if ctrl => e.home(),
            KeyCode::Char('e') if ctrl => e.end(),
            KeyCode::Char('u') if ctrl => e.clear(),
            KeyCode::Char('k') if ctrl => e.kill_to_end(),
            KeyCode::Char('w') if ctrl => e.delete_word(),
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char(c) => e.insert(c),
            KeyCode::Backspace => e.backspace(),
            KeyCode::Delete => e.delete(),
            KeyCode::Left => e.left(),
            KeyCode::Right => e.right(),
            KeyCode::Home => e.home(),
            KeyCode::End => e.end(),
            _ => {}
        }
    }

    fn enter(&mut self) {
        if self.editor.continue_line() {
            return;
        }
        if self.busy.is_some() || !self.ready {
            if let Some(command) = agent_session::chat::quit_command(self.editor.text()) {
                // Quitting is never refused: the step stops, then the chat ends.
                let text = self.editor.take();
                let _ = self.screen.insert(&cells::request(&text));
                return self.quit(command);
            }
            self.note = Some("the agent is working: Esc stops it".into());
            return;
        }
        let text = self.editor.take();
        self.completion.hide();
        if text.trim().is_empty() {
            return;
        }
        self.history.push(&text);
        let _ = self.screen.insert(&cells::request(&text));
        self.ready = false;
        let _ = self.input.send(Input::Submit(text));
    }

    /// Esc twice on an empty prompt: `/rewind`, to choose the request.
    fn esc_on_empty(&mut self) {
        self.completion.hide();
        let second = self.esc.take().is_some_and(|t| t.elapsed() < DOUBLE_ESC);
        if !second {
            self.esc = Some(Instant::now());
            return;
        }
        self.ready = false;
        let _ = self.input.send(Input::Submit("/rewind".into()));
    }

    /// The yes/no question's answer; it stays in the scrollback.
    fn answer_confirm(&mut self, yes: bool) {
        if let Some((question, reply)) = self.confirm.take() {
            let answer = if yes { 'y' } else { 'n' };
            let _ = self.screen.insert(&[answered_line(&question, answer)]);
            let _ = reply.send(yes);
        }
    }

    fn start_search(&mut self) {
        self.completion.hide();
        self.search = Some(ReverseSearch::new(self.editor.text()));
    }

    /// A key while Ctrl-R searches; true when the search ended and the key
    /// still does what it does in the editor (an arrow, say).
    fn search_key(&mut self, key: KeyEvent) -> bool {
        let Some(search) = self.search.as_mut() else {
            return true;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if ctrl => search.older(&self.history),
            KeyCode::Char('g') if ctrl => return self.end_search(false),
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.retype(&self.history);
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.retype(&self.history);
            }
            KeyCode::Esc => return self.end_search(false),
            KeyCode::Enter => return self.end_search(true),
            _ => {
                self.end_search(true);
                return true;
            }
        }
        let text = search.text(&self.history);
        self.editor.set(&text);
        false
    }

    /// Takes the entry found into the editor, or puts the draft back; false:
    /// the key that ended it is used up.
    fn end_search(&mut self, take: bool) -> bool {
        if let Some(search) = self.search.take() {
            let text = if take {
                search.text(&self.history)
            } else {
                search.draft
            };
            self.editor.set(&text);
        }
        false
    }

    /// Ctrl-C: stops the turn, or clears the input; twice within two seconds quits.
    fn ctrl_c(&mut self) {
        self.search = None;
        let again = self.ctrl_c.is_some_and(|t| t.elapsed() < DOUBLE_CTRL_C);
        if again {
            if self.busy.is_some() {
                // As in line mode: the second Ctrl-C does not wait for the turn.
                self.screen.close();
                crate::exit_now();
            }
            return self.quit("Ctrl-C");
        }
        self.ctrl_c = Some(Instant::now());
        if let Some((ask, reply)) = self.approval.take() {
            let _ = self.screen.insert(&[answered_line(&ask.question, 'n')]);
            let _ = reply.send('n');
        }
        if let Some(choice) = self.choice.take() {
            choice.answer(None);
        }
        self.answer_confirm(false);
        if self.busy.is_some() {
            self.cancel.cancel();
        } else {
            self.editor.take();
            self.completion.hide();
        }
        self.note = Some("Ctrl-C again to quit".into());
    }

    /// Shift+Tab: asks the chat for the next mode; a turn keeps the mode
    /// it began in, the chat reads the ask when the turn ends.
    fn next_mode(&mut self) {
        self.note = (self.busy.is_some() || !self.ready)
            .then(|| "the mode changes when this turn ends".into());
        let _ = self.input.send(Input::NextMode);
    }

    /// `/exit`, `/quit` or Ctrl-D (`key`): the chat ends, a running step
    /// stopped first (as Esc stops it), so the session is saved as it stands.
    fn quit(&mut self, key: &'static str) {
        if self.busy.is_some() {
            self.cancel.cancel_by(key);
        }
        let _ = self.input.send(Input::Quit);
        self.ready = false;
        self.note = Some("quitting…".into());
    }

    fn answer_approval(&mut self, key: KeyEvent) {
        let answer = match key.code {
            KeyCode::Char(c) if "yna".contains(c.to_ascii_lowercase()) => c.to_ascii_lowercase(),
            KeyCode::Char('e' | 'E') if self.approval.as_ref().is_some_and(|(a, _)| a.editable) => {
                'e'
            }
            KeyCode::Enter | KeyCode::Esc => 'n',
            _ => return,
        };
        if let Some((ask, reply)) = self.approval.take() {
            let _ = self.screen.insert(&[answered_line(&ask.question, answer)]);
            let _ = reply.send(answer);
        }
    }

    /// What Esc, Enter and Ctrl-C do now, for the status line.
    fn hint(&self) -> String {
        if let Some(note) = &self.note {
            return note.clone();
        }
        if let Some((ask, _)) = &self.approval {
            if ask.editable {
                "y yes · n no · a always · e edit in $EDITOR".into()
            } else {
                "y yes · n no · a always".into()
            }
        } else if self.choice.is_some() {
            "↑↓ move · Enter chooses · Esc cancels".into()
        } else if self.confirm.is_some() {
            "y yes · anything else no".into()
        } else if self.search.is_some() {
            "Ctrl-R older · Enter takes it · Esc cancels".into()
        } else if self.busy.is_some() {
            let action = if self.fold.expanded {
                "folds"
            } else {
                "expands"
            };
            format!("Esc stops · {} {action} · Ctrl-C twice quits", fold::KEY)
        } else {
            "/ commands · @ files · Shift+Tab mode · Ctrl-J newline".into()
        }
    }

    /// The live area's lines above the input: what streams, the running tool.
    fn live_lines(&self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        // The reasoning's latest line, while it lasts.
        let reasoning = self.reasoning.trim_end();
        if let Some(last) = reasoning
            .rsplit('\n')
            .next()
            .filter(|_| !reasoning.is_empty())
        {
            out.push(cells::styled(&last.replace('\t', "    "), dim()));
        }
        out.extend(self.markdown.pending(self.screen.size().0));
        if !self.answer.is_empty() {
            out.push(self.markdown.partial(&self.answer));
        }
        let spin = SPINNER[(self.started.elapsed().as_millis() / 100) as usize % SPINNER.len()];
        let spinner = Span::styled(format!("{spin} "), Style::default().fg(Color::Cyan));
        if let Some((tool, summary, started)) = &self.tool {
            let mut line = cells::tool_header(tool, summary, None);
            line.spans[0] = spinner;
            line.spans.push(Span::styled(
                format!("  {:.1}s", started.elapsed().as_secs_f64()),
                dim(),
            ));
            out.push(line);
            // An exploration: its latest step under its call.
            if let Some(step) = self.nested.last() {
                out.push(cells::styled(&format!("  ┆ {step}"), dim()));
            }
        } else if let Some((what, since)) = &self.working {
            out.push(Line::from(vec![
                spinner,
                Span::styled(
                    format!("{} {:.1}s", what.trim_end(), since.elapsed().as_secs_f64()),
                    dim(),
                ),
            ]));
        } else if let Some(since) = self.busy.filter(|_| out.is_empty()) {
            out.push(Line::from(vec![
                spinner,
                Span::styled(
                    format!(
                        "working (step {}) {:.1}s",
                        self.step.max(1),
                        since.elapsed().as_secs_f64()
                    ),
                    dim(),
                ),
            ]));
        }
        if let Some((ask, _)) = &self.approval {
            out.push(question_line(&ask.question, ask.editable));
        }
        if let Some(choice) = &self.choice {
            out.extend(choice.lines());
        }
        if let Some((question, _)) = &self.confirm {
            out.push(confirm_line(question));
        }
        if let Some(search) = &self.search {
            out.push(Line::styled(
                search.prompt(),
                Style::default().fg(Color::Cyan),
            ));
        }
        out
    }

    fn draw(&mut self) -> std::io::Result<()> {
        let (width, screen_height) = self.screen.size();
        let live: Vec<Line<'static>> = self
            .live_lines()
            .iter()
            .flat_map(|l| cells::wrap(l, width))
            .collect();
        let plan = crate::plan::lines(&self.plan, width);
        let (rows, cursor) = self.editor.layout(width);
        let rows: Vec<String> = rows.into_iter().take(12).collect();
        let menu = self.completion_lines();
        let progress = self.progress.text(Instant::now());
        let status = status::line(
            &self.status,
            self.live_tokens,
            progress.as_deref(),
            &self.hint(),
        );
        let wanted = live.len() + plan.len() + menu.len() + rows.len() + 1;
        let height = (wanted as u16).min(screen_height.saturating_sub(1).max(1));
        self.screen.set_height(height)?;
        let input_style = if self.approval.is_some() {
            dim()
        } else {
            Style::default()
        };
        self.screen.draw(|frame| {
            let area = frame.area();
            let mut lines = live;
            lines.extend(plan);
            lines.extend(menu);
            let input_top = lines.len() as u16;
            lines.extend(rows.into_iter().map(|r| Line::styled(r, input_style)));
            lines.push(status);
            // Bottom-aligned: the status line stays on the last row.
            let skip = lines.len().saturating_sub(usize::from(area.height));
            let lines: Vec<Line> = lines.into_iter().skip(skip).collect();
            Paragraph::new(lines).render(area, frame.buffer_mut());
            let y = (input_top + cursor.0).saturating_sub(skip as u16);
            (y < area.height).then(|| {
                frame.set_cursor_position((area.x + cursor.1, area.y + y));
                y
            })
        })
    }

    fn completion_lines(&self) -> Vec<Line<'static>> {
        if !self.completion.visible() {
            return Vec::new();
        }
        self.completion
            .rows()
            .into_iter()
            .map(|(item, selected)| {
                let name = format!("  {:<17}", item.label);
                let style = if selected {
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                };
                Line::from(vec![
                    Span::styled(name, style),
                    Span::styled(item.description.clone(), dim()),
                ])
            })
            .collect()
    }
}

/// Whether `event` only reports the progress of what runs (or what was
/// printed meanwhile): a [`Event::Working`] line stays up through it.
fn is_progress(event: &Event) -> bool {
    matches!(
        event,
        Event::Generating(_)
            | Event::Prefill { .. }
            | Event::Output(_)
            | Event::Status(_)
            | Event::Working(_)
    )
}

/// Shift+Enter, Alt+Enter or Ctrl+J: a line break, not a send.
fn is_newline(key: &KeyEvent) -> bool {
    match key.code {
        KeyCode::Enter => key
            .modifiers
            .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT),
        KeyCode::Char('j') => key.modifiers.contains(KeyModifiers::CONTROL),
        _ => false,
    }
}
