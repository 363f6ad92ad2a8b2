//! `agent config show`: the effective configuration of a workspace, and
//! where each setting comes from. Precedence, highest first: managed (only
//! where it restricts), command line, environment, workspace, user,
//! defaults.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use crate::admin::{self, Refused};
use agent_policy::managed::{mode_name, Managed};
use agent_policy::{Mode, Policy};

/// What the command line says of a session, for `config show` to place.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags<'a> {
    pub mode: Option<Mode>,
    pub sandbox: Option<bool>,
    pub model: Option<&'a Path>,
    pub server: Option<&'a str>,
}

/// One effective setting.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub key: &'static str,
    pub value: Value,
    /// managed, command line, environment, workspace, user or default.
    pub origin: &'static str,
    /// The file or variable it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

fn entry(key: &'static str, value: Value, origin: &'static str, source: Option<String>) -> Entry {
    Entry {
        key,
        value,
        origin,
        source,
    }
}

/// A setting a workspace file sets when `source` names it, else the default.
fn from_file(key: &'static str, value: Value, source: Option<String>) -> Entry {
    let origin = if source.is_some() {
        "workspace"
    } else {
        "default"
    };
    entry(key, value, origin, source)
}

/// Every effective setting of the workspace at `root` with `flags`; a
/// flag the administrator forbids is refused.
pub fn effective(root: &Path, flags: Flags<'_>) -> Result<Vec<Entry>> {
    let managed = admin::managed();
    if let Some(mode) = flags.mode {
        managed.check_mode(mode).map_err(Refused)?;
    }
    if let Some(on) = flags.sandbox {
        managed.check_sandbox_flag(on).map_err(Refused)?;
    }
    if let Some(url) = flags.server {
        managed.check_server(url).map_err(Refused)?;
    }
    // policy.toml is the team's, in `.agent/` (not the state folder).
    let state = agent_tools::Workspace::new(root)?.team_dir();
    let mut entries = session_entries(
        managed,
        flags.mode,
        flags.sandbox,
        flags.model,
        flags.server,
    );
    entries.extend(workspace_entries(managed, root, &state)?);
    entries.extend(managed_entries(managed));
    Ok(entries)
}

fn managed_source(m: &Managed) -> Option<String> {
    let path = m.path.as_ref()?.display().to_string();
    Some(match &m.also {
        Some(also) => format!("{path} + {} (AGENT_MANAGED_CONFIG)", also.display()),
        None => path,
    })
}

/// What a session's flags and the environment decide.
fn session_entries(
    m: &Managed,
    mode: Option<Mode>,
    sandbox: Option<bool>,
    model: Option<&Path>,
    server: Option<&str>,
) -> Vec<Entry> {
    let mut out = Vec::new();
    out.push(match mode {
        Some(mode) => entry(
            "mode",
            mode_name(&mode).into(),
            "command line",
            Some("--mode".into()),
        ),
        None => entry("mode", "confirm".into(), "default", None),
    });
    out.push(match sandbox {
        _ if m.require_sandbox => entry("sandbox", "on".into(), "managed", managed_source(m)),
        Some(false) => entry(
            "sandbox",
            "off".into(),
            "command line",
            Some("--sandbox".into()),
        ),
        Some(true) => entry(
            "sandbox",
            "on".into(),
            "command line",
            Some("--sandbox".into()),
        ),
        None => entry("sandbox", "on".into(), "default", None),
    });
    let env_model = std::env::var_os("AGENT_MODEL").filter(|v| !v.is_empty());
    out.push(match (server, model, env_model) {
        (Some(url), _, _) => entry(
            "server",
            url.into(),
            "command line",
            Some("--server".into()),
        ),
        (None, Some(p), _) => entry(
            "model",
            p.display().to_string().into(),
            "command line",
            Some("--model".into()),
        ),
        (None, None, Some(p)) => entry(
            "model",
            PathBuf::from(p).display().to_string().into(),
            "environment",
            Some("AGENT_MODEL".into()),
        ),
        (None, None, None) => entry(
            "model",
            agent_base::paths::default_chat_model()
                .display()
                .to_string()
                .into(),
            "default",
            None,
        ),
    });
    out
}

/// `allow_network` as policy.toml writes it: a switch, or the hosts.
fn network_value(policy: &Policy) -> Value {
    match (&policy.network_allowlist, policy.allow_network) {
        (Some(list), true) => json!(list),
        (_, on) => on.into(),
    }
}

/// What the workspace's files decide, narrowed by the managed file.
fn workspace_entries(m: &Managed, root: &Path, state: &Path) -> Result<Vec<Entry>> {
    let policy_file = state.join(agent_policy::POLICY_FILE);
    let mut policy = Policy::load(state, Mode::Confirm)?;
    let written = toml_keys(&policy_file);
    let from_policy = |key: &str| {
        written
            .contains(&key.to_string())
            .then(|| policy_file.display().to_string())
    };
    let network_asked = network_value(&policy);
    m.restrict(&mut policy);
    let network = network_value(&policy);
    let mut out = Vec::new();
    // The managed file decides where it changed what the workspace asked.
    out.push(
        if m.allow_network == Some(false)
            || (m.network_allowlist.is_some() && network != network_asked)
        {
            entry("allow_network", network, "managed", managed_source(m))
        } else {
            from_file("allow_network", network, from_policy("allow_network"))
        },
    );
    for (key, value) in [
        ("timeout_s", policy.timeout_s),
        ("check_timeout_s", policy.check_timeout_s),
    ] {
        out.push(from_file(key, value.into(), from_policy(key)));
    }
    let settings = agent_config::settings::Settings::load(root)?;
    let settings_file = agent_config::settings::path(root);
    let set = toml_keys(&settings_file);
    let src = set
        .contains(&"compact_at".to_string())
        .then(|| settings_file.display().to_string());
    out.push(from_file("compact_at", json!(settings.compact_at), src));
    let hooks = settings.pre_tool.len() + settings.post_tool.len();
    out.push(if !m.allow_hooks {
        entry("hooks", "off".into(), "managed", managed_source(m))
    } else if hooks > 0 {
        entry(
            "hooks",
            format!("{hooks} declared").into(),
            "workspace",
            Some(settings_file.display().to_string()),
        )
    } else {
        entry("hooks", "none".into(), "default", None)
    });
    let mut protected: Vec<String> = agent_tools::workspace::PROTECTED_DIRS
        .iter()
        .map(|d| d.to_string())
        .collect();
    protected.extend(
        policy
            .protected_paths
            .iter()
            .map(|p| p.display().to_string()),
    );
    let origin = if m.protected_paths.is_empty() {
        "default"
    } else {
        "managed"
    };
    out.push(entry(
        "protected_paths",
        json!(protected),
        origin,
        managed_source(m).filter(|_| origin == "managed"),
    ));
    out.push(match m.mcp_allowlist {
        Some(_) => entry(
            "mcp_trust",
            "administrator's allowlist".into(),
            "managed",
            managed_source(m),
        ),
        None => entry(
            "mcp_trust",
            "your approvals (agent mcp trust)".into(),
            "user",
            agent_base::paths::config_dir()
                .map(|d| d.join("trusted-mcp.json").display().to_string()),
        ),
    });
    out.push(entry(
        "audit_log",
        state.join("logs/audit.jsonl").display().to_string().into(),
        "default",
        None,
    ));
    let sink = admin::audit_config().sink_file();
    out.push(match (&m.audit_dir, sink) {
        (Some(_), Some(f)) => entry(
            "audit_sink",
            f.display().to_string().into(),
            "managed",
            managed_source(m),
        ),
        (None, Some(f)) => entry(
            "audit_sink",
            f.display().to_string().into(),
            "environment",
            Some(admin::AUDIT_DIR_ENV.into()),
        ),
        _ => entry("audit_sink", Value::Null, "default", None),
    });
    Ok(out)
}

/// The managed file's lists, which only it sets.
fn managed_entries(m: &Managed) -> Vec<Entry> {
    let src = managed_source(m);
    // Managed, and named with its file, when the file sets it.
    let set_by = |key, value: Value, set: bool| {
        let origin = if set { "managed" } else { "default" };
        entry(key, value, origin, src.clone().filter(|_| set))
    };
    let modes = m
        .allowed_modes
        .as_ref()
        .map(|l| json!(l.iter().map(mode_name).collect::<Vec<_>>()));
    vec![
        set_by(
            "allowed_modes",
            modes.clone().unwrap_or(json!(["human", "confirm", "yolo"])),
            modes.is_some(),
        ),
        set_by(
            "require_sandbox",
            m.require_sandbox.into(),
            m.require_sandbox,
        ),
        set_by(
            "allowed_models",
            json!(m.allowed_models),
            m.allowed_models.is_some(),
        ),
        set_by(
            "allowed_servers",
            json!(m.allowed_servers),
            m.allowed_servers.is_some(),
        ),
        set_by(
            "mcp_allowlist",
            json!(m.mcp_allowlist),
            m.mcp_allowlist.is_some(),
        ),
        set_by("message", json!(m.message), m.message.is_some()),
    ]
}

/// The top-level `key = value` lines of a TOML file, by key (none when it
/// is missing; the file itself was already parsed by its owner).
fn toml_keys(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut keys = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            break;
        }
        if let Some((key, _)) = line.split_once('=') {
            keys.push(key.trim().to_string());
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(entries: &'a [Entry], key: &str) -> &'a Entry {
        entries.iter().find(|e| e.key == key).unwrap()
    }

    #[test]
    fn a_flag_says_it_came_from_the_command_line_and_a_default_says_so() {
        let m = Managed::default();
        let entries = session_entries(&m, Some(Mode::Yolo), None, None, Some("http://gpu:8080/v1"));
        let mode = find(&entries, "mode");
        assert_eq!(
            (mode.value.as_str(), mode.origin),
            (Some("yolo"), "command line")
        );
        assert_eq!(mode.source.as_deref(), Some("--mode"));
        let sandbox = find(&entries, "sandbox");
        assert_eq!(
            (sandbox.value.as_str(), sandbox.origin),
            (Some("on"), "default")
        );
        let server = find(&entries, "server");
        assert_eq!(server.value, "http://gpu:8080/v1");
        assert!(
            entries.iter().all(|e| e.key != "model"),
            "a server, not a model"
        );

        let off = session_entries(&m, None, Some(false), None, None);
        assert_eq!(find(&off, "sandbox").value, "off");
        assert_eq!(find(&off, "mode").origin, "default");
    }

    #[test]
    fn the_administrators_required_sandbox_wins_over_the_flag() {
        let m = Managed {
            require_sandbox: true,
            ..Managed::default()
        };
        let entries = session_entries(&m, None, Some(false), None, None);
        let sandbox = find(&entries, "sandbox");
        assert_eq!(
            (sandbox.value.as_str(), sandbox.origin),
            (Some("on"), "managed")
        );
    }
}
