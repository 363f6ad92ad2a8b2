//! Prompt rendering fallbacks. The engine first asks llama.cpp to apply the
//! model's own chat template; models without one (or with a template
//! llama.cpp cannot interpret) get ChatML, the most widely trained format.

use super::Message;

/// Renders messages in ChatML. With `add_assistant`, the prompt ends with an
/// open assistant turn for the model to complete.
pub fn chatml(messages: &[Message], add_assistant: bool) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(m.role.as_str());
        out.push('\n');
        out.push_str(&m.content);
        out.push_str("<|im_end|>\n");
    }
    if add_assistant {
        out.push_str("<|im_start|>assistant\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_renders_roles_and_opens_the_assistant_turn() {
        let text = chatml(&[Message::system("be brief"), Message::user("hi")], true);
        assert_eq!(
            text,
            "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
