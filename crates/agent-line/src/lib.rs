//! The line mode: the terminal front end of `agent ask` and of `agent chat`
//! without the full-screen UI (a pipe, `--no-tui`), beside `agent-tui`.
//! Streamed answers, tool calls as they happen, coloured diffs, and the
//! confirmation prompt ([`TerminalUi`], [`TerminalApprover`]); one JSON
//! object per event for scripts ([`JsonLinesUi`]).
//!
//! The answer streams to stdout; everything else (intent, tool calls, diffs,
//! notices) goes to stderr, so `agent ask ... > answer.txt` keeps only the answer.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, IsTerminal, Write};

use agent_base::term::{
    cut, escape_controls, escape_line, spinner, timed_spinner, untrusted, untrusted_text,
};
use agent_protocol::diff::colored;
use agent_protocol::event::{access_note, compaction_line, plan_title, summarize_args};
use agent_protocol::proposal::{editor_command, run_editor, Edits};
use agent_protocol::{
    plan, subagent, Approval, Approver, Compaction, Decision, Intent, Nested, ToolAccess, ToolCall,
    ToolOutput, Ui, FINISH,
};
use console::style;

/// `--output-format stream-json`: one JSON object per line on stdout, as it
/// happens (`intent`, `step`, `text`, `progress`, `tool_call`, `tool_result`,
/// `plan`, `notice`, `compact`;
/// the caller prints `final`), for CI jobs and editors. An exploration's
/// events come between its `explore` call and that call's result: `explore`
/// (its `id` and question), its own `step`, `tool_call`, `tool_result` and
/// `notice` events carrying `parent` (that id), and `explore_end`.
pub struct JsonLinesUi<W: std::io::Write> {
    out: W,
}

impl<W: std::io::Write> JsonLinesUi<W> {
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// Writes one event; a closed stdout is not worth failing the request for.
    pub fn event(&mut self, kind: &str, mut fields: serde_json::Value) {
        if let Some(map) = fields.as_object_mut() {
            map.insert("type".into(), kind.into());
        }
        let _ = writeln!(self.out, "{fields}");
        let _ = self.out.flush();
    }
}

impl<W: std::io::Write> Ui for JsonLinesUi<W> {
    fn intent(&mut self, intent: &Intent, tools: ToolAccess) {
        self.event(
            "intent",
            serde_json::json!({"label": intent.label, "confidence": intent.confidence, "reason": intent.reason, "tools": tools}),
        );
    }
    fn step_start(&mut self, step: usize) {
        self.event("step", serde_json::json!({ "step": step }));
    }
    fn answer_text(&mut self, text: &str) {
        self.event("text", serde_json::json!({ "delta": text }));
    }
    fn reasoning_text(&mut self, text: &str) {
        self.event("reasoning", serde_json::json!({ "delta": text }));
    }
    fn generating(&mut self, step: usize, tokens: usize) {
        self.event(
            "progress",
            serde_json::json!({ "step": step, "tokens": tokens }),
        );
    }
    fn step_end(&mut self) {}
    fn tool_call(&mut self, call: &ToolCall) {
        self.event("tool_call", call_fields(call));
    }
    fn tool_result(&mut self, call: &ToolCall, output: &ToolOutput) {
        self.event("tool_result", result_fields(call, output));
    }
    fn nested(&mut self, id: &str, event: Nested<'_>) {
        let (kind, mut fields) = match event {
            Nested::Start { question } => {
                let fields = serde_json::json!({"id": id, "question": question});
                return self.event("explore", fields);
            }
            Nested::End(ended) => {
                let mut fields = serde_json::to_value(ended).unwrap_or_default();
                fields["id"] = id.into();
                return self.event("explore_end", fields);
            }
            Nested::Step(step) => ("step", serde_json::json!({ "step": step })),
            Nested::ToolCall(call) => ("tool_call", call_fields(call)),
            Nested::ToolResult(call, output) => ("tool_result", result_fields(call, output)),
            Nested::Notice(text) => ("notice", serde_json::json!({ "text": text })),
        };
        fields["parent"] = id.into();
        self.event(kind, fields);
    }
    fn notice(&mut self, text: &str) {
        self.event("notice", serde_json::json!({ "text": text }));
    }
    fn compacted(&mut self, compaction: &Compaction) {
        self.event(
            "compact",
            serde_json::to_value(compaction).unwrap_or_default(),
        );
    }
    fn plan(&mut self, items: &[plan::Item]) {
        self.event("plan", serde_json::json!({ "items": items }));
    }
}

/// A `tool_call` event's fields.
fn call_fields(call: &ToolCall) -> serde_json::Value {
    serde_json::json!({"tool": call.tool, "args": call.args, "thought": call.thought})
}

/// A `tool_result` event's fields.
fn result_fields(call: &ToolCall, output: &ToolOutput) -> serde_json::Value {
    let mut fields = serde_json::to_value(output).unwrap_or_default();
    if let Some(map) = fields.as_object_mut() {
        map.insert("tool".into(), call.tool.clone().into());
        if agent_protocol::job::changes_are_a_commands(&call.tool) {
            // What the command changed, admitted from its layer.
            map.insert("command_changes".into(), output.changed.clone().into());
        }
    }
    fields
}

/// The interactive terminal.
pub struct TerminalUi {
    spinner: Option<indicatif::ProgressBar>,
    answering: bool,
    /// Print the thoughts and full tool output too (`-v`).
    pub verbose: bool,
    /// Print the diff of each write; off when the confirmation prompt has
    /// already shown it.
    pub show_diffs: bool,
}

impl TerminalUi {
    pub fn new(verbose: bool, show_diffs: bool) -> Self {
        Self {
            spinner: None,
            answering: false,
            verbose,
            show_diffs,
        }
    }

    fn clear_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }
}

impl Ui for TerminalUi {
    fn intent(&mut self, intent: &Intent, tools: ToolAccess) {
        if let Some(note) = access_note(intent, tools) {
            // Say so: a user who asked for a change must know it cannot happen.
            eprintln!("{}", style(note).dim());
        }
        if self.verbose {
            eprintln!(
                "{}",
                style(format!(
                    "intent: {} ({:.2}; {})",
                    intent.label.as_str(),
                    intent.confidence,
                    untrusted(&intent.reason)
                ))
                .dim()
            );
        }
    }

    fn step_start(&mut self, step: usize) {
        self.answering = false;
        self.clear_spinner();
        self.spinner = Some(spinner(format!("thinking (step {step})")));
    }

    fn answer_text(&mut self, text: &str) {
        if !self.answering {
            self.clear_spinner();
            self.answering = true;
        }
        // The model's answer repeats what it read: no escape sequence of a
        // file reaches the terminal through it.
        let text = escape_controls(text);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    }

    /// Dimmed, on stderr: what the model thinks is not the answer.
    fn reasoning_text(&mut self, text: &str) {
        self.clear_spinner();
        let text = escape_controls(text);
        let mut err = std::io::stderr().lock();
        let written = if err.is_terminal() {
            write!(err, "\x1b[2m{text}\x1b[0m")
        } else {
            write!(err, "{text}")
        };
        let _ = written.and_then(|_| err.flush());
    }

    fn step_end(&mut self) {
        self.clear_spinner();
        if self.answering {
            println!();
        }
    }

    fn tool_call(&mut self, call: &ToolCall) {
        // The plan shows itself once written (`plan`).
        if call.tool == FINISH || call.tool == plan::TOOL {
            return;
        }
        if self.verbose && !call.thought.is_empty() {
            eprintln!(
                "{}",
                style(format!("  {}", untrusted_text(&call.thought))).dim()
            );
        }
        eprintln!(
            "{} {} {}",
            style("●").cyan(),
            style(escape_line(&call.tool)).bold(),
            style(escape_line(&summarize_args(&call.args))).dim()
        );
    }

    fn tool_result(&mut self, call: &ToolCall, output: &ToolOutput) {
        if call.tool == plan::TOOL {
            // A plan written shows itself (`plan`); a refused one in a line.
            if !output.ok {
                let first = escape_line(output.content.lines().next().unwrap_or_default());
                eprintln!("{} {}", style("✗").red(), cut(&first, 160));
            }
            return;
        }
        // A command's admitted changes were asked for by no prompt that
        // showed them: shown here in every mode.
        let shown = self.show_diffs || agent_protocol::job::changes_are_a_commands(&call.tool);
        if let Some(diff) = output.diff.as_ref().filter(|_| shown) {
            eprint!("{}", colored(&escape_controls(diff)));
        }
        let first = escape_line(output.content.lines().next().unwrap_or_default());
        if output.ok {
            // A one-line result says it all; longer ones say how long.
            let lines = output.content.lines().count();
            let text = match lines {
                0 | 1 => cut(&first, 100).to_string(),
                n => format!("{} ({n} lines)", cut(&first, 100)),
            };
            eprintln!("  {}", style(text).dim());
        } else {
            eprintln!("  {} {}", style("✗").red(), cut(&first, 160));
        }
        if self.verbose {
            eprintln!("{}", style(escape_controls(&output.content)).dim());
        }
    }

    fn notice(&mut self, text: &str) {
        self.clear_spinner();
        eprintln!("{}", style(escape_controls(text)).yellow());
    }

    /// An exploration's steps, indented under its call and dimmed: they
    /// are its, not the request's.
    fn nested(&mut self, _id: &str, event: Nested<'_>) {
        if let Nested::Step(step) = event {
            self.clear_spinner();
            self.spinner = Some(spinner(format!("exploring (step {step})")));
            return;
        }
        let Some(line) = subagent::line(&event) else {
            return;
        };
        self.clear_spinner();
        eprintln!(
            "{}",
            style(format!("  ┆ {}", escape_line(&cut(&line, 160)))).dim()
        );
    }

    fn working(&mut self, what: &str) {
        if !std::io::stderr().is_terminal() {
            return self.notice(what);
        }
        self.clear_spinner();
        self.spinner = Some(timed_spinner(escape_line(what).into_owned()));
    }

    fn plan(&mut self, items: &[plan::Item]) {
        self.clear_spinner();
        eprintln!("{} {}", style("●").cyan(), style(plan_title(items)).bold());
        for item in items {
            let line = format!(
                "  {} {}",
                item.status.marker(),
                escape_line(&cut(&item.text, 100))
            );
            match item.status {
                plan::Status::Done => eprintln!("{}", style(line).dim()),
                plan::Status::InProgress => eprintln!("{}", style(line).cyan()),
                plan::Status::Pending => eprintln!("{line}"),
            }
        }
    }

    fn compacted(&mut self, compaction: &Compaction) {
        self.clear_spinner();
        let line = compaction_line(compaction);
        match &compaction.summary {
            // The summary is the model's: shown dimmed, like the past it replaces.
            Some(summary) => {
                eprintln!("{}", style(line).dim());
                eprintln!("{}", style(escape_controls(summary.trim_end())).dim());
            }
            None => eprintln!("{}", style(escape_controls(&line)).yellow()),
        }
    }
}

/// Asks on the terminal. Without a terminal it cannot ask, so it declines
/// and says how to allow the action.
pub struct TerminalApprover {
    interactive: bool,
    /// "always" was answered: approve the rest of the session.
    always: bool,
    /// `--mode yolo`: approve silently, except commands the policy cannot read.
    yolo: bool,
}

impl TerminalApprover {
    pub fn new() -> Self {
        Self {
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            always: false,
            yolo: false,
        }
    }

    /// For `--mode yolo`: asks only about a command whose program or paths
    /// are decided at run time ([`agent_policy::Verdict::Ask`]).
    pub fn yolo() -> Self {
        Self {
            yolo: true,
            ..Self::new()
        }
    }
}

impl Default for TerminalApprover {
    fn default() -> Self {
        Self::new()
    }
}

impl Approver for TerminalApprover {
    fn approve(&mut self, request: &Approval) -> Decision {
        // Why this asks whatever the mode, and "always" does not cover it.
        let why = match request {
            Approval::Command { why, .. } | Approval::Write { why, .. } => why.as_deref(),
            _ => None,
        };
        if self.yolo && why.is_none() {
            return Decision::Approve;
        }
        // The diff or command is shown even when no question follows
        // ("always"): the terminal UI leaves showing diffs to this prompt.
        let what = match request {
            Approval::Write { paths, diff, .. } => {
                eprint!("{}", colored(&escape_controls(diff)));
                format!("apply this change to {}?", escape_line(&paths.join(", ")))
            }
            Approval::Command { command, cwd, .. } => {
                // Escaped: a command must not hide what it runs behind
                // terminal control sequences.
                eprintln!(
                    "{} {}",
                    style("$").bold(),
                    style(escape_line(command)).bold()
                );
                format!("run this command in {}?", escape_line(cwd))
            }
            Approval::Read { tool, summary } => {
                format!("allow {} {}?", untrusted(tool), untrusted(summary))
            }
            Approval::Tool { tool, args } => {
                eprintln!(
                    "{} {} {}",
                    style("⚙").bold(),
                    style(untrusted(tool)).bold(),
                    untrusted(&cut(args, 400))
                );
                format!("call {}?", untrusted(tool))
            }
        };
        if let Some(why) = why {
            let lead = match request {
                Approval::Write { .. } => "this changes the agent's own settings",
                _ => "the policy cannot check this command",
            };
            eprintln!("{} {lead}: {}", style("!").yellow(), untrusted_text(why));
        } else if self.always {
            return Decision::Approve;
        }
        if !self.interactive {
            let hint = if why.is_some() {
                "such changes need a yes on a terminal, even in --mode yolo"
            } else {
                "use --mode yolo to allow changes and commands"
            };
            eprintln!(
                "{} {what} declined: no terminal to ask on ({hint})",
                style("!").yellow()
            );
            return Decision::Decline;
        }
        let mut edits = match request {
            Approval::Write { proposed, .. } => Some(Edits::new(proposed)),
            _ => None,
        }
        .filter(Edits::editable);
        let (choices, keys) = match edits {
            Some(_) => ("[y]es / [n]o / [a]lways / [e]dit", "ynae"),
            None => ("[y]es / [n]o / [a]lways", "yna"),
        };
        loop {
            eprint!("{} {what} {choices}: ", style("?").yellow().bold());
            let _ = std::io::stderr().flush();
            let yes = edits.as_ref().map_or(Decision::Approve, Edits::approve);
            match read_answer(keys) {
                Some('e') => {
                    if let Some(edits) = edits.as_mut() {
                        edit_in_editor(edits);
                    }
                }
                Some('y') => return yes,
                Some('a') => {
                    self.always = true;
                    return yes;
                }
                _ => return Decision::Decline,
            }
        }
    }
}

/// `e`: the user's editor on the proposed change (the terminal is theirs
/// meanwhile), then the diff against what they saved, or why there is none.
fn edit_in_editor(edits: &mut Edits) {
    match edits.edit_with(|files| run_editor(&mut editor_command(files))) {
        Ok(true) => {
            eprintln!("{}", style("your edit of the change:").bold());
            eprint!("{}", colored(&escape_controls(&edits.diff())));
        }
        Ok(false) => eprintln!("{} the file is unchanged", style("!").yellow()),
        Err(e) => eprintln!("{} {}", style("!").yellow(), untrusted_text(&e.to_string())),
    }
}

/// The answer to a confirmation, lowercased: one key of `keys` on a
/// terminal (`y`, `n`, `a`, `e`, no Enter needed; Enter and Esc are no,
/// Ctrl-C is no and stops the request as Ctrl-C does), else a line
/// (`y`/`yes`, `a`/`always`, `e`/`edit`). None when nothing can be read.
fn read_answer(keys: &str) -> Option<char> {
    let term = console::Term::stderr();
    if term.is_term() {
        loop {
            // Raw mode; Ctrl-C there raises SIGINT itself (the handler
            // stops the request) and reads as interrupted.
            match term.read_key() {
                Ok(console::Key::Char(c)) if keys.contains(c.to_ascii_lowercase()) => {
                    eprintln!("{c}");
                    return Some(c.to_ascii_lowercase());
                }
                Ok(console::Key::Enter | console::Key::Escape) => {
                    eprintln!("n");
                    return Some('n');
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    eprintln!();
                    return Some('n');
                }
                Ok(_) => continue,
                // No terminal to put in raw mode after all: read a line.
                Err(_) => break,
            }
        }
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(match line.trim().to_lowercase().as_str() {
        "y" | "yes" => 'y',
        "a" | "always" => 'a',
        "e" | "edit" if keys.contains('e') => 'e',
        _ => 'n',
    })
}
