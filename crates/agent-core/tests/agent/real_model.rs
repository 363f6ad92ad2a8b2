//! The tool-call protocol on the real tiny model (SmolLM2-135M) in
//! llama.cpp: its grammars are accepted and constrain what the model says.

use agent_engine::engine::{EngineConfig, LlamaEngine};
use agent_llm::{CompletionRequest, FinishReason, Flow, Message, Provider};
use agent_tools::Toolbox;
use serde_json::Value;

fn engine() -> LlamaEngine {
    LlamaEngine::load(&EngineConfig {
        ctx_size: Some(2048),
        ..EngineConfig::new(crate::common::tiny_model())
    })
    .expect("the tiny model loads")
}

#[test]
fn the_tool_call_grammar_is_accepted_and_constrains_the_model() {
    let mut engine = engine();
    let specs = Toolbox::standard().specs();
    let mut req = CompletionRequest::new(vec![
        Message::system(format!(
            "You are a coding agent. Tools:\n{}",
            agent_core::describe_tools(&specs)
        )),
        Message::user("Where is the function add defined?"),
    ]);
    req.max_tokens = 120;
    req.grammar = Some(agent_core::call_grammar(&specs));
    let out = engine
        .complete(&req, &mut |_| Flow::Continue)
        .expect("the grammar is accepted");
    // Constrained decoding: whatever the tiny model says is a call to a real
    // tool (unless the token budget cut it short).
    if out.finish != FinishReason::Length {
        let call = agent_core::parse_call(&out.text).expect(&out.text);
        assert!(specs.iter().any(|s| s.name == call.tool), "{}", out.text);
    }
    req.grammar = Some(agent_core::finish_grammar(&specs));
    req.max_tokens = 200;
    let out = engine.complete(&req, &mut |_| Flow::Continue).unwrap();
    let _: Value = serde_json::from_str(&out.text).unwrap_or(Value::Null);
    assert!(out.text.contains("\"finish\""), "{}", out.text);
}

/// Every tool's schema also converts with llama.cpp's own converter (the one
/// `--json-schema` and llama-server use), so no schema relies on our GBNF alone.
#[test]
fn every_tool_schema_converts_with_llama_cpp() {
    for spec in Toolbox::standard().specs() {
        agent_engine::json_schema_grammar(&spec.parameters)
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    }
}
