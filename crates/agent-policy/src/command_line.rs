//! Shell splitting: a command line into simple commands, quotes removed and
//! wrappers stripped, nested command strings (`sh -c`, `eval`, `$(...)`,
//! backticks, `find -exec`) split too. Not a full shell grammar: enough for
//! the policy to see which programs a line runs and with what words.

/// One simple command of a shell line: its words with quotes removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    /// Its output is piped (`|`) into the next command.
    pub piped: bool,
}

impl SimpleCommand {
    /// The words after wrappers (`env X=1`, `nohup`, `timeout 5`, `time`, ...).
    pub fn effective(&self) -> &[String] {
        let mut w: &[String] = &self.words;
        loop {
            let Some(first) = w.first() else { return w };
            let name = basename(first);
            let skip = if first == "{" || first == "!" || is_assignment(first) {
                1
            } else if matches!(
                name,
                "then"
                    | "do"
                    | "else"
                    | "elif"
                    | "if"
                    | "while"
                    | "until"
                    | "time"
                    | "nohup"
                    | "command"
                    | "builtin"
                    | "exec"
                    | "unbuffer"
            ) {
                1 + flags_len(&w[1..], &[])
            } else if name == "env" {
                let mut n = 1 + flags_len(&w[1..], &["-u", "-C", "-S", "--unset", "--chdir"]);
                while w.get(n).is_some_and(|x| is_assignment(x)) {
                    n += 1;
                }
                n
            } else if matches!(name, "nice" | "ionice" | "stdbuf" | "chrt" | "taskset") {
                1 + flags_len(&w[1..], &["-n", "-c", "-p", "-i", "-o", "-e"])
            } else if name == "timeout" {
                let n = 1 + flags_len(&w[1..], &["-s", "-k", "--signal", "--kill-after"]);
                n + 1 // the duration
            } else if name == "xargs" {
                1 + flags_len(
                    &w[1..],
                    &["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "-i"],
                )
            } else if name == "watch" {
                1 + flags_len(&w[1..], &["-n", "-d"])
            } else {
                0
            };
            if skip == 0 {
                return w;
            }
            w = &w[skip.min(w.len())..];
        }
    }

    /// Whether its arguments come from its input at run time (`xargs rm -rf`).
    pub fn via_xargs(&self) -> bool {
        let wrapped = self.words.len() - self.effective().len();
        self.words[..wrapped].iter().any(|w| basename(w) == "xargs")
    }

    /// The normalised text of the command: words joined by one space.
    pub fn text(&self) -> String {
        self.words.join(" ")
    }
}

/// How many leading words are flags (and their arguments, for `with_arg` flags).
pub(super) fn flags_len(words: &[String], with_arg: &[&str]) -> usize {
    let mut n = 0;
    while let Some(w) = words.get(n) {
        if w == "--" {
            return n + 1;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        n += 1;
        if with_arg.contains(&w.as_str()) {
            n += 1;
        }
    }
    n.min(words.len())
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// A shell's `-c` (or a cluster holding it, `-ec`): the next word is the script.
pub(super) fn is_shell_c_flag(word: &str) -> bool {
    word.starts_with('-') && !word.starts_with("--") && word.contains('c')
}

pub(super) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Splits a shell line into simple commands (see the module docs).
pub fn split_commands(line: &str) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    parse_into(line, &mut out, 0);
    out
}

pub(super) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "busybox"];

struct Parser<'o> {
    out: &'o mut Vec<SimpleCommand>,
    depth: usize,
    cur: SimpleCommand,
    word: String,
    in_word: bool,
}

impl Parser<'_> {
    fn end_word(&mut self) {
        if self.in_word {
            self.cur.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    fn end_command(&mut self, piped: bool) {
        self.end_word();
        if self.cur.words.is_empty() {
            return;
        }
        let mut cmd = std::mem::take(&mut self.cur);
        cmd.piped = piped;
        // Nested command strings: `sh -c '...'`, `eval ...`.
        let eff = cmd.effective().to_vec();
        if let Some(first) = eff.first() {
            let name = basename(first);
            if SHELLS.contains(&name) {
                if let Some(i) = eff.iter().position(|w| is_shell_c_flag(w)) {
                    if let Some(script) = eff.get(i + 1) {
                        parse_into(script, self.out, self.depth + 1);
                    }
                }
            } else if name == "eval" {
                parse_into(&eff[1..].join(" "), self.out, self.depth + 1);
            } else if name == "find" {
                // `find ... -exec CMD ARGS ;` runs CMD: a command of its own.
                let mut rest = &eff[1..];
                while let Some(at) = rest
                    .iter()
                    .position(|w| matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
                {
                    let tail = &rest[at + 1..];
                    let end = tail
                        .iter()
                        .position(|w| w == ";" || w == "+")
                        .unwrap_or(tail.len());
                    self.out.push(SimpleCommand {
                        words: tail[..end].to_vec(),
                        piped: false,
                    });
                    rest = &tail[end.min(tail.len())..];
                }
            }
        }
        self.out.push(cmd);
    }

    fn nested(&mut self, inner: &str) {
        parse_into(inner, self.out, self.depth + 1);
    }
}

/// Index of the `)` closing the `(` at `open`, respecting quotes; `None` when unbalanced.
fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the closing backtick for the one at `open`.
fn matching_backtick(chars: &[char], open: usize) -> usize {
    let mut i = open + 1;
    while i < chars.len() && chars[i] != '`' {
        if chars[i] == '\\' {
            i += 1;
        }
        i += 1;
    }
    i.min(chars.len())
}

fn parse_into(src: &str, out: &mut Vec<SimpleCommand>, depth: usize) {
    if depth > 8 {
        return;
    }
    let chars: Vec<char> = src.chars().collect();
    let mut p = Parser {
        out,
        depth,
        cur: SimpleCommand::default(),
        word: String::new(),
        in_word: false,
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\r' => p.end_word(),
            '\n' | ';' | '(' | ')' => p.end_command(false),
            '&' => {
                if next == Some('>') {
                    // `&>file`: a redirection, not a separator.
                    p.end_word();
                    p.cur.words.push("&>".into());
                    i += 1;
                } else {
                    if next == Some('&') {
                        i += 1;
                    }
                    p.end_command(false);
                }
            }
            '|' => {
                if next == Some('|') {
                    i += 1;
                    p.end_command(false);
                } else {
                    if next == Some('&') {
                        i += 1;
                    }
                    p.end_command(true);
                }
            }
            '<' | '>' if next == Some('(') => {
                // Process substitution: a nested command.
                p.end_word();
                if let Some(close) = matching_paren(&chars, i + 1) {
                    let inner: String = chars[i + 2..close].iter().collect();
                    p.nested(&inner);
                    p.cur.words.push(format!("{c}(...)"));
                    i = close;
                } else {
                    let inner: String = chars[i + 2..].iter().collect();
                    p.nested(&inner);
                    break;
                }
            }
            '<' | '>' => {
                // A redirection operator is a word of its own (`>`, `>>`, `>&`).
                p.end_word();
                let mut op = c.to_string();
                while let Some(n @ ('>' | '<' | '&' | '|')) = chars.get(i + 1).copied() {
                    op.push(n);
                    i += 1;
                }
                p.cur.words.push(op);
            }
            '#' if !p.in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '\'' => {
                p.in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    p.word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                p.in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    let d = chars[i];
                    match d {
                        '\\' => {
                            if let Some(&e) = chars.get(i + 1) {
                                if matches!(e, '"' | '\\' | '$' | '`') {
                                    p.word.push(e);
                                    i += 1;
                                } else if e == '\n' {
                                    i += 1;
                                } else {
                                    p.word.push(d);
                                }
                            }
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            if let Some(close) = matching_paren(&chars, i + 1) {
                                let inner: String = chars[i + 2..close].iter().collect();
                                p.nested(&inner);
                                p.word.extend(&chars[i..=close]);
                                i = close;
                            } else {
                                p.word.push(d);
                            }
                        }
                        '`' => {
                            let close = matching_backtick(&chars, i);
                            let inner: String = chars[i + 1..close].iter().collect();
                            p.nested(&inner);
                            p.word.extend(&chars[i..close.min(chars.len() - 1) + 1]);
                            i = close;
                        }
                        _ => p.word.push(d),
                    }
                    i += 1;
                }
            }
            '`' => {
                p.in_word = true;
                let close = matching_backtick(&chars, i);
                let inner: String = chars[i + 1..close].iter().collect();
                p.nested(&inner);
                p.word.extend(&chars[i..close.min(chars.len() - 1) + 1]);
                i = close;
            }
            '$' if next == Some('(') => {
                p.in_word = true;
                let arithmetic = chars.get(i + 2) == Some(&'(');
                match matching_paren(&chars, i + 1) {
                    Some(close) => {
                        if !arithmetic {
                            let inner: String = chars[i + 2..close].iter().collect();
                            p.nested(&inner);
                        }
                        p.word.extend(&chars[i..=close]);
                        i = close;
                    }
                    None => {
                        let inner: String = chars[i + 2..].iter().collect();
                        p.nested(&inner);
                        break;
                    }
                }
            }
            '\\' => {
                if let Some(e) = next {
                    if e != '\n' {
                        p.word.push(e);
                        p.in_word = true;
                    }
                    i += 1;
                }
            }
            _ => {
                p.word.push(c);
                p.in_word = true;
            }
        }
        i += 1;
    }
    p.end_command(false);
}
