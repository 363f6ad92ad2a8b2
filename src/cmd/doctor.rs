//! `agent doctor`: checks everything `agent ask` needs, end to end, and names
//! the fix for whatever is missing (the checks: `agent_session::doctor`).

use anyhow::Result;

use super::exit;
use agent_base::term::{untrusted, untrusted_text};
use agent_cli::DoctorArgs;

pub(crate) fn run(args: &DoctorArgs) -> Result<i32> {
    let report =
        agent_session::doctor::report(args.model.clone(), args.gpu.gpu_layers, args.gpu.gpu_device);
    let ready = report.ready;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for c in &report.checks {
            let mark = match (c.ok, c.required) {
                (true, _) => "ok  ",
                (false, true) => "FAIL",
                (false, false) => "warn",
            };
            // Details hold repository text (skill folders, hook commands):
            // escaped where they are made, and control characters once more here.
            println!(
                "[{mark}] {:<13} {}",
                untrusted(c.name),
                untrusted_text(&c.detail)
            );
            if let Some(fix) = &c.fix {
                println!("       fix: {}", untrusted_text(fix));
            }
        }
        println!(
            "{}",
            if ready {
                "ready: `agent ask` can run"
            } else {
                "not ready: `agent ask` cannot run until the FAIL lines are fixed"
            }
        );
    }
    Ok(if ready { exit::OK } else { exit::FAILURE })
}
