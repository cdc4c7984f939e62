//! The HTTP side of the Slack room (axum), mounted by `strands serve` when
//! Slack is configured. Routes:
//!
//! | route | what |
//! |---|---|
//! | `POST /slack/commands` | `/strands` slash commands |
//! | `POST /slack/interactions` | button clicks and modal submissions |
//! | `POST /slack/events` | Events API (`url_verification`, retries deduplicated) |
//!
//! Every `/slack/*` request passes `verify` first: the body is read raw
//! (with a size limit), its signature checked over those bytes
//! ([`signature`]: HMAC-SHA256, constant time, 5-minute window), and a
//! failure is a 401 before anything is parsed or touched; a signed body that
//! is not UTF-8 is a 400. Handlers are thin: they unwrap the body and call
//! [`super::dispatch`], the same functions Socket Mode envelopes reach
//! ([`super::socket`]). The routes are mounted only when a signing secret
//! is set: without one nothing could be verified.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use secrecy::ExposeSecret;
use std::time::Instant;

use super::app::App;
use super::dispatch;
use super::reply::Reply;
use super::signature;

/// The Slack routes, with the signature check layered once over them.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/slack/commands", post(commands_route))
        .route("/slack/interactions", post(interactions_route))
        .route("/slack/events", post(events_route))
        .route_layer(middleware::from_fn_with_state(app.clone(), verify))
        .with_state(app)
}

/// Reads the raw body (bounded), checks Slack's signature over it, and only
/// then lets the request through with the same bytes.
async fn verify(State(app): State<App>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, app.hub.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            app.metrics.refused("body_too_large");
            return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
        }
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (Some(signature), Some(timestamp)) = (
        header(signature::SIGNATURE_HEADER),
        header(signature::TIMESTAMP_HEADER),
    ) else {
        app.metrics.refused("unsigned");
        return (StatusCode::UNAUTHORIZED, "missing Slack signature").into_response();
    };
    let now = app.hub.clock.now().timestamp();
    let Some(secret) = app.config.signing_secret.as_ref() else {
        app.metrics.refused("no_signing_secret");
        return (StatusCode::UNAUTHORIZED, "no signing secret is configured").into_response();
    };
    let secret = secret.expose_secret().as_bytes();
    if let Err(refused) = signature::verify(secret, &signature, &timestamp, &bytes, now) {
        // The reason names the failure kind, never the secret.
        tracing::warn!(path = %parts.uri.path(), "refused a Slack request: {}", refused.kind());
        app.metrics.refused(refused.kind());
        return (StatusCode::UNAUTHORIZED, "invalid Slack signature").into_response();
    }
    // Signed by Slack, and still not text: a bad request, not a forgery.
    if std::str::from_utf8(&bytes).is_err() {
        app.metrics.refused("not_utf8");
        return (StatusCode::BAD_REQUEST, "the request body is not UTF-8").into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Ack => StatusCode::OK.into_response(),
            Reply::Body(body) => Json(body).into_response(),
            // Already handled: acknowledge, and ask Slack to stop retrying.
            Reply::Duplicate => (StatusCode::OK, [("x-slack-no-retry", "1")], "").into_response(),
            Reply::Unreadable(why) => (StatusCode::BAD_REQUEST, why).into_response(),
            Reply::Failed => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
}

async fn commands_route(State(app): State<App>, body: Bytes) -> Response {
    match serde_urlencoded::from_bytes::<slack_morphism::prelude::SlackCommandEvent>(&body) {
        Ok(cmd) => dispatch::command(&app, cmd).await.into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("not a slash command: {e}")).into_response(),
    }
}

#[derive(serde::Deserialize)]
struct InteractionForm {
    payload: String,
}

async fn interactions_route(State(app): State<App>, body: Bytes) -> Response {
    let started = Instant::now();
    let form: InteractionForm = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(_) => {
            return (StatusCode::BAD_REQUEST, "expected a `payload` form field").into_response()
        }
    };
    let response = dispatch::interaction(&app, &form.payload)
        .await
        .into_response();
    app.metrics.click_acked(started.elapsed().as_secs_f64());
    response
}

async fn events_route(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let event: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return (StatusCode::BAD_REQUEST, "expected JSON").into_response(),
    };
    let retried = headers.get("x-slack-retry-num").is_some();
    dispatch::event(&app, event, retried).await.into_response()
}
