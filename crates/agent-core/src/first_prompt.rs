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
//! context, `AgentConfig::prefetch`), at one of a few levels ([`LEVELS`]).
//! Chosen once per session;
//! `Outcome::first_prompt` reports it.
//!
//! The sizes stick ([`stick`]): a workspace keeps the sizes it chose
//! (`cache/first_prompt.json` in its state folder) until the rate has been
//! more than [`STICKY_FACTOR`] away from the one they were chosen at for
//! [`STICKY_RUNS`] runs in a row. A laptop's load changes all day; a first
//! prompt that followed it would differ from the one the prompt cache on
//! disk holds, and the next run would prefill it all again.

use std::collections::BTreeMap;
use std::path::Path;

use agent_llm::{PrefillRate, RateSource};
use serde::{Deserialize, Serialize};

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
/// Between the floors and the caps, map and results take a share of their
/// room rounded down to a multiple of `1 / LEVELS`: five sizes in all, so a
/// rate that wobbles from run to run mostly leaves the sizes as they were,
/// and with them the prompt the prompt cache on disk holds.
pub(crate) const LEVELS: usize = 4;

/// The most the first prompt may carry (today's sizes): a share of the
/// context for the map, the configured number of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    pub map_tokens: usize,
    pub results: usize,
}

/// The map's cap: `share` of the context window, counted from the largest
/// power of two within it. A large model's window follows the free memory
/// (`agent_engine::offload`), which a busy machine has less of; rounded so,
/// the cap, and with it the first prompt, stays the same from run to run.
pub(crate) fn map_cap(context_tokens: usize, share: f64) -> usize {
    let window = match context_tokens {
        0 => 0,
        n => 1 << n.ilog2(),
    };
    agent_repomap::budget_for_context(window, share)
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
    /// The sizes an earlier run chose, kept ([`stick`]): the rate has not
    /// moved far enough, for long enough, to change the prompt.
    pub kept: bool,
}

/// How far (either way) the rate must move from the one the kept sizes were
/// chosen at before it counts against them: a loaded laptop prefills at
/// about half its idle rate, which alone changes nothing.
pub(crate) const STICKY_FACTOR: f64 = 2.0;
/// Runs in a row the rate must stay that far away before the sizes follow.
pub(crate) const STICKY_RUNS: u32 = 3;

/// The sizes a workspace chose, kept across runs (one entry per model).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Kept {
    map_tokens: usize,
    prefetch_results: usize,
    /// The rate they were chosen at.
    tokens_per_s: f64,
    /// What they were chosen within: other caps or another fixed part make
    /// another prompt anyway, and are sized afresh.
    caps: (usize, usize),
    fixed_tokens: usize,
    /// Runs in a row whose rate was more than [`STICKY_FACTOR`] away.
    away: u32,
}

/// The sizes to use: `fresh` (sized from this run's rate) unless `kept`
/// holds sizes chosen within the same caps and fixed part whose rate this
/// one has not left, by [`STICKY_FACTOR`], for [`STICKY_RUNS`] runs. Also
/// what to keep for the next run (None: nothing to keep, no rate).
pub(crate) fn stick(
    fresh: FirstPrompt,
    caps: Caps,
    kept: Option<Kept>,
) -> (FirstPrompt, Option<Kept>) {
    let Some(rate) = fresh.prefill_tokens_per_s.filter(|r| *r > 0.0) else {
        return (fresh, None);
    };
    let chosen = Kept {
        map_tokens: fresh.map_tokens,
        prefetch_results: fresh.prefetch_results,
        tokens_per_s: rate,
        caps: (caps.map_tokens, caps.results),
        fixed_tokens: fresh.fixed_tokens,
        away: 0,
    };
    let Some(kept) = kept.filter(|k| {
        k.caps == chosen.caps && k.fixed_tokens == chosen.fixed_tokens && k.tokens_per_s > 0.0
    }) else {
        return (fresh, Some(chosen));
    };
    let ratio = rate / kept.tokens_per_s;
    let near = (1.0 / STICKY_FACTOR..=STICKY_FACTOR).contains(&ratio);
    let away = if near { 0 } else { kept.away + 1 };
    if away >= STICKY_RUNS {
        return (fresh, Some(chosen));
    }
    let sizes = FirstPrompt {
        map_tokens: kept.map_tokens,
        prefetch_results: kept.prefetch_results,
        kept: true,
        ..fresh
    };
    (sizes, Some(Kept { away, ..kept }))
}

/// `stick` over the workspace's file of kept sizes (`path`), for the model
/// `model`: read, decided, and (`write`: not for `--print-prompt`, which
/// only shows) written back. A file that cannot be read or written only
/// means sizing afresh.
pub(crate) fn stick_in(
    path: &Path,
    model: &str,
    fresh: FirstPrompt,
    caps: Caps,
    write: bool,
) -> FirstPrompt {
    let mut all: BTreeMap<String, Kept> = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let (sizes, keep) = stick(fresh, caps, all.get(model).copied());
    if let Some(keep) = keep.filter(|_| write) {
        if all.get(model) != Some(&keep) {
            all.insert(model.to_string(), keep);
            let written = serde_json::to_vec_pretty(&all)
                .map_err(std::io::Error::other)
                .and_then(|bytes| agent_base::files::atomic_write(path, &bytes, None));
            if let Err(e) = written {
                tracing::info!("first prompt sizes not kept in {} ({e})", path.display());
            }
        }
    }
    sizes
}

/// One line on the sizes and what they follow, for a log or `--print-prompt`.
pub fn describe(p: &FirstPrompt) -> String {
    format!(
        "first prompt: {} map tokens, {} search results (prefill {} tokens/s, {}; {} fixed tokens{})",
        p.map_tokens,
        p.prefetch_results,
        p.prefill_tokens_per_s
            .map_or_else(|| "?".to_string(), |r| r.to_string()),
        p.rate_source,
        p.fixed_tokens,
        if p.kept { "; kept from earlier runs" } else { "" },
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
            kept: false,
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
        // Both grow by the same share of their room, at one of the levels.
        let share = left as f64 / (map_room + results_room) as f64;
        let level = (share * LEVELS as f64).floor() / LEVELS as f64;
        (
            map_floor + (level * map_room as f64) as usize,
            results_floor + (level * results_room as f64) as usize / RESULT_TOKENS,
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
        kept: false,
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
        // Nine tenths through the room, each has three quarters of its
        // own (the level below), in whole results.
        let room = (655 - 256) + 2 * RESULT_TOKENS;
        let rate = (fixed + 256 + 2 * RESULT_TOKENS + room * 9 / 10) as f64 / TARGET_PREFILL_SECS;
        let (map, results) = sizes(size(measured(rate), fixed, CAPS));
        assert_eq!(map, 256 + (655 - 256) * 3 / 4, "{map}");
        assert_eq!(results, 3);
    }

    #[test]
    fn the_maps_cap_follows_the_window_by_powers_of_two() {
        assert_eq!(map_cap(8192, 0.08), 655);
        assert_eq!(map_cap(32_768, 0.08), 2621);
        // A 7B's window on a CPU, from free memory that varies run to run.
        for window in [8192, 11_776, 12_032, 12_288, 16_383] {
            assert_eq!(map_cap(window, 0.08), 655, "{window}");
        }
        assert_eq!(map_cap(16_384, 0.08), 1310);
        assert_eq!(map_cap(0, 0.08), 0);
        assert_eq!(map_cap(100, 0.08), 5);
    }

    #[test]
    fn sizing_gives_a_few_levels_only() {
        let mut seen: Vec<(usize, usize)> = (1..=4000)
            .map(|rate| sizes(size(measured(rate as f64 / 10.0), 2000, CAPS)))
            .collect();
        seen.dedup();
        assert_eq!(seen.len(), LEVELS + 1, "{seen:?}");
        assert_eq!(seen[0], (MIN_MAP_TOKENS, MIN_RESULTS));
        assert_eq!(seen[LEVELS], (655, 4));
    }

    #[test]
    fn a_level_follows_the_rate_only_after_three_runs_three_times_slower() {
        let at = |rate: f64| size(measured(rate), 2000, CAPS);
        // The first run chooses from its rate: a level between the floors
        // and the caps.
        let (first, kept) = stick(at(150.0), CAPS, None);
        assert!(!first.kept);
        assert_eq!(sizes(first), sizes(at(150.0)));
        let level = sizes(first);
        assert!(
            level.0 > MIN_MAP_TOKENS && level.0 < CAPS.map_tokens,
            "{level:?}"
        );
        // 1.5x slower, then 1.5x faster: sized afresh either would differ,
        // kept it does not.
        assert_ne!(sizes(at(100.0)), level);
        assert_ne!(sizes(at(225.0)), level);
        let (slower, kept) = stick(at(100.0), CAPS, kept);
        let (faster, kept) = stick(at(225.0), CAPS, kept);
        assert_eq!([sizes(slower), sizes(faster)], [level; 2]);
        assert!(slower.kept && faster.kept);
        // 3x slower: kept for one run and two, followed on the third.
        let (one, kept) = stick(at(50.0), CAPS, kept);
        let (two, kept) = stick(at(50.0), CAPS, kept);
        assert_eq!([sizes(one), sizes(two)], [level; 2]);
        let (three, kept) = stick(at(50.0), CAPS, kept);
        assert_eq!(sizes(three), (MIN_MAP_TOKENS, MIN_RESULTS));
        assert!(!three.kept);
        // From there on the new level sticks: back near the old rate (3x
        // away from the new one's) for a run keeps it.
        let (back, _) = stick(at(150.0), CAPS, kept);
        assert_eq!(
            (sizes(back), back.kept),
            ((MIN_MAP_TOKENS, MIN_RESULTS), true)
        );
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
    fn the_sizes_stick_until_the_rate_has_moved_twofold_for_three_runs() {
        let fixed = 2000;
        let at = |rate: f64| size(measured(rate), fixed, CAPS);
        // Chosen at the tiny model's idle rate: the caps.
        let (first, kept) = stick(at(200.0), CAPS, None);
        assert_eq!((sizes(first), first.kept), ((655, 4), false));
        // Loaded, the rate drops by 40%: within the factor, the sizes stay.
        let (loaded, kept) = stick(at(120.0), CAPS, kept);
        assert_eq!((sizes(loaded), loaded.kept), ((655, 4), true));
        assert_ne!(
            sizes(at(120.0)),
            (655, 4),
            "120 tokens/s sized afresh is smaller"
        );
        // Far slower: kept for two runs, followed on the third.
        let (a, kept) = stick(at(40.0), CAPS, kept);
        let (b, kept) = stick(at(40.0), CAPS, kept);
        let (c, kept) = stick(at(40.0), CAPS, kept);
        assert_eq!([sizes(a), sizes(b)], [(655, 4), (655, 4)]);
        assert_eq!((sizes(c), c.kept), ((MIN_MAP_TOKENS, MIN_RESULTS), false));
        // A run back near the kept rate in between resets the count.
        let (_, kept) = stick(at(300.0), CAPS, kept);
        let (_, kept) = stick(at(300.0), CAPS, kept);
        let (near, kept) = stick(at(50.0), CAPS, kept);
        let (again, _) = stick(at(300.0), CAPS, kept);
        assert_eq!([sizes(near), sizes(again)], [(256, 2); 2]);
        // Other caps (another context, --no-map) or another fixed part
        // (instructions, tools) are sized afresh.
        let (_, kept) = stick(at(300.0), CAPS, None);
        let small = Caps {
            map_tokens: 300,
            results: 4,
        };
        let (other, _) = stick(size(measured(300.0), fixed, small), small, kept);
        assert_eq!((other.map_tokens, other.kept), (300, false));
        let (other, _) = stick(size(measured(40.0), fixed + 1, CAPS), CAPS, kept);
        assert!(!other.kept);
        // No rate, nothing kept.
        assert_eq!(stick(size(None, fixed, CAPS), CAPS, kept).1, None);
    }

    #[test]
    fn kept_sizes_live_in_a_file_per_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache/first_prompt.json");
        let at = |rate: f64| size(measured(rate), 2000, CAPS);
        assert!(!stick_in(&path, "a.gguf", at(300.0), CAPS, true).kept);
        assert!(!stick_in(&path, "b.gguf", at(40.0), CAPS, true).kept);
        let a = stick_in(&path, "a.gguf", at(200.0), CAPS, true);
        let b = stick_in(&path, "b.gguf", at(60.0), CAPS, true);
        assert_eq!((sizes(a), a.kept), ((655, 4), true));
        assert_eq!((sizes(b), b.kept), ((256, 2), true));
        // Only shown (`--print-prompt`): read, not written.
        assert!(!stick_in(&path, "c.gguf", at(300.0), CAPS, false).kept);
        // A damaged file: sized afresh, and rewritten.
        std::fs::write(&path, "{").unwrap();
        assert!(!stick_in(&path, "a.gguf", at(200.0), CAPS, true).kept);
        assert!(stick_in(&path, "a.gguf", at(200.0), CAPS, true).kept);
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
