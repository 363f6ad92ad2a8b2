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

use agent_base::cancel::CancelToken;
use agent_llm::{CompletionRequest, Flow, Grammar, Message, Provider};
use agent_tools::{Access, ToolSpec};

use crate::vocabulary::{self, AnchorKind, Vocabulary};

pub(crate) use agent_protocol::intent::{Intent, Label};

/// What the gate knows of the workspace besides the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Knowledge<'a> {
    /// The repository's words (None: unknown, as without a repo map).
    pub vocabulary: Option<&'a Vocabulary>,
    /// Tools beyond the built-in ones (MCP servers'), by name and description.
    pub tools: &'a [ToolSpec],
    /// The project's dependencies whose indices can be searched, by name.
    pub dependencies: &'a [String],
}

/// The indexed dependency a request names ("how do I set a timeout with
/// reqwest?"), if any: a name written as code (`tokio::select!`, `serde_json`,
/// `` `log` ``), or one that is no English word, or one after "with",
/// "using", "in", "from" or before "crate", "library", "package". A name
/// that is also a word ("which", "log", "ignore") needs one of those cues:
/// "which function logs this" names no library.
pub(crate) fn library_named(request: &str, dependencies: &[String]) -> Option<String> {
    let text = request.to_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let norm = |s: &str| s.to_lowercase().replace('-', "_");
    let normed = norm(&text);
    dependencies.iter().find_map(|dep| {
        let name = norm(dep);
        let at = words.iter().position(|w| norm(w) == name)?;
        let coded = name.contains('_')
            || name.chars().any(|c| c.is_ascii_digit())
            || [format!("{name}::"), format!("`{name}`"), format!("{name}.")]
                .iter()
                .any(|p| normed.contains(p.as_str()));
        let before = at.checked_sub(1).map(|i| words[i]);
        let after = words.get(at + 1).copied();
        let cued = before.is_some_and(|w| LIBRARY_BEFORE.contains(&w))
            || after.is_some_and(|w| LIBRARY_AFTER.contains(&w));
        let english = ENGLISH_NAMES.contains(&name.as_str()) || name.len() < 3;
        (coded || cued || !english).then(|| dep.clone())
    })
}

/// Words before a library's name that make it one ("with tokio").
const LIBRARY_BEFORE: &[&str] = &["with", "using", "in", "from", "via", "use", "uses"];
/// Words after it ("the log crate").
const LIBRARY_AFTER: &[&str] = &[
    "crate",
    "crates",
    "library",
    "lib",
    "package",
    "module",
    "api",
    "dependency",
];
/// Package names that are also everyday words: named only with a cue.
const ENGLISH_NAMES: &[&str] = &[
    "which",
    "either",
    "log",
    "time",
    "ignore",
    "bytes",
    "once",
    "home",
    "glob",
    "same",
    "console",
    "image",
    "url",
    "http",
    "json",
    "test",
    "path",
    "file",
    "files",
    "walk",
    "env",
    "base",
    "core",
    "text",
    "click",
    "six",
    "packaging",
    "requests",
    "rich",
    "black",
    "mock",
    "select",
    "color",
    "colors",
    "open",
    "future",
    "futures",
    "regex",
    "lazy",
    "static",
    "signal",
    "ring",
    "tracing",
    "arrow",
    "tar",
    "zip",
    "date",
    "version",
    "semver",
    "tempfile",
    "dirs",
    "filetime",
    "anyhow",
    "cc",
    "windows",
];

/// Whether a request asks about the workspace as a whole ("what does this
/// project do?", "give me an overview"), which its README answers better
/// than a search by the request's words: a question, or a request for the
/// shape, that names the workspace and nothing in it ("grep the code for
/// add" names the code, and asks for something in it).
pub(crate) fn about_the_whole(request: &str, knowledge: &Knowledge<'_>) -> bool {
    let cues = Cues::read(request, knowledge);
    let shape = SHAPE_PHRASES.iter().any(|p| cues.text.contains(p));
    cues.workspace
        && (cues.question || shape)
        && cues.anchors.is_empty()
        && cues.library.is_none()
        && !cues.code
        && !cues.target
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
    // Between turns: the conversation's cached prompt must outlive it.
    req.aside = true;
    req.interrupt = Some(cancel.clone());
    let completion = model.complete(&req, &mut |_| Flow::Continue)?;
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

/// Nouns that, after "this", "the" or "these", name the workspace as a
/// whole ("what is in this folder?", "explain this codebase").
const WORKSPACE_NOUNS: &[&str] = &[
    "folder",
    "directory",
    "dir",
    "repo",
    "repository",
    "codebase",
    "project",
    "program",
    "app",
    "application",
    "library",
    "crate",
    "package",
    "code",
    "source",
];

/// Words that ask for the shape of the workspace as a whole.
const SHAPE_PHRASES: &[&str] = &[
    "overview",
    "tour",
    "layout",
    "architecture",
    "organized",
    "organised",
    "structure",
    "entry point",
    "main parts",
    "where do i start",
    "fit together",
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

/// "this folder", "the codebase", "this thing": a workspace noun after a
/// pointing word, or "here" ("what's in here").
fn names_workspace(words: &[String]) -> bool {
    words.iter().any(|w| w == "here")
        || words
            .windows(2)
            .any(|pair| match (pair[0].as_str(), pair[1].as_str()) {
                ("this", "thing") => true,
                ("this" | "the" | "our", noun) => WORKSPACE_NOUNS.contains(&noun),
                _ => false,
            })
}

/// "what does this do", "what is this": "this" and nothing else of
/// meaning, so the thing pointed at is where the user is.
fn only_this(words: &[String]) -> bool {
    words.iter().any(|w| w == "this")
        && words
            .iter()
            .filter(|w| vocabulary::is_content_word(w))
            .all(|w| matches!(w.as_str(), "this" | "do" | "does" | "contain" | "contains"))
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
    let cues = Cues::read(request, knowledge);
    if let Some(tool) = named_tool(&cues.words, cues.question, knowledge.tools) {
        return tool_intent(tool);
    }
    let mut tally = Tally::default();
    tally.action(&cues);
    tally.repository(&cues);
    tally.conversation(&cues, knowledge);
    tally.verdict()
}

/// The request names a tool: read-only, a repository question; else a task.
fn tool_intent(tool: &ToolSpec) -> Intent {
    let reads = tool.access == Access::Read;
    Intent {
        label: if reads {
            Label::RepoQuestion
        } else {
            Label::CodingTask
        },
        confidence: 0.9,
        reason: format!(
            "names the tool `{}`{}",
            tool.name,
            if reads { " (read-only)" } else { "" }
        ),
        tool: Some(tool.name.to_string()),
    }
}

/// What the heuristics read off a request, before scoring.
struct Cues {
    /// The request, trimmed and lowercased.
    text: String,
    words: Vec<String>,
    /// Looks like code (see [`has_code_token`]).
    code: bool,
    /// How many of [`REPO_WORDS`] it holds.
    repo_words: usize,
    /// What it names of the workspace.
    anchors: Vec<vocabulary::Anchor>,
    /// The indexed dependency it names ("with tokio").
    library: Option<String>,
    /// Something definite of the workspace to act on ("the confirm prompt").
    target: bool,
    /// Asks about the workspace as a whole: "this folder", "what does this
    /// do", "give me an overview".
    workspace: bool,
    /// A general-knowledge question or request for text.
    general: bool,
    /// Starts with a coding verb ("fix", "please add").
    imperative: bool,
    /// A coding verb opening a later clause ("In src/app.py, make ...").
    later_imperative: Option<String>,
    /// Addresses the assistant ("you", "your").
    you: bool,
    about_assistant: bool,
    /// A coding verb in a request phrased politely ("can you add ...").
    polite: bool,
    /// A polite request with a target: a task, though phrased as a question.
    polite_task: bool,
    /// Says what the user wants ("I need ...") about something of the workspace.
    wish: bool,
    question: bool,
    greeting: bool,
}

impl Cues {
    fn read(request: &str, knowledge: &Knowledge<'_>) -> Cues {
        let text = request.trim().to_lowercase();
        let words = vocabulary::words(&text);
        let first = words.first().map(String::as_str).unwrap_or("");
        let code = has_code_token(request);
        let repo_words = REPO_WORDS.iter().filter(|w| text.contains(**w)).count();
        let anchors = knowledge
            .vocabulary
            .map(|v| v.anchors(request))
            .unwrap_or_default();
        let library = library_named(request, knowledge.dependencies);
        let specific = anchors.iter().any(|a| a.kind.is_specific()) || library.is_some();
        let target = code
            || anchors
                .iter()
                .any(|a| a.kind.is_specific() || a.kind == AnchorKind::Definite);
        let names_workspace = names_workspace(&words);
        let general = !specific
            && !code
            && !names_workspace
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
        .flatten()
        .map(str::to_string);
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
        let greeting = (words.len() <= 4
            && CHAT_PHRASES.iter().any(|p| {
                first == *p
                    || text.trim_end_matches(['!', '.']) == *p
                    || text.starts_with(&format!("{p} "))
            }))
            || text.contains("how are you")
            || text.contains("how r u");
        let acting = imperative || later_imperative.is_some() || polite_task || wish;
        let workspace = !acting
            && !general
            && !greeting
            && !about_assistant
            && (names_workspace
                || SHAPE_PHRASES.iter().any(|p| text.contains(p))
                || (question && only_this(&words)));
        Cues {
            text,
            words,
            code,
            repo_words,
            anchors,
            library,
            target,
            workspace,
            general,
            imperative,
            later_imperative,
            you,
            about_assistant,
            polite,
            polite_task,
            wish,
            question,
            greeting,
        }
    }

    fn first(&self) -> &str {
        self.words.first().map(String::as_str).unwrap_or("")
    }
}

/// Points per label (in [`Label::ALL`] order) and the reasons given for them.
struct Tally {
    scores: [(Label, f32); 5],
    reasons: Vec<String>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            scores: Label::ALL.map(|label| (label, 0.0)),
            reasons: Vec::new(),
        }
    }
}

impl Tally {
    fn add(&mut self, label: Label, points: f32) {
        if let Some((_, score)) = self.scores.iter_mut().find(|(l, _)| *l == label) {
            *score += points;
        }
    }

    fn because(&mut self, reason: impl Into<String>) {
        self.reasons.push(reason.into());
    }

    /// Cues of a change to make: imperatives, polite requests, wishes.
    fn action(&mut self, cues: &Cues) {
        if cues.imperative {
            self.add(Label::CodingTask, 5.0);
            self.because(format!("starts with the imperative `{}`", cues.first()));
        } else if let Some(verb) = &cues.later_imperative {
            self.add(Label::CodingTask, 5.0);
            self.because(format!("the imperative `{verb}` after an opening phrase"));
        } else if cues.polite_task {
            self.add(Label::CodingTask, 5.0);
            self.because("a polite request to change something of the workspace");
        } else if cues.wish {
            self.add(Label::CodingTask, 4.0);
            self.because("says what the user wants changed");
        } else if cues.polite {
            self.add(Label::CodingTask, 3.0);
            self.because("a polite request to change something");
        }
    }

    /// Cues of the repository: a question, code, repository words, what the
    /// workspace holds.
    fn repository(&mut self, cues: &Cues) {
        if cues.question {
            self.add(Label::RepoQuestion, 1.0);
            self.add(Label::GeneralChat, 1.0);
            self.because("phrased as a question");
        }
        if cues.code {
            self.add(Label::RepoQuestion, if cues.question { 3.0 } else { 2.0 });
            self.add(Label::CodingTask, 1.0);
            self.because("mentions code identifiers or paths");
        }
        if cues.workspace {
            self.add(Label::RepoQuestion, 4.0);
            self.because("asks about this folder or project as a whole");
        }
        // The code around the code: answered from the version the project
        // locks, not from what the model remembers of another.
        if let Some(library) = &cues.library {
            let acting =
                cues.imperative || cues.later_imperative.is_some() || cues.polite_task || cues.wish;
            self.add(
                if acting {
                    Label::CodingTask
                } else {
                    Label::RepoQuestion
                },
                4.0,
            );
            self.because(format!("names the dependency `{library}`, indexed"));
        }
        if cues.repo_words > 0 {
            self.add(Label::RepoQuestion, 1.0 + cues.repo_words as f32 * 0.5);
            self.add(Label::CodingTask, 0.5);
            self.because(format!("{} repository word(s)", cues.repo_words));
        }
        if !cues.anchors.is_empty() {
            let weight: f32 = cues.anchors.iter().map(|a| a.kind.weight()).sum();
            let acting =
                cues.imperative || cues.later_imperative.is_some() || cues.polite_task || cues.wish;
            if cues.question || !acting {
                self.add(Label::RepoQuestion, weight.min(6.0));
            }
            let named: Vec<&str> = cues
                .anchors
                .iter()
                .take(4)
                .map(|a| a.text.as_str())
                .collect();
            self.because(format!(
                "names what the workspace holds: {}",
                named.join(", ")
            ));
        }
    }

    /// Cues of a conversation: general knowledge, the assistant itself,
    /// greetings, a question that names nothing of the workspace.
    fn conversation(&mut self, cues: &Cues, knowledge: &Knowledge<'_>) {
        if cues.general {
            self.add(Label::GeneralChat, 3.0);
            self.because("a general-knowledge question");
        }
        if cues.about_assistant {
            self.add(Label::CapabilityQuery, 6.0);
            self.because("asks about the assistant itself");
        } else if cues.you
            && (cues.question || cues.polite)
            && !cues.target
            && !cues.greeting
            && !cues.text.contains("how do you say")
        {
            self.add(Label::CapabilityQuery, 5.0);
            self.because("asks the assistant what it can do");
        }
        if cues.greeting {
            self.add(Label::GeneralChat, 4.0);
            self.because("a greeting or acknowledgement");
        }
        if cues.question
            && !cues.code
            && !cues.workspace
            && cues.repo_words == 0
            && cues.anchors.is_empty()
            && cues.library.is_none()
        {
            self.add(Label::GeneralChat, 1.0);
            self.because(if knowledge.vocabulary.is_some() {
                "names nothing the workspace holds"
            } else {
                "nothing points at the repository"
            });
        }
    }

    /// The label with the most points (a tie goes to the later one in
    /// [`Label::ALL`]), its share of all points as the confidence.
    fn verdict(self) -> Intent {
        let total: f32 = self.scores.iter().map(|(_, s)| s).sum();
        let (best, top) = self
            .scores
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((Label::Uncertain, 0.0));
        if total <= 0.0 {
            return Intent {
                label: Label::Uncertain,
                confidence: 0.0,
                reason: "no cue".into(),
                tool: None,
            };
        }
        Intent {
            label: best,
            confidence: top / total,
            reason: self.reasons.join("; "),
            tool: None,
        }
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
    fn a_question_naming_an_indexed_dependency_is_answered_from_it() {
        let deps: Vec<String> = [
            "tokio",
            "serde_json",
            "log",
            "which",
            "ignore",
            "crossbeam-channel",
        ]
        .map(String::from)
        .to_vec();
        for (request, library) in [
            ("How do I set a timeout with tokio?", Some("tokio")),
            (
                "what does serde_json::from_str return on bad input?",
                Some("serde_json"),
            ),
            ("How do I filter records with the log crate?", Some("log")),
            (
                "using crossbeam-channel, how do I select over two receivers?",
                Some("crossbeam-channel"),
            ),
            ("How does `which` search the PATH?", Some("which")),
            ("which function logs this?", None),
            ("How do I ignore whitespace in a diff?", None),
            ("What time is it in Tokyo?", None),
        ] {
            assert_eq!(
                library_named(request, &deps).as_deref(),
                library,
                "{request}"
            );
        }
        // A general-knowledge opening that names a locked, indexed library
        // is asked of its code; without the index it stays a chat.
        let knowing = Knowledge {
            dependencies: &deps,
            ..Knowledge::default()
        };
        let question = "How do I set a timeout with tokio?";
        let i = heuristic(question, &knowing);
        assert_eq!(i.label, Label::RepoQuestion, "{i:?}");
        assert!(i.reason.contains("`tokio`"), "{i:?}");
        assert_eq!(
            heuristic(question, &Knowledge::default()).label,
            Label::GeneralChat
        );
        // An imperative naming it stays a task.
        let task = heuristic("Add a timeout to the tokio client", &knowing);
        assert_eq!(task.label, Label::CodingTask, "{task:?}");
    }

    #[test]
    fn general_knowledge_is_chat() {
        let i = heuristic("What is the capital of France?", &Knowledge::default());
        assert_eq!(i.label, Label::GeneralChat, "{i:?}");
    }

    #[test]
    fn a_question_about_the_folder_or_project_is_about_the_repository() {
        // Issue 53: "What is in this folder?" was chat, answered from nothing.
        for text in [
            "What is in this folder?",
            "what does this do",
            "give me an overview",
            "explain this codebase to me",
            "whats in here",
        ] {
            assert_eq!(label(text), Label::RepoQuestion, "{text}");
        }
        // The same words about something else stay what they were.
        assert_eq!(label("thanks, this is great"), Label::GeneralChat);
        assert_eq!(label("what is a monad, briefly"), Label::GeneralChat);
        assert_eq!(
            label("add an overview section to README.md"),
            Label::CodingTask
        );
    }

    #[test]
    fn a_question_about_the_whole_workspace_is_told_from_one_about_a_part() {
        let vocabulary = flask();
        let knowledge = Knowledge {
            vocabulary: Some(&vocabulary),
            tools: &[],
            dependencies: &[],
        };
        for whole in [
            "What does this project do?",
            "What is in this folder?",
            "give me an overview",
            "how is the code organized?",
        ] {
            assert!(about_the_whole(whole, &knowledge), "{whole}");
        }
        for part in [
            "Grep the code for the definition of add",
            "What does this project do in src/flask/app.py?",
            "what does make_response do in this project?",
            "Add an overview section to README.md",
        ] {
            assert!(!about_the_whole(part, &knowledge), "{part}");
        }
    }

    #[test]
    fn a_question_naming_what_the_workspace_holds_is_about_it() {
        let vocabulary = flask();
        let here = Knowledge {
            vocabulary: Some(&vocabulary),
            tools: &[],
            dependencies: &[],
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
            dependencies: &[],
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
