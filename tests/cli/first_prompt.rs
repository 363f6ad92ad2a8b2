//! The first prompt sized to the machine, with the real tiny model: the
//! prefill rate is measured and kept in `.agent/cache/prefill.json`, and a
//! slow rate there makes the next run's map and prefetched search smaller;
//! sizes once chosen stick while the rate wobbles.

use std::path::Path;

use serde_json::Value;

use crate::agent::{agent_in, json_of, repo};
use crate::common;

/// `agent ask --json` with the tiny model, one step. Without the prompt
/// cache: each run prefills its whole prompt, and so is timed.
fn ask(dir: &Path) -> Value {
    let out = agent_in(dir)
        .args(["ask", "--json", "--max-steps", "1", "--max-tokens", "16"])
        .args(["--prompt-cache", "off"])
        .arg("--model")
        .arg(common::tiny_model())
        .arg("Where are the shapes' areas computed?")
        .output()
        .unwrap();
    // One step may end without an answer (exit 3): the report is what counts.
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    json_of(&out)
}

fn rates(dir: &Path) -> Value {
    let text = std::fs::read_to_string(common::state_dir(dir).join("cache/prefill.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Prefetched results per request, from the audit log.
fn prefetched(dir: &Path) -> Vec<u64> {
    std::fs::read_to_string(common::state_dir(dir).join("logs/audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "prefetch")
        .map(|e| e["args"]["k"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_slow_measured_prefill_rate_shrinks_the_first_prompt() {
    let dir = repo();
    // Enough code that the map fills more than its smallest budget.
    for i in 0..40 {
        let code = format!(
            "class Shape{i}:\n    def area_{i}(self, width, height):\n        return width * height * {i}\n\n    def perimeter_{i}(self, width, height):\n        return 2 * (width + height) + {i}\n\n\ndef make_shape_{i}(kind):\n    return Shape{i}()\n"
        );
        std::fs::write(dir.path().join(format!("shape_{i}.py")), code).unwrap();
    }
    let indexed = agent_in(dir.path()).arg("index").output().unwrap();
    common::assert_success(&indexed);

    // Nothing timed yet: an estimate from the model's size and placement.
    let first = ask(dir.path());
    assert_eq!(first["first_prompt"]["rate_source"], "estimated", "{first}");
    let measured = rates(dir.path());
    let entries = measured.as_object().unwrap();
    assert_eq!(entries.len(), 1, "{measured}");
    let (_, entry) = entries.iter().next().unwrap();
    assert!(entry["tokens_per_s"].as_f64().unwrap() > 0.0, "{measured}");

    // The next process sizes from the rate the first one measured.
    let second = ask(dir.path());
    let sizes = &second["first_prompt"];
    assert_eq!(sizes["rate_source"], "measured", "{second}");
    assert!(sizes["prefill_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(sizes["fixed_tokens"].as_u64().unwrap() > 100, "{second}");

    // Measured fast (a GPU, or the tiny model on an idle CPU): today's
    // sizes, 8% of the context for the map and 4 results.
    let with_rate = |tokens_per_s: f64| {
        let mut rates = measured.clone();
        for entry in rates.as_object_mut().unwrap().values_mut() {
            entry["tokens_per_s"] = tokens_per_s.into();
        }
        let file = common::state_dir(dir.path()).join("cache/prefill.json");
        std::fs::write(file, rates.to_string()).unwrap();
        // Sized afresh: the sizes earlier runs chose are forgotten.
        let kept = common::state_dir(dir.path()).join("cache/first_prompt.json");
        std::fs::remove_file(kept).unwrap();
        ask(dir.path())
    };
    let fast = with_rate(100_000.0);
    let sizes = &fast["first_prompt"];
    let n_ctx = fast["engine"]["n_ctx"].as_u64().unwrap();
    assert_eq!(sizes["map_tokens"], n_ctx * 8 / 100, "{fast}");
    assert_eq!(sizes["prefetch_results"], 4, "{fast}");

    // Measured at 5 tokens/s (a CPU-bound 7B does 30 to 100): the smallest
    // map and two results.
    let lean = with_rate(5.0);
    let sizes = &lean["first_prompt"];
    assert_eq!(sizes["prefill_tokens_per_s"], 5.0, "{lean}");
    assert_eq!(sizes["map_tokens"], 256, "{lean}");
    assert_eq!(sizes["prefetch_results"], 2, "{lean}");
    // And the prompt is smaller for it: the prefetch asked for two results,
    // and the first request had fewer tokens.
    let k = prefetched(dir.path());
    assert_eq!(k[k.len() - 2..], [4, 2], "{k:?}");
    let tokens = |v: &Value| v["prompt_tokens"].as_u64().unwrap();
    assert!(
        tokens(&lean) + 200 < tokens(&fast),
        "{} vs {}",
        tokens(&lean),
        tokens(&fast)
    );
    // Its own prefill was timed and pulled the rate up again.
    let after = rates(dir.path());
    let (_, entry) = after.as_object().unwrap().iter().next().unwrap();
    let rate = entry["tokens_per_s"].as_f64().unwrap();
    assert!(rate > 10.0, "{after}");

    // The next run reads a rate over twice the kept one's, but one run so
    // far changes nothing: the prompt stays the one the prompt cache holds
    // until three runs in a row say otherwise.
    let next = ask(dir.path());
    let sizes = &next["first_prompt"];
    assert_eq!(sizes["kept"], true, "{next}");
    assert_eq!(sizes["map_tokens"], 256, "{next}");
    assert_eq!(sizes["prefetch_results"], 2, "{next}");
}
