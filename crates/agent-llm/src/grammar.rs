//! GBNF grammars for constrained decoding: the files in `grammars/` (compiled
//! in, so the binary is self-contained) and label sets. JSON Schemas are
//! converted by llama.cpp's own converter, in `agent_engine`.

use std::path::Path;

use super::LlmError;

/// A GBNF grammar and the rule generation starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grammar {
    pub gbnf: String,
    pub root: String,
}

impl Grammar {
    pub fn new(gbnf: impl Into<String>) -> Self {
        Self {
            gbnf: gbnf.into(),
            root: "root".into(),
        }
    }

    /// Any JSON value (`grammars/json.gbnf`).
    pub fn json() -> Self {
        Self::new(include_str!("../../../grammars/json.gbnf"))
    }

    /// Output restricted to exactly one of `labels`.
    pub fn one_of(labels: &[&str]) -> Self {
        let alts: Vec<String> = labels
            .iter()
            .map(|l| serde_json::Value::from(*l).to_string())
            .collect();
        Self::new(format!("root ::= {}\n", alts.join(" | ")))
    }

    pub fn from_file(path: &Path) -> Result<Self, LlmError> {
        std::fs::read_to_string(path)
            .map(Self::new)
            .map_err(|e| LlmError::Grammar(format!("cannot read {}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_quotes_each_label() {
        assert_eq!(
            Grammar::one_of(&["A", "B"]).gbnf,
            "root ::= \"A\" | \"B\"\n"
        );
    }
}
