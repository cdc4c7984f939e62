//! Following the store's events: one run's (replayed from a point, ending
//! with the run) or every run's, as a stream. The API's SSE routes, the
//! web inbox's live refresh and Slack's App Home all watch the same
//! stream to learn that what waits for whom changed, so it lives in the
//! hub, not in the door that happened to need it first.
//!
//! Events are read from the store, never from memory: a follower wakes when
//! this process writes one, and looks again every [`POLL`] for writers
//! elsewhere (another replica on a shared store). Streams end when the
//! service begins to shut down ([`super::Inner::stopping`]).

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::stream::Stream;

use super::Hub;
use crate::model::{Event, EventKind};

/// How often a follower looks for events written by other processes.
pub const POLL: Duration = Duration::from_secs(1);
const PAGE: usize = 256;

struct Follow {
    hub: Hub,
    /// One session's events, or every session's.
    session: Option<String>,
    cursor: u64,
    seen: tokio::sync::watch::Receiver<u64>,
    buf: VecDeque<Event>,
    done: bool,
}

impl Follow {
    fn new(hub: Hub, session: Option<String>, after: u64) -> Follow {
        let seen = hub.store.subscribe_events();
        Follow {
            hub,
            session,
            cursor: after,
            seen,
            buf: VecDeque::new(),
            done: false,
        }
    }

    async fn next(&mut self) -> Option<Event> {
        loop {
            if self.done || self.hub.stopping.is_cancelled() {
                return None;
            }
            if let Some(e) = self.buf.pop_front() {
                self.cursor = e.seq;
                // A run's stream ends with the run.
                if self.session.is_some() && e.what.is_final() {
                    self.done = true;
                }
                return Some(e);
            }
            self.seen.borrow_and_update();
            let page = match &self.session {
                Some(s) => {
                    self.hub
                        .store
                        .session_events_after(s, self.cursor, PAGE)
                        .await
                }
                None => self.hub.store.events_after(self.cursor, PAGE).await,
            };
            match page {
                Ok(p) if !p.is_empty() => self.buf.extend(p),
                Ok(_) => {
                    tokio::select! {
                        _ = tokio::time::timeout(POLL, self.seen.changed()) => {}
                        _ = self.hub.stopping.cancelled() => return None,
                    }
                }
                Err(e) => {
                    tracing::error!("cannot read events: {e}");
                    return None;
                }
            }
        }
    }

    fn into_stream(self) -> impl Stream<Item = Event> {
        futures_util::stream::unfold(self, |mut f| async move {
            let e = f.next().await?;
            Some((e, f))
        })
    }
}

/// Every run's events after event `after`, followed until dropped: what
/// the web inbox and Slack's App Home watch to refresh themselves.
pub fn follow_all(hub: Hub, after: u64) -> impl Stream<Item = Event> {
    Follow::new(hub, None, after).into_stream()
}

/// Session `id`'s events after event `after`, followed; the stream ends
/// after the run's last event (`run.completed`, `run.failed`,
/// `run.rejected`).
pub fn follow_session(hub: Hub, id: String, after: u64) -> impl Stream<Item = Event> {
    Follow::new(hub, Some(id), after).into_stream()
}

/// Whether `e` may change what waits for whom (a gate opened, answered or
/// timed out, a run ended): every event but a step done.
pub fn changes_waiting(e: &Event) -> bool {
    !matches!(e.what, EventKind::StepDone { .. })
}
