//! Local fakes of the providers that do not speak OpenAI's wire format as
//! `FakeLlm` does: Gemini's generateContent, Azure OpenAI's deployment
//! route, and Bedrock's Converse. One axum server per fake on 127.0.0.1,
//! recording every request (path with query, headers, JSON body) and
//! answering in that wire format:
//!
//! - the first `fail_first.len()` requests get those statuses (429s carry
//!   `Retry-After: 0`), with the error body the real service sends;
//! - then, when a tool call is scripted and the conversation has no tool
//!   result yet, one call to it;
//! - otherwise the text `ANSWER <n>: <what the model was told last>` —
//!   the tool's result when there is one, else the last user text.

use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::serve_in_background;

/// Which wire format a fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Gemini,
    Azure,
    Bedrock,
}

/// One request a fake received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// As sent: percent-encoding and query string kept.
    pub path: String,
    /// Lowercased names.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// The status the fake answered with.
    pub status: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

struct Shared {
    wire: Wire,
    fail_first: Vec<u16>,
    /// `(tool name, arguments)` of the one call the model makes.
    call: Option<(String, Value)>,
    usage: (u64, u64),
    log: Mutex<Vec<Received>>,
}

/// A running fake; it lives until the test process exits.
pub struct WireFake {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    shared: Arc<Shared>,
}

impl WireFake {
    /// A fake of `wire` that fails the first requests with `fail_first`
    /// and, when `call` is given, calls that tool once before answering.
    pub fn start(wire: Wire, fail_first: &[u16], call: Option<(&str, Value)>) -> WireFake {
        let shared = Arc::new(Shared {
            wire,
            fail_first: fail_first.to_vec(),
            call: call.map(|(name, args)| (name.to_string(), args)),
            usage: (11, 5),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let port = serve_in_background(app);
        WireFake {
            url: format!("http://127.0.0.1:{port}"),
            shared,
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.log.lock().expect("fake log").clone()
    }

    /// The requests answered with 200.
    pub fn answered(&self) -> Vec<Received> {
        self.requests()
            .into_iter()
            .filter(|r| r.status == 200)
            .collect()
    }
}

/// The text of the tool result in a request body, if it has one.
pub fn tool_result(wire: Wire, body: &Value) -> Option<String> {
    let found = match wire {
        Wire::Gemini => body["contents"]
            .as_array()?
            .iter()
            .flat_map(|c| c["parts"].as_array().into_iter().flatten())
            .find_map(|p| {
                let r = &p["functionResponse"]["response"];
                r["output"].as_str().or(r["error"].as_str())
            }),
        Wire::Azure => body["messages"]
            .as_array()?
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str()),
        Wire::Bedrock => body["messages"]
            .as_array()?
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .find_map(|b| b["toolResult"]["content"][0]["text"].as_str()),
    };
    found.map(str::to_string)
}

/// The text of the last user turn of a request body.
pub fn last_user_text(wire: Wire, body: &Value) -> String {
    let text = match wire {
        Wire::Gemini => body["contents"].as_array().and_then(|c| {
            c.iter()
                .rev()
                .find(|c| c["role"] == "user")
                .and_then(|c| c["parts"][0]["text"].as_str())
        }),
        Wire::Azure => body["messages"].as_array().and_then(|m| {
            m.iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str())
        }),
        Wire::Bedrock => body["messages"].as_array().and_then(|m| {
            m.iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"][0]["text"].as_str())
        }),
    };
    text.unwrap_or_default().to_string()
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let mut log = shared.log.lock().expect("fake log");
    let n = log.len() + 1;
    let status = shared.fail_first.get(n - 1).copied().unwrap_or(200);
    log.push(Received {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default(),
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
    drop(log);
    if status != 200 {
        return failure(shared.wire, status);
    }
    let result = tool_result(shared.wire, &body);
    match (&shared.call, result) {
        (Some((name, args)), None) => calls(shared.wire, n, name, args, shared.usage),
        (_, result) => {
            let said = result.unwrap_or_else(|| last_user_text(shared.wire, &body));
            text(shared.wire, &format!("ANSWER {n}: {said}"), shared.usage)
        }
    }
}

/// The error answer each service gives for `status`.
fn failure(wire: Wire, status: u16) -> Response {
    let code = StatusCode::from_u16(status).expect("a status code");
    let mut response = match wire {
        Wire::Gemini => (
            code,
            Json(json!({"error": {"code": status, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}})),
        )
            .into_response(),
        Wire::Azure => (
            code,
            Json(json!({"error": {"code": status.to_string(), "message": "Requests have exceeded the rate limit"}})),
        )
            .into_response(),
        Wire::Bedrock => {
            let kind = if status == 429 {
                "ThrottlingException"
            } else {
                "ServiceUnavailableException"
            };
            (
                code,
                [("x-amzn-errortype", kind)],
                Json(json!({"message": "Too many requests, please wait before trying again."})),
            )
                .into_response()
        }
    };
    if status == 429 {
        response
            .headers_mut()
            .insert("retry-after", "0".parse().expect("a header value"));
    }
    response
}

fn text(wire: Wire, text: &str, (input, output): (u64, u64)) -> Response {
    Json(match wire {
        Wire::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output, "totalTokenCount": input + output},
        }),
        Wire::Azure => json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
        }),
        Wire::Bedrock => json!({
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": input, "outputTokens": output, "totalTokens": input + output},
            "metrics": {"latencyMs": 1},
        }),
    })
    .into_response()
}

/// One call of tool `name`: Gemini's without an id (as Gemini sends them),
/// the others with `call-<n>`.
fn calls(wire: Wire, n: usize, name: &str, args: &Value, (input, output): (u64, u64)) -> Response {
    let id = format!("call-{n}");
    Json(match wire {
        Wire::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output},
        }),
        Wire::Azure => json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": input, "completion_tokens": output},
        }),
        Wire::Bedrock => json!({
            "output": {"message": {"role": "assistant", "content": [{"toolUse": {"toolUseId": id, "name": name, "input": args}}]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": input, "outputTokens": output, "totalTokens": input + output},
            "metrics": {"latencyMs": 1},
        }),
    })
    .into_response()
}
