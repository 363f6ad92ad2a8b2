//! `agent config show [--origin] [--json]`: the effective configuration of
//! the workspace around the current directory, and where each setting comes
//! from. Precedence, highest first: managed (only where it restricts),
//! command line, environment, workspace, user, defaults.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;
use serde_json::{json, Value};

use super::admin::{self, Refused};
use super::exit;
use crate::cli::{ConfigArgs, ConfigCommand, Switch};
use agent_policy::managed::{mode_name, Managed};
use agent_policy::{Mode, Policy};

/// One effective setting.
#[derive(Debug, Serialize)]
struct Entry {
    key: &'static str,
    value: Value,
    /// managed, command line, environment, workspace, user or default.
    origin: &'static str,
    /// The file or variable it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}

fn entry(key: &'static str, value: Value, origin: &'static str, source: Option<String>) -> Entry {
    Entry {
        key,
        value,
        origin,
        source,
    }
}

pub(crate) fn run(args: &ConfigArgs) -> Result<i32> {
    let ConfigCommand::Show {
        origin,
        json,
        mode,
        sandbox,
        model,
        server,
    } = &args.command;
    let managed = admin::managed();
    if let Some(mode) = mode {
        managed.check_mode(*mode).map_err(Refused)?;
    }
    if let Some(s) = sandbox {
        managed
            .check_sandbox_flag(*s == Switch::On)
            .map_err(Refused)?;
    }
    if let Some(url) = server {
        managed.check_server(url).map_err(Refused)?;
    }
    let root = agent_base::paths::repo_root(None)?;
    let state = agent_tools::Workspace::new(&root)?.state_dir();
    let mut entries = session_entries(
        managed,
        *mode,
        *sandbox,
        model.as_deref(),
        server.as_deref(),
    );
    entries.extend(workspace_entries(managed, &root, &state)?);
    entries.extend(managed_entries(managed));
    print(&entries, *origin, *json)?;
    Ok(exit::OK)
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
    sandbox: Option<Switch>,
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
        Some(Switch::Off) => entry(
            "sandbox",
            "off".into(),
            "command line",
            Some("--sandbox".into()),
        ),
        Some(Switch::On) => entry(
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
    let network_asked = policy.allow_network;
    m.restrict(&mut policy);
    let mut out = Vec::new();
    out.push(if m.allow_network == Some(false) {
        entry("allow_network", false.into(), "managed", managed_source(m))
    } else {
        let src = from_policy("allow_network");
        entry(
            "allow_network",
            network_asked.into(),
            if src.is_some() {
                "workspace"
            } else {
                "default"
            },
            src,
        )
    });
    for (key, value) in [
        ("timeout_s", policy.timeout_s),
        ("check_timeout_s", policy.check_timeout_s),
    ] {
        let src = from_policy(key);
        out.push(entry(
            key,
            value.into(),
            if src.is_some() {
                "workspace"
            } else {
                "default"
            },
            src,
        ));
    }
    let settings = agent_core::settings::Settings::load(root)?;
    let settings_file = agent_core::settings::path(root);
    let set = toml_keys(&settings_file);
    let src = set
        .contains(&"compact_at".to_string())
        .then(|| settings_file.display().to_string());
    out.push(entry(
        "compact_at",
        json!(settings.compact_at),
        if src.is_some() {
            "workspace"
        } else {
            "default"
        },
        src,
    ));
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
    let origin = |set: bool| if set { "managed" } else { "default" };
    let modes = m
        .allowed_modes
        .as_ref()
        .map(|l| json!(l.iter().map(mode_name).collect::<Vec<_>>()));
    vec![
        entry(
            "allowed_modes",
            modes.clone().unwrap_or(json!(["human", "confirm", "yolo"])),
            origin(modes.is_some()),
            src.clone().filter(|_| modes.is_some()),
        ),
        entry(
            "require_sandbox",
            m.require_sandbox.into(),
            origin(m.require_sandbox),
            src.clone().filter(|_| m.require_sandbox),
        ),
        entry(
            "allowed_models",
            json!(m.allowed_models),
            origin(m.allowed_models.is_some()),
            src.clone().filter(|_| m.allowed_models.is_some()),
        ),
        entry(
            "allowed_servers",
            json!(m.allowed_servers),
            origin(m.allowed_servers.is_some()),
            src.clone().filter(|_| m.allowed_servers.is_some()),
        ),
        entry(
            "mcp_allowlist",
            json!(m.mcp_allowlist),
            origin(m.mcp_allowlist.is_some()),
            src.clone().filter(|_| m.mcp_allowlist.is_some()),
        ),
        entry(
            "message",
            json!(m.message),
            origin(m.message.is_some()),
            src.filter(|_| m.message.is_some()),
        ),
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

fn print(entries: &[Entry], origin: bool, json: bool) -> Result<()> {
    if json {
        let value = if origin {
            serde_json::to_value(entries)?
        } else {
            Value::Object(
                entries
                    .iter()
                    .map(|e| (e.key.to_string(), e.value.clone()))
                    .collect(),
            )
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    for e in entries {
        let value = match &e.value {
            Value::Null => "(none)".to_string(),
            v => v.to_string(),
        };
        if origin {
            let source = e
                .source
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            println!("{:<16} = {:<40} # {}{source}", e.key, value, e.origin);
        } else {
            println!("{:<16} = {value}", e.key);
        }
    }
    Ok(())
}
