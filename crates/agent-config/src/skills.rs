//! Skills: folders of instructions for particular tasks, in the Agent
//! Skills format other agents read (a `SKILL.md` with YAML front matter
//! `name` and `description`, its body, and any files alongside).
//!
//! Found in `.agent/skills/NAME/`, `.claude/skills/NAME/` and
//! `~/.config/agent/skills/NAME/`, in that order: the first of a name wins.
//! Only names and descriptions go into the system prompt (read once per
//! session, so the prompt stays byte-stable and cached); the `skill` tool
//! ([`SkillTool`]) loads a body, or a file of the skill's folder, when the
//! model asks for it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use agent_base::term::untrusted;
use agent_tools::{Access, ErrorClass, Tool, ToolContext, ToolOutput, ToolSpec};

/// The file every skill folder holds.
pub const FILE_NAME: &str = "SKILL.md";
/// The tool's name.
pub const TOOL: &str = "skill";
/// Longest name and description the format allows.
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1024;
/// Characters of a description in the system prompt.
const PROMPT_DESCRIPTION: usize = 200;
/// Most bytes the tool returns at once.
const MAX_OUTPUT: usize = 24 * 1024;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Where it was found: `.agent/skills`, `.claude/skills` or `personal`.
    pub source: &'static str,
}

/// The skills of a session, and what was wrong with the folders that are not.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    pub skills: Vec<Skill>,
    /// One line each, with the fix: bad front matter, a folder without
    /// SKILL.md, a name used twice.
    pub problems: Vec<String>,
    /// The workspace's skills that declare tools, held until the workspace
    /// is trusted ([`crate::trust`]).
    pub held: Vec<Skill>,
}

/// `$XDG_CONFIG_HOME/agent/skills`, else `~/.config/agent/skills`.
pub fn personal_dir() -> Option<PathBuf> {
    Some(agent_base::paths::config_dir()?.join("skills"))
}

/// Front matter: YAML between `---` lines at the very top; the rest is the body.
pub fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

const FORMAT: &str =
    "start SKILL.md with\n    ---\n    name: my-skill\n    description: what it does, and when to use it\n    ---";

/// Reads one SKILL.md: its name and description, or what is wrong, with the fix.
pub fn read(file: &Path) -> Result<(String, String, String), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read it ({e})", untrusted(file)))?;
    let (yaml, body) = split_front_matter(&text).ok_or_else(|| {
        format!(
            "{}: no front matter (YAML between two `---` lines at the top)\n  fix: {FORMAT}",
            untrusted(file)
        )
    })?;
    let meta: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|e| {
        format!(
            "{}: its front matter is not valid YAML ({e})\n  fix: {FORMAT}\n  (quote a description that holds `: `)",
            untrusted(file)
        )
    })?;
    let name = meta.name.map(|n| n.trim().to_string()).unwrap_or_default();
    let description = meta
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    for (key, value) in [("name", &name), ("description", &description)] {
        if value.is_empty() {
            return Err(format!(
                "{}: the front matter has no `{key}`\n  fix: {FORMAT}",
                untrusted(file)
            ));
        }
    }
    let valid = name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid {
        return Err(format!(
            "{}: `{}` is not a skill name\n  fix: lowercase letters, digits and `-`, at most {MAX_NAME} characters (like `release-notes`)",
            untrusted(file),
            untrusted(&name)
        ));
    }
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "{}: the description has {} characters\n  fix: at most {MAX_DESCRIPTION}; put the details in the body",
            untrusted(file),
            description.chars().count()
        ));
    }
    Ok((name, description, body.trim().to_string()))
}

impl Skills {
    /// The skills of `workspace` and of the user's own folder (when given).
    pub fn load(workspace: &Path, personal: Option<&Path>) -> Self {
        let mut out = Self::default();
        let roots = [
            (Some(workspace.join(".agent/skills")), ".agent/skills"),
            (Some(workspace.join(".claude/skills")), ".claude/skills"),
            (personal.map(Path::to_path_buf), "personal"),
        ];
        for (root, source) in roots {
            let Some(root) = root else { continue };
            let Ok(entries) = std::fs::read_dir(&root) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            dirs.sort();
            for dir in dirs {
                let file = dir.join(FILE_NAME);
                if !file.is_file() {
                    // Shown to the user: the folder's name is the repository's text.
                    out.problems.push(format!(
                        "{}: no {FILE_NAME} in this skill folder\n  fix: add one, or move the folder out of {}",
                        untrusted(&dir),
                        untrusted(&root)
                    ));
                    continue;
                }
                if let Some(link) = agent_base::files::link_on_the_way(workspace, &file) {
                    out.problems.push(
                        agent_base::term::untrusted_text(&agent_base::files::link_refused(&link))
                            .to_string(),
                    );
                    continue;
                }
                match read(&file) {
                    Err(problem) => out.problems.push(problem),
                    Ok((name, description, _)) => {
                        if let Some(first) = out.skills.iter().find(|s| s.name == name) {
                            out.problems.push(format!(
                                "{}: skill `{name}` is also in {}, which wins\n  fix: rename one of them",
                                untrusted(&file),
                                untrusted(&first.dir)
                            ));
                            continue;
                        }
                        out.skills.push(Skill {
                            name,
                            description,
                            dir,
                            source,
                        });
                    }
                }
            }
        }
        out
    }

    /// Holds back the workspace's skills that declare tools (`allowed-tools`):
    /// an untrusted workspace's grant of tools takes no effect.
    pub fn hold_tool_declaring(&mut self) {
        let (held, kept): (Vec<Skill>, Vec<Skill>) =
            std::mem::take(&mut self.skills).into_iter().partition(|s| {
                s.source != "personal"
                    && crate::trust::declared_tools(&s.dir.join(FILE_NAME)).is_some()
            });
        self.skills = kept;
        self.held = held;
    }

    /// The system prompt's list: names and descriptions only. Empty without
    /// skills.
    pub fn prompt_section(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "\nSkills (instructions for particular tasks; when a task matches one, load it with the {TOOL} tool first):\n"
        );
        for s in &self.skills {
            let mut description: String = s.description.chars().take(PROMPT_DESCRIPTION).collect();
            if description.len() < s.description.len() {
                description.push('…');
            }
            out.push_str(&format!("- {}: {description}\n", s.name));
        }
        out
    }

    /// The `skill` tool, when there are skills to load.
    pub fn tool(&self) -> Option<SkillTool> {
        (!self.skills.is_empty()).then(|| SkillTool {
            skills: self.skills.clone(),
        })
    }
}

/// `skill`: loads a skill's instructions, or one file of its folder.
pub struct SkillTool {
    skills: Vec<Skill>,
}

impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        ToolSpec {
            name: TOOL,
            description: "Load a skill listed under Skills: its instructions, and the files in its folder. With `file`, read one of those files.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": names},
                    "file": {"type": "string", "description": "a file in the skill's folder, as listed when it was loaded"}
                },
                "required": ["name"]
            }),
            access: Access::Read,
        }
    }

    fn run(&self, args: &Value, ctx: &mut ToolContext<'_>) -> ToolOutput {
        let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
        let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return ToolOutput::error(
                ErrorClass::InvalidArgs,
                format!(
                    "no skill `{name}`; the skills are: {}. Example: {{\"name\": \"{}\"}}",
                    names.join(", "),
                    names.first().copied().unwrap_or_default()
                ),
            );
        };
        match args.get("file").and_then(Value::as_str) {
            Some(file) if !file.trim().is_empty() => read_skill_file(skill, file),
            _ => load_skill(skill, ctx),
        }
    }
}

/// The body of a skill and the list of its other files.
fn load_skill(skill: &Skill, ctx: &ToolContext<'_>) -> ToolOutput {
    let body = match read(&skill.dir.join(FILE_NAME)) {
        Ok((_, _, body)) => body,
        Err(problem) => return ToolOutput::error(ErrorClass::Io, problem),
    };
    let mut files = Vec::new();
    list_files(&skill.dir, &skill.dir, &mut files);
    files.retain(|f| f != FILE_NAME);
    files.sort();
    // A workspace skill's files are readable with the usual tools too, by
    // this path (unless under .agent/, which the file tools keep out of).
    let location = skill
        .dir
        .strip_prefix(ctx.workspace.root())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| skill.dir.display().to_string());
    let mut out = format!("Skill `{}` (from {location}):\n\n{body}\n", skill.name);
    if !files.is_empty() {
        out.push_str(&format!(
            "\nFiles in its folder (read one with {{\"name\": \"{}\", \"file\": \"...\"}}; scripts run from {location}/):\n",
            skill.name
        ));
        for f in files.iter().take(50) {
            out.push_str(&format!("- {f}\n"));
        }
    }
    ToolOutput::ok(cap(out))
}

/// One file of a skill's folder; nothing outside it.
fn read_skill_file(skill: &Skill, file: &str) -> ToolOutput {
    let dir = skill
        .dir
        .canonicalize()
        .unwrap_or_else(|_| skill.dir.clone());
    let Some(path) = dir
        .join(file)
        .canonicalize()
        .ok()
        .filter(|p| p.starts_with(&dir) && p.is_file())
    else {
        let why = format!(
            "no file `{file}` in skill `{}`; load the skill without `file` to list its files",
            skill.name
        );
        return ToolOutput::error(ErrorClass::NotFound, why);
    };
    match std::fs::read(&path) {
        Ok(bytes) if bytes.contains(&0) => ToolOutput::error(
            ErrorClass::InvalidArgs,
            format!("`{file}` is binary; only text files can be read"),
        ),
        Ok(bytes) => ToolOutput::ok(cap(format!(
            "{file} (skill `{}`):\n{}",
            skill.name,
            String::from_utf8_lossy(&bytes)
        ))),
        Err(e) => ToolOutput::error(ErrorClass::Io, format!("cannot read {file}: {e}")),
    }
}

fn list_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            if out.len() < 200 {
                list_files(root, &path, out);
            }
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.display().to_string());
        }
    }
}

fn cap(mut text: String) -> String {
    if text.len() > MAX_OUTPUT {
        let mut end = MAX_OUTPUT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[... cut: the rest is longer than this tool returns at once]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join(FILE_NAME), text).unwrap();
    }

    #[test]
    fn skills_are_found_in_order_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let personal = dir.path().join("personal");
        skill(
            &ws.join(".agent/skills"),
            "release-notes",
            "---\nname: release-notes\ndescription: Write release notes\n  from the changelog.\n---\nRead CHANGES.rst first.\n",
        );
        skill(
            &ws.join(".claude/skills"),
            "pdf",
            "---\nname: pdf\ndescription: \"Fill PDF forms: use scripts/fill.py\"\nlicense: MIT\n---\nbody\n",
        );
        skill(
            &personal,
            "release-notes",
            "---\nname: release-notes\ndescription: mine\n---\n",
        );
        skill(&personal, "no-front", "Just text.\n");
        skill(
            &personal,
            "bad-yaml",
            "---\nname: x\ndescription: a: b: c\n---\n",
        );
        skill(
            &personal,
            "Bad_Name",
            "---\nname: Bad_Name\ndescription: d\n---\n",
        );
        skill(&personal, "unclosed", "---\nname: u\ndescription: d\n");
        std::fs::create_dir_all(personal.join("empty")).unwrap();

        let s = Skills::load(&ws, Some(&personal));
        let names: Vec<(&str, &str)> = s
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.source))
            .collect();
        assert_eq!(
            names,
            [
                ("release-notes", ".agent/skills"),
                ("pdf", ".claude/skills")
            ]
        );
        assert_eq!(
            s.skills[0].description,
            "Write release notes from the changelog."
        );
        let problems = s.problems.join("\n");
        for says in [
            "is also in",
            "no front matter",
            "not valid YAML",
            "`Bad_Name` is not a skill name",
            "no SKILL.md",
        ] {
            assert!(problems.contains(says), "{says}: {problems}");
        }
        assert_eq!(s.problems.len(), 6, "{problems}");
        assert!(s.problems.iter().all(|p| p.contains("fix:")), "{problems}");

        let prompt = s.prompt_section();
        assert!(prompt.contains("- release-notes: Write release notes from the changelog.\n"));
        assert!(!prompt.contains("CHANGES.rst"), "bodies stay out: {prompt}");
        assert_eq!(Skills::default().prompt_section(), "");
    }
}
