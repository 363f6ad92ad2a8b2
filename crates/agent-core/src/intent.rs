//! The intent gate: does this request need the tool loop at all?
//!
//! Heuristics answer first (free, instant, and right for the clear cases);
//! only when they are unsure does the model pick a label, constrained by a
//! grammar to the label set. Chat and capability questions skip the loop;
//! repository questions get read-only tools; coding tasks get every tool.

use serde::Serialize;

use agent_base::cancel::CancelToken;
use agent_llm::{CompletionRequest, Flow, Grammar, Message, Provider};

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
}

/// Heuristic confidence at or above which the model is not consulted.
pub const CONFIDENT: f32 = 0.6;

/// Classifies `request`; `model` is asked only when the heuristics are
/// unsure (and when it is given). `system` is the session's system prompt:
/// the label request starts with it, so the model's KV cache keeps the
/// session's prefix instead of being overwritten by a one-off prompt.
pub fn classify(
    request: &str,
    model: Option<&mut dyn Provider>,
    system: Option<&Message>,
    cancel: &CancelToken,
) -> Intent {
    let guess = heuristic(request);
    if guess.confidence >= CONFIDENT {
        return guess;
    }
    let Some(model) = model else {
        return guess;
    };
    match ask_model(request, model, system, cancel) {
        Ok(Some(label)) => Intent {
            label,
            confidence: 0.5,
            reason: format!(
                "model decided (heuristics unsure: {} at {:.2})",
                guess.label.as_str(),
                guess.confidence
            ),
        },
        Ok(None) | Err(_) => guess,
    }
}

fn ask_model(
    request: &str,
    model: &mut dyn Provider,
    system: Option<&Message>,
    cancel: &CancelToken,
) -> anyhow::Result<Option<Label>> {
    let labels: Vec<&str> = Label::ALL.iter().map(|l| l.as_str()).collect();
    let instructions = "Classify the user's message for a coding assistant working in a code repository. Labels:\n\
CODING_TASK: asks to change, add, fix, refactor or write code or files.\n\
REPO_QUESTION: asks about this repository's code, files, or behaviour.\n\
CAPABILITY_QUERY: asks what the assistant is or can do.\n\
GENERAL_CHAT: greetings, thanks, or general questions not about this repository.\n\
UNCERTAIN: none of these clearly.\n\
Reply with the label only.";
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
];

const QUESTION_STARTS: &[&str] = &[
    "what",
    "where",
    "which",
    "who",
    "why",
    "how",
    "when",
    "does",
    "do",
    "is",
    "are",
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
    "good morning",
    "good evening",
    "bye",
    "ok",
    "cool",
    "great",
];

/// Looks like code: `snake_case`, `CamelCase`, `a.b`, `f()`, `path/to.rs`.
fn has_code_token(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '?' || c == '`')
        .any(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            let inner_upper =
                w.chars().skip(1).any(|c| c.is_uppercase()) && w.chars().any(|c| c.is_lowercase());
            (w.contains('_') && w.len() > 2)
                || inner_upper
                || w.contains("::")
                || w.ends_with("()")
                || (w.contains('.') && w.rsplit('.').next().is_some_and(is_code_extension))
                || (w.contains('/') && w.len() > 2)
        })
        || text.contains("()")
        || text.contains('`')
}

fn is_code_extension(ext: &str) -> bool {
    matches!(
        ext,
        "rs" | "py"
            | "toml"
            | "md"
            | "js"
            | "ts"
            | "go"
            | "c"
            | "h"
            | "cpp"
            | "java"
            | "json"
            | "yaml"
            | "yml"
            | "sh"
            | "txt"
    )
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

/// Scores each label from surface cues; confidence is the winner's share.
pub fn heuristic(request: &str) -> Intent {
    let text = request.trim().to_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let first = words.first().copied().unwrap_or("");
    let code = has_code_token(request);
    let repo_words = REPO_WORDS.iter().filter(|w| text.contains(**w)).count();

    let mut scores = [0f32; 5]; // in Label::ALL order
    let mut reasons: Vec<String> = Vec::new();
    let (coding, repo, capability, chat) = (0, 1, 2, 3);

    let imperative = CODING_VERBS.contains(&first)
        || (first == "please" && words.get(1).is_some_and(|w| CODING_VERBS.contains(w)));
    // "In src/app.py, make ..." / "When the cache is cold, add ...": an
    // imperative after an opening phrase.
    let later_imperative = (!imperative
        && !text.ends_with('?')
        && (first == "when" || !QUESTION_STARTS.contains(&first)))
    .then(|| clause_starts(&text).find(|w| CODING_VERBS.contains(w)))
    .flatten();
    let question =
        later_imperative.is_none() && (QUESTION_STARTS.contains(&first) || text.ends_with('?'));
    if imperative {
        scores[coding] += 5.0;
        reasons.push(format!("starts with the imperative `{first}`"));
    } else if let Some(verb) = later_imperative {
        scores[coding] += 5.0;
        reasons.push(format!("the imperative `{verb}` after an opening phrase"));
    } else if words.iter().take(6).any(|w| CODING_VERBS.contains(w))
        && (text.contains("can you") || text.contains("could you") || text.contains("please"))
    {
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
    if CAPABILITY_PHRASES.iter().any(|p| text.contains(p)) {
        scores[capability] += 6.0;
        reasons.push("asks about the assistant itself".into());
    }
    if words.len() <= 4
        && CHAT_PHRASES.iter().any(|p| {
            first == *p
                || text.trim_end_matches(['!', '.']) == *p
                || text.starts_with(&format!("{p} "))
        })
    {
        scores[chat] += 4.0;
        reasons.push("a short greeting or acknowledgement".into());
    }
    if question && !code && repo_words == 0 {
        scores[chat] += 1.0;
        reasons.push("nothing points at the repository".into());
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
        };
    }
    Intent {
        label: Label::ALL[best],
        confidence: top / total,
        reason: reasons.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_llm::scripted::ScriptedProvider;

    fn label(text: &str) -> Label {
        let i = heuristic(text);
        assert!(
            i.confidence >= CONFIDENT,
            "{text:?} → {:?} only at {:.2} ({})",
            i.label,
            i.confidence,
            i.reason
        );
        i.label
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
    }

    #[test]
    fn general_knowledge_is_chat() {
        let i = heuristic("What is the capital of France?");
        assert_eq!(i.label, Label::GeneralChat, "{i:?}");
    }

    #[test]
    fn unsure_cases_go_to_the_model_and_its_label_is_used() {
        let request = "the thing with the numbers";
        assert!(heuristic(request).confidence < CONFIDENT);
        let mut model = ScriptedProvider::new(vec!["REPO_QUESTION".into()]);
        let system = Message::system("the session's system prompt");
        let intent = classify(
            request,
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
        let intent = classify(
            "the thing with the numbers",
            Some(&mut model),
            None,
            &CancelToken::new(),
        );
        assert_eq!(intent.label, heuristic("the thing with the numbers").label);
    }
}
