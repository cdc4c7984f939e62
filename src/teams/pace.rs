//! Pacing per conversation: Teams lets a bot make at most 7 operations a
//! second in one conversation, 8 in 2 s, 60 in 30 s and 1,800 an hour
//! (Microsoft's "rate limiting for bots"); past that it answers 429. The
//! [`Pacer`] spaces the Connector calls to one conversation so that no
//! window is ever over its limit, while other conversations go on
//! unhindered.
//!
//! How: each conversation keeps the times of its recent calls, oldest
//! first (a sliding-window log). A call takes the earliest slot at which
//! every window still has room — never before the conversation's last slot,
//! so callers go in turn — records it, and sleeps until it. A window counts
//! [`MARGIN`] longer than Teams' own, so that the network's jitter cannot
//! bunch calls that left spaced.
//!
//! Memory stays bounded: a conversation keeps at most as many times as the
//! largest window allows (1,800), times older than the longest window are
//! dropped, and a conversation with none left is forgotten (checked at
//! most once a minute, on the next call).
//!
//! Time is tokio's: the real clock in the service, paused and advanced in
//! tests (`tokio::time::pause`); [`Windows`] itself takes the time as an
//! argument. Why not `governor`: its GCRA gives one rate and a burst per
//! limiter, which is not a sliding window (after a burst of 7 it lets
//! more through within the same second), and four limiters checked one
//! after the other would spend a cell in one that another then refuses.
//!
//! What this does not do: pace the per-tenant limit (50 a second for the
//! whole app), or give a slot back when its caller gives up waiting (the
//! slot then goes unused).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// One limit: at most `max` calls in any `span`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub max: usize,
    pub span: Duration,
}

/// Teams' limits per bot per conversation.
pub const TEAMS_WINDOWS: [Window; 4] = [
    Window {
        max: 7,
        span: Duration::from_secs(1),
    },
    Window {
        max: 8,
        span: Duration::from_secs(2),
    },
    Window {
        max: 60,
        span: Duration::from_secs(30),
    },
    Window {
        max: 1800,
        span: Duration::from_secs(3600),
    },
];

/// How much longer than Teams' each window is counted.
pub const MARGIN: Duration = Duration::from_millis(100);

/// How often conversations with nothing recent are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The limits, and the recent calls of each conversation.
#[derive(Debug)]
pub struct Windows {
    limits: Vec<Window>,
    margin: Duration,
    /// The most calls any window allows: older times never matter.
    keep: usize,
    /// The longest window, margin included: older times never matter.
    longest: Duration,
    calls: HashMap<String, VecDeque<Instant>>,
    swept_at: Option<Instant>,
}

impl Windows {
    /// `limits`, each counted `margin` longer (a limit of 0 calls is
    /// ignored).
    pub fn new(limits: &[Window], margin: Duration) -> Windows {
        Windows {
            limits: limits.iter().copied().filter(|w| w.max > 0).collect(),
            margin,
            keep: limits.iter().map(|w| w.max).max().unwrap_or(0),
            longest: limits.iter().map(|w| w.span).max().unwrap_or_default() + margin,
            calls: HashMap::new(),
            swept_at: None,
        }
    }

    /// Takes the earliest slot at or after `now` for a call in
    /// conversation `key` that keeps every window within its limit, and
    /// records it; the slot.
    pub fn take(&mut self, key: &str, now: Instant) -> Instant {
        self.sweep(now);
        let calls = self.calls.entry(key.to_string()).or_default();
        // Callers go in turn: never before the last slot taken.
        let mut at = calls.back().map_or(now, |last| (*last).max(now));
        for w in &self.limits {
            // With `max` calls in the window ending at `at` there is no
            // room: wait until the `max`-th latest has left it.
            if let Some(nth) = calls.len().checked_sub(w.max).map(|i| calls[i]) {
                at = at.max(nth + w.span + self.margin);
            }
        }
        calls.push_back(at);
        while calls.len() > self.keep {
            calls.pop_front();
        }
        at
    }

    /// How many conversations are remembered.
    pub fn conversations(&self) -> usize {
        self.calls.len()
    }

    /// Drops times older than the longest window, and conversations left
    /// with none; at most once per [`SWEEP_EVERY`].
    fn sweep(&mut self, now: Instant) {
        if self
            .swept_at
            .is_some_and(|at| now.saturating_duration_since(at) < SWEEP_EVERY)
        {
            return;
        }
        self.swept_at = Some(now);
        let longest = self.longest;
        self.calls.retain(|_, calls| {
            while calls
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) >= longest)
            {
                calls.pop_front();
            }
            !calls.is_empty()
        });
    }
}

/// Paces calls per conversation; one per connector, shared by its callers.
#[derive(Debug)]
pub struct Pacer {
    windows: Mutex<Windows>,
}

impl Default for Pacer {
    /// Teams' limits.
    fn default() -> Pacer {
        Pacer::new(&TEAMS_WINDOWS, MARGIN)
    }
}

impl Pacer {
    pub fn new(limits: &[Window], margin: Duration) -> Pacer {
        Pacer {
            windows: Mutex::new(Windows::new(limits, margin)),
        }
    }

    /// Waits for a slot for one call in conversation `key`; the time
    /// waited.
    pub async fn wait(&self, key: &str) -> Duration {
        let now = Instant::now();
        let at = self
            .windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(key, now);
        if at > now {
            tokio::time::sleep_until(at).await;
        }
        at - now
    }

    /// How many conversations are remembered.
    pub fn conversations(&self) -> usize {
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .conversations()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The most slots of `slots` in any window of `span` (half-open).
    fn busiest(slots: &[Instant], span: Duration) -> usize {
        slots
            .iter()
            .map(|start| {
                slots
                    .iter()
                    .filter(|t| **t >= *start && **t - *start < span)
                    .count()
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn teams_pace_windows_are_never_over_their_limits() {
        let mut w = Windows::new(&TEAMS_WINDOWS, Duration::ZERO);
        let t0 = Instant::now();
        // 130 calls asked for at once: each gets a slot.
        let slots: Vec<Instant> = (0..130).map(|_| w.take("c", t0)).collect();
        for limit in TEAMS_WINDOWS {
            assert!(
                busiest(&slots, limit.span) <= limit.max,
                "{limit:?}: {}",
                busiest(&slots, limit.span)
            );
        }
        // The first 7 go at once, the 8th a second later, the 9th at 2 s.
        let after = |i: usize| slots[i] - t0;
        assert_eq!(after(6), Duration::ZERO);
        assert_eq!(after(7), Duration::from_secs(1));
        assert_eq!(after(8), Duration::from_secs(2));
        // 60 in 30 s: the 61st waits for the first to leave that window.
        assert!(after(60) >= Duration::from_secs(30), "{:?}", after(60));
        // Slots never go backwards.
        assert!(slots.windows(2).all(|p| p[0] <= p[1]));
    }

    #[test]
    fn teams_pace_a_spaced_caller_is_not_slowed() {
        let mut w = Windows::new(&TEAMS_WINDOWS, MARGIN);
        let t0 = Instant::now();
        for i in 0..20 {
            let now = t0 + Duration::from_millis(500) * i;
            assert_eq!(w.take("c", now), now, "call {i}");
        }
    }

    #[test]
    fn teams_pace_conversations_do_not_share_windows() {
        let mut w = Windows::new(&TEAMS_WINDOWS, MARGIN);
        let t0 = Instant::now();
        for _ in 0..20 {
            w.take("busy", t0);
        }
        assert_eq!(w.take("quiet", t0), t0);
        assert_eq!(w.conversations(), 2);
    }

    #[test]
    fn teams_pace_the_margin_widens_each_window() {
        let mut w = Windows::new(
            &[Window {
                max: 2,
                span: Duration::from_secs(1),
            }],
            Duration::from_millis(50),
        );
        let t0 = Instant::now();
        assert_eq!(w.take("c", t0), t0);
        assert_eq!(w.take("c", t0), t0);
        assert_eq!(w.take("c", t0), t0 + Duration::from_millis(1050));
    }

    #[test]
    fn teams_pace_idle_conversations_are_forgotten_and_memory_is_bounded() {
        let mut w = Windows::new(&TEAMS_WINDOWS, MARGIN);
        let t0 = Instant::now();
        for i in 0..100 {
            w.take(&format!("c{i}"), t0);
        }
        assert_eq!(w.conversations(), 100);
        // An hour on, a call to another conversation sweeps them out.
        let later = t0 + Duration::from_secs(3600) + MARGIN;
        w.take("new", later);
        assert_eq!(w.conversations(), 1);
        // A conversation never keeps more times than the largest window.
        let mut now = later;
        for _ in 0..2000 {
            now = w.take("new", now);
        }
        assert!(w.calls["new"].len() <= 1800);
    }

    #[tokio::test(start_paused = true)]
    async fn teams_pace_waiters_sleep_until_their_slot() {
        let pacer = Arc::new(Pacer::default());
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for i in 0..20 {
            let pacer = pacer.clone();
            let key = if i % 5 == 4 { "other" } else { "busy" };
            tasks.push(tokio::spawn(async move {
                pacer.wait(key).await;
                (key, Instant::now())
            }));
        }
        let mut busy = Vec::new();
        let mut other = Vec::new();
        for t in tasks {
            let (key, at) = t.await.expect("joined");
            if key == "busy" {
                busy.push(at);
            } else {
                other.push(at);
            }
        }
        assert_eq!(busy.len(), 16);
        assert!(busiest(&busy, Duration::from_secs(1)) <= 7);
        assert!(busiest(&busy, Duration::from_secs(2)) <= 8);
        // The other conversation's 4 calls went at once.
        assert!(other.iter().all(|at| *at == t0), "{other:?}");
    }
}
