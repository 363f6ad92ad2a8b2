//! The requests of a client, one at a time on the calling thread: sessions
//! are opened by the binary's [`Sessions`] and prompts run the real loop.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use anyhow::Result;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::bridge::{plan_update, send_update, AcpApprover, AcpUi, PlanAsk, Turn};
use crate::client_fs::{ClientFiles, Offered};
use crate::protocol::*;
use crate::rpc::{self, Incoming, Peer, RpcError};
use agent_base::cancel::CancelToken;
use agent_protocol::AlwaysDecline;
use agent_protocol::Finish;
use agent_protocol::{Attachment, Request};
use agent_session::settings::{mode_help, mode_name, Mode};
use agent_session::Agent;
use agent_session::{ChatSession, NoAnswers, Notice, Reply};

/// How the binary opens an agent for a session: its model, mode and tools.
pub trait Sessions {
    /// An agent for the workspace around `cwd`, with the client's stdio MCP
    /// servers joined to the workspace's own; `resume` continues a saved
    /// session of ours.
    fn open(&mut self, cwd: &Path, mcp: Vec<StdioServer>, resume: Option<&str>) -> Result<Agent>;
}

struct Session {
    /// The agent, with the chat's commands and `@` mentions.
    chat: ChatSession,
    cancel: CancelToken,
    /// "Allow always" answers, for the rest of the session.
    always: Rc<RefCell<HashSet<&'static str>>>,
}

/// Serves one client on `input`/`output` until its input ends; the
/// sessions (and their MCP servers) are dropped before this returns.
pub fn serve(
    sessions: &mut dyn Sessions,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn std::io::Write + Send>,
) -> Result<()> {
    let peer = Peer::new(output);
    let (requests, reader) = rpc::start_reader(input, peer.clone());
    let mut server = Server {
        factory: sessions,
        peer: peer.clone(),
        sessions: HashMap::new(),
        next: 0,
        fs: Offered::default(),
        after: Vec::new(),
    };
    for Incoming { id, method, params } in requests {
        let result = server.dispatch(&method, params);
        match id {
            Some(id) => peer.respond(id, result),
            None => {
                if let Err(e) = result {
                    tracing::warn!("notification {method}: {}", e.message);
                }
            }
        }
        for (session, update) in server.after.drain(..) {
            send_update(&peer, &session, update);
        }
    }
    drop(server);
    let _ = reader.join();
    Ok(())
}

struct Server<'a> {
    factory: &'a mut dyn Sessions,
    peer: Arc<Peer>,
    sessions: HashMap<String, Session>,
    next: usize,
    /// The client's file system, as its `initialize` offered it.
    fs: Offered,
    /// Updates for a session the client learns of from the response:
    /// sent after it.
    after: Vec<(String, SessionUpdate)>,
}

fn params<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::new(rpc::INVALID_PARAMS, format!("invalid {method} params: {e}")))
}

fn internal(e: anyhow::Error) -> RpcError {
    RpcError::new(rpc::INTERNAL_ERROR, format!("{e:#}"))
}

impl Server<'_> {
    fn dispatch(&mut self, method: &str, p: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => {
                let request: InitializeRequest = params(method, p)?;
                tracing::debug!(
                    "client speaks ACP {} ({})",
                    request.protocol_version,
                    request.client_capabilities
                );
                self.fs = Offered::from_capabilities(&request.client_capabilities);
                Ok(json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "agentCapabilities": {
                        "loadSession": true,
                        "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                        "mcpCapabilities": {"http": false, "sse": false}
                    },
                    "authMethods": [],
                    "agentInfo": {"name": "agent", "title": "agent (local-first)", "version": env!("CARGO_PKG_VERSION")}
                }))
            }
            // No authentication: the model runs on this machine.
            "authenticate" => Ok(json!({})),
            "session/new" => {
                let request: NewSessionRequest = params(method, p)?;
                let agent = self.open(&request.cwd, &request.mcp_servers, None)?;
                self.next += 1;
                let id = format!(
                    "acp-{}-{}",
                    std::process::id(),
                    self.next
                );
                let modes = modes(&agent);
                self.insert(&id, agent);
                Ok(json!({"sessionId": id, "modes": modes}))
            }
            "session/load" => {
                let request: LoadSessionRequest = params(method, p)?;
                let saved = saved_id(Path::new(&request.cwd), &request.session_id);
                let agent = self.open(&request.cwd, &request.mcp_servers, Some(&saved))?;
                // The conversation so far, as the client shows it.
                for (asked, answered) in agent.exchanges() {
                    send_update(
                        &self.peer,
                        &request.session_id,
                        SessionUpdate::UserMessageChunk {
                            content: ContentBlock::text(asked),
                        },
                    );
                    send_update(
                        &self.peer,
                        &request.session_id,
                        SessionUpdate::AgentMessageChunk {
                            content: ContentBlock::text(answered),
                        },
                    );
                }
                if !agent.plan().is_empty() {
                    send_update(&self.peer, &request.session_id, plan_update(agent.plan()));
                }
                let modes = modes(&agent);
                self.insert(&request.session_id, agent);
                Ok(json!({ "modes": modes }))
            }
            "session/set_mode" => {
                let request: SetSessionModeRequest = params(method, p)?;
                let session = self.session(&request.session_id)?;
                let mode = Mode::ALL
                    .into_iter()
                    .find(|m| mode_name(m) == request.mode_id)
                    .ok_or_else(|| {
                        RpcError::new(rpc::INVALID_PARAMS, format!("no mode {}", request.mode_id))
                    })?;
                session
                    .chat
                    .agent
                    .set_mode(mode)
                    .map_err(|why| RpcError::new(rpc::INVALID_PARAMS, why))?;
                Ok(json!({}))
            }
            "session/prompt" => {
                let request: PromptRequest = params(method, p)?;
                self.prompt(request)
            }
            _ => Err(RpcError::new(
                rpc::METHOD_NOT_FOUND,
                format!("method not found: {method} (this agent serves initialize, authenticate, session/new, session/load, session/set_mode, session/prompt and session/cancel)"),
            )),
        }
    }

    fn open(
        &mut self,
        cwd: &str,
        servers: &[McpServer],
        resume: Option<&str>,
    ) -> Result<Agent, RpcError> {
        let cwd = PathBuf::from(cwd);
        if !cwd.is_absolute() {
            return Err(RpcError::new(
                rpc::INVALID_PARAMS,
                format!("cwd must be an absolute path, not {}", cwd.display()),
            ));
        }
        // `/`, the home folder or a system folder: refused before anything
        // is loaded, indexed or written (an index of `/` ran out of memory).
        let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
        if let Err(e) = agent_base::paths::check_workspace(&canonical) {
            return Err(RpcError::new(rpc::INVALID_PARAMS, format!("{e:#}")));
        }
        let mut stdio = Vec::new();
        for server in servers {
            match server.stdio() {
                Some(s) => stdio.push(s),
                None => tracing::warn!(
                    "MCP server {}: only stdio servers can be started; left out",
                    server.name
                ),
            }
        }
        self.factory.open(&cwd, stdio, resume).map_err(internal)
    }

    fn insert(&mut self, id: &str, mut agent: Agent) {
        let cancel = CancelToken::new();
        if self.fs.any() {
            agent.set_files(Arc::new(ClientFiles {
                peer: self.peer.clone(),
                session: id.to_string(),
                offered: self.fs,
                cancel: cancel.clone(),
            }));
        }
        self.peer
            .cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), cancel.clone());
        // The chat's commands, the team's own among them, for the `/` menu.
        self.after
            .push((id.to_string(), commands_update(agent.workspace())));
        self.sessions.insert(
            id.to_string(),
            Session {
                // Each prompt brings its own approver (the client's).
                chat: ChatSession::new(agent, Box::new(AlwaysDecline)),
                cancel,
                always: Rc::default(),
            },
        );
    }

    /// The open session `id`, or why there is none.
    fn session(&mut self, id: &str) -> Result<&mut Session, RpcError> {
        self.sessions.get_mut(id).ok_or_else(|| {
            RpcError::new(
                rpc::INVALID_PARAMS,
                format!("no session {id} here; open one with session/new or session/load"),
            )
        })
    }

    /// Runs the loop on the prompt; its events stream as it runs.
    fn prompt(&mut self, request: PromptRequest) -> Result<Value, RpcError> {
        let peer = self.peer.clone();
        let session = self.session(&request.session_id)?;
        let mut asked = prompt_request(&request.prompt, session.chat.agent.workspace());
        if asked.text.trim().is_empty() && asked.attachments.is_empty() {
            return Err(RpcError::new(rpc::INVALID_PARAMS, "the prompt has no text"));
        }
        session.cancel.reset();
        let turn = Turn::new(
            peer.clone(),
            &request.session_id,
            session.chat.agent.workspace(),
        );
        let mut ui = AcpUi(turn.clone());
        let approver = |session: &Session| AcpApprover {
            turn: turn.clone(),
            cancel: session.cancel.clone(),
            yolo: session.chat.agent.mode() == Mode::Yolo,
            always: session.always.clone(),
        };
        session.chat.approver = Box::new(approver(session));
        let id = request.session_id.clone();
        let mut say = |n: Notice| {
            send_update(
                &peer,
                &id,
                SessionUpdate::AgentMessageChunk {
                    content: ContentBlock::text(format!("{}\n", notice_text(&n))),
                },
            )
        };
        if let Some(command) = asked.text.trim_start().strip_prefix('/') {
            let command = command.to_string();
            // No list to pick from mid-turn: `/rewind` without N says how.
            match session
                .chat
                .command(&command, &mut ui, &mut NoAnswers, &session.cancel, &mut say)
            {
                Reply::Send(text) => asked.text = text,
                Reply::Init(outcome) => {
                    say(Notice::Plain(init_text(&outcome)));
                    return Ok(json!({"stopReason": StopReason::EndTurn}));
                }
                Reply::Done | Reply::Quit => return Ok(json!({"stopReason": StopReason::EndTurn})),
            }
        }
        let mut outcome = session
            .chat
            .request(asked, &mut ui, &session.cancel, &mut say)
            .map_err(internal)?;
        loop {
            remember(&session.chat.agent, &request.session_id);
            // The terminal prints these answers after the run; so does the editor.
            if outcome.finish.unanswered() {
                send_update(
                    &peer,
                    &request.session_id,
                    SessionUpdate::AgentMessageChunk {
                        content: ContentBlock::text(outcome.answer.clone()),
                    },
                );
            }
            let mut ask = PlanAsk {
                turn: turn.clone(),
                cancel: session.cancel.clone(),
            };
            let Some(next) = session.chat.approve_plan(&outcome, &mut ask, &mut say) else {
                break;
            };
            // Approved: out of plan mode, the editor shown so, and on with it.
            send_update(
                &peer,
                &request.session_id,
                SessionUpdate::CurrentModeUpdate {
                    current_mode_id: mode_name(&session.chat.agent.mode()),
                },
            );
            session.chat.approver = Box::new(approver(session));
            outcome = session
                .chat
                .request(next.as_str(), &mut ui, &session.cancel, &mut say)
                .map_err(internal)?;
        }
        let stop = match outcome.finish {
            Finish::Cancelled => StopReason::Cancelled,
            Finish::StepBudget => StopReason::MaxTurnRequests,
            _ => StopReason::EndTurn,
        };
        Ok(json!({"stopReason": stop}))
    }
}

/// A notice as a line of the agent's message.
fn notice_text(notice: &Notice) -> String {
    let text = notice.text();
    match (notice, notice.mark()) {
        (Notice::Diff(_), _) => format!("```diff\n{text}\n```"),
        (_, Some(mark)) => format!("{mark} {text}"),
        (_, None) => text.to_string(),
    }
}

/// What `/init` did, in a line.
fn init_text(outcome: &agent_session::InitOutcome) -> String {
    if outcome.output.ok {
        format!("{} written", outcome.path.display())
    } else {
        format!(
            "{} was not written: {}",
            outcome.path.display(),
            outcome.output.content
        )
    }
}

/// The chat's commands for the client's `/` menu; `/exit` ends nothing in
/// an editor.
fn commands_update(workspace: &Path) -> SessionUpdate {
    let available_commands = agent_session::chat::command_list(workspace)
        .into_iter()
        .filter(|c| c.name != "exit")
        .map(|c| AvailableCommand {
            name: c.name,
            description: c.description,
            input: c.hint.map(|hint| CommandInput { hint }),
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate { available_commands }
}

/// The prompt's blocks as one request: text as is, embedded files
/// attached (fitted to the window by the agent), linked files named.
fn prompt_request(blocks: &[ContentBlock], workspace: &Path) -> Request {
    let mut text = String::new();
    let mut files = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text: t } => text.push_str(t),
            // A link to a file of the workspace is an `@` mention: attached
            // as the chat attaches one (never a secret file).
            ContentBlock::ResourceLink { uri, name } => match mention(uri, workspace) {
                Some(path) => text.push_str(&format!(" @{path} ")),
                None => text.push_str(&format!("\n(file {name}: {uri})\n")),
            },
            ContentBlock::Resource { resource } => match &resource.text {
                Some(body) => files.push(Attachment {
                    name: resource.uri.clone(),
                    text: body.clone(),
                }),
                None => text.push_str(&format!("\n(file {})\n", resource.uri)),
            },
            ContentBlock::Unsupported => {
                text.push_str("\n(an image or audio the agent cannot see)\n")
            }
        }
    }
    Request::new(text, files)
}

/// The workspace-relative path a `file://` URI names, when it is inside
/// `workspace` and a mention can hold it (no spaces).
fn mention(uri: &str, workspace: &Path) -> Option<String> {
    let path = percent_decoded(uri.strip_prefix("file://")?)?;
    let workspace = workspace.canonicalize().ok()?;
    let path = Path::new(&path).canonicalize().ok()?;
    let relative = path.strip_prefix(&workspace).ok()?.to_str()?.to_string();
    (!relative.is_empty() && !relative.contains(char::is_whitespace)).then_some(relative)
}

/// `%XX` escapes of a URI's path decoded (no URL crate for ten lines).
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Where the ACP session ids of a workspace point to our saved sessions
/// (ours are only named at the first request, after `session/new` answered).
fn ids_file(workspace: &Path) -> PathBuf {
    agent_base::paths::state_dir(workspace).join("acp-sessions.json")
}

/// The session's modes as ACP's `SessionModeState`: the current one and
/// those the administrator allows.
fn modes(agent: &Agent) -> Value {
    let available: Vec<Value> = agent
        .allowed_modes()
        .iter()
        .map(|m| json!({"id": mode_name(m), "name": mode_name(m), "description": mode_help(m)}))
        .collect();
    json!({"currentModeId": mode_name(&agent.mode()), "availableModes": available})
}

fn remember(agent: &Agent, acp_id: &str) {
    let saved = agent.session_id();
    if saved.is_empty() || saved == acp_id {
        return;
    }
    let path = ids_file(agent.workspace());
    let mut ids: serde_json::Map<String, Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if ids.get(acp_id).and_then(Value::as_str) == Some(saved) {
        return;
    }
    ids.insert(acp_id.to_string(), saved.into());
    if let Err(e) = std::fs::write(&path, Value::Object(ids).to_string()) {
        tracing::warn!("cannot record session {acp_id} in {}: {e}", path.display());
    }
}

/// Our saved session for an ACP session id: the one `session/new` gave, or
/// one of ours (`agent sessions list`) as it is.
fn saved_id(cwd: &Path, acp_id: &str) -> String {
    // Not a workspace the agent accepts: `open` refuses it with the reason.
    let Ok(root) = agent_base::paths::repo_root(Some(cwd)) else {
        return acp_id.to_string();
    };
    std::fs::read_to_string(ids_file(&root))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|ids| ids.get(acp_id).and_then(Value::as_str).map(String::from))
        .unwrap_or_else(|| acp_id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_blocks_become_one_request() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "Explain "},
            {"type": "resource", "resource": {"uri": "file:///w/a.py", "text": "x = 1\n", "mimeType": "text/x-python"}},
            {"type": "resource_link", "uri": "file:///w/b.py", "name": "b.py"},
            {"type": "image", "data": "", "mimeType": "image/png"}
        ]))
        .unwrap();
        let asked = prompt_request(&blocks, Path::new("/nonexistent-workspace"));
        assert_eq!(
            asked.attachments,
            vec![Attachment {
                name: "file:///w/a.py".into(),
                text: "x = 1\n".into()
            }]
        );
        let text = asked.text;
        assert!(
            text.starts_with("Explain \n(file b.py: file:///w/b.py)"),
            "{text}"
        );
        assert!(text.contains("cannot see"));
    }

    #[test]
    fn a_link_to_a_workspace_file_is_a_mention() {
        let dir = std::env::temp_dir().join(format!("acp-mention-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src dir")).unwrap();
        std::fs::write(dir.join("calc.py"), "x = 1\n").unwrap();
        std::fs::write(dir.join("src dir/a.py"), "y = 2\n").unwrap();
        let uri = |rel: &str| format!("file://{}/{rel}", dir.display());
        assert_eq!(mention(&uri("calc.py"), &dir).as_deref(), Some("calc.py"));
        // Outside the workspace, or a name a mention cannot hold: a link.
        assert_eq!(mention("file:///etc/hostname", &dir), None);
        assert_eq!(mention(&uri("src%20dir/a.py"), &dir), None);
        assert_eq!(mention(&uri("missing.py"), &dir), None);
        assert_eq!(percent_decoded("a%2Fb%20c").as_deref(), Some("a/b c"));
        assert_eq!(percent_decoded("bad%2"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
