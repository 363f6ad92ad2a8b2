//! The one place a command's sandbox is built ([`sandbox`]): `run_cmd`,
//! hooks, the checkers after an edit and the agent's own git all fence
//! their commands from here, so what is read-only, what is hidden and
//! which limits apply is decided once.
//!
//! - Read-only ([`protected_paths`]): the workspace's `.git` (a folder, or a
//!   `gitdir:` pointer file and the folders it points to), `.agent/`,
//!   `.mcp.json`, the instruction files (`AGENTS.md` anywhere, `CLAUDE.md`),
//!   and the policy's `protected_paths` (policy.toml's, and the files trusted
//!   MCP servers and hooks run). A command that must write `.git` (`git
//!   commit`, `git checkout -b`: `Policy::git_writer`) asks in every mode,
//!   and runs with it writable ([`allow_git_writes`]) and git's hooks and
//!   fsmonitor off ([`git_hardening_env`]). The model is told to ask the user
//!   or use the file tools for the rest.
//! - Hidden ([`secret_paths`]): the user's credentials ([`HOME_SECRETS`]:
//!   `~/.ssh`, `~/.aws`, `~/.config/gcloud`, `~/.kube`, `~/.netrc`,
//!   `~/.gnupg`, `~/.git-credentials`, `~/.npmrc`, ...), the agent's own
//!   configuration and state, `/etc/shadow`, `/etc/gshadow`, and the policy's
//!   `deny_read`; and the home folder but for the toolchains' folders and
//!   their caches and the git identity ([`HOME_ALLOW`], plus policy.toml's
//!   `home_allow`).
//! - The environment: an allowlist ([`agent_policy::secrets::ENV_PASS`] and
//!   policy.toml's `env_pass`), with secrets removed from it too.
//!
//! On macOS the same rules are a Seatbelt profile for `sandbox-exec`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use agent_policy::Policy;
use agent_sandbox::{Limits, Sandbox};

/// Files the agent (and other coding agents) read as instructions, in any
/// folder for `AGENTS.md` and at the root for the rest.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// Credentials under the home folder: readable by no command.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".gnupg",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/git/credentials",
    ".pgpass",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".config/hub",
    ".config/op",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
];

/// What commands see of the home folder (the rest is hidden): where
/// toolchains, interpreters and their caches live, and the user's git
/// identity. Their credential files stay hidden ([`HOME_SECRETS`]).
/// policy.toml's `home_allow` adds to it.
pub const HOME_ALLOW: &[&str] = &[
    ".cargo",
    ".rustup",
    ".local/bin",
    ".local/lib",
    ".npm",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".pyenv",
    ".rbenv",
    ".gem",
    ".conda",
    "miniconda3",
    "anaconda3",
    ".sdkman",
    ".gradle",
    ".m2",
    "go",
    ".ghcup",
    ".cabal",
    ".stack",
    ".elan",
    ".opam",
    ".dotnet",
    ".nuget/packages",
    ".cache/pip",
    ".cache/uv",
    ".cache/pypoetry",
    ".cache/go-build",
    ".cache/yarn",
    ".cache/pnpm",
    ".cache/ms-playwright",
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
];

/// System files with secrets.
const SYSTEM_SECRETS: &[&str] = &["/etc/shadow", "/etc/gshadow"];

/// Folders looked through for nested `AGENTS.md` (a bounded walk that
/// skips what git ignores, such as `target/` and `node_modules/`).
const MAX_WALK: usize = 50_000;

/// The sandbox for a command in the workspace at `root` under `policy`:
/// writes in the workspace, the network as the policy says, the read-only
/// and hidden sets, the policy's limits.
pub fn sandbox(root: &Path, policy: &Policy) -> Sandbox {
    let mut sandbox = reader(policy);
    sandbox.home = home(policy);
    sandbox.writable = vec![root.to_path_buf()];
    sandbox.allow_network = policy.allow_network;
    sandbox.allowlist = allowlist(policy);
    sandbox.read_only = protected_paths(root);
    sandbox
        .read_only
        .extend(policy.protected_paths.iter().cloned());
    // The administrator's: relative to the workspace, and only those there.
    sandbox.read_only.extend(
        policy
            .managed_paths
            .iter()
            .map(|p| root.join(p))
            .filter(|p| p.exists()),
    );
    sandbox
}

/// The policy's network allowlist as the sandbox's proxy judges it: the
/// rule that names the host and port a command asked for (None where the
/// policy opens the whole network or none of it).
pub fn allowlist(policy: &Policy) -> Option<agent_sandbox::Allowlist> {
    let rules = policy
        .network_allowlist
        .clone()
        .filter(|_| policy.allow_network)?;
    Some(agent_sandbox::Allowlist::new(move |host, port| {
        agent_policy::network::allowed_by(&rules, host, port)
    }))
}

/// What a command's connections through the allowlist's proxy were, one
/// line each (empty without an allowlist or connections): for its output
/// and the audit trail.
pub fn network_log(sandbox: Option<&Sandbox>) -> Vec<String> {
    sandbox
        .and_then(|s| s.allowlist.as_ref())
        .map(|a| a.take_log().iter().map(ToString::to_string).collect())
        .unwrap_or_default()
}

/// The home folder as commands see it: [`HOME_ALLOW`] and the policy's
/// `home_allow` (None without a home folder).
fn home(policy: &Policy) -> Option<agent_sandbox::Home> {
    let dir = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
    let mut keep: Vec<PathBuf> = HOME_ALLOW.iter().map(|p| dir.join(p)).collect();
    keep.extend(policy.home_allow.iter().cloned());
    Some(agent_sandbox::Home { dir, keep })
}

/// Keeps a program installed in the home folder in sight of a command
/// (`venv/bin/python`, `node_modules/.bin/tsc`): its installation as found
/// (through a link such as a linked `node_modules`) and as it really is.
pub(crate) fn keep_installation(home: &mut agent_sandbox::Home, program: &Path) {
    let found = program.parent().and_then(Path::parent);
    let real = program.canonicalize().ok();
    let installs = [
        found.and_then(|d| d.canonicalize().ok()),
        real.as_deref()
            .and_then(Path::parent)
            .and_then(Path::parent)
            .map(Path::to_path_buf),
    ];
    let dir = home.dir.clone();
    home.keep
        .extend(installs.into_iter().flatten().filter(|d| *d != dir));
}

/// A long-lived program the workspace defines (an MCP server), started in
/// the sandbox: the workspace writable but for its read-only set, the
/// hidden set hidden, `tmp` its temp folder, the network open only when its
/// trust says so. `Ok(None)` where this system has no sandbox and the
/// policy allows going without; an error where the policy requires one.
pub fn program(
    root: &Path,
    policy: &Policy,
    program: &str,
    args: &[String],
    allow_network: bool,
    tmp: &Path,
) -> Result<Option<std::process::Command>, String> {
    if !policy.sandbox || !agent_sandbox::available() {
        if policy.require_sandbox {
            return Err("the policy requires the command sandbox, which this system lacks".into());
        }
        return Ok(None);
    }
    let mut fence = sandbox(root, policy);
    // A server trusted with the network gets all of it; else the policy's.
    if allow_network {
        fence.allow_network = true;
        fence.allowlist = None;
    }
    // What its definition names by absolute path stays in sight in a hidden
    // home: its program's installation (a virtualenv's `bin/python`: the
    // environment) and the folders of the files it is given.
    if let Some(home) = fence.home.as_mut() {
        if Path::new(program).is_absolute() {
            keep_installation(home, Path::new(program));
        }
        for path in args
            .iter()
            .map(Path::new)
            .filter(|p| p.is_absolute() && p.exists())
        {
            home.keep.extend(
                path.parent()
                    .filter(|d| *d != home.dir)
                    .map(Path::to_path_buf),
            );
        }
    }
    std::fs::create_dir_all(tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fence.writable.push(tmp.to_path_buf());
    let prepared = fence.prepare()?;
    let mut cmd = agent_sandbox::command(prepared, program);
    for var in ["TMPDIR", "TMP", "TEMP"] {
        cmd.env(var, tmp);
    }
    cmd.envs(fence.proxy_env());
    Ok(Some(cmd))
}

/// A sandbox where nothing is writable (so no read-only set is needed),
/// offline, with the hidden set and the policy's limits: the agent's own
/// git.
pub fn reader(policy: &Policy) -> Sandbox {
    let mut deny_read = secret_paths();
    deny_read.extend(policy.deny_read.iter().cloned());
    let limits = &policy.limits;
    Sandbox {
        deny_read,
        limits: Limits {
            processes: limits.processes,
            memory_mb: limits.memory_mb,
            file_size_mb: limits.file_size_mb,
            cpu_s: limits.cpu_s,
        },
        ..Sandbox::default()
    }
}

/// The workspace's own read-only set (existing paths only).
pub fn protected_paths(root: &Path) -> Vec<PathBuf> {
    let mut out = git_paths(root);
    out.push(root.join(".agent"));
    out.push(root.join(".mcp.json"));
    out.extend(INSTRUCTION_FILES.iter().map(|f| root.join(f)));
    out.extend(nested_instructions(root));
    out.retain(|p| std::fs::symlink_metadata(p).is_ok());
    out.sort();
    out.dedup();
    out
}

/// `.git`, and where it is a `gitdir:` pointer (a worktree, a submodule),
/// the git folder it names and that folder's common dir.
pub fn git_paths(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let mut out = vec![dot_git.clone()];
    let Ok(text) = std::fs::read_to_string(&dot_git) else {
        return out; // a folder, or none
    };
    let Some(dir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
        return out;
    };
    let gitdir = root.join(dir.trim());
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        out.push(gitdir.join(common.trim()));
    }
    out.push(gitdir);
    out.iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .collect()
}

/// `AGENTS.md` files below the root, as far as a bounded walk reaches.
fn nested_instructions(root: &Path) -> Vec<PathBuf> {
    ignore::WalkBuilder::new(root)
        .max_depth(Some(12))
        .build()
        .flatten()
        .take(MAX_WALK)
        .filter(|e| e.depth() > 1 && e.file_name() == INSTRUCTION_FILES[0])
        .map(|e| e.into_path())
        .collect()
}

/// The built-in deny-read set: credentials under the home folder, the
/// agent's own configuration and state folders, the system's password
/// hashes.
pub fn secret_paths() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(home);
        out.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
    }
    out.extend(agent_base::paths::config_dir());
    out.extend(agent_base::paths::state_root());
    out.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
    out
}

/// Lets an approved git command write the repository: `.git` and the
/// folders a `gitdir:` pointer names leave the read-only set, and those
/// outside the workspace become writable.
pub fn allow_git_writes(sandbox: &mut Sandbox, root: &Path) {
    let git = git_paths(root);
    sandbox
        .read_only
        .retain(|p| !git.iter().any(|g| p.starts_with(g)));
    // What makes git run a program stays read-only: its config, hooks and
    // info (a planted hook would run at the user's next commit).
    for dir in &git {
        for name in ["config", "config.worktree", "hooks", "info"] {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok() {
                sandbox.read_only.push(path);
            }
        }
    }
    for dir in git.into_iter().filter(|g| g.is_dir()) {
        if !sandbox.writable.iter().any(|w| dir.starts_with(w)) {
            sandbox.writable.push(dir);
        }
    }
}

/// Configuration given to every git a command with `.git` writable runs
/// (as `GIT_CONFIG_*` variables, which outrank the repository's files): no
/// hooks, no fsmonitor, no pager or external diff the repository names,
/// as the agent's own git ([`crate::git`]).
pub fn git_hardening_env() -> Vec<(OsString, OsString)> {
    const SETTINGS: &[(&str, &str)] = &[
        ("core.hooksPath", "/dev/null"),
        ("core.fsmonitor", "false"),
        ("core.pager", "cat"),
        ("core.alternateRefsCommand", ""),
        ("diff.external", ""),
    ];
    let mut env = vec![(
        OsString::from("GIT_CONFIG_COUNT"),
        OsString::from(SETTINGS.len().to_string()),
    )];
    for (i, (key, value)) in SETTINGS.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}").into(), (*key).into()));
        env.push((format!("GIT_CONFIG_VALUE_{i}").into(), (*value).into()));
    }
    env
}

/// What the model is told when a command hit the read-only set.
pub const READ_ONLY_HINT: &str = "the sandbox keeps .git, .agent/, .mcp.json, AGENTS.md and the \
policy's protected paths read-only for commands (a write fails with \"Read-only file system\", \
a rename or removal with \"Device or resource busy\"). Do not try to get around it. Ask the user, \
or change such a file with edit or write_file, which show the user a diff and ask; run a git \
command that writes the repository (git commit, git checkout -b) on its own, so the user can \
approve it. Build folders git ignores (target/, node_modules/) are written directly and \
cannot be removed whole (\"Device or resource busy\"): remove what is inside them instead \
(rm -rf target/*)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policys_host_list_becomes_the_sandboxs_allowlist_and_its_log_the_output() {
        let mut policy = Policy::default();
        policy.network_allowlist = Some(vec!["*.corp.example:443".into()]);
        // Off wins over a list.
        assert!(allowlist(&policy).is_none());
        policy.allow_network = true;
        let dir = tempfile::tempdir().unwrap();
        let sandbox = sandbox(dir.path(), &policy);
        let allow = sandbox.allowlist.as_ref().expect("an allowlist");
        assert!(sandbox.offline());
        assert_eq!(
            (allow.judge)("pypi.corp.example", 443).as_deref(),
            Some("*.corp.example:443")
        );
        assert_eq!((allow.judge)("pypi.corp.example", 80), None);
        assert_eq!((allow.judge)("corp.example.evil", 443), None);
        assert!(sandbox.proxy_env().iter().any(|(k, _)| *k == "HTTPS_PROXY"));
        allow.log.lock().unwrap().push(agent_sandbox::Attempt {
            host: "evil.example".into(),
            port: 443,
            rule: None,
            error: None,
        });
        let mut output = "ok".to_string();
        crate::shell::note_network("curl", Some(&sandbox), &mut output);
        assert_eq!(
            output,
            "ok\n[network allowlist]\nrefused evil.example:443 (no rule of allow_network names it)"
        );
        // The whole network: no proxy, no variables.
        policy.network_allowlist = None;
        let open = super::sandbox(dir.path(), &policy);
        assert!(open.allowlist.is_none() && !open.offline() && open.proxy_env().is_empty());
    }

    #[test]
    fn the_read_only_set_follows_a_worktree_pointer_and_the_hidden_set_has_the_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(wt.join("src/deep")).unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        let gitdir = main.join(".git/worktrees/wt");
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        std::fs::write(wt.join("AGENTS.md"), "x").unwrap();
        std::fs::write(wt.join("src/deep/AGENTS.md"), "x").unwrap();
        std::fs::write(wt.join("src/deep/other.md"), "x").unwrap();
        let paths = protected_paths(&wt);
        let main_git = main.join(".git").canonicalize().unwrap();
        for want in [
            wt.join(".git"),
            gitdir.canonicalize().unwrap(),
            main_git.clone(),
            wt.join("AGENTS.md"),
            wt.join("src/deep/AGENTS.md"),
        ] {
            let want = want.canonicalize().unwrap_or(want);
            assert!(paths.contains(&want), "{want:?} not in {paths:?}");
        }
        assert!(!paths.iter().any(|p| p.ends_with("other.md")));
        assert!(
            !paths.iter().any(|p| p.ends_with(".mcp.json")),
            "missing ones are left out"
        );

        let mut sandbox = Sandbox::new(vec![wt.clone()]);
        sandbox.read_only = paths;
        allow_git_writes(&mut sandbox, &wt);
        assert!(
            sandbox.writable.contains(&main_git),
            "{:?}",
            sandbox.writable
        );
        assert!(!sandbox.read_only.iter().any(|p| p.ends_with(".git")));
        assert!(sandbox.read_only.iter().any(|p| p.ends_with("AGENTS.md")));

        let secrets = secret_paths();
        assert!(secrets.iter().any(|p| p.ends_with(".aws")), "{secrets:?}");
        assert!(secrets.contains(&PathBuf::from("/etc/shadow")));
    }
}
