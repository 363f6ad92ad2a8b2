//! The intent gate on the labelled requests (`scripts/bench intent`).
//!
//! Usage: bench_intent SET_DIR NAME=WORKSPACE... [--model GGUF]
//!
//! SET_DIR holds `requests.jsonl` (request, gold label, workspace) and
//! `tools.json` (the MCP tools the tool requests assume). Each request runs in
//! its workspace (`any`: in every one given), with those tools known to the
//! gate as `mcp__SERVER__TOOL`, as an MCP server's tools join the toolbox.
//! Prints one JSON object: per class, how many the heuristics label right
//! (and how many they leave to the model), how many the whole gate labels
//! right with the model when `--model` is given, and the time the gate adds:
//! the workspace vocabulary (a repo map refresh, cold and warm, and the
//! build from its tags), the heuristics per request, the model per request
//! it is asked.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark: it prints its figures and stops on a broken set-up"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use agent_base::cancel::CancelToken;
use agent_core::Vocabulary;
use agent_core::{classify, heuristic, Knowledge, CONFIDENT};
use agent_llm::{Message, Provider};
use agent_protocol::Label;
use agent_repomap::RepoMap;
use agent_tools::{Access, ToolSpec, Toolbox};

struct Row {
    request: String,
    label: String,
    repo: String,
    tool_row: bool,
    names_path: bool,
    /// Issue 53's rows about the folder or project: "tune" or "held-out".
    split: Option<String>,
}

/// The class a row is scored in: tool requests apart, repository questions
/// by whether they name a path, the rows about the folder or project by
/// their split (the held-out one was never tuned on).
fn class(row: &Row) -> String {
    if let Some(split) = &row.split {
        format!("{} workspace {split}", row.label)
    } else if row.tool_row {
        format!("TOOL({})", row.label)
    } else if row.label == "REPO_QUESTION" {
        format!(
            "REPO_QUESTION {}",
            if row.names_path { "path" } else { "nopath" }
        )
    } else {
        row.label.clone()
    }
}

fn tools(set: &Path) -> Vec<ToolSpec> {
    let text = std::fs::read_to_string(set.join("tools.json")).expect("tools.json");
    let all: Value = serde_json::from_str(&text).expect("tools.json is JSON");
    let mut out = Vec::new();
    for (server, list) in all["servers"].as_object().expect("servers") {
        for tool in list.as_array().expect("a list of tools") {
            let name = tool["name"].as_str().expect("name");
            let description = tool["description"].as_str().unwrap_or("");
            // As agent_mcp::Hub names and describes them.
            out.push(ToolSpec {
                name: Box::leak(format!("mcp__{server}__{name}").into_boxed_str()),
                description: Box::leak(
                    format!("[MCP server {server}] {description}").into_boxed_str(),
                ),
                parameters: tool["inputSchema"].clone(),
                access: if tool["annotations"]["readOnlyHint"].as_bool() == Some(true) {
                    Access::Read
                } else {
                    Access::Execute
                },
            });
        }
    }
    out
}

fn rows(set: &Path) -> Vec<Row> {
    std::fs::read_to_string(set.join("requests.jsonl"))
        .expect("requests.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            Row {
                request: v["request"].as_str().expect("request").to_string(),
                label: v["label"].as_str().expect("label").to_string(),
                repo: v["repo"].as_str().expect("repo").to_string(),
                tool_row: v.get("tools").is_some(),
                names_path: v["names_path"].as_bool().unwrap_or(false),
                split: v["split"].as_str().map(str::to_string),
            }
        })
        .collect()
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// A workspace: its vocabulary, what it cost, and the session's system
/// prompt (what the model's label request starts with).
struct Workspace {
    vocabulary: Vocabulary,
    cold_ms: f64,
    warm_ms: f64,
    system: Message,
}

fn workspace(root: &Path, tools: &[ToolSpec]) -> Workspace {
    // Cold: no tag cache (a first `agent ask` in a fresh checkout).
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let cold_cache = scratch.path().join("repomap.sqlite");
    let started = Instant::now();
    let mut map = RepoMap::open(root, &cold_cache);
    map.refresh().expect("a repo map");
    let _ = Vocabulary::from_tags(map.files());
    let cold_ms = ms(started);
    drop(map);
    // Warm: the cache of an earlier run, nothing changed (every later request).
    let mut map = RepoMap::open(root, &cold_cache);
    map.refresh().expect("a repo map");
    let started = Instant::now();
    map.refresh().expect("a repo map");
    let vocabulary = Vocabulary::from_tags(map.files());
    let warm_ms = ms(started);
    let mut specs = Toolbox::standard().specs();
    specs.extend(tools.iter().cloned());
    let system = Message::system(agent_core::system_prompt(&agent_core::PromptParts {
        instructions: "",
        tools: &specs,
        skills: "",
        native: false,
    }));
    Workspace {
        vocabulary,
        cold_ms,
        warm_ms,
        system,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: bench_intent SET_DIR NAME=WORKSPACE... [--model GGUF]";
    let set = PathBuf::from(args.first().expect(usage));
    let mut roots: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut model_path = None;
    let mut i = 1;
    while i < args.len() {
        if args[i] == "--model" {
            model_path = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        let (name, path) = args[i].split_once('=').expect(usage);
        roots.insert(name.to_string(), PathBuf::from(path));
        i += 1;
    }
    let tools = tools(&set);
    let rows = rows(&set);
    let workspaces: BTreeMap<String, Workspace> = roots
        .iter()
        .map(|(name, root)| (name.clone(), workspace(root, &tools)))
        .collect();
    let mut model: Option<Box<dyn Provider>> = model_path.as_ref().map(|path| {
        let config = agent_engine::engine::EngineConfig {
            model_path: PathBuf::from(path),
            ..agent_engine::engine::EngineConfig::new("")
        };
        Box::new(agent_engine::engine::LlamaEngine::load(&config).expect("the model loads"))
            as Box<dyn Provider>
    });

    #[derive(Default)]
    struct Tally {
        total: usize,
        heuristic: usize,
        unsure: usize,
        gate: usize,
    }
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut per_workspace: BTreeMap<String, Tally> = BTreeMap::new();
    let mut wrong = Vec::new();
    let (mut heuristic_ms, mut model_ms) = (Vec::new(), Vec::new());
    let cancel = CancelToken::new();
    for row in &rows {
        let names: Vec<&String> = if row.repo == "any" {
            workspaces.keys().collect()
        } else {
            workspaces.keys().filter(|n| **n == row.repo).collect()
        };
        for name in names {
            let ws = &workspaces[name];
            let knowledge = Knowledge {
                vocabulary: Some(&ws.vocabulary),
                tools: &tools,
                dependencies: &[],
            };
            let started = Instant::now();
            let guess = heuristic(&row.request, &knowledge);
            heuristic_ms.push(ms(started));
            let gate = match model.as_deref_mut() {
                Some(model) if guess.confidence < CONFIDENT => {
                    let started = Instant::now();
                    let decided = classify(
                        &row.request,
                        &knowledge,
                        Some(model),
                        Some(&ws.system),
                        &cancel,
                    );
                    model_ms.push(ms(started));
                    decided
                }
                _ => guess.clone(),
            };
            // UNCERTAIN gets read-only tools, like a repository question.
            let as_access = |l: Label| match l {
                Label::Uncertain => Label::RepoQuestion.as_str(),
                l => l.as_str(),
            };
            for tally in [
                tallies.entry(class(row)).or_default(),
                per_workspace.entry(name.clone()).or_default(),
            ] {
                tally.total += 1;
                tally.heuristic += usize::from(as_access(guess.label) == row.label);
                tally.unsure += usize::from(guess.confidence < CONFIDENT);
                tally.gate += usize::from(as_access(gate.label) == row.label);
            }
            if as_access(gate.label) != row.label {
                wrong.push(json!({"class": class(row), "workspace": name, "request": row.request,
                                  "gate": gate.label, "confidence": gate.confidence, "reason": gate.reason}));
            }
        }
    }
    let sum = |f: fn(&Tally) -> usize| tallies.values().map(f).sum::<usize>();
    let out = json!({
        "classes": tallies.iter().map(|(c, t)| (c.clone(), json!({
            "total": t.total, "heuristic": t.heuristic, "unsure": t.unsure, "gate": t.gate,
        }))).collect::<serde_json::Map<String, Value>>(),
        "workspaces": per_workspace.iter().map(|(c, t)| (c.clone(), json!({
            "total": t.total, "heuristic": t.heuristic, "unsure": t.unsure, "gate": t.gate,
            "vocabulary_cold_ms": workspaces[c].cold_ms, "vocabulary_warm_ms": workspaces[c].warm_ms,
        }))).collect::<serde_json::Map<String, Value>>(),
        "total": sum(|t| t.total),
        "heuristic": sum(|t| t.heuristic),
        "unsure": sum(|t| t.unsure),
        "gate": sum(|t| t.gate),
        "model": model_path,
        "heuristic_ms_p50": median(heuristic_ms.clone()),
        "heuristic_ms_p95": percentile(heuristic_ms, 0.95),
        "model_calls": model_ms.len(),
        "model_ms_p50": median(model_ms.clone()),
        "model_ms_p95": percentile(model_ms, 0.95),
        "wrong": wrong,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
}
