//! The Teams room's commands and approvals, on the real `strands serve`
//! pointed at the fake Bot Framework and the fake model: a command in a
//! channel (`@strands run NAME`, `help`, `status`, `list`, `cancel`) is
//! answered in the conversation through the Connector; a run started there
//! pauses and one Adaptive Card is posted; a card action (`invoke`) is an
//! answer from the verified activity's `from.aadObjectId`, answered with
//! the updated card or a refusal.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::teams_room::{post_activity, token, BOT, CHANNEL, TENANT};
use crate::common::fake_teams::{FakeTeams, Hit};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::slack_story::DEPLOY;
use crate::common::teams_driver::verbs;
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

/// At the end of every test, each card the fake received or an invoke was
/// answered with passes Microsoft's Adaptive Cards parser.
impl Drop for World {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.fake.assert_cards_valid();
        }
    }
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
    // The run's card shows the decision, its buttons gone.
    let until = Instant::now() + WAIT;
    let put = loop {
        if let Some(h) = w.fake.hits().into_iter().find(|h| h.method == "PUT") {
            break h;
        }
        assert!(
            Instant::now() < until,
            "no PUT of the card: {:#?}",
            w.fake.hits()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let updated = put.body.to_string();
    assert!(
        updated.contains(&format!("Rejected by teams:{ANN}")),
        "{updated}"
    );
    assert!(updated.contains("cancelled by"), "{updated}");
    assert!(verbs(&put.body).is_empty(), "{updated}");

    send(&w, &said(&w, "m:what", ANN, "frobnicate"));
    assert!(reply_to(&w, "m:what").starts_with("I don't understand"));
}

/// Waits for the `n`th card posted to the channel; its activity id and body.
fn card_posted(w: &World, n: usize) -> (usize, Value) {
    let until = Instant::now() + WAIT;
    loop {
        let hits = w.fake.hits();
        let cards: Vec<(usize, &Hit)> = hits
            .iter()
            .enumerate()
            .filter(|(_, h)| h.method == "POST" && h.body.get("attachments").is_some())
            .collect();
        if cards.len() >= n {
            let (i, h) = cards[n - 1];
            return (i, h.body.clone());
        }
        assert!(
            Instant::now() < until,
            "{} cards within {WAIT:?}, wanted {n}: {hits:#?}\n{}",
            cards.len(),
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An `adaptiveCard/action` invoke from `aad` on the card `card_id`.
fn action(w: &World, aad: &str, card_id: &str, verb: &str, data: Value) -> Value {
    json!({
        "type": "invoke",
        "name": "adaptiveCard/action",
        "id": format!("i:{verb}:{aad}"),
        "channelId": "msteams",
        "serviceUrl": w.fake.service_url(),
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": "Someone"},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "replyToId": card_id,
        "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}},
    })
}

/// Sends an invoke; its HTTP answer.
fn invoke(w: &World, activity: &Value) -> Value {
    let r = post_activity(
        &w.svc,
        &token(&w.fake.service_url(), "signing.key.pem"),
        activity,
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
    let answer: Value = r.json();
    let label = format!("invoke {}", activity["id"].as_str().unwrap_or_default());
    if answer["type"] == "application/vnd.microsoft.card.adaptive" {
        w.fake.note_card(&label, &answer);
    }
    answer
}

fn wait_status(w: &World, id: &str, want: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        let s = w.sandbox.show(id);
        if s["status"] == want {
            return s;
        }
        assert!(
            Instant::now() < until,
            "{id} is {}, wanted {want}\n{}",
            s["status"],
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `deploy` from the channel as Bob; the run's id, once paused.
fn start(w: &World, msg: &str) -> String {
    send(w, &said(w, msg, BOB, "run deploy service=api"));
    let started = reply_to(w, msg);
    let id = started.split('`').nth(1).expect("the run's id").to_string();
    wait_status(w, &id, "paused");
    id
}

#[test]
fn teams_a_paused_run_gets_one_card_and_an_approver_decides_it() {
    let w = world();
    let id = start(&w, "m:run1");
    let (_, activity) = card_posted(&w, 1);
    // The attachment alone, an Adaptive Card 1.5 with the gate's answers.
    assert!(activity.get("text").is_none(), "{activity}");
    let attachments = activity["attachments"].as_array().expect("attachments");
    assert_eq!(attachments.len(), 1);
    assert_eq!(
        attachments[0]["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    let card = &attachments[0]["content"];
    assert_eq!(card["type"], "AdaptiveCard");
    assert_eq!(card["version"], "1.5");
    assert!(activity.to_string().len() < 28 * 1024);
    let mut v = verbs(card);
    v.sort();
    assert_eq!(v, ["approve", "modify", "reject"], "{card}");
    let text = card.to_string();
    assert!(text.contains("Approve the deploy of api?"), "{text}");
    assert!(text.contains(&format!("teams:{BOB}")), "started by: {text}");
    assert!(text.contains(&format!("/sessions/{id}")), "{text}");
    let card_id = "act-card";
    let data = json!({"session": id, "gate": "review#1"});
    let llm_before = w.llm.count();

    // Bob may not answer: a refusal message, nothing changes.
    let refused = invoke(&w, &action(&w, BOB, card_id, "approve", data.clone()));
    assert_eq!(refused["statusCode"], 200);
    assert_eq!(
        refused["type"], "application/vnd.microsoft.activity.message",
        "{refused}"
    );
    assert!(!refused["value"].as_str().expect("why").is_empty());
    assert_eq!(w.sandbox.show(&id)["status"], "paused");

    // Ann approves: the decided card, naming her; the run completes.
    let ok = invoke(&w, &action(&w, ANN, card_id, "approve", data.clone()));
    assert_eq!(
        ok["type"], "application/vnd.microsoft.card.adaptive",
        "{ok}"
    );
    let decided = ok["value"].to_string();
    assert!(decided.contains("Approved by Someone"), "{decided}");
    assert!(verbs(&ok["value"]).is_empty(), "no buttons left: {decided}");
    wait_status(&w, &id, "completed");
    assert_eq!(w.llm.count(), llm_before + 1, "the deployer ran once");

    // Teams retries the invoke: decided once, the same card.
    let again = invoke(&w, &action(&w, ANN, card_id, "approve", data));
    assert_eq!(again, ok);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.llm.count(), llm_before + 1);
    let cards = w
        .fake
        .hits()
        .iter()
        .filter(|h| h.method == "POST" && h.body.get("attachments").is_some())
        .count();
    assert_eq!(cards, 1, "one card for one gate");

    // The refused action is in the audit trail, by Bob, through Teams.
    let audit = w.sandbox.strands(&["audit", "export"]);
    audit.expect_code(0);
    assert!(
        audit
            .stdout
            .lines()
            .any(|l| l.contains("refusal") && l.contains(&format!("teams:{BOB}"))),
        "{}",
        audit.stdout
    );
}

#[test]
fn teams_reject_and_modify_from_the_card_carry_their_text() {
    let w = world();
    let id = start(&w, "m:run-r");
    card_posted(&w, 1);
    let data = json!({"session": id, "gate": "review#1", "reason": "too risky today"});
    let r = invoke(&w, &action(&w, ANN, "act-r", "reject", data));
    let decided = r["value"].to_string();
    assert!(decided.contains("Rejected by Someone"), "{decided}");
    assert!(decided.contains("Reason: too risky today"), "{decided}");
    let shown = wait_status(&w, &id, "rejected").to_string();
    assert!(shown.contains("too risky today"), "{shown}");

    // Modify: the feedback reaches the model when the step runs again.
    let id = start(&w, "m:run-m");
    card_posted(&w, 2);
    let before = w.llm.count();
    let data = json!({"session": id, "gate": "review#1", "feedback": "use a canary first"});
    let r = invoke(&w, &action(&w, ANN, "act-m", "modify", data));
    assert_eq!(r["type"], "application/vnd.microsoft.card.adaptive", "{r}");
    w.llm.wait_for_requests(before + 1, WAIT);
    let asked = w.llm.request(before + 1).user();
    assert!(asked.contains("use a canary first"), "{asked}");
    // Asked again: a second card for the new asking of the gate.
    card_posted(&w, 3);
}

#[test]
fn teams_a_restart_does_not_post_twice_and_a_submit_updates_the_card() {
    let mut w = world();
    let id = start(&w, "m:run-s");
    card_posted(&w, 1);
    let shown = w.sandbox.show(&id);
    let card_id = shown["notification"]["ts"]
        .as_str()
        .unwrap_or_else(|| panic!("the card's activity id in {shown}"))
        .to_string();
    assert_eq!(
        shown["notification"]["channel"],
        format!("teams:{CHANNEL}"),
        "{shown}"
    );

    // Started again: the gate was asked, so nothing is posted again.
    w.svc.stop();
    w.svc.restart();
    std::thread::sleep(Duration::from_millis(700));
    let cards = |w: &World| {
        w.fake
            .hits()
            .iter()
            .filter(|h| h.body.get("attachments").is_some() && h.method == "POST")
            .count()
    };
    assert_eq!(cards(&w), 1, "{}", w.svc.log());

    // Action.Submit: a message with `value`, replying to the card.
    let mut submit = said(&w, "m:submit", ANN, "");
    submit.as_object_mut().expect("object").remove("text");
    submit.as_object_mut().expect("object").remove("entities");
    submit["replyToId"] = json!(card_id);
    submit["value"] = json!({"verb": "approve", "session": id, "gate": "review#1"});
    send(&w, &submit);
    wait_status(&w, &id, "completed");
    let path_end = format!("/activities/{card_id}");
    let until = Instant::now() + WAIT;
    let put = loop {
        if let Some(h) = w
            .fake
            .hits()
            .into_iter()
            .find(|h| h.method == "PUT" && h.path.ends_with(&path_end))
        {
            break h;
        }
        assert!(
            Instant::now() < until,
            "no PUT of the card: {:#?}",
            w.fake.hits()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(put.body.get("text").is_none(), "{}", put.body);
    let updated = put.body.to_string();
    assert!(
        updated.contains(&format!("Approved by teams:{ANN}")),
        "{updated}"
    );
    assert!(verbs(&put.body).is_empty(), "{updated}");
}

#[test]
fn teams_a_card_names_the_directorys_person_when_teams_gave_no_name() {
    // Dee, an approver by her (hex) Entra object id, is in the people
    // directory as `dee`; her click carries no `from.name`.
    const DEE: &str = "0000d0d0-0000-4000-8000-00000000dee1";
    let fake = FakeTeams::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "\nagents:",
        &format!("\nsecurity:\n  approvers: [\"teams:{DEE}\"]\nagents:"),
    );
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &spec)]);
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let svc = Service::launch(cfg);
    let w = World {
        fake,
        llm,
        sandbox,
        svc,
    };
    w.sandbox
        .strands(&["people", "add", "dee", "--teams", DEE])
        .expect_code(0);
    let id = start(&w, "m:run-n");
    card_posted(&w, 1);
    let mut click = action(
        &w,
        DEE,
        "act-n",
        "approve",
        json!({"session": id, "gate": "review#1"}),
    );
    click["from"].as_object_mut().expect("from").remove("name");
    let ok = invoke(&w, &click);
    let decided = ok["value"].to_string();
    assert!(decided.contains("Approved by dee at"), "{decided}");
    wait_status(&w, &id, "completed");
}
