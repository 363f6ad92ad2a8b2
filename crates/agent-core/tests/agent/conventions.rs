//! A team's own conventions in the loop, with the real tools and a scripted
//! model: skills (listed in the prompt, loaded by the `skill` tool) and
//! hooks around tool calls (`.agent/config.toml`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agent_policy::Mode;

use crate::scripted::{ask, events, finish, last_user_message, repo, start};

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn executable(root: &Path, path: &str, text: &str) {
    write(root, path, text);
    std::fs::set_permissions(root.join(path), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_skill_is_listed_then_loaded_by_the_tool_and_its_text_reaches_the_model() {
    let dir = repo();
    let root = dir.path();
    write(
        root,
        ".agent/skills/release-notes/SKILL.md",
        "---\nname: release-notes\ndescription: Write release notes from the changelog\n---\n\
         Group the entries of CHANGES-LOG.md by component, newest first.\n",
    );
    write(
        root,
        ".agent/skills/release-notes/template.md",
        "## {version}\n",
    );
    write(
        root,
        ".claude/skills/broken/SKILL.md",
        "no front matter here\n",
    );
    let load = r#"{"thought": "a skill fits", "tool": "skill", "args": {"name": "release-notes"}}"#;
    let read = r#"{"thought": "its template", "tool": "skill", "args": {"name": "release-notes", "file": "template.md"}}"#;
    let escape = r#"{"thought": "try", "tool": "skill", "args": {"name": "release-notes", "file": "../../../src/calc.py"}}"#;
    let answer = finish(
        "Group the entries of CHANGES-LOG.md by component, newest first, under ## {version}.",
    );
    let (mut agent, model) = start(
        root,
        Mode::Confirm,
        &[load, read, escape, &answer],
        None,
        |c| c.personal_skills = None,
    );
    assert_eq!(agent.skills().skills.len(), 1);
    let problems = agent.skills().problems.join("\n");
    assert!(
        problems.contains("broken/SKILL.md: no front matter") && problems.contains("fix:"),
        "{problems}"
    );

    let outcome = ask(
        &mut agent,
        "Where does this repository say how release notes are written?",
    )
    .unwrap();
    assert!(outcome.answer.contains("CHANGES-LOG"), "{}", outcome.answer);
    let requests = model.requests();
    let system = &requests[0].messages[0].content;
    assert!(
        system.contains("- release-notes: Write release notes from the changelog"),
        "{system}"
    );
    assert!(
        !system.contains("Group the entries"),
        "only names go in the prompt"
    );
    let loaded = last_user_message(&requests[1]);
    assert!(
        loaded.contains("Group the entries of CHANGES-LOG.md"),
        "{loaded}"
    );
    assert!(loaded.contains("- template.md"), "{loaded}");
    assert!(last_user_message(&requests[2]).contains("## {version}"));
    let escaped = last_user_message(&requests[3]);
    assert!(
        escaped.contains("no file") && !escaped.contains("def add"),
        "{escaped}"
    );
}

/// `.agent/config.toml` with hooks: a pre hook that denies `rm`, a post hook
/// that reports on reads, a pre hook that hangs on greps, and one that is
/// not executable on list_dir.
fn hooked_repo() -> tempfile::TempDir {
    let dir = repo();
    let root = dir.path();
    executable(
        root,
        ".agent/hooks/no-rm.sh",
        "#!/bin/sh\ninput=$(cat)\nprintf '%s' \"$input\" > hook-input.json\n\
         case \"$input\" in *'rm -rf'*) echo 'rm is not allowed here: use git clean -n first' >&2; exit 2;; esac\nexit 0\n",
    );
    write(root, ".agent/hooks/not-exec.sh", "#!/bin/sh\nexit 0\n");
    write(
        root,
        ".agent/config.toml",
        "[[hooks.pre_tool]]\nmatcher = \"Bash\"\ncommand = \".agent/hooks/no-rm.sh\"\n\n\
         [[hooks.post_tool]]\nmatcher = \"read_file\"\ncommand = \"echo LINT-REPORT: 0 problems\"\n\n\
         [[hooks.pre_tool]]\nmatcher = \"grep\"\ncommand = \"sleep 30\"\ntimeout_s = 1\n\n\
         [[hooks.pre_tool]]\nmatcher = \"list_dir\"\ncommand = \".agent/hooks/not-exec.sh\"\n",
    );
    dir
}

#[test]
fn an_untrusted_workspace_loads_no_hook() {
    let dir = hooked_repo();
    let answer = finish("src/calc.py defines add and sub.");
    let (agent, _) = start(dir.path(), Mode::Yolo, &[&answer], None, |_| {});
    assert!(agent.hooks().is_empty(), "hooks of an untrusted workspace");
    let (agent, _) = start(dir.path(), Mode::Yolo, &[&answer], None, |c| {
        c.trusted = true
    });
    assert_eq!(agent.hooks().pre_tool.len(), 3);
}

#[test]
fn hooks_deny_add_to_observations_are_cut_off_and_are_audited() {
    let dir = hooked_repo();
    let root = dir.path();
    let rm = r#"{"thought": "clean", "tool": "run_cmd", "args": {"command": "rm -rf src"}}"#;
    let read = r#"{"thought": "read", "tool": "read_file", "args": {"path": "src/calc.py"}}"#;
    let grep = r#"{"thought": "find", "tool": "grep", "args": {"pattern": "def sub"}}"#;
    let list = r#"{"thought": "look", "tool": "list_dir", "args": {"path": "src"}}"#;
    let answer = finish("src/calc.py defines add and sub; nothing was removed.");
    let (mut agent, model) = start(
        root,
        Mode::Yolo,
        &[rm, read, grep, list, &answer],
        None,
        // The workspace's hooks run once it is trusted.
        |c| c.trusted = true,
    );
    let started = std::time::Instant::now();
    let outcome = ask(
        &mut agent,
        "Remove the src folder and tell me what was in it",
    )
    .unwrap();
    assert!(outcome.answer.contains("add and sub"), "{}", outcome.answer);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the hanging hook was not cut off: {:?}",
        started.elapsed()
    );
    assert!(root.join("src/calc.py").exists(), "the denied command ran");

    let requests = model.requests();
    let denied = last_user_message(&requests[1]);
    assert!(
        denied.contains("blocked by a pre_tool hook") && denied.contains("use git clean -n first"),
        "{denied}"
    );
    let read_back = last_user_message(&requests[2]);
    assert!(read_back.contains("def add"), "{read_back}");
    assert!(read_back.contains("LINT-REPORT: 0 problems"), "{read_back}");
    // The hook that hung was stopped; the grep ran all the same.
    assert!(last_user_message(&requests[3]).contains("def sub"));
    // So did list_dir, past the hook that cannot run.
    assert!(last_user_message(&requests[4]).contains("calc.py"));

    // The hook got the call as Claude Code's hooks get it.
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("hook-input.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["agent_tool_name"], "run_cmd");
    assert_eq!(input["tool_input"]["command"], "rm -rf src");
    assert_eq!(input["permission_mode"], "bypassPermissions");
    assert!(input["session_id"].as_str().is_some_and(|s| !s.is_empty()));

    let hooks: Vec<serde_json::Value> = events(root, "audit.jsonl")
        .into_iter()
        .filter(|e| e["event"] == "hook")
        .collect();
    let decisions: Vec<(&str, &str)> = hooks
        .iter()
        .map(|h| (h["tool"].as_str().unwrap(), h["decision"].as_str().unwrap()))
        .collect();
    assert_eq!(
        decisions,
        [
            ("run_cmd", "deny"),
            ("read_file", "context"),
            ("grep", "failed"),
            ("list_dir", "failed")
        ],
        "{hooks:?}"
    );
    assert_eq!(hooks[2]["timed_out"], true, "{:?}", hooks[2]);
    assert!(hooks[2]["detail"]
        .as_str()
        .unwrap()
        .contains("limit of 1 s"));
    let not_exec = hooks[3]["detail"].as_str().unwrap();
    assert!(
        not_exec.contains("not executable")
            && not_exec.contains("chmod +x .agent/hooks/not-exec.sh"),
        "{not_exec}"
    );
}

/// Three files of about 2,300 tokens each: reading them all passes 80% of
/// an 8k window.
fn big_repo() -> tempfile::TempDir {
    let dir = repo();
    for name in ["alpha", "beta", "gamma"] {
        let body: String = (0..150)
            .map(|i| format!("def {name}_{i:03}(x):\n    return x * {i} + len('{name}')\n"))
            .collect();
        write(dir.path(), &format!("src/{name}.py"), &body);
    }
    dir
}

fn read(path: &str) -> String {
    serde_json::json!({"thought": "read", "tool": "read_file", "args": {"path": path}}).to_string()
}

const SUMMARY: &str = r#"{"goal": "Say which of src/alpha.py, src/beta.py and src/gamma.py defines gamma_042", "decisions": ["read all three files"], "files": [{"path": "src/gamma.py", "why": "defines gamma_042"}], "open_questions": [], "next_step": "answer: src/gamma.py"}"#;

fn agent_with_window(dir: &Path, turns: &[&str]) -> (agent_core::Agent, crate::scripted::Recorder) {
    let model = crate::scripted::Recorder::with_context(turns, 8192);
    let config = agent_core::AgentConfig {
        mode: Mode::Confirm,
        repo_map: false,
        prefetch: 0,
        ..agent_core::AgentConfig::new(dir)
    };
    agent_base::paths::isolate_for_tests();
    let agent = agent_core::Agent::new(Box::new(model.clone()), config, None).unwrap();
    (agent, model)
}

const QUESTION: &str = "Which file in src defines gamma_042?";

#[test]
fn a_conversation_past_the_threshold_is_compacted_once_and_goes_on_from_the_summary() {
    let dir = big_repo();
    let root = dir.path();
    let answer = finish("src/gamma.py defines gamma_042.");
    let turns = [
        &read("src/alpha.py")[..],
        &read("src/beta.py"),
        &read("src/gamma.py"),
        SUMMARY,
        &answer,
    ];
    let (mut agent, model) = agent_with_window(root, &turns);
    let outcome = ask(&mut agent, QUESTION).unwrap();
    assert!(
        outcome.answer.contains("src/gamma.py"),
        "{}",
        outcome.answer
    );
    assert_eq!(outcome.compactions.len(), 1, "{:?}", outcome.compactions);
    let c = &outcome.compactions[0];
    assert!(c.compacted && c.fallback.is_none(), "{c:?}");
    assert!(c.tokens_after < c.tokens_before / 2, "{c:?}");

    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    // The summary request: the conversation, then the question, under a grammar.
    let asked = last_user_message(&requests[3]);
    assert!(
        asked.contains("structured") || asked.contains("summary"),
        "{asked}"
    );
    assert!(requests[3].grammar.is_some());
    // The step after: system prompt, the summary (with the request), the kept turns.
    let after = &requests[4].messages;
    assert!(
        after[1]
            .content
            .contains("Summary of the conversation so far")
            && after[1].content.contains("Goal: Say which of")
            && after[1].content.contains(QUESTION),
        "{}",
        after[1].content
    );
    assert!(!after.iter().any(|m| m.content.contains("def alpha_000")));
    assert!(after.iter().any(|m| m.content.contains("def gamma_000")));
    // The session's context still opens the first user message, as it
    // opened the request; the summary reported is the summary alone.
    let (context, summary) = agent_core::split_context(&after[1].content);
    assert_eq!(
        context,
        agent_core::split_context(&requests[0].messages[1].content).0
    );
    assert!(context.is_some_and(|c| c.starts_with("Environment:")));
    assert_eq!(Some(summary), c.summary.as_deref());

    // The prompt changed once: every other step extended the one before.
    let kept: Vec<bool> = events(root, "trace.jsonl")
        .iter()
        .filter(|e| e["event"] == "llm_request")
        .map(|e| e["prefix_kept"].as_bool().unwrap())
        .collect();
    assert_eq!(kept, [true, true, true, false], "{kept:?}");

    // Stored: a resumed session starts from the summary.
    let session = agent.session_id().to_string();
    let (resumed, _) = start(root, Mode::Confirm, &[], None, |c| {
        c.resume = Some(session.clone())
    });
    let resumed_turns = resumed.turns();
    assert_eq!(resumed_turns[1].kind, agent_store::turn::Kind::Summary);
    assert!(resumed_turns[1].message.content.contains(QUESTION));
    assert!(!resumed_turns
        .iter()
        .any(|t| t.message.content.contains("def alpha_000")));
    let audit: Vec<serde_json::Value> = events(root, "audit.jsonl")
        .into_iter()
        .filter(|e| e["event"] == "compact")
        .collect();
    assert_eq!(audit.len(), 1);
}

#[test]
fn a_summary_the_judge_rejects_falls_back_to_pruning_and_says_so() {
    let dir = big_repo();
    let root = dir.path();
    let answer = finish("src/gamma.py defines gamma_042.");
    // The question copied back is no summary.
    let echo = serde_json::json!({"goal": QUESTION, "decisions": [], "files": [],
        "open_questions": [], "next_step": ""})
    .to_string();
    let turns = [
        &read("src/alpha.py")[..],
        &read("src/beta.py"),
        &read("src/gamma.py"),
        &echo,
        &answer,
    ];
    let (mut agent, model) = agent_with_window(root, &turns);
    let outcome = ask(&mut agent, QUESTION).unwrap();
    assert!(
        outcome.answer.contains("src/gamma.py"),
        "{}",
        outcome.answer
    );
    assert_eq!(outcome.compactions.len(), 1);
    let c = &outcome.compactions[0];
    assert!(!c.compacted, "{c:?}");
    let why = c.fallback.as_deref().unwrap();
    assert!(why.contains("pruned") && why.contains("/compact"), "{why}");
    // No summary went in; the old turns were pruned instead.
    let last = &model.requests()[4].messages;
    assert!(!last
        .iter()
        .any(|m| m.content.contains("Summary of the conversation")));
}

/// Found on pytest: `/compact` accepted a summary that was one sentence
/// repeated plus a claim of work never done, and printed "5115 → 5187
/// tokens". Such a summary is refused, the user is told why, and the one
/// made from the turns' own record (the request, the answer, the file read)
/// takes its place: nothing the model claimed goes in.
#[test]
fn compact_refuses_a_summary_that_repeats_itself_or_claims_work_not_done() {
    let dir = big_repo();
    let root = dir.path();
    let answer = finish("src/alpha.py defines alpha_001.");
    let repeated = serde_json::json!({"goal": "Find which file defines alpha_001. Find which file defines alpha_001.",
        "decisions": [], "files": [], "open_questions": [], "next_step": ""})
    .to_string();
    let claimed = serde_json::json!({"goal": "Find which file defines alpha_001",
        "decisions": ["I fixed alpha_001 in src/alpha.py"], "files": [],
        "open_questions": [], "next_step": ""})
    .to_string();
    for (summary, expected) in [
        (&repeated, "repeats itself"),
        (&claimed, "claims work was done"),
    ] {
        let turns = [&read("src/alpha.py")[..], &answer, summary];
        let (mut agent, _model) = agent_with_window(root, &turns);
        ask(&mut agent, "Which file in src defines alpha_001?").unwrap();
        let c = agent
            .compact(
                None,
                &mut agent_protocol::event::QuietUi,
                &agent_base::cancel::CancelToken::new(),
            )
            .unwrap();
        assert!(c.compacted, "{c:?}");
        let why = c.fallback.as_deref().unwrap();
        assert!(
            why.contains(expected) && why.contains("own record"),
            "{why}"
        );
        let text = c.summary.as_deref().unwrap();
        assert!(
            text.contains("the user asked: Which file in src defines alpha_001?"),
            "{text}"
        );
        assert!(
            text.contains("src/alpha.py: read_file was called on it"),
            "{text}"
        );
        assert!(
            !text.contains("I fixed") && !text.contains("Find which file"),
            "{text}"
        );
        assert!(c.tokens_after < c.tokens_before, "{c:?}");
    }
}

#[test]
fn compact_on_request_summarizes_with_the_focus() {
    let dir = big_repo();
    let root = dir.path();
    let answer = finish("src/alpha.py defines alpha_001.");
    let turns = [&read("src/alpha.py")[..], &answer, SUMMARY];
    let (mut agent, model) = agent_with_window(root, &turns);
    let first = ask(&mut agent, "Which file in src defines alpha_001?").unwrap();
    assert!(first.compactions.is_empty());
    let c = agent
        .compact(
            Some("the gamma functions"),
            &mut agent_protocol::event::QuietUi,
            &agent_base::cancel::CancelToken::new(),
        )
        .unwrap();
    assert!(c.compacted, "{c:?}");
    let asked = last_user_message(model.requests().last().unwrap()).to_string();
    assert!(
        asked.contains("Focus the summary on: the gamma functions"),
        "{asked}"
    );
}
