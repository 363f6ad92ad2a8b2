#!/usr/bin/env python3
"""The agent task suite (`scripts/bench tasks`).

Small real tasks, each in its own temporary git repository: find where
something is defined, explain a function, rename a symbol across files, fix a
failing test, add a parameter. Every task has an automatic check. As in the
product's workflow, each repository is indexed first (`$AGENT_BIN index
--json`, timed as index_s), then the agent is run once per task as

    $AGENT_BIN ask --mode yolo --json [--model PATH] [--max-steps N] PROMPT

with the repository as its working directory and stdin closed; its stdout is
one JSON object (answer, finish, steps, tool_calls, invalid_tool_calls,
prompt_tokens, completion_tokens, ...). A task is solved when its check
passes, whatever `finish` says (a rename that is done is done even if the
agent then ran out of steps); `finish` is recorded next to it. A run whose
stdout holds no JSON object is a crash (stderr tail kept), one past --timeout
(default 600 s; the whole process group is killed) a timeout; both count as
unsolved and are left out of the step and token averages. A task's wall_s is
the agent's run; the total wall_s also covers the checks.

Writes bench-results/tasks.json (with solved tasks per kind) and prints a table.

--explore runs the agent with `--explore on` (the read-only `explore` subagent
offered to the model). Each row keeps the request's own context apart from
what explorations spent: main_prompt_tokens (the prompt tokens of the
request's steps), context_tokens (its last prompt: what it holds at the end)
and explore_tokens; the summary gives their averages per solved locate task.
--scripted plays a larger model instead of running one, on the locate tasks
only (`--script`, turns written here): it greps for the identifier the
prompt names, reads the task's source files, and answers with the reference;
with --explore it asks `explore` for the same and its subagent does those
reads. What it measures is what the reads cost the request's context, not
how well a model explores.

    bench_tasks.py [--model PATH] [--only NAME,...] [--max-steps N]
                   [--explore] [--scripted]
                   [--timeout S] [--keep] [--out FILE]
    bench_tasks.py --self-test [--only NAME,...] [--keep]
    bench_tasks.py --list

--self-test needs no agent: for every task it asserts that the check FAILS on
the untouched repository (and on wrong answers or cheating edits, e.g. an
edited test file), and PASSES once a reference solution is applied.

Python 3 standard library only. The Rust task needs `cargo` (a dependency-free
crate, built in the task's temporary folder); without cargo it is skipped.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".agent", "target", "__pycache__", ".pytest_cache"}


def d(text):
    """Dedent a file body and make it end with exactly one newline."""
    return textwrap.dedent(text).lstrip("\n").rstrip() + "\n"


# ---------------------------------------------------------------------------
# Temporary repositories


def git_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost",
        GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@localhost",
        GIT_CONFIG_NOSYSTEM="1",
    )
    return env


def make_repo(parent: Path, files: dict) -> Path:
    """Write `files` into parent/repo, `git init` it and commit everything once."""
    repo = parent / "repo"
    repo.mkdir(parents=True)
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = git_env()
    for cmd in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "--no-gpg-sign", "-m", "initial commit"],
    ):
        subprocess.run(cmd, cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return repo


def apply_edit(repo: Path, edit):
    """An edit is a callable(repo) or a dict path -> new text (None deletes the file)."""
    if callable(edit):
        edit(repo)
        return
    for rel, text in edit.items():
        path = repo / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def repo_files(repo: Path):
    """Relative paths of the repository's files, skipping .git, .agent, build output."""
    out = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [n for n in dirnames if n not in SKIP_DIRS]
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), repo).replace(os.sep, "/"))
    return sorted(out)


def read(repo: Path, rel: str):
    try:
        return (repo / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


# ---------------------------------------------------------------------------
# Check building blocks; each returns (ok, reason)


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unchanged(repo: Path, files: dict, paths):
    for rel in paths:
        now = read(repo, rel)
        if now is None:
            return False, f"{rel} was deleted"
        if sha(now) != sha(files[rel]):
            return False, f"{rel} was modified (protected file)"
    return True, ""


def run(cmd, repo: Path, timeout=300, env_extra=None):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.update(env_extra or {})
    try:
        p = subprocess.run(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s: {' '.join(cmd)}"
    return p, ""


def tail(text, n=300):
    """The end of `text` on one line (reasons go into a table and a JSON field)."""
    text = " | ".join(line.strip() for line in (text or "").strip().splitlines() if line.strip())
    return text if len(text) <= n else "..." + text[-n:]


def failing_lines(out, pattern):
    """The lines of a test run that name what failed, else its tail."""
    lines = [line.strip() for line in out.splitlines() if re.search(pattern, line)]
    return tail("\n".join(dict.fromkeys(lines))) if lines else tail(out)


def unittest_passes(repo: Path, expected_tests: int):
    """`python3 -m unittest discover -s tests -t .` runs exactly `expected_tests` tests, all OK."""
    p, err = run([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."], repo, timeout=120)
    if p is None:
        return False, err
    out = p.stdout + p.stderr
    m = re.search(r"^Ran (\d+) tests?", out, re.M)
    ran = int(m.group(1)) if m else 0
    if p.returncode != 0:
        return False, "unittest failed: " + failing_lines(out, r"^(FAIL|ERROR):|^FAILED|Error:")
    if ran != expected_tests:
        return False, f"unittest ran {ran} tests, expected {expected_tests}"
    return True, ""


def python_probe(repo: Path, code: str):
    """Run `code` in a fresh interpreter in the repo; it prints one JSON value."""
    p, err = run([sys.executable, "-c", d(code)], repo, timeout=60)
    if p is None:
        return None, err
    if p.returncode != 0:
        return None, f"probe failed: {tail(p.stderr)}"
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, f"probe printed no JSON: {tail(p.stdout)}"


def word_left(repo: Path, word: str):
    """Files that still contain `word` as an identifier (word-boundary match)."""
    pat = re.compile(r"\b" + re.escape(word) + r"\b")
    hits = []
    for rel in repo_files(repo):
        text = read(repo, rel)
        if text is not None and pat.search(text):
            hits.append(rel)
    return hits


def cargo_test(repo: Path, expected_tests: int):
    """`cargo test` (offline, target dir beside the repo) passes with at least `expected_tests` tests."""
    target = repo.parent / "check-target"
    p, err = run(["cargo", "test", "--offline", "--color", "never"], repo, timeout=600,
                 env_extra={"CARGO_TARGET_DIR": str(target), "CARGO_TERM_COLOR": "never"})
    if p is None:
        return False, err
    out = p.stdout + p.stderr
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", out))
    if p.returncode != 0:
        return False, "cargo test failed: " + failing_lines(out, r"^test .* FAILED|^error(\[E\d+\])?:|panicked at")
    if passed < expected_tests:
        return False, f"cargo test passed {passed} tests, expected {expected_tests}"
    return True, ""


def norm_answer(result):
    answer = result.get("answer") if isinstance(result, dict) else None
    return (answer or "").replace("\\", "/").replace("`", "")


def path_re(path):
    return re.compile(r"(?<![\w.-])(?:[\w./-]*/)?" + re.escape(path) + r"(?![\w])", re.I)


def mentioned_files(answer, files):
    """Repository files named in the answer by their full relative path."""
    return [rel for rel in files if re.search(r"(?<![\w-])" + re.escape(rel) + r"(?![\w])", answer, re.I)]


def locate_check(files, path, name=None, extra=None):
    """The answer names `path` (a suffix like settings/loader.py; any prefix is fine),
    and `name` if given, and does not scatter over more than 3 of the repo's files."""
    def check(repo, result):
        answer = norm_answer(result)
        if not answer.strip():
            return False, "empty answer"
        if not path_re(path).search(answer):
            return False, f"answer does not name {path}"
        if name and not re.search(r"\b" + re.escape(name) + r"\b", answer):
            return False, f"answer does not name {name}"
        named = mentioned_files(answer, files)
        if len(named) > 3:
            return False, f"answer names {len(named)} files; a location should be one"
        if extra:
            return extra(answer)
        return True, f"names {path}"
    return check


# ---------------------------------------------------------------------------
# Tasks


class Task:
    def __init__(self, name, kind, files, prompt, check, reference, wrong=(), cheats=(),
                 alt_answers=(), needs=None):
        self.name, self.kind, self.files, self.prompt, self.check = name, kind, files, prompt, check
        self.reference = reference      # answer string, or an edit (dict / callable)
        self.wrong = list(wrong)        # answers that must fail (answer tasks)
        self.cheats = list(cheats)      # (label, edit) pairs that must fail (code tasks)
        self.alt_answers = list(alt_answers)  # more answers that must pass
        self.needs = needs              # a command that must exist, e.g. "cargo"

    @property
    def answers(self):
        return isinstance(self.reference, str)


TASKS = []


def task(**kw):
    TASKS.append(Task(**kw))


# --- locate -----------------------------------------------------------------

CONFIG_FILES = {
    "README.md": d("""
        # app

        A small service. Settings live in `app.ini`; plugins are listed there too.
        Run it with `python -m app.cli --config app.ini`.
        """),
    "app/__init__.py": "",
    "app/settings/__init__.py": d("""
        from .loader import parse_config_file

        __all__ = ["parse_config_file"]
        """),
    "app/settings/loader.py": d('''
        """Read the application's settings from an INI-style file."""
        import configparser
        from pathlib import Path

        DEFAULTS = {"workers": "4", "log_level": "info"}


        def parse_config_file(path):
            """Parse the file at `path` into a flat dict of "section.key" -> value."""
            parser = configparser.ConfigParser()
            parser.read_dict({"main": DEFAULTS})
            text = Path(path).read_text(encoding="utf-8")
            parser.read_string(text, source=str(path))
            out = {}
            for section in parser.sections():
                for key, value in parser.items(section):
                    out[f"{section}.{key}"] = value
            return out
        '''),
    "app/plugins/__init__.py": "",
    "app/plugins/loader.py": d('''
        """Discover and import the plugins named in the settings."""
        import importlib


        def load_plugins(names):
            """Import each plugin module and return them in order."""
            return [importlib.import_module(f"app.plugins.{name}") for name in names]


        def parse_plugin_list(value):
            """Split a comma-separated plugin list, dropping blanks."""
            return [part.strip() for part in value.split(",") if part.strip()]
        '''),
    "app/cli.py": d('''
        """Command-line entry point."""
        import argparse

        from app.plugins.loader import load_plugins, parse_plugin_list
        from app.settings import parse_config_file


        def parse_args(argv=None):
            parser = argparse.ArgumentParser(prog="app")
            parser.add_argument("--config", default="app.ini", help="settings file to read")
            parser.add_argument("--dry-run", action="store_true")
            return parser.parse_args(argv)


        def main(argv=None):
            args = parse_args(argv)
            settings = parse_config_file(args.config)
            plugins = load_plugins(parse_plugin_list(settings.get("main.plugins", "")))
            if args.dry_run:
                print(f"{len(plugins)} plugins, {settings['main.workers']} workers")
            return 0


        if __name__ == "__main__":
            raise SystemExit(main())
        '''),
    "app/logs.py": d('''
        """Parse access-log lines."""
        import re

        LINE = re.compile(r'(?P<ip>\\S+) \\S+ \\S+ \\[(?P<when>[^\\]]+)\\] "(?P<req>[^"]*)" (?P<status>\\d{3})')


        def parse_log_line(line):
            """Return a dict for one access-log line, or None if it does not match."""
            m = LINE.match(line)
            return m.groupdict() if m else None
        '''),
}

task(
    name="locate_config_parser",
    kind="locate",
    files=CONFIG_FILES,
    prompt="Where is the function that parses config files defined? Answer with the file path and the function name.",
    check=locate_check(CONFIG_FILES, "settings/loader.py", "parse_config_file"),
    reference="`parse_config_file` in app/settings/loader.py",
    alt_answers=[
        "It is defined in ./app/settings/loader.py as parse_config_file(path); app/settings/__init__.py re-exports it.",
        "/tmp/x/repo/app/settings/loader.py:8 def parse_config_file",
    ],
    wrong=[
        "",
        "app/cli.py defines parse_args, which parses the command line.",
        "parse_plugin_list in app/plugins/loader.py",
        "parse_config_file is in app/cli.py",
        "app/cli.py app/logs.py app/plugins/loader.py app/settings/loader.py app/settings/__init__.py parse_config_file",
    ],
)

RUST_LOCATE_FILES = {
    "Cargo.toml": d("""
        [package]
        name = "gateway"
        version = "0.3.0"
        edition = "2021"
        """),
    "src/main.rs": d("""
        mod limits;
        mod net;
        mod server;

        fn main() {
            let cfg = limits::LimitsConfig::default();
            let limiter = limits::rate_limiter_from_config(&cfg);
            server::run("127.0.0.1:8080", limiter);
        }
        """),
    "src/limits.rs": d("""
        //! Limits read from the configuration.
        use crate::net::RateLimiter;

        #[derive(Debug, Clone)]
        pub struct LimitsConfig {
            pub requests_per_second: u32,
            pub burst: u32,
        }

        impl Default for LimitsConfig {
            fn default() -> Self {
                LimitsConfig { requests_per_second: 50, burst: 100 }
            }
        }

        /// Build the request limiter the server uses.
        pub fn rate_limiter_from_config(cfg: &LimitsConfig) -> RateLimiter {
            RateLimiter::new(cfg.requests_per_second, cfg.burst)
        }
        """),
    "src/net/mod.rs": d("""
        mod conn;
        mod throttle;

        pub use conn::Connection;
        pub use throttle::RateLimiter;
        """),
    "src/net/conn.rs": d("""
        use std::net::TcpStream;

        pub struct Connection {
            pub stream: TcpStream,
            pub requests: u64,
        }

        impl Connection {
            pub fn new(stream: TcpStream) -> Self {
                Connection { stream, requests: 0 }
            }
        }
        """),
    "src/net/throttle.rs": d("""
        //! Token-bucket throttling for incoming requests.
        use std::time::Instant;

        pub struct RateLimiter {
            capacity: f64,
            tokens: f64,
            refill_per_sec: f64,
            last: Instant,
        }

        impl RateLimiter {
            pub fn new(per_second: u32, burst: u32) -> Self {
                RateLimiter {
                    capacity: burst as f64,
                    tokens: burst as f64,
                    refill_per_sec: per_second as f64,
                    last: Instant::now(),
                }
            }

            /// Take one token if there is one.
            pub fn try_acquire(&mut self) -> bool {
                let now = Instant::now();
                let elapsed = now.duration_since(self.last).as_secs_f64();
                self.last = now;
                self.tokens = (self.tokens + elapsed * self.refill_per_sec).min(self.capacity);
                if self.tokens >= 1.0 {
                    self.tokens -= 1.0;
                    true
                } else {
                    false
                }
            }
        }
        """),
    "src/server.rs": d("""
        use std::io::Write;
        use std::net::TcpListener;

        use crate::net::{Connection, RateLimiter};

        pub fn run(addr: &str, mut limiter: RateLimiter) {
            let listener = TcpListener::bind(addr).expect("bind");
            for stream in listener.incoming().flatten() {
                let mut conn = Connection::new(stream);
                let reply: &[u8] = if limiter.try_acquire() { b"HTTP/1.1 200 OK\\r\\n\\r\\n" } else { b"HTTP/1.1 429 Too Many Requests\\r\\n\\r\\n" };
                conn.requests += 1;
                let _ = conn.stream.write_all(reply);
            }
        }
        """),
}

task(
    name="locate_rust_struct",
    kind="locate",
    files=RUST_LOCATE_FILES,
    prompt="Which file defines the `RateLimiter` struct? Answer with the path.",
    check=locate_check(RUST_LOCATE_FILES, "net/throttle.rs"),
    reference="src/net/throttle.rs",
    alt_answers=["`RateLimiter` is defined in `src/net/throttle.rs` and re-exported by src/net/mod.rs."],
    wrong=["", "src/net/mod.rs", "It is in src/limits.rs (rate_limiter_from_config).", "src/server.rs uses it"],
)

TIMEOUT_FILES = {
    "README.md": d("""
        # httpkit

        A tiny HTTP client wrapper with retries and sane defaults.
        """),
    "httpkit/__init__.py": "from .client import Client\n",
    "httpkit/defaults.py": d('''
        """Defaults shared by every client."""

        DEFAULT_TIMEOUT = 30.0  # seconds, connect + read
        DEFAULT_RETRIES = 3
        USER_AGENT = "httpkit/1.4"
        '''),
    "httpkit/retry.py": d('''
        """How long to wait between attempts."""

        MAX_WAIT = 60.0


        class RetryPolicy:
            def __init__(self, retries, base=0.5):
                self.retries = retries
                self.base = base

            def wait(self, attempt):
                return min(self.base * 2 ** attempt, MAX_WAIT)
        '''),
    "httpkit/client.py": d('''
        from . import defaults
        from .retry import RetryPolicy


        class Client:
            def __init__(self, base_url, timeout=None, retries=None):
                self.base_url = base_url.rstrip("/")
                self.timeout = defaults.DEFAULT_TIMEOUT if timeout is None else timeout
                self.retry = RetryPolicy(defaults.DEFAULT_RETRIES if retries is None else retries)
                self.headers = {"User-Agent": defaults.USER_AGENT}

            def url(self, path):
                return f"{self.base_url}/{path.lstrip('/')}"

            def request_options(self, timeout=None):
                return {"timeout": self.timeout if timeout is None else timeout, "headers": self.headers}

            def health_check_options(self):
                return self.request_options(timeout=5)
        '''),
    "examples/quick.py": d('''
        from httpkit import Client

        client = Client("https://example.org", timeout=10)
        print(client.url("/status"), client.request_options())
        '''),
}

NUM_30 = re.compile(r"(?<![\d.])30(?:\.0+)?(?!\d|\.\d)|\bthirty\b", re.I)

task(
    name="locate_default_timeout",
    kind="locate",
    files=TIMEOUT_FILES,
    prompt="Where is the default HTTP timeout of httpkit's client defined, and what is its value? "
           "Answer with the file path and the value.",
    check=locate_check(TIMEOUT_FILES, "httpkit/defaults.py", extra=lambda a: (
        (True, "names httpkit/defaults.py and 30") if NUM_30.search(a) else (False, "answer does not give the value 30"))),
    reference="httpkit/defaults.py: DEFAULT_TIMEOUT = 30.0 (seconds)",
    alt_answers=["In `httpkit/defaults.py`, `DEFAULT_TIMEOUT` is 30 seconds; Client uses it when timeout is None."],
    wrong=["", "httpkit/client.py, 5 seconds", "examples/quick.py sets 10", "httpkit/defaults.py",
           "httpkit/retry.py: 60", "httpkit/defaults.py, 300 seconds"],
)

# --- explain ----------------------------------------------------------------

BACKOFF_FILES = {
    "netutil/__init__.py": "",
    "netutil/backoff.py": d('''
        """Retry schedules."""
        import random


        def retry_backoff(attempts, base=0.25, factor=2.0, cap=8.0):
            """The delays (in seconds) to sleep before each of `attempts` retries."""
            delays = []
            delay = base
            for _ in range(attempts):
                delays.append(min(delay, cap))
                delay *= factor
            return delays


        def with_jitter(delays, rng=None):
            """Spread each delay over [delay/2, delay] so clients do not retry in lockstep."""
            rng = rng or random.Random()
            return [d / 2 + rng.random() * d / 2 for d in delays]
        '''),
    "netutil/legacy.py": d('''
        """Kept for old callers; new code uses netutil.backoff."""


        def backoff_delay(attempt, base=0.25):
            """Delay before retry number `attempt` (0-based)."""
            return base * (2 ** attempt)
        '''),
    "netutil/fetch.py": d('''
        import time

        from .backoff import retry_backoff, with_jitter


        def fetch_with_retries(do_request, attempts=4, sleep=time.sleep):
            last_error = None
            for delay in [0.0] + with_jitter(retry_backoff(attempts)):
                sleep(delay)
                try:
                    return do_request()
                except OSError as err:
                    last_error = err
            raise last_error
        '''),
}

EMPTY_LIST = re.compile(
    r"\[\s*\]|\bempty\b|\bno (?:delays|elements|items|values|entries)\b|zero[- ]length|length (?:of )?(?:0|zero)\b"
    r"|\blist\(\)", re.I)


def explain_backoff(repo, result):
    answer = norm_answer(result)
    if not answer.strip():
        return False, "empty answer"
    if EMPTY_LIST.search(answer):
        return True, "says it returns an empty list"
    return False, "answer does not say it returns an empty list"


task(
    name="explain_retry_backoff",
    kind="explain",
    files=BACKOFF_FILES,
    prompt="What does `retry_backoff` return when `attempts` is 0?",
    check=explain_backoff,
    reference="An empty list: the loop runs zero times, so `delays` stays [].",
    alt_answers=["It returns []", "It returns an empty list (no delays).", "list() - nothing"],
    wrong=["", "0.25", "It returns 0.", "None", "It returns the base delay, 0.25 seconds."],
)

TIER_FILES = {
    "loyalty/__init__.py": "from .tiers import tier_for, tier_discount\n",
    "loyalty/tiers.py": d('''
        """Loyalty tiers from a 0-100 engagement score."""

        DISCOUNTS = {"gold": 0.15, "silver": 0.05, "bronze": 0.0}


        def tier_for(score):
            """Map an engagement score (0-100) to a tier name."""
            if score > 80:
                return "gold"
            if score >= 50:
                return "silver"
            return "bronze"


        def tier_discount(score):
            return DISCOUNTS[tier_for(score)]
        '''),
    "loyalty/points.py": d('''
        """Tiers for the old points programme (points, not scores)."""


        def tier_for_points(points):
            if points >= 80:
                return "gold"
            if points >= 40:
                return "silver"
            return "bronze"
        '''),
}


def explain_tier(repo, result):
    answer = norm_answer(result)
    if not answer.strip():
        return False, "empty answer"
    if re.search(r"\breturns?\s*(?:the\s+)?(?:string\s+)?[\"']?(?:gold|bronze)\b", answer, re.I):
        return False, "answer says it returns gold or bronze"
    if re.search(r"\bsilver\b", answer, re.I):
        return True, "says silver"
    return False, "answer does not say silver"


task(
    name="explain_tier_boundary",
    kind="explain",
    files=TIER_FILES,
    prompt="What does `tier_for` return for a score of exactly 80?",
    check=explain_tier,
    reference='"silver": gold needs a score above 80 (score > 80), and 80 >= 50.',
    alt_answers=["Silver.", "tier_for(80) == 'silver'"],
    wrong=["", "gold", "It returns 'gold'.", "bronze", "It returns gold since 80 >= 80."],
)

# --- rename -----------------------------------------------------------------

USER_FILES = {
    "users/__init__.py": "from .store import fetch_user_record, fetch_user_records_bulk\n",
    "users/store.py": d('''
        """An in-memory user store."""

        _USERS = {
            1: {"id": 1, "name": "Ada", "email": "ada@example.org"},
            2: {"id": 2, "name": "Linus", "email": "linus@example.org"},
        }


        def fetch_user_record(user_id):
            """One user's record, or None."""
            record = _USERS.get(user_id)
            return dict(record) if record else None


        def fetch_user_records_bulk(user_ids):
            """Records for several users, skipping unknown ids."""
            return [r for r in (fetch_user_record(i) for i in user_ids) if r]
        '''),
    "users/api.py": d('''
        from users.store import fetch_user_record


        def get_user(user_id):
            record = fetch_user_record(user_id)
            if record is None:
                return 404, {"error": "no such user"}
            return 200, record
        '''),
    "reports/__init__.py": "",
    "reports/summary.py": d('''
        from users import fetch_user_record, fetch_user_records_bulk


        def greeting(user_id):
            record = fetch_user_record(user_id)
            return f"Hello, {record['name']}!" if record else "Hello, stranger!"


        def roster(user_ids):
            return ", ".join(r["name"] for r in fetch_user_records_bulk(user_ids))
        '''),
    "tests/__init__.py": "",
    "tests/test_users.py": d('''
        import unittest

        from reports.summary import greeting, roster
        from users.api import get_user
        from users.store import fetch_user_record


        class UserTests(unittest.TestCase):
            def test_fetch(self):
                self.assertEqual(fetch_user_record(1)["name"], "Ada")
                self.assertIsNone(fetch_user_record(99))

            def test_api(self):
                self.assertEqual(get_user(2)[0], 200)
                self.assertEqual(get_user(3)[0], 404)

            def test_reports(self):
                self.assertEqual(greeting(1), "Hello, Ada!")
                self.assertEqual(roster([1, 5, 2]), "Ada, Linus")


        if __name__ == "__main__":
            unittest.main()
        '''),
}


def check_rename_user(repo, result):
    left = word_left(repo, "fetch_user_record")
    if left:
        return False, f"fetch_user_record still in {', '.join(left)}"
    store = read(repo, "users/store.py") or ""
    if not re.search(r"^def load_user\(", store, re.M):
        return False, "users/store.py does not define load_user"
    if not re.search(r"^def fetch_user_records_bulk\(", store, re.M):
        return False, "fetch_user_records_bulk was renamed or removed (only fetch_user_record was to change)"
    ok, why = unittest_passes(repo, 3)
    if not ok:
        return False, why
    got, why = python_probe(repo, """
        import json
        import users, users.api, reports.summary
        from users.store import load_user
        print(json.dumps([load_user(2)["name"], users.load_user(1)["name"], users.api.get_user(1)[0],
                          reports.summary.greeting(2)]))
        """)
    if got != ["Linus", "Ada", 200, "Hello, Linus!"]:
        return False, why or f"renamed code behaves differently: {got}"
    return True, "renamed everywhere, tests pass"


def sub_all(pattern, repl):
    def edit(repo):
        for rel in repo_files(repo):
            text = read(repo, rel)
            if text is not None:
                (repo / rel).write_text(re.sub(pattern, repl, text), encoding="utf-8")
    return edit


task(
    name="rename_function",
    kind="rename",
    files=USER_FILES,
    prompt="Rename the function `fetch_user_record` to `load_user` everywhere in this repository "
           "(definition, imports, call sites, tests). Do not rename any other function. "
           "The tests (`python3 -m unittest`) must still pass.",
    check=check_rename_user,
    reference=sub_all(r"\bfetch_user_record\b", "load_user"),
    cheats=[
        ("naive substring replace (also renames fetch_user_records_bulk)", sub_all("fetch_user_record", "load_user")),
        ("definition only", {"users/store.py": USER_FILES["users/store.py"].replace(
            "def fetch_user_record(", "def load_user(")}),
    ],
)

INGEST_FILES = {
    "ingest/__init__.py": "",
    "ingest/model.py": d('''
        from dataclasses import dataclass


        class CsvRowError(ValueError):
            """A line that cannot be turned into a CsvRow."""


        @dataclass
        class CsvRow:
            sku: str
            qty: int
            price_cents: int

            @property
            def total_cents(self):
                return self.qty * self.price_cents
        '''),
    "ingest/reader.py": d('''
        from .model import CsvRow, CsvRowError


        def parse_line(line):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 3:
                raise CsvRowError(f"expected 3 fields, got {len(parts)}: {line!r}")
            sku, qty, price = parts
            try:
                return CsvRow(sku, int(qty), int(price))
            except ValueError as err:
                raise CsvRowError(str(err)) from err


        def read_rows(text):
            return [parse_line(line) for line in text.splitlines() if line.strip()]
        '''),
    "ingest/export.py": d('''
        from .model import CsvRow


        def to_dict(row):
            if not isinstance(row, CsvRow):
                raise TypeError("expected a CsvRow")
            return {"sku": row.sku, "qty": row.qty, "total_cents": row.total_cents}


        def grand_total(rows: "list[CsvRow]") -> int:
            return sum(r.total_cents for r in rows)
        '''),
    "tests/__init__.py": "",
    "tests/test_ingest.py": d('''
        import unittest

        from ingest.export import grand_total, to_dict
        from ingest.model import CsvRow, CsvRowError
        from ingest.reader import parse_line, read_rows


        class IngestTests(unittest.TestCase):
            def test_parse(self):
                self.assertEqual(parse_line("A1, 2, 150"), CsvRow("A1", 2, 150))

            def test_bad_line(self):
                with self.assertRaises(CsvRowError):
                    parse_line("A1,2")

            def test_export(self):
                rows = read_rows("A1,2,150\\nB2,1,99\\n")
                self.assertEqual(grand_total(rows), 399)
                self.assertEqual(to_dict(rows[1])["total_cents"], 99)


        if __name__ == "__main__":
            unittest.main()
        '''),
}


def check_rename_class(repo, result):
    left = word_left(repo, "CsvRow")
    if left:
        return False, f"CsvRow still in {', '.join(left)}"
    model = read(repo, "ingest/model.py") or ""
    if not re.search(r"^class Record\b", model, re.M):
        return False, "ingest/model.py does not define class Record"
    if not re.search(r"^class CsvRowError\b", model, re.M):
        return False, "CsvRowError was renamed or removed (only CsvRow was to change)"
    ok, why = unittest_passes(repo, 3)
    if not ok:
        return False, why
    got, why = python_probe(repo, """
        import json
        from ingest.model import Record, CsvRowError
        from ingest.reader import read_rows
        from ingest.export import to_dict
        rows = read_rows("X,3,10")
        print(json.dumps([type(rows[0]).__name__, to_dict(Record("Y", 2, 5))["total_cents"]]))
        """)
    if got != ["Record", 10]:
        return False, why or f"renamed code behaves differently: {got}"
    return True, "renamed everywhere, tests pass"


task(
    name="rename_class",
    kind="rename",
    files=INGEST_FILES,
    prompt="Rename the class `CsvRow` to `Record` across the whole repository (its definition, imports, "
           "type checks, annotations, docstrings and tests). Keep `CsvRowError` as it is. "
           "The tests (`python3 -m unittest`) must still pass.",
    check=check_rename_class,
    reference=sub_all(r"\bCsvRow\b", "Record"),
    cheats=[
        ("naive substring replace (also renames CsvRowError)", sub_all("CsvRow", "Record")),
        ("tests left behind", lambda repo: (sub_all(r"\bCsvRow\b", "Record")(repo), apply_edit(
            repo, {"tests/test_ingest.py": INGEST_FILES["tests/test_ingest.py"]}))),
    ],
)

# --- fix a failing test -----------------------------------------------------

PAGER_FILES = {
    "pager/__init__.py": "from .pages import page_count, paginate\n",
    "pager/pages.py": d('''
        """Split result lists into 1-based pages."""


        def paginate(items, page, per_page=10):
            """The items on page `page` (the first page is 1)."""
            if page < 1:
                raise ValueError("pages start at 1")
            start = page * per_page
            return items[start:start + per_page]


        def page_count(n_items, per_page=10):
            return (n_items + per_page - 1) // per_page
        '''),
    "pager/render.py": d('''
        from .pages import page_count, paginate


        def render_page(items, page, per_page=10):
            shown = paginate(items, page, per_page)
            footer = f"page {page} of {max(page_count(len(items), per_page), 1)}"
            return "\\n".join([*map(str, shown), footer])
        '''),
    "tests/__init__.py": "",
    "tests/test_pages.py": d('''
        import unittest

        from pager import page_count, paginate


        class PaginateTests(unittest.TestCase):
            def test_first_page(self):
                self.assertEqual(paginate(list(range(25)), 1), list(range(10)))

            def test_last_partial_page(self):
                self.assertEqual(paginate(list(range(25)), 3), [20, 21, 22, 23, 24])

            def test_page_size(self):
                self.assertEqual(paginate(list("abcdefg"), 2, per_page=3), ["d", "e", "f"])

            def test_page_zero(self):
                with self.assertRaises(ValueError):
                    paginate([1, 2, 3], 0)

            def test_page_count(self):
                self.assertEqual(page_count(25), 3)
                self.assertEqual(page_count(0), 0)
                self.assertEqual(page_count(30), 3)


        if __name__ == "__main__":
            unittest.main()
        '''),
}


def fix_check(files, protected, expected_tests, probe=None, probe_expect=None):
    def check(repo, result):
        ok, why = unchanged(repo, files, protected)
        if not ok:
            return False, why
        ok, why = unittest_passes(repo, expected_tests)
        if not ok:
            return False, why
        if probe:
            got, why = python_probe(repo, probe)
            if got != probe_expect:
                return False, why or f"fixed code gives {got}, expected {probe_expect}"
        return True, "tests pass, tests unchanged"
    return check


task(
    name="fix_off_by_one",
    kind="fix_test",
    files=PAGER_FILES,
    prompt="The test suite fails (run `python3 -m unittest`). Find the bug in the code and fix it. "
           "Do not change the tests.",
    check=fix_check(PAGER_FILES, ["tests/test_pages.py"], 5,
                    probe="""
                        import json
                        from pager.pages import paginate
                        print(json.dumps([paginate(list(range(7)), 1, 2), paginate(list(range(7)), 4, 2),
                                          paginate(list(range(7)), 5, 2)]))
                        """,
                    probe_expect=[[0, 1], [6], []]),
    reference={"pager/pages.py": PAGER_FILES["pager/pages.py"].replace(
        "start = page * per_page", "start = (page - 1) * per_page")},
    cheats=[
        ("edits the test", {"tests/test_pages.py": PAGER_FILES["tests/test_pages.py"].replace(
            "self.assertEqual(paginate(list(range(25)), 1), list(range(10)))", "pass").replace(
            "self.assertEqual(paginate(list(range(25)), 3), [20, 21, 22, 23, 24])", "pass").replace(
            'self.assertEqual(paginate(list("abcdefg"), 2, per_page=3), ["d", "e", "f"])', "pass")}),
        ("deletes the test", {"tests/test_pages.py": None}),
    ],
)

DATES_FILES = {
    "calendar_utils/__init__.py": "",
    "calendar_utils/dates.py": d('''
        """Gregorian calendar helpers."""

        _DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


        def is_leap_year(year):
            """Divisible by 4, except centuries, except every fourth century."""
            return year % 4 == 0 and (year % 100 != 0 and year % 400 == 0)


        def days_in_month(year, month):
            if not 1 <= month <= 12:
                raise ValueError(f"month out of range: {month}")
            if month == 2 and is_leap_year(year):
                return 29
            return _DAYS[month - 1]


        def day_of_year(year, month, day):
            return sum(days_in_month(year, m) for m in range(1, month)) + day
        '''),
    "calendar_utils/format.py": d('''
        MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


        def short_date(year, month, day):
            return f"{day} {MONTHS[month - 1]} {year}"
        '''),
    "tests/__init__.py": "",
    "tests/test_dates.py": d('''
        import unittest

        from calendar_utils.dates import day_of_year, days_in_month, is_leap_year
        from calendar_utils.format import short_date


        class DateTests(unittest.TestCase):
            def test_leap_years(self):
                self.assertTrue(is_leap_year(2024))
                self.assertTrue(is_leap_year(2000))
                self.assertFalse(is_leap_year(1900))
                self.assertFalse(is_leap_year(2023))

            def test_february(self):
                self.assertEqual(days_in_month(2024, 2), 29)
                self.assertEqual(days_in_month(2100, 2), 28)

            def test_day_of_year(self):
                self.assertEqual(day_of_year(2024, 3, 1), 61)
                self.assertEqual(day_of_year(2023, 12, 31), 365)

            def test_format(self):
                self.assertEqual(short_date(2024, 2, 29), "29 Feb 2024")


        if __name__ == "__main__":
            unittest.main()
        '''),
}

task(
    name="fix_wrong_operator",
    kind="fix_test",
    files=DATES_FILES,
    prompt="`python3 -m unittest` fails in this repository. Fix the code so the tests pass; do not edit the tests.",
    check=fix_check(DATES_FILES, ["tests/test_dates.py"], 4,
                    probe="""
                        import json
                        from calendar_utils.dates import is_leap_year
                        print(json.dumps([y for y in range(1600, 2401) if is_leap_year(y)][:5] + [
                            sum(is_leap_year(y) for y in range(1600, 2401))]))
                        """,
                    probe_expect=[1600, 1604, 1608, 1612, 1616, 195]),
    reference={"calendar_utils/dates.py": DATES_FILES["calendar_utils/dates.py"].replace(
        "(year % 100 != 0 and year % 400 == 0)", "(year % 100 != 0 or year % 400 == 0)")},
    cheats=[
        ("hard-codes the tested years", {"calendar_utils/dates.py": DATES_FILES["calendar_utils/dates.py"].replace(
            "return year % 4 == 0 and (year % 100 != 0 and year % 400 == 0)",
            "return year in (2000, 2024)")}),
        ("edits the test", {"tests/test_dates.py": DATES_FILES["tests/test_dates.py"].replace(
            "self.assertTrue(is_leap_year(2024))", "pass").replace(
            "self.assertTrue(is_leap_year(2000))", "pass").replace(
            "self.assertEqual(days_in_month(2024, 2), 29)", "pass").replace(
            "self.assertEqual(day_of_year(2024, 3, 1), 61)", "pass")}),
    ],
)

CHUNK_FILES = {
    "Cargo.toml": d("""
        [package]
        name = "chunker"
        version = "0.1.0"
        edition = "2021"

        [dependencies]
        """),
    ".gitignore": "/target\n",
    "src/lib.rs": d("""
        //! Split work into fixed-size pieces, and a few text helpers.
        pub mod chunks;
        pub mod text;
        """),
    "src/chunks.rs": d("""
        /// Half-open ranges `(start, end)` that cover `0..total` in pieces of
        /// `size`; the last piece may be shorter.
        pub fn chunk_ranges(total: usize, size: usize) -> Vec<(usize, usize)> {
            assert!(size > 0, "chunk size must be positive");
            let mut out = Vec::new();
            let mut start = 0;
            while start + size < total {
                out.push((start, start + size));
                start += size;
            }
            out
        }

        /// How many pieces `chunk_ranges` returns.
        pub fn chunk_count(total: usize, size: usize) -> usize {
            chunk_ranges(total, size).len()
        }
        """),
    "src/text.rs": d("""
        /// Words separated by whitespace.
        pub fn word_count(s: &str) -> usize {
            s.split_whitespace().count()
        }

        /// Mean word length in characters (0.0 for no words).
        pub fn average_word_len(s: &str) -> f64 {
            let words: Vec<&str> = s.split_whitespace().collect();
            if words.is_empty() {
                return 0.0;
            }
            words.iter().map(|w| w.chars().count()).sum::<usize>() as f64 / words.len() as f64
        }
        """),
    "tests/chunks.rs": d("""
        use chunker::chunks::{chunk_count, chunk_ranges};

        #[test]
        fn exact_multiple() {
            assert_eq!(chunk_ranges(10, 5), vec![(0, 5), (5, 10)]);
        }

        #[test]
        fn remainder() {
            assert_eq!(chunk_ranges(7, 3), vec![(0, 3), (3, 6), (6, 7)]);
        }

        #[test]
        fn empty() {
            assert!(chunk_ranges(0, 4).is_empty());
        }

        #[test]
        fn size_larger_than_total() {
            assert_eq!(chunk_ranges(3, 10), vec![(0, 3)]);
            assert_eq!(chunk_count(3, 10), 1);
        }
        """),
    "tests/text.rs": d("""
        use chunker::text::{average_word_len, word_count};

        #[test]
        fn counts_words() {
            assert_eq!(word_count("  a bb   ccc "), 3);
        }

        #[test]
        fn average() {
            assert_eq!(average_word_len("ab abcd"), 3.0);
            assert_eq!(average_word_len(""), 0.0);
        }
        """),
}


def check_rust_fix(repo, result):
    ok, why = unchanged(repo, CHUNK_FILES, ["tests/chunks.rs", "tests/text.rs", "Cargo.toml"])
    if not ok:
        return False, why
    ok, why = cargo_test(repo, 6)
    return (True, "cargo test passes, tests unchanged") if ok else (False, why)


task(
    name="fix_rust_test",
    kind="fix_test",
    files=CHUNK_FILES,
    prompt="`cargo test` fails in this Rust crate. Fix the bug in the library code so that all tests pass. "
           "Do not modify the tests or Cargo.toml.",
    check=check_rust_fix,
    reference={"src/chunks.rs": CHUNK_FILES["src/chunks.rs"].replace(
        "    while start + size < total {\n"
        "        out.push((start, start + size));\n"
        "        start += size;\n"
        "    }\n",
        "    while start < total {\n"
        "        let end = (start + size).min(total);\n"
        "        out.push((start, end));\n"
        "        start = end;\n"
        "    }\n")},
    cheats=[
        ("edits the test", {"tests/chunks.rs": CHUNK_FILES["tests/chunks.rs"].replace(
            "vec![(0, 3), (3, 6), (6, 7)]", "vec![(0, 3), (3, 6)]")}),
    ],
    needs="cargo",
)

# --- add a parameter --------------------------------------------------------

FMT_FILES = {
    "textutil/__init__.py": "",
    "textutil/fmt.py": d('''
        """Formatting helpers for flat text exports."""


        def join_fields(fields):
            """Join fields into one line; None becomes an empty field."""
            return ",".join("" if f is None else str(f) for f in fields)


        def quote(value):
            return '"' + str(value).replace('"', '""') + '"'
        '''),
    "textutil/report.py": d('''
        from .fmt import join_fields, quote


        def render(rows, header=("name", "qty", "note")):
            lines = [join_fields(header)]
            for name, qty, note in rows:
                lines.append(join_fields([quote(name), qty, note]))
            return "\\n".join(lines)
        '''),
    "tests/__init__.py": "",
    "tests/test_fmt.py": d('''
        import unittest

        from textutil.fmt import join_fields
        from textutil.report import render


        class FmtTests(unittest.TestCase):
            def test_join(self):
                self.assertEqual(join_fields(["a", 1, None, 2.5]), "a,1,,2.5")

            def test_report(self):
                self.assertEqual(render([("x", 2, None)]), 'name,qty,note\\n"x",2,')


        if __name__ == "__main__":
            unittest.main()
        '''),
}


def check_join_sep(repo, result):
    got, why = python_probe(repo, """
        import inspect, json
        from textutil.fmt import join_fields
        from textutil.report import render
        p = inspect.signature(join_fields).parameters.get("sep")
        out = {"default": None if p is None or p.default is inspect.Parameter.empty else p.default}
        out["plain"] = join_fields(["a", 1, None, 2.5])
        try:
            out["pipe"] = join_fields(["a", None, "b"], sep="|")
            out["tab"] = join_fields(("x", 3), sep="\\t")
        except TypeError as err:
            out["pipe"] = out["tab"] = "TypeError: " + str(err)
        out["report"] = render([("x", 2, None)])
        print(json.dumps(out))
        """)
    if got is None:
        return False, why
    want = {"default": ",", "plain": "a,1,,2.5", "pipe": "a||b", "tab": "x\t3", "report": 'name,qty,note\n"x",2,'}
    bad = [k for k in want if got.get(k) != want[k]]
    if bad:
        return False, "; ".join(f"{k}: got {got.get(k)!r}, want {want[k]!r}" for k in bad)
    ok, why = unchanged(repo, FMT_FILES, ["tests/test_fmt.py"])
    if not ok:
        return False, why
    ok, why = unittest_passes(repo, 2)
    return (True, "sep works, default unchanged") if ok else (False, why)


task(
    name="add_param_sep",
    kind="add_param",
    files=FMT_FILES,
    prompt='Add a keyword parameter `sep` with default `","` to `join_fields`, so callers can choose the '
           "separator (e.g. `join_fields(row, sep=\"|\")`). Calls without it must behave exactly as before.",
    check=check_join_sep,
    reference={"textutil/fmt.py": FMT_FILES["textutil/fmt.py"].replace(
        'def join_fields(fields):', 'def join_fields(fields, sep=","):').replace(
        'return ",".join(', "return sep.join(")},
    cheats=[
        ("parameter added but ignored", {"textutil/fmt.py": FMT_FILES["textutil/fmt.py"].replace(
            'def join_fields(fields):', 'def join_fields(fields, sep=","):')}),
        ("default changed", {"textutil/fmt.py": FMT_FILES["textutil/fmt.py"].replace(
            'def join_fields(fields):', 'def join_fields(fields, sep=";"):').replace(
            'return ",".join(', "return sep.join(")}),
    ],
)

MONEY_FILES = {
    "shop/__init__.py": "",
    "shop/money.py": d('''
        """Money is kept in integer cents; these helpers format it."""


        def format_price(cents):
            """Format integer cents as dollars, e.g. 1999 -> "$19.99", -250 -> "-$2.50"."""
            sign = "-" if cents < 0 else ""
            cents = abs(cents)
            return f"{sign}${cents // 100}.{cents % 100:02d}"


        def parse_price(text):
            """The inverse of format_price for dollar strings."""
            text = text.strip()
            negative = text.startswith("-")
            dollars, _, cents = text.lstrip("-$").partition(".")
            value = int(dollars) * 100 + int((cents + "00")[:2])
            return -value if negative else value
        '''),
    "shop/legacy.py": d('''
        def format_price_legacy(amount):
            """Old float-based formatter; do not use for new code."""
            return "$%.2f" % amount
        '''),
    "shop/cart.py": d('''
        from .money import format_price


        class Cart:
            def __init__(self):
                self.lines = []

            def add(self, sku, cents, qty=1):
                self.lines.append((sku, cents, qty))

            def total_cents(self):
                return sum(c * q for _, c, q in self.lines)

            def summary(self):
                return f"{len(self.lines)} items, total {format_price(self.total_cents())}"
        '''),
    "tests/__init__.py": "",
    "tests/test_money.py": d('''
        import unittest

        from shop.cart import Cart
        from shop.money import format_price, parse_price


        class MoneyTests(unittest.TestCase):
            def test_format(self):
                self.assertEqual(format_price(1999), "$19.99")
                self.assertEqual(format_price(-250), "-$2.50")
                self.assertEqual(format_price(5), "$0.05")

            def test_roundtrip(self):
                self.assertEqual(parse_price(format_price(12345)), 12345)

            def test_cart(self):
                cart = Cart()
                cart.add("A", 250, 2)
                self.assertEqual(cart.summary(), "1 items, total $5.00")


        if __name__ == "__main__":
            unittest.main()
        '''),
}


def check_currency(repo, result):
    got, why = python_probe(repo, """
        import inspect, json
        from shop.money import format_price
        p = inspect.signature(format_price).parameters.get("currency")
        out = {"default": None if p is None or p.default is inspect.Parameter.empty else p.default}
        out["plain"] = [format_price(1999), format_price(-250), format_price(5)]
        try:
            out["euro"] = [format_price(1999, currency="€"), format_price(-250, currency="£")]
        except TypeError as err:
            out["euro"] = "TypeError: " + str(err)
        print(json.dumps(out))
        """)
    if got is None:
        return False, why
    want = {"default": "$", "plain": ["$19.99", "-$2.50", "$0.05"], "euro": ["€19.99", "-£2.50"]}
    bad = [k for k in want if got.get(k) != want[k]]
    if bad:
        return False, "; ".join(f"{k}: got {got.get(k)!r}, want {want[k]!r}" for k in bad)
    ok, why = unchanged(repo, MONEY_FILES, ["tests/test_money.py"])
    if not ok:
        return False, why
    ok, why = unittest_passes(repo, 3)
    return (True, "currency works, default unchanged") if ok else (False, why)


task(
    name="add_param_currency",
    kind="add_param",
    files=MONEY_FILES,
    prompt='Add a `currency` parameter (default `"$"`) to `format_price` so callers can pick the currency symbol, '
           'e.g. `format_price(1999, currency="€")` gives "€19.99" and negative amounts keep the minus sign first '
           '("-€2.50"). Existing calls must behave exactly as before.',
    check=check_currency,
    reference={"shop/money.py": MONEY_FILES["shop/money.py"].replace(
        "def format_price(cents):", 'def format_price(cents, currency="$"):').replace(
        'return f"{sign}${cents // 100}', 'return f"{sign}{currency}{cents // 100}')},
    cheats=[
        ("symbol after the minus sign forgotten", {"shop/money.py": MONEY_FILES["shop/money.py"].replace(
            "def format_price(cents):", 'def format_price(cents, currency="$"):').replace(
            'return f"{sign}${cents // 100}', 'return f"{currency}{sign}{cents // 100}')}),
        ("parameter added but ignored", {"shop/money.py": MONEY_FILES["shop/money.py"].replace(
            "def format_price(cents):", 'def format_price(cents, currency="$"):')}),
    ],
)

# ---------------------------------------------------------------------------
# Self-test: every check fails on the untouched repo and on wrong answers or
# cheats, and passes on the reference solution.


def self_test(tasks, keep, verbose=False):
    failures, checks = [], 0
    base = Path(tempfile.mkdtemp(prefix="agent-tasks-selftest-"))
    for t in tasks:
        if t.needs and not shutil.which(t.needs):
            print(f"  {t.name:<24} skipped ({t.needs} not found)")
            continue
        start = time.monotonic()
        n = 0

        def expect(label, want, edit=None, answer=""):
            nonlocal n
            n += 1
            repo = make_repo(base / t.name / f"case{n}", t.files)
            if edit is not None:
                apply_edit(repo, edit)
            ok, why = t.check(repo, {"answer": answer, "finish": "answered"})
            if verbose:
                print(f"    {'pass' if ok else 'fail'} (want {'pass' if want else 'fail'})  {label}: {why}")
            if ok != want:
                failures.append(f"{t.name}: {label}: check {'passed' if ok else 'failed'} ({why}), "
                                f"expected it to {'pass' if want else 'fail'}")
            return why

        expect("untouched repo, empty answer", False)
        if t.answers:
            for wrong in t.wrong:
                expect(f"wrong answer {wrong!r}", False, answer=wrong)
            for good in [t.reference] + t.alt_answers:
                why = expect(f"reference answer {good!r}", True, answer=good)
        else:
            for label, edit in t.cheats:
                expect(f"cheat: {label}", False, edit=edit)
            why = expect("reference solution", True, edit=t.reference)
        checks += n
        print(f"  {t.name:<24} {t.kind:<10} {n:2d} cases  {time.monotonic() - start:5.1f} s   reference: {why}")
    if keep:
        print(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    if failures:
        print(f"\nself-test FAILED: {len(failures)} of {checks} cases")
        for f in failures:
            print(f"  {f}")
        return 1
    print(f"\nself-test passed: {len(tasks)} tasks, {checks} cases "
          "(each check fails untouched/wrong/cheating and passes the reference)")
    return 0


# ---------------------------------------------------------------------------
# Running the agent


def parse_result(stdout):
    """The agent's one JSON object; tolerate log lines before it."""
    text = stdout.strip()
    for candidate in [text] + text.splitlines()[::-1]:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def scripted_turns(t, explore):
    """A larger model's turns for a locate task (--scripted): grep for the name
    the prompt puts in backquotes (else the reference's), read the task's source
    files, answer with the reference. With `explore`, the request asks the subagent,
    which does the grep and the reads and reports the reference."""
    def call(tool, args):
        return json.dumps({"thought": "t", "tool": tool, "args": args})
    named = re.findall(r"`([A-Za-z_]\w*)`", t.prompt) or re.findall(r"`?([A-Za-z_]\w{3,})`?", t.reference)
    sources = sorted(rel for rel, text in t.files.items()
                     if text.strip() and rel.endswith((".py", ".rs")) and not rel.endswith("__init__.py"))
    looking = [call("grep", {"pattern": named[0] if named else t.name})]
    looking += [call("read_file", {"path": rel}) for rel in sources[:5]]
    answer = call("finish", {"answer": t.reference})
    if not explore:
        return looking + [answer]
    return [call("explore", {"question": t.prompt})] + looking + [answer, answer]


def run_task(t, agent, args, base):
    tdir = base / t.name
    repo = make_repo(tdir, t.files)
    cmd = [agent, "ask", "--mode", "yolo", "--json"]
    if args.model:
        cmd += ["--model", args.model]
    if args.max_steps is not None:
        cmd += ["--max-steps", str(args.max_steps)]
    if args.explore:
        cmd += ["--explore", "on"]
    if args.scripted:
        script = tdir / "turns.json"
        script.write_text(json.dumps(scripted_turns(t, args.explore)), encoding="utf-8")
        cmd += ["--script", str(script)]
    cmd.append(t.prompt)
    # Anything the agent builds (cargo test in the Rust task) goes beside the repo, not into the shared target dir.
    env = dict(os.environ, CARGO_TARGET_DIR=str(tdir / "agent-target"), PYTHONDONTWRITEBYTECODE="1")
    row = {"name": t.name, "kind": t.kind, "solved": False, "reason": "", "steps": 0, "tokens": 0,
           "main_prompt_tokens": 0, "context_tokens": 0, "explore_tokens": 0,
           "invalid_tool_calls": 0, "wall_s": 0.0, "index_s": 0.0, "finish": None}
    # The product's workflow: `agent index`, then `agent ask` (which then searches a real index).
    start = time.monotonic()
    try:
        idx = subprocess.run([agent, "index", "--json"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=args.timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        row["reason"] = f"agent index failed: {err}"
        row["finish"] = "crash"
        return row, repo
    row["index_s"] = round(time.monotonic() - start, 2)
    if idx.returncode != 0:
        row["reason"] = f"agent index exited {idx.returncode}: {tail(idx.stderr, 400)}"
        row["finish"] = "crash"
        return row, repo
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as err:
        row["reason"] = f"cannot run {agent}: {err}"
        row["finish"] = "crash"
        return row, repo
    try:
        stdout, stderr = proc.communicate(timeout=args.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        timed_out = True
    row["wall_s"] = round(time.monotonic() - start, 2)
    if timed_out:
        row["finish"] = "timeout"
        row["reason"] = f"timed out after {args.timeout:g} s"
        return row, repo
    result = parse_result(stdout)
    if result is None:
        row["finish"] = "crash"
        row["reason"] = f"no JSON on stdout (exit {proc.returncode}); stderr: {tail(stderr, 400) or '(empty)'}"
        return row, repo
    row["finish"] = result.get("finish")
    row["steps"] = num(result.get("steps"))
    explored = result.get("explore") or {}
    row["tokens"] = (num(result.get("prompt_tokens")) + num(result.get("completion_tokens"))
                     + num(explored.get("tokens")))
    # The request's own context, apart from what its explorations spent.
    row["main_prompt_tokens"] = num(result.get("prompt_tokens"))
    budget = result.get("budget") or {}
    row["context_tokens"] = sum(num(budget.get(k)) for k in ("fixed", "conversation", "new"))
    row["explore_tokens"] = num(explored.get("tokens"))
    row["invalid_tool_calls"] = num(result.get("invalid_tool_calls"))
    try:
        ok, why = t.check(repo, result)
    except Exception as err:  # a check must never take the whole run down
        ok, why = False, f"check raised {type(err).__name__}: {err}"
    row["solved"] = bool(ok)
    row["reason"] = why
    return row, repo


def print_table(rows):
    head = (f"{'task':<24} {'kind':<10} {'solved':<6} {'steps':>5} {'tokens':>7} {'main':>7} {'ctx':>6} "
            f"{'explore':>7} {'invalid':>7} {'wall_s':>7}  {'finish':<11} reason")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['name']:<24} {r['kind']:<10} {'yes' if r['solved'] else 'no':<6} {r['steps']:>5} {r['tokens']:>7} "
              f"{r.get('main_prompt_tokens', 0):>7} {r.get('context_tokens', 0):>6} {r.get('explore_tokens', 0):>7} "
              f"{r['invalid_tool_calls']:>7} {r['wall_s']:>7.1f}  {str(r['finish']):<11} {r['reason']}")


def per_solved_locate(rows, key):
    """The average of `key` over the solved locate tasks (0 when none was solved)."""
    solved = [r for r in rows if r["kind"] == "locate" and r["solved"]]
    return round(sum(r.get(key, 0) for r in solved) / len(solved), 1) if solved else 0


def bench(tasks, args):
    agent = args.agent or os.environ.get("AGENT_BIN") or str(
        Path(os.environ.get("CARGO_TARGET_DIR") or Path.home() / ".cache/agent/target") / "release/agent")
    if not (os.path.isfile(agent) and os.access(agent, os.X_OK)):
        print(f"error: agent binary not found or not executable: {agent} "
              "(build it, or set AGENT_BIN)", file=sys.stderr)
        return 1
    model_path = args.model or os.environ.get("AGENT_MODEL")
    model = os.path.basename(model_path) if model_path else "SmolLM2-135M-Instruct.Q4_1.gguf (default)"
    if args.scripted:
        model = "scripted (a larger model's turns, --scripted)"
    base = Path(tempfile.mkdtemp(prefix="agent-tasks-"))
    rows, total_start = [], time.monotonic()
    print(f"agent {agent}, model {model}, {len(tasks)} tasks, timeout {args.timeout:g} s per task", file=sys.stderr)
    for i, t in enumerate(tasks, 1):
        if t.needs and not shutil.which(t.needs):
            row = {"name": t.name, "kind": t.kind, "solved": False, "reason": f"{t.needs} not found",
                   "steps": 0, "tokens": 0, "invalid_tool_calls": 0, "wall_s": 0.0, "finish": "skipped"}
            repo = None
        else:
            print(f"[{i}/{len(tasks)}] {t.name} ...", file=sys.stderr, flush=True)
            row, repo = run_task(t, agent, args, base)
            print(f"[{i}/{len(tasks)}] {t.name}: {'solved' if row['solved'] else 'not solved'} "
                  f"({row['finish']}, {row['wall_s']:.1f} s) {row['reason']}", file=sys.stderr, flush=True)
        rows.append(row)
        if repo is not None and not args.keep:
            shutil.rmtree(repo.parent, ignore_errors=True)
    wall = time.monotonic() - total_start
    ran = [r for r in rows if r["finish"] not in ("crash", "timeout", "skipped")]
    out = {
        "model": model,
        "tasks": len(rows),
        "solved": sum(r["solved"] for r in rows),
        # Averages are over the runs that returned a result (not crashes, timeouts, skips).
        "avg_steps": round(sum(r["steps"] for r in ran) / len(ran), 2) if ran else 0,
        "avg_tokens": round(sum(r["tokens"] for r in ran) / len(ran), 1) if ran else 0,
        "invalid_tool_calls": sum(r["invalid_tool_calls"] for r in rows),
        "wall_s": round(wall, 1),
        "crashed": sum(r["finish"] == "crash" for r in rows),
        "timed_out": sum(r["finish"] == "timeout" for r in rows),
        "max_steps": args.max_steps,
        "explore": args.explore,
        "scripted": args.scripted,
        "locate_solved": sum(r["solved"] for r in rows if r["kind"] == "locate"),
        "locate_main_prompt_tokens": per_solved_locate(rows, "main_prompt_tokens"),
        "locate_context_tokens": per_solved_locate(rows, "context_tokens"),
        "locate_explore_tokens": per_solved_locate(rows, "explore_tokens"),
        "timeout_s": args.timeout,
        "per_kind": {k: {"tasks": sum(r["kind"] == k for r in rows),
                         "solved": sum(r["solved"] for r in rows if r["kind"] == k)}
                     for k in sorted({r["kind"] for r in rows})},
        "results": rows,
    }
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print()
    print_table(rows)
    print(f"\nsolved {out['solved']}/{out['tasks']} with {model}; avg steps {out['avg_steps']}, "
          f"avg tokens {out['avg_tokens']}, invalid tool calls {out['invalid_tool_calls']}, "
          f"crashed {out['crashed']}, timed out {out['timed_out']}, wall {out['wall_s']} s")
    print("solved per kind: " + ", ".join(f"{k} {v['solved']}/{v['tasks']}" for k, v in out["per_kind"].items()))
    print(f"per solved locate task ({out['locate_solved']}): main-context prompt tokens {out['locate_main_prompt_tokens']}, "
          f"last prompt {out['locate_context_tokens']}, explore tokens {out['locate_explore_tokens']}"
          f"{' (explore on)' if args.explore else ''}{' (scripted)' if args.scripted else ''}")
    if args.keep:
        print(f"kept the task repositories under {base}")
        for r in rows:
            if (base / r["name"] / "repo").is_dir():
                print(f"  {base / r['name'] / 'repo'}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    print(f"wrote {out_path}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="GGUF model passed to `agent ask --model` (default: the agent's default)")
    ap.add_argument("--only", help="comma-separated task names")
    ap.add_argument("--max-steps", type=int, help="passed to `agent ask --max-steps`")
    ap.add_argument("--explore", action="store_true", help="run the agent with `--explore on`")
    ap.add_argument("--scripted", action="store_true",
                    help="play a larger model with written turns (locate tasks only; see above)")
    ap.add_argument("--timeout", type=float, default=600, help="wall-clock limit per task, seconds (default 600)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repositories and print their paths")
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "tasks.json"))
    ap.add_argument("--agent", help="agent binary (default: $AGENT_BIN, else $CARGO_TARGET_DIR/release/agent)")
    ap.add_argument("--self-test", action="store_true", help="check the checks; needs no agent")
    ap.add_argument("--list", action="store_true", help="list the tasks and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="self-test: print every case and its reason")
    args = ap.parse_args(argv)

    tasks = TASKS
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        known = {t.name for t in TASKS}
        unknown = [n for n in names if n not in known]
        if unknown:
            ap.error(f"unknown task(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        tasks = [t for t in TASKS if t.name in names]
    if args.list:
        for t in tasks:
            print(f"{t.name:<24} {t.kind:<10} {t.prompt}")
        return 0
    if args.self_test:
        return self_test(tasks, args.keep, args.verbose)
    if args.scripted:
        tasks = [t for t in tasks if t.kind == "locate"]
    return bench(tasks, args)


if __name__ == "__main__":
    sys.exit(main())
