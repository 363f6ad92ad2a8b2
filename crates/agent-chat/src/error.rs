//! The error of a template that gives no prompt: what rendering returns and
//! what the capability probe ([`crate::adapt`]) is given.

/// Why a template could not give a prompt. Every variant names the template,
/// so the caller can say which one failed before it falls back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("chat template {template} does not parse: {detail}")]
    Syntax { template: String, detail: String },
    #[error("chat template {template} refused the conversation: {message}")]
    Raised { template: String, message: String },
    #[error("chat template {template} failed to render: {detail}")]
    Render { template: String, detail: String },
}
