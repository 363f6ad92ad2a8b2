//! What `.agent/config.toml` tells the loop: when to compact the
//! conversation, and the hooks around tool calls. (Its `[mcp_servers.*]`
//! tables are `agent-mcp`'s.)
//!
//! ```toml
//! compact_at = 0.75         # share of the context window that triggers a summary; 0 turns it off
//!
//! [[hooks.pre_tool]]
//! matcher = "run_cmd"       # a regex on tool names (Claude Code's names work too: "Bash", "Edit|Write")
//! command = ".agent/hooks/check-command.sh"
//! timeout_s = 10
//!
//! [[hooks.post_tool]]
//! matcher = "edit|write_file|apply_patch"
//! command = "ruff check --quiet ."
//!
//! [[hooks.post_tool]]
//! matcher = "read_file"
//! command = "./audit-reads.sh"
//! read_only = true          # also on read-only requests (questions); default: coding tasks only
//! ```
//!
//! Hooks run only in a trusted workspace ([`crate::trust`]).
//!
//! The file is the user's: commands cannot change it (`agent_tools`'s state
//! guard puts it back), and the file tools refuse `.agent/` paths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Deserialize;

/// Default share of the context window at which a conversation is compacted.
pub const DEFAULT_COMPACT_AT: f32 = 0.75;

/// Default and largest seconds a hook may run.
pub const HOOK_TIMEOUT_S: u64 = 60;
pub const HOOK_MAX_TIMEOUT_S: u64 = 600;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Share of the window (0..1) past which the conversation is compacted; 0: never.
    pub compact_at: f32,
    pub pre_tool: Vec<HookConfig>,
    pub post_tool: Vec<HookConfig>,
    /// The file they came from.
    pub file: PathBuf,
}

/// One hook: a shell command run around the tool calls its matcher names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// A regex matched against the whole tool name; empty or `*` matches every tool.
    #[serde(default)]
    pub matcher: String,
    pub command: String,
    /// Seconds before it is killed and the call goes on (default 60, max 600).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Runs on read-only requests (questions) too; by default a hook runs
    /// only for requests that may change the workspace (coding tasks).
    #[serde(default)]
    pub read_only: bool,
    /// The file it came from (`config.toml` or `config.local.toml`).
    #[serde(skip)]
    pub file: PathBuf,
}

#[derive(Deserialize)]
struct File {
    compact_at: Option<f32>,
    #[serde(default)]
    hooks: Hooks,
    /// Everything else: `mcp_servers` is agent-mcp's; anything more is a typo.
    #[serde(flatten)]
    rest: BTreeMap<String, toml::Value>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hooks {
    #[serde(default)]
    pre_tool: Vec<HookConfig>,
    #[serde(default)]
    post_tool: Vec<HookConfig>,
}

/// Where the team's settings live in `workspace`.
pub fn path(workspace: &Path) -> PathBuf {
    agent_base::paths::team_dir(workspace).join("config.toml")
}

/// The user's own overrides, merged over the team's (`.agent/`'s
/// `.gitignore` leaves `*.local.toml` out of the repository).
pub fn local_path(workspace: &Path) -> PathBuf {
    agent_base::paths::team_dir(workspace).join("config.local.toml")
}

impl Settings {
    /// The defaults: compaction at 80%, no hooks.
    pub fn defaults(workspace: &Path) -> Self {
        Self {
            compact_at: DEFAULT_COMPACT_AT,
            pre_tool: Vec::new(),
            post_tool: Vec::new(),
            file: path(workspace),
        }
    }

    /// Reads `.agent/config.toml` (defaults when there is none). A file that
    /// does not parse, an unknown key or a value out of range is an error that
    /// names the file and the fix.
    pub fn load(workspace: &Path) -> Result<Self> {
        let mut settings = Self::defaults(workspace);
        // The team's file, then the user's own (ignored by git) over it.
        for file in [path(workspace), local_path(workspace)] {
            let text =
                agent_base::files::read_config(workspace, &file).map_err(anyhow::Error::msg)?;
            if let Some(text) = text {
                settings.apply(&text, &file)?;
            }
        }
        Ok(settings)
    }

    /// Applies one config file: its `compact_at` replaces, its hooks add.
    fn apply(&mut self, text: &str, file: &Path) -> Result<()> {
        let settings = self;
        let parsed: File = toml::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "{}: invalid config: {e}\n  fix: see `agent ask --help` and README (\"Skills, commands, hooks\") for its keys",
                file.display()
            )
        })?;
        if let Some(key) = parsed.rest.keys().find(|k| k.as_str() != "mcp_servers") {
            bail!(
                "{}: unknown key `{key}`\n  fix: the keys are compact_at, [[hooks.pre_tool]], [[hooks.post_tool]] and [mcp_servers.NAME]",
                file.display()
            );
        }
        if let Some(share) = parsed.compact_at {
            if !(0.0..=0.95).contains(&share) || share.is_nan() {
                bail!(
                    "{}: compact_at = {share} is not a share of the context window\n  fix: a number from 0.1 to 0.95 (0 turns compaction off), e.g. compact_at = 0.8",
                    file.display()
                );
            }
            settings.compact_at = share;
        }
        for (event, hooks) in [
            ("pre_tool", &parsed.hooks.pre_tool),
            ("post_tool", &parsed.hooks.post_tool),
        ] {
            for hook in hooks {
                if hook.command.trim().is_empty() {
                    bail!(
                        "{}: a [[hooks.{event}]] has an empty command\n  fix: command = \"path/to/script.sh\"",
                        file.display()
                    );
                }
                if hook.timeout_s == Some(0) || hook.timeout_s > Some(HOOK_MAX_TIMEOUT_S) {
                    bail!(
                        "{}: hook `{}` has timeout_s = {}\n  fix: 1 to {HOOK_MAX_TIMEOUT_S} seconds (default {HOOK_TIMEOUT_S})",
                        file.display(),
                        hook.command,
                        hook.timeout_s.unwrap_or_default()
                    );
                }
            }
        }
        let from_here = |mut hook: HookConfig| {
            hook.file = file.to_path_buf();
            hook
        };
        settings
            .pre_tool
            .extend(parsed.hooks.pre_tool.into_iter().map(from_here));
        settings
            .post_tool
            .extend(parsed.hooks.post_tool.into_iter().map(from_here));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Settings> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".agent")).unwrap();
        std::fs::write(path(dir.path()), text).unwrap();
        Settings::load(dir.path())
    }

    #[test]
    fn hooks_compact_at_and_mcp_servers_live_side_by_side() {
        let s = load(
            "compact_at = 0.5\n[mcp_servers.docs]\ncommand = \"x\"\n\
             [[hooks.pre_tool]]\nmatcher = \"run_cmd\"\ncommand = \"./check.sh\"\ntimeout_s = 5\n\
             [[hooks.post_tool]]\ncommand = \"lint\"\n",
        )
        .unwrap();
        assert_eq!(s.compact_at, 0.5);
        assert_eq!(s.pre_tool[0].matcher, "run_cmd");
        assert_eq!(s.pre_tool[0].timeout_s, Some(5));
        assert_eq!(s.post_tool[0].command, "lint");
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Settings::load(dir.path()).unwrap(),
            Settings::defaults(dir.path())
        );
    }

    #[test]
    fn a_local_file_is_merged_over_the_teams() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".agent")).unwrap();
        std::fs::write(
            path(dir.path()),
            "compact_at = 0.5\n[[hooks.pre_tool]]\ncommand = \"team.sh\"\n",
        )
        .unwrap();
        std::fs::write(
            local_path(dir.path()),
            "compact_at = 0.7\n[[hooks.post_tool]]\ncommand = \"mine.sh\"\n",
        )
        .unwrap();
        let s = Settings::load(dir.path()).unwrap();
        assert_eq!(s.compact_at, 0.7);
        assert_eq!(s.pre_tool[0].command, "team.sh");
        assert_eq!(s.post_tool[0].command, "mine.sh");
    }

    #[test]
    fn mistakes_name_the_file_and_the_fix() {
        for (text, says) in [
            ("compact_at = 1.5\n", "not a share"),
            ("compact = 0.5\n", "unknown key `compact`"),
            ("[[hooks.pre_tool]]\ncommand = \"\"\n", "empty command"),
            (
                "[[hooks.pre_tool]]\ncommand = \"x\"\ntimeout_s = 0\n",
                "timeout_s",
            ),
            ("[[hooks.pre_tools]]\ncommand = \"x\"\n", "pre_tools"),
            ("[[hooks.pre_tool]]\ncmd = \"x\"\n", "cmd"),
            ("compact_at = \n", "invalid config"),
        ] {
            let err = format!("{:#}", load(text).unwrap_err());
            assert!(err.contains(says), "{text}: {err}");
            assert!(err.contains("config.toml") && err.contains("fix:"), "{err}");
        }
    }
}
