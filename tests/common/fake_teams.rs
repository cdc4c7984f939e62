//! A fake Bot Framework on 127.0.0.1, for the Teams protocol tests: the
//! OpenID metadata and keys that inbound tokens are checked against, the
//! token endpoint outbound calls authenticate with, and the Connector REST
//! routes they post to. Test-only keys come from `tests/fixtures/teams/`.
//!
//! Routes (`P` is [`FakeTeams::port`]):
//! - `GET /v1/.well-known/openidconfiguration` → `{issuer, jwks_uri, …}`
//!   (503 while set down)
//! - `GET /v1/.well-known/keys` → the key set (rotatable; fetches counted)
//! - `POST /{tenant}/oauth2/v2.0/token` → checks the form and the client
//!   secret, answers `{token_type, expires_in, access_token: "fake-N"}`
//! - `POST /v3/conversations` → `{id: "a:conv-N"}`
//! - `POST /v3/conversations/{c}/activities[/{a}]` → `{id: "act-N"}`
//! - `PUT /v3/conversations/{c}/activities/{a}` → `{id: a}`
//!
//! The Connector routes require `Authorization: Bearer fake-N` for a token
//! the fake issued and has not revoked, record every request, and answer
//! queued faults first.
//!
//! What it does not fake: Teams itself (no activities are posted to the
//! bot), message sizes, or conversation state.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// The app the fake knows.
pub const APP_ID: &str = "app-id-1";
pub const APP_PASSWORD: &str = "app-secret-1";

/// The fixture directory.
pub fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/teams")
}

/// A fixture file's text.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).expect("a Teams fixture")
}

/// The fixture key set's keys.
pub fn fixture_keys() -> Vec<Value> {
    let jwks: Value = serde_json::from_str(&fixture("jwks.json")).expect("jwks.json is JSON");
    jwks["keys"].as_array().expect("keys").clone()
}

/// A fault the next Connector request gets instead of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 429, with `Retry-After: n` when given.
    TooMany(Option<u64>),
    /// Any other status (412, 502, 504, …).
    Status(u16),
}

/// One request that reached a Connector route.
#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub bearer: Option<String>,
    pub body: Value,
    pub at: Instant,
    /// The status the fake answered.
    pub status: u16,
}

#[derive(Default)]
struct Inner {
    port: u16,
    keys: Mutex<Vec<Value>>,
    jwks_fetches: AtomicUsize,
    metadata_fetches: AtomicUsize,
    metadata_down: AtomicBool,
    token_calls: AtomicUsize,
    expires_in: AtomicI64,
    issued: Mutex<Vec<String>>,
    faults: Mutex<VecDeque<Fault>>,
    hits: Mutex<Vec<Hit>>,
    ids: AtomicUsize,
    /// Cards a test got elsewhere (invoke responses), to validate too.
    noted: Mutex<Vec<(String, Value)>>,
}

/// The running fake; cheap to clone.
#[derive(Clone)]
pub struct FakeTeams {
    inner: Arc<Inner>,
}

impl FakeTeams {
    /// Starts a fake publishing the fixture keys, issuing hour-long tokens.
    pub fn start() -> FakeTeams {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("an address").port();
        let inner = Arc::new(Inner {
            port,
            keys: Mutex::new(fixture_keys()),
            expires_in: AtomicI64::new(3600),
            ..Inner::default()
        });
        let app = Router::new()
            .route("/v1/.well-known/openidconfiguration", get(metadata))
            .route("/v1/.well-known/keys", get(keys))
            .route("/{tenant}/oauth2/v2.0/token", post(token))
            .route("/v3/conversations", post(connector))
            .route("/v3/conversations/{c}/activities", post(connector))
            .route(
                "/v3/conversations/{c}/activities/{a}",
                post(connector).put(connector),
            )
            .with_state(inner.clone());
        super::serve_on(listener, app);
        FakeTeams { inner }
    }

    pub fn port(&self) -> u16 {
        self.inner.port
    }

    /// The `serviceUrl` activities from this fake carry.
    pub fn service_url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.inner.port)
    }

    /// The `TEAMS_*` settings pointing at this fake, plus `extra`.
    pub fn env(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let p = self.inner.port;
        let mut env = vec![
            ("TEAMS_APP_ID".to_string(), APP_ID.to_string()),
            ("TEAMS_APP_PASSWORD".into(), APP_PASSWORD.into()),
            (
                "TEAMS_OPENID_METADATA_URL".into(),
                format!("http://127.0.0.1:{p}/v1/.well-known/openidconfiguration"),
            ),
            (
                "TEAMS_TOKEN_URL".into(),
                format!("http://127.0.0.1:{p}/botframework.com/oauth2/v2.0/token"),
            ),
            ("TEAMS_ALLOW_HTTP_LOOPBACK".into(), "1".into()),
            ("TEAMS_RETRY_BASE_MS".into(), "10".into()),
        ];
        for (k, v) in extra {
            env.retain(|(key, _)| key != k);
            env.push((k.to_string(), v.to_string()));
        }
        env
    }

    /// Publishes `key` too (rotation).
    pub fn add_key(&self, key: Value) {
        self.inner.keys.lock().expect("lock").push(key);
    }

    /// Stops publishing the key `kid`.
    pub fn remove_key(&self, kid: &str) {
        self.inner
            .keys
            .lock()
            .expect("lock")
            .retain(|k| k["kid"] != kid);
    }

    /// How often the key set was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.inner.jwks_fetches.load(Ordering::SeqCst)
    }

    /// How often the metadata was fetched.
    pub fn metadata_fetches(&self) -> usize {
        self.inner.metadata_fetches.load(Ordering::SeqCst)
    }

    /// Answers the metadata with 503 while `down`.
    pub fn set_metadata_down(&self, down: bool) {
        self.inner.metadata_down.store(down, Ordering::SeqCst);
    }

    /// Revokes every token issued so far: the Connector answers 401 to
    /// them, as to a token it does not know.
    pub fn revoke_tokens(&self) {
        self.inner.issued.lock().expect("lock").clear();
    }

    /// How many tokens were asked for (refused requests included).
    pub fn token_calls(&self) -> usize {
        self.inner.token_calls.load(Ordering::SeqCst)
    }

    /// The `expires_in` of tokens issued from now on.
    pub fn set_expires_in(&self, secs: i64) {
        self.inner.expires_in.store(secs, Ordering::SeqCst);
    }

    /// Queues `faults`, answered to the next Connector requests in order.
    pub fn fail_next(&self, faults: &[Fault]) {
        self.inner
            .faults
            .lock()
            .expect("lock")
            .extend(faults.iter().copied());
    }

    /// Every request that reached a Connector route, in order.
    pub fn hits(&self) -> Vec<Hit> {
        self.inner.hits.lock().expect("lock").clone()
    }

    /// Keeps `card` (or an invoke response carrying one) to be validated
    /// with the cards the fake received.
    pub fn note_card(&self, label: &str, card: &Value) {
        self.inner
            .noted
            .lock()
            .expect("lock")
            .push((label.to_string(), card.clone()));
    }

    /// Every card sent or updated through the Connector (as the activity
    /// that carried it) and every card noted, labelled.
    pub fn cards(&self) -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = self
            .hits()
            .into_iter()
            .filter(|h| h.body.get("attachments").is_some())
            .map(|h| (format!("{} {}", h.method, h.path), h.body))
            .collect();
        out.extend(self.inner.noted.lock().expect("lock").iter().cloned());
        out
    }

    /// Every card of [`FakeTeams::cards`] passes Microsoft's Adaptive
    /// Cards parser ([`super::card_schema`]).
    #[track_caller]
    pub fn assert_cards_valid(&self) {
        super::card_schema::assert_valid(&self.cards());
    }
}

async fn metadata(State(s): State<Arc<Inner>>) -> Response {
    s.metadata_fetches.fetch_add(1, Ordering::SeqCst);
    if s.metadata_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    Json(json!({
        "issuer": "https://api.botframework.com",
        "jwks_uri": format!("http://127.0.0.1:{}/v1/.well-known/keys", s.port),
        "id_token_signing_alg_values_supported": ["RS256"],
    }))
    .into_response()
}

async fn keys(State(s): State<Arc<Inner>>) -> Json<Value> {
    s.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys = s.keys.lock().expect("lock").clone();
    Json(json!({ "keys": keys }))
}

async fn token(
    State(s): State<Arc<Inner>>,
    Form(form): Form<std::collections::HashMap<String, String>>,
) -> Response {
    let n = s.token_calls.fetch_add(1, Ordering::SeqCst) + 1;
    let field = |k: &str| form.get(k).map(String::as_str);
    if field("grant_type") != Some("client_credentials")
        || field("scope") != Some("https://api.botframework.com/.default")
    {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_request"})),
        )
            .into_response();
    }
    if field("client_id") != Some(APP_ID) || field("client_secret") != Some(APP_PASSWORD) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let access_token = format!("fake-{n}");
    s.issued.lock().expect("lock").push(access_token.clone());
    Json(json!({
        "token_type": "Bearer",
        "expires_in": s.expires_in.load(Ordering::SeqCst),
        "ext_expires_in": s.expires_in.load(Ordering::SeqCst),
        "access_token": access_token,
    }))
    .into_response()
}

async fn connector(
    State(s): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let record = |status: u16| {
        s.hits.lock().expect("lock").push(Hit {
            method: method.to_string(),
            path: uri.path().to_string(),
            bearer: bearer.clone(),
            body: body.clone(),
            at: Instant::now(),
            status,
        });
    };
    let known = bearer
        .as_ref()
        .is_some_and(|b| s.issued.lock().expect("lock").contains(b));
    if !known {
        record(401);
        return (StatusCode::UNAUTHORIZED, "bad bearer").into_response();
    }
    let fault = s.faults.lock().expect("lock").pop_front();
    match fault {
        Some(Fault::TooMany(after)) => {
            record(429);
            let mut response = (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
            if let Some(secs) = after {
                response.headers_mut().insert(
                    "retry-after",
                    secs.to_string().parse().expect("a header value"),
                );
            }
            return response;
        }
        Some(Fault::Status(code)) => {
            record(code);
            let status = StatusCode::from_u16(code).expect("a status");
            return (status, "fault").into_response();
        }
        None => {}
    }
    record(200);
    let n = s.ids.fetch_add(1, Ordering::SeqCst) + 1;
    let id = if uri.path() == "/v3/conversations" {
        format!("a:conv-{n}")
    } else if method == Method::PUT {
        uri.path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    } else {
        format!("act-{n}")
    };
    Json(json!({ "id": id })).into_response()
}
