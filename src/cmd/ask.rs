//! `agent ask`: one request through the agent (intent gate, tool loop), or
//! with `--no-tools` one plain streamed answer.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::exit;
use crate::cli::{AskArgs, OutputFormat};
use agent_base::cancel::CancelToken;
use agent_core::ui::{JsonLinesUi, QuietUi, TerminalUi, Ui};
use agent_llm::{CompletionRequest, Event, FinishReason, Flow, Grammar, Message, Sampling};
use agent_policy::Mode;

const SYSTEM_PROMPT: &str = "You are agent, a careful coding assistant running entirely on the user's machine. \
Answer concisely and accurately. When files are attached, base your answer on them and say when they do not contain the answer.";

/// Attached files larger than this are refused: they would not fit a small
/// model's context anyway, and the error says so up front.
const MAX_ATTACHMENT_BYTES: u64 = 256 * 1024;

pub fn run(args: &AskArgs, cancel: &CancelToken, verbose: bool) -> Result<i32> {
    super::admin::check_agent(&args.agent)?;
    let mut question = args.prompt.join(" ");
    if question.trim().is_empty() {
        eprintln!("error: the prompt is empty\n  fix: agent ask \"your question\"");
        return Ok(super::exit::USAGE);
    }
    // `agent ask /review src/app.py`: the team's prompt file, filled in.
    if let Some((name, rest)) = agent_core::commands::parse_invocation(&question) {
        let root = agent_base::paths::repo_root(None)?;
        let personal = agent_core::commands::personal_dir();
        if !super::trust::workspace_trusted(&root)? {
            if let Some(why) = agent_core::commands::held(&root, personal.as_deref(), name) {
                bail!(why);
            }
        }
        question = agent_core::commands::expand(&root, personal.as_deref(), name, rest)
            .map_err(|why| anyhow::anyhow!(why))?;
    }
    if args.no_tools {
        return answer_plain(args, &question, cancel);
    }
    let mut request = String::new();
    for path in &args.files {
        request.push_str(&attachment(path)?);
    }
    request.push_str(&question);
    let sampling = Sampling {
        temperature: args.temperature,
        top_p: args.top_p,
        seed: args.seed,
        repeat_penalty: args.repeat_penalty.unwrap_or(1.0),
    };
    let format = args.format();
    if args.print_prompt {
        let printer = super::prompt_printer(&args.model, format != OutputFormat::Text, cancel)?;
        let mut session =
            super::chat::open_agent_with(printer, &args.agent, args.max_tokens, sampling, None)?;
        // Shown, not asked: no session is saved and nothing is logged.
        session.agent.stop_recording();
        let outcome =
            session
                .agent
                .handle(&request, &mut QuietUi, session.approver.as_mut(), cancel)?;
        if let Some(sizes) = outcome.first_prompt {
            eprintln!("{}", agent_core::first_prompt::describe(&sizes));
        }
        return Ok(exit::OK);
    }
    let mut session =
        super::chat::open_agent(&args.agent, &args.model, args.max_tokens, sampling, None)?;
    let mut terminal = TerminalUi::new(verbose, args.agent.mode == Mode::Yolo);
    let mut quiet = QuietUi;
    let mut lines = JsonLinesUi::new(std::io::stdout());
    let ui: &mut dyn Ui = match format {
        OutputFormat::Text => &mut terminal,
        OutputFormat::Json => &mut quiet,
        OutputFormat::StreamJson => &mut lines,
    };
    let outcome = session
        .agent
        .handle(&request, ui, session.approver.as_mut(), cancel)?;
    match format {
        OutputFormat::Text => super::chat::print_outcome(&outcome),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        OutputFormat::StreamJson => lines.event("final", serde_json::to_value(&outcome)?),
    }
    Ok(super::chat::exit_code(&outcome))
}

/// `--no-tools`: the request (with attachments and retrieved chunks) straight
/// to the model, the answer streamed.
fn answer_plain(args: &AskArgs, question: &str, cancel: &CancelToken) -> Result<i32> {
    let mut user = String::new();
    for path in &args.files {
        user.push_str(&attachment(path)?);
    }
    user.push_str(&retrieved_context(question, args.context_chunks));
    user.push_str(question);

    let grammar = match (&args.grammar, &args.json_schema) {
        (Some(path), _) => Some(Grammar::from_file(path)?),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let schema = serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid JSON", path.display()))?;
            Some(agent_engine::json_schema_grammar(&schema)?)
        }
        (None, None) => None,
    };
    let request = CompletionRequest {
        messages: vec![
            Message::system(
                args.system
                    .clone()
                    .unwrap_or_else(|| SYSTEM_PROMPT.to_string()),
            ),
            Message::user(user),
        ],
        max_tokens: args.max_tokens,
        sampling: Sampling {
            temperature: args.temperature,
            top_p: args.top_p,
            seed: args.seed,
            repeat_penalty: args.repeat_penalty.unwrap_or(1.15),
        },
        grammar,
        ..CompletionRequest::default()
    };

    let json = args.format() != OutputFormat::Text;
    if args.print_prompt {
        super::prompt_printer(&args.model, json, cancel)?
            .complete(&request, &mut |_| Flow::Continue)?;
        return Ok(exit::OK);
    }
    let mut provider = super::provider(&args.model)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let stream = !json;
    let completion = provider.complete(&request, &mut |event| {
        if cancel.is_cancelled() {
            return Flow::Stop;
        }
        if let (true, Event::Text(text)) = (stream, event) {
            // A closed pipe (`agent ask ... | head`) ends generation quietly.
            if out
                .write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                return Flow::Stop;
            }
        }
        Flow::Continue
    })?;

    if json {
        let report = json!({
            "answer": completion.text,
            "model": provider.name(),
            "finish": completion.finish,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "reused_tokens": completion.reused_tokens,
            "ttft_ms": completion.ttft_ms,
            "prompt_cache": completion.prompt_cache(),
            "speculative": completion.speculation(),
            "prefill_ms": completion.prefill_ms,
            "decode_ms": completion.decode_ms,
            "engine": provider.placement(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let _ = writeln!(out);
    }
    match completion.finish {
        FinishReason::Cancelled => {
            eprintln!("(stopped)");
            Ok(exit::INTERRUPTED)
        }
        FinishReason::Length => {
            eprintln!("(answer cut at --max-tokens {})", args.max_tokens);
            Ok(exit::OK)
        }
        FinishReason::ContextFull => {
            eprintln!("(answer cut: the context window is full; try --ctx-size)");
            Ok(exit::OK)
        }
        _ => Ok(exit::OK),
    }
}

/// Most characters of retrieved code added to a prompt (about 1,500 tokens),
/// so a small model's context keeps room for the question and the answer.
const MAX_RETRIEVED_CHARS: usize = 6_000;

/// The best-matching chunks from the workspace index, as fenced blocks; empty
/// when there is no index (retrieval is a bonus, never a requirement).
fn retrieved_context(question: &str, k: usize) -> String {
    if k == 0 {
        return String::new();
    }
    let Ok(mut index) =
        agent_base::paths::repo_root(None).and_then(|root| agent_index::Index::open_reader(&root))
    else {
        return String::new();
    };
    let results = match index.search(&agent_index::SearchQuery::new(question, k)) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("index search failed, answering without it: {e:#}");
            return String::new();
        }
    };
    let mut out = String::new();
    let mut used = 0;
    for r in results {
        let block = format!(
            "From `{}` lines {}-{}:\n```\n{}\n```\n\n",
            r.path, r.start_line, r.end_line, r.text
        );
        if out.len() + block.len() > MAX_RETRIEVED_CHARS {
            break;
        }
        out.push_str(&block);
        used += 1;
    }
    if used > 0 {
        eprintln!("(using {used} code chunks from the index)");
    }
    out
}

/// A file rendered as a fenced block, or a clear refusal.
fn attachment(path: &Path) -> Result<String> {
    attachment_as(path, &path.display().to_string())
}

/// [`attachment`], the file called `shown` (`agent chat`'s `@path`: relative to the workspace).
pub(crate) fn attachment_as(path: &Path, shown: &str) -> Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if meta.len() > MAX_ATTACHMENT_BYTES {
        bail!(
            "{} is {} KiB; attachments are limited to {} KiB\n  fix: attach a smaller file or an excerpt",
            path.display(),
            meta.len() / 1024,
            MAX_ATTACHMENT_BYTES / 1024
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.contains(&0) {
        bail!(
            "{} looks binary; only text files can be attached",
            path.display()
        );
    }
    let text = String::from_utf8_lossy(&bytes);
    Ok(format!(
        "File `{shown}`:\n```\n{}\n```\n\n",
        text.trim_end()
    ))
}
