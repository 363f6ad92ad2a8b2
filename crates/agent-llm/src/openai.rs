//! A minimal client for OpenAI-compatible chat servers (llama-server, vLLM,
//! ...), for teams that run a bigger model on a GPU box. Streams with SSE.
//! Grammars are passed as llama-server's `grammar` field.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scripted::estimate_tokens;
use super::{
    Completion, CompletionRequest, Event, FinishReason, Flow, LlmError, Provider, StopScanner,
};

#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    /// Base URL including the version, e.g. `http://gpu-box:8080/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub context_size: usize,
    agent: ureq::Agent,
}

impl OpenAiProvider {
    pub fn new(base_url: &str, model: &str, api_key: Option<String>, context_size: usize) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key,
            context_size,
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(10))
                .timeout_read(Duration::from_secs(300))
                .build(),
        }
    }

    fn body(&self, request: &CompletionRequest) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": request.messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect::<Vec<_>>(),
            "max_tokens": request.max_tokens,
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            "seed": request.sampling.seed,
            "stream": true,
        });
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        if let Some(g) = &request.grammar {
            body["grammar"] = json!(g.gbnf);
        }
        body
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> String {
        format!("{} at {}", self.model, self.base_url)
    }

    fn context_size(&self) -> usize {
        self.context_size
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        Ok(estimate_tokens(text))
    }

    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let url = format!("{}/chat/completions", self.base_url);
        let mut call = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        let response = call.send_json(self.body(request)).map_err(|e| match e {
            ureq::Error::Status(code, r) => LlmError::Http(format!(
                "{url} answered {code}: {}",
                r.into_string().unwrap_or_default()
            )),
            other => LlmError::Http(format!("cannot reach {url}: {other}")),
        })?;

        let mut stops = StopScanner::new(&request.stop);
        let mut finish = FinishReason::Stop;
        let mut usage: Option<Value> = None;
        let mut ttft_ms = 0.0;
        for line in BufReader::new(response.into_reader()).lines() {
            let line = line.map_err(|e| LlmError::Http(format!("stream broke: {e}")))?;
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data)
                .map_err(|e| LlmError::Http(format!("bad stream chunk ({e}): {data}")))?;
            if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
                usage = Some(u.clone());
            }
            let choice = &chunk["choices"][0];
            if let Some(piece) = choice["delta"]["content"].as_str() {
                if ttft_ms == 0.0 {
                    ttft_ms = started.elapsed().as_secs_f64() * 1000.0;
                }
                if let Some(end) = stops.feed(piece, on_event) {
                    finish = end;
                    break;
                }
            }
            if choice["finish_reason"].as_str() == Some("length") {
                finish = FinishReason::Length;
            }
        }
        stops.end(finish, on_event);
        let text = stops.text().to_string();
        let count = |key: &str, fallback: usize| {
            usage
                .as_ref()
                .and_then(|u| u[key].as_u64())
                .map_or(fallback, |n| n as usize)
        };
        let prompt_tokens = count(
            "prompt_tokens",
            self.count_message_tokens(&request.messages)?,
        );
        Ok(Completion {
            completion_tokens: count("completion_tokens", estimate_tokens(&text)),
            text,
            finish,
            prompt_tokens,
            reused_tokens: 0,
            prefilled_tokens: prompt_tokens,
            tokens: Vec::new(),
            prefill_ms: ttft_ms,
            decode_ms: started.elapsed().as_secs_f64() * 1000.0 - ttft_ms,
            ttft_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// Serves one canned SSE response on loopback and returns the request body.
    fn serve_once(sse: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Read headers, then the body by Content-Length.
            loop {
                let n = sock.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len: usize = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{sse}",
                sse.len()
            );
            sock.write_all(reply.as_bytes()).unwrap();
            String::from_utf8_lossy(&buf).to_string()
        });
        (url, handle)
    }

    #[test]
    fn streams_a_chat_completion_over_sse() {
        let (url, server) = serve_once(concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n"
        ));
        let mut p = OpenAiProvider::new(&url, "m", None, 4096);
        let mut req = CompletionRequest::new(vec![Message::user("hi")]);
        req.grammar = Some(crate::Grammar::one_of(&["Hello"]));
        let mut streamed = String::new();
        let c = p
            .complete(&req, &mut |e| {
                if let Event::Text(t) = e {
                    streamed.push_str(t);
                }
                Flow::Continue
            })
            .unwrap();
        assert_eq!(c.text, "Hello");
        assert_eq!(streamed, "Hello");
        assert_eq!((c.prompt_tokens, c.completion_tokens), (7, 2));
        let sent = server.join().unwrap();
        assert!(sent.starts_with("POST /v1/chat/completions"), "{sent}");
        assert!(sent.contains("\"grammar\""), "{sent}");
    }

    #[test]
    fn unreachable_server_is_a_clear_error() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        drop(listener);
        let mut p = OpenAiProvider::new(&url, "m", None, 4096);
        let err = p
            .complete(
                &CompletionRequest::new(vec![Message::user("hi")]),
                &mut |_| Flow::Continue,
            )
            .unwrap_err();
        assert!(err.to_string().contains("cannot reach"), "{err}");
    }
}
