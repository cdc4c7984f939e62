//! Slack over Socket Mode: with an app-level token (`SLACK_APP_TOKEN`,
//! `xapp-…`) the bot dials out to Slack instead of waiting at a public URL,
//! so it needs neither a tunnel nor a signing secret — the connection is
//! the authentication.
//!
//! How it runs:
//! - **Connect.** `apps.connections.open` (on `SLACK_API_URL`, with the app
//!   token) names a WebSocket URL for one connection; the bot dials it and
//!   Slack greets it with `hello`. Each process holds its own connection, so
//!   replicas each hold one, and Slack gives each envelope to one of them.
//! - **Envelopes.** Every `slash_commands`, `interactive` and `events_api`
//!   envelope is handed to [`super::dispatch`] — the same functions the
//!   request-URL routes call — in a task of its own, and acknowledged with
//!   `{"envelope_id"}` within [`ACK_BUDGET`] of its arrival, well inside
//!   Slack's 3 s. An answer ready by then rides in the ack's `payload` (a
//!   command's ephemeral reply, a modal's `response_action`), as the HTTP
//!   response body would; one that is not is acknowledged bare at the
//!   budget, the work goes on, and a command's late answer goes to its
//!   `response_url`. An envelope the bot could not take (the store failed)
//!   is left unacknowledged, so Slack delivers it again.
//! - **Once.** An envelope delivered again to this process (its ack was lost
//!   on a dropped connection) is acknowledged with the first delivery's
//!   answer and not carried out again; a retried event (same `event_id`,
//!   any envelope) is carried out once, as over HTTP, by the store.
//! - **Reconnect.** On `disconnect` (Slack refreshes connections every few
//!   hours) a new connection opens at once while the old one drains —
//!   envelopes still arriving on it are handled and acknowledged on it —
//!   until Slack closes it. A dropped connection (closed, broken, or silent
//!   for [`SILENCE`] despite pings) is replaced after an exponential backoff
//!   with jitter: 0.5 s doubling to at most 30 s, started afresh once a
//!   connection has been greeted. Handling never belongs to a connection:
//!   what was received is carried out even if its connection dies.
//!
//! What it does not do: verify anything (no signatures exist here), or
//! log the app token or the WebSocket URL (it carries a ticket).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::BackoffBuilder;
use futures_util::{SinkExt, StreamExt};
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::app::App;
use super::dispatch;
use super::reply::Reply;

/// How long after an envelope arrives it is acknowledged at the latest.
/// Slack's deadline is 3 s; the rest is the way back to Slack.
pub const ACK_BUDGET: Duration = Duration::from_secs(2);
/// How often the bot pings Slack.
const PING_EVERY: Duration = Duration::from_secs(10);
/// A connection with no frame at all for this long is taken for dead.
const SILENCE: Duration = Duration::from_secs(35);
/// How long a connection Slack asked to leave may go on draining.
const DRAIN: Duration = Duration::from_secs(30);
/// How long dialling may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(15);
/// Envelopes remembered per process, to acknowledge a redelivery.
const REMEMBERED: usize = 4096;
/// Whether this process has been greeted yet (said once on stderr).
static FIRST_HELLO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts Socket Mode when an app token is configured; it runs until `stop`.
pub fn start(app: &App, stop: CancellationToken) {
    let Some(token) = app.config.app_token.clone() else {
        return;
    };
    let app2 = app.clone();
    app.tasks()
        .spawn(async move { supervise(app2, token, stop).await });
}

/// Why a connection is being replaced.
#[derive(Debug, PartialEq)]
enum Ended {
    /// Slack said `disconnect`: replace it at once (it drains meanwhile).
    Refresh,
    /// Closed, broken or silent; `greeted`: it had got its `hello`.
    Dropped { greeted: bool },
    /// The service is stopping.
    Stopped,
}

/// The reconnection waits: 0.5 s doubling to 30 s, with jitter, forever.
fn backoff() -> impl Iterator<Item = Duration> {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(30))
        .with_jitter()
        .without_max_times()
        .build()
}

/// Keeps one connection open: opens it, waits for it to end, replaces it.
async fn supervise(app: App, token: SecretString, stop: CancellationToken) {
    let seen = Arc::new(Seen::default());
    let mut waits = backoff();
    loop {
        let ended = match dial(&app, &token).await {
            Ok(ws) => {
                app.metrics.socket_connected();
                let (tx, rx) = oneshot::channel();
                let (app2, seen2, stop2) = (app.clone(), Arc::clone(&seen), stop.clone());
                app.tasks()
                    .spawn(async move { connection(app2, ws, seen2, tx, stop2).await });
                tokio::select! {
                    _ = stop.cancelled() => return,
                    why = rx => why.unwrap_or(Ended::Dropped { greeted: false }),
                }
            }
            Err(e) => {
                tracing::warn!("Slack Socket Mode: could not connect: {e}");
                Ended::Dropped { greeted: false }
            }
        };
        let wait = match ended {
            Ended::Stopped => return,
            Ended::Refresh => {
                waits = backoff();
                Duration::ZERO
            }
            Ended::Dropped { greeted } => {
                if greeted {
                    waits = backoff();
                }
                let wait = waits.next().unwrap_or(Duration::from_secs(30));
                tracing::warn!(?wait, "Slack Socket Mode: connection lost; reconnecting");
                wait
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// `apps.connections.open`, then the WebSocket it names.
async fn dial(app: &App, token: &SecretString) -> crate::error::Result<Socket> {
    let url = app.api.open_connection(token).await?;
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(app.hub.max_body_bytes.max(1 << 20)));
    match tokio::time::timeout(
        DIAL_TIMEOUT,
        tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), true),
    )
    .await
    {
        Ok(Ok((ws, _))) => Ok(ws),
        // The URL carries a ticket: name the failure, not the URL.
        Ok(Err(e)) => Err(crate::error::Error::Runtime(format!(
            "the Socket Mode WebSocket refused the connection: {e}"
        ))),
        Err(_) => Err(crate::error::Error::Runtime(format!(
            "the Socket Mode WebSocket did not answer within {DIAL_TIMEOUT:?}"
        ))),
    }
}

/// What Slack sends over the socket.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    envelope_id: Option<String>,
    #[serde(default)]
    payload: Value,
    #[serde(default)]
    accepts_response_payload: bool,
    #[serde(default)]
    retry_attempt: Option<u64>,
    /// `disconnect`'s reason (`refresh_requested`, `link_disabled`, …).
    #[serde(default)]
    reason: Option<String>,
}

/// Reads one connection until it ends; tells the supervisor why (or, on
/// `disconnect`, at once, and goes on draining).
async fn connection(
    app: App,
    ws: Socket,
    seen: Arc<Seen>,
    ended: oneshot::Sender<Ended>,
    stop: CancellationToken,
) {
    let mut ended = Some(ended);
    let mut tell = |why: Ended| {
        if let Some(tx) = ended.take() {
            let _ = tx.send(why);
        }
    };
    let (mut sink, mut stream) = ws.split();
    let (acks, mut to_send) = mpsc::unbounded_channel::<String>();
    let mut greeted = false;
    let mut heard = Instant::now();
    let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    let mut close_by: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                let _ = sink.send(Message::Close(None)).await;
                break;
            }
            Some(frame) = to_send.recv() => {
                if let Err(e) = sink.send(Message::Text(frame.into())).await {
                    tracing::warn!("Slack Socket Mode: could not send an acknowledgement: {e}");
                    break;
                }
            }
            message = stream.next() => {
                heard = Instant::now();
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Err(e)) => {
                        tracing::warn!("Slack Socket Mode: the connection broke: {e}");
                        break;
                    }
                    Some(Ok(_)) => continue, // pings (answered by the library), pongs
                };
                let envelope: Envelope = match serde_json::from_str(text.as_str()) {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::warn!("Slack Socket Mode: ignored a message that is not an envelope: {e}");
                        continue;
                    }
                };
                match envelope.kind.as_str() {
                    "hello" => {
                        greeted = true;
                        tracing::info!("Slack Socket Mode: connected");
                        if !FIRST_HELLO.swap(true, std::sync::atomic::Ordering::Relaxed) {
                            eprintln!("strands serve: connected to Slack over Socket Mode");
                        }
                    }
                    "disconnect" => {
                        tracing::info!(
                            reason = envelope.reason.as_deref().unwrap_or("unknown"),
                            "Slack Socket Mode: Slack asked for a new connection"
                        );
                        tell(Ended::Refresh);
                        close_by.get_or_insert(Instant::now() + DRAIN);
                    }
                    _ if envelope.envelope_id.is_some() => {
                        let (app2, seen2, acks2) = (app.clone(), Arc::clone(&seen), acks.clone());
                        let received = Instant::now();
                        app.tasks().spawn(async move {
                            on_envelope(app2, seen2, envelope, acks2, received).await
                        });
                    }
                    other => tracing::debug!(kind = other, "Slack Socket Mode: ignored a message"),
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > SILENCE {
                    tracing::warn!("Slack Socket Mode: no word from Slack for {SILENCE:?}");
                    break;
                }
                if sink.send(Message::Ping(Default::default())).await.is_err() {
                    break;
                }
            }
            _ = tokio::time::sleep_until(close_by.unwrap_or_else(Instant::now)), if close_by.is_some() => {
                let _ = sink.send(Message::Close(None)).await;
                break;
            }
        }
    }
    tell(if stop.is_cancelled() {
        Ended::Stopped
    } else {
        Ended::Dropped { greeted }
    });
}

/// How an envelope is acknowledged.
#[derive(Debug, Clone, PartialEq)]
enum Ack {
    /// `{"envelope_id"}`, with a `payload` when there is one.
    Send(Option<Value>),
    /// Not at all: Slack will deliver it again.
    Withhold,
}

/// Carries out one envelope and acknowledges it in time (see the module doc).
async fn on_envelope(
    app: App,
    seen: Arc<Seen>,
    envelope: Envelope,
    acks: mpsc::UnboundedSender<String>,
    received: Instant,
) {
    let Some(id) = envelope.envelope_id.clone() else {
        return;
    };
    let deadline = received + ACK_BUDGET;
    let (ack, undelivered) = match seen.claim(&id) {
        Claim::Again(mut first) => {
            tracing::info!(
                kind = %envelope.kind,
                "Slack Socket Mode: an envelope delivered again is acknowledged, not carried out again"
            );
            let ack = match tokio::time::timeout_at(deadline, first.wait_for(Option::is_some)).await
            {
                Ok(Ok(ack)) => ack.clone().unwrap_or(Ack::Send(None)),
                _ => Ack::Send(None),
            };
            (ack, None)
        }
        Claim::First(publish) => {
            // Acknowledged first: in the store's acknowledgement lane.
            let work = crate::hub::acknowledging(carry_out(&app, &envelope));
            tokio::pin!(work);
            match tokio::time::timeout_at(deadline, &mut work).await {
                Ok(reply) => {
                    let (ack, undelivered) = settle(&envelope, reply);
                    if ack == Ack::Withhold {
                        // Not taken: the redelivery Slack makes is carried out afresh.
                        seen.forget(&id);
                    }
                    publish.send_replace(Some(ack.clone()));
                    (ack, undelivered)
                }
                Err(_) => {
                    // Not ready in time: acknowledge now, finish after.
                    publish.send_replace(Some(Ack::Send(None)));
                    send_ack(&app, &acks, &id, &envelope, None, received);
                    tracing::info!(
                        kind = %envelope.kind,
                        "Slack Socket Mode: acknowledged before its answer was ready ({ACK_BUDGET:?})"
                    );
                    match work.await {
                        Reply::Body(body) => deliver_late(&app, &envelope, body).await,
                        Reply::Unreadable(why) => {
                            tracing::warn!(kind = %envelope.kind, "Slack Socket Mode: {why}")
                        }
                        Reply::Failed => tracing::error!(
                            kind = %envelope.kind,
                            "Slack Socket Mode: an envelope acknowledged in time failed after"
                        ),
                        Reply::Ack | Reply::Duplicate => {}
                    }
                    return;
                }
            }
        }
    };
    match ack {
        Ack::Send(payload) => send_ack(&app, &acks, &id, &envelope, payload, received),
        Ack::Withhold => tracing::warn!(
            kind = %envelope.kind,
            "Slack Socket Mode: left an envelope unacknowledged so that Slack delivers it again"
        ),
    }
    if let Some(body) = undelivered {
        deliver_late(&app, &envelope, body).await;
    }
}

fn send_ack(
    app: &App,
    acks: &mpsc::UnboundedSender<String>,
    id: &str,
    envelope: &Envelope,
    payload: Option<Value>,
    received: Instant,
) {
    if acks.send(ack_frame(id, payload)).is_err() {
        // The connection is gone; Slack delivers the envelope again on the
        // next one, where `Seen` answers it.
        tracing::info!("Slack Socket Mode: the connection closed before an acknowledgement");
        return;
    }
    if envelope.kind == "interactive" {
        app.metrics.click_acked(received.elapsed().as_secs_f64());
    }
}

fn ack_frame(id: &str, payload: Option<Value>) -> String {
    match payload {
        Some(p) => json!({ "envelope_id": id, "payload": p }),
        None => json!({ "envelope_id": id }),
    }
    .to_string()
}

/// The same handlers as the request URLs, by envelope type.
async fn carry_out(app: &App, envelope: &Envelope) -> Reply {
    match envelope.kind.as_str() {
        "slash_commands" => {
            match serde_json::from_value::<slack_morphism::prelude::SlackCommandEvent>(
                envelope.payload.clone(),
            ) {
                Ok(cmd) => dispatch::command(app, cmd).await,
                Err(e) => Reply::Unreadable(format!("not a slash command: {e}")),
            }
        }
        "interactive" => dispatch::interaction(app, &envelope.payload.to_string()).await,
        "events_api" => {
            let retried = envelope.retry_attempt.is_some_and(|n| n > 0);
            dispatch::event(app, envelope.payload.clone(), retried).await
        }
        other => Reply::Unreadable(format!("an envelope of unknown type `{other}`")),
    }
}

/// The acknowledgement a reply makes, and the answer it could not carry
/// (the envelope does not accept a payload).
fn settle(envelope: &Envelope, reply: Reply) -> (Ack, Option<Value>) {
    match reply {
        Reply::Ack | Reply::Duplicate => (Ack::Send(None), None),
        Reply::Body(body) if envelope.accepts_response_payload => (Ack::Send(Some(body)), None),
        Reply::Body(body) => (Ack::Send(None), Some(body)),
        Reply::Unreadable(why) => {
            tracing::warn!(kind = %envelope.kind, "Slack Socket Mode: {why}");
            (Ack::Send(None), None)
        }
        Reply::Failed => (Ack::Withhold, None),
    }
}

/// An answer the acknowledgement could not carry: a command's goes to its
/// `response_url` (as Slack documents for answers after the ack); others
/// (a modal's late `response_action`) have nowhere to go and are logged.
async fn deliver_late(app: &App, envelope: &Envelope, body: Value) {
    let url = envelope.payload.get("response_url").and_then(Value::as_str);
    let text = body.get("text").and_then(Value::as_str);
    match (envelope.kind.as_str(), url, text) {
        ("slash_commands", Some(url), Some(text)) => {
            if let Err(e) = app.api.respond(url, text).await {
                tracing::warn!("Slack Socket Mode: could not answer a command late: {e}");
            }
        }
        _ => tracing::warn!(
            kind = %envelope.kind,
            "Slack Socket Mode: an answer came too late for its acknowledgement and was dropped"
        ),
    }
}

/// The envelopes this process has taken, by id: a redelivery waits for,
/// and is acknowledged with, the first delivery's acknowledgement.
#[derive(Default)]
struct Seen(Mutex<SeenInner>);

#[derive(Default)]
struct SeenInner {
    acks: HashMap<String, watch::Receiver<Option<Ack>>>,
    order: VecDeque<String>,
}

enum Claim {
    /// The first delivery: carry it out and publish its ack here.
    First(watch::Sender<Option<Ack>>),
    /// Delivered before: the first delivery's ack (once published).
    Again(watch::Receiver<Option<Ack>>),
}

impl Seen {
    fn lock(&self) -> std::sync::MutexGuard<'_, SeenInner> {
        match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn claim(&self, id: &str) -> Claim {
        let mut inner = self.lock();
        if let Some(rx) = inner.acks.get(id) {
            return Claim::Again(rx.clone());
        }
        let (tx, rx) = watch::channel(None);
        inner.acks.insert(id.to_string(), rx);
        inner.order.push_back(id.to_string());
        while inner.order.len() > REMEMBERED {
            if let Some(old) = inner.order.pop_front() {
                inner.acks.remove(&old);
            }
        }
        Claim::First(tx)
    }

    /// Forgets `id`: its next delivery is a first one.
    fn forget(&self, id: &str) {
        let mut inner = self.lock();
        inner.acks.remove(id);
        inner.order.retain(|o| o != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: &str, accepts: bool) -> Envelope {
        Envelope {
            kind: kind.into(),
            envelope_id: Some("E1".into()),
            payload: json!({"response_url": "http://127.0.0.1:9/r"}),
            accepts_response_payload: accepts,
            retry_attempt: None,
            reason: None,
        }
    }

    #[test]
    fn envelopes_parse_as_slack_sends_them() {
        let e: Envelope = serde_json::from_str(
            r#"{"envelope_id":"57d6a792-4d35-4d0b-b6aa-3361493e1caf","payload":{"type":"event_callback","event_id":"Ev1"},
                "type":"events_api","accepts_response_payload":false,"retry_attempt":1,"retry_reason":"timeout"}"#,
        )
        .expect("an events_api envelope");
        assert_eq!(e.kind, "events_api");
        assert_eq!(e.retry_attempt, Some(1));
        assert_eq!(e.payload["event_id"], "Ev1");
        let hello: Envelope = serde_json::from_str(
            r#"{"type":"hello","num_connections":1,"debug_info":{"host":"applink-1"},"connection_info":{"app_id":"A1"}}"#,
        )
        .expect("hello");
        assert!(hello.envelope_id.is_none());
        let bye: Envelope =
            serde_json::from_str(r#"{"type":"disconnect","reason":"refresh_requested"}"#)
                .expect("disconnect");
        assert_eq!(bye.reason.as_deref(), Some("refresh_requested"));
    }

    #[test]
    fn acks_carry_a_payload_only_where_slack_takes_one() {
        assert_eq!(ack_frame("E1", None), r#"{"envelope_id":"E1"}"#);
        let body = json!({"response_action": "errors", "errors": {"feedback": "no"}});
        let frame: Value =
            serde_json::from_str(&ack_frame("E1", Some(body.clone()))).expect("json");
        assert_eq!(frame, json!({"envelope_id": "E1", "payload": body}));

        let takes = envelope("interactive", true);
        assert_eq!(
            settle(&takes, Reply::Body(body.clone())),
            (Ack::Send(Some(body.clone())), None)
        );
        let refuses = envelope("interactive", false);
        assert_eq!(
            settle(&refuses, Reply::Body(body.clone())),
            (Ack::Send(None), Some(body))
        );
        assert_eq!(settle(&takes, Reply::Duplicate), (Ack::Send(None), None));
        assert_eq!(
            settle(&takes, Reply::Unreadable("x".into())),
            (Ack::Send(None), None)
        );
        assert_eq!(settle(&takes, Reply::Failed), (Ack::Withhold, None));
    }

    #[test]
    fn a_redelivered_envelope_gets_the_first_ones_ack() {
        let seen = Seen::default();
        let Claim::First(publish) = seen.claim("E1") else {
            panic!("the first delivery carries it out");
        };
        let Claim::Again(rx) = seen.claim("E1") else {
            panic!("a redelivery does not");
        };
        assert!(rx.borrow().is_none());
        publish.send_replace(Some(Ack::Send(Some(json!({"text": "hi"})))));
        assert_eq!(*rx.borrow(), Some(Ack::Send(Some(json!({"text": "hi"})))));
        assert!(matches!(seen.claim("E2"), Claim::First(_)));
        seen.forget("E2");
        assert!(matches!(seen.claim("E2"), Claim::First(_)), "forgotten");
        // Only the latest REMEMBERED are kept.
        for n in 0..REMEMBERED {
            let _ = seen.claim(&format!("X{n}"));
        }
        assert!(matches!(seen.claim("E1"), Claim::First(_)));
    }

    #[test]
    fn reconnection_waits_grow_from_half_a_second_to_thirty() {
        let waits: Vec<Duration> = backoff().take(12).collect();
        assert!(waits[0] >= Duration::from_millis(500) && waits[0] <= Duration::from_secs(1));
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(60)));
        assert!(waits[11] >= Duration::from_secs(30), "{waits:?}");
    }
}
