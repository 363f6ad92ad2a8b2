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
//! (BENCHMARKS.md; the long-context engine test runs on one thread).

use llama_cpp_2::token::LlamaToken;

/// Tokens that must match (the new token and those before it) for a draft.
const NGRAM: usize = 3;
/// Most tokens drafted at once: a rejected draft costs its share of a batch.
pub const MAX_DRAFT: usize = 10;

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

/// How many tokens to draft, from what decoding has cost and drafting has
/// earned so far in this process: a draft of `k` tokens costs a batch of
/// `k + 1` and yields the tokens the model confirms (a run of them, each
/// as likely as the acceptance rate). Where a batch costs nearly as much
/// per token as single steps (a small model on a busy CPU), no length pays
/// and nothing is drafted; where single steps are bound by memory (a large
/// model, a GPU), long drafts pay.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Milliseconds of a one-token decode.
    single_ms: Option<f64>,
    /// Milliseconds each drafted token adds to a decode.
    extra_ms: Option<f64>,
    /// Confirmed and rejected drafted tokens, decayed.
    confirmed: f64,
    rejected: f64,
}

impl Default for Policy {
    fn default() -> Self {
        // Optimistic at first, so the first draft measures what one costs.
        Self {
            single_ms: None,
            extra_ms: None,
            confirmed: 3.0,
            rejected: 1.0,
        }
    }
}

const DECAY: f64 = 0.8;

impl Policy {
    /// The draft length with the most tokens per millisecond (0: none).
    pub fn draft_len(&self) -> usize {
        let Some(single) = self.single_ms else {
            return 0;
        };
        let extra = self.extra_ms.unwrap_or(single / 8.0);
        let p = self.acceptance().min(0.99);
        let rate =
            |k: usize| (1.0 - p.powi(k as i32 + 1)) / (1.0 - p) / (single + k as f64 * extra);
        (0..=MAX_DRAFT)
            .max_by(|&a, &b| rate(a).total_cmp(&rate(b)))
            .unwrap_or(0)
    }

    /// The share of drafted tokens the model confirms.
    pub fn acceptance(&self) -> f64 {
        self.confirmed / (self.confirmed + self.rejected)
    }

    /// A decode of `tokens` (the new token and its draft) took `ms`.
    pub fn decoded(&mut self, tokens: usize, ms: f64) {
        let mix =
            |old: Option<f64>, new: f64| Some(old.map_or(new, |o| DECAY * o + (1.0 - DECAY) * new));
        if tokens <= 1 {
            self.single_ms = mix(self.single_ms, ms);
        } else if let Some(single) = self.single_ms {
            let extra = ((ms - single) / (tokens - 1) as f64).max(0.0);
            self.extra_ms = mix(self.extra_ms, extra);
        }
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
        let mut policy = Policy::default();
        policy.decoded(1, 20.0);
        // Cheap batches and a model that confirms most drafts: long drafts.
        policy.decoded(9, 24.0);
        for _ in 0..10 {
            policy.drafted(8, 8);
        }
        assert!(policy.draft_len() >= 6, "{policy:?}");
        // Batches that cost as much per token as single steps: none.
        for _ in 0..20 {
            policy.decoded(9, 200.0);
        }
        assert_eq!(policy.draft_len(), 0, "{policy:?}");
    }

    #[test]
    fn the_most_recent_match_wins_and_no_match_drafts_nothing() {
        let history = tokens(&[1, 2, 3, 7, 1, 2, 3, 8, 1, 2]);
        assert_eq!(draft(&history, LlamaToken(3), 1), tokens(&[8]));
        assert!(draft(&history, LlamaToken(4), 8).is_empty());
        assert!(draft(&tokens(&[1]), LlamaToken(1), 8).is_empty());
    }
}
