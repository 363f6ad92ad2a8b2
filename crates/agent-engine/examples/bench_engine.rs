//! Engine measurements for `scripts/bench engine` (which runs llama.cpp's own
//! llama-bench beside it and writes bench-results/engine.json).
//!
//! Usage: bench_engine MODEL THREADS REPS [GPU_LAYERS [CHAT_TEMPLATE]] → prints one JSON object.
//! - prefill: a 512-token prompt into an empty cache (like llama-bench pp512);
//! - decode: 128 generated tokens, sampling and detokenising included (tg128);
//! - ttft: a first turn with a ~2,000-token prefix, then a second turn that
//!   shares it, each time from an empty cache.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench/example: a panic ends the run with its reason, printing is its output"
)]

use agent_engine::engine::{EngineConfig, LlamaEngine};
use agent_engine::offload::GpuLayers;
use agent_llm::{Completion, CompletionRequest, Flow, Message, Provider};
use serde_json::json;

fn run(
    engine: &mut LlamaEngine,
    messages: Vec<Message>,
    max_tokens: usize,
    ignore_eos: bool,
) -> Completion {
    let req = CompletionRequest {
        messages,
        max_tokens,
        ignore_eos,
        ..CompletionRequest::default()
    };
    engine
        .complete(&req, &mut |_| Flow::Continue)
        .expect("generation")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A user message whose rendered prompt is exactly `target` tokens (or one more).
fn prompt_of(engine: &LlamaEngine, target: usize) -> Vec<Message> {
    let words: Vec<String> = (0..4000).map(|i| format!("item{}", i % 97)).collect();
    let (mut lo, mut hi) = (1, words.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let n = engine
            .count_message_tokens(&[Message::user(words[..mid].join(" "))])
            .unwrap();
        if n < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    vec![Message::user(words[..lo].join(" "))]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = args
        .get(1)
        .expect("usage: bench_engine MODEL THREADS REPS [GPU_LAYERS [CHAT_TEMPLATE]]");
    let threads: i32 = args.get(2).map_or(2, |t| t.parse().unwrap());
    let reps: usize = args.get(3).map_or(3, |r| r.parse().unwrap());
    let gpu_layers: GpuLayers = args
        .get(4)
        .map_or(GpuLayers::Count(0), |g| g.parse().unwrap());
    // Another chat template than the GGUF's own (`--chat-template-file`).
    let chat_template_file = args.get(5).filter(|t| !t.is_empty()).map(Into::into);
    let mut engine = LlamaEngine::load(&EngineConfig {
        ctx_size: Some(4096),
        threads: Some(threads),
        batch_size: 512,
        gpu_layers,
        chat_template_file,
        ..EngineConfig::new(model)
    })
    .expect("model loads");
    let placement = engine
        .placement()
        .expect("the engine reports its placement");

    // Warm-up: page the weights in and let the CPU clocks settle.
    run(&mut engine, vec![Message::user("Hello")], 16, true);

    let pp_prompt = prompt_of(&engine, 512);
    let mut prefill = Vec::new();
    let mut prefill_tokens = 0;
    for _ in 0..reps {
        engine.clear_cache();
        let c = run(&mut engine, pp_prompt.clone(), 1, true);
        prefill_tokens = c.prefilled_tokens;
        prefill.push(c.prefilled_tokens as f64 / (c.prefill_ms / 1000.0));
    }

    let mut decode = Vec::new();
    for _ in 0..reps {
        engine.clear_cache();
        let c = run(
            &mut engine,
            vec![Message::user("Write a story.")],
            128,
            true,
        );
        assert_eq!(c.completion_tokens, 128);
        decode.push(c.completion_tokens as f64 / (c.decode_ms / 1000.0));
    }

    let mut prefix =
        String::from("You are a coding assistant. The repository defines these functions:\n");
    let mut i = 0;
    while engine.count_tokens(&prefix).unwrap() < 2000 {
        prefix.push_str(&format!(
            "fn function_{i}(x: u32) -> u32 {{ x.wrapping_mul({}) + {} }}\n",
            i * 7 + 3,
            i
        ));
        i += 1;
    }
    let (mut ttft1, mut ttft2) = (Vec::new(), Vec::new());
    let (mut prompt_tokens, mut reused) = (0, 0);
    for _ in 0..reps {
        engine.clear_cache();
        let mut messages = vec![
            Message::system(prefix.clone()),
            Message::user("What does function_7 return for x = 2?"),
        ];
        let first = run(&mut engine, messages.clone(), 24, false);
        messages.push(Message::assistant(first.text));
        messages.push(Message::user("And function_12?"));
        let second = run(&mut engine, messages, 24, false);
        ttft1.push(first.ttft_ms);
        ttft2.push(second.ttft_ms);
        prompt_tokens = second.prompt_tokens;
        reused = second.reused_tokens;
    }

    println!(
        "{}",
        json!({
            "model": model,
            "threads": threads,
            "placement": placement,
            "reps": reps,
            "prefill_prompt_tokens": prefill_tokens,
            "prefill_tok_s": median(prefill),
            "decode_tok_s": median(decode),
            "ttft_turn1_ms": median(ttft1),
            "ttft_turn2_ms": median(ttft2),
            "prompt_tokens": prompt_tokens,
            "reused_prefix_tokens": reused,
            "template": engine.chat_format().info(),
            "cpu_backend": agent_engine::backends::cpu_variant().unwrap_or_else(|| "built in".into()),
        })
    );
}
