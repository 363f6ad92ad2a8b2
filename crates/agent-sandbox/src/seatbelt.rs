//! The sandbox on macOS: a Seatbelt profile run by `/usr/bin/sandbox-exec`,
//! with the same rules as Landlock and the namespaces on Linux. The profile
//! is built by a plain function, so it is tested on every system; only
//! running it needs macOS.
//!
//! The profile starts from `(allow default)` and takes away what the fence
//! is about (writes outside the writable folders, the network), as Bazel's
//! macOS sandbox does: a `(deny default)` profile breaks compilers and test
//! runners in ways that differ between macOS releases. Later rules win, so
//! each `allow` after a `deny` is an exception to it.

use std::path::{Path, PathBuf};

#[cfg(target_os = "macos")]
use super::Sandbox;

/// Where macOS keeps the tool; a fixed path, not `$PATH`, so a planted
/// `sandbox-exec` earlier in the path cannot stand in for it.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Device files any command may write (`> /dev/null`, the terminal).
const WRITABLE_DEVICES: &str = r##"    (literal "/dev/null")
    (literal "/dev/zero")
    (literal "/dev/dtracehelper")
    (literal "/dev/ptmx")
    (regex #"^/dev/tty")
    (regex #"^/dev/fd/")"##;

/// The profile for `sandbox`, and the `-D NAME=VALUE` parameters it reads
/// (the writable folders, so no path is ever quoted into the profile text).
/// Paths must be the real ones (`/private/tmp`, not `/tmp`): Seatbelt
/// matches after symlinks are resolved.
pub(crate) fn profile(
    writable: &[PathBuf],
    allow_network: bool,
) -> (String, Vec<(String, String)>) {
    let params: Vec<(String, String)> = writable
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("WRITABLE_{i}"), p.display().to_string()))
        .collect();
    let mut text = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
    text.push_str("(allow file-write*\n");
    for (name, _) in &params {
        text.push_str(&format!("    (subpath (param \"{name}\"))\n"));
    }
    text.push_str(WRITABLE_DEVICES);
    text.push_str(")\n");
    if !allow_network {
        // Every socket, Unix ones included (the Docker daemon, an
        // ssh-agent); the command's own Unix sockets under its writable
        // folders are the exception.
        text.push_str("(deny network*)\n");
        if !writable.is_empty() {
            text.push_str("(allow network*\n");
            for path in writable {
                let regex = format!("^{}/", regex_escape(path));
                text.push_str(&format!(
                    "    (local unix-socket (path-regex #\"{regex}\"))\n    (remote unix-socket (path-regex #\"{regex}\"))\n"
                ));
            }
            text.push_str(")\n");
        }
    }
    (text, params)
}

/// `path` as a literal inside an SBPL `#"..."` regex.
fn regex_escape(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        if "\\.^$|?*+()[]{}\"".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(target_os = "macos")]
pub use macos::*;

#[cfg(target_os = "macos")]
mod macos {
    use std::path::Path;
    use std::process::Command;

    use super::{profile, Sandbox, SANDBOX_EXEC};

    pub fn landlock_abi() -> Option<i32> {
        None
    }

    /// Seatbelt fences writes and the network; the read-only and hidden
    /// sets, capabilities and limits are Linux's.
    pub fn support() -> crate::Support {
        crate::Support::default()
    }

    /// macOS has no overlayfs: commands write the workspace directly.
    pub fn overlay_support(_: &Path) -> Result<(), String> {
        Err("macOS has no overlayfs; commands write the workspace directly".into())
    }

    pub fn describe() -> Result<String, String> {
        if Path::new(SANDBOX_EXEC).exists() {
            Ok(
                "Seatbelt (sandbox-exec): commands write only in the workspace and a private \
                temp dir, and reach no network and no Unix socket of the host's services \
                unless allow_network = true"
                    .into(),
            )
        } else {
            Err(format!(
                "{SANDBOX_EXEC} is missing, so commands cannot be sandboxed and each one asks \
                 first, even in --mode yolo"
            ))
        }
    }

    pub struct Prepared {
        profile: String,
        params: Vec<(String, String)>,
    }

    pub fn prepare(sandbox: &Sandbox) -> Result<Prepared, String> {
        describe()?;
        // Seatbelt cannot give a command a network of its own with one way
        // out: a list fails closed rather than open everything.
        if sandbox.allowlist.is_some() {
            return Err(
                "allow_network as a list of hosts needs Linux (a network namespace of the \
                 command's own); on macOS it is true or false"
                    .into(),
            );
        }
        let writable: Vec<_> = sandbox
            .writable
            .iter()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
            .collect();
        let (profile, params) = profile(&writable, sandbox.allow_network);
        Ok(Prepared { profile, params })
    }

    pub fn command(prepared: Prepared, program: &str) -> Command {
        let mut cmd = Command::new(SANDBOX_EXEC);
        cmd.arg("-p").arg(&prepared.profile);
        for (name, value) in &prepared.params {
            cmd.arg("-D").arg(format!("{name}={value}"));
        }
        cmd.arg("--").arg(program);
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_fences_writes_and_the_network() {
        let ws = PathBuf::from("/Users/me/my project (v2)");
        let tmp = PathBuf::from("/private/var/folders/x/T/agent-cmd-1");
        let (text, params) = profile(&[ws.clone(), tmp], false);
        assert!(text.starts_with("(version 1)\n(allow default)\n(deny file-write*)\n"));
        assert!(text.contains("(subpath (param \"WRITABLE_0\"))"), "{text}");
        assert!(text.contains("(subpath (param \"WRITABLE_1\"))"), "{text}");
        assert_eq!(params[0], ("WRITABLE_0".into(), ws.display().to_string()));
        assert!(text.contains("(literal \"/dev/null\")"), "{text}");
        // Denied first, then the command's own Unix sockets come back.
        let deny = text.find("(deny network*)").expect(&text);
        let allow = text.find("(allow network*").expect(&text);
        assert!(deny < allow, "{text}");
        assert!(
            text.contains(r#"(remote unix-socket (path-regex #"^/Users/me/my project \(v2\)/"))"#),
            "{text}"
        );
        // Balanced parentheses outside the regexes: sandbox-exec would
        // refuse the profile otherwise.
        let outside: String = text
            .split("#\"")
            .enumerate()
            .map(|(i, part)| match i {
                0 => part,
                _ => part.split_once('"').map_or("", |(_, rest)| rest),
            })
            .collect();
        let depth = outside.chars().try_fold(0i32, |d, c| {
            let d = d + match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            (d >= 0).then_some(d)
        });
        assert_eq!(depth, Some(0), "{outside}");
    }

    #[test]
    fn with_the_network_allowed_only_writes_are_fenced() {
        let (text, _) = profile(&[PathBuf::from("/w")], true);
        assert!(!text.contains("network"), "{text}");
        assert!(text.contains("(deny file-write*)"), "{text}");
    }
}
