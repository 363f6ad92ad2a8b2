//! Conversations in OpenAI's chat format, the shape every chat template and
//! every OpenAI-compatible server expects.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, linked to it by `tool_call_id`.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One chat message. Serializes as OpenAI's chat format, leaving out the
/// fields it does not use: templates test `'tool_calls' in message` and
/// `message.tool_calls is defined`, so an absent field must stay absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// The text; empty for an assistant message that only calls tools.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub content: String,
    /// What the model thought before this message (assistant messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: the name of the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message that calls tools (with optional text before the calls).
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::assistant(content)
        }
    }

    /// The result of the call `call_id` to the tool `name`.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            name: Some(name.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    /// The same message carrying `reasoning` as its reasoning content.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning_content = Some(reasoning.into());
        self
    }
}

/// `messages` as an OpenAI-compatible server takes them: call arguments as
/// JSON text, `content: null` on messages that only call tools.
#[allow(
    clippy::expect_used,
    reason = "a Message is strings and JSON values: serializing it cannot fail"
)]
pub fn to_wire(messages: &[Message]) -> Value {
    messages
        .iter()
        .map(|m| {
            let mut value = serde_json::to_value(m).expect("messages serialize");
            if !m.tool_calls.is_empty() && m.content.is_empty() {
                value["content"] = Value::Null;
            }
            if let Some(calls) = value.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for call in calls {
                    let text = call["function"]["arguments"].to_string();
                    call["function"]["arguments"] = Value::String(text);
                }
            }
            value
        })
        .collect()
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// A call to a function tool. Serializes as OpenAI's
/// `{"id", "type": "function", "function": {"name", "arguments"}}` with the
/// arguments as a JSON object (Hugging Face's convention); deserializes them
/// from an object or from a JSON string (OpenAI's wire format).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Unique within the conversation; empty when the model gave none (the
    /// caller assigns one before storing the call).
    pub id: String,
    pub name: String,
    /// A JSON object.
    pub arguments: Value,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// The call in OpenAI's format.
    pub fn to_openai(&self) -> Value {
        json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        })
    }
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_openai().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let function = value
            .get("function")
            .ok_or_else(|| D::Error::custom("a tool call needs a \"function\""))?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("a tool call needs a function name"))?;
        let arguments = match function.get("arguments") {
            Some(Value::String(text)) => serde_json::from_str(text).map_err(D::Error::custom)?,
            Some(other) => other.clone(),
            None => Value::Object(Map::new()),
        };
        let id = value.get("id").and_then(Value::as_str).unwrap_or_default();
        Ok(Self::new(id, name, arguments))
    }
}

/// A function tool the model may call: serializes as OpenAI's
/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// The tool in OpenAI's format.
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        })
    }
}

impl Serialize for ToolSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_openai().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let function = value.get("function").unwrap_or(&value);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("a tool needs a name"))?;
        let description = function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parameters = function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        Ok(Self::new(name, description, parameters))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_in_openai_format_without_unused_fields() {
        let call = ToolCall::new("call_1", "read_file", json!({"path": "a.rs"}));
        let msg = Message::assistant_calls("", vec![call]);
        let value = serde_json::to_value(&msg).unwrap();
        assert_eq!(
            value,
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read_file", "arguments": {"path": "a.rs"}}}]})
        );
        assert_eq!(serde_json::from_value::<Message>(value).unwrap(), msg);
        let plain = serde_json::to_value(Message::user("hi")).unwrap();
        assert_eq!(plain, json!({"role": "user", "content": "hi"}));
    }

    #[test]
    fn the_wire_format_has_text_arguments() {
        let call = ToolCall::new("c1", "grep", json!({"pattern": "a"}));
        let wire = to_wire(&[Message::assistant_calls("", vec![call])]);
        assert_eq!(wire[0]["content"], Value::Null);
        assert_eq!(
            wire[0]["tool_calls"][0]["function"]["arguments"],
            "{\"pattern\":\"a\"}"
        );
    }

    #[test]
    fn string_arguments_and_null_content_are_read() {
        let msg: Message = serde_json::from_value(json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "x", "type": "function",
                            "function": {"name": "grep", "arguments": "{\"pattern\": \"a\"}"}}]
        }))
        .unwrap();
        assert_eq!(msg.content, "");
        assert_eq!(msg.tool_calls[0].arguments, json!({"pattern": "a"}));
    }
}
