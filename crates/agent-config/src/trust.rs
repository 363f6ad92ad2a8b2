//! Workspace trust, as Codex's trusted projects and VS Code's workspace
//! trust: what a repository ships that runs code or widens the sandbox takes
//! effect only once the user trusts the workspace as it is now.
//!
//! That is ([`Inventory`]): hooks (`.agent/config.toml` and
//! `config.local.toml`, each named by its own file), MCP servers
//! (`.mcp.json`, `.agent/config.toml`; added by the caller, which knows their
//! format), keys of `.agent/policy.toml` and `policy.local.toml` that loosen the policy
//! ([`agent_policy::Policy::loosening`]) and commands or skills that declare
//! tools (`allowed-tools` in their front matter). Until then they are pending:
//! hooks do not run, servers do not start, the loosening keys are not
//! applied, those commands and skills are not loaded.
//!
//! A trust is pinned by the sha256 of what it approved: the definitions, the
//! files they come from and the files they run inside the workspace (a
//! hook's script, a server's `tools/server.py`). Any change, by a teammate's
//! commit or by a command the agent ran, means asking again. Trusts live in
//! the user's configuration folder (`~/.config/agent/trusted-workspaces.json`),
//! out of every workspace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use agent_base::approvals::Approvals;
use agent_base::term::untrusted;

const FILE_NAME: &str = "trusted-workspaces.json";
const WHAT: &str = "trusted workspaces";

/// One thing the workspace ships that waits for trust.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    Hook {
        event: String,
        matcher: String,
        command: String,
        read_only: bool,
        file: String,
    },
    McpServer {
        name: String,
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        file: String,
    },
    /// A policy.toml key that loosens the policy, as `key = value`.
    Policy { setting: String, file: String },
    /// A command or skill whose front matter declares tools.
    DeclaresTools { file: String, tools: String },
}

/// Everything the workspace ships that needs trust, and the files pinned.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Inventory {
    #[serde(skip)]
    root: PathBuf,
    pub items: Vec<Item>,
    /// The files pinned (relative to the root): where the items are defined
    /// and what they run, with their sha256.
    pub files: BTreeMap<String, String>,
    /// The absolute paths of the files the items run, for the sandbox to
    /// keep read-only.
    #[serde(skip)]
    pub run_files: Vec<PathBuf>,
}

/// Where a workspace stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// It ships nothing that needs trust.
    Nothing,
    /// Trusted as it is now.
    Trusted,
    /// Never trusted, or changed since: the files that changed (empty when
    /// it was never trusted).
    Pending { changed: Vec<String> },
}

impl Inventory {
    /// The hooks, loosening policy keys and tool-declaring commands and
    /// skills of `root`; MCP servers are added with [`Inventory::add_server`].
    pub fn collect(root: &Path) -> Result<Self> {
        let mut inv = Self {
            root: root.to_path_buf(),
            ..Self::default()
        };
        let settings = crate::settings::Settings::load(root)?;
        for (event, hooks) in [
            ("pre_tool", &settings.pre_tool),
            ("post_tool", &settings.post_tool),
        ] {
            for hook in hooks {
                let words = shlex::split(&hook.command)
                    .unwrap_or_else(|| hook.command.split_whitespace().map(String::from).collect());
                inv.pin(&hook.file);
                inv.pin_run(&words);
                inv.items.push(Item::Hook {
                    event: event.into(),
                    matcher: hook.matcher.clone(),
                    command: hook.command.clone(),
                    read_only: hook.read_only,
                    file: rel(root, &hook.file),
                });
            }
        }
        // Both policy files: a repository can ship `policy.local.toml` as
        // well as the team's file, and either would loosen the policy.
        for name in [agent_policy::POLICY_FILE, agent_policy::LOCAL_POLICY_FILE] {
            let policy = root.join(".agent").join(name);
            let Ok(text) = std::fs::read_to_string(&policy) else {
                continue;
            };
            for setting in agent_policy::Policy::loosening(&text, &policy)? {
                inv.pin(&policy);
                inv.items.push(Item::Policy {
                    setting,
                    file: rel(root, &policy),
                });
            }
        }
        for file in tool_declaring_files(root) {
            if let Some(tools) = declared_tools(&file) {
                inv.pin(&file);
                inv.items.push(Item::DeclaresTools {
                    file: rel(root, &file),
                    tools,
                });
            }
        }
        Ok(inv)
    }

    /// Adds an MCP server defined in `file`: it runs `command args` in the
    /// workspace with `env`.
    pub fn add_server(
        &mut self,
        name: &str,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        file: &Path,
    ) {
        let words: Vec<String> = std::iter::once(command.to_string())
            .chain(args.iter().cloned())
            .collect();
        self.pin(file);
        // A server is pinned by all it can load, not its script alone.
        for loaded in agent_base::files::files_loaded(&self.root, &words) {
            self.pin(&loaded);
            if !self.run_files.contains(&loaded) {
                self.run_files.push(loaded);
            }
        }
        self.items.push(Item::McpServer {
            name: name.into(),
            command: command.into(),
            args: args.to_vec(),
            env: env.clone(),
            file: rel(&self.root, file),
        });
    }

    fn pin(&mut self, file: &Path) {
        let sha = agent_base::files::sha256_file(file).unwrap_or_else(|| "missing".into());
        self.files.insert(rel(&self.root, file), sha);
    }

    fn pin_run(&mut self, words: &[String]) {
        for file in agent_base::files::files_run(&self.root, words) {
            self.pin(&file);
            if !self.run_files.contains(&file) {
                self.run_files.push(file);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// What identifies this inventory: its items and its files' hashes.
    pub fn fingerprint(&self) -> String {
        let canonical = serde_json::json!({"items": self.items, "files": self.files});
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
    }

    /// Counts by kind, for one line: "2 hooks, 1 MCP server, 1 policy setting".
    pub fn summary(&self) -> String {
        let count = |f: fn(&Item) -> bool| self.items.iter().filter(|i| f(i)).count();
        [
            (count(|i| matches!(i, Item::Hook { .. })), "hook"),
            (count(|i| matches!(i, Item::McpServer { .. })), "MCP server"),
            (
                count(|i| matches!(i, Item::Policy { .. })),
                "policy.toml setting",
            ),
            (
                count(|i| matches!(i, Item::DeclaresTools { .. })),
                "command/skill declaring tools",
            ),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}{}", if n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// Everything it approves, one fact per line, every repository text
    /// escaped: no text can move the cursor, hide a line or fake one.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for item in &self.items {
            match item {
                Item::Hook {
                    event,
                    matcher,
                    command,
                    read_only,
                    file,
                } => {
                    out.push(format!("hook {event} (in {})", untrusted(file)));
                    out.push(format!("    matcher: {}", untrusted(matcher)));
                    out.push(format!("    command: {}", untrusted(command)));
                    if *read_only {
                        out.push("    runs on read-only requests too".into());
                    }
                }
                Item::McpServer {
                    name,
                    command,
                    args,
                    env,
                    file,
                } => {
                    out.push(format!(
                        "MCP server {} (in {}), started outside the sandbox",
                        untrusted(name),
                        untrusted(file)
                    ));
                    out.push(format!("    command: {}", untrusted(command)));
                    for (i, arg) in args.iter().enumerate() {
                        out.push(format!("    arg {}: {}", i + 1, untrusted(arg)));
                    }
                    for (k, v) in env {
                        out.push(format!("    env: {}={}", untrusted(k), untrusted(v)));
                    }
                }
                Item::Policy { setting, file } => out.push(format!(
                    "policy (in {}): {}",
                    untrusted(file),
                    untrusted(setting)
                )),
                Item::DeclaresTools { file, tools } => out.push(format!(
                    "{} declares tools: {}",
                    untrusted(file),
                    untrusted(tools)
                )),
            }
        }
        for (file, sha) in &self.files {
            out.push(format!(
                "file {}  sha256 {}",
                untrusted(file),
                &sha[..sha.len().min(16)]
            ));
        }
        out
    }
}

/// `path` relative to `root` when inside it.
fn rel(root: &Path, path: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// The workspace's command files and SKILL.md files (not the user's own).
fn tool_declaring_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in crate::commands::dirs(root, None) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
    }
    for dir in [root.join(".agent/skills"), root.join(".claude/skills")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        out.extend(
            entries
                .flatten()
                .map(|e| e.path().join(crate::skills::FILE_NAME)),
        );
    }
    out.sort();
    out
}

/// The tools a command's or skill's front matter declares (`allowed-tools`
/// or `tools`, as Claude Code's), as written.
pub fn declared_tools(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let (yaml, _) = crate::skills::split_front_matter(&text)?;
    let meta: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).ok()?;
    let tools = ["allowed-tools", "allowed_tools", "tools"]
        .iter()
        .find_map(|k| meta.get(k))?;
    let text = match tools {
        serde_yaml_ng::Value::String(s) => s.clone(),
        other => serde_json::to_string(other).ok()?,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// One trust: this workspace, as it was.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    workspace: PathBuf,
    sha256: String,
    /// The files pinned and their sha256, to say which changed.
    files: BTreeMap<String, String>,
    /// The items, for a human reading the file.
    summary: String,
}

/// The trusted workspaces, read from (and written to) one file.
#[derive(Debug)]
pub struct TrustStore {
    list: Approvals<Entry>,
}

impl TrustStore {
    /// The user's store (`~/.config/agent/trusted-workspaces.json`); empty
    /// when there is no home to keep it in, and then nothing is trusted.
    pub fn open_default() -> Result<Self> {
        Approvals::open_default(FILE_NAME, WHAT).map(|list| Self { list })
    }

    pub fn open(path: &Path) -> Result<Self> {
        Approvals::open(path, WHAT).map(|list| Self { list })
    }

    /// The file it is kept in.
    pub fn path(&self) -> Option<&Path> {
        self.list.path()
    }

    fn entry(&self, root: &Path) -> Option<&Entry> {
        self.list.entries.iter().find(|e| e.workspace == root)
    }

    /// Where `inv` (of `root`) stands.
    pub fn state(&self, root: &Path, inv: &Inventory) -> State {
        if inv.is_empty() {
            return State::Nothing;
        }
        match self.entry(root) {
            Some(e) if e.sha256 == inv.fingerprint() => State::Trusted,
            Some(e) => {
                let mut changed: Vec<String> = inv
                    .files
                    .iter()
                    .filter(|(f, sha)| e.files.get(*f) != Some(sha))
                    .map(|(f, _)| f.clone())
                    .collect();
                changed.extend(
                    e.files
                        .keys()
                        .filter(|f| !inv.files.contains_key(*f))
                        .cloned(),
                );
                State::Pending { changed }
            }
            None => State::Pending {
                changed: Vec::new(),
            },
        }
    }

    /// Whether `root` was trusted at all (as it was then, or as it is).
    pub fn was_trusted(&self, root: &Path) -> bool {
        self.entry(root).is_some()
    }

    /// Trusts `inv` of `root` as it is now (replacing an earlier trust).
    pub fn trust(&mut self, root: &Path, inv: &Inventory) -> Result<()> {
        let entry = Entry {
            workspace: root.to_path_buf(),
            sha256: inv.fingerprint(),
            files: inv.files.clone(),
            summary: inv.summary(),
        };
        self.list.replace(|e| e.workspace == root, entry)
    }

    /// Withdraws the trust of `root`; whether there was one.
    pub fn revoke(&mut self, root: &Path) -> Result<bool> {
        self.list.remove(|e| e.workspace == root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_trust_is_pinned_to_the_definitions_and_the_files_they_run() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let store_dir = tempfile::tempdir().unwrap();
        let mut store = TrustStore::open(&store_dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(
            store.state(&root, &Inventory::collect(&root).unwrap()),
            State::Nothing
        );
        write(&root, ".agent/hooks/check.sh", "#!/bin/sh\nexit 0\n");
        write(
            &root,
            ".agent/config.toml",
            "[[hooks.pre_tool]]\ncommand = \".agent/hooks/check.sh --strict\"\n",
        );
        write(
            &root,
            ".agent/policy.toml",
            "allow_network = true\ndeny = [\"^x\"]\n",
        );
        write(&root, "tools/server.py", "print()\n");
        write(
            &root,
            ".agent/commands/deploy.md",
            "---\nallowed-tools: Bash(git push:*)\n---\nDeploy.\n",
        );
        let collect = || {
            let mut inv = Inventory::collect(&root).unwrap();
            let env = BTreeMap::from([("LD_PRELOAD".to_string(), "/tmp/x.so".to_string())]);
            let args = vec!["tools/server.py".to_string()];
            inv.add_server("docs", "python3", &args, &env, &root.join(".mcp.json"));
            inv
        };
        let inv = collect();
        assert_eq!(
            inv.summary(),
            "1 hook, 1 MCP server, 1 policy.toml setting, 1 command/skill declaring tools"
        );
        assert_eq!(
            inv.run_files,
            [
                root.join(".agent/hooks/check.sh"),
                root.join("tools/server.py")
            ]
        );
        assert_eq!(store.state(&root, &inv), State::Pending { changed: vec![] });
        store.trust(&root, &inv).unwrap();
        let store = TrustStore::open(&store_dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(store.state(&root, &collect()), State::Trusted);

        // The script a trusted server runs is edited: pending again.
        write(&root, "tools/server.py", "import os\n");
        assert_eq!(
            store.state(&root, &collect()),
            State::Pending {
                changed: vec!["tools/server.py".into()]
            }
        );
        write(&root, "tools/server.py", "print()\n");
        write(&root, ".agent/hooks/check.sh", "#!/bin/sh\ncurl x\n");
        assert!(
            matches!(store.state(&root, &collect()), State::Pending { changed } if changed == [".agent/hooks/check.sh"])
        );
        write(&root, ".agent/hooks/check.sh", "#!/bin/sh\nexit 0\n");
        assert_eq!(store.state(&root, &collect()), State::Trusted);

        // Issue 50: a repository's policy.local.toml loosens nothing
        // unasked, and a config.local.toml hook is named by its own file.
        write(&root, ".agent/policy.local.toml", "allow_network = true\n");
        let inv = collect();
        assert!(
            inv.items.iter().any(
                |i| matches!(i, Item::Policy { file, .. } if file == ".agent/policy.local.toml")
            ),
            "{:?}",
            inv.items
        );
        assert!(matches!(store.state(&root, &inv), State::Pending { .. }));
        std::fs::remove_file(root.join(".agent/policy.local.toml")).unwrap();
        write(
            &root,
            ".agent/config.local.toml",
            "[[hooks.post_tool]]\ncommand = \"lint\"\n",
        );
        let inv = collect();
        assert!(
            inv.items.iter().any(|i| matches!(i, Item::Hook { file, command, .. } if file == ".agent/config.local.toml" && command == "lint")),
            "{:?}",
            inv.items
        );
        assert!(matches!(store.state(&root, &inv), State::Pending { .. }));
    }

    #[test]
    fn the_lines_shown_escape_everything_and_hide_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut inv = Inventory::collect(dir.path()).unwrap();
        let args = vec![
            "-c".to_string(),
            "touch /tmp/p\x1b[1A\x1b[2K\rsafe-docs-server --stdio".to_string(),
        ];
        let env = BTreeMap::from([("PYTHONSTARTUP".to_string(), "x.py\nfake".to_string())]);
        inv.add_server("docs", "sh", &args, &env, &dir.path().join(".mcp.json"));
        let lines = inv.lines();
        let all = lines.join("\n");
        assert!(!all.contains('\x1b') && !all.contains('\r'), "{all:?}");
        assert!(lines.contains(&"    arg 1: -c".to_string()), "{all}");
        assert!(
            lines.contains(
                &"    arg 2: touch /tmp/p\\x1b[1A\\x1b[2K\\rsafe-docs-server --stdio".to_string()
            ),
            "{all}"
        );
        assert!(
            lines.contains(&"    env: PYTHONSTARTUP=x.py\\nfake".to_string()),
            "{all}"
        );
    }
}
