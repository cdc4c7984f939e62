//! Test support for `strands serve`: a fake Slack Web API and a harness that
//! runs the real bot binary against it and the fake model server.
//!
//! - [`FakeSlack`] answers `POST /api/<method>` (and `GET`, query as the
//!   form body) like Slack's Web API does
//!   (`chat.postMessage`, `chat.update`, `chat.postEphemeral`, `views.open`,
//!   `conversations.open`, `usergroups.users.list`, …) and
//!   `POST /response/<n>` like a `response_url`. It records every call, checks the things Slack itself
//!   refuses (auth, Block Kit limits, expired or reused `trigger_id`s, updates
//!   of unknown messages) and can rate-limit the first `chat.postMessage`s.
//! - [`Bot`] spawns `strands --store DIR serve`, waits for its
//!   `listening on http://127.0.0.1:PORT` line and sends it signed requests
//!   built from the payload shapes Slack sends (`BLOCK_ACTIONS_JSON`,
//!   `VIEW_SUBMISSION_JSON` are verbatim copies of
//!   `shared/docs/slack-payloads/`).
//!
//! Like the fake model server, the fake runs axum on its own runtime in a
//! background thread; tests stay plain `#[test]` functions. Requests to the
//! bot go over a small blocking HTTP/1.1 client so that each test thread can
//! click on its own.
//!
//! This file is the fake itself: [`FakeSlack`], its [`SlackBehaviour`], the
//! waits on what it recorded, and its answer to each Web API method. The
//! other parts are re-exported here, so that `fake_slack::X` names them all:
//! - `bot`: the bot process, the requests sent to it, a tiny HTTP client.
//! - `calls`: readers of what the bot sent: calls, messages, buttons, notes.
//! - `limits`: the Block Kit limits Slack enforces, which the fake enforces too.
//! - `payloads`: what Slack sends the bot, built from its example payloads.
//! - `signing`: Slack's request signatures, valid and broken ([`Signing`]).
//! - `socket`: Socket Mode — the WebSocket `apps.connections.open` names
//!   ([`FakeSocket`]), the envelopes it sends and the acks it records.
//! - `tool_calls`: readers for tool-call approvals, and the tools' target.

#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod bot;
mod calls;
mod limits;
mod payloads;
mod signing;
mod socket;
mod tool_calls;

use calls::str_of;
use limits::check_view;

// Re-exported so that `fake_slack::X` names everything; each test binary uses
// a subset (hence the `allow`s, like `dead_code` above).
#[allow(unused_imports)]
pub use bot::{
    http, run_to_exit, started, write_workflows, Bot, BotConfig, Click, Exited, HttpReply,
};
#[allow(unused_imports)]
pub use calls::{all_text, has_button, ApprovalMessage, Button, Ephemeral, SlackCall};
#[allow(unused_imports)]
pub use limits::check_blocks;
#[allow(unused_imports)]
pub use payloads::{
    block_actions_payload, block_actions_payload_raw, interaction_body, slash_command_body,
    view_submission_payload, BLOCK_ACTIONS_JSON, VIEW_SUBMISSION_JSON,
};
#[allow(unused_imports)]
pub use signing::{sign, signed, unix_now, Signing};
#[allow(unused_imports)]
pub use socket::{FakeSocket, SocketAck, APP_TOKEN};
#[allow(unused_imports)]
pub use tool_calls::{
    call_button, calls_with_buttons, context_lines, split_call_value, FakeTarget, TargetHit,
};

pub const BOT_TOKEN: &str = "xoxb-test-token";
pub const SIGNING_SECRET: &str = "test-signing-secret";
pub const APPROVAL_CHANNEL: &str = "C0APPROVALS";
pub const TEAM_ID: &str = "T0ACME01";
pub const BOT_USER: &str = "U0BOTUSER";
/// Slack shows an error unless commands and interactions are answered within this.
pub const ACK_DEADLINE: Duration = Duration::from_secs(3);
/// How long helpers wait for the bot to do something.
pub const WAIT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------
// Request bodies: JSON or form-encoded, recorded as JSON
// ---------------------------------------------------------------------------

/// Form fields Slack's API takes as JSON strings, parsed so that both body
/// encodings record the same shape.
const JSON_FIELDS: &[&str] = &["blocks", "attachments", "view", "metadata"];

fn parse_body(content_type: &str, raw: &[u8]) -> Value {
    let mut v = if content_type.contains("json") {
        serde_json::from_slice(raw).ok()
    } else {
        None
    }
    .or_else(|| {
        serde_urlencoded::from_bytes::<Vec<(String, String)>>(raw)
            .ok()
            .filter(|pairs| !pairs.is_empty() && !content_type.contains("json"))
            .map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect(),
                )
            })
    })
    .or_else(|| serde_json::from_slice(raw).ok())
    .unwrap_or_else(|| Value::String(String::from_utf8_lossy(raw).into_owned()));
    if let Value::Object(o) = &mut v {
        for key in JSON_FIELDS {
            if let Some(Value::String(s)) = o.get(*key) {
                if let Ok(parsed @ (Value::Array(_) | Value::Object(_))) =
                    serde_json::from_str::<Value>(s)
                {
                    o.insert((*key).to_string(), parsed);
                }
            }
        }
    }
    v
}

// ---------------------------------------------------------------------------
// The fake Slack Web API
// ---------------------------------------------------------------------------

/// How the fake behaves; `SlackBehaviour::default()` answers everything.
pub struct SlackBehaviour {
    /// The first `rate_limited_posts` `chat.postMessage` calls get HTTP 429.
    pub rate_limited_posts: usize,
    /// The `Retry-After` seconds of those 429s.
    pub retry_after_secs: u64,
    /// `usergroups.users.list`: subteam id → members.
    pub usergroups: HashMap<String, Vec<String>>,
    /// How long a successful `chat.postMessage` answer takes to reach the
    /// bot. The message is visible (recorded, clickable) at once, as in
    /// Slack, where people see it while the API answer is on its way.
    pub post_answer_delay: Duration,
    /// How long `views.open` takes to answer (the modal opens at once).
    pub views_open_delay: Duration,
}

impl Default for SlackBehaviour {
    fn default() -> Self {
        SlackBehaviour {
            rate_limited_posts: 0,
            retry_after_secs: 1,
            usergroups: HashMap::new(),
            post_answer_delay: Duration::ZERO,
            views_open_delay: Duration::ZERO,
        }
    }
}

struct SlackState {
    calls: Vec<SlackCall>,
    posts: usize,
    next_ts: usize,
    next_view: usize,
    /// (channel, ts) → the message as it stands.
    messages: HashMap<(String, String), Value>,
    /// trigger_id → (issued at, used).
    triggers: HashMap<String, (Instant, bool)>,
    /// response URL path → posts so far.
    response_posts: HashMap<String, usize>,
}

struct SlackShared {
    behaviour: SlackBehaviour,
    state: Mutex<SlackState>,
    /// The stderr of the bot talking to this fake, for failure messages.
    bot_log: Mutex<Option<Arc<Mutex<String>>>>,
    next_response_url: AtomicUsize,
    next_trigger: AtomicUsize,
    /// Socket Mode, started on first use.
    socket: std::sync::OnceLock<FakeSocket>,
    /// `chat.postMessage` calls received and not yet answered, and the
    /// most there ever were at once.
    posts_in_flight: AtomicUsize,
    max_posts_in_flight: AtomicUsize,
    /// While set, `chat.postMessage` answers wait (the message is recorded
    /// at once, as with `post_answer_delay`).
    posts_held: std::sync::atomic::AtomicBool,
}

/// A running fake Slack; it lives until the test process exits. Clones share it.
#[derive(Clone)]
pub struct FakeSlack {
    /// `http://127.0.0.1:PORT`
    pub base_url: String,
    /// `http://127.0.0.1:PORT/api`, for `SLACK_API_URL`.
    pub api_url: String,
    shared: Arc<SlackShared>,
}

impl FakeSlack {
    pub fn start() -> FakeSlack {
        FakeSlack::start_with(SlackBehaviour::default())
    }

    pub fn start_with(behaviour: SlackBehaviour) -> FakeSlack {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake Slack");
        listener
            .set_nonblocking(true)
            .expect("make the fake Slack's listener non-blocking");
        let port = listener.local_addr().expect("fake Slack's address").port();
        let shared = Arc::new(SlackShared {
            behaviour,
            state: Mutex::new(SlackState {
                calls: Vec::new(),
                posts: 0,
                next_ts: 0,
                next_view: 0,
                messages: HashMap::new(),
                triggers: HashMap::new(),
                response_posts: HashMap::new(),
            }),
            bot_log: Mutex::new(None),
            next_response_url: AtomicUsize::new(0),
            next_trigger: AtomicUsize::new(0),
            socket: std::sync::OnceLock::new(),
            posts_in_flight: AtomicUsize::new(0),
            max_posts_in_flight: AtomicUsize::new(0),
            posts_held: std::sync::atomic::AtomicBool::new(false),
        });
        let app = Router::new()
            .route("/api/{method}", post(api).get(api_get))
            .route("/response/{n}", post(response_url))
            .fallback(unknown)
            .with_state(shared.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the fake Slack's runtime");
            rt.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("the fake Slack's listener");
                axum::serve(listener, app)
                    .await
                    .expect("the fake Slack serves");
            });
        });
        let base_url = format!("http://127.0.0.1:{port}");
        FakeSlack {
            api_url: format!("{base_url}/api"),
            base_url,
            shared,
        }
    }

    /// Shows this bot log in failure messages.
    pub fn attach_log(&self, log: Arc<Mutex<String>>) {
        *self.shared.bot_log.lock().expect("bot log slot") = Some(log);
    }

    /// The Socket Mode endpoint `apps.connections.open` points at.
    pub fn socket(&self) -> FakeSocket {
        self.shared.socket.get_or_init(FakeSocket::start).clone()
    }

    /// A fresh `response_url` served by the fake (`/response/<n>`).
    pub fn response_url(&self) -> String {
        let n = self.shared.next_response_url.fetch_add(1, Ordering::SeqCst) + 1;
        format!("{}/response/{n}", self.base_url)
    }

    /// A fresh `trigger_id`: `views.open` accepts it once, within 3 seconds.
    pub fn issue_trigger_id(&self) -> String {
        let n = self.shared.next_trigger.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("1763720031.4242424242.{n:032x}");
        self.shared
            .state
            .lock()
            .expect("fake Slack state")
            .triggers
            .insert(id.clone(), (Instant::now(), false));
        id
    }

    /// Holds (`true`) or lets go (`false`) the answers to
    /// `chat.postMessage`: the bot sees its posts in flight until let go.
    /// Keep a hold well under the bot's 10 s timeout per Slack call.
    pub fn hold_posts(&self, held: bool) {
        self.shared.posts_held.store(held, Ordering::SeqCst);
    }

    /// `chat.postMessage` calls received and not yet answered.
    pub fn posts_in_flight(&self) -> usize {
        self.shared.posts_in_flight.load(Ordering::SeqCst)
    }

    /// The most `chat.postMessage` calls ever in flight at once.
    pub fn max_posts_in_flight(&self) -> usize {
        self.shared.max_posts_in_flight.load(Ordering::SeqCst)
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<SlackCall> {
        self.shared
            .state
            .lock()
            .expect("fake Slack state")
            .calls
            .clone()
    }

    pub fn len(&self) -> usize {
        self.shared
            .state
            .lock()
            .expect("fake Slack state")
            .calls
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The calls after the first `n`.
    pub fn since(&self, n: usize) -> Vec<SlackCall> {
        self.calls().into_iter().skip(n).collect()
    }

    /// The calls of one method.
    pub fn calls_to(&self, method: &str) -> Vec<SlackCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }

    /// The calls and the bot's log, for failure messages.
    pub fn describe(&self) -> String {
        let mut out = String::from("--- calls to the fake Slack\n");
        for c in self.calls() {
            out.push_str(&format!(
                "#{} {} {} -> {} {}\n    {}\n",
                c.n, c.method, c.path, c.status, c.response, c.body
            ));
        }
        if let Some(log) = self.shared.bot_log.lock().expect("bot log slot").as_ref() {
            out.push_str("--- bot output\n");
            out.push_str(&log.lock().expect("bot log"));
        }
        out
    }

    /// Waits for a call of `method` matching `pred`; the first one wins.
    #[track_caller]
    pub fn wait_for(
        &self,
        method: &str,
        pred: impl Fn(&SlackCall) -> bool,
        timeout: Duration,
    ) -> SlackCall {
        let until = Instant::now() + timeout;
        loop {
            if let Some(c) = self
                .calls()
                .into_iter()
                .find(|c| c.method == method && pred(c))
            {
                return c;
            }
            if Instant::now() >= until {
                panic!(
                    "no matching {method} call within {timeout:?}\n{}",
                    self.describe()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Polls `done` until it holds or `timeout` passes; says whether it held.
    pub fn wait_until(&self, timeout: Duration, done: impl Fn(&FakeSlack) -> bool) -> bool {
        let until = Instant::now() + timeout;
        loop {
            if done(self) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The approval messages posted so far.
    pub fn approvals(&self) -> Vec<ApprovalMessage> {
        self.calls_to("chat.postMessage")
            .into_iter()
            .filter(|c| {
                c.ok()
                    && c.buttons()
                        .iter()
                        .any(|b| b.action_id.starts_with("strands_"))
            })
            .map(|c| ApprovalMessage {
                channel: str_of(&c.response["channel"]),
                ts: c.ts(),
                call: c,
            })
            .collect()
    }

    /// Waits for the first approval message.
    #[track_caller]
    pub fn wait_for_approval(&self) -> ApprovalMessage {
        self.wait_for_approval_where(|_| true, "any gate")
    }

    /// Waits for the approval message whose buttons carry `handle` (`review#2`).
    #[track_caller]
    pub fn wait_for_approval_of(&self, handle: &str) -> ApprovalMessage {
        self.wait_for_approval_where(|m| m.handle() == handle, handle)
    }

    #[track_caller]
    fn wait_for_approval_where(
        &self,
        pred: impl Fn(&ApprovalMessage) -> bool,
        what: &str,
    ) -> ApprovalMessage {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(m) = self.approvals().into_iter().find(|m| pred(m)) {
                return m;
            }
            if Instant::now() >= until {
                panic!(
                    "no approval message (chat.postMessage with strands_* buttons) for {what} within {WAIT:?}\n{}",
                    self.describe()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The `chat.update` calls on `msg`.
    pub fn updates_of(&self, msg: &ApprovalMessage) -> Vec<SlackCall> {
        self.calls_to("chat.update")
            .into_iter()
            .filter(|c| c.channel() == msg.channel && c.field("ts") == msg.ts)
            .collect()
    }

    /// Waits for a `chat.update` of `msg` matching `pred`.
    #[track_caller]
    pub fn wait_for_update(
        &self,
        msg: &ApprovalMessage,
        pred: impl Fn(&SlackCall) -> bool,
    ) -> SlackCall {
        let (channel, ts) = (msg.channel.clone(), msg.ts.clone());
        self.wait_for(
            "chat.update",
            |c| c.channel() == channel && c.field("ts") == ts && pred(c),
            WAIT,
        )
    }

    /// Messages posted in the thread of `msg`.
    pub fn thread_replies(&self, msg: &ApprovalMessage) -> Vec<SlackCall> {
        self.calls_to("chat.postMessage")
            .into_iter()
            .filter(|c| c.ok() && c.thread_ts() == msg.ts)
            .collect()
    }

    /// Waits for a message in the thread of `msg` matching `pred`.
    #[track_caller]
    pub fn wait_for_thread_reply(
        &self,
        msg: &ApprovalMessage,
        pred: impl Fn(&SlackCall) -> bool,
    ) -> SlackCall {
        let ts = msg.ts.clone();
        self.wait_for(
            "chat.postMessage",
            |c| c.ok() && c.thread_ts() == ts && pred(c),
            WAIT,
        )
    }

    /// Ephemeral notes so far: `chat.postEphemeral` calls and posts to
    /// response URLs.
    pub fn ephemerals(&self) -> Vec<Ephemeral> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c.method.as_str() {
                "chat.postEphemeral" => Some(Ephemeral {
                    user: Some(c.field("user")),
                    text: c.text(),
                    call: c,
                }),
                "response_url" => Some(Ephemeral {
                    user: None,
                    text: c.text(),
                    call: c,
                }),
                _ => None,
            })
            .collect()
    }

    /// The ephemeral notes meant for the user of `click`.
    pub fn ephemerals_for(&self, click: &Click) -> Vec<Ephemeral> {
        let path = url_path(&click.response_url);
        self.ephemerals()
            .into_iter()
            .filter(|e| match &e.user {
                Some(u) => *u == click.user,
                None => e.call.path == path,
            })
            .collect()
    }

    /// Waits for an ephemeral note for the user of `click`.
    #[track_caller]
    pub fn wait_for_ephemeral(&self, click: &Click) -> Ephemeral {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(e) = self.ephemerals_for(click).into_iter().next() {
                return e;
            }
            if Instant::now() >= until {
                panic!(
                    "no ephemeral note (chat.postEphemeral to {} or a post to {}) within {WAIT:?}\n{}",
                    click.user,
                    click.response_url,
                    self.describe()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the `views.open` of `click` (by its trigger_id).
    #[track_caller]
    pub fn wait_for_modal(&self, click: &Click) -> SlackCall {
        let trigger = click.trigger_id.clone();
        self.wait_for("views.open", |c| c.field("trigger_id") == trigger, WAIT)
    }

    /// Sleeps `quiet`, then asserts nothing called the fake after call `n`.
    #[track_caller]
    pub fn assert_no_calls_since(&self, n: usize, quiet: Duration, why: &str) {
        std::thread::sleep(quiet);
        let extra = self.since(n);
        assert!(
            extra.is_empty(),
            "{why}: expected no calls to the fake Slack, got {extra:#?}\n{}",
            self.describe()
        );
    }
}

fn url_path(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    match rest.find('/') {
        Some(i) => rest[i..].to_string(),
        None => "/".into(),
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Web API methods Slack's clients call with GET (`usergroups.users.list`):
/// the query string is the form body.
async fn api_get(
    state: State<Arc<SlackShared>>,
    method: UrlPath<String>,
    mut headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    headers.insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    api(
        state,
        method,
        headers,
        Bytes::from(query.unwrap_or_default()),
    )
    .await
}

async fn api(
    State(shared): State<Arc<SlackShared>>,
    UrlPath(method): UrlPath<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let _in_flight = (method == "chat.postMessage").then(|| PostInFlight::new(&shared));
    api_reply(&shared, &method, headers, raw).await
}

/// One `chat.postMessage` between its arrival and its answer (or the bot
/// hanging up).
struct PostInFlight<'a>(&'a SlackShared);

impl<'a> PostInFlight<'a> {
    fn new(shared: &'a SlackShared) -> Self {
        let now = shared.posts_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_posts_in_flight.fetch_max(now, Ordering::SeqCst);
        PostInFlight(shared)
    }
}

impl Drop for PostInFlight<'_> {
    fn drop(&mut self) {
        self.0.posts_in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn api_reply(shared: &SlackShared, method: &str, headers: HeaderMap, raw: Bytes) -> Response {
    let method = method.to_string();
    let content_type = header(&headers, "content-type").unwrap_or_default();
    let authorization = header(&headers, "authorization");
    let body = parse_body(&content_type, &raw);
    let (status, response) = {
        let mut st = shared.state.lock().expect("fake Slack state");
        let (status, response) = if method == "apps.connections.open" {
            // The one method that takes the app-level token, not the bot's.
            match authorization.as_deref() {
                Some(a) if a == format!("Bearer {APP_TOKEN}") => {
                    let url = shared.socket.get_or_init(FakeSocket::start).issue_url();
                    (200, json!({"ok": true, "url": url}))
                }
                Some(a) if a == format!("Bearer {BOT_TOKEN}") => {
                    slack_error("not_allowed_token_type")
                }
                Some(_) => slack_error("invalid_auth"),
                None => slack_error("not_authed"),
            }
        } else {
            answer(
                &method,
                &body,
                authorization.as_deref(),
                &mut st,
                &shared.behaviour,
            )
        };
        let n = st.calls.len() + 1;
        st.calls.push(SlackCall {
            n,
            at: Instant::now(),
            method: method.clone(),
            path: format!("/api/{method}"),
            authorization,
            content_type,
            body,
            status,
            response: response.clone(),
        });
        (status, response)
    };
    let delay = match method.as_str() {
        "chat.postMessage" => shared.behaviour.post_answer_delay,
        "views.open" => shared.behaviour.views_open_delay,
        _ => Duration::ZERO,
    };
    if status == 200 && !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    while status == 200 && method == "chat.postMessage" && shared.posts_held.load(Ordering::SeqCst)
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if status == 429 {
        let retry = shared.behaviour.retry_after_secs.to_string();
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", retry)],
            Json(response),
        )
            .into_response();
    }
    Json(response).into_response()
}

fn slack_error(e: &str) -> (u16, Value) {
    (200, json!({"ok": false, "error": e}))
}

/// What Slack answers `method` with, applied to the fake's state.
fn answer(
    method: &str,
    body: &Value,
    auth: Option<&str>,
    st: &mut SlackState,
    b: &SlackBehaviour,
) -> (u16, Value) {
    let bearer = format!("Bearer {BOT_TOKEN}");
    if auth != Some(bearer.as_str()) && body["token"] != BOT_TOKEN {
        return slack_error(if auth.is_none() && body["token"].is_null() {
            "not_authed"
        } else {
            "invalid_auth"
        });
    }
    let channel = str_of(&body["channel"]);
    match method {
        "chat.postMessage" => {
            st.posts += 1;
            if st.posts <= b.rate_limited_posts {
                return (429, json!({"ok": false, "error": "ratelimited"}));
            }
            if channel.is_empty() {
                return slack_error("channel_not_found");
            }
            if body["text"].is_null() && body["blocks"].is_null() {
                return slack_error("no_text");
            }
            if let Err(e) = check_blocks(&body["blocks"], 50) {
                return (
                    200,
                    json!({"ok": false, "error": "invalid_blocks", "errors": [e]}),
                );
            }
            st.next_ts += 1;
            let ts = format!("1763720000.{:06}", st.next_ts * 100);
            let mut message = json!({
                "type": "message", "subtype": "bot_message", "user": BOT_USER,
                "bot_id": "B0STRANDS1", "team": TEAM_ID, "ts": ts,
                "text": body["text"].clone(), "app_id": "A0STRANDS1",
            });
            if body["blocks"].is_array() {
                message["blocks"] = body["blocks"].clone();
            }
            if !body["thread_ts"].is_null() {
                message["thread_ts"] = body["thread_ts"].clone();
            }
            st.messages
                .insert((channel.clone(), ts.clone()), message.clone());
            (
                200,
                json!({"ok": true, "channel": channel, "ts": ts, "message": message}),
            )
        }
        "chat.update" => {
            let ts = str_of(&body["ts"]);
            let Some(old) = st.messages.get(&(channel.clone(), ts.clone())).cloned() else {
                return slack_error("message_not_found");
            };
            if let Err(e) = check_blocks(&body["blocks"], 50) {
                return (
                    200,
                    json!({"ok": false, "error": "invalid_blocks", "errors": [e]}),
                );
            }
            let mut message = old;
            if !body["text"].is_null() {
                message["text"] = body["text"].clone();
            }
            if !body["blocks"].is_null() {
                message["blocks"] = body["blocks"].clone();
            }
            message["edited"] = json!({"user": BOT_USER, "ts": ts});
            st.messages
                .insert((channel.clone(), ts.clone()), message.clone());
            (
                200,
                json!({"ok": true, "channel": channel, "ts": ts, "text": message["text"], "message": message}),
            )
        }
        "chat.postEphemeral" => {
            if channel.is_empty() {
                return slack_error("channel_not_found");
            }
            if str_of(&body["user"]).is_empty() {
                return slack_error("user_not_found");
            }
            if let Err(e) = check_blocks(&body["blocks"], 50) {
                return (
                    200,
                    json!({"ok": false, "error": "invalid_blocks", "errors": [e]}),
                );
            }
            st.next_ts += 1;
            (
                200,
                json!({"ok": true, "message_ts": format!("1763720000.{:06}", st.next_ts * 100)}),
            )
        }
        "views.open" | "views.push" => {
            let trigger = str_of(&body["trigger_id"]);
            match st.triggers.get_mut(&trigger) {
                None => return slack_error("invalid_trigger_id"),
                Some((_, true)) => return slack_error("exchanged_trigger_id"),
                Some((issued, used)) => {
                    *used = true;
                    if issued.elapsed() > ACK_DEADLINE {
                        return slack_error("expired_trigger_id");
                    }
                }
            }
            open_view(st, &body["view"])
        }
        "views.update" => open_view(st, &body["view"]),
        "views.publish" => {
            if str_of(&body["user_id"]).is_empty() {
                return slack_error("user_not_found");
            }
            let view = &body["view"];
            if view["type"] != "home" {
                return (
                    200,
                    json!({"ok": false, "error": "invalid_arguments",
                    "response_metadata": {"messages": ["view.type must be `home`"]}}),
                );
            }
            if let Err(e) = check_blocks(&view["blocks"], 100) {
                return (
                    200,
                    json!({"ok": false, "error": "invalid_arguments",
                    "response_metadata": {"messages": [e]}}),
                );
            }
            st.next_view += 1;
            (
                200,
                json!({"ok": true, "view": {"id": format!("V0HOME{:04}", st.next_view), "type": "home"}}),
            )
        }
        "conversations.open" => {
            // One user: the bot's direct-message channel with them. Slack
            // takes `users` as "U1,U2"; JSON clients may send a list.
            let users: Vec<String> = match &body["users"] {
                Value::String(s) => s.split(',').map(|u| u.trim().to_string()).collect(),
                Value::Array(a) => a.iter().map(str_of).collect(),
                _ => Vec::new(),
            };
            match users.as_slice() {
                [u] if u.len() > 1 && (u.starts_with('U') || u.starts_with('W')) => {
                    (200, json!({"ok": true, "channel": {"id": dm_channel(u)}}))
                }
                [] => slack_error("users_list_not_supplied"),
                _ => slack_error("user_not_found"),
            }
        }
        "usergroups.users.list" => {
            let group = str_of(&body["usergroup"]);
            match b.usergroups.get(&group) {
                Some(users) => (200, json!({"ok": true, "users": users})),
                None => slack_error("no_such_subteam"),
            }
        }
        "auth.test" => (
            200,
            json!({"ok": true, "url": "https://acme.slack.com/", "team": "acme",
                   "user": "strands", "team_id": TEAM_ID, "user_id": BOT_USER,
                   "bot_id": "B0STRANDS1"}),
        ),
        _ => slack_error("unknown_method"),
    }
}

/// The direct-message channel `conversations.open` gives for `user`
/// (`U04APPROVER` → `D04APPROVER`).
pub fn dm_channel(user: &str) -> String {
    format!("D{}", &user[1..])
}

fn open_view(st: &mut SlackState, view: &Value) -> (u16, Value) {
    if let Err(e) = check_view(view) {
        return (
            200,
            json!({"ok": false, "error": "invalid_arguments", "response_metadata": {"messages": [e]}}),
        );
    }
    st.next_view += 1;
    let id = format!("V0MODAL{:04}", st.next_view);
    let mut full = view.clone();
    let extra = json!({
        "id": id, "team_id": TEAM_ID, "state": {"values": {}},
        "hash": format!("1763720090.{:08}", st.next_view),
        "previous_view_id": null, "root_view_id": id, "app_id": "A0STRANDS1",
        "external_id": "", "app_installed_team_id": TEAM_ID, "bot_id": "B0STRANDS1",
        "clear_on_close": false, "notify_on_close": false,
    });
    if let (Some(full), Value::Object(extra)) = (full.as_object_mut(), extra) {
        for (k, v) in extra {
            full.entry(k).or_insert(v);
        }
        full.entry("private_metadata").or_insert(json!(""));
        full.entry("callback_id").or_insert(json!(""));
    }
    (200, json!({"ok": true, "view": full}))
}

async fn response_url(
    State(shared): State<Arc<SlackShared>>,
    UrlPath(n): UrlPath<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let content_type = header(&headers, "content-type").unwrap_or_default();
    let body = parse_body(&content_type, &raw);
    let path = format!("/response/{n}");
    let mut st = shared.state.lock().expect("fake Slack state");
    let posts = st.response_posts.entry(path.clone()).or_insert(0);
    *posts += 1;
    let (status, response) = if *posts > 5 {
        (404, json!({"ok": false, "error": "used_url"}))
    } else {
        (200, json!({"ok": true}))
    };
    let n = st.calls.len() + 1;
    st.calls.push(SlackCall {
        n,
        at: Instant::now(),
        method: "response_url".into(),
        path,
        authorization: header(&headers, "authorization"),
        content_type,
        body,
        status,
        response: response.clone(),
    });
    (
        StatusCode::from_u16(status).expect("a status"),
        Json(response),
    )
        .into_response()
}

async fn unknown(State(shared): State<Arc<SlackShared>>, uri: Uri, raw: Bytes) -> Response {
    let mut st = shared.state.lock().expect("fake Slack state");
    let n = st.calls.len() + 1;
    st.calls.push(SlackCall {
        n,
        at: Instant::now(),
        method: uri.path().to_string(),
        path: uri.path().to_string(),
        authorization: None,
        content_type: String::new(),
        body: Value::String(String::from_utf8_lossy(&raw).into_owned()),
        status: 404,
        response: Value::Null,
    });
    (StatusCode::NOT_FOUND, "no such endpoint on the fake Slack").into_response()
}
