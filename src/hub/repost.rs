//! Asking again, at start-up, where a room never asked: the paused runs
//! whose approval message was never posted (Slack was down past its
//! retries, or the runs paused through the CLI while no bot was serving).
//!
//! There may be thousands of them, and posting them all at once would be a
//! burst Slack answers with 429s (`chat.postMessage` takes about one
//! message per second per channel) while it holds up the clicks the
//! service is there to acknowledge. So they go through a queue that runs
//! in the background — start-up (`/healthz`, clicks) never waits for it —
//! and that stops when the service does ([`crate::hub::Hub::stopping`]):
//!
//! - ids are read from the store's unposted index a page at a time (never
//!   the whole index in memory);
//! - at most [`Pace::concurrency`] re-posts are in flight at once
//!   (`STRANDS_REPOST_CONCURRENCY`, default 4): each holds a permit until
//!   its drive ends, so a re-post waiting out a 429's `Retry-After` (the
//!   Slack client honours it, [`crate::slack::api`]) keeps its place and
//!   the queue slows down with it;
//! - re-posts start at least [`Pace::interval`] apart
//!   (`STRANDS_REPOST_INTERVAL_MS`, default 1000: one a second, Slack's
//!   per-channel rate — the queue does not know which channel each run
//!   asks in, so it paces as if they all shared one).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// Ids read from the unposted index at a time.
pub const PAGE: usize = 256;

/// How fast the queue goes: a section of the settings (`config::Pace`),
/// read once at start-up.
pub use crate::config::Pace;

/// Walks the index and starts a re-post for each id that needs one, at
/// `pace`, until the index is exhausted or `stop` is cancelled; returns how
/// many were started.
///
/// - `page(after, PAGE)`: the next ids of the index after `after`, in order
///   (fewer than `PAGE`: the last page);
/// - `due(id)`: whether `id` still needs asking (a stale entry does not,
///   and costs no place in the pace);
/// - `start(id, permit)`: starts the re-post, holding `permit` until it
///   ends (dropping it at once if nothing was started).
pub async fn run<P, PF, D, DF, S>(
    pace: Pace,
    stop: &CancellationToken,
    mut page: P,
    mut due: D,
    mut start: S,
) -> Result<usize>
where
    P: FnMut(Option<String>, usize) -> PF,
    PF: Future<Output = Result<Vec<String>>>,
    D: FnMut(String) -> DF,
    DF: Future<Output = bool>,
    S: FnMut(String, OwnedSemaphorePermit),
{
    let permits = Arc::new(Semaphore::new(pace.concurrency.max(1)));
    let mut after: Option<String> = None;
    let mut next_start: Option<Instant> = None;
    let mut started = 0usize;
    loop {
        if stop.is_cancelled() {
            return Ok(started);
        }
        let ids = page(after.clone(), PAGE).await?;
        let last_page = ids.len() < PAGE;
        for id in ids {
            after = Some(id.clone());
            if stop.is_cancelled() {
                return Ok(started);
            }
            if !due(id.clone()).await {
                continue;
            }
            let permit = tokio::select! {
                p = Arc::clone(&permits).acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return Ok(started), // never closed
                },
                _ = stop.cancelled() => return Ok(started),
            };
            if let Some(at) = next_start {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = stop.cancelled() => return Ok(started),
                }
            }
            next_start = Some(Instant::now() + pace.interval);
            start(id, permit);
            started += 1;
        }
        if last_page {
            return Ok(started);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn pace_reads_the_environment_and_ignores_nonsense() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Pace::from_lookup(env(&[])), Pace::default());
        assert_eq!(
            Pace::from_lookup(env(&[
                ("STRANDS_REPOST_CONCURRENCY", " 2 "),
                ("STRANDS_REPOST_INTERVAL_MS", "250"),
            ])),
            Pace {
                concurrency: 2,
                interval: Duration::from_millis(250)
            }
        );
        assert_eq!(
            Pace::from_lookup(env(&[
                ("STRANDS_REPOST_CONCURRENCY", "0"),
                ("STRANDS_REPOST_INTERVAL_MS", "soon"),
            ])),
            Pace::default()
        );
    }

    /// What the fake re-posts saw: start instants, and the most in flight.
    #[derive(Default)]
    struct Seen {
        starts: Vec<(String, Instant)>,
        in_flight: usize,
        max_in_flight: usize,
        pages: Vec<Option<String>>,
    }

    /// Runs the queue over ids `0..n` (zero-padded, so they sort), each
    /// re-post lasting `lasts`; `skip` ids are not due.
    async fn queue(
        n: usize,
        pace: Pace,
        lasts: Duration,
        skip: &[usize],
        stop: CancellationToken,
    ) -> (usize, Arc<Mutex<Seen>>) {
        let ids: Vec<String> = (0..n).map(|i| format!("{i:06}")).collect();
        let skip: Vec<String> = skip.iter().map(|i| format!("{i:06}")).collect();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let tracker = tokio_util::task::TaskTracker::new();
        let started = run(
            pace,
            &stop,
            |after, limit| {
                seen.lock().unwrap().pages.push(after.clone());
                let page: Vec<String> = ids
                    .iter()
                    .filter(|id| after.as_ref().is_none_or(|a| *id > a))
                    .take(limit)
                    .cloned()
                    .collect();
                async move { Ok(page) }
            },
            |id| {
                let due = !skip.contains(&id);
                async move { due }
            },
            |id, permit| {
                let seen = Arc::clone(&seen);
                {
                    let mut s = seen.lock().unwrap();
                    s.starts.push((id, Instant::now()));
                    s.in_flight += 1;
                    s.max_in_flight = s.max_in_flight.max(s.in_flight);
                }
                tracker.spawn(async move {
                    tokio::time::sleep(lasts).await;
                    seen.lock().unwrap().in_flight -= 1;
                    drop(permit);
                });
            },
        )
        .await
        .expect("the queue runs");
        tracker.close();
        tracker.wait().await;
        (started, seen)
    }

    #[tokio::test(start_paused = true)]
    async fn every_due_id_is_started_once_at_most_n_at_a_time_and_paced() {
        let pace = Pace {
            concurrency: 3,
            interval: Duration::from_millis(100),
        };
        // Slow re-posts: the bound, not the pace, limits them.
        let n = PAGE + 10;
        let (started, seen) = queue(
            n,
            pace,
            Duration::from_secs(1),
            &[5, 7],
            CancellationToken::new(),
        )
        .await;
        let seen = seen.lock().unwrap();
        assert_eq!(started, n - 2);
        let ids: Vec<&str> = seen.starts.iter().map(|(id, _)| id.as_str()).collect();
        let mut want: Vec<String> = (0..n)
            .filter(|i| *i != 5 && *i != 7)
            .map(|i| format!("{i:06}"))
            .collect();
        want.sort();
        assert_eq!(ids, want, "each due id once, in index order");
        assert_eq!(seen.max_in_flight, 3, "never more than the bound at once");
        for w in seen.starts.windows(2) {
            assert!(
                w[1].1 - w[0].1 >= pace.interval,
                "{} started {:?} after {}",
                w[1].0,
                w[1].1 - w[0].1,
                w[0].0
            );
        }
        // Paged: the first page from the start, the next after its last id.
        assert_eq!(
            seen.pages,
            vec![None, Some(format!("{:06}", PAGE - 1))],
            "read a page at a time"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn fast_re_posts_go_at_the_pace() {
        let pace = Pace {
            concurrency: 4,
            interval: Duration::from_secs(1),
        };
        let t0 = Instant::now();
        let (started, seen) = queue(5, pace, Duration::ZERO, &[], CancellationToken::new()).await;
        assert_eq!(started, 5);
        let seen = seen.lock().unwrap();
        let offsets: Vec<Duration> = seen.starts.iter().map(|(_, at)| *at - t0).collect();
        assert_eq!(
            offsets,
            (0..5).map(Duration::from_secs).collect::<Vec<_>>(),
            "one a second, the first at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_queue_stops_when_the_service_does() {
        let pace = Pace {
            concurrency: 1,
            interval: Duration::from_secs(1),
        };
        let stop = CancellationToken::new();
        let cancel = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            cancel.cancel();
        });
        let (started, _) = queue(100, pace, Duration::ZERO, &[], stop).await;
        assert_eq!(started, 3, "at 0 s, 1 s and 2 s; none after the stop");
    }
}
