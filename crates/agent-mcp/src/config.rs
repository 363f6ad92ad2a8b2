//! Which MCP servers a workspace declares.
//!
//! Two places, in the formats other tools use:
//! - `.mcp.json` at the workspace root:
//!   `{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}}}`
//! - `.agent/config.toml`: `[mcp_servers.NAME]` with `command`, `args`, `env`.
//!
//! Either may give `startup_timeout_s` (default 10).
//!
//! A name in both is taken from `.agent/config.toml`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

/// One server: a program that speaks MCP on stdin/stdout.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(skip)]
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds it may take to start and list its tools (default 10).
    #[serde(default)]
    pub startup_timeout_s: Option<u64>,
    /// The file that declares it (`.mcp.json`, `.agent/config.toml`); empty
    /// for a server an editor passed.
    #[serde(skip)]
    pub source: std::path::PathBuf,
}

impl ServerConfig {
    /// The command and its arguments, as one line for people to read.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The files inside `workspace` its command line names (its script):
    /// pinned by a trust, kept read-only by the sandbox.
    pub fn files_run(&self, workspace: &Path) -> Vec<std::path::PathBuf> {
        let words: Vec<String> = std::iter::once(self.command.clone())
            .chain(self.args.iter().cloned())
            .collect();
        agent_base::files::files_run(workspace, &words)
    }
}

#[derive(Deserialize)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, McpJsonServer>,
}

/// A server in `.mcp.json`. Other tools add keys of their own (`type`,
/// `disabled`, `url`): unknown keys are ignored there.
#[derive(Deserialize)]
struct McpJsonServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    startup_timeout_s: Option<u64>,
}

#[derive(Deserialize)]
struct ConfigToml {
    #[serde(default)]
    mcp_servers: BTreeMap<String, ServerConfig>,
}

/// Names become part of tool names (`mcp__NAME__TOOL`): letters, digits, `-`, `_`.
fn check_name(name: &str, file: &Path) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!(
            "{}: server name `{name}` may only hold letters, digits, `-` and `_`",
            file.display()
        );
    }
    Ok(())
}

/// Every server the workspace declares, by name. A malformed file is an
/// error naming it.
pub fn load(workspace: &Path) -> Result<Vec<ServerConfig>> {
    let mut servers: BTreeMap<String, ServerConfig> = BTreeMap::new();
    let json_path = workspace.join(".mcp.json");
    if let Ok(text) = std::fs::read_to_string(&json_path) {
        let file: McpJson = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a valid .mcp.json", json_path.display()))?;
        for (name, server) in file.servers {
            check_name(&name, &json_path)?;
            let command = server.command.ok_or_else(|| {
                anyhow!(
                    "{}: server `{name}` has no \"command\" (only stdio servers are supported)",
                    json_path.display()
                )
            })?;
            servers.insert(
                name.clone(),
                ServerConfig {
                    name,
                    command,
                    args: server.args,
                    env: server.env,
                    startup_timeout_s: server.startup_timeout_s,
                    source: json_path.clone(),
                },
            );
        }
    }
    // The team's config.toml, then the user's own config.local.toml over it.
    let team = agent_base::paths::team_dir(workspace);
    for toml_path in [team.join("config.toml"), team.join("config.local.toml")] {
        let Ok(text) = std::fs::read_to_string(&toml_path) else {
            continue;
        };
        let file: ConfigToml = toml::from_str(&text)
            .map_err(|e| anyhow!("{}: invalid config: {e}", toml_path.display()))?;
        for (name, mut server) in file.mcp_servers {
            check_name(&name, &toml_path)?;
            server.name = name.clone();
            server.source = toml_path.clone();
            servers.insert(name, server);
        }
    }
    Ok(servers.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_files_are_read_and_config_toml_wins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"docs": {"command": "python3", "args": ["docs.py"], "type": "stdio"},
                "tickets": {"command": "tickets-mcp", "env": {"LEVEL": "1"}}}}"#,
        )
        .unwrap();
        std::fs::create_dir(dir.path().join(".agent")).unwrap();
        std::fs::write(
            dir.path().join(".agent/config.toml"),
            "[mcp_servers.docs]\ncommand = \"node\"\nargs = [\"docs.js\"]\n",
        )
        .unwrap();
        let servers = load(dir.path()).unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(
            (servers[0].name.as_str(), servers[0].command.as_str()),
            ("docs", "node")
        );
        assert_eq!(servers[1].env["LEVEL"], "1");

        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"x y": {"command": "a"}}}"#,
        )
        .unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("may only hold"), "{e}");
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"web": {"url": "http://x"}}}"#,
        )
        .unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("only stdio"), "{e}");
    }
}
