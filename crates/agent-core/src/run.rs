//! One request in flight. [`Agent::handle`] drives it: [`Agent::begin`]
//! (session, intent, tool set, prefetch), [`Agent::step`] once per model
//! reply (generate, parse, run the call, observe), [`Agent::finish`] (what
//! the outcome says when the loop ends).
//!
//! - **Prefetch**: with a code index, a request that may read starts with a
//!   synthetic `search_semantic` call and its result, as if the model had
//!   searched first: a step saved, the right files in view from the start,
//!   and the call format shown by example. How much it carries is
//!   [`crate::first_prompt`]'s.
//! - **Recovery**: a reply that does not parse is fed back and counted; a
//!   reply that runs into the token budget or loops
//!   ([`crate::protocol::is_looping`]) is stopped, and a cut-off `finish`
//!   keeps its answer up to the first repeat. A second copy of a call since
//!   the last write (`REPEAT_LIMIT`) gets an intervention instead of a run,
//!   and a third ends the request. `--verify CMD` runs after each write; a
//!   failure undoes the write and tells the model why.
//! - **No answer is not an answer**: a `finish` the judge refuses
//!   ([`crate::answer::Judge`]) is sent back; on the last step the request
//!   ends without an answer (exit 3) and shows the latest search results,
//!   marked as such ([`crate::Finish::Evidence`], or
//!   [`crate::Finish::NoAnswer`] with nothing searched).
//! - **Seconds, not minutes, to say so**: a reply that gives nothing (a
//!   format error, a refused answer, a repeated call, invalid arguments) is
//!   answered once and the second ends the request (`STALL_LIMIT`); a
//!   repository question with search results in hand ends at the first.
//!   A repository question in a folder that is no project ends before the
//!   model is asked, saying so.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::Result;
use serde_json::json;

use agent_base::cancel::CancelToken;
use agent_llm::Role;
use agent_tools::{Access, Approver, ToolSpec};

use crate::intent::{self, Label};
use crate::prompt;
use crate::protocol::{self, ToolCall, FINISH};
use crate::{
    observation_text, request_message, truncate, Agent, Finish, Kind, Outcome, Step, ToolAccess,
    Turn, FINISH_ARGS_NOTE, REPEAT_LIMIT, STALL_LIMIT,
};
use agent_protocol::Ui;

/// A request between its steps.
pub(crate) struct Run {
    request: String,
    started: Instant,
    /// The tools this request may call, and their access classes.
    allowed: Vec<ToolSpec>,
    access: &'static [Access],
    tools: ToolAccess,
    /// Where this request's turns begin: its observations are the evidence
    /// an answer must be about (a compaction moves it).
    pub(crate) request_turn: usize,
    /// Identical calls since the last write. The prefetched search counts
    /// as the model's first call, so copying it again and again (small
    /// models do) meets the intervention sooner.
    calls_seen: HashMap<(String, String), usize>,
    /// Replies so far that gave nothing ([`STALL_LIMIT`]).
    stalls: usize,
    /// The latest search results: the fallback answer if the model gives
    /// none that counts.
    found: Option<String>,
    /// A coding task planned, not done ([`Agent::plans`]).
    planning: bool,
    pub(crate) max_steps: usize,
    pub(crate) outcome: Outcome,
}

impl Run {
    /// The next reply that gives nothing ends the request: the second
    /// ([`STALL_LIMIT`]), or the first of a repository question that has
    /// search results to show.
    fn last_chance(&self) -> bool {
        let limit = if self.tools == ToolAccess::ReadOnly && self.found.is_some() {
            1
        } else {
            STALL_LIMIT
        };
        self.stalls + 1 >= limit
    }

    /// An exploration's run ([`crate::explore`]): a read-only question
    /// whose request turn ends at `request_turn`.
    pub(crate) fn exploring(
        request: &str,
        allowed: Vec<ToolSpec>,
        request_turn: usize,
        max_steps: usize,
        outcome: Outcome,
    ) -> Self {
        Run {
            request: request.to_string(),
            started: Instant::now(),
            allowed,
            access: READ_ONLY,
            tools: ToolAccess::ReadOnly,
            request_turn,
            calls_seen: HashMap::new(),
            stalls: 0,
            found: None,
            planning: false,
            max_steps: max_steps.max(1),
            outcome,
        }
    }

    /// The loop's own first call ran ([`Agent::first_read`]): it counts as
    /// the model's, and its results are the evidence so far.
    pub(crate) fn prefetched(&mut self, call: ToolCall, content: String) {
        self.calls_seen
            .insert((call.tool, call.args.to_string()), 1);
        self.found = Some(content);
    }

    /// [`Next::Done`] when a step ended the request; else one more reply
    /// that gave nothing.
    fn stalled_unless(&mut self, done: bool) -> Next {
        if done {
            Next::Done
        } else {
            self.stalls += 1;
            Next::Step
        }
    }
}

/// Whether the loop goes on after a step.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Step,
    Done,
}

impl Agent {
    /// Opens a request: the session, the intent gate, the tools it gets,
    /// the request turn and the prefetched search.
    pub(crate) fn begin(
        &mut self,
        asked: &crate::attach::Request,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Run> {
        let request = asked.text.as_str();
        let started = Instant::now();
        // The gate's knowledge of the workspace first: the session's repo
        // map (its context) is made from the same refresh.
        self.refresh_vocabulary();
        let vocabulary_ms = started.elapsed().as_millis() as u64;
        let context = self.start_session(request)?;
        if self
            .turns
            .last()
            .is_some_and(|t| t.message.role == Role::User)
        {
            // The previous request ended without a reply (Ctrl-C, step
            // budget): close it, so user and assistant turns still alternate.
            let closing = ToolCall {
                thought: "The previous request was stopped.".into(),
                tool: FINISH.into(),
                args: json!({"answer": "(stopped before an answer)"}),
            };
            self.push(Turn::new(Kind::Call, serde_json::to_string(&closing)?))?;
        }
        self.log.new_trace();
        let files: Vec<&str> = asked.attachments.iter().map(|a| a.name.as_str()).collect();
        self.log
            .audit("request", json!({ "text": request, "files": files }));
        if let Some(placement) = self.provider.placement() {
            self.log.trace("engine", json!(placement));
        }
        if let Some(sizes) = &self.first_prompt {
            self.log.trace("first_prompt", json!(sizes));
        }

        // A replay of recorded turns holds the loop's turns only (what
        // `agent sessions show --script` exports), so it is not asked for
        // labels.
        let system = self.turns.first().map(|t| t.message.clone());
        let gate_started = Instant::now();
        let dependencies = self.dependency_names();
        let knowledge = intent::Knowledge {
            vocabulary: self.vocabulary.as_ref(),
            tools: &self.extra_tools,
            dependencies: &dependencies,
        };
        let carrying_out = std::mem::take(&mut self.carrying_out);
        let mut intent = if self.provider.answers_side_requests() {
            intent::classify(
                request,
                &knowledge,
                Some(self.provider.as_mut()),
                system.as_ref(),
                cancel,
            )
        } else {
            intent::classify(request, &knowledge, None, None, cancel)
        };
        let gate_ms = vocabulary_ms + gate_started.elapsed().as_millis() as u64;
        self.log.audit(
            "intent",
            json!({"label": intent.label, "confidence": intent.confidence, "reason": intent.reason,
                   "tool": intent.tool, "ms": gate_ms}),
        );
        if carrying_out {
            // The user approved a plan: it is a coding task, whatever its words.
            intent.label = Label::CodingTask;
            intent.reason = "carries out the approved plan".into();
        }
        // Asked about the whole workspace: its README is read first.
        let whole =
            intent.label == Label::RepoQuestion && intent::about_the_whole(request, &knowledge);
        let planning = self.plans(intent.label, carrying_out);
        let (tools, access) = if planning {
            (ToolAccess::Plan, PLANNING)
        } else {
            tools_for(intent.label)
        };
        ui.intent(&intent, tools);
        self.declined = 0;
        self.refused = 0;
        self.last_refusal = None;
        self.acted = false;
        let allowed: Vec<ToolSpec> = self
            .toolbox
            .specs()
            .into_iter()
            .filter(|s| access.contains(&s.access))
            .collect();
        let message = self.with_files(asked, request_message(request, &allowed, planning), ui);
        // The first request opens with the session's context, after the
        // system prompt and the tools, which every request shares.
        let message = match context {
            Some(context) => prompt::with_context(&context, &message),
            None => message,
        };
        self.push(Turn::new(Kind::Request, message))?;
        let request_turn = self.turns.len();
        let mut calls_seen = HashMap::new();
        let mut found = None;
        // A question about a folder that is no project has nothing to be
        // answered from: say so rather than let the model make it up.
        let nothing_to_read = intent.label == Label::RepoQuestion
            && intent.tool.is_none()
            && asked.attachments.is_empty()
            && self.is_no_project();
        if self.prefetch_results > 0 && access.contains(&Access::Read) && !nothing_to_read {
            let library = intent::library_named(request, &dependencies);
            if let Some((call, content)) =
                self.first_read(request, whole, library.as_deref(), ui, cancel)?
            {
                calls_seen.insert((call.tool, call.args.to_string()), 1);
                found = Some(content);
            }
        }
        let max_steps = if nothing_to_read {
            0
        } else if allowed.len() == 1 {
            1
        } else {
            self.config.max_steps.max(1)
        };
        let (answer, finish) = if nothing_to_read {
            (no_project_answer(self.workspace.root()), Finish::NoAnswer)
        } else {
            (String::new(), Finish::StepBudget)
        };
        let outcome = self.new_outcome(intent, tools, answer, finish);
        Ok(Run {
            request: request.to_string(),
            started,
            allowed,
            access,
            tools,
            request_turn,
            calls_seen,
            stalls: 0,
            found,
            planning,
            max_steps,
            outcome,
        })
    }

    /// What a request reads before the model's first step: the README for
    /// a question about the whole workspace, else a search for the request
    /// (and in the indexed dependency it names, if any).
    pub(crate) fn first_read(
        &mut self,
        request: &str,
        whole: bool,
        library: Option<&str>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Option<(ToolCall, String)>> {
        if whole {
            if let Some(read) = self.prefetch_readme(ui, cancel)? {
                return Ok(Some(read));
            }
        }
        self.prefetch(request, library, ui, cancel)
    }

    /// A request's outcome before its first step.
    fn new_outcome(
        &mut self,
        intent: intent::Intent,
        tools: ToolAccess,
        answer: String,
        finish: Finish,
    ) -> Outcome {
        Outcome {
            answer,
            finish,
            intent,
            tools,
            steps: 0,
            tool_calls: 0,
            invalid_tool_calls: 0,
            cut_off_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            reused_tokens: 0,
            reasoning_tokens: 0,
            session_id: self.log.session_id.clone(),
            trace_id: self.log.trace_id.clone(),
            changed_files: Vec::new(),
            command_changes: Vec::new(),
            declined: 0,
            wall_ms: 0,
            decode_ms: 0,
            ttft_ms: 0.0,
            prompt_cache: Default::default(),
            speculative: Default::default(),
            engine: self.provider.placement(),
            compactions: Vec::new(),
            first_prompt: self.first_prompt.take(),
            plan: Vec::new(),
            budget: Default::default(),
            result: None,
            result_error: None,
            planned: false,
            explore: Default::default(),
        }
    }

    /// One model reply and what comes of it: an answer settled, a format
    /// error fed back, a repeated call stopped, or a tool run and observed.
    pub(crate) fn step(
        &mut self,
        run: &mut Run,
        ui: &mut dyn Ui,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> Result<Next> {
        self.maybe_compact(run, ui, cancel)?;
        let step = run.outcome.steps;
        let last_step = step + 1 == run.max_steps;
        let last_chance = run.last_chance();
        let answer_next = step + 2 == run.max_steps;
        run.outcome.steps = step + 1;
        let Some(reply) =
            self.generate(step, last_step, &run.allowed, &mut run.outcome, ui, cancel)?
        else {
            run.outcome.finish = Finish::Cancelled;
            return Ok(Next::Done);
        };
        let at = Step {
            request: &run.request,
            request_turn: run.request_turn,
            access: run.access,
            last: last_step || last_chance,
            answer_next,
            found: run.found.as_deref(),
        };
        let outcome = &mut run.outcome;
        let text = reply.text;

        let parsed = match reply.format_error {
            Some(problem) => Err(protocol::FormatError(problem)),
            None => protocol::parse_calls(&text),
        };
        let mut calls = match parsed {
            Ok(calls) => calls,
            Err(_) if reply.cut_off && !reply.partial_answer.trim().is_empty() => {
                // A finish call cut off (token budget or a loop): the
                // model was answering, so keep what it said once.
                self.push(Turn::new(Kind::Call, truncate(&text, 300)))?;
                self.log.audit(
                    "tool_call",
                    json!({"valid": false, "salvaged": true, "text": truncate(&text, 2000)}),
                );
                let partial = &reply.partial_answer;
                let kept = || protocol::salvage_answer(partial);
                let done = self.conclude(partial, kept, &at, outcome, ui)?;
                return Ok(run.stalled_unless(done));
            }
            Err(e) => {
                if reply.cut_off {
                    outcome.cut_off_calls += 1;
                } else {
                    outcome.invalid_tool_calls += 1;
                }
                self.log.audit(
                    "tool_call",
                    json!({"valid": false, "cut_off": reply.cut_off, "error": e.0, "text": text}),
                );
                // Keep only the start of a broken reply: small models copy
                // their previous turn, and a runaway reply breeds another.
                self.push(Turn::new(Kind::Call, truncate(&text, 300)))?;
                let why = if reply.cut_off {
                    format!(
                        "your reply was cut off at {} tokens. Keep the thought short and reply with one complete JSON call",
                        self.config.max_tokens
                    )
                } else {
                    e.0
                };
                self.observe(&format!("Format error: {why}"), answer_next)?;
                return Ok(self.stalled(run, "the model's replies were no valid calls"));
            }
        };
        self.push(Turn::new(Kind::Call, text))?;
        if calls.len() == 1 && calls[0].tool == FINISH {
            let call = calls.remove(0);
            self.audit_call(&call, ui);
            if let Some(answer) = call.args.get("answer").and_then(|a| a.as_str()) {
                let done = self.conclude(answer, || answer.to_string(), &at, outcome, ui)?;
                return Ok(run.stalled_unless(done));
            }
            outcome.invalid_tool_calls += 1;
            self.observe(FINISH_ARGS_NOTE, answer_next)?;
            return Ok(self.stalled(run, "the model's finish had no answer"));
        }
        // A model may make several calls in one turn (Qwen's and Hermes'
        // `<tool_call>` blocks, Llama's and Mistral's lists): each runs in
        // order, under the policy, and gets its own observation; only the
        // last one carries the step-budget note.
        let last = calls.len() - 1;
        for (i, call) in calls.into_iter().enumerate() {
            self.audit_call(&call, ui);
            if self.act(run, call, answer_next && i == last, ui, approver, cancel)? == Next::Done {
                return Ok(Next::Done);
            }
        }
        Ok(Next::Step)
    }

    /// One more reply that gave nothing: at the request's last chance
    /// ([`Run::last_chance`]) it ends, with the evidence, for `why`.
    fn stalled(&mut self, run: &mut Run, why: &str) -> Next {
        if !run.last_chance() {
            run.stalls += 1;
            return Next::Step;
        }
        let could_search = run.access.contains(&Access::Read);
        self.end_without_answer(why, run.found.as_deref(), could_search, &mut run.outcome);
        Next::Done
    }

    fn audit_call(&mut self, call: &ToolCall, ui: &mut dyn Ui) {
        ui.tool_call(call);
        self.log.audit(
            "tool_call",
            json!({"valid": true, "tool": call.tool, "args": call.args, "thought": call.thought}),
        );
    }

    /// Runs one call of the model's (not `finish`) and observes its result:
    /// the repeat guard, the hooks, the tool, the verification of a change.
    fn act(
        &mut self,
        run: &mut Run,
        call: ToolCall,
        answer_next: bool,
        ui: &mut dyn Ui,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> Result<Next> {
        run.outcome.tool_calls += 1;

        let key = (call.tool.clone(), call.args.to_string());
        let repeats = {
            let count = run.calls_seen.entry(key).or_insert(0);
            *count += 1;
            *count
        };
        if repeats > REPEAT_LIMIT || (repeats == REPEAT_LIMIT && run.last_chance()) {
            // It was told once; a further copy would loop to the budget.
            self.log.audit(
                "intervention",
                json!({"tool": call.tool, "repeats": repeats, "ended": true}),
            );
            let why = if repeats > REPEAT_LIMIT {
                format!("the model kept repeating the same `{}` call", call.tool)
            } else {
                format!("the model repeated the same `{}` call", call.tool)
            };
            let could_search = run.access.contains(&Access::Read);
            self.end_without_answer(&why, run.found.as_deref(), could_search, &mut run.outcome);
            return Ok(Next::Done);
        }
        if repeats == REPEAT_LIMIT {
            run.stalls += 1;
            self.log.audit(
                "intervention",
                json!({"tool": call.tool, "repeats": repeats}),
            );
            self.observe(
                &format!(
                    "You made the same `{}` call {repeats} times; its result will not change. \
Use what you already have: try a different tool or different arguments, or call finish with your answer. \
Another copy of this call ends the request.",
                    call.tool
                ),
                answer_next,
            )?;
            return Ok(Next::Step);
        }

        let allowed = run.allowed.iter().any(|s| s.name == call.tool);
        let tools = run.tools;
        let output = match allowed.then(|| self.pre_tool_hooks(&call, tools, ui, approver, cancel))
        {
            Some(Some(denied)) => denied,
            _ => {
                let mut output = if allowed && call.tool == agent_protocol::EXPLORE {
                    // The loop's own tool: a subagent, its events nested.
                    self.explore(&call, &mut run.outcome, ui, approver, cancel)?
                } else {
                    self.run_tool(&call, &run.allowed, approver, cancel)
                };
                if allowed {
                    self.post_tool_hooks(&call, tools, &mut output, ui, cancel);
                }
                output
            }
        };
        ui.tool_result(&call, &output);
        if output.error == Some(agent_protocol::ErrorClass::InvalidArgs) {
            let why = format!("the model's `{}` call had invalid arguments", call.tool);
            if self.stalled(run, &why) == Next::Done {
                return Ok(Next::Done);
            }
        }
        if let Some(plan) = &output.plan {
            self.plan = plan.clone();
            ui.plan(&self.plan);
        }
        if output.ok && matches!(call.tool.as_str(), "search_semantic" | "grep" | "explore") {
            run.found = Some(output.content.clone());
        }
        let outcome = &mut run.outcome;
        let newly_changed: Vec<String> = output
            .changed
            .iter()
            .filter(|p| !outcome.changed_files.contains(p))
            .cloned()
            .collect();
        outcome.changed_files.extend(newly_changed.iter().cloned());
        if agent_protocol::job::changes_are_a_commands(&call.tool) {
            for path in &output.changed {
                if !outcome.command_changes.contains(path) {
                    outcome.command_changes.push(path.clone());
                }
            }
        }
        for path in &output.changed {
            if !self.session_changed.contains(path) {
                self.session_changed.push(path.clone());
            }
        }
        if !output.changed.is_empty() {
            // The workspace moved: reading or searching again is news.
            run.calls_seen.clear();
        }
        let mut observation = observation_text(&call.tool, &output);
        if output.ok && !output.changed.is_empty() {
            if let Some((note, rolled_back)) = self.verify(ui, cancel)? {
                observation.push_str(&note);
                if rolled_back {
                    run.outcome
                        .changed_files
                        .retain(|p| !newly_changed.contains(p));
                }
            }
        }
        self.observe(&observation, answer_next)?;
        if cancel.is_cancelled() {
            run.outcome.finish = Finish::Cancelled;
            return Ok(Next::Done);
        }
        Ok(Next::Step)
    }

    /// Closes a request: what the outcome says when no answer came, or a
    /// coding task changed nothing; timings; the final audit record.
    pub(crate) fn finish(&mut self, run: Run) -> Outcome {
        let mut outcome = run.outcome;
        if outcome.finish == Finish::StepBudget && outcome.answer.is_empty() {
            outcome.answer = format!(
                "(no answer within {} steps; raise --max-steps or ask a narrower question)",
                outcome.steps
            );
        }
        if outcome.finish == Finish::Cancelled && outcome.answer.is_empty() {
            // Stopped before an answer: what the tools found is still worth
            // having, as when no answer came.
            if let Some(found) = &run.found {
                outcome.answer = crate::evidence_answer("the request was interrupted", found);
            }
        }
        outcome.declined = self.declined;
        outcome.budget = self.last_budget;
        outcome.plan = self.plan.clone();
        outcome.planned = run.planning
            && outcome.finish != Finish::Cancelled
            && (outcome.finish == Finish::Answered || !self.plan.is_empty());
        if agent_tools::todo::all_done(&self.plan) {
            // Done: the next request starts without it.
            self.plan.clear();
        }
        let unchanged = run.tools == ToolAccess::All
            && outcome.changed_files.is_empty()
            && outcome.finish == Finish::Answered;
        if unchanged && !self.acted && self.declined + self.refused > 0 {
            // Every change was blocked: whatever the model claims, the task is not done.
            outcome.finish = Finish::NotDone;
            outcome.answer = self.not_done();
        } else if unchanged {
            // The model may say it made the change; it did not.
            outcome.answer.push_str("\n\n(0 files changed.)");
        }
        outcome.wall_ms = run.started.elapsed().as_millis() as u64;
        self.log.audit(
            "final",
            json!({"finish": outcome.finish, "answer": outcome.answer, "steps": outcome.steps,
                   "tool_calls": outcome.tool_calls, "invalid_tool_calls": outcome.invalid_tool_calls,
                   "cut_off_calls": outcome.cut_off_calls,
                   "changed_files": outcome.changed_files, "declined": outcome.declined,
                   "wall_ms": outcome.wall_ms}),
        );
        outcome
    }
}

impl Agent {
    /// Why a coding task whose changes were all blocked is not done, and
    /// what to do about it.
    fn not_done(&self) -> String {
        let mut why = Vec::new();
        if self.declined > 0 {
            why.push(format!(
                "{} change(s) or command(s) declined (answer y when asked, or use --mode yolo)",
                self.declined
            ));
        }
        if self.refused > 0 {
            why.push(format!(
                "{} change(s) refused{} (a larger --model does better)",
                self.refused,
                self.last_refusal
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
        }
        format!("not done: no file was changed; {}.", why.join("; "))
    }
}

/// What a question about a folder that is no project gets instead of an
/// answer: why, and what still works there.
fn no_project_answer(root: &std::path::Path) -> String {
    format!(
        "(no project here: {} has no version control, no build manifest and no source code, \
so there is nothing to answer this from. Run `agent` inside a project (cd to it), or `git init` \
here to make this folder one. Still possible here: questions that need no repository \
(\"explain Rust lifetimes\"), a file named with @ (\"summarize @notes.txt\"), and tasks that \
create files (\"write a Python script that ...\").)",
        agent_base::term::untrusted(root)
    )
}

/// What a question (and an exploration) may use: reads and `finish`.
pub(crate) const READ_ONLY: &[Access] = &[Access::Read, Access::Control];

/// What a planned coding task may use: reads, the plan, `finish`.
const PLANNING: &[Access] = &[Access::Read, Access::Control, Access::Plan];

/// The tools a request of this label gets, and their access classes.
fn tools_for(label: Label) -> (ToolAccess, &'static [Access]) {
    match label {
        Label::CodingTask => (
            ToolAccess::All,
            &[
                Access::Read,
                Access::Write,
                Access::Execute,
                Access::Control,
                Access::Plan,
                Access::Job,
            ],
        ),
        Label::RepoQuestion | Label::Uncertain => (ToolAccess::ReadOnly, READ_ONLY),
        Label::CapabilityQuery | Label::GeneralChat => (ToolAccess::None, &[Access::Control]),
    }
}
