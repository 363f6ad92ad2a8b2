//! Prompt-lookup drafting for speculative decoding: when the last few tokens
//! occurred before (in the prompt or the output so far), the tokens that
//! followed them then are proposed as the continuation. Code edits retype
//! what is in the context (`old_string`, a function with one change), so
//! the model confirms many tokens per forward pass; the engine checks each
//! drafted token with its sampler, so the output never changes.

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
    fn the_most_recent_match_wins_and_no_match_drafts_nothing() {
        let history = tokens(&[1, 2, 3, 7, 1, 2, 3, 8, 1, 2]);
        assert_eq!(draft(&history, LlamaToken(3), 1), tokens(&[8]));
        assert!(draft(&history, LlamaToken(4), 8).is_empty());
        assert!(draft(&tokens(&[1]), LlamaToken(1), 8).is_empty());
    }
}
