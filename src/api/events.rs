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

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
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

/// A comment line sent when nothing else was for this long, so proxies
/// and clients keep an idle stream open.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// `events` as a `text/event-stream` response: each event's frame made once
/// for every stream ([`Published::sse_frame`]), a keep-alive comment when
/// idle; it ends when `events` does.
fn sse(events: impl Stream<Item = std::sync::Arc<Published>> + Send + 'static) -> Response {
    let frames = Box::pin(events.map(|e| e.sse_frame()));
    let body = futures_util::stream::unfold(frames, |mut frames| async move {
        let next = match tokio::time::timeout(KEEP_ALIVE, frames.next()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok::<_, Infallible>(next), frames))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
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
) -> Result<Response, ApiError> {
    let s = super::sessions::readable(&hub, &caller, &id).await?;
    let after = last_event_id(&headers)?.or(q.after).unwrap_or(0);
    Ok(sse(follow_session(hub, s.id, after)))
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
) -> Result<Response, ApiError> {
    caller.require(Role::Operator)?;
    let after = match last_event_id(&headers)?.or(q.after) {
        Some(n) => n,
        None => hub.store.last_event().await?,
    };
    Ok(sse(follow_all(hub, after)))
}
