//! `/api/v1/sessions`: list and read sessions, answer their gates, cancel
//! them. Answers go through the service's intake (the same approver,
//! quorum and self-approval rules as Slack and the CLI), as the caller's
//! token name, `via: api`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use crate::hub::answers::AnswerRequest;
use crate::hub::door::{Accepted, CancelOutcome, Door, DoorAnswer};
use crate::hub::links;
use crate::hub::view::SessionView;
use crate::hub::Hub;
use crate::model::token::Role;
use crate::model::{Decision, Session, Status, Summary};

/// Who may read a session ([`crate::hub::inbox::may_read`]).
pub(super) fn may_read(hub: &Hub, caller: &Caller, s: &Session) -> bool {
    crate::hub::inbox::may_read(hub, &caller.name, &caller.idp_groups, caller.role, s)
}

/// The session `id` (or a unique prefix), when the caller may read it.
pub(super) async fn readable(hub: &Hub, caller: &Caller, id: &str) -> Result<Session, ApiError> {
    let s = hub.store.get(id).await?;
    if may_read(hub, caller, &s) {
        Ok(s)
    } else {
        Err(ApiError::forbidden(format!(
            "`{}` may not read session {}: approver tokens read the sessions they may answer",
            caller.name, s.id
        )))
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `running`, `paused`, `completed`, `failed`, `rejected` or `cancelled`.
    pub status: Option<String>,
    /// Only runs of this workflow.
    pub workflow: Option<String>,
    /// At most this many (1–500, default 50).
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// A page of sessions, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SessionPage {
    #[schema(value_type = Vec<Object>)]
    pub sessions: Vec<Summary>,
    pub count: usize,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn parse_cursor(c: &str) -> Result<(DateTime<Utc>, String), ApiError> {
    crate::model::parse_cursor(c)
        .ok_or_else(|| ApiError::bad_request(format!("cursor `{c}` is not one this server gave")))
}

/// Sessions, newest first (an approver sees those it may read).
#[utoipa::path(get, path = "/sessions", tag = "sessions", params(ListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, body = SessionPage),
        (status = 400, body = ErrorBody, description = "a bad status, limit or cursor"),
        (status = 401, body = ErrorBody),
    ))]
pub async fn list(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<SessionPage>, ApiError> {
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(Status::parse(s).ok_or_else(|| {
            ApiError::bad_request(format!(
                "status `{s}` is not one of running, paused, completed, failed, rejected, cancelled"
            ))
        })?),
    };
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::bad_request("limit must be between 1 and 500"));
    }
    let mut after = q.cursor.as_deref().map(parse_cursor).transpose()?;
    let mut page = Vec::new();
    let mut more = false;
    // Pages of the store's index, newest first; filters drop rows, so read
    // on until the page is full (and one more row says there is more).
    const BATCH: usize = 256;
    'read: loop {
        // With a workflow, its own index: no reading past other workflows' runs.
        let batch = hub
            .store
            .page(status, q.workflow.as_deref(), after.clone(), BATCH)
            .await?;
        let last = batch.len() < BATCH;
        for s in batch {
            after = Some((s.created_at, s.id.clone()));
            if q.workflow.as_deref().is_some_and(|w| w != s.workflow) {
                continue;
            }
            if caller.role < Role::Operator {
                match hub.store.load(&s.id).await? {
                    Some(full) if may_read(&hub, &caller, &full) => {}
                    _ => continue,
                }
            }
            if page.len() == limit {
                more = true;
                break 'read;
            }
            page.push(s);
        }
        if last {
            break;
        }
    }
    let next_cursor = more.then(|| page.last().map(Summary::cursor)).flatten();
    Ok(Json(SessionPage {
        count: page.len(),
        sessions: page,
        next_cursor,
    }))
}

/// One session in full: the object `strands sessions show --json` prints.
#[utoipa::path(get, path = "/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "a session id, or a unique prefix of 4+ characters")),
    security(("bearer" = [])),
    responses(
        (status = 200, body = SessionView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
pub async fn show(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionView>, ApiError> {
    let s = readable(&hub, &caller, &id).await?;
    let notes = hub.store.notifications(&s.id).await?;
    let mut view = SessionView::of(&s, true, notes.last());
    view.queued = hub.queued(&s).await;
    Ok(Json(view))
}

/// What became of an answer.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AnswerOutcome {
    /// `recorded` (the run goes on), `counted` (one vote of a quorum, or one
    /// of several tool calls: the gate stays open) or `queued` (the run is
    /// busy with another branch; recorded as soon as it stops).
    pub status: String,
    pub session: SessionView,
    /// The store's last event number before this answer: follow the run
    /// with `GET /sessions/{id}/events?after=` this to see what it caused.
    pub before: u64,
}

/// Answers an open gate.
#[utoipa::path(post, path = "/sessions/{id}/answers", tag = "sessions",
    params(("id" = String, Path, description = "a session id")),
    request_body = AnswerRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, body = AnswerOutcome, description = "recorded"),
        (status = 403, body = ErrorBody, description = "not an approver of this gate, or self-approval"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "already decided (says by whom and when), not paused, or timed out"),
        (status = 422, body = ErrorBody, description = "the answer does not fit the gate"),
    ))]
pub async fn answer(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<AnswerRequest>,
) -> Result<Json<AnswerOutcome>, ApiError> {
    caller.require(Role::Approver)?;
    let answer = DoorAnswer::new(&id, &caller.name, Door::Api, req.decision()?)
        .at(req.gate.as_deref())
        .call(req.call.as_deref())
        .vars(req.vars.clone());
    take(&hub, answer).await
}

/// Hands an answer to the hub, the one way in.
pub(super) async fn take(hub: &Hub, answer: DoorAnswer) -> Result<Json<AnswerOutcome>, ApiError> {
    let before = hub.store.last_event().await?;
    let accepted = hub.take(answer).await??;
    let status = match &accepted {
        Accepted::Recorded(_) => "recorded",
        Accepted::Counted(_) => "counted",
        Accepted::Queued(_) => "queued",
        Accepted::Repeated(_) => "repeated",
    };
    Ok(Json(AnswerOutcome {
        status: status.into(),
        session: SessionView::of(accepted.session(), false, None),
        before,
    }))
}

#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// Why; recorded with the rejection.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Cancels a run. A running one (driven here, by another replica or by a
/// `strands` process on the same store) is asked to stop: it ends
/// `cancelled` at its next checkpoint, its model call in flight abandoned
/// (`status`: `cancel_requested`; asking again: `cancel_already_requested`;
/// already ended: `already_cancelled`). A paused one has its open gate
/// rejected, as `/strands cancel` does (the gate's approver rules apply;
/// `status` as for an answer). Operators.
#[utoipa::path(post, path = "/sessions/{id}/cancel", tag = "sessions",
    params(("id" = String, Path, description = "a session id")),
    request_body(content = Option<CancelRequest>, description = "optional reason"),
    security(("bearer" = [])),
    responses(
        (status = 200, body = AnswerOutcome),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "the run is completed, failed or rejected (`status` says which)"),
    ))]
pub async fn cancel(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<AnswerOutcome>), ApiError> {
    caller.require(Role::Operator)?;
    let body: CancelRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CancelRequest::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("the body is not a cancel request: {e}")))?
    };
    let reason = body.reason.filter(|r| !r.trim().is_empty());
    let before = hub.store.last_event().await?;
    let (status, s) = match hub
        .request_cancel(&id, &caller.name, Door::Api, reason.clone())
        .await?
    {
        CancelOutcome::Paused(s) => return reject_gate(&hub, &caller, &s, reason).await,
        CancelOutcome::Requested(s) => {
            // On a store only this process opens, nobody else can be
            // driving it: a drive here ends it (one already going stops
            // at its next checkpoint). Replicas take over unleased runs.
            if !hub.store.is_shared() {
                hub.drive(s.id.clone());
            }
            ("cancel_requested", s)
        }
        CancelOutcome::AlreadyRequested(s) => ("cancel_already_requested", s),
        CancelOutcome::AlreadyCancelled(s) => ("already_cancelled", s),
    };
    Ok((
        StatusCode::OK,
        Json(AnswerOutcome {
            status: status.into(),
            session: SessionView::of(&s, false, None),
            before,
        }),
    ))
}

/// A paused run's cancel: its first open gate rejected through the intake.
async fn reject_gate(
    hub: &Hub,
    caller: &Caller,
    s: &Session,
    reason: Option<String>,
) -> Result<(StatusCode, Json<AnswerOutcome>), ApiError> {
    let Some(gate) = s.first_gate().map(|g| g.handle()) else {
        return Err(ApiError::from(crate::model::Refusal::NotOpen(s.status)));
    };
    let reject = Decision::Reject {
        reason: Some(match reason {
            Some(r) => format!("cancelled by {}: {r}", caller.name),
            None => format!("cancelled by {}", caller.name),
        }),
    };
    let answer = DoorAnswer::new(&s.id, &caller.name, Door::Api, reject).at(Some(&gate));
    let outcome = take(hub, answer).await?;
    Ok((StatusCode::OK, outcome))
}

/// A one-tap link to make.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    /// Who the link signs in (a name approver lists use).
    #[serde(rename = "for")]
    pub person: String,
    /// The gate (its handle `id#n` or id); the first open gate when absent.
    #[serde(default)]
    pub gate: Option<String>,
    /// How long it works, 1–168 hours (default 24).
    #[serde(default)]
    pub hours: Option<u32>,
    /// `open` (default: the link opens the run's page), `approve` or
    /// `reject` (its button answers that way, and nothing else).
    #[serde(default)]
    pub decision: Option<String>,
}

/// A one-tap link: sign-in for one gate, single use.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct LinkMade {
    pub url: String,
    pub person: String,
    pub gate: String,
    pub expires_at: DateTime<Utc>,
    /// `open`, `approve` or `reject`.
    #[serde(default)]
    pub decision: Option<String>,
}

/// Makes a one-tap link to the web page of an open gate of a paused run,
/// for a person who may answer it (to send by e-mail or chat; `strands
/// links create`). Opening it decides nothing; it signs its holder in as
/// that person, for that gate only, once (with `decision`, its button
/// answers that way). Operators.
#[utoipa::path(post, path = "/sessions/{id}/links", tag = "sessions",
    params(("id" = String, Path, description = "a session id")),
    request_body = LinkRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, body = LinkMade),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "not paused, or no such open gate"),
        (status = 422, body = ErrorBody, description = "a bad name, duration or decision; a person who may not answer the gate"),
    ))]
pub async fn link(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<LinkRequest>,
) -> Result<Json<LinkMade>, ApiError> {
    caller.require(Role::Operator)?;
    if !crate::model::token::valid_name(&req.person) {
        return Err(ApiError::unprocessable(
            "bad_link",
            "`for` must be a name of letters, digits, `-`, `_`, `.`, `:` or `@`",
        ));
    }
    let hours = req.hours.unwrap_or(24);
    if !(1..=168).contains(&hours) {
        return Err(ApiError::unprocessable(
            "bad_link",
            "`hours` must be between 1 and 168",
        ));
    }
    let decision = req.decision.as_deref().unwrap_or("open");
    let intent =
        links::Intent::parse(decision).map_err(|e| ApiError::unprocessable("bad_link", e))?;
    let s = hub.store.get(&id).await?;
    let nobody = |_: &str| false;
    let asker = hub.asker(&req.person, &nobody);
    let gate = links::linkable(&s, req.gate.as_deref(), intent, &asker, &hub.people()).map_err(
        |r| match r {
            links::MintRefusal::MayNotAnswer { .. } => {
                ApiError::unprocessable("not_approver", r.to_string())
            }
            _ => ApiError::conflict("not_open", r.to_string()),
        },
    )?;
    let (token, grant) = links::mint_for(
        &hub.store,
        (&s.id, &s.workflow, &gate),
        &req.person,
        chrono::TimeDelta::hours(i64::from(hours)),
        intent,
        (&caller.name, "api"),
    )
    .await?;
    Ok(Json(LinkMade {
        url: crate::hub::pages::one_tap(&hub.public_url, &token),
        person: req.person,
        gate,
        expires_at: grant.expires_at(),
        decision: Some(decision.to_string()),
    }))
}
