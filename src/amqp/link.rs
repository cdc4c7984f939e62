//! The link to the broker: one connection, kept up. It connects, declares
//! what the room uses (the events' exchange, the requests' queue with its
//! dead-letter exchange and the queue behind that), opens a confirming
//! channel for everything strands publishes and consumes the requests'
//! queue; when the connection drops it says so (`/healthz`, the
//! `strands_amqp_connected` gauge) and connects again, backing off.
//!
//! Nothing published depends on the link being up: events wait in the
//! store's outbox ([`crate::webhook::Deliverer`]) and unacknowledged
//! requests wait in the broker.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions,
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};
use secrecy::ExposeSecret;
use tokio_util::sync::CancellationToken;

use super::{short, Config};
use crate::hub::Hub;

/// The first reconnection's wait (doubling, with jitter).
const BASE_DELAY: Duration = Duration::from_millis(500);
/// No wait between reconnections is longer.
const MAX_DELAY: Duration = Duration::from_secs(10);
/// The longest a publish waits for the broker's confirm.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the link is.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Connecting,
    Connected { since: DateTime<Utc> },
    Down { error: String, since: DateTime<Utc> },
}

/// What takes each message of the requests' queue (`listen::handle`,
/// handed in by the module's face).
pub type Handler =
    Arc<dyn Fn(Hub, Arc<Link>, Delivery) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The longest connecting, opening a channel or declaring may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The connection, its publishing channel, and what it looks like from outside.
pub struct Link {
    pub(super) config: Config,
    state: Mutex<State>,
    live: tokio::sync::Mutex<Option<Live>>,
    metrics: Arc<crate::hub::metrics::Metrics>,
    /// Where "now" comes from (the state's `since`).
    clock: crate::clock::SharedClock,
}

struct Live {
    conn: Connection,
    /// In confirm mode; opened again when the broker closed it.
    publish: Option<Channel>,
}

impl Link {
    pub fn new(
        config: Config,
        metrics: Arc<crate::hub::metrics::Metrics>,
        clock: crate::clock::SharedClock,
    ) -> Link {
        // The room's metrics appear now: 0 until connected.
        metrics.set_amqp_connected(false);
        Link {
            config,
            state: Mutex::new(State::Connecting),
            live: tokio::sync::Mutex::new(None),
            metrics,
            clock,
        }
    }

    pub fn state(&self) -> State {
        self.state
            .lock()
            .map(|s| s.clone())
            .unwrap_or(State::Connecting)
    }

    /// One line for `/healthz`: the broker (no password) and the state.
    pub fn describe(&self) -> String {
        let at = self.config.shown();
        match self.state() {
            State::Connecting => format!("amqp: connecting to {at}"),
            State::Connected { since } => format!(
                "amqp: connected to {at} since {}",
                since.format("%Y-%m-%dT%H:%M:%SZ")
            ),
            State::Down { error, since } => format!(
                "amqp: {at} unreachable since {} ({error}); reconnecting",
                since.format("%Y-%m-%dT%H:%M:%SZ")
            ),
        }
    }

    fn set_state(&self, s: State) {
        self.metrics
            .set_amqp_connected(matches!(s, State::Connected { .. }));
        if let Ok(mut state) = self.state.lock() {
            // A failure keeps the time it started.
            if let (State::Down { since, .. }, State::Down { error, .. }) = (&*state, &s) {
                *state = State::Down {
                    error: error.clone(),
                    since: *since,
                };
                return;
            }
            *state = s;
        }
    }

    /// The confirming channel, opened again if the broker closed it.
    async fn channel(&self) -> Result<Channel, String> {
        let mut live = self.live.lock().await;
        let Some(l) = live.as_mut() else {
            return Err("not connected to the broker".into());
        };
        if let Some(c) = &l.publish {
            if c.status().connected() {
                return Ok(c.clone());
            }
        }
        if !l.conn.status().connected() {
            return Err("not connected to the broker".into());
        }
        let open = async {
            let c = l.conn.create_channel().await.map_err(|e| e.to_string())?;
            c.confirm_select(ConfirmSelectOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(c)
        };
        let c = tokio::time::timeout(SETUP_TIMEOUT, open)
            .await
            .map_err(|_| "the broker did not open a channel in time".to_string())??;
        l.publish = Some(c.clone());
        Ok(c)
    }

    /// Publishes `body` and waits for the broker's confirm: `Ok` once the
    /// broker has it (persistent messages: on disk, or routed nowhere).
    pub async fn publish(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<(), String> {
        let channel = self.channel().await?;
        let sent = async {
            let confirm = channel
                .basic_publish(
                    short(exchange)?,
                    short(routing_key)?,
                    BasicPublishOptions::default(),
                    body,
                    properties,
                )
                .await
                .map_err(|e| e.to_string())?;
            match confirm.await.map_err(|e| e.to_string())? {
                Confirmation::Ack(_) | Confirmation::NotRequested => Ok(()),
                Confirmation::Nack(_) => Err("the broker refused the message (nack)".to_string()),
            }
        };
        match tokio::time::timeout(CONFIRM_TIMEOUT, sent).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "no confirm from the broker within {}s",
                CONFIRM_TIMEOUT.as_secs()
            )),
        }
    }

    /// Keeps the link up and consumes the requests' queue until `stop`.
    pub async fn run(self: Arc<Self>, hub: Hub, handler: Handler, stop: CancellationToken) {
        let mut failures: u32 = 0;
        loop {
            if stop.is_cancelled() {
                break;
            }
            self.set_state(State::Connecting);
            let session = self.session(&hub, &handler, &stop);
            let outcome = session.await;
            match outcome {
                Ok(()) if stop.is_cancelled() => break,
                Ok(()) => {
                    failures = 0;
                    self.down("the connection closed".into());
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    self.down(e);
                }
            }
            let wait = backoff(failures);
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        let live = self.live.lock().await.take();
        if let Some(l) = live {
            let close = l.conn.close(200, "strands serve stopping".into());
            let _ = tokio::time::timeout(SETUP_TIMEOUT, close).await;
        }
        self.metrics.set_amqp_connected(false);
    }

    fn down(&self, error: String) {
        tracing::warn!(broker = %self.config.shown(), "amqp: {error}; reconnecting");
        self.set_state(State::Down {
            error,
            since: self.clock.now(),
        });
    }

    /// One connection: up, declared, consuming, until it drops (`Ok`) or
    /// could not be made (`Err`).
    async fn session(
        self: &Arc<Self>,
        hub: &Hub,
        handler: &Handler,
        stop: &CancellationToken,
    ) -> Result<(), String> {
        let setup = async {
            let props = ConnectionProperties::default();
            let conn = Connection::connect(self.config.url.expose_secret(), props)
                .await
                .map_err(|e| format!("could not connect: {e}"))?;
            let consumer = self.prepare(&conn).await?;
            Ok::<_, String>((conn, consumer))
        };
        let (conn, mut consumer) = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            r = tokio::time::timeout(SETUP_TIMEOUT, setup) => match r {
                Ok(r) => r?,
                Err(_) => return Err(format!("could not connect within {}s", SETUP_TIMEOUT.as_secs())),
            },
        };
        *self.live.lock().await = Some(Live {
            conn,
            publish: None,
        });
        // Confirm mode now, so the first publish does not pay for it.
        self.channel().await?;
        self.set_state(State::Connected {
            since: self.clock.now(),
        });
        tracing::info!(broker = %self.config.shown(), queue = %self.config.queue, "amqp: connected");
        let mut handling = tokio::task::JoinSet::new();
        let link = Arc::clone(self);
        let ended = loop {
            tokio::select! {
                () = stop.cancelled() => break Ok(()),
                Some(_) = handling.join_next(), if !handling.is_empty() => {}
                next = consumer.next() => match next {
                    Some(Ok(delivery)) => {
                        handling.spawn(handler(hub.clone(), Arc::clone(&link), delivery));
                    }
                    Some(Err(e)) => break Err(format!("the connection failed: {e}")),
                    None => break Err("the broker closed the consumer".to_string()),
                },
            }
        };
        // Messages being handled finish (or are redelivered: unacked).
        while handling.join_next().await.is_some() {}
        let live = self.live.lock().await.take();
        if let Some(l) = live {
            if l.conn.status().connected() {
                let close = l.conn.close(200, "reconnecting".into());
                let _ = tokio::time::timeout(SETUP_TIMEOUT, close).await;
            }
        }
        ended
    }

    /// Declares what the room uses and starts consuming the requests' queue.
    async fn prepare(&self, conn: &Connection) -> Result<lapin::Consumer, String> {
        let setup = conn.create_channel().await.map_err(|e| e.to_string())?;
        declare(&setup, &self.config)
            .await
            .map_err(|e| format!("could not declare the exchanges and queues: {e}"))?;
        let _ = setup.close(200, "declared".into()).await;
        let consume = conn.create_channel().await.map_err(|e| e.to_string())?;
        consume
            .basic_qos(self.config.prefetch, BasicQosOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        consume
            .basic_consume(
                short(&self.config.queue)?,
                ShortString::from(format!("strands-{}", uuid::Uuid::new_v4())),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| format!("could not consume {}: {e}", self.config.queue))
    }
}

/// The exchanges and queues the room uses, declared durable (declaring
/// what exists with the same settings changes nothing).
async fn declare(c: &Channel, config: &Config) -> lapin::Result<()> {
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    };
    c.exchange_declare(
        config.exchange.as_str().into(),
        ExchangeKind::Topic,
        durable,
        FieldTable::default(),
    )
    .await?;
    c.exchange_declare(
        config.dead_letter.as_str().into(),
        ExchangeKind::Topic,
        durable,
        FieldTable::default(),
    )
    .await?;
    c.queue_declare(
        config.dead_letter.as_str().into(),
        QueueDeclareOptions::durable(),
        FieldTable::default(),
    )
    .await?;
    c.queue_bind(
        config.dead_letter.as_str().into(),
        config.dead_letter.as_str().into(),
        "#".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await?;
    let mut args = FieldTable::default();
    args.insert(
        "x-dead-letter-exchange".into(),
        AMQPValue::LongString(config.dead_letter.as_str().into()),
    );
    c.queue_declare(
        config.queue.as_str().into(),
        QueueDeclareOptions::durable(),
        args,
    )
    .await?;
    Ok(())
}

/// The wait before reconnection number `failures` (0 after a connection
/// that worked): doubling from [`BASE_DELAY`], capped, jittered.
fn backoff(failures: u32) -> Duration {
    let full = BASE_DELAY
        .checked_mul(1u32 << failures.min(16))
        .unwrap_or(MAX_DELAY)
        .min(MAX_DELAY);
    full.mul_f64(0.5 + fastrand::f64() * 0.5)
}
