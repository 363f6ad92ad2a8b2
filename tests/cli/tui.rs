//! The terminal UI through the real binary on a pseudo-terminal of a fixed
//! size, its screen parsed by `vt100` as a terminal would show it, with
//! `--script` playing the model: what the user sees, and what is on disk.

use crate::agent::{repo, write_script, writes_new_py};
use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize};

const ROWS: u16 = 40;
const COLS: u16 = 110;
const WAIT: Duration = Duration::from_secs(60);

/// A program on a pseudo-terminal, and the screen it draws.
struct Term {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

/// The replies a terminal gives to the queries the UI sends: the cursor's
/// position (`CSI 6n`) and the primary device attributes (`CSI c`, which
/// also answers "no keyboard protocol").
fn answer_queries(
    bytes: &[u8],
    parser: &Mutex<vt100::Parser>,
    writer: &Mutex<Box<dyn Write + Send>>,
) {
    let mut rest = bytes;
    while let Some(at) = find(rest, b"\x1b[") {
        let (before, after) = rest.split_at(at);
        parser.lock().unwrap().process(before);
        let (reply, used) = if after.starts_with(b"\x1b[6n") {
            let (row, col) = parser.lock().unwrap().screen().cursor_position();
            (Some(format!("\x1b[{};{}R", row + 1, col + 1)), 4)
        } else if after.starts_with(b"\x1b[c") {
            (Some("\x1b[?62;22c".to_string()), 3)
        } else {
            (None, 2)
        };
        parser.lock().unwrap().process(&after[..used]);
        if let Some(reply) = reply {
            let mut w = writer.lock().unwrap();
            let _ = w.write_all(reply.as_bytes());
            let _ = w.flush();
        }
        rest = &after[used..];
    }
    parser.lock().unwrap().process(rest);
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl Term {
    /// `sh -c LINE` in `dir`, with the test's own homes.
    fn shell(dir: &Path, line: &str) -> Option<Term> {
        let pty = portable_pty::native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .ok()?;
        let mut cmd = CommandBuilder::new("sh");
        cmd.args(["-c", line]);
        cmd.cwd(dir);
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_CONFIG_HOME", dir.join(".git/test-config"));
        for (key, value) in common::state_env() {
            cmd.env(key, value);
        }
        let child = pty.slave.spawn_command(cmd).ok()?;
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().ok()?;
        let writer = Arc::new(Mutex::new(pty.master.take_writer().ok()?));
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(ROWS).unwrap(),
            std::num::NonZeroU16::new(COLS).unwrap(),
            5000,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        {
            let (parser, writer, raw) = (parser.clone(), writer.clone(), raw.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    raw.lock().unwrap().extend_from_slice(&buf[..n]);
                    answer_queries(&buf[..n], &parser, &writer);
                }
            });
        }
        Some(Term {
            child,
            writer,
            parser,
            raw,
            _master: pty.master,
        })
    }

    /// `agent ARGS` in `dir`.
    fn agent(dir: &Path, args: &str) -> Option<Term> {
        Term::shell(dir, &format!("{} {args}", env!("CARGO_BIN_EXE_agent")))
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// The screen's rows, trailing spaces cut.
    fn rows(&self) -> Vec<String> {
        self.screen()
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// Waits until the screen shows `needle`; fails with the screen if it never does.
    fn wait_for(&self, needle: &str) -> String {
        self.wait_for_within(needle, WAIT)
    }

    fn wait_for_within(&self, needle: &str, limit: Duration) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            if started.elapsed() > limit {
                panic!("the screen never showed {needle:?}:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn send(&self, keys: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(keys.as_bytes()).unwrap();
        w.flush().unwrap();
        drop(w);
        // Keys one read apart, as a person types (a paste is bracketed).
        std::thread::sleep(Duration::from_millis(150));
    }

    /// Types `text`, then Enter.
    fn submit(&self, text: &str) {
        self.send(text);
        self.send("\r");
    }

    fn exit_code(&mut self) -> u32 {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // What the program wrote last is still on its way to the parser.
                std::thread::sleep(Duration::from_millis(300));
                return status.exit_code();
            }
            if started.elapsed() > WAIT {
                let _ = self.child.kill();
                panic!("the program did not exit:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn raw(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    /// The terminal is resized to `rows`×`cols`: the program gets SIGWINCH.
    fn resize(&self, rows: u16, cols: u16) {
        self.parser.lock().unwrap().screen_mut().set_size(
            std::num::NonZeroU16::new(rows).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
        );
        self._master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    /// The cell where `needle` first shows on the screen (a row without wide characters).
    fn cell_of(&self, needle: &str) -> vt100::Cell {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        let (_, cols) = screen.size();
        for (row, text) in screen.rows(0, cols.get()).enumerate() {
            if let Some(at) = text.find(needle) {
                let col = text[..at].chars().count();
                return screen.cell(row as u16, col as u16).unwrap().clone();
            }
        }
        panic!("{needle:?} is not on the screen:\n{}", screen.contents())
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// The live area's last row: the status line.
fn status_line(term: &Term) -> String {
    try_status_line(term).unwrap_or_else(|| panic!("no status line:\n{}", term.screen()))
}

/// The status line, when the screen shows one (a screen read while a long
/// answer scrolls by may catch the live area before it is drawn again).
fn try_status_line(term: &Term) -> Option<String> {
    term.rows()
        .into_iter()
        .rev()
        .find(|r| r.contains(" · mode "))
}

/// The status line once it shows `needle`.
fn wait_for_status(term: &Term, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let status = try_status_line(term);
        if let Some(status) = status.as_ref().filter(|s| s.contains(needle)) {
            return status.clone();
        }
        assert!(
            started.elapsed() < WAIT,
            "{needle:?} never in {status:?}:\n{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The status line's count of generated tokens.
fn tokens_of(status: &str) -> usize {
    let end = status.find(" tokens · mode").expect("a token count");
    let start = status[..end].rfind(' ').map_or(0, |i| i + 1);
    status[start..end].replace(',', "").parse().unwrap()
}

/// The numbers in `text` after `before` and up to the next space or `/`.
fn figure(text: &str, before: &str) -> usize {
    let at = text
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} not in {text:?}"))
        + before.len();
    text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no figure after {before:?} in {text:?}"))
}

/// `agent chat` on a pty; skipped where no pseudo-terminal can be opened.
macro_rules! open {
    ($dir:expr, $args:expr) => {
        match Term::agent($dir, $args) {
            Some(t) => t,
            None => agent_test_support::skip!("no pseudo-terminal can be opened here"),
        }
    };
}

#[test]
fn the_status_line_and_a_tool_cell_show_the_turns_figures() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "look", "tool": "grep", "args": {"pattern": "def add"}}"#,
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "add is in calc.py, line 1"}}"#
        ]),
    );
    let mut term = open!(
        dir.path(),
        &format!("chat --ctx-size 4096 --script {}", script.display())
    );
    term.wait_for("mode confirm");
    let status = status_line(&term);
    assert!(status.starts_with("scripted · ctx "), "{status}");
    assert!(status.contains("/4,096 ("), "{status}");
    assert!(status.contains(" 0 tokens · mode confirm"), "{status}");

    term.submit("Where is add defined?");
    let screen = term.wait_for("add is in calc.py, line 1");
    // The request, then the tool as a cell: its name, argument, status, duration, result.
    assert!(screen.contains("› Where is add defined?"), "{screen}");
    let cell = term
        .rows()
        .into_iter()
        .find(|r| r.starts_with("● grep def add"))
        .unwrap_or_else(|| panic!("no tool cell:\n{screen}"));
    assert!(cell.contains("✓") && cell.ends_with('s'), "{cell}");
    assert!(screen.contains("│ calc.py:1"), "{screen}");

    // The status line's figures are the turn's: the tokens the stats line
    // counted, and the context `/tokens` reports.
    let stats = term.wait_for(" generated · ");
    let generated = figure(&stats, " + ");
    term.wait_for(&format!(" {generated} tokens · mode"));
    term.submit("/tokens");
    let report = term.wait_for("context now:");
    let used = figure(&report, "context now: ");
    assert!(used > 0, "{report}");
    let status = status_line(&term);
    assert_eq!(figure(&status, "ctx "), used, "{status}\n{report}");
    // The README's screen capture comes from here.
    if let Some(path) = std::env::var_os("AGENT_TUI_SCREEN_DUMP") {
        std::fs::write(path, term.rows().join("\n")).unwrap();
    }
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn an_edit_is_approved_in_place_yes_writes_and_no_leaves_the_file_alone() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote new.py"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "other.py", "content": "y = 2\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "other.py was not written"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Create new.py with x = 1");
    let screen = term.wait_for("[y]es / [n]o / [a]lways");
    assert!(screen.contains("apply this change to new.py?"), "{screen}");
    assert!(screen.contains("+x = 1"), "{screen}");
    assert!(
        !dir.path().join("new.py").exists(),
        "written before the yes"
    );
    term.send("y");
    term.wait_for("wrote new.py");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 1\n"
    );
    assert!(term.screen().contains("apply this change to new.py? yes"));

    term.submit("Create other.py with y = 2");
    term.wait_for("apply this change to other.py?");
    term.send("n");
    // All declined: nothing changed, said so; the file is not there.
    term.wait_for("0 files changed (1 change(s) or command(s) declined)");
    assert!(term.screen().contains("apply this change to other.py? no"));
    assert!(!dir.path().join("other.py").exists());
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Issue 50: what a command changed shows as a diff in the UI, in confirm
/// mode too (no approval showed it: the command was asked for, not its
/// changes).
#[test]
fn a_commands_changes_show_as_a_diff_in_the_ui() {
    let scratch = tempfile::tempdir().unwrap();
    if let Err(why) = agent_sandbox::overlay_support(scratch.path()) {
        agent_test_support::skip!("commands write no layer here: {why}");
    }
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "run_cmd", "args": {"command": "sed -i 's/a + b/a - b/' calc.py"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py now subtracts"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Make add subtract");
    term.wait_for("[y]es / [n]o / [a]lways");
    term.send("y");
    let screen = term.wait_for("calc.py now subtracts");
    assert!(screen.contains("+    return a - b"), "{screen}");
    assert!(screen.contains("-    return a + b"), "{screen}");
    assert!(std::fs::read_to_string(dir.path().join("calc.py"))
        .unwrap()
        .contains("a - b"));
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// A script standing in for the user's editor: it appends the files it is
/// given to `.git/opened` and rewrites `x = 1` and `y = 2` in them.
fn fake_editor(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    fake_editor_doing(dir, "")
}

/// The shell line running `agent chat ARGS --script SCRIPT` with `editor`
/// as the user's (VISUAL empty, so EDITOR is the one). `exec`: the process
/// group is the agent and its editor, no shell between.
fn chat_with_editor(editor: &Path, args: &str, script: &Path) -> String {
    format!(
        "VISUAL= EDITOR='{}' exec {} chat {args} --script {}",
        editor.display(),
        env!("CARGO_BIN_EXE_agent"),
        script.display()
    )
}

/// The fake editor, doing `first` (shell) before its edit.
fn fake_editor_doing(dir: &Path, first: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let git = dir.join(".git");
    let editor = git.join("fake-editor");
    let opened = git.join("opened");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\n{first}\necho \"$@\" >> '{}'\nsed -i -e 's/x = 1/x = 2  # mine/' -e 's/y = 2/y = 3/' \"$@\"\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (editor, opened)
}

/// The line mode (`--no-tui`) offers `e` as well.
#[test]
fn e_in_the_line_mode_edits_the_change_too() {
    let dir = repo();
    let script = writes_new_py(dir.path());
    let (editor, _) = fake_editor(dir.path());
    let line = chat_with_editor(&editor, "--no-tui", &script);
    let Some(mut term) = Term::shell(dir.path(), &line) else {
        agent_test_support::skip!("no pseudo-terminal can be opened here");
    };
    term.wait_for("/exit or Ctrl-D quits");
    term.submit("Create new.py with x = 1");
    term.wait_for("[y]es / [n]o / [a]lways / [e]dit");
    term.send("e");
    term.wait_for("your edit of the change:");
    term.wait_for("+x = 2  # mine");
    assert!(
        !dir.path().join("new.py").exists(),
        "written before the yes"
    );
    term.send("y");
    term.wait_for("wrote new.py");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 2  # mine\n"
    );
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Ctrl-C in the user's editor is the editor's: the terminal sends it to
/// the whole foreground group, the agent with it, which ignores it while the
/// editor runs (as git does). Here the editor sends two, the second of
/// which used to exit the agent.
#[test]
fn ctrl_c_in_the_editor_neither_stops_the_turn_nor_exits() {
    let dir = repo();
    let script = writes_new_py(dir.path());
    let (editor, _) = fake_editor_doing(
        dir.path(),
        "trap '' INT; kill -INT 0; sleep 0.2; kill -INT 0; sleep 0.2",
    );
    let line = chat_with_editor(&editor, "", &script);
    let Some(mut term) = Term::shell(dir.path(), &line) else {
        agent_test_support::skip!("no pseudo-terminal can be opened here");
    };
    term.wait_for("mode confirm");
    term.submit("Create new.py with x = 1");
    term.wait_for("[y]es / [n]o / [a]lways / [e]dit");
    term.send("e");
    term.wait_for("your edit of the change:");
    term.wait_for("[e]dit");
    term.send("y");
    term.wait_for("wrote new.py");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 2  # mine\n"
    );
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// `e` at an edit's approval: the user's editor (here a script that rewrites
/// the file with sed) opens on the proposed text in a temporary folder, the
/// diff comes back against what they saved, and a yes writes their text; a
/// no after an edit writes nothing; an editor that changes nothing says so.
#[test]
fn e_edits_the_proposed_change_in_the_users_editor_before_the_answer() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote new.py"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "other.py", "content": "y = 2\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "other.py was not written"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "z.py", "content": "z = 0\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote z.py"}}"#
        ]),
    );
    let (editor, opened) = fake_editor(dir.path());
    let line = chat_with_editor(&editor, "", &script);
    let Some(mut term) = Term::shell(dir.path(), &line) else {
        agent_test_support::skip!("no pseudo-terminal can be opened here");
    };
    term.wait_for("mode confirm");
    term.submit("Create new.py with x = 1");
    term.wait_for("[y]es / [n]o / [a]lways / [e]dit");
    term.send("e");
    let screen = term.wait_for("your edit of the change:");
    assert!(
        screen.contains("apply this change to new.py? edit"),
        "{screen}"
    );
    assert!(screen.contains("+x = 2  # mine"), "{screen}");
    term.wait_for("[e]dit");
    assert!(
        !dir.path().join("new.py").exists(),
        "written before the yes"
    );
    // The editor had a file of the same name, outside the workspace, removed after.
    let paths = std::fs::read_to_string(&opened).unwrap();
    let temp = Path::new(paths.trim());
    assert!(temp.ends_with("new.py"), "{paths}");
    assert!(!temp.starts_with(dir.path()), "{paths}");
    assert!(!temp.exists(), "{paths}");
    term.send("y");
    term.wait_for("wrote new.py");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 2  # mine\n"
    );
    // The tool's result tells the model the text is the user's.
    assert!(
        term.screen().contains("the user edited your change"),
        "{}",
        term.screen()
    );

    term.submit("Create other.py with y = 2");
    term.wait_for("apply this change to other.py?");
    term.send("e");
    term.wait_for("+y = 3");
    term.send("n");
    term.wait_for("0 files changed (1 change(s) or command(s) declined)");
    assert!(!dir.path().join("other.py").exists());

    term.submit("Create z.py");
    term.wait_for("apply this change to z.py?");
    term.send("e");
    term.wait_for("! the file is unchanged");
    term.send("y");
    term.wait_for("wrote z.py");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("z.py")).unwrap(),
        "z = 0\n"
    );
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn slash_lists_the_commands_with_descriptions_and_tab_completes() {
    let dir = repo();
    let commands = dir.path().join(".agent/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: Review a file for bugs\n---\nReview $ARGUMENTS\n",
    )
    .unwrap();
    let script = write_script(dir.path(), serde_json::json!([]));
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.send("/");
    let screen = term.wait_for("/review");
    for (name, about) in [
        ("/help", "this list"),
        ("/undo", "undo the agent's last change"),
        ("/compact", "[focus] replace the conversation"),
        ("/review", "Review a file for bugs"),
    ] {
        let row = screen
            .lines()
            .find(|r| r.starts_with(&format!("  {name} ")))
            .unwrap_or_else(|| panic!("{name} not listed:\n{screen}"));
        assert!(row.contains(about), "{row}");
    }
    // Narrowed by what is typed; Tab completes; the command runs.
    term.send("mo");
    let screen = term.wait_for("› /mo");
    assert!(!screen.contains("/review"), "{screen}");
    term.send("\t");
    let screen = term.wait_for("› /model");
    assert!(
        !screen.contains("  /model   "),
        "the list stays open:\n{screen}"
    );
    term.send("\r");
    term.wait_for("context window:");
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn history_is_recalled_after_a_restart_and_the_terminal_is_restored() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "two lines read"}}"#
        ]),
    );
    let args = format!("chat --script {}", script.display());
    let mut term = open!(dir.path(), &args);
    term.wait_for("mode confirm");
    // Ctrl-J, then a trailing backslash: three lines, one request.
    term.send("first line\n");
    term.send("second line\\");
    term.send("\r");
    term.send("third line");
    let screen = term.wait_for("  third line");
    assert!(
        !screen.contains("two lines read"),
        "sent too early:\n{screen}"
    );
    term.send("\r");
    term.wait_for("two lines read");
    term.submit("/model");
    term.wait_for("context window:");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
    let history = common::state_dir(dir.path()).join("tui-history.jsonl");
    assert!(history.is_file(), "no {}", history.display());

    // A new run, then `stty -a` on the same terminal: the agent left it in
    // cooked mode with echo, and the live area is gone.
    let mut term = match Term::shell(
        dir.path(),
        &format!("{} {args}; stty -a", env!("CARGO_BIN_EXE_agent")),
    ) {
        Some(t) => t,
        None => agent_test_support::skip!("no pseudo-terminal can be opened here"),
    };
    term.wait_for("mode confirm");
    term.send("\x1b[A");
    term.wait_for("› /model");
    term.send("\x1b[A");
    let screen = term.wait_for("› first line");
    assert!(
        screen.contains("  second line\n") && screen.contains("  third line"),
        "{screen}"
    );
    term.send("\x1b[B");
    term.wait_for("› /model");
    term.send("\x15");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
    let screen = term.wait_for("speed");
    let flags: Vec<&str> = screen.split_whitespace().collect();
    for on in ["icanon", "echo", "isig", "icrnl", "opost"] {
        assert!(
            flags.contains(&on),
            "{on} is off after the agent:\n{screen}"
        );
    }
    assert!(!screen.contains(" · mode confirm"), "{screen}");
    let raw = term.raw();
    assert!(raw.contains("\x1b[?2004l"), "bracketed paste left on");
    assert!(!raw.contains("\x1b[?1049h"), "an alternate screen was used");
}

#[test]
fn esc_stops_a_slow_turn_and_the_prompt_comes_back() {
    let dir = repo();
    let thought = "the grep found it but I will read the whole file first ".repeat(6);
    let call =
        serde_json::json!({"thought": thought, "tool": "read_file", "args": {"path": "calc.py"}});
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "grep", "args": {"pattern": "def add"}}"#,
            {"content": call.to_string(), "pace_ms": 250},
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "never reached"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    let asked = Instant::now();
    term.submit("Where is add defined in calc.py?");
    term.wait_for("● grep def add");
    term.wait_for("Esc stops");
    term.send("\x1b");
    let screen = term.wait_for("(stopped)");
    assert!(asked.elapsed() < Duration::from_secs(20), "{screen}");
    assert!(!screen.contains("never reached"), "{screen}");
    // The chat goes on: a command after the stop is answered.
    term.submit("/model");
    term.wait_for("context window:");
    term.send("\x03");
    term.send("\x03");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Found by a new user (issue 53): `/exit` while a step ran was refused
/// and kept in the input. `/exit`, `/quit` and Ctrl-D on an empty input
/// stop the step, as Esc does, and quit; the session is saved.
#[test]
fn exit_quit_or_ctrl_d_during_a_step_stops_it_and_quits() {
    let dir = repo();
    let thought = "the grep found it but I will read the whole file first ".repeat(6);
    let call =
        serde_json::json!({"thought": thought, "tool": "read_file", "args": {"path": "calc.py"}});
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "grep", "args": {"pattern": "def add"}}"#,
            {"content": call.to_string(), "pace_ms": 250},
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "never reached"}}"#
        ]),
    );
    for keys in ["/exit\r", "/quit\r", "\x04"] {
        let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
        term.wait_for("mode confirm");
        term.submit("Where is add defined in calc.py?");
        term.wait_for("● grep def add");
        term.wait_for("Esc stops");
        let asked = Instant::now();
        term.send(keys);
        assert_eq!(term.exit_code(), 0, "{keys:?}:\n{}", term.screen());
        let screen = term.screen();
        assert!(
            asked.elapsed() < Duration::from_secs(15),
            "{keys:?} took {:?}:\n{screen}",
            asked.elapsed()
        );
        assert!(!screen.contains("never reached"), "{keys:?}:\n{screen}");
        assert!(
            !screen.contains("the agent is working"),
            "{keys:?}:\n{screen}"
        );
        assert!(
            screen.contains("continue with `agent chat --resume"),
            "{keys:?}:\n{screen}"
        );
    }
}

/// Found by a new user (issue 53): Ctrl-J then Ctrl-U left a line break,
/// so the `/model` typed next went to the model. Ctrl-U clears the whole input.
#[test]
fn ctrl_u_clears_every_line_of_the_input_and_a_command_after_it_runs() {
    let dir = repo();
    // No turn for the model: a request would fail.
    let script = write_script(dir.path(), serde_json::json!([]));
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.send("first line");
    term.send("\n");
    term.send("second");
    wait_for_input(&term, "  second");
    term.send("\x1b[D");
    term.send("\x1b[A");
    term.send("\x15");
    wait_for_input(&term, "›");
    term.submit("/model");
    let screen = term.wait_for("context window:");
    assert!(!screen.contains("no turn left"), "{screen}");
    assert!(!screen.contains("› first line"), "{screen}");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Found by a new user (issue 53): `/compact` ran for minutes showing
/// "0 tokens" and nothing else, and Esc took seconds and said "stopped by
/// Ctrl-C". Its summary shows a spinner with what it does, the prefill and
/// the tokens on the status line; Esc stops it within a second, in its words.
#[test]
fn compact_shows_its_progress_and_esc_stops_it_within_a_second() {
    let dir = repo();
    let summary = serde_json::json!({"goal": "find add ".repeat(40), "decisions": [],
        "files": [], "open_questions": [], "next_step": "never reached"})
    .to_string();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "look", "tool": "grep", "args": {"pattern": "def add"}}"#,
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "add is in calc.py, line 1"}}"#,
            {"content": summary, "prefill_ms": 3000, "pace_ms": 200}
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Where is add defined?");
    term.wait_for("add is in calc.py, line 1");
    let before = tokens_of(&wait_for_status(&term, "Shift+Tab mode"));
    term.submit("/compact");
    // What runs, with a spinner and its time; the prefill, then the tokens.
    let screen = term.wait_for(" into a summary… ");
    assert!(screen.contains("compacting: "), "{screen}");
    let status = wait_for_status(&term, " (ETA ");
    assert!(status.contains(" · prefill "), "{status}");
    let status = wait_for_status(&term, " tokens/s · ");
    assert!(tokens_of(&status) > before, "{before} then {status}");
    let stopped = Instant::now();
    term.send("\x1b");
    let screen = term.wait_for("could not compact: stopped by Esc");
    assert!(
        stopped.elapsed() < Duration::from_secs(1),
        "{:?}:\n{screen}",
        stopped.elapsed()
    );
    assert!(!screen.contains("Ctrl-C;"), "{screen}");
    assert!(screen.contains("the conversation is unchanged"), "{screen}");
    // The prompt is back.
    term.submit("/model");
    term.wait_for("context window:");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn a_pipe_dumb_terminal_or_no_tui_keep_the_line_mode() {
    let dir = repo();
    let script = write_script(dir.path(), serde_json::json!([]));
    // `--no-tui` on a terminal: the line prompt, no status line.
    let mut term = open!(
        dir.path(),
        &format!("chat --no-tui --script {}", script.display())
    );
    term.wait_for("/exit or Ctrl-D quits");
    term.submit("/model");
    term.wait_for("context window:");
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0);
    assert!(!term.screen().contains(" · mode "), "{}", term.screen());
    // TERM=dumb: the same.
    let mut term = match Term::shell(
        dir.path(),
        &format!(
            "TERM=dumb {} chat --script {}",
            env!("CARGO_BIN_EXE_agent"),
            script.display()
        ),
    ) {
        Some(t) => t,
        None => agent_test_support::skip!("no pseudo-terminal can be opened here"),
    };
    term.wait_for("/exit or Ctrl-D quits");
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0);
    assert!(!term.screen().contains(" · mode "), "{}", term.screen());
    // `agent` alone on a pipe: a subcommand is needed, as before.
    let out = common::agent_bin()
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("subcommand"));
}

/// `agent` alone on a terminal, with the real tiny model: the UI opens, the
/// answer streams, the status line counts what was generated.
#[test]
fn agent_alone_on_a_terminal_opens_the_ui_on_the_real_model() {
    let dir = repo();
    let model = common::tiny_model();
    let mut term = match Term::shell(
        dir.path(),
        &format!(
            "AGENT_MODEL={} {}",
            model.display(),
            env!("CARGO_BIN_EXE_agent")
        ),
    ) {
        Some(t) => t,
        None => agent_test_support::skip!("no pseudo-terminal can be opened here"),
    };
    term.wait_for(" · mode confirm");
    let status = status_line(&term);
    let name = model.file_name().unwrap().to_string_lossy().into_owned();
    assert!(status.starts_with(&name), "{status}");
    term.submit("Where is the function add defined?");
    // Tokens are counted on the status line while the model writes...
    let started = Instant::now();
    while tokens_of(&status_line(&term)) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // ...Esc stops it, and the figure is the turn's.
    term.send("\x1b");
    let stats = term.wait_for_within(" generated · ", Duration::from_secs(120));
    let generated = figure(&stats, " + ");
    assert!(generated > 0, "{stats}");
    term.wait_for(&format!(" {generated} tokens · mode"));
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Shift+Tab, the terminal's `CSI Z`.
const SHIFT_TAB: &str = "\x1b[Z";

#[test]
fn shift_tab_cycles_the_mode_and_yolo_writes_without_asking() {
    let dir = repo();
    let script = writes_new_py(dir.path());
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.send(SHIFT_TAB);
    term.wait_for(YOLO_QUESTION);
    term.send("y");
    term.wait_for(" · mode yolo");
    // The new mode is the turn's: the write is not asked, its diff is shown.
    term.submit("Create new.py with x = 1");
    let screen = term.wait_for("wrote new.py");
    assert!(!screen.contains("apply this change"), "{screen}");
    assert!(screen.contains("+x = 1"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 1\n"
    );
    term.send(SHIFT_TAB);
    term.wait_for(" · mode plan");
    term.send(SHIFT_TAB);
    term.wait_for(" · mode human");
    term.send(SHIFT_TAB);
    term.wait_for(" · mode confirm");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Plan mode in the chat (issue 56): `/plan` enters it; the task's write is
/// not among the tools, so nothing changes; the plan is pinned and put to
/// the user; yes returns to confirm mode, where the carried-out write is
/// asked for as ever.
#[test]
fn plan_mode_plans_asks_and_carries_out_the_approved_plan_in_confirm_mode() {
    let dir = repo();
    let script = crate::agent::plans_then_writes_new_py(dir.path());
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("/plan");
    wait_for_status(&term, " · mode plan");
    term.wait_for("changes nothing until you approve it");
    term.submit("Create new.py with x = 1");
    let screen = term.wait_for("Carry out this plan now, in confirm mode?");
    assert!(screen.contains("Create new.py holding x = 1"), "{screen}");
    assert!(!dir.path().join("new.py").exists(), "{screen}");
    term.send("y");
    wait_for_status(&term, " · mode confirm");
    term.wait_for("apply this change to new.py?");
    term.send("y");
    term.wait_for("wrote new.py");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.py")).unwrap(),
        "x = 1\n"
    );
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// What Shift+Tab asks before the chat's first move into yolo.
const YOLO_QUESTION: &str = "Switch to yolo for this chat?  [y/N]";

/// Found by a new user (issue 53): Shift+Tab, pressed to see what it does,
/// went into yolo unasked. The first move into yolo asks, with what yolo
/// means; no keeps the mode; after a yes the chat does not ask again.
#[test]
fn shift_tab_into_yolo_asks_once_a_chat_and_no_keeps_the_mode() {
    let dir = repo();
    let script = write_script(dir.path(), serde_json::json!([]));
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.send(SHIFT_TAB);
    let screen = term.wait_for(YOLO_QUESTION);
    assert!(
        screen.contains("? yolo: writes and commands run without asking you first."),
        "{screen}"
    );
    assert!(status_line(&term).contains("y yes · anything else no"));
    term.send("n");
    term.wait_for("Switch to yolo for this chat? no");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        status_line(&term).contains(" · mode confirm"),
        "{}",
        term.screen()
    );
    // Asked again, since it was not accepted; yes moves.
    term.send(SHIFT_TAB);
    term.wait_for(YOLO_QUESTION);
    term.send("y");
    wait_for_status(&term, " · mode yolo");
    term.wait_for("Switch to yolo for this chat? yes");
    // Round the cycle: yolo again, unasked.
    term.send(SHIFT_TAB);
    wait_for_status(&term, " · mode plan");
    term.send(SHIFT_TAB);
    wait_for_status(&term, " · mode human");
    term.send(SHIFT_TAB);
    wait_for_status(&term, " · mode confirm");
    term.send(SHIFT_TAB);
    wait_for_status(&term, " · mode yolo");
    let screen = term.screen();
    assert_eq!(
        screen.matches("Switch to yolo for this chat?").count(),
        2,
        "{screen}"
    );
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn shift_tab_skips_a_mode_the_administrator_forbids_and_says_why_once() {
    let dir = repo();
    let message = "Ask the platform team.";
    let managed = dir.path().join(".git/managed.toml");
    std::fs::write(
        &managed,
        format!("allowed_modes = [\"human\", \"confirm\"]\nmessage = \"{message}\"\n"),
    )
    .unwrap();
    let script = write_script(dir.path(), serde_json::json!([]));
    let mut term = match Term::shell(
        dir.path(),
        &format!(
            "AGENT_MANAGED_CONFIG={} {} chat --script {}",
            managed.display(),
            env!("CARGO_BIN_EXE_agent"),
            script.display()
        ),
    ) {
        Some(t) => t,
        None => agent_test_support::skip!("no pseudo-terminal can be opened here"),
    };
    term.wait_for("mode confirm");
    term.send(SHIFT_TAB);
    let screen = term.wait_for(" · mode human");
    assert!(
        screen.contains("Your administrator does not allow --mode yolo"),
        "{screen}"
    );
    assert!(
        screen.contains("Your administrator does not allow --mode plan"),
        "a list without plan forbids it: {screen}"
    );
    assert!(screen.contains(message), "{screen}");
    term.send(SHIFT_TAB);
    term.wait_for(" · mode confirm");
    term.send(SHIFT_TAB);
    let screen = term.wait_for(" · mode human");
    assert_eq!(
        screen.matches("Your administrator does not allow").count(),
        2,
        "each said once: {screen}"
    );
    assert!(!screen.contains(" · mode yolo"), "{screen}");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn the_status_line_shows_the_prefill_with_its_eta_then_the_decoding_speed() {
    let dir = repo();
    let thought = "reading the whole prompt slowly before I answer ".repeat(8);
    let call = serde_json::json!({"thought": thought, "tool": "finish", "args": {"answer": "read it all"}});
    let script = write_script(
        dir.path(),
        serde_json::json!([
            {"content": call.to_string(), "prefill_ms": 4000, "pace_ms": 150}
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Read everything, then answer");
    // Tokens read of the prompt's, and the time left at the rate so far...
    let status = wait_for_status(&term, " (ETA ");
    assert!(status.contains(" · prefill "), "{status}");
    let done = figure(&status, " · prefill ");
    let total = figure(
        &status,
        &format!("prefill {}/", agent_base::tokens::thousands(done)),
    );
    assert!(0 < done && done < total, "{status}");
    // ...then the speed while the model writes.
    term.wait_for(" tokens/s · ");
    term.wait_for("read it all");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// The input's last row: the one above the status line.
fn input_row(term: &Term) -> String {
    let rows = term.rows();
    let status = rows
        .iter()
        .rposition(|r| r.contains(" · mode "))
        .unwrap_or_else(|| panic!("no status line:\n{}", term.screen()));
    rows[status - 1].clone()
}

/// Waits until the input's last row is `wanted`.
fn wait_for_input(term: &Term, wanted: &str) {
    let started = Instant::now();
    while input_row(term) != wanted {
        assert!(
            started.elapsed() < WAIT,
            "the input never read {wanted:?}:\n{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_r_searches_the_history_backwards_enter_takes_esc_cancels() {
    let dir = repo();
    let state = common::state_dir(dir.path());
    std::fs::create_dir_all(&state).unwrap();
    let entries = ["alpha one", "beta two", "Alpha three", "gamma four"];
    let lines: Vec<String> = entries
        .iter()
        .map(|e| serde_json::json!(e).to_string())
        .collect();
    std::fs::write(state.join("tui-history.jsonl"), lines.join("\n") + "\n").unwrap();
    let script = write_script(dir.path(), serde_json::json!([]));
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.send("dra");
    // Typing narrows to the latest match (case aside); Ctrl-R goes older.
    term.send("\x12");
    term.wait_for("search history: ");
    term.send("alpha");
    wait_for_input(&term, "› Alpha three");
    term.send("\x12");
    wait_for_input(&term, "› alpha one");
    // Esc: the draft back, the search gone.
    term.send("\x1b");
    wait_for_input(&term, "› dra");
    assert!(
        !term.screen().contains("search history"),
        "{}",
        term.screen()
    );
    // Enter takes the match into the editor, unsent.
    term.send("\x15");
    term.send("\x12");
    term.send("bet");
    wait_for_input(&term, "› beta two");
    term.send("\r");
    term.wait_for("/ commands");
    wait_for_input(&term, "› beta two");
    assert!(
        !term.screen().contains("search history"),
        "{}",
        term.screen()
    );
    term.send("\x15");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn at_completes_a_workspace_file_and_the_request_carries_it_attached() {
    let dir = repo();
    // A secret file, and a link to it: never attached.
    std::fs::write(dir.path().join(".env"), "colour = blue\n").unwrap();
    std::os::unix::fs::symlink(".env", dir.path().join("notes.txt")).unwrap();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py adds two numbers"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    // Fuzzy over the workspace's files; a secret file is never offered.
    term.send("What does @clc");
    let screen = term.wait_for("  @calc.py");
    assert!(!screen.contains("@README.md"), "{screen}");
    term.send("\x17");
    term.send("@env");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!term.screen().contains("  @.env"), "{}", term.screen());
    term.send("\x17");
    term.send("@clc");
    term.wait_for("  @calc.py");
    term.send("\t");
    wait_for_input(&term, "› What does @calc.py");
    term.send("do? not @.env nor @notes.txt\r");
    term.wait_for("attached calc.py");
    term.wait_for("calc.py adds two numbers");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
    // The model got the file, as `agent ask --file` gives it.
    let screen = term.screen();
    let id = screen
        .split("continue with `agent chat --resume ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no session id:\n{screen}"));
    let out = common::agent_bin()
        .current_dir(dir.path())
        .args(["sessions", "show", "--json", id])
        .output()
        .unwrap();
    common::assert_success(&out);
    let stored = String::from_utf8_lossy(&out.stdout);
    assert!(stored.contains("File `calc.py`:"), "{stored}");
    assert!(stored.contains("return a + b"), "{stored}");
    assert!(!stored.contains("colour = blue"), "{stored}");
    // The session is titled with the user's words, the mention as typed
    // (issue 53: the attached file's text was the title).
    let out = common::agent_bin()
        .current_dir(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let sessions: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sessions[0]["id"], id);
    assert_eq!(
        sessions[0]["title"],
        "What does @calc.py do? not @.env nor @notes.txt"
    );
}

/// An approval rings (OSC 9) only while the terminal reports that it is not
/// focused: the user who looked away is told, the one watching is not.
#[test]
fn an_approval_notifies_only_when_the_terminal_is_not_focused() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote new.py"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "other.py", "content": "y = 2\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote other.py"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    assert!(
        term.raw().contains("\x1b[?1004h"),
        "focus reports are not asked for"
    );
    let osc9 = "\x1b]9;agent: an approval is waiting\x07";
    // Focused (the terminal's state until it says otherwise): no notification.
    term.submit("Create new.py with x = 1");
    term.wait_for("apply this change to new.py?");
    assert!(!term.raw().contains(osc9), "notified while focused");
    term.send("y");
    term.wait_for("wrote new.py");
    // The user looks away (CSI O: focus lost), and the next approval rings.
    term.send("\x1b[O");
    term.submit("Create other.py with y = 2");
    term.wait_for("apply this change to other.py?");
    let started = Instant::now();
    while !term.raw().contains(osc9) {
        assert!(started.elapsed() < WAIT, "no OSC 9 while not focused");
        std::thread::sleep(Duration::from_millis(50));
    }
    term.send("\x1b[I");
    term.send("y");
    term.wait_for("wrote other.py");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
    assert!(term.raw().contains("\x1b[?1004l"), "focus reports left on");
}

/// The answer's Markdown as the user sees it: a heading without its `#`,
/// bold as the bold attribute, a fenced code block coloured by its grammar
/// while the prose around it keeps the terminal's own colour.
#[test]
fn an_answer_shows_its_markdown_and_a_highlighted_code_block() {
    let dir = repo();
    let answer = "# Summary\n\nThe **fix** is small:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\n| file | lines |\n|---|--:|\n| calc.py | 2 |\n\nplain words here";
    let finish = serde_json::json!({"thought": "t", "tool": "finish", "args": {"answer": answer}});
    let script = write_script(dir.path(), serde_json::json!([finish.to_string()]));
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Explain add");
    term.wait_for("plain words here");
    let rows = term.rows();
    assert!(rows.iter().any(|r| r == "Summary"), "{rows:#?}");
    assert!(!rows.iter().any(|r| r.contains("# Summary")), "{rows:#?}");
    assert!(term.cell_of("Summary").bold());
    assert!(rows.iter().any(|r| r == "The fix is small:"), "{rows:#?}");
    assert!(term.cell_of("fix is").bold());
    assert!(!term.cell_of("The fix").bold());
    // `def` is a keyword; the prose has no colour of its own.
    assert_ne!(term.cell_of("def add").fgcolor(), vt100::Color::Default);
    assert_eq!(term.cell_of("plain words").fgcolor(), vt100::Color::Default);
    assert_eq!(term.cell_of("words here").fgcolor(), vt100::Color::Default);
    // The table in aligned columns, the header over a rule.
    let at = rows
        .iter()
        .position(|r| r == "file    │ lines")
        .expect("a table header");
    assert_eq!(rows[at + 1], "────────┼──────", "{rows:#?}");
    assert_eq!(rows[at + 2], "calc.py │     2", "{rows:#?}");
    // The blank lines around it stay, however the tokens cut them.
    assert_eq!(
        (&rows[at - 1][..], &rows[at + 3][..]),
        ("", ""),
        "{rows:#?}"
    );
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// An edit's approval shows which words of a changed line changed.
#[test]
fn an_approval_highlights_the_changed_words_of_an_edit() {
    let dir = repo();
    let content = "def add(a, b):\n    \"\"\"Sum of two numbers.\"\"\"\n    return a + c\n";
    let call = serde_json::json!({"thought": "t", "tool": "write_file", "args": {"path": "calc.py", "content": content}});
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            call.to_string(),
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "changed"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Make add use c");
    term.wait_for("apply this change to calc.py?");
    // The old line's `b` and the new line's `c` are marked, the rest of them not.
    let old = term.cell_of("-    return a + b");
    assert!(!old.inverse() && old.fgcolor() != vt100::Color::Default);
    assert!(inverse_at(&term, "-    return a + b", 16));
    assert!(!inverse_at(&term, "-    return a + b", 5));
    assert!(inverse_at(&term, "+    return a + c", 16));
    assert!(!inverse_at(&term, "+    return a + c", 5));
    term.send("n");
    term.wait_for("apply this change to calc.py? no");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Whether the cell `offset` columns into `needle` on the screen is reversed.
fn inverse_at(term: &Term, needle: &str, offset: u16) -> bool {
    let parser = term.parser.lock().unwrap();
    let screen = parser.screen();
    for (row, text) in screen.rows(0, COLS).enumerate() {
        if let Some(at) = text.find(needle) {
            let col = text[..at].chars().count() as u16 + offset;
            return screen.cell(row as u16, col).unwrap().inverse();
        }
    }
    panic!("{needle:?} is not on the screen:\n{}", screen.contents())
}

/// The status line, once, last, and nothing of the old live area left
/// over: one input row, one request.
fn assert_one_live_area(term: &Term) {
    let screen = term.rows();
    let status: Vec<usize> = (0..screen.len())
        .filter(|&i| screen[i].contains(" · mode "))
        .collect();
    assert_eq!(status, [screen.len() - 1], "{screen:#?}");
    assert!(
        screen[status[0]].starts_with("scripted · ctx"),
        "{screen:#?}"
    );
    assert_eq!(
        screen.iter().filter(|r| r.starts_with('›')).count(),
        2,
        "{screen:#?}"
    );
}

/// A resize (SIGWINCH) redraws the live area at the new size, once, with
/// the session above it intact, and the input still works.
#[test]
fn a_resize_redraws_the_live_area_without_garbage() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py defines add, which sums two numbers"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("hello");
    term.wait_for("calc.py defines add");
    wait_for_status(&term, " tokens · mode");
    term.send("draft");
    for (rows, cols) in [(30, 80), (40, 110), (24, 60)] {
        term.resize(rows, cols);
        let started = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let screen = term.rows();
            let status = screen.iter().filter(|r| r.contains(" · mode ")).count();
            if status == 1 && screen.iter().any(|r| r == "› draft") {
                break;
            }
            assert!(started.elapsed() < WAIT, "not redrawn:\n{screen:#?}");
        }
        // The session (the request, the answer) is still above the live area.
        let screen = term.screen();
        assert!(screen.contains("› hello"), "{screen}");
        assert!(screen.contains("calc.py defines add"), "{screen}");
        assert_one_live_area(&term);
        assert_eq!(term.parser.lock().unwrap().screen().size().0.get(), rows);
    }
    term.send("\x15");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// A 5,000-line answer goes into the terminal's scrollback, in order, and the
/// UI still answers keys at once afterwards.
#[test]
fn a_five_thousand_line_answer_scrolls_into_the_scrollback() {
    let dir = repo();
    let answer: Vec<String> = (1..=5000)
        .map(|i| format!("answer row {i} of the long one"))
        .collect();
    let finish = serde_json::json!({"thought": "t", "tool": "finish", "args": {"answer": answer.join("\n")}});
    let script = write_script(dir.path(), serde_json::json!([finish.to_string()]));
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Tell me a lot");
    term.wait_for("answer row 5000 of the long one");
    wait_for_status(&term, " tokens · mode");
    // The scrollback holds the rows before the screen's, in order.
    {
        let mut parser = term.parser.lock().unwrap();
        let screen = parser.screen_mut();
        screen.set_scrollback(2000);
        let rows: Vec<String> = screen.rows(0, COLS).collect();
        screen.set_scrollback(0);
        let numbers: Vec<usize> = rows
            .iter()
            .filter_map(|r| r.strip_prefix("answer row "))
            .map(|r| r.split(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(numbers.len(), usize::from(ROWS), "{rows:#?}");
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
        assert!(numbers[0] < 5000 - 2000 + 10, "{numbers:?}");
    }
    // Still responsive: what is typed shows at once.
    let started = Instant::now();
    term.send("still here");
    wait_for_input(&term, "› still here");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    term.send("\x15");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// A tool's result is folded to its first lines; Ctrl-T prints it whole,
/// and a second Ctrl-T folds the next ones again.
#[test]
fn ctrl_t_shows_a_folded_tool_result_whole() {
    let dir = repo();
    let defs: String = (1..=9)
        .map(|i| format!("def helper_{i}():\n    pass\n"))
        .collect();
    std::fs::write(dir.path().join("helpers.py"), defs).unwrap();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "look", "tool": "grep", "args": {"pattern": "def helper_", "path": "helpers.py"}}"#,
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "nine helpers are defined"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    term.submit("Which helpers are there?");
    let screen = term.wait_for("nine helpers are defined");
    assert!(screen.contains("helper_4"), "{screen}");
    assert!(!screen.contains("helper_9"), "{screen}");
    assert!(
        screen.contains("5 more lines · Ctrl-T shows them"),
        "{screen}"
    );
    // The turn is over (its stats line printed): the note stays until the next.
    term.wait_for(" generated · ");
    term.send("\x14");
    let screen = term.wait_for("helper_9");
    assert!(screen.contains("output in full · Ctrl-T folds"), "{screen}");
    term.send("\x14");
    term.wait_for("output folded · Ctrl-T expands");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// A model's reasoning is dimmed and folded to its first lines; Ctrl-T
/// prints it whole (turns in Qwen3's own syntax, thinking first).
#[test]
fn reasoning_is_dimmed_and_folded_and_ctrl_t_shows_it_whole() {
    let dir = repo();
    let template = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/agent-chat/tests/fixtures/templates/Qwen-Qwen3-0.6B.jinja");
    let script = write_script(
        dir.path(),
        serde_json::json!([
            "<think>\nthe user asks where add is\nit is a small repository\ncalc.py looks likely\nso I answer from it\n</think>\n\nadd is defined in calc.py"
        ]),
    );
    let mut term = open!(
        dir.path(),
        &format!(
            "chat --script {} --chat-template-file {}",
            script.display(),
            template.display()
        )
    );
    term.wait_for("mode confirm");
    term.submit("Where is add?");
    let screen = term.wait_for("add is defined in calc.py");
    assert!(screen.contains("the user asks where add is"), "{screen}");
    assert!(screen.contains("it is a small repository"), "{screen}");
    assert!(!screen.contains("calc.py looks likely"), "{screen}");
    assert!(
        screen.contains("2 more lines · Ctrl-T shows them"),
        "{screen}"
    );
    assert!(term.cell_of("the user asks").dim());
    assert!(!term.cell_of("add is defined").dim());
    term.wait_for(" generated · ");
    term.send("\x14");
    term.wait_for("so I answer from it");
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

#[test]
fn esc_esc_on_an_empty_prompt_lists_the_requests_and_rewinds_to_the_one_chosen() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "a.txt", "content": "a\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote a.txt"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "b.txt", "content": "b\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "wrote b.txt"}}"#
        ]),
    );
    let mut term = open!(
        dir.path(),
        &format!("chat --mode yolo --script {}", script.display())
    );
    term.wait_for("mode yolo");
    term.submit("Create a.txt with a");
    term.wait_for("wrote a.txt");
    term.submit("Create b.txt with b");
    term.wait_for("wrote b.txt");
    assert!(dir.path().join("b.txt").exists());

    // Esc Esc: the list, the last request chosen; Up and Down move.
    term.send("\x1b");
    term.send("\x1b");
    let screen = term.wait_for("rewind to before which request?");
    assert!(
        screen.contains("1  Create a.txt with a  (1 file change)"),
        "{screen}"
    );
    assert!(screen.contains("›  2  Create b.txt with b"), "{screen}");
    term.send("\x1b[A");
    term.wait_for("›  1  Create a.txt");
    term.send("\x1b[B");
    term.wait_for("›  2  Create b.txt");
    term.send("\r");
    term.wait_for("restore files too?  [y/N]");
    term.send("y");
    let screen = term.wait_for("rewound to before request 2");
    assert!(screen.contains("files restored: b.txt"), "{screen}");
    assert!(!dir.path().join("b.txt").exists(), "{screen}");
    assert!(dir.path().join("a.txt").exists(), "{screen}");

    // Once more, Esc cancels: nothing rewound, the list shows request 1 only.
    term.send("\x1b");
    term.send("\x1b");
    let screen = term.wait_for("rewind to before which request?");
    assert!(!screen.contains("2  Create b.txt with b  ("), "{screen}");
    term.send("\x1b");
    term.wait_for("nothing rewound");
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// The rows of the live area between the last request's cells and the
/// input: the pinned plan, when there is one.
fn pinned(term: &Term) -> Vec<String> {
    // The turn's last lines reach the screen a frame before the live area
    // is drawn again under them (seen on a loaded machine): wait for it.
    term.wait_for(" · mode ");
    let rows = term.rows();
    let status = rows
        .iter()
        .rposition(|r| r.contains(" · mode "))
        .unwrap_or_else(|| panic!("no status line:\n{}", term.screen()));
    // The input (one row, empty or typed) sits above the status line.
    rows[..status - 1]
        .iter()
        .rev()
        .take_while(|r| {
            r.starts_with("  ✓ ")
                || r.starts_with("  ▸ ")
                || r.starts_with("  · ")
                || r.starts_with("  +")
        })
        .cloned()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

#[test]
fn the_plan_is_pinned_above_the_input_until_it_is_done_or_cleared() {
    let dir = repo();
    let plan = |statuses: &[&str]| {
        let items: Vec<serde_json::Value> = statuses
            .iter()
            .enumerate()
            .map(|(i, status)| serde_json::json!({"text": format!("Step {} of the plan", i + 1), "status": status}))
            .collect();
        serde_json::json!({"thought": "t", "tool": "todo", "args": {"items": items}}).to_string()
    };
    let finish = |answer: &str| {
        serde_json::json!({"thought": "t", "tool": "finish", "args": {"answer": answer}})
            .to_string()
    };
    let write = r#"{"thought": "t", "tool": "write_file", "args": {"path": "sub.py", "content": "def sub(a, b):\n    return a - b\n"}}"#;
    let mut seven = vec!["done", "done", "in_progress"];
    seven.extend(["pending"; 4]);
    let script = write_script(
        dir.path(),
        serde_json::json!([
            plan(&["done", "in_progress", "pending"]),
            write,
            finish("first part done"),
            plan(&seven),
            finish("more to do in calc.py"),
            plan(&["done"; 7]),
            finish("all done in calc.py"),
            plan(&["in_progress"]),
            finish("a new plan for calc.py"),
        ]),
    );
    let mut term = open!(
        dir.path(),
        &format!("chat --mode yolo --script {}", script.display())
    );
    term.wait_for("mode yolo");
    term.submit("Add a function sub to calc.py that returns a minus b");
    term.wait_for("first part done");
    term.wait_for(" generated · ");
    assert_eq!(
        pinned(&term),
        [
            "  ✓ Step 1 of the plan",
            "  ▸ Step 2 of the plan",
            "  · Step 3 of the plan"
        ],
        "{}",
        term.screen()
    );
    let at = |needle: &str| {
        let rows = term.rows();
        let row = rows.iter().rposition(|r| r.trim_end() == needle).unwrap();
        let parser = term.parser.lock().unwrap();
        parser.screen().cell(row as u16, 4).unwrap().clone()
    };
    assert!(at("  ✓ Step 1 of the plan").dim(), "{}", term.screen());
    assert!(!at("  ▸ Step 2 of the plan").dim(), "{}", term.screen());

    // Seven items: six rows, the next ones shown, the rest counted.
    term.submit("Add a function mul to calc.py that multiplies a and b");
    term.wait_for("more to do");
    term.wait_for("+2 more");
    let rows = pinned(&term);
    assert_eq!(rows.len(), 6, "{}", term.screen());
    let screen = term.screen();
    assert_eq!(rows[0], "  ✓ Step 2 of the plan", "{screen}");
    assert_eq!(rows[1], "  ▸ Step 3 of the plan", "{screen}");
    assert_eq!(rows[5], "  +2 more", "{screen}");

    // Every item done: gone when the turn ends.
    term.submit("Add a function div to calc.py that divides a by b");
    term.wait_for("all done");
    let started = Instant::now();
    while !pinned(&term).is_empty() {
        assert!(started.elapsed() < WAIT, "{}", term.screen());
        std::thread::sleep(Duration::from_millis(50));
    }

    // A new plan, then /clear: gone too.
    term.submit("Add a function pow to calc.py that raises a to b");
    term.wait_for("a new plan");
    let started = Instant::now();
    while pinned(&term) != ["  ▸ Step 1 of the plan"] {
        assert!(started.elapsed() < WAIT, "{}", term.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    term.submit("/clear");
    term.wait_for("new conversation");
    let started = Instant::now();
    while !pinned(&term).is_empty() {
        assert!(started.elapsed() < WAIT, "{}", term.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// The status line's share of the window.
fn percent_of(status: &str) -> usize {
    figure(status, "(")
}

/// A file of some 30,000 tokens mentioned twice with `@` in a 4,096-token
/// window, and a search between: each prompt is fitted, and the status line
/// never passes 100% (it showed 114% and 119% before the budget).
#[test]
fn the_status_line_never_passes_the_window_whatever_is_mentioned() {
    let dir = repo();
    let big: String = (0..3000)
        .map(|i| format!("def handler_{i}(request):\n    return request.value * {i}\n\n"))
        .collect();
    std::fs::write(dir.path().join("big.py"), big).unwrap();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "look", "tool": "grep", "args": {"pattern": "def handler_1"}}"#,
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "handler_12 scales the value"}}"#,
            r#"{"thought": "read", "tool": "read_file", "args": {"path": "big.py"}}"#,
            r#"{"thought": "found", "tool": "finish", "args": {"answer": "handler_99 scales it too"}}"#
        ]),
    );
    let mut term = open!(
        dir.path(),
        &format!(
            "chat --mode yolo --ctx-size 4096 --script {}",
            script.display()
        )
    );
    term.wait_for("mode yolo");
    term.submit("What does handler_12 in @big.py do?");
    term.wait_for("handler_12 scales the value");
    let first = wait_for_status(&term, "%)");
    term.submit("And handler_99 in @big.py?");
    term.wait_for("handler_99 scales it too");
    term.submit("/tokens");
    let report = term.wait_for("left out to fit");
    let status = status_line(&term);
    for s in [&first, &status] {
        assert!(percent_of(s) <= 100, "{s}\n{report}");
        assert!(s.contains("/4,096 ("), "{s}");
    }
    assert!(figure(&report, "kept for the answer; ") > 0, "{report}");
    assert!(!report.contains("context window holds"), "{report}");
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}

/// Live processes whose command line holds `token`.
fn running_with(token: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .count()
}

#[test]
fn the_status_line_counts_background_jobs_and_slash_jobs_lists_them() {
    let dir = repo();
    // Unique to this test: its processes are found by it.
    let token = format!(
        "bgjob{}",
        dir.path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace('.', "")
    );
    let command = format!("echo serving; sleep 300; : {token}");
    let call = serde_json::json!({"thought": "t", "tool": "run_cmd", "args": {"command": command, "background": true}});
    let script = write_script(
        dir.path(),
        serde_json::json!([
            call.to_string(),
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "the server runs in the background"}}"#
        ]),
    );
    let mut term = open!(dir.path(), &format!("chat --script {}", script.display()));
    term.wait_for("mode confirm");
    let status = status_line(&term);
    assert!(!status.contains("running"), "{status}");
    term.submit("Run the server in the background and fix calc.py");
    // Asked first, as any command.
    term.wait_for("[y]es / [n]o / [a]lways");
    term.send("y");
    term.wait_for("the server runs in the background");
    wait_for_status(&term, "mode confirm · 1 job running");
    term.submit("/jobs");
    let screen = term.wait_for("background commands (stopped when the session ends):");
    let row = screen
        .lines()
        .find(|r| r.trim_start().starts_with("job-1 "))
        .unwrap_or_else(|| panic!("no job-1 row:\n{screen}"));
    assert!(
        row.contains("running") && row.contains("bytes") && row.contains("echo serving; sleep 300"),
        "{row}"
    );
    assert!(running_with(&token) > 0, "the job is not running");
    term.submit("/exit");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
    let start = Instant::now();
    while running_with(&token) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the job outlived the chat"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An exploration (`explore`) is one cell: its steps folded to a line that
/// counts them, its report under its call; Ctrl-T shows the steps.
#[test]
fn an_exploration_is_one_folded_cell_and_ctrl_t_shows_its_steps() {
    let dir = repo();
    let script = write_script(
        dir.path(),
        serde_json::json!([
            r#"{"thought": "t", "tool": "explore", "args": {"question": "where is add defined?"}}"#,
            r#"{"thought": "t", "tool": "read_file", "args": {"path": "calc.py"}}"#,
            r#"{"thought": "t", "tool": "write_file", "args": {"path": "new.py", "content": "x = 1\n"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "calc.py:1 defines add(a, b)"}}"#,
            r#"{"thought": "t", "tool": "finish", "args": {"answer": "add is defined in calc.py, line 1"}}"#
        ]),
    );
    let mut term = open!(
        dir.path(),
        &format!("chat --explore on --script {}", script.display())
    );
    term.wait_for("mode confirm");
    term.submit("Where is the function add defined?");
    term.wait_for("add is defined in calc.py, line 1");
    let screen = term.wait_for(" generated · ");
    assert!(
        screen.contains("● explore where is add defined?"),
        "{screen}"
    );
    assert!(
        screen.contains("┆ exploration: 5 more lines · Ctrl-T shows them"),
        "{screen}"
    );
    assert!(screen.contains("│ calc.py:1 defines add(a, b)"), "{screen}");
    assert!(screen.contains("│ Read: calc.py:1-3"), "{screen}");
    assert!(!screen.contains("┆ ● read_file calc.py"), "{screen}");
    term.send("\x14");
    let screen = term.wait_for("┆ ● read_file calc.py");
    assert!(
        screen.contains("┆   ✗ `write_file` is not available"),
        "{screen}"
    );
    assert!(screen.contains("┆ explored in 3 step(s)"), "{screen}");
    assert!(!dir.path().join("new.py").exists());
    term.send("\x04");
    assert_eq!(term.exit_code(), 0, "{}", term.screen());
}
