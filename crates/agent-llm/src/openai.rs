//! A client for OpenAI-compatible chat servers (llama-server `--jinja`,
//! vLLM, Ollama, LM Studio), for teams that run a bigger model on a GPU
//! box. The server renders the model's template and parses its calls: the
//! request carries `tools` and `tool_choice`, the reply `tool_calls` and
//! `reasoning_content`, streamed as deltas (SSE). A `grammar` (labels, a
//! JSON Schema) is sent only to llama.cpp's server, the one that reads it.

use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::scripted::estimate_tokens;
use super::{
    Completion, CompletionRequest, Event, FinishReason, Flow, LlmError, Provider, StopScanner,
    Think, ToolCall, ToolChoice,
};

#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    /// Base URL including the version, e.g. `http://gpu-box:8080/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub context_size: usize,
    /// `--think`: `off` asks the template not to reason
    /// (`chat_template_kwargs.enable_thinking`).
    pub think: Think,
    agent: ureq::Agent,
    /// Whether the server is llama.cpp's (asked once).
    llama_cpp: Option<bool>,
}

impl OpenAiProvider {
    pub fn new(base_url: &str, model: &str, api_key: Option<String>, context_size: usize) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key,
            context_size,
            think: Think::Auto,
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(10))
                .timeout_read(Duration::from_secs(300))
                .build(),
            llama_cpp: None,
        }
    }

    /// Whether the server is llama.cpp's: the only one that reads a
    /// `grammar` field (vLLM and Ollama ignore it, some refuse unknown
    /// fields). Asked once, from `GET /models`: llama-server answers with
    /// its `Server: llama.cpp` header and lists its models as
    /// `owned_by: "llamacpp"`; either is enough (a proxy may drop headers).
    fn is_llama_cpp(&mut self) -> bool {
        if let Some(known) = self.llama_cpp {
            return known;
        }
        let mut call = self.agent.get(&format!("{}/models", self.base_url));
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        let known = call.call().ok().is_some_and(|r| {
            let header = r
                .header("server")
                .is_some_and(|s| s.starts_with("llama.cpp"));
            header
                || r.into_json::<Value>().ok().is_some_and(|v| {
                    v["data"]
                        .as_array()
                        .is_some_and(|models| models.iter().any(|m| m["owned_by"] == "llamacpp"))
                })
        });
        tracing::debug!(llama_cpp = known, "model server at {}", self.base_url);
        self.llama_cpp = Some(known);
        known
    }

    fn body(&mut self, request: &CompletionRequest) -> Value {
        let mut messages = request.messages.clone();
        messages
            .iter_mut()
            .for_each(agent_chat::history::strip_reasoning);
        let mut body = json!({
            "model": self.model,
            "messages": agent_chat::message::to_wire(&messages),
            "max_tokens": request.max_tokens,
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            "seed": request.sampling.seed,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        match &request.grammar {
            // A grammar and tools do not go together (llama-server refuses
            // both); the grammar is the request's whole answer.
            Some(g) if self.is_llama_cpp() => {
                body["grammar"] = json!(g.gbnf);
            }
            Some(_) => {}
            None if !request.tools.is_empty() => {
                // The tools the model may call now; with `none`, all of them
                // still, so the template renders the same prompt prefix.
                let tools = match request.tool_choice {
                    ToolChoice::None => request.tools.clone(),
                    _ => request.callable(),
                };
                body["tools"] = Value::Array(tools.iter().map(|t| t.to_openai()).collect());
                body["tool_choice"] = json!(match request.tool_choice {
                    ToolChoice::Auto => "auto",
                    ToolChoice::Required => "required",
                    ToolChoice::None => "none",
                });
                // The loop runs every call of a turn, in order.
                body["parallel_tool_calls"] = json!(true);
            }
            None => {}
        }
        let thinking = request.thinking.or(match self.think {
            Think::Off => Some(false),
            Think::On => Some(true),
            Think::Auto => None,
        });
        if let Some(on) = thinking {
            body["chat_template_kwargs"] = json!({"enable_thinking": on});
        }
        body
    }
}

/// A reply being streamed: text, reasoning and calls, each assembled from
/// its deltas.
#[derive(Default)]
struct Reply {
    reasoning: String,
    /// Calls by their stream index: id, name, and the arguments' JSON text.
    calls: Vec<(String, String, String)>,
    finish: Option<FinishReason>,
    usage: Option<Value>,
    /// Deltas so far (about one token each): progress while a call, which
    /// shows no text, streams in.
    deltas: usize,
}

impl Reply {
    /// One message delta (`choices[0].delta`, or a whole `message`).
    fn add(
        &mut self,
        delta: &Value,
        stops: &mut StopScanner,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Option<FinishReason> {
        for key in ["reasoning_content", "reasoning"] {
            if let Some(piece) = delta[key].as_str().filter(|p| !p.is_empty()) {
                self.reasoning.push_str(piece);
                if on_event(Event::Reasoning(piece)) == Flow::Stop {
                    return Some(FinishReason::Cancelled);
                }
            }
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"]
                .as_u64()
                .map_or(self.calls.len(), |i| i as usize);
            if self.calls.len() <= index {
                self.calls.resize(index + 1, Default::default());
            }
            let slot = &mut self.calls[index];
            if let Some(id) = call["id"].as_str() {
                slot.0 = id.to_string();
            }
            if let Some(name) = call["function"]["name"].as_str() {
                slot.1.push_str(name);
            }
            match &call["function"]["arguments"] {
                Value::String(piece) => slot.2.push_str(piece),
                Value::Null => {}
                other => slot.2.push_str(&other.to_string()),
            }
        }
        if let Some(piece) = delta["content"].as_str() {
            if let Some(end) = stops.feed(piece, on_event) {
                return Some(end);
            }
        }
        self.deltas += 1;
        if on_event(Event::Generated(self.deltas)) == Flow::Stop {
            return Some(FinishReason::Cancelled);
        }
        None
    }

    /// The calls, their arguments read as JSON.
    fn tool_calls(&self) -> Result<Vec<ToolCall>, String> {
        self.calls
            .iter()
            .filter(|(_, name, _)| !name.is_empty())
            .map(|(id, name, args)| {
                let arguments = if args.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(args).map_err(|e| {
                        format!("the arguments of {name} are not valid JSON ({e}): {args}")
                    })?
                };
                Ok(ToolCall::new(id.clone(), name.clone(), arguments))
            })
            .collect()
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

    /// The server renders the model's own template and parses its calls:
    /// the loop sends `tools` and reads `tool_calls`.
    fn native_calls(&self) -> bool {
        true
    }

    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        let on_event = &mut request.watched(on_event);
        let started = Instant::now();
        let url = format!("{}/chat/completions", self.base_url);
        let body = self.body(request);
        let mut call = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            call = call.set("Authorization", &format!("Bearer {key}"));
        }
        let response = call.send_json(body).map_err(|e| match e {
            ureq::Error::Status(code, r) => LlmError::Http(format!(
                "{url} answered {code}: {}",
                r.into_string().unwrap_or_default()
            )),
            other => LlmError::Http(format!("cannot reach {url}: {other}")),
        })?;

        let mut stops = StopScanner::new(&request.stop);
        let mut reply = Reply::default();
        let mut ttft_ms = 0.0;
        let mut reader = BufReader::new(response.into_reader());
        let mut first = String::new();
        reader
            .read_line(&mut first)
            .map_err(|e| LlmError::Http(format!("stream broke: {e}")))?;
        if first.trim_start().starts_with('{') {
            // A server that answers in one piece despite `stream`.
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            let whole: Value = serde_json::from_str(&(first + &rest))
                .map_err(|e| LlmError::Http(format!("bad reply ({e})")))?;
            ttft_ms = started.elapsed().as_secs_f64() * 1000.0;
            reply.usage = whole.get("usage").cloned();
            let choice = &whole["choices"][0];
            reply.finish = reply.add(&choice["message"], &mut stops, on_event);
            if choice["finish_reason"] == "length" {
                reply.finish.get_or_insert(FinishReason::Length);
            }
        } else {
            for line in std::iter::once(Ok(first)).chain(reader.lines()) {
                let line = line.map_err(|e| LlmError::Http(format!("stream broke: {e}")))?;
                let Some(data) = line.trim().strip_prefix("data:").map(str::trim) else {
                    continue;
                };
                if data == "[DONE]" {
                    break;
                }
                let chunk: Value = serde_json::from_str(data)
                    .map_err(|e| LlmError::Http(format!("bad stream chunk ({e}): {data}")))?;
                if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
                    reply.usage = Some(u.clone());
                }
                let Some(choice) = chunk["choices"].get(0) else {
                    continue;
                };
                if ttft_ms == 0.0 && !choice["delta"].is_null() {
                    ttft_ms = started.elapsed().as_secs_f64() * 1000.0;
                }
                if let Some(end) = reply.add(&choice["delta"], &mut stops, on_event) {
                    reply.finish = Some(end);
                    break;
                }
                if choice["finish_reason"].as_str() == Some("length") {
                    reply.finish = Some(FinishReason::Length);
                }
            }
        }
        let finish = reply.finish.unwrap_or(FinishReason::Stop);
        stops.end(finish, on_event);
        let text = stops.text().to_string();
        // A server that does not split reasoning leaves it in the text.
        let (inline, rest, _) =
            agent_chat::parse::split_reasoning(agent_chat::Family::Hermes, &text, false);
        let mut completion = Completion {
            content: rest.trim().to_string(),
            reasoning: if reply.reasoning.is_empty() {
                inline.trim().to_string()
            } else {
                reply.reasoning.clone()
            },
            finish,
            ..Completion::default()
        };
        match reply.tool_calls() {
            Ok(calls) => completion.tool_calls = calls,
            Err(problem) => completion.invalid_call = Some(problem),
        }
        completion.text = if completion.tool_calls.is_empty() {
            text
        } else {
            format!(
                "{text}{}",
                serde_json::to_string(&completion.tool_calls).unwrap_or_default()
            )
        };
        let count = |key: &str, fallback: usize| {
            reply
                .usage
                .as_ref()
                .and_then(|u| u[key].as_u64())
                .map_or(fallback, |n| n as usize)
        };
        completion.prompt_tokens = count(
            "prompt_tokens",
            self.count_prompt_tokens(&request.messages, &request.tools)?,
        );
        completion.prefilled_tokens = completion.prompt_tokens;
        completion.completion_tokens =
            count("completion_tokens", estimate_tokens(&completion.text));
        completion.reasoning_tokens = reply
            .usage
            .as_ref()
            .and_then(|u| u["completion_tokens_details"]["reasoning_tokens"].as_u64())
            .map_or_else(|| estimate_tokens(&completion.reasoning), |n| n as usize);
        completion.ttft_ms = ttft_ms;
        completion.prefill_ms = ttft_ms;
        completion.decode_ms = started.elapsed().as_secs_f64() * 1000.0 - ttft_ms;
        Ok(completion)
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
        p.llama_cpp = Some(true);
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
    fn tools_go_out_and_calls_and_reasoning_come_back_in_deltas() {
        let (url, server) = serve_once(concat!(
            "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"Look it up.\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pat\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"tern\\\": \\\"add\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n"
        ));
        let mut p = OpenAiProvider::new(&url, "m", None, 4096);
        let req = CompletionRequest {
            tools: vec![crate::ToolSpec::new(
                "grep",
                "Search.",
                json!({"type": "object"}),
            )],
            tool_choice: ToolChoice::Required,
            ..CompletionRequest::new(vec![Message::user("where is add?")])
        };
        let mut reasoning = String::new();
        let c = p
            .complete(&req, &mut |e| {
                if let Event::Reasoning(t) = e {
                    reasoning.push_str(t);
                }
                Flow::Continue
            })
            .unwrap();
        assert_eq!(reasoning, "Look it up.");
        assert_eq!(c.reasoning, "Look it up.");
        assert_eq!(
            c.tool_calls,
            vec![ToolCall::new("c1", "grep", json!({"pattern": "add"}))]
        );
        let sent = server.join().unwrap();
        assert!(
            sent.contains("\"tools\":[{") && sent.contains("\"tool_choice\":\"required\""),
            "{sent}"
        );
        assert!(!sent.contains("\"grammar\""), "{sent}");
    }

    /// Answers `GET /models` once with `headers` and `body`.
    fn models_once(headers: &'static str, body: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).unwrap();
            let reply = format!(
                "HTTP/1.1 200 OK\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            sock.write_all(reply.as_bytes()).unwrap();
        });
        url
    }

    #[test]
    fn llama_cpp_is_known_by_its_header_or_its_models_owner_and_vllm_is_not() {
        let vllm = r#"{"data":[{"id":"m","owned_by":"vllm"}]}"#;
        let mut p = OpenAiProvider::new(&models_once("", vllm), "m", None, 4096);
        assert!(!p.is_llama_cpp());
        let llama = r#"{"data":[{"id":"m","owned_by":"llamacpp"}]}"#;
        let mut p = OpenAiProvider::new(&models_once("", llama), "m", None, 4096);
        assert!(p.is_llama_cpp());
        let proxied = r#"{"data":[{"id":"m"}]}"#;
        let url = models_once("Server: llama.cpp\r\n", proxied);
        let mut p = OpenAiProvider::new(&url, "m", None, 4096);
        assert!(p.is_llama_cpp() && p.native_calls());
    }

    #[test]
    fn several_calls_stream_in_by_index_and_only_allowed_tools_go_out() {
        let (url, server) = serve_once(concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\": \\\"add\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\": \\\"sub\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n"
        ));
        let mut p = OpenAiProvider::new(&url, "m", None, 4096);
        let spec = |name| crate::ToolSpec::new(name, "t", json!({"type": "object"}));
        let req = CompletionRequest {
            tools: vec![spec("grep"), spec("run_cmd")],
            allowed_tools: Some(vec!["grep".into()]),
            ..CompletionRequest::new(vec![Message::user("where are add and sub?")])
        };
        let c = p.complete(&req, &mut |_| Flow::Continue).unwrap();
        let patterns: Vec<&Value> = c
            .tool_calls
            .iter()
            .map(|t| &t.arguments["pattern"])
            .collect();
        assert_eq!(patterns, [&json!("add"), &json!("sub")]);
        let sent = server.join().unwrap();
        assert!(sent.contains("\"parallel_tool_calls\":true"), "{sent}");
        assert!(!sent.contains("run_cmd"), "{sent}");
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
