//! `agent mcp list`, `agent mcp trust` and `agent mcp serve`, and how the agent's sessions
//! start the workspace's MCP servers: trusted ones only, after asking on a
//! terminal where it may.

use std::path::Path;

use anyhow::{bail, Result};
use console::style;

use agent_base::term::untrusted;
use agent_cli::{McpArgs, McpCommand};
use agent_session::mcp::{self, ServerState};

pub(crate) fn run(args: &McpArgs) -> Result<i32> {
    if let McpCommand::Serve { repo } = &args.command {
        let root = agent_base::paths::repo_root(repo.as_deref())?;
        agent_mcp_server::serve(&root, protocol_output()?, Some(deps_search(&root)))?;
        return Ok(crate::cmd::exit::OK);
    }
    let root = agent_base::paths::repo_root(None)?;
    match &args.command {
        McpCommand::List { json } => list(&root, *json),
        McpCommand::Trust { names, revoke } => trust(&root, names, *revoke),
        McpCommand::Serve { .. } => unreachable!("served above"),
    }
}

/// The served `search`'s scopes "deps" and "all": the project's
/// dependencies at their locked versions, as `agent search --deps` reads them.
fn deps_search(root: &Path) -> agent_mcp_server::tools::DepsSearch {
    let root = root.to_path_buf();
    Box::new(move |query, scope, package| {
        let query = agent_session::search::Query {
            text: query.text.clone(),
            k: query.k,
            mode: query.mode,
            path_glob: query.path_glob.clone(),
            lang: query.lang.clone(),
            scope: agent_session::deps::Scope::parse(scope).unwrap_or_default(),
            package: package.map(str::to_string),
        };
        agent_session::search::search(&root, query)
    })
}

/// The real stdout, for the protocol alone: file descriptor 1 is pointed at
/// stderr, so whatever else writes there (a library's print, ONNX Runtime's
/// or llama.cpp's C code) lands in the log instead of corrupting a message.
pub(crate) fn protocol_output() -> Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let stdout = std::io::stdout().as_raw_fd();
    // SAFETY: dup and dup2 of the process's own open descriptors; the
    // duplicate is owned by the returned File alone.
    unsafe {
        let protocol = libc::dup(stdout);
        if protocol < 0 || libc::dup2(std::io::stderr().as_raw_fd(), stdout) < 0 {
            bail!(
                "cannot set stdout aside for the protocol: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(std::fs::File::from_raw_fd(protocol))
    }
}

fn list(root: &Path, json: bool) -> Result<i32> {
    let status = mcp::status(root, &mut crate::terminal::print)?;
    let failed = status.iter().any(|s| s.state != ServerState::Running);
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else if status.is_empty() {
        println!(
            "no MCP servers in {} (declare them in .mcp.json or .agent/config.toml; see `agent mcp --help`)",
            untrusted(root)
        );
    } else {
        for s in &status {
            let mark = match s.state {
                ServerState::Running => style("ok  ").green(),
                ServerState::Untrusted => style("NEW ").yellow(),
                _ => style("FAIL").red(),
            };
            let why = s
                .reason
                .as_deref()
                .map(|r| format!("  ({})", untrusted(r)))
                .unwrap_or_default();
            println!(
                "[{mark}] {}  {}{why}",
                untrusted(&s.name),
                untrusted(&s.command)
            );
            for t in &s.tools {
                let ro = if t.read_only { " [read-only]" } else { "" };
                println!(
                    "       mcp__{}__{}{ro}: {}",
                    untrusted(&s.name),
                    untrusted(&t.name),
                    untrusted(&agent_base::term::cut(&t.description, 100))
                );
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}

fn trust(root: &Path, names: &[String], revoke: bool) -> Result<i32> {
    // What was trusted goes to stdout, the record a script keeps.
    mcp::trust(root, names, revoke, &mut |n| {
        println!("{}", crate::terminal::shown(&n))
    })?;
    Ok(0)
}
