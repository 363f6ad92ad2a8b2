//! Hooks: the team's own commands around tool calls, from
//! `.agent/config.toml` ([`crate::settings`]).
//!
//! A `pre_tool` hook runs before a call its matcher names and can deny it;
//! a `post_tool` hook runs after a call that succeeded and can add to what
//! the model sees. Both get the call as JSON on stdin and answer the way
//! Claude Code's hooks do, so a team's existing scripts work:
//!
//! - stdin: `{"session_id", "cwd", "permission_mode", "hook_event_name":
//!   "PreToolUse"|"PostToolUse", "tool_name", "tool_input", "tool_use_id"}`,
//!   and for `PostToolUse` `tool_response`. `tool_name` is Claude Code's name
//!   for the tool where it has one (`Bash` for `run_cmd`), ours is in
//!   `agent_tool_name`. `tool_input` is the call's
//!   arguments, plus `file_path` (absolute) when they name a `path`.
//! - exit 2: a pre hook denies the call, a post hook's stderr goes to the
//!   model; either way stderr is the reason.
//! - exit 0 with JSON on stdout: `hookSpecificOutput.permissionDecision`
//!   `"deny"` (with `permissionDecisionReason`) or the older `"decision":
//!   "block"` (with `reason`) deny a call; `"ask"` asks the user;
//!   `hookSpecificOutput.additionalContext` and a post hook's `"decision":
//!   "block"` reason are added to the observation. Plain text a post hook
//!   prints is added too. `"allow"` changes nothing: approvals still apply.
//! - any other exit, a hook that cannot start, and a hook that outruns its
//!   `timeout_s` (killed) are reported to the user and logged; the call goes on.
//!
//! Hooks run only in a trusted workspace ([`crate::trust`]), and only for
//! requests that may change it (coding tasks) unless declared `read_only =
//! true`: a question announced as read-only runs none of the team's code.
//!
//! Hooks run like `run_cmd` commands (`agent_tools::shell::run_fenced`): in
//! the sandbox, with a scrubbed environment (plus `CLAUDE_PROJECT_DIR` and
//! `AGENT_PROJECT_DIR`, the workspace root), in the workspace root. Every
//! run is in the audit log (`hook`).

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use regex::Regex;
use serde_json::{json, Value};

use agent_base::cancel::CancelToken;
use agent_policy::Mode;
use agent_tools::{Approval, Approver, Decision, ErrorClass, ToolOutput};

use crate::protocol::ToolCall;
use crate::settings::{HookConfig, Settings, HOOK_TIMEOUT_S};
use crate::ui::Ui;
use crate::{truncate, Agent, ToolAccess};

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PreTool,
    PostTool,
}

impl Event {
    /// The config key, for messages.
    pub fn key(self) -> &'static str {
        match self {
            Event::PreTool => "pre_tool",
            Event::PostTool => "post_tool",
        }
    }

    /// Claude Code's name for the event (`hook_event_name`).
    fn claude_name(self) -> &'static str {
        match self {
            Event::PreTool => "PreToolUse",
            Event::PostTool => "PostToolUse",
        }
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    pub matcher: String,
    pub command: String,
    pub timeout: Duration,
    /// Runs on read-only requests too (`read_only = true`).
    pub read_only: bool,
    regex: Option<Regex>,
}

impl Hook {
    fn new(config: &HookConfig, settings: &Settings) -> Result<Self> {
        let matcher = config.matcher.trim();
        let regex = match matcher {
            "" | "*" => None,
            m => Some(Regex::new(&format!("^(?:{m})$")).with_context(|| {
                format!(
                    "{}: hook matcher `{m}` is not a regex\n  fix: a tool name, or names joined by `|` (\"edit|write_file\")",
                    settings.file.display()
                )
            })?),
        };
        Ok(Self {
            matcher: config.matcher.clone(),
            command: config.command.clone(),
            timeout: Duration::from_secs(config.timeout_s.unwrap_or(HOOK_TIMEOUT_S)),
            read_only: config.read_only,
            regex,
        })
    }

    /// Whether it runs for `tool`: by our name, or by Claude Code's name
    /// for the same tool, so `"Bash"` and `"Edit|Write"` matchers work.
    pub fn matches(&self, tool: &str) -> bool {
        let Some(regex) = &self.regex else {
            return true;
        };
        regex.is_match(tool) || claude_name(tool).is_some_and(|name| regex.is_match(name))
    }
}

/// Claude Code's name for one of our tools.
fn claude_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "run_cmd" => "Bash",
        "read_file" => "Read",
        "write_file" => "Write",
        "edit" => "Edit",
        "apply_patch" => "MultiEdit",
        "grep" => "Grep",
        "glob" => "Glob",
        "list_dir" => "LS",
        _ => return None,
    })
}

/// A session's hooks.
#[derive(Debug, Default)]
pub struct Hooks {
    pub pre_tool: Vec<Hook>,
    pub post_tool: Vec<Hook>,
    /// Problems already shown to the user, so a broken hook says so once.
    reported: HashSet<String>,
    calls: usize,
}

impl Hooks {
    pub fn new(settings: &Settings) -> Result<Self> {
        let build = |list: &[HookConfig]| -> Result<Vec<Hook>> {
            list.iter().map(|h| Hook::new(h, settings)).collect()
        };
        Ok(Self {
            pre_tool: build(&settings.pre_tool)?,
            post_tool: build(&settings.post_tool)?,
            ..Self::default()
        })
    }

    pub fn is_empty(&self) -> bool {
        self.pre_tool.is_empty() && self.post_tool.is_empty()
    }

    fn of(&self, event: Event) -> &[Hook] {
        match event {
            Event::PreTool => &self.pre_tool,
            Event::PostTool => &self.post_tool,
        }
    }
}

/// What a hook's run comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing for the loop.
    Pass,
    /// The call must not run; the reason is the model's.
    Deny(String),
    /// The user decides (`permissionDecision: "ask"`), told why.
    Ask(String),
    /// Text added to the observation.
    Context(String),
    /// The hook failed (could not start, timed out, exit 1): the user is
    /// told, the call goes on.
    Failed(String),
}

/// Why a hook's program cannot run, before trying: a path that is missing
/// or not executable.
pub fn check_program(command: &str, root: &Path) -> Option<String> {
    let program = shlex::split(command)?.into_iter().next()?;
    if !program.contains('/') {
        return None; // found on PATH, or said by the shell when not
    }
    let path = root.join(&program);
    let program = agent_base::term::untrusted(&program);
    let Ok(meta) = std::fs::metadata(&path) else {
        return Some(format!(
            "`{program}` does not exist\n  fix: create it, or correct the command in .agent/config.toml (paths are relative to the workspace root)"
        ));
    };
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Some(format!(
            "`{program}` is not executable\n  fix: chmod +x {program}"
        ));
    }
    None
}

/// Reads what a hook said: its exit code, stdout and stderr, the Claude
/// Code way (see the module documentation).
pub fn verdict(event: Event, exit_code: i32, stdout: &str, stderr: &str) -> Verdict {
    let stdout = stdout.trim();
    let stderr = stderr.trim();
    match exit_code {
        0 => {}
        2 => {
            let reason = if stderr.is_empty() {
                "a hook said no (exit code 2) without saying why".to_string()
            } else {
                stderr.to_string()
            };
            return match event {
                Event::PreTool => Verdict::Deny(reason),
                Event::PostTool => Verdict::Context(reason),
            };
        }
        126 => return Verdict::Failed(format!("it is not executable (exit 126): {stderr}")),
        127 => return Verdict::Failed(format!("its program was not found (exit 127): {stderr}")),
        code => {
            let said = if stderr.is_empty() { stdout } else { stderr };
            return Verdict::Failed(format!("exit code {code}: {}", truncate(said, 500)));
        }
    }
    let Some(answer) = serde_json::from_str::<Value>(stdout)
        .ok()
        .filter(Value::is_object)
    else {
        // Plain text: a post hook's report for the model; a pre hook's is ignored.
        return match event {
            Event::PostTool if !stdout.is_empty() => Verdict::Context(stdout.to_string()),
            _ => Verdict::Pass,
        };
    };
    let specific = &answer["hookSpecificOutput"];
    let text = |v: &Value| v.as_str().map(str::trim).unwrap_or_default().to_string();
    let reason = |fallback: &str| {
        [
            &specific["permissionDecisionReason"],
            &answer["reason"],
            &answer["stopReason"],
        ]
        .into_iter()
        .map(text)
        .find(|r| !r.is_empty())
        .unwrap_or_else(|| fallback.to_string())
    };
    let context = text(&specific["additionalContext"]);
    match event {
        Event::PreTool => {
            let decision = specific["permissionDecision"].as_str();
            if decision == Some("deny") || answer["decision"] == "block" {
                return Verdict::Deny(reason("a pre_tool hook denied the call"));
            }
            if answer["continue"] == false {
                return Verdict::Deny(reason("a pre_tool hook stopped the call"));
            }
            if decision == Some("ask") {
                return Verdict::Ask(reason("a pre_tool hook asks for your OK"));
            }
            if context.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Context(context)
            }
        }
        Event::PostTool => {
            let mut parts = Vec::new();
            if answer["decision"] == "block" {
                parts.push(reason("a post_tool hook objected"));
            }
            if !context.is_empty() {
                parts.push(context);
            }
            if parts.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Context(parts.join("\n"))
            }
        }
    }
}

/// Claude Code's name for a permission mode.
fn permission_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Yolo => "bypassPermissions",
        Mode::Confirm | Mode::Human => "default",
    }
}

impl Agent {
    /// The `pre_tool` hooks for a call: a denial (the observation the model
    /// gets instead of running the call) or None to go on.
    pub(crate) fn pre_tool_hooks(
        &mut self,
        call: &ToolCall,
        tools: ToolAccess,
        ui: &mut dyn Ui,
        approver: &mut dyn Approver,
        cancel: &CancelToken,
    ) -> Option<ToolOutput> {
        let mut context = Vec::new();
        for hook in self.matching_hooks(Event::PreTool, &call.tool, tools) {
            match self.run_hook(Event::PreTool, &hook, call, None, ui, cancel) {
                Verdict::Deny(reason) => {
                    ui.notice(&format!("a pre_tool hook denied {}: {reason}", call.tool));
                    return Some(ToolOutput::error(
                        ErrorClass::PolicyDenied,
                        format!("blocked by a pre_tool hook (`{}`): {reason}", hook.command),
                    ));
                }
                Verdict::Ask(why) => {
                    let request = Approval::Tool {
                        tool: call.tool.clone(),
                        args: format!("{} (a hook asks: {why})", call.args),
                    };
                    let decision = approver.approve(&request);
                    self.log
                        .audit("confirm", json!({"request": request, "decision": decision}));
                    if decision == Decision::Decline {
                        self.declined += 1;
                        return Some(ToolOutput::error(
                            ErrorClass::Declined,
                            format!("the user declined this call (a hook asked them: {why})"),
                        ));
                    }
                }
                Verdict::Context(text) => context.push(text),
                Verdict::Pass | Verdict::Failed(_) => {}
            }
        }
        if !context.is_empty() {
            self.hook_notes = context;
        }
        None
    }

    /// The `post_tool` hooks for a call that succeeded: what they say is
    /// added to its observation.
    pub(crate) fn post_tool_hooks(
        &mut self,
        call: &ToolCall,
        tools: ToolAccess,
        output: &mut ToolOutput,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) {
        let mut notes = std::mem::take(&mut self.hook_notes);
        if output.ok {
            for hook in self.matching_hooks(Event::PostTool, &call.tool, tools) {
                if let Verdict::Context(text) =
                    self.run_hook(Event::PostTool, &hook, call, Some(output), ui, cancel)
                {
                    notes.push(format!("[post_tool hook `{}`]\n{text}", hook.command));
                }
            }
        }
        for note in notes {
            output.content.push_str("\n\n");
            output.content.push_str(&note);
        }
    }

    /// The hooks of `event` for `tool` in a request given `tools`: on a
    /// read-only request (a question) only those declared `read_only`, as
    /// the user was told nothing would change.
    fn matching_hooks(&self, event: Event, tool: &str, tools: ToolAccess) -> Vec<Hook> {
        self.hooks
            .of(event)
            .iter()
            .filter(|h| h.matches(tool) && (h.read_only || tools == ToolAccess::All))
            .cloned()
            .collect()
    }

    /// Runs one hook for `call` and reads its answer; failures are shown
    /// to the user once per hook and problem, and every run is audited.
    fn run_hook(
        &mut self,
        event: Event,
        hook: &Hook,
        call: &ToolCall,
        output: Option<&ToolOutput>,
        ui: &mut dyn Ui,
        cancel: &CancelToken,
    ) -> Verdict {
        let root = self.workspace.root().to_path_buf();
        self.hooks.calls += 1;
        let input = self.hook_input(event, call, output);
        let (verdict, fields) = match check_program(&hook.command, &root) {
            Some(problem) => (Verdict::Failed(problem), json!({})),
            None => {
                let env = [
                    ("CLAUDE_PROJECT_DIR", root.display().to_string()),
                    ("AGENT_PROJECT_DIR", root.display().to_string()),
                ];
                match agent_tools::shell::run_fenced(
                    &hook.command,
                    input.to_string().into_bytes(),
                    &env,
                    &self.workspace,
                    &self.policy,
                    hook.timeout,
                    cancel,
                ) {
                    Err(e) => (
                        Verdict::Failed(format!("it could not start: {e}")),
                        json!({}),
                    ),
                    Ok((run, fenced, tampered)) => {
                        let stdout = self.policy.redact(&run.output);
                        let stderr = self.policy.redact(&run.stderr);
                        let verdict = if run.timed_out {
                            Verdict::Failed(format!(
                                "it ran past its limit of {} s and was stopped",
                                hook.timeout.as_secs()
                            ))
                        } else if run.cancelled {
                            Verdict::Failed("stopped by Ctrl-C".into())
                        } else if !tampered.is_empty() {
                            Verdict::Failed(format!(
                                "it changed what configures the agent or git, which was not \
                                 kept: {}",
                                tampered.join("; ")
                            ))
                        } else {
                            verdict(event, run.exit_code.unwrap_or(-1), &stdout, &stderr)
                        };
                        let fields = json!({"exit_code": run.exit_code, "timed_out": run.timed_out,
                            "sandboxed": fenced, "elapsed_ms": run.elapsed.as_millis() as u64,
                            "stdout": truncate(&stdout, 2000), "stderr": truncate(&stderr, 2000)});
                        (verdict, fields)
                    }
                }
            }
        };
        let (decision, detail) = match &verdict {
            Verdict::Pass => ("pass", None),
            Verdict::Deny(r) => ("deny", Some(r.as_str())),
            Verdict::Ask(r) => ("ask", Some(r.as_str())),
            Verdict::Context(t) => ("context", Some(t.as_str())),
            Verdict::Failed(why) => ("failed", Some(why.as_str())),
        };
        let mut record = json!({"hook": event.key(), "command": hook.command, "tool": call.tool,
                                "decision": decision, "detail": detail.map(|d| truncate(d, 2000))});
        if let (Some(record), Value::Object(fields)) = (record.as_object_mut(), fields) {
            record.extend(fields);
        }
        self.log.audit("hook", record);
        if let Verdict::Failed(why) = &verdict {
            let key = format!("{}\n{}\n{why}", event.key(), hook.command);
            if self.hooks.reported.insert(key) {
                ui.notice(&format!(
                    "{} hook `{}` failed, so it was skipped: {why}",
                    event.key(),
                    hook.command
                ));
            }
        }
        verdict
    }

    /// The call as Claude Code's hooks receive it.
    fn hook_input(&self, event: Event, call: &ToolCall, output: Option<&ToolOutput>) -> Value {
        let mut tool_input = call.args.clone();
        if let (Some(map), Some(path)) = (
            tool_input.as_object_mut(),
            call.args.get("path").and_then(Value::as_str),
        ) {
            map.insert(
                "file_path".into(),
                self.workspace
                    .root()
                    .join(path)
                    .display()
                    .to_string()
                    .into(),
            );
        }
        let mut input = json!({
            "session_id": self.log.session_id,
            "cwd": self.workspace.root(),
            "permission_mode": permission_mode(self.policy.mode),
            "hook_event_name": event.claude_name(),
            // Claude Code's name where there is one, so scripts that check
            // for "Bash" or "Edit" work; ours alongside.
            "tool_name": claude_name(&call.tool).unwrap_or(&call.tool),
            "agent_tool_name": call.tool,
            "tool_input": tool_input,
            "tool_use_id": format!("{}-{}", self.log.trace_id, self.hooks.calls),
        });
        if let Some(output) = output {
            let mut response = serde_json::to_value(output).unwrap_or_default();
            if let Some(map) = response.as_object_mut() {
                map.insert("success".into(), output.ok.into());
            }
            input["tool_response"] = response;
        }
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(matcher: &str) -> Hook {
        let dir = tempfile::tempdir().unwrap();
        let config = HookConfig {
            matcher: matcher.into(),
            command: "true".into(),
            timeout_s: None,
            read_only: false,
            file: std::path::PathBuf::new(),
        };
        Hook::new(&config, &Settings::defaults(dir.path())).unwrap()
    }

    #[test]
    fn matchers_take_our_names_and_claude_codes() {
        assert!(hook("run_cmd").matches("run_cmd"));
        assert!(hook("Bash").matches("run_cmd"));
        assert!(hook("Edit|Write").matches("write_file"));
        assert!(!hook("Edit|Write").matches("read_file"));
        assert!(!hook("run").matches("run_cmd"), "whole names only");
        assert!(hook("").matches("anything") && hook("*").matches("grep"));
        assert!(hook("mcp__.*").matches("mcp__docs__search"));
        let dir = tempfile::tempdir().unwrap();
        let bad = HookConfig {
            matcher: "(".into(),
            command: "x".into(),
            timeout_s: None,
            read_only: false,
            file: std::path::PathBuf::new(),
        };
        let err = format!(
            "{:#}",
            Hook::new(&bad, &Settings::defaults(dir.path())).unwrap_err()
        );
        assert!(err.contains("not a regex") && err.contains("fix:"), "{err}");
    }

    #[test]
    fn answers_are_read_as_claude_code_reads_them() {
        use Event::*;
        assert_eq!(
            verdict(PreTool, 2, "", "no rm here\n"),
            Verdict::Deny("no rm here".into())
        );
        let deny = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "use make test"}}"#;
        assert_eq!(
            verdict(PreTool, 0, deny, ""),
            Verdict::Deny("use make test".into())
        );
        assert_eq!(
            verdict(
                PreTool,
                0,
                r#"{"decision": "block", "reason": "old style"}"#,
                ""
            ),
            Verdict::Deny("old style".into())
        );
        let allow = r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#;
        assert_eq!(verdict(PreTool, 0, allow, ""), Verdict::Pass);
        assert!(matches!(
            verdict(
                PreTool,
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#,
                ""
            ),
            Verdict::Ask(_)
        ));
        assert_eq!(verdict(PreTool, 0, "just chatter", ""), Verdict::Pass);
        assert_eq!(
            verdict(PostTool, 0, "3 lint errors\n", ""),
            Verdict::Context("3 lint errors".into())
        );
        let more = r#"{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "formatted"}}"#;
        assert_eq!(
            verdict(PostTool, 0, more, ""),
            Verdict::Context("formatted".into())
        );
        assert_eq!(
            verdict(PostTool, 2, "", "tests broke"),
            Verdict::Context("tests broke".into())
        );
        assert!(
            matches!(verdict(PreTool, 1, "", "oops"), Verdict::Failed(w) if w.contains("oops"))
        );
        assert!(
            matches!(verdict(PostTool, 126, "", ""), Verdict::Failed(w) if w.contains("not executable"))
        );
    }

    #[test]
    fn missing_and_unexecutable_programs_are_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("check.sh");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        let err = check_program("./check.sh --strict", dir.path()).unwrap();
        assert!(
            err.contains("not executable") && err.contains("chmod +x ./check.sh"),
            "{err}"
        );
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(check_program("./check.sh --strict", dir.path()), None);
        assert!(check_program("./nope.sh", dir.path())
            .unwrap()
            .contains("does not exist"));
        assert_eq!(check_program("ruff check .", dir.path()), None);
    }
}
