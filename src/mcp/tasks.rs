//! `request_approval` as an MCP task (the Tasks extension, SEP-2663), for
//! clients that declare it: the call answers at once with a task whose id
//! is the request's, and the host polls `tasks/get` — it may leave and come
//! back, even after a restart, since the task is the durable request.
//!
//! While people decide, the task is `input_required`, and what it requires
//! is a person's decision at the request's page: one URL-mode elicitation
//! pointing there (the host may show it; strands learns the decision by
//! itself, so `tasks/update` changes nothing). Decided (or failed), it is
//! `completed` with the tool's result: the request's view.
//! `tasks/cancel` stops the host's waiting, not the people: the request
//! stays open and answerable, as with a cancelled `tools/call`.

use rmcp::model::{
    DetailedTask, ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, Task,
    TaskPayload, TaskStatus,
};
use serde_json::{json, Value};

use crate::hub::approvals::ApprovalView;

/// How often a host is asked to poll, in milliseconds.
pub const POLL_MS: u64 = 2000;

/// The task of request `view`; `page`: where a person decides it.
pub fn of(view: &ApprovalView, page: &str) -> DetailedTask {
    let created = view.created_at.to_rfc3339();
    let updated = view.decided_at.unwrap_or(view.created_at).to_rfc3339();
    let task = Task::new(view.id.clone(), TaskStatus::Working, created, updated)
        .with_poll_interval_ms(POLL_MS);
    if !view.finished() {
        let message = format!("Waiting for a person to decide `{}` at {page}", view.title);
        let ask = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: message.clone(),
            url: page.to_string(),
            elicitation_id: view.id.clone(),
        });
        let mut requests = InputRequests::new();
        requests.insert("decision".to_string(), InputRequest::Elicitation(ask));
        return DetailedTask::new(
            task.with_status_message(message),
            TaskPayload::InputRequired {
                input_requests: requests,
            },
        );
    }
    let text = json!(view).to_string();
    let result = json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": view,
        "isError": false,
    });
    let result = match result {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    DetailedTask::new(
        task.with_status_message(format!("{} ({})", view.title, view.status)),
        TaskPayload::Completed { result },
    )
}
