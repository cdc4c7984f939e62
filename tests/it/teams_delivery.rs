//! The Teams room's delivery, on the real `strands serve` pointed at the
//! fake Bot Framework and the fake model: a run started elsewhere (the
//! CLI) is asked in `TEAMS_APPROVALS_CONVERSATION` — once, across
//! restarts; a run typed in a personal chat is asked and approved there;
//! a quorum shows its progress and decides once; `notify: dm` sends 1:1
//! cards that show the decision (a person away: to their delegate, "for
//! ann"); reminders come in the card's thread; a
//! timeout replaces the card's buttons with its outcome.
//!
//! Every assertion is on the Connector traffic the fake recorded and on
//! the session's state in the store.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::teams_room::{post_activity, token, BOT, CHANNEL, TENANT};
use crate::common::fake_teams::{FakeTeams, Hit};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::slack_story::DEPLOY;
use crate::common::teams_driver::verbs;
use crate::common::{run_paused, FakeLlm, Sandbox};

const WAIT: Duration = Duration::from_secs(20);
/// How long to watch for something that must not happen.
const QUIET: Duration = Duration::from_millis(1200);
const ANN: &str = "aad-0000-ann";
const BOB: &str = "aad-0000-bob";
const CAROL: &str = "aad-0000-carol";
/// The approvals conversation (a channel) for runs started elsewhere.
const APPROVALS: &str = "19:approvals@thread.tacv2";
/// Ann's personal chat with the bot.
const PERSONAL: &str = "a:personal-ann";

/// The deploy workflow with `security` lines and `gate` lines added to its
/// gate.
fn deploy(security: &str, gate: &str) -> String {
    DEPLOY
        .replace("\nagents:", &format!("\nsecurity:\n{security}agents:"))
        .replace(
            "        prompt: Approve the deploy of {{ service }}?\n",
            &format!("        prompt: Approve the deploy of {{{{ service }}}}?\n{gate}"),
        )
}

fn approvers(who: &[&str]) -> String {
    let list: Vec<String> = who.iter().map(|a| format!("\"teams:{a}\"")).collect();
    format!("  approvers: [{}]\n", list.join(", "))
}

struct World {
    fake: FakeTeams,
    llm: FakeLlm,
    sandbox: Sandbox,
    svc: Service,
}

fn world_with(workflow: &str, env: &[(&str, &str)]) -> World {
    let fake = FakeTeams::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("deploy", workflow)]);
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    let mut extra = vec![("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")];
    extra.extend_from_slice(env);
    for (k, v) in fake.env(&extra) {
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

/// An activity from `aad` (called `name`) in `conversation`: a channel
/// when its id starts with `19:`, else a personal chat.
fn activity(w: &World, conversation: &str, aad: &str, name: &str) -> Value {
    let channel = conversation.starts_with("19:");
    json!({
        "channelId": "msteams",
        "serviceUrl": w.fake.service_url(),
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": name},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {
            "id": conversation,
            "conversationType": if channel { "channel" } else { "personal" },
            "isGroup": channel,
        },
        "channelData": {"tenant": {"id": TENANT}},
    })
}

/// `text` said by `aad` in `conversation` (an @mention in a channel).
fn said(w: &World, conversation: &str, id: &str, aad: &str, text: &str) -> Value {
    let mut a = activity(w, conversation, aad, "Someone");
    a["type"] = json!("message");
    a["id"] = json!(id);
    if conversation.starts_with("19:") {
        a["text"] = json!(format!("<at>strands</at> {text}"));
        a["entities"] = json!([{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}]);
    } else {
        a["text"] = json!(text);
    }
    a
}

/// The bot added to `conversation`.
fn install(w: &World, conversation: &str) -> Value {
    let mut a = activity(w, conversation, CAROL, "Carol");
    a["type"] = json!("conversationUpdate");
    a["id"] = json!("install");
    a["membersAdded"] = json!([{"id": BOT}]);
    a
}

/// Sends `activity`, signed; its HTTP answer (200).
fn send(w: &World, activity: &Value) -> Value {
    let r = post_activity(
        &w.svc,
        &token(&w.fake.service_url(), "signing.key.pem"),
        activity,
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
    r.json()
}

/// An `adaptiveCard/action` invoke from `aad` (called `name`) on card
/// `card_id` in `conversation`; the HTTP answer.
fn act(
    w: &World,
    conversation: &str,
    who: (&str, &str),
    card_id: &str,
    verb: &str,
    data: Value,
) -> Value {
    let mut a = activity(w, conversation, who.0, who.1);
    a["type"] = json!("invoke");
    a["name"] = json!("adaptiveCard/action");
    a["id"] = json!(format!("i:{verb}:{}", who.0));
    a["replyToId"] = json!(card_id);
    a["value"] = json!({"action": {"type": "Action.Execute", "verb": verb, "data": data}});
    send(w, &a)
}

/// `path` as the fake saw it, percent-decoded where Teams ids need it.
fn decoded(path: &str) -> String {
    path.replace("%3A", ":").replace("%40", "@")
}

/// The id the fake gave the request `hits[i]` (its ids count successful
/// requests: `act-N`, `a:conv-N` for a new conversation).
fn id_of(hits: &[Hit], i: usize) -> String {
    let n = hits[..=i].iter().filter(|h| h.status == 200).count();
    if hits[i].path == "/v3/conversations" {
        format!("a:conv-{n}")
    } else {
        format!("act-{n}")
    }
}

/// Card posts (new activities with an attachment) in `conversation`:
/// `(index in hits, id, body)`.
fn cards_in(hits: &[Hit], conversation: &str) -> Vec<(usize, String, Value)> {
    let path = format!("/v3/conversations/{conversation}/activities");
    hits.iter()
        .enumerate()
        .filter(|(_, h)| {
            h.method == "POST"
                && h.status == 200
                && decoded(&h.path) == path
                && h.body.get("attachments").is_some()
        })
        .map(|(i, h)| (i, id_of(hits, i), h.body.clone()))
        .collect()
}

/// Waits until `check` finds something in the fake's hits.
fn wait_for<T>(w: &World, what: &str, check: impl Fn(&[Hit]) -> Option<T>) -> T {
    let until = Instant::now() + WAIT;
    loop {
        let hits = w.fake.hits();
        if let Some(t) = check(&hits) {
            return t;
        }
        assert!(
            Instant::now() < until,
            "{what} within {WAIT:?}: {hits:#?}\n{}",
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

/// The PUT that replaced card `card_id`, once it came.
fn updated(w: &World, card_id: &str) -> Value {
    let end = format!("/activities/{card_id}");
    wait_for(w, &format!("a PUT of card {card_id}"), |hits| {
        hits.iter()
            .rev()
            .find(|h| h.method == "PUT" && h.path.ends_with(&end))
            .map(|h| h.body.clone())
    })
}

/// `run deploy` said by `aad` in `conversation`; the run's id, once paused.
fn start(w: &World, conversation: &str, msg: &str, aad: &str) -> String {
    send(
        w,
        &said(w, conversation, msg, aad, "run deploy service=api"),
    );
    let text = wait_for(w, "the started reply", |hits| {
        hits.iter()
            .filter_map(|h| h.body["text"].as_str())
            .find(|t| t.starts_with("started deploy as `"))
            .map(str::to_string)
    });
    let id = text.split('`').nth(1).expect("the run's id").to_string();
    wait_status(w, &id, "paused");
    id
}

#[test]
fn teams_a_cli_run_is_asked_in_the_approvals_conversation_once_across_restarts() {
    let workflow = deploy(&approvers(&[ANN]), "");
    let mut w = world_with(
        &workflow,
        &[
            ("TEAMS_APPROVALS_CONVERSATION", APPROVALS),
            ("STRANDS_REPOST_INTERVAL_MS", "0"),
        ],
    );
    // The bot is added to the approvals channel, then the service stops.
    send(&w, &install(&w, APPROVALS));
    w.svc.stop();

    // Paused through the CLI while nobody serves: no card.
    let spec = w.sandbox.spec("deploy.yaml", &workflow, &w.llm);
    let id = run_paused(&w.sandbox, &spec);
    assert!(cards_in(&w.fake.hits(), APPROVALS).is_empty());

    // Served again: start-up asks the run in the approvals conversation.
    w.svc.restart();
    let (_, card_id, body) = wait_for(&w, "the card in the approvals conversation", |hits| {
        cards_in(hits, APPROVALS).into_iter().next()
    });
    let text = body.to_string();
    assert!(text.contains(&id), "{text}");
    assert!(
        text.contains("Approve the deploy of api?") || text.contains("Approve the deploy of"),
        "{text}"
    );
    let mut v = verbs(&body);
    v.sort();
    assert_eq!(v, ["approve", "modify", "reject"], "{text}");
    std::thread::sleep(QUIET);
    assert_eq!(
        cards_in(&w.fake.hits(), APPROVALS).len(),
        1,
        "{}",
        w.svc.log()
    );
    let shown = w.sandbox.show(&id);
    assert_eq!(
        shown["notification"]["channel"],
        format!("teams:{APPROVALS}"),
        "{shown}"
    );
    assert_eq!(shown["notification"]["ts"], card_id.as_str(), "{shown}");

    // Restarted: the card was posted, nothing more is.
    w.svc.stop();
    w.svc.restart();
    std::thread::sleep(QUIET);
    assert_eq!(
        cards_in(&w.fake.hits(), APPROVALS).len(),
        1,
        "{}",
        w.svc.log()
    );

    // Ann approves from it: the card names her as Teams does; the run ends.
    let data = json!({"session": id, "gate": "review#1"});
    let ok = act(&w, APPROVALS, (ANN, "Ann Lee"), &card_id, "approve", data);
    assert_eq!(
        ok["type"], "application/vnd.microsoft.card.adaptive",
        "{ok}"
    );
    let decided = ok["value"].to_string();
    assert!(decided.contains("Approved by Ann Lee at"), "{decided}");
    assert!(verbs(&ok["value"]).is_empty(), "{decided}");
    let done = wait_status(&w, &id, "completed");
    // The record keeps the identity, never the name.
    assert!(done.to_string().contains(&format!("teams:{ANN}")), "{done}");
    assert!(!done.to_string().contains("Ann Lee"), "{done}");
}

#[test]
fn teams_an_unknown_approvals_conversation_is_recorded_as_the_reason() {
    let workflow = deploy(&approvers(&[ANN]), "");
    let mut w = world_with(
        &workflow,
        &[
            ("TEAMS_APPROVALS_CONVERSATION", "19:nobody@thread.tacv2"),
            ("STRANDS_REPOST_INTERVAL_MS", "0"),
        ],
    );
    w.svc.stop();
    let spec = w.sandbox.spec("deploy.yaml", &workflow, &w.llm);
    let id = run_paused(&w.sandbox, &spec);
    w.svc.restart();
    let until = Instant::now() + WAIT;
    let note = loop {
        let shown = w.sandbox.show(&id);
        if shown["notification"]["error"].is_string() {
            break shown["notification"].clone();
        }
        assert!(Instant::now() < until, "{shown}\n{}", w.svc.log());
        std::thread::sleep(Duration::from_millis(100));
    };
    let error = note["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("19:nobody@thread.tacv2") && error.contains("not known"),
        "{note}"
    );
    assert!(note["ts"].is_null(), "{note}");
    assert!(w
        .fake
        .hits()
        .iter()
        .all(|h| h.body.get("attachments").is_none()));
    assert_eq!(
        w.svc.log().matches("approval card not posted").count(),
        1,
        "logged once\n{}",
        w.svc.log()
    );
}

#[test]
fn teams_a_run_typed_in_a_personal_chat_is_asked_and_approved_there() {
    let workflow = deploy(
        &format!("{}  allow_self_approval: true\n", approvers(&[ANN])),
        "",
    );
    let w = world_with(&workflow, &[]);
    let id = start(&w, PERSONAL, "m:run", ANN);
    let (_, card_id, body) = wait_for(&w, "the card in the personal chat", |hits| {
        cards_in(hits, PERSONAL).into_iter().next()
    });
    assert!(body.to_string().contains(&id));
    let before = w.llm.count();
    let data = json!({"session": id, "gate": "review#1"});
    let ok = act(&w, PERSONAL, (ANN, "Ann Lee"), &card_id, "approve", data);
    assert!(
        ok["value"].to_string().contains("Approved by Ann Lee"),
        "{ok}"
    );
    wait_status(&w, &id, "completed");
    assert_eq!(w.llm.count(), before + 1, "the deployer ran once");
    assert_eq!(cards_in(&w.fake.hits(), PERSONAL).len(), 1);
    // Nothing went to a channel.
    assert!(cards_in(&w.fake.hits(), CHANNEL).is_empty());
}

#[test]
fn teams_a_quorum_of_two_shows_progress_then_decides_once() {
    // With 1:1 copies: the progress shows on every copy, not only the card
    // clicked.
    let workflow = deploy(
        &format!("{}  approvals_required: 2\n", approvers(&[ANN, BOB])),
        "        notify: dm\n",
    );
    let w = world_with(&workflow, &[]);
    send(&w, &install(&w, CHANNEL));
    let id = start(&w, CHANNEL, "m:run", CAROL);
    let (_, card_id, _) = wait_for(&w, "the card", |hits| {
        cards_in(hits, CHANNEL).into_iter().next()
    });
    let data = json!({"session": id, "gate": "review#1"});
    let before = w.llm.count();

    let first = act(
        &w,
        CHANNEL,
        (ANN, "Ann Lee"),
        &card_id,
        "approve",
        data.clone(),
    );
    assert_eq!(
        first["type"], "application/vnd.microsoft.card.adaptive",
        "{first}"
    );
    let progress = first["value"].to_string();
    assert!(
        progress.contains("Approvals: 1 of 2 (Ann Lee)"),
        "{progress}"
    );
    assert!(
        verbs(&first["value"]).contains(&"approve".to_string()),
        "buttons kept: {progress}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(w.sandbox.show(&id)["status"], "paused");
    // Both 1:1 copies (posted to conversations other than the channel) are
    // updated with the progress; the clicked card is answered, not PUT.
    let copies = wait_for(&w, "the progress on both 1:1 copies", |hits| {
        let puts: Vec<&Hit> = hits
            .iter()
            .filter(|h| h.method == "PUT" && h.body.to_string().contains("1 of 2"))
            .collect();
        (puts.len() >= 2).then(|| puts.iter().map(|h| decoded(&h.path)).collect::<Vec<_>>())
    });
    assert!(
        copies.iter().all(|p| !p.contains(CHANNEL)),
        "the channel card is answered by the invoke: {copies:?}"
    );

    let second = act(&w, CHANNEL, (BOB, "Bob Roe"), &card_id, "approve", data);
    let decided = second["value"].to_string();
    assert!(decided.contains("Approved by Bob Roe"), "{decided}");
    assert!(verbs(&second["value"]).is_empty(), "{decided}");
    wait_status(&w, &id, "completed");
    std::thread::sleep(QUIET);
    assert_eq!(w.llm.count(), before + 1, "the run resumed once");
}

#[test]
fn teams_a_timeout_shows_its_outcome_on_the_card_without_buttons() {
    // A `hitl` gate: its timeout is in seconds.
    let workflow = deploy(
        &approvers(&[ANN]),
        "        timeout_seconds: 2\n        fallback_action: reject\n",
    )
    .replace("type: manual_gate", "type: hitl");
    let w = world_with(&workflow, &[]);
    send(&w, &install(&w, CHANNEL));
    let id = start(&w, CHANNEL, "m:run", BOB);
    let (_, card_id, _) = wait_for(&w, "the card", |hits| {
        cards_in(hits, CHANNEL).into_iter().next()
    });
    wait_status(&w, &id, "rejected");
    let put = updated(&w, &card_id);
    let text = put.to_string();
    assert!(
        text.contains("Timed out at") && text.contains("rejected by fallback"),
        "{text}"
    );
    assert!(verbs(&put).is_empty(), "{text}");
    let show = w.sandbox.show(&id);
    assert_eq!(show["gates"][0]["by"], "timeout", "{show:#}");
}

#[test]
fn teams_notify_dm_sends_each_teams_approver_a_card_and_updates_all() {
    let workflow = deploy(&approvers(&[ANN, BOB]), "        notify: dm\n");
    let w = world_with(&workflow, &[]);
    send(&w, &install(&w, CHANNEL));
    let id = start(&w, CHANNEL, "m:run", CAROL);
    let (_, card_id, _) = wait_for(&w, "the card", |hits| {
        cards_in(hits, CHANNEL).into_iter().next()
    });
    // One 1:1 conversation per approver, in our tenant, then a card in each.
    let chats: Vec<(String, String)> = wait_for(&w, "two 1:1 chats", |hits| {
        let opened: Vec<(String, String)> = hits
            .iter()
            .enumerate()
            .filter(|(_, h)| h.method == "POST" && h.path == "/v3/conversations" && h.status == 200)
            .map(|(i, h)| {
                assert_eq!(h.body["tenantId"], TENANT, "{}", h.body);
                assert_eq!(h.body["isGroup"], false, "{}", h.body);
                (
                    h.body["members"][0]["id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    id_of(hits, i),
                )
            })
            .collect();
        (opened.len() == 2).then_some(opened)
    });
    let mut who: Vec<&str> = chats.iter().map(|(m, _)| m.as_str()).collect();
    who.sort();
    assert_eq!(who, [ANN, BOB]);
    let copies: Vec<String> = chats
        .iter()
        .map(|(_, chat)| {
            let (_, copy, body) = wait_for(&w, "the 1:1 card", |hits| {
                cards_in(hits, chat).into_iter().next()
            });
            assert!(body.to_string().contains("You are an approver"), "{body}");
            assert_eq!(verbs(&body).len(), 3, "{body}");
            copy
        })
        .collect();

    // Bob decides from his 1:1 copy: every card shows it.
    let (_, bob_chat) = chats.iter().find(|(m, _)| m == BOB).expect("Bob's chat");
    let bob_copy = &copies[chats.iter().position(|(m, _)| m == BOB).expect("Bob")];
    let data = json!({"session": id, "gate": "review#1"});
    let ok = act(&w, bob_chat, (BOB, "Bob Roe"), bob_copy, "approve", data);
    assert!(
        ok["value"].to_string().contains("Approved by Bob Roe"),
        "{ok}"
    );
    wait_status(&w, &id, "completed");
    for card in std::iter::once(&card_id).chain(copies.iter()) {
        let put = updated(&w, card);
        assert!(put.to_string().contains("Approved by Bob Roe"), "{put}");
        assert!(verbs(&put).is_empty(), "{put}");
    }
}

#[test]
fn teams_a_reminder_comes_in_the_cards_thread() {
    let workflow = deploy(
        &approvers(&[ANN]),
        "        reminder_interval: 0.015\n        max_reminders: 1\n",
    );
    let w = world_with(&workflow, &[]);
    send(&w, &install(&w, CHANNEL));
    send(&w, &said(&w, CHANNEL, "m:hello", ANN, "help"));
    let id = start(&w, CHANNEL, "m:run", BOB);
    let (_, card_id, _) = wait_for(&w, "the card", |hits| {
        cards_in(hits, CHANNEL).into_iter().next()
    });
    let thread = format!("/v3/conversations/{CHANNEL}/activities/{card_id}");
    let reminder = wait_for(&w, "a reminder in the card's thread", |hits| {
        hits.iter()
            .find(|h| h.method == "POST" && decoded(&h.path) == thread)
            .map(|h| h.body.clone())
    });
    let text = reminder["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("⏰ Reminder 1 of 1"), "{text}");
    assert!(text.contains("Someone") && text.contains(&id), "{text}");
    std::thread::sleep(QUIET);
    let reminders = w
        .fake
        .hits()
        .iter()
        .filter(|h| h.method == "POST" && decoded(&h.path) == thread)
        .count();
    assert_eq!(reminders, 1, "max_reminders: 1");
    assert_eq!(w.sandbox.show(&id)["status"], "paused");
}

#[test]
fn teams_an_escalation_to_a_teams_person_sends_a_card_that_decides() {
    const BOSS: &str = "aad-0000-boss";
    let workflow = deploy(
        &approvers(&[ANN]),
        &format!(
            "        escalation_timeout: 0.03\n        escalation_target: [\"teams:{BOSS}\"]\n"
        ),
    );
    let w = world_with(&workflow, &[]);
    send(&w, &install(&w, CHANNEL));
    let id = start(&w, CHANNEL, "m:run", CAROL);
    let (_, card_id, _) = wait_for(&w, "the card", |hits| {
        cards_in(hits, CHANNEL).into_iter().next()
    });
    let chat = wait_for(&w, "a 1:1 chat with the boss", |hits| {
        hits.iter()
            .enumerate()
            .find(|(_, h)| h.path == "/v3/conversations" && h.status == 200)
            .map(|(i, h)| {
                assert_eq!(h.body["members"][0]["id"], BOSS, "{}", h.body);
                id_of(hits, i)
            })
    });
    let (_, copy, body) = wait_for(&w, "the escalated card", |hits| {
        cards_in(hits, &chat).into_iter().next()
    });
    let text = body.to_string();
    assert!(text.contains("Escalated") && text.contains(&id), "{text}");
    assert_eq!(w.sandbox.show(&id)["status"], "paused");

    // The boss is an approver now, and decides from the copy.
    let data = json!({"session": id, "gate": "review#1"});
    let ok = act(&w, &chat, (BOSS, "The Boss"), &copy, "approve", data);
    assert!(
        ok["value"].to_string().contains("Approved by The Boss"),
        "{ok}"
    );
    wait_status(&w, &id, "completed");
    for card in [&card_id, &copy] {
        let put = updated(&w, card);
        assert!(put.to_string().contains("Approved by The Boss"), "{put}");
        assert!(verbs(&put).is_empty(), "{put}");
    }
}

#[test]
fn teams_with_slack_on_a_cli_run_is_asked_in_both_rooms_once() {
    use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
    let fake = FakeTeams::start();
    let slack = FakeSlack::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let workflow = deploy(&approvers(&[ANN]), "");
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &workflow)]);
    let mut cfg = BotConfig::new(&sandbox, &slack, &dir)
        .with("TEAMS_APPROVALS_CONVERSATION", Some(APPROVALS))
        .with("STRANDS_REPOST_INTERVAL_MS", Some("0"));
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let mut bot = Bot::launch(&slack, cfg);
    let here = fake.service_url();
    let mut added = json!({
        "type": "conversationUpdate",
        "id": "install",
        "channelId": "msteams",
        "serviceUrl": here,
        "from": {"id": "29:carol", "aadObjectId": CAROL},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": APPROVALS, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "membersAdded": [{"id": BOT}],
    });
    let r = post_activity(&bot, &token(&here, "signing.key.pem"), &added);
    assert_eq!(r.status, 200, "{}", bot.log());
    bot.stop();
    let spec = sandbox.spec("deploy.yaml", &workflow, &llm);
    let id = run_paused(&sandbox, &spec);

    let teams_cards = |fake: &FakeTeams| cards_in(&fake.hits(), APPROVALS);
    let counts = |fake: &FakeTeams| (slack.approvals().len(), teams_cards(fake).len());
    bot.restart();
    slack.wait_for_approval();
    let until = Instant::now() + WAIT;
    while teams_cards(&fake).is_empty() {
        assert!(Instant::now() < until, "no Teams card\n{}", bot.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(QUIET);
    assert_eq!(counts(&fake), (1, 1), "{}", bot.log());

    // Restarted: each room's record stands; nobody posts again.
    bot.stop();
    bot.restart();
    std::thread::sleep(QUIET);
    assert_eq!(counts(&fake), (1, 1), "{}", bot.log());

    // Decided in Teams: the run goes on once.
    let (_, card_id, _) = teams_cards(&fake).remove(0);
    added["type"] = json!("invoke");
    added["name"] = json!("adaptiveCard/action");
    added["id"] = json!("i:approve");
    added["from"] = json!({"id": "29:ann", "aadObjectId": ANN, "name": "Ann Lee"});
    added["replyToId"] = json!(card_id);
    added["value"] = json!({"action": {"type": "Action.Execute", "verb": "approve",
        "data": {"session": id, "gate": "review#1"}}});
    added
        .as_object_mut()
        .expect("object")
        .remove("membersAdded");
    let r = post_activity(&bot, &token(&here, "signing.key.pem"), &added);
    assert!(
        r.json()["value"]
            .to_string()
            .contains("Approved by Ann Lee"),
        "{}",
        r.body
    );
    let until = Instant::now() + WAIT;
    while sandbox.show(&id)["status"] != "completed" {
        assert!(Instant::now() < until, "{}", bot.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Slack was asked once and never told of a Teams place.
    assert!(
        slack
            .calls()
            .iter()
            .all(|c| !c.channel().starts_with("teams:")),
        "{}",
        slack.describe()
    );
}

#[test]
fn teams_with_slack_on_a_card_that_failed_is_posted_at_the_next_start_up_once() {
    use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
    let fake = FakeTeams::start();
    let slack = FakeSlack::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let workflow = deploy(&approvers(&[ANN]), "");
    let spec = sandbox.spec("deploy.yaml", &workflow, &llm);
    let id = run_paused(&sandbox, &spec);
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &workflow)]);
    let mut cfg = BotConfig::new(&sandbox, &slack, &dir)
        .with("TEAMS_APPROVALS_CONVERSATION", Some(APPROVALS))
        .with("STRANDS_REPOST_INTERVAL_MS", Some("0"));
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    // The approvals conversation is not known yet: Slack asks, Teams fails.
    let mut bot = Bot::launch(&slack, cfg);
    slack.wait_for_approval();
    let until = Instant::now() + WAIT;
    while !bot.log().contains("approval card not posted") {
        assert!(Instant::now() < until, "{}", bot.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let here = fake.service_url();
    let added = json!({
        "type": "conversationUpdate",
        "id": "install",
        "channelId": "msteams",
        "serviceUrl": here,
        "from": {"id": "29:carol", "aadObjectId": CAROL},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": APPROVALS, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "membersAdded": [{"id": BOT}],
    });
    let r = post_activity(&bot, &token(&here, "signing.key.pem"), &added);
    assert_eq!(r.status, 200, "{}", bot.log());
    assert!(cards_in(&fake.hits(), APPROVALS).is_empty());

    // Started again: the card that failed is posted; Slack is not asked again.
    let counts = || {
        (
            slack.approvals().len(),
            cards_in(&fake.hits(), APPROVALS).len(),
        )
    };
    bot.stop();
    bot.restart();
    let until = Instant::now() + WAIT;
    while counts().1 == 0 {
        assert!(Instant::now() < until, "no Teams card\n{}", bot.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(QUIET);
    assert_eq!(counts(), (1, 1), "{}", bot.log());
    assert!(cards_in(&fake.hits(), APPROVALS)[0]
        .2
        .to_string()
        .contains(&id));
    bot.stop();
    bot.restart();
    std::thread::sleep(QUIET);
    assert_eq!(counts(), (1, 1), "{}", bot.log());
}

#[test]
fn teams_a_delegates_1on1_card_says_for_whom_and_so_does_the_decision() {
    // Ann (listed) is away; Dee answers for her: the 1:1 card goes to Dee.
    const ANN_AAD: &str = "0a1e-0001";
    const DEE_AAD: &str = "0dee-0002";
    let workflow = deploy(&approvers(&[ANN_AAD]), "        notify: dm\n");
    let w = world_with(&workflow, &[]);
    w.sandbox
        .strands(&["people", "add", "ann", "--teams", ANN_AAD])
        .expect_code(0);
    w.sandbox
        .strands(&["people", "add", "dee", "--teams", DEE_AAD])
        .expect_code(0);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    w.sandbox
        .strands(&[
            "people", "delegate", "ann", "--to", "dee", "--from", &today, "--until", &today,
        ])
        .expect_code(0);
    send(&w, &install(&w, CHANNEL));
    let id = start(&w, CHANNEL, "m:run", CAROL);
    let (_, card_id, _) = wait_for(&w, "the card", |hits| {
        cards_in(hits, CHANNEL).into_iter().next()
    });
    let (member, chat) = wait_for(&w, "a 1:1 chat", |hits| {
        hits.iter()
            .enumerate()
            .find(|(_, h)| h.method == "POST" && h.path == "/v3/conversations" && h.status == 200)
            .map(|(i, h)| {
                (
                    h.body["members"][0]["id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    id_of(hits, i),
                )
            })
    });
    assert_eq!(member, DEE_AAD, "ann's copy goes to dee");
    let (_, copy, body) = wait_for(&w, "the 1:1 card", |hits| {
        cards_in(hits, &chat).into_iter().next()
    });
    assert!(
        body.to_string()
            .contains("You answer for ann (a delegation)"),
        "{body}"
    );
    let data = json!({"session": id, "gate": "review#1"});
    let ok = act(&w, &chat, (DEE_AAD, "Dee Lee"), &copy, "approve", data);
    assert!(
        ok["value"]
            .to_string()
            .contains("Approved by Dee Lee for ann"),
        "{ok}"
    );
    wait_status(&w, &id, "completed");
    let put = updated(&w, &card_id);
    assert!(
        put.to_string().contains("Approved by Dee Lee for ann"),
        "{put}"
    );
}
