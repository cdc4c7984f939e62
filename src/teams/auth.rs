//! Whether an activity POSTed to us really comes from the Bot Framework for
//! our bot: its `Authorization: Bearer` JWT, checked with `jsonwebtoken`
//! (RS256 only) against the keys the Bot Framework publishes, and tied to
//! the activity it came with.
//!
//! The rules, in the order they are checked:
//! 1. a bearer token whose header says `alg: RS256` and names a `kid`;
//!    anything else (`none`, `HS256`, …) is refused before any key lookup;
//! 2. the key: from the OpenID metadata's `jwks_uri`, cached and refreshed
//!    every 24 h; a `kid` not in the cache fetches the keys again, at most
//!    once an hour; a fetch that fails is not tried again for a minute
//!    ([`FETCH_COOL_DOWN`]; 10 s while there are no keys at all), and the
//!    cached keys go on being used meanwhile;
//! 3. the signature, `iss` (`https://api.botframework.com`, plus the bot's
//!    own tenant issuers when opted in), `aud` (the app ID), and `exp`/`nbf`
//!    with five minutes' leeway against the injected clock;
//! 4. the token matches the activity: the `serviceurl` claim equals its
//!    `serviceUrl` (lowercased, trailing `/` dropped; required in Bot
//!    Framework tokens), the key's `endorsements` (when it has any) name its
//!    `channelId`, and its `channelData.tenant.id` is our tenant (when set).
//!
//! What this does not do: read the request (the caller hands in the header
//! and the parsed body), decide who may answer a gate, or remember which
//! activities it has seen (replays within a token's life are the room's
//! concern: dedupe on the action).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use chrono::{DateTime, TimeDelta, Utc};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;

use super::{Clock, TeamsSettings};

/// The issuer of Bot Framework channel tokens.
pub const BOT_FRAMEWORK_ISSUER: &str = "https://api.botframework.com";
/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 300;
/// How long fetched keys are used before they are fetched again.
pub const KEYS_MAX_AGE: TimeDelta = TimeDelta::hours(24);
/// How often an unknown `kid` may fetch the keys again.
pub const UNKNOWN_KID_REFETCH: TimeDelta = TimeDelta::hours(1);
/// After a failed fetch, how long the cached keys are used before the
/// next try (the metadata endpoint down must not cost a fetch per request).
pub const FETCH_COOL_DOWN: TimeDelta = TimeDelta::minutes(1);
/// The same, while no keys were ever fetched (nothing verifies meanwhile).
pub const FIRST_FETCH_COOL_DOWN: TimeDelta = TimeDelta::seconds(10);

/// Why an activity was refused: for the audit line, the metrics label
/// ([`Refused::kind`]) and the HTTP status ([`Refused::status`]). Never
/// quotes the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("no Authorization: Bearer header")]
    NoToken,
    #[error("the token is malformed: {0}")]
    Malformed(String),
    #[error("the token is signed with {0:?}; only RS256 is accepted")]
    Algorithm(String),
    #[error("no signing key has kid {0:?}")]
    UnknownKey(String),
    #[error("the signature does not verify")]
    BadSignature,
    #[error("the token is not for this bot (aud)")]
    WrongAudience,
    #[error("the token's issuer is not accepted")]
    WrongIssuer,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the Bot Framework token carries no serviceurl claim")]
    NoServiceUrlClaim,
    #[error("the token's serviceurl does not match the activity's serviceUrl")]
    ServiceUrlMismatch,
    #[error("the signing key is not endorsed for channel {0:?}")]
    NotEndorsed(String),
    #[error("the activity is from another tenant")]
    WrongTenant,
    #[error("the signing keys could not be fetched: {0}")]
    KeysUnavailable(String),
    /// The local Playground mode takes activities from this machine only.
    #[error("the local Playground mode takes activities only from this machine: {0}")]
    NotLocal(&'static str),
}

impl Refused {
    /// The HTTP answer: 401 when the token itself is not good, 403 when a
    /// good token does not fit the activity, 503 when we could not check.
    pub fn status(&self) -> StatusCode {
        match self {
            Refused::ServiceUrlMismatch | Refused::NotEndorsed(_) | Refused::WrongTenant => {
                StatusCode::FORBIDDEN
            }
            Refused::KeysUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// The metrics and audit label.
    pub fn kind(&self) -> &'static str {
        match self {
            Refused::NoToken => "no_token",
            Refused::Malformed(_) => "malformed",
            Refused::Algorithm(_) => "algorithm",
            Refused::UnknownKey(_) => "unknown_key",
            Refused::BadSignature => "bad_signature",
            Refused::WrongAudience => "wrong_audience",
            Refused::WrongIssuer => "wrong_issuer",
            Refused::Expired => "expired",
            Refused::NotYetValid => "not_yet_valid",
            Refused::NoServiceUrlClaim => "no_serviceurl",
            Refused::ServiceUrlMismatch => "serviceurl_mismatch",
            Refused::NotEndorsed(_) => "not_endorsed",
            Refused::WrongTenant => "wrong_tenant",
            Refused::KeysUnavailable(_) => "keys_unavailable",
            Refused::NotLocal(_) => "not_local",
        }
    }
}

/// What a verified token said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub issuer: String,
    /// The `kid` of the key that signed it.
    pub key_id: String,
    /// The `serviceurl` claim, when the token had one.
    pub service_url: Option<String>,
}

/// The claims read from a token whose signature verified. Typed, so that a
/// time or issuer of the wrong JSON type refuses the token instead of
/// being skipped.
#[derive(Debug, Deserialize)]
struct Claims {
    iss: String,
    exp: f64,
    #[serde(default)]
    nbf: Option<f64>,
    #[serde(default)]
    serviceurl: Option<String>,
}

/// A published signing key.
struct Key {
    decoding: DecodingKey,
    /// The channels the key is endorsed for; `None`: no restriction.
    endorsements: Option<Vec<String>>,
}

/// The keys, and when they were fetched.
#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, Arc<Key>>,
    fetched_at: Option<DateTime<Utc>>,
    /// When an unknown `kid` last made us fetch.
    unknown_refetch_at: Option<DateTime<Utc>>,
    /// The last fetch that failed, when, and why.
    failed: Option<(DateTime<Utc>, String)>,
}

impl KeyCache {
    /// Whether a fetch failed too recently to try again at `now`.
    fn cooling_down(&self, now: DateTime<Utc>) -> bool {
        let pause = if self.keys.is_empty() {
            FIRST_FETCH_COOL_DOWN
        } else {
            FETCH_COOL_DOWN
        };
        self.failed
            .as_ref()
            .is_some_and(|(at, _)| now - *at < pause)
    }

    /// Records what a fetch at `now` brought.
    fn fetched(&mut self, now: DateTime<Utc>, result: Result<HashMap<String, Arc<Key>>, String>) {
        match result {
            Ok(keys) => {
                self.keys = keys;
                self.fetched_at = Some(now);
                self.failed = None;
            }
            Err(why) => {
                tracing::warn!(
                    %why,
                    cached_keys = self.keys.len(),
                    "teams: fetching the signing keys failed; not trying again for a while"
                );
                self.failed = Some((now, why));
            }
        }
    }
}

/// Checks inbound activities' tokens. One per service; cheap to share
/// behind an `Arc`.
pub struct Verifier {
    app_id: String,
    tenant_id: Option<String>,
    issuers: Vec<String>,
    metadata_url: String,
    http: reqwest::Client,
    clock: Clock,
    keys: Mutex<KeyCache>,
}

impl Verifier {
    /// A verifier for `settings`, reading the time from `clock`.
    pub fn new(settings: &TeamsSettings, clock: Clock) -> Result<Verifier, reqwest::Error> {
        let mut issuers = vec![BOT_FRAMEWORK_ISSUER.to_string()];
        if let (true, Some(tid)) = (settings.accept_tenant_issuer, &settings.tenant_id) {
            issuers.push(format!("https://sts.windows.net/{tid}/"));
            issuers.push(format!("https://login.microsoftonline.com/{tid}/v2.0"));
        }
        Ok(Verifier {
            app_id: settings.app_id.clone(),
            tenant_id: settings.tenant_id.clone(),
            issuers,
            metadata_url: settings.openid_metadata_url.clone(),
            http: super::http_client()?,
            clock,
            keys: Mutex::new(KeyCache::default()),
        })
    }

    /// Checks `authorization` (the header's value) for `activity` (the
    /// parsed body). See the module's doc for the rules.
    pub async fn verify(
        &self,
        authorization: Option<&str>,
        activity: &Value,
    ) -> Result<Verified, Refused> {
        let token = bearer(authorization)?;
        let kid = rs256_kid(token)?;
        let key = self.key(&kid).await?;

        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&self.issuers);
        validation.set_audience(&[&self.app_id]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        // The times are checked below against the injected clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation).map_err(
            |e| match e.kind() {
                ErrorKind::InvalidSignature => Refused::BadSignature,
                ErrorKind::InvalidAudience => Refused::WrongAudience,
                ErrorKind::InvalidIssuer => Refused::WrongIssuer,
                ErrorKind::InvalidAlgorithm => {
                    Refused::Algorithm("RS256 with a non-RSA key".into())
                }
                _ => Refused::Malformed(e.to_string()),
            },
        )?;
        let claims = data.claims;

        let now = self.clock.now().timestamp() as f64;
        let leeway = LEEWAY_SECS as f64;
        if claims.exp < now - leeway {
            return Err(Refused::Expired);
        }
        if claims.nbf.is_some_and(|nbf| nbf > now + leeway) {
            return Err(Refused::NotYetValid);
        }

        let activity_url = activity.get("serviceUrl").and_then(Value::as_str);
        match (&claims.serviceurl, activity_url) {
            (None, _) if claims.iss == BOT_FRAMEWORK_ISSUER => {
                return Err(Refused::NoServiceUrlClaim)
            }
            (None, _) => {}
            (Some(claimed), Some(given)) if same_service_url(claimed, given) => {}
            (Some(_), _) => return Err(Refused::ServiceUrlMismatch),
        }

        if let Some(endorsed) = &key.endorsements {
            let channel = activity
                .get("channelId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !endorsed.iter().any(|e| e == channel) {
                return Err(Refused::NotEndorsed(channel.to_string()));
            }
        }

        if let Some(ours) = &self.tenant_id {
            let theirs = activity
                .pointer("/channelData/tenant/id")
                .and_then(Value::as_str);
            if !theirs.is_some_and(|t| t.eq_ignore_ascii_case(ours)) {
                return Err(Refused::WrongTenant);
            }
        }

        Ok(Verified {
            issuer: claims.iss,
            key_id: kid,
            service_url: claims.serviceurl,
        })
    }

    /// The key `kid`, from the cache when it is fresh; otherwise fetched
    /// (every 24 h, or for an unknown `kid` at most once an hour), unless a
    /// fetch failed within the cool-down: then the cached keys are used.
    /// The lock is held across a fetch, so concurrent requests share one.
    async fn key(&self, kid: &str) -> Result<Arc<Key>, Refused> {
        let now = self.clock.now();
        let mut cache = self.keys.lock().await;
        let stale = cache.fetched_at.is_none_or(|at| now - at >= KEYS_MAX_AGE);
        // At most one fetch per request.
        let mut fetched = false;
        if stale && !cache.cooling_down(now) {
            let result = self.fetch_keys().await;
            cache.fetched(now, result);
            fetched = true;
        }
        if cache.keys.is_empty() {
            let why = cache
                .failed
                .as_ref()
                .map_or_else(|| "no keys yet".to_string(), |(_, why)| why.clone());
            return Err(Refused::KeysUnavailable(why));
        }
        if let Some(key) = cache.keys.get(kid) {
            return Ok(key.clone());
        }
        let may_refetch = !fetched
            && !cache.cooling_down(now)
            && cache
                .unknown_refetch_at
                .is_none_or(|at| now - at >= UNKNOWN_KID_REFETCH);
        if may_refetch {
            cache.unknown_refetch_at = Some(now);
            let result = self.fetch_keys().await;
            cache.fetched(now, result);
        }
        cache
            .keys
            .get(kid)
            .cloned()
            .ok_or_else(|| Refused::UnknownKey(kid.to_string()))
    }

    /// The metadata, then the keys it points to; the error is one line.
    async fn fetch_keys(&self) -> Result<HashMap<String, Arc<Key>>, String> {
        let metadata = self.get_json(&self.metadata_url).await?;
        let jwks_uri = metadata
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or("the OpenID metadata has no jwks_uri")?
            .to_string();
        let jwks = self.get_json(&jwks_uri).await?;
        let keys = parse_jwks(&jwks);
        if keys.is_empty() {
            return Err("the key set has no usable RSA signing key".into());
        }
        Ok(keys)
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("GET {url}: {}", crate::error::transport(e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("GET {url}: HTTP {status}"));
        }
        response
            .json()
            .await
            .map_err(|e| format!("GET {url}: {}", crate::error::transport(e)))
    }
}

/// The token of a `Bearer` authorization header.
fn bearer(authorization: Option<&str>) -> Result<&str, Refused> {
    let value = authorization.ok_or(Refused::NoToken)?.trim();
    let (scheme, token) = value.split_once(' ').ok_or(Refused::NoToken)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(Refused::NoToken);
    }
    Ok(token)
}

/// The `kid` of a token whose header says RS256. The header is read here,
/// before any key is looked up, so that `none`, `HS256` and names
/// `jsonwebtoken` does not know are refused by name.
fn rs256_kid(token: &str) -> Result<String, Refused> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refused::Malformed("not three dot-separated parts".into()));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| Refused::Malformed("the header is not base64url".into()))?;
    let header: Value = serde_json::from_slice(&bytes)
        .map_err(|_| Refused::Malformed("the header is not JSON".into()))?;
    match header.get("alg").and_then(Value::as_str) {
        Some("RS256") => {}
        Some(other) => return Err(Refused::Algorithm(other.to_string())),
        None => return Err(Refused::Algorithm(String::new())),
    }
    header
        .get("kid")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Refused::Malformed("the header names no kid".into()))
}

/// The RSA signing keys of a JWKS document, by `kid`, with their
/// `endorsements` (which `jsonwebtoken`'s `Jwk` does not keep). Keys that
/// are not RSA, not for signing, or do not parse are skipped.
fn parse_jwks(jwks: &Value) -> HashMap<String, Arc<Key>> {
    let mut keys = HashMap::new();
    let Some(list) = jwks.get("keys").and_then(Value::as_array) else {
        return keys;
    };
    for jwk in list {
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        if field("kty") != Some("RSA") || field("use").is_some_and(|u| u != "sig") {
            continue;
        }
        let (Some(kid), Some(n), Some(e)) = (field("kid"), field("n"), field("e")) else {
            continue;
        };
        let Ok(decoding) = DecodingKey::from_rsa_components(n, e) else {
            continue;
        };
        let endorsements = jwk.get("endorsements").map(|list| {
            list.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        });
        keys.insert(
            kid.to_string(),
            Arc::new(Key {
                decoding,
                endorsements,
            }),
        );
    }
    keys
}

/// Whether two service URLs are the same: lowercased, trailing `/` dropped.
fn same_service_url(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches('/').to_ascii_lowercase();
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(v: &Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    #[test]
    fn teams_bearer_needs_the_scheme_and_a_token() {
        assert_eq!(bearer(None), Err(Refused::NoToken));
        assert_eq!(bearer(Some("")), Err(Refused::NoToken));
        assert_eq!(bearer(Some("Basic abc")), Err(Refused::NoToken));
        assert_eq!(bearer(Some("Bearer ")), Err(Refused::NoToken));
        assert_eq!(bearer(Some("bearer a.b.c")), Ok("a.b.c"));
    }

    #[test]
    fn teams_only_rs256_headers_pass() {
        let token = |h: Value| format!("{}.e30.sig", b64(&h));
        assert_eq!(
            rs256_kid(&token(json!({"alg": "RS256", "kid": "k1"}))),
            Ok("k1".into())
        );
        for alg in ["none", "HS256", "RS384", "ES256", "PS256"] {
            assert_eq!(
                rs256_kid(&token(json!({"alg": alg, "kid": "k1"}))),
                Err(Refused::Algorithm(alg.into()))
            );
        }
        assert!(matches!(
            rs256_kid(&token(json!({"alg": "RS256"}))),
            Err(Refused::Malformed(_))
        ));
        assert!(matches!(rs256_kid("a.b"), Err(Refused::Malformed(_))));
        assert!(matches!(rs256_kid("!!.b.c"), Err(Refused::Malformed(_))));
    }

    #[test]
    fn teams_jwks_keeps_rsa_signing_keys_and_their_endorsements() {
        let n = "sXch";
        let keys = parse_jwks(&json!({"keys": [
            {"kty": "RSA", "kid": "a", "n": n, "e": "AQAB", "endorsements": ["msteams"]},
            {"kty": "RSA", "kid": "b", "n": n, "e": "AQAB", "use": "sig"},
            {"kty": "RSA", "kid": "c", "n": n, "e": "AQAB", "use": "enc"},
            {"kty": "EC", "kid": "d", "x": "a", "y": "b"},
            {"kty": "RSA", "n": n, "e": "AQAB"},
        ]}));
        let mut kids: Vec<_> = keys.keys().cloned().collect();
        kids.sort();
        assert_eq!(kids, ["a", "b"]);
        assert_eq!(keys["a"].endorsements, Some(vec!["msteams".to_string()]));
        assert_eq!(keys["b"].endorsements, None);
    }

    #[test]
    fn teams_service_urls_compare_loosely() {
        assert!(same_service_url(
            "https://smba.trafficmanager.net/amer/",
            "https://SMBA.trafficmanager.net/amer"
        ));
        assert!(!same_service_url(
            "https://smba.trafficmanager.net/amer/",
            "https://smba.trafficmanager.net/emea/"
        ));
    }

    #[test]
    fn teams_refusals_map_to_statuses() {
        assert_eq!(Refused::NoToken.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(Refused::BadSignature.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(Refused::WrongTenant.status(), StatusCode::FORBIDDEN);
        assert_eq!(Refused::ServiceUrlMismatch.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            Refused::KeysUnavailable(String::new()).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
