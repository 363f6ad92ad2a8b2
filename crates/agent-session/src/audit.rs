//! `agent audit`: which audit files a command reads (the workspace's own
//! copy, the administrator's sink), their hash chains checked, and their
//! records since a time for a SIEM.

use std::path::PathBuf;

use anyhow::{bail, Result};
use chrono::{DateTime, FixedOffset};

pub use agent_store::audit::{export, verify, Report};

/// The workspace's own copy, if the current directory is in a workspace
/// that has one.
fn own_copy() -> Option<PathBuf> {
    let root = agent_base::paths::repo_root(None).ok()?;
    let state = agent_base::paths::state_dir(&root);
    Some(state.join("logs").join("audit.jsonl")).filter(|f| f.exists())
}

/// The administrator's sink, when one is set.
fn sink() -> Option<PathBuf> {
    crate::admin::audit_config().sink_file()
}

/// The files `agent audit verify` checks: the one named, else the
/// workspace's copy and the sink; an error when there is none.
pub fn files_to_verify(file: Option<PathBuf>) -> Result<Vec<PathBuf>> {
    let files: Vec<PathBuf> = match file {
        Some(f) => vec![f],
        None => own_copy().into_iter().chain(sink()).collect(),
    };
    if files.is_empty() {
        bail!("no audit file here (none in this workspace, no sink set)\n  fix: agent audit verify FILE");
    }
    Ok(files)
}

/// The file `agent audit export` reads: the one named, else the sink, else
/// the workspace's copy.
pub fn file_to_export(file: Option<PathBuf>) -> Result<PathBuf> {
    match file.or_else(sink).or_else(own_copy) {
        Some(file) => Ok(file),
        None => bail!("no audit file here (none in this workspace, no sink set)\n  fix: agent audit export --since 24h FILE"),
    }
}

/// An RFC 3339 time, or a duration back from `now` (`90s`, `30m`, `24h`, `7d`, `2w`).
pub fn parse_since(text: &str, now: DateTime<FixedOffset>) -> Result<DateTime<FixedOffset>> {
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
