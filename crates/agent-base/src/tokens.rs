//! Token counts where no tokenizer is at hand.

/// About four characters per token for English and code: the estimate for
/// a remote model's prompt and for budgets whose reader's tokenizer is
/// unknown (the MCP server's repo map).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[cfg(test)]
mod tests {
    #[test]
    fn four_characters_make_a_token_rounded_up() {
        assert_eq!(super::estimate_tokens(""), 0);
        assert_eq!(super::estimate_tokens("abcd"), 1);
        assert_eq!(super::estimate_tokens("abcde"), 2);
        assert_eq!(super::estimate_tokens("ééé"), 1);
    }
}
