//! The Teams room's commands and approvals, on the real `strands serve`
//! pointed at the fake Bot Framework and the fake model: a command in a
//! channel (`@strands run NAME`, `help`, `status`, `list`, `cancel`) is
//! answered in the conversation through the Connector; the person is the
//! verified activity's `from.aadObjectId`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::teams_room::{post_activity, token, BOT, CHANNEL, TENANT};
use crate::common::fake_teams::{FakeTeams, Hit};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::slack_story::DEPLOY;
use crate::common::{FakeLlm, Sandbox};

const WAIT: Duration = Duration::from_secs(20);
const ANN: &str = "aad-0000-ann";
const BOB: &str = "aad-0000-bob";

/// The deploy workflow, its gate answered by Ann only.
fn deploy() -> String {
    DEPLOY.replace(
        "\nagents:",
        &format!("\nsecurity:\n  approvers: [\"teams:{ANN}\"]\nagents:"),
    )
}

struct World {
    fake: FakeTeams,
    llm: FakeLlm,
    sandbox: Sandbox,
    svc: Service,
}

fn world() -> World {
    let fake = FakeTeams::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &deploy())]);
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let svc = Service::launch(cfg);
    World {
        fake,
        llm,
        sandbox,
        svc,
    }
}

/// `text` said by `aad` in the channel, @mentioning the bot.
fn said(w: &World, id: &str, aad: &str, text: &str) -> Value {
    let here = w.fake.service_url();
    json!({
        "type": "message",
        "id": id,
        "channelId": "msteams",
        "serviceUrl": here,
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "text": format!("<at>strands</at> {text}"),
        "entities": [{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}],
    })
}

/// Sends `activity`, signed; it must be acknowledged.
fn send(w: &World, activity: &Value) {
    let r = post_activity(
        &w.svc,
        &token(&w.fake.service_url(), "signing.key.pem"),
        activity,
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
}

/// Waits for the reply to activity `to` in the channel's thread; its text.
fn reply_to(w: &World, to: &str) -> String {
    let path = format!("/v3/conversations/{}/activities/{to}", urlencode(CHANNEL));
    let until = Instant::now() + WAIT;
    loop {
        let hits: Vec<Hit> = w.fake.hits();
        if let Some(h) = hits.iter().find(|h| {
            h.method == "POST" && (h.path == path || h.path.ends_with(&format!("/activities/{to}")))
        }) {
            assert_eq!(h.body["type"], "message", "{:?}", h.body);
            return h.body["text"].as_str().expect("a text reply").to_string();
        }
        assert!(
            Instant::now() < until,
            "no reply to {to} within {WAIT:?}: {hits:#?}\n{}",
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn urlencode(s: &str) -> String {
    s.replace(':', "%3A").replace('@', "%40")
}

#[test]
fn teams_commands_start_list_show_and_cancel_runs() {
    let w = world();

    send(&w, &said(&w, "m:help", ANN, "help"));
    let help = reply_to(&w, "m:help");
    for cmd in ["run NAME", "status ID", "list", "cancel ID", "help"] {
        assert!(help.contains(cmd), "{cmd} in {help}");
    }

    send(&w, &said(&w, "m:run", BOB, "run deploy service=api"));
    let started = reply_to(&w, "m:run");
    assert!(started.starts_with("started deploy as `"), "{started}");
    let id = started.split('`').nth(1).expect("the run's id").to_string();
    // The planner step ran; the run waits at the gate.
    w.llm.wait_for_requests(1, WAIT);
    let until = Instant::now() + WAIT;
    while w.sandbox.show(&id)["status"] != "paused" {
        assert!(Instant::now() < until, "{}", w.svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let show = w.sandbox.show(&id);
    assert_eq!(show["started_by"], format!("teams:{BOB}"), "{show}");

    send(&w, &said(&w, "m:status", BOB, &format!("status {id}")));
    let status = reply_to(&w, "m:status");
    assert!(
        status.contains("paused") && status.contains("review"),
        "{status}"
    );

    send(&w, &said(&w, "m:list", BOB, "list"));
    let list = reply_to(&w, "m:list");
    assert!(list.contains(&id), "{list}");

    // Bob is not an approver: the intake refuses his cancel.
    send(&w, &said(&w, "m:cancel-bob", BOB, &format!("cancel {id}")));
    let refused = reply_to(&w, "m:cancel-bob");
    assert!(refused.starts_with("Not cancelled"), "{refused}");
    assert_eq!(w.sandbox.show(&id)["status"], "paused");

    // Ann is: the run is rejected, by her, through Teams.
    send(&w, &said(&w, "m:cancel-ann", ANN, &format!("cancel {id}")));
    let cancelled = reply_to(&w, "m:cancel-ann");
    assert_eq!(cancelled, format!("cancelled `{id}`"));
    let until = Instant::now() + WAIT;
    while w.sandbox.show(&id)["status"] == "paused" {
        assert!(Instant::now() < until, "{}", w.svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown = w.sandbox.show(&id).to_string();
    assert!(shown.contains(&format!("teams:{ANN}")), "{shown}");

    send(&w, &said(&w, "m:what", ANN, "frobnicate"));
    assert!(reply_to(&w, "m:what").starts_with("I don't understand"));
}
