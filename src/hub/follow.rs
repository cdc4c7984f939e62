//! Following the store's events: one run's (replayed from a point, ending
//! with the run) or every run's, as a stream. The API's SSE routes, the
//! web inbox's live refresh and Slack's App Home all watch the same
//! stream to learn that what waits for whom changed, so it lives in the
//! hub, not in the door that happened to need it first.
//!
//! One bus per process ([`Bus`]) reads each new event from the store once
//! and broadcasts it to every follower in memory: a thousand open event
//! streams cost one store read per event, not a thousand. The bus wakes on
//! the store's event watch — raised by this process's durable writes, and
//! on PostgreSQL by other replicas' commits (`LISTEN`/`NOTIFY`, with a slow
//! poll as the safety net, in the store) — and delivers events in order,
//! with no gap, up to the number the watch gives (on sled, only events of
//! writes already synced).
//!
//! What the bus hands out is shared, not copied: one [`Published`] per
//! event, with its JSON text and its SSE frame made once, on first use,
//! for every follower that sends it on (the SSE streams), however many
//! they are.
//!
//! A follower replays from the store what it asks for (`after`) up to the
//! bus's head, then takes the broadcast; one that falls too far behind the
//! broadcast (a slow reader) reads the store again from where it was, so a
//! follower never skips an event. Streams end when the service begins to
//! shut down ([`super::Inner::stopping`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use futures_util::stream::Stream;
use tokio::sync::broadcast;

use super::Hub;
use crate::model::{Event, EventKind};

/// How long code that waits for a change (not a follower) waits before
/// looking again on its own.
pub const POLL: Duration = Duration::from_secs(1);
/// Events read from the store at once.
const PAGE: usize = 256;
/// Events the broadcast keeps for followers that have not read them yet;
/// one further behind reads the store. (Small in unit tests, so every
/// test that follows events also takes the path of a follower left
/// behind.)
const CAPACITY: usize = if cfg!(test) { 8 } else { 4096 };

/// An event as the bus hands it out: shared by every follower, with its
/// JSON text made once.
#[derive(Debug)]
pub struct Published {
    event: Event,
    json: OnceLock<String>,
    sse: OnceLock<axum::body::Bytes>,
}

impl Published {
    fn new(event: Event) -> Arc<Published> {
        Arc::new(Published {
            event,
            json: OnceLock::new(),
            sse: OnceLock::new(),
        })
    }

    /// The event as JSON (what the API's streams send as `data`).
    pub fn json(&self) -> &str {
        self.json
            .get_or_init(|| serde_json::to_string(&self.event).unwrap_or_else(|_| "{}".into()))
    }

    /// The event as one Server-Sent Events frame — `id` its number,
    /// `event` its type, `data` its JSON (one line: compact JSON escapes
    /// newlines) — made once; every stream sends the same bytes (a clone
    /// is a reference count), however many streams there are.
    pub fn sse_frame(&self) -> axum::body::Bytes {
        self.sse
            .get_or_init(|| {
                format!(
                    "id: {}\nevent: {}\ndata: {}\n\n",
                    self.event.seq,
                    self.event.what.name(),
                    self.json()
                )
                .into()
            })
            .clone()
    }
}

impl std::ops::Deref for Published {
    type Target = Event;

    fn deref(&self) -> &Event {
        &self.event
    }
}

/// The process's one reader of new events, and its broadcast.
pub struct Bus {
    /// The number of the last event sent, with the sender: a follower
    /// subscribes and reads the head under the same lock the bus holds to
    /// send, so every event is either before its head or in its receiver.
    sent: Mutex<Sent>,
}

struct Sent {
    head: u64,
    tx: broadcast::Sender<Arc<Published>>,
}

impl Bus {
    /// Starts the bus on `hub`'s store (its reader task ends when the
    /// service stops, or once the hub is dropped).
    async fn start(hub: &Hub) -> Arc<Bus> {
        // Watch first, then read the head: no write falls between.
        let watch = hub.store.subscribe_events();
        let head = match hub.store.last_event().await {
            Ok(h) => h,
            Err(e) => {
                tracing::error!("cannot read the event head: {e}");
                0
            }
        };
        let bus = Arc::new(Bus {
            sent: Mutex::new(Sent {
                head,
                tx: broadcast::channel(CAPACITY).0,
            }),
        });
        tokio::spawn(read_new_events(
            Arc::downgrade(&hub.0),
            Arc::downgrade(&bus),
            watch,
            head,
            hub.stopping.clone(),
        ));
        bus
    }

    /// A receiver of every event after the head, and the head.
    fn subscribe(&self) -> (broadcast::Receiver<Arc<Published>>, u64) {
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        (sent.tx.subscribe(), sent.head)
    }

    fn head(&self) -> u64 {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).head
    }

    fn send(&self, e: Event) {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        sent.head = e.seq;
        // No receiver: nobody follows right now.
        let _ = sent.tx.send(Published::new(e));
    }

    /// How many followers the broadcast has (the metrics' gauge, tests).
    pub fn followers(&self) -> usize {
        self.sent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tx
            .receiver_count()
    }
}

/// The bus's task: on each raise of the store's watch, read the events up
/// to it and send them, in order.
async fn read_new_events(
    hub: Weak<super::Inner>,
    bus: Weak<Bus>,
    mut watch: tokio::sync::watch::Receiver<u64>,
    mut cursor: u64,
    stopping: tokio_util::sync::CancellationToken,
) {
    loop {
        let upto = *watch.borrow_and_update();
        while cursor < upto {
            let Some(inner) = hub.upgrade() else { return };
            let page = inner.store.events_after(cursor, PAGE).await;
            drop(inner);
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!("cannot read events: {e}");
                    tokio::time::sleep(POLL).await;
                    break;
                }
            };
            if page.is_empty() {
                break;
            }
            let Some(bus) = bus.upgrade() else { return };
            for e in page {
                if e.seq > upto {
                    break;
                }
                cursor = e.seq;
                bus.send(e);
            }
        }
        tokio::select! {
            changed = watch.changed() => if changed.is_err() { return },
            _ = stopping.cancelled() => return,
            // The bus dropped (its hub gone) while nothing was written.
            _ = tokio::time::sleep(Duration::from_secs(30)) => {
                if bus.strong_count() == 0 {
                    return;
                }
            }
        }
    }
}

impl Hub {
    /// The process's event bus, started on first use.
    pub async fn bus(&self) -> Arc<Bus> {
        self.bus.get_or_init(|| Bus::start(self)).await.clone()
    }
}

struct Follow {
    hub: Hub,
    /// One session's events, or every session's.
    session: Option<String>,
    /// The number of the last event delivered or passed over.
    cursor: u64,
    /// Subscribed on the first read.
    rx: Option<broadcast::Receiver<Arc<Published>>>,
    /// Replaying from the store up to this number.
    replay_to: Option<u64>,
    buf: VecDeque<Arc<Published>>,
    done: bool,
}

impl Follow {
    fn new(hub: Hub, session: Option<String>, after: u64) -> Follow {
        Follow {
            hub,
            session,
            cursor: after,
            rx: None,
            replay_to: None,
            buf: VecDeque::new(),
            done: false,
        }
    }

    fn mine(&self, e: &Event) -> bool {
        self.session.as_ref().is_none_or(|s| *s == e.session)
    }

    async fn next(&mut self) -> Option<Arc<Published>> {
        loop {
            if self.done || self.hub.stopping.is_cancelled() {
                return None;
            }
            if let Some(e) = self.buf.pop_front() {
                self.cursor = self.cursor.max(e.seq);
                // A run's stream ends with the run.
                if self.session.is_some() && e.what.is_final() {
                    self.done = true;
                }
                return Some(e);
            }
            if self.rx.is_none() {
                let (rx, head) = self.hub.bus().await.subscribe();
                self.rx = Some(rx);
                self.replay_to = Some(head);
                continue;
            }
            if let Some(to) = self.replay_to {
                match self.replay(to).await {
                    Ok(true) => continue,
                    Ok(false) => {
                        self.cursor = self.cursor.max(to);
                        self.replay_to = None;
                        continue;
                    }
                    Err(e) => {
                        tracing::error!("cannot read events: {e}");
                        return None;
                    }
                }
            }
            let rx = self.rx.as_mut()?;
            let got = tokio::select! {
                got = rx.recv() => got,
                _ = self.hub.stopping.cancelled() => return None,
            };
            match got {
                Ok(e) if e.seq > self.cursor && self.mine(&e) => self.buf.push_back(e),
                Ok(_) => {}
                // Too far behind: the store has what the broadcast dropped.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.replay_to = Some(self.hub.bus().await.head());
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// Reads the next page of the replay into the buffer; `false` once the
    /// store has nothing more up to `to`.
    async fn replay(&mut self, to: u64) -> crate::error::Result<bool> {
        if self.cursor >= to {
            return Ok(false);
        }
        let page = match &self.session {
            Some(s) => {
                self.hub
                    .store
                    .session_events_after(s, self.cursor, PAGE)
                    .await?
            }
            None => self.hub.store.events_after(self.cursor, PAGE).await?,
        };
        let full = page.len() == PAGE;
        let before = self.buf.len();
        self.buf
            .extend(page.into_iter().filter(|e| e.seq <= to).map(Published::new));
        // A short page, or one that reached past `to`: the replay is done
        // once the buffer is read.
        let more = full && self.buf.len() - before == PAGE;
        Ok(more || self.buf.len() > before)
    }

    fn into_stream(self) -> impl Stream<Item = Arc<Published>> {
        futures_util::stream::unfold(self, |mut f| async move {
            let e = f.next().await?;
            Some((e, f))
        })
    }
}

/// Every run's events after event `after`, followed until dropped: what
/// the web inbox and Slack's App Home watch to refresh themselves.
pub fn follow_all(hub: Hub, after: u64) -> impl Stream<Item = Arc<Published>> {
    Follow::new(hub, None, after).into_stream()
}

/// Session `id`'s events after event `after`, followed; the stream ends
/// after the run's last event (`run.completed`, `run.failed`,
/// `run.rejected`).
pub fn follow_session(hub: Hub, id: String, after: u64) -> impl Stream<Item = Arc<Published>> {
    Follow::new(hub, Some(id), after).into_stream()
}

/// Whether `e` may change what waits for whom (a gate opened, answered or
/// timed out, a run ended): every event but a step done.
pub fn changes_waiting(e: &Event) -> bool {
    !matches!(e.what, EventKind::StepDone { .. })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::StreamExt;

    use super::{follow_all, follow_session, CAPACITY};
    use crate::config::Settings;
    use crate::hub::Hub;
    use crate::model::EventKind;
    use crate::store::sled::tests::paused_session;
    use crate::store::Store;

    fn step(n: usize) -> EventKind {
        EventKind::StepDone {
            position: n.to_string(),
            agent: "writer".into(),
            tokens: 0,
            millis: 0,
        }
    }

    /// A hub on a fresh sled store (the directory lives as long as it).
    fn hub() -> (tempfile::TempDir, Hub) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        (dir, Hub::new(store, Arc::new(Settings::default()), None))
    }

    /// Writes session `id` with `events` events.
    async fn write(hub: &Hub, id: &str, events: usize) {
        let mut s = paused_session(id);
        s.events = (0..events).map(step).collect();
        hub.store.create(&mut s).await.expect("create");
    }

    /// A follower that reads nothing while many times the broadcast's
    /// capacity is written (it falls behind) still gets every event once,
    /// in order: what the broadcast dropped it reads from the store.
    #[tokio::test]
    async fn a_follower_left_behind_gets_every_event_once_in_order() {
        let (_dir, hub) = hub();
        write(&hub, "s0", 1).await;
        let all = follow_all(hub.clone(), 0);
        futures_util::pin_mut!(all);
        let first = all.next().await.expect("the first event");
        assert_eq!(first.seq, 1);
        let total = 1 + 5 * CAPACITY;
        for i in 1..total {
            write(&hub, &format!("s{i}"), 1).await;
        }
        let mut seqs = vec![first.seq];
        while seqs.len() < total {
            let e = tokio::time::timeout(std::time::Duration::from_secs(10), all.next())
                .await
                .expect("events keep coming")
                .expect("an event");
            seqs.push(e.seq);
        }
        let want: Vec<u64> = (1..=total as u64).collect();
        assert_eq!(seqs, want);
    }

    /// A run's stream replays from the start, gets only that run's events
    /// (live ones by the broadcast too) and ends with its last one.
    #[tokio::test]
    async fn a_runs_stream_has_only_its_events_and_ends_with_the_run() {
        let (_dir, hub) = hub();
        write(&hub, "mine", 2).await;
        write(&hub, "other", 3).await;
        let one = follow_session(hub.clone(), "mine".into(), 0);
        futures_util::pin_mut!(one);
        let mut got = Vec::new();
        for _ in 0..2 {
            got.push(one.next().await.expect("a replayed event"));
        }
        // Live: another run's events, then this one's end.
        write(&hub, "other2", 2).await;
        let mut s = hub.store.get("mine").await.expect("mine");
        s.status = crate::model::Status::Completed;
        s.events = vec![EventKind::RunCompleted { output_chars: 0 }];
        hub.store.checkpoint(&mut s).await.expect("checkpoint");
        while let Some(e) = tokio::time::timeout(std::time::Duration::from_secs(10), one.next())
            .await
            .expect("the stream goes on or ends")
        {
            got.push(e);
        }
        assert!(got.iter().all(|e| e.session == "mine"), "{got:?}");
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[2].what.is_final(), "{got:?}");
        assert!(got.windows(2).all(|w| w[0].seq < w[1].seq), "{got:?}");
    }
}
