//! The requests tests send to the bot, in the shapes Slack sends them: a
//! slash command body, an interaction's `payload=<json>`, a button click
//! (`block_actions`) and a modal submission (`view_submission`).
//!
//! Clicks and submissions start from [`BLOCK_ACTIONS_JSON`] and
//! [`VIEW_SUBMISSION_JSON`], verbatim copies of `shared/docs/slack-payloads/`
//! (a test checks they have not drifted), patched with what the bot posted
//! or opened: the bot is tested against what Slack sends, not against what
//! it expects. Nothing here sends anything: [`super::Bot`] does.

use super::{unix_now, ApprovalMessage, Button, SlackCall, TEAM_ID};
use serde_json::{json, Map, Value};

/// `shared/docs/slack-payloads/block_actions.json`, verbatim.
pub const BLOCK_ACTIONS_JSON: &str = r#"{
  "type": "block_actions",
  "user": {"id": "U04APPROVER", "username": "dana", "name": "dana", "team_id": "T0ACME01"},
  "api_app_id": "A0STRANDS1",
  "token": "legacy-verification-token-unused",
  "container": {"type": "message", "message_ts": "1763720000.000200", "channel_id": "C0APPROVALS", "is_ephemeral": false},
  "trigger_id": "1763720031.4242424242.0f1e2d3c4b5a69788796a5b4c3d2e1f0",
  "team": {"id": "T0ACME01", "domain": "acme"},
  "enterprise": null,
  "is_enterprise_install": false,
  "channel": {"id": "C0APPROVALS", "name": "deploy-approvals"},
  "message": {
    "type": "message", "subtype": "bot_message", "user": "U0BOTUSER", "bot_id": "B0STRANDS1",
    "ts": "1763720000.000200", "team": "T0ACME01", "text": "Approval needed: deploy-service / deploy_approval",
    "blocks": [
      {"type": "section", "block_id": "prompt-1", "text": {"type": "mrkdwn", "text": "*Approve the production deploy?*", "verbatim": false}},
      {"type": "actions", "block_id": "gate-1", "elements": [
        {"type": "button", "action_id": "approve", "text": {"type": "plain_text", "text": "Approve", "emoji": true}, "value": "gate-1", "style": "primary"},
        {"type": "button", "action_id": "reject", "text": {"type": "plain_text", "text": "Reject", "emoji": true}, "value": "gate-1", "style": "danger"}
      ]}
    ]
  },
  "state": {"values": {}},
  "response_url": "https://hooks.slack.com/actions/T0ACME01/1234567890123/AbCdEfGhIjKlMnOpQrStUvWx",
  "actions": [
    {"action_id": "approve", "block_id": "gate-1", "text": {"type": "plain_text", "text": "Approve", "emoji": true},
     "value": "gate-1", "style": "primary", "type": "button", "action_ts": "1763720031.123456"}
  ]
}
"#;

/// `shared/docs/slack-payloads/view_submission.json`, verbatim.
pub const VIEW_SUBMISSION_JSON: &str = r#"{
  "type": "view_submission",
  "team": {"id": "T0ACME01", "domain": "acme"},
  "user": {"id": "U04APPROVER", "username": "dana", "name": "dana", "team_id": "T0ACME01"},
  "api_app_id": "A0STRANDS1",
  "token": "legacy-verification-token-unused",
  "trigger_id": "1763720090.4242424242.aa11bb22cc33dd44ee55ff6677889900",
  "view": {
    "id": "V0MODAL01", "team_id": "T0ACME01", "type": "modal",
    "blocks": [
      {"type": "input", "block_id": "feedback", "label": {"type": "plain_text", "text": "Feedback"},
       "element": {"type": "plain_text_input", "action_id": "text", "multiline": true}}
    ],
    "private_metadata": "opaque string the bot set when it opened the modal",
    "callback_id": "modify",
    "state": {"values": {"feedback": {"text": {"type": "plain_text_input", "value": "Roll out behind a canary first"}}}},
    "hash": "1763720090.AbCdEf12",
    "title": {"type": "plain_text", "text": "Modify"},
    "clear_on_close": false, "notify_on_close": false,
    "close": {"type": "plain_text", "text": "Cancel"},
    "submit": {"type": "plain_text", "text": "Send"},
    "previous_view_id": null, "root_view_id": "V0MODAL01", "app_id": "A0STRANDS1",
    "external_id": "", "app_installed_team_id": "T0ACME01", "bot_id": "B0STRANDS1"
  },
  "response_urls": [],
  "is_enterprise_install": false,
  "enterprise": null
}
"#;

/// A slash command body, form-encoded like Slack does.
pub fn slash_command_body(user: &str, channel: &str, text: &str, response_url: &str) -> String {
    serde_urlencoded::to_string([
        ("token", "legacy-verification-token-unused"),
        ("team_id", TEAM_ID),
        ("team_domain", "acme"),
        ("channel_id", channel),
        ("channel_name", "ops"),
        ("user_id", user),
        ("user_name", &user.to_lowercase()),
        ("command", "/strands"),
        ("text", text),
        ("api_app_id", "A0STRANDS1"),
        ("is_enterprise_install", "false"),
        ("response_url", response_url),
        ("trigger_id", &command_trigger_id()),
    ])
    .expect("form-encode a slash command")
}

/// A fresh slash command `trigger_id`, shaped like Slack's: each command
/// typed is a new one (the bot carries out each `trigger_id` once), and a
/// redelivery is the same body sent again.
pub fn command_trigger_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("1763720010.4242424242.{:016x}{n:016x}", std::process::id())
}

/// `payload=<json>`, as interactions arrive.
pub fn interaction_body(payload: &Value) -> String {
    serde_urlencoded::to_string([("payload", payload.to_string())])
        .expect("form-encode an interaction")
}

/// `block_actions.json` patched to be a click by `user` on `button` of `msg`.
pub fn block_actions_payload(
    msg: &ApprovalMessage,
    button: &Button,
    user: &str,
    trigger_id: &str,
    response_url: &str,
) -> Value {
    let mut p: Value = serde_json::from_str(BLOCK_ACTIONS_JSON).expect("block_actions.json");
    p["user"]["id"] = json!(user);
    p["user"]["username"] = json!(user.to_lowercase());
    p["user"]["name"] = json!(user.to_lowercase());
    p["container"]["message_ts"] = json!(msg.ts);
    p["container"]["channel_id"] = json!(msg.channel);
    p["channel"]["id"] = json!(msg.channel);
    p["trigger_id"] = json!(trigger_id);
    p["response_url"] = json!(response_url);
    // The message as Slack holds it: what the bot posted, with Slack's fields.
    p["message"]["ts"] = json!(msg.ts);
    p["message"]["text"] = msg.call.body["text"].clone();
    p["message"]["blocks"] = json!(msg.call.blocks());
    let action = &mut p["actions"][0];
    action["action_id"] = json!(button.action_id);
    action["block_id"] = json!(button.block_id);
    action["value"] = json!(button.value);
    action["text"]["text"] = json!(button.text);
    if button.style.is_empty() {
        if let Some(o) = action.as_object_mut() {
            o.remove("style");
        }
    } else {
        action["style"] = json!(button.style);
    }
    action["action_ts"] = json!(format!("{}.123456", unix_now()));
    p
}

/// `block_actions.json` patched to be a click by `user` on a button of the
/// App Home tab (a `view` container: no message, no channel).
pub fn block_actions_payload_raw(
    user: &str,
    action_id: &str,
    value: &str,
    trigger_id: &str,
) -> Value {
    let mut p: Value = serde_json::from_str(BLOCK_ACTIONS_JSON).expect("block_actions.json");
    p["user"]["id"] = json!(user);
    p["user"]["username"] = json!(user.to_lowercase());
    p["user"]["name"] = json!(user.to_lowercase());
    p["container"] = json!({ "type": "view", "view_id": "V0HOME0001" });
    p["trigger_id"] = json!(trigger_id);
    if let Some(o) = p.as_object_mut() {
        o.remove("channel");
        o.remove("message");
        o.remove("response_url");
    }
    let action = &mut p["actions"][0];
    action["action_id"] = json!(action_id);
    action["block_id"] = json!("home");
    action["value"] = json!(value);
    action["action_ts"] = json!(format!("{}.123456", unix_now()));
    p
}

/// `view_submission.json` patched to submit the modal opened by `opened`
/// (a `views.open` call) with `text` typed into its input.
pub fn view_submission_payload(opened: &SlackCall, user: &str, text: &str) -> Value {
    let mut p: Value = serde_json::from_str(VIEW_SUBMISSION_JSON).expect("view_submission.json");
    let view = &opened.body["view"];
    let shown = &opened.response["view"];
    p["user"]["id"] = json!(user);
    p["user"]["username"] = json!(user.to_lowercase());
    p["user"]["name"] = json!(user.to_lowercase());
    for key in ["id", "hash", "root_view_id"] {
        if !shown[key].is_null() {
            p["view"][key] = shown[key].clone();
        }
    }
    for key in [
        "callback_id",
        "private_metadata",
        "blocks",
        "title",
        "submit",
        "close",
    ] {
        if !view[key].is_null() {
            p["view"][key] = view[key].clone();
        }
    }
    // Slack keys the typed text by the bot's own block_id / action_id.
    let (block_id, action_id) = view["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["type"] == "input"))
        .map(|b| {
            (
                b["block_id"].as_str().unwrap_or("feedback").to_string(),
                b["element"]["action_id"]
                    .as_str()
                    .unwrap_or("text")
                    .to_string(),
            )
        })
        .unwrap_or_else(|| ("feedback".into(), "text".into()));
    let mut values = Map::new();
    values.insert(
        block_id,
        json!({ action_id: {"type": "plain_text_input", "value": text} }),
    );
    p["view"]["state"] = json!({ "values": values });
    p
}
