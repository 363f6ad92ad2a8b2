//! Chat templates, native tool-call syntaxes and lazy call grammars for
//! local models, with no model runtime inside.
//!
//! An engine uses it in three steps per model request:
//!
//! 1. **Render** the conversation with the model's own template
//!    ([`ChatTemplate::render`]): the messages are first adapted to what the
//!    template can render ([`adapt`]), e.g. no system role, no tool role,
//!    arguments as JSON text, Mistral's nine-character call ids.
//! 2. **Constrain** the call, lazily ([`grammar::call_grammar`]): the model
//!    writes freely (reasoning, text) until it opens a call; from the opener
//!    on, the grammar admits only a valid call of a real tool.
//! 3. **Parse** the turn ([`parse::parse_turn`]) into reasoning, calls and
//!    text, in the syntax of the model's [`Family`]; store it without its
//!    reasoning ([`history::assistant_message`]) so the next prompt starts
//!    with this one and the KV cache holds.
//!
//! ```no_run
//! use agent_chat::{grammar, history, parse, ChatTemplate, Message, RenderOptions, SpecialTokens};
//! # fn generate(_: &str, _: Option<&grammar::CallGrammar>) -> String { String::new() }
//! # let (source, tools) = (String::new(), vec![]);
//! let template = ChatTemplate::new("the GGUF's template", &source, SpecialTokens::new("<s>", "</s>"))?;
//! let mut messages = vec![Message::system("You are a coding agent."), Message::user("Where is main?")];
//! let prompt = template.render(&messages, &tools, &RenderOptions::generation())?;
//! let grammar = grammar::call_grammar(template.family(), &tools, prompt.reasoning_open);
//! let output = generate(&prompt.text, grammar.as_ref());
//! let options = parse::ParseOptions { reasoning_open: prompt.reasoning_open, tools: &tools };
//! match parse::parse_turn(template.family(), &output, &options) {
//!     Ok(mut turn) => {
//!         history::assign_call_ids(&mut turn.calls, 1);
//!         messages.push(history::assistant_message(&turn));
//!     }
//!     Err(e) => messages.push(Message::user(e.message)), // the model retries
//! }
//! # Ok::<(), agent_chat::TemplateError>(())
//! ```

pub mod adapt;
pub mod clock;
mod error;
pub mod family;
pub mod grammar;
pub mod history;
pub mod message;
pub mod parse;
mod pyjson;
pub mod render;

pub use family::Family;
pub use message::{Message, Role, ToolCall, ToolSpec};
pub use parse::{parse_turn, ParseError, ParseOptions, ParsedTurn};
pub use render::{ChatTemplate, Prompt, RenderOptions, SpecialTokens, TemplateError};
