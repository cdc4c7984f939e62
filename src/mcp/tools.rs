//! The MCP server's tools as hosts list them: names, descriptions and
//! input schemas (written out, so a host's model reads plain JSON Schema
//! with no references). What each does is [`super::server`]'s.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

pub const REQUEST_APPROVAL: &str = "request_approval";
pub const GET_APPROVAL: &str = "get_approval";
pub const LIST_MY_REQUESTS: &str = "list_my_requests";
pub const APPROVE_TOOL_CALL: &str = "approve_tool_call";

fn object(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// Every tool, in the order hosts show them.
pub fn all() -> Vec<Tool> {
    let request = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "What is asked, one line (\"Deploy v1.2 to prod?\")."},
            "body": {"type": "string", "description": "More context, markdown."},
            "details": {"type": "object", "additionalProperties": {"type": "string"},
                "description": "Facts shown as fields; a policy's rules judge them."},
            "action": {"type": "object", "properties": {
                    "tool": {"type": "string"}, "arguments": {"type": "object"}},
                "required": ["tool"],
                "description": "What will be done once approved; shown and bound by its digest."},
            "editable": {"type": "boolean", "description": "With an action: an approver may edit its arguments (returned as `arguments`)."},
            "approvers": strings(),
            "policy": {"type": "string", "description": "A named policy of the service file instead of approvers and quorum."},
            "quorum": {"type": "integer", "minimum": 1},
            "require_reason": {"type": "boolean"},
            "timeout_minutes": {"type": "integer", "minimum": 1},
            "on_timeout": {"type": "string", "enum": ["reject", "approve"]},
            "reminder_minutes": {"type": "number"},
            "escalation_minutes": {"type": "number"},
            "escalate_to": strings(),
            "notify": {"type": "array", "items": {"type": "string"},
                "description": "slack:#channel, teams:<conversation id>, dm or email."},
            "key": {"type": "string", "description": "Idempotency key: the same key asks once."},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "form": {"type": "object", "description": "A flat JSON Schema of values approving fills in."},
            "trust": {"type": "boolean"}
        },
        "required": ["title"],
        "additionalProperties": false
    });
    let readonly = ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            REQUEST_APPROVAL,
            "Ask people for an approval and wait for their decision (Slack, Teams, e-mail, the web inbox, under the installation's policies). Returns the decision, who decided, the reason and any edited arguments. Progress is reported while it waits; a cancelled call leaves the request open.",
            object(request),
        ),
        Tool::new(
            GET_APPROVAL,
            "Read an approval request and its decision, waiting up to wait_seconds (at most 60) for one.",
            object(json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "wait_seconds": {"type": "integer", "minimum": 0, "maximum": 60}
                },
                "required": ["id"],
                "additionalProperties": false
            })),
        )
        .annotate(readonly.clone()),
        Tool::new(
            LIST_MY_REQUESTS,
            "List the approval requests this token made, newest first.",
            object(json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["pending", "approved", "rejected", "timed_out", "failed", "cancelled"]},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200}
                },
                "additionalProperties": false
            })),
        )
        .annotate(readonly),
        Tool::new(
            APPROVE_TOOL_CALL,
            "Claude Code's permission prompt tool (--permission-prompt-tool mcp__strands__approve_tool_call): the call is judged by the installation's agent_hosts policy and, unless it passes, decided by people. Returns one text block: {\"behavior\":\"allow\"[,\"updatedInput\":…]} or {\"behavior\":\"deny\",\"message\":…}.",
            object(json!({
                "type": "object",
                "properties": {
                    "tool_name": {"type": "string"},
                    "input": {"type": "object"},
                    "tool_use_id": {"type": "string"}
                },
                "required": ["tool_name", "input"]
            })),
        ),
    ]
}
