//! The queue room's settings, built once from the settings' variables
//! (`crate::config::vars`, section `amqp`) into a plain struct.
//!
//! A value that does not parse is an error naming the variable: a typo must
//! not silently turn the room off.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use crate::error::{Error, Result};

/// The exchange events are published to when `STRANDS_AMQP_EXCHANGE` is unset.
pub const DEFAULT_EXCHANGE: &str = "strands.events";
/// The queue requests are taken from when `STRANDS_AMQP_QUEUE` is unset.
pub const DEFAULT_QUEUE: &str = "strands.requests";
/// The dead-letter exchange (and its queue) when `STRANDS_AMQP_DEAD_LETTER` is unset.
pub const DEFAULT_DEAD_LETTER: &str = "strands.dead";
/// Unacknowledged messages per replica when `STRANDS_AMQP_PREFETCH` is unset.
pub const DEFAULT_PREFETCH: u16 = 32;
/// Deliveries of a message whose handling keeps failing before it is
/// dead-lettered, when `STRANDS_AMQP_MAX_DELIVERIES` is unset.
pub const DEFAULT_MAX_DELIVERIES: u32 = 5;

#[derive(Clone)]
pub struct Config {
    /// `amqp://user:pass@host:port/vhost` or `amqps://…`: it carries the
    /// password, so it is never shown (see [`Config::shown`]).
    pub url: SecretString,
    pub exchange: String,
    pub queue: String,
    pub dead_letter: String,
    pub prefetch: u16,
    /// A message whose handling failed (transiently) on this many
    /// deliveries is dead-lettered with the last error.
    pub max_deliveries: u32,
    /// An event not published this long after its first attempt is given up.
    pub give_up: Duration,
    /// Where the API is reached, without a trailing slash: payload links
    /// start with it.
    pub public_url: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("url", &self.shown())
            .field("exchange", &self.exchange)
            .field("queue", &self.queue)
            .field("dead_letter", &self.dead_letter)
            .field("prefetch", &self.prefetch)
            .field("max_deliveries", &self.max_deliveries)
            .field("give_up", &self.give_up)
            .finish()
    }
}

impl Config {
    /// The settings from `get`; `None` when `STRANDS_AMQP_URL` is unset.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        public_url: &str,
    ) -> Result<Option<Config>> {
        let set = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let Some(raw) = set("STRANDS_AMQP_URL") else {
            return Ok(None);
        };
        let parsed = url::Url::parse(&raw).ok().filter(|u| {
            matches!(u.scheme(), "amqp" | "amqps") && u.host_str().is_some_and(|h| !h.is_empty())
        });
        if parsed.is_none() {
            return Err(Error::Usage(format!(
                "STRANDS_AMQP_URL: `{}` is not an amqp:// or amqps:// URL with a host",
                shown(&raw)
            )));
        }
        let name = |var: &str, default: &str| -> Result<String> {
            let v = set(var).unwrap_or_else(|| default.to_string());
            if v.len() > 255 || v.chars().any(|c| c.is_control() || c.is_whitespace()) {
                return Err(Error::Usage(format!(
                    "{var}: `{v}` is not an exchange or queue name (no spaces, at most 255 bytes)"
                )));
            }
            Ok(v)
        };
        let prefetch = match set("STRANDS_AMQP_PREFETCH") {
            None => DEFAULT_PREFETCH,
            Some(v) => v.parse::<u16>().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_AMQP_PREFETCH: `{v}` is not a whole number from 1 to 65535"
                ))
            })?,
        };
        let max_deliveries = match set("STRANDS_AMQP_MAX_DELIVERIES") {
            None => DEFAULT_MAX_DELIVERIES,
            Some(v) => v.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_AMQP_MAX_DELIVERIES: `{v}` is not a whole number from 1 up"
                ))
            })?,
        };
        let give_up = match set("STRANDS_AMQP_GIVE_UP") {
            None => crate::webhook::DEFAULT_GIVE_UP,
            Some(v) => crate::webhook::parse_span(&v).ok_or_else(|| {
                Error::Usage(format!(
                    "STRANDS_AMQP_GIVE_UP: `{v}` is not a duration like 30s, 10m, 24h or 3d"
                ))
            })?,
        };
        Ok(Some(Config {
            url: SecretString::from(raw),
            exchange: name("STRANDS_AMQP_EXCHANGE", DEFAULT_EXCHANGE)?,
            queue: name("STRANDS_AMQP_QUEUE", DEFAULT_QUEUE)?,
            dead_letter: name("STRANDS_AMQP_DEAD_LETTER", DEFAULT_DEAD_LETTER)?,
            prefetch,
            max_deliveries,
            give_up,
            public_url: public_url.trim_end_matches('/').to_string(),
        }))
    }

    /// The broker's URL without its password.
    pub fn shown(&self) -> String {
        shown(self.url.expose_secret())
    }

    /// The RabbitMQ user strands connects as (the URL's, `guest` without
    /// one): the only user whose messages may name another sender
    /// (`x-strands-user-id`, on the copies of a message tried again).
    pub fn user(&self) -> String {
        self.url
            .expose_secret()
            .parse::<lapin::uri::AMQPUri>()
            .map(|u| u.authority.userinfo.username)
            .unwrap_or_else(|_| "guest".into())
    }

    /// The outbox's name for the exchange: `amqp:<exchange>`, the key of its
    /// cursor over the event sequence (the broker's address and password
    /// may change without losing the place). Webhook endpoints are http(s)
    /// URLs, so the two never meet.
    pub fn endpoint(&self) -> String {
        endpoint(&self.exchange)
    }
}

/// The outbox endpoint of `exchange` (see [`Config::endpoint`]).
pub fn endpoint(exchange: &str) -> String {
    format!("{}{exchange}", super::ENDPOINT_PREFIX)
}

/// `url` with its password masked.
fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("********"));
            }
            u.to_string()
        }
        Err(_) => "<invalid URL>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn unset_is_off_and_defaults_fill_the_rest() {
        assert!(Config::from_lookup(lookup(&[]), "http://x")
            .unwrap()
            .is_none());
        let c = Config::from_lookup(
            lookup(&[(
                "STRANDS_AMQP_URL",
                "amqps://strands:s3cret@mq.corp:5671/prod",
            )]),
            "http://x/",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.exchange, DEFAULT_EXCHANGE);
        assert_eq!(c.queue, DEFAULT_QUEUE);
        assert_eq!(c.dead_letter, DEFAULT_DEAD_LETTER);
        assert_eq!(c.prefetch, DEFAULT_PREFETCH);
        assert_eq!(c.max_deliveries, DEFAULT_MAX_DELIVERIES);
        assert_eq!(c.endpoint(), "amqp:strands.events");
        assert_eq!(c.shown(), "amqps://strands:********@mq.corp:5671/prod");
        assert_eq!(c.user(), "strands");
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn bad_values_name_their_variable() {
        let err = |pairs: &[(&str, &str)]| {
            Config::from_lookup(lookup(pairs), "http://x")
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("STRANDS_AMQP_URL", "http://mq")]).contains("STRANDS_AMQP_URL"));
        let url = ("STRANDS_AMQP_URL", "amqp://mq");
        assert!(err(&[url, ("STRANDS_AMQP_PREFETCH", "0")]).contains("STRANDS_AMQP_PREFETCH"));
        assert!(err(&[url, ("STRANDS_AMQP_MAX_DELIVERIES", "0")])
            .contains("STRANDS_AMQP_MAX_DELIVERIES"));
        assert!(err(&[url, ("STRANDS_AMQP_QUEUE", "a b")]).contains("STRANDS_AMQP_QUEUE"));
        assert!(err(&[url, ("STRANDS_AMQP_GIVE_UP", "soon")]).contains("STRANDS_AMQP_GIVE_UP"));
    }
}
