//! JSON-RPC 2.0 over newline-delimited JSON, as ACP's stdio transport
//! frames it: one message per line, both sides send requests.
//!
//! A reader thread takes the client's lines apart: answers to our requests
//! go to whoever waits for them, `session/cancel` trips the session's token
//! at once (the main thread is busy running the prompt), a line that is not
//! JSON-RPC gets its error, and every other request or notification is
//! queued for the main thread.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use agent_base::cancel::CancelToken;

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// ACP's code for a request the prompt's cancellation ended.
pub(crate) const REQUEST_CANCELLED: i64 = -32800;

/// A JSON-RPC error object.
#[derive(Debug, Clone)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

/// A request or notification from the client, for the main thread.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// None for a notification.
    pub id: Option<Value>,
    pub method: String,
    pub params: Value,
}

/// The agent's side of the connection: writes messages, numbers its own
/// requests and hands their answers back.
pub(crate) struct Peer {
    out: Mutex<Box<dyn Write + Send>>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Sender<Result<Value, RpcError>>>>,
    /// The running prompts' tokens, by session id, for `session/cancel`.
    pub cancels: Mutex<HashMap<String, CancelToken>>,
}

impl Peer {
    pub(crate) fn new(out: Box<dyn Write + Send>) -> Arc<Self> {
        Arc::new(Self {
            out: Mutex::new(out),
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            cancels: Mutex::new(HashMap::new()),
        })
    }

    /// Writes one message as one line. A client that is gone cannot be
    /// told anything; the reader sees the end of its input and stops us.
    fn send(&self, message: &Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let line = message.to_string();
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            tracing::debug!("the client closed its input; message dropped");
        }
    }

    pub(crate) fn notify(&self, method: &str, params: impl Serialize) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub(crate) fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
        };
        self.send(&message);
    }

    /// Sends a request; its answer arrives on the receiver (which closes
    /// unanswered when the client goes away).
    pub(crate) fn request(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Receiver<Result<Value, RpcError>> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx
    }

    /// Sends a request and waits for its answer, but not past a
    /// cancellation of the prompt or the client's departure.
    pub(crate) fn ask(
        &self,
        method: &str,
        params: impl Serialize,
        cancel: &CancelToken,
    ) -> Result<Value, RpcError> {
        let answer = self.request(method, params);
        loop {
            match answer.recv_timeout(Duration::from_millis(100)) {
                Ok(answer) => return answer,
                Err(RecvTimeoutError::Timeout) if !cancel.is_cancelled() => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(RpcError::new(
                        REQUEST_CANCELLED,
                        format!("{method}: the prompt was cancelled"),
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RpcError::new(
                        INTERNAL_ERROR,
                        format!("{method}: the client is gone"),
                    ))
                }
            }
        }
    }

    /// Routes an answer to the request it answers.
    fn answered(&self, id: &Value, result: Result<Value, RpcError>) {
        let waiting = id.as_u64().and_then(|id| {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id)
        });
        match waiting {
            Some(tx) => {
                let _ = tx.send(result);
            }
            None => tracing::warn!("an answer to no request of ours (id {id})"),
        }
    }

    fn cancel(&self, session: &str) {
        if let Some(token) = self
            .cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
        {
            token.cancel();
        }
    }

    /// The client is gone: every running prompt stops, every question
    /// waiting for it is dropped.
    fn closed(&self) {
        for token in self
            .cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            token.cancel();
        }
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// Reads the client's messages on a thread of its own until its input ends.
pub(crate) fn start_reader(
    input: Box<dyn BufRead + Send>,
    peer: Arc<Peer>,
) -> (Receiver<Incoming>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        for line in input.lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            if let Some(incoming) = take_apart(&line, &peer) {
                if tx.send(incoming).is_err() {
                    break;
                }
            }
        }
        peer.closed();
    });
    (rx, handle)
}

/// One line: answered here (errors, answers, cancellations) or returned
/// for the main thread.
fn take_apart(line: &str, peer: &Peer) -> Option<Incoming> {
    let message: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            peer.respond(
                Value::Null,
                Err(RpcError::new(
                    PARSE_ERROR,
                    format!("parse error: {e}; each line must be one JSON-RPC 2.0 message"),
                )),
            );
            return None;
        }
    };
    let id = message.get("id").cloned();
    let method = message.get("method").and_then(Value::as_str);
    match (method, id) {
        (Some(method), id) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            if method == "session/cancel" {
                match params.get("sessionId").and_then(Value::as_str) {
                    Some(session) => peer.cancel(session),
                    None => tracing::warn!("session/cancel without a sessionId"),
                }
                return None;
            }
            Some(Incoming {
                id,
                method: method.to_string(),
                params,
            })
        }
        (None, Some(id)) if message.get("result").is_some() => {
            peer.answered(&id, Ok(message["result"].clone()));
            None
        }
        (None, Some(id)) if message.get("error").is_some() => {
            let error = &message["error"];
            peer.answered(
                &id,
                Err(RpcError::new(
                    error["code"].as_i64().unwrap_or(INTERNAL_ERROR),
                    error["message"].as_str().unwrap_or_default(),
                )),
            );
            None
        }
        (None, id) => {
            peer.respond(
                id.unwrap_or(Value::Null),
                Err(RpcError::new(
                    INVALID_REQUEST,
                    "invalid request: a JSON-RPC 2.0 message needs a `method` (or, as an answer, a `result` or an `error`)",
                )),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(sink: &Sink) -> Vec<Value> {
        String::from_utf8(sink.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn bad_lines_get_errors_and_the_rest_is_routed() {
        let sink = Sink::default();
        let peer = Peer::new(Box::new(sink.clone()));
        let token = CancelToken::new();
        peer.cancels
            .lock()
            .unwrap()
            .insert("s1".into(), token.clone());
        let asked = peer.request("session/request_permission", json!({}));
        let input = [
            "{not json",
            r#"{"jsonrpc":"2.0","id":7}"#,
            r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#,
            r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        ]
        .join("\n");
        let (rx, reader) = start_reader(Box::new(std::io::Cursor::new(input)), peer.clone());
        let incoming: Vec<Incoming> = rx.iter().collect();
        reader.join().unwrap();
        assert_eq!(incoming.len(), 1);
        assert_eq!(incoming[0].method, "initialize");
        assert!(token.is_cancelled());
        assert_eq!(
            asked.recv().unwrap().unwrap()["outcome"]["outcome"],
            "cancelled"
        );
        let out = lines(&sink);
        // Our request, then the two errors.
        assert_eq!(out[1]["error"]["code"], PARSE_ERROR);
        assert_eq!(out[1]["id"], Value::Null);
        assert_eq!(out[2]["error"]["code"], INVALID_REQUEST);
        assert_eq!(out[2]["id"], 7);
    }
}
