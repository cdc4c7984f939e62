//! The real bot under test and the way tests talk to it: [`Bot`] spawns
//! `strands --store DIR serve` (configured by a [`BotConfig`]), waits for its
//! `listening on http://127.0.0.1:PORT` line, keeps its output for failure
//! messages, and sends it signed slash commands, clicks ([`Click`]), modal
//! submissions and events; it can be killed, stopped and restarted on the
//! same store. [`run_to_exit`] runs a bot that is expected to refuse to
//! start.
//!
//! The process itself is a [`Service`] (`tests/common/service.rs`); this
//! adds Slack's side.

use super::{
    block_actions_payload, interaction_body, signed, slash_command_body, view_submission_payload,
    ApprovalMessage, Button, FakeSlack, Signing, SlackCall, APPROVAL_CHANNEL, BOT_TOKEN,
    SIGNING_SECRET,
};
pub use crate::common::service::{
    http, run_to_exit, write_workflows, Exited, HttpReply, ServeConfig, Service,
};
use crate::common::{FakeLlm, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The session id in a "started NAME as SESSION" acknowledgement.
#[track_caller]
pub fn started(ack: &HttpReply, name: &str) -> String {
    let text = ack.text();
    let marker = format!("started {name} as ");
    let at = text.find(&marker).unwrap_or_else(|| {
        panic!(
            "the acknowledgement does not say {marker:?}: {:?}",
            ack.body
        )
    });
    let id: String = text[at + marker.len()..]
        .trim_start_matches(['`', '*', '_'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert!(!id.is_empty(), "no session id after {marker:?}: {text:?}");
    id
}

/// A click sent to the bot.
#[derive(Debug, Clone)]
pub struct Click {
    pub reply: HttpReply,
    pub user: String,
    pub action_id: String,
    pub trigger_id: String,
    pub response_url: String,
    pub payload: Value,
    /// When it was sent.
    pub sent: Instant,
}

/// `strands serve` with Slack pointed at the fake: the service, plus what
/// Slack sends it. Killed when dropped.
pub struct Bot {
    svc: Service,
    slack: FakeSlack,
}

impl std::ops::Deref for Bot {
    type Target = Service;
    fn deref(&self) -> &Service {
        &self.svc
    }
}

impl std::ops::DerefMut for Bot {
    fn deref_mut(&mut self) -> &mut Service {
        &mut self.svc
    }
}

/// How to start the bot: the service with Slack set to the fake.
pub type BotConfig = ServeConfig;

impl ServeConfig {
    pub fn new(sandbox: &Sandbox, slack: &FakeSlack, workflows: &Path) -> ServeConfig {
        ServeConfig::api(sandbox, workflows)
            .with("SLACK_BOT_TOKEN", Some(BOT_TOKEN))
            .with("SLACK_SIGNING_SECRET", Some(SIGNING_SECRET))
            .with("SLACK_API_URL", Some(&slack.api_url))
            .with("STRANDS_APPROVAL_CHANNEL", Some(APPROVAL_CHANNEL))
    }
}

impl Bot {
    /// Writes `workflows` into the sandbox and starts the bot on its store.
    pub fn start(
        sandbox: &Sandbox,
        slack: &FakeSlack,
        llm: &FakeLlm,
        workflows: &[(&str, &str)],
    ) -> Bot {
        let dir = write_workflows(sandbox, llm, workflows);
        Bot::launch(slack, BotConfig::new(sandbox, slack, &dir))
    }

    /// Starts the bot as `cfg` says and waits until it listens.
    pub fn launch(slack: &FakeSlack, cfg: BotConfig) -> Bot {
        let log = Arc::new(Mutex::new(String::new()));
        slack.attach_log(log.clone());
        Bot {
            svc: Service::launch_with_log(cfg, log),
            slack: slack.clone(),
        }
    }

    /// Starts it again on the same store and workflows (after `kill`/`stop`).
    pub fn restart(&mut self) {
        self.slack.attach_log(self.svc.log_handle());
        self.svc.restart();
    }

    pub fn post(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
        signing: Signing,
        extra: &[(&str, &str)],
    ) -> HttpReply {
        let (mut headers, sent) = signed(signing, body);
        headers.push(("Content-Type".into(), content_type.into()));
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.request("POST", path, &headers, &sent)
    }

    /// `/strands TEXT` typed by `user` in `channel`, signed.
    pub fn command(&self, user: &str, channel: &str, text: &str) -> HttpReply {
        self.command_signed(user, channel, text, Signing::Valid)
    }

    pub fn command_signed(
        &self,
        user: &str,
        channel: &str,
        text: &str,
        signing: Signing,
    ) -> HttpReply {
        let body = slash_command_body(user, channel, text, &self.slack.response_url());
        self.post(
            "/slack/commands",
            "application/x-www-form-urlencoded",
            body.as_bytes(),
            signing,
            &[],
        )
    }

    /// `user` clicks the `action_id` button of `msg`, signed.
    pub fn click(&self, msg: &ApprovalMessage, action_id: &str, user: &str) -> Click {
        self.click_with(msg, action_id, user, Signing::Valid, |_| {})
    }

    /// A click whose payload `patch` may change first.
    pub fn click_with(
        &self,
        msg: &ApprovalMessage,
        action_id: &str,
        user: &str,
        signing: Signing,
        patch: impl FnOnce(&mut Value),
    ) -> Click {
        let button = msg.button(action_id);
        let trigger_id = self.slack.issue_trigger_id();
        let response_url = self.slack.response_url();
        let mut payload = block_actions_payload(msg, &button, user, &trigger_id, &response_url);
        patch(&mut payload);
        let sent = Instant::now();
        let reply = self.interaction(&payload, signing);
        Click {
            sent,
            reply,
            user: user.to_string(),
            action_id: action_id.to_string(),
            trigger_id,
            response_url,
            payload,
        }
    }

    /// Submits the modal `opened` (a `views.open` call) with `text`, signed.
    pub fn submit_modal(&self, opened: &SlackCall, user: &str, text: &str) -> HttpReply {
        self.submit_modal_with(opened, user, text, |_| {})
    }

    pub fn submit_modal_with(
        &self,
        opened: &SlackCall,
        user: &str,
        text: &str,
        patch: impl FnOnce(&mut Value),
    ) -> HttpReply {
        let mut payload = view_submission_payload(opened, user, text);
        patch(&mut payload);
        self.interaction(&payload, Signing::Valid)
    }

    /// POSTs an interaction payload to /slack/interactions.
    pub fn interaction(&self, payload: &Value, signing: Signing) -> HttpReply {
        self.post(
            "/slack/interactions",
            "application/x-www-form-urlencoded",
            interaction_body(payload).as_bytes(),
            signing,
            &[],
        )
    }

    /// POSTs an Events API body, with `X-Slack-Retry-Num` when `retry` is set.
    pub fn event(&self, body: &Value, retry: Option<u32>, signing: Signing) -> HttpReply {
        let n = retry.map(|n| n.to_string());
        let mut extra: Vec<(&str, &str)> = Vec::new();
        if let Some(n) = &n {
            extra.push(("X-Slack-Retry-Num", n));
            extra.push(("X-Slack-Retry-Reason", "http_timeout"));
        }
        self.post(
            "/slack/events",
            "application/json",
            body.to_string().as_bytes(),
            signing,
            &extra,
        )
    }
}

// ---------------------------------------------------------------------------
// Clicks on one call of a tool-call approval
// ---------------------------------------------------------------------------

impl Bot {
    /// `user` clicks `button` of `msg` (e.g. one call's button), signed.
    pub fn click_button(&self, msg: &ApprovalMessage, button: &Button, user: &str) -> Click {
        let trigger_id = self.slack.issue_trigger_id();
        let response_url = self.slack.response_url();
        let payload = block_actions_payload(msg, button, user, &trigger_id, &response_url);
        let sent = Instant::now();
        let reply = self.interaction(&payload, Signing::Valid);
        Click {
            sent,
            reply,
            user: user.to_string(),
            action_id: button.action_id.clone(),
            trigger_id,
            response_url,
            payload,
        }
    }

    /// `user` clicks the `action_id` button of call `call_id` of `msg`.
    pub fn click_call(
        &self,
        msg: &ApprovalMessage,
        action_id: &str,
        call_id: &str,
        user: &str,
    ) -> Click {
        self.click_button(msg, &msg.call_button(action_id, call_id), user)
    }
}
