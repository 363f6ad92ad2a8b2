//! llama.cpp in-process, behind [`agent_llm::Provider`]: where the model runs
//! ([`offload`]), whether a file is a usable GGUF ([`gguf`]), and the engine
//! itself ([`engine`]: KV-cache prefix reuse, grammar-constrained sampling).
//! The only crate that links llama.cpp.

pub mod backends;
#[cfg(test)]
mod batch_invariance;
mod build;
pub mod engine;
pub mod gguf;
pub mod offload;
pub mod prefill_rate;
pub mod prompt_cache;
pub mod speculative;

use agent_llm::{Grammar, LlmError};

/// A grammar for JSON matching `schema` (objects, arrays, enums, required
/// fields, ...), by llama.cpp's own converter (the one `llama-server` uses).
pub fn json_schema_grammar(schema: &serde_json::Value) -> Result<Grammar, LlmError> {
    let gbnf = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
        .map_err(|e| LlmError::Grammar(format!("cannot convert the JSON Schema: {e}")))?;
    Ok(Grammar::new(gbnf))
}

#[cfg(test)]
mod tests {
    #[test]
    fn schema_conversion_names_the_required_fields() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": { "name": { "type": "string" }, "age": { "type": "integer" } },
            "required": ["name", "age"]
        });
        let g = super::json_schema_grammar(&schema).unwrap();
        assert!(g.gbnf.contains("root ::="), "{}", g.gbnf);
        assert!(g.gbnf.contains("name"), "{}", g.gbnf);
    }
}
