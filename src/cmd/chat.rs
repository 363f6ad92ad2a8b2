//! `agent chat`: a saved, resumable conversation with the agent, in lines
//! or in the terminal UI; the agent is opened, and each outcome shown, as
//! every front end does it (`crate::session`).

use std::io::{BufRead, Write};

use agent_base::term::{escape_controls, untrusted, untrusted_text};
use anyhow::{bail, Result};
use console::style;

use super::exit;
use crate::cli::ChatArgs;
use crate::session::{open_agent, print_outcome_on, Session};
use agent_base::cancel::CancelToken;
use agent_base::tokens::thousands;
use agent_core::ui::{TerminalUi, Ui};
use agent_core::Outcome;
use agent_llm::{PromptCacheUse, Sampling, Speculation};
use agent_policy::Mode;

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
        print_history(&session.agent.exchanges(), RESUME_SHOWN);
        // The plan the session left unfinished (the UI pins it instead).
        if !tui && !session.agent.plan().is_empty() {
            TerminalUi::new(false, false).plan(session.agent.plan());
        }
    }
    // The index stays live, the agent's own edits included.
    let watcher = agent_index::watch::Background::start(session.agent.workspace(), false);
    let mut chat = Chat {
        session,
        totals: Totals::default(),
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
    let store = agent_core::session::SessionStore::open(&agent_base::paths::state_dir(&root))?;
    let found = if wanted.is_empty() {
        store.latest()?
    } else {
        store.get(wanted)?.map(|s| s.id)
    };
    match found {
        Some(id) => Ok(Some(id)),
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

/// A chat in progress: the same turns and commands in the line mode and the UI.
struct Chat {
    session: Session,
    totals: Totals,
    mode: Mode,
    verbose: bool,
    /// The administrator's refusals already shown (Shift+Tab says each once).
    refusals_told: Vec<String>,
    /// How chat commands ask the user something.
    ask: Box<dyn Ask>,
}

/// After a line: go on, or quit.
#[derive(PartialEq)]
enum Flow {
    Next,
    Quit,
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
            if self.line(&line, &mut ui, show_diffs, true, cancel) == Flow::Quit {
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
            commands: command_list(&root),
            workspace: Some(root.clone()),
            status: self.status(),
            cancel: cancel.clone(),
            show_diffs: yolo,
            verbose: self.verbose,
        })?;
        self.session.approver = Box::new(tui.approver(yolo));
        self.ask = Box::new(tui.chooser());
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
            let flow = self.line(&text, &mut ui, yolo, false, cancel);
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

    /// Shift+Tab: the next mode the administrator allows, for the approver
    /// and the status line too; why a mode was skipped is said once.
    fn next_mode(&mut self, tui: &agent_tui::Tui) {
        let (mode, refusals) = self.session.agent.cycle_mode();
        for why in refusals {
            if !self.refusals_told.contains(&why) {
                eprintln!("{}", style(&why).yellow());
                self.refusals_told.push(why);
            }
        }
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
            generated: self.totals.generated,
            mode: agent_policy::managed::mode_name(&self.mode),
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
            let session = &mut self.session;
            let asked = Asked {
                ask: self.ask.as_mut(),
                totals: &self.totals,
            };
            match slash_command(command, session, ui, show_diffs, asked, cancel) {
                Command::Quit => return Flow::Quit,
                Command::Done => return Flow::Next,
                Command::Send(expanded) => request = expanded,
            }
        }
        let request = with_attachments(&request, self.session.agent.workspace());
        let session = &mut self.session;
        match session
            .agent
            .handle(request, ui, session.approver.as_mut(), cancel)
        {
            Ok(outcome) => {
                self.totals.add(&outcome);
                print_outcome_on(&outcome, stdout)
            }
            Err(e) => eprintln!("error: {}", untrusted_text(&format!("{e:#}"))),
        }
        cancel.reset();
        Flow::Next
    }
}

/// `request` after the files it names as `@path` (the terminal UI's `@`
/// completion), attached as `agent ask --file` attaches them; one that
/// cannot be is said and left out.
fn with_attachments(request: &str, root: &std::path::Path) -> agent_core::attach::Request {
    let mut files = Vec::new();
    for path in mentioned_files(request, root) {
        match agent_core::attach::attachment_as(&root.join(&path), &path) {
            Ok(file) => {
                eprintln!("{}", style(format!("attached {}", untrusted(&path))).dim());
                files.push(file);
            }
            Err(e) => eprintln!(
                "{} {}",
                style("✗").red(),
                escape_controls(&format!("{e:#}"))
            ),
        }
    }
    agent_core::attach::Request::new(request, files)
}

/// The `@path` words of `request` that name a file inside the workspace,
/// once each; never a secret file (what is attached goes to the model).
fn mentioned_files(request: &str, root: &std::path::Path) -> Vec<String> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for word in request.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        // A mention ends a sentence or a clause now and then.
        let path = path.trim_end_matches(|c: char| ",.;:!?)".contains(c));
        // Judged where it leads too: a link to `.env` is a secret file.
        let target = root
            .join(path)
            .canonicalize()
            .ok()
            .filter(|f| f.is_file())
            .and_then(|f| agent_lang::walk::relative(&root, &f));
        let Some(target) = target else {
            continue;
        };
        let secret =
            agent_lang::walk::is_secret_file(path) || agent_lang::walk::is_secret_file(&target);
        if !secret && !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    out
}

/// What `/` lists in the UI: the built-in commands (from [`CHAT_HELP`]),
/// then the workspace's own with their descriptions.
fn command_list(root: &std::path::Path) -> Vec<agent_tui::CommandInfo> {
    let mut out: Vec<agent_tui::CommandInfo> = CHAT_HELP
        .lines()
        .filter_map(|l| l.strip_prefix("  /"))
        .filter_map(|l| {
            let (head, description) = l.split_once("  ")?;
            let name = head.split_whitespace().next()?;
            let args = head[name.len()..].trim();
            let description = description.trim();
            Some(agent_tui::CommandInfo {
                name: name.to_string(),
                description: if args.is_empty() {
                    description.to_string()
                } else {
                    format!("{args} {description}")
                },
            })
        })
        .collect();
    let personal = agent_core::commands::personal_dir();
    for c in agent_core::commands::list(root, personal.as_deref()) {
        if BUILT_IN.contains(&c.name.as_str()) {
            continue;
        }
        let description = c
            .description
            .unwrap_or_else(|| c.path.display().to_string());
        out.push(agent_tui::CommandInfo {
            name: escape_controls(&c.name).into_owned(),
            description: escape_controls(&description).into_owned(),
        });
    }
    out
}

/// Exchanges shown when a session is resumed.
const RESUME_SHOWN: usize = 3;

/// Characters of each resumed request or answer shown.
const RESUME_CHARS: usize = 300;

fn print_history(exchanges: &[(String, String)], last: usize) {
    let skipped = exchanges.len().saturating_sub(last);
    if skipped > 0 {
        eprintln!(
            "{}",
            style(format!("… {skipped} earlier exchange(s)")).dim()
        );
    }
    for (request, answer) in &exchanges[skipped..] {
        eprintln!(
            "{} {}",
            style("›").dim(),
            escape_controls(&agent_tools::grep::cut(request, RESUME_CHARS))
        );
        let answer = if answer.is_empty() {
            "(no answer)"
        } else {
            answer
        };
        eprintln!(
            "{}",
            style(escape_controls(&agent_tools::grep::cut(
                answer,
                RESUME_CHARS
            )))
            .dim()
        );
    }
}

/// Tokens and time over the whole chat, for `/tokens`.
#[derive(Default)]
struct Totals {
    requests: usize,
    prompt: usize,
    reused: usize,
    generated: usize,
    wall_ms: u64,
    prompt_cache: PromptCacheUse,
    speculative: Speculation,
}

impl Totals {
    fn add(&mut self, o: &Outcome) {
        self.requests += 1;
        self.prompt += o.prompt_tokens;
        self.reused += o.reused_tokens;
        self.generated += o.completion_tokens;
        self.wall_ms += o.wall_ms;
        self.prompt_cache.add(o.prompt_cache);
        self.speculative.add(o.speculative);
    }

    /// The `/tokens` report.
    fn report(&self, used: usize, window: usize) -> String {
        let spec = &self.speculative;
        format!(
            "this chat: {} request(s), {} prompt tokens ({} reused) + {} generated in {:.1} s\n\
prompt cache on disk: {} tokens loaded, {} saved\n\
speculative decoding: {} tokens drafted, {} confirmed ({:.0}% accepted)\n\
context now: {} of {} tokens ({:.0}%)",
            self.requests,
            thousands(self.prompt),
            thousands(self.reused),
            thousands(self.generated),
            self.wall_ms as f64 / 1000.0,
            thousands(self.prompt_cache.loaded_tokens),
            thousands(self.prompt_cache.saved_tokens),
            thousands(spec.drafted),
            thousands(spec.accepted),
            spec.acceptance * 100.0,
            thousands(used),
            thousands(window),
            used as f64 * 100.0 / window.max(1) as f64
        )
    }
}

/// The last prompt's budget, for `/tokens`.
fn budget_report(b: &agent_core::budget::Budget) -> String {
    if b.window == 0 {
        return "last prompt: none yet".into();
    }
    format!(
        "last prompt: {} of {} tokens: {} fixed (system prompt and tools), {} conversation, {} this request; {} kept for the answer; {} left out to fit",
        thousands(b.used()),
        thousands(b.window),
        thousands(b.fixed),
        thousands(b.conversation),
        thousands(b.new),
        thousands(b.reserve),
        thousands(b.cut)
    )
}

enum Command {
    Done,
    Quit,
    /// A custom command's request, for the agent.
    Send(String),
}

const CHAT_HELP: &str = "commands:
  /help             this list
  /clear            start a new conversation (this one stays saved)
  /undo             undo the agent's last change to the files in this session
  /rewind [N [--files]]  go back to before request N (listed, and asked, without N); --files: the files too
  /model            the model and its context window
  /tokens           tokens used so far, and how full the context is
  /compact [focus]  replace the conversation so far by the model's summary of it
  /init             write AGENTS.md for this repository (shown as a diff first)
  /exit             quit (also /quit, Ctrl-D)
anything else goes to the agent; Ctrl-C stops the current step";

/// The built-in commands' names: a prompt file of one of these names is shadowed.
const BUILT_IN: &[&str] = &[
    "help", "?", "exit", "quit", "q", "clear", "new", "undo", "rewind", "model", "tokens",
    "compact", "init",
];

/// `/help`: the built-in commands, then the workspace's own.
fn print_help(root: &std::path::Path) {
    eprintln!("{CHAT_HELP}");
    let custom = agent_core::commands::list(root, agent_core::commands::personal_dir().as_deref());
    if custom.is_empty() {
        eprintln!("your own: a prompt file .agent/commands/NAME.md becomes /NAME ($ARGUMENTS: what follows it)");
        return;
    }
    eprintln!("this workspace's commands:");
    for c in custom {
        let shadowed = if BUILT_IN.contains(&c.name.as_str()) {
            " (shadowed by the built-in command; rename the file)"
        } else {
            ""
        };
        eprintln!(
            "  /{:<15} {}{shadowed}",
            untrusted(&c.name),
            escape_controls(
                c.description
                    .as_deref()
                    .unwrap_or(&c.path.display().to_string())
            )
        );
    }
}

/// Runs a chat command (the text after `/`); never sent to the model,
/// except a custom command's expansion.
fn slash_command(
    command: &str,
    session: &mut Session,
    ui: &mut dyn Ui,
    show_diffs: bool,
    asked: Asked<'_>,
    cancel: &CancelToken,
) -> Command {
    let agent = &mut session.agent;
    let name = command.split_whitespace().next().unwrap_or("");
    let rest = command[name.len()..].trim();
    match name {
        "help" | "?" => print_help(agent.workspace()),
        "compact" => match agent.compact(Some(rest).filter(|r| !r.is_empty()), ui, cancel) {
            // The UI has shown the summary, or why there is none.
            Ok(_) => {}
            Err(e) => eprintln!("error: {}", untrusted_text(&format!("{e:#}"))),
        },
        "init" => match agent.init(true, true, session.approver.as_mut(), cancel) {
            Ok(outcome) => {
                super::init::report(&outcome, show_diffs);
            }
            Err(e) => eprintln!("error: {}", untrusted_text(&format!("{e:#}"))),
        },
        "exit" | "quit" | "q" => return Command::Quit,
        "clear" | "new" => {
            let old = agent.session_id().to_string();
            if !old.is_empty() {
                agent.save_prompt_cache();
            }
            agent.clear();
            if old.is_empty() {
                eprintln!("new conversation");
            } else {
                eprintln!("new conversation (the last one is saved: `agent chat --resume {old}`)");
            }
        }
        "undo" => {
            let out = agent.undo(cancel);
            if let Some(diff) = &out.diff {
                eprint!("{}", agent_tools::diff::colored(diff));
            }
            if out.ok {
                eprintln!("{}", untrusted_text(&out.content));
            } else {
                eprintln!("{} {}", style("✗").red(), untrusted_text(&out.content));
            }
        }
        "rewind" => rewind(agent, rest, asked.ask, cancel),
        "model" => {
            let (_, window) = agent.context_usage();
            eprintln!(
                "model: {}\ncontext window: {} tokens\n(another model: restart with `agent chat --model PATH`)",
                agent.provider_name(),
                thousands(window)
            );
        }
        "tokens" => {
            let (used, window) = agent.context_usage();
            eprintln!("{}", asked.totals.report(used, window));
            eprintln!("{}", budget_report(&agent.budget()));
        }
        _ => {
            let root = agent.workspace().to_path_buf();
            let personal = agent_core::commands::personal_dir();
            let held = (!agent.trusted())
                .then(|| agent_core::commands::held(&root, personal.as_deref(), name))
                .flatten();
            if let Some(why) = held {
                eprintln!("{} {}", style("✗").red(), why);
                return Command::Done;
            }
            match agent_core::commands::expand(&root, personal.as_deref(), name, rest) {
                Ok(request) => {
                    let lines = request.lines().count();
                    eprintln!(
                        "{}",
                        style(format!("/{name}: {lines} line(s) to the agent")).dim()
                    );
                    return Command::Send(request);
                }
                Err(why) if why.starts_with("no command") => eprintln!(
                    "unknown command /{name}; /help lists the commands\n{}",
                    escape_controls(&why)
                ),
                Err(why) => eprintln!("{} {}", style("✗").red(), escape_controls(&why)),
            }
        }
    }
    Command::Done
}

/// What a chat command may need of the chat besides the agent.
struct Asked<'a> {
    ask: &'a mut dyn Ask,
    totals: &'a Totals,
}

/// How a chat command asks the user something: lines on stdin, or the
/// terminal UI's list and question.
trait Ask {
    /// The index of the item the user takes, or None.
    fn choose(&mut self, title: &str, items: &[String]) -> Option<usize>;
    /// Whether the user answers yes.
    fn confirm(&mut self, question: &str) -> bool;
}

/// The line mode's: the items numbered on stderr, each answer a line of stdin.
struct LineAsk;

impl Ask for LineAsk {
    fn choose(&mut self, title: &str, items: &[String]) -> Option<usize> {
        eprintln!("{title}");
        for (i, item) in items.iter().enumerate() {
            eprintln!("{:>3}  {}", i + 1, escape_controls(item));
        }
        let answer = read_answer(&format!("number (1 to {}; Enter cancels): ", items.len()))?;
        match answer.parse::<usize>() {
            Ok(n) if (1..=items.len()).contains(&n) => Some(n - 1),
            _ if answer.is_empty() => None,
            _ => {
                eprintln!(
                    "{} {} is not in the list",
                    style("✗").red(),
                    escape_controls(&answer)
                );
                None
            }
        }
    }

    fn confirm(&mut self, question: &str) -> bool {
        let answer = read_answer(&format!("{question} [y/N] ")).unwrap_or_default();
        matches!(answer.to_lowercase().as_str(), "y" | "yes")
    }
}

impl Ask for agent_tui::Chooser {
    fn choose(&mut self, title: &str, items: &[String]) -> Option<usize> {
        agent_tui::Chooser::choose(self, title, items)
    }

    fn confirm(&mut self, question: &str) -> bool {
        agent_tui::Chooser::confirm(self, question)
    }
}

/// A line of stdin after `prompt`, trimmed; None at its end.
fn read_answer(prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => Some(line.trim().to_string()),
        _ => None,
    }
}

/// `/rewind [N [--files]]`: back to before request N, the files too with
/// `--files`; without N, the requests are listed and the user asked.
fn rewind(agent: &mut agent_core::Agent, args: &str, ask: &mut dyn Ask, cancel: &CancelToken) {
    let wanted = if args.is_empty() {
        let turns = agent.user_turns();
        if turns.is_empty() {
            eprintln!("nothing to rewind: no request yet");
            return;
        }
        let items: Vec<String> = turns.iter().map(turn_item).collect();
        match ask.choose("rewind to before which request?", &items) {
            Some(i) => (turns[i].number, ask.confirm("restore files too?")),
            None => {
                eprintln!("nothing rewound");
                return;
            }
        }
    } else {
        match rewind_args(args) {
            Some(wanted) => wanted,
            None => {
                eprintln!(
                    "{} usage: /rewind [N [--files]] (N: a request's number, as /rewind lists them); nothing rewound",
                    style("✗").red()
                );
                return;
            }
        }
    };
    match agent.rewind(wanted.0, wanted.1, cancel) {
        Ok(rewound) => eprintln!("{}", rewound_text(&rewound)),
        Err(e) => eprintln!(
            "{} {}; nothing rewound",
            style("✗").red(),
            escape_controls(&format!("{e:#}"))
        ),
    }
}

/// `N` or `N --files`.
fn rewind_args(args: &str) -> Option<(usize, bool)> {
    let mut words = args.split_whitespace();
    let number = words.next()?.parse().ok()?;
    match (words.next(), words.next()) {
        (None, _) => Some((number, false)),
        (Some("--files"), None) => Some((number, true)),
        _ => None,
    }
}

/// A request as `/rewind` lists it.
fn turn_item(turn: &agent_core::rewind::UserTurn) -> String {
    let request = agent_tools::grep::cut(&turn.request, 70);
    match turn.file_changes {
        0 => request,
        1 => format!("{request}  (1 file change)"),
        n => format!("{request}  ({n} file changes)"),
    }
}

/// What a rewind did, in a line (and its notes after it).
fn rewound_text(r: &agent_core::rewind::Rewound) -> String {
    let files = match (r.files, r.files_restored.is_empty()) {
        (false, _) => "files left as they are".to_string(),
        (true, true) => "no file change to undo".to_string(),
        (true, false) => format!("files restored: {}", r.files_restored.join(", ")),
    };
    let mut text = format!(
        "rewound to before request {} ({}): {} request(s) dropped; {}",
        r.number,
        agent_tools::grep::cut(&r.request, 60),
        r.requests_dropped,
        files
    );
    for note in &r.notes {
        text.push_str(&format!("\n{note}"));
    }
    if r.files && r.commands_ran {
        text.push_str("\nnote: commands ran in those requests; what they changed is not undone");
    }
    untrusted_text(&text).to_string()
}
