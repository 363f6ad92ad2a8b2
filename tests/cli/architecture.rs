//! ARCHITECTURE.md's invariants, checked against the crate graph that
//! `cargo metadata` reads from the manifests: a change that breaks one fails
//! here, whatever the code does.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each package of the workspace and the names of its normal (not dev, not
/// build) dependencies.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

fn ours(deps: &BTreeSet<String>) -> BTreeSet<&str> {
    deps.iter()
        .map(String::as_str)
        .filter(|d| d.starts_with("agent-"))
        .collect()
}

/// The packages that depend on `dep` directly.
fn users_of<'a>(graph: &'a BTreeMap<String, BTreeSet<String>>, dep: &str) -> Vec<&'a str> {
    graph
        .iter()
        .filter(|(_, deps)| deps.contains(dep))
        .map(|(name, _)| name.as_str())
        .collect()
}

#[test]
fn the_crate_graph_keeps_the_documented_invariants() {
    let g = graph();
    assert!(g.len() >= 12, "the workspace's crates: {:?}", g.keys());

    // The index knows nothing of the agent; only it links LanceDB.
    assert_eq!(
        ours(&g["agent-index"]),
        BTreeSet::from(["agent-base", "agent-lang"])
    );
    assert_eq!(users_of(&g, "lancedb"), ["agent-index"]);
    assert_eq!(users_of(&g, "fastembed"), ["agent-index"]);

    // The loop knows no engine and no index; only the engine links llama.cpp.
    for forbidden in ["agent-engine", "agent-index", "agent-mcp"] {
        assert!(
            !g["agent-core"].contains(forbidden),
            "agent-core depends on {forbidden}"
        );
    }
    assert_eq!(users_of(&g, "llama-cpp-2"), ["agent-engine"]);
    for forbidden in ["agent-engine", "agent-index", "agent-mcp", "agent-llm"] {
        assert!(
            !g["agent-acp"].contains(forbidden),
            "agent-acp depends on {forbidden}"
        );
    }
    assert_eq!(users_of(&g, "agent-acp"), ["agent"]);

    // The policy judges text: no crate of ours below it, nothing that spawns.
    assert!(
        ours(&g["agent-policy"]).is_empty(),
        "{:?}",
        g["agent-policy"]
    );

    // Only the sandbox links Landlock.
    assert_eq!(users_of(&g, "landlock"), ["agent-sandbox"]);

    // The bottom of the graph depends on nothing of ours.
    for leaf in ["agent-base", "agent-lang", "agent-chat", "agent-sandbox"] {
        assert!(ours(&g[leaf]).is_empty(), "{leaf}: {:?}", g[leaf]);
    }
    // The providers speak each model's language through agent-chat only.
    assert_eq!(ours(&g["agent-llm"]), BTreeSet::from(["agent-chat"]));

    // Tree-sitter's grammars belong to agent-lang.
    for (name, deps) in &g {
        if name != "agent-lang" {
            let grammars: Vec<_> = deps
                .iter()
                .filter(|d| d.starts_with("tree-sitter-"))
                .collect();
            assert!(grammars.is_empty(), "{name} links grammars {grammars:?}");
        }
    }
}
