//! GBNF grammars for constrained decoding: the files in `grammars/` (compiled
//! in, so the binary is self-contained) and grammars generated from a JSON
//! Schema by llama.cpp's own converter (the one `llama-server` uses).

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
        Self::new(include_str!("../../grammars/json.gbnf"))
    }

    /// JSON matching `schema` (objects, arrays, enums, required fields, ...).
    pub fn from_json_schema(schema: &serde_json::Value) -> Result<Self, LlmError> {
        let gbnf = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
            .map_err(|e| LlmError::Grammar(format!("cannot convert the JSON Schema: {e}")))?;
        Ok(Self::new(gbnf))
    }

    /// Output restricted to exactly one of `labels`.
    pub fn one_of(labels: &[&str]) -> Self {
        let alts: Vec<String> = labels
            .iter()
            .map(|l| serde_json::to_string(l).expect("a string always serializes"))
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
    fn schema_conversion_names_the_required_fields() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "name": { "type": "string" }, "age": { "type": "integer" } },
            "required": ["name", "age"]
        });
        let g = Grammar::from_json_schema(&schema).unwrap();
        assert!(g.gbnf.contains("root ::="), "{}", g.gbnf);
        assert!(g.gbnf.contains("name"), "{}", g.gbnf);
    }

    #[test]
    fn one_of_quotes_each_label() {
        assert_eq!(
            Grammar::one_of(&["A", "B"]).gbnf,
            "root ::= \"A\" | \"B\"\n"
        );
    }
}
