//! A conversation's turns, as the loop keeps them and the session store
//! saves them.

use agent_chat::{Message, Role};

/// What a message is, beyond its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    System,
    Request,
    Call,
    Observation,
    /// The model's summary of the turns it replaced (agent-core's `compact`).
    Summary,
}

#[derive(Debug, Clone)]
pub struct Turn {
    pub kind: Kind,
    pub message: Message,
    /// Its number in the session store (None until stored, or never: an
    /// unrecorded session); a request's names the changes it made.
    pub seq: Option<i64>,
}

impl Turn {
    pub fn new(kind: Kind, content: impl Into<String>) -> Self {
        let role = match kind {
            Kind::System => Role::System,
            Kind::Request | Kind::Observation | Kind::Summary => Role::User,
            Kind::Call => Role::Assistant,
        };
        Self {
            kind,
            message: Message::new(role, content),
            seq: None,
        }
    }
}
