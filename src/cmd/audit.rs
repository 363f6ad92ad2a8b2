//! `agent audit verify` and `agent audit export`: the audit trail's hash
//! chain checked (`agent_session::audit`), and its records for a SIEM.

use std::path::PathBuf;

use anyhow::Result;

use super::exit;
use agent_cli::{AuditArgs, AuditCommand};
use agent_session::audit;

pub(crate) fn run(args: &AuditArgs) -> Result<i32> {
    match &args.command {
        AuditCommand::Verify { file, head, json } => verify(file.clone(), head.clone(), *json),
        AuditCommand::Export { since, file, json } => export(since, file.clone(), *json),
    }
}

fn verify(file: Option<PathBuf>, head: Option<PathBuf>, json: bool) -> Result<i32> {
    let files = audit::files_to_verify(file)?;
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
    let since = audit::parse_since(since, chrono::Local::now().fixed_offset())?;
    let file = audit::file_to_export(file)?;
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
