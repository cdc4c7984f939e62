//! The HTTP side of the bot (axum). Routes:
//!
//! | route | what |
//! |---|---|
//! | `POST /slack/commands` | `/strands` slash commands |
//! | `POST /slack/interactions` | button clicks and modal submissions |
//! | `POST /slack/events` | Events API (`url_verification`, retries deduplicated) |
//! | `GET /healthz` | liveness |
//! | `GET /metrics` | Prometheus text |
//!
//! Every `/slack/*` request passes [`verify`] first: the body is read raw
//! (with a size limit), its signature checked (HMAC-SHA256, constant time,
//! 5-minute window) by slack-morphism's verifier, and a failure is a 401
//! before anything is parsed or touched. Handlers are thin: parse, look up,
//! hand off to [`super::app::App`].

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use slack_morphism::prelude::SlackSigningSecret;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;
use std::time::Instant;

use super::app::App;
use super::{commands, interactions};
use crate::session::Status;

/// The router, with the signature check layered once over the Slack routes.
pub fn router(app: App) -> Router {
    let slack = Router::new()
        .route("/slack/commands", post(commands_route))
        .route("/slack/interactions", post(interactions_route))
        .route("/slack/events", post(events_route))
        .route_layer(middleware::from_fn_with_state(app.clone(), verify));
    Router::new()
        .merge(slack)
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics_route))
        .with_state(app)
}

/// Reads the raw body (bounded), checks Slack's signature over it, and only
/// then lets the request through with the same bytes.
async fn verify(State(app): State<App>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, app.config.max_body_bytes).await {
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
        header(SlackEventSignatureVerifier::SLACK_SIGNED_HASH_HEADER),
        header(SlackEventSignatureVerifier::SLACK_SIGNED_TIMESTAMP),
    ) else {
        app.metrics.refused("unsigned");
        return (StatusCode::UNAUTHORIZED, "missing Slack signature").into_response();
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        app.metrics.refused("not_utf8");
        return (StatusCode::UNAUTHORIZED, "invalid body").into_response();
    };
    let verifier = SlackEventSignatureVerifier::new(&SlackSigningSecret::new(
        app.config.signing_secret.expose().to_string(),
    ));
    if let Err(e) = verifier.verify(&signature, text, &timestamp) {
        // The error names the failure kind, never the secret.
        tracing::warn!(path = %parts.uri.path(), "refused a Slack request: {}", refusal_kind(&e));
        app.metrics.refused(refusal_kind(&e));
        return (StatusCode::UNAUTHORIZED, "invalid Slack signature").into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn refusal_kind(
    e: &slack_morphism::signature_verifier::SlackEventSignatureVerifierError,
) -> &'static str {
    use slack_morphism::signature_verifier::SlackEventSignatureVerifierError as E;
    match e {
        E::WrongSignatureError(_) => "bad_signature",
        E::IncorrectOrExpiredTimestampError(_) => "stale_timestamp",
        _ => "signature_error",
    }
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
        match app.store.first_sighting(id) {
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

async fn metrics_route(State(app): State<App>) -> Response {
    let mut counts = Vec::new();
    if let Ok(list) = app.store.list(None) {
        for status in [
            Status::Running,
            Status::Paused,
            Status::Completed,
            Status::Failed,
            Status::Rejected,
        ] {
            counts.push((
                status.as_str(),
                list.iter().filter(|s| s.status == status).count() as i64,
            ));
        }
    }
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.render(&counts),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use slack_morphism::prelude::SlackSigningSecret;
    use slack_morphism::signature_verifier::{
        SlackEventSignatureVerifier, SlackEventSignatureVerifierError as E,
    };

    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: &str = "1531420618";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    /// Slack's published test vector. The verifier compares the signature
    /// first and the timestamp second, so on the vector (from 2018) a
    /// matching signature shows up as "expired", a wrong one as "wrong".
    #[test]
    fn slacks_published_test_vector() {
        let v = SlackEventSignatureVerifier::new(&SlackSigningSecret::new(SECRET.into()));
        assert!(matches!(
            v.verify(SIGNATURE, BODY, TS),
            Err(E::IncorrectOrExpiredTimestampError(_))
        ));
        let tampered = BODY.replace("roadrunner", "coyote");
        assert!(matches!(
            v.verify(SIGNATURE, &tampered, TS),
            Err(E::WrongSignatureError(_))
        ));
        let other =
            SlackEventSignatureVerifier::new(&SlackSigningSecret::new("another-secret".into()));
        assert!(matches!(
            other.verify(SIGNATURE, BODY, TS),
            Err(E::WrongSignatureError(_))
        ));
    }

    /// A fresh signature made the same way verifies; one 6 minutes old does not.
    #[test]
    fn replay_window_is_five_minutes() {
        use hmac::{KeyInit, Mac};
        let sign = |ts: &str| {
            let mut mac =
                hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
            mac.update(format!("v0:{ts}:{BODY}").as_bytes());
            let bytes = mac.finalize().into_bytes();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("v0={hex}")
        };
        let v = SlackEventSignatureVerifier::new(&SlackSigningSecret::new(SECRET.into()));
        let now = chrono::Utc::now().timestamp();
        let fresh = now.to_string();
        assert!(v.verify(&sign(&fresh), BODY, &fresh).is_ok());
        let stale = (now - 360).to_string();
        assert!(matches!(
            v.verify(&sign(&stale), BODY, &stale),
            Err(E::IncorrectOrExpiredTimestampError(_))
        ));
    }
}
