//! A client for OpenAI-compatible chat servers (llama-server `--jinja`,
//! vLLM, Ollama, LM Studio), for teams that run a bigger model on a GPU
//! box. The server renders the model's template and parses its calls: the
//! request carries `tools` and `tool_choice`, the reply `tool_calls` and
//! `reasoning_content`, streamed as deltas (SSE). A `grammar` (labels, a
//! JSON Schema) is sent only to llama.cpp's server, the one that reads it.

use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

use agent_base::tokens::thousands;
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
    /// Where `context_size` came from (see [`Self::window_source`]).
    window_source: &'static str,
    /// The warning of a server window smaller than the model's.
    window_note: Option<String>,
}

/// The window assumed when neither `--ctx-size` nor the server tells it.
const DEFAULT_WINDOW: usize = 8192;
/// Ollama's `num_ctx` for a model whose parameters set none.
const OLLAMA_NUM_CTX: usize = 4096;
/// The time all discovery requests together may take: a dead or
/// firewalled server must not hang the start.
const DISCOVERY_TIME: Duration = Duration::from_secs(3);

/// A context window a server reported.
#[derive(Debug, Clone, PartialEq)]
struct Window {
    size: usize,
    /// The model's trained context, when the server tells it.
    trained: Option<usize>,
    source: &'static str,
    /// The window is Ollama's default, not one the model's parameters set.
    ollama_default: bool,
}

impl Window {
    /// A one-line warning with its fix when the server runs the model with
    /// less context than it was trained for: sessions get compacted sooner
    /// than they need to, and users rarely know the server's default.
    fn note(&self) -> Option<String> {
        let trained = self.trained.filter(|&t| t > self.size)?;
        let why = if self.ollama_default {
            " (Ollama's default num_ctx)"
        } else {
            ""
        };
        let fix = if self.source == "ollama /api/show" {
            "set num_ctx on the server (PARAMETER num_ctx in a Modelfile, or OLLAMA_CONTEXT_LENGTH)"
        } else {
            "restart the server with a larger context (llama-server -c)"
        };
        Some(format!(
            "the server's context window is {} tokens{why}, the model was trained for {}: long sessions get compacted sooner. fix: {fix}, or pass --ctx-size N if the server's window is in fact larger",
            thousands(self.size),
            thousands(trained),
        ))
    }
}

impl OpenAiProvider {
    /// A client for a window the caller knows; [`Self::connect`] asks the
    /// server for it.
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
            window_source: "given",
            window_note: None,
        }
    }

    /// [`Self::new`] with the window the server really runs with:
    /// `ctx_override` (`--ctx-size`) when given, else asked of the server
    /// (llama-server's `/props`, Ollama's `/api/show`, vLLM's `/models`)
    /// within a few seconds, else 8192.
    pub fn connect(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        ctx_override: Option<usize>,
    ) -> Self {
        let mut provider = Self::new(base_url, model, api_key, DEFAULT_WINDOW);
        provider.window_source = "default";
        if let Some(size) = ctx_override {
            provider.context_size = size;
            provider.window_source = "--ctx-size";
        } else if let Some(window) = provider.discover_window() {
            provider.context_size = window.size;
            provider.window_source = window.source;
            provider.window_note = window.note();
        }
        tracing::debug!(
            context_size = provider.context_size,
            source = provider.window_source,
            "context window of {}",
            provider.base_url
        );
        provider
    }

    /// Where the context window came from: `server /props`,
    /// `ollama /api/show`, `vllm /models`, `--ctx-size` or `default` (from
    /// [`Self::connect`]), `given` (the size passed to [`Self::new`]).
    pub fn window_source(&self) -> &str {
        self.window_source
    }

    /// A one-line warning, with its fix, when the server's window is
    /// smaller than the one the model was trained for; for the user to see
    /// once at start.
    pub fn window_note(&self) -> Option<String> {
        self.window_note.clone()
    }

    /// The server's window, or `None` (logged) when it tells none.
    fn discover_window(&self) -> Option<Window> {
        match self.ask_window(Instant::now() + DISCOVERY_TIME) {
            Ok(Some(window)) => Some(window),
            Ok(None) => {
                tracing::debug!(
                    "{} tells no context window (not llama-server, Ollama or vLLM?); assuming {DEFAULT_WINDOW}",
                    self.base_url
                );
                None
            }
            Err(why) => {
                tracing::debug!("{why}; assuming a context window of {DEFAULT_WINDOW}");
                None
            }
        }
    }

    /// Asks `/models` first (vLLM's `max_model_len`; llama-server's trained
    /// context), then llama-server's `/props`, then Ollama's `/api/show`.
    /// A request the server does not answer at all ends the asking, so a
    /// dead server costs one timeout, not three.
    fn ask_window(&self, deadline: Instant) -> Result<Option<Window>, String> {
        let root = self.base_url.strip_suffix("/v1").unwrap_or(&self.base_url);
        let models = self.probe(&format!("{}/models", self.base_url), None, deadline)?;
        let entry = models.as_ref().and_then(|m| model_entry(m, &self.model));
        if let Some(window) = entry.and_then(vllm_window) {
            return Ok(Some(window));
        }
        let trained = entry.and_then(|e| size(&e["meta"]["n_ctx_train"]));
        let props = self.probe(&format!("{root}/props"), None, deadline)?;
        if let Some(window) = props.and_then(|p| llama_window(&p, trained)) {
            return Ok(Some(window));
        }
        // Old Ollama versions read `name`, newer ones `model`.
        let ask = json!({"model": self.model, "name": self.model});
        let show = self.probe(&format!("{root}/api/show"), Some(ask), deadline)?;
        Ok(show.and_then(|s| ollama_window(&s)))
    }

    /// One discovery request, within `deadline`: `Ok(None)` when the server
    /// answers without JSON (a 404 from a server of another kind), `Err`
    /// when it cannot be reached.
    fn probe(
        &self,
        url: &str,
        body: Option<Value>,
        deadline: Instant,
    ) -> Result<Option<Value>, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no time left to ask {url}"));
        }
        let answer = match &body {
            Some(body) => self
                .authorized(self.agent.post(url))
                .timeout(left)
                .send_json(body),
            None => self.authorized(self.agent.get(url)).timeout(left).call(),
        };
        match answer {
            Ok(reply) => Ok(reply
                .into_json()
                .map_err(|e| tracing::debug!("{url} answered no JSON: {e}"))
                .ok()),
            Err(ureq::Error::Status(code, _)) => {
                tracing::debug!("{url} answered {code}");
                Ok(None)
            }
            Err(e) => Err(format!("cannot reach {url}: {e}")),
        }
    }

    /// `call` with the API key, when there is one.
    fn authorized(&self, call: ureq::Request) -> ureq::Request {
        match &self.api_key {
            Some(key) => call.set("Authorization", &format!("Bearer {key}")),
            None => call,
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
        let call = self.authorized(self.agent.get(&format!("{}/models", self.base_url)));
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

/// A positive token count.
fn size(value: &Value) -> Option<usize> {
    value.as_u64().filter(|&n| n > 0).map(|n| n as usize)
}

/// The `/models` entry of `model`, else the first: llama-server serves one
/// model whatever it is called, and `--server-model` may be left `default`.
fn model_entry<'a>(models: &'a Value, model: &str) -> Option<&'a Value> {
    let data = models["data"].as_array()?;
    data.iter().find(|m| m["id"] == model).or(data.first())
}

/// vLLM lists its window as `max_model_len`; it tells no trained one.
fn vllm_window(entry: &Value) -> Option<Window> {
    Some(Window {
        size: size(&entry["max_model_len"])?,
        trained: None,
        source: "vllm /models",
        ollama_default: false,
    })
}

/// llama-server's `/props`: the window of a slot (what one request gets),
/// `default_generation_settings.n_ctx`, or the top-level `n_ctx` of the
/// builds that have it.
fn llama_window(props: &Value, trained: Option<usize>) -> Option<Window> {
    let settings = &props["default_generation_settings"];
    Some(Window {
        size: size(&settings["n_ctx"]).or_else(|| size(&props["n_ctx"]))?,
        trained,
        source: "server /props",
        ollama_default: false,
    })
}

/// Ollama's `/api/show`: `num_ctx` among the model's `parameters` (lines
/// of `name value`), else Ollama's default; the trained window is
/// `model_info`'s `<architecture>.context_length`.
fn ollama_window(show: &Value) -> Option<Window> {
    // A JSON answer from a server of another kind has none of these.
    if ["modelfile", "parameters", "model_info"]
        .iter()
        .all(|key| show.get(key).is_none())
    {
        return None;
    }
    let set = show["parameters"].as_str().and_then(|text| {
        text.lines().find_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["num_ctx", n] => n.parse().ok().filter(|&n: &usize| n > 0),
                _ => None,
            },
        )
    });
    let trained = show["model_info"].as_object().and_then(|info| {
        info.iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, n)| size(n))
    });
    Some(Window {
        size: set.unwrap_or(OLLAMA_NUM_CTX),
        trained,
        source: "ollama /api/show",
        ollama_default: set.is_none(),
    })
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

    /// An estimate on the safe side: the server's tokenizer is remote, and
    /// a prompt fitted by this count must not overflow its window (code
    /// runs 3 to 4 bytes a token; prose 4 to 5).
    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        Ok(text.len().div_ceil(3))
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
        let call = self.authorized(
            self.agent
                .post(&url)
                .set("Content-Type", "application/json"),
        );
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
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    /// Serves one canned SSE response on loopback and returns the request body.
    fn serve_once(sse: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            let request = read_request(&mut sock);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{sse}",
                sse.len()
            );
            sock.write_all(reply.as_bytes()).unwrap();
            request
        });
        (url, handle)
    }

    /// Reads one request: the headers, then the body by Content-Length.
    fn read_request(sock: &mut TcpStream) -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
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
            if n == 0 {
                break;
            }
        }
        String::from_utf8_lossy(&buf).to_string()
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

    /// Serves `routes` (`"METHOD /path"` and its JSON) to any number of
    /// requests, 404 to the rest; returns the base URL (`.../v1`) and the
    /// requests seen.
    fn stub(routes: Vec<(&'static str, Value)>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let mut sock = sock.unwrap();
                let request = read_request(&mut sock);
                let route = routes
                    .iter()
                    .find(|(line, _)| request.starts_with(&format!("{line} ")));
                let (status, body) = match route {
                    Some((_, json)) => ("200 OK", json.to_string()),
                    None => ("404 Not Found", r#"{"error":"not found"}"#.to_string()),
                };
                // Logged before the reply, so the client sees it when done.
                log.lock().unwrap().push(request);
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                sock.write_all(reply.as_bytes()).unwrap();
            }
        });
        (url, seen)
    }

    fn window(provider: &OpenAiProvider) -> (usize, &str, Option<String>) {
        (
            provider.context_size(),
            provider.window_source(),
            provider.window_note(),
        )
    }

    #[test]
    fn llama_server_window_is_its_slot_and_a_smaller_one_than_trained_is_noted() {
        let (url, seen) = stub(vec![
            (
                "GET /v1/models",
                json!({"data": [{"id": "q.gguf", "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]}),
            ),
            (
                "GET /props",
                json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}),
            ),
        ]);
        let p = OpenAiProvider::connect(&url, "default", None, None);
        assert_eq!(
            window(&p),
            (
                4096,
                "server /props",
                Some("the server's context window is 4,096 tokens, the model was trained for 32,768: long sessions get compacted sooner. fix: restart the server with a larger context (llama-server -c), or pass --ctx-size N if the server's window is in fact larger".to_string())
            )
        );
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn llama_server_top_level_n_ctx_is_read_too_and_a_full_window_has_no_note() {
        let models = json!({"data": [{"id": "q", "meta": {"n_ctx_train": 32768}}]});
        let (url, _) = stub(vec![
            ("GET /v1/models", models.clone()),
            ("GET /props", json!({"n_ctx": 32768})),
        ]);
        let p = OpenAiProvider::connect(&url, "q", None, None);
        assert_eq!(window(&p), (32768, "server /props", None));
        // A slot's window is what one request gets (`-c` over `--parallel`).
        let (url, _) = stub(vec![
            ("GET /v1/models", models),
            (
                "GET /props",
                json!({"n_ctx": 32768, "default_generation_settings": {"n_ctx": 8192}}),
            ),
        ]);
        let p = OpenAiProvider::connect(&url, "q", None, None);
        assert_eq!(window(&p).0, 8192);
    }

    #[test]
    fn ollama_window_is_num_ctx_of_the_model_parameters() {
        let (url, seen) = stub(vec![(
            "POST /api/show",
            json!({
                "modelfile": "FROM qwen",
                "parameters": "stop \"<|im_end|>\"\nnum_ctx 4096",
                "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
            }),
        )]);
        let p = OpenAiProvider::connect(&url, "qwen2.5:7b", None, None);
        let (size, source, note) = window(&p);
        assert_eq!((size, source), (4096, "ollama /api/show"));
        assert_eq!(
            note.as_deref(),
            Some("the server's context window is 4,096 tokens, the model was trained for 131,072: long sessions get compacted sooner. fix: set num_ctx on the server (PARAMETER num_ctx in a Modelfile, or OLLAMA_CONTEXT_LENGTH), or pass --ctx-size N if the server's window is in fact larger")
        );
        let seen = seen.lock().unwrap();
        let show = seen
            .iter()
            .find(|r| r.starts_with("POST /api/show"))
            .unwrap();
        assert!(
            show.contains(r#""model":"qwen2.5:7b""#) && show.contains(r#""name":"qwen2.5:7b""#),
            "{show}"
        );
    }

    #[test]
    fn ollama_without_num_ctx_runs_its_default_and_says_so() {
        let (url, _) = stub(vec![(
            "POST /api/show",
            json!({
                "modelfile": "FROM qwen",
                "model_info": {"qwen2.context_length": 32768},
            }),
        )]);
        let p = OpenAiProvider::connect(&url, "qwen", None, None);
        let (size, source, note) = window(&p);
        assert_eq!((size, source), (4096, "ollama /api/show"));
        let note = note.unwrap();
        assert!(
            note.starts_with("the server's context window is 4,096 tokens (Ollama's default num_ctx), the model was trained for 32,768:"),
            "{note}"
        );
    }

    #[test]
    fn vllm_window_is_max_model_len_without_a_note() {
        let (url, seen) = stub(vec![(
            "GET /v1/models",
            json!({"data": [
                {"id": "other", "max_model_len": 8192},
                {"id": "Qwen/Qwen3-8B", "owned_by": "vllm", "max_model_len": 16384},
            ]}),
        )]);
        let p = OpenAiProvider::connect(&url, "Qwen/Qwen3-8B", None, None);
        assert_eq!(window(&p), (16384, "vllm /models", None));
        assert_eq!(seen.lock().unwrap().len(), 1, "vLLM needs one request");
    }

    #[test]
    fn ctx_size_wins_without_asking_the_server() {
        let (url, seen) = stub(vec![("GET /props", json!({"n_ctx": 4096}))]);
        let p = OpenAiProvider::connect(&url, "m", None, Some(2048));
        assert_eq!(window(&p), (2048, "--ctx-size", None));
        assert!(seen.lock().unwrap().is_empty());
    }

    #[test]
    fn a_server_that_tells_nothing_gets_the_default() {
        let (url, seen) = stub(Vec::new());
        let p = OpenAiProvider::connect(&url, "m", None, None);
        assert_eq!(window(&p), (8192, "default", None));
        let lines: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.lines().next().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "GET /v1/models HTTP/1.1",
                "GET /props HTTP/1.1",
                "POST /api/show HTTP/1.1"
            ]
        );
    }

    #[test]
    fn an_unreachable_server_gets_the_default_after_one_attempt() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        drop(listener);
        let started = Instant::now();
        let p = OpenAiProvider::connect(&url, "m", None, None);
        assert_eq!(window(&p), (8192, "default", None));
        assert!(
            started.elapsed() < DISCOVERY_TIME,
            "{:?}",
            started.elapsed()
        );
    }
}
