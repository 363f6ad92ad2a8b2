//! For the tests of every crate (and the root's `tests/`), as a
//! dev-dependency only: [`skip!`](crate::skip) ends a test whose
//! prerequisite is missing, visibly; [`http_server`] is a host for the
//! network tests to reach (or be refused).
//!
//! A test that returns early when llama-server, node or a checker is
//! missing would otherwise count as passed. `skip!` prints a marker line,
//! `SKIPPED: TEST: REASON`, on stderr and, where `AGENT_TEST_SKIP_LOG`
//! names a file, appends it there (cargo shows a passing test's output only
//! with `--nocapture`, so `scripts/test` counts the file's lines). Under
//! `AGENT_TEST_REQUIRE_ALL=1` (`.ci/run`, whose `scripts/test` installs
//! every prerequisite) a required prerequisite that is missing fails the
//! test instead: there a skip is a broken set-up.

use std::io::Write;

/// The variable that makes a missing required prerequisite a failure.
pub const REQUIRE_ALL: &str = "AGENT_TEST_REQUIRE_ALL";
/// The variable naming the file the markers are appended to.
pub const SKIP_LOG: &str = "AGENT_TEST_SKIP_LOG";

/// Whether CI must have the prerequisite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// `scripts/test` sets it up: missing under `AGENT_TEST_REQUIRE_ALL=1`
    /// fails the test.
    Required,
    /// It cannot exist on every machine CI runs on (a GPU): a skip even
    /// under `AGENT_TEST_REQUIRE_ALL=1`.
    Optional,
}

/// The marker line for `test` skipped because of `reason`.
pub fn marker(test: &str, reason: &str) -> String {
    format!("SKIPPED: {test}: {reason}")
}

/// Records the skip of the running test (its thread's name, which libtest
/// sets to the test's path, else `fallback`), or panics when `need` is
/// required and `AGENT_TEST_REQUIRE_ALL=1`. Called by [`skip!`](crate::skip).
#[allow(
    clippy::print_stderr,
    reason = "the marker on the test's stderr is what a skip leaves behind"
)]
pub fn skipped(fallback: &str, reason: &str, need: Need) {
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" => name,
        _ => fallback,
    };
    if need == Need::Required && std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1") {
        panic!("{test}: {reason}; {REQUIRE_ALL}=1 requires every prerequisite (scripts/test sets them up)");
    }
    let line = marker(test, reason);
    eprintln!("{line}");
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        // One write of a whole line in append mode: test binaries running
        // at once do not interleave their markers.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot append to {SKIP_LOG}={}: {e}", log.to_string_lossy());
        }
    }
}

/// Ends the calling test because a prerequisite is missing, saying so:
/// `skip!("AGENT_TEST_ACP_CLIENT is not set (scripts/test sets it up)")`
/// (required: fails under `AGENT_TEST_REQUIRE_ALL=1`), or
/// `skip!(optional: "...")` for what CI cannot have. The reason is a
/// `format!` string.
#[macro_export]
macro_rules! skip {
    (optional: $($reason:tt)+) => {{
        $crate::skipped(
            module_path!(),
            &format!($($reason)+),
            $crate::Need::Optional,
        );
        return;
    }};
    ($($reason:tt)+) => {{
        $crate::skipped(
            module_path!(),
            &format!($($reason)+),
            $crate::Need::Required,
        );
        return;
    }};
}

/// An HTTP server on `ip` (its port chosen now, and returned) answering
/// every request with `hello from NAME`, for as long as the test runs.
#[allow(
    clippy::unwrap_used,
    reason = "a test's server: failing to listen fails the test"
)]
pub fn http_server(ip: &str, name: &'static str) -> u16 {
    use std::io::Read;
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let body = format!("hello from {name}\n");
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_the_test_and_the_reason() {
        assert_eq!(
            marker("acp::talks", "no node"),
            "SKIPPED: acp::talks: no node"
        );
    }
}
