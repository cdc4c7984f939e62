//! The Teams inbox, on the real `strands serve` pointed at the fake Bot
//! Framework: `inbox` in a 1:1 chat answers with a card of the gates the
//! writer may answer across runs (the people directory ties her Teams id
//! to `alice`, whom the specs name), a toggle per gate; its
//! `bulk_approve` / `bulk_reject` decide the selected gates through the
//! hub's batch — each answered and audited on its own, `via: teams`; a
//! quorum gate left out saying why; a stranger's selection refused by the
//! intake, nothing changed; an `Action.Submit` updates the card in place. Every card is checked by Microsoft's Adaptive
//! Cards parser at the end.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::teams_room::{post_activity, token, BOT, CHANNEL, TENANT};
use crate::common::fake_teams::{FakeTeams, Hit};
use crate::common::service::{ServeConfig, Service};
use crate::common::slack_story::answered;
use crate::common::teams_driver::verbs;
use crate::common::Sandbox;

const WAIT: Duration = Duration::from_secs(20);
const ALICE: &str = "0000a11c-0000-4000-8000-0000000a11ce";
/// Starts the runs; approves nothing.
const BOB: &str = "00000b0b-0000-4000-8000-000000000b0b";
/// Neither starts nor approves.
const MALLORY: &str = "0000ba0d-0000-4000-8000-00000000ba0d";
const CARD: &str = "application/vnd.microsoft.card.adaptive";

/// A payout released by alice; `$N` approvals needed.
const PAYOUT: &str = r#"
version: 0
name: $NAME
runtime:
  provider: echo
security:
  approvers: [alice, carol]
agents:
  clerk:
    prompt: You prepare payouts.
pattern:
  type: chain
  config:
    steps:
      - agent: clerk
        input: Prepare the payout.
      - type: manual_gate
        id: release
        prompt: Release the $NAME?
        approvals_required: $N
      - agent: clerk
        input: "Pay per {{ steps[0].response }}"
"#;

struct World {
    fake: FakeTeams,
    sandbox: Sandbox,
    svc: Service,
}

/// Every card the fake received or an invoke was answered with passes
/// Microsoft's Adaptive Cards parser.
impl Drop for World {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.fake.assert_cards_valid();
        }
    }
}

fn world() -> World {
    let fake = FakeTeams::start();
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows dir");
    for (name, n) in [("payout", "1"), ("quorum-payout", "2")] {
        std::fs::write(
            dir.join(format!("{name}.yaml")),
            PAYOUT.replace("$NAME", name).replace("$N", n),
        )
        .expect("a workflow");
    }
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let svc = Service::launch(cfg);
    let w = World { fake, sandbox, svc };
    // Alice's Teams id is hers in the people directory.
    w.sandbox
        .strands(&["people", "add", "alice", "--teams", ALICE])
        .expect_code(0);
    w
}

/// The activity fields every test activity shares, from `aad` in
/// `conversation` (a 1:1 chat unless it is the channel).
fn from(w: &World, id: &str, aad: &str, conversation: &str) -> Value {
    let kind = if conversation == CHANNEL {
        json!({"id": CHANNEL, "conversationType": "channel", "isGroup": true})
    } else {
        json!({"id": conversation, "conversationType": "personal"})
    };
    json!({
        "id": id,
        "channelId": "msteams",
        "serviceUrl": w.fake.service_url(),
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": format!("Person {aad}")},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": kind,
        "channelData": {"tenant": {"id": TENANT}},
    })
}

/// `text` said by `aad` in `conversation` (with the bot's @mention in the
/// channel); acknowledged.
fn say(w: &World, id: &str, aad: &str, conversation: &str, text: &str) {
    let mut a = from(w, id, aad, conversation);
    a["type"] = json!("message");
    if conversation == CHANNEL {
        a["text"] = json!(format!("<at>strands</at> {text}"));
        a["entities"] = json!([{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}]);
    } else {
        a["text"] = json!(text);
    }
    let r = post_activity(&w.svc, &token(&w.fake.service_url(), "signing.key.pem"), &a);
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
}

/// Waits for the first activity the bot POSTed that `pred` accepts.
fn posted(w: &World, what: &str, pred: impl Fn(&Hit) -> bool) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        if let Some(h) = w
            .fake
            .hits()
            .into_iter()
            .find(|h| h.method == "POST" && pred(h))
        {
            return h.body;
        }
        assert!(
            Instant::now() < until,
            "no {what} within {WAIT:?}: {:#?}\n{}",
            w.fake.hits(),
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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

/// Bob starts `workflow` from the channel; the run's id once it waits.
fn start(w: &World, n: usize, workflow: &str) -> String {
    let id = format!("m:run{n}");
    say(w, &id, BOB, CHANNEL, &format!("run {workflow}"));
    let reply = posted(w, "the run's reply", |h| {
        h.path.ends_with(&format!("/activities/{id}"))
    });
    let text = reply["text"].as_str().unwrap_or_default();
    let run = text
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("the run's id in {reply}"))
        .to_string();
    wait_status(w, &run, "paused");
    run
}

/// `aad` writes `text` in the 1:1 chat `chat`; the inbox card posted there.
fn inbox(w: &World, n: usize, aad: &str, chat: &str, text: &str) -> Value {
    let before = chat_cards(w, chat);
    say(w, &format!("m:inbox{n}"), aad, chat, text);
    let until = Instant::now() + WAIT;
    loop {
        let cards = chat_cards(w, chat);
        if cards.len() > before.len() {
            let activity = cards.last().cloned().expect("a card");
            assert!(activity.get("text").is_none(), "a card alone: {activity}");
            return activity["attachments"][0]["content"].clone();
        }
        assert!(
            Instant::now() < until,
            "no inbox card in {chat}: {:#?}\n{}",
            w.fake.hits(),
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The cards posted to the chat `chat` so far.
fn chat_cards(w: &World, chat: &str) -> Vec<Value> {
    let tail = chat.trim_start_matches("a:");
    w.fake
        .hits()
        .into_iter()
        .filter(|h| h.method == "POST" && h.path.contains(tail))
        .filter(|h| h.body.get("attachments").is_some())
        .map(|h| h.body)
        .collect()
}

/// Every `Input.Toggle` id on a card.
fn toggles(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("Input.Toggle")) {
                out.push(m["id"].as_str().unwrap_or_default().to_string());
            }
            m.values().for_each(|x| out.extend(toggles(x)));
        }
        Value::Array(a) => a.iter().for_each(|x| out.extend(toggles(x))),
        _ => {}
    }
    out
}

/// The toggle of `session`'s `release` gate.
fn pick(session: &str) -> String {
    format!("pick:{session}:release#1")
}

/// What Teams sends for `card` with the toggles of `runs` on (the others
/// off) and `reason` typed: the inputs, merged into the button's data.
fn selecting(card: &Value, runs: &[&str], reason: &str) -> Value {
    let mut data = json!({"reason": reason});
    for t in toggles(card) {
        let on = runs.iter().any(|r| pick(r) == t);
        data[t] = json!(if on { "true" } else { "false" });
    }
    data
}

/// `aad` presses `verb` on the inbox card in `chat` with `data`; the
/// invoke's answer (a card, kept to be validated).
fn press(w: &World, n: usize, aad: &str, chat: &str, verb: &str, data: Value) -> Value {
    let mut a = from(w, &format!("i:{verb}:{n}"), aad, chat);
    a["type"] = json!("invoke");
    a["name"] = json!("adaptiveCard/action");
    a["replyToId"] = json!("act-inbox");
    a["value"] = json!({"action": {"type": "Action.Execute", "verb": verb, "data": data}});
    let r = post_activity(&w.svc, &token(&w.fake.service_url(), "signing.key.pem"), &a);
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
    let answer: Value = r.json();
    assert_eq!(answer["type"], CARD, "{answer}");
    w.fake.note_card(&format!("invoke {verb} {n}"), &answer);
    answer["value"].clone()
}

/// The audit trail's answer entries for `session`.
fn answers_audited(w: &World, session: &str) -> Vec<Value> {
    let out = w
        .sandbox
        .strands(&["audit", "export", "--session", session]);
    out.expect_code(0);
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "answer")
        .collect()
}

#[test]
fn teams_inbox_lists_across_runs_and_decides_the_selected_gates_at_once() {
    let w = world();
    let (one, two) = (start(&w, 1, "payout"), start(&w, 2, "payout"));
    let quorum = start(&w, 3, "quorum-payout");
    let other = start(&w, 4, "payout");
    let chat = "a:inbox-alice";

    // Alice asks (any case, spaces around): one card, a toggle per gate.
    let card = inbox(&w, 1, ALICE, chat, "  Inbox ");
    assert_eq!(card["version"], "1.5", "{card}");
    let mut v = verbs(&card);
    v.sort();
    assert_eq!(v, ["bulk_approve", "bulk_reject"], "{card:#}");
    let mut offered = toggles(&card);
    offered.sort();
    let mut want: Vec<String> = [&one, &two, &quorum, &other]
        .iter()
        .map(|r| pick(r))
        .collect();
    want.sort();
    assert_eq!(offered, want, "{card:#}");
    let text = card.to_string();
    for words in [
        "Waiting for you",
        "Release the payout?",
        "Release the quorum-payout?",
        "0 of 2 approvals",
        "waiting",
        &format!("started by Person {BOB}"),
    ] {
        assert!(text.contains(words), "{words} in {text}");
    }

    // Mallory may answer none of them: her card lists nothing, and a
    // selection she makes up is refused by the intake, gate by gate.
    let mallory = "a:inbox-mallory";
    let hers = inbox(&w, 2, MALLORY, mallory, "pending");
    assert!(toggles(&hers).is_empty(), "{hers:#}");
    assert!(
        hers.to_string().contains("Nothing waits for you."),
        "{hers}"
    );
    let refused = press(
        &w,
        1,
        MALLORY,
        mallory,
        "bulk_approve",
        selecting(&card, &[&one, &two], ""),
    );
    let said = refused.to_string();
    assert!(
        said.contains("Of 2 selected: 0 recorded, 0 left out, 2 refused"),
        "{said}"
    );
    assert!(said.contains("Refused: "), "{said}");
    for r in [&one, &two] {
        assert_eq!(w.sandbox.show(r)["status"], "paused");
        assert!(answers_audited(&w, r).is_empty());
    }

    // Nothing selected: said, nothing changes.
    let none = press(
        &w,
        2,
        ALICE,
        chat,
        "bulk_approve",
        selecting(&card, &[], ""),
    );
    assert!(none.to_string().contains("Nothing selected"), "{none}");
    assert_eq!(toggles(&none).len(), 4, "{none:#}");

    // Three selected: two approved, each on its own; the quorum gate is
    // left out saying why.
    let after = press(
        &w,
        3,
        ALICE,
        chat,
        "bulk_approve",
        selecting(&card, &[&one, &two, &quorum], "ignored when approving"),
    );
    let said = after.to_string();
    assert!(
        said.contains("Of 3 selected: 2 recorded, 1 left out, 0 refused"),
        "{said}"
    );
    assert!(said.contains("needs 2 more approvals"), "{said}");
    assert!(
        said.contains("Left out: quorum-payout · release#1"),
        "{said}"
    );
    // What still waits: the quorum gate and the fourth run.
    let mut left = toggles(&after);
    left.sort();
    let mut want = vec![pick(&quorum), pick(&other)];
    want.sort();
    assert_eq!(left, want, "{after:#}");
    for r in [&one, &two] {
        let s = wait_status(&w, r, "completed");
        let a = answered(&s);
        assert_eq!(a.len(), 1, "{s:#}");
        assert_eq!(a[0]["via"], "teams", "{s:#}");
        let audited = answers_audited(&w, r);
        assert_eq!(audited.len(), 1, "one answer entry: {audited:#?}");
        assert_eq!(audited[0]["event"]["via"], "teams", "{audited:#?}");
        assert_eq!(
            audited[0]["event"]["who"],
            format!("teams:{ALICE}"),
            "{audited:#?}"
        );
    }
    assert_eq!(w.sandbox.show(&quorum)["status"], "paused");
    assert!(answers_audited(&w, &quorum).is_empty());

    // Reject another, with one reason.
    let rejected = press(
        &w,
        4,
        ALICE,
        chat,
        "bulk_reject",
        selecting(&after, &[&other], "  not this quarter "),
    );
    assert!(
        rejected
            .to_string()
            .contains("Of 1 selected: 1 recorded, 0 left out, 0 refused"),
        "{rejected}"
    );
    assert_eq!(toggles(&rejected), [pick(&quorum)], "{rejected:#}");
    let s = wait_status(&w, &other, "rejected");
    let a = answered(&s);
    assert_eq!(a.len(), 1, "{s:#}");
    assert_eq!(a[0]["via"], "teams", "{s:#}");
    assert!(s.to_string().contains("not this quarter"), "{s:#}");

    // From an older client, an Action.Submit (a message carrying the
    // inputs and the verb, replying to the card): the card is updated in
    // place. One reject decides even the quorum gate.
    let mut submit = from(&w, "m:submit", ALICE, chat);
    submit["type"] = json!("message");
    submit["replyToId"] = json!("act-inbox");
    let mut value = selecting(&rejected, &[&quorum], "over budget");
    value["verb"] = json!("bulk_reject");
    submit["value"] = value;
    let r = post_activity(
        &w.svc,
        &token(&w.fake.service_url(), "signing.key.pem"),
        &submit,
    );
    assert_eq!(r.status, 200, "{} {}", r.status, r.body);
    let until = Instant::now() + WAIT;
    let put = loop {
        if let Some(h) = w
            .fake
            .hits()
            .into_iter()
            .find(|h| h.method == "PUT" && h.path.ends_with("/activities/act-inbox"))
        {
            break h.body;
        }
        assert!(
            Instant::now() < until,
            "no PUT of the inbox card: {:#?}",
            w.fake.hits()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = put.to_string();
    assert!(said.contains("Of 1 selected: 1 recorded"), "{said}");
    assert!(said.contains("Nothing waits for you."), "{said}");
    let s = wait_status(&w, &quorum, "rejected");
    assert!(s.to_string().contains("over budget"), "{s:#}");
    assert_eq!(answers_audited(&w, &quorum).len(), 1);

    // In the channel the list would show to everyone: asked in a 1:1 chat.
    say(&w, "m:inbox-channel", ALICE, CHANNEL, "inbox");
    let reply = posted(&w, "the channel's reply", |h| {
        h.path.ends_with("/activities/m:inbox-channel")
    });
    assert!(
        reply["text"]
            .as_str()
            .unwrap_or_default()
            .contains("1:1 chat"),
        "{reply}"
    );
}
