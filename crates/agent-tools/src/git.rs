//! Git when the agent runs it itself (the branch and status in the system
//! prompt), and what keeps a repository from running programs through it.
//!
//! A repository's configuration can make git run programs: `core.fsmonitor`
//! on every `git status`, hooks, clean filters for files whose stat changed,
//! external diff drivers. A cloned repository can ship such a `.git/config`,
//! and a command could write one. So [`run`] is the one way the agent calls
//! git: every such program turned off by command-line configuration (which
//! outranks the repository's), no system configuration, no optional index
//! writes, an environment with no secret in it, and inside the sandbox,
//! offline and with nothing writable. [`dangerous_keys`] names the keys a
//! command must not add to `.git/config` (see `state_guard`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long the agent waits for its own git call (a status of a huge tree).
const TIMEOUT: Duration = Duration::from_secs(5);

/// Settings that turn off every program the repository could name.
const SAFE_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.askPass=false",
    "core.alternateRefsCommand=",
    "core.gitProxy=",
    "diff.external=",
    "credential.helper=",
    "gpg.program=false",
    "protocol.allow=never",
];

/// `git ARGS` in `workspace`: its stdout when it succeeds, else None (no git,
/// not a repository, a timeout). Never runs a program the repository names.
pub fn run(workspace: &Path, args: &[&str]) -> Option<String> {
    let mut command = command(workspace)?;
    for setting in SAFE_CONFIG {
        command.args(["-c", setting]);
    }
    // A filter is named by the repository's attributes and defined in its
    // config: every driver the config defines is emptied (an empty command
    // is no filter), so none runs.
    for driver in filter_drivers(workspace) {
        for key in ["clean", "smudge", "process"] {
            command.args(["-c", &format!("filter.{driver}.{key}=")]);
        }
        command.args(["-c", &format!("filter.{driver}.required=false")]);
    }
    command.args(args);
    output(command)
}

/// The filter drivers git's configuration defines (`filter.NAME.*`).
/// `git config` reads configuration and runs nothing.
fn filter_drivers(workspace: &Path) -> Vec<String> {
    let Some(mut command) = command(workspace) else {
        return Vec::new();
    };
    command.args(["config", "--name-only", "--get-regexp", r"^filter\."]);
    let mut drivers: Vec<String> = output(command)
        .unwrap_or_default()
        .lines()
        .filter_map(|key| {
            let rest = key.strip_prefix("filter.")?;
            let (driver, _) = rest.rsplit_once('.')?;
            Some(driver.to_string())
        })
        .collect();
    drivers.sort();
    drivers.dedup();
    drivers
}

/// `git` with a clean environment, inside the sandbox where there is one.
fn command(workspace: &Path) -> Option<Command> {
    let sandbox = crate::fence::reader(&agent_policy::Policy::default());
    // Where the sandbox exists but cannot be set up for this call, git does
    // not run: the fence is not dropped for a status line.
    let mut command = match agent_sandbox::available() {
        true => agent_sandbox::command(sandbox.prepare().ok()?, "git"),
        false => Command::new("git"),
    };
    command
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // The user's own configuration (user name, safe.directory) is theirs.
    if let Some(home) = std::env::var_os("HOME") {
        command.env("HOME", home);
    }
    Some(command)
}

fn output(mut command: Command) -> Option<String> {
    let mut child = command.spawn().ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
    });
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait().ok()? {
            Some(status) => break status,
            None if started.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let out = reader.join().ok()?.ok()?;
    status
        .success()
        .then(|| String::from_utf8_lossy(&out).into_owned())
}

/// Keys in a git config file (its text) that make git run a program, with
/// their values: what a command may not add to `.git/config`. Includes are
/// among them, since an included file can hold any of the rest.
pub fn dangerous_keys(config: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut section = String::new();
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        let mut rest = line;
        if let Some(header) = line.strip_prefix('[') {
            let Some((header, after)) = header.split_once(']') else {
                continue;
            };
            section = section_name(header);
            rest = after.trim();
            if rest.is_empty() {
                continue;
            }
        }
        let (key, value) = match rest.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (rest, "true"),
        };
        let full = format!("{section}.{}", key.to_ascii_lowercase());
        if agent_policy::git_key_runs_a_program(&full, value) {
            found.push(format!("{full}={value}"));
        }
    }
    found
}

/// `core`, `filter.lfs`, `includeif.gitdir:~/x/`: the section as git names
/// its keys (section lower-cased, subsection kept).
fn section_name(header: &str) -> String {
    let header = header.trim();
    match header.split_once(char::is_whitespace) {
        Some((name, sub)) => format!(
            "{}.{}",
            name.to_ascii_lowercase(),
            sub.trim().trim_matches('"')
        ),
        None => header.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_run_programs_are_found_and_others_are_not() {
        let config = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch /tmp/pwned\n\
                      [core]\n\thooksPath = evil-hooks\n[user]\n\tname = Ada\n\
                      [filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\
                      [alias]\n\tst = status\n\tx = !sh -c 'id'\n\
                      [diff \"bin\"]\n\ttextconv = hexdump\n[include]\n\tpath = ../other\n";
        let keys = dangerous_keys(config);
        assert_eq!(
            keys,
            vec![
                "core.fsmonitor=touch /tmp/pwned",
                "core.hookspath=evil-hooks",
                "filter.lfs.clean=git-lfs clean -- %f",
                "alias.x=!sh -c 'id'",
                "diff.bin.textconv=hexdump",
                "include.path=../other",
            ]
        );
        assert!(dangerous_keys("[core]\n\tbare = false\n[user]\n\temail = a@b\n").is_empty());
    }

    /// A repository whose config runs a program on `git status` (fsmonitor),
    /// on hooks, and on a clean filter for every file: none runs.
    #[test]
    fn the_agents_git_runs_no_program_the_repository_names() {
        if Command::new("git").arg("--version").output().is_err() {
            agent_test_support::skip!("no git");
        }
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let marker = dir.path().join("ran");
        std::fs::create_dir(&repo).unwrap();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(&repo)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "one\n").unwrap();
        git(&["add", "a.txt"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "x",
        ]);
        let script = dir.path().join("evil.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\ntouch {}\ncat\n", marker.display()),
        )
        .unwrap();
        let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&script, executable).unwrap();
        let evil = script.display().to_string();
        git(&["config", "core.fsmonitor", &evil]);
        git(&["config", "filter.evil.clean", &evil]);
        git(&["config", "diff.external", &evil]);
        std::fs::write(repo.join(".gitattributes"), "* filter=evil\n").unwrap();
        // A changed stat makes status look at the content (the clean filter).
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(repo.join("a.txt"), "two\n").unwrap();

        let status = run(&repo, &["status", "--porcelain"]).expect("git status runs");
        assert!(status.contains("a.txt"), "{status}");
        assert!(run(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).is_some());
        assert!(!marker.exists(), "a program named by the repository ran");
        // The same repository does run it for a plain git: the test can fail.
        let _ = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&repo)
            .output();
        assert!(marker.exists(), "plain git ran the repository's program");
    }
}
