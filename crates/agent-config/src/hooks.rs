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
//!
//! This module is the configuration and the reading of answers; the loop
//! runs the hooks (agent-core's `tool_hooks`).

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};

use agent_base::term::truncate;
use regex::Regex;
use serde_json::Value;

use agent_policy::Mode;

use crate::settings::{HookConfig, Settings, HOOK_TIMEOUT_S};

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
    pub fn claude_name(self) -> &'static str {
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
pub fn claude_name(tool: &str) -> Option<&'static str> {
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
    pub reported: HashSet<String>,
    /// Hook runs so far, which number each run's `tool_use_id`.
    pub calls: usize,
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

    /// The hooks of `event`.
    pub fn of(&self, event: Event) -> &[Hook] {
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
pub fn permission_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Yolo => "bypassPermissions",
        Mode::Plan => "plan",
        Mode::Confirm | Mode::Human => "default",
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
