//! The loop's events as `session/update` notifications ([`AcpUi`]) and its
//! confirmations as `session/request_permission` requests ([`AcpApprover`]).
//! Both run on the prompt's thread and share the tool call in flight.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::protocol::*;
use crate::rpc::Peer;
use agent_base::cancel::CancelToken;
use agent_protocol::event::{access_note, compaction_line, Ui};
use agent_protocol::Compaction;
use agent_protocol::Intent;
use agent_protocol::ToolAccess;
use agent_protocol::{Approval, Approver, Decision, ToolOutput};
use agent_protocol::{ToolCall as LoopCall, FINISH};

/// Most characters of a tool's output shown in the editor.
const MAX_OUTPUT_CHARS: usize = 4_000;

/// What the UI and the approver share for one prompt.
pub(crate) struct Turn {
    peer: Arc<Peer>,
    session: String,
    workspace: PathBuf,
    calls: usize,
    /// The tool call running now: its id, title and kind.
    current: Option<(String, String, ToolKind)>,
    /// Files as they were before the current call, for its diff.
    before: HashMap<String, Option<String>>,
    /// The steps of the exploration the current call runs, one line each.
    nested: Vec<String>,
}

impl Turn {
    pub(crate) fn new(peer: Arc<Peer>, session: &str, workspace: &Path) -> Rc<RefCell<Turn>> {
        Rc::new(RefCell::new(Turn {
            peer,
            session: session.to_string(),
            workspace: workspace.to_path_buf(),
            calls: 0,
            current: None,
            before: HashMap::new(),
            nested: Vec::new(),
        }))
    }

    fn update(&self, update: SessionUpdate) {
        send_update(&self.peer, &self.session, update);
    }

    fn absolute(&self, rel: &str) -> String {
        self.workspace.join(rel).display().to_string()
    }
}

/// Sends one `session/update`.
pub(crate) fn send_update(peer: &Peer, session: &str, update: SessionUpdate) {
    peer.notify(
        "session/update",
        json!({"sessionId": session, "update": update}),
    );
}

pub(crate) struct AcpUi(pub Rc<RefCell<Turn>>);

impl Ui for AcpUi {
    fn intent(&mut self, intent: &Intent, tools: ToolAccess) {
        if let Some(note) = access_note(intent, tools) {
            // A user who asked for a change must know it cannot happen.
            self.notice(&note);
        }
    }

    fn step_start(&mut self, _step: usize) {}

    fn answer_text(&mut self, text: &str) {
        self.0.borrow().update(SessionUpdate::AgentMessageChunk {
            content: ContentBlock::text(text),
        });
    }

    fn reasoning_text(&mut self, text: &str) {
        self.0.borrow().update(SessionUpdate::AgentThoughtChunk {
            content: ContentBlock::text(text),
        });
    }

    fn step_end(&mut self) {}

    fn tool_call(&mut self, call: &LoopCall) {
        if call.tool == FINISH {
            return;
        }
        let mut turn = self.0.borrow_mut();
        if !call.thought.is_empty() {
            turn.update(SessionUpdate::AgentThoughtChunk {
                content: ContentBlock::text(format!("{}\n", call.thought)),
            });
        }
        turn.calls += 1;
        let id = format!("call-{}", turn.calls);
        let (title, kind) = describe(&call.tool, &call.args);
        let path = call.args.get("path").and_then(Value::as_str);
        // The file as it is now, so the edit can be shown as old and new text.
        turn.before.clear();
        if let (Some(rel), ToolKind::Edit) = (path, kind) {
            let old = std::fs::read_to_string(turn.workspace.join(rel)).ok();
            turn.before.insert(rel.to_string(), old);
        }
        let locations = path
            .map(|rel| ToolCallLocation {
                path: turn.absolute(rel),
                line: call
                    .args
                    .get("start_line")
                    .and_then(Value::as_u64)
                    .map(|l| l as u32),
            })
            .into_iter()
            .collect();
        turn.update(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id.clone(),
            title: title.clone(),
            kind,
            status: ToolCallStatus::InProgress,
            content: Vec::new(),
            locations,
            raw_input: call.args.clone(),
        }));
        turn.current = Some((id, title, kind));
    }

    fn tool_result(&mut self, _call: &LoopCall, output: &ToolOutput) {
        let mut turn = self.0.borrow_mut();
        let Some((id, _, _)) = turn.current.take() else {
            return;
        };
        let mut content = Vec::new();
        // An exploration's result: its steps above its report.
        let steps = std::mem::take(&mut turn.nested);
        let steps = (!steps.is_empty()).then(|| steps_block(&steps));
        let mut shown_as_diffs = !output.changed.is_empty();
        for rel in &output.changed {
            match turn.before.get(rel) {
                Some(old) => content.push(ToolCallContent::Diff {
                    path: turn.absolute(rel),
                    old_text: old.clone(),
                    new_text: std::fs::read_to_string(turn.workspace.join(rel)).unwrap_or_default(),
                }),
                None => shown_as_diffs = false,
            }
        }
        if !shown_as_diffs {
            content.clear();
            let text = match &output.diff {
                Some(diff) => format!("```diff\n{}\n```", diff.trim_end()),
                None => cut(&output.content, MAX_OUTPUT_CHARS),
            };
            content.push(ToolCallContent::Content {
                content: ContentBlock::text(text),
            });
        } else if !output.ok {
            content.push(ToolCallContent::Content {
                content: ContentBlock::text(cut(&output.content, MAX_OUTPUT_CHARS)),
            });
        }
        if let Some(steps) = steps {
            content.insert(0, steps);
        }
        turn.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: id,
            status: Some(if output.ok {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::Failed
            }),
            content: Some(content),
            ..ToolCallUpdate::default()
        }));
    }

    fn notice(&mut self, text: &str) {
        self.0.borrow().update(SessionUpdate::AgentThoughtChunk {
            content: ContentBlock::text(format!("{text}\n")),
        });
    }

    /// An exploration's steps as updates of its own tool call: the editor
    /// shows them inside that call, as they happen.
    fn nested(&mut self, _id: &str, event: agent_protocol::Nested<'_>) {
        let mut turn = self.0.borrow_mut();
        if let agent_protocol::Nested::Start { .. } = event {
            turn.nested.clear();
        }
        let Some(line) = agent_protocol::subagent::line(&event) else {
            return;
        };
        turn.nested.push(line);
        let Some((id, _, _)) = turn.current.clone() else {
            return;
        };
        let steps = steps_block(&turn.nested);
        turn.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: id,
            content: Some(vec![steps]),
            ..ToolCallUpdate::default()
        }));
    }

    fn compacted(&mut self, compaction: &Compaction) {
        self.notice(&compaction_line(compaction));
    }

    fn plan(&mut self, items: &[agent_protocol::plan::Item]) {
        self.0.borrow().update(plan_update(items));
    }
}

/// An exploration's steps as one block of a tool call's content.
fn steps_block(lines: &[String]) -> ToolCallContent {
    ToolCallContent::Content {
        content: ContentBlock::text(cut(&lines.join("\n"), MAX_OUTPUT_CHARS)),
    }
}

/// The plan as the editor's plan view takes it.
pub(crate) fn plan_update(items: &[agent_protocol::plan::Item]) -> SessionUpdate {
    SessionUpdate::Plan {
        entries: items.iter().map(PlanEntry::of).collect(),
    }
}

/// A title for people and the kind editors pick an icon by.
fn describe(tool: &str, args: &Value) -> (String, ToolKind) {
    let arg = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or("");
    match tool {
        "read_file" => (format!("Read {}", arg("path")), ToolKind::Read),
        "list_dir" => (format!("List {}", arg("path")), ToolKind::Read),
        "edit" => (format!("Edit {}", arg("path")), ToolKind::Edit),
        "write_file" => (format!("Write {}", arg("path")), ToolKind::Edit),
        "apply_patch" => ("Apply a patch".to_string(), ToolKind::Edit),
        "todo" => ("Update the plan".to_string(), ToolKind::Other),
        "undo" => ("Undo the last change".to_string(), ToolKind::Edit),
        "run_cmd" => (format!("Run `{}`", arg("command")), ToolKind::Execute),
        "command_output" => (format!("Read the output of {}", arg("id")), ToolKind::Read),
        "command_stop" => (format!("Stop {}", arg("id")), ToolKind::Execute),
        "grep" => (format!("Search for `{}`", arg("pattern")), ToolKind::Search),
        "glob" => (format!("Find files {}", arg("pattern")), ToolKind::Search),
        "search_semantic" => (
            format!("Search the index: {}", arg("query")),
            ToolKind::Search,
        ),
        "explore" => (format!("Explore: {}", arg("question")), ToolKind::Search),
        other => (other.to_string(), ToolKind::Other),
    }
}

fn cut(text: &str, max: usize) -> String {
    agent_base::term::cut(text, max)
}

/// Asks the client. "Allow always" covers the rest of the session for that
/// kind of action (writes, commands, reads, MCP tools), except actions the
/// policy asks about whatever the mode (they carry a `why`).
pub(crate) struct AcpApprover {
    pub turn: Rc<RefCell<Turn>>,
    pub cancel: CancelToken,
    /// `--mode yolo`: only the actions asked about whatever the mode reach the client.
    pub yolo: bool,
    pub always: Rc<RefCell<HashSet<&'static str>>>,
}

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject";

impl Approver for AcpApprover {
    fn approve(&mut self, request: &Approval) -> Decision {
        let (class, why, text, paths) = match request {
            Approval::Write {
                paths, diff, why, ..
            } => (
                "write",
                why.as_deref(),
                format!("```diff\n{}\n```", diff.trim_end()),
                paths.clone(),
            ),
            Approval::Command { command, cwd, why } => (
                "command",
                why.as_deref(),
                format!("```sh\n{command}\n```\nin {cwd}"),
                Vec::new(),
            ),
            Approval::Read { tool, summary } => {
                ("read", None, format!("{tool} {summary}"), Vec::new())
            }
            Approval::Tool { tool, args } => (
                "tool",
                None,
                format!("{tool} {}", cut(args, 2_000)),
                Vec::new(),
            ),
        };
        if why.is_none() && (self.yolo || self.always.borrow().contains(class)) {
            return Decision::Approve;
        }
        let turn = self.turn.borrow();
        let (id, title, kind) = turn.current.clone().unwrap_or_else(|| {
            // A hook or the loop itself asks, outside any tool call.
            (
                "approval".to_string(),
                "Approve".to_string(),
                ToolKind::Other,
            )
        });
        let mut content = vec![ToolCallContent::Content {
            content: ContentBlock::text(text),
        }];
        if let Some(why) = why {
            content.push(ToolCallContent::Content {
                content: ContentBlock::text(format!("asked whatever the mode: {why}")),
            });
        }
        let mut options = vec![PermissionOption {
            option_id: ALLOW_ONCE.into(),
            name: "Allow once".into(),
            kind: PermissionOptionKind::AllowOnce,
        }];
        if why.is_none() {
            options.push(PermissionOption {
                option_id: ALLOW_ALWAYS.into(),
                name: format!("Always allow {class}s in this session"),
                kind: PermissionOptionKind::AllowAlways,
            });
        }
        options.push(PermissionOption {
            option_id: REJECT.into(),
            name: "Reject".into(),
            kind: PermissionOptionKind::RejectOnce,
        });
        let request = RequestPermissionRequest {
            session_id: turn.session.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: id,
                title: Some(title),
                kind: Some(kind),
                status: Some(ToolCallStatus::Pending),
                content: Some(content),
                locations: Some(
                    paths
                        .iter()
                        .map(|p| ToolCallLocation {
                            path: turn.absolute(p),
                            line: None,
                        })
                        .collect(),
                ),
            },
            options,
        };
        let peer = turn.peer.clone();
        drop(turn);
        let decision = match chosen(&peer, &request, &self.cancel).as_deref() {
            Some(ALLOW_ONCE) => Decision::Approve,
            Some(ALLOW_ALWAYS) => {
                self.always.borrow_mut().insert(class);
                Decision::Approve
            }
            _ => Decision::Decline,
        };
        // The call was shown as pending while asked; approved, it runs.
        let turn = self.turn.borrow();
        if let (Decision::Approve, Some((id, _, _))) = (&decision, &turn.current) {
            turn.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                tool_call_id: id.clone(),
                status: Some(ToolCallStatus::InProgress),
                ..ToolCallUpdate::default()
            }));
        }
        decision
    }
}

/// The user's yes to a plan (plan mode), asked as the client asks every
/// permission: a `switch_mode` call, since yes leaves plan mode.
pub(crate) struct PlanAsk {
    pub turn: Rc<RefCell<Turn>>,
    pub cancel: CancelToken,
}

impl agent_protocol::Ask for PlanAsk {
    fn choose(&mut self, _: &str, _: &[String]) -> Option<usize> {
        None
    }

    fn confirm(&mut self, question: &str) -> bool {
        let turn = self.turn.borrow();
        let request = RequestPermissionRequest {
            session_id: turn.session.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: "plan-approval".into(),
                title: Some("Carry out the plan".into()),
                kind: Some(ToolKind::SwitchMode),
                status: Some(ToolCallStatus::Pending),
                content: Some(vec![ToolCallContent::Content {
                    content: ContentBlock::text(question),
                }]),
                locations: None,
            },
            options: vec![
                PermissionOption {
                    option_id: ALLOW_ONCE.into(),
                    name: "Yes, carry it out".into(),
                    kind: PermissionOptionKind::AllowOnce,
                },
                PermissionOption {
                    option_id: REJECT.into(),
                    name: "No, keep planning".into(),
                    kind: PermissionOptionKind::RejectOnce,
                },
            ],
        };
        let peer = turn.peer.clone();
        drop(turn);
        chosen(&peer, &request, &self.cancel).as_deref() == Some(ALLOW_ONCE)
    }
}

/// The option the user chose in the client, None when the client answered
/// none (cancelled, or an answer that is no choice).
fn chosen(peer: &Peer, request: &RequestPermissionRequest, cancel: &CancelToken) -> Option<String> {
    let answer = peer
        .ask("session/request_permission", request, cancel)
        .ok()?;
    match serde_json::from_value::<RequestPermissionResponse>(answer)
        .ok()?
        .outcome
    {
        PermissionOutcome::Selected { option_id } => Some(option_id),
        _ => None,
    }
}
