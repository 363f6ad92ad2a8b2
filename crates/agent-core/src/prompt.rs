//! The system prompt: identity and rules, the environment, the repo map, the
//! tools and the call format.
//!
//! It is built once per session and then kept byte for byte: the engine
//! reuses the KV cache for every token of a shared prefix, so a stable
//! system prompt is prefilled once, not once per step.

use std::path::Path;

use super::protocol::{describe_tools, FORMAT_HINT};
use agent_tools::ToolSpec;

/// What the system prompt is made of.
pub struct PromptParts<'a> {
    pub workspace: &'a Path,
    /// AGENTS.md text ([`super::instructions`]); empty when there is none.
    pub instructions: &'a str,
    /// The skills' names and descriptions ([`super::skills`]); empty when none.
    pub skills: &'a str,
    /// The rendered repo map, when one could be built.
    pub repo_map: Option<&'a str>,
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

/// The parts that are the same for every request come first, the parts
/// that change (the date, git status, the map focused on the first request)
/// last: the prompt cache on disk serves the longest prefix a new process
/// shares with an earlier one, so the stable part is prefilled once.
pub fn system_prompt(parts: &PromptParts<'_>) -> String {
    let mut out = String::new();
    out.push_str(IDENTITY);
    out.push('\n');
    if parts.tools.is_empty() {
        out.push_str(
            "\nAnswer directly and concisely. You cannot see the files in this conversation.\n",
        );
    } else if parts.native {
        let (rules, _) = RULES.rsplit_once('\n').expect("the rules have lines");
        out.push('\n');
        out.push_str(rules);
        out.push('\n');
        out.push_str(NATIVE_ANSWER_RULE);
        out.push('\n');
    } else {
        out.push('\n');
        out.push_str(RULES);
        out.push_str("\n\nTools:\n");
        out.push_str(&describe_tools(parts.tools));
        out.push_str(&call_format());
    }
    out.push_str(parts.instructions);
    out.push_str(parts.skills);
    out.push('\n');
    out.push_str(&environment(parts.workspace));
    if let Some(map) = parts.repo_map.filter(|m| !m.trim().is_empty()) {
        out.push_str("\nRepository map (most relevant definitions):\n");
        out.push_str(map.trim_end());
        out.push('\n');
    }
    out
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
pub fn internal_texts(tools: &[ToolSpec]) -> Vec<String> {
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
    use agent_tools::Access;

    #[test]
    fn the_prompt_is_byte_stable_and_carries_tools_and_map() {
        let dir = tempfile::tempdir().unwrap();
        let tools = vec![ToolSpec {
            name: "read_file",
            description: "Read a file.",
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            access: Access::Read,
        }];
        let parts = PromptParts {
            workspace: dir.path(),
            instructions: "\nProject instructions (AGENTS.md); follow them:\nUse tabs.\n",
            skills: "\nSkills (...):\n- pdf: Fill PDF forms\n",
            repo_map: Some("src/lib.rs:\n  fn main()\n"),
            tools: &tools,
            native: false,
        };
        let a = system_prompt(&parts);
        assert_eq!(a, system_prompt(&parts));
        assert!(a.contains("read_file: Read a file."), "{a}");
        assert!(a.contains("fn main()"), "{a}");
        assert!(a.contains("Use tabs."), "{a}");
        assert!(a.contains("- pdf: Fill PDF forms"), "{a}");
        assert!(a.contains(&dir.path().display().to_string()), "{a}");
        // What stays the same across requests comes before what changes.
        let at = |text: &str| a.find(text).unwrap();
        assert!(at("Rules:") < at("Tools:") && at("Tools:") < at("Use tabs."));
        assert!(at("Use tabs.") < at("Environment:") && at("Environment:") < at("fn main()"));
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
}
