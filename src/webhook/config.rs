//! Webhook settings, built once from the settings' variables into a plain struct.
//!
//! | variable | setting |
//! |---|---|
//! | `STRANDS_WEBHOOK_URL` | endpoints, comma-separated http(s) URLs; unset: no webhooks |
//! | `STRANDS_WEBHOOK_SECRET` | `whsec_` + base64 signing key; required with URLs; never printed |
//! | `STRANDS_WEBHOOK_GIVE_UP` | how long an event is retried (`30s`, `10m`, `24h`, `3d`; 24h) |
//! | `STRANDS_PUBLIC_URL` | base of the links in payloads (the caller's default) |
//!
//! A value that does not parse is an error naming the variable: a typo must
//! not silently turn webhooks off or make them give up at once.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use crate::error::{Error, Result};
use crate::model::webhook::shown_url;

/// How long an event is retried when `STRANDS_WEBHOOK_GIVE_UP` is unset.
pub const DEFAULT_GIVE_UP: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone)]
pub struct Config {
    /// The endpoints, each a normalized http(s) URL (the store's key for
    /// its cursor). They may carry credentials: logs show them through
    /// [`shown_url`].
    pub endpoints: Vec<String>,
    /// `whsec_…`: the Standard Webhooks signing secret.
    pub secret: SecretString,
    /// An event not delivered this long after its first attempt is given up.
    pub give_up: Duration,
    /// Where the API is reached, without a trailing slash: payload links
    /// start with it.
    pub public_url: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let endpoints: Vec<String> = self.endpoints.iter().map(|u| shown_url(u)).collect();
        f.debug_struct("Config")
            .field("endpoints", &endpoints)
            .field("secret", &"[REDACTED]")
            .field("give_up", &self.give_up)
            .field("public_url", &self.public_url)
            .finish()
    }
}

impl Config {
    /// No webhook endpoint: an outbox for the queue room's exchange only
    /// (`Deliverer::with_exchange`), links starting with `public_url`.
    pub fn without_endpoints(public_url: &str) -> Config {
        Config {
            endpoints: Vec::new(),
            secret: SecretString::from(String::new()),
            give_up: DEFAULT_GIVE_UP,
            public_url: public_url.trim_end_matches('/').to_string(),
        }
    }

    /// The settings from `get` (the environment, or a map in tests);
    /// `None` when `STRANDS_WEBHOOK_URL` names no endpoint.
    /// `default_public_url` is used when `STRANDS_PUBLIC_URL` is unset.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        default_public_url: &str,
    ) -> Result<Option<Config>> {
        let mut endpoints: Vec<String> = Vec::new();
        for raw in crate::config::list(get("STRANDS_WEBHOOK_URL")) {
            let url = http_url(&raw).ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_WEBHOOK_URL: `{raw}` is not an http(s) URL"
                ))
            })?;
            if !endpoints.contains(&url) {
                endpoints.push(url);
            }
        }
        if endpoints.is_empty() {
            return Ok(None);
        }
        let secret = get("STRANDS_WEBHOOK_SECRET")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                Error::Usage(
                    "STRANDS_WEBHOOK_SECRET is not set: webhooks (STRANDS_WEBHOOK_URL) are signed with it; make one with `echo whsec_$(head -c 32 /dev/urandom | base64)`".into(),
                )
            })?;
        let secret = SecretString::from(secret);
        check_secret(&secret)?;
        let give_up = match get("STRANDS_WEBHOOK_GIVE_UP") {
            None => DEFAULT_GIVE_UP,
            Some(v) if v.trim().is_empty() => DEFAULT_GIVE_UP,
            Some(v) => parse_span(&v).ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_WEBHOOK_GIVE_UP: `{}` is not a duration like 30s, 10m, 24h or 3d",
                    v.trim()
                ))
            })?,
        };
        let public = get("STRANDS_PUBLIC_URL")
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| default_public_url.to_string());
        let public_url = http_url(&public)
            .map(|u| u.trim_end_matches('/').to_string())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_PUBLIC_URL: `{}` is not an http(s) URL",
                    public.trim()
                ))
            })?;
        Ok(Some(Config {
            endpoints,
            secret,
            give_up,
            public_url,
        }))
    }
}

/// `raw` as a normalized absolute http(s) URL with a host.
fn http_url(raw: &str) -> Option<String> {
    let url = url::Url::parse(raw.trim()).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host().is_some()).then(|| url.to_string())
}

/// A Standard Webhooks secret: `whsec_` and a non-empty base64 key.
fn check_secret(secret: &SecretString) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::Usage(format!(
            "STRANDS_WEBHOOK_SECRET {why}: it must be `whsec_` followed by base64 (e.g. `echo whsec_$(head -c 32 /dev/urandom | base64)`)"
        )))
    };
    let Some(key) = secret.expose_secret().strip_prefix("whsec_") else {
        return bad("does not start with `whsec_`");
    };
    if key.is_empty() {
        return bad("has no key after `whsec_`");
    }
    match standardwebhooks::Webhook::new(secret.expose_secret()) {
        Ok(_) => Ok(()),
        Err(_) => bad("is not valid base64"),
    }
}

/// `30s`, `10m`, `24h`, `3d` (a whole number and a unit).
pub fn parse_span(v: &str) -> Option<Duration> {
    let v = v.trim();
    let unit = v.chars().last()?;
    let n: u64 = v[..v.len() - unit.len_utf8()].trim().parse().ok()?;
    let secs = match unit {
        's' => n,
        'm' => n.checked_mul(60)?,
        'h' => n.checked_mul(3600)?,
        'd' => n.checked_mul(86_400)?,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}
