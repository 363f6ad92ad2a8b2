//! When llama.cpp's CPU backend gives a position other bits inside a batch
//! than alone: what speculative decoding's exactness rests on (a verified
//! draft is a batch; plain decoding is lone tokens). Each test pins a
//! statement of BENCHMARKS.md ("Exactness") and `speculative`; when llama.cpp
//! changes, the failing test names the statement to update.

use std::num::NonZeroU32;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use crate::engine::backend;

fn tiny_model() -> LlamaModel {
    let path = agent_base::paths::default_chat_model();
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-models",
        path.display()
    );
    LlamaModel::load_from_file(backend().unwrap(), &path, &LlamaModelParams::default()).unwrap()
}

/// The logits of the prompt's last token, the prompt decoded as successive
/// batches of the lengths in `parts`; every position of the last batch gets
/// logits, as in a draft's verification.
fn last_logits(
    model: &LlamaModel,
    prompt: &[LlamaToken],
    parts: &[usize],
    threads: i32,
) -> Vec<f32> {
    assert_eq!(parts.iter().sum::<usize>(), prompt.len());
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(2048))
        .with_n_batch(2048)
        .with_n_ubatch(2048)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model.new_context(backend().unwrap(), params).unwrap();
    let mut batch = LlamaBatch::new(2048, 1);
    let mut start = 0;
    for (k, &len) in parts.iter().enumerate() {
        batch.clear();
        for (i, &token) in prompt[start..start + len].iter().enumerate() {
            let last_part = k + 1 == parts.len();
            batch
                .add(token, (start + i) as i32, &[0], last_part)
                .unwrap();
        }
        ctx.decode(&mut batch).unwrap();
        start += len;
    }
    ctx.get_logits_ith(batch.n_tokens() - 1).to_vec()
}

/// A file-repeat prompt of about `tokens` tokens.
fn prompt(model: &LlamaModel, tokens: usize) -> Vec<LlamaToken> {
    let code = include_str!("speculative.rs");
    let mut end = (tokens * 3).min(code.len());
    while !code.is_char_boundary(end) {
        end -= 1;
    }
    let text = format!(
        "<|im_start|>user\nRepeat this file exactly:\n{}<|im_end|>\n<|im_start|>assistant\n",
        &code[..end]
    );
    model.vocab().tokenize(text.as_bytes(), true, true)
}

/// How many of two logit vectors' entries differ.
fn differing(a: &[f32], b: &[f32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

/// The last position's logits after the same prefix, its tail decoded as
/// lone tokens and as verification batches (2, 4 and 8 tokens), on
/// `threads`: how many of them differ from the lone tokens' logits.
fn lone_against_drafts(model: &LlamaModel, prompt: &[LlamaToken], threads: i32) -> Vec<usize> {
    let base = prompt.len() - 8;
    let lone = last_logits(model, prompt, &[base, 1, 1, 1, 1, 1, 1, 1, 1], threads);
    [&[base, 2, 2, 2, 2][..], &[base, 4, 4], &[base, 8]]
        .iter()
        .map(|parts| differing(&lone, &last_logits(model, prompt, parts, threads)))
        .collect()
}

/// On one thread a position gets the same bits alone as inside a batch the
/// size of a verified draft (at most `MAX_DRAFT` + 1 tokens), below and
/// past the 512 KV cells where a lone token's attention takes another path:
/// there speculation gives plain decoding's output, token for token.
#[test]
fn on_one_thread_a_drafts_batch_gives_a_position_the_bits_it_gets_alone() {
    let model = tiny_model();
    for size in [40, 700] {
        let prompt = prompt(&model, size);
        assert_eq!(
            lone_against_drafts(&model, &prompt, 1),
            [0, 0, 0],
            "{} tokens",
            prompt.len()
        );
    }
}

/// On two threads past 512 KV cells a lone token's attention splits the
/// cells across the threads (ggml-cpu's `use_split_kv_path`) and rounds
/// otherwise than a batch: speculation and plain decoding may part there.
#[test]
fn on_two_threads_past_512_cells_a_lone_token_rounds_otherwise() {
    let model = tiny_model();
    let short = prompt(&model, 40);
    assert_eq!(lone_against_drafts(&model, &short, 2), [0, 0, 0]);
    let long = prompt(&model, 700);
    assert!(long.len() > 512, "{}", long.len());
    assert!(
        lone_against_drafts(&model, &long, 2).iter().all(|&d| d > 0),
        "two threads are batch invariant now: BENCHMARKS.md's table is out of date"
    );
}

/// Whatever the threads, a position inside a batch of 64 tokens or more
/// (ggml-cpu's tiled flash attention, `GGML_FA_TILE_Q`) gets other bits
/// than in a smaller batch. So where a prompt's batches end changes the
/// first token's logits: a prompt whose prefix came from the KV cache (an
/// earlier turn, the prompt cache on disk) and one prefilled whole can part
/// at a near-tie, with or without speculation.
#[test]
fn a_position_in_a_batch_of_64_or_more_rounds_otherwise() {
    let model = tiny_model();
    let short = prompt(&model, 40);
    let n = short.len();
    assert!(n < 64);
    let whole = last_logits(&model, &short, &[n], 1);
    assert_eq!(
        differing(&whole, &last_logits(&model, &short, &[n - 1, 1], 1)),
        0
    );
    let long = prompt(&model, 100);
    let n = long.len();
    assert!(n >= 64);
    let whole = last_logits(&model, &long, &[n], 1);
    assert!(
        differing(&whole, &last_logits(&model, &long, &[n - 1, 1], 1)) > 0,
        "the tiled attention rounds as a lone token's now: BENCHMARKS.md is out of date"
    );
}
