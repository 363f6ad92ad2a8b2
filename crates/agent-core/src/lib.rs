//! The agent: intent gate, then a ReAct loop of grammar-constrained tool
//! calls, under the permission policy, with every step logged.
//!
//! One [`Agent`] is one session. [`Agent::handle`] takes a request:
//! 1. the intent gate ([`intent`]) picks which tools the request gets:
//!    none (chat, capability questions: one `finish` step), read-only (repo
//!    questions, uncertain requests) or all (coding tasks, the plan tool
//!    `todo` included);
//! 2. each step fits the conversation into the context window ([`context`]),
//!    asks the model for one call under a grammar of the allowed tools
//!    ([`protocol`]), runs it through the [`agent_tools::Toolbox`] and
//!    appends the observation;
//! 3. `finish` ends the request; the last step of the budget may only be
//!    `finish`, so a grammar-constrained model always answers.
//!
//! The system prompt ([`prompt`]) lists every tool and holds nothing that
//! depends on the request, so the KV cache is reused across steps, requests
//! and processes; the session's context (environment, the repo map focused
//! on the first request) opens the first user message. Messages go to
//! SQLite as they happen ([`agent_store::session`]); events go to JSONL
//! ([`agent_store::log`]).
//!
//! A team's own conventions join in: skills ([`agent_config::skills`]:
//! listed in the prompt, loaded by a tool), hooks around tool calls
//! ([`agent_config::hooks`], run by the loop), prompt files as commands
//! ([`agent_config::commands`], expanded by the binary), and a long
//! conversation is compacted by the model's own summary ([`compact`]), all
//! configured in `.agent/config.toml` ([`agent_config::settings`]).
//!
//! Safety is in the tools, not here: the loop adds only the request's tool
//! set and, in `human` mode, the confirmation of reads.
//!
//! The plan ([`agent_tools::todo`]): a coding task may keep one, written whole
//! by each `todo` call. It is session state ([`Agent::plan`]), reported
//! through [`agent_protocol::Ui::plan`] after the call's result (the terminal's line,
//! stream-json's `plan`, ACP's `plan` update, the terminal UI's pinned list)
//! and in [`Outcome::plan`]; it is dropped at the end of a request once every
//! item is done and by `/clear`, and rebuilt from the session's last valid
//! `todo` call on resume and `/rewind` (`plan_of`). The system prompt leaves
//! the tool out of its list (it is the same for every request); a coding
//! task's request carries a note on it instead (`PLAN_NOTE`, stripped
//! wherever a request is shown), and a native template gets its schema with
//! the coding task's tools.

mod answer;
mod attach;
mod budget;
mod compact;
mod context;
mod explore;
mod first_prompt;
mod init;
mod intent;
mod native;
mod plain;
mod prompt;
mod protocol;
mod rewind;
mod run;
mod structured;
mod tool_hooks;
mod vocabulary;
mod window;

// The API: the modules are private, what other crates use is named here.
pub use attach::{attachment_as, attachments};
pub use budget::{excerpt, hints, Budget};
pub use compact::PROMPT as COMPACT_PROMPT;
pub use explore::{ExploreConfig, ExploreUse};
pub use first_prompt::{describe as describe_first_prompt, FirstPrompt};
pub use init::{unverified_commands, written_commands, Facts, InitOutcome, FILE as AGENTS_MD};
pub use intent::{classify, heuristic, Knowledge, CONFIDENT};
pub use plain::{
    fit as fit_plain, PlainQuestion, PlainRequest, REPEAT_PENALTY as PLAIN_REPEAT_PENALTY,
};
pub use prompt::{split_context, system_prompt, PromptParts};
pub use protocol::{call_grammar, describe_tools, finish_grammar, parse_call};
pub use rewind::{Rewound, UserTurn};
pub use structured::{check_schema, validate as validate_result};
pub use vocabulary::Vocabulary;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::Serialize;
use serde_json::{json, Value};

use agent_base::cancel::CancelToken;
pub(crate) use agent_base::term::truncate;
use agent_llm::{CompletionRequest, Event, FinishReason, Flow, Provider, Sampling};
use agent_policy::managed::mode_name;
use agent_policy::{Mode, Policy};
use agent_protocol::Ui;
use agent_store::log::EventLog;
use agent_store::session::SessionStore;
use agent_tools::checkpoint::Checkpoints;
use agent_tools::todo;
use agent_tools::{
    Access, AlwaysApprove, Approval, Approver, Decision, ReadLedger, SemanticSearch, ToolContext,
    ToolOutput, ToolSpec, Toolbox, Workspace,
};
use context::{Kind, Turn};
use intent::Intent;
use protocol::{ToolCall, FINISH};

/// How a session runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub workspace: PathBuf,
    pub mode: Mode,
    /// Model calls per request, the final `finish` included.
    pub max_steps: usize,
    /// Most tokens per model reply.
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Run after every write; a failure rolls the write back.
    pub verify: Option<String>,
    /// Put the repo map in the session's context (the first user message).
    pub repo_map: bool,
    /// Resume this session instead of starting one.
    pub resume: Option<String>,
    /// Code-index matches fetched before the first step (0: none).
    pub prefetch: usize,
    /// Run commands in the OS sandbox (`--sandbox off` clears it).
    pub sandbox: bool,
    /// The user's own AGENTS.md (see [`agent_config::instructions::personal_file`]).
    pub personal_instructions: Option<PathBuf>,
    /// The user's own skills folder (see [`agent_config::skills::personal_dir`]).
    pub personal_skills: Option<PathBuf>,
    /// The user trusts what the workspace ships ([`agent_config::trust`]):
    /// its hooks run, the loosening keys of its policy.toml apply, its
    /// skills that declare tools load. Off by default: nothing a repository ships runs unasked.
    pub trusted: bool,
    /// Files the sandbox keeps read-only (what trusted hooks and MCP
    /// servers run): [`agent_policy::Policy::protected_paths`].
    pub protected_paths: Vec<PathBuf>,
    /// The administrator's restrictions, read once by the binary.
    pub managed: agent_policy::managed::Managed,
    /// Who the audit records name, and the sink they also go to.
    pub audit: agent_store::log::AuditConfig,
    /// Whether requests are stored as a session and logged. Off for
    /// `--print-prompt`, which shows the first prompt and stops: no one
    /// asked anything, and nothing was interrupted.
    pub record: bool,
    /// The shape the answer is also given in, as JSON (`--output-schema`,
    /// checked by [`check_schema`]): `Outcome::result`.
    pub output_schema: Option<serde_json::Value>,
    /// The `explore` subagent ([`explore`]): offered or not, and its budget.
    pub explore: ExploreConfig,
}

impl AgentConfig {
    pub fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            mode: Mode::Confirm,
            max_steps: 12,
            max_tokens: 512,
            sampling: Sampling::greedy(),
            verify: None,
            repo_map: true,
            sandbox: true,
            personal_instructions: agent_config::instructions::personal_file(),
            personal_skills: agent_config::skills::personal_dir(),
            resume: None,
            prefetch: 4,
            trusted: false,
            protected_paths: Vec::new(),
            managed: Default::default(),
            audit: agent_store::log::AuditConfig::from_env(),
            record: true,
            output_schema: None,
            explore: ExploreConfig::default(),
        }
    }
}

pub use agent_protocol::outcome::{Finish, ToolAccess};

/// The outcome of one request, as `agent ask --json` prints it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    pub answer: String,
    pub finish: Finish,
    pub intent: Intent,
    pub tools: ToolAccess,
    pub steps: usize,
    pub tool_calls: usize,
    /// Replies that did not parse (a grammar-constrained model never has any).
    pub invalid_tool_calls: usize,
    /// Replies cut off by the token budget (`--max-tokens`) or a loop.
    pub cut_off_calls: usize,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub reused_tokens: usize,
    /// Of the completion tokens, those the model spent reasoning.
    pub reasoning_tokens: usize,
    pub session_id: String,
    pub trace_id: String,
    pub changed_files: Vec<String>,
    /// Of those, the files commands changed (admitted from their layer),
    /// once each, in the order they were changed.
    pub command_changes: Vec<String>,
    /// Writes and commands the user declined.
    pub declined: usize,
    pub wall_ms: u64,
    /// Time spent generating tokens (the rest is prefill, tools and prompts).
    pub decode_ms: u64,
    /// The first model request's time to first token.
    pub ttft_ms: f64,
    /// What the prompt cache on disk saved and provided.
    pub prompt_cache: agent_llm::PromptCacheUse,
    /// Speculative decoding's drafts and how many the model confirmed.
    pub speculative: agent_llm::Speculation,
    /// Where the in-process model runs (device, layers, context).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<agent_llm::Placement>,
    /// Compactions during the request, successful or not ([`compact`]).
    pub compactions: Vec<compact::Compaction>,
    /// How large the session's first prompt was made (the request that
    /// started the session only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<first_prompt::FirstPrompt>,
    /// The model's plan (`todo`) as the request left it; empty when it kept none.
    pub plan: Vec<todo::Item>,
    /// The request's last prompt: what it spent of the window, and what was
    /// cut to fit.
    pub budget: budget::Budget,
    /// The answer as JSON of `AgentConfig::output_schema`'s shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// Why there is no `result` though a shape was asked for and the
    /// request was answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_error: Option<String>,
    /// A coding task planned, not done (plan mode, or the administrator's
    /// `require_plan`): the plan and the answer await the user's approval
    /// ([`Agent::carry_out`]); nothing was changed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub planned: bool,
    /// What the request's explorations spent ([`explore`]), beside the
    /// tokens above, which are the request's own context's.
    #[serde(skip_serializing_if = "ExploreUse::is_empty")]
    pub explore: ExploreUse,
}

pub struct Agent {
    provider: Box<dyn Provider>,
    toolbox: Toolbox,
    workspace: Workspace,
    policy: Policy,
    ledger: ReadLedger,
    checkpoints: Checkpoints,
    search: Option<Box<dyn SemanticSearch>>,
    sessions: SessionStore,
    log: EventLog,
    config: AgentConfig,
    turns: Vec<Turn>,
    judge: answer::Judge,
    /// AGENTS.md files: in the system prompt, and per subfolder as tools touch it.
    instructions: agent_config::instructions::Instructions,
    /// Writes and commands declined during the current request.
    declined: usize,
    /// Share of the window past which the conversation is compacted (0: never).
    compact_at: f32,
    /// After a failed summary: the conversation's size past which
    /// automatic compaction tries again.
    auto_compact_after: Option<usize>,
    hooks: agent_config::hooks::Hooks,
    /// What `pre_tool` hooks added for the call in flight.
    hook_notes: Vec<String>,
    skills: agent_config::skills::Skills,
    /// The previous step's prompt: whether the next one extends it (and the
    /// KV cache holds) goes into the trace.
    last_prompt: Vec<agent_llm::Message>,
    /// What the last prompt spent of the window.
    last_budget: budget::Budget,
    /// Tokens of the request's files and outputs left out to fit.
    request_cut: usize,
    /// Writes refused during the current request (not read first, no
    /// match, outside the workspace, ...), and the last one's reason.
    refused: usize,
    last_refusal: Option<String>,
    /// A write or command (an MCP server's action included) went through
    /// during the current request.
    acted: bool,
    /// Files the session's tools changed, for judging a summary's claims.
    session_changed: Vec<String>,
    /// Tools added beyond the built-in ones (MCP servers'): the intent gate
    /// must know them.
    extra_tools: Vec<ToolSpec>,
    /// The repository map: the session's context's outline and the gate's
    /// vocabulary. Opened on first use.
    map: Option<agent_repomap::RepoMap>,
    vocabulary: Option<vocabulary::Vocabulary>,
    /// The indexed dependencies' names, for the gate (see [`Self::dependency_names`]).
    dependencies: Option<Vec<String>>,
    /// Search results prefetched per request: `config.prefetch`, or fewer
    /// for a slow model ([`first_prompt`]).
    prefetch_results: usize,
    /// The sizes of the session's first prompt, until the outcome reports them.
    first_prompt: Option<first_prompt::FirstPrompt>,
    /// The model's plan (`todo`): session state, rebuilt from the session's
    /// calls on resume and rewind; dropped once every item is done.
    plan: Vec<todo::Item>,
    /// The mode an approved plan is carried out in: the one the user
    /// switched to plan mode from.
    planned_from: Mode,
    /// The next request carries out an approved plan: a coding task, with
    /// every tool, whatever `require_plan` says.
    carrying_out: bool,
    /// The exploration running now (`explore-N`): its turns are not the
    /// session's, and its model calls are side requests.
    subagent: Option<String>,
    /// Explorations so far in the session, for their ids.
    explorations: usize,
}

/// The map's share of the context window at most: smaller than `agent map`
/// shows, as the loop needs room for tool output.
const MAP_SHARE: f64 = 0.08;

/// Lines of the README read for a question about the whole workspace.
const README_LINES: usize = 40;

/// Most lines of search results given as a fallback answer.
const EVIDENCE_LINES: usize = 30;

/// The fallback answer: what the latest search found, marked as such.
fn evidence_answer(why: &str, found: &str) -> String {
    // The results as the model got them, less the notes meant for it.
    let mut lines: Vec<String> = found
        .lines()
        .take(EVIDENCE_LINES)
        .map(|l| l.replace(agent_tools::search::MORE_LINES_HINT, ""))
        .collect();
    if found.lines().count() > EVIDENCE_LINES {
        lines.push("…".into());
    }
    format!("(No answer: {why}. What was found:)\n{}", lines.join("\n"))
}

/// What the loop itself says to the model (besides the system prompt and
/// the answer feedback): the judge must not take these back as answers.
const STEP_BUDGET_NOTE: &str =
    "\n(Step budget: your next reply must be the finish call with your best answer.)";
const ANSWER_DIRECTLY_NOTE: &str = "(Answer directly with the finish tool.)";
const QUESTION_NOTE: &str = "(This is a question: do not change files. Tools you may use:";
const REPEAT_NOTE: &str = "You made the same call times in a row; its result will not change. \
Use what you already have: try a different tool or different arguments, or call finish with your answer. Another copy of this call ends the request.";
const CUT_OFF_NOTE: &str = "Format error: your reply was cut off at tokens. Keep the thought short and reply with one complete JSON call";
const FINISH_ARGS_NOTE: &str = "Format error: finish needs {\"answer\": \"<text>\"}.";
const STOPPED_NOTE: &str = "The previous request was stopped. (stopped before an answer)";
/// A coding task's note on the plan tool, which the system prompt leaves
/// out: it is a coding task's tool, and the system prompt is the same for
/// every request.
const PLAN_NOTE: &str = "(For a task of several steps, you may keep a plan with the todo tool, \
args {\"items\": [{\"text\": \"...\", \"status\": \"pending|in_progress|done\"}]}: \
the whole list each time, one item in_progress, marked done as you go.)";
/// A coding task in plan mode: look, write the plan, change nothing.
const PLAN_MODE_NOTE: &str = "(Plan mode: change nothing now. Read what you need, then write the plan \
with the todo tool, args {\"items\": [{\"text\": \"...\", \"status\": \"pending\"}]}: one item per change, \
naming the file and function; then call finish with a short summary of the plan. \
It is carried out once the user approves it.)";

/// Where a request stands when the model gives a final answer.
struct Step<'a> {
    request: &'a str,
    /// Where the request's turns begin: its observations are the evidence.
    request_turn: usize,
    access: &'a [Access],
    /// The last step of the budget, or the last reply that may give
    /// nothing ([`STALL_LIMIT`]): a rejected answer ends the request.
    last: bool,
    answer_next: bool,
    /// The latest search results, shown when the request ends without an answer.
    found: Option<&'a str>,
}

/// One model reply in the loop.
struct Reply {
    text: String,
    /// Why a native reply's calls could not be read (for the model).
    format_error: Option<String>,
    /// Ended by the token budget or a detected loop, not by the model.
    cut_off: bool,
    /// The `answer` of a finish call, as far as it was generated.
    partial_answer: String,
}

/// Identical calls that trigger an intervention: the first copy is
/// answered with it, the next ends the request with the evidence (issue
/// 53: a small model re-running a call it already has, or one that failed,
/// cost a minute a copy before it was stopped).
const REPEAT_LIMIT: usize = 2;

/// Replies that give nothing (no valid call, an answer the judge refuses,
/// a repeated call, a call with invalid arguments) a request survives: the
/// first is answered with why, the second ends the request with the
/// evidence. A repository question with search results in hand ends at the
/// first (issue 53: the 135M model spent 12 steps and 4 minutes on refused
/// answers before the search results it already had were printed).
const STALL_LIMIT: usize = 2;

impl Agent {
    /// Opens the workspace's state (policy, checkpoints, sessions, logs) and
    /// starts or resumes a session. `search` backs `search_semantic`.
    pub fn new(
        provider: Box<dyn Provider>,
        config: AgentConfig,
        search: Option<Box<dyn SemanticSearch>>,
    ) -> Result<Self> {
        let workspace = Workspace::new(&config.workspace)?;
        let state = workspace.state_dir();
        let mut policy = Policy::load_for(&workspace.team_dir(), config.mode, config.trusted)?;
        policy.sandbox = config.sandbox;
        policy.protected_paths = config.protected_paths.clone();
        config.managed.restrict(&mut policy);
        let checkpoints = Checkpoints::open(&state)?;
        let sessions = SessionStore::open(&state)?;
        let settings = agent_config::settings::Settings::load(workspace.root())?;
        // Until the workspace is trusted its hooks wait (the caller lists
        // them); an administrator may turn hooks off altogether.
        let hooks = match (config.trusted, config.managed.allow_hooks) {
            (true, true) => agent_config::hooks::Hooks::new(&settings)?,
            (true, false) => {
                if !agent_config::hooks::Hooks::new(&settings)?.is_empty() {
                    tracing::warn!(
                        "{}",
                        config
                            .managed
                            .refusal("hooks: those of this workspace do not run")
                    );
                }
                agent_config::hooks::Hooks::default()
            }
            (false, _) => agent_config::hooks::Hooks::default(),
        };
        let mut skills =
            agent_config::skills::Skills::load(workspace.root(), config.personal_skills.as_deref());
        if !config.trusted {
            skills.hold_tool_declaring();
        }
        let mut toolbox = Toolbox::standard();
        if let Some(tool) = skills.tool() {
            toolbox.extend(vec![Box::new(tool)]);
        }
        if config.explore.enabled {
            toolbox.extend(vec![Box::new(explore::ExploreTool)]);
        }

        let (session_id, turns) = match &config.resume {
            Some(id) => {
                if sessions.get(id)?.is_none() {
                    anyhow::bail!(
                        "no session {id} in {}\n  fix: `agent sessions list` shows the sessions",
                        state.display()
                    );
                }
                (id.clone(), sessions.turns(id)?)
            }
            None => (String::new(), Vec::new()),
        };
        let mut log = EventLog::open(&state, &session_id);
        log.redactor = policy.redactor();
        log.attach(&config.audit, workspace.root())?;
        if !config.record {
            log.mute();
        }
        let mut ours = prompt::internal_texts(&toolbox.specs());
        ours.extend(
            [
                STEP_BUDGET_NOTE,
                ANSWER_DIRECTLY_NOTE,
                QUESTION_NOTE,
                REPEAT_NOTE,
                CUT_OFF_NOTE,
                FINISH_ARGS_NOTE,
                STOPPED_NOTE,
                PLAN_NOTE,
                agent_tools::EDITED_BACK_NOTE,
                compact::PROMPT,
                init::OVERVIEW_PROMPT,
            ]
            .iter()
            .chain(answer::FEEDBACK.iter())
            .map(|s| s.to_string()),
        );
        if config.explore.enabled {
            ours.push(explore::EXPLORE_NOTE.to_string());
        }
        let judge = answer::Judge::new(&ours);
        let instructions = agent_config::instructions::Instructions::load(
            workspace.root(),
            config.personal_instructions.as_deref(),
        );
        let plan = plan_of(&turns);
        Ok(Self {
            provider,
            toolbox,
            workspace,
            policy,
            ledger: ReadLedger::default(),
            checkpoints,
            search,
            sessions,
            log,
            instructions,
            turns,
            judge,
            declined: 0,
            compact_at: settings.compact_at,
            auto_compact_after: None,
            hooks,
            hook_notes: Vec::new(),
            skills,
            last_prompt: Vec::new(),
            last_budget: budget::Budget::default(),
            request_cut: 0,
            refused: 0,
            last_refusal: None,
            acted: false,
            session_changed: Vec::new(),
            extra_tools: Vec::new(),
            map: None,
            vocabulary: None,
            dependencies: None,
            prefetch_results: config.prefetch,
            first_prompt: None,
            plan,
            planned_from: if config.mode == Mode::Plan {
                Mode::default()
            } else {
                config.mode
            },
            carrying_out: false,
            subagent: None,
            explorations: 0,
            config,
        })
    }

    /// The skills this session found, and the problems of those it did not.
    pub fn skills(&self) -> &agent_config::skills::Skills {
        &self.skills
    }

    /// Whether the workspace's own hooks, policy and tools apply
    /// ([`agent_config::trust`]).
    pub fn trusted(&self) -> bool {
        self.config.trusted
    }

    /// The hooks of `.agent/config.toml`.
    pub fn hooks(&self) -> &agent_config::hooks::Hooks {
        &self.hooks
    }

    pub fn session_id(&self) -> &str {
        &self.log.session_id
    }

    pub fn workspace(&self) -> &Path {
        self.workspace.root()
    }

    pub fn provider_name(&self) -> String {
        self.provider.name()
    }

    /// The conversation pauses (the chat exits or starts another): the
    /// model keeps its state of it on disk for `agent chat --resume`.
    /// Returns the tokens saved.
    pub fn save_prompt_cache(&mut self) -> usize {
        self.provider.save_prompt_cache()
    }

    /// The session's turns so far.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// The model's current plan (`todo`); empty when there is none.
    pub fn plan(&self) -> &[todo::Item] {
        &self.plan
    }

    /// The session's background commands (`run_cmd` with `background`),
    /// oldest first; they are stopped when the agent is dropped.
    pub fn jobs(&self) -> Vec<agent_protocol::Job> {
        self.toolbox.jobs().list()
    }

    /// Starts the session on the first request: the system prompt is fixed
    /// from here on. Returns the session's context (the environment and the
    /// repo map focused on that request) for the first request's message;
    /// None when the session had started.
    fn start_session(&mut self, request: &str) -> Result<Option<String>> {
        // Only the system prompt: a `/rewind` to before the first request;
        // the session goes on, and its context comes again.
        let rewound_to_start = self.turns.len() == 1;
        if self.turns.len() > 1 {
            return Ok(None);
        }
        if self.config.record && !rewound_to_start {
            let id = self
                .sessions
                .create(request, &self.provider.name(), self.workspace.root())?;
            self.log.session_id = id;
        }
        let sizes = self.size_first_prompt();
        let map = self
            .config
            .repo_map
            .then(|| self.repo_map(request, sizes.map_tokens))
            .flatten();
        if !rewound_to_start {
            let specs = self.toolbox.specs();
            let system = prompt::system_prompt(&prompt::PromptParts {
                instructions: &self.instructions.text,
                skills: &self.skills.prompt_section(),
                tools: &specs,
                native: self.provider.native_calls(),
            });
            self.push(Turn::new(Kind::System, system))?;
        }
        Ok(Some(prompt::session_context(
            self.workspace.root(),
            map.as_ref(),
        )))
    }

    /// The session's context, as the first user message carries it (the
    /// first request, or the summary that replaced it).
    fn session_context(&self) -> Option<&str> {
        let first = self.turns.get(1)?;
        prompt::split_context(&first.message.content).0
    }

    /// The session's policy (for what runs beside the agent, like MCP servers).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Reads and writes file contents through `files` (an editor's
    /// buffers, for `agent acp`) instead of the disk.
    pub fn set_files(&mut self, files: std::sync::Arc<dyn agent_tools::FileAccess>) {
        self.toolbox.set_files(files);
    }

    /// From now on, requests are neither stored as a session nor logged
    /// (see [`AgentConfig::record`]).
    pub fn stop_recording(&mut self) {
        self.config.record = false;
        self.log.mute();
    }

    /// Also give each answer as JSON of `schema`'s shape (checked by
    /// [`check_schema`]): `Outcome::result`.
    pub fn set_output_schema(&mut self, schema: Option<serde_json::Value>) {
        self.config.output_schema = schema;
    }

    /// Adds tools (an MCP server's) before the session's system prompt is built.
    pub fn add_tools(&mut self, tools: Vec<Box<dyn agent_tools::Tool>>) {
        self.extra_tools.extend(tools.iter().map(|t| t.spec()));
        self.toolbox.extend(tools);
    }

    /// The workspace's words for the intent gate, from the repo map's tags;
    /// rebuilt when files changed.
    fn refresh_vocabulary(&mut self) {
        let Some((map, changed)) = refreshed_map(&mut self.map, self.workspace.root()) else {
            return;
        };
        if changed || self.vocabulary.is_none() {
            let vocabulary = vocabulary::Vocabulary::from_tags(map.files());
            self.vocabulary = Some(vocabulary);
        }
    }

    /// The workspace is no project: nothing marks it as one
    /// ([`agent_base::paths::has_project_markers`]) and its map found no
    /// source code (without a map, it is not known, so it is a project).
    fn is_no_project(&self) -> bool {
        self.vocabulary.as_ref().is_some_and(|v| v.is_empty())
            && !agent_base::paths::has_project_markers(self.workspace.root())
    }

    /// Sizes the session's first prompt to the model's prefill rate (see
    /// [`first_prompt`]): the map's budget and the results prefetched.
    fn size_first_prompt(&mut self) -> first_prompt::FirstPrompt {
        let specs = self.toolbox.specs();
        let native = self.provider.native_calls();
        // What the first prompt carries whatever the sizes: the system
        // prompt, and the session's context but for the map.
        let system = prompt::system_prompt(&prompt::PromptParts {
            instructions: &self.instructions.text,
            skills: &self.skills.prompt_section(),
            tools: &specs,
            native,
        });
        let context = prompt::session_context(self.workspace.root(), None);
        let tools = if native {
            native::tool_specs(&specs)
        } else {
            Vec::new()
        };
        let fixed_tokens = self
            .provider
            .count_prompt_tokens(
                &[
                    agent_llm::Message::system(system.clone()),
                    agent_llm::Message::user(context.clone()),
                ],
                &tools,
            )
            .unwrap_or((system.len() + context.len()) / 3);
        let caps = first_prompt::Caps {
            map_tokens: if self.config.repo_map {
                first_prompt::map_cap(self.provider.context_size(), MAP_SHARE)
            } else {
                0
            },
            results: self.config.prefetch,
        };
        let fresh = first_prompt::size(self.provider.prefill_rate(), fixed_tokens, caps);
        let kept_in = self.workspace.state_dir().join("cache/first_prompt.json");
        let sizes = first_prompt::stick_in(
            &kept_in,
            &self.provider.name(),
            fresh,
            caps,
            self.config.record,
        );
        tracing::info!("{}", first_prompt::describe(&sizes));
        self.prefetch_results = sizes.prefetch_results;
        self.first_prompt = Some(sizes);
        sizes
    }

    /// The repo map for the session's context within `token_budget`, or None
    /// when it cannot be built (the loop works without it). The lines of
    /// the indexed dependencies used most open it when they take at most a
    /// third of the budget; they do not depend on the budget, so a map
    /// sized smaller is still the start of one sized larger.
    fn repo_map(&mut self, request: &str, token_budget: usize) -> Option<prompt::RepoMapText> {
        use agent_repomap::{external, focus_from_request, MapOptions};
        let dependencies = self.dependency_names();
        // Brought up to date by the intent gate a moment ago.
        let map = match self.map.as_ref() {
            Some(map) => map,
            None => refreshed_map(&mut self.map, self.workspace.root())?.0,
        };
        let provider = &self.provider;
        let count = |s: &str| {
            provider
                .count_tokens(s)
                .unwrap_or_else(|_| s.len().div_ceil(4))
        };
        let mut used = external::render(&map.external_uses(&dependencies), 3, 3);
        let mut used_tokens = count(&format!("{}{used}", prompt::DEPENDENCIES_HEADER));
        tracing::debug!(
            "map: {} dependencies, {used_tokens} tokens of their lines, map budget {token_budget}",
            dependencies.len()
        );
        if used.is_empty() || used_tokens * 3 > token_budget {
            used.clear();
            used_tokens = 0;
        }
        let options = MapOptions {
            token_budget: token_budget - used_tokens,
            focus: focus_from_request(request),
            recent_files: Vec::new(),
        };
        let out = map.render(&options, &count);
        (!out.text.trim().is_empty()).then_some(prompt::RepoMapText {
            dependencies: used,
            outline: out.text,
        })
    }

    /// Starts a new conversation: the next request opens a new session
    /// (the current one stays saved). Undo history is kept.
    pub fn clear(&mut self) {
        self.turns.clear();
        self.log.session_id.clear();
        self.ledger = ReadLedger::default();
        self.auto_compact_after = None;
        self.plan.clear();
    }

    /// The permission mode the next request runs in.
    pub fn mode(&self) -> Mode {
        self.policy.mode
    }

    /// Switches the permission mode for the next requests; Err(the
    /// administrator's refusal) when the managed settings forbid `mode`.
    pub fn set_mode(&mut self, mode: Mode) -> Result<(), String> {
        self.config.managed.check_mode(mode)?;
        let from = self.policy.mode;
        if mode == Mode::Plan && from != Mode::Plan {
            self.planned_from = from;
        }
        self.config.mode = mode;
        self.policy.mode = mode;
        // An administrator reads who loosened or tightened the asking, and when.
        self.log.audit(
            "mode_change",
            json!({"from": mode_name(&from), "to": mode_name(&mode)}),
        );
        Ok(())
    }

    /// The modes the administrator allows, in the cycle's order.
    pub fn allowed_modes(&self) -> Vec<Mode> {
        Mode::ALL
            .into_iter()
            .filter(|m| self.config.managed.allows_mode(*m))
            .collect()
    }

    /// The next mode of the cycle ([`Mode::next`]) the administrator allows
    /// (this one when neither other is), and the refusals of the modes
    /// skipped on the way; nothing is set.
    pub fn next_mode(&self) -> (Mode, Vec<String>) {
        let mut refusals = Vec::new();
        let mut mode = self.mode();
        // At most every other mode.
        for _ in 1..Mode::ALL.len() {
            mode = mode.next();
            match self.config.managed.check_mode(mode) {
                Ok(()) => return (mode, refusals),
                Err(why) => refusals.push(why),
            }
        }
        (self.mode(), refusals)
    }

    /// Whether a request of this label is planned rather than done: a
    /// coding task in plan mode, or under the administrator's
    /// `require_plan` unless it carries out an approved plan.
    pub(crate) fn plans(&self, label: intent::Label, carrying_out: bool) -> bool {
        label == intent::Label::CodingTask
            && (self.mode() == Mode::Plan || (self.config.managed.require_plan && !carrying_out))
    }

    /// The mode an approved plan is carried out in: the one the user
    /// switched to plan mode from, or this one outside plan mode.
    pub fn planned_from(&self) -> Mode {
        if self.mode() == Mode::Plan {
            self.planned_from
        } else {
            self.mode()
        }
    }

    /// The user approved the plan `outcome` ended with ([`Outcome::planned`]):
    /// plan mode gives way to the mode the user planned from, and the
    /// request that carries the plan out is returned for the front end to
    /// send (it runs as a coding task, with every tool). Err(the
    /// administrator's refusal) when that mode is not allowed.
    pub fn carry_out(&mut self, outcome: &Outcome) -> Result<String, String> {
        if self.mode() == Mode::Plan {
            self.set_mode(self.planned_from)?;
        }
        self.carrying_out = true;
        let plan: Vec<String> = outcome
            .plan
            .iter()
            .enumerate()
            .map(|(i, item)| format!("{}. {}", i + 1, item.text))
            .collect();
        let plan = if plan.is_empty() {
            outcome.answer.trim().to_string()
        } else {
            plan.join("\n")
        };
        self.log.audit(
            "plan_approved",
            json!({"mode": mode_name(&self.mode()), "plan": plan}),
        );
        Ok(format!(
            "I approve your plan. Carry it out now, item by item, marking each done with the todo tool:\n{plan}"
        ))
    }

    /// [`Agent::next_mode`], now set.
    pub fn cycle_mode(&mut self) -> (Mode, Vec<String>) {
        let (mode, mut refusals) = self.next_mode();
        if mode != self.mode() {
            if let Err(why) = self.set_mode(mode) {
                refusals.push(why);
            }
        }
        (self.mode(), refusals)
    }

    /// Undoes the agent's last change, as the user asked (`/undo` in chat).
    pub fn undo(&mut self, cancel: &CancelToken) -> ToolOutput {
        self.log.new_trace();
        let output = self.call_tool("undo", &json!({}), &mut AlwaysApprove, cancel);
        self.log.audit(
            "user_undo",
            json!({"ok": output.ok, "diff": output.diff, "changed": output.changed}),
        );
        if output.ok && !output.changed.is_empty() {
            // The model must not build on a change that is gone, and a
            // resumed chat must not show it as done: the conversation says so.
            let note = format!(
                "{USER_UNDID} ({}).]",
                output.content.lines().next().unwrap_or_default()
            );
            if let Err(e) = self.push(Turn::new(Kind::Observation, note)) {
                tracing::warn!("could not record the undo in the session: {e:#}");
            }
        }
        output
    }

    /// Tokens the next prompt takes (the conversation as it will be
    /// fitted, every tool included), and the model's window: never past it.
    pub fn context_usage(&self) -> (usize, usize) {
        let tools = self.sent_tools(&self.toolbox.specs());
        let (kept, fitted) = self.fit(&tools);
        (
            self.budget_of(&kept, &tools, fitted).used(),
            self.provider.context_size(),
        )
    }

    /// What the last prompt spent of the window.
    pub fn budget(&self) -> budget::Budget {
        self.last_budget
    }

    /// The conversation so far as (request, answer) pairs, oldest first; an
    /// unanswered request has an empty answer.
    pub fn exchanges(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (i, turn) in self.turns.iter().enumerate() {
            match turn.kind {
                Kind::Request => {
                    let request = request_text(i, &turn.message.content);
                    out.push((request.to_string(), String::new()));
                }
                Kind::Observation if turn.message.content.starts_with(USER_UNDID) => {
                    if let Some(last) = out.last_mut() {
                        let sep = if last.1.is_empty() { "" } else { " " };
                        last.1.push_str(&format!("{sep}[undone with /undo]"));
                    }
                }
                Kind::Call => {
                    if let (Some(last), Ok(call)) =
                        (out.last_mut(), protocol::parse_call(&turn.message.content))
                    {
                        if call.tool == FINISH {
                            if let Some(a) = call.args.get("answer").and_then(|a| a.as_str()) {
                                last.1 = a.to_string();
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn push(&mut self, mut turn: Turn) -> Result<()> {
        // No secret value reaches the model or the session, whatever text
        // carried it (observations are redacted already, by the toolbox).
        turn.message.content = self.policy.redact(&turn.message.content);
        // An exploration's turns are its own: only its report is the session's.
        if !self.log.session_id.is_empty() && self.subagent.is_none() {
            let seq = self
                .sessions
                .append(&self.log.session_id, &turn)
                .context("cannot save the session")?;
            turn.seq = Some(seq);
        }
        self.turns.push(turn);
        Ok(())
    }

    /// Runs one request to its end: [`Agent::begin`], then
    /// [`Agent::step`] until the request is over or the budget is spent,
    /// then [`Agent::finish`].
    pub fn handle(
        &mut self,
        request: impl Into<attach::Request>,
        ui: &mut dyn Ui,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> Result<Outcome> {
        let request = request.into();
        let mut run = self.begin(&request, ui, cancel)?;
        while run.outcome.steps < run.max_steps {
            if self.step(&mut run, ui, approver, cancel)? == run::Next::Done {
                break;
            }
        }
        let mut outcome = self.finish(run);
        if let Some(schema) = self.config.output_schema.clone() {
            if outcome.finish == Finish::Answered {
                match self.structured_answer(&request.text, &outcome.answer, &schema, cancel) {
                    Ok(value) => outcome.result = Some(value),
                    Err(why) => outcome.result_error = Some(why),
                }
            }
        }
        Ok(outcome)
    }

    /// What the model has seen of the workspace in this request (the
    /// system prompt, the session's context with its repo map, and every
    /// observation since the request): an answer must be about it. None when the answer need not
    /// be: chat, and a coding task that changed files (its result is the
    /// change, so "Done." is fine there; with nothing changed, the answer
    /// has to say why).
    fn evidence(&self, request_turn: usize, access: &[Access], changed: bool) -> Option<String> {
        if !access.contains(&Access::Read) || (access.contains(&Access::Write) && changed) {
            return None;
        }
        let mut text = self
            .turns
            .first()
            .map(|t| t.message.content.clone())
            .unwrap_or_default();
        if let Some(context) = self.session_context() {
            text.push('\n');
            text.push_str(context);
        }
        for turn in self.turns[request_turn.min(self.turns.len())..]
            .iter()
            .filter(|t| matches!(t.kind, Kind::Observation | Kind::Summary))
        {
            text.push('\n');
            text.push_str(&turn.message.content);
        }
        Some(text)
    }

    /// Settles a final answer: kept (as `kept` makes it) when it is one
    /// ([`answer::Judge`]); otherwise sent back to the model, or on the last
    /// step the request ends without one. Returns whether the request is over.
    fn conclude(
        &mut self,
        answer: &str,
        kept: impl FnOnce() -> String,
        at: &Step<'_>,
        outcome: &mut Outcome,
        ui: &mut dyn Ui,
    ) -> Result<bool> {
        let changed = !outcome.changed_files.is_empty();
        let evidence = self.evidence(at.request_turn, at.access, changed);
        let Some(fault) = self.judge.check(answer, at.request, evidence.as_deref()) else {
            outcome.answer = kept();
            outcome.finish = Finish::Answered;
            return Ok(true);
        };
        self.log.audit(
            "intervention",
            json!({"reason": format!("the answer {}", fault.reason()), "last_step": at.last}),
        );
        if !at.last {
            // The terminal streamed it as an answer: say that it was not one.
            ui.notice(&format!(
                "(not an answer: it {}; asking again)",
                fault.reason()
            ));
            self.observe(fault.feedback(), at.answer_next)?;
            return Ok(false);
        }
        let why = format!("the model's answer {}", fault.reason());
        let could_search = at.access.contains(&Access::Read);
        self.end_without_answer(&why, at.found, could_search, outcome);
        Ok(true)
    }

    /// Ends a request with no answer of the model's: what the latest search
    /// found, when there is something, marked as such.
    /// `could_search`: the request had reading tools (a greeting or a
    /// question about the assistant has none, and needs no index).
    fn end_without_answer(
        &mut self,
        why: &str,
        found: Option<&str>,
        could_search: bool,
        outcome: &mut Outcome,
    ) {
        match found {
            Some(found) => {
                outcome.answer = evidence_answer(why, found);
                outcome.finish = Finish::Evidence;
            }
            None if !could_search => {
                outcome.answer = format!("(no answer: {why}; a larger --model does better)");
                outcome.finish = Finish::NoAnswer;
            }
            None => {
                outcome.answer = format!(
                    "(no answer: {why}, and nothing was searched; `agent index` gives it search results, \
a larger --model does better)"
                );
                outcome.finish = Finish::NoAnswer;
            }
        }
    }

    /// One model reply, or None when cancelled.
    fn generate(
        &mut self,
        step: usize,
        last_step: bool,
        allowed: &[ToolSpec],
        outcome: &mut Outcome,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Option<Reply>> {
        let native = self.provider.native_calls();
        let grammar = (self.provider.supports_grammar() && !native).then(|| {
            if last_step {
                protocol::finish_grammar(allowed)
            } else {
                protocol::call_grammar(allowed)
            }
        });
        let (messages, tool_specs, fitted) = self.fitted_prompt(allowed);
        // A model whose template has tools gets them, and its history, in
        // its own language; the last step admits only the answer.
        let (messages, tools, tool_choice) = if native {
            let choice = if last_step {
                agent_llm::ToolChoice::None
            } else {
                agent_llm::ToolChoice::Auto
            };
            (native::messages(&messages), tool_specs, choice)
        } else {
            (messages, Vec::new(), agent_llm::ToolChoice::Auto)
        };
        // Whether this prompt extends the last one: then the engine's KV
        // cache holds, and only the new turns are prefilled.
        let prefix_kept = messages.starts_with(&self.last_prompt);
        self.last_prompt = messages.clone();
        let request = CompletionRequest {
            messages,
            tools,
            tool_choice,
            max_tokens: self.config.max_tokens,
            sampling: self.config.sampling,
            grammar,
            interrupt: Some(cancel.clone()),
            // An exploration keeps the conversation's cache as it is.
            aside: self.subagent.is_some(),
            ..CompletionRequest::default()
        };
        self.log.trace(
            "llm_request",
            json!({"step": step + 1, "messages": request.messages.len(), "last_step": last_step,
                   "grammar": request.grammar.is_some(), "fitted": fitted, "prefix_kept": prefix_kept,
                   "budget": self.last_budget,
                   "tools": allowed.iter().map(|t| t.name).collect::<Vec<_>>()}),
        );
        ui.step_start(step + 1);
        // A coding task whose every change was declined or refused ends
        // "not done": its claim of success is not shown as the answer.
        let hold_answer = outcome.tools == ToolAccess::All
            && outcome.changed_files.is_empty()
            && !self.acted
            && self.declined + self.refused > 0;
        let mut streamer = agent_llm::stream::AnswerStreamer::default();
        let mut answer = String::new();
        let mut looped = false;
        let mut last_progress = std::time::Instant::now();
        let completion = self.provider.complete(&request, &mut |event| {
            if let Event::Prefill { done, total } = event {
                ui.prefilling(step + 1, done, total);
            }
            if let Event::Generated(tokens) = event {
                // Minutes can pass while a call is written: say it goes on.
                if last_progress.elapsed() >= agent_protocol::event::PROGRESS_EVERY {
                    last_progress = std::time::Instant::now();
                    ui.generating(step + 1, tokens);
                }
            }
            if let Event::Reasoning(piece) = event {
                ui.reasoning_text(piece);
            }
            if let Event::Text(piece) = event {
                // A native model's text is its answer (or what it says
                // before a call); the loop's JSON holds its answer inside.
                let visible = if native {
                    piece.to_string()
                } else {
                    streamer.push(piece)
                };
                if !visible.is_empty() {
                    if !hold_answer {
                        ui.answer_text(&visible);
                    }
                    answer.push_str(&visible);
                    // A small model's answer can loop until the token budget
                    // runs out; stop it early and keep what it said once.
                    if protocol::is_looping(&answer) {
                        looped = true;
                        return Flow::Stop;
                    }
                }
            }
            Flow::Continue
        })?;
        ui.step_end();
        outcome.prompt_tokens += completion.prompt_tokens;
        outcome.completion_tokens += completion.completion_tokens;
        outcome.reused_tokens += completion.reused_tokens;
        outcome.reasoning_tokens += completion.reasoning_tokens;
        outcome.decode_ms += completion.decode_ms.round() as u64;
        if outcome.ttft_ms == 0.0 {
            outcome.ttft_ms = completion.ttft_ms;
        }
        outcome.prompt_cache.add(completion.prompt_cache());
        outcome.speculative.add(completion.speculation());
        self.log.trace(
            "llm_response",
            json!({"step": step + 1, "text": completion.text, "finish": completion.finish,
                   "reasoning": completion.reasoning, "reasoning_tokens": completion.reasoning_tokens,
                   "tool_calls": completion.tool_calls, "invalid_call": completion.invalid_call,
                   "prompt_tokens": completion.prompt_tokens, "reused_tokens": completion.reused_tokens,
                   "completion_tokens": completion.completion_tokens, "ttft_ms": completion.ttft_ms,
                   "prefill_ms": completion.prefill_ms, "decode_ms": completion.decode_ms}),
        );
        if cancel.is_cancelled() {
            return Ok(None);
        }
        let (text, format_error) = if native {
            match native::reply_call(&completion) {
                Ok(call) => (call, None),
                Err(problem) => (completion.content.clone(), Some(problem)),
            }
        } else {
            (completion.text, None)
        };
        Ok(Some(Reply {
            text,
            format_error,
            cut_off: looped || completion.finish == FinishReason::Length,
            partial_answer: answer,
        }))
    }

    /// Runs one tool with this session's workspace, ledger, checkpoints,
    /// policy and index.
    fn call_tool(
        &mut self,
        name: &str,
        args: &serde_json::Value,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> ToolOutput {
        // Changes are saved as this session's, and undo takes back only its own.
        self.checkpoints.set_session(&self.log.session_id);
        let request = self.turns.iter().rev().find(|t| t.kind == Kind::Request);
        self.checkpoints.set_request(request.and_then(|t| t.seq));
        let room = self.output_room();
        let mut ctx = ToolContext {
            room,
            workspace: &self.workspace,
            ledger: &mut self.ledger,
            checkpoints: &mut self.checkpoints,
            policy: &self.policy,
            approver,
            search: self
                .search
                .as_deref_mut()
                .map(|s| s as &mut dyn SemanticSearch),
            cancel,
            files: self.toolbox.files(),
        };
        self.toolbox.call(name, args, &mut ctx)
    }

    /// Starts a request with the code index's best matches, as if the model
    /// had searched first: one step saved, and even a small model starts from
    /// the right files. The synthetic call also shows the call format by
    /// example. Nothing happens without an index. Returns the call made.
    /// A request that names an indexed dependency (`library`) searches
    /// that dependency's index beside the project's.
    fn prefetch(
        &mut self,
        request: &str,
        library: Option<&str>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Option<(ToolCall, String)>> {
        if self.search.is_none() {
            return Ok(None);
        }
        let mut args = json!({"query": request, "k": self.prefetch_results});
        let thought = match library {
            Some(name) => {
                args["scope"] = "all".into();
                args["package"] = name.into();
                format!("Search the code index and the locked {name} for the request first.")
            }
            None => "Search the code index for the request first.".into(),
        };
        let call = ToolCall {
            thought,
            tool: "search_semantic".into(),
            args,
        };
        self.prefetched(call, ui, cancel)
    }

    /// The project's dependencies with an index, by name (asked of the
    /// search once per session: resolving reads the lockfiles).
    fn dependency_names(&mut self) -> Vec<String> {
        if self.dependencies.is_none() {
            let names = self
                .search
                .as_deref_mut()
                .map(|s| s.dependencies())
                .unwrap_or_default();
            self.dependencies = Some(names);
        }
        self.dependencies.clone().unwrap_or_default()
    }

    /// Runs a call of the loop's own before the model's first step: shown,
    /// audited and in the conversation as the model's, its result observed.
    /// None when it failed (the model goes on without it).
    fn prefetched(
        &mut self,
        call: ToolCall,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Option<(ToolCall, String)>> {
        let output = self.call_tool(&call.tool, &call.args, &mut AlwaysApprove, cancel);
        if !output.ok {
            tracing::info!("no prefetch: {}", output.content);
            return Ok(None);
        }
        ui.tool_call(&call);
        ui.tool_result(&call, &output);
        self.log.audit(
            "prefetch",
            json!({"tool": call.tool, "args": call.args, "content": truncate(&output.content, 2000)}),
        );
        self.push(Turn::new(Kind::Call, serde_json::to_string(&call)?))?;
        self.observe(&observation_text(&call.tool, &output), false)?;
        Ok(Some((call, output.content)))
    }

    /// For a question about the workspace as a whole: the opening of its
    /// README, read before anything else. A search by the question's
    /// words ranks what repeats them (a test's list of such questions)
    /// above the README that answers them.
    fn prefetch_readme(
        &mut self,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Option<(ToolCall, String)>> {
        let root = self.workspace.root();
        let Some(name) = ["README.md", "README.rst", "README.txt", "README"]
            .into_iter()
            .find(|n| root.join(n).is_file())
        else {
            return Ok(None);
        };
        let call = ToolCall {
            thought: "The question is about the project as a whole: read its README first.".into(),
            tool: "read_file".into(),
            args: json!({"path": name, "end_line": README_LINES}),
        };
        self.prefetched(call, ui, cancel)
    }

    /// Runs an allowed tool; in `human` mode reads are confirmed here (the
    /// tools confirm writes and commands themselves).
    fn run_tool(
        &mut self,
        call: &ToolCall,
        allowed: &[ToolSpec],
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> ToolOutput {
        let Some(spec) = allowed.iter().find(|s| s.name == call.tool) else {
            let names: Vec<&str> = allowed.iter().map(|s| s.name).collect();
            let exists = self.toolbox.get(&call.tool).is_some();
            self.log.audit(
                "policy_deny",
                json!({"tool": call.tool, "reason": if exists { "not allowed for this request" } else { "unknown tool" }}),
            );
            return ToolOutput::error(
                if exists {
                    agent_tools::ErrorClass::PolicyDenied
                } else {
                    agent_tools::ErrorClass::InvalidArgs
                },
                format!(
                    "`{}` is {} for this request; use one of: {}",
                    call.tool,
                    if exists {
                        "not available"
                    } else {
                        "not a tool"
                    },
                    names.join(", ")
                ),
            );
        };
        let mut logged = LoggingApprover {
            inner: approver,
            decisions: Vec::new(),
        };
        if spec.access == Access::Read && self.policy.needs_approval(Access::Read) {
            let request = Approval::Read {
                tool: call.tool.clone(),
                summary: call.args.to_string(),
            };
            if logged.approve(&request) == Decision::Decline {
                self.log_decisions(&logged.decisions);
                return ToolOutput::error(
                    agent_tools::ErrorClass::Declined,
                    "the user declined this call; ask them or try something else",
                );
            }
        }
        let output = self.call_tool(&call.tool, &call.args, &mut logged, cancel);
        let decisions = std::mem::take(&mut logged.decisions);
        self.declined += decisions
            .iter()
            .filter(|(r, d)| *d == Decision::Decline && !matches!(r, Approval::Read { .. }))
            .count();
        self.log_decisions(&decisions);
        let declined = output.error == Some(agent_tools::ErrorClass::Declined);
        if spec.access == Access::Write && !output.ok && !declined {
            self.refused += 1;
            self.last_refusal = output.content.lines().next().map(str::to_string);
        }
        // A background command's changes arrive with the call that reports
        // its end (`command_output`, `command_stop`).
        if (matches!(spec.access, Access::Write | Access::Execute) && output.ok)
            || !output.changed.is_empty()
        {
            self.acted = true;
        }
        if output.error == Some(agent_tools::ErrorClass::PolicyDenied) {
            self.log.audit(
                "policy_deny",
                json!({"tool": call.tool, "reason": output.content}),
            );
        }
        let mut output = output;
        // A subfolder's AGENTS.md, the first time a tool touches a file under it.
        if let Some(path) = call.args.get("path").and_then(Value::as_str) {
            if let Some(rules) = self.instructions.nested_for(path) {
                output.content = format!("{}\n\n{rules}", output.content);
            }
        }
        self.log.audit(
            "tool_result",
            json!({"tool": call.tool, "ok": output.ok, "error": output.error,
                   "exit_code": output.exit_code, "diff": output.diff, "changed": output.changed,
                   "content": truncate(&output.content, 2000)}),
        );
        output
    }

    fn log_decisions(&mut self, decisions: &[(Approval, Decision)]) {
        for (request, decision) in decisions {
            self.log
                .audit("confirm", json!({"request": request, "decision": decision}));
        }
    }

    /// Runs `--verify` after a write; when it fails, the write is undone and
    /// the note says why.
    fn verify(&mut self, ui: &mut dyn Ui, cancel: &CancelToken) -> Result<Option<(String, bool)>> {
        let Some(command) = self.config.verify.clone() else {
            return Ok(None);
        };
        ui.notice(&format!("verifying: {command}"));
        // The user gave this command on the command line: no prompt, but
        // the same policy, timeout, output cap and scrubbed environment.
        // What it writes is thrown away: the rollback below must undo the
        // change it judged, not the command's own.
        let run = json!({ "command": command, "discard_changes": true });
        let output = self.call_tool("run_cmd", &run, &mut AlwaysApprove, cancel);
        self.log.audit(
            "verify",
            json!({"command": command, "ok": output.ok, "exit_code": output.exit_code}),
        );
        if output.ok {
            return Ok(Some((format!("\nVerify `{command}` passed."), false)));
        }
        let undo = self.call_tool("undo", &json!({}), &mut AlwaysApprove, cancel);
        self.log.audit(
            "rollback",
            json!({"ok": undo.ok, "diff": undo.diff, "changed": undo.changed}),
        );
        if !undo.ok {
            ui.notice("verify failed, and so did the rollback");
            return Ok(Some((
                format!(
                    "\nVerify `{command}` FAILED, and rolling the change back failed too ({}):\n{}",
                    undo.content, output.content
                ),
                false,
            )));
        }
        ui.notice("verify failed; the change was rolled back");
        Ok(Some((
            format!(
                "\nVerify `{command}` FAILED, so this change was rolled back (the file is as before):\n{}",
                output.content
            ),
            true,
        )))
    }

    /// Appends an observation; when the next step is the last, says that
    /// the next reply must be the answer.
    fn observe(&mut self, text: &str, answer_next: bool) -> Result<()> {
        let mut text = self.fit_output(text.to_string());
        if answer_next {
            text.push_str(STEP_BUDGET_NOTE);
        }
        self.push(Turn::new(Kind::Observation, text))
    }
}

/// How the conversation records a `/undo` of the user's: the model reads
/// it, and [`Agent::exchanges`] marks the answer whose change it undid.
const USER_UNDID: &str = "[The user undid your last change";

/// The request as the user wrote it, from the content of the request turn
/// at index `turn`: the first one (index 1) opens with the session's context.
pub(crate) fn request_text(turn: usize, content: &str) -> &str {
    let content = if turn == 1 {
        prompt::split_context(content).1
    } else {
        content
    };
    strip_notes(content)
}

/// A request turn's text without the note the loop appended for the model.
pub(crate) fn strip_notes(text: &str) -> &str {
    [
        QUESTION_NOTE,
        ANSWER_DIRECTLY_NOTE,
        PLAN_NOTE,
        PLAN_MODE_NOTE,
    ]
    .iter()
    .filter_map(|note| text.rfind(&format!("\n\n{note}")))
    .min()
    .map_or(text, |end| &text[..end])
}

/// The repository map of `root`, opened on first use and brought up to
/// date (None when it cannot be built: the loop works without it), and
/// whether files changed since the last refresh.
fn refreshed_map<'a>(
    map: &'a mut Option<agent_repomap::RepoMap>,
    root: &Path,
) -> Option<(&'a agent_repomap::RepoMap, bool)> {
    use agent_repomap::{default_cache_path, RepoMap};
    let map = map.get_or_insert_with(|| RepoMap::open(root, &default_cache_path(root)));
    match map.refresh() {
        Ok(stats) => Some((map, stats.parsed + stats.removed > 0)),
        Err(e) => {
            tracing::warn!("no repo map: {e:#}");
            None
        }
    }
}

fn request_message(request: &str, allowed: &[ToolSpec], planning: bool) -> String {
    let names: Vec<&str> = allowed.iter().map(|s| s.name).collect();
    if planning {
        format!("{request}\n\n{PLAN_MODE_NOTE}")
    } else if names == [FINISH] {
        format!("{request}\n\n{ANSWER_DIRECTLY_NOTE}")
    } else if !allowed.iter().any(|s| s.access == Access::Write) {
        format!("{request}\n\n{QUESTION_NOTE} {}.)", names.join(", "))
    } else if allowed.iter().any(|s| s.name == todo::NAME) {
        format!("{request}\n\n{PLAN_NOTE}")
    } else {
        request.to_string()
    }
}

/// The plan the session's last `todo` call that ran wrote (what it holds
/// after a resume or a rewind): empty when it wrote none, or when the plan
/// was done by the end of a request, as [`Agent::finish`] drops it then.
fn plan_of(turns: &[Turn]) -> Vec<todo::Item> {
    let mut plan = Vec::new();
    for (at, turn) in turns.iter().enumerate() {
        match turn.kind {
            Kind::Request if todo::all_done(&plan) => plan.clear(),
            Kind::Call => {
                let calls = protocol::parse_calls(&turn.message.content).unwrap_or_default();
                // Each call's observation follows in order; only one that
                // says the call ran counts (not a refusal, a call the
                // request was not given, or a repeat stopped).
                let ran = format!("[{} ok]", todo::NAME);
                for (i, call) in calls.iter().enumerate() {
                    let observed = turns.get(at + 1 + i).is_some_and(|t| {
                        t.kind == Kind::Observation && t.message.content.starts_with(&ran)
                    });
                    if call.tool == todo::NAME && observed {
                        plan = todo::parse(&call.args).unwrap_or(plan);
                    }
                }
            }
            _ => {}
        }
    }
    if todo::all_done(&plan) {
        plan.clear();
    }
    plan
}

/// The observation the model sees for a tool result.
fn observation_text(tool: &str, output: &ToolOutput) -> String {
    let status = match (output.ok, output.error) {
        (true, _) => "ok".to_string(),
        (false, Some(class)) => format!(
            "error: {}",
            serde_json::to_value(class)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        ),
        (false, None) => "error".to_string(),
    };
    format!("[{tool} {status}]\n{}", output.content)
}

/// Records every approval decision for the audit log.
struct LoggingApprover<'a> {
    inner: &'a mut dyn Approver,
    decisions: Vec<(Approval, Decision)>,
}

impl Approver for LoggingApprover<'_> {
    fn approve(&mut self, request: &Approval) -> Decision {
        let decision = self.inner.approve(request);
        self.decisions.push((request.clone(), decision.clone()));
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_shown_to_the_user_drops_the_notes_meant_for_the_model() {
        // Issue 53: "read_file to see them" reached the user as the answer.
        let found = "src/a.rs:1-40  Cache::reset\n    fn reset(&mut self) {\n    … (30 more lines; read_file to see them)";
        let answer = evidence_answer("no answer came", found);
        assert!(!answer.contains("read_file"), "{answer}");
        assert!(answer.contains("(30 more lines)"), "{answer}");
        assert!(answer.contains("Cache::reset"), "{answer}");
    }

    fn todo_call(statuses: &[&str]) -> Turn {
        let items: Vec<Value> = statuses
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"text": format!("step {i}"), "status": s}))
            .collect();
        let call = json!({"thought": "t", "tool": "todo", "args": {"items": items}});
        Turn::new(Kind::Call, call.to_string())
    }

    fn seen(text: &str) -> Turn {
        Turn::new(Kind::Observation, text)
    }

    #[test]
    fn the_plan_comes_back_from_the_calls_that_ran() {
        let ok = || seen("[todo ok]\nPlan (...)");
        let request = || Turn::new(Kind::Request, "do it");
        let statuses = |turns: &[Turn]| -> Vec<todo::Status> {
            plan_of(turns).iter().map(|i| i.status).collect()
        };
        use todo::Status::*;
        let turns = [request(), todo_call(&["done", "in_progress"]), ok()];
        assert_eq!(statuses(&turns), [Done, InProgress]);
        // A call refused, or not given to the request, changes nothing.
        let mut refused = turns.to_vec();
        refused.push(todo_call(&["done", "done"]));
        refused.push(seen("[todo error: policy_denied]\n`todo` is not available"));
        assert_eq!(statuses(&refused), [Done, InProgress]);
        // Done by the end of a request: gone, then and at the next request.
        let mut done = turns.to_vec();
        done.push(todo_call(&["done", "done"]));
        done.push(ok());
        assert!(plan_of(&done).is_empty());
        done.push(request());
        assert!(plan_of(&done).is_empty());
        assert!(plan_of(&[request()]).is_empty());
    }
}
