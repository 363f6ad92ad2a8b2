//! Token counts: estimated where no tokenizer is at hand, and shown.

/// About four characters per token for English and code: the estimate for
/// a remote model's prompt and for budgets whose reader's tokenizer is
/// unknown (the MCP server's repo map).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// A count as people read it, `12,345`: the figures of the stats line and
/// the terminal UI's status line.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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
