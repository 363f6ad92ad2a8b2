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

/// The agent's front ends, and what they may use of ours.
const FRONT_ENDS: [&str; 3] = ["agent-line", "agent-tui", "agent-acp"];
const FRONT_END_USES: [&str; 4] = [
    "agent-base",
    "agent-lang",
    "agent-protocol",
    "agent-session",
];
/// What the binary may use of ours: its command line, the session, the
/// protocol, the front ends (the MCP server is the index's), and agent-base.
const BINARY_USES: [&str; 8] = [
    "agent-acp",
    "agent-base",
    "agent-cli",
    "agent-line",
    "agent-mcp-server",
    "agent-protocol",
    "agent-session",
    "agent-tui",
];

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

    // The front ends speak the protocol and drive the session: none reaches
    // into the loop, the tools, the engine or the index (the sources are
    // checked too, in `front_ends_name_only_the_protocol_and_the_session`).
    for front in FRONT_ENDS {
        let reach: Vec<&str> = ours(&g[front])
            .into_iter()
            .filter(|d| !FRONT_END_USES.contains(d))
            .collect();
        assert!(
            reach.is_empty(),
            "{front} depends on {reach:?}: a front end uses {FRONT_END_USES:?} only"
        );
    }
    // The binary parses and prints: the session, the protocol and the front ends.
    let reach: Vec<&str> = ours(&g["agent"])
        .into_iter()
        .filter(|d| !BINARY_USES.contains(d))
        .collect();
    assert!(
        reach.is_empty(),
        "the binary depends on {reach:?}: it uses {BINARY_USES:?} only"
    );

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
    assert_eq!(
        ours(&g["agent-llm"]),
        BTreeSet::from(["agent-base", "agent-chat"])
    );

    // Tree-sitter's grammars belong to agent-lang; its libraries (the
    // highlighter the terminal UI colours code with) are anyone's.
    const LIBRARIES: [&str; 2] = ["tree-sitter-language", "tree-sitter-highlight"];
    for (name, deps) in &g {
        if name != "agent-lang" {
            let grammars: Vec<_> = deps
                .iter()
                .filter(|d| d.starts_with("tree-sitter-") && !LIBRARIES.contains(&d.as_str()))
                .collect();
            assert!(grammars.is_empty(), "{name} links grammars {grammars:?}");
        }
    }
}

/// The root of the repository (this package's manifest folder).
fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// ARCHITECTURE.md without its fenced blocks (drawings, not names).
fn document() -> String {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every `code span` of the document.
fn spans(doc: &str) -> BTreeSet<String> {
    doc.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains('\n'))
        .map(str::to_string)
        .collect()
}

/// The crate table: each crate, in the table's order, with the crates its
/// "uses" column names (short names: `base` is `agent-base`; the binary's
/// "all of the above" is every crate before it).
fn table(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut rows: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `agent")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", crate, job, API, uses, ""
        assert_eq!(cells.len(), 6, "a crate row has four cells: {line}");
        let name = cells[1]
            .split('`')
            .nth(1)
            .expect("the crate's name in backticks")
            .to_string();
        let uses = match cells[4] {
            "-" => BTreeSet::new(),
            "all of the above" => rows.iter().map(|(n, _)| n.clone()).collect(),
            list => list
                .split(',')
                .map(|short| format!("agent-{}", short.trim()))
                .collect(),
        };
        rows.push((name, uses));
    }
    rows
}

#[test]
fn the_crate_table_is_the_crate_graph() {
    let g = graph();
    let rows = table(&document());
    let listed: BTreeSet<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    let crates: BTreeSet<&str> = g
        .keys()
        .map(String::as_str)
        .filter(|n| *n == "agent" || n.starts_with("agent-"))
        .collect();
    assert_eq!(
        listed, crates,
        "the table lists every crate of the workspace"
    );
    for (i, (name, uses)) in rows.iter().enumerate() {
        let deps: BTreeSet<String> = ours(&g[name]).into_iter().map(String::from).collect();
        let missing: Vec<_> = deps.difference(uses).collect();
        let extra: Vec<_> = uses.difference(&deps).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}'s \"uses\" column: missing {missing:?}, not in its manifest {extra:?}"
        );
        // Bottom-up: what a crate uses stands above it.
        let above: BTreeSet<&String> = rows[..i].iter().map(|(n, _)| n).collect();
        for dep in uses {
            assert!(above.contains(dep), "{name} uses {dep}, listed below it");
        }
    }
}

/// Every Rust source file of the workspace's crates and the binary.
fn sources() -> Vec<(std::path::PathBuf, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("src"), &mut out);
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        walk(&entry.path().join("src"), &mut out);
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `text` declares `name` (a prefix, for a name ending in `*`):
/// an item, a module, a field, an enum variant or a re-export; with
/// `public`, only a `pub` one.
fn declares(text: &str, name: &str, public: bool) -> bool {
    let (name, prefix) = match name.strip_suffix('*') {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let ends = |rest: &str| prefix || !rest.starts_with(is_ident);
    // A `use` rustfmt spread over lines, read as one line.
    let mut joined = String::new();
    let mut in_use = false;
    for line in text.lines() {
        let trimmed = line.trim();
        in_use = in_use || trimmed.starts_with("pub use ");
        joined.push_str(if in_use { trimmed } else { line });
        if in_use && trimmed.ends_with(';') {
            in_use = false;
        }
        if !in_use {
            joined.push('\n');
        } else {
            joined.push(' ');
        }
    }
    joined.lines().any(|line| {
        let line = line.trim_start();
        let is_pub = line.starts_with("pub ");
        if public && !is_pub {
            return false;
        }
        let line = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ")
            .trim_start_matches("async ")
            .trim_start_matches("unsafe ");
        let item = [
            "fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ",
        ]
        .iter()
        .any(|kw| {
            line.strip_prefix(kw)
                .and_then(|rest| rest.strip_prefix(name))
                .is_some_and(ends)
        });
        // A field or a variant: `name: T`, `name,`, `name(T)`, `name {`.
        let member = line.strip_prefix(name).is_some_and(|rest| {
            ends(rest)
                && [":", ",", "(", " {", " ="]
                    .iter()
                    .any(|p| rest.starts_with(p))
        });
        let reexport = line.starts_with("use ")
            && is_pub
            && line
                .match_indices(name)
                .any(|(i, _)| !line[..i].ends_with(is_ident) && ends(&line[i + name.len()..]));
        item || member || reexport
    })
}

/// The files of module `name` below the module in `file`.
fn submodule(file: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let stem = file.file_stem().unwrap().to_string_lossy();
    let dir = if ["lib", "main", "mod"].contains(&stem.as_ref()) {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .collect()
}

/// Why `path` (`agent_tools::git::run`, `ui::Ui`, `Index::notes`) names
/// nothing in the sources, or `None` when it does. A path that starts with
/// a crate names only public items; one that starts with a module, a module
/// of that name in any crate; one that starts with a type, a member of it.
fn unresolved(path: &str, sources: &[(std::path::PathBuf, String)]) -> Option<String> {
    fn text_of<'a>(sources: &'a [(std::path::PathBuf, String)], f: &std::path::Path) -> &'a str {
        sources
            .iter()
            .find(|(p, _)| p == f)
            .map_or("", |(_, t)| t.as_str())
    }
    let text = |f: &std::path::Path| text_of(sources, f);
    let segs: Vec<&str> = path.split("::").collect();
    let public = segs[0].starts_with("agent_");
    let (mut files, mut rest): (Vec<std::path::PathBuf>, &[&str]) = if public {
        let lib = root()
            .join("crates")
            .join(segs[0].replace('_', "-"))
            .join("src/lib.rs");
        if !lib.exists() {
            return Some(format!("no crate {}", segs[0]));
        }
        (vec![lib], &segs[1..])
    } else if segs[0].starts_with(char::is_lowercase) {
        let files: Vec<_> = sources
            .iter()
            .map(|(p, _)| p.clone())
            .filter(|p| {
                p.ends_with(format!("{}.rs", segs[0])) || p.ends_with(format!("{}/mod.rs", segs[0]))
            })
            .collect();
        if files.is_empty() {
            return Some(format!("no module {}", segs[0]));
        }
        (files, &segs[1..])
    } else {
        (sources.iter().map(|(p, _)| p.clone()).collect(), &segs[..])
    };
    while let [seg, tail @ ..] = rest {
        if tail.is_empty() {
            return (!files.iter().any(|f| declares(text(f), seg, public))).then(|| {
                format!(
                    "no {}{seg} in {files:?}",
                    if public { "public " } else { "" }
                )
            });
        }
        if seg.starts_with(char::is_uppercase) {
            // A type: its member is declared where the type or an impl of it is.
            let owners: Vec<_> = sources
                .iter()
                .filter(|(p, t)| {
                    files.contains(p)
                        && (declares(t, seg, public)
                            || t.contains(&format!(" {seg} {{"))
                            || t.contains(&format!(" {seg}<")))
                })
                .map(|(p, _)| p.clone())
                .collect();
            if owners.is_empty() {
                return Some(format!("no type {seg}"));
            }
            files = sources
                .iter()
                .filter(|(p, t)| owners.contains(p) || t.contains(&format!("for {seg} {{")))
                .map(|(p, _)| p.clone())
                .collect();
        } else {
            let next: Vec<_> = files
                .iter()
                .filter(|f| !public || declares(text(f), seg, true))
                .flat_map(|f| submodule(f, seg))
                .collect();
            if next.is_empty() {
                return Some(format!(
                    "no {}module {seg}",
                    if public { "public " } else { "" }
                ));
            }
            files = next;
        }
        rest = tail;
    }
    None
}

/// Runtime paths the document names (the agent's state, tools' folders),
/// not files of this repository.
fn is_runtime_path(span: &str) -> bool {
    [
        ".agent",
        "/",
        "~",
        "node_modules",
        ".venv",
        "s3:",
        "session/",
        // The state folder's layout, and the team's and the user's files.
        "$",
        "*.",
        ".claude",
        "CLAUDE.md",
        "audit_dir/",
        "cache/",
        "checkpoints/",
        "commands/",
        "config.toml",
        "config.local.toml",
        "hooks/",
        "index/",
        "logs/",
        "policy.toml",
        "policy.local.toml",
        "shared/",
        "skills/",
    ]
    .iter()
    .any(|p| span.starts_with(p))
}

/// Whether `path` (`scripts/test`, `offload.rs`, `agent-tools/src/shell.rs`,
/// `crates/agent-index/examples/bench_*.rs`) exists: from the root, from
/// `src/`, from `crates/`, or as the end of a crate's source path.
fn path_exists(path: &str) -> bool {
    fn matches(dir: &std::path::Path, pattern: &str) -> bool {
        let Some((head, tail)) = pattern.split_once('*') else {
            return dir.join(pattern).exists();
        };
        let (folder, prefix) = head.rsplit_once('/').unwrap_or(("", head));
        std::fs::read_dir(dir.join(folder)).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(prefix) && n.ends_with(tail)
            })
        })
    }
    let root = root();
    let trimmed = path.trim_end_matches('/');
    [root.clone(), root.join("src"), root.join("crates")]
        .iter()
        .any(|d| matches(d, trimmed))
        || sources()
            .iter()
            .any(|(p, _)| p.ends_with(trimmed) && p.starts_with(root.join("crates")))
        || std::fs::read_dir(root.join("crates"))
            .unwrap()
            .flatten()
            .any(|c| c.path().join("src").join(trimmed).exists())
}

/// Every path and `crate::item` ARCHITECTURE.md names is there.
#[test]
fn the_architecture_document_names_what_exists() {
    let doc = document();
    let sources = sources();
    let mut wrong = Vec::new();
    for span in spans(&doc) {
        let is_item = span.contains("::")
            && span
                .split("::")
                .all(|s| !s.is_empty() && s.trim_end_matches('*').chars().all(is_ident));
        let is_path = !span.contains(' ')
            && !span.contains("::")
            && (span.contains('/')
                || [".rs", ".toml", ".md", ".sh"]
                    .iter()
                    .any(|e| span.ends_with(e)));
        if is_item {
            if let Some(why) = unresolved(&span, &sources) {
                wrong.push(format!("`{span}`: {why}"));
            }
        } else if is_path && !is_runtime_path(&span) && !path_exists(&span) {
            wrong.push(format!("`{span}`: no such file or folder"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md names:\n{}",
        wrong.join("\n")
    );
}

/// Each print macro's whole text (`println!(...)` to its closing paren) in
/// `text`, with its line number.
fn prints(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for macro_name in ["println!(", "eprintln!(", "print!(", "eprint!("] {
        let mut from = 0;
        while let Some(at) = text[from..].find(macro_name) {
            let start = from + at;
            from = start + macro_name.len();
            // `eprintln!(` also holds `println!(`: count each call once.
            let before = text[..start].chars().last();
            if before.is_some_and(|c| is_ident(c) || c == '_') {
                continue;
            }
            let mut depth = 0usize;
            let mut end = from;
            for (i, c) in text[from - 1..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = from - 1 + i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let line = text[..start].matches('\n').count() + 1;
            out.push((line, text[start..=end.min(text.len() - 1)].to_string()));
        }
    }
    out
}

/// Issue 50, item 7: what the front ends print of errors and paths goes
/// through the escaping type (`agent_base::term::untrusted*`): an error can
/// quote a repository's server name or regex, a path the folder's name,
/// and either may hold terminal escape sequences.
#[test]
fn front_ends_print_errors_and_paths_only_escaped() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["src", "crates/agent-tui/src", "crates/agent-line/src"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
    }
    let raw = ["{e}", "{e:#}", "{e:?}", "{err}", "{error}", ".display()"];
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, call) in prints(&text) {
            let escaped = call.contains("untrusted") || call.contains("escape_");
            if !escaped && raw.iter().any(|r| call.contains(r)) {
                let rel = file.strip_prefix(&root).unwrap().display();
                found.push(format!(
                    "{rel}:{line}: {}",
                    call.lines().next().unwrap_or_default()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "print these through agent_base::term::untrusted or untrusted_text:\n{}",
        found.join("\n")
    );
}

/// Each Rust source file under `dir` (relative to the root), with its text.
fn rust_files(dir: &str) -> Vec<(std::path::PathBuf, String)> {
    let dir = root().join(dir);
    sources()
        .into_iter()
        .filter(|(path, _)| path.starts_with(&dir))
        .collect()
}

/// Issue 52: the front ends and the binary name the protocol and the
/// session, never a crate below them, whatever their manifests allow (a
/// path in code, not in a comment).
#[test]
fn front_ends_name_only_the_protocol_and_the_session() {
    let mut dirs: Vec<(String, Vec<&str>)> = FRONT_ENDS
        .iter()
        .map(|f| (format!("crates/{f}/src"), FRONT_END_USES.to_vec()))
        .collect();
    dirs.push(("src".into(), BINARY_USES.to_vec()));
    let mut found = Vec::new();
    for (dir, allowed) in &dirs {
        for (path, text) in rust_files(dir) {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for (at, _) in code.match_indices("agent_") {
                    if code[..at].ends_with(is_ident) {
                        continue;
                    }
                    let name: String = code[at..].chars().take_while(|c| is_ident(*c)).collect();
                    if !code[at + name.len()..].starts_with("::") {
                        continue;
                    }
                    let krate = name.replace('_', "-");
                    if !allowed.contains(&krate.as_str()) {
                        let rel = path.strip_prefix(root()).unwrap().display();
                        found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a front end names a crate below the session (go through agent_session or agent_protocol):\n{}",
        found.join("\n")
    );
}

/// Issue 52: the binary parses and prints. What it decides belongs to a
/// crate with unit tests; a `src/` that grows past this is logic coming back.
#[test]
fn the_binary_stays_a_thin_front_end() {
    let lines: usize = rust_files("src")
        .iter()
        .map(|(_, text)| text.lines().count())
        .sum();
    assert!(
        lines < 2_000,
        "src/ holds {lines} lines of Rust: move what it decides to agent-session (or the command line's grammar to agent-cli)"
    );
}

/// The items of a crate row's API cell: each code span, `a::{b, c}`
/// expanded; prose and the binary's `agent --help` left out.
fn api_items(cell: &str) -> Vec<String> {
    let mut items = Vec::new();
    for span in cell.split('`').skip(1).step_by(2) {
        let (head, inner) = match span.split_once("::{") {
            Some((head, rest)) => (format!("{head}::"), rest.trim_end_matches('}').to_string()),
            None => (String::new(), span.to_string()),
        };
        for part in inner.split(',').map(str::trim) {
            let item = format!("{head}{part}");
            if item
                .split("::")
                .all(|s| !s.is_empty() && s.trim_end_matches(['*', '!']).chars().all(is_ident))
            {
                items.push(item);
            }
        }
    }
    items
}

/// Issue 52: each crate's API column names what the crate exports: a
/// public item, module or re-export at that path (a macro, `name!`,
/// exported with `#[macro_export]`).
#[test]
fn each_crates_api_column_is_what_it_exports() {
    let doc = document();
    let sources = sources();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for line in doc.lines().filter(|l| l.starts_with("| `agent-")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let krate = cells[1].split('`').nth(1).unwrap_or_default();
        let lib = root().join("crates").join(krate).join("src/lib.rs");
        for item in api_items(cells[3]) {
            checked += 1;
            if let Some(name) = item.strip_suffix('!') {
                let text = std::fs::read_to_string(&lib).unwrap_or_default();
                if !(text.contains("#[macro_export]")
                    && text.contains(&format!("macro_rules! {name}")))
                {
                    wrong.push(format!("{krate}: `{item}` is no exported macro"));
                }
                continue;
            }
            let path = format!("{}::{item}", krate.replace('-', "_"));
            if let Some(why) = unresolved(&path, &sources) {
                wrong.push(format!("{krate}: `{item}`: {why}"));
            }
        }
    }
    assert!(
        checked > 60,
        "only {checked} API items read: is the table still there?"
    );
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's API column names what its crate does not export:\n{}",
        wrong.join("\n")
    );
}
