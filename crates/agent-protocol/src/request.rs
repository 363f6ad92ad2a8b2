//! A request as a front end sends it: the user's words and the files they
//! attached.

/// One attached file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// As the model and the user see it (relative to the workspace, or as given).
    pub name: String,
    pub text: String,
}

/// A request: the user's words, and the files they attached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub text: String,
    pub attachments: Vec<Attachment>,
}

impl Request {
    pub fn new(text: impl Into<String>, attachments: Vec<Attachment>) -> Self {
        Self {
            text: text.into(),
            attachments,
        }
    }
}

impl From<&str> for Request {
    fn from(text: &str) -> Self {
        Self::new(text, Vec::new())
    }
}

impl From<String> for Request {
    fn from(text: String) -> Self {
        Self::new(text, Vec::new())
    }
}

impl From<&String> for Request {
    fn from(text: &String) -> Self {
        Self::new(text.as_str(), Vec::new())
    }
}
