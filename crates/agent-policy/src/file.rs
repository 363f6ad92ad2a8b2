//! policy.toml: the team's file and the user's own over it, parsed, checked
//! and merged into a [`Policy`]; in an untrusted workspace, only the keys
//! that restrict.

use std::path::{Path, PathBuf};

use anyhow::Context;
use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use serde::Deserialize;

use crate::{fence, Mode, Policy, DEFAULT_CHECK_TIMEOUT_S, DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S};

/// The team's policy file, in the workspace's `.agent/`.
pub const POLICY_FILE: &str = "policy.toml";

/// The user's own policy in `.agent/`, applied over the team's (ignored by
/// git: `.agent/.gitignore` is `*.local.toml`).
pub const LOCAL_POLICY_FILE: &str = "policy.local.toml";

/// A user regex from policy.toml.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) pattern: String,
    matcher: RegexMatcher,
}

impl Rule {
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.matcher.is_match(text.as_bytes()).unwrap_or(false)
    }
}

/// `allow_network`: a switch, or the hosts commands may reach.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, expecting = "true, false, or a list of \"host:port\" rules")]
pub(crate) enum NetworkSetting {
    Switch(bool),
    Hosts(Vec<String>),
}

impl NetworkSetting {
    /// Whether it opens any network.
    pub(crate) fn opens(&self) -> bool {
        match self {
            Self::Switch(on) => *on,
            Self::Hosts(list) => !list.is_empty(),
        }
    }

    /// As written in a file.
    pub(crate) fn text(&self) -> String {
        match self {
            Self::Switch(on) => on.to_string(),
            Self::Hosts(list) => format!("{list:?}"),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    allow_network: Option<NetworkSetting>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    scrub_env: Vec<String>,
    #[serde(default)]
    env_pass: Vec<String>,
    timeout_s: Option<u64>,
    check_timeout_s: Option<u64>,
    #[serde(default)]
    protected_paths: Vec<String>,
    #[serde(default)]
    deny_read: Vec<String>,
    #[serde(default)]
    home_allow: Vec<String>,
    limits: Option<fence::LimitsFile>,
}

impl Policy {
    /// The built-in policy plus `.agent/policy.toml` of the workspace, then
    /// `.agent/policy.local.toml`, if any: every key, for a trusted workspace
    /// (see [`Policy::load_for`]).
    /// A malformed file is an error naming the file and the line.
    pub fn load(team_dir: &Path, mode: Mode) -> anyhow::Result<Self> {
        Self::load_for(team_dir, mode, true)
    }

    /// The built-in policy plus the team's `policy.toml`, then the user's own
    /// `policy.local.toml` (ignored by git) over it: every key when the
    /// workspace is `trusted`; else only the keys that restrict, and those
    /// that would loosen it ([`Policy::loosening`]) are listed in `held_back`.
    pub fn load_for(team_dir: &Path, mode: Mode, trusted: bool) -> anyhow::Result<Self> {
        let mut policy = Self::builtin(mode);
        for name in [POLICY_FILE, LOCAL_POLICY_FILE] {
            let path = team_dir.join(name);
            // Never through a link (`.agent` itself, or the file): a command
            // or a repository could point it at a policy of its choosing.
            for link in [team_dir, path.as_path()] {
                if std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()) {
                    anyhow::bail!(
                        "{} is a symlink: the agent never follows a link among the files that configure it\n  \
                         fix: replace the link with the file itself, or remove it",
                        link.display()
                    );
                }
            }
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            let mut file = parse_file(&text, &path)?;
            if !trusted {
                policy.held_back.extend(take_loosening(&mut file));
            }
            policy.apply_file(file, &path)?;
        }
        Ok(policy)
    }

    /// What a policy.toml's text would loosen, one `key = value` each
    /// (empty when it only restricts): what waits for workspace trust.
    pub fn loosening(text: &str, path: &Path) -> anyhow::Result<Vec<String>> {
        Ok(take_loosening(&mut parse_file(text, path)?))
    }

    /// Applies the text of a policy.toml (`path` only names it in errors).
    pub fn apply_toml(&mut self, text: &str, path: &Path) -> anyhow::Result<()> {
        self.apply_file(parse_file(text, path)?, path)
    }

    fn apply_file(&mut self, file: PolicyFile, path: &Path) -> anyhow::Result<()> {
        match file.allow_network {
            Some(NetworkSetting::Switch(n)) => {
                self.allow_network = n;
                self.network_allowlist = None;
            }
            Some(NetworkSetting::Hosts(list)) => {
                crate::network::check(&list)
                    .map_err(|e| anyhow::anyhow!("{}: allow_network: {e}", path.display()))?;
                // No host is no network.
                self.allow_network = !list.is_empty();
                self.network_allowlist = (!list.is_empty()).then_some(list);
            }
            None => {}
        }
        if let Some(t) = file.timeout_s {
            if t == 0 || t > MAX_TIMEOUT_S {
                anyhow::bail!(
                    "{}: timeout_s = {t} is out of range (1..={MAX_TIMEOUT_S})",
                    path.display()
                );
            }
            self.timeout_s = t;
        }
        if let Some(t) = file.check_timeout_s {
            if t > MAX_TIMEOUT_S {
                anyhow::bail!(
                    "{}: check_timeout_s = {t} is out of range (0..={MAX_TIMEOUT_S}; 0 turns the checkers off)",
                    path.display()
                );
            }
            self.check_timeout_s = t;
        }
        let compile = |list: &[String], key: &str| -> anyhow::Result<Vec<Rule>> {
            list.iter()
                .enumerate()
                .map(|(i, p)| {
                    RegexMatcher::new(p)
                        .map(|matcher| Rule {
                            pattern: p.clone(),
                            matcher,
                        })
                        .map_err(|e| {
                            anyhow::anyhow!(
                                "{}: {key}[{i}] `{p}` is not a valid regex: {e}",
                                path.display()
                            )
                        })
                })
                .collect()
        };
        self.deny.extend(compile(&file.deny, "deny")?);
        self.allow.extend(compile(&file.allow, "allow")?);
        for (i, g) in file.scrub_env.iter().enumerate() {
            if g.trim().is_empty() {
                anyhow::bail!("{}: scrub_env[{i}] is empty", path.display());
            }
        }
        self.scrub_env.extend(file.scrub_env);
        self.env_pass.extend(file.env_pass);
        // policy.toml sits in the workspace's `.agent/`: paths are the workspace's.
        let workspace = path
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."));
        self.protected_paths
            .extend(fence::expand_globs(workspace, &file.protected_paths));
        self.protected_globs
            .extend(file.protected_paths.iter().cloned());
        self.home_allow.extend(
            file.home_allow
                .iter()
                .filter_map(|e| fence::deny_read_path(e, workspace)),
        );
        self.deny_read.extend(
            file.deny_read
                .iter()
                .filter_map(|e| fence::deny_read_path(e, workspace)),
        );
        if let Some(limits) = &file.limits {
            limits.apply(&mut self.limits);
        }
        Ok(())
    }

    /// The policy file of a team folder, `.agent/` (whether or not it exists).
    pub fn file_path(team_dir: &Path) -> PathBuf {
        team_dir.join(POLICY_FILE)
    }
}

fn parse_file(text: &str, path: &Path) -> anyhow::Result<PolicyFile> {
    toml::from_str(text)
        .map_err(|e| anyhow::anyhow!("{}: invalid policy file: {e}", path.display()))
}

/// Removes from `file` what loosens the built-in policy, and says what it
/// was. Every key of policy.toml is here or restricts: `allow_network =
/// true` or a list of hosts, `allow` rules (they override built-in denials), `env_pass`
/// (variables handed to commands) and timeouts above
/// the defaults loosen; `deny`, `scrub_env` and lower timeouts only restrict.
/// A new key that widens what commands may do belongs here.
fn take_loosening(file: &mut PolicyFile) -> Vec<String> {
    let mut out = Vec::new();
    if file
        .allow_network
        .as_ref()
        .is_some_and(NetworkSetting::opens)
    {
        let setting = file.allow_network.take();
        out.push(format!(
            "allow_network = {}",
            setting.map(|s| s.text()).unwrap_or_default()
        ));
    }
    for rule in std::mem::take(&mut file.allow) {
        out.push(format!("allow = {rule:?}"));
    }
    for name in std::mem::take(&mut file.env_pass) {
        out.push(format!("env_pass = {name:?}"));
    }
    for path in std::mem::take(&mut file.home_allow) {
        out.push(format!("home_allow = {path:?}"));
    }
    if let Some(t) = file.timeout_s.filter(|t| *t > DEFAULT_TIMEOUT_S) {
        file.timeout_s = None;
        out.push(format!("timeout_s = {t}"));
    }
    if let Some(t) = file
        .check_timeout_s
        .filter(|t| *t > DEFAULT_CHECK_TIMEOUT_S)
    {
        file.check_timeout_s = None;
        out.push(format!("check_timeout_s = {t}"));
    }
    // Limits a repository sets may only be lower than the defaults.
    if file.limits.as_ref().is_some_and(fence::LimitsFile::loosens) {
        file.limits = None;
        out.push("[limits] above the defaults".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_network_takes_a_list_of_hosts_checked_and_held_back_untrusted() {
        let dir = tempfile::tempdir().unwrap();
        let list = "allow_network = [\"pypi.corp.example:443\", \"*.internal:8080\"]\n";
        std::fs::write(dir.path().join(POLICY_FILE), list).unwrap();
        let p = Policy::load(dir.path(), Mode::Confirm).unwrap();
        assert!(p.allow_network);
        assert_eq!(
            p.network_allowlist,
            Some(vec![
                "pypi.corp.example:443".to_string(),
                "*.internal:8080".to_string()
            ])
        );
        // The user's own `true` over the team's list opens everything.
        std::fs::write(dir.path().join(LOCAL_POLICY_FILE), "allow_network = true\n").unwrap();
        let p = Policy::load(dir.path(), Mode::Confirm).unwrap();
        assert!(p.allow_network && p.network_allowlist.is_none());
        std::fs::remove_file(dir.path().join(LOCAL_POLICY_FILE)).unwrap();
        // Untrusted, a list waits like `true`; an empty list is no network.
        let p = Policy::load_for(dir.path(), Mode::Confirm, false).unwrap();
        assert!(!p.allow_network && p.network_allowlist.is_none());
        assert!(
            p.held_back[0].starts_with("allow_network = [\"pypi"),
            "{:?}",
            p.held_back
        );
        std::fs::write(dir.path().join(POLICY_FILE), "allow_network = []\n").unwrap();
        let p = Policy::load_for(dir.path(), Mode::Confirm, false).unwrap();
        assert!(!p.allow_network && p.held_back.is_empty());
        for bad in [
            "allow_network = [\"pypi.corp.example\"]\n",
            "allow_network = \"yes\"\n",
        ] {
            std::fs::write(dir.path().join(POLICY_FILE), bad).unwrap();
            let e = Policy::load(dir.path(), Mode::Confirm)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("allow_network") || e.contains("host:port"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_policy_reached_through_a_symlink_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("cfg")).unwrap();
        std::fs::write(
            ws.join("cfg").join(LOCAL_POLICY_FILE),
            "allow_network = true\n",
        )
        .unwrap();
        // Issue 50: `ln -s cfg .agent`, then `.agent/x -> elsewhere`.
        std::os::unix::fs::symlink("cfg", ws.join(".agent")).unwrap();
        let e = Policy::load(&ws.join(".agent"), Mode::Yolo)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(".agent is a symlink") && e.contains("fix:"),
            "{e}"
        );
        std::fs::remove_file(ws.join(".agent")).unwrap();
        std::fs::create_dir(ws.join(".agent")).unwrap();
        std::os::unix::fs::symlink(
            "../cfg/policy.local.toml",
            ws.join(".agent").join(LOCAL_POLICY_FILE),
        )
        .unwrap();
        let e = Policy::load(&ws.join(".agent"), Mode::Yolo)
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy.local.toml is a symlink"), "{e}");
    }

    #[test]
    fn policy_file_deny_allow_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(POLICY_FILE),
            "deny = [\"^docker \"]\nallow = [\"^curl localhost\"]\nscrub_env = [\"MY_PRIVATE_*\"]\ntimeout_s = 30\n",
        )
        .unwrap();
        let p = Policy::load(dir.path(), Mode::Confirm).unwrap();
        assert_eq!(p.timeout_s, 30);
        let r = p.check_command("cd x &&  docker  run img");
        let r = r.denial().unwrap();
        assert!(r.contains("^docker "), "{r}");
        assert!(p.check_command("curl localhost:8080/health").is_allow());
        assert!(p
            .check_command("curl https://example.com")
            .denial()
            .is_some());
        // allow overrides one simple command, not the whole line.
        assert!(p
            .check_command("curl localhost:1 && rm -rf /")
            .denial()
            .is_some());
        assert!(p.is_secret_env("MY_PRIVATE_THING"));
        assert!(p.is_secret_env("my_private_thing"));

        std::fs::write(dir.path().join(POLICY_FILE), "allow_network = maybe\n").unwrap();
        let e = format!("{:#}", Policy::load(dir.path(), Mode::Confirm).unwrap_err());
        assert!(e.contains("policy.toml") && e.contains("line 1"), "{e}");

        std::fs::write(dir.path().join(POLICY_FILE), "deny = [\"(unclosed\"]\n").unwrap();
        let e = format!("{:#}", Policy::load(dir.path(), Mode::Confirm).unwrap_err());
        assert!(e.contains("policy.toml") && e.contains("deny[0]"), "{e}");

        std::fs::write(dir.path().join(POLICY_FILE), "allow_netwrok = true\n").unwrap();
        let e = format!("{:#}", Policy::load(dir.path(), Mode::Confirm).unwrap_err());
        assert!(e.contains("allow_netwrok"), "{e}");

        let empty = tempfile::tempdir().unwrap();
        let p = Policy::load(empty.path(), Mode::Yolo).unwrap();
        assert!(!p.allow_network);
        assert_eq!(p.timeout_s, DEFAULT_TIMEOUT_S);
    }

    #[test]
    fn an_untrusted_workspace_gets_only_the_keys_that_restrict() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(POLICY_FILE),
            "allow_network = true\nallow = [\"^curl \"]\ndeny = [\"^make \"]\n\
             scrub_env = [\"MINE_*\"]\ntimeout_s = 600\ncheck_timeout_s = 5\n",
        )
        .unwrap();
        let p = Policy::load_for(dir.path(), Mode::Confirm, false).unwrap();
        assert!(!p.allow_network);
        assert_eq!(p.timeout_s, DEFAULT_TIMEOUT_S);
        assert_eq!(p.check_timeout_s, 5, "a lower cap restricts");
        assert!(p.check_command("curl http://x").denial().is_some());
        assert!(p.check_command("make test").denial().is_some());
        assert!(p.is_secret_env("MINE_X"));
        assert_eq!(
            p.held_back,
            [
                "allow_network = true",
                "allow = \"^curl \"",
                "timeout_s = 600"
            ]
        );
        let trusted = Policy::load_for(dir.path(), Mode::Confirm, true).unwrap();
        assert!(trusted.allow_network && trusted.held_back.is_empty());
        assert!(trusted.check_command("curl http://x").is_allow());
        let only_restricting = "deny = [\"^x\"]\ntimeout_s = 10\n";
        assert!(Policy::loosening(only_restricting, Path::new("p.toml"))
            .unwrap()
            .is_empty());
    }
}
