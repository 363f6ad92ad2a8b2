//! Commands the policy cannot read. What a line runs, or what it runs on, may
//! be decided only at run time: `${c}rl`, `X=/; rm -rf $X`, `printf '...' |
//! sh`, `base64 -d | sh`, `awk 'BEGIN{system(...)}'`. Text rules cannot judge
//! these, so instead of passing them as safe the policy asks the user, even
//! in yolo mode. Inline code that names a network library is denied with the
//! other network rules when the network is off.
//!
//! This is a tripwire, not a fence: a script file can do anything its user
//! can. The OS sandbox is the fence.

use super::command_line::{basename, is_shell_c_flag, SimpleCommand, SHELLS};

/// Why a line needs the user's OK whatever the mode, or `None`.
pub(super) fn needs_asking(commands: &[SimpleCommand]) -> Option<String> {
    for (i, c) in commands.iter().enumerate() {
        let eff = c.effective();
        let Some(first) = eff.first() else { continue };
        if expands(first) {
            return Some(format!(
                "the program it runs is known only at run time (`{first}`)"
            ));
        }
        let name = basename(first);
        let args = &eff[1..];
        let fed_by_pipe = i > 0 && commands[i - 1].piped;
        let runs_code = SHELLS.contains(&name) || is_interpreter(name);
        if runs_code && fed_by_pipe && reads_code_from_stdin(name, args) {
            return Some(format!("`{name}` runs whatever the pipe feeds it"));
        }
        if (runs_code || matches!(name, "source" | ".")) && args.iter().any(|a| is_run_time_file(a))
        {
            return Some(format!("`{name}` runs code produced at run time"));
        }
        if let Some(code) = inline_code(name, args) {
            if let Some(how) = SPAWNS.iter().find(|m| code.contains(*m)) {
                return Some(format!(
                    "its inline {name} code starts other programs (`{}`), which the policy cannot see",
                    how.trim()
                ));
            }
        }
        if is_destructive(name, args) {
            if c.via_xargs() {
                return Some(format!(
                    "`{name}` gets the paths it deletes or changes from its input at run time"
                ));
            }
            let targets = super::command_line::operands(args);
            if let Some(w) = targets.iter().find(|w| expands(w)) {
                return Some(format!(
                    "`{name}` works on a path known only at run time (`{w}`)"
                ));
            }
            if let Some(w) = targets.iter().find(|w| **w == ".." || w.starts_with("../")) {
                return Some(format!("`{name}` reaches outside the workspace (`{w}`)"));
            }
        }
    }
    None
}

/// The network library or device an interpreter's inline code names, when it does.
pub(super) fn inline_network(name: &str, args: &[String]) -> Option<&'static str> {
    let found = |text: &str| NETWORK.iter().copied().find(|m| text.contains(m));
    // Modules loaded by flag: `perl -MLWP::Simple`, `ruby -rnet/http`.
    if matches!(name, "perl" | "ruby") {
        let flags = args
            .iter()
            .filter(|a| a.starts_with("-M") || a.starts_with("-r"));
        if let Some(m) = flags.filter_map(|a| found(a)).next() {
            return Some(m);
        }
    }
    found(inline_code(name, args)?)
}

/// A word the shell expands at run time: a variable or a command substitution.
fn expands(word: &str) -> bool {
    word.contains('$') || word.contains('`')
}

fn is_interpreter(name: &str) -> bool {
    name.starts_with("python")
        || matches!(
            name,
            "perl" | "ruby" | "node" | "nodejs" | "php" | "lua" | "tclsh" | "Rscript" | "deno"
        )
}

/// Process substitution or standard input named as a script file.
fn is_run_time_file(arg: &str) -> bool {
    arg == "<(...)"
        || arg == "/dev/stdin"
        || arg.starts_with("/dev/fd/")
        || arg.starts_with("/proc/self/fd/")
}

/// A shell or interpreter with no script argument reads its program from stdin.
fn reads_code_from_stdin(name: &str, args: &[String]) -> bool {
    /// Interpreter flags that give the program on the command line.
    const INLINE_FLAGS: &[&str] = &["-c", "-m", "-e", "-E", "-r", "-p", "--eval", "--print"];
    if SHELLS.contains(&name) {
        if args.iter().any(|a| a == "-s") {
            return true;
        }
        if args.iter().any(|a| is_shell_c_flag(a)) {
            return false;
        }
    } else if args.iter().any(|a| INLINE_FLAGS.contains(&a.as_str())) {
        return false;
    }
    match super::command_line::operands(args).first() {
        None => true,
        Some(first) => *first == "-" || is_run_time_file(first),
    }
}

/// The program text given on the command line: `python -c`, `perl -e`,
/// `node -e`, `php -r`, or an awk program.
fn inline_code<'a>(name: &str, args: &'a [String]) -> Option<&'a str> {
    let after = |flags: &[&str]| {
        args.iter()
            .position(|a| flags.contains(&a.as_str()))
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    };
    if name.starts_with("python") {
        return after(&["-c"]);
    }
    match name {
        "perl" | "ruby" => after(&["-e", "-E"]),
        "node" | "nodejs" | "deno" => after(&["-e", "--eval", "-p", "--print"]),
        "php" => after(&["-r"]),
        "lua" => after(&["-e"]),
        "awk" | "gawk" | "mawk" | "nawk" => {
            if args.iter().any(|a| a == "-f" || a.starts_with("--file")) {
                return None;
            }
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if matches!(a.as_str(), "-F" | "-v" | "--assign" | "--field-separator") {
                    i += 2;
                } else if a.starts_with('-') && a.len() > 1 {
                    i += 1;
                } else {
                    return Some(a);
                }
            }
            None
        }
        _ => None,
    }
}

/// Ways inline code starts other programs.
const SPAWNS: &[&str] = &[
    "system(",
    "system ",
    "subprocess",
    "popen",
    "Popen",
    "exec(",
    "execv",
    "execl",
    "spawn",
    "child_process",
    "shell_exec",
    "proc_open",
    "passthru",
    "pty.",
    "`",
    "qx",
    "%x",
    "| getline",
    "|getline",
    "| \"",
    "|\"",
];

/// Libraries and devices through which inline code reaches the network.
const NETWORK: &[&str] = &[
    "urllib",
    "urlopen",
    "requests",
    "http.client",
    "httplib",
    "httpx",
    "aiohttp",
    "socket",
    "ftplib",
    "smtplib",
    "telnetlib",
    "LWP",
    "HTTP::Tiny",
    "IO::Socket",
    "Net::",
    "net/http",
    "open-uri",
    "require('http",
    "require(\"http",
    "require('net",
    "require(\"net",
    "fetch(",
    "file_get_contents(\"http",
    "file_get_contents('http",
    "fsockopen",
    "/inet/",
    "/dev/tcp/",
    "/dev/udp/",
];

/// Commands that delete or change files wholesale.
fn is_destructive(name: &str, args: &[String]) -> bool {
    match name {
        "rm" | "rmdir" | "shred" | "unlink" | "dd" | "truncate" => true,
        "chmod" | "chown" | "chgrp" => super::command_line::has_recursive_flag(args),
        _ => false,
    }
}
