//! `agent models`: what is installed, and is it intact.

use anyhow::Result;
use serde_json::json;

use super::exit;
use agent_base::models::{self, FileState};
use agent_base::paths;
use agent_cli::ModelsArgs;

pub(crate) fn run(args: &ModelsArgs) -> Result<i32> {
    let dir = paths::models_dir();
    let total: u64 = models::manifest().files.iter().map(|f| f.size).sum();
    let bar = indicatif::ProgressBar::new(total).with_message("verifying sha256");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let statuses = models::verify_all(&dir, |n| bar.set_position(n));
    bar.finish_and_clear();
    let chat = statuses
        .iter()
        .find(|s| s.file.role == "chat" && s.state == FileState::Ok)
        .map(|s| agent_session::about::gguf(&s.full_path));
    let all_ok = statuses.iter().all(|s| s.state == FileState::Ok);

    if args.json {
        let report = json!({
            "dir": dir,
            "ok": all_ok,
            "files": statuses,
            "chat_model": chat.as_ref().and_then(|c| c.as_ref().ok()),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("models folder: {}", agent_base::term::untrusted(&dir));
        for s in &statuses {
            println!(
                "  {:<9} {:<36} {:>8.1} MB  {}",
                s.file.role,
                agent_base::term::untrusted(&s.file.path),
                s.file.size as f64 / 1e6,
                match s.state {
                    FileState::Ok => "ok".to_string(),
                    other => format!("{other:?}").to_lowercase(),
                }
            );
        }
        if let Some(Ok(info)) = &chat {
            println!(
                "chat model: {} ({}, GGUF v{}, {} tensors, context {}, {})",
                // The GGUF's own metadata: the model file's text.
                agent_base::term::untrusted(info.name.as_deref().unwrap_or("unnamed")),
                agent_base::term::untrusted(info.architecture.as_deref().unwrap_or("unknown arch")),
                info.version,
                info.tensor_count,
                info.context_length
                    .map_or("unknown".into(), |n| n.to_string()),
                if info.has_chat_template {
                    "own chat template"
                } else {
                    "ChatML fallback"
                },
            );
        }
        if !all_ok {
            eprintln!(
                "some model files are missing or damaged\n  fix: {} (or set AGENT_MODELS_DIR to a verified copy)",
                models::fetch_hint()
            );
        }
    }
    Ok(if all_ok { exit::OK } else { exit::FAILURE })
}
