//! Search while vectors are partial (issue 53, item 5): after a fill stopped
//! part way, the few embedded chunks must not crowd out what BM25 finds in
//! the files still without vectors.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an integration test: its helpers are not #[test] fns, a panic is a test failure"
)]

use std::path::Path;

use agent_base::cancel::CancelToken;
use agent_index::{Index, IndexOptions, SearchMode, SearchQuery};

/// The file that answers the query, by its words.
const ANSWER: &str = "src/hybrid/dfa.rs";
const QUERY: &str = "where is the lazy DFA cache cleared";

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A small crate: the answer, files about the lazy DFA that do not answer
/// (close to the query's meaning, embedded first), and unrelated files.
fn repository(root: &Path) {
    write(
        root,
        ANSWER,
        "/// The lazy DFA's cache of states and transitions.\n\
         pub struct Cache {\n    trans: Vec<u32>,\n    states: Vec<State>,\n    clear_count: usize,\n}\n\n\
         impl Cache {\n\
         \x20   /// Clears the cache when it is full: every state and transition\n\
         \x20   /// built so far is dropped, and the count of clears goes up.\n\
         \x20   pub fn reset(&mut self) {\n\
         \x20       self.trans.clear();\n\
         \x20       self.states.clear();\n\
         \x20       self.clear_count += 1;\n\
         \x20   }\n}\n",
    );
    write(
        root,
        "src/hybrid/id.rs",
        "/// The identifier of a state of the lazy DFA, with tag bits saying\n\
         /// whether it is unknown, dead, quit, a start or a match state.\n\
         pub struct LazyStateID(u32);\n\n\
         impl LazyStateID {\n\
         \x20   /// Whether this lazy state ID is tagged as a match state.\n\
         \x20   pub fn is_match(&self) -> bool {\n        self.0 & (1 << 31) != 0\n    }\n}\n",
    );
    write(
        root,
        "src/hybrid/search.rs",
        "/// Runs the lazy DFA forward over the haystack, one lazy state ID at a\n\
         /// time, building states as the search needs them.\n\
         pub fn find_fwd(dfa: &DFA, input: &Input) -> Option<HalfMatch> {\n\
         \x20   let mut sid = dfa.start_state(input);\n\
         \x20   for b in input.haystack() {\n        sid = dfa.next_state(sid, *b);\n    }\n    None\n}\n",
    );
    write(
        root,
        "src/hybrid/regex.rs",
        "/// A regex made of two lazy DFAs, one forward and one reverse, that\n\
         /// finds the start and end of each match.\n\
         pub struct Regex {\n    forward: DFA,\n    reverse: DFA,\n}\n",
    );
    write(
        root,
        "src/util/utf8.rs",
        "/// Decodes the first UTF-8 encoded codepoint of the bytes.\n\
         pub fn decode(bytes: &[u8]) -> Option<char> {\n\
         \x20   std::str::from_utf8(bytes).ok()?.chars().next()\n}\n",
    );
    write(
        root,
        "src/util/escape.rs",
        "/// Writes bytes with non-printable ones escaped as hex.\n\
         pub fn escape_bytes(bytes: &[u8]) -> String {\n\
         \x20   bytes.iter().map(|b| format!(\"\\\\x{b:02x}\")).collect()\n}\n",
    );
    write(
        root,
        "src/nfa/compiler.rs",
        "/// Compiles a parsed regular expression into a Thompson NFA.\n\
         pub fn compile(hir: &Hir) -> NFA {\n    let mut builder = Builder::new();\n    builder.build(hir)\n}\n",
    );
    write(
        root,
        "src/meta/strategy.rs",
        "/// Picks the regex engine for a pattern: a literal search, the one-pass\n\
         /// DFA, the backtracker or the PikeVM.\n\
         pub fn choose(info: &RegexInfo) -> Strategy {\n    Strategy::Core(info.clone())\n}\n",
    );
}

/// Unrelated files, so the three embedded files are a small share of the
/// chunks, as after Ctrl-C early in a fill.
fn fillers(root: &Path) {
    let topics = [
        ("parse_number", "Parses a decimal number from the text."),
        ("render_table", "Renders rows as an aligned table."),
        ("open_socket", "Opens a socket to the given address."),
        ("hash_password", "Hashes a password with a salt."),
        ("send_email", "Sends an email through the mail server."),
    ];
    for i in 0..40 {
        let (name, doc) = topics[i % topics.len()];
        write(
            root,
            &format!("src/misc/m{i}.rs"),
            &format!("/// {doc}\npub fn {name}_{i}(input: &str) -> usize {{\n    input.len() + {i}\n}}\n"),
        );
    }
}

fn top_file(index: &mut Index, mode: SearchMode) -> Vec<String> {
    let mut query = SearchQuery::new(QUERY, 5);
    query.mode = mode;
    let mut files: Vec<String> = Vec::new();
    for r in index.search(&query).unwrap() {
        if !files.contains(&r.path) {
            files.push(r.path);
        }
    }
    files
}

#[test]
fn a_fill_stopped_part_way_keeps_the_answer_bm25_finds_first() {
    agent_base::paths::isolate_for_tests();
    let models = agent_base::paths::models_dir();
    if !models.join("minilm").is_dir() {
        agent_test_support::skip!(
            "no MiniLM in {} (run scripts/fetch-models, or set AGENT_MODELS_DIR)",
            models.display()
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    repository(root);
    fillers(root);
    let options = IndexOptions {
        threads: 1,
        // One file a commit: the fill stops after exactly the files wanted.
        fill_commit: 1,
        ..IndexOptions::default()
    };
    let mut index = Index::open_writer(root, options).unwrap();
    let cancel = CancelToken::new();
    let mut stats = index.update_rows(&cancel, &mut |_| {}).unwrap();
    assert!(!stats.interrupted);

    // Vectors for the three lazy-DFA files that do not answer, first; the
    // fill is stopped once they are written.
    let decoys: Vec<String> = [
        "src/hybrid/id.rs",
        "src/hybrid/search.rs",
        "src/hybrid/regex.rs",
    ]
    .map(String::from)
    .to_vec();
    let mut left = None;
    let mut written = 0;
    index
        .fill_vectors(&decoys, &mut stats, &cancel, &mut |p| {
            if left.is_some_and(|n| p.chunks_unembedded < n) {
                written += 1;
                if written == decoys.len() {
                    cancel.cancel();
                }
            }
            left = Some(p.chunks_unembedded);
        })
        .unwrap();
    assert!(stats.interrupted);
    let status = index.status().unwrap();
    assert!(
        status.embedded_chunks > 0 && status.embedded_chunks < status.chunks,
        "vectors should be partial: {} of {}",
        status.embedded_chunks,
        status.chunks
    );

    // BM25 finds the answer; hybrid, with a few vectors, must too.
    assert_eq!(top_file(&mut index, SearchMode::Bm25)[0], ANSWER);
    let hybrid = top_file(&mut index, SearchMode::Hybrid);
    assert_eq!(hybrid[0], ANSWER, "hybrid at partial vectors: {hybrid:?}");

    // And once every vector is in.
    let cancel = CancelToken::new();
    index
        .fill_vectors(&[], &mut stats, &cancel, &mut |_| {})
        .unwrap();
    let status = index.status().unwrap();
    assert_eq!(status.embedded_chunks, status.chunks);
    let hybrid = top_file(&mut index, SearchMode::Hybrid);
    assert_eq!(hybrid[0], ANSWER, "hybrid at full vectors: {hybrid:?}");
}
