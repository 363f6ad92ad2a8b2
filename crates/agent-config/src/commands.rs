//! Custom commands: prompt files a team keeps in the repository, the way
//! Claude Code and others read them. `.agent/commands/NAME.md` (or
//! `.claude/commands/NAME.md`, or the user's `~/.config/agent/commands/NAME.md`)
//! becomes `/NAME` in `agent chat` and `agent ask /NAME …`.
//!
//! The file's text is the request, with `$ARGUMENTS` replaced by what
//! follows the name and `$1`…`$9` by its words; without either, the
//! arguments are appended. Optional YAML front matter (`description`) is
//! left out of the request and shown by `/help`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::skills::split_front_matter;

/// One command file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub name: String,
    pub description: Option<String>,
    pub path: PathBuf,
}

/// Where commands are looked for, first match wins.
pub fn dirs(workspace: &Path, personal: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![
        workspace.join(".agent/commands"),
        workspace.join(".claude/commands"),
    ];
    out.extend(personal.map(Path::to_path_buf));
    out
}

/// `$XDG_CONFIG_HOME/agent/commands`, else `~/.config/agent/commands`.
pub fn personal_dir() -> Option<PathBuf> {
    Some(agent_base::paths::config_dir()?.join("commands"))
}

/// `/name rest` → (`name`, `rest`), when `line` starts with a command name
/// (letters, digits, `-`, `_`, `:`) followed by a space or nothing. A path
/// (`/etc/hosts`) is not one.
pub fn parse_invocation(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'));
    valid.then(|| (name, rest[end..].trim()))
}

#[derive(Deserialize)]
struct FrontMatter {
    description: Option<String>,
}

/// The file's front matter and body, or what is wrong with it.
fn read(path: &Path) -> Result<(Option<String>, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read it ({e})", path.display()))?;
    let Some((yaml, body)) = split_front_matter(&text) else {
        return Ok((None, text));
    };
    let meta: FrontMatter = serde_yaml_ng::from_str::<Option<FrontMatter>>(yaml)
        .map_err(|e| {
            format!(
                "{}: its front matter is not valid YAML ({e})\n  fix: `description: ...` between two `---` lines, or no front matter at all",
                path.display()
            )
        })?
        .unwrap_or(FrontMatter { description: None });
    Ok((meta.description, body.to_string()))
}

/// Every command, first of a name only, sorted by name.
pub fn list(workspace: &Path, personal: Option<&Path>) -> Vec<Command> {
    let mut out: Vec<Command> = Vec::new();
    for dir in dirs(workspace, personal) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = path
                .extension()
                .filter(|e| *e == "md")
                .and_then(|_| path.file_stem()?.to_str())
            else {
                continue;
            };
            if parse_invocation(&format!("/{name}")).is_none() || out.iter().any(|c| c.name == name)
            {
                continue;
            }
            // Never through a link in the workspace (`.agent`, `.claude`, the file).
            if let Some(link) = agent_base::files::link_on_the_way(workspace, &path) {
                tracing::warn!("{}", agent_base::files::link_refused(&link));
                continue;
            }
            let description = read(&path).ok().and_then(|(d, _)| d);
            out.push(Command {
                name: name.to_string(),
                description,
                path,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Why `/name` waits for workspace trust, when its file is the workspace's
/// and declares tools (`allowed-tools`): None when it may run as it is.
pub fn held(workspace: &Path, personal: Option<&Path>, name: &str) -> Option<String> {
    let path = dirs(workspace, personal)
        .iter()
        .map(|d| d.join(format!("{name}.md")))
        .find(|p| p.is_file())?;
    if personal.is_some_and(|p| path.starts_with(p)) {
        return None;
    }
    let tools = crate::trust::declared_tools(&path)?;
    Some(format!(
        "/{name} declares tools ({}) in {}, and this workspace is not trusted\n  fix: check it with `agent trust --show`, then `agent trust` (or --trust for one run)",
        agent_base::term::untrusted(&tools),
        agent_base::term::untrusted(&path)
    ))
}

/// The request `/name args` stands for, or a clear error naming where the
/// file was looked for and the commands there are.
pub fn expand(
    workspace: &Path,
    personal: Option<&Path>,
    name: &str,
    args: &str,
) -> Result<String, String> {
    let dirs = dirs(workspace, personal);
    let Some(path) = dirs
        .iter()
        .map(|d| d.join(format!("{name}.md")))
        .find(|p| p.is_file())
    else {
        let looked: Vec<String> = dirs
            .iter()
            .map(|d| d.join(format!("{name}.md")).display().to_string())
            .collect();
        let known: Vec<String> = list(workspace, personal)
            .into_iter()
            .map(|c| format!("/{}", c.name))
            .collect();
        let known = if known.is_empty() {
            "there are none yet".to_string()
        } else {
            format!("the commands are {}", known.join(", "))
        };
        return Err(format!(
            "no command /{name}: there is no {}\n  fix: write the request into one of those files ($ARGUMENTS stands for what follows /{name}); {known}",
            looked.join(" or ")
        ));
    };
    let (_, body) = read(&path)?;
    let body = body.trim();
    if body.is_empty() {
        return Err(format!(
            "{} is empty\n  fix: write the request /{name} stands for into it",
            path.display()
        ));
    }
    Ok(substitute(body, args))
}

/// `$ARGUMENTS` and `$1`…`$9` replaced; the arguments appended when the
/// text uses neither.
pub fn substitute(body: &str, args: &str) -> String {
    let words =
        shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_string).collect());
    let positional = (1..=9).any(|i| body.contains(&format!("${i}")));
    let mut out = body.replace("$ARGUMENTS", args);
    if positional {
        for i in (1..=9).rev() {
            let value = words.get(i - 1).map(String::as_str).unwrap_or_default();
            out = out.replace(&format!("${i}"), value);
        }
    }
    if !body.contains("$ARGUMENTS") && !positional && !args.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocations_are_names_not_paths() {
        assert_eq!(
            parse_invocation("/review src/a.py now"),
            Some(("review", "src/a.py now"))
        );
        assert_eq!(parse_invocation("/fix-issue"), Some(("fix-issue", "")));
        assert_eq!(parse_invocation("/etc/hosts is what?"), None);
        assert_eq!(parse_invocation("review"), None);
        assert_eq!(parse_invocation("/"), None);
    }

    #[test]
    fn arguments_fill_the_template() {
        assert_eq!(
            substitute("Review $ARGUMENTS for bugs.", "src/a.py"),
            "Review src/a.py for bugs."
        );
        assert_eq!(
            substitute("Fix issue $1 in $2.", "42 \"the parser\""),
            "Fix issue 42 in the parser."
        );
        assert_eq!(
            substitute("Explain the build.", "briefly"),
            "Explain the build.\n\nARGUMENTS: briefly"
        );
        assert_eq!(substitute("Explain the build.", ""), "Explain the build.");
    }

    #[test]
    fn commands_are_found_first_wins_and_missing_ones_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let personal = dir.path().join("p");
        for (folder, name, text) in [
            (
                ws.join(".agent/commands"),
                "review",
                "---\ndescription: Review a file\n---\nReview $ARGUMENTS.\n",
            ),
            (personal.clone(), "review", "mine"),
            (personal.clone(), "standup", "Summarize yesterday."),
            (
                ws.join(".claude/commands"),
                "broken",
                "---\ndescription: [x\n---\nbody",
            ),
        ] {
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join(format!("{name}.md")), text).unwrap();
        }
        let all = list(&ws, Some(&personal));
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["broken", "review", "standup"]);
        assert_eq!(all[1].description.as_deref(), Some("Review a file"));
        assert_eq!(
            expand(&ws, Some(&personal), "review", "a.py").unwrap(),
            "Review a.py."
        );
        let err = expand(&ws, Some(&personal), "nope", "").unwrap_err();
        assert!(err.contains(".agent/commands/nope.md"), "{err}");
        assert!(err.contains("fix:") && err.contains("/review"), "{err}");
        let err = expand(&ws, Some(&personal), "broken", "").unwrap_err();
        assert!(err.contains("not valid YAML"), "{err}");
    }
}
