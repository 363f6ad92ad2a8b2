//! Project instructions: `AGENTS.md` files, the format Codex, OpenCode,
//! Zed and others read.
//!
//! - The personal file (`~/.config/agent/AGENTS.md`) and the workspace root's
//!   go into the system prompt, personal first so the project's rules come
//!   last and win. They are read once per session, so the prompt stays byte
//!   for byte the same and the KV cache holds.
//! - An `AGENTS.md` in a subfolder applies to the files under it: the first
//!   time a tool touches such a file, the nearest ones (nearest first) are
//!   added to that tool's result, once per session.
//!
//! Everything is capped ([`MAX_BYTES`]) so a long file cannot crowd the
//! conversation out of a small model's window.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The file name looked for in every folder.
pub const FILE_NAME: &str = "AGENTS.md";
/// Most bytes of instructions in the system prompt (about 1,000 tokens), and
/// per subfolder file in a tool result.
pub const MAX_BYTES: usize = 4096;

/// `$XDG_CONFIG_HOME/agent/AGENTS.md`, else `~/.config/agent/AGENTS.md`.
pub fn personal_file() -> Option<PathBuf> {
    Some(agent_base::paths::config_dir()?.join(FILE_NAME))
}

/// The text of `path` cut to `max` bytes (at a line end when it can), or
/// `None` when it is missing, empty or not text, or when it lies in the
/// workspace `inside` and a symlink is on its way (never followed: a
/// command or a repository could point it at a file of its choosing).
fn read_capped(path: &Path, max: usize, inside: Option<&Path>) -> Option<String> {
    if let Some(link) = inside.and_then(|root| agent_base::files::link_on_the_way(root, path)) {
        tracing::warn!("{}", agent_base::files::link_refused(&link));
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text.len() <= max {
        return Some(text.to_string());
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text[..end].rfind('\n').unwrap_or(end);
    Some(format!(
        "{}\n[... cut: the file has {} bytes, {max} are shown]",
        &text[..cut],
        text.len()
    ))
}

/// The instructions of a session.
#[derive(Debug, Default)]
pub struct Instructions {
    /// The files in the system prompt, in order.
    pub files: Vec<PathBuf>,
    /// Their text for the system prompt, each under a heading.
    pub text: String,
    root: PathBuf,
    /// Subfolder files already shown in this session.
    shown: HashSet<PathBuf>,
}

impl Instructions {
    /// Reads the personal file (when given) and the workspace root's.
    pub fn load(workspace: &Path, personal: Option<&Path>) -> Self {
        let mut out = Self {
            root: workspace.to_path_buf(),
            ..Self::default()
        };
        let root_file = workspace.join(FILE_NAME);
        let mut left = MAX_BYTES;
        for (path, heading, inside) in [
            (
                personal.map(Path::to_path_buf),
                "Personal instructions",
                None,
            ),
            (
                Some(root_file),
                "Project instructions (AGENTS.md)",
                Some(workspace),
            ),
        ] {
            let Some(path) = path else { continue };
            let Some(text) = read_capped(&path, left.max(256), inside) else {
                continue;
            };
            left = left.saturating_sub(text.len());
            out.text
                .push_str(&format!("\n{heading}; follow them:\n{text}\n"));
            out.files.push(path);
        }
        out
    }

    /// Instructions of subfolders above `path` (workspace-relative or
    /// absolute) not shown yet, nearest first; marks them shown.
    pub fn nested_for(&mut self, path: &str) -> Option<String> {
        let path = self.root.join(path);
        let mut dir = path.parent()?.to_path_buf();
        let mut parts = Vec::new();
        while dir.starts_with(&self.root) && dir != self.root {
            let file = dir.join(FILE_NAME);
            if !self.shown.contains(&file) {
                if let Some(text) = read_capped(&file, MAX_BYTES, Some(&self.root)) {
                    let rel = file.strip_prefix(&self.root).unwrap_or(&file);
                    parts.push(format!(
                        "[instructions for this folder, from {}; follow them]\n{text}",
                        rel.display()
                    ));
                }
                self.shown.insert(file);
            }
            if !dir.pop() {
                break;
            }
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personal_then_root_capped_and_subfolders_once_nearest_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("web/src")).unwrap();
        std::fs::write(root.join(FILE_NAME), "Use pnpm, never npm.\n").unwrap();
        std::fs::write(root.join("web").join(FILE_NAME), "Components are in TSX.").unwrap();
        std::fs::write(root.join("web/src").join(FILE_NAME), "No default exports.").unwrap();
        let personal = dir.path().join("personal.md");
        std::fs::write(&personal, "Answer in British English.").unwrap();

        let mut i = Instructions::load(&root, Some(&personal));
        assert_eq!(i.files, vec![personal.clone(), root.join(FILE_NAME)]);
        let british = i.text.find("British").unwrap();
        let pnpm = i.text.find("pnpm").unwrap();
        assert!(british < pnpm, "{}", i.text);

        let nested = i.nested_for("web/src/App.tsx").unwrap();
        let near = nested.find("No default exports").unwrap();
        let far = nested.find("TSX").unwrap();
        assert!(near < far, "{nested}");
        assert!(nested.contains("web/src/AGENTS.md"), "{nested}");
        assert_eq!(i.nested_for("web/src/other.tsx"), None, "shown once");
        assert_eq!(
            i.nested_for("README.md"),
            None,
            "the root's is in the prompt"
        );

        // A huge file is cut, and says so.
        std::fs::write(root.join(FILE_NAME), "rule line\n".repeat(2000)).unwrap();
        let i = Instructions::load(&root, None);
        assert!(i.text.len() < MAX_BYTES + 300, "{}", i.text.len());
        assert!(
            i.text.contains("[... cut: the file has 19999 bytes"),
            "{}",
            &i.text[i.text.len() - 100..]
        );
        // None at all: nothing in the prompt.
        assert!(Instructions::load(&dir.path().join("nope"), None)
            .text
            .is_empty());
    }
}
