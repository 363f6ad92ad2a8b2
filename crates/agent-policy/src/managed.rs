//! Managed configuration: the rules an administrator sets for every user of
//! the machine, in `/etc/agent/managed.toml`. `AGENT_MANAGED_CONFIG` names
//! another file (tests, packaging checks): alone where the system file does
//! not exist, and applied over it where it does, only ever adding
//! restrictions ([`Managed::narrowed`]): an environment variable never
//! replaces what the administrator wrote.
//!
//! The binary reads the file once, at start ([`Managed::load`]), and passes
//! the result down; no crate reads it on its own. Nothing a user, a
//! workspace or the command line sets can loosen it: each setting only ever
//! narrows what the others allow. A file that cannot be read or parsed is an
//! error naming its line and column, and the agent does not run: a broken
//! policy must never open up.
//!
//! ```toml
//! allowed_modes = ["human", "confirm"]   # permission modes a user may pick
//! require_plan = true                    # every coding task is planned and approved first
//! require_sandbox = true                 # no sandbox, no commands
//! allow_network = false                  # commands never reach the network; or a list
//!                                        # ["pypi.corp.example:443"]: at most those hosts
//! allowed_models = ["<sha256>"]          # GGUF files by sha256
//! allowed_servers = []                   # --server URLs
//! mcp_allowlist = ["docs:<sha256>"]      # replaces per-user trust
//! allow_hooks = false
//! protected_paths = ["deploy/**"]        # no tool writes there
//! audit_dir = "/var/log/agent"           # mandatory audit sink
//! message = "Ask the platform team for an exception."
//! ```
//!
//! Unknown keys are errors too: a key from a newer version may restrict
//! something this one would otherwise leave open.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::{Mode, Policy};

/// Where administrators put the file.
pub const SYSTEM_FILE: &str = "/etc/agent/managed.toml";
/// Names another file instead (tests, packaging checks).
pub const PATH_ENV: &str = "AGENT_MANAGED_CONFIG";

/// The administrator's restrictions; [`Managed::default`] restricts nothing.
#[derive(Debug, Clone, Serialize)]
pub struct Managed {
    /// The file it came from; None when there is none.
    pub path: Option<PathBuf>,
    /// The file `AGENT_MANAGED_CONFIG` named, applied over `path`.
    pub also: Option<PathBuf>,
    /// Permission modes a user may pick; None: all.
    pub allowed_modes: Option<Vec<Mode>>,
    /// Every coding task is planned in plan mode and changes nothing until
    /// the user approves its plan (`Mode::Plan`).
    pub require_plan: bool,
    /// Commands run only inside the sandbox: none when it cannot be set up,
    /// and `--sandbox off` is refused.
    pub require_sandbox: bool,
    /// `Some(false)`: commands never reach the network, whatever policy.toml says.
    pub allow_network: Option<bool>,
    /// `allow_network = ["host:port", ...]`: commands reach at most these
    /// hosts (a workspace's own list is narrowed to them, its `true`
    /// becomes them).
    pub network_allowlist: Option<Vec<String>>,
    /// GGUF files allowed, by sha256 (lowercase hex); None: any.
    pub allowed_models: Option<Vec<String>>,
    /// `--server` URLs allowed; None: any, empty: none.
    pub allowed_servers: Option<Vec<String>>,
    /// MCP servers allowed, as `name:sha256-of-definition`; when set it
    /// replaces the user's own approvals.
    pub mcp_allowlist: Option<Vec<String>>,
    pub allow_hooks: bool,
    /// Workspace-relative paths no tool writes (a trailing `/**` is the folder).
    pub protected_paths: Vec<PathBuf>,
    /// The mandatory audit sink: `audit_dir/USER.jsonl`.
    pub audit_dir: Option<PathBuf>,
    /// Shown with every refusal.
    pub message: Option<String>,
}

impl Default for Managed {
    fn default() -> Self {
        Self {
            path: None,
            also: None,
            allowed_modes: None,
            require_plan: false,
            require_sandbox: false,
            allow_network: None,
            network_allowlist: None,
            allowed_models: None,
            allowed_servers: None,
            mcp_allowlist: None,
            allow_hooks: true,
            protected_paths: Vec::new(),
            audit_dir: None,
            message: None,
        }
    }
}

/// The file as written; spans name the line of a bad value.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    allowed_modes: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    require_plan: bool,
    #[serde(default)]
    require_sandbox: bool,
    allow_network: Option<Spanned<crate::file::NetworkSetting>>,
    allowed_models: Option<Vec<Spanned<String>>>,
    allowed_servers: Option<Vec<String>>,
    mcp_allowlist: Option<Vec<Spanned<String>>>,
    allow_hooks: Option<bool>,
    #[serde(default)]
    protected_paths: Vec<Spanned<String>>,
    audit_dir: Option<Spanned<String>>,
    message: Option<String>,
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Managed {
    /// `/etc/agent/managed.toml`, narrowed by the file `AGENT_MANAGED_CONFIG`
    /// names (that file alone where the system's does not exist); nothing
    /// restricted when neither exists. A named file that is missing, or any
    /// file that cannot be read, is an error.
    pub fn load() -> anyhow::Result<Self> {
        let named = std::env::var_os(PATH_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        Self::load_from(Path::new(SYSTEM_FILE), named.as_deref())
    }

    /// [`Managed::load`] with the system file at `system`.
    pub fn load_from(system: &Path, named: Option<&Path>) -> anyhow::Result<Self> {
        let read = |path: &Path, required: bool| -> anyhow::Result<Option<Self>> {
            match std::fs::read_to_string(path) {
                Ok(text) => Self::parse(&text, path).map(Some),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(None),
                Err(e) => anyhow::bail!(
                    "cannot read the managed configuration {}: {e}\n  the agent does not run without the rules its administrator set",
                    path.display()
                ),
            }
        };
        let system = read(system, false)?;
        let named = match named {
            Some(p) if Some(p) != system.as_ref().and_then(|s| s.path.as_deref()) => read(p, true)?,
            _ => None,
        };
        Ok(match (system, named) {
            (Some(system), Some(named)) => system.narrowed(named),
            (system, named) => system.or(named).unwrap_or_default(),
        })
    }

    /// This file's rules and `other`'s, both applied: every list the
    /// intersection, every switch the stricter, the protected paths the union.
    pub fn narrowed(self, other: Self) -> Self {
        fn both<T: PartialEq>(a: Option<Vec<T>>, b: Option<Vec<T>>) -> Option<Vec<T>> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.into_iter().filter(|x| b.contains(x)).collect()),
                (a, b) => a.or(b),
            }
        }
        let mut protected_paths = self.protected_paths;
        for p in other.protected_paths {
            if !protected_paths.contains(&p) {
                protected_paths.push(p);
            }
        }
        let mut allow_network =
            if self.allow_network == Some(false) || other.allow_network == Some(false) {
                Some(false)
            } else {
                self.allow_network.or(other.allow_network)
            };
        let mut network_allowlist = match (self.network_allowlist, other.network_allowlist) {
            (Some(a), Some(b)) => Some(crate::network::intersect(&a, &b)),
            (a, b) => a.or(b),
        };
        if allow_network == Some(false) || network_allowlist.as_ref().is_some_and(Vec::is_empty) {
            allow_network = Some(false);
            network_allowlist = None;
        }
        Self {
            path: self.path,
            also: other.path,
            allowed_modes: both(self.allowed_modes, other.allowed_modes),
            require_plan: self.require_plan || other.require_plan,
            require_sandbox: self.require_sandbox || other.require_sandbox,
            allow_network,
            network_allowlist,
            allowed_models: both(self.allowed_models, other.allowed_models),
            allowed_servers: both(self.allowed_servers, other.allowed_servers),
            mcp_allowlist: both(self.mcp_allowlist, other.mcp_allowlist),
            allow_hooks: self.allow_hooks && other.allow_hooks,
            protected_paths,
            audit_dir: self.audit_dir.or(other.audit_dir),
            message: self.message.or(other.message),
        }
    }

    /// Parses a managed file's text (`path` names it in errors and in `agent config show`).
    pub fn parse(text: &str, path: &Path) -> anyhow::Result<Self> {
        let bad = |offset: usize, what: String| {
            let (line, col) = line_col(text, offset);
            anyhow::anyhow!(
                "{}:{line}:{col}: invalid managed configuration: {what}\n  the agent does not run until the administrator fixes it",
                path.display()
            )
        };
        let file: File = toml::from_str(text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            bad(offset, e.message().trim().to_string())
        })?;
        let mut managed = Self {
            path: Some(path.to_path_buf()),
            require_plan: file.require_plan,
            require_sandbox: file.require_sandbox,
            allowed_servers: file
                .allowed_servers
                .map(|list| list.iter().map(|u| normal_url(u)).collect()),
            allow_hooks: file.allow_hooks.unwrap_or(true),
            message: file.message.filter(|m| !m.trim().is_empty()),
            ..Self::default()
        };
        if let Some(n) = file.allow_network {
            match n.get_ref() {
                crate::file::NetworkSetting::Switch(on) => managed.allow_network = Some(*on),
                crate::file::NetworkSetting::Hosts(list) if list.is_empty() => {
                    managed.allow_network = Some(false);
                }
                crate::file::NetworkSetting::Hosts(list) => {
                    crate::network::check(list)
                        .map_err(|e| bad(n.span().start, format!("allow_network: {e}")))?;
                    managed.network_allowlist = Some(list.clone());
                }
            }
        }
        if let Some(list) = file.allowed_modes {
            let mut modes = Vec::new();
            for m in list {
                let mode = Mode::from_str(m.get_ref(), true).map_err(|_| {
                    bad(
                        m.span().start,
                        format!(
                            "`{}` is not a mode (human, confirm, yolo, plan)",
                            m.get_ref()
                        ),
                    )
                })?;
                modes.push(mode);
            }
            managed.allowed_modes = Some(modes);
        }
        if let Some(list) = file.allowed_models {
            let mut shas = Vec::new();
            for s in list {
                if !is_sha256(s.get_ref()) {
                    return Err(bad(
                        s.span().start,
                        format!("`{}` is not a sha256 (64 hex digits)", s.get_ref()),
                    ));
                }
                shas.push(s.get_ref().to_ascii_lowercase());
            }
            managed.allowed_models = Some(shas);
        }
        if let Some(list) = file.mcp_allowlist {
            let mut entries = Vec::new();
            for s in list {
                match s.get_ref().rsplit_once(':') {
                    Some((name, sha)) if !name.is_empty() && is_sha256(sha) => {
                        entries.push(format!("{name}:{}", sha.to_ascii_lowercase()))
                    }
                    _ => {
                        return Err(bad(
                            s.span().start,
                            format!(
                                "`{}` is not NAME:SHA256 (`agent mcp list` shows each server's)",
                                s.get_ref()
                            ),
                        ))
                    }
                }
            }
            managed.mcp_allowlist = Some(entries);
        }
        for p in file.protected_paths {
            let path = p.get_ref().trim_end_matches("/**").trim_end_matches('/');
            if path.is_empty()
                || path.contains(['*', '?', '[', '{'])
                || path.split('/').any(|c| c == "..")
            {
                return Err(bad(
                    p.span().start,
                    format!("`{}` must be a workspace path (a folder may end in /**; no other wildcards, no ..)", p.get_ref()),
                ));
            }
            managed.protected_paths.push(PathBuf::from(path));
        }
        if let Some(dir) = file.audit_dir {
            if !Path::new(dir.get_ref()).is_absolute() {
                return Err(bad(
                    dir.span().start,
                    format!("audit_dir `{}` must be an absolute path", dir.get_ref()),
                ));
            }
            managed.audit_dir = Some(PathBuf::from(dir.get_ref()));
        }
        Ok(managed)
    }

    /// Whether a file was found (even one that restricts nothing).
    pub fn is_present(&self) -> bool {
        self.path.is_some()
    }

    /// "Your administrator does not allow WHAT." and the administrator's message.
    pub fn refusal(&self, what: &str) -> String {
        let mut text = format!("Your administrator does not allow {what}.");
        if let Some(m) = &self.message {
            text.push(' ');
            text.push_str(m.trim());
        }
        text
    }

    pub fn allows_mode(&self, mode: Mode) -> bool {
        self.allowed_modes
            .as_ref()
            .is_none_or(|m| m.contains(&mode))
    }

    /// `Err(refusal)` unless the mode may be picked.
    pub fn check_mode(&self, mode: Mode) -> Result<(), String> {
        if self.allows_mode(mode) {
            return Ok(());
        }
        let allowed: Vec<String> = self.allowed_modes.iter().flatten().map(mode_name).collect();
        Err(self.refusal(&format!(
            "--mode {} (allowed: {})",
            mode_name(&mode),
            allowed.join(", ")
        )))
    }

    /// `Err(refusal)` when the sandbox is required and the user turned it off.
    pub fn check_sandbox_flag(&self, sandbox_on: bool) -> Result<(), String> {
        if self.require_sandbox && !sandbox_on {
            return Err(self.refusal("--sandbox off (commands run only inside the sandbox)"));
        }
        Ok(())
    }

    /// Whether a model file with this sha256 may run.
    pub fn allows_model(&self, sha256: &str) -> bool {
        self.allowed_models
            .as_ref()
            .is_none_or(|list| list.iter().any(|s| s.eq_ignore_ascii_case(sha256)))
    }

    /// `Err(refusal)` unless `--server URL` is allowed.
    pub fn check_server(&self, url: &str) -> Result<(), String> {
        match &self.allowed_servers {
            Some(list) if !list.contains(&normal_url(url)) => Err(self.refusal(&format!(
                "the model server {url} (allowed: {})",
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join(", ")
                }
            ))),
            _ => Ok(()),
        }
    }

    /// Whether the administrator's MCP allowlist replaces the user's approvals.
    pub fn has_mcp_allowlist(&self) -> bool {
        self.mcp_allowlist.is_some()
    }

    /// Whether an MCP server with this name and definition fingerprint is on
    /// the allowlist (always, when there is none: the user's trust decides).
    pub fn allows_mcp(&self, name: &str, fingerprint: &str) -> bool {
        let entry = format!("{name}:{fingerprint}");
        self.mcp_allowlist
            .as_ref()
            .is_none_or(|list| list.contains(&entry))
    }

    /// Narrows a workspace's policy: network off, sandbox required and on,
    /// the protected paths added. Never widens anything.
    pub fn restrict(&self, policy: &mut Policy) {
        if self.allow_network == Some(false) {
            policy.allow_network = false;
            policy.network_allowlist = None;
        }
        if let (Some(bound), true) = (&self.network_allowlist, policy.allow_network) {
            let list = match &policy.network_allowlist {
                Some(own) => crate::network::intersect(own, bound),
                None => bound.clone(),
            };
            policy.allow_network = !list.is_empty();
            policy.network_allowlist = (!list.is_empty()).then_some(list);
        }
        if self.require_sandbox {
            policy.require_sandbox = true;
            policy.sandbox = true;
        }
        for p in &self.protected_paths {
            if !policy.managed_paths.contains(p) {
                policy.managed_paths.push(p.clone());
            }
        }
    }

    /// What the file restricts, one line each (for `agent doctor`).
    pub fn restrictions(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(m) = &self.allowed_modes {
            let names: Vec<String> = m.iter().map(mode_name).collect();
            out.push(format!("modes: only {}", names.join(", ")));
        }
        if self.require_sandbox {
            out.push("commands run only inside the sandbox".into());
        }
        if self.allow_network == Some(false) {
            out.push("commands never reach the network".into());
        }
        if let Some(list) = &self.network_allowlist {
            out.push(format!(
                "commands reach at most these hosts, through the proxy: {}",
                list.join(", ")
            ));
        }
        if let Some(m) = &self.allowed_models {
            out.push(format!("models: {} allowed by sha256", m.len()));
        }
        if let Some(s) = &self.allowed_servers {
            out.push(format!(
                "model servers: {}",
                if s.is_empty() {
                    "none".into()
                } else {
                    s.join(", ")
                }
            ));
        }
        if let Some(m) = &self.mcp_allowlist {
            out.push(format!(
                "MCP servers: only the {} on the allowlist (user approvals ignored)",
                m.len()
            ));
        }
        if !self.allow_hooks {
            out.push("hooks: off".into());
        }
        if !self.protected_paths.is_empty() {
            let p: Vec<String> = self
                .protected_paths
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            out.push(format!("protected paths: {}", p.join(", ")));
        }
        if let Some(d) = &self.audit_dir {
            out.push(format!("audit sink: {}", d.display()));
        }
        out
    }
}

/// A mode as the command line spells it.
pub fn mode_name(mode: &Mode) -> String {
    mode.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// What a mode does, in a line (its `--mode` help).
pub fn mode_help(mode: &Mode) -> String {
    mode.to_possible_value()
        .and_then(|v| v.get_help().map(|h| h.to_string()))
        .unwrap_or_default()
}

/// URLs compared without a trailing slash.
fn normal_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(text: &str) -> anyhow::Result<Managed> {
        Managed::parse(text, Path::new("/etc/agent/managed.toml"))
    }

    #[test]
    fn no_file_restricts_nothing() {
        let m = Managed::default();
        assert!(m.allows_mode(Mode::Yolo));
        assert!(m.allows_model("anything"));
        assert!(m.check_server("http://x").is_ok());
        assert!(m.allows_mcp("docs", SHA));
        let mut policy = Policy::builtin(Mode::Confirm);
        policy.allow_network = true;
        m.restrict(&mut policy);
        assert!(policy.allow_network);
    }

    #[test]
    fn a_managed_host_list_bounds_the_workspaces_network() {
        let m =
            parse("allow_network = [\"*.corp.example:443\", \"files.internal:8080\"]\n").unwrap();
        assert!(m
            .restrictions()
            .iter()
            .any(|r| r.contains("*.corp.example:443")));
        // Off stays off.
        let mut policy = Policy::builtin(Mode::Confirm);
        m.restrict(&mut policy);
        assert!(!policy.allow_network && policy.network_allowlist.is_none());
        // The whole network becomes the list.
        policy.allow_network = true;
        m.restrict(&mut policy);
        assert_eq!(
            policy.network_allowlist.as_deref(),
            Some(
                &[
                    "*.corp.example:443".to_string(),
                    "files.internal:8080".to_string()
                ][..]
            )
        );
        // A workspace's own list is narrowed to what both allow.
        policy.network_allowlist = Some(vec![
            "pypi.corp.example:443".into(),
            "evil.example:443".into(),
        ]);
        m.restrict(&mut policy);
        assert_eq!(
            policy.network_allowlist,
            Some(vec!["pypi.corp.example:443".to_string()])
        );
        // Nothing in common: no network.
        policy.network_allowlist = Some(vec!["evil.example:443".into()]);
        m.restrict(&mut policy);
        assert!(!policy.allow_network && policy.network_allowlist.is_none());
        // Two managed files: the intersection; `false` in either wins.
        let other = parse("allow_network = [\"pypi.corp.example:443\"]\n").unwrap();
        let both = m.clone().narrowed(other);
        assert_eq!(
            both.network_allowlist,
            Some(vec!["pypi.corp.example:443".to_string()])
        );
        let off = m.narrowed(parse("allow_network = false\n").unwrap());
        assert_eq!(off.allow_network, Some(false));
        assert!(off.network_allowlist.is_none());
        let e = parse("\nallow_network = [\"no-port.example\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2:") && e.contains("host:port"), "{e}");
    }

    #[test]
    fn every_key_narrows() {
        let m = parse(&format!(
            "allowed_modes = [\"human\", \"confirm\"]\nrequire_sandbox = true\nallow_network = false\n\
             allowed_models = [\"{}\"]\nallowed_servers = [\"http://gpu:8080/v1/\"]\n\
             mcp_allowlist = [\"docs:{SHA}\"]\nallow_hooks = false\nprotected_paths = [\"deploy/**\"]\n\
             audit_dir = \"/var/log/agent\"\nmessage = \"Ask #dev-tools.\"\n",
            SHA.to_uppercase()
        ))
        .unwrap();
        let refusal = m.check_mode(Mode::Yolo).unwrap_err();
        assert!(
            refusal.starts_with("Your administrator does not allow --mode yolo"),
            "{refusal}"
        );
        assert!(refusal.ends_with("Ask #dev-tools."), "{refusal}");
        assert!(m.check_mode(Mode::Human).is_ok());
        assert!(m.check_sandbox_flag(false).is_err());
        assert!(m.allows_model(SHA));
        assert!(!m.allows_model(&"f".repeat(64)));
        assert!(m.check_server("http://gpu:8080/v1").is_ok());
        assert!(m.check_server("http://elsewhere/v1").is_err());
        assert!(m.allows_mcp("docs", SHA));
        assert!(!m.allows_mcp("other", SHA));
        assert!(!m.allow_hooks);
        let mut policy = Policy::builtin(Mode::Confirm);
        policy.allow_network = true;
        policy.sandbox = false;
        m.restrict(&mut policy);
        assert!(!policy.allow_network && policy.sandbox && policy.require_sandbox);
        assert_eq!(policy.managed_paths, vec![PathBuf::from("deploy")]);
        assert_eq!(m.restrictions().len(), 9);
    }

    #[test]
    fn a_malformed_file_names_line_and_column() {
        let e =
            parse("require_sandbox = true\nallowed_modes = [\"human\", \"yolo\"\n").unwrap_err();
        assert!(e.to_string().starts_with("/etc/agent/managed.toml:"), "{e}");
        let e =
            parse("require_sandbox = true\nallowed_modes = [\"human\", \"sudo\"]\n").unwrap_err();
        assert!(e.to_string().contains("managed.toml:2:27:"), "{e}");
        let e = parse("allow_netwrk = false\n").unwrap_err();
        assert!(e.to_string().contains(":1:1:"), "{e}");
        let e = parse("allowed_models = [\"abc\"]\n").unwrap_err();
        assert!(
            e.to_string().contains(":1:19:") && e.to_string().contains("sha256"),
            "{e}"
        );
        assert!(parse("audit_dir = \"logs\"").is_err());
        assert!(parse("protected_paths = [\"**/*.pem\"]").is_err());
        assert!(parse("mcp_allowlist = [\"docs\"]").is_err());
    }

    #[test]
    fn a_named_file_only_adds_restrictions_to_the_systems() {
        let dir = tempfile::tempdir().unwrap();
        let system = dir.path().join("managed.toml");
        let named = dir.path().join("mine.toml");
        std::fs::write(
            &system,
            "allowed_modes = [\"human\", \"confirm\"]\nrequire_sandbox = true\nallow_network = false\nprotected_paths = [\"deploy/**\"]\n",
        )
        .unwrap();
        // Issue 50's attack: an empty file named by the variable.
        std::fs::write(&named, "allowed_modes = [\"yolo\", \"confirm\"]\nallow_network = true\nprotected_paths = [\"ci\"]\nrequire_plan = true\n").unwrap();
        let m = Managed::load_from(&system, Some(&named)).unwrap();
        assert_eq!(m.allowed_modes, Some(vec![Mode::Confirm]));
        assert!(m.require_sandbox);
        assert!(m.require_plan, "either file may require plans");
        assert_eq!(m.allow_network, Some(false));
        assert_eq!(
            m.protected_paths,
            [PathBuf::from("deploy"), PathBuf::from("ci")]
        );
        assert_eq!(
            (m.path.as_deref(), m.also.as_deref()),
            (Some(system.as_path()), Some(named.as_path()))
        );
        let empty = Managed::load_from(&system, Some(Path::new("/dev/null"))).unwrap();
        assert!(!empty.allows_mode(Mode::Yolo) && empty.require_sandbox);
        // Alone, the named file applies; a missing named file is an error.
        let alone = Managed::load_from(&dir.path().join("none.toml"), Some(&named)).unwrap();
        assert!(alone.allows_mode(Mode::Yolo) && alone.path.as_deref() == Some(named.as_path()));
        assert!(Managed::load_from(&system, Some(&dir.path().join("gone.toml"))).is_err());
    }
}
