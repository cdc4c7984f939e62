//! Where "now" comes from. One [`Clock`] is made when the process starts
//! (`strands serve`, or one CLI command: [`system`]) and handed down to
//! everything that stamps or judges a time: the engine and its gates, the
//! timers, the intake, tokens', sign-ins' and one-tap links' expiry, audit
//! entries, the store's leases and `updated_at`, the webhook and mail
//! outboxes' backoff, delegation windows, calendars.
//!
//! It exists so that time is an input: a test runs a gate's timeout, a
//! link's expiry or a Friday-evening calendar on a paused ([`TokioClock`])
//! or set ([`FixedClock`]) clock instead of waiting for the wall clock.
//! This is the only module that reads the system's time of day; a test
//! below fails naming any other file that does (one exception, named
//! there: a `Retry-After` HTTP-date, an instant on the server's clock).
//!
//! The real clock ([`SystemClock`]) reads the system's time at each call
//! rather than counting from start-up, so a long-running service follows
//! the wall clock across a suspend or a stepped clock.
//!
//! It does not measure durations: elapsed times (latencies, timeouts of a
//! request, pacing between posts) use `tokio::time::Instant`, which tests
//! already pause.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, Utc};

/// Where "now" comes from.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The clock everything below the process's start is handed. Cheap to
/// clone.
pub type SharedClock = Arc<dyn Clock>;

impl std::fmt::Debug for dyn Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// A closure is a clock (`Arc::new(move || at)` in a test).
impl<F: Fn() -> DateTime<Utc> + Send + Sync> Clock for F {
    fn now(&self) -> DateTime<Utc> {
        self()
    }
}

/// The process's real clock: the system's time of day.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// The system's time of day, read at each call.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Wall-clock time that moves with tokio's clock: the real time in a
/// running program; paused, advanced time in tests (`tokio::time::pause`).
pub struct TokioClock {
    base: DateTime<Utc>,
    at: tokio::time::Instant,
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::starting_at(Utc::now())
    }
}

impl TokioClock {
    /// A clock that reads `base` now and moves with tokio's clock from
    /// there: tests start it on a chosen instant (a Friday afternoon).
    pub fn starting_at(base: DateTime<Utc>) -> TokioClock {
        TokioClock {
            base,
            at: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.at);
        TimeDelta::from_std(elapsed)
            .ok()
            .and_then(|d| self.base.checked_add_signed(d))
            .unwrap_or(self.base)
    }
}

/// A clock that stands still until told otherwise: tests set it to the
/// instant they need, or move it on.
#[derive(Debug)]
pub struct FixedClock(Mutex<DateTime<Utc>>);

impl FixedClock {
    pub fn at(at: DateTime<Utc>) -> FixedClock {
        FixedClock(Mutex::new(at))
    }

    /// Now reads `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    /// Now moves on by `by`.
    pub fn advance(&self, by: TimeDelta) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A fixed instant tests can share: 2025-01-15 10:00:00 UTC, a Wednesday.
#[cfg(test)]
pub fn test_epoch() -> DateTime<Utc> {
    DateTime::from_timestamp(1_736_935_200, 0).unwrap_or_default()
}

#[cfg(test)]
mod tests;
