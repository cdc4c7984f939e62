//! A minimal MCP server over Streamable HTTP on 127.0.0.1, so the tests of
//! the agent hosts can prove their harness without strands: Claude Code's
//! `--permission-prompt-tool` calls a tool here, and the two MCP client
//! scripts (`tests/agent-hosts`) list and call tools here, progress and
//! cancellation included. It speaks the initialize-handshake era of the
//! protocol (what the TypeScript SDK and Claude Code speak; the Python SDK
//! probes `server/discover` first, is told the method is unknown, and falls
//! back to it), statelessly: no `Mcp-Session-Id`, no GET stream.
//!
//! `POST /mcp` takes one JSON-RPC message: `initialize` and `tools/list`
//! are answered with JSON; `tools/call` with Server-Sent Events (the
//! handler's progress notifications, then the result), the handler
//! running on a thread of its own so it may wait; a notification gets 202.
//! A bearer token, when set, is required (401 otherwise). Every message is
//! recorded with its headers.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::serve_in_background;

/// The versions it accepts in `initialize` (it answers with the client's
/// when it is one of them, else the first).
pub const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Sends progress notifications for the call under way.
pub struct Progress {
    token: Value,
    tx: tokio::sync::mpsc::UnboundedSender<Value>,
}

impl Progress {
    /// Sends one (only when the client gave a `progressToken`); false when
    /// the client has gone away.
    pub fn send(&self, progress: f64, message: &str) -> bool {
        if self.token.is_null() {
            return !self.tx.is_closed();
        }
        self.tx
            .send(json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": self.token, "progress": progress, "message": message}
            }))
            .is_ok()
    }

    /// Whether the client has gone away (closed the stream).
    pub fn gone(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Answers `tools/call` of `name` with `arguments` (the whole `params` is
/// given too, `_meta` included): the `CallToolResult`.
pub type Handler = dyn Fn(&str, &Value, &Progress) -> Value + Send + Sync;

/// One JSON-RPC message the server received.
#[derive(Debug, Clone)]
pub struct Message {
    pub http_method: String,
    /// Lowercased names.
    pub headers: BTreeMap<String, String>,
    /// The JSON-RPC message (Null for a request without a body).
    pub body: Value,
    /// The HTTP status it was answered with.
    pub status: u16,
}

impl Message {
    pub fn method(&self) -> &str {
        self.body["method"].as_str().unwrap_or_default()
    }
}

struct Shared {
    name: String,
    token: Option<String>,
    tools: Vec<Value>,
    handler: Box<Handler>,
    log: Mutex<Vec<Message>>,
}

/// A running server; it lives until the test process exits.
pub struct FakeMcp {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    shared: Arc<Shared>,
}

/// A tool's listing: `name`, a description, and an input schema taking
/// any object.
pub fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("{name} (a test tool)"),
        "inputSchema": {"type": "object", "additionalProperties": true}
    })
}

/// A `CallToolResult` of one text block.
pub fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

impl FakeMcp {
    /// Server `name` offering `tools` (listings, see [`tool`]), answering
    /// calls with `handler`; `token` required as `Authorization: Bearer`
    /// when given.
    pub fn start(
        name: &str,
        token: Option<&str>,
        tools: Vec<Value>,
        handler: impl Fn(&str, &Value, &Progress) -> Value + Send + Sync + 'static,
    ) -> FakeMcp {
        let shared = Arc::new(Shared {
            name: name.to_string(),
            token: token.map(str::to_string),
            tools,
            handler: Box::new(handler),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/mcp", axum::routing::any(mcp))
            .with_state(shared.clone());
        let port = serve_in_background(app);
        FakeMcp {
            url: format!("http://127.0.0.1:{port}/mcp"),
            shared,
        }
    }

    /// Every message so far, in arrival order.
    pub fn messages(&self) -> Vec<Message> {
        self.shared.log.lock().expect("mcp log").clone()
    }

    /// The `tools/call` requests, in arrival order.
    pub fn calls(&self) -> Vec<Message> {
        self.messages()
            .into_iter()
            .filter(|m| m.method() == "tools/call")
            .collect()
    }

    /// The JSON-RPC methods received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.messages()
            .iter()
            .map(|m| m.method().to_string())
            .collect()
    }
}

fn record(shared: &Shared, method: &Method, headers: &HeaderMap, body: &Value, status: u16) {
    shared.log.lock().expect("mcp log").push(Message {
        http_method: method.to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
        body: body.clone(),
        status,
    });
}

async fn mcp(
    State(shared): State<Arc<Shared>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(token) = &shared.token {
        let sent = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if sent != format!("Bearer {token}") {
            record(&shared, &method, &headers, &msg, 401);
            return (
                StatusCode::UNAUTHORIZED,
                [("www-authenticate", "Bearer")],
                "a bearer token is required",
            )
                .into_response();
        }
    }
    if method != Method::POST {
        record(&shared, &method, &headers, &msg, 405);
        return (StatusCode::METHOD_NOT_ALLOWED, [("allow", "POST")]).into_response();
    }
    let id = msg["id"].clone();
    let name = msg["method"].as_str().unwrap_or_default().to_string();
    if id.is_null() {
        record(&shared, &method, &headers, &msg, 202);
        return StatusCode::ACCEPTED.into_response();
    }
    record(&shared, &method, &headers, &msg, 200);
    let reply = |result: Value| Json(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match name.as_str() {
        "initialize" => {
            let asked = msg["params"]["protocolVersion"]
                .as_str()
                .unwrap_or_default();
            let version = VERSIONS
                .iter()
                .find(|v| **v == asked)
                .unwrap_or(&VERSIONS[0]);
            reply(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": shared.name, "version": "0.0.0"}
            }))
            .into_response()
        }
        "ping" => reply(json!({})).into_response(),
        "tools/list" => reply(json!({"tools": shared.tools})).into_response(),
        "tools/call" => call(shared, id, msg["params"].clone()),
        _ => Json(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": format!("method not found: {name}")}
        }))
        .into_response(),
    }
}

/// A `tools/call` answered as an event stream: the handler runs on a
/// thread of its own; what it sends (progress, then the result) goes out
/// as it comes.
fn call(shared: Arc<Shared>, id: Value, params: Value) -> Response {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let progress = Progress {
        token: params["_meta"]["progressToken"].clone(),
        tx: tx.clone(),
    };
    std::thread::spawn(move || {
        let name = params["name"].as_str().unwrap_or_default().to_string();
        let result = (shared.handler)(&name, &params, &progress);
        let _ = tx.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        let msg = rx.recv().await?;
        let frame = Bytes::from(format!("event: message\ndata: {msg}\n\n"));
        Some((Ok::<_, std::convert::Infallible>(frame), rx))
    });
    (
        StatusCode::OK,
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}

/// Sends `steps` progress notifications `every` apart, then answers
/// `text`; stops early (answering "gone") when the client went away.
pub fn slowly(progress: &Progress, steps: usize, every: Duration, text: &str) -> Value {
    for i in 1..=steps {
        if !progress.send(i as f64, &format!("step {i}")) {
            return text_result("gone");
        }
        std::thread::sleep(every);
    }
    text_result(text)
}
