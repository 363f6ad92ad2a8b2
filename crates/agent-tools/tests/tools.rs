//! The agent's tools end to end, through `Toolbox::standard().call(...)`, on
//! real files in temporary folders.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an integration test: its helpers are not #[test] fns, a panic is a test failure"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_base::cancel::CancelToken;
use agent_policy::{Mode, Policy};
use agent_tools::checkpoint::Checkpoints;
use agent_tools::search::Hit;
use agent_tools::{
    Access, AlwaysApprove, AlwaysDecline, Approval, Approver, Decision, ErrorClass, ReadLedger,
    SemanticSearch, ToolContext, ToolOutput, Toolbox, Workspace,
};
use serde_json::{json, Value};

struct Harness {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: Workspace,
    ledger: ReadLedger,
    checkpoints: Checkpoints,
    policy: Policy,
    cancel: CancelToken,
    toolbox: Toolbox,
}

/// Approves everything and remembers what it was asked.
#[derive(Default)]
struct Recorder(Vec<Approval>);
impl Approver for Recorder {
    fn approve(&mut self, request: &Approval) -> Decision {
        self.0.push(request.clone());
        Decision::Approve
    }
}

impl Harness {
    fn new() -> Self {
        Self::with_mode(Mode::Confirm)
    }

    fn with_mode(mode: Mode) -> Self {
        agent_base::paths::isolate_for_tests();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let ws = Workspace::new(&root).unwrap();
        let checkpoints = Checkpoints::open(&ws.state_dir()).unwrap();
        let policy = Policy::load(&ws.team_dir(), mode).unwrap();
        Self {
            root: ws.root().to_path_buf(),
            _dir: dir,
            ws,
            ledger: ReadLedger::default(),
            checkpoints,
            policy,
            cancel: CancelToken::new(),
            toolbox: Toolbox::standard(),
        }
    }

    fn call(&mut self, name: &str, args: Value) -> ToolOutput {
        self.call_with(name, args, &mut AlwaysApprove, None)
    }

    fn call_with(
        &mut self,
        name: &str,
        args: Value,
        approver: &mut dyn Approver,
        search: Option<&mut dyn SemanticSearch>,
    ) -> ToolOutput {
        let mut ctx = ToolContext {
            room: usize::MAX,
            workspace: &self.ws,
            ledger: &mut self.ledger,
            checkpoints: &mut self.checkpoints,
            policy: &self.policy,
            approver,
            search: match search {
                Some(s) => Some(s),
                None => None,
            },
            cancel: &self.cancel,
            files: self.toolbox.files(),
        };
        self.toolbox.call(name, &args, &mut ctx)
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).exists()
    }

    fn reopen_checkpoints(&mut self) {
        self.checkpoints = Checkpoints::open(&self.ws.state_dir()).unwrap();
        self.ledger = ReadLedger::default();
    }
}

fn ok(out: &ToolOutput) {
    assert!(out.ok, "expected ok, got {:?}: {}", out.error, out.content);
}

fn err(out: &ToolOutput, class: ErrorClass) {
    assert!(!out.ok, "expected {class:?}, got ok: {}", out.content);
    assert_eq!(out.error, Some(class), "{}", out.content);
}

// ---------------------------------------------------------------------------

#[test]
fn standard_toolbox_has_every_tool_in_order_and_grammar_compatible_schemas() {
    let names: Vec<&str> = Toolbox::standard().specs().iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "list_dir",
            "read_file",
            "glob",
            "grep",
            "search_semantic",
            "edit",
            "apply_patch",
            "write_file",
            "undo",
            "run_cmd",
            "command_output",
            "command_stop",
            "todo",
            "finish"
        ]
    );
    for spec in Toolbox::standard().specs() {
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
    }
    let ro: Vec<Access> = Toolbox::standard()
        .restricted(&[Access::Read, Access::Control])
        .specs()
        .iter()
        .map(|s| s.access)
        .collect();
    assert_eq!(ro.len(), 6);
    assert!(ro
        .iter()
        .all(|a| matches!(a, Access::Read | Access::Control)));
}

#[test]
fn todo_writes_the_whole_plan_and_touches_nothing() {
    let mut h = Harness::new();
    let args = json!({"items": [
        {"text": "Read calc.py", "status": "done"},
        {"text": "Add sub", "status": "in_progress"},
        {"text": "Run the tests", "status": "pending"}]});
    // Also as a string holding the object, as some servers send arguments.
    for args in [args.clone(), json!(args.to_string())] {
        let out = h.call("todo", args);
        assert!(out.ok, "{}", out.content);
        assert_eq!(
            out.content,
            "Plan (1/3 done):\n✓ Read calc.py\n▸ Add sub\n· Run the tests"
        );
        let plan = out.plan.expect("the plan for the loop");
        assert_eq!(plan.len(), 3);
        assert!(out.changed.is_empty() && out.diff.is_none());
    }
    let out = h.call("todo", json!({"items": [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(out.plan.is_none());
    assert!(
        out.content.contains("only one item may be in_progress"),
        "{}",
        out.content
    );
}

#[test]
fn unknown_tool_bad_args_and_string_args() {
    let mut h = Harness::new();
    let out = h.call("read", json!({}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(out.content.contains("read_file"), "{}", out.content);

    let out = h.call("read_file", json!({"file": "x"}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(
        out.content.contains("`path`") && out.content.contains("got: file"),
        "{}",
        out.content
    );

    let out = h.call("read_file", json!([1, 2]));
    err(&out, ErrorClass::InvalidArgs);

    h.write("a.txt", "hello\n");
    // Arguments double-encoded as a JSON string, and an integer as a string.
    let out = h.call(
        "read_file",
        json!("{\"path\": \"a.txt\", \"start_line\": \"1\"}"),
    );
    ok(&out);
    assert!(out.content.contains("   1| hello"), "{}", out.content);

    let out = h.call("finish", json!({"answer": "all done"}));
    ok(&out);
    assert_eq!(out.content, "all done");
    err(&h.call("finish", json!({})), ErrorClass::InvalidArgs);
}

#[test]
fn list_dir_shows_a_tree_and_respects_ignores() {
    let mut h = Harness::new();
    h.write("src/main.rs", "fn main() {}\n");
    h.write("src/deep/a/b/c.rs", "\n");
    h.write(".gitignore", "ignored.txt\nbuild/\n");
    h.write("ignored.txt", "x");
    h.write("build/out.o", "x");
    h.write(".agentignore", "secret/\n");
    h.write("secret/k", "x");
    h.write(".git/HEAD", "ref: x\n");
    h.write("node_modules/pkg/index.js", "x");
    h.write("README.md", "# hi\n");
    // .agent/ (team files) must not show.
    h.write(".agent/commands/review.md", "Review.\n");
    let out = h.call("list_dir", json!({}));
    ok(&out);
    let c = &out.content;
    assert!(c.contains("src/\n  deep/\n"), "{c}");
    assert!(c.contains("  main.rs"), "{c}");
    assert!(!c.contains("a/"), "depth 2 by default: {c}");
    assert!(c.contains("README.md"));
    assert!(c.contains("node_modules/ (not expanded)"), "{c}");
    assert!(!c.contains("index.js"));
    for hidden in [
        "ignored.txt",
        "build/",
        "secret/",
        ".git/",
        ".agent/",
        "index.js",
    ] {
        assert!(
            !c.lines().any(|l| l.trim() == hidden),
            "{hidden} listed: {c}"
        );
    }
    assert!(!c.contains("HEAD") && !c.contains("checkpoints"), "{c}");
    let out = h.call("list_dir", json!({"path": "src", "depth": 9}));
    ok(&out);
    assert!(out.content.contains("\n      c.rs"), "{}", out.content);

    for i in 0..250 {
        h.write(&format!("many/f{i:03}.txt"), "");
    }
    let out = h.call("list_dir", json!({"path": "many"}));
    ok(&out);
    assert!(
        out.content.contains("... 50 more entries"),
        "{}",
        out.content
    );

    let out = h.call("list_dir", json!({"path": "list_dir"}));
    err(&out, ErrorClass::NotFound);
    assert!(
        out.content
            .starts_with("no file or folder \"list_dir\" in the workspace; list_dir on a folder"),
        "{}",
        out.content
    );
}

#[test]
fn read_file_numbers_lines_records_the_hash_and_pages() {
    let mut h = Harness::new();
    let content: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    h.write("big.txt", &content);
    let out = h.call("read_file", json!({"path": "big.txt"}));
    ok(&out);
    assert!(
        out.content.starts_with("big.txt lines 1-400 of 1000"),
        "{}",
        out.content
    );
    assert!(out.content.contains("   1| line 1\n"));
    assert!(out.content.contains("start_line=401"), "{}", out.content);
    let key = h.root.join("big.txt");
    assert_eq!(
        h.ledger.hashes.get(&key).unwrap(),
        &agent_tools::sha256_hex(content.as_bytes())
    );

    let out = h.call(
        "read_file",
        json!({"path": "big.txt", "start_line": 995, "end_line": 2000}),
    );
    ok(&out);
    assert!(out.content.contains(" 995| line 995"), "{}", out.content);
    assert!(out.content.contains("1000| line 1000"));

    let out = h.call("read_file", json!({"path": "big.txt", "start_line": 1001}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(out.content.contains("1000 lines"));
    err(
        &h.call(
            "read_file",
            json!({"path": "big.txt", "start_line": 5, "end_line": 2}),
        ),
        ErrorClass::InvalidArgs,
    );

    h.write("sub/dir/needle.py", "x\n");
    let out = h.call("read_file", json!({"path": "needle.py"}));
    err(&out, ErrorClass::NotFound);
    assert!(out.content.contains("sub/dir/needle.py"), "{}", out.content);

    h.write("empty.txt", "");
    let out = h.call("read_file", json!({"path": "empty.txt"}));
    ok(&out);
    assert!(out.content.contains("empty"));

    err(
        &h.call("read_file", json!({"path": "sub"})),
        ErrorClass::InvalidArgs,
    );
}

#[test]
fn pipes_are_refused_instead_of_blocking_forever() {
    let mut h = Harness::with_mode(Mode::Yolo);
    let fifo = h.root.join("queue");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Nothing ever writes to it: opening it for reading would block.
    let t = Instant::now();
    let out = h.call("read_file", json!({"path": "queue"}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(
        out.content.contains("not a regular file"),
        "{}",
        out.content
    );
    let out = h.call(
        "edit",
        json!({"path": "queue", "old_text": "a", "new_text": "b"}),
    );
    err(&out, ErrorClass::InvalidArgs);
    let patch = "*** Begin Patch\n*** Update File: queue\n@@\n-a\n+b\n*** End Patch";
    let out = h.call("apply_patch", json!({"patch": patch}));
    assert!(
        !out.ok && out.content.contains("not a regular file"),
        "{}",
        out.content
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn binary_files_are_refused_and_huge_files_read_by_range() {
    let mut h = Harness::new();
    h.write("blob.bin", [0u8, 159, 146, 150, 0, 1, 2]);
    let out = h.call("read_file", json!({"path": "blob.bin"}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(out.content.contains("binary"), "{}", out.content);

    // ~10 MB of text.
    let mut big = String::with_capacity(11 << 20);
    let mut i = 0;
    while big.len() < 10 << 20 {
        i += 1;
        big.push_str(&format!("this is line number {i} of a large file\n"));
    }
    h.write("huge.log", &big);
    let t = Instant::now();
    let out = h.call(
        "read_file",
        json!({"path": "huge.log", "start_line": 100000, "end_line": 100010}),
    );
    ok(&out);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(
        out.content.contains("100000| this is line number 100000 "),
        "{}",
        out.content
    );
    assert!(out.content.contains("100010| "));
    assert!(!out.content.contains("100011| "));
    assert!(
        out.content.contains("MB"),
        "size in the note: {}",
        out.content
    );
    assert_eq!(out.content.lines().count(), 13, "{}", out.content);
}

#[test]
fn glob_finds_files_by_name_and_path() {
    let mut h = Harness::new();
    h.write("src/a.rs", "");
    h.write("src/x/b.rs", "");
    h.write("tests/c.rs", "");
    h.write("README.md", "");
    h.write(".gitignore", "gen.rs\n");
    h.write("src/gen.rs", "");
    let out = h.call("glob", json!({"pattern": "src/**/*.rs"}));
    ok(&out);
    assert_eq!(out.content, "src/a.rs\nsrc/x/b.rs");
    let out = h.call("glob", json!({"pattern": "*.rs"}));
    ok(&out);
    assert_eq!(out.content, "src/a.rs\nsrc/x/b.rs\ntests/c.rs");
    let out = h.call("glob", json!({"pattern": "*.nothing"}));
    ok(&out);
    assert!(out.content.starts_with("no files match"));
    err(
        &h.call("glob", json!({"pattern": "src/[" })),
        ErrorClass::InvalidArgs,
    );
}

#[test]
fn grep_searches_with_ripgrep_crates() {
    let mut h = Harness::new();
    h.write("src/a.rs", "fn main() {\n    let Foo = 1;\n}\n");
    h.write("src/b.py", "def foo():\n    return 'foo'\n");
    h.write("data.bin", b"foo\x00bar foo");
    h.write(".gitignore", "skip.txt\n");
    h.write("skip.txt", "foo\n");
    let long = format!("foo {}\n", "y".repeat(500));
    h.write("long.txt", &long);

    let out = h.call("grep", json!({"pattern": "foo"}));
    ok(&out);
    let c = &out.content;
    assert!(c.contains("src/b.py:1: def foo():"), "{c}");
    assert!(c.contains("src/b.py:2: return 'foo'"), "{c}");
    assert!(!c.contains("data.bin") && !c.contains("skip.txt"), "{c}");
    assert!(!c.contains("src/a.rs"), "case-sensitive by default: {c}");
    let long_line = c.lines().find(|l| l.starts_with("long.txt")).unwrap();
    assert!(long_line.chars().count() < 220, "{long_line}");

    let out = h.call(
        "grep",
        json!({"pattern": "foo", "case_insensitive": true, "glob": "*.rs"}),
    );
    ok(&out);
    assert_eq!(out.content, "src/a.rs:2: let Foo = 1;");

    let out = h.call("grep", json!({"pattern": "def", "path": "src/b.py"}));
    ok(&out);
    assert_eq!(out.content, "src/b.py:1: def foo():");

    let out = h.call("grep", json!({"pattern": "fn (main"}));
    err(&out, ErrorClass::InvalidArgs);
    assert!(out.content.contains("invalid regex"), "{}", out.content);

    let many: String = (0..80).map(|i| format!("hit {i}\n")).collect();
    h.write("m1.txt", &many);
    h.write("m2.txt", &many);
    let out = h.call("grep", json!({"pattern": "^hit"}));
    ok(&out);
    assert_eq!(
        out.content.lines().filter(|l| l.contains(": hit")).count(),
        50
    );
    assert!(
        out.content.contains("... 110 more matches in 2 files"),
        "{}",
        out.content
    );

    let out = h.call("grep", json!({"pattern": "zzz"}));
    ok(&out);
    assert!(out.content.starts_with("no matches"));
}

struct FakeIndex;
impl SemanticSearch for FakeIndex {
    fn search(&mut self, query: &str, k: usize) -> anyhow::Result<Vec<Hit>> {
        assert_eq!(query, "parse config");
        assert_eq!(k, 20);
        Ok(vec![Hit {
            path: "src/config.rs".into(),
            start_line: 10,
            end_line: 30,
            symbol: "Config::parse".into(),
            score: 0.9,
            text: "pub fn parse(text: &str) -> Config {\n\n    let a = 1;\n".into(),
        }])
    }
}

#[test]
fn search_semantic_uses_the_index_or_says_how_to_build_it() {
    let mut h = Harness::new();
    let out = h.call("search_semantic", json!({"query": "parse config"}));
    err(&out, ErrorClass::NotFound);
    assert!(out.content.contains("agent index") && out.content.contains("grep"));

    let mut idx = FakeIndex;
    let out = h.call_with(
        "search_semantic",
        json!({"query": "parse config", "k": 50}),
        &mut AlwaysApprove,
        Some(&mut idx),
    );
    ok(&out);
    assert_eq!(
        out.content,
        "src/config.rs:10-30  Config::parse\n    pub fn parse(text: &str) -> Config {\n        let a = 1;"
    );
}

// ---------------------------------------------------------------------------
// edit

#[test]
fn an_edit_that_breaks_a_file_comes_back_with_the_error_and_its_line() {
    let mut h = Harness::new();
    h.write(
        "app.py",
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    );
    ok(&h.call("read_file", json!({"path": "app.py"})));
    let out = h.call(
        "edit",
        json!({"path": "app.py", "old_text": "def add(a, b):\n    return a - b", "new_text": "def add(a, b:\n    return a + b"}),
    );
    ok(&out);
    assert!(
        out.content
            .contains("diagnostics: this change broke app.py")
            && out.content.contains("app.py:1:"),
        "{}",
        out.content
    );
    // Fixing it brings no report.
    let out = h.call(
        "edit",
        json!({"path": "app.py", "old_text": "def add(a, b:", "new_text": "def add(a, b):"}),
    );
    ok(&out);
    assert!(!out.content.contains("diagnostics"), "{}", out.content);

    // Rust, through write_file.
    let out = h.call(
        "write_file",
        json!({"path": "src/lib.rs", "content": "pub fn f() -> i32 {\n    let x = 1\n    x\n}\n"}),
    );
    ok(&out);
    assert!(out.content.contains("src/lib.rs:2:"), "{}", out.content);
}

/// `program --version` runs here.
fn installed(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn cargo_check_after_an_edit_lists_the_errors_the_change_brought() {
    if !installed("cargo") {
        agent_test_support::skip!("no cargo");
    }
    // Yolo: where the kernel has no sandbox, cargo check (it runs build
    // scripts) runs unsandboxed only in yolo mode.
    let mut h = Harness::with_mode(Mode::Yolo);
    h.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    h.write(
        "src/lib.rs",
        "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\npub fn old_mistake() -> u32 {\n    \"already broken\"\n}\n",
    );
    h.write(
        "src/main.rs",
        "fn main() {\n    println!(\"{}\", calc::add(1, 2));\n}\n",
    );
    ok(&h.call("read_file", json!({"path": "src/lib.rs"})));
    // A type error the grammar accepts: only cargo check sees it.
    let out = h.call(
        "edit",
        json!({"path": "src/lib.rs", "old_text": "    a + b\n", "new_text": "    let total = a + b;\n    total as i64\n"}),
    );
    ok(&out);
    assert!(
        out.content
            .contains("diagnostics: cargo check found 1 new error after this change")
            && out
                .content
                .contains("\n  src/lib.rs:3: error[E0308]: mismatched types")
            && out
                .content
                .contains("(1 error(s) in the changed files were already there"),
        "{}",
        out.content
    );
    // Both fixed, with a signature change that breaks the caller in
    // another file (checked now that the library builds).
    let out = h.call(
        "write_file",
        json!({"path": "src/lib.rs", "content": "pub fn add(a: u32, b: u32, c: u32) -> u32 {\n    a + b + c\n}\n"}),
    );
    ok(&out);
    assert!(
        out.content.contains("  src/main.rs:2: error[E0061]"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("  src/lib.rs:"), "{}", out.content);
    // Fixing the caller brings no report.
    ok(&h.call("read_file", json!({"path": "src/main.rs"})));
    let out = h.call(
        "edit",
        json!({"path": "src/main.rs", "old_text": "add(1, 2)", "new_text": "add(1, 2, 3)"}),
    );
    ok(&out);
    assert!(!out.content.contains("diagnostics"), "{}", out.content);
    // The checker wrote inside the workspace, or in its build cache.
    let cache = agent_base::paths::cache_dir(&h.root).join("check-cargo_target_dir");
    assert!(
        h.exists("target") || cache.is_dir(),
        "no build output in the workspace or its cache"
    );
    assert!(
        !h.exists(".agent"),
        "nothing of the agent's in the workspace"
    );
}

#[test]
fn ruff_and_tsc_after_an_edit_list_what_a_parse_cannot_see() {
    let (Some(ruff), Some(node_modules)) = (
        std::env::var_os("AGENT_TEST_RUFF"),
        std::env::var_os("AGENT_TEST_NODE_MODULES"),
    ) else {
        agent_test_support::skip!(
            "AGENT_TEST_RUFF and AGENT_TEST_NODE_MODULES are set by scripts/test"
        );
    };
    let mut h = Harness::new();
    // The project's own copies, where the checkers look first.
    std::fs::create_dir_all(h.root.join(".venv/bin")).unwrap();
    std::os::unix::fs::symlink(&ruff, h.root.join(".venv/bin/ruff")).unwrap();
    std::os::unix::fs::symlink(&node_modules, h.root.join("node_modules")).unwrap();

    // Python: an import removed, a name left undefined.
    h.write("pyproject.toml", "[project]\nname = \"app\"\n");
    h.write(
        "app.py",
        "import os\n\n\ndef home():\n    return os.environ[\"HOME\"]\n",
    );
    ok(&h.call("read_file", json!({"path": "app.py"})));
    let out = h.call(
        "edit",
        json!({"path": "app.py", "old_text": "import os\n\n\n", "new_text": ""}),
    );
    ok(&out);
    assert!(
        out.content
            .contains("diagnostics: ruff found 1 new error after this change")
            && out
                .content
                .contains("\n  app.py:2: F821 Undefined name `os`"),
        "{}",
        out.content
    );

    // TypeScript: a return type that no longer fits.
    h.write(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true}, "include": ["src"]}"#,
    );
    h.write(
        "src/total.ts",
        "export function total(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n",
    );
    ok(&h.call("read_file", json!({"path": "src/total.ts"})));
    let out = h.call(
        "edit",
        json!({"path": "src/total.ts", "old_text": "): number {", "new_text": "): string {"}),
    );
    ok(&out);
    assert!(
        out.content
            .contains("diagnostics: tsc found 1 new error after this change")
            && out
                .content
                .contains("\n  src/total.ts:2: error TS2322: Type 'number' is not assignable to type 'string'."),
        "{}",
        out.content
    );
    // A checker that is off says nothing.
    h.policy.check_timeout_s = 0;
    let out = h.call(
        "edit",
        json!({"path": "src/total.ts", "old_text": "a + b, 0", "new_text": "a * b, 1"}),
    );
    ok(&out);
    assert!(!out.content.contains("diagnostics"), "{}", out.content);
}

#[test]
fn go_vet_after_an_edit_lists_the_errors_the_change_brought() {
    if !std::process::Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        agent_test_support::skip!("no go on PATH (scripts/test installs it)");
    }
    let mut h = Harness::with_mode(Mode::Yolo);
    h.policy.check_timeout_s = 120; // a cold build cache the first time
    h.write("go.mod", "module example.com/calc\n\ngo 1.19\n");
    h.write(
        "calc/calc.go",
        "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
    );
    ok(&h.call("read_file", json!({"path": "calc/calc.go"})));
    let out = h.call(
        "edit",
        json!({"path": "calc/calc.go", "old_text": "return a + b", "new_text": "return a + c"}),
    );
    ok(&out);
    assert!(
        out.content
            .contains("diagnostics: go vet found 1 new error after this change")
            && out.content.contains("\n  calc/calc.go:5: ")
            // Go 1.20 on says "undefined", earlier ones "undeclared name".
            && (out.content.contains("undefined: c") || out.content.contains("undeclared name: c")),
        "{}",
        out.content
    );
}

#[test]
fn a_checker_that_runs_out_of_time_is_reported_once_then_left_out() {
    let mut h = Harness::new();
    h.policy.check_timeout_s = 1;
    // A project whose `ruff` hangs (a stand-in for a cold `cargo check` of
    // a big workspace).
    h.write(".venv/bin/ruff", "#!/bin/sh\nsleep 30\n");
    std::fs::set_permissions(
        h.root.join(".venv/bin/ruff"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    h.write("app.py", "x = 1\n");
    ok(&h.call("read_file", json!({"path": "app.py"})));
    let started = Instant::now();
    let out = h.call(
        "edit",
        json!({"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"}),
    );
    ok(&out);
    assert!(
        out.content
            .contains("diagnostics: ruff not run: it took longer than 1 s on this project"),
        "{}",
        out.content
    );
    // Once: the "before" run ran out of time, so the "after" run was not tried.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    let out = h.call(
        "edit",
        json!({"path": "app.py", "old_text": "x = 2", "new_text": "x = 3"}),
    );
    ok(&out);
    assert!(!out.content.contains("diagnostics"), "{}", out.content);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn edit_replaces_once_after_a_read() {
    let mut h = Harness::new();
    h.write("app.py", "def add(a, b):\n    return a - b\n");
    let out = h.call(
        "edit",
        json!({"path": "app.py", "old_text": "a - b", "new_text": "a + b"}),
    );
    err(&out, ErrorClass::StaleRead);
    assert!(out.content.contains("read_file"), "{}", out.content);
    assert_eq!(h.read("app.py"), "def add(a, b):\n    return a - b\n");

    ok(&h.call("read_file", json!({"path": "app.py"})));
    let mut rec = Recorder::default();
    let out = h.call_with(
        "edit",
        json!({"path": "app.py", "old_text": "    return a - b\n", "new_text": "    return a + b\n"}),
        &mut rec,
        None,
    );
    ok(&out);
    assert_eq!(h.read("app.py"), "def add(a, b):\n    return a + b\n");
    assert_eq!(
        out.content,
        "edited app.py: +1 -1 lines (new text at lines 2-2)"
    );
    assert_eq!(out.changed, ["app.py"]);
    let diff = out.diff.unwrap();
    assert!(diff.starts_with("--- a/app.py\n+++ b/app.py\n"), "{diff}");
    assert!(diff.contains("-    return a - b\n+    return a + b\n"));
    assert_eq!(rec.0.len(), 1);
    match &rec.0[0] {
        Approval::Write { paths, diff: d, .. } => {
            assert_eq!(paths, &["app.py"]);
            assert_eq!(d, &diff);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.checkpoints.len(), 1);

    // The ledger follows the agent's own write: a second edit needs no re-read.
    ok(&h.call(
        "edit",
        json!({"path": "app.py", "old_text": "add", "new_text": "plus"}),
    ));
    assert!(h.read("app.py").starts_with("def plus"));
}

/// Approves after "editing" the proposal: replaces `from` with `to` in each
/// editable file, as the user's editor would.
struct EditsThenApproves {
    from: &'static str,
    to: &'static str,
}
impl Approver for EditsThenApproves {
    fn approve(&mut self, request: &Approval) -> Decision {
        let Approval::Write { proposed, .. } = request else {
            return Decision::Approve;
        };
        let mut edits = agent_tools::proposal::Edits::new(proposed);
        let draft = edits.draft().unwrap();
        for path in draft.paths() {
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replace(self.from, self.to)).unwrap();
        }
        edits.read(&draft).unwrap();
        edits.approve()
    }
}

#[test]
fn a_change_the_user_edited_writes_their_text_and_tells_the_model() {
    let mut h = Harness::new();
    h.write("app.py", "def add(a, b):\n    return a - b\n");
    ok(&h.call("read_file", json!({"path": "app.py"})));
    let mut user = EditsThenApproves {
        from: "a + b",
        to: "b + a",
    };
    let out = h.call_with(
        "edit",
        json!({"path": "app.py", "old_text": "a - b", "new_text": "a + b"}),
        &mut user,
        None,
    );
    ok(&out);
    assert_eq!(h.read("app.py"), "def add(a, b):\n    return b + a\n");
    assert!(
        out.content
            .contains("the user edited your change to app.py"),
        "{}",
        out.content
    );
    assert!(out.content.contains("+    return b + a"), "{}", out.content);
    assert!(out.diff.as_deref().unwrap().contains("+    return b + a"));
    // The checkpoint holds what was written, so undo puts back the original.
    ok(&h.call("undo", json!({})));
    assert_eq!(h.read("app.py"), "def add(a, b):\n    return a - b\n");

    // The ledger has the user's text: the model can edit again without a read.
    ok(&h.call("read_file", json!({"path": "app.py"})));
    let mut user = EditsThenApproves {
        from: "a + b",
        to: "b + a",
    };
    ok(&h.call_with(
        "edit",
        json!({"path": "app.py", "old_text": "a - b", "new_text": "a + b"}),
        &mut user,
        None,
    ));
    ok(&h.call(
        "edit",
        json!({"path": "app.py", "old_text": "b + a", "new_text": "a * b"}),
    ));
    assert_eq!(h.read("app.py"), "def add(a, b):\n    return a * b\n");
}

#[test]
fn an_edit_back_to_the_original_writes_nothing() {
    let mut h = Harness::new();
    h.write("a.txt", "one\n");
    ok(&h.call("read_file", json!({"path": "a.txt"})));
    let mut user = EditsThenApproves {
        from: "two",
        to: "one",
    };
    let out = h.call_with(
        "edit",
        json!({"path": "a.txt", "old_text": "one", "new_text": "two"}),
        &mut user,
        None,
    );
    err(&out, ErrorClass::Declined);
    assert!(
        out.content.contains("back to the files as they were"),
        "{}",
        out.content
    );
    assert_eq!(h.read("a.txt"), "one\n");
    assert!(h.checkpoints.is_empty());
}

#[test]
fn edit_after_an_external_change_is_stale() {
    let mut h = Harness::new();
    h.write("a.txt", "one\n");
    ok(&h.call("read_file", json!({"path": "a.txt"})));
    h.write("a.txt", "one changed\n");
    let out = h.call(
        "edit",
        json!({"path": "a.txt", "old_text": "one", "new_text": "two"}),
    );
    err(&out, ErrorClass::StaleRead);
    assert!(
        out.content.contains("changed since you read it"),
        "{}",
        out.content
    );
    assert_eq!(h.read("a.txt"), "one changed\n");
    assert!(h.checkpoints.is_empty());
}

#[test]
fn edit_no_match_and_multiple_matches_give_line_numbers() {
    let mut h = Harness::new();
    h.write(
        "m.py",
        "def f():\n    x = 1\n    return x\n\ndef g():\n    x = 1\n    return x\n",
    );
    ok(&h.call("read_file", json!({"path": "m.py"})));
    let out = h.call("edit", json!({"path": "m.py", "old_text": "x = 1\n    return x", "new_text": "x = 2\n    return x"}));
    err(&out, ErrorClass::NoMatch);
    assert!(
        out.content.contains("2 times") && out.content.contains("lines 2, 6"),
        "{}",
        out.content
    );

    let out = h.call(
        "edit",
        json!({"path": "m.py", "old_text": "  def g():\n  x = 1", "new_text": "def h():"}),
    );
    err(&out, ErrorClass::NoMatch);
    assert!(out.content.contains("   5| def g():"), "{}", out.content);

    let out = h.call(
        "edit",
        json!({"path": "m.py", "old_text": "return y", "new_text": "return z"}),
    );
    err(&out, ErrorClass::NoMatch);
    assert!(
        out.content.contains("   3|") && out.content.contains("   7|"),
        "{}",
        out.content
    );

    let before = h.read("m.py");
    assert!(h.checkpoints.is_empty());
    let out = h.call(
        "edit",
        json!({"path": "m.py", "old_text": "x = 1", "new_text": "x = 3", "replace_all": true}),
    );
    ok(&out);
    assert_eq!(h.read("m.py"), before.replace("x = 1", "x = 3"));
}

#[test]
fn edit_keeps_crlf_and_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let mut h = Harness::new();
    h.write("run.sh", "#!/bin/sh\r\necho a\r\necho b\r\n");
    std::fs::set_permissions(
        h.root.join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    ok(&h.call("read_file", json!({"path": "run.sh"})));
    ok(&h.call(
        "edit",
        json!({"path": "run.sh", "old_text": "echo a\necho b\n", "new_text": "echo c\n"}),
    ));
    assert_eq!(h.read("run.sh"), "#!/bin/sh\r\necho c\r\n");
    let mode = std::fs::metadata(h.root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

// ---------------------------------------------------------------------------
// The jail

#[test]
fn escapes_are_policy_denied_and_change_nothing() {
    let mut h = Harness::new();
    let outside = h.root.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(h.root.parent().unwrap(), h.root.join("link")).unwrap();
    let abs = outside.to_str().unwrap().to_string();

    for path in [
        "../outside.txt",
        abs.as_str(),
        "link/outside.txt",
        "sub/../../outside.txt",
    ] {
        let out = h.call("read_file", json!({"path": path}));
        err(&out, ErrorClass::PolicyDenied);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
        err(
            &h.call("write_file", json!({"path": path, "content": "pwned"})),
            ErrorClass::PolicyDenied,
        );
        err(
            &h.call(
                "edit",
                json!({"path": path, "old_text": "secret", "new_text": "pwned"}),
            ),
            ErrorClass::PolicyDenied,
        );
        let patch =
            format!("*** Begin Patch\n*** Update File: {path}\n-secret\n+pwned\n*** End Patch");
        err(
            &h.call("apply_patch", json!({"patch": patch})),
            ErrorClass::PolicyDenied,
        );
        let patch = format!("*** Begin Patch\n*** Delete File: {path}\n*** End Patch");
        err(
            &h.call("apply_patch", json!({"patch": patch})),
            ErrorClass::PolicyDenied,
        );
        err(
            &h.call("list_dir", json!({"path": path})),
            ErrorClass::PolicyDenied,
        );
        err(
            &h.call("grep", json!({"pattern": "secret", "path": path})),
            ErrorClass::PolicyDenied,
        );
    }
    err(
        &h.call(
            "write_file",
            json!({"path": "link/new.txt", "content": "x"}),
        ),
        ErrorClass::PolicyDenied,
    );
    assert!(!h.root.parent().unwrap().join("new.txt").exists());
    err(
        &h.call("run_cmd", json!({"command": "ls", "cwd": ".."})),
        ErrorClass::PolicyDenied,
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
    assert!(h.checkpoints.is_empty());

    // A symlink inside pointing inside is fine.
    h.write("real.txt", "inside\n");
    std::os::unix::fs::symlink(h.root.join("real.txt"), h.root.join("alias.txt")).unwrap();
    let out = h.call("read_file", json!({"path": "alias.txt"}));
    ok(&out);
    assert!(out.content.contains("inside"));
}

#[test]
fn agent_and_git_folders_are_never_written() {
    let mut h = Harness::new();
    h.write(".git/config", "[core]\n");
    for path in [".git/config", ".agent/policy.toml", ".git/hooks/pre-commit"] {
        err(
            &h.call("write_file", json!({"path": path, "content": "x"})),
            ErrorClass::PolicyDenied,
        );
    }
    // It may hold credentials (remote URLs with tokens): not read either.
    err(
        &h.call("read_file", json!({"path": ".git/config"})),
        ErrorClass::PolicyDenied,
    );
    err(
        &h.call(
            "edit",
            json!({"path": ".git/config", "old_text": "core", "new_text": "x"}),
        ),
        ErrorClass::PolicyDenied,
    );
    assert_eq!(h.read(".git/config"), "[core]\n");
    assert!(!h.exists(".agent/policy.toml"));
}

// ---------------------------------------------------------------------------
// Declined writes

#[test]
fn declined_writes_leave_files_and_checkpoints_untouched() {
    let mut h = Harness::new();
    h.write("a.txt", "keep\n");
    ok(&h.call("read_file", json!({"path": "a.txt"})));
    let out = h.call_with(
        "edit",
        json!({"path": "a.txt", "old_text": "keep", "new_text": "lose"}),
        &mut AlwaysDecline,
        None,
    );
    err(&out, ErrorClass::Declined);
    assert!(out.content.contains("declined"));
    let out = h.call_with(
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
        &mut AlwaysDecline,
        None,
    );
    err(&out, ErrorClass::Declined);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-keep\n+lose\n*** Add File: b.txt\n+b\n*** End Patch";
    err(
        &h.call_with(
            "apply_patch",
            json!({"patch": patch}),
            &mut AlwaysDecline,
            None,
        ),
        ErrorClass::Declined,
    );
    err(
        &h.call_with(
            "run_cmd",
            json!({"command": "touch ran.txt"}),
            &mut AlwaysDecline,
            None,
        ),
        ErrorClass::Declined,
    );
    assert_eq!(h.read("a.txt"), "keep\n");
    assert!(!h.exists("new.txt") && !h.exists("b.txt") && !h.exists("ran.txt"));
    assert!(h.checkpoints.is_empty());
    assert_eq!(std::fs::read_dir(h.checkpoints.dir()).unwrap().count(), 0);

    // Yolo never asks.
    let mut y = Harness::with_mode(Mode::Yolo);
    let out = y.call_with(
        "write_file",
        json!({"path": "n.txt", "content": "x"}),
        &mut AlwaysDecline,
        None,
    );
    ok(&out);
}

#[test]
fn human_mode_asks_before_writes_and_commands_but_reads_are_the_callers() {
    let mut h = Harness::with_mode(Mode::Human);
    h.write("a.txt", "x\n");
    // The loop asks for reads before `call` (one prompt, not two).
    let mut rec = Recorder::default();
    ok(&h.call_with("read_file", json!({"path": "a.txt"}), &mut rec, None));
    assert!(rec.0.is_empty());
    err(
        &h.call_with(
            "write_file",
            json!({"path": "b.txt", "content": "x"}),
            &mut AlwaysDecline,
            None,
        ),
        ErrorClass::Declined,
    );
    err(
        &h.call_with(
            "run_cmd",
            json!({"command": "true"}),
            &mut AlwaysDecline,
            None,
        ),
        ErrorClass::Declined,
    );
    // finish never asks.
    ok(&h.call_with("finish", json!({"answer": "x"}), &mut AlwaysDecline, None));
}

// ---------------------------------------------------------------------------
// write_file

#[test]
fn write_file_creates_and_overwrites_only_after_a_read() {
    let mut h = Harness::new();
    let out = h.call(
        "write_file",
        json!({"path": "pkg/sub/new.py", "content": "a\nb\n"}),
    );
    ok(&out);
    assert_eq!(out.content, "created pkg/sub/new.py (2 lines)");
    assert!(out
        .diff
        .as_ref()
        .unwrap()
        .starts_with("--- /dev/null\n+++ b/pkg/sub/new.py\n"));
    assert_eq!(h.read("pkg/sub/new.py"), "a\nb\n");
    // Written by the agent: it knows the content.
    ok(&h.call(
        "write_file",
        json!({"path": "pkg/sub/new.py", "content": "c\n"}),
    ));

    h.write("old.txt", "1\n");
    let out = h.call("write_file", json!({"path": "old.txt", "content": "2\n"}));
    err(&out, ErrorClass::StaleRead);
    assert_eq!(h.read("old.txt"), "1\n");
    ok(&h.call("read_file", json!({"path": "old.txt"})));
    let out = h.call("write_file", json!({"path": "old.txt", "content": "2\n"}));
    ok(&out);
    assert_eq!(out.content, "wrote old.txt: +1 -1 lines (1 lines now)");
    err(
        &h.call("write_file", json!({"path": "pkg", "content": "x"})),
        ErrorClass::InvalidArgs,
    );
}

// ---------------------------------------------------------------------------
// apply_patch

#[test]
fn apply_patch_adds_updates_moves_and_deletes() {
    let mut h = Harness::new();
    h.write("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n");
    h.write("old.txt", "bye\n");
    h.write("mv.txt", "m1\nm2\n");
    let patch = [
        "*** Begin Patch",
        "*** Add File: src/new.py",
        "+print('hi')",
        "*** Update File: src/lib.rs",
        "@@ fn b() {",
        "-    2",
        "+    3",
        "*** Delete File: old.txt",
        "*** Update File: mv.txt",
        "*** Move to: moved/mv.txt",
        "@@",
        " m1",
        "-m2",
        "+m3",
        "*** End Patch",
    ]
    .join("\n");
    let mut rec = Recorder::default();
    let out = h.call_with("apply_patch", json!({"patch": patch}), &mut rec, None);
    ok(&out);
    assert_eq!(rec.0.len(), 1, "one approval for the whole set");
    assert_eq!(h.read("src/new.py"), "print('hi')\n");
    assert_eq!(
        h.read("src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    3\n}\n"
    );
    assert!(!h.exists("old.txt"));
    assert!(!h.exists("mv.txt"));
    assert_eq!(h.read("moved/mv.txt"), "m1\nm3\n");
    assert_eq!(h.checkpoints.len(), 1, "one checkpoint for the whole set");
    assert!(
        out.content.contains("A src/new.py (+1 -0)"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("M src/lib.rs (+1 -1)"),
        "{}",
        out.content
    );
    assert!(out.content.contains("D old.txt"), "{}", out.content);
    let diff = out.diff.unwrap();
    assert!(diff.contains("+++ b/src/new.py") && diff.contains("--- a/old.txt"));

    // Undo restores all of it.
    let out = h.call("undo", json!({}));
    ok(&out);
    assert!(!h.exists("src/new.py"));
    assert_eq!(
        h.read("src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n"
    );
    assert_eq!(h.read("old.txt"), "bye\n");
    assert_eq!(h.read("mv.txt"), "m1\nm2\n");
    assert!(!h.exists("moved/mv.txt"));
}

#[test]
fn apply_patch_is_all_or_nothing() {
    let mut h = Harness::new();
    h.write("a.txt", "alpha\nbeta\n");
    h.write("b.txt", "one\ntwo\nthree\n");
    let patch = [
        "*** Begin Patch",
        "*** Update File: a.txt",
        "-alpha",
        "+ALPHA",
        "*** Add File: c.txt",
        "+new",
        "*** Update File: b.txt",
        " one",
        "-TWO-not-there",
        "+2",
        "*** Delete File: a2.txt",
        "*** End Patch",
    ]
    .join("\n");
    h.write("a2.txt", "x\n");
    let out = h.call("apply_patch", json!({"patch": patch}));
    err(&out, ErrorClass::NoMatch);
    assert!(out.content.contains("b.txt: hunk 1"), "{}", out.content);
    assert!(
        out.content.contains("   1| one"),
        "nearest lines: {}",
        out.content
    );
    assert!(out.content.contains("Nothing was written"));
    assert_eq!(h.read("a.txt"), "alpha\nbeta\n");
    assert_eq!(h.read("b.txt"), "one\ntwo\nthree\n");
    assert!(!h.exists("c.txt"));
    assert!(h.exists("a2.txt"));
    assert!(h.checkpoints.is_empty());

    // Parse errors name the line.
    let out = h.call(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: a.txt\nalpha\n*** End Patch"}),
    );
    err(&out, ErrorClass::InvalidArgs);
    assert!(out.content.contains("line 3"), "{}", out.content);
    // Update of a missing file, add of an existing one.
    let out = h.call(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: nope.txt\n-a\n+b\n*** End Patch"}),
    );
    err(&out, ErrorClass::NotFound);
    let out = h.call(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"}),
    );
    err(&out, ErrorClass::InvalidArgs);
    assert_eq!(h.read("a.txt"), "alpha\nbeta\n");
}

#[test]
fn apply_patch_tolerates_whitespace_differences() {
    let mut h = Harness::new();
    h.write(
        "w.py",
        "def f():   \n\tif x:\n\t\treturn 1   \n\treturn 0\n",
    );
    // Trailing spaces dropped and tabs written as spaces by the model.
    let patch = "*** Begin Patch\n*** Update File: w.py\n def f():\n     if x:\n-        return 1\n+\t\treturn 2\n*** End Patch";
    let out = h.call("apply_patch", json!({"patch": patch}));
    ok(&out);
    // Context lines keep the file's own text.
    assert_eq!(
        h.read("w.py"),
        "def f():   \n\tif x:\n\t\treturn 2\n\treturn 0\n"
    );
}

// ---------------------------------------------------------------------------
// undo

#[test]
fn undo_restores_edit_add_and_delete_across_reopen() {
    let mut h = Harness::new();
    assert!(h
        .call("undo", json!({}))
        .content
        .starts_with("nothing to undo"));

    h.write("e.txt", "before\n");
    h.write("d.txt", "deleted content\n");
    ok(&h.call("read_file", json!({"path": "e.txt"})));
    ok(&h.call(
        "edit",
        json!({"path": "e.txt", "old_text": "before", "new_text": "after"}),
    ));
    ok(&h.call(
        "write_file",
        json!({"path": "added/a.txt", "content": "new\n"}),
    ));
    ok(&h.call(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Delete File: d.txt\n*** End Patch"}),
    ));
    assert_eq!(h.checkpoints.len(), 3);

    // A new process: fresh ledger and checkpoint handle.
    h.reopen_checkpoints();
    assert_eq!(h.checkpoints.len(), 3);

    let out = h.call("undo", json!({}));
    ok(&out);
    assert_eq!(h.read("d.txt"), "deleted content\n");
    assert!(out.content.contains("recreated d.txt"), "{}", out.content);
    assert!(out.diff.unwrap().contains("+deleted content"));

    let out = h.call("undo", json!({}));
    ok(&out);
    assert!(!h.exists("added/a.txt"));
    assert!(
        !h.exists("added"),
        "the folder the change created is gone too"
    );
    assert!(
        out.content.contains("deleted added/a.txt"),
        "{}",
        out.content
    );

    h.reopen_checkpoints();
    let out = h.call("undo", json!({}));
    ok(&out);
    assert_eq!(h.read("e.txt"), "before\n");
    assert!(out.content.contains("restored e.txt"), "{}", out.content);
    assert_eq!(out.changed, ["e.txt"]);

    let out = h.call("undo", json!({}));
    ok(&out);
    assert!(out.content.starts_with("nothing to undo"));
    // After an undo the file can be edited again without a re-read.
    ok(&h.call(
        "edit",
        json!({"path": "e.txt", "old_text": "before", "new_text": "again"}),
    ));
}

#[test]
fn undo_can_be_declined_and_notes_later_changes() {
    let mut h = Harness::new();
    ok(&h.call("write_file", json!({"path": "x.txt", "content": "1\n"})));
    let out = h.call_with("undo", json!({}), &mut AlwaysDecline, None);
    err(&out, ErrorClass::Declined);
    assert!(h.exists("x.txt"));
    assert_eq!(h.checkpoints.len(), 1);
    h.write("x.txt", "1\nuser line\n");
    let out = h.call("undo", json!({}));
    ok(&out);
    assert!(out.content.contains("had changed after"), "{}", out.content);
    assert!(!h.exists("x.txt"));
}

// ---------------------------------------------------------------------------
// run_cmd

#[test]
fn run_cmd_runs_in_the_workspace() {
    let mut h = Harness::new();
    h.write("sub/f.txt", "x");
    let mut rec = Recorder::default();
    let out = h.call_with(
        "run_cmd",
        json!({"command": "ls && pwd", "cwd": "sub"}),
        &mut rec,
        None,
    );
    ok(&out);
    assert!(
        out.content.starts_with("exit code 0\nf.txt\n"),
        "{}",
        out.content
    );
    assert!(
        out.content.trim_end().ends_with("/ws/sub"),
        "{}",
        out.content
    );
    assert_eq!(out.exit_code, Some(0));
    assert!(
        matches!(&rec.0[0], Approval::Command { command, cwd, .. } if command == "ls && pwd" && cwd == "sub")
    );

    let out = h.call("run_cmd", json!({"command": "echo oops >&2; exit 4"}));
    err(&out, ErrorClass::CommandFailed);
    assert_eq!(out.exit_code, Some(4));
    assert!(
        out.content.starts_with("exit code 4\n") && out.content.contains("oops"),
        "{}",
        out.content
    );
    err(
        &h.call("run_cmd", json!({"command": "  "})),
        ErrorClass::InvalidArgs,
    );
    err(
        &h.call("run_cmd", json!({"command": "ls", "cwd": "nope"})),
        ErrorClass::NotFound,
    );
}

#[test]
fn denied_commands_never_run() {
    let mut h = Harness::new();
    let mut rec = Recorder::default();
    for cmd in [
        "touch created.txt && sudo true",
        "touch created.txt; curl https://example.com",
        "touch created.txt | rm -rf /",
        "touch created.txt && git push",
    ] {
        let out = h.call_with("run_cmd", json!({"command": cmd}), &mut rec, None);
        err(&out, ErrorClass::PolicyDenied);
        assert!(out.content.contains("rule:"), "{}", out.content);
    }
    assert!(
        rec.0.is_empty(),
        "denied commands are not even offered for approval"
    );
    assert!(!h.exists("created.txt"));

    // policy.toml deny rules apply too.
    let mut h = Harness::new();
    h.write(".agent/policy.toml", "deny = [\"^touch \"]\n");
    h.policy = Policy::load(&h.ws.team_dir(), Mode::Yolo).unwrap();
    err(
        &h.call("run_cmd", json!({"command": "echo a;  touch created.txt"})),
        ErrorClass::PolicyDenied,
    );
    assert!(!h.exists("created.txt"));
}

#[test]
fn commands_the_policy_cannot_read_ask_even_in_yolo() {
    let mut h = Harness::with_mode(Mode::Yolo);
    // Yolo asks nothing about a plain command ...
    let mut rec = Recorder::default();
    ok(&h.call_with(
        "run_cmd",
        json!({"command": "touch plain.txt"}),
        &mut rec,
        None,
    ));
    assert!(rec.0.is_empty());
    // ... but a program chosen at run time is asked, with the reason.
    let out = h.call_with(
        "run_cmd",
        json!({"command": "X=touch; $X made.txt"}),
        &mut rec,
        None,
    );
    ok(&out);
    assert!(
        matches!(&rec.0[0], Approval::Command { why: Some(why), .. } if why.contains("run time")),
        "{:?}",
        rec.0
    );
    // Declined (no terminal to ask on): not run, and the model is told how.
    let out = h.call_with(
        "run_cmd",
        json!({"command": "printf 'touch piped.txt' | sh"}),
        &mut AlwaysDecline,
        None,
    );
    err(&out, ErrorClass::Declined);
    assert!(out.content.contains("pipe"), "{}", out.content);
    assert!(!h.exists("piped.txt"));
}

#[test]
fn commands_cannot_change_the_agents_own_folder() {
    let mut h = Harness::with_mode(Mode::Yolo);
    h.write(".agent/policy.toml", "allow_network = false\n");
    let out = h.call(
        "run_cmd",
        json!({"command": "python3 -c \"open('.agent/policy.toml','w').write('allow_network = true')\"; echo hi > .agent/config.toml"}),
    );
    if agent_sandbox::support().mounts() {
        // The kernel refuses the writes (.agent/ is mounted read-only).
        err(&out, ErrorClass::Permission);
        assert!(
            out.content.contains("Read-only file system"),
            "{}",
            out.content
        );
    } else {
        // Landlock alone: the guard after the command puts things back.
        err(&out, ErrorClass::PolicyDenied);
        assert!(
            out.content
                .contains(".agent/policy.toml was changed (restored)")
                && out
                    .content
                    .contains(".agent/config.toml was created (removed)"),
            "{}",
            out.content
        );
    }
    assert_eq!(h.read(".agent/policy.toml"), "allow_network = false\n");
    assert!(!h.exists(".agent/config.toml"));
    // The next session's policy is the user's.
    assert!(
        !Policy::load(&h.ws.team_dir(), Mode::Yolo)
            .unwrap()
            .allow_network
    );
    // A command that leaves .agent/ alone is not flagged.
    ok(&h.call("run_cmd", json!({"command": "cat .agent/policy.toml"})));
}

#[test]
fn sandboxed_commands_write_only_in_the_workspace_and_reach_no_network() {
    if agent_sandbox::landlock_abi().is_none() {
        agent_test_support::skip!("this kernel has no Landlock");
    }
    let mut h = Harness::with_mode(Mode::Yolo);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    // A script the policy cannot read: only the sandbox stops it.
    h.write(
        "escape.py",
        format!("open({:?}, 'w').write('x')\n", target.display().to_string()),
    );
    let out = h.call("run_cmd", json!({"command": "python3 escape.py"}));
    assert!(!out.ok, "{}", out.content);
    assert!(out.content.contains("PermissionError"), "{}", out.content);
    assert!(!target.exists(), "a command wrote outside the workspace");

    // TCP to a listener on this machine.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    h.write(
        "probe.py",
        format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\n"),
    );
    let out = h.call("run_cmd", json!({"command": "python3 probe.py"}));
    assert!(!out.ok, "{}", out.content);
    assert!(listener.accept().is_err(), "the connection got through");
    // UDP, which Landlock does not cover: the network namespace does.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    h.write(
        "udp.py",
        format!("import socket\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {udp_port}))\nexcept OSError as e:\n    print(e)\n"),
    );
    h.call("run_cmd", json!({"command": "python3 udp.py"}));
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a UDP datagram got through"
    );

    // A Unix socket of a service on this machine (the Docker daemon's, an
    // ssh-agent's), outside the workspace.
    let service = outside.path().join("service.sock");
    let unix = std::os::unix::net::UnixListener::bind(&service).unwrap();
    unix.set_nonblocking(true).unwrap();
    h.write(
        "unix.py",
        format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\nprint('connected')\n",
            service.display().to_string()
        ),
    );
    let out = h.call("run_cmd", json!({"command": "python3 unix.py"}));
    assert!(!out.ok, "{}", out.content);
    assert!(unix.accept().is_err(), "a host Unix socket was reached");
    // The command's own sockets still work: a server and a client in its
    // temp dir, and multiprocessing's forkserver, which talks over one.
    h.write(
        "own.py",
        "import multiprocessing, os, socket, tempfile
if __name__ == '__main__':
    p = os.path.join(tempfile.gettempdir(), 'own.sock')
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(p)
    srv.listen()
    socket.socket(socket.AF_UNIX).connect(p)
    with multiprocessing.get_context('forkserver').Pool(1) as pool:
        print('own sockets', pool.map(abs, [-2]))
",
    );
    let out = h.call("run_cmd", json!({"command": "python3 own.py"}));
    ok(&out);
    assert!(out.content.contains("own sockets [2]"), "{}", out.content);

    // Builds and tests inside the workspace still work, temp files included.
    h.write(
        "tests/test_math.py",
        "import tempfile, unittest\n\nclass T(unittest.TestCase):\n    def test_tmp(self):\n        with tempfile.NamedTemporaryFile() as f:\n            f.write(b'x')\n        self.assertEqual(1 + 1, 2)\n",
    );
    let out = h.call(
        "run_cmd",
        json!({"command": "python3 -m unittest discover -s tests 2>&1 && mkdir -p build && echo ok > build/out.txt && echo x > /dev/null"}),
    );
    ok(&out);
    assert_eq!(h.read("build/out.txt"), "ok\n");

    // The sandbox is what stopped them: off, the same scripts get out.
    h.policy.sandbox = false;
    ok(&h.call("run_cmd", json!({"command": "python3 escape.py"})));
    assert!(target.exists());
    ok(&h.call("run_cmd", json!({"command": "python3 udp.py"})));
    assert!(udp.recv_from(&mut buf).is_ok(), "the UDP probe never sent");
    ok(&h.call("run_cmd", json!({"command": "python3 unix.py"})));
    assert!(
        unix.accept().is_ok(),
        "the Unix socket probe never connected"
    );
}

/// Why commands write no copy-on-write layer here, or `None` when they do.
fn layer_missing() -> Option<String> {
    let s = agent_sandbox::support();
    if s.landlock.is_none() || !s.mounts() {
        return Some("no Landlock or no user namespace here".into());
    }
    let scratch = tempfile::tempdir().unwrap();
    agent_sandbox::overlay_support(scratch.path()).err()
}

/// `command_output` until its text holds `needle`.
fn output_until(h: &mut Harness, id: &str, needle: &str) -> ToolOutput {
    let start = Instant::now();
    loop {
        let out = h.call("command_output", json!({"id": id, "since": 0}));
        ok(&out);
        if out.content.contains(needle) {
            return out;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no {needle:?} in {}",
            out.content
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_background_command_passes_the_same_gate_and_its_changes_wait_for_its_stop() {
    if let Some(why) = layer_missing() {
        agent_test_support::skip!("{why}");
    }
    let mut h = Harness::new();
    // The policy first: a denied command is not even offered for approval.
    let mut rec = Recorder::default();
    let out = h.call_with(
        "run_cmd",
        json!({"command": "sudo true", "background": true}),
        &mut rec,
        None,
    );
    err(&out, ErrorClass::PolicyDenied);
    assert!(rec.0.is_empty());
    // Confirm mode asks before it starts; declined, nothing starts.
    let out = h.call_with(
        "run_cmd",
        json!({"command": "touch x.txt; sleep 30", "background": true}),
        &mut AlwaysDecline,
        None,
    );
    err(&out, ErrorClass::Declined);
    err(
        &h.call("command_output", json!({"id": "job-1"})),
        ErrorClass::NotFound,
    );
    // Approved, it returns at once with an id.
    let outside = tempfile::tempdir().unwrap();
    let escaped = outside.path().join("escaped.txt");
    let t = Instant::now();
    let out = h.call_with(
        "run_cmd",
        json!({"command": format!("echo started; echo made > made.txt; echo x > {} || echo refused; while true; do sleep 0.1; done", escaped.display()), "background": true}),
        &mut rec,
        None,
    );
    ok(&out);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(out.content.contains("started job-1"), "{}", out.content);
    assert!(
        matches!(&rec.0[..], [Approval::Command { .. }]),
        "{:?}",
        rec.0
    );
    // Its output is read while it runs; the same fence holds it.
    // A line of its output: the headline quotes the command, "refused" too.
    let out = output_until(&mut h, "job-1", "\nrefused");
    assert!(
        out.content.contains("job-1 (`echo started;"),
        "{}",
        out.content
    );
    assert!(out.content.contains(": running"), "{}", out.content);
    assert!(!escaped.exists());
    // What it wrote waits in its layer ...
    assert!(!h.exists("made.txt"));
    let again = h.call("command_output", json!({"id": "job-1"}));
    assert!(
        again.content.contains("(no new output)"),
        "{}",
        again.content
    );
    // ... until it is stopped: then admitted as one change set, undoable.
    let out = h.call("command_stop", json!({"id": "job-1"}));
    ok(&out);
    assert!(
        out.content.contains("job-1 (`echo started;") && out.content.contains(": stopped"),
        "{}",
        out.content
    );
    assert_eq!(out.changed, ["made.txt"], "{}", out.content);
    assert!(
        out.diff.as_deref().unwrap_or("").contains("+made"),
        "{:?}",
        out.diff
    );
    assert_eq!(h.read("made.txt"), "made\n");
    ok(&h.call("undo", json!({})));
    assert!(!h.exists("made.txt"));
}

#[test]
fn a_background_command_that_ends_is_reported_and_admitted_once() {
    if let Some(why) = layer_missing() {
        agent_test_support::skip!("{why}");
    }
    let mut h = Harness::with_mode(Mode::Yolo);
    let out = h.call(
        "run_cmd",
        json!({"command": "echo hi > done.txt; echo bye; exit 3", "background": true}),
    );
    ok(&out);
    let out = output_until(&mut h, "1", "exit code 3");
    assert_eq!(out.exit_code, Some(3));
    assert!(out.content.contains("bye"), "{}", out.content);
    assert_eq!(out.changed, ["done.txt"], "{}", out.content);
    assert_eq!(h.read("done.txt"), "hi\n");
    let out = h.call("command_output", json!({"id": "job-1"}));
    assert!(
        out.changed.is_empty() && out.diff.is_none(),
        "{}",
        out.content
    );
    let jobs = h.toolbox.jobs().list();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state_text(), "exit 3");
    // Stopping one that ended says how it ended.
    let out = h.call("command_stop", json!({"id": "job-1"}));
    assert!(out.content.contains("exit code 3"), "{}", out.content);
}

#[test]
fn run_cmd_timeout_kills_quickly() {
    let mut h = Harness::new();
    let t = Instant::now();
    let out = h.call(
        "run_cmd",
        json!({"command": "echo started; sleep 10", "timeout_s": 1}),
    );
    err(&out, ErrorClass::Timeout);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert!(
        out.content.contains("timed out after 1s") && out.content.contains("started"),
        "{}",
        out.content
    );
}

#[test]
fn run_cmd_output_is_capped_to_head_and_tail() {
    let mut h = Harness::new();
    let out = h.call(
        "run_cmd",
        json!({"command": "python3 -c \"import sys; sys.stdout.write('HEAD' + 'x'*50000 + 'TAIL')\""}),
    );
    ok(&out);
    assert!(
        out.content.starts_with("exit code 0\nHEAD"),
        "{}",
        &out.content[..50]
    );
    assert!(out.content.ends_with("TAIL"));
    assert!(out.content.contains("bytes omitted"));
    assert!(out.content.len() < 9000, "{}", out.content.len());
}

#[test]
fn run_cmd_scrubs_secrets_from_the_environment() {
    let mut h = Harness::new();
    // HOME is surely set; scrub it by policy to see the scrubbing end to end.
    assert!(std::env::var_os("HOME").is_some());
    h.write(".agent/policy.toml", "scrub_env = [\"HOME\"]\n");
    h.policy = Policy::load(&h.ws.team_dir(), Mode::Yolo).unwrap();
    let out = h.call(
        "run_cmd",
        json!({"command": "echo \"home=${HOME:-unset} path=${PATH:+set}\""}),
    );
    ok(&out);
    assert!(
        out.content.contains("home=unset path=set"),
        "{}",
        out.content
    );

    // The built-in list: the environment given to commands has no secrets.
    let vars = vec![
        ("FOO_TOKEN".into(), "s3cret".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "s3cret".into()),
        ("KEEP_ME".into(), "yes".into()),
    ];
    let env = h.policy.scrub_env(vars);
    let r = agent_tools::shell::run_command(
        "echo \"${FOO_TOKEN:-none} ${AWS_SECRET_ACCESS_KEY:-none} $KEEP_ME\"",
        &h.root,
        env,
        Duration::from_secs(10),
        &CancelToken::new(),
        None,
    )
    .unwrap();
    assert_eq!(r.output, "none none yes\n");
}

fn python_failure(h: &mut Harness, command: &str) -> ToolOutput {
    let out = h.call("run_cmd", json!({"command": command}));
    assert!(!out.ok, "{}", out.content);
    out
}

#[test]
fn run_cmd_classifies_real_python_failures() {
    let mut h = Harness::new();
    let out = python_failure(&mut h, "python3 -c \"import nosuchmod\"");
    err(&out, ErrorClass::MissingDependency);
    assert!(
        out.content.contains("hint: missing dependency:") && out.content.contains("nosuchmod"),
        "{}",
        out.content
    );

    h.write("bad.py", "def f(:\n    pass\n");
    let out = python_failure(&mut h, "python3 bad.py");
    err(&out, ErrorClass::Syntax);
    assert!(out.content.contains("hint: syntax"), "{}", out.content);

    h.write(
        "test_math.py",
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 3)\n\nif __name__ == '__main__':\n    unittest.main()\n",
    );
    let out = python_failure(&mut h, "python3 -m unittest test_math");
    err(&out, ErrorClass::TestFailure);
    assert!(
        out.content.contains("hint: tests failed"),
        "{}",
        out.content
    );

    let out = python_failure(&mut h, "nosuchcommand-xyz --help");
    err(&out, ErrorClass::MissingDependency);

    h.write("noexec.sh", "#!/bin/sh\necho hi\n");
    let out = python_failure(&mut h, "./noexec.sh");
    err(&out, ErrorClass::Permission);
}

#[test]
fn paths_are_workspace_relative_in_outputs() {
    let mut h = Harness::new();
    h.write("a/b.txt", "x\n");
    let abs = h.root.join("a/b.txt");
    let out = h.call("read_file", json!({"path": abs.to_str().unwrap()}));
    ok(&out);
    assert!(out.content.starts_with("a/b.txt"), "{}", out.content);
    assert!(h.ws.state_dir().join("checkpoints").is_dir());
    assert!(!Path::new(&h.root).join(".agent").exists());
}

#[test]
fn files_that_hold_secrets_are_never_read_or_searched() {
    let mut h = Harness::new();
    h.write(".env", "DB_PASS=s3cr3t\n");
    h.write("deploy/server.pem", "-----BEGIN PRIVATE KEY-----\ns3cr3t\n");
    h.write(".env.example", "DB_PASS=changeme\n");
    h.write("app.py", "password = os.environ['DB_PASS']\n");
    for path in [".env", "deploy/server.pem"] {
        let out = h.call("read_file", json!({"path": path}));
        err(&out, ErrorClass::PolicyDenied);
        assert!(out.content.contains("holds secrets"), "{}", out.content);
    }
    ok(&h.call("read_file", json!({"path": ".env.example"})));
    let out = h.call("grep", json!({"pattern": "s3cr3t|DB_PASS"}));
    assert!(!out.content.contains("s3cr3t"), "{}", out.content);
    assert!(out.content.contains("app.py"), "{}", out.content);
    assert!(agent_lang::walk::is_secret_file(".git/config"));
    assert!(!agent_lang::walk::is_secret_file("src/keys.py"));
    // Issue 50: what the attack round read through the file tools.
    for secret in [
        ".envrc",
        "db/.pgpass",
        "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup",
        "gcp-credentials.json",
        "config/secrets.yaml",
        "home/.docker/config.json",
    ] {
        assert!(agent_lang::walk::is_secret_file(secret), "{secret}");
        h.write(secret, "token=s3cr3t\n");
        let out = h.call("read_file", json!({"path": secret}));
        err(&out, ErrorClass::PolicyDenied);
    }
    for plain in [
        "package.json",
        "config/settings.yaml",
        "docs/credentials.md",
    ] {
        assert!(!agent_lang::walk::is_secret_file(plain), "{plain}");
    }
}

/// An editor's view of the files: unsaved buffers over the disk; writes
/// land in the buffers only.
#[derive(Default)]
struct Buffers(std::sync::Mutex<std::collections::HashMap<PathBuf, Vec<u8>>>);

impl agent_tools::FileAccess for Buffers {
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn std::io::Read + '_>> {
        match self.0.lock().unwrap().get(path) {
            Some(bytes) => Ok(Box::new(std::io::Cursor::new(bytes.clone()))),
            None => agent_tools::files::Disk.open(path),
        }
    }

    fn write(&self, path: &Path, bytes: &[u8], _mode: Option<u32>) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), bytes.to_vec());
        Ok(())
    }
}

#[test]
fn reads_and_writes_go_through_the_toolboxs_file_access() {
    let mut h = Harness::new();
    h.write("app.py", "def add(a, b):\n    return a - b\n");
    h.write("ok.py", "x = 1\n");
    let app = h.root.join("app.py");
    let buffers = std::sync::Arc::new(Buffers::default());
    buffers.0.lock().unwrap().insert(
        app.clone(),
        b"def add(a, b):\n    return a - b  # unsaved\n".to_vec(),
    );
    h.toolbox.set_files(buffers.clone());

    let out = h.call("read_file", json!({"path": "app.py"}));
    ok(&out);
    assert!(out.content.contains("# unsaved"), "{}", out.content);
    // The edit matches text only the buffer has, and its result goes back there.
    ok(&h.call(
        "edit",
        json!({"path": "app.py", "old_text": "a - b  # unsaved", "new_text": "a + b"}),
    ));
    assert_eq!(
        buffers.0.lock().unwrap()[&app],
        b"def add(a, b):\n    return a + b\n"
    );
    assert_eq!(h.read("app.py"), "def add(a, b):\n    return a - b\n");
    // A file without a buffer is read from disk; the write still goes through.
    ok(&h.call("read_file", json!({"path": "ok.py"})));
    ok(&h.call("write_file", json!({"path": "ok.py", "content": "x = 2\n"})));
    assert_eq!(buffers.0.lock().unwrap()[&h.root.join("ok.py")], b"x = 2\n");
    assert_eq!(h.read("ok.py"), "x = 1\n");
    // Paths are still checked before the file access is asked.
    err(
        &h.call("read_file", json!({"path": "../outside.py"})),
        ErrorClass::PolicyDenied,
    );
}

/// A code index whose project locks one dependency, `demo@1.0.0`, whose
/// files are in `package` (outside the workspace).
struct DepsIndex {
    package: PathBuf,
    scopes: Vec<String>,
}

impl SemanticSearch for DepsIndex {
    fn search(&mut self, _query: &str, _k: usize) -> anyhow::Result<Vec<Hit>> {
        Ok(Vec::new())
    }

    fn search_in(
        &mut self,
        query: &str,
        k: usize,
        scope: &str,
        package: Option<&str>,
    ) -> anyhow::Result<Vec<Hit>> {
        self.scopes.push(format!(
            "{scope}{}",
            package.map(|p| format!(":{p}")).unwrap_or_default()
        ));
        if scope == "project" {
            return self.search(query, k);
        }
        Ok(vec![Hit {
            path: "demo@1.0.0/src/lib.rs".into(),
            start_line: 1,
            end_line: 1,
            symbol: "shout".into(),
            score: 0.8,
            text: "pub fn shout() {}\n".into(),
        }])
    }

    fn dependency_file(&mut self, cited: &str) -> Option<Result<PathBuf, String>> {
        let rest = cited.strip_prefix("demo@")?;
        Some(match rest.strip_prefix("1.0.0/") {
            Some("src/lib.rs") => Ok(self.package.join("src/lib.rs")),
            _ => Err(format!("{cited} is not a file of the locked demo@1.0.0")),
        })
    }
}

#[test]
fn read_file_reads_a_dependency_path_only_within_the_resolved_set() {
    let mut h = Harness::new();
    let package = h._dir.path().join("registry/demo-1.0.0");
    std::fs::create_dir_all(package.join("src")).unwrap();
    std::fs::write(package.join("src/lib.rs"), "pub fn shout() {}\n").unwrap();
    let mut index = DepsIndex {
        package,
        scopes: Vec::new(),
    };

    let out = h.call_with(
        "read_file",
        json!({"path": "demo@1.0.0/src/lib.rs"}),
        &mut AlwaysApprove,
        Some(&mut index),
    );
    ok(&out);
    assert!(
        out.content.starts_with("demo@1.0.0/src/lib.rs (1 lines)"),
        "{}",
        out.content
    );
    assert!(out.content.contains("pub fn shout"));

    for refused in ["demo@2.0.0/src/lib.rs", "demo@1.0.0/../../secret"] {
        let out = h.call_with(
            "read_file",
            json!({"path": refused}),
            &mut AlwaysApprove,
            Some(&mut index),
        );
        err(&out, ErrorClass::PolicyDenied);
    }
    // Without the index, a dependency path is only a workspace path.
    err(
        &h.call("read_file", json!({"path": "demo@1.0.0/src/lib.rs"})),
        ErrorClass::NotFound,
    );
    // A workspace file of that name is the workspace's.
    h.write("demo@1.0.0/src/lib.rs", "// ours\n");
    let out = h.call_with(
        "read_file",
        json!({"path": "demo@1.0.0/src/lib.rs"}),
        &mut AlwaysApprove,
        Some(&mut index),
    );
    assert!(out.content.contains("// ours"), "{}", out.content);

    // search_semantic passes its scope; an unknown one is refused.
    let out = h.call_with(
        "search_semantic",
        json!({"query": "shout", "scope": "deps"}),
        &mut AlwaysApprove,
        Some(&mut index),
    );
    ok(&out);
    assert!(
        out.content.starts_with("demo@1.0.0/src/lib.rs:1-1  shout"),
        "{}",
        out.content
    );
    let out = h.call_with(
        "search_semantic",
        json!({"query": "shout", "scope": "everything"}),
        &mut AlwaysApprove,
        Some(&mut index),
    );
    err(&out, ErrorClass::InvalidArgs);
    // One dependency: `package` alone means its scope is deps; with
    // scope project it names nothing to search.
    let out = h.call_with(
        "search_semantic",
        json!({"query": "shout", "package": "demo"}),
        &mut AlwaysApprove,
        Some(&mut index),
    );
    ok(&out);
    let out = h.call_with(
        "search_semantic",
        json!({"query": "shout", "scope": "project", "package": "demo"}),
        &mut AlwaysApprove,
        Some(&mut index),
    );
    err(&out, ErrorClass::InvalidArgs);
    assert_eq!(index.scopes, vec!["deps", "deps:demo"]);
}
