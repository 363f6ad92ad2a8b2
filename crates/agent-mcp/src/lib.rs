//! MCP client: the team's own tools, served by local MCP servers (stdio) or
//! remote ones (streamable HTTP, [`http`]), join the toolbox as
//! `mcp__SERVER__TOOL`, whose schema feeds the call grammar like any other.
//!
//! The protocol is the official Rust SDK's (`rmcp`); this module only starts
//! the servers a workspace declares ([`config`]), turns their tools into
//! [`Tool`]s and their results into observations. Servers start with the
//! session, each given `startup_timeout_s` (10 s by default) to start and
//! list its tools; their stderr goes to `logs/mcp-NAME.log` in the state
//! folder. A server that fails to start, hangs or crashes is reported and
//! stopped; a call that fails stops its server for the session and the model
//! is told; the session goes on without it.
//!
//! Calls run under the policy: the user's `deny` rules apply to
//! `mcp__SERVER__TOOL {args}`; a tool its server marks read-only
//! (`readOnlyHint`) counts as a read, the rest as commands, which ask first in
//! `confirm` mode. A server the workspace defines starts only
//! once the user has approved its exact definition ([`trust`]), and then in
//! the command sandbox: the user's credentials hidden, writes only in the
//! workspace (its read-only set kept) and a temp folder of its own, the
//! network open (its trust widens the sandbox, never removes it). Servers of
//! the user's own configuration or an editor run as the user's programs. All
//! get the scrubbed environment plus the `env` their definition gives.

pub mod config;
mod http;
pub mod trust;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde::Serialize;
use serde_json::Value;

use agent_policy::Policy;
use agent_tools::grep::cut;
use agent_tools::{
    Access, Approval, Decision, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec,
};
pub use config::ServerConfig;

/// How long a server may take to start and list its tools, unless its
/// config says otherwise.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take before the server is given up on.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Most characters of a result given to the model.
const MAX_RESULT_CHARS: usize = 8000;

/// Every server process (and what it starts) carries this variable, so all
/// of it can be ended: dropping the SDK's handle does not always reap a
/// server that never answered.
const SERVER_VAR: &str = "AGENT_MCP_SERVER";

fn server_id(name: &str) -> String {
    format!("{}-{name}", std::process::id())
}

/// Ends a server's processes.
fn end_server(name: &str) {
    agent_tools::shell::end_processes_with(&format!("{SERVER_VAR}={}", server_id(name)));
}

/// One tool a server offers.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub read_only: bool,
    #[serde(skip)]
    pub schema: Value,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Running,
    /// Declared, but its definition is not approved (`agent mcp trust`).
    Untrusted,
    /// It did not start: why.
    Failed(String),
    /// It failed during the session and was stopped: why.
    Stopped(String),
}

impl ServerState {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Untrusted => "untrusted",
            Self::Failed(_) => "failed",
            Self::Stopped(_) => "stopped",
        }
    }

    /// Why it is not running, in a sentence with the fix (None when it is).
    pub fn reason(&self) -> Option<String> {
        match self {
            Self::Running => None,
            Self::Untrusted => Some(
                "not started: not trusted yet (check it with `agent trust --show`, then \
                 `agent trust` for the workspace, or `agent mcp trust NAME` for this server)"
                    .into(),
            ),
            Self::Failed(why) | Self::Stopped(why) => Some(why.clone()),
        }
    }
}

impl Serialize for ServerState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// A server as `agent mcp list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub command: String,
    pub state: ServerState,
    /// Why it is not running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub tools: Vec<ToolInfo>,
}

struct Server {
    config: ServerConfig,
    client: Option<RunningService<RoleClient, ()>>,
    state: ServerState,
    tools: Vec<ToolInfo>,
}

/// The running servers of a session.
pub struct Hub {
    // Dropped before the runtime they run on (fields drop in order); dropping
    // a client ends its server process.
    servers: Mutex<Vec<Server>>,
    rt: tokio::runtime::Runtime,
}

/// A tool as the model sees it: its JSON fields, for the description and schema.
fn tool_info(tool: &rmcp::model::Tool) -> ToolInfo {
    let v = serde_json::to_value(tool).unwrap_or_default();
    ToolInfo {
        name: v["name"].as_str().unwrap_or_default().to_string(),
        description: v["description"]
            .as_str()
            .or(v["title"].as_str())
            .unwrap_or("(no description)")
            .to_string(),
        read_only: v["annotations"]["readOnlyHint"].as_bool() == Some(true),
        schema: match &v["inputSchema"] {
            s @ Value::Object(_) => s.clone(),
            _ => serde_json::json!({"type": "object"}),
        },
    }
}

/// A result's content as text: text blocks as they are, anything else described.
fn render(result: &Value) -> String {
    let mut parts = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => parts.push(block["text"].as_str().unwrap_or("").to_string()),
            Some("image" | "audio") => parts.push(format!(
                "[{} content, {}]",
                block["type"].as_str().unwrap_or(""),
                block["mimeType"].as_str().unwrap_or("unknown type")
            )),
            Some("resource" | "resource_link") => parts.push(format!(
                "[resource {}]",
                block["resource"]["uri"]
                    .as_str()
                    .or(block["uri"].as_str())
                    .unwrap_or("?")
            )),
            other => parts.push(format!("[{} content]", other.unwrap_or("unknown"))),
        }
    }
    if parts.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            return s.to_string();
        }
    }
    parts.join("\n")
}

/// One server to start, owned, for the runtime's thread.
struct Launch {
    config: ServerConfig,
    workspace: std::path::PathBuf,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    logs: std::path::PathBuf,
    policy: Policy,
}

impl Launch {
    /// The server's process: a server the workspace defines runs in the
    /// command sandbox (its trust opens the network to it, and nothing
    /// more); one from the user's own configuration or an editor runs as
    /// the user's program.
    fn command(&self) -> Result<tokio::process::Command, String> {
        let config = &self.config;
        let from_workspace =
            !config.source.as_os_str().is_empty() && config.source.starts_with(&self.workspace);
        if !from_workspace {
            return Ok(tokio::process::Command::new(&config.command));
        }
        let tmp = agent_base::paths::state_dir(&self.workspace)
            .join("mcp-tmp")
            .join(&config.name);
        let fenced = agent_tools::fence::program(
            &self.workspace,
            &self.policy,
            &config.command,
            &config.args,
            true,
            &tmp,
        )
        .map_err(|e| format!("not started: {e}"))?;
        Ok(fenced.map_or_else(
            || tokio::process::Command::new(&config.command),
            tokio::process::Command::from,
        ))
    }

    async fn run(self) -> Result<(RunningService<RoleClient, ()>, Vec<ToolInfo>), String> {
        let config = &self.config;
        let workspace = self.workspace.as_path();
        if let Some(url) = &config.url {
            let limit = config
                .startup_timeout_s
                .map_or(START_TIMEOUT, Duration::from_secs);
            return http::start(config, url, workspace, limit).await;
        }
        let mut cmd = self.command()?;
        cmd.args(&config.args)
            .current_dir(workspace)
            .env_clear()
            .envs(self.env.iter().cloned())
            .envs(&config.env)
            .env(SERVER_VAR, server_id(&config.name));
        // Its stderr goes to a log of its own, for when it misbehaves.
        let log_path = self.logs.join(format!("mcp-{}.log", config.name));
        let log_shown = log_path.display().to_string();
        let log = std::fs::File::create(&log_path)
            .map(std::process::Stdio::from)
            .unwrap_or_else(|_| std::process::Stdio::null());
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", config.command))?;
        let work = async {
            let client = ().serve(transport).await.map_err(|e| {
                format!("did not complete the MCP handshake: {e} (see {log_shown})")
            })?;
            let tools = client
                .list_all_tools()
                .await
                .map_err(|e| format!("cannot list its tools: {e}"))?;
            Ok((client, tools.iter().map(tool_info).collect()))
        };
        let limit = config
            .startup_timeout_s
            .map_or(START_TIMEOUT, Duration::from_secs);
        tokio::time::timeout(limit, work).await.map_err(|_| {
            format!(
                "did not start within {}s (see {log_shown}; a slow server can set startup_timeout_s)",
                limit.as_secs(),
            )
        })?
    }
}

impl Hub {
    /// Starts every `trusted` server (in `workspace`, with the policy's
    /// scrubbed environment plus each server's own `env`) and lists their
    /// tools; `untrusted` ones are only listed. Failures are kept as the
    /// server's state, never returned.
    #[allow(
        clippy::expect_used,
        reason = "a runtime of one worker fails to start only when the OS cannot give a thread \
                  or an event queue: no session could run then"
    )]
    pub fn start(
        configs: Vec<ServerConfig>,
        untrusted: Vec<ServerConfig>,
        workspace: &Path,
        policy: &Policy,
    ) -> Arc<Hub> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime starts");
        let logs = agent_base::paths::state_dir(workspace).join("logs");
        let _ = std::fs::create_dir_all(&logs);
        let env = policy.command_env();
        // All at once: a session waits for the slowest server, not the sum.
        // Started on the runtime's own thread, which lives as long as the
        // hub: a sandboxed server dies with the thread that started it.
        let launches: Vec<_> = configs
            .iter()
            .map(|config| {
                let launch = Launch {
                    config: config.clone(),
                    workspace: workspace.to_path_buf(),
                    env: env.clone(),
                    logs: logs.clone(),
                    policy: policy.clone(),
                };
                rt.spawn(launch.run())
            })
            .collect();
        let results: Vec<Result<_, String>> = rt
            .block_on(futures::future::join_all(launches))
            .into_iter()
            .map(|joined| joined.map_err(|e| format!("its start failed: {e}"))?)
            .collect();
        let mut servers: Vec<Server> = configs
            .into_iter()
            .zip(results)
            .map(|(config, started)| match started {
                Ok((client, tools)) => Server {
                    config,
                    client: Some(client),
                    state: ServerState::Running,
                    tools,
                },
                Err(why) => {
                    tracing::debug!("MCP server {}: {why}", config.name);
                    end_server(&config.name);
                    Server {
                        config,
                        client: None,
                        state: ServerState::Failed(why),
                        tools: Vec::new(),
                    }
                }
            })
            .collect();
        servers.extend(untrusted.into_iter().map(|config| Server {
            config,
            client: None,
            state: ServerState::Untrusted,
            tools: Vec::new(),
        }));
        servers.sort_by(|a, b| a.config.name.cmp(&b.config.name));
        Arc::new(Hub {
            servers: Mutex::new(servers),
            rt,
        })
    }

    /// Every server and its state.
    pub fn status(&self) -> Vec<ServerStatus> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers
            .iter()
            .map(|s| ServerStatus {
                name: s.config.name.clone(),
                command: s.config.command_line(),
                state: s.state.clone(),
                reason: s.state.reason(),
                tools: s.tools.clone(),
            })
            .collect()
    }

    /// The running servers' tools, for the toolbox.
    pub fn tools(self: &Arc<Self>) -> Vec<Box<dyn Tool>> {
        let mut out: Vec<Box<dyn Tool>> = Vec::new();
        for status in self.status() {
            for tool in status.tools {
                // Tool specs name themselves with `&'static str`: a handful per
                // session, kept for the process's life.
                let full: &'static str =
                    Box::leak(format!("mcp__{}__{}", status.name, tool.name).into_boxed_str());
                let description: &'static str = Box::leak(
                    format!("[MCP server {}] {}", status.name, tool.description).into_boxed_str(),
                );
                out.push(Box::new(McpTool {
                    hub: Arc::clone(self),
                    server: status.name.clone(),
                    spec: ToolSpec {
                        name: full,
                        description,
                        parameters: tool.schema.clone(),
                        access: if tool.read_only {
                            Access::Read
                        } else {
                            Access::Execute
                        },
                    },
                    tool: tool.name,
                }));
            }
        }
        out
    }

    /// Calls a tool; `Err` when the server failed (it is then stopped).
    fn call(&self, server: &str, tool: &str, args: &Value) -> Result<(bool, String), String> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(s) = servers.iter_mut().find(|s| s.config.name == server) else {
            return Err(format!("no MCP server `{server}`"));
        };
        let Some(client) = &s.client else {
            return Err(format!(
                "the MCP server `{server}` is not running: {}",
                s.state.reason().unwrap_or_default()
            ));
        };
        let arguments = match args {
            Value::Object(map) => map.clone(),
            Value::Null => Default::default(),
            other => {
                return Ok((
                    false,
                    format!("arguments must be a JSON object, got {other}"),
                ))
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let outcome = self
            .rt
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, client.call_tool(params)).await });
        let failure = match outcome {
            Ok(Ok(result)) => {
                let v = serde_json::to_value(&result).unwrap_or_default();
                let is_error = v["isError"].as_bool() == Some(true);
                return Ok((!is_error, render(&v)));
            }
            Ok(Err(e)) => format!("failed during the call: {e}"),
            Err(_) => format!("did not answer within {}s", CALL_TIMEOUT.as_secs()),
        };
        // Stopped for the rest of the session.
        s.client = None;
        end_server(server);
        s.state = ServerState::Stopped(failure.clone());
        Err(format!(
            "the MCP server `{server}` {failure}; it was stopped for this session"
        ))
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let servers = std::mem::take(self.servers.get_mut().unwrap_or_else(|e| e.into_inner()));
        for s in servers {
            let name = s.config.name.clone();
            drop(s);
            end_server(&name);
        }
    }
}

/// One server tool in the toolbox.
struct McpTool {
    hub: Arc<Hub>,
    server: String,
    tool: String,
    spec: ToolSpec,
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let name = self.spec.name;
        if let Err(reason) = ctx.policy.check_tool(name, args) {
            return ToolOutput::error(ErrorClass::PolicyDenied, reason);
        }
        // Reads are confirmed by the loop in `human` mode; the rest here.
        if self.spec.access == Access::Execute && ctx.policy.needs_approval(Access::Execute) {
            let request = Approval::Tool {
                tool: name.to_string(),
                args: args.to_string(),
            };
            if ctx.approver.approve(&request) == Decision::Decline {
                return ToolOutput::error(
                    ErrorClass::Declined,
                    "the user declined this call; ask them or try something else",
                );
            }
        }
        match self.hub.call(&self.server, &self.tool, args) {
            Ok((ok, text)) => {
                let text = ctx.policy.redact(&cut(text.trim(), MAX_RESULT_CHARS));
                let text = if text.is_empty() {
                    "(empty result)".into()
                } else {
                    text
                };
                if ok {
                    ToolOutput::ok(text)
                } else {
                    ToolOutput::error(
                        ErrorClass::CommandFailed,
                        format!("the tool reported an error: {text}"),
                    )
                }
            }
            Err(why) => ToolOutput::error(ErrorClass::Io, why),
        }
    }
}
