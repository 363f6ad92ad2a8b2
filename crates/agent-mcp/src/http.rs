//! Remote MCP servers, over streamable HTTP (rmcp's client transport on
//! reqwest with rustls).
//!
//! A remote server is declared by its `url`, with `headers` to send and an
//! optional `ca_bundle` for an internal CA. A header value may name
//! environment variables, `"Authorization": "Bearer ${TEAM_TOKEN}"`: they are
//! read from the agent's environment when the server starts, so the secret
//! stays out of the workspace's files, and it is never logged or stored (the
//! trust fingerprint holds the header names and the variables they read, not
//! values). `SSL_CERT_FILE`, when set, adds its certificates as `ca_bundle`
//! does. Plain `http://` is for loopback, or for servers sent no headers.

use std::collections::HashMap;
use std::error::Error;
use std::path::Path;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use crate::config::ServerConfig;
use crate::ToolInfo;

/// How a remote server reads in `agent mcp list` and in a trust prompt: its
/// URL, the names of its headers and its CA file (never header values).
pub(crate) fn describe(config: &ServerConfig, url: &str) -> String {
    let mut out = url.to_string();
    if !config.headers.is_empty() {
        let names: Vec<&str> = config.headers.keys().map(String::as_str).collect();
        out.push_str(&format!(" (headers: {})", names.join(", ")));
    }
    if let Some(ca) = &config.ca_bundle {
        out.push_str(&format!(" (CA: {})", ca.display()));
    }
    out
}

/// What identifies a remote server for trust: its URL, each header's name
/// with the variables its value reads, and its CA file. Not the values: a
/// rotated token is the same server, a changed URL is not.
pub(crate) fn identity(config: &ServerConfig) -> Option<Value> {
    let url = config.url.as_ref()?;
    let headers: serde_json::Map<String, Value> = config
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), serde_json::json!(vars_in(value))))
        .collect();
    Some(serde_json::json!({
        "url": url,
        "headers": headers,
        "ca_bundle": config.ca_bundle,
    }))
}

/// The variables `${VAR}` a header value reads.
fn vars_in(value: &str) -> Vec<&str> {
    value
        .split("${")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(var, _)| var))
        .collect()
}

/// `value` with each `${VAR}` replaced from the environment. The error names
/// the header and the variable, never a value.
fn expand(header: &str, value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some((var, after)) = rest[at + 2..].split_once('}') else {
            return Err(format!("header `{header}` has a `${{` without its `}}`"));
        };
        match std::env::var(var) {
            Ok(v) => out.push_str(&v),
            Err(_) => {
                return Err(format!(
                    "header `{header}` reads ${{{var}}}, which is not set \
                     (export it before starting the agent)"
                ))
            }
        }
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

/// The headers, expanded and marked sensitive (so no debug output shows them).
fn headers(config: &ServerConfig) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut out = HashMap::new();
    for (name, value) in &config.headers {
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let mut value = HeaderValue::from_str(&expand(name, value)?).map_err(|_| {
            format!("header `{name}`: its value (after ${{VAR}}s) is not a valid header value")
        })?;
        value.set_sensitive(true);
        out.insert(key, value);
    }
    Ok(out)
}

/// Whether `url` names this machine.
fn is_loopback(url: &reqwest::Url) -> bool {
    url.host_str().is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// The URL, checked: http(s), and plain http only where headers cannot be
/// read on the way (loopback), or when there are none.
fn check_url(config: &ServerConfig, url: &str) -> Result<reqwest::Url, String> {
    if let Some(sse) = url.strip_prefix("sse+") {
        return Err(format!(
            "`{sse}` is an SSE server (the older HTTP transport), which the agent does not \
             speak: if it also serves streamable HTTP (often at /mcp), declare that URL \
             with \"type\": \"http\""
        ));
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("`{url}` is not a URL ({e}); give one like https://host/mcp"))?;
    let loopback = is_loopback(&parsed);
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback || config.headers.is_empty() => Ok(parsed),
        "http" => Err(format!(
            "`{url}` is plain http to another machine, and would send its headers unencrypted: \
             use https (with ca_bundle for an internal CA)"
        )),
        other => Err(format!(
            "`{url}` is a {other}: URL; a remote MCP server's url starts with https:// \
             (or http:// on this machine)"
        )),
    }
}

/// PEM certificates from `path`, for the error: which setting named it.
fn read_certs(path: &Path, setting: &str) -> Result<Vec<reqwest::Certificate>, String> {
    let fix = format!("fix {setting}");
    let pem = std::fs::read(path)
        .map_err(|e| format!("cannot read the CA bundle {} ({e}; {fix})", path.display()))?;
    match reqwest::Certificate::from_pem_bundle(&pem) {
        Ok(certs) if !certs.is_empty() => Ok(certs),
        _ => Err(format!(
            "the CA bundle {} holds no PEM certificate ({fix})",
            path.display()
        )),
    }
}

/// The HTTP client: system roots plus the server's `ca_bundle` and
/// `SSL_CERT_FILE`; no redirects (they would carry its headers elsewhere);
/// no proxy for loopback.
fn client(
    config: &ServerConfig,
    url: &reqwest::Url,
    workspace: &Path,
    limit: Duration,
) -> Result<reqwest::Client, String> {
    // reqwest is built without a crypto provider of its own: rustls's ring,
    // already linked for the index's object store, serves (once per process).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut certs = Vec::new();
    if let Some(ca) = &config.ca_bundle {
        certs.extend(read_certs(&workspace.join(ca), "ca_bundle")?);
    }
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        certs.extend(read_certs(Path::new(&file), "SSL_CERT_FILE")?);
    }
    let mut builder = reqwest::Client::builder()
        .connect_timeout(limit)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0);
    if !certs.is_empty() {
        builder = builder.tls_certs_merge(certs);
    }
    if is_loopback(url) {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up its HTTP client: {}", chain(&e).0))
}

/// The next cause of `e`. rmcp's transport errors hold theirs in fields
/// that `source()` does not return, so those are looked into by type.
fn cause<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    if let Some(ClientInitializeError::TransportError { error, .. }) =
        e.downcast_ref::<ClientInitializeError>()
    {
        return Some(error.error.as_ref());
    }
    if let Some(StreamableHttpError::Client(inner)) =
        e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(inner);
    }
    e.source()
}

/// An error with its causes, as one line, and the HTTP client's error
/// among them (the precise one: refused, TLS, timeout).
fn chain<'a>(e: &'a (dyn Error + 'static)) -> (String, Option<&'a reqwest::Error>) {
    let (mut parts, mut http): (Vec<String>, _) = (Vec::new(), None);
    let mut cur = Some(e);
    while let Some(err) = cur {
        if http.is_none() {
            if let Some(found) = err.downcast_ref::<reqwest::Error>() {
                // From here on the causes are the network's, not rmcp's wrapping.
                parts.clear();
                http = Some(found);
            }
        }
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = cause(err);
    }
    (parts.join(": "), http)
}

/// A failed handshake, in a sentence with the fix.
fn explain(url: &str, e: &(dyn Error + 'static)) -> String {
    let (text, http) = chain(e);
    let lower = text.to_lowercase();
    if http.is_some()
        && ["certificate", "tls", "handshake"]
            .iter()
            .any(|w| lower.contains(w))
    {
        format!(
            "TLS with {url} failed: {text} (for an internal CA, set ca_bundle = \"/path/ca.pem\" \
             in the server's config, or SSL_CERT_FILE)"
        )
    } else if http.is_some_and(|h| h.is_connect()) {
        format!("nothing answers at {url}: {text} (is the server running, and is its url right?)")
    } else if http.is_some_and(|h| h.is_timeout()) {
        format!("{url} did not answer: {text} (a slow server can set startup_timeout_s)")
    } else if ["auth", "401", "403"].iter().any(|w| lower.contains(w)) {
        format!(
            "{url} refused the agent: {text} (check the server's headers, such as Authorization)"
        )
    } else if lower.contains("404") {
        format!("no MCP endpoint at {url}: {text} (check its path; it is often /mcp)")
    } else {
        format!("did not complete the MCP handshake with {url}: {text}")
    }
}

/// Connects to a remote server and lists its tools, within `limit`.
pub(crate) async fn start(
    config: &ServerConfig,
    url: &str,
    workspace: &Path,
    limit: Duration,
) -> Result<(RunningService<RoleClient, ()>, Vec<ToolInfo>), String> {
    let parsed = check_url(config, url)?;
    let client = client(config, &parsed, workspace, limit)?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers(config)?),
    );
    let work = async {
        let client = ().serve(transport).await.map_err(|e| explain(url, &e))?;
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("cannot list its tools: {}", chain(&e).0))?;
        Ok((client, tools.iter().map(crate::tool_info).collect()))
    };
    tokio::time::timeout(limit, work).await.map_err(|_| {
        format!(
            "{url} did not answer within {}s (a slow server can set startup_timeout_s)",
            limit.as_secs()
        )
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> ServerConfig {
        ServerConfig {
            name: "wiki".into(),
            command: String::new(),
            args: Vec::new(),
            env: Default::default(),
            url: Some(url.into()),
            headers: [(
                "Authorization".to_string(),
                "Bearer ${WIKI_TOKEN}".to_string(),
            )]
            .into(),
            ca_bundle: None,
            startup_timeout_s: None,
            source: Default::default(),
        }
    }

    #[test]
    fn header_values_read_variables_and_errors_never_show_values() {
        // PATH is set wherever tests run; the process environment is not changed.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(
            expand("X", "Bearer ${PATH}!").unwrap(),
            format!("Bearer {path}!")
        );
        assert_eq!(expand("X", "plain").unwrap(), "plain");
        let e = expand("X-Key", "${AGENT_MCP_HTTP_TEST_UNSET}").unwrap_err();
        assert!(
            e.contains("X-Key") && e.contains("AGENT_MCP_HTTP_TEST_UNSET"),
            "{e}"
        );
        assert!(expand("X", "${OPEN").is_err());
        assert_eq!(vars_in("a ${B} c ${D}"), vec!["B", "D"]);
    }

    #[test]
    fn urls_are_http_or_https_and_plain_http_stays_local_with_headers() {
        let ok = |u: &str| check_url(&remote(u), u).is_ok();
        assert!(ok("https://wiki.corp/mcp"));
        assert!(ok("http://127.0.0.1:8080/mcp"));
        assert!(ok("http://localhost:8080/mcp"));
        assert!(ok("http://[::1]:8080/mcp"));
        let e = check_url(&remote("http://wiki.corp/mcp"), "http://wiki.corp/mcp").unwrap_err();
        assert!(e.contains("unencrypted") && e.contains("https"), "{e}");
        let e = check_url(&remote("ftp://x"), "ftp://x").unwrap_err();
        assert!(e.contains("https://"), "{e}");
        let e = check_url(&remote("wiki/mcp"), "wiki/mcp").unwrap_err();
        assert!(e.contains("not a URL"), "{e}");
        let e = check_url(&remote("x"), "sse+https://x/sse").unwrap_err();
        assert!(e.contains("SSE"), "{e}");
    }

    #[test]
    fn the_identity_holds_url_header_names_and_ca_not_values() {
        let a = remote("https://wiki.corp/mcp");
        let mut rotated = a.clone();
        rotated
            .headers
            .insert("Authorization".into(), "Token ${WIKI_TOKEN}".into());
        assert_eq!(identity(&a), identity(&rotated));
        let mut other_var = a.clone();
        other_var
            .headers
            .insert("Authorization".into(), "Bearer ${AWS_SECRET}".into());
        assert_ne!(identity(&a), identity(&other_var));
        let moved = remote("https://evil.example/mcp");
        assert_ne!(identity(&a), identity(&moved));
        let mut with_ca = a.clone();
        with_ca.ca_bundle = Some("ca.pem".into());
        assert_ne!(identity(&a), identity(&with_ca));
        assert!(!describe(&a, "https://wiki.corp/mcp").contains("Bearer"));
    }
}
