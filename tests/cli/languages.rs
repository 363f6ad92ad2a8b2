//! The table-driven languages through the binary: index, search by `--lang`, map.

use crate::common;

/// One real file of each table language (tests/fixtures/lang).
const FIXTURES: [&str; 13] = [
    "functional.hpp",
    "DecoderGroup.cs",
    "color.rb",
    "LoggerTrait.php",
    "state.lua",
    "SearchViewFormatter.kt",
    "HapticsModule.swift",
    "n.sh",
    "debounce.js",
    "Subject.ts",
    "errors.go",
    "RNLocalizeModuleImpl.java",
    "_speedups.c",
];

/// A repository in five languages indexes, searches with `--lang` and maps.
#[test]
fn a_mixed_language_repository_indexes_searches_and_maps() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    for name in FIXTURES {
        std::fs::copy(
            format!("{}/tests/fixtures/lang/{name}", env!("CARGO_MANIFEST_DIR")),
            root.join(name),
        )
        .unwrap();
    }
    // A script without an extension is known by its `#!` line.
    std::fs::create_dir(root.join("bin")).unwrap();
    std::fs::copy(
        format!("{}/tests/fixtures/lang/n.sh", env!("CARGO_MANIFEST_DIR")),
        root.join("bin/n"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = common::agent_bin()
            .current_dir(root)
            .args(args)
            .output()
            .unwrap();
        common::assert_success(&out);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    run(&["index"]);
    let status = run(&["index", "--status", "--json"]);
    let text = status.to_string();
    for lang in ["javascript", "typescript", "go", "java", "c"] {
        assert!(
            text.contains(&format!("\"{lang}\"")),
            "{lang} missing from {status}"
        );
    }

    let hits = run(&[
        "search",
        "--json",
        "--lang",
        "go",
        "wrap an error with a message",
    ]);
    let files: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert!(
        !files.is_empty() && files.iter().all(|f| f.ends_with(".go")),
        "{hits}"
    );
    let first = &hits[0];
    assert!(
        first["symbol"].as_str().unwrap().starts_with("Wrap")
            || first["symbol"].as_str().unwrap().starts_with("With"),
        "{first}"
    );

    let hits = run(&[
        "search",
        "--json",
        "--lang",
        "bash",
        "install a node version",
    ]);
    // `n.sh` by its extension, `bin/n` by its `#!/usr/bin/env bash` line.
    let paths: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"bin/n"), "{paths:?}");
    assert!(
        paths.iter().all(|p| *p == "bin/n" || *p == "n.sh"),
        "{paths:?}"
    );
    assert_eq!(hits[0]["kind"], "function", "{}", hits[0]);

    let map = run(&["map", "--json", "--tokens", "2000"]);
    let text = map["text"].as_str().unwrap();
    for def in [
        "func Wrap(err error, message string) error",
        "class Subject<T>",
        "public class RNLocalizeModuleImpl",
        "PyInit__speedups(void)",
    ] {
        assert!(text.contains(def), "the map lacks {def}:\n{text}");
    }
}
