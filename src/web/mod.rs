//! The web inbox: approve from any browser, no Slack needed. Served by
//! `strands serve` at `/` beside the API, HTML rendered on the server from
//! minijinja templates (overridable, `STRANDS_WEB_TEMPLATES`), one small
//! script for live updates; every asset is in the binary.
//!
//! | route | who | what |
//! |---|---|---|
//! | `GET /login`, `POST /login`, `POST /logout` | — | sign in with an API token ([`auth`]) |
//! | `GET /auth/oidc/login`, `GET /auth/oidc/callback` | — | sign in through the identity provider, when set ([`oidc`]) |
//! | `GET /` | signed in | what waits for you, and recent runs ([`inbox`]) |
//! | `GET /inbox/list` | signed in | the inbox's list alone (live refresh) |
//! | `GET /inbox/events` | signed in | "something changed" pings (SSE) |
//! | `POST /inbox/approve` | signed in | bulk approve of routine gates |
//! | `POST /inbox/reject` | signed in | bulk reject of routine gates, one reason for all |
//! | `POST /inbox/delegate`, `POST /inbox/undelegate` | a person of the directory | who answers for them while away ([`delegate`]) |
//! | `GET /sessions/{id}` | may read it | the run's timeline and the gate's actions ([`session`]) |
//! | `POST /sessions/{id}/answer` | may answer | one answer, through the hub's intake |
//! | `GET /l/{token}`, `POST /l/{token}` | link holder | one-tap link: shows, then signs in on a press — and answers, for a mail's Approve and Reject links ([`links`]) |
//! | `GET /passkeys`, `POST /passkeys/…` | a person of the directory | their passkeys ([`passkeys`]) |
//! | `POST /sessions/{id}/step-up`, `…/step-up/finish` | may answer | approve a `step_up: passkey` gate with a passkey |
//! | `GET /insights` | signed in | time to decision and open gates by age: your own, or everyone's for operators and admins ([`insights`]) |
//! | `GET /grants`, `POST /grants/revoke` | signed in | approvers' grants (trust within limits), revoked with a button ([`grants`]) |
//! | `GET /audit`, `GET /audit/export` | admin | the chain's state, filters, JSONL/CSV ([`audit`]) |
//! | `GET /assets/{file}` | — | the stylesheet and the script |
//!
//! Handlers parse, authorize and hand off to the [`Hub`] — the same
//! intake, approver rules and audit as Slack, the CLI and the API. The web
//! is not a room: it asks nobody; it reads the store and writes answers.

pub mod audit;
pub mod auth;
pub mod delegate;
pub mod grants;
pub mod inbox;
pub mod insights;
pub mod links;
pub mod oidc;
pub mod passkeys;
pub mod render;
pub mod session;

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::hub::problem::Problem;
use crate::hub::Hub;

/// The web inbox's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// How others reach this server (links), no trailing slash.
    pub public_url: String,
    /// A directory whose `*.html` files replace the built-in templates.
    pub templates: Option<PathBuf>,
    /// How long a sign-in lasts.
    pub login_hours: u32,
    /// Sign-in through the identity provider, when `STRANDS_OIDC_ISSUER`
    /// is set.
    pub oidc: Option<oidc::Settings>,
}

/// What every handler of the web inbox shares. Cheap to clone.
#[derive(Clone)]
pub struct Web(Arc<Inner>);

pub struct Inner {
    pub hub: Hub,
    pub config: Config,
    pub pages: render::Pages,
    /// The WebAuthn relying party for passkeys, or why passkeys are off
    /// (`STRANDS_PUBLIC_URL` must name a domain).
    pub webauthn: std::result::Result<webauthn_rs::Webauthn, String>,
    /// The identity provider, discovered at start ([`oidc`]).
    pub oidc: Option<Arc<oidc::Provider>>,
}

impl std::ops::Deref for Web {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Web {
    /// The inbox on `hub`, signing in through `oidc` too when given; a
    /// template that does not compile is an error naming it.
    pub fn new(hub: Hub, config: Config, oidc: Option<oidc::Provider>) -> crate::Result<Web> {
        let pages = render::Pages::load(config.templates.as_deref())?;
        let webauthn = passkeys::relying_party(&config.public_url);
        if let Err(why) = &webauthn {
            tracing::info!("passkeys and step-up are off: {why}");
        }
        Ok(Web(Arc::new(Inner {
            hub,
            config,
            pages,
            webauthn,
            oidc: oidc.map(Arc::new),
        })))
    }

    /// What the login page's identity provider link says, when sign-in
    /// through one is on.
    pub fn oidc_name(&self) -> Option<String> {
        self.oidc.as_ref().map(|p| p.name())
    }

    /// Whether cookies must be `Secure`: served over HTTPS, or behind a
    /// proxy that says the browser used HTTPS.
    pub fn secure(&self, headers: &axum::http::HeaderMap) -> bool {
        self.config.public_url.starts_with("https://")
            || headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
    }
}

/// A refused web request: sign in first, or a page saying what is wrong
/// (its status mapped once, by the hub's [`Problem`], as the API's is).
/// Nothing changed.
#[derive(Debug)]
pub enum WebError {
    /// Not signed in (or the sign-in ended): to the login page, then back.
    SignIn {
        next: String,
    },
    Page(Problem),
}

impl From<Problem> for WebError {
    fn from(e: Problem) -> WebError {
        WebError::Page(e)
    }
}

impl From<crate::Error> for WebError {
    fn from(e: crate::Error) -> WebError {
        WebError::Page(Problem::from(e))
    }
}

impl From<crate::model::Refusal> for WebError {
    fn from(r: crate::model::Refusal) -> WebError {
        WebError::Page(Problem::from(r))
    }
}

impl WebError {
    pub fn forbidden(m: impl Into<String>) -> WebError {
        WebError::Page(Problem::forbidden(m))
    }
    pub fn bad_request(m: impl Into<String>) -> WebError {
        WebError::Page(Problem::bad_request(m))
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::SignIn { next } => {
                let to = format!(
                    "/login?next={}",
                    url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
                );
                Redirect::to(&to).into_response()
            }
            WebError::Page(e) => {
                let body = render::error_page(e.status, &e.message);
                (
                    e.status,
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    body,
                )
                    .into_response()
            }
        }
    }
}

/// An HTML page.
pub fn html(body: String) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

const STYLE: &str = include_str!("assets/inbox.css");
const SCRIPT: &str = include_str!("assets/inbox.js");

async fn asset(axum::extract::Path(file): axum::extract::Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "inbox.css" => (STYLE, "text/css; charset=utf-8"),
        "inbox.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// Headers every page carries: no framing (clickjacking), no sniffing,
/// scripts and styles from this server only.
async fn security_headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    let set = |h: &mut axum::http::HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, axum::http::HeaderValue::from_static(v));
    };
    set(
        h,
        "content-security-policy",
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    );
    set(h, "x-frame-options", "DENY");
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "same-origin");
    res
}

/// The web inbox's router.
pub fn router(web: Web) -> Router {
    let limit = web.hub.max_body_bytes;
    Router::new()
        .route("/", get(inbox::page))
        .route("/inbox/list", get(inbox::list))
        .route("/inbox/events", get(inbox::events))
        .route("/inbox/approve", post(inbox::bulk_approve))
        .route("/inbox/reject", post(inbox::bulk_reject))
        .route("/inbox/delegate", post(delegate::set))
        .route("/inbox/undelegate", post(delegate::unset))
        .route("/login", get(auth::login_page).post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/auth/oidc/login", get(oidc::login))
        .route("/auth/oidc/callback", get(oidc::callback))
        .route("/sessions/{id}", get(session::page))
        .route("/sessions/{id}/answer", post(session::answer))
        .route("/sessions/{id}/step-up", post(passkeys::step_up))
        .route(
            "/sessions/{id}/step-up/finish",
            post(passkeys::step_up_finish),
        )
        .route("/passkeys", get(passkeys::page))
        .route("/passkeys/register", post(passkeys::register))
        .route("/passkeys/register/finish", post(passkeys::register_finish))
        .route("/passkeys/remove", post(passkeys::remove))
        .route("/grants", get(grants::page))
        .route("/grants/revoke", post(grants::revoke))
        .route("/l/{token}", get(links::landing).post(links::redeem))
        .route("/insights", get(insights::page))
        .route("/audit", get(audit::page))
        .route("/audit/export", get(audit::export))
        .route("/assets/{file}", get(asset))
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(security_headers))
        .with_state(web)
}
