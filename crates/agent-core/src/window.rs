//! The agent's side of the context window: prompts counted as they are
//! sent (rendered by the model's template, its tools included), the turns
//! fitted to what is left after the reply's reserve ([`crate::context`]), a
//! request's attached files and each tool's output sized to their share
//! before they join the conversation, and what a prompt spent
//! ([`Budget`]).
//!
//! The invariant: no prompt passes the window minus the reply's reserve. A
//! server's tokenizer is remote, so there a prompt is counted at three bytes a
//! token, and its window is asked of it (`/props`, `/api/show`, `/models`).
//! A request's attached files ([`crate::attach::Request`], never part of the
//! user's words) get `ATTACHMENT_SHARE` of what the fixed prompt and the
//! words leave, a tool's output `OUTPUT_SHARE`, and the tools that choose how
//! much they print (`read_file`, `grep`, `search_semantic`) are told the room
//! ([`agent_tools::ToolContext::room`]). What is too large becomes an excerpt
//! ([`crate::budget::excerpt`]). `Outcome::budget` and `/tokens` show the last
//! prompt's parts.

use agent_llm::{Message, ToolSpec as ChatSpec};

use crate::attach::{self, Attachment};
use crate::budget::{self, Budget};
use crate::context::{self, Counter, Fitted, Kind, Turn};
use crate::Agent;

/// The attached files' share of what the window has left after the fixed
/// prompt and the user's words: the rest is for the steps' tool results.
const ATTACHMENT_SHARE: f64 = 0.6;
/// A new tool output's share of the same.
const OUTPUT_SHARE: f64 = 0.4;
/// Characters per token assumed when telling a tool how much it may print
/// (code runs 3 to 4; the smaller figure keeps the output within its share).
const CHARS_PER_TOKEN: usize = 3;

impl Agent {
    /// The prompt's room: the window minus the reserve for the reply.
    pub(crate) fn prompt_budget(&self) -> usize {
        budget::prompt_room(self.provider.context_size(), self.config.max_tokens)
    }

    /// Tokens `messages` take as sent with `tools` (a native model's
    /// history in its own form).
    pub(crate) fn prompt_tokens(&self, messages: &[Message], tools: &[ChatSpec]) -> usize {
        if self.provider.native_calls() {
            prompt_tokens(
                self.provider.as_ref(),
                &crate::native::messages(messages),
                tools,
            )
        } else {
            prompt_tokens(self.provider.as_ref(), messages, tools)
        }
    }

    /// Tokens of a text alone.
    pub(crate) fn text_tokens(&self, text: &str) -> usize {
        text_tokens(self.provider.as_ref(), text)
    }

    /// The tool schemas a prompt carries for `allowed` tools: a native
    /// model's template renders them, the loop's own JSON lists them in the
    /// system prompt instead.
    pub(crate) fn sent_tools(&self, allowed: &[agent_tools::ToolSpec]) -> Vec<ChatSpec> {
        if self.provider.native_calls() {
            crate::native::tool_specs(allowed)
        } else {
            Vec::new()
        }
    }

    /// The turns to send with `tools`, within the prompt's room.
    pub(crate) fn fit(&self, tools: &[ChatSpec]) -> (Vec<Turn>, Fitted) {
        let prompt = |m: &[Message]| self.prompt_tokens(m, tools);
        let text = |t: &str| self.text_tokens(t);
        let hints = budget::hints(&self.latest_request());
        let counter = Counter {
            prompt: &prompt,
            text: &text,
        };
        context::fit(&self.turns, self.prompt_budget(), &counter, &hints)
    }

    /// The next prompt's messages and tools (`allowed`, for a native
    /// model), fitted; what it spends becomes the last budget.
    pub(crate) fn fitted_prompt(
        &mut self,
        allowed: &[agent_tools::ToolSpec],
    ) -> (Vec<Message>, Vec<ChatSpec>, Fitted) {
        let tools = self.sent_tools(allowed);
        let (kept, fitted) = self.fit(&tools);
        self.last_budget = self.budget_of(&kept, &tools, fitted);
        if fitted != Fitted::default() {
            tracing::info!(
                "fitted to the context window: {} outputs stubbed, {} turns dropped, {} parts cut to an excerpt ({} tokens left out)",
                fitted.stubbed, fitted.dropped_turns, fitted.excerpted, fitted.cut_tokens
            );
        }
        (kept.into_iter().map(|t| t.message).collect(), tools, fitted)
    }

    /// What the prompt of `kept` turns spends: the system prompt and tools,
    /// the turns before the latest request, and the request's own.
    pub(crate) fn budget_of(&self, kept: &[Turn], tools: &[ChatSpec], fitted: Fitted) -> Budget {
        let window = self.provider.context_size();
        let mut budget = Budget {
            window,
            reserve: window - self.prompt_budget(),
            cut: fitted.cut_tokens + self.request_cut,
            ..Budget::default()
        };
        if kept.is_empty() {
            // Before the first request: nothing is spent yet.
            return budget;
        }
        let messages: Vec<Message> = kept.iter().map(|t| t.message.clone()).collect();
        let total = self.prompt_tokens(&messages, tools);
        let fixed = self.prompt_tokens(&messages[..messages.len().min(1)], tools);
        let request_at = kept
            .iter()
            .rposition(|t| matches!(t.kind, Kind::Request | Kind::Summary))
            .unwrap_or(messages.len())
            .max(1);
        let before = self.prompt_tokens(&messages[..request_at.min(messages.len())], tools);
        budget.fixed = fixed;
        budget.conversation = before.saturating_sub(fixed);
        budget.new = total.saturating_sub(before.max(fixed));
        budget
    }

    /// Tokens the window has left for what a request brings (its files, its
    /// tools' results): the room minus the fixed prompt and `words`.
    fn room_for_new(&self, words: &str) -> usize {
        let system: Vec<Message> = self
            .turns
            .iter()
            .take(1)
            .map(|t| t.message.clone())
            .collect();
        let fixed = self.prompt_tokens(&system, &[]);
        self.prompt_budget()
            .saturating_sub(fixed + self.text_tokens(words) + 64)
    }

    /// The request's attached files, fitted to their share: the largest is
    /// cut first, each to an excerpt that keeps what `words` ask about.
    /// Returns the fenced blocks and the tokens left out.
    pub(crate) fn fit_attachments(
        &self,
        attachments: &[Attachment],
        words: &str,
    ) -> (String, usize) {
        if attachments.is_empty() {
            return (String::new(), 0);
        }
        let share = (self.room_for_new(words) as f64 * ATTACHMENT_SHARE) as usize;
        let hints = budget::hints(words);
        let text = |t: &str| self.text_tokens(t);
        let sizes: Vec<usize> = attachments.iter().map(|a| text(&a.text)).collect();
        // Smallest first: each takes what it needs up to an even split of
        // what the smaller ones left.
        let mut order: Vec<usize> = (0..attachments.len()).collect();
        order.sort_by_key(|&i| sizes[i]);
        let mut left = share;
        let mut fitted: Vec<Attachment> = attachments.to_vec();
        let mut cut = 0;
        for (n, &i) in order.iter().enumerate() {
            let allowance = left / (attachments.len() - n);
            let a = &attachments[i];
            match budget::excerpt(&a.name, &a.text, allowance, &hints, &text) {
                Some(excerpt) => {
                    cut += excerpt.cut_tokens;
                    left = left.saturating_sub(text(&excerpt.text));
                    fitted[i].text = excerpt.text;
                }
                None => left = left.saturating_sub(sizes[i]),
            }
        }
        (attach::render(&fitted), cut)
    }

    /// The request turn's `message` after the request's attached files,
    /// fitted to their share of the window (and the user told when cut).
    pub(crate) fn with_files(
        &mut self,
        asked: &attach::Request,
        message: String,
        ui: &mut dyn agent_protocol::Ui,
    ) -> String {
        let (files, cut) = self.fit_attachments(&asked.attachments, &asked.text);
        self.request_cut = cut;
        if cut > 0 {
            ui.notice(&format!(
                "(the attached files were cut to fit the context window: about {} tokens left out; the model can read them with read_file)",
                agent_base::tokens::thousands(cut)
            ));
        }
        format!("{files}{message}")
    }

    /// Tokens a new tool output may take in the request of `words`.
    fn output_share(&self, words: &str) -> usize {
        (self.room_for_new(words) as f64 * OUTPUT_SHARE) as usize
    }

    /// A new tool output (the observation's text), fitted to its share.
    pub(crate) fn fit_output(&mut self, text: String) -> String {
        let words = self.latest_request();
        let allowance = self.output_share(&words);
        let hints = budget::hints(&words);
        let count = |t: &str| self.text_tokens(t);
        match budget::excerpt("the tool's output", &text, allowance, &hints, &count) {
            Some(excerpt) => {
                tracing::info!(
                    "a tool's output cut to fit the context window: {} tokens left out",
                    excerpt.cut_tokens
                );
                self.request_cut += excerpt.cut_tokens;
                excerpt.text
            }
            None => text,
        }
    }

    /// How many characters a tool may print now: its output's share of the
    /// window, as characters.
    pub(crate) fn output_room(&self) -> usize {
        let tokens = self.output_share(&self.latest_request());
        tokens.max(budget::MIN_EXCERPT_TOKENS) * CHARS_PER_TOKEN
    }

    /// The latest request's words (none before the first).
    pub(crate) fn latest_request(&self) -> String {
        self.turns
            .iter()
            .enumerate()
            .rev()
            .find(|(_, t)| t.kind == Kind::Request)
            .map(|(i, t)| {
                attach::after_blocks(crate::request_text(i, &t.message.content)).to_string()
            })
            .unwrap_or_default()
    }
}

/// Tokens `messages` take as `provider` renders them with `tools`; an
/// estimate where it cannot count.
pub(crate) fn prompt_tokens(
    provider: &dyn agent_llm::Provider,
    messages: &[Message],
    tools: &[ChatSpec],
) -> usize {
    provider
        .count_prompt_tokens(messages, tools)
        .unwrap_or_else(|_| messages.iter().map(|m| m.content.len() / 3 + 4).sum())
}

/// Tokens of `text` with `provider`'s tokenizer; an estimate where it
/// cannot count.
pub(crate) fn text_tokens(provider: &dyn agent_llm::Provider, text: &str) -> usize {
    provider
        .count_tokens(text)
        .unwrap_or_else(|_| text.len() / 3 + 1)
}
