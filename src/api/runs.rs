//! `POST /api/v1/runs`: start a workflow by name. The run continues in the
//! background; the answer is its session id, at once.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ErrorBody};
use crate::hub::Hub;
use crate::model::token::Role;

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// A spec in `STRANDS_WORKFLOWS`, by name (its file stem): never a path.
    pub workflow: String,
    /// The workflow's inputs; strings as they are, other values as JSON text.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub vars: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct RunStarted {
    pub session_id: String,
    pub workflow: String,
    /// `running`: it is driven in the background now; `queued`: it waits
    /// for one of the runs driven at once (`STRANDS_DRIVES`) to stop, oldest
    /// first, and is driven then.
    pub status: String,
    /// `/api/v1/sessions/{id}`.
    pub session_url: String,
    /// `/api/v1/sessions/{id}/events`: follow it.
    pub events_url: String,
}

/// Workflow inputs as the spec reads them (`KEY=VALUE` strings).
pub(super) fn vars_of(vars: &Map<String, Value>) -> Result<Vec<(String, String)>, ApiError> {
    vars.iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Null => {
                    return Err(ApiError::unprocessable(
                        "bad_inputs",
                        format!("input `{k}` is null; leave it out to take its default"),
                    ))
                }
                other => other.to_string(),
            };
            Ok((k.clone(), text))
        })
        .collect()
}

/// Starts `workflow` as the caller; it runs on in the background.
pub(super) async fn start_as(
    hub: &Hub,
    caller: &Caller,
    workflow: &str,
    vars: &Map<String, Value>,
) -> Result<RunStarted, ApiError> {
    caller.require(Role::Operator)?;
    let vars = vars_of(vars)?;
    let session = hub.start(workflow, &vars, &caller.name, None).await??;
    let status = if hub.queued(&session).await {
        "queued"
    } else {
        "running"
    };
    Ok(RunStarted {
        session_url: format!("/api/v1/sessions/{}", session.id),
        events_url: format!("/api/v1/sessions/{}/events", session.id),
        session_id: session.id,
        workflow: session.workflow,
        status: status.into(),
    })
}

/// Starts a workflow by name.
#[utoipa::path(post, path = "/runs", tag = "runs", request_body = RunRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, body = RunStarted, description = "started; it runs on in the background"),
        (status = 403, body = ErrorBody, description = "needs an operator token"),
        (status = 404, body = ErrorBody, description = "no workflow of that name"),
        (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "invalid spec or inputs"),
        (status = 429, body = ErrorBody),
    ))]
pub async fn start(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<RunRequest>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<RunStarted>,
    ),
    ApiError,
> {
    let started = start_as(&hub, &caller, &req.workflow, &req.vars).await?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, started.session_url.clone())],
        Json(started),
    ))
}
