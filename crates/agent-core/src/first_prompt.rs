//! How much repo map and prefetched search the first request of a session
//! carries, from how fast the model prefills: every token of the first
//! prompt is prefilled before the first token comes back, so a CPU-bound 7B
//! (30-100 prompt tokens/s) gets a leaner first prompt than a GPU, which
//! keeps the full one. `agent ask --json` reports the choice.
//!
//! [`size`] is a pure function: the provider's prefill rate times
//! [`TARGET_PREFILL_SECS`], less the fixed part of the prompt (system prompt
//! and tool schemas, counted with the model's tokenizer), is split between
//! the map's budget and the prefetched results above their floors
//! ([`MIN_MAP_TOKENS`], [`MIN_RESULTS`]) and up to their caps (a share of the
//! context, `AgentConfig::prefetch`). Chosen once per session;
//! `Outcome::first_prompt` reports it.

use agent_llm::{PrefillRate, RateSource};
use serde::Serialize;

/// The first prefill the sizing aims for. A laptop user waits about this
/// long for a first token before the tool feels stuck; beyond it, map and
/// search are cut back to their floors rather than make them wait minutes.
pub(crate) const TARGET_PREFILL_SECS: f64 = 20.0;
/// The smallest map: the top-ranked files' key definitions, enough for the
/// model to know where to look.
pub(crate) const MIN_MAP_TOKENS: usize = 256;
/// The fewest prefetched results: the best two matches still start a small
/// model from the right files.
pub(crate) const MIN_RESULTS: usize = 2;
/// What one prefetched result takes (a `path:lines  symbol` line and up to
/// six snippet lines, see `agent_tools::search`), in tokens, typically.
pub(crate) const RESULT_TOKENS: usize = 120;
/// Below its cap the map grows in steps of this many tokens: a rate that
/// wobbles from run to run then leaves the map as it was, and with it the
/// prompt the prompt cache on disk holds.
pub(crate) const MAP_STEP: usize = 64;

/// The most the first prompt may carry (today's sizes): a share of the
/// context for the map, the configured number of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    pub map_tokens: usize,
    pub results: usize,
}

/// The sizes chosen for the first request, and what they were chosen from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FirstPrompt {
    /// The repo map's token budget.
    pub map_tokens: usize,
    /// Search results prefetched before the first step.
    pub prefetch_results: usize,
    /// The rate the sizes follow (None: the provider does not know it).
    pub prefill_tokens_per_s: Option<f64>,
    /// `measured`, `estimated` (from the model's size and placement), or
    /// `default` (no rate: the caps).
    pub rate_source: &'static str,
    /// The part of the first prompt that is there whatever the sizes
    /// (system prompt, instructions, tool schemas), in tokens.
    pub fixed_tokens: usize,
}

/// One line on the sizes and what they follow, for a log or `--print-prompt`.
pub fn describe(p: &FirstPrompt) -> String {
    format!(
        "first prompt: {} map tokens, {} search results (prefill {} tokens/s, {}; {} fixed tokens)",
        p.map_tokens,
        p.prefetch_results,
        p.prefill_tokens_per_s
            .map_or_else(|| "?".to_string(), |r| r.to_string()),
        p.rate_source,
        p.fixed_tokens
    )
}

/// The sizes for a model prefilling at `rate`, whose first prompt holds
/// `fixed_tokens` besides map and results: what the target time leaves
/// after the fixed part goes to the map and the results in proportion to
/// their room above the floors, never past the caps.
pub(crate) fn size(rate: Option<PrefillRate>, fixed_tokens: usize, caps: Caps) -> FirstPrompt {
    let Some(rate) = rate.filter(|r| r.tokens_per_s.is_finite() && r.tokens_per_s > 0.0) else {
        return FirstPrompt {
            map_tokens: caps.map_tokens,
            prefetch_results: caps.results,
            prefill_tokens_per_s: None,
            rate_source: "default",
            fixed_tokens,
        };
    };
    let affordable = (rate.tokens_per_s * TARGET_PREFILL_SECS) as usize;
    let map_floor = MIN_MAP_TOKENS.min(caps.map_tokens);
    let results_floor = MIN_RESULTS.min(caps.results);
    let left = affordable
        .saturating_sub(fixed_tokens)
        .saturating_sub(map_floor + results_floor * RESULT_TOKENS);
    let map_room = caps.map_tokens - map_floor;
    let results_room = (caps.results - results_floor) * RESULT_TOKENS;
    let (map_tokens, results) = if left >= map_room + results_room {
        (caps.map_tokens, caps.results)
    } else {
        // Both grow by the same share of their room.
        let share = left as f64 / (map_room + results_room) as f64;
        (
            map_floor + (share * map_room as f64) as usize / MAP_STEP * MAP_STEP,
            results_floor + (share * results_room as f64) as usize / RESULT_TOKENS,
        )
    };
    FirstPrompt {
        map_tokens,
        prefetch_results: results,
        prefill_tokens_per_s: Some((rate.tokens_per_s * 10.0).round() / 10.0),
        rate_source: match rate.source {
            RateSource::Measured => "measured",
            RateSource::Estimated => "estimated",
        },
        fixed_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Today's sizes for an 8k context: 8% for the map, 4 results.
    const CAPS: Caps = Caps {
        map_tokens: 655,
        results: 4,
    };

    fn measured(tokens_per_s: f64) -> Option<PrefillRate> {
        Some(PrefillRate {
            tokens_per_s,
            source: RateSource::Measured,
        })
    }

    fn sizes(p: FirstPrompt) -> (usize, usize) {
        (p.map_tokens, p.prefetch_results)
    }

    #[test]
    fn sizing_without_a_rate_keeps_the_caps() {
        let p = size(None, 2000, CAPS);
        assert_eq!(sizes(p), (655, 4));
        assert_eq!(p.rate_source, "default");
        assert_eq!(p.prefill_tokens_per_s, None);
    }

    #[test]
    fn sizing_for_a_fast_model_keeps_the_caps() {
        // A GPU, or the tiny default model on an idle CPU.
        for rate in [1500.0, 300.0] {
            let p = size(measured(rate), 2000, CAPS);
            assert_eq!(sizes(p), (655, 4), "{rate}");
            assert_eq!(p.rate_source, "measured");
        }
    }

    #[test]
    fn sizing_for_a_cpu_bound_7b_gives_the_floors() {
        // 30-100 tokens/s: the fixed part alone takes the target time.
        for rate in [30.0, 100.0] {
            let p = size(measured(rate), 2000, CAPS);
            assert_eq!(sizes(p), (MIN_MAP_TOKENS, MIN_RESULTS), "{rate}");
        }
    }

    #[test]
    fn sizing_in_between_grows_map_and_results_together() {
        let fixed = 2000;
        let mut last = (0, 0);
        for rate in (100..=200).step_by(5) {
            let now = sizes(size(measured(rate as f64), fixed, CAPS));
            assert!(
                now.0 >= last.0 && now.1 >= last.1,
                "{rate}: {now:?} < {last:?}"
            );
            assert!(now.0 <= CAPS.map_tokens && now.1 <= CAPS.results);
            last = now;
        }
        // Three quarters through the room, each has three quarters of its
        // own, in whole results and steps of the map.
        let room = (655 - 256) + 2 * RESULT_TOKENS;
        let rate = (fixed + 256 + 2 * RESULT_TOKENS + room * 3 / 4) as f64 / TARGET_PREFILL_SECS;
        let (map, results) = sizes(size(measured(rate), fixed, CAPS));
        assert_eq!(map, 256 + 4 * MAP_STEP, "{map}");
        assert_eq!(results, 3);
    }

    #[test]
    fn sizing_never_goes_past_small_caps() {
        // `prefetch` 0 or 1, a tiny context: the caps are the floors too.
        let caps = Caps {
            map_tokens: 100,
            results: 0,
        };
        assert_eq!(sizes(size(measured(10.0), 2000, caps)), (100, 0));
        assert_eq!(sizes(size(measured(1e6), 2000, caps)), (100, 0));
    }

    #[test]
    fn sizing_reports_an_estimate_as_such() {
        let rate = Some(PrefillRate {
            tokens_per_s: 40.04,
            source: RateSource::Estimated,
        });
        let p = size(rate, 2000, CAPS);
        assert_eq!(p.rate_source, "estimated");
        assert_eq!(p.prefill_tokens_per_s, Some(40.0));
    }
}
