//! Embeddings from a server that speaks OpenAI's `POST /v1/embeddings`
//! (llama-server `--embeddings`, text-embeddings-inference, vLLM), for teams
//! whose GPU box embeds far faster than a laptop's cores.
//!
//! Texts go [`BATCH`] per request. A busy server (429, 503) is waited for,
//! as long as its `Retry-After` says or with doubling pauses; an unreachable
//! or failing one (5xx, a dropped connection) is retried the same way, up to
//! [`ATTEMPTS`] times; a request too large for it (413) is split in half.
//! Vectors are L2-normalised here, since not every server does.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Value};

/// Texts per request: enough to keep a GPU busy, small enough for the
/// request limits servers ship with.
pub const BATCH: usize = 32;
/// Tries per request before the error is the caller's.
const ATTEMPTS: u32 = 6;
/// The first pause between tries; doubled each time (0.5 s … 16 s).
const FIRST_PAUSE: Duration = Duration::from_millis(500);

pub struct RemoteEmbedder {
    /// `http://host:port/v1/embeddings`.
    endpoint: String,
    model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
    dim: usize,
    /// How long to wait before a retry (shortened by tests).
    first_pause: Duration,
}

/// What went wrong with one request, and whether trying again may help.
enum Failure {
    /// Busy or failing: try again after the pause (the server's, if given).
    Retry(String, Option<Duration>),
    /// The request was too large: split it.
    TooLarge,
    /// Trying again will not help (bad URL, 4xx, a reply we cannot read).
    Fatal(String),
}

impl RemoteEmbedder {
    /// Connects to `url` (the server's base, `…/v1` or the endpoint itself)
    /// and learns the model's dimension from one embedding. Without a
    /// model name, the server's first listed model is used.
    pub fn connect(url: &str, model: Option<&str>, api_key: Option<String>) -> Result<Self> {
        let base = url
            .trim_end_matches('/')
            .trim_end_matches("/embeddings")
            .trim_end_matches("/v1")
            .to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!("--embed-server {url}: not an http:// or https:// URL");
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10))
            .timeout_read(Duration::from_secs(300))
            .build();
        let mut embedder = Self {
            endpoint: format!("{base}/v1/embeddings"),
            model: model.unwrap_or_default().to_string(),
            api_key,
            agent,
            dim: 0,
            first_pause: FIRST_PAUSE,
        };
        if embedder.model.is_empty() {
            embedder.model = embedder
                .first_model(&base)
                .unwrap_or_else(|| "default".into());
        }
        let probe = embedder
            .embed(&["dimension probe".to_string()])
            .map_err(|e| {
                anyhow!(
                "{e:#}\n  fix: start the server with embeddings on (llama-server --embeddings, \
                 text-embeddings-inference, vLLM), or drop --embed-server to embed on this machine"
            )
            })?;
        embedder.dim = probe[0].len();
        if embedder.dim == 0 {
            bail!("{} returned an empty embedding", embedder.endpoint);
        }
        Ok(embedder)
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    #[cfg(test)]
    fn with_pause(mut self, pause: Duration) -> Self {
        self.first_pause = pause;
        self
    }

    /// `GET /v1/models`' first id, when the server lists any.
    fn first_model(&self, base: &str) -> Option<String> {
        let mut call = self.agent.get(&format!("{base}/v1/models"));
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        let body: Value = call.call().ok()?.into_json().ok()?;
        body["data"][0]["id"].as_str().map(str::to_string)
    }

    /// Embeds `texts`, in input order, each L2-normalised.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.embed_batch(batch)?);
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut pause = self.first_pause;
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            match self.request(texts) {
                Ok(vectors) => return Ok(vectors),
                Err(Failure::TooLarge) if texts.len() > 1 => {
                    let (a, b) = texts.split_at(texts.len() / 2);
                    let mut out = self.embed_batch(a)?;
                    out.extend(self.embed_batch(b)?);
                    return Ok(out);
                }
                Err(Failure::TooLarge) => {
                    bail!("{} refused one text as too large (413)", self.endpoint)
                }
                Err(Failure::Fatal(why)) => bail!(why),
                Err(Failure::Retry(why, wait)) => {
                    tracing::debug!("embedding request {attempt}/{ATTEMPTS} failed: {why}");
                    last = why;
                    if attempt < ATTEMPTS {
                        std::thread::sleep(wait.unwrap_or(pause).min(Duration::from_secs(60)));
                        pause *= 2;
                    }
                }
            }
        }
        bail!("{last} (gave up after {ATTEMPTS} tries)")
    }

    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, Failure> {
        let mut call = self
            .agent
            .post(&self.endpoint)
            .set("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        let body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        let response = match call.send_json(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(413, _)) => return Err(Failure::TooLarge),
            Err(ureq::Error::Status(code, r)) => {
                let wait = r
                    .header("Retry-After")
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let why = format!(
                    "{} answered {code}: {}",
                    self.endpoint,
                    r.into_string().unwrap_or_default().trim()
                );
                return Err(if code == 429 || code >= 500 {
                    Failure::Retry(why, wait)
                } else {
                    Failure::Fatal(why)
                });
            }
            Err(e) => {
                return Err(Failure::Retry(
                    format!("cannot reach {}: {e}", self.endpoint),
                    None,
                ))
            }
        };
        let reply: Value = response
            .into_json()
            .map_err(|e| Failure::Retry(format!("{}: reply cut off: {e}", self.endpoint), None))?;
        parse_reply(&reply, texts.len())
            .map_err(|why| Failure::Fatal(format!("{}: {why}", self.endpoint)))
    }
}

/// The vectors of an embeddings reply, in input order (by `index`),
/// normalised.
fn parse_reply(reply: &Value, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = reply["data"]
        .as_array()
        .ok_or("the reply has no `data` list (is this an embeddings endpoint?)")?;
    if data.len() != expected {
        return Err(format!(
            "asked for {expected} embeddings, got {}",
            data.len()
        ));
    }
    let mut out = vec![Vec::new(); expected];
    for (i, item) in data.iter().enumerate() {
        let index = item["index"].as_u64().map_or(i, |n| n as usize);
        let values = item["embedding"]
            .as_array()
            .ok_or("an item has no `embedding` list of numbers")?;
        let mut v: Vec<f32> = values
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<_>>()
            .ok_or("an embedding holds something other than numbers")?;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() || norm == 0.0 {
            return Err("an embedding is zero or not finite".into());
        }
        v.iter_mut().for_each(|x| *x /= norm);
        *out.get_mut(index)
            .ok_or("an item's index is out of range")? = v;
    }
    if out.iter().any(|v| v.len() != out[0].len()) {
        return Err("embeddings of different lengths in one reply".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_in_index_order_and_normalised() {
        let reply = json!({"data": [
            {"index": 1, "embedding": [0.0, 2.0]},
            {"index": 0, "embedding": [3.0, 4.0]},
        ]});
        let v = parse_reply(&reply, 2).unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        assert!(parse_reply(&reply, 3).unwrap_err().contains("asked for 3"));
        assert!(parse_reply(&json!({"error": "x"}), 1).is_err());
        let zero = json!({"data": [{"embedding": [0.0, 0.0]}]});
        assert!(parse_reply(&zero, 1).unwrap_err().contains("zero"));
    }

    /// A server on loopback that answers each connection with the next
    /// canned response (status, extra header, body), then closes.
    fn serve(
        responses: Vec<(u16, &'static str, String)>,
    ) -> (String, std::thread::JoinHandle<usize>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let mut served = 0;
            for (status, header, body) in responses {
                let Ok((stream, _)) = listener.accept() else {
                    break;
                };
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                }
                let mut request = vec![0; length];
                reader.read_exact(&mut request).unwrap();
                let mut stream = reader.into_inner();
                write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{header}\r\n{body}",
                    body.len()
                )
                .unwrap();
                served += 1;
            }
            served
        });
        (url, handle)
    }

    #[test]
    fn busy_and_failing_servers_are_retried_and_large_requests_split() {
        let ok = |n: usize| {
            let data: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "embedding": [1.0, i as f32]}))
                .collect();
            json!({ "data": data }).to_string()
        };
        let (url, server) = serve(vec![
            // connect(): the models list, then the probe.
            (
                200,
                "",
                json!({"data": [{"id": "nomic-embed"}]}).to_string(),
            ),
            (200, "", ok(1)),
            // embed(): busy, failing, too large (split into 2 + 1), then fine.
            (429, "Retry-After: 0\r\n", "{}".into()),
            (503, "", "{}".into()),
            (413, "", "{}".into()),
            (200, "", ok(1)),
            (200, "", ok(2)),
        ]);
        let e = RemoteEmbedder::connect(&format!("{url}/v1"), None, None)
            .unwrap()
            .with_pause(Duration::from_millis(1));
        assert_eq!((e.model(), e.dim()), ("nomic-embed", 2));
        let texts: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let v = e.embed(&texts).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(server.join().unwrap(), 7);

        // A client error is not retried, and says what the server said.
        let (url, server) = serve(vec![(200, "", ok(1)), (400, "", "model not loaded".into())]);
        let e = RemoteEmbedder::connect(&url, Some("m"), None).unwrap();
        let err = e.embed(&texts).unwrap_err().to_string();
        assert!(
            err.contains("400") && err.contains("model not loaded"),
            "{err}"
        );
        drop(server);
    }
}
