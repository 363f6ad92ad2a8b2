//! The code index and the repo map as an MCP server over stdio (`agent mcp
//! serve`), for the other agents a team uses (Claude Code, Codex, Cursor)
//! and for editors: offline hybrid search (issue texts welcome), the ranked
//! map, where a symbol is defined, and how complete the index is.
//!
//! Every tool only reads and is annotated so (`readOnlyHint`); none needs a
//! model. The protocol is the official SDK's (`rmcp`, server side); the
//! tools ([`tools`]) run on one thread of their own that owns the index
//! reader and the map, so the SDK's tasks never block on LanceDB. While the
//! server runs, a background watcher keeps the index live
//! ([`agent_index::watch::Background`]), so an edit is found by the next
//! search. A missing or partial index is said in every answer, never a
//! failure of the server.

pub mod tools;

use std::path::Path;
use std::sync::mpsc;

use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use tools::Tools;

/// One tool call for the tools' thread, and where its answer goes.
struct Job {
    name: String,
    args: Value,
    reply: tokio::sync::oneshot::Sender<Answer>,
}

/// What a tool call comes to: text for the caller, or why it failed (with
/// the fix), which the caller also sees.
type Answer = Result<String, Failure>;

/// Why a call failed.
#[derive(Debug)]
pub enum Failure {
    /// No such tool: a protocol error.
    UnknownTool(String),
    /// The tool ran, or its arguments did not parse: a result marked as an
    /// error, which the calling model reads and can correct.
    Tool(String),
}

/// The MCP side: lists the tools and hands calls to the tools' thread.
struct Server {
    jobs: mpsc::Sender<Job>,
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("agent", env!("CARGO_PKG_VERSION"))
            .with_title("agent: code index and repo map");
        info.instructions = Some(tools::INSTRUCTIONS.to_string());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::specs()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job {
            name: request.name.to_string(),
            args: Value::Object(request.arguments.unwrap_or_default()),
            reply,
        };
        let stopped = || McpError::internal_error("the tools' thread has stopped", None);
        self.jobs.send(job).map_err(|_| stopped())?;
        match answer.await.map_err(|_| stopped())? {
            Ok(text) => Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()),
            Err(Failure::Tool(text)) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into())
            }
            Err(Failure::UnknownTool(text)) => Err(McpError::invalid_params(text, None)),
        }
    }
}

/// Serves the index and map of the repository at `root` over stdin and
/// `output` (the process's real stdout, which nothing else writes to)
/// until the client closes stdin.
/// `deps` searches the project's dependencies (`search`'s scope "deps").
pub fn serve(root: &Path, output: std::fs::File, deps: Option<tools::DepsSearch>) -> Result<()> {
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot open {}", root.display()))?;
    // Brings the index up to date with what changed while nothing watched,
    // then keeps it live; dropped (and stopped) when the client leaves.
    let watcher = agent_index::watch::Background::start(&root, true);
    let (jobs, queue) = mpsc::channel::<Job>();
    let worker_root = root.clone();
    let watching = watcher.is_some();
    std::thread::Builder::new()
        .name("mcp-tools".into())
        .spawn(move || {
            let mut tools = Tools::open(&worker_root, watching).with_deps(deps);
            for job in queue {
                let answer = tools.call(&job.name, job.args);
                let _ = job.reply.send(answer);
            }
        })
        .context("cannot start the tools' thread")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let output = tokio::fs::File::from_std(output);
        let service = Server { jobs }
            .serve((tokio::io::stdin(), output))
            .await
            .context("the MCP handshake failed")?;
        service
            .waiting()
            .await
            .context("the MCP connection failed")?;
        anyhow::Ok(())
    });
    // A pending read of stdin cannot be cancelled: do not wait for it. The
    // tools' thread ends with the process (it only reads); the watcher is
    // stopped between two steps of its update.
    runtime.shutdown_background();
    drop(watcher);
    result
}
