//! `search_semantic`: the code index behind a tool.

use serde::Serialize;

/// One retrieved chunk.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub path: String,
    pub start_line: usize,
    pub end_line: usize,
    pub symbol: String,
    pub score: f32,
    pub text: String,
}
