//! `agent mcp list`: the workspace's MCP servers, started once to show their
//! state and tools.

use anyhow::Result;
use console::style;

use crate::cli::{McpArgs, McpCommand};
use crate::mcp::{config, Hub};
use crate::policy::{Mode, Policy};

pub fn run(args: &McpArgs) -> Result<i32> {
    let McpCommand::List { json } = &args.command;
    let root = crate::paths::repo_root(None)?;
    let servers = config::load(&root)?;
    let policy = Policy::load(&root.join(".agent"), Mode::Confirm)?;
    let status = if servers.is_empty() {
        Vec::new()
    } else {
        Hub::start(servers, &root, &policy).status()
    };
    let failed = status.iter().any(|s| s.state != "running");
    if *json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else if status.is_empty() {
        println!(
            "no MCP servers in {} (declare them in .mcp.json or .agent/config.toml; see `agent mcp --help`)",
            root.display()
        );
    } else {
        for s in &status {
            let mark = if s.state == "running" {
                style("ok  ").green()
            } else {
                style("FAIL").red()
            };
            println!("[{mark}] {}  {}  ({})", s.name, s.command, s.state);
            for t in &s.tools {
                let ro = if t.read_only { " [read-only]" } else { "" };
                println!(
                    "       mcp__{}__{}{ro}: {}",
                    s.name,
                    t.name,
                    crate::tools::grep::cut(&t.description, 100)
                );
            }
        }
    }
    Ok(if failed { 1 } else { 0 })
}
