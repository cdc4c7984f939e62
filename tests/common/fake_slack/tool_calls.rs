//! Readers for tool-call approvals, where one message asks about several
//! calls at once and every call has its own row of buttons whose value is
//! `handle|call id`: which call a button is for ([`split_call_value`],
//! [`call_button`]), which calls still wait ([`calls_with_buttons`]), what
//! was decided ([`context_lines`]), and the wait for such a message.
//! Clicking one call's button is [`super::Bot::click_call`].
//!
//! Also [`FakeTarget`], the HTTP API on 127.0.0.1 the approved tools call,
//! so that tests can see which calls really ran.

use super::{ApprovalMessage, Button, FakeSlack, SlackCall};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::Uri;
use axum::Router;
use std::sync::{Arc, Mutex};

/// Splits a tool-approval button value `handle|call id`.
pub fn split_call_value(value: &str) -> (String, Option<String>) {
    match value.split_once('|') {
        Some((h, c)) => (h.to_string(), Some(c.to_string())),
        None => (value.to_string(), None),
    }
}

impl ApprovalMessage {
    /// The gate handle the message asks about: a tool-approval message's
    /// buttons carry `handle|call id`, others the handle alone.
    pub fn gate(&self) -> String {
        split_call_value(&self.handle()).0
    }

    /// The `action_id` button of call `call_id`; panics when there is none.
    pub fn call_button(&self, action_id: &str, call_id: &str) -> Button {
        call_button(&self.call, action_id, call_id).unwrap_or_else(|| {
            panic!(
                "no {action_id:?} button for call {call_id:?} in:\n{:#}",
                self.call.body
            )
        })
    }
}

/// The `action_id` button of call `call_id` in a posted or updated message.
pub fn call_button(call: &SlackCall, action_id: &str, call_id: &str) -> Option<Button> {
    call.buttons().into_iter().find(|b| {
        b.action_id == action_id && split_call_value(&b.value).1.as_deref() == Some(call_id)
    })
}

/// The call ids that still have buttons in a posted or updated message.
pub fn calls_with_buttons(call: &SlackCall) -> Vec<String> {
    let mut ids: Vec<String> = call
        .buttons()
        .into_iter()
        .filter_map(|b| split_call_value(&b.value).1)
        .collect();
    ids.dedup();
    ids
}

/// The texts of a message's context blocks (a tool approval's per-call
/// outcomes are context lines).
pub fn context_lines(call: &SlackCall) -> Vec<String> {
    call.blocks()
        .iter()
        .filter(|b| b["type"] == "context")
        .flat_map(|b| {
            b["elements"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|e| e["text"].as_str().map(str::to_string))
        })
        .collect()
}

impl FakeSlack {
    /// Waits for the tool-approval message of gate `handle` (`tools#1`).
    #[track_caller]
    pub fn wait_for_tool_approval(&self, handle: &str) -> ApprovalMessage {
        self.wait_for_approval_where(|m| m.gate() == handle, handle)
    }
}

/// One request a [`FakeTarget`] received.
#[derive(Debug, Clone)]
pub struct TargetHit {
    pub method: String,
    pub path: String,
    pub body: String,
}

/// An HTTP API on 127.0.0.1 for the tools to call: it records every
/// request and answers `200 target got METHOD PATH`.
pub struct FakeTarget {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    hits: Arc<Mutex<Vec<TargetHit>>>,
}

impl FakeTarget {
    pub fn start() -> FakeTarget {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the target");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("target address").port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().fallback(target_hit).with_state(hits.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the target's runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                axum::serve(listener, app).await.expect("the target serves");
            });
        });
        FakeTarget {
            url: format!("http://127.0.0.1:{port}"),
            hits,
        }
    }

    pub fn hits(&self) -> Vec<TargetHit> {
        self.hits.lock().expect("target hits").clone()
    }

    /// How many `method path` requests arrived.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.hits()
            .iter()
            .filter(|h| h.method == method && h.path == path)
            .count()
    }
}

async fn target_hit(
    State(hits): State<Arc<Mutex<Vec<TargetHit>>>>,
    method: axum::http::Method,
    uri: Uri,
    body: Bytes,
) -> String {
    let (method, path) = (method.to_string(), uri.path().to_string());
    hits.lock().expect("target hits").push(TargetHit {
        method: method.clone(),
        path: path.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    format!("target got {method} {path}")
}
