//! A real llama-server (`AGENT_TEST_LLAMA_SERVER`, built by scripts/test)
//! with the default chat model on loopback, killed on drop.

use std::time::{Duration, Instant};

pub(crate) struct LlamaServer {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`, without `/v1`.
    pub url: String,
}

impl LlamaServer {
    /// Starts `binary -m <tiny model> --host 127.0.0.1 --port P` plus `args`,
    /// its stderr into `stderr`, and waits until `/health` answers.
    pub(crate) fn start(
        binary: &std::ffi::OsStr,
        args: &[&std::ffi::OsStr],
        stderr: std::process::Stdio,
    ) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(binary)
            .arg("-m")
            .arg(super::tiny_model())
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("llama-server starts");
        // Killed on drop, also when it never comes up.
        let server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if http_ok(&format!("{}/health", server.url)) {
                return server;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llama-server did not come up on {}", server.url);
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET url` answered 200.
pub(crate) fn http_ok(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return false;
    };
    let _ = write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    );
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200")
}
