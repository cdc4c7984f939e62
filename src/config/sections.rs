//! The settings tree's sections that the store and the hub are handed:
//! the store's (sled's cache, PostgreSQL's pool), the lease, and the pace
//! of re-posting at start-up. Plain data, built from the variables of
//! [`super::vars`] by [`super::Settings`]; the store and the hub read
//! these, never the environment.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

/// Where sessions are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// sled's page cache, in MB (`STRANDS_STORE_CACHE_MB`).
    pub cache_mb: u64,
    /// PostgreSQL, when the store is a database URL.
    pub postgres: PgSettings,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            cache_mb: 64,
            postgres: PgSettings::default(),
        }
    }
}

impl StoreSettings {
    /// `STRANDS_STORE_CACHE_MB` (a value that is not a positive number
    /// keeps the default) and PostgreSQL's settings (a value that is not a
    /// number is an error naming the variable).
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<StoreSettings> {
        Ok(StoreSettings {
            cache_mb: get("STRANDS_STORE_CACHE_MB")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|mb| *mb > 0)
                .unwrap_or(64),
            postgres: PgSettings::from_lookup(get)?,
        })
    }

    /// sled's cache in bytes.
    pub fn cache_bytes(&self) -> u64 {
        self.cache_mb.saturating_mul(1024 * 1024)
    }
}

/// How to reach a PostgreSQL store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgSettings {
    pub pool_size: usize,
    pub statement_timeout: Duration,
    pub connect_timeout: Duration,
    /// How often the event listener reads the event head as well (in case
    /// a `NOTIFY` was missed).
    pub events_poll: Duration,
    /// Extra CA certificates (PEM) for TLS.
    pub ca_file: Option<PathBuf>,
}

impl Default for PgSettings {
    fn default() -> Self {
        PgSettings {
            pool_size: 16,
            statement_timeout: Duration::from_millis(30_000),
            connect_timeout: Duration::from_secs(10),
            events_poll: Duration::from_secs(5),
            ca_file: None,
        }
    }
}

impl PgSettings {
    /// `STRANDS_PG_*` through `get`; a value that is not a whole number is
    /// an error naming the variable.
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<PgSettings> {
        let num = |name: &str, default: u64| -> Result<u64> {
            match get(name) {
                Some(v) if !v.trim().is_empty() => v
                    .trim()
                    .parse()
                    .map_err(|_| Error::Usage(format!("{name}={v:?} is not a whole number"))),
                _ => Ok(default),
            }
        };
        Ok(PgSettings {
            pool_size: num("STRANDS_PG_POOL_SIZE", 16)?.max(1) as usize,
            statement_timeout: Duration::from_millis(num(
                "STRANDS_PG_STATEMENT_TIMEOUT_MS",
                30_000,
            )?),
            connect_timeout: Duration::from_secs(
                num("STRANDS_PG_CONNECT_TIMEOUT_SECS", 10)?.max(1),
            ),
            events_poll: Duration::from_secs(num("STRANDS_PG_EVENTS_POLL_SECS", 5)?.max(1)),
            ca_file: get("STRANDS_PG_CA_FILE")
                .filter(|v| !v.is_empty())
                .map(Into::into),
        })
    }
}

/// A lease lasts 30 s unless `STRANDS_LEASE_SECS` says otherwise (a value
/// that is not a positive number keeps it); it is renewed every third of
/// that, and lapsed leases are looked for as often, so a run whose replica
/// died goes on elsewhere within 4/3 of it (40 s).
pub fn lease_from_lookup(get: &impl Fn(&str) -> Option<String>) -> Duration {
    let secs = get("STRANDS_LEASE_SECS")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(30);
    Duration::from_secs(secs)
}

/// How many runs `serve` drives at once: `STRANDS_DRIVES`, else 32 per
/// core (a drive mostly waits on a model or a tool); a value that is not a
/// positive number keeps the default, with a warning.
pub fn drives_from_lookup(get: &impl Fn(&str) -> Option<String>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let default = 32 * cores;
    match get("STRANDS_DRIVES") {
        None => default,
        Some(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                tracing::warn!(value = %raw, "ignoring STRANDS_DRIVES: not a positive integer");
                default
            }
        },
    }
}

/// How fast start-up asks again where a room never asked (`hub::repost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Re-posts in flight at once (at least 1).
    pub concurrency: usize,
    /// The least time between the starts of two re-posts.
    pub interval: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            concurrency: 4,
            interval: Duration::from_secs(1),
        }
    }
}

impl Pace {
    /// `STRANDS_REPOST_CONCURRENCY` and `STRANDS_REPOST_INTERVAL_MS`
    /// through `lookup`; a value that is not a number (or a concurrency of
    /// 0) is ignored, with a warning, for the default.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Pace {
        let mut pace = Pace::default();
        if let Some(raw) = lookup("STRANDS_REPOST_CONCURRENCY") {
            match raw.trim().parse::<usize>() {
                Ok(n) if n > 0 => pace.concurrency = n,
                _ => tracing::warn!(
                    value = %raw,
                    "ignoring STRANDS_REPOST_CONCURRENCY: not a positive integer"
                ),
            }
        }
        if let Some(raw) = lookup("STRANDS_REPOST_INTERVAL_MS") {
            match raw.trim().parse::<u64>() {
                Ok(ms) => pace.interval = Duration::from_millis(ms),
                Err(_) => tracing::warn!(
                    value = %raw,
                    "ignoring STRANDS_REPOST_INTERVAL_MS: not a non-negative integer"
                ),
            }
        }
        pace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_and_lease_settings_name_the_bad_variable() {
        let get = |k: &str| match k {
            "STRANDS_STORE_CACHE_MB" => Some("8".to_string()),
            "STRANDS_PG_POOL_SIZE" => Some("0".to_string()),
            "STRANDS_LEASE_SECS" => Some("nope".to_string()),
            _ => None,
        };
        let s = StoreSettings::from_lookup(&get).expect("ok");
        assert_eq!(s.cache_bytes(), 8 * 1024 * 1024);
        assert_eq!(s.postgres.pool_size, 1, "at least one connection");
        assert_eq!(lease_from_lookup(&get), Duration::from_secs(30));
        let e = PgSettings::from_lookup(&|k: &str| {
            (k == "STRANDS_PG_STATEMENT_TIMEOUT_MS").then(|| "soon".to_string())
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("STRANDS_PG_STATEMENT_TIMEOUT_MS"),
            "{e}"
        );
        assert_eq!(
            StoreSettings::from_lookup(&|_: &str| None).expect("ok"),
            StoreSettings::default()
        );
    }
}
