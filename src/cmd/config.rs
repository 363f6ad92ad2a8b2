//! `agent config show [--origin] [--json]`: the effective configuration of
//! the workspace around the current directory, and where each setting comes
//! from (`agent_session::config`).

use anyhow::Result;
use serde_json::Value;

use super::exit;
use agent_cli::{ConfigArgs, ConfigCommand, Switch};
use agent_session::config::{Entry, Flags};

pub(crate) fn run(args: &ConfigArgs) -> Result<i32> {
    let ConfigCommand::Show {
        origin,
        json,
        mode,
        sandbox,
        model,
        server,
    } = &args.command;
    let root = agent_base::paths::repo_root(None)?;
    let flags = Flags {
        mode: *mode,
        sandbox: sandbox.map(|s| s == Switch::On),
        model: model.as_deref(),
        server: server.as_deref(),
    };
    let entries = agent_session::config::effective(&root, flags)?;
    print(&entries, *origin, *json)?;
    Ok(exit::OK)
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
