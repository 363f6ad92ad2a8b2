//! `agent ask` around the loop: a team command named as the question
//! (`agent ask /review src/app.py`), and `--no-tools`: one plain answer,
//! the attached files and the index's code sent with the question, the
//! reply streamed to the front end as it comes.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::json;

use agent_base::cancel::CancelToken;
use agent_core::{fit_plain, PlainQuestion, PLAIN_REPEAT_PENALTY};
use agent_llm::{Completion, Event, FinishReason, Flow, Grammar, Provider, Sampling};
use agent_tools::SemanticSearch;

use crate::outcome::exit;
use crate::search::IndexSearch;
use crate::{ModelSettings, Notice, Say};

/// `agent ask /review src/app.py`: the team's prompt file, filled in; any
/// other question as it is. A command of an untrusted workspace that would
/// widen what the agent may do is refused, saying why.
pub fn expand_command(question: String) -> Result<String> {
    let Some((name, rest)) = agent_config::commands::parse_invocation(&question) else {
        return Ok(question);
    };
    let root = agent_base::paths::repo_root(None)?;
    let personal = agent_config::commands::personal_dir();
    if !crate::trust::workspace_trusted(&root)? {
        if let Some(why) = agent_config::commands::held(&root, personal.as_deref(), name) {
            bail!(why);
        }
    }
    agent_config::commands::expand(&root, personal.as_deref(), name, rest)
        .map_err(|why| anyhow::anyhow!(why))
}

/// A question for `--no-tools`.
#[derive(Debug, Clone, Default)]
pub struct PlainAsk {
    pub question: String,
    /// Attached files, sent before the retrieved code and the question.
    pub files: Vec<PathBuf>,
    /// Replaces the plain system prompt.
    pub system: Option<String>,
    /// Chunks of code to retrieve from the index; 0 for none.
    pub context_chunks: usize,
    pub max_tokens: usize,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u32,
    /// None: the plain answer's own penalty (it has no grammar to keep it
    /// from looping).
    pub repeat_penalty: Option<f32>,
    /// A GBNF grammar file the reply must follow.
    pub grammar: Option<PathBuf>,
    /// A JSON Schema the reply must follow (converted into a grammar).
    pub json_schema: Option<PathBuf>,
}

/// How a plain answer ended: its exit code, and for `--json` the report.
pub struct PlainAnswer {
    pub exit: i32,
    pub report: serde_json::Value,
}

/// The question straight to the model (`--print-prompt`: to a provider that
/// prints the prompt instead); each piece of the reply goes to `text` as it
/// is generated, until `text` returns false (a closed pipe).
pub fn answer_plain(
    ask: &PlainAsk,
    model: &ModelSettings,
    print_prompt: Option<bool>,
    cancel: &CancelToken,
    text: &mut dyn FnMut(&str) -> bool,
    say: Say,
) -> Result<PlainAnswer> {
    let plain = PlainQuestion {
        question: &ask.question,
        files: &ask.files,
        system: ask.system.clone(),
        context_chunks: ask.context_chunks,
        max_tokens: ask.max_tokens,
        sampling: Sampling {
            temperature: ask.temperature,
            top_p: ask.top_p,
            seed: ask.seed,
            repeat_penalty: ask.repeat_penalty.unwrap_or(PLAIN_REPEAT_PENALTY),
        },
    }
    .request(open_index)?;
    if plain.retrieved_chunks > 0 {
        say(Notice::Plain(format!(
            "(using {} code chunks from the index)",
            plain.retrieved_chunks
        )));
    }
    let mut request = plain.request;
    request.grammar = grammar(ask.grammar.as_deref(), ask.json_schema.as_deref())?;
    request.interrupt = Some(cancel.clone());
    if let Some(json) = print_prompt {
        let mut printer = crate::provider::prompt_printer(model, json, cancel)?;
        fit_plain(&mut request, printer.as_ref());
        printer.complete(&request, &mut |_| Flow::Continue)?;
        return Ok(PlainAnswer {
            exit: exit::OK,
            report: serde_json::Value::Null,
        });
    }
    let mut provider = crate::provider::provider(model, say)?;
    // The attached files and retrieved code are cut to fit the window.
    let fitted = fit_plain(&mut request, provider.as_ref());
    if fitted.excerpted > 0 {
        say(Notice::Plain(format!(
            "(cut to fit the context window: {} of the attached files or retrieved code, about {} tokens left out)",
            fitted.excerpted,
            agent_base::tokens::thousands(fitted.cut_tokens)
        )));
    }
    let completion = provider.complete(&request, &mut |event| match event {
        Event::Text(piece) if !text(piece) => Flow::Stop,
        _ => Flow::Continue,
    })?;
    Ok(PlainAnswer {
        exit: finish_code(completion.finish, ask.max_tokens, say),
        report: report(provider.as_ref(), &completion),
    })
}

/// The workspace's index, opened for one search; None (and nothing said)
/// when there is none, since retrieval is a bonus.
/// `--output-schema FILE`: the JSON Schema a tool run's answer is also
/// given in, read and checked now, so a schema the grammar cannot hold
/// fails before a model is loaded.
pub fn output_schema(path: &Path) -> Result<serde_json::Value> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --output-schema {shown}"))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--output-schema {shown} is not JSON"))?;
    agent_core::check_schema(&schema).map_err(|e| {
        anyhow::anyhow!("--output-schema {shown}: {e}\n  fix: keep to those keywords, or use --json and check the answer yourself")
    })?;
    Ok(schema)
}

fn open_index() -> Option<Box<dyn SemanticSearch>> {
    let root = agent_base::paths::repo_root(None).ok()?;
    let index = IndexSearch::open(&root).ok()?;
    Some(Box::new(index))
}

/// `--grammar` as is, or `--json-schema` converted by the engine.
fn grammar(grammar: Option<&Path>, json_schema: Option<&Path>) -> Result<Option<Grammar>> {
    Ok(match (grammar, json_schema) {
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

/// `--json`'s report of a plain answer.
fn report(provider: &dyn Provider, completion: &Completion) -> serde_json::Value {
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
fn finish_code(finish: FinishReason, max_tokens: usize, say: Say) -> i32 {
    let (code, note) = match finish {
        FinishReason::Cancelled => (exit::INTERRUPTED, "(stopped)".to_string()),
        FinishReason::Length => (
            exit::OK,
            format!("(answer cut at --max-tokens {max_tokens})"),
        ),
        FinishReason::ContextFull => (
            exit::OK,
            "(answer cut: the context window is full; try --ctx-size)".into(),
        ),
        _ => return exit::OK,
    };
    say(Notice::Plain(note));
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_or_stopped_answer_says_so_and_a_stop_exits_interrupted() {
        let mut said = Vec::new();
        let mut say = |n: Notice| said.push(n.text().to_string());
        assert_eq!(
            finish_code(FinishReason::Cancelled, 64, &mut say),
            exit::INTERRUPTED
        );
        assert_eq!(finish_code(FinishReason::Length, 64, &mut say), exit::OK);
        assert_eq!(finish_code(FinishReason::Stop, 64, &mut say), exit::OK);
        assert_eq!(said, ["(stopped)", "(answer cut at --max-tokens 64)"]);
    }

    #[test]
    fn a_json_schema_that_is_not_json_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("schema.json");
        std::fs::write(&path, "{not json").unwrap();
        let err = grammar(None, Some(&path)).unwrap_err();
        assert!(format!("{err:#}").contains("is not valid JSON"), "{err:#}");
        assert!(grammar(None, None).unwrap().is_none());
    }
}
