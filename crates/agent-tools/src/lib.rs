//! The agent's tools: what the model can do to the workspace.
//!
//! Each tool is a [`Tool`]: a [`ToolSpec`] (name, description, JSON Schema of
//! its arguments, [`Access`] class) and a `run` that turns arguments into a
//! [`ToolOutput`] (the observation the model sees). The [`Toolbox`] holds the
//! set and dispatches calls.
//!
//! Safety lives here, not in the loop: every path goes through
//! [`workspace::Workspace::resolve`] (no escapes, symlinks included), every
//! write goes through a checkpoint (so `undo` can revert it) and the
//! [`Approver`], every command through [`agent_policy::Policy`] first.
//! A refused or declined action changes nothing and says why.

pub mod admit;
mod args;
mod change;
pub mod checkpoint;
pub mod diagnose;
mod edit;
pub mod fence;
mod fs;
pub mod git;
pub mod grep;
pub mod jobs;
mod patch;
pub mod search;
pub mod shell;
mod state_guard;
pub mod todo;
mod undo;
pub mod workspace;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use agent_base::cancel::CancelToken;
use agent_policy::Policy;

pub use agent_policy::Access;
pub use agent_protocol::{diff, files, proposal};
// The approval and result types are the protocol's: the front ends name them there.
pub use agent_protocol::{
    AlwaysApprove, AlwaysDecline, Approval, Approver, Decision, ErrorClass, FileAccess, ToolOutput,
};
pub use change::EDITED_BACK_NOTE;
pub use workspace::Workspace;

#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    /// One or two sentences for the system prompt: what it does, when to use it.
    pub description: &'static str,
    /// JSON Schema (type object) of the arguments; also compiled into the
    /// tool-call grammar, so keep it to what `llm::grammar` supports.
    pub parameters: Value,
    pub access: Access,
}

/// The `search_semantic` backend (the code index); absent when the repo has
/// no index, and then the tool says how to build one.
pub trait SemanticSearch {
    fn search(&mut self, query: &str, k: usize) -> anyhow::Result<Vec<search::Hit>>;
    /// A search of the project's index (`project`), of its dependencies'
    /// (`deps`: hits cited `NAME@VERSION/path`) or of both (`all`); with
    /// `package`, of that dependency's only (`NAME` or `NAME@VERSION`).
    fn search_in(
        &mut self,
        query: &str,
        k: usize,
        scope: &str,
        package: Option<&str>,
    ) -> anyhow::Result<Vec<search::Hit>> {
        match (scope, package) {
            ("project", None) => self.search(query, k),
            _ => anyhow::bail!(
                "this workspace has no index of its dependencies (the user can build it with `agent index --deps`)"
            ),
        }
    }
    /// The file a dependency path names (`tokio@1.47.1/src/lib.rs`), to be
    /// read only: None when `cited` names no dependency of the project, an
    /// error (why) when the path is refused.
    fn dependency_file(&mut self, cited: &str) -> Option<Result<std::path::PathBuf, String>> {
        let _ = cited;
        None
    }
    /// The names of the project's dependencies whose indices can be
    /// searched (the intent gate tells a question about one of them).
    fn dependencies(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// A caveat for the results, such as a partial index.
    fn note(&mut self) -> Option<String> {
        None
    }
}

/// Per-session state the tools share: which files were read (and their hash
/// at that moment), the checkpoints for `undo`.
#[derive(Debug, Default)]
pub struct ReadLedger {
    /// Canonical path → sha256 hex of the content when last read or written by the agent.
    pub hashes: HashMap<PathBuf, String>,
}

/// Everything a tool call may use.
pub struct ToolContext<'a> {
    /// Characters of output the context window has room for now: a tool
    /// that can choose how much it prints (lines read, matches, results)
    /// prints no more, and says so (`usize::MAX`: no limit).
    pub room: usize,
    pub workspace: &'a Workspace,
    pub ledger: &'a mut ReadLedger,
    pub checkpoints: &'a mut checkpoint::Checkpoints,
    pub policy: &'a Policy,
    pub approver: &'a mut dyn Approver,
    pub search: Option<&'a mut dyn SemanticSearch>,
    pub cancel: &'a CancelToken,
    /// Where file contents are read and written ([`Toolbox::files`]).
    pub files: &'a dyn FileAccess,
}

pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Runs the call. Never panics on bad arguments: they are an
    /// `ErrorClass::InvalidArgs` output the model can correct.
    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput;
}

/// The set of tools a session offers.
pub struct Toolbox {
    tools: Vec<Box<dyn Tool>>,
    files: Arc<dyn FileAccess>,
    /// The session's background commands (`run_cmd`'s, stopped with it).
    jobs: Arc<jobs::Jobs>,
}

impl Toolbox {
    /// All built-in tools, in the order the system prompt lists them.
    pub fn standard() -> Self {
        let jobs = Arc::new(jobs::Jobs::default());
        Self {
            tools: vec![
                Box::new(fs::ListDir),
                Box::new(fs::ReadFile),
                Box::new(fs::Glob),
                Box::new(grep::Grep),
                Box::new(search::SearchSemantic),
                Box::new(edit::Edit),
                Box::new(patch::ApplyPatch),
                Box::new(fs::WriteFile),
                Box::new(undo::Undo),
                Box::new(shell::RunCmd {
                    jobs: Arc::clone(&jobs),
                }),
                Box::new(jobs::CommandOutput(Arc::clone(&jobs))),
                Box::new(jobs::CommandStop(Arc::clone(&jobs))),
                Box::new(todo::Todo),
                Box::new(Finish),
            ],
            files: Arc::new(files::Disk),
            jobs,
        }
    }

    /// The session's background commands.
    pub fn jobs(&self) -> &jobs::Jobs {
        &self.jobs
    }

    /// Reads and writes file contents through `files` (an editor's buffers)
    /// instead of the disk.
    pub fn set_files(&mut self, files: Arc<dyn FileAccess>) {
        self.files = files;
    }

    /// Where the tools read and write file contents: the disk unless
    /// [`Toolbox::set_files`] said otherwise.
    pub fn files(&self) -> &dyn FileAccess {
        self.files.as_ref()
    }

    /// Only the tools whose access class is in `allowed` (read-only for repo questions).
    pub fn restricted(self, allowed: &[Access]) -> Self {
        Self {
            tools: self
                .tools
                .into_iter()
                .filter(|t| allowed.contains(&t.spec().access))
                .collect(),
            files: self.files,
            jobs: self.jobs,
        }
    }

    /// Adds tools (an MCP server's) before `finish`, which stays last.
    pub fn extend(&mut self, tools: Vec<Box<dyn Tool>>) {
        let at = self.tools.len().saturating_sub(1);
        self.tools.splice(at..at, tools);
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.spec().name == name)
            .map(|t| t.as_ref())
    }

    /// Runs `name` with `args`; an unknown name is an `InvalidArgs` output
    /// listing the tools that exist.
    ///
    /// Arguments sent as a JSON string holding an object are unwrapped.
    /// Writes and commands ask the [`Approver`] inside their tools (where the
    /// diff or command is known); the `human`-mode approval of reads
    /// ([`Approval::Read`]) is the caller's, before `call`.
    pub fn call(&self, name: &str, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let unwrapped;
        let args = match args {
            Value::String(s) if s.trim_start().starts_with('{') => {
                match serde_json::from_str::<Value>(s) {
                    Ok(v) => {
                        unwrapped = v;
                        &unwrapped
                    }
                    Err(_) => args,
                }
            }
            _ => args,
        };
        match self.get(name) {
            Some(tool) => {
                let mut output = tool.run(args, ctx);
                // Whatever a tool read or a command printed, no secret value
                // of the agent's reaches the model, the session or the logs.
                let redactor = ctx.policy.redactor();
                if !redactor.is_empty() {
                    output.content = redactor.redact(&output.content);
                    output.diff = output.diff.map(|d| redactor.redact(&d));
                }
                output
            }
            None => ToolOutput::error(
                ErrorClass::InvalidArgs,
                format!(
                    "unknown tool `{name}`; the tools are: {}",
                    self.specs()
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        }
    }
}

/// Lowercase hex sha256 of `bytes` (the read ledger's hash).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `finish`: ends the turn with the answer for the user.
pub struct Finish;

impl Tool for Finish {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "finish",
            description: "End your turn: give the final answer or a short summary of what you did for the user.",
            parameters: json!({
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"]
            }),
            access: Access::Control,
        }
    }

    fn run(&self, args: &Value, _ctx: &mut ToolContext<'_>) -> ToolOutput {
        let a = match args::Args::new(args, "finish", r#"{"answer": "Done: ..."}"#) {
            Ok(a) => a,
            Err(e) => return e,
        };
        match a.req_str("answer") {
            Ok(answer) => ToolOutput::ok(answer),
            Err(e) => e,
        }
    }
}
