//! `todo`: the model's plan for a task of several steps, written whole each
//! time (simpler for a small model than editing items by number) and kept
//! by the loop as session state. It touches nothing; the front ends show it.
//! At most one item is in progress; a refused list changes nothing and says
//! what to send. Only coding tasks get the tool (`Access::Plan`); the loop's
//! side (reporting, resume, `/rewind`) is `agent_core`'s.

use serde_json::{json, Value};

use super::args::Args;
use super::{Access, Tool, ToolContext, ToolOutput, ToolSpec};

/// The tool's name, for the loop and the front ends.
pub const NAME: &str = agent_protocol::plan::TOOL;

/// Most items in a plan: more is no longer a plan a small model follows.
pub const MAX_ITEMS: usize = 20;

/// Most characters of one item.
pub const MAX_TEXT: usize = 200;

const EXAMPLE: &str = r#"{"items": [{"text": "Read the parser", "status": "done"}, {"text": "Fix the off-by-one", "status": "in_progress"}, {"text": "Run the tests", "status": "pending"}]}"#;

pub use agent_protocol::plan::{all_done, done, render, Item, Status};

/// Reads a `todo` call's arguments into a plan; Err is the observation that
/// says what to send instead.
pub fn parse(args: &Value) -> Result<Vec<Item>, ToolOutput> {
    let a = Args::new(args, NAME, EXAMPLE)?;
    let items = match args.get("items") {
        Some(Value::Array(items)) => items,
        // A model that sends the list as a JSON string in a string.
        Some(Value::String(s)) if s.trim_start().starts_with('[') => {
            return match serde_json::from_str::<Value>(s) {
                Ok(list) => parse(&json!({ "items": list })),
                Err(_) => {
                    Err(a.error("`items` must be a JSON array of {\"text\", \"status\"} objects"))
                }
            };
        }
        None | Some(Value::Null) => {
            return Err(a.error("missing required argument `items` (the whole list, every time)"))
        }
        Some(_) => {
            return Err(a.error("`items` must be an array of {\"text\", \"status\"} objects"))
        }
    };
    if items.len() > MAX_ITEMS {
        return Err(a.error(format_args!(
            "{} items is too many; keep the plan to {MAX_ITEMS} items at most by merging small steps",
            items.len()
        )));
    }
    let mut plan = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        plan.push(parse_item(&a, i + 1, item)?);
    }
    let active: Vec<String> = plan
        .iter()
        .enumerate()
        .filter(|(_, item)| item.status == Status::InProgress)
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if active.len() > 1 {
        return Err(a.error(format_args!(
            "items {} are all in_progress; only one item may be in_progress at a time: \
mark the finished ones done and the others pending",
            active.join(", ")
        )));
    }
    Ok(plan)
}

/// Item `n` (counted from 1): an object with `text` and `status`, or a bare
/// string (a pending item).
fn parse_item(a: &Args<'_>, n: usize, item: &Value) -> Result<Item, ToolOutput> {
    let (text, status) = match item {
        Value::String(text) => (text.as_str(), Status::Pending),
        Value::Object(map) => {
            let text = match map.get("text").or_else(|| map.get("content")) {
                Some(Value::String(t)) => t.as_str(),
                _ => return Err(a.error(format_args!("item {n} has no `text` string"))),
            };
            let status = match map.get("status") {
                None | Some(Value::Null) => Status::Pending,
                Some(Value::String(s)) => Status::parse(s).ok_or_else(|| {
                    a.error(format_args!(
                        "item {n} has status `{}`; use pending, in_progress or done",
                        agent_base::term::escape_line(s)
                    ))
                })?,
                Some(_) => {
                    return Err(a.error(format_args!(
                        "item {n}'s `status` must be pending, in_progress or done"
                    )))
                }
            };
            (text, status)
        }
        _ => {
            return Err(a.error(format_args!(
                "item {n} must be an object {{\"text\": ..., \"status\": ...}}"
            )))
        }
    };
    // One line per item: the front ends show a line each.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(a.error(format_args!("item {n} has an empty `text`")));
    }
    if text.chars().count() > MAX_TEXT {
        return Err(a.error(format_args!(
            "item {n} is longer than {MAX_TEXT} characters; keep each item to one short line"
        )));
    }
    Ok(Item { text, status })
}

/// `todo`: writes the session's plan.
pub struct Todo;

impl Tool for Todo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME,
            description: "Keep a plan for a task of several steps: send the whole list each time, \
with each item's status (pending, in_progress, done); at most one item in_progress. \
Update it as you finish steps. Not needed for a one-step change.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string"},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                            },
                            "required": ["text", "status"]
                        }
                    }
                },
                "required": ["items"]
            }),
            access: Access::Plan,
        }
    }

    fn run(&self, args: &Value, _ctx: &mut ToolContext<'_>) -> ToolOutput {
        match parse(args) {
            Ok(plan) => ToolOutput {
                content: render(&plan),
                plan: Some(plan),
                ..ToolOutput::ok("")
            },
            Err(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    fn error(args: Value) -> String {
        let e = parse(&args).unwrap_err();
        assert_eq!(e.error, Some(ErrorClass::InvalidArgs));
        e.content
    }

    #[test]
    fn a_plan_is_read_leniently_and_rendered_one_line_per_item() {
        let plan = parse(&json!({"items": [
            {"text": "Read  the\nparser", "status": "completed"},
            {"text": "Fix it", "status": "in-progress"},
            "Run the tests",
            {"content": "Commit", "status": null},
        ]}))
        .unwrap();
        let statuses: Vec<Status> = plan.iter().map(|i| i.status).collect();
        use Status::*;
        assert_eq!(statuses, [Done, InProgress, Pending, Pending]);
        assert_eq!(plan[0].text, "Read the parser");
        assert_eq!(
            render(&plan),
            "Plan (1/4 done):\n✓ Read the parser\n▸ Fix it\n· Run the tests\n· Commit"
        );
        assert!(!all_done(&plan) && !all_done(&[]));
        // The list sent as a string holding JSON.
        let again = parse(&json!({"items": serde_json::to_string(&plan).unwrap()})).unwrap();
        assert_eq!(again, plan);
        assert_eq!(parse(&json!({"items": []})).unwrap(), []);
        assert_eq!(render(&[]), "Plan cleared.");
    }

    #[test]
    fn every_mistake_says_what_to_send() {
        assert!(error(json!({})).contains("missing required argument `items`"));
        assert!(error(json!({"items": 3})).contains("must be an array"));
        let two = error(json!({"items": [
            {"text": "a", "status": "in_progress"}, {"text": "b", "status": "done"},
            {"text": "c", "status": "in_progress"}]}));
        assert!(two.contains("items 1, 3 are all in_progress"), "{two}");
        assert!(two.contains("Send e.g. {\"items\""), "{two}");
        let bad = error(json!({"items": [{"text": "a", "status": "maybe"}]}));
        assert!(bad.contains("item 1 has status `maybe`; use pending, in_progress or done"));
        assert!(error(json!({"items": [{"status": "done"}]})).contains("item 1 has no `text`"));
        assert!(error(json!({"items": [{"text": "  ", "status": "done"}]})).contains("empty"));
        assert!(error(json!({"items": [1]})).contains("item 1 must be an object"));
        let long = "x".repeat(MAX_TEXT + 1);
        assert!(error(json!({"items": [long]})).contains("one short line"));
        let many: Vec<String> = (0..=MAX_ITEMS).map(|i| i.to_string()).collect();
        assert!(error(json!({ "items": many })).contains("too many"));
    }
}
