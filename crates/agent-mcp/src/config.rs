//! Which MCP servers a workspace declares.
//!
//! Two places, in the formats other tools use:
//! - `.mcp.json` at the workspace root:
//!   `{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}}}`,
//!   or for a remote server `{"type": "http", "url": "https://...", "headers": {...}}`
//! - `.agent/config.toml`: `[mcp_servers.NAME]` with `command`, `args`, `env`,
//!   or `url`, `headers` and `ca_bundle` (see [`crate::http`]).
//!
//! Either may give `startup_timeout_s` (default 10).
//!
//! A name in both is taken from `.agent/config.toml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

/// One server: a program that speaks MCP on stdin/stdout, or (with `url`
/// and no `command`) a remote one that speaks it over streamable HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(skip)]
    pub name: String,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A remote server's endpoint (`https://host/mcp`).
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent to a remote server; `${VAR}` in a value is read from
    /// the environment when it starts.
    #[serde(default, alias = "http_headers")]
    pub headers: BTreeMap<String, String>,
    /// A PEM file of CA certificates a remote server's TLS may chain to,
    /// besides the system's (relative to the workspace).
    #[serde(default)]
    pub ca_bundle: Option<PathBuf>,
    /// Seconds it may take to start and list its tools (default 10).
    #[serde(default)]
    pub startup_timeout_s: Option<u64>,
    /// The file that declares it (`.mcp.json`, `.agent/config.toml`); empty
    /// for a server an editor passed.
    #[serde(skip)]
    pub source: std::path::PathBuf,
}

impl ServerConfig {
    /// A server started as a command, with nothing else set (an editor's
    /// MCP servers under ACP).
    pub fn stdio(
        name: String,
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    ) -> Self {
        Self {
            name,
            command,
            args,
            env,
            url: None,
            headers: BTreeMap::new(),
            ca_bundle: None,
            startup_timeout_s: None,
            source: PathBuf::new(),
        }
    }

    /// The command and its arguments, as one line for people to read (a
    /// remote server's URL, header names and CA file).
    pub fn command_line(&self) -> String {
        if let Some(url) = &self.url {
            return crate::http::describe(self, url);
        }
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The files inside `workspace` it runs and can load (its script, and
    /// what its interpreter imports beside it: [`agent_base::files::files_loaded`]):
    /// pinned by a trust, kept read-only by the sandbox.
    pub fn files_run(&self, workspace: &Path) -> Vec<std::path::PathBuf> {
        let words: Vec<String> = std::iter::once(self.command.clone())
            .chain(self.args.iter().cloned())
            .collect();
        agent_base::files::files_loaded(workspace, &words)
    }
}

#[derive(Deserialize)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, McpJsonServer>,
}

/// A server in `.mcp.json`. Other tools add keys of their own (`disabled`,
/// `alwaysAllow`): unknown keys are ignored there.
#[derive(Deserialize)]
struct McpJsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(alias = "caBundle")]
    ca_bundle: Option<PathBuf>,
    startup_timeout_s: Option<u64>,
}

/// A `.mcp.json` server's command or URL, by its `type` (the spellings
/// other tools write). An SSE server (the older HTTP transport) keeps its
/// URL, marked `sse+`, so that it is reported as refused when it would
/// start instead of failing the whole file.
fn json_transport(
    name: &str,
    server: &McpJsonServer,
    file: &Path,
) -> Result<(String, Option<String>)> {
    let command = server.command.clone().unwrap_or_default();
    let url = match server.kind.as_deref() {
        None => server.url.clone().filter(|_| command.is_empty()),
        Some("stdio") => None,
        Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => {
            server.url.clone()
        }
        Some("sse") => server.url.as_ref().map(|u| format!("sse+{u}")),
        Some(other) => bail!(
            "{}: server `{name}` has \"type\": \"{other}\"; the agent speaks stdio \
             (\"command\") and streamable HTTP (\"type\": \"http\" with a \"url\")",
            file.display()
        ),
    };
    let local_keys = !server.args.is_empty() || !server.env.is_empty();
    let remote_keys = !server.headers.is_empty() || server.ca_bundle.is_some();
    check_keys(
        name,
        file,
        &command,
        url.as_deref(),
        local_keys,
        remote_keys,
    )?;
    Ok((command, url))
}

/// A server is a command or a URL, and each takes its own keys.
fn check_keys(
    name: &str,
    file: &Path,
    command: &str,
    url: Option<&str>,
    local_keys: bool,
    remote_keys: bool,
) -> Result<()> {
    let at = file.display();
    match (url, command.is_empty()) {
        (None, true) => bail!(
            "{at}: server `{name}` needs a `command` (a local server) or a `url` (a remote one)"
        ),
        (Some(_), false) => {
            bail!("{at}: server `{name}` has both a `command` and a `url`: keep one")
        }
        (Some(_), true) if local_keys => bail!(
            "{at}: server `{name}` has a `url`: `args` and `env` are for local servers \
             (a remote one takes `headers`)"
        ),
        (None, false) if remote_keys => bail!(
            "{at}: server `{name}` has a `command`: `headers` and `ca_bundle` are for \
             remote (`url`) servers"
        ),
        _ => Ok(()),
    }
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
    let read =
        |path: &Path| agent_base::files::read_config(workspace, path).map_err(anyhow::Error::msg);
    if let Some(text) = read(&json_path)? {
        let file: McpJson = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a valid .mcp.json", json_path.display()))?;
        for (name, server) in file.servers {
            check_name(&name, &json_path)?;
            let (command, url) = json_transport(&name, &server, &json_path)?;
            servers.insert(
                name.clone(),
                ServerConfig {
                    name,
                    command,
                    args: server.args,
                    env: server.env,
                    url,
                    headers: server.headers,
                    ca_bundle: server.ca_bundle,
                    startup_timeout_s: server.startup_timeout_s,
                    source: json_path.clone(),
                },
            );
        }
    }
    // The team's config.toml, then the user's own config.local.toml over it.
    let team = agent_base::paths::team_dir(workspace);
    for toml_path in [team.join("config.toml"), team.join("config.local.toml")] {
        let Some(text) = read(&toml_path)? else {
            continue;
        };
        let file: ConfigToml = toml::from_str(&text)
            .map_err(|e| anyhow!("{}: invalid config: {e}", toml_path.display()))?;
        for (name, mut server) in file.mcp_servers {
            check_name(&name, &toml_path)?;
            check_keys(
                &name,
                &toml_path,
                &server.command,
                server.url.as_deref(),
                !server.args.is_empty() || !server.env.is_empty(),
                !server.headers.is_empty() || server.ca_bundle.is_some(),
            )?;
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
    fn an_mcp_json_that_is_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("docs.md"), r#"{"mcpServers": {}}"#).unwrap();
        std::os::unix::fs::symlink("docs.md", dir.path().join(".mcp.json")).unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains(".mcp.json is a symlink"), "{e}");
    }

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
    }

    #[test]
    fn remote_servers_are_declared_by_url_in_either_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {
                "wiki": {"type": "http", "url": "https://wiki.corp/mcp",
                         "headers": {"Authorization": "Bearer ${WIKI_TOKEN}"}},
                "jira": {"type": "streamableHttp", "url": "https://jira.corp/mcp"},
                "bare": {"url": "http://127.0.0.1:9000/mcp"},
                "old": {"type": "sse", "url": "https://old.corp/sse"}}}"#,
        )
        .unwrap();
        std::fs::create_dir(dir.path().join(".agent")).unwrap();
        std::fs::write(
            dir.path().join(".agent/config.toml"),
            "[mcp_servers.ci]\nurl = \"https://ci.corp/mcp\"\nca_bundle = \"/etc/corp-ca.pem\"\n\
             headers = { X-Team = \"${TEAM}\" }\n",
        )
        .unwrap();
        let servers = load(dir.path()).unwrap();
        let by = |n: &str| servers.iter().find(|s| s.name == n).unwrap();
        assert_eq!(by("wiki").url.as_deref(), Some("https://wiki.corp/mcp"));
        assert_eq!(by("wiki").headers["Authorization"], "Bearer ${WIKI_TOKEN}");
        assert!(by("wiki").command.is_empty());
        assert_eq!(by("jira").url.as_deref(), Some("https://jira.corp/mcp"));
        assert_eq!(by("bare").url.as_deref(), Some("http://127.0.0.1:9000/mcp"));
        // Kept, to be refused with a reason when it would start.
        assert_eq!(by("old").url.as_deref(), Some("sse+https://old.corp/sse"));
        assert_eq!(
            by("ci").ca_bundle.as_deref(),
            Some(Path::new("/etc/corp-ca.pem"))
        );
        assert_eq!(by("ci").headers["X-Team"], "${TEAM}");
        assert_eq!(
            by("ci").command_line(),
            "https://ci.corp/mcp (headers: X-Team) (CA: /etc/corp-ca.pem)"
        );

        for (json, expect) in [
            (r#"{"web": {"type": "http"}}"#, "needs a `command`"),
            (
                r#"{"web": {"type": "http", "command": "a", "url": "http://x"}}"#,
                "keep one",
            ),
            (
                r#"{"web": {"type": "ws", "url": "ws://x"}}"#,
                "streamable HTTP",
            ),
            (
                r#"{"web": {"url": "http://x", "args": ["a"]}}"#,
                "for local servers",
            ),
            (
                r#"{"web": {"command": "a", "headers": {"A": "b"}}}"#,
                "are for remote",
            ),
        ] {
            std::fs::write(
                dir.path().join(".mcp.json"),
                format!(r#"{{"mcpServers": {json}}}"#),
            )
            .unwrap();
            let e = load(dir.path()).unwrap_err().to_string();
            assert!(e.contains(expect), "{json}: {e}");
        }
    }
}
