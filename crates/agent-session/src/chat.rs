//! The chat session: requests with their `@` mentions attached, the chat's
//! commands (`/help`, `/compact`, `/rewind`, a team's `.agent/commands`),
//! and the totals `/tokens` reports. The line mode and the terminal UI
//! drive it the same way; what it says goes to them as notices.

use std::path::Path;

use agent_base::cancel::CancelToken;
use agent_base::term::{escape_controls, untrusted, untrusted_text};
use agent_base::tokens::thousands;
use agent_core::attachment_as;
use agent_core::InitOutcome;
use agent_core::{Agent, Outcome};
use agent_llm::{PromptCacheUse, Speculation};
use agent_protocol::Request;
use agent_protocol::Ui;
use agent_tools::grep::cut;
use agent_tools::Approver;
use anyhow::{bail, Result};

use crate::settings::{mode_name, Mode};
use crate::{Ask, CommandInfo, Notice, Say};

/// An agent in a chat, the approver its mode calls for, and the chat's totals.
pub struct ChatSession {
    pub agent: Agent,
    pub approver: Box<dyn Approver>,
    pub totals: Totals,
    /// The user said yes to yolo in this chat (or started in it).
    yolo_accepted: bool,
}

/// What a chat command leaves the front end to do.
#[derive(Debug)]
pub enum Reply {
    /// Nothing more: what it had to say went through `say`.
    Done,
    Quit,
    /// A team command's request, for the agent.
    Send(String),
    /// `/init` ran: its outcome, for the front end to show.
    Init(Box<InitOutcome>),
}

impl ChatSession {
    pub fn new(agent: Agent, approver: Box<dyn Approver>) -> Self {
        Self {
            yolo_accepted: agent.mode() == Mode::Yolo,
            agent,
            approver,
            totals: Totals::default(),
        }
    }

    /// Shift+Tab: the next mode the administrator allows
    /// ([`Agent::cycle_mode`]), and the refusals of the modes skipped. Into
    /// yolo, where writes and commands run unasked, only once the user said
    /// yes to [`YOLO_WARNING`]: once a chat, so a habit of pressing Shift+Tab
    /// does not land there unseen, and is not a question each time after.
    /// Declined: the mode stays as it was.
    pub fn cycle_mode(&mut self, ask: &mut dyn Ask) -> (Mode, Vec<String>) {
        if self.agent.next_mode().0 == Mode::Yolo && !self.yolo_accepted {
            if !ask.confirm(YOLO_WARNING) {
                return (self.agent.mode(), Vec::new());
            }
            self.yolo_accepted = true;
        }
        self.agent.cycle_mode()
    }

    /// After a request that ended with a plan for the user's approval
    /// ([`Outcome::planned`]): asks; on yes, plan mode gives way to the
    /// mode planned from and the request that carries the plan out is
    /// returned, for the front end to send. On no, the chat stays in plan
    /// mode for the user to say what to change.
    pub fn approve_plan(
        &mut self,
        outcome: &Outcome,
        ask: &mut dyn Ask,
        say: Say<'_>,
    ) -> Option<String> {
        if !outcome.planned {
            return None;
        }
        let mode = self.agent.planned_from();
        let question = format!(
            "Carry out this plan now, in {} mode? (no: keep planning)",
            mode_name(&mode)
        );
        if !ask.confirm(&question) {
            say(Notice::Quiet(
                "the plan waits: say what to change, or /plan to leave plan mode".into(),
            ));
            return None;
        }
        match self.agent.carry_out(outcome) {
            Ok(request) => Some(request),
            Err(why) => {
                say(Notice::Failed(why));
                None
            }
        }
    }

    /// One request: its `@` mentions attached, the agent's outcome counted.
    pub fn request(
        &mut self,
        request: impl Into<Request>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
        say: Say<'_>,
    ) -> Result<Outcome> {
        let request = with_attachments(request.into(), self.agent.workspace(), say);
        let outcome = self
            .agent
            .handle(request, ui, self.approver.as_mut(), cancel)?;
        self.totals.add(&outcome);
        Ok(outcome)
    }

    /// Runs a chat command (the text after `/`); never sent to the model,
    /// except a team command's expansion.
    pub fn command(
        &mut self,
        command: &str,
        ui: &mut dyn Ui,
        ask: &mut dyn Ask,
        cancel: &CancelToken,
        say: Say<'_>,
    ) -> Reply {
        let agent = &mut self.agent;
        let name = command.split_whitespace().next().unwrap_or("");
        let rest = command[name.len()..].trim();
        match name {
            "help" | "?" => help(agent.workspace()).into_iter().for_each(say),
            // The UI has shown the summary, or why there is none.
            "compact" => {
                if let Err(e) = agent.compact(Some(rest).filter(|r| !r.is_empty()), ui, cancel) {
                    say(Notice::Error(format!("{e:#}")));
                }
            }
            "init" => match agent.init(true, true, self.approver.as_mut(), cancel) {
                Ok(outcome) => return Reply::Init(Box::new(outcome)),
                Err(e) => say(Notice::Error(format!("{e:#}"))),
            },
            _ if quit_command(&format!("/{name}")).is_some() => return Reply::Quit,
            "clear" | "new" => say(Notice::Plain(clear(agent))),
            "undo" => {
                let out = agent.undo(cancel);
                if let Some(diff) = out.diff {
                    say(Notice::Diff(diff));
                }
                say(if out.ok {
                    Notice::Plain(out.content)
                } else {
                    Notice::Failed(out.content)
                });
            }
            "rewind" => rewind(agent, rest, ask, cancel, say),
            "plan" => return plan_command(agent, rest, say),
            "model" => {
                let (_, window) = agent.context_usage();
                say(Notice::Plain(format!(
                    "model: {}\ncontext window: {} tokens\n(another model: restart with `agent chat --model PATH`)",
                    agent.provider_name(),
                    thousands(window)
                )));
            }
            "tokens" => {
                let (used, window) = agent.context_usage();
                say(Notice::Plain(self.totals.report(used, window)));
                say(Notice::Plain(budget_report(&agent.budget())));
            }
            "jobs" => say(Notice::Plain(jobs_report(&agent.jobs()))),
            _ => return team_command(agent, name, rest, say),
        }
        Reply::Done
    }
}

/// What Shift+Tab asks before the chat's first move into yolo.
pub const YOLO_WARNING: &str =
    "yolo: writes and commands run without asking you first. Switch to yolo for this chat?";

/// The commands that end the chat.
const QUIT: &[&str] = &["/exit", "/quit", "/q"];

/// The command ending the chat that `line` is, as typed (`/exit`, `/quit`,
/// `/q`, maybe with words after it): the terminal UI takes one while a step
/// runs too, where it stops the step first, instead of refusing it.
pub fn quit_command(line: &str) -> Option<&'static str> {
    let name = line.split_whitespace().next()?;
    QUIT.iter().copied().find(|q| *q == name)
}

/// What `/plan` says as plan mode begins.
pub const PLAN_ON: &str = "plan mode: the agent reads and writes a plan, and changes nothing until you approve it (/plan again leaves)";

/// `/plan`: into plan mode, or (alone, in it) back to the mode planned
/// from; `/plan REQUEST` plans that request.
fn plan_command(agent: &mut Agent, rest: &str, say: Say<'_>) -> Reply {
    let to = if agent.mode() != Mode::Plan {
        Mode::Plan
    } else if rest.is_empty() {
        agent.planned_from()
    } else {
        return Reply::Send(rest.to_string());
    };
    if let Err(why) = agent.set_mode(to) {
        say(Notice::Failed(why));
        return Reply::Done;
    }
    say(Notice::Plain(if to == Mode::Plan {
        PLAN_ON.to_string()
    } else {
        format!("{} mode", mode_name(&to))
    }));
    if rest.is_empty() {
        Reply::Done
    } else {
        Reply::Send(rest.to_string())
    }
}

/// `/jobs`: each background command, how it stands and how much it printed.
pub fn jobs_report(jobs: &[agent_protocol::Job]) -> String {
    if jobs.is_empty() {
        return "no background commands in this session (the agent starts one with run_cmd and background: true)".into();
    }
    let mut text = "background commands (stopped when the session ends):".to_string();
    for j in jobs {
        text.push_str(&format!(
            "\n  {:<7} {:<8} {:>9} bytes  {}",
            j.id,
            j.state_text(),
            thousands(j.output_bytes as usize),
            untrusted(&cut(&j.command, 80))
        ));
    }
    text
}

/// `/clear`: a new conversation; the last one stays saved.
fn clear(agent: &mut Agent) -> String {
    let old = agent.session_id().to_string();
    if !old.is_empty() {
        agent.save_prompt_cache();
    }
    agent.clear();
    if old.is_empty() {
        "new conversation".into()
    } else {
        format!("new conversation (the last one is saved: `agent chat --resume {old}`)")
    }
}

/// `/NAME ARGS` of a prompt file (`.agent/commands/NAME.md`): its request
/// for the agent; held in a workspace not trusted when it declares tools.
fn team_command(agent: &Agent, name: &str, rest: &str, say: Say<'_>) -> Reply {
    let root = agent.workspace().to_path_buf();
    let personal = agent_config::commands::personal_dir();
    let held = (!agent.trusted())
        .then(|| agent_config::commands::held(&root, personal.as_deref(), name))
        .flatten();
    if let Some(why) = held {
        say(Notice::Failed(why));
        return Reply::Done;
    }
    match agent_config::commands::expand(&root, personal.as_deref(), name, rest) {
        Ok(request) => {
            let lines = request.lines().count();
            say(Notice::Quiet(format!(
                "/{}: {lines} line(s) to the agent",
                untrusted(name)
            )));
            Reply::Send(request)
        }
        Err(why) if why.starts_with("no command") => {
            // How to write one only for a name a prompt file could have:
            // `/exit/exit` is a typo, not a command to create.
            let how = if name.contains('/') {
                String::new()
            } else {
                format!("\n{why}")
            };
            say(Notice::Plain(format!(
                "unknown command /{}; /help lists the commands{how}",
                untrusted(name)
            )));
            Reply::Done
        }
        Err(why) => {
            say(Notice::Failed(why));
            Reply::Done
        }
    }
}

/// The files named on the command line, read as attachments; one that
/// cannot be read is the error.
pub fn attachments(paths: &[std::path::PathBuf]) -> Result<Vec<agent_protocol::Attachment>> {
    agent_core::attachments(paths)
}

/// `request` with the files its text names as `@path` (the terminal UI's
/// `@` completion, an editor's file links) attached as `agent ask --file`
/// attaches them; one that cannot be is said and left out.
pub fn with_attachments(mut request: Request, root: &Path, say: Say<'_>) -> Request {
    for path in mentioned_files(&request.text, root) {
        match attachment_as(&root.join(&path), &path) {
            Ok(file) => {
                say(Notice::Quiet(format!("attached {}", untrusted(&path))));
                request.attachments.push(file);
            }
            Err(e) => say(Notice::Failed(format!("{e:#}"))),
        }
    }
    request
}

/// The `@path` words of `request` that name a file inside the workspace,
/// once each; never a secret file (what is attached goes to the model).
pub fn mentioned_files(request: &str, root: &Path) -> Vec<String> {
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

const CHAT_HELP: &str = "commands:
  /help             this list
  /clear            start a new conversation (this one stays saved)
  /undo             undo the agent's last change to the files in this session
  /rewind [N [--files]]  go back to before request N (listed, and asked, without N); --files: the files too
  /model            the model and its context window
  /tokens           tokens used so far, and how full the context is
  /jobs             the background commands the agent started, and how each stands
  /compact [focus]  replace the conversation so far by the model's summary of it
  /init             write AGENTS.md for this repository (shown as a diff first)
  /plan [request]   plan mode: read and plan, change nothing until you approve (again: leave it)
  /exit             quit (also /quit, Ctrl-D)
anything else goes to the agent; Ctrl-C stops the current step";

/// The built-in commands' names: a prompt file of one of these names is shadowed.
const BUILT_IN: &[&str] = &[
    "help", "?", "exit", "quit", "q", "clear", "new", "undo", "rewind", "model", "tokens", "jobs",
    "compact", "init", "plan",
];

/// What `/` lists: the built-in commands (from [`CHAT_HELP`]), then the
/// workspace's own with their descriptions.
pub fn command_list(root: &Path) -> Vec<CommandInfo> {
    let mut out: Vec<CommandInfo> = CHAT_HELP
        .lines()
        .filter_map(|l| l.strip_prefix("  /"))
        .filter_map(|l| {
            let (head, description) = l.split_once("  ")?;
            let name = head.split_whitespace().next()?;
            let args = head[name.len()..].trim();
            let description = description.trim();
            Some(CommandInfo {
                name: name.to_string(),
                description: if args.is_empty() {
                    description.to_string()
                } else {
                    format!("{args} {description}")
                },
                hint: (!args.is_empty()).then(|| args.to_string()),
            })
        })
        .collect();
    let personal = agent_config::commands::personal_dir();
    for c in agent_config::commands::list(root, personal.as_deref()) {
        if BUILT_IN.contains(&c.name.as_str()) {
            continue;
        }
        let description = c
            .description
            .unwrap_or_else(|| c.path.display().to_string());
        out.push(CommandInfo {
            name: escape_controls(&c.name).into_owned(),
            description: escape_controls(&description).into_owned(),
            hint: Some("what follows the command ($ARGUMENTS)".into()),
        });
    }
    out
}

/// `/help`: the built-in commands, then the workspace's own.
pub fn help(root: &Path) -> Vec<Notice> {
    let mut out = vec![Notice::Plain(CHAT_HELP.into())];
    let custom =
        agent_config::commands::list(root, agent_config::commands::personal_dir().as_deref());
    if custom.is_empty() {
        out.push(Notice::Plain("your own: a prompt file .agent/commands/NAME.md becomes /NAME ($ARGUMENTS: what follows it)".into()));
        return out;
    }
    let mut text = "this workspace's commands:".to_string();
    for c in custom {
        let shadowed = if BUILT_IN.contains(&c.name.as_str()) {
            " (shadowed by the built-in command; rename the file)"
        } else {
            ""
        };
        let description = c
            .description
            .unwrap_or_else(|| c.path.display().to_string());
        text.push_str(&format!(
            "\n  /{:<15} {}{shadowed}",
            untrusted(&c.name),
            escape_controls(&description)
        ));
    }
    out.push(Notice::Plain(text));
    out
}

/// The session `--resume` names in the workspace at `root`: `wanted`, or
/// the latest for an empty one.
pub fn resume_id(root: &Path, wanted: &str) -> Result<String> {
    let store = agent_store::session::SessionStore::open(&agent_base::paths::state_dir(root))?;
    let found = if wanted.is_empty() {
        store.latest()?
    } else {
        store.get(wanted)?.map(|s| s.id)
    };
    match found {
        Some(id) => Ok(id),
        None if wanted.is_empty() => bail!(
            "there is no saved session to resume in {}\n  fix: start one with `agent chat`",
            untrusted(root)
        ),
        None => bail!(
            "no session {} in {}\n  fix: `agent sessions list` shows the sessions",
            untrusted(wanted),
            untrusted(root)
        ),
    }
}

/// Characters of each resumed request or answer shown.
const RESUME_CHARS: usize = 300;

/// The last `last` exchanges of a resumed session, as the chat shows them.
pub fn history(exchanges: &[(String, String)], last: usize) -> Vec<Notice> {
    let skipped = exchanges.len().saturating_sub(last);
    let mut out = Vec::new();
    if skipped > 0 {
        out.push(Notice::Quiet(format!("… {skipped} earlier exchange(s)")));
    }
    for (request, answer) in &exchanges[skipped..] {
        out.push(Notice::Plain(format!("› {}", cut(request, RESUME_CHARS))));
        let answer = if answer.is_empty() {
            "(no answer)"
        } else {
            answer
        };
        out.push(Notice::Quiet(cut(answer, RESUME_CHARS)));
    }
    out
}

/// Tokens and time over the whole chat, for `/tokens` and the status line.
#[derive(Debug, Default)]
pub struct Totals {
    pub requests: usize,
    pub prompt: usize,
    pub reused: usize,
    pub generated: usize,
    pub wall_ms: u64,
    pub prompt_cache: PromptCacheUse,
    pub speculative: Speculation,
}

impl Totals {
    pub fn add(&mut self, o: &Outcome) {
        self.requests += 1;
        self.prompt += o.prompt_tokens;
        self.reused += o.reused_tokens;
        self.generated += o.completion_tokens;
        self.wall_ms += o.wall_ms;
        self.prompt_cache.add(o.prompt_cache);
        self.speculative.add(o.speculative);
    }

    /// The `/tokens` report.
    pub fn report(&self, used: usize, window: usize) -> String {
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
pub fn budget_report(b: &agent_core::Budget) -> String {
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

/// `/rewind [N [--files]]`: back to before request N, the files too with
/// `--files`; without N, the requests are listed and the user asked.
fn rewind(agent: &mut Agent, args: &str, ask: &mut dyn Ask, cancel: &CancelToken, say: Say<'_>) {
    let wanted = if args.is_empty() {
        let turns = agent.user_turns();
        if turns.is_empty() {
            say(Notice::Plain("nothing to rewind: no request yet".into()));
            return;
        }
        let items: Vec<String> = turns.iter().map(turn_item).collect();
        match ask.choose("rewind to before which request?", &items) {
            Some(i) => (turns[i].number, ask.confirm("restore files too?")),
            None => {
                say(Notice::Plain("nothing rewound".into()));
                return;
            }
        }
    } else {
        match rewind_args(args) {
            Some(wanted) => wanted,
            None => {
                say(Notice::Failed(
                    "usage: /rewind [N [--files]] (N: a request's number, as /rewind lists them); nothing rewound".into(),
                ));
                return;
            }
        }
    };
    match agent.rewind(wanted.0, wanted.1, cancel) {
        Ok(rewound) => say(Notice::Plain(rewound_text(&rewound))),
        Err(e) => say(Notice::Failed(format!("{e:#}; nothing rewound"))),
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
fn turn_item(turn: &agent_core::UserTurn) -> String {
    let request = cut(&turn.request, 70);
    match turn.file_changes {
        0 => request,
        1 => format!("{request}  (1 file change)"),
        n => format!("{request}  ({n} file changes)"),
    }
}

/// What a rewind did, in a line (and its notes after it).
fn rewound_text(r: &agent_core::Rewound) -> String {
    let files = match (r.files, r.files_restored.is_empty()) {
        (false, _) => "files left as they are".to_string(),
        (true, true) => "no file change to undo".to_string(),
        (true, false) => format!("files restored: {}", r.files_restored.join(", ")),
    };
    let mut text = format!(
        "rewound to before request {} ({}): {} request(s) dropped; {}",
        r.number,
        cut(&r.request, 60),
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

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::AgentConfig;
    use agent_llm::scripted::{ScriptTurn, ScriptedProvider};
    use agent_protocol::event::QuietUi;
    use agent_tools::AlwaysApprove;

    /// A workspace: a `.git`, a source file, a secret, a link to it.
    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(
            root.join("src/calc.py"),
            "def add(a, b):\n    return a + b\n",
        )
        .unwrap();
        std::fs::write(root.join(".env"), "TOKEN=sk-secret\n").unwrap();
        std::os::unix::fs::symlink(root.join(".env"), root.join("settings.txt")).unwrap();
        dir
    }

    /// A chat on `root` replaying `turns`.
    fn chat(root: &Path, turns: &[&str]) -> ChatSession {
        agent_base::paths::isolate_for_tests();
        let provider = ScriptedProvider::new(turns.iter().map(|t| t.to_string()).collect());
        let config = AgentConfig {
            repo_map: false,
            ..AgentConfig::new(root)
        };
        let agent = Agent::new(Box::new(provider), config, None).unwrap();
        ChatSession::new(agent, Box::new(AlwaysApprove))
    }

    /// Runs `/command`: its reply and what it said.
    fn run(chat: &mut ChatSession, command: &str) -> (Reply, Vec<Notice>) {
        let mut said = Vec::new();
        let reply = chat.command(
            command,
            &mut QuietUi,
            &mut crate::NoAnswers,
            &CancelToken::new(),
            &mut |n| said.push(n),
        );
        (reply, said)
    }

    fn finish(answer: &str) -> String {
        serde_json::json!({"thought": "t", "tool": "finish", "args": {"answer": answer}})
            .to_string()
    }

    #[test]
    fn mentions_name_workspace_files_once_and_never_a_secret() {
        let dir = workspace();
        let found = mentioned_files(
            "compare @src/calc.py, @src/calc.py and @.env; also @settings.txt @missing.rs a@b",
            dir.path(),
        );
        // `.env` is a secret, and so is the link that leads to it.
        assert_eq!(found, ["src/calc.py"]);
    }

    #[test]
    fn a_mentioned_file_is_attached_and_said_so() {
        let dir = workspace();
        let mut said = Vec::new();
        let request = with_attachments("explain @src/calc.py".into(), dir.path(), &mut |n| {
            said.push(n)
        });
        assert_eq!(request.text, "explain @src/calc.py");
        assert_eq!(request.attachments.len(), 1);
        assert_eq!(said, [Notice::Quiet("attached src/calc.py".into())]);
    }

    #[test]
    fn the_command_list_holds_the_built_ins_and_the_teams_own() {
        let dir = workspace();
        let commands = dir.path().join(".agent/commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(
            commands.join("review.md"),
            "---\ndescription: review a file\n---\nReview $ARGUMENTS for bugs.\n",
        )
        .unwrap();
        std::fs::write(commands.join("help.md"), "shadowed\n").unwrap();
        let list = command_list(dir.path());
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "help", "clear", "undo", "rewind", "model", "tokens", "jobs", "compact", "init",
                "plan", "exit", "review"
            ]
        );
        let rewind = &list[3];
        assert!(
            rewind.description.starts_with("[N [--files]] go back"),
            "{rewind:?}"
        );
        assert_eq!(rewind.hint.as_deref(), Some("[N [--files]]"));
        assert_eq!(list[0].hint, None);
        assert_eq!(list[11].description, "review a file");
        let help = help(dir.path());
        assert!(help[1].text().contains("/help"), "{help:?}");
        assert!(
            help[1].text().contains("shadowed by the built-in"),
            "{help:?}"
        );
    }

    #[test]
    fn a_team_command_sends_its_request_and_an_unknown_one_says_so() {
        let dir = workspace();
        let commands = dir.path().join(".agent/commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(commands.join("review.md"), "Review $ARGUMENTS for bugs.\n").unwrap();
        let mut chat = chat(dir.path(), &[]);
        match run(&mut chat, "review src/calc.py") {
            (Reply::Send(request), said) => {
                assert_eq!(request.trim(), "Review src/calc.py for bugs.");
                assert_eq!(
                    said,
                    [Notice::Quiet("/review: 1 line(s) to the agent".into())]
                );
            }
            other => panic!("{other:?}"),
        }
        let (reply, said) = run(&mut chat, "nope");
        assert!(matches!(reply, Reply::Done));
        assert!(
            said[0].text().starts_with("unknown command /nope")
                && said[0].text().contains("fix: write the request"),
            "{said:?}"
        );
        // A typo such as `/exit/exit` gets no advice to create it.
        let (_, said) = run(&mut chat, "exit/exit");
        assert_eq!(
            said,
            [Notice::Plain(
                "unknown command /exit/exit; /help lists the commands".into()
            )]
        );
        assert!(matches!(run(&mut chat, "exit").0, Reply::Quit));
    }

    /// Answers each question with the next answer, and keeps the questions.
    struct Answers(Vec<bool>, Vec<String>);

    impl Ask for Answers {
        fn choose(&mut self, _: &str, _: &[String]) -> Option<usize> {
            None
        }
        fn confirm(&mut self, question: &str) -> bool {
            self.1.push(question.to_string());
            !self.0.is_empty() && self.0.remove(0)
        }
    }

    #[test]
    fn yolo_is_asked_once_a_chat_and_a_no_leaves_the_mode() {
        let dir = workspace();
        let mut chat = chat(dir.path(), &[]);
        assert_eq!(chat.agent.mode(), Mode::Confirm);
        let mut ask = Answers(vec![false, true], Vec::new());
        assert_eq!(chat.cycle_mode(&mut ask), (Mode::Confirm, Vec::new()));
        assert_eq!(chat.agent.mode(), Mode::Confirm);
        assert_eq!(chat.cycle_mode(&mut ask).0, Mode::Yolo);
        assert_eq!(ask.1, [YOLO_WARNING, YOLO_WARNING]);
        // Round the cycle again: yolo is not asked a second time.
        assert_eq!(chat.cycle_mode(&mut ask).0, Mode::Plan);
        assert_eq!(chat.cycle_mode(&mut ask).0, Mode::Human);
        assert_eq!(chat.cycle_mode(&mut ask).0, Mode::Confirm);
        assert_eq!(chat.cycle_mode(&mut ask).0, Mode::Yolo);
        assert_eq!(ask.1.len(), 2);
    }

    fn call(tool: &str, args: serde_json::Value) -> String {
        serde_json::json!({"thought": "t", "tool": tool, "args": args}).to_string()
    }

    #[test]
    fn plan_mode_changes_nothing_and_an_approved_plan_is_carried_out_in_the_mode_planned_from() {
        let dir = workspace();
        let write = call(
            "write_file",
            serde_json::json!({"path": "src/sub.py", "content": "def sub(a, b):\n    return a - b\n"}),
        );
        let todo = call(
            "todo",
            serde_json::json!({"items": [{"text": "add sub to src/sub.py", "status": "pending"}]}),
        );
        let turns = [
            // Planning: a write is not among the tools, so it is refused.
            write.as_str(),
            todo.as_str(),
            &finish("Plan: add sub() in src/sub.py"),
            // Carrying it out.
            write.as_str(),
            &finish("Added sub()."),
        ];
        let mut chat = chat(dir.path(), &turns);
        let (reply, said) = run(&mut chat, "plan");
        assert!(matches!(reply, Reply::Done) && said == [Notice::Plain(PLAN_ON.into())]);
        assert_eq!(chat.agent.mode(), Mode::Plan);
        let quiet = &mut QuietUi;
        let cancel = CancelToken::new();
        let outcome = chat
            .request(
                "Add a sub function in src/sub.py",
                quiet,
                &cancel,
                &mut |_| {},
            )
            .unwrap();
        assert!(outcome.planned, "{outcome:?}");
        assert_eq!(outcome.plan.len(), 1);
        assert!(
            !dir.path().join("src/sub.py").exists(),
            "plan mode wrote a file"
        );

        // No: the plan waits, in plan mode.
        let mut said = Vec::new();
        let mut no = Answers(vec![false], Vec::new());
        assert!(chat
            .approve_plan(&outcome, &mut no, &mut |n| said.push(n))
            .is_none());
        assert!(no.1[0].contains("in confirm mode"), "{:?}", no.1);
        assert_eq!(chat.agent.mode(), Mode::Plan);

        // Yes: back to confirm, and the plan's items are the request.
        let mut yes = Answers(vec![true], Vec::new());
        let request = chat.approve_plan(&outcome, &mut yes, &mut |_| {}).unwrap();
        assert!(request.contains("1. add sub to src/sub.py"), "{request}");
        assert_eq!(chat.agent.mode(), Mode::Confirm);
        let done = chat
            .request(request.as_str(), quiet, &cancel, &mut |_| {})
            .unwrap();
        assert!(!done.planned);
        assert!(dir.path().join("src/sub.py").exists(), "{done:?}");
    }

    #[test]
    fn an_administrator_who_requires_plans_gets_every_coding_task_planned_first() {
        let dir = workspace();
        agent_base::paths::isolate_for_tests();
        let write = call(
            "write_file",
            serde_json::json!({"path": "src/sub.py", "content": "x = 1\n"}),
        );
        let turns = [
            write.clone(),
            finish("Plan: write src/sub.py"),
            write,
            finish("Added src/sub.py."),
        ];
        let provider = ScriptedProvider::new(turns.to_vec());
        let config = AgentConfig {
            repo_map: false,
            managed: agent_policy::managed::Managed {
                require_plan: true,
                ..Default::default()
            },
            ..AgentConfig::new(dir.path())
        };
        let agent = Agent::new(Box::new(provider), config, None).unwrap();
        let mut chat = ChatSession::new(agent, Box::new(AlwaysApprove));
        let (quiet, cancel) = (&mut QuietUi, CancelToken::new());
        let planned = chat
            .request("Create src/sub.py with x = 1", quiet, &cancel, &mut |_| {})
            .unwrap();
        assert!(
            planned.planned && !dir.path().join("src/sub.py").exists(),
            "{planned:?}"
        );
        assert_eq!(chat.agent.mode(), Mode::Confirm, "the mode is the user's");
        let mut yes = Answers(vec![true], Vec::new());
        let request = chat.approve_plan(&planned, &mut yes, &mut |_| {}).unwrap();
        assert!(
            request.contains("Plan: write src/sub.py"),
            "no todo: the answer is the plan"
        );
        let done = chat
            .request(request.as_str(), quiet, &cancel, &mut |_| {})
            .unwrap();
        assert!(
            dir.path().join("src/sub.py").exists() && done.steps == 2,
            "{done:?}"
        );
    }

    #[test]
    fn plan_alone_leaves_plan_mode_and_with_words_plans_them() {
        let dir = workspace();
        let mut chat = chat(dir.path(), &[]);
        chat.agent.set_mode(Mode::Yolo).unwrap();
        match run(&mut chat, "plan add a flag") {
            (Reply::Send(request), _) => assert_eq!(request, "add a flag"),
            other => panic!("{other:?}"),
        }
        assert_eq!(chat.agent.mode(), Mode::Plan);
        let (_, said) = run(&mut chat, "plan");
        assert_eq!(said, [Notice::Plain("yolo mode".into())]);
        assert_eq!(chat.agent.mode(), Mode::Yolo);
    }

    #[test]
    fn a_chat_begun_in_yolo_is_not_asked_to_return_to_it() {
        let dir = workspace();
        let mut chat = chat(dir.path(), &[]);
        chat.agent.set_mode(Mode::Yolo).unwrap();
        let mut chat = ChatSession::new(chat.agent, Box::new(AlwaysApprove));
        let mut ask = Answers(Vec::new(), Vec::new());
        for wanted in [Mode::Plan, Mode::Human, Mode::Confirm, Mode::Yolo] {
            assert_eq!(chat.cycle_mode(&mut ask).0, wanted);
        }
        assert!(ask.1.is_empty(), "{:?}", ask.1);
    }

    /// Stops what runs at its first prefill report, as Esc does there;
    /// keeps what it was told.
    struct EscAtPrefill {
        cancel: CancelToken,
        working: Vec<String>,
        prefilled: usize,
        compacted: Vec<String>,
    }

    impl Ui for EscAtPrefill {
        fn intent(&mut self, _: &agent_protocol::Intent, _: agent_protocol::ToolAccess) {}
        fn step_start(&mut self, _: usize) {}
        fn answer_text(&mut self, _: &str) {}
        fn step_end(&mut self) {}
        fn tool_call(&mut self, _: &agent_protocol::ToolCall) {}
        fn tool_result(&mut self, _: &agent_protocol::ToolCall, _: &agent_protocol::ToolOutput) {}
        fn notice(&mut self, _: &str) {}
        fn working(&mut self, what: &str) {
            self.working.push(what.to_string());
        }
        fn prefilling(&mut self, _: usize, done: usize, _: usize) {
            self.prefilled = done;
            self.cancel.cancel_by("Esc");
        }
        fn compacted(&mut self, c: &agent_protocol::Compaction) {
            self.compacted
                .push(agent_protocol::event::compaction_line(c));
        }
    }

    #[test]
    fn compact_reports_its_prefill_and_esc_stops_it_at_once_saying_so() {
        let dir = workspace();
        agent_base::paths::isolate_for_tests();
        let summary = serde_json::json!({"goal": "greet", "decisions": [], "files": [],
            "open_questions": [], "next_step": ""})
        .to_string();
        let provider = ScriptedProvider::with_turns(vec![
            ScriptTurn::Text(finish("hello there")),
            ScriptTurn::Text(finish("hello again")),
            // A prefill of 8 s in 8 batches: stopped after the first.
            ScriptTurn::Raw {
                content: summary,
                pace_ms: 0,
                prefill_ms: 8000,
            },
        ]);
        let config = AgentConfig {
            repo_map: false,
            ..AgentConfig::new(dir.path())
        };
        let agent = Agent::new(Box::new(provider), config, None).unwrap();
        let mut chat = ChatSession::new(agent, Box::new(AlwaysApprove));
        for request in ["hi", "hi again"] {
            chat.request(request, &mut QuietUi, &CancelToken::new(), &mut |_| {})
                .unwrap();
        }
        let turns = chat.agent.turns().len();
        let cancel = CancelToken::new();
        let mut ui = EscAtPrefill {
            cancel: cancel.clone(),
            working: Vec::new(),
            prefilled: 0,
            compacted: Vec::new(),
        };
        let started = std::time::Instant::now();
        let reply = chat.command(
            "compact",
            &mut ui,
            &mut crate::NoAnswers,
            &cancel,
            &mut |n| panic!("{n:?}"),
        );
        assert!(matches!(reply, Reply::Done));
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
        assert!(
            ui.working
                .first()
                .is_some_and(|w| w.starts_with("compacting: ")),
            "{:?} {:?}",
            ui.working,
            ui.compacted
        );
        assert!(ui.prefilled > 0);
        assert_eq!(
            ui.compacted,
            ["could not compact: stopped by Esc; the conversation is unchanged"]
        );
        assert_eq!(chat.agent.turns().len(), turns);
    }

    #[test]
    fn jobs_lists_each_background_command_and_says_when_there_is_none() {
        use agent_protocol::{Job, JobState};
        assert!(jobs_report(&[]).starts_with("no background commands"));
        let jobs = [
            Job {
                id: "job-1".into(),
                command: "python3 -m http.server\x1b[2J".into(),
                state: JobState::Running,
                output_bytes: 12_345,
            },
            Job {
                id: "job-2".into(),
                command: "pytest -q".into(),
                state: JobState::Exited(1),
                output_bytes: 0,
            },
        ];
        let text = jobs_report(&jobs);
        assert!(
            text.contains("job-1   running     12,345 bytes  python3 -m http.server"),
            "{text}"
        );
        assert!(text.contains("job-2   exit 1"), "{text}");
        assert!(!text.contains('\x1b'), "{text}");
    }

    #[test]
    fn exit_quit_and_q_end_the_chat_and_nothing_else_does() {
        assert_eq!(quit_command("/exit"), Some("/exit"));
        assert_eq!(quit_command("  /quit now\n"), Some("/quit"));
        assert_eq!(quit_command("/q"), Some("/q"));
        for line in ["/exit/exit", "exit", "/exits", "please /exit", "", "/model"] {
            assert_eq!(quit_command(line), None, "{line:?}");
        }
        let dir = workspace();
        let mut chat = chat(dir.path(), &[]);
        for command in ["exit", "quit", "q"] {
            assert!(
                matches!(run(&mut chat, command).0, Reply::Quit),
                "{command}"
            );
        }
    }

    #[test]
    fn tokens_count_the_chat_and_clear_starts_a_new_conversation() {
        let dir = workspace();
        let mut chat = chat(dir.path(), &[&finish("hello there")]);
        let (_, said) = run(&mut chat, "tokens");
        assert!(
            said[0].text().starts_with("this chat: 0 request(s)"),
            "{said:?}"
        );
        assert_eq!(said[1].text(), "last prompt: none yet");

        let outcome = chat
            .request("hi", &mut QuietUi, &CancelToken::new(), &mut |_| {})
            .unwrap();
        assert_eq!(outcome.answer, "hello there");
        assert_eq!(chat.totals.requests, 1);
        assert!(chat.totals.prompt > 0);
        let (_, said) = run(&mut chat, "tokens");
        assert!(
            said[0].text().starts_with("this chat: 1 request(s)"),
            "{said:?}"
        );
        assert!(said[1].text().starts_with("last prompt: "), "{said:?}");
        assert!(!said[1].text().contains("none yet"), "{said:?}");

        let id = chat.agent.session_id().to_string();
        assert!(!id.is_empty());
        let (_, said) = run(&mut chat, "clear");
        assert_eq!(
            said,
            [Notice::Plain(format!(
                "new conversation (the last one is saved: `agent chat --resume {id}`)"
            ))]
        );
        assert!(chat.agent.turns().is_empty());
        assert_eq!(resume_id(dir.path(), "").unwrap(), id);
        assert!(resume_id(dir.path(), "no-such-session").is_err());
    }

    #[test]
    fn rewind_takes_a_number_and_files_or_asks() {
        assert_eq!(rewind_args("2"), Some((2, false)));
        assert_eq!(rewind_args("2 --files"), Some((2, true)));
        assert_eq!(rewind_args("two"), None);
        assert_eq!(rewind_args("2 --files x"), None);
        let dir = workspace();
        let mut chat = chat(dir.path(), &[]);
        let (_, said) = run(&mut chat, "rewind");
        assert_eq!(
            said,
            [Notice::Plain("nothing to rewind: no request yet".into())]
        );
        let (_, said) = run(&mut chat, "rewind x");
        assert!(matches!(&said[0], Notice::Failed(t) if t.starts_with("usage: /rewind")));
    }

    #[test]
    fn a_resumed_chat_shows_its_last_exchanges_cut() {
        let long = "x".repeat(400);
        let exchanges = vec![
            ("one".to_string(), "1".to_string()),
            ("two".to_string(), String::new()),
            (long.clone(), long),
        ];
        let shown = history(&exchanges, 2);
        assert_eq!(shown[0], Notice::Quiet("… 1 earlier exchange(s)".into()));
        assert_eq!(shown[1], Notice::Plain("› two".into()));
        assert_eq!(shown[2], Notice::Quiet("(no answer)".into()));
        assert!(shown[3].text().chars().count() < 320, "{:?}", shown[3]);
    }
}
