//! How fast this machine prefills prompts with a model, remembered across
//! processes in a small JSON file (`cache/prefill.json` in the state
//! folder), so the first prompt of the next run can be sized to it
//! (`Provider::prefill_rate`, read by the agent's `first_prompt`); and,
//! beside it, what a drafted token costs a decode step, so speculative
//! decoding drafts only as much as pays here.
//!
//! One entry per model file, placement (GPU layers, device), thread count
//! and batch size: the key is the prompt cache's model identity
//! ([`crate::prompt_cache::ModelFile::key`]) over those. A prefill of fewer than
//! [`MIN_TOKENS`] tokens is not timed (fixed costs dominate it); the rest
//! update a smoothed rate (half the new sample, half the old). Before anything
//! was timed the rate is an estimate: 2 FLOPs per parameter per token at
//! 60 GFLOP/s per thread, GPU layers 10 times faster. The file is rewritten
//! atomically (a temporary file, then a rename); two processes at once lose a
//! sample at worst.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::speculative::StepTimes;

/// Prefills shorter than this say more about fixed costs than throughput.
pub const MIN_TOKENS: usize = 64;
/// Weight of a new sample in the smoothed rate: recent runs count most (the
/// first run of a process may have read the weights from disk).
const SMOOTHING: f64 = 0.5;
/// Effective prefill FLOP/s of one CPU thread in llama.cpp, for an estimate
/// before anything was timed: about what a laptop core reaches on quantized
/// weights (a 7B model at 8 threads: ~35 tokens/s). A guess on the generous
/// side, so only a clearly slow machine gets a leaner first prompt untimed.
const CPU_FLOPS_PER_THREAD: f64 = 6.0e10;
/// How much faster a layer prefills on a GPU than on the CPU (conservative:
/// an integrated GPU; a discrete one does better).
const GPU_SPEEDUP: f64 = 10.0;

/// One model's rate on this machine, as the file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub tokens_per_s: f64,
    /// Prefills timed so far.
    pub samples: u64,
    /// The model file and its placement, for a reader of the file.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub placement: String,
    /// Decode steps timed over runs ([`StepTimes`]), and the share of a lone
    /// step a drafted token adds that they give (for a reader of the file).
    #[serde(default, skip_serializing_if = "StepTimes::is_empty")]
    pub decode_steps: StepTimes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_cost: Option<f64>,
}

/// The rates file and this engine's key in it.
#[derive(Debug, Clone)]
pub struct RateBook {
    path: PathBuf,
    key: String,
    model: String,
    placement: String,
}

impl RateBook {
    pub fn new(path: &Path, key: String, model: String, placement: String) -> Self {
        Self {
            path: path.to_path_buf(),
            key,
            model,
            placement,
        }
    }

    /// The remembered rate, if any (a missing or unreadable file: none).
    pub fn read(&self) -> Option<f64> {
        read_all(&self.path)
            .remove(&self.key)
            .map(|r| r.tokens_per_s)
            .filter(|r| r.is_finite() && *r > 0.0)
    }

    /// Adds a timed prefill of `tokens` in `seconds`; returns the smoothed
    /// rate, or None when the prefill was too short to count.
    pub fn record(&self, tokens: usize, seconds: f64) -> Option<f64> {
        if tokens < MIN_TOKENS || seconds <= 0.0 {
            return None;
        }
        let sample = tokens as f64 / seconds;
        let mut all = read_all(&self.path);
        let rate = all
            .entry(self.key.clone())
            .and_modify(|r| {
                r.tokens_per_s = if r.tokens_per_s.is_finite() && r.tokens_per_s > 0.0 {
                    SMOOTHING * sample + (1.0 - SMOOTHING) * r.tokens_per_s
                } else {
                    sample
                };
                r.samples += 1;
            })
            .or_insert(Rate {
                tokens_per_s: sample,
                samples: 1,
                model: String::new(),
                placement: String::new(),
                decode_steps: StepTimes::default(),
                draft_cost: None,
            });
        rate.model.clone_from(&self.model);
        rate.placement.clone_from(&self.placement);
        let smoothed = rate.tokens_per_s;
        if let Err(e) = write_atomically(&self.path, &all) {
            tracing::info!("prefill rate not saved to {} ({e})", self.path.display());
        }
        Some(smoothed)
    }

    /// The share of a lone step a drafted token adds here, once enough
    /// steps were timed.
    pub fn read_draft_cost(&self) -> Option<f64> {
        read_all(&self.path)
            .remove(&self.key)
            .and_then(|r| r.decode_steps.extra_cost())
    }

    /// Adds this run's timed decode steps to the entry (the prefill rate's:
    /// a run decodes only after a prefill), until they are settled.
    pub fn record_steps(&self, steps: &StepTimes) {
        let mut all = read_all(&self.path);
        let Some(rate) = all.get_mut(&self.key) else {
            return;
        };
        if steps.is_empty() || rate.decode_steps.settled() {
            return;
        }
        rate.decode_steps.merge(steps);
        rate.draft_cost = rate.decode_steps.extra_cost();
        if let Err(e) = write_atomically(&self.path, &all) {
            tracing::info!("decode timings not saved to {} ({e})", self.path.display());
        }
    }
}

fn read_all(path: &Path) -> BTreeMap<String, Rate> {
    let Ok(text) = fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::info!("ignoring {} ({e})", path.display());
        BTreeMap::new()
    })
}

fn write_atomically(path: &Path, all: &BTreeMap<String, Rate>) -> io::Result<()> {
    let text = serde_json::to_string_pretty(all).map_err(io::Error::other)?;
    agent_base::files::atomic_write(path, text.as_bytes(), None)
}

/// A prefill rate worked out from the model's size and placement, before
/// one was timed: prefill costs about two FLOPs per parameter per token;
/// the layers on the GPU go `GPU_SPEEDUP` times faster.
pub fn estimate(params: u64, threads: i32, gpu_layers: u32, model_layers: u32) -> f64 {
    let flops_per_token = 2.0 * params.max(1) as f64;
    let cpu = CPU_FLOPS_PER_THREAD * threads.max(1) as f64 / flops_per_token;
    let on_gpu = if model_layers == 0 {
        0.0
    } else {
        (gpu_layers as f64 / model_layers as f64).min(1.0)
    };
    // Seconds per token: the CPU's share plus the GPU's.
    1.0 / ((1.0 - on_gpu) / cpu + on_gpu / (cpu * GPU_SPEEDUP))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(dir: &Path, key: &str) -> RateBook {
        RateBook::new(
            &dir.join("cache/prefill.json"),
            key.into(),
            "m.gguf".into(),
            "CPU".into(),
        )
    }

    #[test]
    fn prefill_rate_is_remembered_smoothed_and_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let a = book(dir.path(), "a");
        assert_eq!(a.read(), None);
        assert_eq!(a.record(10, 0.01), None, "too short to time");
        assert_eq!(a.read(), None);
        assert_eq!(a.record(100, 1.0), Some(100.0));
        assert_eq!(a.record(300, 1.0), Some(200.0));
        // Another process (a new book) reads it; another key does not.
        assert_eq!(book(dir.path(), "a").read(), Some(200.0));
        assert_eq!(book(dir.path(), "b").read(), None);
        book(dir.path(), "b").record(64, 2.0);
        assert_eq!(a.read(), Some(200.0));
        assert_eq!(book(dir.path(), "b").read(), Some(32.0));
    }

    #[test]
    fn decode_steps_add_up_over_runs_into_a_draft_cost() {
        let dir = tempfile::tempdir().unwrap();
        let a = book(dir.path(), "a");
        let mut run = StepTimes::default();
        for _ in 0..6 {
            run.add(1, 0.010);
        }
        run.add(5, 0.014);
        run.add(5, 0.014);
        a.record_steps(&run);
        assert_eq!(a.read_draft_cost(), None, "no prefill timed yet: no entry");
        a.record(100, 1.0);
        a.record_steps(&run);
        assert_eq!(a.read_draft_cost(), None, "too few steps in one run");
        a.record_steps(&run);
        let cost = a.read_draft_cost().unwrap();
        assert!((cost - 0.1).abs() < 1e-9, "{cost}");
        assert_eq!(book(dir.path(), "b").read_draft_cost(), None);
        // The prefill rate goes on as before beside it.
        assert_eq!(a.record(300, 1.0), Some(200.0));
        assert!((a.read_draft_cost().unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn prefill_rate_file_damaged_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let a = book(dir.path(), "a");
        fs::create_dir_all(dir.path().join("cache")).unwrap();
        fs::write(dir.path().join("cache/prefill.json"), "{not json").unwrap();
        assert_eq!(a.read(), None);
        assert_eq!(a.record(100, 0.5), Some(200.0));
        assert_eq!(a.read(), Some(200.0));
    }

    #[test]
    fn prefill_rate_estimate_follows_size_and_placement() {
        let cpu_7b = estimate(7_000_000_000, 8, 0, 33);
        assert!((20.0..80.0).contains(&cpu_7b), "{cpu_7b}");
        let cpu_135m = estimate(135_000_000, 2, 0, 31);
        assert!(cpu_135m > 10.0 * cpu_7b, "{cpu_135m}");
        let gpu_7b = estimate(7_000_000_000, 8, 33, 33);
        assert!((gpu_7b / cpu_7b - GPU_SPEEDUP).abs() < 1e-9);
        let half = estimate(7_000_000_000, 8, 16, 33);
        assert!(cpu_7b < half && half < gpu_7b);
    }
}
