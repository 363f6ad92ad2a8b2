//! `agent ask`: one request through the agent (intent gate, tool loop), or
//! with `--no-tools` one plain streamed answer (`agent_session::ask`).

use std::io::Write;

use anyhow::Result;

use super::exit;
use crate::session;
use agent_base::cancel::CancelToken;
use agent_cli::{AskArgs, OutputFormat};
use agent_line::{JsonLinesUi, TerminalUi};
use agent_protocol::event::QuietUi;
use agent_protocol::{Request, Ui};
use agent_session::ask::PlainAsk;
use agent_session::settings::{Mode, Sampling};

pub(crate) fn run(args: &AskArgs, cancel: &CancelToken, verbose: bool) -> Result<i32> {
    super::admin::check_agent(&args.agent.settings())?;
    let question = args.prompt.join(" ");
    if question.trim().is_empty() {
        eprintln!("error: the prompt is empty\n  fix: agent ask \"your question\"");
        return Ok(exit::USAGE);
    }
    let question = agent_session::ask::expand_command(question)?;
    if args.no_tools {
        return answer_plain(args, &question, cancel);
    }
    let files = agent_session::chat::attachments(&args.files)?;
    let request = Request::new(question, files);
    if args.print_prompt {
        return print_first_prompt(args, request, cancel);
    }
    answer(args, request, cancel, verbose)
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
    let schema = match &args.output_schema {
        Some(path) => Some(agent_session::ask::output_schema(path)?),
        None => None,
    };
    let mut session =
        session::open_agent(&args.agent, &args.model, args.max_tokens, sampling, None)?;
    session.agent.set_output_schema(schema);
    let format = args.format();
    let mut terminal = TerminalUi::new(verbose, args.agent.mode == Mode::Yolo);
    let mut quiet = QuietUi;
    let mut lines = JsonLinesUi::new(std::io::stdout());
    let ui: &mut dyn Ui = match format {
        OutputFormat::Text => &mut terminal,
        OutputFormat::Json => &mut quiet,
        OutputFormat::StreamJson => &mut lines,
    };
    let mut outcome = session
        .agent
        .handle(request, ui, session.approver.as_mut(), cancel)?;
    match format {
        OutputFormat::Text => {
            session::print_outcome(&outcome);
            print_result(&outcome);
            // Plan mode: the plan is put to the user, on a terminal only
            // (as every approval is).
            let say = &mut crate::terminal::print;
            while let Some(next) = match crate::terminal::ask() {
                Some(mut ask) => session.approve_plan(&outcome, &mut ask, say),
                None => None,
            } {
                session.approver = session::terminal_approver(session.agent.mode());
                let request = Request::new(next, Vec::new());
                outcome = session
                    .agent
                    .handle(request, ui, session.approver.as_mut(), cancel)?;
                session::print_outcome(&outcome);
                print_result(&outcome);
            }
        }
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        OutputFormat::StreamJson => lines.event("final", serde_json::to_value(&outcome)?),
    }
    if outcome.planned {
        eprintln!(
            "plan mode: nothing was changed. To carry the plan out, continue the session \
(`agent chat --resume {}`) and ask for it.",
            outcome.session_id
        );
    }
    Ok(agent_session::outcome::exit_code(&outcome))
}

/// `--output-schema` in text: the JSON as the last line of stdout, or why
/// there is none on stderr.
fn print_result(outcome: &agent_session::Outcome) {
    if let Some(result) = &outcome.result {
        println!("{result}");
    }
    if let Some(why) = &outcome.result_error {
        eprintln!(
            "error: no answer in --output-schema's shape: {}",
            agent_base::term::untrusted_text(why)
        );
    }
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
        eprintln!("{}", agent_session::outcome::first_prompt(&sizes));
    }
    Ok(exit::OK)
}

/// `--no-tools`: the request (with attachments and retrieved chunks) straight
/// to the model, the answer streamed to stdout (or reported whole as JSON).
fn answer_plain(args: &AskArgs, question: &str, cancel: &CancelToken) -> Result<i32> {
    let ask = PlainAsk {
        question: question.to_string(),
        files: args.files.clone(),
        system: args.system.clone(),
        context_chunks: args.context_chunks,
        max_tokens: args.max_tokens,
        temperature: args.temperature,
        top_p: args.top_p,
        seed: args.seed,
        repeat_penalty: args.repeat_penalty,
        grammar: args.grammar.clone(),
        json_schema: args.json_schema.clone(),
    };
    let json = args.format() != OutputFormat::Text;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // A closed pipe (`agent ask ... | head`) ends generation quietly.
    let mut text = |piece: &str| {
        json || out
            .write_all(piece.as_bytes())
            .and_then(|_| out.flush())
            .is_ok()
    };
    let answer = agent_session::ask::answer_plain(
        &ask,
        &args.model.settings(),
        args.print_prompt.then_some(json),
        cancel,
        &mut text,
        &mut crate::terminal::print,
    )?;
    if args.print_prompt {
        return Ok(answer.exit);
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&answer.report)?)?;
    } else {
        let _ = writeln!(out);
    }
    Ok(answer.exit)
}
