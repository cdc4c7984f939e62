//! `/api/v1/approvals`: approvals from any code ([`crate::hub::approvals`]).
//! `POST` makes a request (a session with one gate and no workflow) and
//! answers 201 with its id and links — or 200 with the request a repeated
//! idempotency `key` names; `GET /{id}` reads it and its decision. Both take
//! `?wait=N` (seconds, at most 60) to hold the answer until it is decided.
//! Answers go through `POST /sessions/{id}/answers`, like any gate's.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::IntoParams;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use super::sessions::readable;
use crate::hub::approvals::{self, ApprovalRequest, ApprovalView, Created};
use crate::hub::Hub;
use crate::model::token::Role;
use crate::model::Status;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Seconds to wait for a decision before answering (at most 60).
    pub wait: Option<u64>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `pending`, `approved`, `rejected`, `timed_out` or `failed`.
    pub status: Option<String>,
    /// `k=v,k2=v2`: requests carrying every one of these labels.
    pub labels: Option<String>,
    /// At most this many (1–200, default 50).
    pub limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalList {
    pub approvals: Vec<ApprovalView>,
    pub count: usize,
}

/// Approval requests the caller may read, newest first.
#[utoipa::path(get, path = "/approvals", tag = "approvals", params(ListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, body = ApprovalList),
        (status = 400, body = ErrorBody, description = "a bad status, labels or limit"),
    ))]
pub async fn list(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::bad_request("limit must be between 1 and 200"));
    }
    let labels = q
        .labels
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| ApiError::bad_request(format!("label `{p}` is not k=v")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let wanted = q.status.as_deref().filter(|s| !s.is_empty());
    let store_status = match wanted {
        None => None,
        Some("pending") => Some(Status::Paused),
        Some("approved") => Some(Status::Completed),
        Some("rejected" | "timed_out") => None,
        Some("failed") => Some(Status::Failed),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "status `{other}` is not one of pending, approved, rejected, timed_out, failed"
            )))
        }
    };
    let all = hub
        .list_approvals(&caller.name, caller.role, store_status, &labels, 500)
        .await?;
    let approvals: Vec<ApprovalView> = all
        .into_iter()
        .filter(|v| wanted.is_none_or(|w| v.status == w))
        .take(limit)
        .collect();
    Ok(Json(ApprovalList {
        count: approvals.len(),
        approvals,
    }))
}

/// Asks for a human approval.
#[utoipa::path(post, path = "/approvals", tag = "approvals",
    params(WaitQuery),
    request_body = ApprovalRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, body = ApprovalView, description = "asked; it waits at its gate"),
        (status = 200, body = ApprovalView, description = "the request this idempotency key already made"),
        (status = 403, body = ErrorBody, description = "needs an operator token"),
        (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "a field that does not fit (`error.field` names it); nothing was created"),
        (status = 429, body = ErrorBody),
    ))]
pub async fn create(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<WaitQuery>,
    ApiJson(req): ApiJson<ApprovalRequest>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<ApprovalView>,
    ),
    ApiError,
> {
    caller.require(Role::Operator)?;
    let (session, status) = match hub.request_approval(&req, &caller.name).await? {
        Ok(Created::New(s)) => (s, StatusCode::CREATED),
        Ok(Created::Existing(s)) => (s, StatusCode::OK),
        Err(e) => {
            return Err(ApiError::unprocessable("invalid_request", e.to_string())
                .with(json!({ "field": e.field })))
        }
    };
    let session = hub.wait_approval(&session.id, q.wait.unwrap_or(0)).await?;
    let mut view = ApprovalView::of(&session);
    view.created = status == StatusCode::CREATED;
    let location = format!("/api/v1/approvals/{}", view.id);
    Ok((status, [(header::LOCATION, location)], Json(view)))
}

/// An approval request and its decision.
#[utoipa::path(get, path = "/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "the request's id"), WaitQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, body = ApprovalView),
        (status = 403, body = ErrorBody, description = "not the requester nor an approver"),
        (status = 404, body = ErrorBody, description = "no such request"),
    ))]
pub async fn show(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> Result<Json<ApprovalView>, ApiError> {
    let s = readable(&hub, &caller, &id).await?;
    if !approvals::is_approval(&s) {
        return Err(ApiError::not_found(format!(
            "{} is a workflow's session, not an approval request",
            s.id
        )));
    }
    let s = hub.wait_approval(&s.id, q.wait.unwrap_or(0)).await?;
    Ok(Json(ApprovalView::of(&s)))
}
