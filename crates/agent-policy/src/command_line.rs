//! Shell splitting: a command line into simple commands, quotes removed and
//! wrappers stripped, nested command strings (`sh -c`, `eval`, `$(...)`,
//! backticks, `find -exec`) split too. Not a full shell grammar: enough for
//! the policy to see which programs a line runs and with what words.

use std::ops::ControlFlow;

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

/// Non-flag arguments (everything after `--` counts as an argument).
pub(super) fn operands(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut after_dashes = false;
    for a in args {
        if !after_dashes && a == "--" {
            after_dashes = true;
        } else if after_dashes || !a.starts_with('-') || a == "-" {
            out.push(a.as_str());
        }
    }
    out
}

/// Whether a `-r`/`-R` (alone or in a cluster) or `--recursive` comes before `--`.
pub(super) fn has_recursive_flag(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        a == "--recursive"
            || (a.starts_with('-') && !a.starts_with("--") && (a.contains('r') || a.contains('R')))
    })
}

/// The subcommand of a tool like `git`, skipping global flags (and their arguments).
pub(super) fn subcommand<'a>(args: &'a [String], with_arg: &[&str]) -> Option<&'a str> {
    let n = flags_len(args, with_arg);
    args.get(n).map(String::as_str)
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

/// A shell line being split: the input, where it is, and the command and
/// word being built.
struct Parser<'o> {
    out: &'o mut Vec<SimpleCommand>,
    depth: usize,
    chars: Vec<char>,
    /// The character being read.
    i: usize,
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
    let mut p = Parser {
        out,
        depth,
        chars: src.chars().collect(),
        i: 0,
        cur: SimpleCommand::default(),
        word: String::new(),
        in_word: false,
    };
    while p.i < p.chars.len() {
        if p.step().is_break() {
            break;
        }
        p.i += 1;
    }
    p.end_command(false);
}

impl Parser<'_> {
    /// Reads the character at `i` and what it opens, leaving `i` on the
    /// last character read; breaks at an unclosed substitution, which takes
    /// the rest of the line.
    fn step(&mut self) -> ControlFlow<()> {
        let c = self.chars[self.i];
        let next = self.chars.get(self.i + 1).copied();
        match c {
            ' ' | '\t' | '\r' => self.end_word(),
            '\n' | ';' | '(' | ')' => self.end_command(false),
            '&' | '|' => self.separator(c, next),
            '<' | '>' if next == Some('(') => return self.process_substitution(c),
            '<' | '>' => self.redirection(c),
            '#' if !self.in_word => {
                // A comment, up to the newline (which ends the command).
                while self.chars.get(self.i + 1).is_some_and(|&n| n != '\n') {
                    self.i += 1;
                }
            }
            '\'' => {
                self.in_word = true;
                self.i += 1;
                while self.i < self.chars.len() && self.chars[self.i] != '\'' {
                    self.word.push(self.chars[self.i]);
                    self.i += 1;
                }
            }
            '"' => self.double_quoted(),
            '`' => {
                self.in_word = true;
                self.backtick();
            }
            '$' if next == Some('(') => {
                self.in_word = true;
                let arithmetic = self.chars.get(self.i + 2) == Some(&'(');
                return self.dollar_paren(!arithmetic);
            }
            '\\' => {
                if let Some(e) = next {
                    if e != '\n' {
                        self.word.push(e);
                        self.in_word = true;
                    }
                    self.i += 1;
                }
            }
            _ => {
                self.word.push(c);
                self.in_word = true;
            }
        }
        ControlFlow::Continue(())
    }

    /// `&&`, `&`, `||`, `|`, `|&`; `&>` is a redirection.
    fn separator(&mut self, c: char, next: Option<char>) {
        match (c, next) {
            ('&', Some('>')) => {
                // `&>file`: a redirection, not a separator.
                self.end_word();
                self.cur.words.push("&>".into());
                self.i += 1;
            }
            ('&', _) => {
                if next == Some('&') {
                    self.i += 1;
                }
                self.end_command(false);
            }
            (_, Some('|')) => {
                self.i += 1;
                self.end_command(false);
            }
            _ => {
                if next == Some('&') {
                    self.i += 1;
                }
                self.end_command(true);
            }
        }
    }

    /// A redirection operator is a word of its own (`>`, `>>`, `>&`).
    fn redirection(&mut self, c: char) {
        self.end_word();
        let mut op = c.to_string();
        while let Some(n @ ('>' | '<' | '&' | '|')) = self.chars.get(self.i + 1).copied() {
            op.push(n);
            self.i += 1;
        }
        self.cur.words.push(op);
    }

    /// `<(...)` or `>(...)`: a nested command, and a word standing for it.
    fn process_substitution(&mut self, c: char) -> ControlFlow<()> {
        self.end_word();
        let i = self.i;
        if let Some(close) = matching_paren(&self.chars, i + 1) {
            let inner: String = self.chars[i + 2..close].iter().collect();
            self.nested(&inner);
            self.cur.words.push(format!("{c}(...)"));
            self.i = close;
            ControlFlow::Continue(())
        } else {
            let inner: String = self.chars[i + 2..].iter().collect();
            self.nested(&inner);
            ControlFlow::Break(())
        }
    }

    /// `$(...)` (or `$((...))`, not a command when `!command`), kept in the
    /// word as written.
    fn dollar_paren(&mut self, command: bool) -> ControlFlow<()> {
        let i = self.i;
        match matching_paren(&self.chars, i + 1) {
            Some(close) => {
                if command {
                    let inner: String = self.chars[i + 2..close].iter().collect();
                    self.nested(&inner);
                }
                self.word.extend(&self.chars[i..=close]);
                self.i = close;
                ControlFlow::Continue(())
            }
            None => {
                let inner: String = self.chars[i + 2..].iter().collect();
                self.nested(&inner);
                ControlFlow::Break(())
            }
        }
    }

    /// A backtick substitution, kept in the word as written.
    fn backtick(&mut self) {
        let i = self.i;
        let close = matching_backtick(&self.chars, i);
        let inner: String = self.chars[i + 1..close].iter().collect();
        self.nested(&inner);
        self.word
            .extend(&self.chars[i..close.min(self.chars.len() - 1) + 1]);
        self.i = close;
    }

    /// A double-quoted string: escapes and substitutions inside it.
    fn double_quoted(&mut self) {
        self.in_word = true;
        self.i += 1;
        while self.i < self.chars.len() && self.chars[self.i] != '"' {
            let d = self.chars[self.i];
            match d {
                '\\' => {
                    if let Some(&e) = self.chars.get(self.i + 1) {
                        if matches!(e, '"' | '\\' | '$' | '`') {
                            self.word.push(e);
                            self.i += 1;
                        } else if e == '\n' {
                            self.i += 1;
                        } else {
                            self.word.push(d);
                        }
                    }
                }
                '$' if self.chars.get(self.i + 1) == Some(&'(') => {
                    if let Some(close) = matching_paren(&self.chars, self.i + 1) {
                        let inner: String = self.chars[self.i + 2..close].iter().collect();
                        self.nested(&inner);
                        self.word.extend(&self.chars[self.i..=close]);
                        self.i = close;
                    } else {
                        self.word.push(d);
                    }
                }
                '`' => self.backtick(),
                _ => self.word.push(d),
            }
            self.i += 1;
        }
    }
}
