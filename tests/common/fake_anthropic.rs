//! A fake Anthropic Messages API on 127.0.0.1, the only fake on Claude
//! Code's side: Claude Code (`tests/agent-hosts`) runs headless with
//! `ANTHROPIC_BASE_URL` pointing here, so the tests decide what "the model"
//! asks for (a `tool_use` of `Bash`, or a text reply) and read what Claude
//! Code sends back (the `tool_result` a person's decision turned into).
//!
//! `POST /v1/messages` (any query string; Claude Code sends `?beta=true`)
//! is always answered as Server-Sent Events, the way the API streams
//! (Claude Code always asks with `"stream": true`): `message_start`, per
//! content block `content_block_start` / `content_block_delta`
//! (`text_delta`, or `input_json_delta` for a tool's input) /
//! `content_block_stop`, then `message_delta` (the stop reason and usage)
//! and `message_stop`. A [`Script`] decides each answer. Every request is
//! recorded (path with query, headers, JSON body); any other path gets 404
//! and is recorded too, so a test can assert that nothing else was asked.

use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::serve_in_background;

/// What the fake model answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A text reply (`stop_reason: end_turn`).
    Text(String),
    /// One `tool_use` block (`stop_reason: tool_use`); the id is
    /// `toolu_...`, made from the request's number unless given.
    ToolUse {
        name: String,
        input: Value,
        id: Option<String>,
    },
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_string())
    }

    pub fn tool_use(name: &str, input: Value) -> Reply {
        Reply::ToolUse {
            name: name.to_string(),
            input,
            id: None,
        }
    }
}

/// Decides the answer to request `n` (1-based, counted over the
/// `/v1/messages` requests) with body `body`.
pub type Script = dyn Fn(usize, &Value) -> Reply + Send + Sync;

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Request {
    /// 1-based arrival number over every request (404s included).
    pub n: usize,
    pub at: Instant,
    pub method: String,
    /// As sent, with the query string.
    pub path: String,
    /// Lowercased names.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (a string when it was not JSON; Null when empty).
    pub body: Value,
    /// What the fake answered (None for 404s).
    pub reply: Option<Reply>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Whether it was a Messages request (whatever the query string).
    pub fn is_messages(&self) -> bool {
        self.method == "POST" && path_only(&self.path) == "/v1/messages"
    }

    /// The `tool_result` blocks of the conversation, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        tool_results(&self.body)
    }

    /// The result answering `tool_use_id`; panics when there is none.
    #[track_caller]
    pub fn tool_result(&self, tool_use_id: &str) -> ToolResult {
        self.tool_results()
            .into_iter()
            .find(|r| r.tool_use_id == tool_use_id)
            .unwrap_or_else(|| {
                panic!(
                    "request #{} has no tool_result for {tool_use_id}: {:#}",
                    self.n, self.body["messages"]
                )
            })
    }

    /// The names of the tools offered (`tools[].name`).
    pub fn tools_offered(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A `tool_result` block as Claude Code sends it back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_use_id: String,
    /// The text: a string content as is, a list of blocks' texts joined by
    /// newlines.
    pub content: String,
    pub is_error: bool,
}

/// The `tool_result` blocks of every user turn of a Messages body.
pub fn tool_results(body: &Value) -> Vec<ToolResult> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| ToolResult {
            tool_use_id: b["tool_use_id"].as_str().unwrap_or_default().to_string(),
            content: match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|x| x["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                Value::Null => String::new(),
                other => other.to_string(),
            },
            is_error: b["is_error"] == json!(true),
        })
        .collect()
}

/// The text of the first user turn (the prompt given to `claude -p`).
pub fn first_user_text(body: &Value) -> String {
    let first = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"));
    match first.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

struct Shared {
    script: Box<Script>,
    /// Messages requests answered so far.
    messages: Mutex<usize>,
    log: Mutex<Vec<Request>>,
}

/// A running fake; it lives until the test process exits.
pub struct FakeAnthropic {
    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL` (no trailing slash).
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeAnthropic {
    /// A fake answering Messages request `n` with `script(n, body)`.
    pub fn start(script: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> FakeAnthropic {
        let shared = Arc::new(Shared {
            script: Box::new(script),
            messages: Mutex::new(0),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let port = serve_in_background(app);
        FakeAnthropic {
            url: format!("http://127.0.0.1:{port}"),
            shared,
        }
    }

    /// A model that calls `name` with `input` once (while the conversation
    /// has no `tool_result` yet), then says `FINAL: <what the tool result
    /// said>`. Keyed on the conversation, not on the request's number, so a
    /// side request of Claude Code's cannot shift it.
    pub fn calling(name: &str, input: Value) -> FakeAnthropic {
        let name = name.to_string();
        FakeAnthropic::start(move |_, body| match tool_results(body).last() {
            None => Reply::tool_use(&name, input.clone()),
            Some(r) => Reply::Text(format!("FINAL: {}", r.content)),
        })
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.log.lock().expect("fake log").clone()
    }

    /// The Messages requests, in arrival order.
    pub fn messages(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(Request::is_messages)
            .collect()
    }

    /// The requests to any other path (each answered 404).
    pub fn strays(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_messages())
            .collect()
    }

    /// The ids of the `tool_use` blocks the fake answered with, in order.
    pub fn tool_use_ids(&self) -> Vec<String> {
        self.messages()
            .into_iter()
            .filter_map(|r| match r.reply {
                Some(Reply::ToolUse { id, .. }) => Some(id.unwrap_or_else(|| tool_use_id(r.n))),
                _ => None,
            })
            .collect()
    }

    /// The first Messages request whose conversation carries a
    /// `tool_result` for `tool_use_id`, and that result; panics when none
    /// does.
    #[track_caller]
    pub fn result_for(&self, tool_use_id: &str) -> (Request, ToolResult) {
        self.messages()
            .into_iter()
            .find_map(|r| {
                let found = r
                    .tool_results()
                    .into_iter()
                    .find(|t| t.tool_use_id == tool_use_id);
                found.map(|t| (r, t))
            })
            .unwrap_or_else(|| {
                panic!(
                    "no request carries a tool_result for {tool_use_id}; requests: {:#?}",
                    self.messages()
                        .iter()
                        .map(|r| (r.n, r.body["messages"].clone()))
                        .collect::<Vec<_>>()
                )
            })
    }

    /// Waits until at least `n` Messages requests have arrived.
    #[track_caller]
    pub fn wait_for_messages(&self, n: usize, within: Duration) {
        super::wait_until(
            within,
            &format!("{n} Messages requests"),
            || self.messages().len() >= n,
            || format!("{:#?}", self.requests()),
        );
    }
}

/// The id the fake gives the `tool_use` of request `n` (Anthropic's ids
/// are `toolu_` and 24 base-62 characters; Claude Code does not check).
pub fn tool_use_id(n: usize) -> String {
    format!("toolu_fake{n:016}")
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| uri.path().to_string());
    let body: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    let headers: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                v.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let is_messages = method == Method::POST && path_only(&path) == "/v1/messages";
    // The script runs outside the log's lock (it may read the fake).
    let reply = if is_messages {
        let k = {
            let mut count = shared.messages.lock().expect("fake count");
            *count += 1;
            *count
        };
        Some((k, (shared.script)(k, &body)))
    } else {
        None
    };
    let mut log = shared.log.lock().expect("fake log");
    let n = log.len() + 1;
    let model = body["model"].as_str().unwrap_or("claude-fake").to_string();
    log.push(Request {
        n,
        at,
        method: method.to_string(),
        path,
        headers,
        body,
        reply: reply.as_ref().map(|(_, r)| r.clone()),
    });
    drop(log);
    match reply {
        Some((_, reply)) => stream(n, &model, &reply),
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({
                "type": "error",
                "error": {"type": "not_found_error", "message": "not on the fake Anthropic API"}
            })),
        )
            .into_response(),
    }
}

/// `reply` as the Messages API streams it (`n` names the message and the
/// tool_use).
fn stream(n: usize, model: &str, reply: &Reply) -> Response {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_fake{n:016}"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": 25, "output_tokens": 1,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            }
        }),
    );
    event("ping", json!({"type": "ping"}));
    let stop_reason = match reply {
        Reply::Text(text) => {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            );
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": text}}),
            );
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            );
            "end_turn"
        }
        Reply::ToolUse { name, input, id } => {
            let id = id.clone().unwrap_or_else(|| tool_use_id(n));
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            );
            // The input in two pieces, as the API sends partial JSON.
            let whole = input.to_string();
            let cut = whole
                .char_indices()
                .map(|(i, _)| i)
                .nth(whole.chars().count() / 2)
                .unwrap_or(0);
            for piece in [&whole[..cut], &whole[cut..]] {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "input_json_delta", "partial_json": piece}}),
                );
            }
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            );
            "tool_use"
        }
    };
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 12}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    (
        StatusCode::OK,
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            ("request-id", "req_fake"),
        ],
        out,
    )
        .into_response()
}
