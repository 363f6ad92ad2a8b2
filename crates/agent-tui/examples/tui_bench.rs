//! `scripts/bench tui`: what the terminal UI costs.
//!
//! `tui_bench stream [--seconds N] [--rate N] [--lines N]`: the real UI on a
//! pseudo-terminal of its own. A session of N lines (prose, headings, lists,
//! inline markup, fenced Python and Rust) goes through it first, then an
//! answer streams at N tokens/s: while it streams, each frame's drawing time
//! (`AGENT_TUI_FRAME_TIMES`), min/median/p95 ms, and the CPU time of the UI's
//! thread (`tui`, from /proc) over the wall time, as a share of one core.
//!
//! `tui_bench session [--runs N] [--lines N]`: the whole session's Markdown
//! rendered, code highlighted, wrapped and drawn into a buffer at once,
//! min/median/p95 ms. The inline UI never does this (it draws each line once,
//! as it goes to the scrollback); it is what all those lines cost together.
//!
//! Each prints one JSON line.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark: it prints its figures and stops on a broken set-up"
)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("session") => whole_session(arg(&args, "--runs", 200), arg(&args, "--lines", 2000)),
        Some("stream") => stream(&args[2..]),
        Some("stream-child") => stream_child(
            arg(&args, "--seconds", 20),
            arg(&args, "--rate", 100),
            arg(&args, "--lines", 2000),
        ),
        _ => {
            eprintln!(
                "usage: tui_bench stream [--seconds N] [--rate N] [--lines N] | session [--runs N] [--lines N]"
            );
            std::process::exit(2);
        }
    }
}

/// A session's answers: about `lines` lines of what a coding agent writes.
fn session(lines: usize) -> String {
    const TURN: &str = r#"## Where `add` is defined

The function **`add`** lives in `calc.py`, and *three* callers use it:
- `main.py` calls it in [`run`](https://example.com/run) with two ints
- `tests/test_calc.py` checks the **sum** and the *error* on strings
- `cli.py` parses its arguments first

> Note: the docstring says "Sum of two numbers" but floats are not tested.

```python
def add(a, b):
    """Sum of two numbers."""
    if not isinstance(a, (int, float)):
        raise TypeError(f"bad operand: {a!r}")
    return a + b  # the only line that matters
```

1. Change the check in `add`
2. Run `pytest -q` and read the failures

```rust
pub fn add(a: i64, b: i64) -> Option<i64> {
    // Overflow is a None, not a panic.
    a.checked_add(b)
}
```

That is all: the change is small and the tests cover it.
"#;
    let per_turn = TURN.lines().count();
    TURN.repeat(lines.div_ceil(per_turn))
        .lines()
        .take(lines)
        .collect::<Vec<_>>()
        .join("\n")
}

/// min, median and p95 of `times`.
fn spread(mut times: Vec<f64>) -> (f64, f64, f64) {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    (at(0.0), at(0.5), at(0.95))
}

fn whole_session(runs: u64, lines: u64) {
    let text = session(lines as usize);
    let mut answers = agent_tui::bench::Answers::default();
    let rows = answers.draw(&text, 110); // warm: the highlight queries compile once
    let times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(answers.draw(std::hint::black_box(&text), 110));
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let (min, median, p95) = spread(times);
    println!(
        "{}",
        serde_json::json!({
            "what": "session", "lines": lines, "rows": rows, "width": 110, "runs": runs,
            "min_ms": min, "median_ms": median, "p95_ms": p95,
        })
    );
}

/// The parent: a pseudo-terminal answering the UI's queries (cursor
/// position, device attributes), the child on it, its figures read back.
fn stream(args: &[String]) {
    let pty = portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize {
            rows: 40,
            cols: 110,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a pseudo-terminal");
    let tmp = std::env::temp_dir();
    let out = tmp.join(format!("tui_bench_{}.json", std::process::id()));
    let frames = tmp.join(format!("tui_bench_{}.frames", std::process::id()));
    let mut cmd = portable_pty::CommandBuilder::new(std::env::current_exe().unwrap());
    cmd.arg("stream-child");
    cmd.args(args);
    cmd.env("TERM", "xterm-256color");
    cmd.env("TUI_BENCH_OUT", &out);
    cmd.env("AGENT_TUI_FRAME_TIMES", &frames);
    let mut child = pty.slave.spawn_command(cmd).expect("the child");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().unwrap();
    let mut writer = pty.master.take_writer().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            let chunk = &buf[..n];
            let has = |s: &[u8]| chunk.windows(s.len()).any(|w| w == s);
            if has(b"\x1b[6n") {
                let _ = writer.write_all(b"\x1b[40;1R");
            }
            if has(b"\x1b[c") {
                let _ = writer.write_all(b"\x1b[?62;22c");
            }
            let _ = writer.flush();
        }
    });
    let status = child.wait().expect("the child ends");
    let result = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&frames);
    if !status.success() || result.is_empty() {
        eprintln!("tui_bench: the streaming child failed ({status:?})");
        std::process::exit(1);
    }
    println!("{}", result.trim());
}

/// Milliseconds since the Unix epoch, as the UI stamps its frames.
fn epoch_ms() -> f64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.unwrap().as_secs_f64() * 1000.0
}

/// The child: the real UI; a session of `lines` lines, then an answer
/// streamed at `rate` tokens/s for `seconds`.
fn stream_child(seconds: u64, rate: u64, lines: u64) {
    let tui = agent_tui::Tui::start(agent_tui::Options {
        state_dir: None,
        commands: Vec::new(),
        workspace: None,
        status: agent_tui::Status {
            model: "bench".into(),
            context_used: 1000,
            context_window: 8192,
            generated: 0,
            mode: "confirm".into(),
            jobs: 0,
        },
        cancel: agent_base::cancel::CancelToken::new(),
        show_diffs: false,
        verbose: false,
    })
    .expect("the UI starts");
    use agent_protocol::Ui;
    tui.busy(true);
    let mut ui = tui.ui();
    ui.step_start(1);
    for line in session(lines as usize).lines() {
        ui.answer_text(&format!("{line}\n"));
    }
    ui.step_end();
    std::thread::sleep(Duration::from_secs(2));
    ui.step_start(2);
    let text = session(100_000);
    // Tokens of about four characters, as a tokenizer cuts prose and code.
    let tokens: Vec<String> = text
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let count = (seconds * rate) as usize;
    let every = Duration::from_secs_f64(1.0 / rate as f64);
    let before = ui_thread_cpu();
    let (from, started) = (epoch_ms(), Instant::now());
    for (i, token) in tokens.iter().cycle().take(count).enumerate() {
        ui.answer_text(token);
        if i % 16 == 0 {
            ui.generating(1, i);
        }
        let due = every * (i as u32 + 1);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = ui_thread_cpu() - before;
    let to = epoch_ms();
    ui.step_end();
    tui.busy(false);
    tui.finish();
    // The frames drawn while the answer streamed.
    let frames = std::fs::read_to_string(std::env::var_os("AGENT_TUI_FRAME_TIMES").unwrap())
        .expect("the UI's frame times");
    let times: Vec<f64> = frames
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(at, ms)| (at.parse::<f64>().unwrap(), ms.parse::<f64>().unwrap()))
        .filter(|(at, _)| (from..to).contains(at))
        .map(|(_, ms)| ms)
        .collect();
    let drawn = times.len();
    let (min, median, p95) = spread(times);
    let result = serde_json::json!({
        "what": "stream", "session_lines": lines, "tokens": count, "rate": rate,
        "seconds": wall, "ui_thread_cpu_s": cpu, "ui_thread_core_share": cpu / wall,
        "frames": drawn, "frame_min_ms": min, "frame_median_ms": median, "frame_p95_ms": p95,
    });
    let path = std::env::var_os("TUI_BENCH_OUT").expect("TUI_BENCH_OUT");
    std::fs::write(path, result.to_string()).unwrap();
}

/// User and system CPU seconds of this process's thread named `tui`.
fn ui_thread_cpu() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    for task in std::fs::read_dir("/proc/self/task").expect("/proc") {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() != "tui" {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // The fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let used: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
        return used / ticks;
    }
    panic!("no thread named tui")
}
