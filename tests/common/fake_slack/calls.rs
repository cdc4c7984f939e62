//! Readers of what the bot sent Slack, so that tests assert on messages,
//! buttons and notes rather than on raw JSON: [`SlackCall`] (one recorded
//! Web API call or `response_url` post), the [`Button`]s of a message, an
//! [`ApprovalMessage`] (a posted message with `strands_*` buttons) and an
//! [`Ephemeral`] note for one user, plus [`all_text`] and [`has_button`]
//! for any JSON the bot produced.
//!
//! Only reading: the fake that records the calls is in `mod.rs`, the waits
//! for them are methods of [`super::FakeSlack`].

use serde_json::{json, Value};
use std::time::Instant;

/// Every string in `v` (object values and array items, depth first), one per
pub use crate::common::service::all_text;

/// Whether `v` holds a button anywhere (actions blocks or accessories).
pub fn has_button(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.iter().any(has_button),
        Value::Object(o) => o.get("type") == Some(&json!("button")) || o.values().any(has_button),
        _ => false,
    }
}

pub(super) fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One call the fake received.
#[derive(Debug, Clone)]
pub struct SlackCall {
    /// 1-based arrival number.
    pub n: usize,
    pub at: Instant,
    /// The Web API method (`chat.postMessage`), or `response_url` for posts to
    /// a response URL, or the path for anything else.
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub content_type: String,
    /// The body as JSON, whether it came as JSON or form-encoded.
    pub body: Value,
    pub status: u16,
    pub response: Value,
}

impl SlackCall {
    /// HTTP 200 and `"ok": true`.
    pub fn ok(&self) -> bool {
        self.status == 200 && self.response["ok"] == true
    }
    /// A top-level body field as a string ("" when absent).
    pub fn field(&self, key: &str) -> String {
        str_of(&self.body[key])
    }
    pub fn channel(&self) -> String {
        self.field("channel")
    }
    /// The message this call is about: the new ts for `chat.postMessage`, the
    /// updated one for `chat.update`.
    pub fn ts(&self) -> String {
        match str_of(&self.response["ts"]) {
            ts if !ts.is_empty() => ts,
            _ => self.field("ts"),
        }
    }
    pub fn thread_ts(&self) -> String {
        self.field("thread_ts")
    }
    /// Every string of the body (text, blocks, view): for `contains` checks.
    pub fn text(&self) -> String {
        all_text(&self.body)
    }
    pub fn blocks(&self) -> Vec<Value> {
        self.body["blocks"].as_array().cloned().unwrap_or_default()
    }
    pub fn has_actions_block(&self) -> bool {
        self.blocks().iter().any(|b| b["type"] == "actions")
    }
    pub fn has_buttons(&self) -> bool {
        has_button(&self.body["blocks"])
    }
    /// The buttons of the message, in order.
    pub fn buttons(&self) -> Vec<Button> {
        buttons_of(&self.blocks())
    }
}

/// A button of a posted message.
#[derive(Debug, Clone)]
pub struct Button {
    pub action_id: String,
    pub value: String,
    /// The block it is in (as Slack reports it in `actions[].block_id`).
    pub block_id: String,
    pub text: String,
    pub style: String,
}

fn buttons_of(blocks: &[Value]) -> Vec<Button> {
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        // Slack makes up a block_id when the bot gives none.
        let block_id = b["block_id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("slack-gen-{i}"));
        let mut candidates: Vec<&Value> = Vec::new();
        if let Some(e) = b["elements"].as_array() {
            candidates.extend(e.iter());
        }
        if b["accessory"].is_object() {
            candidates.push(&b["accessory"]);
        }
        for e in candidates {
            if e["type"] == "button" {
                out.push(Button {
                    action_id: str_of(&e["action_id"]),
                    value: str_of(&e["value"]),
                    block_id: block_id.clone(),
                    text: str_of(&e["text"]["text"]),
                    style: str_of(&e["style"]),
                });
            }
        }
    }
    out
}

/// An approval message the bot posted (a successful `chat.postMessage` with
/// `strands_*` buttons).
#[derive(Debug, Clone)]
pub struct ApprovalMessage {
    pub channel: String,
    pub ts: String,
    pub call: SlackCall,
}

impl ApprovalMessage {
    pub fn buttons(&self) -> Vec<Button> {
        self.call.buttons()
    }
    pub fn action_ids(&self) -> Vec<String> {
        self.buttons().into_iter().map(|b| b.action_id).collect()
    }
    /// The button with `action_id`; panics when there is none.
    pub fn button(&self, action_id: &str) -> Button {
        self.buttons()
            .into_iter()
            .find(|b| b.action_id == action_id)
            .unwrap_or_else(|| {
                panic!(
                    "the approval message has no {action_id:?} button, only {:?}:\n{:#}",
                    self.action_ids(),
                    self.call.body
                )
            })
    }
    /// The gate handle its `strands_*` buttons carry (e.g. `review#1`).
    pub fn handle(&self) -> String {
        self.buttons()
            .into_iter()
            .find(|b| b.action_id.starts_with("strands_"))
            .map(|b| b.value)
            .unwrap_or_default()
    }
    pub fn text(&self) -> String {
        self.call.text()
    }
}

/// A "you can't do that" note for one user: a `chat.postEphemeral` or a post
/// to the `response_url` of their click.
#[derive(Debug, Clone)]
pub struct Ephemeral {
    pub user: Option<String>,
    pub text: String,
    pub call: SlackCall,
}
