//! A provider that replays canned model turns: deterministic tests of the
//! agent loop, and `--script FILE` replays of a recorded session.

use std::path::Path;

use serde::Deserialize;

use super::{
    Completion, CompletionRequest, Event, FinishReason, Flow, LlmError, Provider, StopScanner,
};

#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    turns: Vec<String>,
    next: usize,
    /// The window it claims (`--ctx-size`), so replays can test a small one.
    context: usize,
    /// Every request received, in order, for tests to inspect.
    pub requests: Vec<CompletionRequest>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Turn {
    Text(String),
    Object { content: String },
}

impl ScriptedProvider {
    pub fn new(turns: Vec<String>) -> Self {
        Self {
            turns,
            next: 0,
            context: 32_768,
            requests: Vec::new(),
        }
    }

    /// Claims a context window of `tokens` (default 32,768).
    pub fn with_context_size(mut self, tokens: usize) -> Self {
        self.context = tokens;
        self
    }

    /// Reads a JSON list of turns: strings, or objects with a `content` field.
    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            LlmError::Template(format!("cannot read script {}: {e}", path.display()))
        })?;
        let turns: Vec<Turn> = serde_json::from_str(&text).map_err(|e| {
            LlmError::Template(format!(
                "script {} is not a JSON list of turns (strings or {{\"content\": ...}} objects): {e}",
                path.display()
            ))
        })?;
        Ok(Self::new(
            turns
                .into_iter()
                .map(|t| match t {
                    Turn::Text(s) | Turn::Object { content: s } => s,
                })
                .collect(),
        ))
    }

    pub fn remaining(&self) -> usize {
        self.turns.len() - self.next
    }
}

/// Rough count for providers without a local tokenizer: about four
/// characters per token for English and code.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

impl Provider for ScriptedProvider {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn answers_side_requests(&self) -> bool {
        false
    }

    fn context_size(&self) -> usize {
        self.context
    }

    /// Replies are canned, but claiming grammar support lets tests check the
    /// grammar the loop asks for, exactly as the engine would receive it.
    fn supports_grammar(&self) -> bool {
        true
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        Ok(estimate_tokens(text))
    }

    fn complete(
        &mut self,
        request: &CompletionRequest,
        on_event: &mut dyn FnMut(Event<'_>) -> Flow,
    ) -> Result<Completion, LlmError> {
        self.requests.push(request.clone());
        let turn = self
            .turns
            .get(self.next)
            .cloned()
            .ok_or(LlmError::ScriptExhausted(self.turns.len()))?;
        self.next += 1;
        let prompt_tokens = self.count_message_tokens(&request.messages)?;
        let mut stops = StopScanner::new(&request.stop);
        let mut finish = FinishReason::Stop;
        // Stream word by word, like a model would.
        for piece in turn.split_inclusive(' ') {
            if let Some(end) = stops.feed(piece, on_event) {
                finish = end;
                break;
            }
        }
        stops.end(finish, on_event);
        let text = stops.text().to_string();
        Ok(Completion {
            completion_tokens: estimate_tokens(&text),
            text,
            finish,
            prompt_tokens,
            reused_tokens: 0,
            prefilled_tokens: prompt_tokens,
            tokens: Vec::new(),
            prefill_ms: 0.0,
            decode_ms: 0.0,
            ttft_ms: 0.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    #[test]
    fn replays_turns_in_order_then_reports_exhaustion() {
        let mut p = ScriptedProvider::new(vec!["first answer".into(), "second".into()]);
        let req = CompletionRequest::new(vec![Message::user("q")]);
        let mut streamed = String::new();
        let c = p
            .complete(&req, &mut |e| {
                if let Event::Text(t) = e {
                    streamed.push_str(t)
                }
                Flow::Continue
            })
            .unwrap();
        assert_eq!(
            (c.text.as_str(), streamed.as_str()),
            ("first answer", "first answer")
        );
        assert_eq!(
            p.complete(&req, &mut |_| Flow::Continue).unwrap().text,
            "second"
        );
        assert!(matches!(
            p.complete(&req, &mut |_| Flow::Continue),
            Err(LlmError::ScriptExhausted(2))
        ));
        assert_eq!(p.requests.len(), 3);
    }

    #[test]
    fn reads_strings_and_objects_from_a_script_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, r#"["a", {"content": "b"}]"#).unwrap();
        assert_eq!(ScriptedProvider::from_file(&path).unwrap().remaining(), 2);
        std::fs::write(&path, "{not json").unwrap();
        assert!(ScriptedProvider::from_file(&path).is_err());
    }
}
