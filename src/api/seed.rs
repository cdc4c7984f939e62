//! The REST routes of seed 000 ("REST API Endpoints"), as written there,
//! on top of v1: `POST /workflows/run` and `POST /workflows/resume` answer
//! when the run stops — paused at a gate (with its interrupt), or finished
//! (with its result) — and `GET /workflows/{session_id}` reads one. Same
//! tokens, roles and intake as v1. A run that has not stopped within
//! [`WAIT`] is answered `running`; follow it with v1's events.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use crate::hub::Hub;
use crate::model::token::Role;
use crate::model::{Decision, Session, Status};

/// How long a seed route waits for the run to stop.
pub const WAIT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct WorkflowStartRequest {
    /// A spec's file name inside `STRANDS_WORKFLOWS` (`research.yaml` or
    /// `research`), never a path.
    pub spec_path: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub variables: Map<String, Value>,
    /// Accepted for compatibility; gates always pause here.
    #[serde(default = "yes")]
    pub enable_hitl: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct InterruptResponseRequest {
    pub session_id: String,
    /// `approve`, `reject`, `modify` or `defer`.
    pub action: String,
    #[serde(default)]
    pub feedback: Option<String>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub variable_overrides: Map<String, Value>,
}

/// The seed's `interrupt_metadata` of a paused session.
fn interrupt(s: &Session) -> Value {
    match s.first_gate() {
        Some(g) => json!({
            "interrupt_id": g.handle(),
            "interrupt_type": g.kind,
            "interrupt_name": g.id,
            "prompt": g.prompt,
            "created_at": g.opened_at,
            "timeout_at": g.timeout_at,
            "fallback_action": g.fallback,
        }),
        None => Value::Null,
    }
}

/// What the seed's run and resume answer.
fn outcome(s: &Session) -> Value {
    match s.status {
        Status::Paused => json!({
            "status": "paused", "session_id": s.id, "interrupt": interrupt(s),
        }),
        Status::Completed => json!({
            "status": "completed", "session_id": s.id, "result": s.output,
        }),
        Status::Running => json!({ "status": "running", "session_id": s.id }),
        status => json!({
            "status": status, "session_id": s.id,
            "error": s.failure.as_ref().map(|f| f.message.clone()),
        }),
    }
}

/// The session once it stops moving (or as it is after [`WAIT`]).
async fn stopped(hub: &Hub, id: &str) -> Result<Session, ApiError> {
    let mut seen = hub.store.subscribe_events();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        seen.borrow_and_update();
        let s = hub.store.get(id).await?;
        if s.status != Status::Running || tokio::time::Instant::now() >= deadline {
            return Ok(s);
        }
        let _ = tokio::time::timeout(crate::hub::follow::POLL, seen.changed()).await;
    }
}

/// Seed 000: start a workflow and answer when it pauses or finishes.
#[utoipa::path(post, path = "/workflows/run", tag = "seed", request_body = WorkflowStartRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, body = Object, description = "`{status: paused, session_id, interrupt}` or `{status: completed, result}`"),
        (status = 404, body = ErrorBody, description = "no such workflow"),
        (status = 422, body = ErrorBody),
    ))]
pub async fn run(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<WorkflowStartRequest>,
) -> Result<Json<Value>, ApiError> {
    let started = super::runs::start_as(&hub, &caller, &req.spec_path, &req.variables).await?;
    Ok(Json(outcome(&stopped(&hub, &started.session_id).await?)))
}

/// Seed 000: answer a paused workflow and answer when it stops again.
#[utoipa::path(post, path = "/workflows/resume", tag = "seed", request_body = InterruptResponseRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, body = Object, description = "as `/workflows/run`"),
        (status = 400, body = ErrorBody, description = "the session is not paused"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "session not found"),
        (status = 409, body = ErrorBody, description = "already decided"),
    ))]
pub async fn resume(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<InterruptResponseRequest>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Approver)?;
    let s = hub
        .store
        .load(&req.session_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Session not found"))?;
    if s.status != Status::Paused {
        return Err(ApiError::bad_request(format!(
            "Session not paused (it is {})",
            s.status
        )));
    }
    let decision = match req.action.as_str() {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject {
            reason: req.feedback.clone(),
        },
        "modify" => Decision::Modify {
            feedback: req
                .feedback
                .clone()
                .filter(|f| !f.trim().is_empty())
                .ok_or_else(|| {
                    ApiError::unprocessable("bad_answer", "`modify` needs `feedback`")
                })?,
        },
        "defer" => Decision::Defer,
        other => {
            return Err(ApiError::unprocessable(
                "bad_answer",
                format!("action `{other}` is not one of approve, reject, modify, defer"),
            ))
        }
    };
    let vars = req
        .variable_overrides
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => Value::String(s.clone()),
                other => Value::String(other.to_string()),
            };
            (k.clone(), v)
        })
        .collect();
    let gate = s.first_gate().map(|g| g.handle());
    let answer = crate::hub::door::DoorAnswer::new(
        &s.id,
        &caller.name,
        crate::hub::door::Door::Api,
        decision,
    )
    .at(gate.as_deref())
    .vars(vars);
    let _recorded = super::sessions::take(&hub, answer).await?;
    Ok(Json(outcome(&stopped(&hub, &s.id).await?)))
}

/// Seed 000: a workflow's status and, while paused, its interrupt.
#[utoipa::path(get, path = "/workflows/{session_id}", tag = "seed",
    params(("session_id" = String, Path, description = "a session id")),
    security(("bearer" = [])),
    responses((status = 200, body = Object), (status = 404, body = ErrorBody)))]
pub async fn status(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let s = match hub.store.load(&session_id).await? {
        Some(s) if super::sessions::may_read(&hub, &caller, &s) => s,
        Some(_) => return Err(ApiError::forbidden("this token may not read that session")),
        None => return Err(ApiError::not_found("Session not found")),
    };
    Ok((
        StatusCode::OK,
        Json(json!({
            "session_id": s.id,
            "status": s.status,
            "workflow_name": s.workflow,
            "pattern_type": s.pattern,
            "interrupt": if s.status == Status::Paused { interrupt(&s) } else { Value::Null },
            "result": s.output,
        })),
    ))
}
