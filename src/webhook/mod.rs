//! Outbound webhooks: every event a run reports (a gate opened or
//! answered, a timeout, the end of a run — not `step.done`) is POSTed to
//! each configured endpoint as a signed [Standard Webhooks] message.
//!
//! Delivery goes through the store's outbox, never straight from the
//! engine: the store queues a delivery per endpoint for each event (a
//! cursor per endpoint over the event log, moved in the transaction that
//! queues), and the [`Deliverer`] takes the due ones, posts them and
//! settles each — delivered (2xx), retried later, or given up. So a webhook
//! survives crashes and restarts, carries the same `webhook-id` on every
//! attempt (receivers drop duplicates by it), and a slow or dead endpoint
//! never holds up a run.
//!
//! Retries: connection errors, timeouts (10 s per request), 408, 429 and
//! 5xx back off exponentially from about a second (doubling, capped at 10
//! minutes, with jitter; a `Retry-After` takes the place of the backoff)
//! until `STRANDS_WEBHOOK_GIVE_UP` after the first attempt; any other
//! status (redirects are not followed) gives up at once. Given-up
//! deliveries are kept (`strands webhooks failed`).
//!
//! The same outbox carries events to the queue room's exchange: an
//! endpoint `amqp:<exchange>` is handed to the [`Exchange`] the service
//! gave (`crate::amqp`), which publishes and waits for the broker's
//! confirm; cursor, lease, backoff and the given-up list are the ones
//! above (its give-up time is the exchange's own).
//!
//! What this module does not do: decide which events exist (the engine
//! writes them, `crate::model::event`), serve the API the links point to,
//! or start itself — `strands serve` runs [`Deliverer::run`].
//!
//! [Standard Webhooks]: https://www.standardwebhooks.com/

mod config;
mod payload;

pub use config::{parse_span, Config, DEFAULT_GIVE_UP};
pub use payload::{page_link, payload};

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use secrecy::ExposeSecret;

use crate::error::{Error, Result};
use crate::model::webhook::{Delivery, Settle};
use crate::model::Session;
use crate::store::Store;

/// How the outbox names an exchange of the queue room: `amqp:<exchange>`
/// (webhook endpoints are http(s) URLs, so the two never meet).
pub const EXCHANGE_PREFIX: &str = "amqp:";

/// Where deliveries to an `amqp:` endpoint go: the queue room's exchange,
/// handed in by the service (the room is a door, above this module).
pub trait Exchange: Send + Sync + 'static {
    /// Its outbox endpoint, `amqp:<exchange>`.
    fn endpoint(&self) -> String;
    /// How long an event is retried before it is given up.
    fn give_up(&self) -> Duration;
    /// The longest wait between two attempts (a broker coming back should
    /// get what waited at once, not minutes later).
    fn max_backoff(&self) -> Duration;
    /// Publishes `d` with its payload `body`; `ended`: the session, when
    /// the event ended its run. `Ok` once the broker confirmed it.
    fn publish<'a>(
        &'a self,
        d: &'a Delivery,
        body: Vec<u8>,
        ended: Option<Session>,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send + 'a>>;
}

/// The time limit of one POST.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The first retry's backoff (before jitter).
pub const BASE_DELAY: Duration = Duration::from_secs(1);
/// No computed backoff is longer.
pub const MAX_DELAY: Duration = Duration::from_secs(600);
/// How long a delivery taken for an attempt is not taken again; an attempt
/// that died with its process is retried after it at the latest (at once
/// on sled, if the process died before its next sync). Well over
/// [`REQUEST_TIMEOUT`].
pub const LEASE: Duration = Duration::from_secs(60);
/// Deliveries posted at once.
pub const CONCURRENCY: usize = 8;
/// The longest the deliverer sleeps without looking at the store.
pub const POLL: Duration = Duration::from_secs(5);
/// Deliveries queued per endpoint per round.
const BATCH: usize = 256;
/// Deliveries taken per round: few enough that the last one is posted
/// well within its lease even when every post runs into its timeout
/// (24 / 8 at once × 10 s = 30 s < 60 s). A busy deliverer starts the
/// next round at once.
const TAKE: usize = CONCURRENCY * 3;
const _: () = assert!((TAKE / CONCURRENCY) as u64 * REQUEST_TIMEOUT.as_secs() < LEASE.as_secs());
/// Deliveries taken per round when the only endpoint is the queue room's
/// exchange: its publishes go out all at once on one channel, each
/// waiting at most the link's confirm timeout (10 s, well within the
/// lease), so a burst is not cut into rounds of [`TAKE`], each paying the
/// store's writes and the broker's confirm in turn.
const EXCHANGE_TAKE: usize = BATCH;
/// How often a round with posts out looks for events written since it
/// began: each look that finds some is two store writes (queue, take;
/// on sled, durable with the next sync rather than each its own).
const REFILL: Duration = Duration::from_millis(10);
const _: () = assert!(EXCHANGE_TAKE >= TAKE);

/// Counters for `/metrics`: HTTP webhooks and publishes to the queue
/// room's exchange apart (an exchange is not a webhook).
#[derive(Debug, Default)]
pub struct Stats {
    /// HTTP webhook deliveries.
    http: Outcomes,
    /// Publishes to the exchange (`amqp:<exchange>`).
    exchange: Outcomes,
    /// Whether the deliverer has webhook endpoints / an exchange (a
    /// family of counters is shown only for what is configured).
    http_on: AtomicBool,
    exchange_on: AtomicBool,
}

/// Attempts by how they settled.
#[derive(Debug, Default)]
struct Outcomes {
    delivered: AtomicU64,
    retried: AtomicU64,
    gave_up: AtomicU64,
}

impl Outcomes {
    /// `(outcome, count)`, the successes named `delivered`.
    fn read(&self, delivered: &'static str) -> [(&'static str, u64); 3] {
        [
            (delivered, self.delivered.load(Ordering::Relaxed)),
            ("retried", self.retried.load(Ordering::Relaxed)),
            ("gave_up", self.gave_up.load(Ordering::Relaxed)),
        ]
    }

    fn count(&self, outcome: &Settle) {
        let counter = match outcome {
            Settle::Delivered => &self.delivered,
            Settle::Retry { .. } => &self.retried,
            Settle::GaveUp { .. } => &self.gave_up,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Stats {
    /// HTTP webhook attempts, `(outcome, count)`: `delivered` (2xx),
    /// `retried` (failed attempts scheduled again), `gave_up` (moved to
    /// the failed deliveries); `None` without webhook endpoints.
    pub fn counters(&self) -> Option<[(&'static str, u64); 3]> {
        (self.http_on.load(Ordering::Relaxed)).then(|| self.http.read("delivered"))
    }

    /// Publishes to the exchange, `(outcome, count)`: `published`
    /// (confirmed by the broker), `retried`, `gave_up`; `None` without the
    /// queue room.
    pub fn published(&self) -> Option<[(&'static str, u64); 3]> {
        (self.exchange_on.load(Ordering::Relaxed)).then(|| self.exchange.read("published"))
    }

    fn count(&self, d: &Delivery, outcome: &Settle) {
        if d.endpoint.starts_with(EXCHANGE_PREFIX) {
            self.exchange.count(outcome);
        } else {
            self.http.count(outcome);
        }
    }
}

/// What one POST came to.
#[derive(Debug, Clone, PartialEq)]
enum Attempt {
    /// 2xx.
    Delivered,
    /// Worth another attempt; `after`: the wait the endpoint asked for.
    Transient {
        error: String,
        after: Option<Duration>,
    },
    /// Retrying cannot help.
    Permanent { error: String },
}

/// Posts the store's due webhook deliveries and settles them.
pub struct Deliverer {
    config: Config,
    stats: Arc<Stats>,
    http: reqwest::Client,
    /// `None` without webhook endpoints (only the exchange).
    signer: Option<Arc<standardwebhooks::Webhook>>,
    exchange: Option<Arc<dyn Exchange>>,
    base_delay: Duration,
    poll: Duration,
}

impl Deliverer {
    /// A deliverer for `config`, counting into `stats`.
    pub fn new(config: Config, stats: Arc<Stats>) -> Result<Deliverer> {
        let signer = if config.endpoints.is_empty() {
            None
        } else {
            Some(Arc::new(
                standardwebhooks::Webhook::new(config.secret.expose_secret()).map_err(|_| {
                    Error::Usage("STRANDS_WEBHOOK_SECRET is not valid base64".into())
                })?,
            ))
        };
        let http = crate::http::builder()
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("strands/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                Error::Runtime(format!(
                    "webhooks: could not set up the HTTP client: {}",
                    crate::error::transport(e)
                ))
            })?;
        stats
            .http_on
            .store(!config.endpoints.is_empty(), Ordering::Relaxed);
        Ok(Deliverer {
            config,
            stats,
            http,
            signer,
            exchange: None,
            base_delay: BASE_DELAY,
            poll: POLL,
        })
    }

    /// With the queue room's exchange as one more endpoint.
    pub fn with_exchange(mut self, exchange: Arc<dyn Exchange>) -> Deliverer {
        let endpoint = exchange.endpoint();
        if !self.config.endpoints.contains(&endpoint) {
            self.config.endpoints.push(endpoint);
        }
        self.exchange = Some(exchange);
        self.stats.exchange_on.store(true, Ordering::Relaxed);
        self
    }

    /// The first retry's backoff (tests make it short).
    pub fn with_base_delay(mut self, base: Duration) -> Deliverer {
        self.base_delay = base;
        self
    }

    /// The longest sleep between looks at the store (tests make it short).
    pub fn with_poll(mut self, poll: Duration) -> Deliverer {
        self.poll = poll;
        self
    }

    /// One round: queues the events written since the last one, posts
    /// every delivery due (at most [`CONCURRENCY`] at once) and settles
    /// each. While its posts are out, events written meanwhile are queued
    /// and taken too, every [`REFILL`] at most, up to [`Self::take`] in
    /// hand: a burst flows on instead of waiting for the slowest post of
    /// the round. Returns how many were attempted.
    pub async fn run_once(&self, store: &Store) -> Result<usize> {
        // Told of what is written from here on (the pull below takes
        // what came before).
        let mut written = store.subscribe_events();
        let take = self.take();
        let now = store.now();
        store
            .webhook_pull(&self.config.endpoints, now, BATCH)
            .await?;
        let due = store.webhook_due(now, LEASE, take).await?;
        let mut attempted = due.len();
        let mut waiting: std::collections::VecDeque<Delivery> = due.into();
        let mut refill = tokio::time::interval(REFILL);
        refill.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut posts = tokio::task::JoinSet::new();
        // What attempts came to, settled in one store write at a time: the
        // outcomes that finish while a write is under way go in the next.
        let mut ready: Vec<(Delivery, Settle)> = Vec::new();
        let mut settling = futures_util::stream::FuturesUnordered::new();
        // HTTP posts in flight (at most CONCURRENCY); publishes to the
        // exchange share one channel and go all at once (at most TAKE).
        let mut http = 0;
        loop {
            while let Some(next) = waiting.front() {
                let to_exchange = next.endpoint.starts_with(EXCHANGE_PREFIX);
                if !to_exchange && http >= CONCURRENCY {
                    break;
                }
                let Some(d) = waiting.pop_front() else { break };
                if !to_exchange {
                    http += 1;
                }
                let body = serde_json::to_vec(&payload(&d.event, &self.config.public_url));
                if d.endpoint.starts_with(EXCHANGE_PREFIX) {
                    // The run's end may owe a reply: the session, read now.
                    let ended = if d.event.what.is_final() {
                        store.load(&d.event.session).await.ok().flatten()
                    } else {
                        None
                    };
                    let exchange = self.exchange.clone();
                    posts.spawn(async move {
                        let attempt = match (body, exchange) {
                            (Ok(body), Some(x)) => match x.publish(&d, body, ended).await {
                                Ok(()) => Attempt::Delivered,
                                Err(error) => Attempt::Transient { error, after: None },
                            },
                            (_, None) => Attempt::Transient {
                                error: "the queue room is off (STRANDS_AMQP_URL unset)".into(),
                                after: None,
                            },
                            (Err(e), _) => Attempt::Permanent {
                                error: format!("could not encode the payload: {e}"),
                            },
                        };
                        (d, attempt)
                    });
                    continue;
                }
                let (http, signer) = (self.http.clone(), self.signer.clone());
                let signed_at = store.now().timestamp();
                posts.spawn(async move {
                    let attempt = match (body, signer) {
                        (Ok(body), Some(signer)) => post(&http, &signer, &d, body, signed_at).await,
                        (_, None) => Attempt::Transient {
                            error: "webhooks are off (STRANDS_WEBHOOK_URL unset)".into(),
                            after: None,
                        },
                        (Err(e), _) => Attempt::Permanent {
                            error: format!("could not encode the payload: {e}"),
                        },
                    };
                    (d, attempt)
                });
            }
            if settling.is_empty() {
                // Every attempt that ended meanwhile goes in this write: a
                // store call holds this task while it runs (the sled
                // backend's `block_in_place`), so several may have.
                while let Some(joined) = posts.try_join_next() {
                    ready.extend(self.finished(joined, &mut http, store.now()));
                }
                if !ready.is_empty() {
                    let batch = std::mem::take(&mut ready);
                    settling.push(async move {
                        let settled = store.webhook_settle(&batch).await;
                        (batch, settled)
                    });
                }
            }
            let joined = tokio::select! {
                Some(joined) = posts.join_next(), if !posts.is_empty() => joined,
                Some((batch, settled)) = settling.next(), if !settling.is_empty() => {
                    let () = settled?;
                    for (d, outcome) in &batch {
                        self.stats.count(d, outcome);
                    }
                    continue;
                }
                _ = refill.tick(), if !posts.is_empty() && posts.len() + waiting.len() < take => {
                    if written.has_changed().unwrap_or(false) {
                        written.borrow_and_update();
                        let now = store.now();
                        store
                            .webhook_pull(&self.config.endpoints, now, BATCH)
                            .await?;
                        let room = take - posts.len() - waiting.len();
                        let more = store.webhook_due(now, LEASE, room).await?;
                        attempted += more.len();
                        waiting.extend(more);
                    }
                    continue;
                }
                else => break,
            };
            ready.extend(self.finished(joined, &mut http, store.now()));
        }
        Ok(attempted)
    }

    /// What an ended attempt comes to, to be settled; one fewer HTTP post
    /// in flight if it was one. A post that panicked leaves its delivery
    /// leased (`None`): it is tried again when the lease ends.
    fn finished(
        &self,
        joined: std::result::Result<(Delivery, Attempt), tokio::task::JoinError>,
        http: &mut usize,
        now: DateTime<Utc>,
    ) -> Option<(Delivery, Settle)> {
        let (d, attempt) = match joined {
            Ok(done) => done,
            Err(e) => {
                // Which post it was is lost with it: the count of HTTP
                // posts in flight stays one high until the round ends.
                tracing::error!("webhook: a delivery task failed: {e}");
                return None;
            }
        };
        if !d.endpoint.starts_with(EXCHANGE_PREFIX) {
            *http -= 1;
        }
        let outcome = self.judge(&d, attempt, now);
        self.report(&d, &outcome);
        Some((d, outcome))
    }

    /// How many due deliveries a round takes: [`TAKE`] while any endpoint
    /// is an HTTP one (posted [`CONCURRENCY`] at once), [`EXCHANGE_TAKE`]
    /// when the exchange is the only one.
    fn take(&self) -> usize {
        let http = self
            .config
            .endpoints
            .iter()
            .any(|e| !e.starts_with(EXCHANGE_PREFIX));
        if http {
            TAKE
        } else {
            EXCHANGE_TAKE
        }
    }

    /// Runs rounds until `stop` completes: at once when this process
    /// writes an event, when the next retry is due, and at least every few
    /// seconds. A failing round is logged and tried again later.
    pub async fn run(&self, store: &Store, stop: impl Future<Output = ()>) {
        let mut events = store.subscribe_events();
        tokio::pin!(stop);
        loop {
            let busy = match self.run_once(store).await {
                Ok(n) => n > 0,
                Err(e) => {
                    tracing::warn!("webhooks: {e}");
                    false
                }
            };
            let wait = if busy {
                Duration::ZERO
            } else {
                self.idle_wait(store).await
            };
            tokio::select! {
                biased;
                () = &mut stop => return,
                () = async {
                    if events.changed().await.is_err() {
                        // The store is gone; only the clock wakes us now.
                        std::future::pending::<()>().await;
                    }
                } => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// How long to sleep: until the next delivery is due, at most
    /// the poll interval.
    async fn idle_wait(&self, store: &Store) -> Duration {
        match store.webhook_next_due().await {
            Ok(Some(at)) => (at - store.now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                .min(self.poll),
            Ok(None) => self.poll,
            Err(e) => {
                tracing::warn!("webhooks: {e}");
                self.poll
            }
        }
    }

    /// What to record for `attempt` on `d`, at `now`.
    fn judge(&self, d: &Delivery, attempt: Attempt, now: DateTime<Utc>) -> Settle {
        let (error, after) = match attempt {
            Attempt::Delivered => return Settle::Delivered,
            Attempt::Permanent { error } => return Settle::GaveUp { error },
            Attempt::Transient { error, after } => (error, after),
        };
        let give_up_after = match &self.exchange {
            Some(x) if d.endpoint.starts_with(EXCHANGE_PREFIX) => x.give_up(),
            _ => self.config.give_up,
        };
        let give_up =
            chrono::TimeDelta::from_std(give_up_after).unwrap_or(chrono::TimeDelta::MAX / 2);
        let deadline = d.first_attempt_at.unwrap_or(now) + give_up;
        if now >= deadline {
            return Settle::GaveUp {
                error: format!(
                    "{error} (still failing {} after the first attempt)",
                    span(give_up_after)
                ),
            };
        }
        // An asked-for wait is honoured, but never shorter than the base
        // backoff: `Retry-After: 0` on every answer must not spin.
        let wait = match after {
            Some(asked) => asked.max(self.base_delay),
            None => backoff(self.base_delay, d.attempts),
        };
        let wait = match &self.exchange {
            Some(x) if d.endpoint.starts_with(EXCHANGE_PREFIX) => wait.min(x.max_backoff()),
            _ => wait,
        };
        let at = chrono::TimeDelta::from_std(wait)
            .ok()
            .and_then(|w| now.checked_add_signed(w))
            .map_or(deadline, |at| at.min(deadline));
        Settle::Retry { at, error }
    }

    /// Logs an outcome worth a line (without the endpoint's credentials).
    fn report(&self, d: &Delivery, outcome: &Settle) {
        match outcome {
            Settle::Delivered => tracing::debug!(
                endpoint = %d.endpoint_shown(),
                msg_id = %d.msg_id,
                attempts = d.attempts,
                "webhook delivered"
            ),
            Settle::Retry { at, error } => tracing::info!(
                endpoint = %d.endpoint_shown(),
                msg_id = %d.msg_id,
                attempts = d.attempts,
                retry_at = %at,
                "webhook failed, will retry: {error}"
            ),
            Settle::GaveUp { error } => tracing::warn!(
                endpoint = %d.endpoint_shown(),
                msg_id = %d.msg_id,
                event = d.event.what.name(),
                session = %d.event.session,
                attempts = d.attempts,
                "webhook given up (see `strands webhooks failed`): {error}"
            ),
        }
    }
}

/// The wait before retry number `attempts` (1 after the first attempt):
/// `base` doubled per earlier attempt, capped at [`MAX_DELAY`], then
/// jittered down to between half and all of it (so endpoints coming back
/// are not hit by every delivery at once).
fn backoff(base: Duration, attempts: u32) -> Duration {
    let doublings = attempts.saturating_sub(1).min(31);
    let full = base
        .checked_mul(1u32 << doublings)
        .unwrap_or(MAX_DELAY)
        .min(MAX_DELAY);
    full.mul_f64(0.5 + fastrand::f64() * 0.5)
}

/// `24h`, `90s`: a duration as the settings write it.
fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s if s > 0 => format!("{s}s"),
        _ => format!("{}ms", d.as_millis()),
    }
}

/// POSTs `body` for `d`, signed at `timestamp` (now, in seconds), and
/// sorts the answer.
async fn post(
    http: &reqwest::Client,
    signer: &standardwebhooks::Webhook,
    d: &Delivery,
    body: Vec<u8>,
    timestamp: i64,
) -> Attempt {
    let signature = match signer.sign(&d.msg_id, timestamp, &body) {
        Ok(s) => s,
        Err(e) => {
            return Attempt::Permanent {
                error: format!("could not sign the payload: {e}"),
            }
        }
    };
    let sent = http
        .post(&d.endpoint)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(standardwebhooks::HEADER_WEBHOOK_ID, &d.msg_id)
        .header(
            standardwebhooks::HEADER_WEBHOOK_TIMESTAMP,
            timestamp.to_string(),
        )
        .header(standardwebhooks::HEADER_WEBHOOK_SIGNATURE, signature)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(response) => sort(response.status(), response.headers()),
        Err(e) if e.is_timeout() => Attempt::Transient {
            error: format!("no answer within {}s", REQUEST_TIMEOUT.as_secs()),
            after: None,
        },
        Err(e) => Attempt::Transient {
            error: crate::error::transport(e),
            after: None,
        },
    }
}

/// 2xx delivered; 408, 429 and 5xx transient (`Retry-After` honoured);
/// anything else — 3xx included, redirects are not followed — permanent.
fn sort(status: reqwest::StatusCode, headers: &reqwest::header::HeaderMap) -> Attempt {
    let error = match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    };
    if status.is_success() {
        Attempt::Delivered
    } else if status.is_server_error()
        || status == reqwest::StatusCode::TOO_MANY_REQUESTS
        || status == reqwest::StatusCode::REQUEST_TIMEOUT
    {
        Attempt::Transient {
            error,
            after: crate::retry::retry_after(headers),
        }
    } else if status.is_redirection() {
        Attempt::Permanent {
            error: format!("{error} (redirects are not followed: configure the final URL)"),
        }
    } else {
        Attempt::Permanent { error }
    }
}

#[cfg(test)]
mod tests;
