//! The model a session runs: replayed turns, an OpenAI-compatible server,
//! or (by default) llama.cpp in-process, as the settings ask and the
//! administrator allows.

use anyhow::{bail, Result};

pub use agent_llm::Provider;

use crate::settings::{ModelSettings, Speculation};
use crate::{admin, Notice, Say};
use agent_base::cancel::CancelToken;
use agent_base::paths;
use agent_engine::engine::{EngineConfig, LlamaEngine, Speculative};
use agent_engine::prompt_cache::PromptCacheConfig;
use agent_llm::chat::TemplateSource;
use agent_llm::openai::OpenAiProvider;
use agent_llm::scripted::{PromptPrinter, ScriptedProvider};
use agent_llm::ChatFormat;

/// Builds the provider the flags ask for: scripted, remote, or (default) the
/// in-process engine.
pub fn provider(args: &ModelSettings, say: Say<'_>) -> Result<Box<dyn Provider>> {
    admin::check_model(args)?;
    if let Some(script) = &args.script {
        let mut replay = ScriptedProvider::from_file(script)?;
        if let Some(tokens) = args.ctx_size {
            replay = replay.with_context_size(tokens as usize);
        }
        if let Some(path) = &args.chat_template_file {
            let mut format = ChatFormat::select(
                Some(TemplateSource::read(path)?),
                agent_chat::SpecialTokens::default(),
                None,
            );
            format.think = args.think;
            replay = replay.with_format(format);
        }
        return Ok(Box::new(replay));
    }
    if let Some(url) = &args.server {
        let key = std::env::var("AGENT_API_KEY")
            .ok()
            .filter(|k| !k.is_empty());
        let server = OpenAiProvider::connect(
            url,
            &args.server_model,
            key,
            args.ctx_size.map(|n| n as usize),
        );
        if let Some(note) = server.window_note() {
            say(Notice::Note(note));
        }
        return Ok(Box::new(server));
    }
    if let Some(model) = args.model.as_deref().filter(|m| !m.is_file()) {
        bail!(
            "model file not found: {}\n  fix: check the path (any GGUF chat model), or leave out --model to use the default model (`agent models` shows it)",
            model.display()
        );
    }
    let config = engine_config(args);
    let spinner = agent_base::term::spinner(format!("loading {}", config.model_path.display()));
    let engine = LlamaEngine::load(&config);
    spinner.finish_and_clear();
    Ok(Box::new(engine?))
}

fn engine_config(args: &ModelSettings) -> EngineConfig {
    EngineConfig {
        model_path: args.model.clone().unwrap_or_else(paths::default_chat_model),
        ctx_size: args.ctx_size,
        threads: args.threads,
        gpu_layers: args.gpu_layers,
        gpu_device: args.gpu_device,
        chat_template_file: args.chat_template_file.clone(),
        think: args.think,
        think_budget: args.think_budget,
        prompt_cache: prompt_cache(args),
        prefill_rates: workspace_state().map(|state| state.join("cache").join("prefill.json")),
        speculative: match args.speculative {
            Speculation::Auto => Speculative::Auto,
            Speculation::On => Speculative::On,
            Speculation::Off => Speculative::Off,
        },
        ..EngineConfig::new("")
    }
}

/// `--print-prompt`: a provider that prints each request's prompt, rendered
/// with the model's template (or `--chat-template-file`) and counted with its
/// tokenizer, from the GGUF's header and vocabulary (no weights, no
/// inference). It replays `--script`'s turns, if any; once they run out the
/// next request ends the session (through `cancel`).
pub fn prompt_printer(
    args: &ModelSettings,
    json: bool,
    cancel: &CancelToken,
) -> Result<Box<dyn Provider>> {
    let config = engine_config(args);
    let (format, counter) = agent_engine::engine::load_chat_format(&config)?;
    let replay = match &args.script {
        Some(script) => ScriptedProvider::from_file(script)?,
        None => ScriptedProvider::with_turns(Vec::new()),
    };
    let mut replay = replay.with_format(format).with_counter(counter).printing(
        PromptPrinter::new(json, Box::new(std::io::stdout())).ending_with({
            let cancel = cancel.clone();
            move || cancel.cancel()
        }),
    );
    // Sized as the engine would size it: its window and its prefill rate
    // (measured on this machine, else estimated), without loading weights.
    match agent_engine::engine::sizing(&config) {
        Ok(sizing) => {
            replay = replay
                .with_context_size(sizing.n_ctx)
                .with_prefill_rate(sizing.prefill_rate);
        }
        Err(e) => tracing::warn!("the prompt is sized by defaults: {e}"),
    }
    if let Some(tokens) = args.ctx_size {
        replay = replay.with_context_size(tokens as usize);
    }
    // Named as the engine names itself, so it sizes by what the real runs kept.
    if let Some(file) = config.model_path.file_name() {
        replay = replay.with_name(file.to_string_lossy().into_owned());
    }
    Ok(Box::new(replay))
}

/// The state folder of the workspace around the current directory
/// (`paths::state_dir`), when it is one (it has `.git` or team files in
/// `.agent/`).
fn workspace_state() -> Option<std::path::PathBuf> {
    let root = paths::repo_root(None).ok()?;
    if !root.join(".git").exists() && !paths::has_team_files(&paths::team_dir(&root)) {
        return None;
    }
    Some(paths::state_dir(&root))
}

/// The prompt cache of the workspace around the current directory
/// (`cache/kv/` in its state folder), when it is one.
fn prompt_cache(args: &ModelSettings) -> Option<PromptCacheConfig> {
    if !args.prompt_cache {
        return None;
    }
    let state = workspace_state()?;
    let auth_key = match agent_base::state::user_key("kv") {
        Ok(key) => key,
        Err(e) => {
            tracing::warn!("prompt cache off: no key to authenticate its entries ({e})");
            return None;
        }
    };
    Some(PromptCacheConfig {
        dir: state.join("cache").join("kv"),
        max_bytes: args.prompt_cache_mb.saturating_mul(1 << 20),
        auth_key,
    })
}
