//! One plain answer, no tools and no loop (`agent ask --no-tools`): the
//! request straight to the model, with the attached files and the code the
//! index retrieves for the question. Front ends send [`PlainQuestion::request`]
//! and stream the reply.

use std::path::PathBuf;

use agent_llm::{CompletionRequest, Message, Provider, Role, Sampling};

use crate::context::{self, Counter, Fitted, Kind, Turn};
use agent_tools::SemanticSearch;
use anyhow::Result;

/// The system message unless the user gives their own (`--system`).
pub(crate) const SYSTEM_PROMPT: &str = "You are agent, a careful coding assistant running entirely on the user's machine. \
Answer concisely and accurately. When files are attached, base your answer on them and say when they do not contain the answer.";

/// The repeat penalty unless the user picks one: free text, unlike the
/// loop's grammar-bound calls, is where small models start repeating.
pub const REPEAT_PENALTY: f32 = 1.15;

/// Most characters of retrieved code added to a prompt (about 1,500 tokens),
/// so a small model's context keeps room for the question and the answer.
pub(crate) const MAX_RETRIEVED_CHARS: usize = 6_000;

/// A question and what is sent with it.
pub struct PlainQuestion<'a> {
    pub question: &'a str,
    /// Attached files, before the retrieved code and the question.
    pub files: &'a [PathBuf],
    /// Replaces [`SYSTEM_PROMPT`].
    pub system: Option<String>,
    /// Chunks of code to retrieve from the index; 0 for none.
    pub context_chunks: usize,
    pub max_tokens: usize,
    pub sampling: Sampling,
}

/// The request, and how many retrieved chunks it carries. A grammar is the
/// caller's to add (the engine converts a JSON Schema into one).
pub struct PlainRequest {
    pub request: CompletionRequest,
    pub retrieved_chunks: usize,
}

impl PlainQuestion<'_> {
    /// The request for the model; an attachment that cannot be read is the
    /// error, an index that cannot be searched only leaves its code out.
    /// `open_index` is called only when code is to be retrieved, after the
    /// attachments were read (None: there is no index).
    pub fn request<F>(self, open_index: F) -> Result<PlainRequest>
    where
        F: FnOnce() -> Option<Box<dyn SemanticSearch>>,
    {
        let mut user = crate::attach::render(&crate::attach::attachments(self.files)?);
        let index = (self.context_chunks > 0).then(open_index).flatten();
        let (retrieved, retrieved_chunks) = match index {
            Some(mut index) => retrieved_code(index.as_mut(), self.question, self.context_chunks),
            None => (String::new(), 0),
        };
        user.push_str(&retrieved);
        user.push_str(self.question);
        let system = self.system.unwrap_or_else(|| SYSTEM_PROMPT.to_string());
        let request = CompletionRequest {
            messages: vec![Message::system(system), Message::user(user)],
            max_tokens: self.max_tokens,
            sampling: self.sampling,
            ..CompletionRequest::default()
        };
        Ok(PlainRequest {
            request,
            retrieved_chunks,
        })
    }
}

/// Fits `request` (a plain question's: the system prompt, then the
/// attached files, the retrieved code and the question) to `provider`'s
/// window: the largest file is cut to an excerpt first, the question never.
pub fn fit(request: &mut CompletionRequest, provider: &dyn Provider) -> Fitted {
    let limit = crate::budget::prompt_room(provider.context_size(), request.max_tokens);
    let prompt = |m: &[Message]| crate::window::prompt_tokens(provider, m, &[]);
    let text = |t: &str| crate::window::text_tokens(provider, t);
    let counter = Counter {
        prompt: &prompt,
        text: &text,
    };
    let turns: Vec<Turn> = request
        .messages
        .iter()
        .map(|m| Turn {
            kind: if m.role == Role::System {
                Kind::System
            } else {
                Kind::Request
            },
            message: m.clone(),
            seq: None,
        })
        .collect();
    let words = request
        .messages
        .last()
        .map(|m| m.content.as_str())
        .unwrap_or("");
    let hints = crate::budget::hints(crate::attach::after_blocks(words));
    let (turns, fitted) = context::fit(&turns, limit, &counter, &hints);
    request.messages = turns.into_iter().map(|t| t.message).collect();
    fitted
}

/// The best-matching chunks as fenced blocks, up to [`MAX_RETRIEVED_CHARS`],
/// and how many; nothing when the search fails (retrieval is a bonus, never
/// a requirement).
fn retrieved_code(search: &mut dyn SemanticSearch, question: &str, k: usize) -> (String, usize) {
    let hits = match search.search(question, k) {
        Ok(hits) => hits,
        Err(e) => {
            tracing::warn!("index search failed, answering without it: {e:#}");
            return (String::new(), 0);
        }
    };
    let mut out = String::new();
    let mut used = 0;
    for hit in hits {
        let name = format!("{} lines {}-{}", hit.path, hit.start_line, hit.end_line);
        let block = format!("{}\n", crate::attach::fenced(&name, &hit.text));
        if out.len() + block.len() > MAX_RETRIEVED_CHARS {
            break;
        }
        out.push_str(&block);
        used += 1;
    }
    (out, used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tools::search::Hit;

    struct Found(Vec<Hit>);

    impl SemanticSearch for Found {
        fn search(&mut self, _: &str, k: usize) -> Result<Vec<Hit>> {
            Ok(self.0.iter().take(k).cloned().collect())
        }
    }

    fn hit(path: &str, text: &str) -> Hit {
        Hit {
            path: path.into(),
            start_line: 1,
            end_line: 2,
            symbol: String::new(),
            score: 1.0,
            text: text.into(),
        }
    }

    fn question(k: usize) -> PlainQuestion<'static> {
        PlainQuestion {
            question: "what does f do?",
            files: &[],
            system: None,
            context_chunks: k,
            max_tokens: 64,
            sampling: Sampling::greedy(),
        }
    }

    fn index(hits: Vec<Hit>) -> impl FnOnce() -> Option<Box<dyn SemanticSearch>> {
        move || Some(Box::new(Found(hits)) as Box<dyn SemanticSearch>)
    }

    #[test]
    fn retrieved_code_goes_before_the_question_under_the_default_system_prompt() {
        let hits = vec![hit("a.rs", "fn f() {}"), hit("b.rs", "fn g() {}")];
        let plain = question(1).request(index(hits)).unwrap();
        assert_eq!(plain.retrieved_chunks, 1);
        let messages = &plain.request.messages;
        assert_eq!(messages[0].content, SYSTEM_PROMPT);
        assert_eq!(
            messages[1].content,
            "File `a.rs lines 1-2`:\n```\nfn f() {}\n```\n\nwhat does f do?"
        );
    }

    #[test]
    fn retrieval_stops_before_the_character_budget() {
        let big = "x".repeat(MAX_RETRIEVED_CHARS / 2);
        let hits = vec![hit("a.rs", &big), hit("b.rs", &big), hit("c.rs", "y")];
        let plain = question(3).request(index(hits)).unwrap();
        assert_eq!(plain.retrieved_chunks, 1);
    }

    #[test]
    fn no_chunks_asked_for_opens_no_index() {
        let plain = question(0)
            .request(|| panic!("the index is opened"))
            .unwrap();
        assert_eq!(plain.retrieved_chunks, 0);
        assert_eq!(plain.request.messages[1].content, "what does f do?");
    }
}
