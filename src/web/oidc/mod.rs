//! Signing in to the web inbox through the company's identity provider
//! (OpenID Connect: authorization code + PKCE), beside API tokens and
//! one-tap links. On only when `STRANDS_OIDC_ISSUER` is set.
//!
//! | route | what |
//! |---|---|
//! | `GET /auth/oidc/login?next=…` | starts a sign-in: to the provider, with `state`, `nonce` and a PKCE challenge |
//! | `GET /auth/oidc/callback` | the provider's answer: checked, exchanged, and a sign-in made |
//!
//! The sign-in in progress (state, nonce, PKCE verifier, where to go
//! next) is kept in a short-lived cookie signed with HMAC-SHA256 under a
//! key the store makes once ([`PENDING_COOKIE`]): nothing is stored, so
//! any replica takes the answer. Its `state` is compared in constant time
//! and used once (a replayed answer is refused on every replica). The
//! person is who the ID token's `STRANDS_OIDC_NAME_CLAIM` says, matched to
//! the people directory by its `oidc` identity (that value or the
//! subject) or its email; the groups claim is carried on the sign-in and
//! counts for `group:NAME` approvers (`gate::authorize`). Every failure is
//! a page saying what was wrong; nothing is signed in.
//!
//! What this does not do: talk HTTP to the provider or check tokens
//! ([`provider`]), or decide who may answer what.

pub mod provider;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::TimeDelta;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use subtle::ConstantTimeEq;

use super::{Web, WebError};
use crate::error::{Error, Result};
use crate::hub::problem::Problem;
use crate::model::login::{LoginScope, NewLogin};
use crate::model::person::{Directory, Person};
use crate::model::token::Role;

pub use provider::Provider;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The cookie a sign-in in progress lives in (path `/auth/oidc`).
pub const PENDING_COOKIE: &str = "strands_oidc";
/// How long a sign-in may stay at the provider.
const PENDING_MINUTES: i64 = 10;
/// The store key the pending cookie is signed with.
const KEY: &str = "oidc";

/// A value never shown: not in `Debug`, not in logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The identity provider's settings (`STRANDS_OIDC_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Secret,
    pub scopes: Vec<String>,
    pub name_claim: String,
    pub groups_claim: String,
    pub admin_group: Option<String>,
    pub operator_group: Option<String>,
}

impl Settings {
    /// `None` unless `STRANDS_OIDC_ISSUER` is set; then the client id and
    /// secret are needed, and an error names what is missing or wrong.
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Option<Settings>> {
        let set = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let scopes = set("STRANDS_OIDC_SCOPES");
        let name_claim = set("STRANDS_OIDC_NAME_CLAIM");
        let groups_claim = set("STRANDS_OIDC_GROUPS_CLAIM");
        let admin_group = set("STRANDS_OIDC_ADMIN_GROUP");
        let operator_group = set("STRANDS_OIDC_OPERATOR_GROUP");
        let client_id = set("STRANDS_OIDC_CLIENT_ID");
        let client_secret = set("STRANDS_OIDC_CLIENT_SECRET");
        let Some(issuer) = set("STRANDS_OIDC_ISSUER") else {
            return Ok(None);
        };
        match url::Url::parse(&issuer) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => {
                return Err(Error::Usage(format!(
                    "STRANDS_OIDC_ISSUER `{issuer}` is not an http(s) URL"
                )))
            }
        }
        let need = |v: Option<String>, name: &str| {
            v.ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_OIDC_ISSUER is set, so {name} is needed too (from the client registered at the identity provider)"
                ))
            })
        };
        let mut scopes: Vec<String> = scopes
            .as_deref()
            .unwrap_or("openid email profile")
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if !scopes.iter().any(|s| s == "openid") {
            scopes.insert(0, "openid".into());
        }
        // Kept as written: the provider's discovery document must name
        // exactly this issuer (some end theirs with `/`).
        Ok(Some(Settings {
            issuer,
            client_id: need(client_id, "STRANDS_OIDC_CLIENT_ID")?,
            client_secret: Secret(need(client_secret, "STRANDS_OIDC_CLIENT_SECRET")?),
            scopes,
            name_claim: name_claim.unwrap_or_else(|| "email".into()),
            groups_claim: groups_claim.unwrap_or_else(|| "groups".into()),
            admin_group,
            operator_group,
        }))
    }

    /// The role a person in `groups` signs in with.
    pub fn role(&self, groups: &[String]) -> Role {
        let has = |g: &Option<String>| g.as_ref().is_some_and(|g| groups.contains(g));
        if has(&self.admin_group) {
            Role::Admin
        } else if has(&self.operator_group) {
            Role::Operator
        } else {
            Role::Approver
        }
    }
}

/// Why a sign-in through the identity provider failed; nothing was
/// signed in. Each says what was wrong, for the page the person sees.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("{0}")]
    Setup(String),
    #[error("the store could not be used: {0}")]
    Store(String),
    #[error("no sign-in through the identity provider is in progress in this browser (it is finished, or older than {PENDING_MINUTES} minutes): sign in again")]
    NoPending,
    #[error("the answer's `state` is not this browser's sign-in (a forged or crossed request): sign in again")]
    WrongState,
    #[error(
        "this sign-in was finished already (the provider's answer was used twice): sign in again"
    )]
    Replayed,
    #[error("the identity provider did not sign you in: {0}")]
    Denied(String),
    #[error(
        "the identity provider refused the code (used already, or expired): {0}; sign in again"
    )]
    CodeRefused(String),
    #[error("the identity provider refused this service's client: check STRANDS_OIDC_CLIENT_ID and STRANDS_OIDC_CLIENT_SECRET")]
    ClientRefused,
    #[error("the identity provider refused: {0}")]
    Provider(String),
    #[error("the identity provider could not be reached: {0}")]
    Unreachable(String),
    #[error("the identity provider sent no ID token")]
    NoIdToken,
    #[error("the ID token is for another audience, not this service's client `{0}`")]
    Audience(String),
    #[error("the ID token has expired")]
    Expired,
    #[error("the answer or its ID token comes from another issuer, not `{0}`")]
    Issuer(String),
    #[error("the ID token's nonce is not this sign-in's (a replayed token)")]
    Nonce,
    #[error("the ID token is signed with an unknown signing key (not among the keys the identity provider publishes)")]
    UnknownKey,
    #[error("the ID token's signature is not valid: {0}")]
    Signature(String),
    #[error("the ID token is not valid: {0}")]
    Token(String),
    #[error("the ID token has no `{0}` claim naming you (STRANDS_OIDC_NAME_CLAIM)")]
    NoName(String),
    #[error("`{0}` is a name the people directory gives someone else; an admin can tie it to its person with `strands people edit NAME --oidc {0}`")]
    Taken(String),
}

impl From<OidcError> for WebError {
    fn from(e: OidcError) -> WebError {
        use OidcError::*;
        let status = match &e {
            Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Setup(_) | Provider(_) => StatusCode::BAD_GATEWAY,
            Unreachable(_) => StatusCode::BAD_GATEWAY,
            NoPending | WrongState | Replayed | CodeRefused(_) => StatusCode::BAD_REQUEST,
            Denied(_) | ClientRefused | NoIdToken | Audience(_) | Expired | Issuer(_) | Nonce
            | UnknownKey | Signature(_) | Token(_) => StatusCode::UNAUTHORIZED,
            NoName(_) | Taken(_) => StatusCode::FORBIDDEN,
        };
        WebError::Page(Problem::new(status, "oidc", format!("Not signed in: {e}.")))
    }
}

/// The sign-in in progress, as its cookie carries it.
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    #[serde(rename = "s")]
    state: String,
    #[serde(rename = "n")]
    nonce: String,
    #[serde(rename = "v")]
    verifier: String,
    #[serde(rename = "t")]
    next: String,
    /// Expiry, seconds since the epoch.
    #[serde(rename = "e")]
    expires: i64,
}

fn mac(key: &[u8], payload: &[u8]) -> Result<HmacSha256> {
    let mut m =
        HmacSha256::new_from_slice(key).map_err(|e| Error::Internal(format!("oidc key: {e}")))?;
    m.update(payload);
    Ok(m)
}

async fn seal(web: &Web, p: &Pending) -> Result<String> {
    let key = web.hub.store.key(KEY).await?;
    let payload = serde_json::to_vec(p).map_err(|e| Error::Internal(e.to_string()))?;
    let sig = mac(&key, &payload)?.finalize().into_bytes();
    Ok(format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&payload),
        URL_SAFE_NO_PAD.encode(sig)
    ))
}

/// The pending sign-in a cookie value stands for, if its signature is
/// good (constant time) and it has not expired.
async fn open(web: &Web, value: &str) -> Result<Option<Pending>> {
    let Some((payload, sig)) = value.split_once('.') else {
        return Ok(None);
    };
    let (Ok(payload), Ok(sig)) = (URL_SAFE_NO_PAD.decode(payload), URL_SAFE_NO_PAD.decode(sig))
    else {
        return Ok(None);
    };
    let key = web.hub.store.key(KEY).await?;
    if mac(&key, &payload)?.verify_slice(&sig).is_err() {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<Pending>(&payload)
        .ok()
        .filter(|p| web.hub.clock.now().timestamp() < p.expires))
}

fn pending_cookie(value: &str, max_age: TimeDelta, secure: bool) -> HeaderValue {
    super::auth::cookie_header(PENDING_COOKIE, value, "/auth/oidc", max_age, secure)
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(|c| c.ok())
        .find(|c| c.name() == name)
        .map(|c| c.value().to_string())
}

/// The provider, when sign-in through it is on.
fn provider(web: &Web) -> Result<&Provider, WebError> {
    web.oidc.as_deref().ok_or_else(|| {
        WebError::Page(Problem::not_found(
            "sign-in through an identity provider is off here (STRANDS_OIDC_ISSUER is not set)",
        ))
    })
}

/// `GET /auth/oidc/login?next=…`: to the provider.
pub async fn login(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(q): Query<super::auth::Next>,
) -> Result<Response, WebError> {
    let provider = provider(&web)?;
    let started = provider.start();
    let now = web.hub.clock.now();
    let pending = Pending {
        state: started.state,
        nonce: started.nonce,
        verifier: started.verifier,
        next: super::auth::safe_next(q.next.as_deref()),
        expires: (now + TimeDelta::minutes(PENDING_MINUTES)).timestamp(),
    };
    let value = seal(&web, &pending).await?;
    let mut res = Redirect::to(started.url.as_str()).into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        pending_cookie(
            &value,
            TimeDelta::minutes(PENDING_MINUTES),
            web.secure(&headers),
        ),
    );
    Ok(res)
}

/// What the provider sends the browser back with.
#[derive(Debug, Deserialize)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
    /// The answering issuer (RFC 9207), when the provider says it.
    pub iss: Option<String>,
}

/// `GET /auth/oidc/callback`: checks the answer, signs in, and clears the
/// pending cookie (whatever the outcome).
pub async fn callback(
    State(web): State<Web>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let secure = web.secure(&headers);
    let mut res = match finish(&web, &headers, q).await {
        Ok(r) => r,
        Err(e) => {
            tracing::info!("a sign-in through the identity provider was refused: {e}");
            WebError::from(e).into_response()
        }
    };
    res.headers_mut().append(
        header::SET_COOKIE,
        pending_cookie("", TimeDelta::zero(), secure),
    );
    res
}

async fn finish(
    web: &Web,
    headers: &HeaderMap,
    q: Callback,
) -> std::result::Result<Response, OidcError> {
    let store = |e: Error| OidcError::Store(e.to_string());
    let provider = web
        .oidc
        .as_deref()
        .ok_or_else(|| OidcError::Setup("sign-in through an identity provider is off".into()))?;
    let pending = match cookie_value(headers, PENDING_COOKIE) {
        Some(v) => open(web, &v).await.map_err(store)?,
        None => None,
    }
    .ok_or(OidcError::NoPending)?;
    let state = q.state.as_deref().unwrap_or_default();
    let same: bool = state.as_bytes().ct_eq(pending.state.as_bytes()).into();
    if !same {
        return Err(OidcError::WrongState);
    }
    // An answer from another provider (a mix-up) is refused.
    if let Some(iss) = q.iss.as_deref() {
        if iss != provider.settings().issuer {
            return Err(OidcError::Issuer(provider.settings().issuer.clone()));
        }
    }
    if let Some(error) = q.error {
        return Err(OidcError::Denied(match q.error_description {
            Some(d) => format!("{error}: {d}"),
            None => error,
        }));
    }
    let code = q
        .code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| OidcError::Provider("the answer carries no code".into()))?;
    if !web
        .hub
        .store
        .first_sighting(&format!("oidc:{}", pending.state))
        .await
        .map_err(store)?
    {
        return Err(OidcError::Replayed);
    }
    let verified = provider
        .finish(&code, &pending.verifier, &pending.nonce)
        .await?;
    let settings = provider.settings();
    let claim = claim_text(verified.claims.get(&settings.name_claim))
        .or_else(|| (settings.name_claim == "sub").then(|| verified.subject.clone()))
        .ok_or_else(|| OidcError::NoName(settings.name_claim.clone()))?;
    let groups = groups(verified.claims.get(&settings.groups_claim));
    let people = web.hub.fresh_people().await.map_err(store)?;
    let email = verified
        .claims
        .get("email")
        .and_then(Value::as_str)
        .filter(|_| verified.claims.get("email_verified") != Some(&Value::Bool(false)));
    let name = match matching(&people, &claim, &verified.subject, email) {
        Some(p) => p.name.clone(),
        // Unknown to the directory: their claim, unless it is how the
        // directory knows someone else (no impersonation by a username).
        None if people.person_of(&claim).is_some() => return Err(OidcError::Taken(claim)),
        None => claim,
    };
    let role = settings.role(&groups);
    let now = web.hub.clock.now();
    let until = now + TimeDelta::hours(i64::from(web.config.login_hours.max(1)));
    let mut new = NewLogin::generate(
        &name,
        role,
        LoginScope::Oidc {
            issuer: verified.issuer,
            subject: verified.subject,
        },
        now,
        until,
    );
    new.login.groups = groups;
    web.hub.store.put_login(&new.login).await.map_err(store)?;
    tracing::info!(who = %name, role = %role, "signed in to the web inbox through the identity provider");
    let mut res = Redirect::to(&pending.next).into_response();
    res.headers_mut().insert(
        header::SET_COOKIE,
        super::auth::set_cookie(&new.cookie, until - now, web.secure(headers)),
    );
    Ok(res)
}

/// A claim's value as a name: a string, or a number.
fn claim_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The groups claim: a list of names (or one name); anything else is
/// ignored.
fn groups(v: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| claim_text(Some(i)))
            .filter(|g| g.len() <= 256)
            .take(1000)
            .collect(),
        Some(v) => claim_text(Some(v)).into_iter().collect(),
        None => Vec::new(),
    };
    out.sort();
    out.dedup();
    out
}

/// The directory's person for a provider sign-in: by their `oidc`
/// identity (the name claim's value, or the subject), else by a verified
/// email (without case).
pub fn matching<'a>(
    people: &'a Directory,
    claim: &str,
    subject: &str,
    email: Option<&str>,
) -> Option<&'a Person> {
    let all = people.people();
    all.iter()
        .find(|p| {
            p.oidc
                .as_deref()
                .is_some_and(|o| o == claim || o == subject)
        })
        .or_else(|| {
            let email = email?;
            all.iter().find(|p| {
                p.email
                    .as_deref()
                    .is_some_and(|e| e.eq_ignore_ascii_case(email))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<Settings>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn off_without_an_issuer_and_every_missing_setting_named() {
        assert_eq!(settings(&[]).expect("off"), None);
        let e = settings(&[("STRANDS_OIDC_ISSUER", "https://idp.example")]).unwrap_err();
        assert!(e.to_string().contains("STRANDS_OIDC_CLIENT_ID"), "{e}");
        let e = settings(&[
            ("STRANDS_OIDC_ISSUER", "https://idp.example"),
            ("STRANDS_OIDC_CLIENT_ID", "strands"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("STRANDS_OIDC_CLIENT_SECRET"), "{e}");
        let e = settings(&[("STRANDS_OIDC_ISSUER", "idp.example")]).unwrap_err();
        assert!(e.to_string().contains("STRANDS_OIDC_ISSUER"), "{e}");
        let s = settings(&[
            ("STRANDS_OIDC_ISSUER", "https://idp.example/tenant/"),
            ("STRANDS_OIDC_CLIENT_ID", "strands"),
            ("STRANDS_OIDC_CLIENT_SECRET", "hunter2"),
            ("STRANDS_OIDC_SCOPES", "email groups"),
            ("STRANDS_OIDC_ADMIN_GROUP", "ops-admins"),
        ])
        .expect("valid")
        .expect("on");
        assert_eq!(s.issuer, "https://idp.example/tenant/");
        assert_eq!(s.scopes, ["openid", "email", "groups"]);
        assert_eq!(s.name_claim, "email");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.role(&["ops-admins".into()]), Role::Admin);
        assert_eq!(s.role(&["eng".into()]), Role::Approver);
    }

    #[test]
    fn a_sign_in_is_matched_by_its_oidc_identity_or_email_and_groups_are_read_leniently() {
        let people = Directory::new(vec![
            Person {
                oidc: Some("00u1carol".into()),
                ..Person::named("carol")
            },
            Person {
                email: Some("Alice@Corp.example".into()),
                ..Person::named("alice")
            },
        ])
        .expect("directory");
        let name = |claim, sub, email| matching(&people, claim, sub, email).map(|p| &p.name[..]);
        assert_eq!(name("carol@corp.example", "00u1carol", None), Some("carol"));
        assert_eq!(name("00u1carol", "x", None), Some("carol"));
        assert_eq!(
            name("ALICE@corp.example", "x", Some("ALICE@corp.example")),
            Some("alice")
        );
        assert_eq!(
            name("asmith", "x", Some("alice@CORP.example")),
            Some("alice")
        );
        assert_eq!(name("bob@corp.example", "x", None), None);
        assert_eq!(
            groups(Some(
                &serde_json::json!(["finance", 7, {"x": 1}, "finance"])
            )),
            ["7", "finance"]
        );
        assert_eq!(groups(Some(&serde_json::json!("eng"))), ["eng"]);
        assert!(groups(None).is_empty());
    }
}
