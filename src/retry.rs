//! One retry policy for every HTTP client strands runs: the model providers
//! and the Slack Web API.
//!
//! Both talk to services that fail transiently all the time: rate limits
//! (429), overloaded or restarting servers (5xx), timeouts and dropped
//! connections. Neither may give up on the first blip: a provider call can be
//! the last step of a workflow whose earlier steps are already paid for, and
//! an approval message must never be dropped. So both send their calls
//! through [`RetryPolicy::run`]: exponential backoff from [`backon`] with no
//! jitter (every wait is predictable, and tests can assert it), a bounded
//! number of retries, and a wait the server asked for (`Retry-After`) taking
//! the place of the computed backoff for that attempt.
//!
//! What this module does not do: decide which failures are worth another
//! attempt (each client sorts its own into a [`Retry`] through
//! [`Transient`]), or word the final error (each client knows what its
//! reader needs).

use std::future::Future;
use std::time::{Duration, SystemTime};

use backon::{BackoffBuilder, ExponentialBuilder, Retryable as _, Sleeper};
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// How often and how patiently a call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt: at most `max_retries + 1` attempts.
    pub max_retries: u32,
    /// The wait before the first retry; doubled for each later one.
    pub base_delay: Duration,
    /// No computed backoff is longer than this.
    pub max_delay: Duration,
    /// No server-requested wait (`Retry-After`) is longer than this; a
    /// longer request is cut to it.
    pub max_server_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_server_delay: Duration::from_secs(20),
        }
    }
}

/// Whether, and when, a failed attempt may be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Retrying cannot help: a 400, a 401, a request that cannot be built.
    Never,
    /// Transient: wait the policy's next backoff, then try again.
    Backoff,
    /// Transient, and the server said how long to wait: wait that long
    /// (capped at [`RetryPolicy::max_server_delay`]) instead of the backoff.
    After(Duration),
}

/// A failed attempt that knows whether it is worth another one.
pub trait Transient {
    fn retry(&self) -> Retry;
}

impl RetryPolicy {
    /// the environment (`crate::config`) with the environment given as a lookup
    /// function, so that it can be tested without touching the process
    /// environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut policy = RetryPolicy::default();
        if let Some(raw) = lookup("STRANDS_MAX_RETRIES") {
            match raw.trim().parse::<u32>() {
                Ok(n) => policy.max_retries = n,
                Err(_) => tracing::warn!(
                    value = %raw,
                    "ignoring STRANDS_MAX_RETRIES: not a non-negative integer"
                ),
            }
        }
        if let Some(raw) = lookup("STRANDS_RETRY_BASE_MS") {
            match raw.trim().parse::<u64>() {
                Ok(ms) => policy.base_delay = Duration::from_millis(ms),
                Err(_) => tracing::warn!(
                    value = %raw,
                    "ignoring STRANDS_RETRY_BASE_MS: not a non-negative integer"
                ),
            }
        }
        policy
    }

    /// The computed waits, as backon builds them: `base_delay`, doubled for
    /// each later retry, capped at `max_delay`, `max_retries` of them, no
    /// jitter.
    pub fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::new()
            // backon does not cap the first wait, so cap it here.
            .with_min_delay(self.base_delay.min(self.max_delay))
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_max_times(usize::try_from(self.max_retries).unwrap_or(usize::MAX))
    }

    /// The wait before retrying a failure classified as `retry`, given the
    /// next computed `backoff` (`None` once the retries are spent). `None`
    /// means do not retry.
    pub fn wait(&self, retry: Retry, backoff: Option<Duration>) -> Option<Duration> {
        match (retry, backoff) {
            (Retry::Never, _) | (_, None) => None,
            (Retry::Backoff, Some(computed)) => Some(computed),
            (Retry::After(asked), Some(_)) => Some(asked.min(self.max_server_delay)),
        }
    }

    /// Runs `attempt` until it succeeds, fails in a way retrying cannot fix,
    /// or the retries are spent, and returns its last result. `on_retry` is
    /// told each failure that will be retried and the wait before the retry,
    /// for logs and metrics.
    pub async fn run<T, E, F, Fut>(
        &self,
        attempt: F,
        on_retry: impl FnMut(&E, Duration),
    ) -> Result<T, E>
    where
        E: Transient,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_sleeping(attempt, on_retry, backon::TokioSleeper)
            .await
    }

    /// [`RetryPolicy::run`] with the sleeping done by `sleeper`, so that
    /// tests can record the waits instead of sitting through them.
    async fn run_sleeping<T, E, F, Fut>(
        &self,
        attempt: F,
        on_retry: impl FnMut(&E, Duration),
        sleeper: impl Sleeper,
    ) -> Result<T, E>
    where
        E: Transient,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        attempt
            .retry(self.backoff().build())
            .sleep(sleeper)
            .when(|e: &E| e.retry() != Retry::Never)
            .adjust(|e: &E, backoff| self.wait(e.retry(), backoff))
            .notify(on_retry)
            .await
    }
}

/// The wait a response's `Retry-After` header asks for, if it has a usable
/// one (see [`parse_retry_after`]).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_value(headers.get(RETRY_AFTER)?.to_str().ok()?)
}

/// The wait a `Retry-After` value asks for, from this machine's time of
/// day: an HTTP-date is an instant on the server's wall clock, so it is
/// measured against the system's, not the process's clock (a paused test
/// clock would make the wait meaningless). The one reading of the time of
/// day outside [`crate::clock`].
pub fn retry_after_value(value: &str) -> Option<Duration> {
    parse_retry_after(value, SystemTime::now())
}

/// Parses a `Retry-After` value: whole seconds (`"0"`, `"12"`) or an
/// HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`), the wait then being the
/// time from `now` until that date, zero if it has passed. Anything else
/// is `None`, and the caller backs off instead.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use std::cell::Cell;
    use std::sync::{Arc, Mutex};

    /// A failure that says how to retry it.
    #[derive(Debug, PartialEq)]
    struct Fake(Retry);

    impl Transient for Fake {
        fn retry(&self) -> Retry {
            self.0
        }
    }

    /// What one run did: its result, how many attempts it made, the waits
    /// it slept and the waits it announced.
    struct Ran {
        result: Result<&'static str, Fake>,
        attempts: u32,
        slept: Vec<Duration>,
        told: Vec<Duration>,
    }

    /// Runs `policy` over attempts whose failures are `failures`, in order,
    /// after which the attempt succeeds.
    async fn run(policy: RetryPolicy, failures: &[Retry]) -> Ran {
        let slept = Arc::new(Mutex::new(Vec::new()));
        let sleeper = {
            let slept = slept.clone();
            move |d: Duration| {
                slept.lock().expect("lock").push(d);
                std::future::ready(())
            }
        };
        let attempts = Cell::new(0u32);
        let mut told = Vec::new();
        let result = policy
            .run_sleeping(
                || {
                    let n = attempts.get();
                    attempts.set(n + 1);
                    let outcome = match failures.get(n as usize) {
                        Some(retry) => Err(Fake(*retry)),
                        None => Ok("done"),
                    };
                    std::future::ready(outcome)
                },
                |_, d| told.push(d),
                sleeper,
            )
            .await;
        let slept = slept.lock().expect("lock").clone();
        Ran {
            result,
            attempts: attempts.get(),
            slept,
            told,
        }
    }

    #[test]
    fn default_policy_matches_the_contract() {
        let p = RetryPolicy::default();
        assert_eq!(p.max_retries, 3);
        assert_eq!(p.base_delay, Duration::from_millis(500));
        assert_eq!(p.max_delay, Duration::from_secs(20));
        assert_eq!(p.max_server_delay, Duration::from_secs(20));
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 9,
            ..RetryPolicy::default()
        };
        let waits: Vec<u64> = p
            .backoff()
            .build()
            .map(|d| u64::try_from(d.as_millis()).expect("small"))
            .collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 8000, 16000, 20000, 20000, 20000]
        );
        // A base longer than the cap is cut to it from the first wait on.
        let slow = RetryPolicy {
            base_delay: Duration::from_secs(60),
            ..RetryPolicy::default()
        };
        assert!(slow.backoff().build().all(|d| d == slow.max_delay));
        let none = RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        };
        assert_eq!(none.backoff().build().count(), 0);
    }

    #[tokio::test]
    async fn a_429_with_retry_after_waits_that_long() {
        let ran = run(
            RetryPolicy::default(),
            &[Retry::After(Duration::from_secs(3))],
        )
        .await;
        assert_eq!(ran.result, Ok("done"));
        assert_eq!(ran.attempts, 2);
        assert_eq!(ran.slept, [Duration::from_secs(3)]);
        assert_eq!(ran.told, ran.slept);
    }

    #[tokio::test]
    async fn a_server_asked_wait_is_capped_and_does_not_extend_the_retries() {
        let p = RetryPolicy {
            max_retries: 1,
            ..RetryPolicy::default()
        };
        let hour = Retry::After(Duration::from_secs(3600));
        let ran = run(p, &[hour, hour, hour]).await;
        assert_eq!(ran.result, Err(Fake(hour)));
        assert_eq!(ran.attempts, 2);
        assert_eq!(ran.slept, [p.max_server_delay]);
    }

    #[tokio::test]
    async fn server_errors_back_off_exponentially() {
        let ran = run(RetryPolicy::default(), &[Retry::Backoff; 3]).await;
        assert_eq!(ran.result, Ok("done"));
        assert_eq!(ran.attempts, 4);
        assert_eq!(
            ran.slept,
            [500, 1000, 2000].map(Duration::from_millis),
            "no jitter"
        );
    }

    #[tokio::test]
    async fn a_server_asked_wait_replaces_one_backoff_only() {
        let ran = run(
            RetryPolicy::default(),
            &[Retry::Backoff, Retry::After(Duration::ZERO), Retry::Backoff],
        )
        .await;
        assert_eq!(ran.result, Ok("done"));
        assert_eq!(
            ran.slept,
            [500, 0, 2000].map(Duration::from_millis),
            "the backoff keeps counting under a Retry-After"
        );
    }

    #[tokio::test]
    async fn a_failure_retrying_cannot_fix_is_not_retried() {
        let ran = run(RetryPolicy::default(), &[Retry::Never]).await;
        assert_eq!(ran.result, Err(Fake(Retry::Never)));
        assert_eq!(ran.attempts, 1);
        assert!(ran.slept.is_empty());
        assert!(ran.told.is_empty());
    }

    #[tokio::test]
    async fn attempts_are_capped() {
        let ran = run(RetryPolicy::default(), &[Retry::Backoff; 10]).await;
        assert_eq!(ran.result, Err(Fake(Retry::Backoff)));
        assert_eq!(ran.attempts, 4, "the first attempt and 3 retries");
        assert_eq!(ran.slept.len(), 3);

        let once = RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        };
        let ran = run(once, &[Retry::After(Duration::ZERO)]).await;
        assert_eq!(ran.attempts, 1);
        assert!(ran.slept.is_empty());
    }

    #[tokio::test]
    async fn run_sleeps_for_real() {
        let p = RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        };
        let attempts = Cell::new(0);
        let started = std::time::Instant::now();
        let result: Result<(), Fake> = p
            .run(
                || {
                    attempts.set(attempts.get() + 1);
                    std::future::ready(Err(Fake(Retry::Backoff)))
                },
                |_, _| {},
            )
            .await;
        assert!(result.is_err());
        assert_eq!(attempts.get(), 3);
        assert!(started.elapsed() >= Duration::from_millis(60));
    }

    #[test]
    fn retry_after_parsing() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").expect("date");
        let parse = |v| parse_retry_after(v, now);
        assert_eq!(parse("0"), Some(Duration::ZERO));
        assert_eq!(parse(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:28:30 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:00:00 GMT"),
            Some(Duration::ZERO),
            "a date already passed means now"
        );
        assert_eq!(parse("-1"), None);
        assert_eq!(parse("1.5"), None);
        assert_eq!(parse("soon"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn retry_after_reads_the_header() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("later"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn policy_from_lookup() {
        let p = RetryPolicy::from_lookup(|k| match k {
            "STRANDS_MAX_RETRIES" => Some("7".into()),
            "STRANDS_RETRY_BASE_MS" => Some("25".into()),
            _ => None,
        });
        assert_eq!(p.max_retries, 7);
        assert_eq!(p.base_delay, Duration::from_millis(25));
        assert_eq!(p.max_delay, Duration::from_secs(20));

        let bad = RetryPolicy::from_lookup(|_| Some("lots".into()));
        assert_eq!(bad, RetryPolicy::default());
        assert_eq!(RetryPolicy::from_lookup(|_| None), RetryPolicy::default());
    }
}
