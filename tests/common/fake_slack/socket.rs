//! Slack's Socket Mode, faked: a WebSocket server on 127.0.0.1 that the
//! fake Web API's `apps.connections.open` points the bot at, as Slack's
//! does (`ws://127.0.0.1:PORT/link/?ticket=N`; each ticket works once).
//!
//! Like Slack, it greets each connection with `hello`, sends envelopes
//! (`slash_commands`, `interactive`, `events_api`) and records every
//! acknowledgement (`{"envelope_id", "payload"?}`) with the time since
//! the envelope was sent; it can ask for a new connection (`disconnect`),
//! close a connection cleanly, or drop it without a word. What Slack would
//! refuse — an unknown or reused ticket, an ack naming no envelope sent,
//! a frame that is not JSON — is recorded in [`FakeSocket::refusals`].
//!
//! It runs on its own runtime in a background thread, like the Web API fake,
//! and is started by [`super::FakeSlack::socket`] (or the bot's first
//! `apps.connections.open`).

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::Message;

use super::{TEAM_ID, WAIT};

/// The app-level token the fake accepts for `apps.connections.open`.
pub const APP_TOKEN: &str = "xapp-1-A0STRANDS1-0000000001-fakeapptoken";

/// One acknowledgement the bot sent.
#[derive(Debug, Clone)]
pub struct SocketAck {
    pub envelope_id: String,
    /// The ack's `payload`, when it had one.
    pub payload: Option<Value>,
    /// The connection it came on (1-based, in opening order).
    pub conn: usize,
    /// From sending the envelope (its latest delivery) to receiving this.
    pub elapsed: Duration,
}

/// What the fake does to one connection.
enum Out {
    Frame(String),
    /// A close frame, then the end.
    Close,
    /// The TCP connection dropped without a close frame.
    Kill,
}

struct Conn {
    out: mpsc::UnboundedSender<Out>,
    open: bool,
}

#[derive(Default)]
struct SocketState {
    /// Tickets issued by `apps.connections.open`, and whether used.
    tickets: HashMap<String, bool>,
    conns: Vec<Conn>,
    /// Envelope id → when it was last sent.
    sent: HashMap<String, Instant>,
    acks: Vec<SocketAck>,
    refusals: Vec<String>,
}

struct SocketShared {
    state: Mutex<SocketState>,
    next_ticket: AtomicUsize,
    next_envelope: AtomicUsize,
}

/// A running fake Socket Mode endpoint; clones share it.
#[derive(Clone)]
pub struct FakeSocket {
    pub port: u16,
    shared: Arc<SocketShared>,
}

impl FakeSocket {
    pub fn start() -> FakeSocket {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake socket");
        listener
            .set_nonblocking(true)
            .expect("make the fake socket's listener non-blocking");
        let port = listener.local_addr().expect("fake socket's address").port();
        let shared = Arc::new(SocketShared {
            state: Mutex::new(SocketState::default()),
            next_ticket: AtomicUsize::new(0),
            next_envelope: AtomicUsize::new(0),
        });
        let serving = Arc::clone(&shared);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the fake socket's runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)
                    .expect("the fake socket's listener");
                while let Ok((tcp, _)) = listener.accept().await {
                    tokio::spawn(serve(Arc::clone(&serving), tcp));
                }
            });
        });
        FakeSocket { port, shared }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SocketState> {
        self.shared.state.lock().expect("fake socket state")
    }

    /// A fresh connection URL, as `apps.connections.open` answers.
    pub fn issue_url(&self) -> String {
        let n = self.shared.next_ticket.fetch_add(1, Ordering::SeqCst) + 1;
        let ticket = format!("ticket-{n:04}");
        self.state().tickets.insert(ticket.clone(), false);
        format!(
            "ws://127.0.0.1:{}/link/?ticket={ticket}&app_id=A0STRANDS1",
            self.port
        )
    }

    /// Connections opened so far (greeted with `hello`).
    pub fn connections(&self) -> usize {
        self.state().conns.len()
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.state().conns.iter().filter(|c| c.open).count()
    }

    /// Waits until `n` connections have been opened; panics after `WAIT`.
    #[track_caller]
    pub fn wait_connections(&self, n: usize) {
        let until = Instant::now() + WAIT;
        while self.connections() < n {
            assert!(
                Instant::now() < until,
                "the bot opened {} Socket Mode connection(s) within {WAIT:?}, wanted {n}; refusals: {:?}",
                self.connections(),
                self.refusals()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What Slack would have refused.
    pub fn refusals(&self) -> Vec<String> {
        self.state().refusals.clone()
    }

    /// Every acknowledgement so far.
    pub fn acks(&self) -> Vec<SocketAck> {
        self.state().acks.clone()
    }

    /// The acknowledgements of one envelope.
    pub fn acks_of(&self, envelope_id: &str) -> Vec<SocketAck> {
        self.acks()
            .into_iter()
            .filter(|a| a.envelope_id == envelope_id)
            .collect()
    }

    /// Waits for the `nth` (1-based) acknowledgement of `envelope_id`.
    #[track_caller]
    pub fn wait_ack_n(&self, envelope_id: &str, nth: usize) -> SocketAck {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(a) = self.acks_of(envelope_id).into_iter().nth(nth - 1) {
                return a;
            }
            assert!(
                Instant::now() < until,
                "envelope {envelope_id} was not acknowledged (time {nth}) within {WAIT:?}; acks: {:#?}; refusals: {:?}",
                self.acks(),
                self.refusals()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the acknowledgement of `envelope_id`.
    #[track_caller]
    pub fn wait_ack(&self, envelope_id: &str) -> SocketAck {
        self.wait_ack_n(envelope_id, 1)
    }

    /// The latest open connection (1-based).
    #[track_caller]
    fn latest(&self) -> usize {
        let st = self.state();
        let n = st
            .conns
            .iter()
            .rposition(|c| c.open)
            .unwrap_or_else(|| panic!("no Socket Mode connection is open"));
        n + 1
    }

    fn push(&self, conn: usize, out: Out) {
        let st = self.state();
        let c = &st.conns[conn - 1];
        let _ = c.out.send(out);
    }

    /// A fresh envelope id, shaped like Slack's.
    pub fn envelope_id(&self) -> String {
        let n = self.shared.next_envelope.fetch_add(1, Ordering::SeqCst) + 1;
        format!("{n:08x}-4d35-4d0b-b6aa-3361493e1caf")
    }

    /// Sends `envelope` (with its `envelope_id`) on the latest connection.
    #[track_caller]
    pub fn send(&self, envelope: &Value) -> String {
        self.send_on(self.latest(), envelope)
    }

    /// Sends `envelope` on connection `conn`.
    pub fn send_on(&self, conn: usize, envelope: &Value) -> String {
        let id = envelope["envelope_id"]
            .as_str()
            .expect("an envelope_id")
            .to_string();
        self.state().sent.insert(id.clone(), Instant::now());
        self.push(conn, Out::Frame(envelope.to_string()));
        id
    }

    /// `{"type": "disconnect", "reason"}` on the latest connection; the
    /// connection stays open (Slack closes it a little later). Returns it.
    #[track_caller]
    pub fn disconnect(&self, reason: &str) -> usize {
        let conn = self.latest();
        let frame = json!({"type": "disconnect", "reason": reason,
                           "debug_info": {"host": "applink-fake"}});
        self.push(conn, Out::Frame(frame.to_string()));
        conn
    }

    /// Closes connection `conn` with a close frame.
    pub fn close(&self, conn: usize) {
        self.push(conn, Out::Close);
    }

    /// Drops the latest connection without a word (a network failure).
    #[track_caller]
    pub fn kill_latest(&self) -> usize {
        let conn = self.latest();
        self.push(conn, Out::Kill);
        conn
    }

    // -- envelopes, in the shapes Slack sends ------------------------------

    /// A `slash_commands` envelope: the command's fields as a JSON object.
    pub fn command(&self, user: &str, channel: &str, text: &str, response_url: &str) -> Value {
        json!({
            "envelope_id": self.envelope_id(),
            "type": "slash_commands",
            "accepts_response_payload": true,
            "payload": {
                "token": "legacy-verification-token-unused",
                "team_id": TEAM_ID, "team_domain": "acme",
                "channel_id": channel, "channel_name": "ops",
                "user_id": user, "user_name": user.to_lowercase(),
                "command": "/strands", "text": text,
                "api_app_id": "A0STRANDS1", "is_enterprise_install": "false",
                "response_url": response_url,
                "trigger_id": super::payloads::command_trigger_id()
            }
        })
    }

    /// An `interactive` envelope around an interaction payload; Slack takes
    /// a response payload for `view_submission`s, not for clicks.
    pub fn interactive(&self, payload: &Value) -> Value {
        json!({
            "envelope_id": self.envelope_id(),
            "type": "interactive",
            "accepts_response_payload": payload["type"] == "view_submission",
            "payload": payload
        })
    }

    /// An `events_api` envelope for an event of type `kind`.
    pub fn event(&self, event_id: &str, kind: &str, retry_attempt: u32) -> Value {
        json!({
            "envelope_id": self.envelope_id(),
            "type": "events_api",
            "accepts_response_payload": false,
            "retry_attempt": retry_attempt,
            "retry_reason": if retry_attempt > 0 { "timeout" } else { "" },
            "payload": {
                "token": "legacy-verification-token-unused",
                "team_id": TEAM_ID, "api_app_id": "A0STRANDS1",
                "event": {"type": kind, "user": "U04APPROVER", "channel": "C0OPS",
                          "event_ts": "1763720031.000100"},
                "type": "event_callback", "event_id": event_id,
                "event_time": 1763720031,
                "authorizations": [{"team_id": TEAM_ID, "user_id": "U0BOTUSER", "is_bot": true}]
            }
        })
    }
}

/// One connection: checks its ticket, says hello, then relays.
// The handshake callback's error type is tungstenite's (an HTTP response).
#[allow(clippy::result_large_err)]
async fn serve(shared: Arc<SocketShared>, tcp: tokio::net::TcpStream) {
    let check = Arc::clone(&shared);
    let accepted = tokio_tungstenite::accept_hdr_async(
        tcp,
        move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
            let ticket = req
                .uri()
                .query()
                .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("ticket=")))
                .unwrap_or_default()
                .to_string();
            let mut st = check.state.lock().expect("fake socket state");
            match st.tickets.get_mut(&ticket) {
                Some(used @ false) => {
                    *used = true;
                    Ok(resp)
                }
                other => {
                    let why = if other.is_some() { "reused" } else { "unknown" };
                    st.refusals
                        .push(format!("a connection with an {why} ticket {ticket:?}"));
                    let mut refused = ErrorResponse::new(Some(format!("{why} ticket")));
                    *refused.status_mut() =
                        tokio_tungstenite::tungstenite::http::StatusCode::UNAUTHORIZED;
                    Err(refused)
                }
            }
        },
    )
    .await;
    let Ok(ws) = accepted else {
        return;
    };
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = {
        let mut st = shared.state.lock().expect("fake socket state");
        st.conns.push(Conn {
            out: tx,
            open: true,
        });
        st.conns.len()
    };
    let open_now = shared
        .state
        .lock()
        .expect("fake socket state")
        .conns
        .iter()
        .filter(|c| c.open)
        .count();
    let hello = json!({"type": "hello", "num_connections": open_now,
                       "debug_info": {"host": "applink-fake", "approximate_connection_time": 18060},
                       "connection_info": {"app_id": "A0STRANDS1"}});
    let _ = sink.send(Message::Text(hello.to_string().into())).await;
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Out::Frame(f)) => {
                    if sink.send(Message::Text(f.into())).await.is_err() {
                        break;
                    }
                }
                Some(Out::Close) => {
                    let _ = sink.send(Message::Close(None)).await;
                    break;
                }
                Some(Out::Kill) | None => break,
            },
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => record_ack(&shared, conn, text.as_str()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {} // pings are answered by the library
            },
        }
    }
    // Dropping both halves drops the TCP connection.
    shared.state.lock().expect("fake socket state").conns[conn - 1].open = false;
}

fn record_ack(shared: &SocketShared, conn: usize, text: &str) {
    let at = Instant::now();
    let mut st = shared.state.lock().expect("fake socket state");
    let frame: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => {
            st.refusals
                .push(format!("a frame that is not JSON: {text:?}"));
            return;
        }
    };
    let Some(id) = frame["envelope_id"].as_str().map(str::to_string) else {
        st.refusals
            .push(format!("a frame with no envelope_id: {text}"));
        return;
    };
    let Some(sent) = st.sent.get(&id).copied() else {
        st.refusals
            .push(format!("an ack for an envelope never sent: {text}"));
        return;
    };
    let extra: HashSet<&str> = frame
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if extra
        .iter()
        .any(|k| !["envelope_id", "payload"].contains(k))
    {
        st.refusals
            .push(format!("an ack with unknown fields: {text}"));
    }
    st.acks.push(SocketAck {
        envelope_id: id,
        payload: frame.get("payload").cloned(),
        conn,
        elapsed: at.duration_since(sent),
    });
}
