//! The context window kept, through the real binary: a large attached file
//! with the real 135M model at its 8,192-token window, a long chat of large
//! `@` mentions that compacts on its own, and the real llama-server started
//! with a 4,096-token window, which refuses any prompt past it.

use crate::agent::{agent_in, json_of, repo};
use crate::common::{self, LlamaServer};

/// Python source of about `bytes` bytes, in functions that differ.
fn python(bytes: usize, name: &str) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "def {name}_{i}(request, limit={i}):\n    \"\"\"Handles case {i}: checks the limit, then scales.\"\"\"\n    if request.size > limit:\n        raise ValueError('too large: %d' % request.size)\n    return request.value * {i}\n\n\n"
        ));
        i += 1;
    }
    out
}

/// The `event` events of the workspace's trace.
fn traced(dir: &std::path::Path, event: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(common::state_dir(dir).join("logs/trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == event)
        .collect()
}

/// A request that ended with an answer or the evidence (exit 0 or 3),
/// never with an over-window error; its stderr.
fn assert_answered(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    assert!(!stderr.contains("context window holds"), "{stderr}");
    stderr
}

/// Each request's budget in the trace is within its window.
fn assert_every_request_fits(dir: &std::path::Path, window: u64) {
    let sent = traced(dir, "llm_request");
    assert!(!sent.is_empty(), "no request to the model");
    for r in &sent {
        let b = &r["budget"];
        let used = b["fixed"].as_u64().unwrap()
            + b["conversation"].as_u64().unwrap()
            + b["new"].as_u64().unwrap();
        assert_eq!(b["window"], window, "{r}");
        assert!(used + b["reserve"].as_u64().unwrap() <= window, "{r}");
    }
}

#[test]
fn a_146_kb_attachment_is_fitted_to_the_real_models_window() {
    let dir = repo();
    let big = dir.path().join("big.py");
    std::fs::write(&big, python(146 * 1024, "handler")).unwrap();
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--max-steps", "2", "--max-tokens", "96"])
        .arg("--model")
        .arg(common::tiny_model())
        .arg("-f")
        .arg(&big)
        .arg("Explain what big.py does")
        .output()
        .unwrap();
    assert_answered(&out);
    let v = json_of(&out);
    let budget = &v["budget"];
    assert_eq!(budget["window"], 8192, "{v}");
    assert!(budget["cut"].as_u64().unwrap() > 20_000, "{budget}");
    assert_every_request_fits(dir.path(), 8192);
}

/// Twenty requests: every fourth mentions a file of some 3,000 tokens with
/// `@`, every fourth asks to read one, the others are short follow-ups. The
/// conversation passes 75% of the window after each mention and is
/// compacted (by the model's summary, or from the turns' own record when
/// the 135M model's is none), and no prompt passes the window. Then
/// `/compact` on what is left, and `/tokens`. (About 8 minutes on one core:
/// each mention is a prefill of some 3,000 new tokens.)
#[test]
fn a_long_chat_of_large_mentions_never_overflows_and_compacts() {
    let dir = repo();
    let root = dir.path();
    let names = ["alpha", "beta", "gamma", "delta"];
    for name in names {
        std::fs::write(root.join(format!("{name}.py")), python(10 * 1024, name)).unwrap();
    }
    let mut input = String::new();
    for turn in 0..20 {
        let name = names[(turn / 4) % 4];
        input.push_str(&match turn % 4 {
            0 => format!("What does {name}_{turn} in @{name}.py check?\n"),
            2 => format!("Read {name}.py and say what {name}_{turn} returns.\n"),
            _ => format!("Is {name}_{turn} the one that raises?\n"),
        });
    }
    input.push_str("/compact\n/tokens\n/exit\n");
    let out = common::output_with_input(
        agent_in(root)
            .args([
                "chat",
                "--mode",
                "yolo",
                "--max-steps",
                "2",
                "--max-tokens",
                "32",
            ])
            .arg("--model")
            .arg(common::tiny_model()),
        input.as_bytes(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    common::assert_success(&out);
    assert!(!err.contains("context window holds"), "{err}");
    let audit = std::fs::read_to_string(common::state_dir(root).join("logs/audit.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .collect();
    assert_eq!(
        events.iter().filter(|e| e["event"] == "final").count(),
        20,
        "every request ended: {err}"
    );
    let compacted = |trigger: &str| {
        events
            .iter()
            .filter(|e| {
                e["event"] == "compact" && e["trigger"] == trigger && e["compacted"] == true
            })
            .count()
    };
    assert!(compacted("auto") >= 2, "{err}");
    assert_eq!(compacted("request"), 1, "/compact: {err}");
    assert!(err.contains("last prompt:"), "{err}");
    assert_every_request_fits(root, 8192);
}

#[test]
fn a_server_with_a_4096_token_window_is_asked_within_it() {
    let Some(binary) = std::env::var_os("AGENT_TEST_LLAMA_SERVER") else {
        agent_test_support::skip!("AGENT_TEST_LLAMA_SERVER is set by scripts/test");
    };
    let dir = repo();
    let log = dir.path().join(".git/llama-server.log");
    let args: Vec<&std::ffi::OsStr> = ["-c", "4096", "--threads", "2", "--parallel", "1"]
        .iter()
        .map(std::ffi::OsStr::new)
        .collect();
    let server = LlamaServer::start(&binary, &args, std::fs::File::create(&log).unwrap().into());
    let big = dir.path().join("big.py");
    std::fs::write(&big, python(60 * 1024, "handler")).unwrap();
    // No --ctx-size: the window is the server's own, from its /props.
    let out = agent_in(dir.path())
        .args(["ask", "--json", "--max-steps", "2", "--max-tokens", "64"])
        .args(["--server", &format!("{}/v1", server.url)])
        .arg("-f")
        .arg(&big)
        .arg("What does handler_40 check?")
        .output()
        .unwrap();
    let stderr = assert_answered(&out);
    assert!(!stderr.contains("model server"), "{stderr}");
    assert_every_request_fits(dir.path(), 4096);
    // The server's own count: every prompt it took fits its window.
    for response in traced(dir.path(), "llm_response") {
        let prompt = response["prompt_tokens"].as_u64().unwrap();
        assert!(prompt > 0 && prompt + 64 <= 4096, "{response}");
    }
}
