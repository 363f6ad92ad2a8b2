//! The wire types of ACP v1 this agent speaks: the requests it reads and the
//! notifications and requests it sends, named and shaped as in the protocol's
//! schema (https://agentclientprotocol.com/protocol/schema). Fields this
//! agent does not use are left out; unknown fields a client sends are ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this agent implements.
pub const PROTOCOL_VERSION: u16 = 1;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    pub protocol_version: u16,
    #[serde(default)]
    pub client_capabilities: Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: String,
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionModeRequest {
    pub session_id: String,
    pub mode_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    pub session_id: String,
    pub cwd: String,
    #[serde(default)]
    pub mcp_servers: Vec<McpServer>,
}

/// An MCP server the client wants the session to use. Only stdio servers
/// can be started here (`http` and `sse` ones carry a `type`; they are
/// reported and left out).
#[derive(Debug, Clone, Deserialize)]
pub struct McpServer {
    pub name: String,
    #[serde(default, rename = "type")]
    pub transport: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<EnvVariable>,
}

impl McpServer {
    /// The stdio server's program, arguments and environment; None for
    /// other transports.
    pub fn stdio(&self) -> Option<StdioServer> {
        if self.transport.as_deref().is_some_and(|t| t != "stdio") {
            return None;
        }
        Some(StdioServer {
            name: self.name.clone(),
            command: self.command.clone()?,
            args: self.args.clone(),
            env: self
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect(),
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct EnvVariable {
    pub name: String,
    pub value: String,
}

/// A stdio MCP server, as the session factory gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioServer {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    pub session_id: String,
}

/// A piece of a prompt or a message. Images and audio are not offered in
/// the prompt capabilities; a client that sends them anyway has them named.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ResourceLink {
        uri: String,
        name: String,
    },
    Resource {
        resource: EmbeddedResource,
    },
    #[serde(other)]
    Unsupported,
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How a prompt turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTurnRequests,
    Cancelled,
}

/// The body of a `session/update` notification.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    UserMessageChunk {
        content: ContentBlock,
    },
    AgentMessageChunk {
        content: ContentBlock,
    },
    AgentThoughtChunk {
        content: ContentBlock,
    },
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan, whole: the client replaces the one it shows.
    Plan {
        entries: Vec<PlanEntry>,
    },
    /// The commands the client offers after `/`.
    #[serde(rename_all = "camelCase")]
    AvailableCommandsUpdate {
        available_commands: Vec<AvailableCommand>,
    },
    /// The session's mode changed on the agent's side (an approved plan is
    /// carried out in the mode the user planned from).
    #[serde(rename_all = "camelCase")]
    CurrentModeUpdate {
        current_mode_id: String,
    },
}

/// A command of the `/` menu.
#[derive(Debug, Clone, Serialize)]
pub struct AvailableCommand {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<CommandInput>,
}

/// What a command takes, as the client hints it.
#[derive(Debug, Clone, Serialize)]
pub struct CommandInput {
    pub hint: String,
}

/// One item of a plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: PlanPriority,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

impl PlanEntry {
    /// The loop's plan item; the model gives no priorities, so all are medium.
    pub fn of(item: &agent_protocol::plan::Item) -> Self {
        use agent_protocol::plan::Status;
        Self {
            content: item.text.clone(),
            priority: PlanPriority::Medium,
            status: match item.status {
                Status::Pending => PlanStatus::Pending,
                Status::InProgress => PlanStatus::InProgress,
                Status::Done => PlanStatus::Completed,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Search,
    Execute,
    /// Leaves the current mode: the approval of a plan.
    SwitchMode,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

/// A tool call as it starts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolCallStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ToolCallContent>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<ToolCallLocation>,
    pub raw_input: Value,
}

/// What changed about a tool call; absent fields stay as they were.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    Content {
        content: ContentBlock,
    },
    #[serde(rename_all = "camelCase")]
    Diff {
        path: String,
        old_text: Option<String>,
        new_text: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCallLocation {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: PermissionOptionKind,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCallUpdate,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: PermissionOutcome,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    Cancelled,
    #[serde(rename_all = "camelCase")]
    Selected {
        option_id: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_carry_the_schema_names() {
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: "call-1".into(),
            status: Some(ToolCallStatus::Completed),
            content: Some(vec![ToolCallContent::Diff {
                path: "/w/a.py".into(),
                old_text: Some("a".into()),
                new_text: "b".into(),
            }]),
            ..ToolCallUpdate::default()
        });
        assert_eq!(
            serde_json::to_value(update).unwrap(),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed",
                   "content": [{"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"}]})
        );
        let plan = SessionUpdate::Plan {
            entries: vec![PlanEntry::of(&agent_protocol::plan::Item {
                text: "Fix it".into(),
                status: agent_protocol::plan::Status::Done,
            })],
        };
        assert_eq!(
            serde_json::to_value(&plan).unwrap(),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "Fix it", "priority": "medium", "status": "completed"}]})
        );
        let chunk = SessionUpdate::AgentThoughtChunk {
            content: ContentBlock::text("hm"),
        };
        assert_eq!(
            serde_json::to_value(chunk).unwrap(),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})
        );
    }

    #[test]
    fn stdio_servers_are_taken_and_others_are_not() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "t", "command": "py", "args": ["s.py"], "env": [{"name": "K", "value": "v"}]},
            {"type": "http", "name": "h", "url": "http://x", "headers": []}
        ]))
        .unwrap();
        let stdio = servers[0].stdio().unwrap();
        assert_eq!(
            (stdio.command.as_str(), stdio.env["K"].as_str()),
            ("py", "v")
        );
        assert!(servers[1].stdio().is_none());
    }

    #[test]
    fn permission_outcomes_parse() {
        let r: RequestPermissionResponse = serde_json::from_value(
            json!({"outcome": {"outcome": "selected", "optionId": "allow-once"}}),
        )
        .unwrap();
        assert!(
            matches!(r.outcome, PermissionOutcome::Selected { option_id } if option_id == "allow-once")
        );
        let r: RequestPermissionResponse =
            serde_json::from_value(json!({"outcome": {"outcome": "cancelled"}})).unwrap();
        assert!(matches!(r.outcome, PermissionOutcome::Cancelled));
    }
}
