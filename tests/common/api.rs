//! What the API tests need besides the service itself: tokens made with the
//! real CLI, JSON calls with a bearer token, a blocking Server-Sent Events
//! reader over a plain socket, and a webhook receiver that fails its first
//! deliveries on purpose.

#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::service::{http, HttpReply, Service};
use super::Sandbox;

/// `strands tokens create NAME --role ROLE --json` on the sandbox's store:
/// the secret.
#[track_caller]
pub fn make_token(sandbox: &Sandbox, name: &str, role: &str) -> String {
    let out = sandbox.strands(&["tokens", "create", name, "--role", role, "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["name"], name, "{v}");
    assert_eq!(v["role"], role, "{v}");
    v["token"].as_str().expect("a token").to_string()
}

/// A JSON request to the service with `token`.
#[track_caller]
pub fn call(
    svc: &Service,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> HttpReply {
    let mut headers = vec![("Accept".to_string(), "application/json".to_string())];
    if let Some(t) = token {
        headers.push(("Authorization".into(), format!("Bearer {t}")));
    }
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    if body.is_some() {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    svc.request(method, path, &headers, &bytes)
}

/// Asserts the status and the error code of a refusal.
#[track_caller]
pub fn expect_error(reply: &HttpReply, status: u16, code: &str) -> String {
    assert_eq!(
        reply.status, status,
        "expected {status} {code}, got {} {}",
        reply.status, reply.body
    );
    let v = reply.json();
    assert_eq!(v["error"]["code"], code, "{}", reply.body);
    v["error"]["message"]
        .as_str()
        .expect("a message")
        .to_string()
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: u64,
    pub event: String,
    pub data: Value,
}

/// A Server-Sent Events stream read over a plain socket (HTTP/1.0, so the
/// body is the stream itself, unchunked).
pub struct Sse {
    stream: TcpStream,
    buf: Vec<u8>,
    /// The response's status and headers.
    pub head: String,
    ended: bool,
}

impl Sse {
    /// `GET path` on the service with `token` (and `Last-Event-ID`).
    pub fn open(svc: &Service, path: &str, token: &str, last_event_id: Option<u64>) -> Sse {
        let mut headers = vec![("Authorization".to_string(), format!("Bearer {token}"))];
        if let Some(id) = last_event_id {
            headers.push(("Last-Event-ID".into(), id.to_string()));
        }
        Sse::open_with(svc, path, &headers)
    }

    /// `GET path` on the service with `headers`.
    pub fn open_with(svc: &Service, path: &str, headers: &[(String, String)]) -> Sse {
        let host = svc.url.trim_start_matches("http://").to_string();
        let mut stream = TcpStream::connect(&host).expect("connect for SSE");
        let mut req =
            format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: text/event-stream\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        stream
            .write_all(req.as_bytes())
            .expect("send the SSE request");
        let mut sse = Sse {
            stream,
            buf: Vec::new(),
            head: String::new(),
            ended: false,
        };
        let until = Instant::now() + Duration::from_secs(10);
        while !sse.buf.windows(4).any(|w| w == b"\r\n\r\n") {
            assert!(Instant::now() < until, "no SSE response head");
            if !sse.fill(Duration::from_millis(200)) && sse.ended {
                break;
            }
        }
        let split = sse
            .buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(&sse.buf)));
        sse.head = String::from_utf8_lossy(&sse.buf[..split]).into_owned();
        sse.buf.drain(..split + 4);
        sse
    }

    /// The status of the response.
    pub fn status(&self) -> u16 {
        self.head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// Reads what arrives within `wait`; false when nothing did.
    fn fill(&mut self, wait: Duration) -> bool {
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .expect("read timeout");
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk) {
            Ok(0) => {
                self.ended = true;
                false
            }
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(_) => false,
        }
    }

    /// The next event within `wait` (keep-alive comments are skipped);
    /// `None` when none came or the stream ended.
    pub fn next(&mut self, wait: Duration) -> Option<SseEvent> {
        let until = Instant::now() + wait;
        loop {
            while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                let text = String::from_utf8_lossy(&block).into_owned();
                let (mut id, mut event, mut data) = (None, String::new(), String::new());
                for line in text.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if let Some(id) = id {
                    let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
                    return Some(SseEvent { id, event, data });
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.ended {
                return None;
            }
            self.fill(left.min(Duration::from_millis(200)));
        }
    }

    /// Events until one of type `kind` (inclusive), within `wait`.
    #[track_caller]
    pub fn until(&mut self, kind: &str, wait: Duration) -> Vec<SseEvent> {
        let deadline = Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(e) => {
                    let done = e.event == kind;
                    seen.push(e);
                    if done {
                        return seen;
                    }
                }
                None => panic!(
                    "no `{kind}` event within {wait:?}; saw {:?}",
                    seen.iter().map(|e| e.event.clone()).collect::<Vec<_>>()
                ),
            }
        }
    }

    /// Whether the server closed the stream within `wait`.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        while !self.ended && Instant::now() < until {
            self.fill(Duration::from_millis(100));
        }
        self.ended
    }
}

/// One delivery the receiver got.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// What it answered.
    pub status: u16,
}

impl Delivery {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON webhook body")
    }
}

struct ReceiverState {
    got: Mutex<Vec<Delivery>>,
    /// Deliveries answered with a failure before the first 200.
    fail_first: Mutex<usize>,
    /// The failure's status (500 unless told).
    fail_status: Mutex<u16>,
}

/// A webhook endpoint on 127.0.0.1 that answers 500 to its first
/// `fail_first` deliveries, then 200; it keeps every one.
#[derive(Clone)]
pub struct Receiver {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    state: Arc<ReceiverState>,
}

impl Receiver {
    pub fn start(fail_first: usize) -> Receiver {
        let state = Arc::new(ReceiverState {
            got: Mutex::new(Vec::new()),
            fail_first: Mutex::new(fail_first),
            fail_status: Mutex::new(500),
        });
        let app = Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(state.clone());
        let port = super::serve_in_background(app);
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            state,
        }
    }

    /// From now on, fail the next `n` deliveries.
    pub fn fail_next(&self, n: usize) {
        *self.state.fail_first.lock().expect("state") = n;
    }

    /// From now on, answer the next `n` deliveries with `status` (a 4xx
    /// makes strands give up at once).
    pub fn fail_next_with(&self, n: usize, status: u16) {
        *self.state.fail_status.lock().expect("state") = status;
        self.fail_next(n);
    }

    pub fn deliveries(&self) -> Vec<Delivery> {
        self.state.got.lock().expect("state").clone()
    }

    /// Waits until `pred` holds of the deliveries, within `wait`.
    #[track_caller]
    pub fn wait_for(&self, wait: Duration, pred: impl Fn(&[Delivery]) -> bool) -> Vec<Delivery> {
        let until = Instant::now() + wait;
        loop {
            let got = self.deliveries();
            if pred(&got) {
                return got;
            }
            assert!(
                Instant::now() < until,
                "the receiver did not get what was expected within {wait:?}; got {:?}",
                got.iter()
                    .map(|d| (
                        d.status,
                        d.header("webhook-id"),
                        String::from_utf8_lossy(&d.body)
                            .chars()
                            .take(80)
                            .collect::<String>()
                    ))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

async fn receive(
    State(state): State<Arc<ReceiverState>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let status = {
        let mut fail = state.fail_first.lock().expect("state");
        if *fail > 0 {
            *fail -= 1;
            let status = *state.fail_status.lock().expect("state");
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        } else {
            StatusCode::OK
        }
    };
    state.got.lock().expect("state").push(Delivery {
        headers,
        body: body.to_vec(),
        status: status.as_u16(),
    });
    status
}

/// A GET with no token, for `/healthz`-like probes.
pub fn get_plain(url: &str) -> std::io::Result<HttpReply> {
    http("GET", url, &[], b"")
}
