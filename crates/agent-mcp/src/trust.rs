//! Which MCP servers the user has approved, per workspace.
//!
//! A server in `.mcp.json` or `.agent/config.toml` is a program the agent
//! starts (in the command sandbox, but with the network open), and those
//! files come with a cloned repository or could be written by a command. So
//! a server starts only once the user has approved that exact definition
//! (command, arguments, environment, and the sha256 of the files inside the
//! workspace it runs, such as `tools/server.py`) for that workspace:
//! `agent mcp trust NAME`. A changed definition or script is a new server and
//! needs approval again. The approvals live in the user's configuration
//! folder (`~/.config/agent/trusted-mcp.json`), which no workspace reaches.
//!
//! This is the narrow grant: trusting the whole workspace (`agent trust`,
//! `agent_config::trust`) starts all its servers, pinned the same way; a server
//! approved here starts in a workspace that is not trusted otherwise.

use std::path::{Path, PathBuf};

use agent_base::approvals::Approvals;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::ServerConfig;

const FILE_NAME: &str = "trusted-mcp.json";
const WHAT: &str = "trusted MCP servers";

/// One approval: this definition, under this name, in this workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Approval {
    workspace: PathBuf,
    name: String,
    /// sha256 of the definition (see [`fingerprint`]).
    sha256: String,
    /// The command line, for a human reading the file.
    command: String,
}

/// The approvals, read from (and written to) one file.
#[derive(Debug)]
pub struct TrustStore {
    list: Approvals<Approval>,
}

/// What identifies a server definition in `workspace`: its command,
/// arguments and environment, and the sha256 of each workspace file it runs
/// (so a command that edits the script un-trusts the server), in a canonical
/// JSON form.
pub fn fingerprint(config: &ServerConfig, workspace: &Path) -> String {
    let canonical = serde_json::json!({
        "command": config.command,
        "args": config.args,
        "env": config.env,
    });
    // A remote server is its URL, header names and CA file (see `http`).
    let mut canonical = crate::http::identity(config).unwrap_or(canonical);
    let files: std::collections::BTreeMap<String, String> = config
        .files_run(workspace)
        .iter()
        .map(|f| {
            let sha = agent_base::files::sha256_file(f).unwrap_or_default();
            (f.display().to_string(), sha)
        })
        .collect();
    // Definitions that run no workspace file keep their earlier fingerprint.
    if !files.is_empty() {
        canonical["files"] = serde_json::json!(files);
    }
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

impl TrustStore {
    /// The user's store (`~/.config/agent/trusted-mcp.json`); empty when
    /// there is no home to keep it in, and then nothing can be trusted.
    pub fn open_default() -> Result<Self> {
        Approvals::open_default(FILE_NAME, WHAT).map(|list| Self { list })
    }

    pub fn open(path: &Path) -> Result<Self> {
        Approvals::open(path, WHAT).map(|list| Self { list })
    }

    /// Whether this exact definition is approved in `workspace`.
    pub fn is_trusted(&self, workspace: &Path, config: &ServerConfig) -> bool {
        let sha = fingerprint(config, workspace);
        self.list
            .entries
            .iter()
            .any(|a| a.workspace == workspace && a.name == config.name && a.sha256 == sha)
    }

    /// Approves `config` in `workspace` (replacing an approval of an earlier
    /// definition under the same name) and saves the store.
    pub fn trust(&mut self, workspace: &Path, config: &ServerConfig) -> Result<()> {
        let approval = Approval {
            workspace: workspace.to_path_buf(),
            name: config.name.clone(),
            sha256: fingerprint(config, workspace),
            command: config.command_line(),
        };
        let same = |a: &Approval| a.workspace == workspace && a.name == config.name;
        self.list.replace(same, approval)
    }

    /// Withdraws the approval of `name` in `workspace`; whether there was one.
    pub fn revoke(&mut self, workspace: &Path, name: &str) -> Result<bool> {
        self.list
            .remove(|a| a.workspace == workspace && a.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(command: &str) -> ServerConfig {
        ServerConfig {
            name: "docs".into(),
            command: command.into(),
            args: vec!["server.py".into()],
            env: Default::default(),
            url: None,
            headers: Default::default(),
            ca_bundle: None,
            startup_timeout_s: None,
            source: Default::default(),
        }
    }

    #[test]
    fn an_approval_holds_for_that_definition_in_that_workspace_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/trusted-mcp.json");
        let (ws, other) = (Path::new("/work/a"), Path::new("/work/b"));
        let mut store = TrustStore::open(&path).unwrap();
        assert!(!store.is_trusted(ws, &server("python3")));
        store.trust(ws, &server("python3")).unwrap();

        let store = TrustStore::open(&path).unwrap();
        assert!(store.is_trusted(ws, &server("python3")));
        assert!(!store.is_trusted(other, &server("python3")));
        // A changed command, argument or environment needs approval again.
        assert!(!store.is_trusted(ws, &server("sh")));
        let mut with_env = server("python3");
        with_env.env.insert("LD_PRELOAD".into(), "/tmp/x.so".into());
        assert!(!store.is_trusted(ws, &with_env));
        // The startup timeout is not part of what runs.
        let mut slow = server("python3");
        slow.startup_timeout_s = Some(60);
        assert!(store.is_trusted(ws, &slow));
    }

    #[test]
    fn an_edited_script_needs_approval_again() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(ws.join("server.py"), "print('ok')\n").unwrap();
        let path = ws.join("config/trusted-mcp.json");
        let mut store = TrustStore::open(&path).unwrap();
        store.trust(&ws, &server("python3")).unwrap();
        assert!(store.is_trusted(&ws, &server("python3")));
        std::fs::write(ws.join("server.py"), "import os; os.system('x')\n").unwrap();
        assert!(!store.is_trusted(&ws, &server("python3")));
    }

    #[test]
    fn revoking_and_a_damaged_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trusted-mcp.json");
        let ws = Path::new("/work/a");
        let mut store = TrustStore::open(&path).unwrap();
        store.trust(ws, &server("python3")).unwrap();
        assert!(store.revoke(ws, "docs").unwrap());
        assert!(!TrustStore::open(&path)
            .unwrap()
            .is_trusted(ws, &server("python3")));
        std::fs::write(&path, "{ not json").unwrap();
        let err = TrustStore::open(&path).unwrap_err().to_string();
        assert!(err.contains("fix or delete it"), "{err}");
    }
}
