//! Compaction by summary: when a conversation would pass `compact_at` of
//! the context window (75% by default, `.agent/config.toml`), the model
//! writes a structured summary of the work so far (goal, decisions, files
//! touched and why, open questions, next step) under a grammar, and every
//! turn after the system prompt but the last few is replaced by it.
//!
//! - The summary is a turn of its own ([`Kind::Summary`], a user message),
//!   stored in the session ([`agent_store::session::SessionStore::append_summary`]),
//!   so `--resume` continues from it.
//! - The kept turns start with a model turn, so user and assistant still
//!   alternate; when the request being worked on is among the replaced
//!   turns, the summary carries it verbatim. The session's context (see
//!   [`crate::prompt`]), which opened the first request, opens the summary.
//! - The prompt changes once: the KV cache is rebuilt for the step after a
//!   compaction and reused from there, where pruning ([`crate::context`])
//!   changes the prompt's middle, and so its cache, at every step it has to
//!   cut more.
//! - A summary that is no summary (empty, the request or our own prompt
//!   copied back, nothing about the conversation: [`crate::answer::Judge`]),
//!   or none at all, changes nothing: pruning goes on as before, the user is
//!   told, and automatic compaction waits until the conversation has grown
//!   by a quarter of the window (`/compact` tries at once).
//! - The summary request fits the window whatever the history: a history
//!   too long for one request is summarised in pieces, each a transcript
//!   that fits, and the pieces' summaries merged ([`Summary::merge`]).
//! - What a compaction did ([`Compaction`]) is reported through
//!   [`agent_protocol::Ui`] and in the request's outcome.

use serde::{Deserialize, Serialize};
use serde_json::json;

use agent_base::cancel::CancelToken;
use agent_llm::{CompletionRequest, Event, Flow, Grammar, Message, Role};

use crate::context::{fit, Counter, Kind, Turn};
use crate::run::Run;
use crate::{prompt, request_text, truncate, Agent};
use agent_protocol::Ui;

pub(crate) use agent_protocol::event::{Compaction, Trigger};

/// What the model is asked, after the turns it summarizes.
pub const PROMPT: &str = "The conversation is about to outgrow the context window, so the turns \
above will be replaced by your summary of them. Write that summary for yourself, so that you can \
continue the work from it alone: the user's goal, the decisions made, the files touched and why, \
the open questions, and the next step. Name files, functions and values; do not call a tool. \
Reply with one JSON object: {\"goal\": \"...\", \"decisions\": [\"...\"], \"files\": [{\"path\": \
\"...\", \"why\": \"...\"}], \"open_questions\": [\"...\"], \"next_step\": \"...\"}";

/// The first line of a summary turn: what it is, for the model and for
/// whoever reads the session.
pub(crate) const HEADING: &str =
    "[Summary of the conversation so far; it replaced the earlier turns to fit the context window]";

/// What introduces the request carried in a summary.
pub(crate) const VERBATIM: &str = "The request being worked on (verbatim):\n";

/// Most turns kept verbatim after the summary.
const KEEP_TURNS: usize = 6;
/// Longest string of the summary, in characters (the grammar's bound).
const MAX_FIELD_CHARS: usize = 240;

/// Words that say a file was changed: a summary may use them only of
/// changes the session's tools made.
const CHANGE_CLAIMS: &[&str] = &[
    "changed",
    "updated",
    "modified",
    "fixed",
    "added",
    "created",
    "edited",
    "renamed",
    "removed",
    "deleted",
    "refactored",
    "implemented",
    "wrote",
    "rewrote",
    "replaced",
    "moved",
    "patched",
];

/// The model's summary of the turns it replaces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct Summary {
    pub goal: String,
    pub decisions: Vec<String>,
    pub files: Vec<FileNote>,
    pub open_questions: Vec<String>,
    pub next_step: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct FileNote {
    pub path: String,
    pub why: String,
}

/// The grammar a summary is generated under: [`Summary`] as compact JSON,
/// fields in order, strings and lists bounded so a small model cannot ramble
/// past its token budget.
pub(crate) fn grammar() -> Grammar {
    Grammar::new(format!(
        r#"root ::= "{{" ws "\"goal\"" ws ":" ws str ws "," ws "\"decisions\"" ws ":" ws strs ws "," ws "\"files\"" ws ":" ws files ws "," ws "\"open_questions\"" ws ":" ws strs ws "," ws "\"next_step\"" ws ":" ws str ws "}}"
strs ::= "[" ws (str (ws "," ws str){{0,5}})? ws "]"
files ::= "[" ws (file (ws "," ws file){{0,7}})? ws "]"
file ::= "{{" ws "\"path\"" ws ":" ws str ws "," ws "\"why\"" ws ":" ws str ws "}}"
str ::= "\"" char{{0,{MAX_FIELD_CHARS}}} "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
ws ::= " "?
"#
    ))
}

/// Reads a summary out of a reply: the whole text as JSON, else the
/// outermost `{...}` (a model without a grammar may wrap it in prose).
pub(crate) fn parse(text: &str) -> Option<Summary> {
    let text = text.trim();
    serde_json::from_str(text).ok().or_else(|| {
        let (start, end) = (text.find('{')?, text.rfind('}')?);
        serde_json::from_str(text.get(start..=end)?).ok()
    })
}

impl Summary {
    /// A summary made from `turns[range]` themselves, for when the model's
    /// is none: the latest request as the goal, the answers given as the
    /// decisions, the files the calls named.
    pub(crate) fn extract(turns: &[Turn], range: std::ops::Range<usize>) -> Summary {
        let clip = |text: &str| truncate(text.trim(), MAX_FIELD_CHARS - 4).to_string();
        let mut record = Summary {
            next_step: "continue with the latest request".into(),
            ..Summary::default()
        };
        for i in range {
            let content = &turns[i].message.content;
            match turns[i].kind {
                Kind::Request => {
                    let words = crate::attach::after_blocks(request_text(i, content));
                    record.goal = clip(&format!("the user asked: {words}"));
                }
                Kind::Call => {
                    let Ok(call) = crate::protocol::parse_call(content) else {
                        continue;
                    };
                    if call.tool == crate::protocol::FINISH {
                        if let Some(answer) = call.args["answer"].as_str() {
                            record.decisions.push(clip(&format!("answered: {answer}")));
                        }
                    } else if let Some(path) = call.args["path"].as_str() {
                        record.files.push(FileNote {
                            path: clip(path),
                            why: format!("{} was called on it", call.tool),
                        });
                    }
                }
                _ => {}
            }
        }
        Summary::merge(vec![record])
    }

    /// One summary of the pieces' summaries, oldest first: the latest goal
    /// and next step, the lists joined (a repeated item once, the latest
    /// kept when there are too many).
    pub(crate) fn merge(pieces: Vec<Summary>) -> Summary {
        fn join(lists: impl Iterator<Item = String>, most: usize) -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for item in lists {
                out.retain(|seen| seen != &item);
                out.push(item);
            }
            let extra = out.len().saturating_sub(most);
            out.split_off(extra)
        }
        let last = |f: fn(&Summary) -> &String| {
            pieces
                .iter()
                .rev()
                .map(f)
                .find(|s| !s.trim().is_empty())
                .cloned()
                .unwrap_or_default()
        };
        let mut files: Vec<FileNote> = Vec::new();
        for note in pieces.iter().flat_map(|p| p.files.iter().cloned()) {
            files.retain(|seen| seen.path != note.path);
            files.push(note);
        }
        let extra = files.len().saturating_sub(8);
        Summary {
            goal: last(|s| &s.goal),
            decisions: join(pieces.iter().flat_map(|p| p.decisions.clone()), 6),
            files: files.split_off(extra),
            open_questions: join(pieces.iter().flat_map(|p| p.open_questions.clone()), 6),
            next_step: last(|s| &s.next_step),
        }
    }

    /// The summary turn: a heading, the fields that say something, and the
    /// request being worked on when its own turn was replaced.
    pub(crate) fn render(&self, request: Option<&str>) -> String {
        let mut out = format!("{HEADING}\nGoal: {}\n", self.goal.trim());
        let list = |out: &mut String, title: &str, items: &[String]| {
            let items: Vec<&str> = items
                .iter()
                .map(|i| i.trim())
                .filter(|i| !i.is_empty())
                .collect();
            if !items.is_empty() {
                out.push_str(&format!("{title}:\n"));
                for item in items {
                    out.push_str(&format!("- {item}\n"));
                }
            }
        };
        list(&mut out, "Decisions", &self.decisions);
        let files: Vec<String> = self
            .files
            .iter()
            .filter(|f| !f.path.trim().is_empty())
            .map(|f| match f.why.trim() {
                "" => f.path.trim().to_string(),
                why => format!("{}: {why}", f.path.trim()),
            })
            .collect();
        list(&mut out, "Files touched", &files);
        list(&mut out, "Open questions", &self.open_questions);
        if !self.next_step.trim().is_empty() {
            out.push_str(&format!("Next step: {}\n", self.next_step.trim()));
        }
        if let Some(request) = request {
            out.push_str(&format!("{VERBATIM}{}\n", request.trim()));
        }
        out
    }

    /// Why this summary would make the conversation worse, if it would:
    /// longer than the turns it replaces (`rendered` against `replaced`
    /// tokens), saying one thing twice, or claiming a change to a file that
    /// no tool of the session (`changed`) made. A small model does all three
    /// (found on pytest: "5115 → 5187 tokens", one sentence repeated, work
    /// that was never done).
    pub(crate) fn fault(
        &self,
        rendered: usize,
        replaced: usize,
        changed: &[String],
    ) -> Option<String> {
        if rendered >= replaced {
            return Some(format!(
                "is no shorter than the turns it would replace ({rendered} tokens against {replaced})"
            ));
        }
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        for sentence in self.words().split(['.', '\n', ';', '!', '?']) {
            let words: Vec<String> = sentence
                .split_whitespace()
                .map(|w| w.to_lowercase())
                .collect();
            if words.len() >= 3 && !seen.insert(words.join(" ")) {
                return Some(format!(
                    "repeats itself (\"{}\")",
                    truncate(sentence.trim(), 80)
                ));
            }
        }
        let claims = |text: &str| {
            text.split(|c: char| !c.is_alphanumeric())
                .find(|w| CHANGE_CLAIMS.contains(&w.to_lowercase().as_str()))
                .map(str::to_string)
        };
        for file in &self.files {
            let path = file.path.trim().trim_start_matches("./");
            let touched = changed
                .iter()
                .any(|c| c == path || c.ends_with(&format!("/{path}")));
            if let (Some(word), false) = (claims(&file.why), touched) {
                return Some(format!(
                    "claims {path} was {word}, but no tool changed it in this session"
                ));
            }
        }
        if changed.is_empty() {
            let done = self
                .decisions
                .iter()
                .chain([&self.goal, &self.next_step])
                .find_map(|d| {
                    let mut words = d.split_whitespace().map(|w| w.to_lowercase());
                    let first = words.next()?;
                    let verb = if matches!(first.as_str(), "i" | "we") {
                        words.next()?
                    } else {
                        first
                    };
                    CHANGE_CLAIMS.contains(&verb.as_str()).then_some(verb)
                });
            if let Some(verb) = done {
                return Some(format!(
                    "claims work was done (\"{verb}\"), but no tool changed a file in this session"
                ));
            }
        }
        None
    }

    /// Everything the model wrote, for the judge.
    fn words(&self) -> String {
        let mut parts = vec![self.goal.clone()];
        parts.extend(self.decisions.iter().cloned());
        for f in &self.files {
            parts.push(f.path.clone());
            parts.push(f.why.clone());
        }
        parts.extend(self.open_questions.iter().cloned());
        parts.push(self.next_step.clone());
        parts.join("\n")
    }
}

/// Where the turns kept verbatim begin: the earliest model turn from which
/// the rest takes at most `keep_budget` tokens and [`KEEP_TURNS`] turns (the
/// last model turn and what follows it in any case). None when there is no
/// such turn or nothing before it to summarize (no model turn since the
/// system prompt, or only an earlier summary).
pub(crate) fn split(
    turns: &[Turn],
    keep_budget: usize,
    tokens: &dyn Fn(&Turn) -> usize,
) -> Option<usize> {
    if turns.first().map(|t| t.kind) != Some(Kind::System) {
        return None;
    }
    let mut best = None;
    let mut kept = 0;
    for k in (2..turns.len()).rev() {
        kept += tokens(&turns[k]);
        if turns[k].message.role != Role::Assistant {
            continue;
        }
        if best.is_some() && (kept > keep_budget || turns.len() - k > KEEP_TURNS) {
            break;
        }
        best = Some(k);
    }
    let k = best?;
    turns[1..k]
        .iter()
        .any(|t| t.message.role == Role::Assistant)
        .then_some(k)
}

impl Agent {
    /// Compacts before a step when the conversation has passed the
    /// threshold; a request's turns are renumbered to match.
    pub(crate) fn maybe_compact(
        &mut self,
        run: &mut Run,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> anyhow::Result<()> {
        // An exploration's context is fitted, never summarised: it is short-lived.
        if self.compact_at <= 0.0 || self.subagent.is_some() {
            return Ok(());
        }
        let window = self.provider.context_size();
        // Before pruning would start: a summary beats a cut.
        let threshold =
            ((self.compact_at as f64 * window as f64) as usize).min(self.prompt_budget());
        let used = self.conversation_tokens(&self.turns);
        // After a failed summary, the next try waits for a quarter window more.
        if used <= threshold || self.auto_compact_after.is_some_and(|after| used <= after) {
            return Ok(());
        }
        let Some((compaction, k)) = self.compact_turns(Trigger::Auto, None, ui, cancel)? else {
            return Ok(());
        };
        if compaction.compacted {
            // The kept turns moved to just after the summary; a request
            // turn that was replaced is represented by the summary.
            run.request_turn = if run.request_turn >= k {
                run.request_turn - k + 2
            } else {
                1
            };
            self.auto_compact_after = None;
        } else {
            self.auto_compact_after = Some(used.min(threshold) + window / 4);
        }
        run.outcome.compactions.push(compaction);
        Ok(())
    }

    /// `/compact [focus]`: a summary now, whatever the size.
    pub fn compact(
        &mut self,
        focus: Option<&str>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> anyhow::Result<Compaction> {
        self.log.new_trace();
        let (used, _) = self.context_usage();
        match self.compact_turns(Trigger::Request, focus, ui, cancel)? {
            Some((compaction, _)) => Ok(compaction),
            None => {
                let why = format!(
                    "nothing to compact yet: the conversation has {} turns and takes {used} tokens",
                    self.turns.len()
                );
                let nothing = Compaction {
                    trigger: Trigger::Request,
                    compacted: false,
                    summary: None,
                    fallback: Some(why),
                    replaced_turns: 0,
                    kept_turns: self.turns.len().saturating_sub(1),
                    tokens_before: used,
                    tokens_after: used,
                };
                ui.compacted(&nothing);
                Ok(nothing)
            }
        }
    }

    /// Tokens `turns` take as sent, every tool included.
    fn conversation_tokens(&self, turns: &[Turn]) -> usize {
        let messages: Vec<Message> = turns.iter().map(|t| t.message.clone()).collect();
        self.prompt_tokens(&messages, &self.sent_tools(&self.toolbox.specs()))
    }

    /// Asks the model for a summary of all but the last turns and, when the
    /// judge accepts it, puts it in their place. None when there is nothing
    /// to summarize; the index where the kept turns began otherwise.
    fn compact_turns(
        &mut self,
        trigger: Trigger,
        focus: Option<&str>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> anyhow::Result<Option<(Compaction, usize)>> {
        let window = self.provider.context_size();
        let provider = &self.provider;
        let tokens = |t: &Turn| {
            provider
                .count_message_tokens(std::slice::from_ref(&t.message))
                .unwrap_or(t.message.content.len() / 3 + 4)
        };
        // On request, as much as can go: only the last model turn stays.
        let keep_budget = match trigger {
            Trigger::Auto => window / 4,
            Trigger::Request => 0,
        };
        let Some(k) = split(&self.turns, keep_budget, &tokens) else {
            return Ok(None);
        };
        let summarized: usize = self.turns[1..k].iter().map(&tokens).sum();
        if trigger == Trigger::Auto && summarized < window / 5 {
            // Too little to be worth a summary: pruning does.
            return Ok(None);
        }
        let tokens_before = self.conversation_tokens(&self.turns);
        let n = self.turns.len();
        let mut compaction = Compaction {
            trigger,
            compacted: false,
            summary: None,
            fallback: None,
            replaced_turns: k - 1,
            kept_turns: n - k,
            tokens_before,
            tokens_after: tokens_before,
        };
        ui.working(&format!(
            "compacting: {} of {n} turns ({summarized} tokens) into a summary…",
            k - 1
        ));
        let mut summary = self.summarize(k, summarized, focus, ui, cancel)?;
        if let Err(why) = &summary {
            // The model's is no summary: one from the turns' own record (the
            // requests, the answers, the files the calls touched) replaces
            // them instead, when it is shorter; a stop (Esc, Ctrl-C) stops here too.
            let record = Summary::extract(&self.turns, 1..k);
            let rendered = self.summary_tokens(&record);
            let stopped = cancel.is_cancelled();
            if !stopped
                && record
                    .fault(rendered, summarized, &self.session_changed)
                    .is_none()
            {
                compaction.fallback = Some(format!(
                    "{why}; the summary was made from the turns' own record instead"
                ));
                summary = Ok(record);
            }
        }
        match summary {
            Err(why) => {
                let instead = match trigger {
                    Trigger::Auto => "old turns are pruned to fit instead; automatic compaction tries again when the conversation has grown by a quarter of the window (/compact tries now)",
                    Trigger::Request => "the conversation is unchanged",
                };
                compaction.fallback = Some(format!("{why}; {instead}"));
            }
            Ok(summary) => {
                let request = self.request_in_flight(k);
                let text = self.policy.redact(&summary.render(request.as_deref()));
                // The session's context stays at the head of the first user
                // message: the prompt's prefix, and its KV cache, hold.
                let turn = Turn::new(
                    Kind::Summary,
                    match self.session_context() {
                        Some(context) => prompt::with_context(context, &text),
                        None => text.clone(),
                    },
                );
                if !self.log.session_id.is_empty() {
                    self.sessions
                        .append_summary(&self.log.session_id, &turn, n - k)?;
                }
                let kept = self.turns.split_off(k);
                self.turns.truncate(1);
                self.turns.push(turn);
                self.turns.extend(kept);
                compaction.compacted = true;
                compaction.summary = Some(text);
                compaction.tokens_after = self.conversation_tokens(&self.turns);
            }
        }
        self.log.audit(
            "compact",
            json!({"trigger": compaction.trigger, "compacted": compaction.compacted,
                   "fallback": compaction.fallback, "replaced_turns": compaction.replaced_turns,
                   "kept_turns": compaction.kept_turns, "tokens_before": compaction.tokens_before,
                   "tokens_after": compaction.tokens_after,
                   "summary": compaction.summary.as_deref().map(|s| truncate(s, 4000))}),
        );
        ui.compacted(&compaction);
        Ok(Some((compaction, k)))
    }

    /// The request still being worked on when `turns[1..k]` are replaced:
    /// the latest one there (or carried by an earlier summary there) when no
    /// newer one is kept.
    fn request_in_flight(&self, k: usize) -> Option<String> {
        if self.turns[k..].iter().any(|t| t.kind == Kind::Request) {
            return None;
        }
        match (1..k).rev().find(|&i| self.turns[i].kind == Kind::Request) {
            Some(i) => Some(request_text(i, &self.turns[i].message.content).to_string()),
            None => self.turns[1..k]
                .iter()
                .filter(|t| t.kind == Kind::Summary)
                .find_map(|t| t.message.content.split_once(VERBATIM))
                .map(|(_, request)| request.trim().to_string()),
        }
    }

    /// The model's summary of `turns[1..k]`, or why there is none: one
    /// request when they fit the window, else one per piece that does,
    /// merged ([`Summary::merge`]).
    fn summarize(
        &mut self,
        k: usize,
        replaced_tokens: usize,
        focus: Option<&str>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> anyhow::Result<Result<Summary, String>> {
        let window = self.provider.context_size();
        let max_tokens = (window / 16).clamp(128, 1024);
        let limit = window.saturating_sub(max_tokens);
        let mut ask = format!("\n\n{PROMPT}");
        if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
            ask.push_str(&format!("\nFocus the summary on: {focus}"));
        }
        let mut turns: Vec<Message> = self.turns[..k].iter().map(|t| t.message.clone()).collect();
        // The last replaced turn is the user's: the question joins it, so
        // the roles still alternate and the cached prefix holds.
        turns[k - 1].content.push_str(&ask);
        let requests = if self.prompt_tokens(&turns, &[]) <= limit {
            vec![turns]
        } else {
            self.pieces(k, &ask, limit)
        };
        let mut summaries = Vec::new();
        for (i, messages) in requests.into_iter().enumerate() {
            match self.ask_summary(messages, max_tokens, i, ui, cancel) {
                Ok(summary) => summaries.push(summary),
                Err(why) => return Ok(Err(why)),
            }
        }
        let summary = Summary::merge(summaries);
        if summary.goal.trim().is_empty() {
            return Ok(Err("the model's summary has no goal".into()));
        }
        let rendered = self.summary_tokens(&summary);
        if let Some(fault) = summary.fault(rendered, replaced_tokens, &self.session_changed) {
            return Ok(Err(format!("the model's summary {fault}")));
        }
        let request = self
            .turns
            .iter()
            .rposition(|t| t.kind == Kind::Request)
            .map(|i| request_text(i, &self.turns[i].message.content).to_string())
            .unwrap_or_default();
        let evidence: String = self.turns[1..k]
            .iter()
            .map(|t| t.message.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(fault) = self
            .judge
            .check(&summary.words(), &request, Some(&evidence))
        {
            return Ok(Err(format!("the model's summary {}", fault.reason())));
        }
        Ok(Ok(summary))
    }

    /// Tokens `summary` takes as the turn it becomes (what its check
    /// weighs against the turns it replaces).
    fn summary_tokens(&self, summary: &Summary) -> usize {
        let text = summary.render(None);
        self.provider
            .count_message_tokens(&[Message::user(text.as_str())])
            .unwrap_or_else(|_| text.len() / 3 + 4)
    }

    /// `turns[1..k]` as transcripts that each fit `limit` with the system
    /// prompt and `ask`: one summary request per piece. A turn larger than
    /// a piece is cut to an excerpt.
    fn pieces(&self, k: usize, ask: &str, limit: usize) -> Vec<Vec<Message>> {
        let system = self.turns[0].message.clone();
        let frame = |transcript: &str| {
            vec![
                system.clone(),
                Message::user(format!(
                    "The conversation so far, in part:\n\n{transcript}{ask}"
                )),
            ]
        };
        let room = limit.saturating_sub(self.prompt_tokens(&frame(""), &[]) + 32);
        let text = |t: &str| self.text_tokens(t);
        let hints = crate::budget::hints(&self.latest_request());
        let mut pieces: Vec<String> = vec![String::new()];
        let mut used = 0;
        for turn in &self.turns[1..k] {
            let who = if turn.message.role == Role::Assistant {
                "assistant"
            } else {
                "user"
            };
            let mut entry = format!("[{who}]\n{}\n\n", turn.message.content.trim());
            if turn.kind == Kind::Request {
                // Its attached files are cut first, the user's words never.
                let prompt = |m: &[Message]| m.iter().map(|m| text(&m.content)).sum::<usize>();
                let counter = Counter {
                    prompt: &prompt,
                    text: &text,
                };
                let (fitted, _) = fit(
                    &[Turn::new(Kind::Request, entry)],
                    room / 2,
                    &counter,
                    &hints,
                );
                entry = fitted[0].message.content.clone();
            }
            if let Some(cut) = crate::budget::excerpt(who, &entry, room, &hints, &text) {
                entry = format!("{}\n\n", cut.text);
            }
            let tokens = text(&entry);
            if used + tokens > room && used > 0 {
                pieces.push(String::new());
                used = 0;
            }
            used += tokens;
            match pieces.last_mut() {
                Some(piece) => piece.push_str(&entry),
                None => pieces.push(entry),
            }
        }
        pieces.iter().map(|p| frame(p)).collect()
    }

    /// One summary request's answer, or why there is none. Its prefill and
    /// its tokens are reported as a step's are (step 0: a summary is no step
    /// of the loop), so minutes of it do not look like a hang.
    fn ask_summary(
        &mut self,
        messages: Vec<Message>,
        max_tokens: usize,
        piece: usize,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Result<Summary, String> {
        let request = CompletionRequest {
            messages,
            max_tokens,
            // A small model's summary repeats one item until the budget is
            // spent; a repeat penalty keeps it moving.
            sampling: agent_llm::Sampling {
                repeat_penalty: self
                    .config
                    .sampling
                    .repeat_penalty
                    .max(crate::plain::REPEAT_PENALTY),
                ..self.config.sampling
            },
            grammar: self.provider.supports_grammar().then(grammar),
            interrupt: Some(cancel.clone()),
            ..CompletionRequest::default()
        };
        self.log.trace(
            "compact_request",
            json!({"messages": request.messages.len(), "piece": piece,
                   "grammar": request.grammar.is_some(), "max_tokens": max_tokens}),
        );
        let mut last_progress = std::time::Instant::now();
        let completion = self
            .provider
            .complete(&request, &mut |event| {
                match event {
                    Event::Prefill { done, total } => ui.prefilling(0, done, total),
                    Event::Generated(tokens)
                        if last_progress.elapsed() >= agent_protocol::event::PROGRESS_EVERY =>
                    {
                        last_progress = std::time::Instant::now();
                        ui.generating(0, tokens);
                    }
                    _ => {}
                }
                // Checked at every token and batch, whatever the provider
                // does with `interrupt`: Esc stops the summary at once.
                if cancel.is_cancelled() {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            })
            .map_err(|e| format!("the model could not write a summary ({e})"))?;
        self.log.trace(
            "compact_response",
            json!({"text": completion.text, "finish": completion.finish, "piece": piece,
                   "prompt_tokens": completion.prompt_tokens, "reused_tokens": completion.reused_tokens,
                   "completion_tokens": completion.completion_tokens,
                   "prefill_ms": completion.prefill_ms, "decode_ms": completion.decode_ms}),
        );
        if cancel.is_cancelled() {
            return Err(format!("stopped by {}", cancel.stopped_by()));
        }
        parse(&completion.text).ok_or_else(|| {
            format!(
                "the model's summary was not the JSON asked for ({})",
                truncate(completion.text.trim(), 120)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(t: &Turn) -> usize {
        t.message.content.len()
    }

    fn turns(kinds: &[(Kind, usize)]) -> Vec<Turn> {
        kinds
            .iter()
            .map(|(k, len)| Turn::new(*k, "x".repeat(*len)))
            .collect()
    }

    #[test]
    fn the_kept_turns_start_with_a_model_turn_within_the_budget() {
        use Kind::*;
        let t = turns(&[
            (System, 10),
            (Request, 10),
            (Call, 10),
            (Observation, 500),
            (Call, 10),
            (Observation, 100),
            (Call, 10),
            (Observation, 100),
        ]);
        assert_eq!(split(&t, 250, &chars), Some(4));
        // The last call and its output are kept whatever their size.
        assert_eq!(split(&t, 10, &chars), Some(6));
        // Nothing but the request before the only call: nothing to summarize.
        assert_eq!(split(&t[..4], 10_000, &chars), None);
        // An earlier summary alone is not worth another.
        let again = turns(&[(System, 1), (Summary, 1), (Call, 1), (Observation, 1)]);
        assert_eq!(split(&again, 10_000, &chars), None);
        // At most KEEP_TURNS turns stay.
        let long: Vec<Turn> = std::iter::once(Turn::new(System, "s"))
            .chain(std::iter::once(Turn::new(Request, "r")))
            .chain((0..10).flat_map(|_| [Turn::new(Call, "c"), Turn::new(Observation, "o")]))
            .collect();
        assert_eq!(
            long.len() - split(&long, 10_000, &chars).unwrap(),
            KEEP_TURNS
        );
    }

    #[test]
    fn summaries_parse_render_and_carry_the_request() {
        let text = r#"Here: {"goal": "Fix add in calc.py", "decisions": ["keep the API"], "files": [{"path": "calc.py", "why": "the bug"}], "open_questions": [], "next_step": "run the tests"}"#;
        let s = parse(text).unwrap();
        assert_eq!(s.files[0].path, "calc.py");
        let shown = s.render(Some("Fix the add function"));
        assert!(shown.starts_with(HEADING), "{shown}");
        for part in [
            "Goal: Fix add in calc.py",
            "- keep the API",
            "- calc.py: the bug",
            "Next step: run the tests",
            "(verbatim):\nFix the add function",
        ] {
            assert!(shown.contains(part), "{part}: {shown}");
        }
        assert!(!shown.contains("Open questions"), "{shown}");
        assert_eq!(parse("no json"), None);
        assert_eq!(parse("{}").unwrap(), Summary::default());
    }

    #[test]
    fn a_record_summary_names_the_request_the_answers_and_the_files() {
        let turns = vec![
            Turn::new(Kind::System, "S"),
            Turn::new(Kind::Request, "Where is add defined?"),
            Turn::new(
                Kind::Call,
                r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            ),
            Turn::new(Kind::Observation, "[read_file ok]\ndef add(a, b): ..."),
            Turn::new(
                Kind::Call,
                r#"{"thought": "t", "tool": "finish", "args": {"answer": "In calc.py."}}"#,
            ),
            Turn::new(Kind::Request, "And sub?"),
        ];
        let record = Summary::extract(&turns, 1..6);
        assert_eq!(record.goal, "the user asked: And sub?");
        assert_eq!(record.decisions, vec!["answered: In calc.py."]);
        assert_eq!(record.files[0].path, "calc.py");
        assert!(record.render(None).starts_with(HEADING));
    }

    #[test]
    fn pieces_merge_into_one_summary_latest_first_repeats_once() {
        let a = Summary {
            goal: "first".into(),
            decisions: vec!["x".into(), "y".into()],
            files: vec![FileNote {
                path: "a.py".into(),
                why: "old".into(),
            }],
            ..Summary::default()
        };
        let b = Summary {
            goal: "second".into(),
            decisions: vec!["x".into()],
            files: vec![FileNote {
                path: "a.py".into(),
                why: "new".into(),
            }],
            next_step: "go".into(),
            ..Summary::default()
        };
        let merged = Summary::merge(vec![a, b]);
        assert_eq!(merged.goal, "second");
        assert_eq!(merged.decisions, vec!["y", "x"]);
        assert_eq!(merged.files.len(), 1);
        assert_eq!(merged.files[0].why, "new");
        assert_eq!(merged.next_step, "go");
    }

    #[test]
    fn a_summary_that_makes_things_worse_has_a_fault() {
        let summary = |goal: &str, decisions: &[&str], files: &[(&str, &str)]| Summary {
            goal: goal.into(),
            decisions: decisions.iter().map(|d| d.to_string()).collect(),
            files: files
                .iter()
                .map(|(path, why)| FileNote {
                    path: path.to_string(),
                    why: why.to_string(),
                })
                .collect(),
            ..Summary::default()
        };
        let good = summary(
            "Find where the cache provider stores failures",
            &["read cacheprovider.py"],
            &[("src/_pytest/cacheprovider.py", "defines LFPlugin")],
        );
        assert_eq!(good.fault(40, 900, &[]), None);
        // Found on pytest: /compact printed "5115 → 5187 tokens".
        let fault = good.fault(950, 900, &[]).unwrap();
        assert!(
            fault.contains("no shorter") && fault.contains("950"),
            "{fault}"
        );
        let repeated = summary(
            "The user wants the tests to pass. The user wants the tests to pass.",
            &[],
            &[],
        );
        assert!(repeated
            .fault(40, 900, &[])
            .unwrap()
            .contains("repeats itself"));
        // Work claimed that no tool did.
        let claimed = summary(
            "Fix the flaky test",
            &["I fixed the flaky test in test_cache.py"],
            &[],
        );
        let fault = claimed.fault(40, 900, &[]).unwrap();
        assert!(fault.contains("claims work was done"), "{fault}");
        assert_eq!(
            claimed.fault(40, 900, &["testing/test_cache.py".into()]),
            None
        );
        let file = summary("Fix it", &[], &[("src/app.py", "updated the handler")]);
        assert!(file
            .fault(40, 900, &[])
            .unwrap()
            .contains("claims src/app.py was updated"));
        assert_eq!(file.fault(40, 900, &["pkg/src/app.py".into()]), None);
    }

    #[test]
    fn the_grammar_names_every_field_in_order() {
        let g = grammar().gbnf;
        let at = |f: &str| g.find(&format!("\\\"{f}\\\"")).unwrap();
        assert!(at("goal") < at("decisions") && at("decisions") < at("files"));
        assert!(at("open_questions") < at("next_step"));
        assert!(g.contains("char{0,240}"), "{g}");
    }
}
