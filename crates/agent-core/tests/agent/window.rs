//! The context window kept, as a property: for random sizes of every part
//! of a request (attached files, the user's words, files read, matches
//! found) and windows from 2k to 128k tokens, every prompt the agent sends,
//! counted with the real model's tokenizer and chat template (SmolLM2's own,
//! and Qwen2.5's with its tools), fits the window minus the reply's reserve,
//! and the user's words reach the model whole.

use std::sync::{Arc, Mutex};

use agent_base::cancel::CancelToken;
use agent_core::{Agent, AgentConfig};
use agent_engine::engine::{EngineConfig, LlamaEngine};
use agent_llm::{Completion, CompletionRequest, Event, Flow, LlmError, Provider, ToolCall};
use agent_policy::Mode;
use agent_protocol::event::QuietUi;
use agent_protocol::{Attachment, Request};
use agent_tools::AlwaysApprove;
use serde_json::json;

/// What one prompt spent, against what it could.
#[derive(Debug, Clone)]
struct Sent {
    tokens: usize,
    limit: usize,
    words_whole: bool,
    shape: String,
}

/// The real model's tokenizer and template under a window of any size: the
/// engine counts, the replies are scripted (reads, a search, an answer).
struct Windowed {
    engine: Arc<Mutex<LlamaEngine>>,
    window: usize,
    words: String,
    replies: Vec<(String, serde_json::Value)>,
    sent: Arc<Mutex<Vec<Sent>>>,
}

impl Provider for Windowed {
    fn name(&self) -> String {
        "windowed".into()
    }
    fn context_size(&self) -> usize {
        self.window
    }
    fn answers_side_requests(&self) -> bool {
        false
    }
    fn supports_grammar(&self) -> bool {
        true
    }
    fn native_calls(&self) -> bool {
        self.engine.lock().unwrap().native_calls()
    }
    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        self.engine.lock().unwrap().count_tokens(text)
    }
    fn count_prompt_tokens(
        &self,
        messages: &[agent_llm::Message],
        tools: &[agent_llm::ToolSpec],
    ) -> Result<usize, LlmError> {
        self.engine
            .lock()
            .unwrap()
            .count_prompt_tokens(messages, tools)
    }
    fn complete(
        &mut self,
        request: &CompletionRequest,
        _: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let tokens = self.count_prompt_tokens(&request.messages, &request.tools)?;
        let limit = self.window - request.max_tokens.min(self.window / 4);
        // A summary request carries a piece of the history, not the request.
        let summary = request
            .messages
            .last()
            .is_some_and(|m| m.content.contains(agent_core::COMPACT_PROMPT));
        let words_whole = summary
            || request
                .messages
                .iter()
                .any(|m| m.content.contains(&self.words));
        let shape = request
            .messages
            .iter()
            .map(|m| format!("{:?} {}: {:.300}", m.role, m.content.len(), m.content))
            .collect::<Vec<_>>()
            .join("\n");
        self.sent.lock().unwrap().push(Sent {
            tokens,
            limit,
            words_whole,
            shape,
        });
        let (tool, args) = if self.replies.is_empty() {
            (
                "finish".to_string(),
                json!({"answer": "It handles requests."}),
            )
        } else {
            self.replies.remove(0)
        };
        let mut completion = Completion {
            prompt_tokens: tokens,
            ..Completion::default()
        };
        if self.native_calls() && tool != "finish" {
            completion.tool_calls = vec![ToolCall::new("c1", &tool, args)];
        } else if self.native_calls() {
            completion.content = args["answer"].as_str().unwrap_or_default().into();
            completion.text = completion.content.clone();
        } else {
            completion.text = json!({"thought": "next", "tool": tool, "args": args}).to_string();
        }
        Ok(completion)
    }
}

/// A small deterministic generator (xorshift): the cases are the same on
/// every run, so a failure can be run again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Python source of about `bytes` bytes: many small functions.
fn python(bytes: usize, seed: u64) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "def handler_{i}(request):\n    \"\"\"Handles case {i} of {seed}.\"\"\"\n    value = request.get('{i}')\n    return value * {i}\n\n"
        ));
        i += 1;
    }
    out
}

fn engine(template: Option<&str>) -> Arc<Mutex<LlamaEngine>> {
    let chat_template_file = template.map(|name| {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../agent-chat/tests/fixtures/templates")
            .join(name)
    });
    Arc::new(Mutex::new(
        LlamaEngine::load(&EngineConfig {
            ctx_size: Some(512),
            chat_template_file,
            ..EngineConfig::new(crate::common::tiny_model())
        })
        .expect("the tiny model loads"),
    ))
}

/// One random case: a workspace of files, a request with attachments, a
/// script of reads; every prompt is recorded.
fn case(rng: &mut Rng, engine: &Arc<Mutex<LlamaEngine>>) -> (usize, Vec<Sent>) {
    let dir = crate::scripted::repo();
    let window = 2048usize << rng.below(7);
    let files = 1 + rng.below(3) as usize;
    for f in 0..files {
        let size = 1 + rng.below(250 * 1024) as usize;
        std::fs::write(
            dir.path().join(format!("src/part_{f}.py")),
            python(size, rng.next()),
        )
        .unwrap();
    }
    let attachments: Vec<Attachment> = (0..rng.below(4))
        .map(|i| Attachment {
            name: format!("attached_{i}.py"),
            text: python(rng.below(256 * 1024) as usize, rng.next()),
        })
        .collect();
    let padding = "and also tell me why it matters ".repeat(rng.below(12) as usize);
    let words = format!(
        "Explain what handler_{} does {padding}in these files",
        rng.below(3000)
    );
    let replies = vec![
        ("read_file".to_string(), json!({"path": "src/part_0.py"})),
        ("grep".to_string(), json!({"pattern": "def handler_1"})),
        (
            "read_file".to_string(),
            json!({"path": format!("src/part_{}.py", files - 1), "start_line": 1 + rng.below(500)}),
        ),
    ];
    let sent = Arc::new(Mutex::new(Vec::new()));
    let model = Windowed {
        engine: engine.clone(),
        window,
        words: words.clone(),
        replies,
        sent: sent.clone(),
    };
    let config = AgentConfig {
        mode: Mode::Yolo,
        repo_map: false,
        max_steps: 4,
        ..AgentConfig::new(dir.path())
    };
    agent_base::paths::isolate_for_tests();
    let mut agent = Agent::new(Box::new(model), config, None).unwrap();
    let outcome = agent
        .handle(
            Request::new(words, attachments),
            &mut QuietUi,
            &mut AlwaysApprove,
            &CancelToken::new(),
        )
        .unwrap();
    assert!(outcome.budget.used() <= window, "{:?}", outcome.budget);
    let sent = sent.lock().unwrap().clone();
    (window, sent)
}

#[test]
fn every_prompt_fits_the_window_and_the_users_words_stay_whole() {
    let engines = [engine(None), engine(Some("qwen2.5-instruct.jinja"))];
    let mut rng = Rng(0x5eed_1234_abcd);
    for n in 0..24 {
        let engine = &engines[n % 2];
        let (window, sent) = case(&mut rng, engine);
        assert!(!sent.is_empty(), "case {n}: no prompt was sent");
        for (step, s) in sent.iter().enumerate() {
            assert!(
                s.tokens <= s.limit,
                "case {n} (window {window}), step {}: {} tokens sent, {} fit:\n{}",
                step + 1,
                s.tokens,
                s.limit,
                s.shape
            );
            assert!(
                s.words_whole,
                "case {n} (window {window}), step {}: the request was cut:\n{}",
                step + 1,
                s.shape
            );
        }
    }
}
