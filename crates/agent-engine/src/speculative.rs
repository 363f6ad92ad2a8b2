//! Prompt-lookup drafting for speculative decoding: when the last few tokens
//! occurred before (in the prompt or the output so far), the tokens that
//! followed them then are proposed as the continuation. Code edits retype
//! what is in the context (`old_string`, a function with one change), so
//! the model confirms many tokens per forward pass; the engine checks each
//! drafted token with its sampler, so the output is plain decoding's as far
//! as llama.cpp computes a token in a batch with the same bits as alone. It
//! does on one thread; past 512 cells of KV cache it splits a lone token's
//! attention across threads and rounds differently, so there plain decoding
//! itself changes with the thread count, and near-ties can flip either way
//! (BENCHMARKS.md, "Exactly when greedy output can differ"; the tests of
//! `batch_invariance` pin each case, the long-context engine test runs on
//! one thread).
//!
//! How (`--speculative auto|on|off`): under greedy sampling, in the answer,
//! the tokens that followed the latest earlier occurrence of the last three
//! are decoded in one batch behind the new token; each following sample
//! (grammar and penalties included) confirms a drafted token or ends the
//! draft, whose KV entries are then removed. `auto` drafts as many tokens as
//! pay, from the acceptance rate and what a drafted token costs here: each
//! process times its lone and batched decode steps (CPU only), and
//! `cache/prefill.json` sums them beside the prefill rate until 256 and 32 are
//! in, then keeps the share fixed ([`StepTimes`]); a default share before that.

use llama_cpp_2::token::LlamaToken;
use serde::{Deserialize, Serialize};

/// Tokens that must match (the new token and those before it) for a draft.
const NGRAM: usize = 3;
/// Most tokens drafted at once: a rejected draft costs its share of a batch.
/// A verified draft must stay under 64 tokens, where llama.cpp's attention
/// takes its tiled kernel and rounds otherwise (`batch_invariance`).
pub const MAX_DRAFT: usize = 10;
const _: () = assert!(
    MAX_DRAFT + 1 < 64,
    "a verified draft would take the tiled attention"
);

/// The tokens that followed the most recent earlier occurrence of the
/// last [`NGRAM`] tokens of `history` + `next`, at most `room` of them and
/// [`MAX_DRAFT`]; empty when there is none.
pub fn draft(history: &[LlamaToken], next: LlamaToken, room: usize) -> Vec<LlamaToken> {
    let limit = room.min(MAX_DRAFT);
    if limit == 0 || history.len() < NGRAM {
        return Vec::new();
    }
    let n = history.len() + 1;
    let at = |i: usize| if i + 1 == n { next } else { history[i] };
    let pattern: Vec<LlamaToken> = (n - NGRAM..n).map(at).collect();
    // The most recent match first: the output so far is the likeliest copy.
    (0..n - NGRAM)
        .rev()
        .find(|&start| (0..NGRAM).all(|k| at(start + k) == pattern[k]))
        .map(|start| {
            let from = start + NGRAM;
            (from..n.min(from + limit)).map(at).collect()
        })
        .unwrap_or_default()
}

/// How many tokens to draft, from what drafting has earned so far in this
/// process: a draft of `k` tokens costs a batch of `k + 1`, a single step
/// plus `k` times [`Policy::extra_cost`] of one, and yields the tokens the
/// model confirms (a run of them, each as likely as the acceptance rate).
/// The cost is this machine's, measured in earlier processes with this model
/// and placement ([`StepTimes`], kept beside the prefill rate), else a
/// default share; it is fixed for the process and settles once enough steps
/// were timed, never following the load from step to step: a length chosen from live
/// timings would move where batches and lone tokens fall, which llama.cpp
/// rounds differently past 512 cells of KV cache on more than one thread
/// (see the module's comment), so greedy output would change from run to
/// run. Where a drafted token costs about as much as a lone step (a
/// loaded or memory-starved CPU), no length pays and `auto` drafts nothing.
#[derive(Debug, Clone)]
pub struct Policy {
    /// What a drafted token adds to a decode, as a share of a one-token
    /// decode.
    extra_cost: f64,
    /// Confirmed and rejected drafted tokens, decayed.
    confirmed: f64,
    rejected: f64,
}

/// A drafted token's share of a single step on a CPU: batched tokens cost
/// 2.3 ms each against 6.6 ms for a lone decode for the 135M model on two
/// idle cores (BENCHMARKS.md, Engine); larger models are more bound by
/// memory in a lone step, so drafts pay there at least as well.
const CPU_EXTRA_COST: f64 = 0.35;
/// On a GPU a lone step barely uses the device: extra tokens are nearly free.
const GPU_EXTRA_COST: f64 = 0.1;

const DECAY: f64 = 0.8;
/// Bounds of a measured share: timings this far out are noise (a batch can
/// not be cheaper than nothing, nor a drafted token dearer than two steps).
const MIN_EXTRA_COST: f64 = 0.02;
const MAX_EXTRA_COST: f64 = 2.0;

/// Decode steps timed: lone tokens, and batches of a token with its draft.
/// Enough of both give what a drafted token adds to a step on this machine,
/// as a share of a lone step (for [`Policy`]). A process times its own steps;
/// the rate file sums them over runs ([`crate::prefill_rate`]), since one
/// answer may draft only a few times.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    lone_secs: f64,
    lone_steps: u32,
    batch_secs: f64,
    batch_steps: u32,
    drafted_tokens: u32,
}

/// Steps of each kind before the share is trusted.
const MIN_LONE_STEPS: u32 = 8;
const MIN_BATCH_STEPS: u32 = 4;
/// Steps of each kind after which the sums stop growing, so the share stays
/// put and a request decodes the same way on every later run.
const SETTLED_LONE_STEPS: u32 = 256;
const SETTLED_BATCH_STEPS: u32 = 32;

impl StepTimes {
    /// A decode of `tokens` (1: a lone token) that took `secs`.
    pub fn add(&mut self, tokens: usize, secs: f64) {
        if tokens <= 1 {
            self.lone_secs += secs;
            self.lone_steps += 1;
        } else {
            self.batch_secs += secs;
            self.batch_steps += 1;
            self.drafted_tokens += tokens as u32 - 1;
        }
    }

    /// Adds another run's steps, unless these are settled.
    pub fn merge(&mut self, other: &StepTimes) {
        if self.settled() {
            return;
        }
        self.lone_secs += other.lone_secs;
        self.lone_steps += other.lone_steps;
        self.batch_secs += other.batch_secs;
        self.batch_steps += other.batch_steps;
        self.drafted_tokens += other.drafted_tokens;
    }

    pub fn settled(&self) -> bool {
        self.lone_steps >= SETTLED_LONE_STEPS && self.batch_steps >= SETTLED_BATCH_STEPS
    }

    pub fn is_empty(&self) -> bool {
        self.lone_steps == 0 && self.batch_steps == 0
    }

    /// What a drafted token added to its step, as a share of a lone step;
    /// None until enough steps of both kinds were timed.
    pub fn extra_cost(&self) -> Option<f64> {
        if self.lone_steps < MIN_LONE_STEPS || self.batch_steps < MIN_BATCH_STEPS {
            return None;
        }
        let lone = self.lone_secs / f64::from(self.lone_steps);
        let added = self.batch_secs - f64::from(self.batch_steps) * lone;
        let share = added / f64::from(self.drafted_tokens) / lone;
        (lone > 0.0 && share.is_finite()).then(|| share.clamp(MIN_EXTRA_COST, MAX_EXTRA_COST))
    }
}

impl Policy {
    /// A policy for a model with its layers on a GPU or not. Optimistic at
    /// first: the first drafts measure what the model confirms.
    pub fn new(on_gpu: bool) -> Self {
        Self {
            extra_cost: if on_gpu {
                GPU_EXTRA_COST
            } else {
                CPU_EXTRA_COST
            },
            confirmed: 3.0,
            rejected: 1.0,
        }
    }

    /// The same, with what a drafted token costs on this machine as
    /// measured (a share of a lone step), when it was.
    pub fn with_measured_cost(mut self, extra_cost: Option<f64>) -> Self {
        if let Some(cost) = extra_cost.filter(|c| c.is_finite()) {
            self.extra_cost = cost.clamp(MIN_EXTRA_COST, MAX_EXTRA_COST);
        }
        self
    }

    /// What a drafted token adds to a step, as a share of a lone step.
    pub fn extra_cost(&self) -> f64 {
        self.extra_cost
    }

    /// The draft length with the most tokens per unit of cost (0: none).
    pub fn draft_len(&self) -> usize {
        let p = self.acceptance().min(0.99);
        let rate = |k: usize| {
            (1.0 - p.powi(k as i32 + 1)) / (1.0 - p) / (1.0 + k as f64 * self.extra_cost)
        };
        (0..=MAX_DRAFT)
            .max_by(|&a, &b| rate(a).total_cmp(&rate(b)))
            .unwrap_or(0)
    }

    /// The share of drafted tokens the model confirms.
    pub fn acceptance(&self) -> f64 {
        self.confirmed / (self.confirmed + self.rejected)
    }

    /// Of a draft of `drafted` tokens, the model confirmed `confirmed`.
    pub fn drafted(&mut self, drafted: usize, confirmed: usize) {
        self.confirmed = DECAY * self.confirmed + confirmed as f64;
        self.rejected = DECAY * self.rejected + (confirmed < drafted) as u8 as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&t| LlamaToken(t)).collect()
    }

    #[test]
    fn a_repeated_ngram_drafts_what_followed_it() {
        let history = tokens(&[1, 2, 3, 4, 5, 6, 9, 1, 2]);
        assert_eq!(
            draft(&history, LlamaToken(3), 8),
            tokens(&[4, 5, 6, 9, 1, 2, 3])
        );
        assert_eq!(draft(&history, LlamaToken(3), 2), tokens(&[4, 5]));
    }

    #[test]
    fn drafts_are_as_long_as_they_pay() {
        let mut policy = Policy::new(false);
        // At first, optimistic: a few tokens.
        let first = policy.draft_len();
        assert!(first >= 1, "{policy:?}");
        // A model that confirms most drafts: long drafts.
        for _ in 0..10 {
            policy.drafted(8, 8);
        }
        assert!(policy.draft_len() > first, "{policy:?}");
        // One that rejects them: none on a CPU, where a batch is not free.
        for _ in 0..20 {
            policy.drafted(4, 0);
        }
        assert_eq!(policy.draft_len(), 0, "{policy:?}");
        // A GPU drafts at the same acceptance as long as it pays there.
        let mut gpu = Policy::new(true);
        for _ in 0..20 {
            gpu.drafted(4, 1);
        }
        let mut cpu = Policy::new(false);
        for _ in 0..20 {
            cpu.drafted(4, 1);
        }
        assert!(gpu.draft_len() > cpu.draft_len(), "{gpu:?} {cpu:?}");
    }

    #[test]
    fn a_measured_cost_sets_how_long_drafts_are_and_whether_any_pay() {
        let mut times = StepTimes::default();
        // A lone step 10 ms, a token with 4 drafted 14 ms: 0.1 per token.
        for _ in 0..MIN_LONE_STEPS {
            times.add(1, 0.010);
        }
        assert_eq!(times.extra_cost(), None, "no batch timed yet");
        for _ in 0..MIN_BATCH_STEPS {
            times.add(5, 0.014);
        }
        let cheap = times.extra_cost().unwrap();
        assert!((cheap - 0.1).abs() < 1e-9, "{cheap}");
        let default = Policy::new(false);
        let measured = Policy::new(false).with_measured_cost(Some(cheap));
        assert!(measured.draft_len() > default.draft_len(), "{measured:?}");
        // A drafted token as dear as a lone step: no draft pays at first.
        let dear = Policy::new(false).with_measured_cost(Some(1.0));
        assert_eq!(dear.draft_len(), 0, "{dear:?}");
        // Nothing measured: the default share.
        let none = Policy::new(false).with_measured_cost(None);
        assert_eq!(none.extra_cost(), CPU_EXTRA_COST);
        // Runs add up until settled; then the sums stay.
        let mut kept = StepTimes::default();
        while !kept.settled() {
            kept.merge(&times);
        }
        let settled = kept.clone();
        kept.merge(&times);
        assert_eq!(kept, settled);
        assert!((kept.extra_cost().unwrap() - cheap).abs() < 1e-9);
    }

    #[test]
    fn the_most_recent_match_wins_and_no_match_drafts_nothing() {
        let history = tokens(&[1, 2, 3, 7, 1, 2, 3, 8, 1, 2]);
        assert_eq!(draft(&history, LlamaToken(3), 1), tokens(&[8]));
        assert!(draft(&history, LlamaToken(4), 8).is_empty());
        assert!(draft(&tokens(&[1]), LlamaToken(1), 8).is_empty());
    }
}
