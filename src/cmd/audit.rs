//! `agent audit verify` and `agent audit export`: the audit trail's hash
//! chain checked ([`agent_core::audit`]), and its records for a SIEM.

use std::path::PathBuf;

use anyhow::{bail, Result};
use chrono::{DateTime, FixedOffset};

use super::exit;
use crate::cli::{AuditArgs, AuditCommand};
use agent_core::audit;

pub(crate) fn run(args: &AuditArgs) -> Result<i32> {
    match &args.command {
        AuditCommand::Verify { file, head, json } => verify(file.clone(), head.clone(), *json),
        AuditCommand::Export { since, file, json } => export(since, file.clone(), *json),
    }
}

/// The workspace's own copy, if the current directory is in a workspace
/// that has one.
fn own_copy() -> Option<PathBuf> {
    let root = agent_base::paths::repo_root(None).ok()?;
    let state = agent_tools::Workspace::new(&root).ok()?.state_dir();
    Some(state.join("logs").join("audit.jsonl")).filter(|f| f.exists())
}

fn sink() -> Option<PathBuf> {
    super::admin::audit_config().sink_file()
}

fn verify(file: Option<PathBuf>, head: Option<PathBuf>, json: bool) -> Result<i32> {
    let files: Vec<PathBuf> = match file {
        Some(f) => vec![f],
        None => own_copy().into_iter().chain(sink()).collect(),
    };
    if files.is_empty() {
        bail!("no audit file here (none in this workspace, no sink set)\n  fix: agent audit verify FILE");
    }
    let mut reports = Vec::new();
    for f in &files {
        reports.push(audit::verify(f, head.as_deref())?);
    }
    let ok = reports.iter().all(|r| r.ok);
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        for r in &reports {
            match &r.broken {
                None => println!(
                    "ok    {}: {} records, chain intact{}",
                    agent_base::term::untrusted(&r.file),
                    r.records,
                    if r.tail_checked {
                        ", tail matches its head"
                    } else {
                        ""
                    }
                ),
                Some(b) => println!(
                    "BROKEN {}: line {}: {}",
                    agent_base::term::untrusted(&r.file),
                    b.line,
                    agent_base::term::untrusted(&b.why)
                ),
            }
            for note in &r.notes {
                println!("      note: {note}");
            }
        }
    }
    Ok(if ok { exit::OK } else { exit::FAILURE })
}

fn export(since: &str, file: Option<PathBuf>, json: bool) -> Result<i32> {
    let since = parse_since(since, chrono::Local::now().fixed_offset())?;
    let Some(file) = file.or_else(sink).or_else(own_copy) else {
        bail!("no audit file here (none in this workspace, no sink set)\n  fix: agent audit export --since 24h FILE");
    };
    for record in audit::export(&file, since)? {
        if json {
            println!("{record}");
        } else {
            println!(
                "{}  {:<14} {}  {}",
                record["ts"].as_str().unwrap_or(""),
                record["event"].as_str().unwrap_or(""),
                record["user"].as_str().unwrap_or(""),
                record["session_id"].as_str().unwrap_or("")
            );
        }
    }
    Ok(exit::OK)
}

/// An RFC 3339 time, or a duration back from `now` (`90s`, `30m`, `24h`, `7d`, `2w`).
fn parse_since(text: &str, now: DateTime<FixedOffset>) -> Result<DateTime<FixedOffset>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(t);
    }
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(split);
    let seconds = match (n.parse::<i64>(), unit) {
        (Ok(n), "s") => n,
        (Ok(n), "m") => n * 60,
        (Ok(n), "h") => n * 3600,
        (Ok(n), "d") => n * 86_400,
        (Ok(n), "w") => n * 604_800,
        _ => bail!(
            "--since {text}: not an RFC 3339 time (2026-11-27T09:00:00Z) nor a duration (90s, 30m, 24h, 7d, 2w)"
        ),
    };
    Ok(now - chrono::Duration::seconds(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_time_or_a_duration() {
        let now = DateTime::parse_from_rfc3339("2026-11-27T10:00:00Z").unwrap();
        assert_eq!(
            parse_since("2h", now).unwrap(),
            DateTime::parse_from_rfc3339("2026-11-27T08:00:00Z").unwrap()
        );
        assert_eq!(
            parse_since("2026-11-26T00:00:00+01:00", now)
                .unwrap()
                .to_rfc3339(),
            "2026-11-26T00:00:00+01:00"
        );
        assert!(parse_since("yesterday", now).is_err());
    }
}
