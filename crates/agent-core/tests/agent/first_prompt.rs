//! The first prompt stays the same from run to run while the workspace
//! does (issue 55): a busier machine measures a slower prefill rate, and a
//! rate within twice the one the sizes were chosen at leaves every byte
//! before the question as it was, so the prompt cache on disk holds it all.
//! A map sized smaller afresh is the larger one cut short, so the cache
//! still holds what came before the cut.

use std::path::Path;

use agent_core::{Agent, AgentConfig, FirstPrompt};

use crate::scripted::{ask, finish, repo, Recorder};

const QUESTION: &str = "Where are the shapes' areas computed?";
/// An 8k window: the map may take 655 tokens at most.
const CONTEXT: usize = 8192;

/// The scripted repository with enough code that the map fills more than
/// its smallest budget.
fn workspace() -> tempfile::TempDir {
    let dir = repo();
    for i in 0..40 {
        let code = format!(
            "class Shape{i}:\n    def area_{i}(self, width, height):\n        return width * height * {i}\n\n    def perimeter_{i}(self, width, height):\n        return 2 * (width + height) + {i}\n\n\ndef make_shape_{i}(kind):\n    return Shape{i}()\n"
        );
        std::fs::write(dir.path().join(format!("src/shape_{i}.py")), code).unwrap();
    }
    dir
}

/// A fresh agent on `dir` (as a new process would be) whose model prefills
/// at `rate` tokens/s: its first prompt and the sizes it was given.
/// `record`: the sizes chosen are kept for the next run.
fn first_prompt(dir: &Path, rate: f64, record: bool) -> (String, FirstPrompt) {
    let answer = finish("In src/shape_*.py.");
    let model = Recorder::with_prefill_rate(&[&answer], CONTEXT, rate);
    let config = AgentConfig {
        record,
        ..AgentConfig::new(dir)
    };
    agent_base::paths::isolate_for_tests();
    let mut agent = Agent::new(Box::new(model.clone()), config, None).unwrap();
    let outcome = ask(&mut agent, QUESTION).unwrap();
    (model.prompts()[0].clone(), outcome.first_prompt.unwrap())
}

/// The prompt up to the question.
fn before_question(prompt: &str) -> &str {
    &prompt[..prompt.find(QUESTION).unwrap()]
}

/// The session's context in the prompt: environment and map.
fn context(prompt: &str) -> &str {
    let start = prompt.find("<context>\n").unwrap();
    let end = prompt.find("\n</context>").unwrap();
    &prompt[start..end]
}

#[test]
fn a_rate_within_twice_the_kept_one_leaves_the_first_prompt_byte_identical() {
    let dir = workspace();
    // The fixed part (system prompt, tools, environment), as sized: from a
    // run that keeps nothing.
    let (_, probe) = first_prompt(dir.path(), 1e6, false);
    assert_eq!(probe.map_tokens, 655, "{probe:?}");
    // A rate that affords the fixed part, the floors and 60% of the room
    // above them: a level between the floors and the caps.
    let room = (655 - 256) + 2 * 120;
    let rate = (probe.fixed_tokens + 256 + 2 * 120 + room * 6 / 10) as f64 / 20.0;

    let (quiet, sizes) = first_prompt(dir.path(), rate, true);
    assert!(!sizes.kept, "{sizes:?}");
    assert!(
        sizes.map_tokens > 256 && sizes.map_tokens < 655,
        "{sizes:?}"
    );
    assert!(quiet.contains("Repository map"), "{quiet}");
    // Busier: 1.6x slower, then 1.9x slower. Sized afresh the map would be
    // smaller; kept, the prompt is the same up to the question.
    for slower in [1.6, 1.9] {
        let (busy, busy_sizes) = first_prompt(dir.path(), rate / slower, true);
        assert!(busy_sizes.kept, "{slower}: {busy_sizes:?}");
        assert_eq!(busy_sizes.map_tokens, sizes.map_tokens);
        assert_eq!(before_question(&busy), before_question(&quiet), "{slower}");
    }

    // Sized afresh at the slower rate (the kept sizes gone): a smaller map,
    // and the context is the quiet one's cut short.
    let kept = agent_base::paths::state_dir(dir.path()).join("cache/first_prompt.json");
    std::fs::remove_file(kept).unwrap();
    let (lean, lean_sizes) = first_prompt(dir.path(), rate / 1.9, false);
    assert!(lean_sizes.map_tokens < sizes.map_tokens, "{lean_sizes:?}");
    let (small, large) = (context(&lean), context(&quiet));
    assert!(small.len() < large.len(), "{small}\n---\n{large}");
    assert!(large.starts_with(small), "{small}\n---\n{large}");
    assert!(
        large[small.len()..].starts_with('\n'),
        "cut at a line's end"
    );
}
