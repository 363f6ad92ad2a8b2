//! The loop with models that call tools in their own syntax: for the real
//! chat template of each family, a replay written in that family's syntax
//! reaches the real tools and ends with the family's answer form; a call
//! written inside the reasoning is never executed, and the history sent
//! back holds no reasoning.

use serde_json::json;

use agent_base::cancel::CancelToken;
use agent_chat::family::AnswerForm;
use agent_chat::{Family, SpecialTokens, ToolCall};
use agent_core::{Agent, AgentConfig, Finish};
use agent_llm::chat::{reasoning_open_text, TemplateSource};
use agent_llm::{ChatFormat, CompletionRequest, Message, Role};
use agent_policy::Mode;
use agent_protocol::event::QuietUi;
use agent_tools::AlwaysApprove;

use crate::scripted::{repo, Recorder};

fn format(name: &str) -> ChatFormat {
    let path = format!(
        "{}/../agent-chat/tests/fixtures/templates/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = TemplateSource::read(std::path::Path::new(&path)).unwrap();
    ChatFormat::select(Some(source), SpecialTokens::new("<s>", "</s>"), None)
}

const ANSWER: &str = "add is defined in src/calc.py line 1";
/// What the model thinks: a call it must not be taken at.
const DECOY: &str = "maybe I should read notes.txt";

/// The two turns of a replay in `family`'s syntax: a call of read_file
/// (after reasoning that writes a call of its own, where the template
/// thinks), then the answer.
fn turns(format: &ChatFormat) -> Vec<String> {
    let family = format.family();
    let call = |path: &str| {
        family.format_calls(&[ToolCall::new(
            "abcDEF123",
            "read_file",
            json!({"path": path}),
        )])
    };
    let mut first = String::new();
    let probe = CompletionRequest::new(vec![Message::user("hi")]);
    // Some templates open the block in the prompt (DeepSeek R1, QwQ): every
    // turn then begins inside it.
    let opened = format.try_render(&probe).unwrap().reasoning_open;
    if format.info().thinks && family.think_tags().is_some() {
        if !opened {
            first.push_str(reasoning_open_text(family));
        }
        first.push_str(&format!("{DECOY}: {}", call("notes.txt")));
        first.push_str(family.reasoning_close());
    }
    first.push_str(&call("src/calc.py"));
    let mut answer = match family.answer_form() {
        AnswerForm::Text => ANSWER.to_string(),
        AnswerForm::FinalChannel => format!("<|channel|>final<|message|>{ANSWER}"),
        AnswerForm::ResponseBlock => format!("<|START_RESPONSE|>{ANSWER}<|END_RESPONSE|>"),
    };
    if opened {
        answer = format!("The file answers it.{}{answer}", family.reasoning_close());
    }
    vec![first, answer]
}

/// The real templates of the families that call tools.
const NATIVE: &[&str] = &[
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
    "qwen2.5-instruct.jinja",
    "Qwen-Qwen3-0.6B.jinja",
    "Qwen-QwQ-32B.jinja",
    "meta-llama-Llama-3.2-3B-Instruct.jinja",
    "meta-llama-Llama-3.3-70B-Instruct.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "unsloth-mistral-Devstral-Small-2507.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "llama-cpp-deepseek-r1.jinja",
    "deepseek-ai-DeepSeek-V3.1.jinja",
    "openai-gpt-oss-120b.jinja",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
    "ibm-granite-granite-3.3-2B-Instruct.jinja",
];

#[test]
fn native_replays_of_every_family_reach_the_real_tools_and_answer() {
    let mut failures = Vec::new();
    for name in NATIVE {
        let format = format(name);
        let family = format.family();
        assert_ne!(family, Family::Generic, "{name} has tools");
        let turns = turns(&format);
        let dir = repo();
        let model = Recorder::with_format(&turns, format);
        let config = AgentConfig {
            mode: Mode::Confirm,
            repo_map: false,
            ..AgentConfig::new(dir.path())
        };
        agent_base::paths::isolate_for_tests();
        let mut agent = Agent::new(Box::new(model.clone()), config, None).unwrap();
        let outcome = agent.handle(
            "Where is the function add defined?",
            &mut QuietUi,
            &mut AlwaysApprove,
            &CancelToken::new(),
        );
        let requests = model.requests();
        let prompts = model.prompts();
        let problem = match outcome {
            Ok(outcome) => check(&outcome, &requests, &prompts),
            Err(e) => Some(format!(
                "{e:#}; replies {:?}",
                requests
                    .iter()
                    .skip(1)
                    .map(|r| r.messages.last())
                    .collect::<Vec<_>>()
            )),
        };
        if let Some(problem) = problem {
            failures.push(format!(
                "{name} ({}): {problem}\nturns: {turns:?}",
                family.name()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// What is wrong with a native replay's run, if anything.
fn check(
    outcome: &agent_core::Outcome,
    requests: &[CompletionRequest],
    prompts: &[String],
) -> Option<String> {
    if (outcome.finish, outcome.answer.as_str(), outcome.tool_calls)
        != (Finish::Answered, ANSWER, 1)
    {
        return Some(format!("outcome {outcome:?}"));
    }
    if requests.len() != 2 {
        return Some(format!("{} requests", requests.len()));
    }
    // The tools went to the template as function schemas, without finish.
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    if !tools.contains(&"read_file") || tools.contains(&"finish") {
        return Some(format!("tools {tools:?}"));
    }
    // The call came back as an assistant tool_calls message, the result as
    // a tool message: the real file, not the one named in the reasoning.
    let history = &requests[1].messages;
    let call = history.iter().find(|m| !m.tool_calls.is_empty())?;
    if call.tool_calls[0].arguments["path"] != "src/calc.py" {
        return Some(format!("call {call:?}"));
    }
    let result = history.iter().find(|m| m.role == Role::Tool)?;
    if !result.content.contains("return a + b") || result.content.contains("status: good") {
        return Some(format!("result {result:?}"));
    }
    // No reasoning is sent back.
    if history
        .iter()
        .any(|m| m.content.contains(DECOY) || m.reasoning_content.is_some())
    {
        return Some(format!("reasoning in the history {history:?}"));
    }
    if prompts[1].contains(DECOY) {
        return Some(format!("reasoning in the prompt {}", prompts[1]));
    }
    // The second prompt extends the first (the KV cache holds), and shows
    // the file's text as the result.
    if !prompts[1].contains("return a + b") {
        return Some(format!("no result in the prompt {}", prompts[1]));
    }
    None
}

#[test]
fn each_step_prompt_starts_with_the_previous_one() {
    // Qwen3 drops the reasoning of earlier turns itself; ours was never
    // stored, so the rendering of step 1 is a prefix of step 2's.
    let format = format("qwen2.5-instruct.jinja");
    let turns = turns(&format);
    let dir = repo();
    let model = Recorder::with_format(&turns, format);
    let config = AgentConfig {
        mode: Mode::Confirm,
        repo_map: false,
        ..AgentConfig::new(dir.path())
    };
    agent_base::paths::isolate_for_tests();
    let mut agent = Agent::new(Box::new(model.clone()), config, None).unwrap();
    agent
        .handle(
            "Where is the function add defined?",
            &mut QuietUi,
            &mut AlwaysApprove,
            &CancelToken::new(),
        )
        .unwrap();
    let prompts = model.prompts();
    assert!(
        prompts[1].starts_with(&prompts[0]),
        "{}\n----\n{}",
        prompts[0],
        prompts[1]
    );
    assert!(
        prompts[0].contains("<tools>") && prompts[0].contains("read_file"),
        "{}",
        prompts[0]
    );
}

#[test]
fn a_native_call_of_an_unknown_tool_is_an_observation_the_model_can_act_on() {
    let format = format("qwen2.5-instruct.jinja");
    let bad = Family::Hermes.format_calls(&[ToolCall::new("x", "rm_rf", json!({}))]);
    let good = turns(&format);
    let dir = repo();
    let model = Recorder::with_format(&[bad, good[0].clone(), good[1].clone()], format);
    let config = AgentConfig {
        mode: Mode::Confirm,
        repo_map: false,
        ..AgentConfig::new(dir.path())
    };
    agent_base::paths::isolate_for_tests();
    let mut agent = Agent::new(Box::new(model.clone()), config, None).unwrap();
    let outcome = agent
        .handle(
            "Where is the function add defined?",
            &mut QuietUi,
            &mut AlwaysApprove,
            &CancelToken::new(),
        )
        .unwrap();
    assert_eq!(
        (outcome.finish, outcome.answer.as_str()),
        (Finish::Answered, ANSWER)
    );
    assert_eq!(outcome.invalid_tool_calls, 1);
    let requests = model.requests();
    let feedback = &requests[1].messages.last().unwrap().content;
    assert!(feedback.contains("rm_rf"), "{feedback}");
}
