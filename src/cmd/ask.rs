//! `agent ask`: one request through the agent (intent gate, tool loop), or
//! with `--no-tools` one plain streamed answer (`agent_core::plain`).

use std::io::Write;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::exit;
use crate::cli::{AskArgs, OutputFormat};
use crate::session;
use agent_base::cancel::CancelToken;
use agent_core::attach::Request;
use agent_core::plain::{self, PlainQuestion};
use agent_core::ui::{JsonLinesUi, QuietUi, TerminalUi, Ui};
use agent_llm::{
    Completion, CompletionRequest, Event, FinishReason, Flow, Grammar, Provider, Sampling,
};
use agent_policy::Mode;
use agent_session::search::IndexSearch;
use agent_tools::SemanticSearch;

pub(crate) fn run(args: &AskArgs, cancel: &CancelToken, verbose: bool) -> Result<i32> {
    super::admin::check_agent(&args.agent.settings())?;
    let question = args.prompt.join(" ");
    if question.trim().is_empty() {
        eprintln!("error: the prompt is empty\n  fix: agent ask \"your question\"");
        return Ok(exit::USAGE);
    }
    let question = expand_command(question)?;
    if args.no_tools {
        return answer_plain(args, &question, cancel);
    }
    let files = agent_core::attach::attachments(&args.files)?;
    let request = Request::new(question, files);
    if args.print_prompt {
        return print_first_prompt(args, request, cancel);
    }
    answer(args, request, cancel, verbose)
}

/// `agent ask /review src/app.py`: the team's prompt file, filled in; any
/// other question as it is.
fn expand_command(question: String) -> Result<String> {
    let Some((name, rest)) = agent_core::commands::parse_invocation(&question) else {
        return Ok(question);
    };
    let root = agent_base::paths::repo_root(None)?;
    let personal = agent_core::commands::personal_dir();
    if !agent_session::trust::workspace_trusted(&root)? {
        if let Some(why) = agent_core::commands::held(&root, personal.as_deref(), name) {
            bail!(why);
        }
    }
    agent_core::commands::expand(&root, personal.as_deref(), name, rest)
        .map_err(|why| anyhow::anyhow!(why))
}

/// The sampling flags; the loop's grammar keeps its replies from looping, so
/// no repeat penalty unless asked for.
fn agent_sampling(args: &AskArgs) -> Sampling {
    Sampling {
        temperature: args.temperature,
        top_p: args.top_p,
        seed: args.seed,
        repeat_penalty: args.repeat_penalty.unwrap_or(1.0),
    }
}

/// The request through the agent, shown as `--output-format` asks.
fn answer(args: &AskArgs, request: Request, cancel: &CancelToken, verbose: bool) -> Result<i32> {
    let sampling = agent_sampling(args);
    let mut session =
        session::open_agent(&args.agent, &args.model, args.max_tokens, sampling, None)?;
    let format = args.format();
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
        .handle(request, ui, session.approver.as_mut(), cancel)?;
    match format {
        OutputFormat::Text => session::print_outcome(&outcome),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        OutputFormat::StreamJson => lines.event("final", serde_json::to_value(&outcome)?),
    }
    Ok(agent_session::outcome::exit_code(&outcome))
}

/// `--print-prompt`: the agent's prompts, printed instead of asked.
fn print_first_prompt(args: &AskArgs, request: Request, cancel: &CancelToken) -> Result<i32> {
    let json = args.format() != OutputFormat::Text;
    let printer = super::prompt_printer(&args.model, json, cancel)?;
    let sampling = agent_sampling(args);
    let mut session =
        session::open_agent_with(printer, &args.agent, args.max_tokens, sampling, None)?;
    // Shown, not asked: no session is saved and nothing is logged.
    session.agent.stop_recording();
    let outcome = session
        .agent
        .handle(request, &mut QuietUi, session.approver.as_mut(), cancel)?;
    if let Some(sizes) = outcome.first_prompt {
        eprintln!("{}", agent_core::first_prompt::describe(&sizes));
    }
    Ok(exit::OK)
}

/// `--no-tools`: the request (with attachments and retrieved chunks) straight
/// to the model, the answer streamed.
fn answer_plain(args: &AskArgs, question: &str, cancel: &CancelToken) -> Result<i32> {
    let mut plain = PlainQuestion {
        question,
        files: &args.files,
        system: args.system.clone(),
        context_chunks: args.context_chunks,
        max_tokens: args.max_tokens,
        sampling: Sampling {
            temperature: args.temperature,
            top_p: args.top_p,
            seed: args.seed,
            repeat_penalty: args.repeat_penalty.unwrap_or(plain::REPEAT_PENALTY),
        },
    }
    .request(open_index)?;
    if plain.retrieved_chunks > 0 {
        eprintln!(
            "(using {} code chunks from the index)",
            plain.retrieved_chunks
        );
    }
    plain.request.grammar = grammar(args)?;
    plain.request.interrupt = Some(cancel.clone());
    if args.print_prompt {
        let json = args.format() != OutputFormat::Text;
        let mut printer = super::prompt_printer(&args.model, json, cancel)?;
        plain::fit(&mut plain.request, printer.as_ref());
        printer.complete(&plain.request, &mut |_| Flow::Continue)?;
        return Ok(exit::OK);
    }
    stream_answer(args, plain.request)
}

/// The workspace's index, opened for one search; None (and nothing said)
/// when there is none, since retrieval is a bonus.
fn open_index() -> Option<Box<dyn SemanticSearch>> {
    let root = agent_base::paths::repo_root(None).ok()?;
    let index = IndexSearch::open(&root).ok()?;
    Some(Box::new(index))
}

/// `--grammar` as is, or `--json-schema` converted by the engine.
fn grammar(args: &AskArgs) -> Result<Option<Grammar>> {
    Ok(match (&args.grammar, &args.json_schema) {
        (Some(path), _) => Some(Grammar::from_file(path)?),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let schema = serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid JSON", path.display()))?;
            Some(agent_engine::json_schema_grammar(&schema)?)
        }
        (None, None) => None,
    })
}

/// The model's reply to `request`, streamed to stdout as text or reported
/// whole as JSON.
fn stream_answer(args: &AskArgs, mut request: CompletionRequest) -> Result<i32> {
    let json = args.format() != OutputFormat::Text;
    let mut provider = super::provider(&args.model)?;
    // The attached files and retrieved code are cut to fit the window.
    let fitted = plain::fit(&mut request, provider.as_ref());
    if fitted.excerpted > 0 {
        eprintln!(
            "(cut to fit the context window: {} of the attached files or retrieved code, about {} tokens left out)",
            fitted.excerpted,
            agent_base::tokens::thousands(fitted.cut_tokens)
        );
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let completion = provider.complete(&request, &mut |event| {
        if let (false, Event::Text(text)) = (json, event) {
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
        let report = json_report(provider.as_ref(), &completion);
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let _ = writeln!(out);
    }
    Ok(finish_code(completion.finish, args.max_tokens))
}

/// `--json`'s report of a plain answer.
fn json_report(provider: &dyn Provider, completion: &Completion) -> serde_json::Value {
    json!({
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
    })
}

/// The exit code for how the answer ended, with a note when it was cut.
fn finish_code(finish: FinishReason, max_tokens: usize) -> i32 {
    match finish {
        FinishReason::Cancelled => {
            eprintln!("(stopped)");
            exit::INTERRUPTED
        }
        FinishReason::Length => {
            eprintln!("(answer cut at --max-tokens {max_tokens})");
            exit::OK
        }
        FinishReason::ContextFull => {
            eprintln!("(answer cut: the context window is full; try --ctx-size)");
            exit::OK
        }
        _ => exit::OK,
    }
}
