//! `explore(question)`: a subagent that reads and searches in a context of
//! its own and hands back a short report, so the files it read to find the
//! answer never enter the request's context (issue 56: a 7B model on a
//! laptop has 8-32k tokens, and every file read to find the right place
//! stays in them).
//!
//! - **The same loop, read-only.** The run is [`Agent::step`] on a
//!   conversation of its own: the session's system prompt (byte for byte,
//!   so the KV cache's prefix serves it), the session's context, and the
//!   question under a note that asks for a report of `path:line` lines. Its
//!   tools are a repository question's (reads and `finish`, the same
//!   [`run::READ_ONLY`] a question gets), less `explore` itself: a write,
//!   a command or a second explore is refused as for any question.
//! - **Its own budget.** Steps ([`ExploreConfig::max_steps`]) and tokens
//!   ([`ExploreConfig::max_tokens`]: prompt tokens prefilled plus tokens
//!   written, over its steps); when either runs out, its next reply may only
//!   be its report, and a run that still gives none returns what it read.
//! - **Only the report comes back.** The subagent's turns are never
//!   stored in the session nor shown to the request's model: the report, at
//!   most [`ExploreConfig::report_lines`] lines, ends with the places it
//!   read (`Read: calc.py:1-3`), so paths and line numbers are there even
//!   when a small model's report has none.
//! - **A second sequence.** Its model calls are side requests
//!   (`CompletionRequest::aside`): the engine decodes them in its second KV
//!   sequence from the prefix they share, and the conversation's cache is as
//!   before when the request's loop goes on; a model that cannot hold two
//!   (recurrent) decodes them in the one, which the next step refills.
//! - **Shown nested.** Its steps reach the front ends through
//!   [`Ui::nested`] under the `explore` call, and its audit and trace
//!   records carry `parent: explore-N`.

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use agent_base::cancel::CancelToken;
use agent_llm::Message;
use agent_protocol::subagent::{Ended, Nested, EXPLORE};
use agent_protocol::{Compaction, Intent, ToolAccess, Ui};
use agent_tools::{
    Access, Approver, ErrorClass, ReadLedger, Tool, ToolContext, ToolOutput, ToolSpec,
};

use crate::budget::Budget;
use crate::context::{Kind, Turn};
use crate::protocol::ToolCall;
use crate::run::{self, Next, Run};
use crate::{prompt, Agent, Finish, Outcome};

/// How the `explore` subagent runs (`--explore`, `--explore-steps`,
/// `--explore-tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExploreConfig {
    /// The model is offered the tool. Off by default: the system prompt,
    /// and what every existing session sends, stays as it was.
    pub enabled: bool,
    /// Model calls per exploration, its report included.
    pub max_steps: usize,
    /// Prompt tokens it may prefill plus tokens it may write, over all its steps.
    pub max_tokens: usize,
    /// Most lines of the report the request's model reads.
    pub report_lines: usize,
}

impl Default for ExploreConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_steps: 8,
            max_tokens: 16_000,
            report_lines: 15,
        }
    }
}

/// What a request's explorations spent, beside its own steps and tokens
/// (`--json`'s `explore`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExploreUse {
    pub runs: usize,
    pub steps: usize,
    pub tool_calls: usize,
    pub tokens: usize,
}

impl ExploreUse {
    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    fn add(&mut self, ended: &Ended) {
        self.runs += 1;
        self.steps += ended.steps;
        self.tool_calls += ended.tool_calls;
        self.tokens += ended.tokens;
    }
}

/// The tool as the model sees it. The loop runs it ([`Agent::explore`]):
/// the toolbox never does.
pub(crate) struct ExploreTool;

impl Tool for ExploreTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: EXPLORE,
            description: "Hand a question about the code to a helper that searches and reads in its own context and returns a short report with paths and line numbers (path:line). Use it to find where something is before you read or change it: your own context stays small.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "what to find out, e.g. \"where is the config file parsed?\""}
                },
                "required": ["question"]
            }),
            access: Access::Read,
        }
    }

    fn run(&self, _args: &Value, _ctx: &mut ToolContext<'_>) -> ToolOutput {
        ToolOutput::error(
            ErrorClass::PolicyDenied,
            "explore is not available here: it runs only in the agent's own loop",
        )
    }
}

/// The note under the question, less its tools and its bound: the
/// judge knows its words as the agent's own.
pub(crate) const EXPLORE_NOTE: &str = "(You are exploring for another agent: do not change files. \
Search and read what you need, then call finish with a report of one place a line: \
path:line and what is there.)";

/// The note under the question: what the subagent is for and what its
/// answer must look like.
fn explore_request(question: &str, allowed: &[ToolSpec], lines: usize) -> String {
    let names: Vec<&str> = allowed.iter().map(|s| s.name).collect();
    format!(
        "{question}\n\n(You are exploring for another agent: do not change files. Tools you may use: {}. \
Search and read what you need, then call finish with a report of at most {lines} lines, \
one place a line: path:line and what is there.)",
        names.join(", ")
    )
}

/// The request's state the subagent's run sets aside, restored after it.
struct Saved {
    turns: Vec<Turn>,
    last_prompt: Vec<Message>,
    last_budget: Budget,
    request_cut: usize,
    ledger: ReadLedger,
}

impl Agent {
    /// Runs `explore` for the request's model: the subagent's loop in its own
    /// conversation, its events nested under `call`, its use added to
    /// `outcome`. Returns the report as the call's output.
    pub(crate) fn explore(
        &mut self,
        call: &ToolCall,
        outcome: &mut Outcome,
        ui: &mut dyn Ui,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> Result<ToolOutput> {
        let question = call
            .args
            .get("question")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default()
            .to_string();
        if question.is_empty() {
            return Ok(ToolOutput::error(
                ErrorClass::InvalidArgs,
                "explore needs {\"question\": \"<what to find out>\"}",
            ));
        }
        self.explorations += 1;
        let id = format!("{EXPLORE}-{}", self.explorations);
        let context = self.session_context().map(str::to_string);
        ui.nested(
            &id,
            Nested::Start {
                question: &question,
            },
        );
        let saved = self.set_aside(&id);
        let mut nested = NestedUi {
            ui: &mut *ui,
            id: id.clone(),
            read: Vec::new(),
        };
        let result =
            self.run_exploration(&question, context.as_deref(), &mut nested, approver, cancel);
        let read = std::mem::take(&mut nested.read);
        self.restore(saved);
        let (answer, ended) = result?;
        ui.nested(&id, Nested::End(&ended));
        outcome.explore.add(&ended);
        let report = report(&answer, &ended, &read, self.config.explore.report_lines);
        self.log.audit(
            "explore",
            json!({"id": id, "question": question, "steps": ended.steps,
                   "tool_calls": ended.tool_calls, "tokens": ended.tokens,
                   "finish": ended.finish, "report": report}),
        );
        Ok(ToolOutput::ok(report))
    }

    /// Sets the request's conversation aside for the subagent `id`'s: the
    /// same system prompt, nothing stored, its records marked.
    fn set_aside(&mut self, id: &str) -> Saved {
        let system = self.turns.first().cloned();
        let saved = Saved {
            turns: std::mem::take(&mut self.turns),
            last_prompt: std::mem::take(&mut self.last_prompt),
            last_budget: self.last_budget,
            request_cut: std::mem::take(&mut self.request_cut),
            // Its reads are no licence for the request's model to write
            // a file it never saw.
            ledger: std::mem::take(&mut self.ledger),
        };
        self.turns.extend(system.map(|mut t| {
            t.seq = None;
            t
        }));
        self.subagent = Some(id.to_string());
        self.log.parent = Some(id.to_string());
        saved
    }

    fn restore(&mut self, saved: Saved) {
        self.turns = saved.turns;
        self.last_prompt = saved.last_prompt;
        self.last_budget = saved.last_budget;
        self.request_cut = saved.request_cut;
        self.ledger = saved.ledger;
        self.subagent = None;
        self.log.parent = None;
    }

    /// The subagent's loop: its request, its prefetch, its steps within
    /// its budget. Returns its answer (empty when it gave none) and how it
    /// ended.
    fn run_exploration(
        &mut self,
        question: &str,
        context: Option<&str>,
        ui: &mut dyn Ui,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> Result<(String, Ended)> {
        let budget = self.config.explore;
        let access = run::READ_ONLY;
        let allowed: Vec<ToolSpec> = self
            .toolbox
            .specs()
            .into_iter()
            .filter(|s| access.contains(&s.access) && s.name != EXPLORE)
            .collect();
        let message = explore_request(question, &allowed, budget.report_lines);
        let message = match context {
            Some(context) => prompt::with_context(context, &message),
            None => message,
        };
        self.push(Turn::new(Kind::Request, message))?;
        let outcome = Outcome {
            intent: Intent::default(),
            tools: ToolAccess::ReadOnly,
            finish: Finish::StepBudget,
            ..Outcome::default()
        };
        let mut run = Run::exploring(
            question,
            allowed,
            self.turns.len(),
            budget.max_steps,
            outcome,
        );
        if self.prefetch_results > 0 {
            if let Some((call, content)) = self.first_read(question, false, None, ui, cancel)? {
                run.prefetched(call, content);
            }
        }
        let mut out_of_tokens = false;
        while run.outcome.steps < run.max_steps {
            if self.step(&mut run, ui, approver, cancel)? == Next::Done {
                break;
            }
            let o = &run.outcome;
            let spent = spent(o);
            if spent >= budget.max_tokens && run.max_steps > o.steps + 1 {
                // Its next reply is its last: the report.
                out_of_tokens = true;
                run.max_steps = o.steps + 1;
            }
        }
        let o = &run.outcome;
        let finish = match o.finish {
            Finish::Answered => "answered",
            Finish::Cancelled => "cancelled",
            Finish::StepBudget if out_of_tokens => "token_budget",
            Finish::StepBudget => "step_budget",
            _ => "no_answer",
        };
        let ended = Ended {
            steps: o.steps,
            tool_calls: o.tool_calls,
            tokens: spent(o),
            finish,
        };
        Ok((run.outcome.answer, ended))
    }
}

/// What a run's budget counts: prompt tokens prefilled (not those the
/// cache held) and tokens written.
fn spent(o: &Outcome) -> usize {
    o.prompt_tokens.saturating_sub(o.reused_tokens) + o.completion_tokens
}

/// The report the request's model reads: the subagent's answer (or why it
/// gave none, and what it found), then the places it read; `lines` at most.
fn report(answer: &str, ended: &Ended, read: &[String], lines: usize) -> String {
    let lines = lines.max(2);
    let mut out: Vec<String> = Vec::new();
    if ended.finish != "answered" {
        out.push(format!(
            "(explore gave no report of its own: {})",
            agent_protocol::subagent::summary(ended)
        ));
    }
    let body: Vec<&str> = answer
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let room = lines - 1 - out.len().min(lines - 1);
    for line in body.iter().take(room) {
        out.push(agent_base::term::cut(line, 200));
    }
    if body.len() > room && room > 0 {
        out.pop();
        out.push(format!("… ({} more lines cut)", body.len() - room + 1));
    }
    if !read.is_empty() {
        let mut places: Vec<&str> = Vec::new();
        for place in read {
            if !places.contains(&place.as_str()) {
                places.push(place);
            }
        }
        out.push(agent_base::term::cut(
            &format!("Read: {}", places.join(", ")),
            400,
        ));
    }
    if out.is_empty() {
        out.push("(explore found nothing)".into());
    }
    out.join("\n")
}

/// The place a successful `read_file` showed: `path:first-last`, from the
/// numbered lines of its output (`  12| text`).
fn place_read(call: &ToolCall, output: &ToolOutput) -> Option<String> {
    if call.tool != "read_file" || !output.ok {
        return None;
    }
    let path = call.args.get("path").and_then(Value::as_str)?;
    let numbers: Vec<usize> = output
        .content
        .lines()
        .filter_map(|l| l.split_once("| ")?.0.trim().parse().ok())
        .collect();
    Some(match (numbers.first(), numbers.last()) {
        (Some(first), Some(last)) if first != last => format!("{path}:{first}-{last}"),
        (Some(first), _) => format!("{path}:{first}"),
        _ => path.to_string(),
    })
}

/// The subagent's events, nested under its call in the request's front
/// end: its answer streams nowhere (it is the tool's result), and the
/// places it read are kept for the report.
struct NestedUi<'a> {
    ui: &'a mut dyn Ui,
    id: String,
    read: Vec<String>,
}

impl Ui for NestedUi<'_> {
    fn intent(&mut self, _intent: &Intent, _tools: ToolAccess) {}
    fn step_start(&mut self, step: usize) {
        self.ui.nested(&self.id, Nested::Step(step));
    }
    fn answer_text(&mut self, _text: &str) {}
    fn generating(&mut self, step: usize, tokens: usize) {
        self.ui.generating(step, tokens);
    }
    fn prefilling(&mut self, step: usize, done: usize, total: usize) {
        self.ui.prefilling(step, done, total);
    }
    fn step_end(&mut self) {}
    fn tool_call(&mut self, call: &ToolCall) {
        self.ui.nested(&self.id, Nested::ToolCall(call));
    }
    fn tool_result(&mut self, call: &ToolCall, output: &ToolOutput) {
        self.read.extend(place_read(call, output));
        self.ui.nested(&self.id, Nested::ToolResult(call, output));
    }
    fn notice(&mut self, text: &str) {
        self.ui.nested(&self.id, Nested::Notice(text));
    }
    fn compacted(&mut self, _compaction: &Compaction) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(finish: &'static str) -> Ended {
        Ended {
            steps: 3,
            tool_calls: 2,
            tokens: 1200,
            finish,
        }
    }

    #[test]
    fn the_report_keeps_its_bound_and_names_the_places_read() {
        let answer = (1..=30)
            .map(|i| format!("src/a.rs:{i} item {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let read = vec!["src/a.rs:1-40".to_string(), "src/a.rs:1-40".to_string()];
        let text = report(&answer, &ended("answered"), &read, 10);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 10, "{text}");
        assert_eq!(lines[0], "src/a.rs:1 item 1");
        assert!(lines[8].starts_with("… (22 more lines cut)"), "{text}");
        assert_eq!(lines[9], "Read: src/a.rs:1-40");
    }

    #[test]
    fn a_run_without_a_report_says_why_and_what_it_read() {
        let text = report("", &ended("step_budget"), &["calc.py:1-3".into()], 15);
        assert!(text.starts_with("(explore gave no report of its own: explored in 3 step(s)"));
        assert!(text.contains("step budget ran out"), "{text}");
        assert!(text.ends_with("Read: calc.py:1-3"), "{text}");
    }

    #[test]
    fn a_read_names_its_first_and_last_line() {
        let call = ToolCall {
            thought: String::new(),
            tool: "read_file".into(),
            args: json!({"path": "calc.py"}),
        };
        let out =
            ToolOutput::ok("1| def add(a, b):\n2|     \"\"\"Sum.\"\"\"\n3|     return a + b\n");
        assert_eq!(place_read(&call, &out).as_deref(), Some("calc.py:1-3"));
        let failed = ToolOutput::error(ErrorClass::NotFound, "no such file");
        assert_eq!(place_read(&call, &failed), None);
    }
}
