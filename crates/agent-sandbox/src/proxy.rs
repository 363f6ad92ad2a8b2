//! The network allowlist's proxy: the only way out of an allowlisted
//! command's network namespace.
//!
//! The command has a network namespace of its own, whose one listening
//! socket is this proxy's (made inside the namespace, served from the
//! agent's, see `linux.rs`). It speaks HTTP `CONNECT host:port` (https and
//! any TLS) and plain HTTP forwarding (`GET http://host/path`), and connects
//! onward only where [`Allowlist::judge`] names a rule for the host name the
//! client asked for: the agent resolves that name itself, outside, so a rule
//! is never matched on an address alone. Every request, allowed or not, is
//! told to [`Allowlist::record`]; a refusal answers 403 with a body naming
//! the host and the setting to change.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The port the proxy listens on, on 127.0.0.1 inside the command's own
/// network namespace: a new namespace has nothing else listening, so a
/// fixed port is always free, and the command's environment can name it
/// before the namespace exists.
pub const PORT: u16 = 3128;

/// Largest request head the proxy reads (request line and headers).
const MAX_HEAD: usize = 32 * 1024;
/// Most connections kept in an allowlist's log.
const MAX_LOG: usize = 10_000;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the proxy waits for the host it connects to.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Names the rule that lets `(host, port)` through, or refuses it.
pub type Judge = dyn Fn(&str, u16) -> Option<String> + Send + Sync;

/// Where an allowlisted command may connect, and what it asked for.
#[derive(Clone)]
pub struct Allowlist {
    /// The rule (as written, `host:port`) that lets a connection to this
    /// host name (lower-cased, as the client asked for it) and port
    /// through; None refuses it.
    pub judge: Arc<Judge>,
    /// Every connection asked for, allowed or refused, in order (shared by
    /// the clones: the caller reads what its command asked for).
    pub log: Arc<Mutex<Vec<Attempt>>>,
}

impl Allowlist {
    /// An allowlist judged by `judge`, with an empty log.
    pub fn new(judge: impl Fn(&str, u16) -> Option<String> + Send + Sync + 'static) -> Self {
        Self {
            judge: Arc::new(judge),
            log: Arc::default(),
        }
    }

    /// The connections asked for since the last call, taken from the log.
    pub fn take_log(&self) -> Vec<Attempt> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn record(&self, attempt: &Attempt) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        // A command looping on connections must not grow the agent.
        if log.len() < MAX_LOG {
            log.push(attempt.clone());
        }
    }
}

impl std::fmt::Debug for Allowlist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Allowlist")
    }
}

/// One connection a command asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub host: String,
    pub port: u16,
    /// The rule that allowed it; None: refused.
    pub rule: Option<String>,
    /// Allowed, but the host could not be reached.
    pub error: Option<String>,
}

impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (host, port) = (&self.host, self.port);
        match (&self.rule, &self.error) {
            (None, _) => write!(
                f,
                "refused {host}:{port} (no rule of allow_network names it)"
            ),
            (Some(rule), None) => write!(f, "allowed {host}:{port} (rule {rule})"),
            (Some(rule), Some(e)) => {
                write!(f, "allowed {host}:{port} (rule {rule}), unreachable: {e}")
            }
        }
    }
}

/// The environment that points a command's HTTP clients at the proxy.
pub fn env() -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{PORT}");
    let mut out: Vec<(&'static str, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .into_iter()
    .map(|k| (k, url.clone()))
    .collect();
    out.extend([("NO_PROXY", String::new()), ("no_proxy", String::new())]);
    out
}

/// What a client asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// `CONNECT host:port`: a tunnel.
    Connect { host: String, port: u16 },
    /// `METHOD http://host[:port]/path`: the head to send the host, in
    /// origin form (`METHOD /path`), the proxy's headers dropped and the
    /// connection closed after one answer (the next request on it could
    /// name another host).
    Forward {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

/// Parses a request head (up to and including the blank line); the error
/// is the status line and reason to answer with.
pub(crate) fn parse(head: &[u8]) -> Result<Request, (u16, String)> {
    let text = std::str::from_utf8(head).map_err(|_| (400, "the request is not text".into()))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err((400, format!("bad request line {first:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err((400, format!("unsupported version {version:?}")));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = host_port(target, None)
            .ok_or_else(|| (400, format!("CONNECT needs host:port, not {target:?}")))?;
        return Ok(Request::Connect { host, port });
    }
    let Some(rest) = strip_prefix_ci(target, "http://") else {
        return Err((
            400,
            format!(
                "the proxy forwards http://... requests and tunnels others with CONNECT, \
                 not {target:?}"
            ),
        ));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    if authority.contains('@') {
        return Err((400, "credentials in a proxied URL are refused".into()));
    }
    let (host, port) =
        host_port(authority, Some(80)).ok_or_else(|| (400, format!("bad host {authority:?}")))?;
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.take_while(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        let hop = [
            "connection",
            "proxy-connection",
            "proxy-authorization",
            "keep-alive",
        ];
        if hop.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request::Forward {
        host,
        port,
        head: out.into_bytes(),
    })
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// `host:port`, `[v6]:port`, or a bare host with `default` as its port;
/// the host lower-cased, without brackets.
pub(crate) fn host_port(s: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        match after.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if after.is_empty() => (host, None),
            None => return None,
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok().filter(|p| *p != 0)?,
        None => default?,
    };
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
    if host.is_empty() || !host.chars().all(ok) {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

#[cfg(target_os = "linux")]
/// Serves `listener` until `stop` hangs up (the command's sandbox ended):
/// a thread per connection.
pub(crate) fn serve(listener: TcpListener, stop: OwnedFd, allow: Allowlist) {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll on two descriptors we own, in an array we own.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents & libc::POLLIN != 0 {
            let Ok((conn, _)) = listener.accept() else {
                continue;
            };
            let allow = allow.clone();
            let _ = std::thread::Builder::new()
                .name("agent-netproxy-conn".into())
                .spawn(move || handle(conn, &allow));
        }
    }
}

/// One client connection: its request judged, then tunnelled or refused.
fn handle(mut client: TcpStream, allow: &Allowlist) {
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let Some((head, rest)) = read_head(&mut client) else {
        return;
    };
    let request = match parse(&head) {
        Ok(r) => r,
        Err((status, why)) => return answer(&mut client, status, &format!("agent proxy: {why}\n")),
    };
    let (host, port) = match &request {
        Request::Connect { host, port } | Request::Forward { host, port, .. } => {
            (host.clone(), *port)
        }
    };
    let rule = (allow.judge)(&host, port);
    let mut attempt = Attempt {
        host: host.clone(),
        port,
        rule: rule.clone(),
        error: None,
    };
    if rule.is_none() {
        allow.record(&attempt);
        return answer(&mut client, 403, &refusal(&host, port));
    }
    let upstream = connect(&host, port);
    let mut upstream = match upstream {
        Ok(s) => s,
        Err(e) => {
            attempt.error = Some(e.to_string());
            allow.record(&attempt);
            return answer(
                &mut client,
                502,
                &format!("agent proxy: cannot reach {host}:{port}: {e}\n"),
            );
        }
    };
    allow.record(&attempt);
    let sent = match &request {
        Request::Connect { .. } => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
        Request::Forward { head, .. } => upstream.write_all(head),
    };
    if sent.and_then(|()| upstream.write_all(&rest)).is_err() {
        return;
    }
    let _ = client.set_read_timeout(None);
    relay(client, upstream);
}

/// The body of a refusal: the host, and what to change to allow it.
pub(crate) fn refusal(host: &str, port: u16) -> String {
    format!(
        "agent: the sandbox's network allowlist does not include {host}:{port}.\n\
         To allow it, add \"{host}:{port}\" (or a \"*.domain:{port}\" rule) to allow_network \
         in .agent/policy.toml; the administrator's managed.toml may bound that list.\n"
    )
}

/// Resolves `host` here, outside the sandbox, and connects to the first
/// address that answers.
fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = std::io::Error::other("the name resolves to no address");
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Reads up to the blank line ending the head: the head, and whatever came
/// after it in the same reads.
fn read_head(client: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Some((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            let _ = answer_raw(client, 431, "agent proxy: request head too large\n");
            return None;
        }
    }
}

fn answer(client: &mut TcpStream, status: u16, body: &str) {
    let _ = answer_raw(client, status, body);
}

fn answer_raw(client: &mut TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    write!(
        client,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    client.flush()
}

/// Copies both ways until each side is done.
fn relay(client: TcpStream, upstream: TcpStream) {
    let (Ok(client2), Ok(upstream2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::Builder::new()
        .name("agent-netproxy-up".into())
        .spawn(move || pump(client2, upstream2));
    pump(upstream, client);
    if let Ok(up) = up {
        let _ = up.join();
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_requests_name_host_and_port() {
        let r = parse(b"CONNECT PyPI.corp.example:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            r,
            Request::Connect {
                host: "pypi.corp.example".into(),
                port: 443
            }
        );
        let r = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            r,
            Request::Connect {
                host: "::1".into(),
                port: 8443
            }
        );
        for bad in [
            "CONNECT example.com HTTP/1.1\r\n\r\n",
            "CONNECT example.com:0 HTTP/1.1\r\n\r\n",
            "CONNECT example.com:99999 HTTP/1.1\r\n\r\n",
            "CONNECT exa mple.com:443 HTTP/1.1\r\n\r\n",
            "CONNECT ex/ample.com:443 HTTP/1.1\r\n\r\n",
            "CONNECT example.com:443 SPDY/3\r\n\r\n",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarded_requests_go_out_in_origin_form_without_proxy_headers() {
        let head =
            b"GET http://Files.internal:8080/a/b?c=1 HTTP/1.1\r\nHost: files.internal:8080\r\n\
                     Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n\
                     Connection: keep-alive\r\nAccept: */*\r\n\r\n";
        let Request::Forward { host, port, head } = parse(head).unwrap() else {
            panic!("not a forward");
        };
        assert_eq!((host.as_str(), port), ("files.internal", 8080));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a/b?c=1 HTTP/1.1\r\nHost: files.internal:8080\r\nAccept: */*\r\n\
             Connection: close\r\n\r\n"
        );
        let Request::Forward { port, head, .. } =
            parse(b"GET http://a.b HTTP/1.0\r\n\r\n").unwrap()
        else {
            panic!("not a forward");
        };
        assert_eq!(port, 80);
        assert!(head.starts_with(b"GET / HTTP/1.0\r\n"));
        // Only http:// is forwarded; TLS goes through CONNECT.
        for bad in [
            "GET /local HTTP/1.1\r\n\r\n",
            "GET https://a.b/ HTTP/1.1\r\n\r\n",
            "GET http://user:pw@a.b/ HTTP/1.1\r\n\r\n",
            "GET http://a.b:x/ HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_refusal_names_the_host_and_the_setting() {
        let body = refusal("evil.example", 443);
        assert!(body.contains("evil.example:443"), "{body}");
        assert!(body.contains("allow_network"), "{body}");
        assert!(body.contains(".agent/policy.toml"), "{body}");
    }

    #[test]
    fn the_environment_points_every_client_at_the_proxy() {
        let env = env();
        for key in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
        ] {
            let v = env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str());
            assert_eq!(v, Some("http://127.0.0.1:3128"), "{key}");
        }
        assert!(env.contains(&("NO_PROXY", String::new())));
    }
}
