//! The intent gate: does this request need the tool loop at all?
//!
//! Heuristics answer first (free, instant, and right for the clear cases);
//! only when they are unsure does the model pick a label, constrained by a
//! grammar to the label set. Chat and capability questions skip the loop;
//! repository questions get read-only tools; coding tasks get every tool.
//!
//! The gate knows the workspace ([`Knowledge`]): a request that names what
//! the repository holds ([`crate::vocabulary`]) is about it even without a
//! path ("how does the session cookie get its expiry date" in flask), and a
//! request that names a tool of an MCP server gets that tool ("close ticket
//! 7": the tool acts, so every tool; "what's in ticket 7": read-only).

use std::collections::HashSet;

use serde::Serialize;

use agent_base::cancel::CancelToken;
use agent_llm::{CompletionRequest, Flow, Grammar, Message, Provider};
use agent_tools::{Access, ToolSpec};

use crate::vocabulary::{self, AnchorKind, Vocabulary};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Label {
    CodingTask,
    RepoQuestion,
    CapabilityQuery,
    GeneralChat,
    Uncertain,
}

impl Label {
    pub const ALL: [Label; 5] = [
        Label::CodingTask,
        Label::RepoQuestion,
        Label::CapabilityQuery,
        Label::GeneralChat,
        Label::Uncertain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Label::CodingTask => "CODING_TASK",
            Label::RepoQuestion => "REPO_QUESTION",
            Label::CapabilityQuery => "CAPABILITY_QUERY",
            Label::GeneralChat => "GENERAL_CHAT",
            Label::Uncertain => "UNCERTAIN",
        }
    }

    fn parse(s: &str) -> Option<Label> {
        Label::ALL.into_iter().find(|l| l.as_str() == s.trim())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Intent {
    pub label: Label,
    /// 0..1; from the heuristic's margin, or fixed for a model decision.
    pub confidence: f32,
    pub reason: String,
    /// The tool (beyond the built-in ones) the request names, if any: the
    /// request is for it, not for the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// What the gate knows of the workspace besides the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Knowledge<'a> {
    /// The repository's words (None: unknown, as without a repo map).
    pub vocabulary: Option<&'a Vocabulary>,
    /// Tools beyond the built-in ones (MCP servers'), by name and description.
    pub tools: &'a [ToolSpec],
}

/// Heuristic confidence at or above which the model is not consulted.
pub const CONFIDENT: f32 = 0.6;

/// Classifies `request`; `model` is asked only when the heuristics are
/// unsure (and when it is given). `system` is the session's system prompt:
/// the label request starts with it, so the model's KV cache keeps the
/// session's prefix instead of being overwritten by a one-off prompt.
pub fn classify(
    request: &str,
    knowledge: &Knowledge<'_>,
    model: Option<&mut dyn Provider>,
    system: Option<&Message>,
    cancel: &CancelToken,
) -> Intent {
    let guess = heuristic(request, knowledge);
    if guess.confidence >= CONFIDENT {
        return guess;
    }
    let Some(model) = model else {
        return guess;
    };
    match ask_model(request, knowledge, model, system, cancel) {
        Ok(Some(label)) => Intent {
            label,
            confidence: 0.5,
            reason: format!(
                "model decided (heuristics unsure: {} at {:.2})",
                guess.label.as_str(),
                guess.confidence
            ),
            tool: None,
        },
        Ok(None) | Err(_) => guess,
    }
}

fn ask_model(
    request: &str,
    knowledge: &Knowledge<'_>,
    model: &mut dyn Provider,
    system: Option<&Message>,
    cancel: &CancelToken,
) -> anyhow::Result<Option<Label>> {
    let labels: Vec<&str> = Label::ALL.iter().map(|l| l.as_str()).collect();
    let mut instructions = "Classify the user's message for a coding assistant working in a code repository. Labels:\n\
CODING_TASK: asks to change, add, fix, refactor or write code or files, or to act with a tool.\n\
REPO_QUESTION: asks about this repository's code, files, or behaviour, or to look something up with a tool.\n\
CAPABILITY_QUERY: asks what the assistant is or can do.\n\
GENERAL_CHAT: greetings, thanks, or general questions not about this repository.\n\
UNCERTAIN: none of these clearly.\n"
        .to_string();
    if let Some(known) = knowledge.vocabulary.map(|v| v.anchors(request)) {
        let named: Vec<&str> = known.iter().map(|a| a.text.as_str()).collect();
        instructions.push_str(&if named.is_empty() {
            "The message names nothing this repository defines.\n".to_string()
        } else {
            format!(
                "Words of the message this repository defines: {}.\n",
                named.join(", ")
            )
        });
    }
    if !knowledge.tools.is_empty() {
        instructions.push_str("Tools besides the code tools:\n");
        for tool in knowledge.tools {
            instructions.push_str(&format!("- {}: {}\n", tool.name, tool.description));
        }
    }
    instructions.push_str("Reply with the label only.");
    let messages = match system {
        Some(system) => vec![
            system.clone(),
            Message::user(format!("{instructions}\n\nMessage: {request}")),
        ],
        None => vec![Message::system(instructions), Message::user(request)],
    };
    let mut req = CompletionRequest::new(messages);
    req.max_tokens = 12;
    req.grammar = Some(Grammar::one_of(&labels));
    // A label, not a problem to think through.
    req.thinking = Some(false);
    let completion = model.complete(&req, &mut |_| {
        if cancel.is_cancelled() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    })?;
    Ok(Label::parse(completion.text.trim_matches('"')))
}

const CODING_VERBS: &[&str] = &[
    "add",
    "fix",
    "implement",
    "rename",
    "refactor",
    "change",
    "update",
    "remove",
    "delete",
    "write",
    "create",
    "replace",
    "edit",
    "modify",
    "make",
    "move",
    "convert",
    "migrate",
    "bump",
    "optimize",
    "optimise",
    "extract",
    "inline",
    "introduce",
    "support",
    "handle",
    "patch",
    "repair",
    "correct",
    "run",
    "test",
    "debug",
    "swap",
    "set",
    "rewrite",
    "split",
    "merge",
    "simplify",
    "clean",
    "revert",
    "upgrade",
    "downgrade",
    "enable",
    "disable",
    "reorder",
    "document",
    "format",
    "allow",
    "deprecate",
    "wrap",
    "ensure",
    "log",
    "stop",
    "pull",
    "drop",
    "print",
    "raise",
    "reject",
    "validate",
    "expose",
    "cache",
    "speed",
    "turn",
    "port",
];

const QUESTION_STARTS: &[&str] = &[
    "what",
    "what's",
    "whats",
    "where",
    "where's",
    "wheres",
    "whre",
    "which",
    "who",
    "who's",
    "whos",
    "why",
    "how",
    "how's",
    "when",
    "does",
    "do",
    "did",
    "is",
    "are",
    "was",
    "were",
    "has",
    "have",
    "can",
    "could",
    "explain",
    "describe",
    "show",
    "list",
    "find",
    "tell",
    "summarize",
    "summarise",
];

const REPO_WORDS: &[&str] = &[
    "this repo",
    "the repo",
    "repository",
    "codebase",
    "the code",
    "this code",
    "this project",
    "the project",
    "function",
    "method",
    "class",
    "struct",
    "module",
    "file",
    "defined",
    "definition",
    "implemented",
    "called",
    "test",
    "crate",
    "package",
    "variable",
    "trait",
    "enum",
    "import",
    "config",
    "bug",
    "error",
];

const CAPABILITY_PHRASES: &[&str] = &[
    "what can you do",
    "who are you",
    "what are you",
    "your tools",
    "what tools",
    "which tools",
    "can you edit",
    "can you run",
    "are you able",
    "how do i use you",
    "help me use",
    "what model",
];

const CHAT_PHRASES: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank you",
    "thx",
    "good morning",
    "good evening",
    "bye",
    "ok",
    "cool",
    "great",
    "lol",
    "sorry",
    "nice",
];

/// Openings and endings of general-knowledge questions and requests for
/// text that is no change ("what is a monad, briefly", "tell me a joke"):
/// chat, unless the request names something of the workspace.
const GENERAL_STARTS: &[&str] = &[
    "what is a ",
    "what is an ",
    "whats a ",
    "whats an ",
    "what's a ",
    "what's an ",
    "tell me ",
    "recommend ",
    "write me a ",
    "give me a ",
    "what year ",
    "who invented ",
    "who wrote ",
];
const GENERAL_PHRASES: &[&str] = &[
    "difference between",
    "like i'm five",
    "like im five",
    "like im 5",
    "eli5",
    "briefly",
    "how do you say",
    "in one sentence",
    "in two sentences",
    "in three sentences",
    "in a few sentences",
    "in one line",
    "in a few words",
    "in one word",
];

/// Requests that say what the user wants without an imperative.
const WISH_STARTS: &[&str] = &[
    "i need ",
    "i'd like ",
    "id like ",
    "i want ",
    "we need ",
    "it would be nice if ",
    "would be nice if ",
];

/// Verbs in tool names that say nothing about what the tool is for.
const GENERIC_TOOL_VERBS: &[&str] = &[
    "get", "list", "show", "query", "lookup", "look", "find", "fetch", "search", "trigger", "run",
    "set", "do", "make", "read", "write", "create", "update", "delete", "add", "remove",
];

/// Looks like code: `snake_case`, `CamelCase`, `a.b`, `f()`, `path/to.rs`.
fn has_code_token(text: &str) -> bool {
    !vocabulary::code_tokens(text).is_empty() || text.contains("()") || text.contains('`')
}

/// The first word of every clause but the first: clauses end at `,`, `;`,
/// `:` and at a full stop followed by a space (not the one in `helpers.py`).
fn clause_starts(text: &str) -> impl Iterator<Item = &str> {
    text.split([',', ';', ':'])
        .flat_map(|part| part.split(". "))
        .skip(1)
        .filter_map(|clause| {
            clause
                .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '_')
                .find(|w| !w.is_empty())
        })
}

/// The tool a request names by the words of the tool's name (`ticket` for
/// `close_ticket`) and description. For a question, a read-only tool wins
/// a tie; for anything else a tool that acts.
fn named_tool<'a>(words: &[String], question: bool, tools: &'a [ToolSpec]) -> Option<&'a ToolSpec> {
    let stems: HashSet<String> = words
        .iter()
        .filter(|w| vocabulary::is_content_word(w))
        .map(|w| vocabulary::stem(w))
        .collect();
    let generic: HashSet<String> = GENERIC_TOOL_VERBS
        .iter()
        .map(|v| vocabulary::stem(v))
        .collect();
    let mut scored: Vec<(u32, &ToolSpec)> = Vec::new();
    for tool in tools {
        // `mcp__tickets__close_ticket` → `close_ticket`; "[MCP server x] Close a ..." → "Close a ...".
        let name = tool.name.rsplit("__").next().unwrap_or(tool.name);
        let parts: HashSet<String> = vocabulary::identifier_words(name)
            .into_iter()
            .filter(|p| vocabulary::is_content_word(p))
            .collect();
        let description = tool
            .description
            .strip_prefix('[')
            .and_then(|d| d.split_once("] "))
            .map_or(tool.description, |(_, d)| d);
        let described: HashSet<String> = vocabulary::words(description)
            .iter()
            .filter(|w| vocabulary::is_content_word(w))
            .map(|w| vocabulary::stem(w))
            .filter(|s| !parts.contains(s))
            .collect();
        let nouns = stems
            .iter()
            .filter(|s| parts.contains(*s) && !generic.contains(*s))
            .count() as u32;
        let verbs = stems
            .iter()
            .filter(|s| parts.contains(*s) && generic.contains(*s))
            .count() as u32;
        let in_description = stems.iter().filter(|s| described.contains(*s)).count() as u32;
        let score = 2 * nouns + verbs + in_description;
        if (nouns > 0 && score >= 2) || verbs + in_description >= 2 {
            scored.push((score, tool));
        }
    }
    let best = scored.iter().map(|(s, _)| *s).max()?;
    let reads = |t: &&ToolSpec| t.access == Access::Read;
    let top: Vec<&ToolSpec> = scored
        .iter()
        .filter(|(s, _)| *s == best)
        .map(|(_, t)| *t)
        .collect();
    if question {
        return top.iter().copied().find(reads).or(top.first().copied());
    }
    // A request that is no question acts: a tool that does, if one comes close.
    scored
        .iter()
        .filter(|(s, t)| *s + 1 >= best && !reads(t))
        .map(|(_, t)| *t)
        .next()
        .or(top.first().copied())
}

/// Scores each label from surface cues and what the workspace holds;
/// confidence is the winner's share.
pub fn heuristic(request: &str, knowledge: &Knowledge<'_>) -> Intent {
    let text = request.trim().to_lowercase();
    let words = vocabulary::words(&text);
    let first = words.first().map(String::as_str).unwrap_or("");
    let code = has_code_token(request);
    let repo_words = REPO_WORDS.iter().filter(|w| text.contains(**w)).count();

    let mut scores = [0f32; 5]; // in Label::ALL order
    let mut reasons: Vec<String> = Vec::new();
    let (coding, repo, capability, chat) = (0, 1, 2, 3);

    let anchors = knowledge
        .vocabulary
        .map(|v| v.anchors(request))
        .unwrap_or_default();
    let specific = anchors.iter().any(|a| a.kind.is_specific());
    // Something definite of the workspace to act on ("the confirm prompt").
    let target = code
        || anchors
            .iter()
            .any(|a| a.kind.is_specific() || a.kind == AnchorKind::Definite);
    let general = !specific
        && !code
        && (GENERAL_STARTS.iter().any(|p| text.starts_with(p))
            || GENERAL_PHRASES.iter().any(|p| text.contains(p))
            || text.trim_end_matches(['?', '.', '!']).ends_with(" mean"));

    let imperative = !general
        && (CODING_VERBS.contains(&first)
            || (matches!(first, "please" | "pls")
                && words
                    .get(1)
                    .is_some_and(|w| CODING_VERBS.contains(&w.as_str()))));
    // "In src/app.py, make ..." / "When the cache is cold, add ...": an
    // imperative after an opening phrase.
    let later_imperative = (!imperative
        && !text.ends_with('?')
        && (first == "when" || !QUESTION_STARTS.contains(&first)))
    .then(|| clause_starts(&text).find(|w| CODING_VERBS.contains(w)))
    .flatten();
    let you = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "you" | "your" | "u" | "ur" | "yourself" | "you're" | "youre"
        )
    });
    let about_assistant = CAPABILITY_PHRASES.iter().any(|p| text.contains(p));
    // "can you add type hints to db.py": a request, though phrased as a
    // question ("can you run tests?" without a target asks what it can do).
    let polite = (!about_assistant || target)
        && words
            .iter()
            .take(6)
            .any(|w| CODING_VERBS.contains(&w.as_str()))
        && (text.contains("can you")
            || text.contains("could you")
            || text.contains("can u")
            || text.contains("would you")
            || words.iter().any(|w| w == "please" || w == "pls"));
    let polite_task = !imperative && later_imperative.is_none() && polite && target;
    let wish = WISH_STARTS.iter().any(|p| text.starts_with(p)) && (code || !anchors.is_empty());
    let question = later_imperative.is_none()
        && !polite_task
        && (QUESTION_STARTS.contains(&first) || text.ends_with('?'));

    if let Some(tool) = named_tool(&words, question, knowledge.tools) {
        let label = if tool.access == Access::Read {
            Label::RepoQuestion
        } else {
            Label::CodingTask
        };
        return Intent {
            label,
            confidence: 0.9,
            reason: format!(
                "names the tool `{}`{}",
                tool.name,
                if tool.access == Access::Read {
                    " (read-only)"
                } else {
                    ""
                }
            ),
            tool: Some(tool.name.to_string()),
        };
    }

    if imperative {
        scores[coding] += 5.0;
        reasons.push(format!("starts with the imperative `{first}`"));
    } else if let Some(verb) = later_imperative {
        scores[coding] += 5.0;
        reasons.push(format!("the imperative `{verb}` after an opening phrase"));
    } else if polite_task {
        scores[coding] += 5.0;
        reasons.push("a polite request to change something of the workspace".into());
    } else if wish {
        scores[coding] += 4.0;
        reasons.push("says what the user wants changed".into());
    } else if polite {
        scores[coding] += 3.0;
        reasons.push("a polite request to change something".into());
    }
    if question {
        scores[repo] += 1.0;
        scores[chat] += 1.0;
        reasons.push("phrased as a question".into());
    }
    if code {
        scores[repo] += if question { 3.0 } else { 2.0 };
        scores[coding] += 1.0;
        reasons.push("mentions code identifiers or paths".into());
    }
    if repo_words > 0 {
        scores[repo] += 1.0 + repo_words as f32 * 0.5;
        scores[coding] += 0.5;
        reasons.push(format!("{repo_words} repository word(s)"));
    }
    if !anchors.is_empty() {
        let weight: f32 = anchors.iter().map(|a| a.kind.weight()).sum();
        let acting = imperative || later_imperative.is_some() || polite_task || wish;
        if question || !acting {
            scores[repo] += weight.min(6.0);
        }
        let named: Vec<&str> = anchors.iter().take(4).map(|a| a.text.as_str()).collect();
        reasons.push(format!(
            "names what the workspace holds: {}",
            named.join(", ")
        ));
    }
    if general {
        scores[chat] += 3.0;
        reasons.push("a general-knowledge question".into());
    }
    let greeting = (words.len() <= 4
        && CHAT_PHRASES.iter().any(|p| {
            first == *p
                || text.trim_end_matches(['!', '.']) == *p
                || text.starts_with(&format!("{p} "))
        }))
        || text.contains("how are you")
        || text.contains("how r u");
    if about_assistant {
        scores[capability] += 6.0;
        reasons.push("asks about the assistant itself".into());
    } else if you
        && (question || polite)
        && !target
        && !greeting
        && !text.contains("how do you say")
    {
        scores[capability] += 5.0;
        reasons.push("asks the assistant what it can do".into());
    }
    if greeting {
        scores[chat] += 4.0;
        reasons.push("a greeting or acknowledgement".into());
    }
    if question && !code && repo_words == 0 && anchors.is_empty() {
        scores[chat] += 1.0;
        reasons.push(if knowledge.vocabulary.is_some() {
            "names nothing the workspace holds".into()
        } else {
            "nothing points at the repository".into()
        });
    }

    let total: f32 = scores.iter().sum();
    let (best, &top) = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("five scores");
    if total <= 0.0 {
        return Intent {
            label: Label::Uncertain,
            confidence: 0.0,
            reason: "no cue".into(),
            tool: None,
        };
    }
    Intent {
        label: Label::ALL[best],
        confidence: top / total,
        reason: reasons.join("; "),
        tool: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_llm::scripted::ScriptedProvider;
    use agent_repomap::tags::Tagger;
    use agent_repomap::FileTags;
    use serde_json::json;

    fn label(text: &str) -> Label {
        label_in(text, &Knowledge::default())
    }

    fn label_in(text: &str, knowledge: &Knowledge<'_>) -> Label {
        let i = heuristic(text, knowledge);
        assert!(
            i.confidence >= CONFIDENT,
            "{text:?} → {:?} only at {:.2} ({})",
            i.label,
            i.confidence,
            i.reason
        );
        i.label
    }

    /// A small flask-like workspace.
    fn flask() -> Vocabulary {
        let files = [
            (
                "src/flask/sessions.py",
                "class SessionMixin:\n    pass\n\nclass NullSession(SessionMixin):\n    pass\n\n\
class SessionInterface:\n    def get_cookie_name(self, app):\n        pass\n    def get_cookie_domain(self, app):\n        pass\n    def get_expiration_time(self, app, session):\n        pass\n    def should_set_cookie(self, app, session):\n        pass\n\n\
class SecureCookieSessionInterface(SessionInterface):\n    def get_signing_serializer(self, app):\n        pass\n",
            ),
            (
                "src/flask/app.py",
                "class Flask:\n    def test_client(self):\n        pass\n    def app_context(self):\n        pass\n    def make_response(self, rv):\n        pass\n",
            ),
            (
                "src/flask/blueprints.py",
                "class Blueprint:\n    def register(self, app):\n        pass\n",
            ),
        ];
        let mut tagger = Tagger::new();
        let tags: Vec<(&str, FileTags)> = files
            .iter()
            .map(|(rel, src)| (*rel, tagger.tag(agent_lang::walk::Lang::Python, src)))
            .collect();
        Vocabulary::from_tags(tags.iter().map(|(r, t)| (*r, t)))
    }

    fn mcp_tool(server: &str, name: &str, description: &str, read_only: bool) -> ToolSpec {
        ToolSpec {
            name: Box::leak(format!("mcp__{server}__{name}").into_boxed_str()),
            description: Box::leak(format!("[MCP server {server}] {description}").into_boxed_str()),
            parameters: json!({"type": "object", "properties": {}}),
            access: if read_only {
                Access::Read
            } else {
                Access::Execute
            },
        }
    }

    #[test]
    fn clear_requests_are_decided_without_the_model() {
        assert_eq!(
            label("Add a timeout parameter to fetch_url in src/net.py"),
            Label::CodingTask
        );
        assert_eq!(
            label("rename parse_config to load_config"),
            Label::CodingTask
        );
        assert_eq!(
            label("Fix the failing test in tests/test_math.py"),
            Label::CodingTask
        );
        assert_eq!(
            label("Where is the function that parses config files defined?"),
            Label::RepoQuestion
        );
        assert_eq!(
            label("What does `retry_backoff` return?"),
            Label::RepoQuestion
        );
        assert_eq!(
            label("In src/flask/helpers.py, make get_debug_flag() also treat 'off' as false."),
            Label::CodingTask
        );
        assert_eq!(
            label("When the cache is cold, add a warm-up step to load_index"),
            Label::CodingTask
        );
        assert_eq!(
            label("In src/net.py, where is the timeout set?"),
            Label::RepoQuestion
        );
        assert_eq!(label("what can you do?"), Label::CapabilityQuery);
        assert_eq!(label("thanks!"), Label::GeneralChat);
        assert_eq!(label("hello"), Label::GeneralChat);
        assert_eq!(label("hello there, how are you?"), Label::GeneralChat);
    }

    #[test]
    fn general_knowledge_is_chat() {
        let i = heuristic("What is the capital of France?", &Knowledge::default());
        assert_eq!(i.label, Label::GeneralChat, "{i:?}");
    }

    #[test]
    fn a_question_naming_what_the_workspace_holds_is_about_it() {
        let vocabulary = flask();
        let here = Knowledge {
            vocabulary: Some(&vocabulary),
            tools: &[],
        };
        for question in [
            "Where is the secret key used to sign sessions?",
            "how does the session cookie get its expiry date",
            "who calls should_set_cookie",
            "what is NullSession for",
            "where does the test client get created",
            "where do blueprints get registered on the app",
        ] {
            assert_eq!(label_in(question, &here), Label::RepoQuestion, "{question}");
        }
        // What names nothing here stays chat, in the same workspace.
        for chat in [
            "What is the capital of France?",
            "whats a mutex",
            "difference between a process and a thread?",
            "how do python decorators work",
            "hello there, how are you?",
        ] {
            assert_eq!(label_in(chat, &here), Label::GeneralChat, "{chat}");
        }
        assert_eq!(
            label_in("can you add a docstring to get_signing_serializer", &here),
            Label::CodingTask
        );
        assert_eq!(
            label_in("can you run tests?", &here),
            Label::CapabilityQuery
        );
        assert_eq!(
            label_in("do you have internet access", &here),
            Label::CapabilityQuery
        );
    }

    #[test]
    fn a_request_naming_a_tool_gets_it() {
        let tools = [
            mcp_tool("zebra", "zebra_lookup", "Look up a zebra code", true),
            mcp_tool(
                "tickets",
                "get_ticket",
                "Show one ticket by number: title, status, assignee and comments",
                true,
            ),
            mcp_tool("tickets", "close_ticket", "Close a ticket by number", false),
        ];
        let with_tools = Knowledge {
            vocabulary: None,
            tools: &tools,
        };
        let zebra = heuristic("What is the zebra code for abc?", &with_tools);
        assert_eq!(zebra.label, Label::RepoQuestion, "{zebra:?}");
        assert_eq!(zebra.tool.as_deref(), Some("mcp__zebra__zebra_lookup"));
        let close = heuristic("Close ticket 7 about the login timeout", &with_tools);
        assert_eq!(close.label, Label::CodingTask, "{close:?}");
        assert_eq!(close.tool.as_deref(), Some("mcp__tickets__close_ticket"));
        let show = heuristic("whats in ticket 12", &with_tools);
        assert_eq!(
            (show.label, show.tool.as_deref()),
            (Label::RepoQuestion, Some("mcp__tickets__get_ticket"))
        );
        // Without the tools these are no tool requests.
        assert_eq!(
            heuristic(
                "Close ticket 7 about the login timeout",
                &Knowledge::default()
            )
            .tool,
            None
        );
    }

    #[test]
    fn unsure_cases_go_to_the_model_and_its_label_is_used() {
        let request = "the thing with the numbers";
        assert!(heuristic(request, &Knowledge::default()).confidence < CONFIDENT);
        let mut model = ScriptedProvider::new(vec!["REPO_QUESTION".into()]);
        let system = Message::system("the session's system prompt");
        let intent = classify(
            request,
            &Knowledge::default(),
            Some(&mut model),
            Some(&system),
            &CancelToken::new(),
        );
        assert_eq!(intent.label, Label::RepoQuestion);
        assert!(intent.reason.contains("model decided"), "{}", intent.reason);
        // The session's system prompt leads, so its KV cache survives the label call.
        assert_eq!(model.requests[0].messages[0], system);
        let grammar = model.requests[0].grammar.as_ref().expect("constrained");
        assert!(grammar.gbnf.contains("\"CODING_TASK\""));
    }

    #[test]
    fn a_nonsense_model_answer_falls_back_to_the_heuristic() {
        let mut model = ScriptedProvider::new(vec!["banana".into()]);
        let request = "the thing with the numbers";
        let intent = classify(
            request,
            &Knowledge::default(),
            Some(&mut model),
            None,
            &CancelToken::new(),
        );
        assert_eq!(
            intent.label,
            heuristic(request, &Knowledge::default()).label
        );
    }
}
