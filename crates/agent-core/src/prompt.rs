//! What the model is told besides the conversation: the system prompt
//! (identity and rules, instructions, skills, the tools and the call format)
//! and the session's context (the environment and the repo map focused on
//! the first request), which opens the first user message.
//!
//! The system prompt holds only what stays the same across requests in a
//! workspace, and is kept byte for byte for the session: the engine reuses
//! the KV cache for every token of a shared prefix, within a process and
//! across processes (the prompt cache on disk), so it is prefilled once.
//! A chat template that shows the tools itself renders them right after the
//! system content, so they join that shared prefix too; what changes from
//! one request to the next (the date, git status, the map focused on the
//! request) comes after all of it, at the head of the first user message,
//! not in a message of its own (strict templates want user and assistant to
//! alternate). The terminal, `--resume`, `sessions show` and ACP's
//! `session/load` show that request without it, and a compaction's summary
//! carries it on.

use std::path::Path;

use super::protocol::{describe_tools, FORMAT_HINT};
use agent_tools::{Access, ToolSpec};

/// What the system prompt is made of: nothing that depends on the request.
pub struct PromptParts<'a> {
    /// AGENTS.md text ([`super::instructions`]); empty when there is none.
    pub instructions: &'a str,
    /// The skills' names and descriptions ([`super::skills`]); empty when none.
    pub skills: &'a str,
    /// The tools of this request; empty for answers without the loop.
    pub tools: &'a [ToolSpec],
    /// The model's own template shows the tools and its call syntax
    /// ([`super::native`]): the prompt describes neither.
    pub native: bool,
}

const IDENTITY: &str =
    "You are agent, a careful coding assistant working inside the user's repository. \
Everything runs on the user's machine.";

const RULES: &str = "Rules:
- Never guess file contents: read a file before you describe or change it.
- Make the smallest change that does the job; keep the code's style.
- After a change, verify it (run the tests or the code) when you can.
- Paths are relative to the workspace root.
- When you know the answer, call finish with a short, specific answer (name files and functions).";

/// The last rule for a model that answers in text rather than with `finish`.
const NATIVE_ANSWER_RULE: &str =
    "- When you know the answer, reply with it in plain text: short and specific (name files and functions).";

/// The same text for every request in a workspace (see the module's doc).
pub fn system_prompt(parts: &PromptParts<'_>) -> String {
    let mut out = String::new();
    out.push_str(IDENTITY);
    out.push('\n');
    if parts.tools.is_empty() {
        out.push_str(
            "\nAnswer directly and concisely. You cannot see the files in this conversation.\n",
        );
    } else if parts.native {
        let rules = RULES.rsplit_once('\n').map_or(RULES, |(rules, _)| rules);
        out.push('\n');
        out.push_str(rules);
        out.push('\n');
        out.push_str(NATIVE_ANSWER_RULE);
        out.push('\n');
    } else {
        out.push('\n');
        out.push_str(RULES);
        out.push_str("\n\nTools:\n");
        // The plan tool is a coding task's: its request says so, not this
        // prompt, which every request shares.
        let listed: Vec<ToolSpec> = parts
            .tools
            .iter()
            .filter(|t| t.access != Access::Plan)
            .cloned()
            .collect();
        out.push_str(&describe_tools(&listed));
        out.push_str(&call_format());
    }
    out.push_str(parts.instructions);
    out.push_str(parts.skills);
    out
}

/// What opens the lines of the dependencies the code uses most.
pub(crate) const DEPENDENCIES_HEADER: &str =
    "\nLibraries used most (indexed: search_semantic scope \"deps\"):\n";

/// The repo map as the session's context shows it.
#[derive(Debug, Default)]
pub(crate) struct RepoMapText {
    /// Lines of the dependencies' items the code uses most; may be empty.
    pub(crate) dependencies: String,
    /// The ranked definitions, file by file.
    pub(crate) outline: String,
}

/// Where the session's context opens and closes in the first user message.
const CONTEXT_OPEN: &str = "<context>\n";
const CONTEXT_CLOSE: &str = "\n</context>\n\n";

/// The session's context: the environment, then the repo map (focused on
/// the first request) when there is one, opened by the dependencies the
/// code uses most (see [`agent_repomap::external`]).
pub(crate) fn session_context(workspace: &Path, repo_map: Option<&RepoMapText>) -> String {
    let mut out = environment(workspace);
    if let Some(used) = repo_map.map(|m| &m.dependencies).filter(|d| !d.is_empty()) {
        out.push_str(DEPENDENCIES_HEADER);
        out.push_str(used.trim_end());
    }
    if let Some(map) = repo_map
        .map(|m| &m.outline)
        .filter(|m| !m.trim().is_empty())
    {
        out.push_str("\nRepository map (most relevant definitions):\n");
        out.push_str(map.trim_end());
    }
    out.trim_end().to_string()
}

/// The first user message: the session's context, delimited, then `text`
/// (the request, or a summary that replaced it).
pub(crate) fn with_context(context: &str, text: &str) -> String {
    format!("{CONTEXT_OPEN}{}{CONTEXT_CLOSE}{text}", context.trim_end())
}

/// A first user message taken apart: its context (None when it has none)
/// and what follows it, as [`with_context`] put them together.
pub fn split_context(message: &str) -> (Option<&str>, &str) {
    message
        .strip_prefix(CONTEXT_OPEN)
        .and_then(|rest| rest.split_once(CONTEXT_CLOSE))
        .map_or((None, message), |(context, text)| (Some(context), text))
}

fn call_format() -> String {
    format!(
        "\nEach reply is exactly one JSON tool call:\n{FORMAT_HINT}\n\
Tool results come back as the next message. End with the finish tool: {{\"thought\": \"...\", \"tool\": \"finish\", \"args\": {{\"answer\": \"...\"}}}}\n"
    )
}

/// The prompt's own words (identity, rules, tools, call format), without
/// anything about the workspace: a model that copies these back has not
/// answered (see [`super::answer`]).
pub(crate) fn internal_texts(tools: &[ToolSpec]) -> Vec<String> {
    vec![
        IDENTITY.to_string(),
        RULES.to_string(),
        describe_tools(tools),
        call_format(),
    ]
}

/// OS, workspace, date, and git branch/status: facts a model cannot guess.
fn environment(workspace: &Path) -> String {
    let mut out = format!(
        "Environment:\n- OS: {} ({})\n- Workspace root: {}\n- Date: {}\n",
        std::env::consts::OS,
        std::env::consts::ARCH,
        workspace.display(),
        chrono::Local::now().format("%Y-%m-%d"),
    );
    if let Some(branch) = agent_tools::git::run(workspace, &["rev-parse", "--abbrev-ref", "HEAD"]) {
        out.push_str(&format!("- Git branch: {}\n", branch.trim()));
        let status =
            agent_tools::git::run(workspace, &["status", "--porcelain"]).unwrap_or_default();
        let lines: Vec<&str> = status.lines().collect();
        if lines.is_empty() {
            out.push_str("- Git status: clean\n");
        } else {
            out.push_str(&format!("- Git status: {} changed path(s)", lines.len()));
            for line in lines.iter().take(10) {
                out.push_str(&format!("\n    {line}"));
            }
            if lines.len() > 10 {
                out.push_str("\n    ...");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_file() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "read_file",
            description: "Read a file.",
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            access: Access::Read,
        }]
    }

    #[test]
    fn the_prompt_carries_tools_and_instructions_and_nothing_that_changes() {
        let tools = read_file();
        let parts = PromptParts {
            instructions: "\nProject instructions (AGENTS.md); follow them:\nUse tabs.\n",
            skills: "\nSkills (...):\n- pdf: Fill PDF forms\n",
            tools: &tools,
            native: false,
        };
        let a = system_prompt(&parts);
        assert_eq!(a, system_prompt(&parts));
        assert!(a.contains("read_file: Read a file."), "{a}");
        assert!(a.contains("Use tabs."), "{a}");
        assert!(a.contains("- pdf: Fill PDF forms"), "{a}");
        let at = |text: &str| a.find(text).unwrap();
        assert!(at("Rules:") < at("Tools:") && at("Tools:") < at("Use tabs."));
        // No environment, no map: those open the first user message.
        for changing in ["Environment:", "Date:", "Git", "Repository map"] {
            assert!(!a.contains(changing), "{changing}: {a}");
        }
        let plain = system_prompt(&PromptParts {
            tools: &[],
            ..parts
        });
        assert!(!plain.contains("Tools:"), "{plain}");
        let native = system_prompt(&PromptParts {
            native: true,
            ..parts
        });
        assert!(
            !native.contains("Tools:") && !native.contains("finish"),
            "{native}"
        );
        assert!(
            native.contains("plain text") && native.contains("Use tabs."),
            "{native}"
        );
    }

    #[test]
    fn the_context_holds_environment_and_map_and_comes_apart_again() {
        let dir = tempfile::tempdir().unwrap();
        let map = RepoMapText {
            dependencies: "  tokio: spawn\n".into(),
            outline: "src/lib.rs:\n  fn main()\n".into(),
        };
        let context = session_context(dir.path(), Some(&map));
        assert!(context.starts_with("Environment:\n"), "{context}");
        assert!(context.contains(&dir.path().display().to_string()));
        let today = chrono::Local::now().format("%Y-%m-%d").to_string();
        assert!(context.contains(&format!("- Date: {today}")), "{context}");
        let at = |text: &str| context.find(text).unwrap();
        assert!(
            at("Environment:") < at("Libraries used most")
                && at("tokio: spawn") < at("Repository map")
                && at("Repository map") < at("fn main()")
        );
        assert!(!session_context(dir.path(), None).contains("Repository map"));

        let request = "Where is main?\n\n(This is a question: do not change files.)";
        let first = with_context(&context, request);
        assert!(first.starts_with("<context>\nEnvironment:"), "{first}");
        assert!(
            first.contains("fn main()\n</context>\n\nWhere is main?"),
            "{first}"
        );
        assert_eq!(split_context(&first), (Some(context.as_str()), request));
        // A message without a context is all text.
        assert_eq!(split_context(request), (None, request));
        assert_eq!(
            split_context("<context>\nunclosed"),
            (None, "<context>\nunclosed")
        );
    }
}
