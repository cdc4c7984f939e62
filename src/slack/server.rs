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
//! is not UTF-8 is a 400. Handlers are thin: parse, look up,
//! hand off to [`super::app::App`].

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use secrecy::ExposeSecret;
use serde_json::json;
use std::time::Instant;

use super::app::App;
use super::{commands, interactions, signature};

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
    let now = chrono::Utc::now().timestamp();
    let secret = app.config.signing_secret.expose_secret().as_bytes();
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

async fn commands_route(State(app): State<App>, body: Bytes) -> Response {
    match serde_urlencoded::from_bytes::<slack_morphism::prelude::SlackCommandEvent>(&body) {
        Ok(cmd) => Json(commands::handle(&app, cmd).await).into_response(),
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
    let response = interactions::handle(&app, &form.payload).await;
    app.metrics.click_acked(started.elapsed().as_secs_f64());
    response
}

async fn events_route(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    let event: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return (StatusCode::BAD_REQUEST, "expected JSON").into_response(),
    };
    if event.get("type").and_then(|t| t.as_str()) == Some("url_verification") {
        let challenge = event.get("challenge").cloned().unwrap_or_default();
        return Json(json!({ "challenge": challenge })).into_response();
    }
    let retry = headers.get("x-slack-retry-num").is_some();
    if let Some(id) = event.get("event_id").and_then(|v| v.as_str()) {
        match app.hub.store.first_sighting(id).await {
            Ok(true) => {}
            Ok(false) => {
                // Already handled: acknowledge, and ask Slack to stop retrying.
                return (StatusCode::OK, [("x-slack-no-retry", "1")], "").into_response();
            }
            Err(e) => {
                tracing::error!("event dedup failed: {e}");
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
        }
    }
    if retry {
        tracing::info!("accepted a retried event the first time it was seen");
    }
    StatusCode::OK.into_response()
}
