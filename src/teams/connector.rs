//! Posting to Teams: the bot's access token and the Connector REST calls.
//!
//! [`TokenClient`] gets a token by client credentials from the token URL
//! and keeps it until five minutes before it expires; concurrent callers
//! wait for one fetch rather than each making their own. [`Connector`]
//! sends an activity, replies in a thread, updates an activity in place,
//! and opens a 1:1 conversation, each on the `serviceUrl` Teams gave us.
//! Calls to one conversation are paced (see [`super::pace`]) so that
//! Teams' per-conversation limits are never exceeded; every attempt, a
//! retry too, waits for its slot.
//!
//! A `serviceUrl` arrives inside activities, so it is checked before any
//! request (the token included) is made: HTTPS to an allowed host, or,
//! when the tests turn it on, plain HTTP to loopback. Redirects are not
//! followed. Rate limits and flaky gateways (429, 412, 502, 504) and
//! failures to connect are retried with exponential backoff and jitter, a
//! `Retry-After` taking the place of one wait, at most `max_attempts`
//! attempts in all. A 401 from the Connector drops the cached token and
//! the call is made once more with a fresh one; a second 401 is reported.
//! Anything else fails at once, with a hint for the statuses whose cause
//! is known (401, 403, 404, 413).
//!
//! What this does not do: build activities or cards (the caller hands in
//! JSON), keep conversation references, or pace the per-tenant limit.

use std::time::Duration;

use backon::Retryable as _;
use chrono::{DateTime, TimeDelta, Utc};
use reqwest::{Method, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use super::pace::Pacer;
use super::{Clock, TeamsSettings};
use crate::retry::{Retry, RetryPolicy, Transient};

/// The scope of a token for the Bot Connector.
pub const SCOPE: &str = "https://api.botframework.com/.default";
/// A token is fetched again this long before it expires.
pub const REFRESH_BEFORE: TimeDelta = TimeDelta::minutes(5);
/// The longest wait between two attempts, computed or asked for.
const MAX_WAIT: Duration = Duration::from_secs(20);
/// The longest body excerpt quoted in an error.
const EXCERPT_CHARS: usize = 300;

/// Why a call to Teams failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// The service URL is not one we call; nothing was sent.
    #[error("service URL {url:?} refused: {why}")]
    ServiceUrlRefused { url: String, why: &'static str },
    /// The server answered with a status that is not 2xx.
    #[error("{what}: HTTP {status}{hint} after {attempts} attempt(s): {body}")]
    Status {
        what: String,
        status: u16,
        attempts: u32,
        body: String,
        /// What the status likely means here (empty, or ` (…)`).
        hint: &'static str,
    },
    /// No answer.
    #[error("{what}: {error}")]
    Transport { what: String, error: String },
    /// A 2xx answer without what we needed from it.
    #[error("{what}: {why}")]
    BadAnswer { what: String, why: String },
    #[error("could not set up the HTTP client: {0}")]
    Client(String),
}

/// What a status from the Connector is known to mean, for the error's
/// reader.
fn connector_hint(status: u16) -> &'static str {
    match status {
        401 => " (the bot's token was refused, a fresh one too: check TEAMS_APP_ID, TEAMS_APP_PASSWORD and TEAMS_TENANT_ID against the Azure Bot)",
        403 => " (the bot may not post here: removed from the conversation, or the app not installed for the user)",
        404 => " (no such conversation or activity: ConversationNotFound, or the bot was removed, or a wrong activity ID)",
        413 => " (the activity is too large for Teams: at most about 100 KB, cards under 28 KB)",
        _ => "",
    }
}

/// What a status from the token endpoint is known to mean.
fn token_hint(status: u16) -> &'static str {
    match status {
        400 | 401 => " (check TEAMS_APP_ID, TEAMS_APP_PASSWORD and TEAMS_TENANT_ID against the app registration)",
        _ => "",
    }
}

/// What one attempt hit.
enum Failure {
    Status {
        status: StatusCode,
        retry: Retry,
        body: String,
    },
    Transport {
        error: reqwest::Error,
    },
}

impl Transient for Failure {
    fn retry(&self) -> Retry {
        match self {
            Failure::Status { retry, .. } => *retry,
            // Only a request that never left is safe to send again: a
            // timed-out POST may have posted.
            Failure::Transport { error } if error.is_connect() => Retry::Backoff,
            Failure::Transport { .. } => Retry::Never,
        }
    }
}

/// How a status that is not 2xx is retried.
fn retry_for(status: StatusCode, headers: &reqwest::header::HeaderMap) -> Retry {
    match status.as_u16() {
        429 => crate::retry::retry_after(headers).map_or(Retry::Backoff, Retry::After),
        412 | 502 | 504 => Retry::Backoff,
        _ => Retry::Never,
    }
}

/// How often and how patiently calls are retried.
#[derive(Debug, Clone, Copy)]
struct Patience {
    policy: RetryPolicy,
}

impl Patience {
    fn new(settings: &TeamsSettings) -> Patience {
        Patience {
            policy: RetryPolicy {
                max_retries: settings.max_attempts.saturating_sub(1),
                base_delay: settings.retry_base,
                max_delay: MAX_WAIT,
                max_server_delay: MAX_WAIT,
            },
        }
    }

    /// Sends what `build` builds until it answers 2xx, fails in a way
    /// retrying cannot fix, or the attempts are spent; the answer's JSON
    /// body (`Null` when empty). `what` names the call in errors, `hint`
    /// says what a status means. With `pace`, each attempt first waits for
    /// a slot in that conversation.
    async fn run(
        &self,
        what: &str,
        hint: fn(u16) -> &'static str,
        pace: Option<(&Pacer, &str)>,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Value, ConnectorError> {
        let attempts = std::sync::atomic::AtomicU32::new(0);
        let attempt = || async {
            if let Some((pacer, conversation)) = pace {
                let waited = pacer.wait(conversation).await;
                if !waited.is_zero() {
                    let waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
                    tracing::debug!(what, waited_ms, "teams: paced");
                }
            }
            attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let response = build()
                .send()
                .await
                .map_err(|error| Failure::Transport { error })?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry = retry_for(status, response.headers());
            let body = response.text().await.unwrap_or_default();
            Err(Failure::Status {
                status,
                retry,
                body: excerpt(&body),
            })
        };
        let policy = self.policy;
        let result = attempt
            .retry(policy.backoff().with_jitter())
            .when(|e: &Failure| e.retry() != Retry::Never)
            .adjust(|e: &Failure, backoff| policy.wait(e.retry(), backoff))
            .notify(|e: &Failure, wait| {
                let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                match e {
                    Failure::Status { status, .. } => {
                        tracing::warn!(what, status = status.as_u16(), wait_ms, "teams: retrying")
                    }
                    Failure::Transport { .. } => {
                        tracing::warn!(what, wait_ms, "teams: retrying after a connect failure")
                    }
                }
            })
            .await;
        let response = result.map_err(|e| match e {
            Failure::Status { status, body, .. } => ConnectorError::Status {
                what: what.to_string(),
                status: status.as_u16(),
                attempts: attempts.load(std::sync::atomic::Ordering::Relaxed),
                body,
                hint: hint(status.as_u16()),
            },
            Failure::Transport { error } => ConnectorError::Transport {
                what: what.to_string(),
                error: crate::error::transport(error),
            },
        })?;
        let text = response
            .text()
            .await
            .map_err(|e| ConnectorError::Transport {
                what: what.to_string(),
                error: crate::error::transport(e),
            })?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|_| ConnectorError::BadAnswer {
            what: what.to_string(),
            why: format!("the answer is not JSON: {}", excerpt(&text)),
        })
    }
}

/// At most [`EXCERPT_CHARS`] characters of `body`, whitespace collapsed.
fn excerpt(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= EXCERPT_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(EXCERPT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// A token and when to fetch the next one.
struct Cached {
    access_token: SecretString,
    refresh_at: DateTime<Utc>,
}

/// The bot's Bot Connector token, by client credentials.
pub struct TokenClient {
    http: reqwest::Client,
    token_url: String,
    app_id: String,
    app_password: SecretString,
    clock: Clock,
    patience: Patience,
    cached: Mutex<Option<Cached>>,
}

impl TokenClient {
    /// A token client for `settings`, reading the time from `clock`.
    pub fn new(settings: &TeamsSettings, clock: Clock) -> Result<TokenClient, ConnectorError> {
        Ok(TokenClient {
            http: super::http_client()
                .map_err(|e| ConnectorError::Client(crate::error::transport(e)))?,
            token_url: settings.token_url.clone(),
            app_id: settings.app_id.clone(),
            app_password: settings.app_password.clone(),
            clock,
            patience: Patience::new(settings),
            cached: Mutex::new(None),
        })
    }

    /// A token valid for at least five more minutes: the cached one, or a
    /// new one. The lock is held across the fetch, so callers arriving
    /// meanwhile get the same token.
    pub async fn token(&self) -> Result<SecretString, ConnectorError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            if self.clock.now() < c.refresh_at {
                return Ok(c.access_token.clone());
            }
        }
        let what = format!("POST {}", self.token_url);
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.app_id.as_str()),
            ("client_secret", self.app_password.expose_secret()),
            ("scope", SCOPE),
        ];
        let body = serde_urlencoded::to_string(form).map_err(|e| ConnectorError::BadAnswer {
            what: what.clone(),
            why: e.to_string(),
        })?;
        let answer = self
            .patience
            .run(&what, token_hint, None, || {
                self.http
                    .post(&self.token_url)
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(body.clone())
            })
            .await?;
        let bad = |why: &str| ConnectorError::BadAnswer {
            what: what.clone(),
            why: why.to_string(),
        };
        let access_token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| bad("the answer has no access_token"))?;
        // A number by the spec; some servers send a string.
        let expires_in = match answer.get("expires_in") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|s| *s > 0)
        .ok_or_else(|| bad("the answer has no usable expires_in"))?;
        let token = SecretString::from(access_token.to_string());
        *cached = Some(Cached {
            access_token: token.clone(),
            refresh_at: self.clock.now() + TimeDelta::seconds(expires_in) - REFRESH_BEFORE,
        });
        Ok(token)
    }

    /// Drops the cached token if it is still `refused` (a caller that
    /// already got a fresh one keeps it), so that the next
    /// [`TokenClient::token`] fetches a new one.
    pub async fn forget(&self, refused: &SecretString) {
        let mut cached = self.cached.lock().await;
        if cached
            .as_ref()
            .is_some_and(|c| c.access_token.expose_secret() == refused.expose_secret())
        {
            *cached = None;
        }
    }
}

/// Whom a new 1:1 conversation is with.
#[derive(Debug, Clone, Copy)]
pub struct OneOnOne<'a> {
    /// The bot's ID as the channel knows it (the app ID, or `28:<app ID>`).
    pub bot_id: &'a str,
    /// The user's Teams ID (`29:…`), or their Entra object ID.
    pub user_id: &'a str,
    pub tenant_id: &'a str,
}

/// The Bot Connector REST calls, on allowed service URLs only.
pub struct Connector {
    http: reqwest::Client,
    tokens: TokenClient,
    hosts: Vec<String>,
    allow_http_loopback: bool,
    patience: Patience,
    pacer: Pacer,
    /// The local Playground mode: its connector takes no token, and none
    /// is fetched.
    local: bool,
}

impl Connector {
    /// A connector for `settings`, reading the time from `clock`.
    pub fn new(settings: &TeamsSettings, clock: Clock) -> Result<Connector, ConnectorError> {
        Ok(Connector {
            http: super::http_client()
                .map_err(|e| ConnectorError::Client(crate::error::transport(e)))?,
            tokens: TokenClient::new(settings, clock)?,
            hosts: settings.service_url_hosts.clone(),
            allow_http_loopback: settings.allow_http_loopback,
            patience: Patience::new(settings),
            pacer: Pacer::default(),
            local: settings.local_playground,
        })
    }

    /// The token client the calls use.
    pub fn tokens(&self) -> &TokenClient {
        &self.tokens
    }

    /// `service_url` if we may call it: HTTPS to an allowed host, or HTTP(S)
    /// to loopback when that is on; no user name or password in it.
    pub fn check_service_url(&self, service_url: &str) -> Result<Url, ConnectorError> {
        let refuse = |why| ConnectorError::ServiceUrlRefused {
            url: service_url.to_string(),
            why,
        };
        let url = Url::parse(service_url).map_err(|_| refuse("not a URL"))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refuse("it carries credentials"));
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let loopback = matches!(host.as_str(), "127.0.0.1" | "localhost" | "[::1]");
        let allowed = match url.scheme() {
            "https" => self.hosts.contains(&host) || (self.allow_http_loopback && loopback),
            "http" => self.allow_http_loopback && loopback,
            _ => false,
        };
        if !allowed {
            return Err(refuse("its host is not an allowed Teams service host"));
        }
        Ok(url)
    }

    /// `service_url` with `segments` appended (each percent-encoded).
    fn endpoint(&self, service_url: &str, segments: &[&str]) -> Result<Url, ConnectorError> {
        let mut url = self.check_service_url(service_url)?;
        url.set_query(None);
        url.set_fragment(None);
        url.path_segments_mut()
            .map_err(|_| ConnectorError::ServiceUrlRefused {
                url: service_url.to_string(),
                why: "it cannot have a path",
            })?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// Sends `activity` to `conversation_id`; the new activity's ID.
    pub async fn send(
        &self,
        service_url: &str,
        conversation_id: &str,
        activity: &Value,
    ) -> Result<String, ConnectorError> {
        let url = self.endpoint(
            service_url,
            &["v3", "conversations", conversation_id, "activities"],
        )?;
        let answer = self
            .call(Method::POST, url.clone(), activity, Some(conversation_id))
            .await?;
        id_of(&answer, &url, &Method::POST)
    }

    /// Posts `activity` in reply to `reply_to_id` (in a channel, into its
    /// thread); the new activity's ID.
    pub async fn reply(
        &self,
        service_url: &str,
        conversation_id: &str,
        reply_to_id: &str,
        activity: &Value,
    ) -> Result<String, ConnectorError> {
        let url = self.endpoint(
            service_url,
            &[
                "v3",
                "conversations",
                conversation_id,
                "activities",
                reply_to_id,
            ],
        )?;
        let answer = self
            .call(Method::POST, url.clone(), activity, Some(conversation_id))
            .await?;
        id_of(&answer, &url, &Method::POST)
    }

    /// Replaces activity `activity_id` with `activity` (the whole activity).
    pub async fn update(
        &self,
        service_url: &str,
        conversation_id: &str,
        activity_id: &str,
        activity: &Value,
    ) -> Result<(), ConnectorError> {
        let url = self.endpoint(
            service_url,
            &[
                "v3",
                "conversations",
                conversation_id,
                "activities",
                activity_id,
            ],
        )?;
        self.call(Method::PUT, url, activity, Some(conversation_id))
            .await?;
        Ok(())
    }

    /// Opens (or finds) the 1:1 conversation with `who.user_id`; its ID.
    pub async fn create_conversation(
        &self,
        service_url: &str,
        who: OneOnOne<'_>,
    ) -> Result<String, ConnectorError> {
        let url = self.endpoint(service_url, &["v3", "conversations"])?;
        let body = json!({
            "isGroup": false,
            "bot": {"id": who.bot_id},
            "members": [{"id": who.user_id}],
            "tenantId": who.tenant_id,
            "channelData": {"tenant": {"id": who.tenant_id}},
        });
        let answer = self.call(Method::POST, url.clone(), &body, None).await?;
        id_of(&answer, &url, &Method::POST)
    }

    /// One call with the bot's token, paced in `conversation` when given
    /// and retried as the module's doc says; after a 401, once more with a
    /// fresh token.
    async fn call(
        &self,
        method: Method,
        url: Url,
        body: &Value,
        conversation: Option<&str>,
    ) -> Result<Value, ConnectorError> {
        let what = describe(&method, &url);
        let pace = conversation.map(|c| (&self.pacer, pace_key(c)));
        let attempt = |token: Option<SecretString>| {
            let (method, url, what) = (&method, &url, &what);
            async move {
                self.patience
                    .run(what, connector_hint, pace, || {
                        let request = self.http.request(method.clone(), url.clone());
                        match &token {
                            Some(t) => request.bearer_auth(t.expose_secret()),
                            None => request,
                        }
                        .json(body)
                    })
                    .await
            }
        };
        if self.local {
            // The Playground's connector takes no token; none is fetched.
            return attempt(None).await;
        }
        let token = self.tokens.token().await?;
        match attempt(Some(token.clone())).await {
            Err(ConnectorError::Status { status: 401, .. }) => {
                tracing::warn!(
                    what,
                    "teams: the Connector refused the token; fetching a fresh one"
                );
                self.tokens.forget(&token).await;
                let fresh = self.tokens.token().await?;
                attempt(Some(fresh)).await
            }
            answer => answer,
        }
    }
}

/// The conversation a call is paced in: a channel thread
/// (`19:…@thread.tacv2;messageid=…`) counts with its channel, which is the
/// cautious reading of Teams' per-conversation limits.
fn pace_key(conversation_id: &str) -> &str {
    conversation_id
        .split_once(';')
        .map_or(conversation_id, |(channel, _)| channel)
}

/// `METHOD url` for messages.
fn describe(method: &Method, url: &Url) -> String {
    format!("{method} {url}")
}

/// The `id` of a resource response.
fn id_of(answer: &Value, url: &Url, method: &Method) -> Result<String, ConnectorError> {
    answer
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| ConnectorError::BadAnswer {
            what: describe(method, url),
            why: "the answer has no id".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn connector(extra: &[(&str, &str)]) -> Connector {
        let mut env: HashMap<&str, &str> =
            HashMap::from([("TEAMS_APP_ID", "app"), ("TEAMS_APP_PASSWORD", "pw")]);
        env.extend(extra.iter().copied());
        let settings = TeamsSettings::from_lookup(|k| env.get(k).map(|v| v.to_string()))
            .expect("parses")
            .expect("on");
        Connector::new(
            &settings,
            std::sync::Arc::new(crate::clock::FixedClock::at(crate::clock::test_epoch())),
        )
        .expect("a connector")
    }

    #[test]
    fn teams_service_urls_must_be_allowed() {
        let c = connector(&[]);
        assert!(c
            .check_service_url("https://smba.trafficmanager.net/amer/")
            .is_ok());
        assert!(c
            .check_service_url("https://SMBA.trafficmanager.net/emea")
            .is_ok());
        for bad in [
            "http://smba.trafficmanager.net/amer/",
            "https://evil.example/amer/",
            "https://smba.trafficmanager.net.evil.example/",
            "https://user:pw@smba.trafficmanager.net/",
            "http://127.0.0.1:9/",
            "ftp://smba.trafficmanager.net/",
            "not a url",
        ] {
            assert!(
                matches!(
                    c.check_service_url(bad),
                    Err(ConnectorError::ServiceUrlRefused { .. })
                ),
                "{bad}"
            );
        }
        let c = connector(&[("TEAMS_ALLOW_HTTP_LOOPBACK", "1")]);
        for ok in [
            "http://127.0.0.1:9/",
            "http://localhost:9/",
            "http://[::1]:9/",
        ] {
            assert!(c.check_service_url(ok).is_ok(), "{ok}");
        }
        assert!(c.check_service_url("http://10.0.0.1/").is_err());
    }

    #[test]
    fn teams_endpoints_keep_the_regional_path_and_encode_ids() {
        let c = connector(&[]);
        let url = c
            .endpoint(
                "https://smba.trafficmanager.net/amer/",
                &["v3", "conversations", "a:1/2?x", "activities"],
            )
            .expect("allowed");
        assert_eq!(
            url.as_str(),
            "https://smba.trafficmanager.net/amer/v3/conversations/a:1%2F2%3Fx/activities"
        );
        let url = c
            .endpoint("https://smba.trafficmanager.net/teams", &["v3"])
            .expect("allowed");
        assert_eq!(url.as_str(), "https://smba.trafficmanager.net/teams/v3");
    }

    #[test]
    fn teams_a_thread_is_paced_with_its_channel() {
        assert_eq!(
            pace_key("19:abc@thread.tacv2;messageid=1700000000000"),
            "19:abc@thread.tacv2"
        );
        assert_eq!(pace_key("a:1on1"), "a:1on1");
    }

    #[test]
    fn teams_retried_statuses() {
        let none = reqwest::header::HeaderMap::new();
        for s in [429, 412, 502, 504] {
            assert_eq!(
                retry_for(StatusCode::from_u16(s).expect("status"), &none),
                Retry::Backoff,
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 413, 500, 503] {
            assert_eq!(
                retry_for(StatusCode::from_u16(s).expect("status"), &none),
                Retry::Never,
                "{s}"
            );
        }
        let mut asked = reqwest::header::HeaderMap::new();
        asked.insert(
            reqwest::header::RETRY_AFTER,
            reqwest::header::HeaderValue::from_static("2"),
        );
        assert_eq!(
            retry_for(StatusCode::TOO_MANY_REQUESTS, &asked),
            Retry::After(Duration::from_secs(2))
        );
    }
}
