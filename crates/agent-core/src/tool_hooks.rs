//! Running the team's hooks ([`agent_config::hooks`]) around the loop's
//! tool calls: which hooks a call gets, what they receive on stdin, how
//! their verdicts deny, ask, or add to an observation, and the audit
//! record of every run.

use serde_json::{json, Value};

use agent_base::cancel::CancelToken;
use agent_config::hooks::{
    check_program, claude_name, permission_mode, verdict, Event, Hook, Verdict,
};
use agent_protocol::{ToolCall, Ui};
use agent_tools::{Approval, Approver, Decision, ErrorClass, ToolOutput};

use crate::{truncate, Agent, ToolAccess};

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
