//! The cost of fitting (`scripts/bench window`): a 256 KiB attachment, a
//! Python and a Rust file, counted with the real model's tokenizer and cut
//! to an excerpt with its outline ([`agent_core::agent_core::excerpt`]) for
//! shares of 1,000 to 16,000 tokens. One JSON row per case on stdout;
//! medians of `--reps` runs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark: it prints its figures and stops on a broken set-up"
)]

use std::time::Instant;

use agent_engine::engine::{EngineConfig, LlamaEngine};
use agent_llm::Provider;

fn python(bytes: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "def handler_{i}(request, limit={i}):\n    \"\"\"Handles case {i}.\"\"\"\n    if request.size > limit:\n        raise ValueError('too large')\n    return request.value * {i}\n\n\n"
        ));
        i += 1;
    }
    out
}

fn rust(bytes: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "/// Case {i}.\npub fn handler_{i}(request: &Request, limit: usize) -> Result<u64, Error> {{\n    if request.size > limit {{\n        return Err(Error::TooLarge);\n    }}\n    Ok(request.value * {i})\n}}\n\n"
        ));
        i += 1;
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let engine = LlamaEngine::load(&EngineConfig {
        ctx_size: Some(512),
        ..EngineConfig::new(agent_base::paths::default_chat_model())
    })
    .expect("the default model loads (scripts/fetch-models)");
    let count = |t: &str| engine.count_tokens(t).unwrap_or(0);
    let hints = agent_core::hints("What does handler_900 check?");
    for (name, text) in [("big.py", python(256 * 1024)), ("big.rs", rust(256 * 1024))] {
        let tokens = count(&text);
        for share in [1_000, 4_000, 16_000] {
            let mut times = Vec::new();
            let mut kept = 0;
            for _ in 0..reps {
                let started = Instant::now();
                let cut = agent_core::excerpt(name, &text, share, &hints, &count).expect("cut");
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                kept = count(&cut.text);
            }
            let mut count_times = Vec::new();
            for _ in 0..reps {
                let started = Instant::now();
                std::hint::black_box(count(&text));
                count_times.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            println!(
                "{}",
                serde_json::json!({"file": name, "bytes": text.len(), "tokens": tokens,
                    "share": share, "kept_tokens": kept, "reps": reps,
                    "excerpt_ms": median(times), "count_ms": median(count_times)})
            );
        }
    }
}
