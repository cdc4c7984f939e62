//! The Slack test harness checked against Slack itself, so that the bot's
//! tests prove something: the fake signs as Slack's published test vector
//! says, the embedded example payloads are still the files in
//! `shared/docs/slack-payloads`, and what the fake answers and the payloads
//! tests send parse as the slack-morphism types the bot reads them with.
//!
//! No bot runs here: these test `tests/common/fake_slack`.

use crate::common::fake_slack::{
    sign, FakeSlack, APPROVAL_CHANNEL, BLOCK_ACTIONS_JSON, BOT_TOKEN, SIGNING_SECRET,
    VIEW_SUBMISSION_JSON,
};
use serde_json::{json, Value};

#[test]
fn signing_matches_slacks_published_test_vector() {
    let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    assert_eq!(
        sign(
            "8f742231b10e8888abcd99yyyzzz85a5",
            1531420618,
            body.as_bytes()
        ),
        "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    );
    assert_ne!(SIGNING_SECRET, "8f742231b10e8888abcd99yyyzzz85a5");
}

#[test]
fn the_embedded_example_payloads_are_the_shared_docs_files() {
    // The payloads are embedded so the tests run anywhere; when the shared
    // docs are around, they must not have drifted.
    // `shared/` sits beside the checkout (developers' machines and CI).
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/docs/slack-payloads");
    for (file, embedded) in [
        ("block_actions.json", BLOCK_ACTIONS_JSON),
        ("view_submission.json", VIEW_SUBMISSION_JSON),
    ] {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            eprintln!(
                "note: {} not found; skipping the drift check",
                dir.display()
            );
            return;
        };
        let on_disk: Value = serde_json::from_str(&text).expect("the shared payload parses");
        let ours: Value = serde_json::from_str(embedded).expect("the embedded payload parses");
        assert_eq!(ours, on_disk, "{file} drifted from the shared docs");
    }
}

/// What the bot's client and listener (slack-morphism) will parse: the fake's
/// answers and the patched example payloads.
#[test]
fn the_fakes_answers_and_patched_payloads_parse_as_slack_morphism_types() {
    use crate::common::fake_slack::{block_actions_payload, http, view_submission_payload};
    use slack_morphism::prelude::{
        SlackApiChatPostEphemeralResponse, SlackApiChatPostMessageResponse,
        SlackApiChatUpdateResponse, SlackApiViewsOpenResponse, SlackInteractionEvent,
    };

    let slack = FakeSlack::start();
    let call = |method: &str, body: Value| -> Value {
        let headers = [
            ("Authorization".to_string(), format!("Bearer {BOT_TOKEN}")),
            ("Content-Type".to_string(), "application/json".to_string()),
        ];
        let url = format!("{}/{method}", slack.api_url);
        let r = http("POST", &url, &headers, body.to_string().as_bytes()).expect("the fake");
        assert_eq!(r.status, 200, "{r:?}");
        let v = r.json();
        assert_eq!(v["ok"], true, "{method}: {v:#}");
        v
    };
    let blocks = json!([
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Approve?*"}},
        {"type": "actions", "block_id": "gate", "elements": [
            {"type": "button", "action_id": "strands_approve", "value": "review#1",
             "text": {"type": "plain_text", "text": "Approve"}, "style": "primary"},
            {"type": "button", "action_id": "strands_modify", "value": "review#1",
             "text": {"type": "plain_text", "text": "Modify"}}
        ]}
    ]);
    let posted = call(
        "chat.postMessage",
        json!({"channel": APPROVAL_CHANNEL, "text": "Approval needed", "blocks": blocks}),
    );
    serde_json::from_value::<SlackApiChatPostMessageResponse>(posted.clone())
        .expect("chat.postMessage answer");
    let updated = call(
        "chat.update",
        json!({"channel": APPROVAL_CHANNEL, "ts": posted["ts"], "text": "Approved by <@U1>",
               "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Approved"}}]}),
    );
    serde_json::from_value::<SlackApiChatUpdateResponse>(updated).expect("chat.update answer");
    let eph = call(
        "chat.postEphemeral",
        json!({"channel": APPROVAL_CHANNEL, "user": "U1", "text": "already decided"}),
    );
    serde_json::from_value::<SlackApiChatPostEphemeralResponse>(eph)
        .expect("chat.postEphemeral answer");
    let trigger = slack.issue_trigger_id();
    let view = json!({
        "type": "modal", "callback_id": "strands_modify", "private_metadata": "s1|review#1",
        "title": {"type": "plain_text", "text": "Modify"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [{"type": "input", "block_id": "feedback",
                    "label": {"type": "plain_text", "text": "Feedback"},
                    "element": {"type": "plain_text_input", "action_id": "text", "multiline": true}}]
    });
    let opened = call("views.open", json!({"trigger_id": trigger, "view": view}));
    serde_json::from_value::<SlackApiViewsOpenResponse>(opened).expect("views.open answer");

    let msg = slack.wait_for_approval();
    let click = block_actions_payload(
        &msg,
        &msg.button("strands_approve"),
        "U04APPROVER",
        "1.2.3",
        &slack.response_url(),
    );
    match serde_json::from_value::<SlackInteractionEvent>(click.clone()) {
        Ok(SlackInteractionEvent::BlockActions(_)) => {}
        other => panic!("not block_actions: {other:?}\n{click:#}"),
    }
    let modal = slack.calls_to("views.open")[0].clone();
    let submission = view_submission_payload(&modal, "U04APPROVER", "use canaries");
    assert_eq!(
        submission["view"]["state"]["values"]["feedback"]["text"]["value"],
        "use canaries"
    );
    assert_eq!(submission["view"]["private_metadata"], "s1|review#1");
    assert_eq!(submission["view"]["callback_id"], "strands_modify");
    match serde_json::from_value::<SlackInteractionEvent>(submission.clone()) {
        Ok(SlackInteractionEvent::ViewSubmission(_)) => {}
        other => panic!("not view_submission: {other:?}\n{submission:#}"),
    }
}
