//! The intent gate on questions that name a function by its bare name
//! (`scripts/bench intent --names`): "What does NAME return?" for every
//! function and method one file outside tests defines. Found on pytest:
//! `getfixturevalue` was gated as chat and answered from nowhere.
//!
//! Usage: bench_gate_names WORKSPACE [--limit N]
//! Prints the share labelled a repository question (read-only tools) by the
//! heuristics alone, and the names that were not, as JSON.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark: it prints its figures and stops on a broken set-up"
)]

use std::collections::HashMap;

use serde_json::json;

use agent_core::Vocabulary;
use agent_core::{heuristic, Knowledge};
use agent_protocol::Label;
use agent_repomap::{DefKind, RepoMap};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from(args.get(1).expect("usage: bench_gate_names WORKSPACE"));
    let limit: usize = args
        .iter()
        .position(|a| a == "--limit")
        .and_then(|i| args.get(i + 1))
        .map_or(400, |n| n.parse().expect("--limit takes a number"));
    let cache = tempfile::tempdir().expect("a temp dir");
    let mut map = RepoMap::open(&root, &cache.path().join("repomap.sqlite"));
    map.refresh().expect("a repo map");
    let vocabulary = Vocabulary::from_tags(map.files());
    let mut files_defining: HashMap<&str, Vec<&str>> = HashMap::new();
    for (rel, tags) in map.files() {
        if agent_lang::walk::is_test(rel) {
            continue;
        }
        for def in &tags.defs {
            if matches!(def.kind, DefKind::Function | DefKind::Method)
                && !def.name.starts_with("__")
            {
                files_defining
                    .entry(def.name.as_str())
                    .or_default()
                    .push(rel);
            }
        }
    }
    let mut names: Vec<&str> = files_defining
        .into_iter()
        .filter(|(name, files)| files.len() == 1 && name.len() >= 4)
        .map(|(name, _)| name)
        .collect();
    names.sort_unstable();
    let step = (names.len() as f64 / limit.max(1) as f64).max(1.0);
    let sample: Vec<&str> = (0..names.len().min(limit))
        .map(|i| names[(i as f64 * step) as usize])
        .collect();
    let knowledge = Knowledge {
        vocabulary: Some(&vocabulary),
        tools: &[],
        dependencies: &[],
    };
    let missed: Vec<(&str, &str)> = sample
        .iter()
        .filter_map(|name| {
            let guess = heuristic(&format!("What does {name} return?"), &knowledge);
            (guess.label != Label::RepoQuestion).then(|| (*name, guess.label.as_str()))
        })
        .collect();
    let share = 1.0 - missed.len() as f64 / sample.len().max(1) as f64;
    let report = json!({
        "names": sample.len(),
        "repo_question_share": share,
        "missed": missed.iter().take(30).map(|(n, l)| format!("{n}: {l}")).collect::<Vec<_>>(),
    });
    println!("{}", serde_json::to_string_pretty(&report).expect("JSON"));
}
