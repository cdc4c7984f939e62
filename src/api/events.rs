//! Live events as Server-Sent Events: `GET /sessions/{id}/events` (one
//! run; it replays the run's events from the start, then follows, and ends
//! after the run's last event) and `GET /events` (every run, from now).
//! Each event's SSE `id` is its number in the store's one sequence, so a
//! client reconnecting with `Last-Event-ID` (or `?after=N`) misses nothing
//! and sees nothing twice. A CI job blocks on a decision with
//! `curl -N` instead of polling.
//!
//! Streams end when the service begins to shut down (`Hub::stopping`), so
//! a follower never holds a graceful shutdown up.
//!
//! Following is the hub's ([`crate::hub::follow`]); this module only
//! words it as SSE.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{Stream, StreamExt};
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use crate::hub::follow::{follow_all, follow_session, Published};
use crate::hub::Hub;
use crate::model::token::Role;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FollowQuery {
    /// Start after this event number (as `Last-Event-ID` does).
    pub after: Option<u64>,
}

fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    match headers.get("last-event-id") {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be an event number")),
    }
}

/// An event as SSE; its JSON made once for every stream (`Published`).
fn to_sse(e: &Published) -> SseEvent {
    SseEvent::default()
        .id(e.seq.to_string())
        .event(e.what.name())
        .data(e.json())
}

/// One run's events: replayed from its start (or after `Last-Event-ID`),
/// then followed; the stream ends after `run.completed`, `run.failed` or
/// `run.rejected`.
#[utoipa::path(get, path = "/sessions/{id}/events", tag = "events",
    params(("id" = String, Path, description = "a session id"), FollowQuery,
        ("Last-Event-ID" = Option<u64>, Header, description = "resume after this event")),
    security(("bearer" = [])),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
            description = "events: `id` is the event number, `event` its type (step.done, gate.opened, gate.answered, gate.timed_out, run.completed, run.failed, run.rejected), `data` the event as JSON"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
pub async fn session_events(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<FollowQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let s = super::sessions::readable(&hub, &caller, &id).await?;
    let after = last_event_id(&headers)?.or(q.after).unwrap_or(0);
    let events = follow_session(hub, s.id, after).map(|e| Ok::<_, Infallible>(to_sse(&e)));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// Every run's events from now (or after `Last-Event-ID`), followed until
/// the client goes. Operators and admins.
#[utoipa::path(get, path = "/events", tag = "events",
    params(FollowQuery,
        ("Last-Event-ID" = Option<u64>, Header, description = "resume after this event")),
    security(("bearer" = [])),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
            description = "events, as for one session"),
        (status = 403, body = ErrorBody),
    ))]
pub async fn all_events(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<FollowQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    caller.require(Role::Operator)?;
    let after = match last_event_id(&headers)?.or(q.after) {
        Some(n) => n,
        None => hub.store.last_event().await?,
    };
    let events = follow_all(hub, after).map(|e| Ok::<_, Infallible>(to_sse(&e)));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
