//! Learning of events other replicas wrote: `LISTEN`/`NOTIFY`, with a slow
//! poll as the safety net.
//!
//! Every transaction that appends events also runs
//! `pg_notify('strands_events', <its last number>)` ([`super::chain`]);
//! PostgreSQL delivers it to listeners when, and only if, the transaction
//! commits, in commit order. One task per process (started by the first
//! [`PgStore::subscribe_events`]) keeps one connection of its own (outside
//! the pool: a pooled connection is reset between uses, and a `LISTEN` on
//! it would be lost), listens, and raises the store's event watch to each
//! number it hears. The hub's bus waits on that watch, so a replica's
//! subscribers learn of another replica's event a round trip after its
//! commit.
//!
//! The safety net: a notification can be missed (the listening connection
//! dropped and was made again; `NOTIFY`'s queue overflowed), so the task
//! also reads the head of the event sequence every
//! [`PgSettings::events_poll`](super::PgSettings) — and once right after
//! each `LISTEN`, for what committed while it was not listening. Without a
//! connection it goes on polling through the pool, and connects again.
//!
//! The task holds the watch weakly: it ends once the store is dropped.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_postgres::AsyncMessage;

use super::PgStore;

/// The channel every event append notifies.
pub(super) const CHANNEL: &str = "strands_events";

/// How long the task waits before connecting again after a failure.
const RECONNECT: Duration = Duration::from_secs(1);

/// Raises `tx` to `seq` when `seq` is newer.
pub(super) fn raise(tx: &watch::Sender<u64>, seq: u64) {
    tx.send_if_modified(|cur| {
        if seq > *cur {
            *cur = seq;
            true
        } else {
            false
        }
    });
}

impl PgStore {
    /// Starts the listening task once (on the current tokio runtime; none:
    /// only this process's own writes are heard).
    pub(super) fn listen(&self) {
        if self
            .listening
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.listening
                .store(false, std::sync::atomic::Ordering::SeqCst);
            return;
        };
        let task = Listener {
            config: self.connect_config.clone(),
            tls: self.tls.clone(),
            pool: self.pool.clone(),
            tx: Arc::downgrade(&self.event_tx),
            poll: self.events_poll,
            location: self.location.clone(),
        };
        rt.spawn(task.run());
    }
}

struct Listener {
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    pool: deadpool_postgres::Pool,
    tx: Weak<watch::Sender<u64>>,
    poll: Duration,
    location: String,
}

impl Listener {
    async fn run(self) {
        let mut warned = false;
        while !self.gone() {
            match self.listen_once().await {
                Ok(()) => return,
                Err(e) => {
                    if !warned {
                        tracing::warn!(
                            "not listening for other replicas' events on {} ({e}); polling every {:?} until it can",
                            self.location,
                            self.poll
                        );
                        warned = true;
                    }
                    // Without a listening connection: the poll, through the pool.
                    self.poll_head_pooled().await;
                    tokio::time::sleep(RECONNECT.min(self.poll)).await;
                }
            }
        }
    }

    fn gone(&self) -> bool {
        self.tx.strong_count() == 0
    }

    /// Listens on one connection until it fails (`Err`) or the store is
    /// dropped (`Ok`).
    async fn listen_once(&self) -> Result<(), String> {
        let (client, mut conn) = self
            .config
            .connect(self.tls.clone())
            .await
            .map_err(|e| e.to_string())?;
        let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel::<Option<u64>>();
        // The connection's driver: notifications out, and its end.
        let driver = tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
            while let Some(m) = messages.next().await {
                match m {
                    Ok(AsyncMessage::Notification(n)) => {
                        let _ = heard_tx.send(n.payload().parse().ok());
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            let _ = heard_tx.send(None);
        });
        let result = async {
            client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .await
                .map_err(|e| e.to_string())?;
            let mut tick = tokio::time::interval(self.poll);
            loop {
                tokio::select! {
                    msg = heard.recv() => match msg {
                        Some(Some(seq)) => {
                            let Some(tx) = self.tx.upgrade() else { return Ok(()) };
                            raise(&tx, seq);
                        }
                        // A payload that is not a number: read the head.
                        Some(None) if !client.is_closed() => self.poll_head(&client).await?,
                        _ => return Err("the listening connection closed".to_string()),
                    },
                    // The first tick is at once: what committed before LISTEN.
                    _ = tick.tick() => {
                        if self.gone() {
                            return Ok(());
                        }
                        self.poll_head(&client).await?;
                    }
                }
            }
        }
        .await;
        driver.abort();
        result
    }

    async fn poll_head(&self, client: &tokio_postgres::Client) -> Result<(), String> {
        let row = client
            .query_one("SELECT seq FROM heads WHERE name = 'events'", &[])
            .await
            .map_err(|e| e.to_string())?;
        if let Some(tx) = self.tx.upgrade() {
            raise(&tx, row.get::<_, i64>(0).max(0) as u64);
        }
        Ok(())
    }

    async fn poll_head_pooled(&self) {
        if let Ok(client) = self.pool.get().await {
            let _ = self.poll_head(&client).await;
        }
    }
}
