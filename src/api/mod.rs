//! The HTTP API of `strands serve`, for code: start runs, read sessions,
//! answer gates, follow events. JSON in and out, `Authorization: Bearer
//! TOKEN` ([`auth`]), errors as `{"error": {"code", "message"}}`
//! ([`error`]), a body limit (413) and a per-token rate limit (429 with
//! `Retry-After`, tower_governor).
//!
//! | route | role | what |
//! |---|---|---|
//! | `POST /api/v1/runs` | operator | start a workflow by name ([`runs`]) |
//! | `POST /api/v1/approvals` | operator | ask for an approval, no workflow ([`approvals`]) |
//! | `GET /api/v1/approvals/{id}` | approver | a request and its decision (`?wait=`) |
//! | `GET /api/v1/approvals?status=&labels=k=v` | approver | the requests one may read |
//! | `GET /api/v1/sessions` | approver | sessions, paginated ([`sessions`]) |
//! | `GET /api/v1/sessions/{id}` | approver | one session, as `sessions show --json` |
//! | `POST /api/v1/sessions/{id}/answers` | approver | answer a gate (403/409/422) |
//! | `POST /api/v1/sessions/{id}/cancel` | operator | reject a paused run |
//! | `POST /api/v1/sessions/{id}/links` | operator | a one-tap link to a gate's web page |
//! | `GET /api/v1/sessions/{id}/events` | approver | one run's events (SSE) ([`events`]) |
//! | `GET /api/v1/events` | operator | every run's events (SSE) |
//! | `GET /api/v1/grants`, `DELETE /api/v1/grants/{id}` | approver | approvers' grants (trust within limits) ([`grants`]) |
//! | `GET /api/v1/audit` | admin | the audit trail, JSON lines ([`admin`]) |
//! | `POST/GET /api/v1/tokens`, `DELETE /api/v1/tokens/{name}` | admin | tokens |
//! | `GET /api/v1/webhooks/failed` | admin | webhook deliveries given up on ([`admin`]) |
//! | `POST /api/v1/webhooks/{id}/retry`, `POST /api/v1/webhooks/retry?failed=all` | admin | queue them again |
//! | `POST /api/v1/store/backup` | admin | a copy of the (sled) store, verified ([`admin`]) |
//! | `GET/POST /api/v1/people`, `GET/PATCH/DELETE /api/v1/people/{name}`, `POST /api/v1/people/import` | admin | the people directory ([`people`]) |
//! | `DELETE /api/v1/people/{name}/passkeys/{id}` | admin | removes a passkey ([`people::remove_passkey`]) |
//! | `GET /api/v1/people/delegations` | admin | every delegation not over ([`delegations`]) |
//! | `GET/POST/DELETE /api/v1/people/{name}/delegations` | that person or admin | who stands in for them, and when |
//! | `GET /api/v1/openapi.json` | — | this API as OpenAPI 3.1 |
//! | `POST /workflows/run`, `POST /workflows/resume`, `GET /workflows/{id}` | — | seed 000's routes ([`seed`]) |
//!
//! Handlers are thin: extract (authenticated caller, parsed body), check
//! the role, hand off to the [`Hub`], map the outcome. Approver rules live
//! in the engine's intake, not here.

pub mod admin;
pub mod approvals;
pub mod auth;
pub mod batch;
pub mod delegations;
pub mod error;
pub mod events;
pub mod grants;
pub mod hooks;
pub mod insights;
pub mod people;
pub mod runs;
pub mod seed;
pub mod sessions;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Extension};
use axum::http::{HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use axum::Router;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;
use tower_governor::{GovernorError, GovernorLayer};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::hub::Hub;
use error::ApiError;

/// The per-token rate limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Requests per second a token may make, on average.
    pub per_second: u64,
    /// How many it may make at once.
    pub burst: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_second: 20,
            burst: 40,
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "strands approval service",
        description = "Start agent workflows, read their sessions, answer their human gates and follow their events."
    ),
    modifiers(&BearerAuth),
    components(schemas(error::ErrorBody, error::ErrorDetail)),
    tags(
        (name = "runs", description = "start workflows"),
        (name = "approvals", description = "approvals from any code: one gate, no workflow"),
        (name = "sessions", description = "read and answer sessions"),
        (name = "events", description = "Server-Sent Events"),
        (name = "admin", description = "audit and tokens"),
        (name = "people", description = "delegations: who answers for a person while they are away"),
        (name = "seed", description = "seed 000's REST routes"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("a token from `strands tokens create`"))
                    .build(),
            ),
        );
    }
}

/// This API as an OpenAPI 3.1 document.
#[utoipa::path(get, path = "/openapi.json", tag = "admin",
    responses((status = 200, body = Object, description = "the OpenAPI document")))]
async fn openapi(Extension(doc): Extension<Arc<utoipa::openapi::OpenApi>>) -> Response {
    Json(doc.as_ref().clone()).into_response()
}

/// The routes and their OpenAPI document, generated from the handlers.
pub fn routes() -> (Router<Hub>, utoipa::openapi::OpenApi) {
    let v1 = OpenApiRouter::new()
        .routes(routes!(runs::start))
        .routes(routes!(approvals::create, approvals::list))
        .routes(routes!(approvals::show))
        .routes(routes!(hooks::claude_code))
        .routes(routes!(sessions::list))
        .routes(routes!(sessions::show))
        .routes(routes!(sessions::answer))
        .routes(routes!(batch::answer_many))
        .routes(routes!(sessions::cancel))
        .routes(routes!(sessions::link))
        .routes(routes!(events::session_events))
        .routes(routes!(events::all_events))
        .routes(routes!(grants::list))
        .routes(routes!(grants::revoke))
        .routes(routes!(admin::audit))
        .routes(routes!(insights::show))
        .routes(routes!(admin::create_token, admin::list_tokens))
        .routes(routes!(admin::revoke_token))
        .routes(routes!(admin::teams_conversations))
        .routes(routes!(admin::failed_notifications))
        .routes(routes!(admin::failed_webhooks))
        .routes(routes!(admin::retry_webhook))
        .routes(routes!(admin::retry_webhooks))
        .routes(routes!(admin::store_backup))
        .routes(routes!(people::list, people::add))
        .routes(routes!(people::show, people::edit, people::remove))
        .routes(routes!(people::import))
        .routes(routes!(people::remove_passkey))
        .routes(routes!(delegations::all))
        .routes(routes!(
            delegations::of,
            delegations::create,
            delegations::remove
        ))
        .routes(routes!(openapi));
    let seed = OpenApiRouter::new()
        .routes(routes!(seed::run))
        .routes(routes!(seed::resume))
        .routes(routes!(seed::status));
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest("/api/v1", v1)
        .merge(seed)
        .split_for_parts()
}

/// The rate-limit key: the token's public id, so each token has its own
/// budget (requests without one share a budget; they get 401 anyway).
#[derive(Clone)]
struct TokenKey;

impl KeyExtractor for TokenKey {
    type Key = String;
    fn extract<T>(&self, req: &Request<T>) -> Result<String, GovernorError> {
        let presented = req
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' ').map(|(_, t)| t.trim()))
            .and_then(crate::model::token::split)
            .map(|(id, _)| id.to_string());
        Ok(presented.unwrap_or_default())
    }
}

fn rate_limited(e: GovernorError) -> Response {
    match e {
        GovernorError::TooManyRequests { wait_time, .. } => {
            let wait = wait_time.max(1);
            let mut r = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many requests with this token; retry in {wait} s"),
            )
            .into_response();
            r.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, HeaderValue::from(wait));
            r
        }
        other => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            other.to_string(),
        )
        .into_response(),
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route; GET /api/v1/openapi.json lists them")
}

/// The per-token rate limit, one budget per token across every router it
/// wraps ([`limited`]): the API's and the MCP server's.
#[derive(Clone)]
pub struct RateLimit(Option<Arc<dyn Fn(Router) -> Router + Send + Sync>>);

impl RateLimit {
    pub fn new(limits: &Limits) -> RateLimit {
        let mut governor = GovernorConfigBuilder::default().key_extractor(TokenKey);
        governor
            .period(std::time::Duration::from_nanos(
                1_000_000_000 / limits.per_second.max(1),
            ))
            .burst_size(limits.burst.max(1));
        RateLimit(governor.finish().map(|config| {
            // One limiter, shared by every router the layer wraps.
            let config = Arc::new(config);
            let wrap = move |r: Router| {
                r.layer(GovernorLayer::new(config.clone()).error_handler(rate_limited))
            };
            Arc::new(wrap) as Arc<dyn Fn(Router) -> Router + Send + Sync>
        }))
    }
}

/// `router` with the per-token rate limit (429 with `Retry-After`).
pub fn limited(router: Router, limit: &RateLimit) -> Router {
    match &limit.0 {
        Some(wrap) => wrap(router),
        None => router,
    }
}

/// The API's router, on `hub`.
pub fn router(hub: Hub, limit: &RateLimit) -> Router {
    let (routes, doc) = routes();
    let api = routes
        .route_layer(Extension(Arc::new(doc)))
        .layer(DefaultBodyLimit::max(hub.max_body_bytes))
        .with_state(hub);
    limited(api, limit).route("/api/v1/{*rest}", axum::routing::any(not_found))
}
