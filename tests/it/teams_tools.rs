//! Tool-call approvals in the Teams room, on the real `strands serve`
//! pointed at the fake Bot Framework, the fake model and a fake HTTP API:
//! an agent asks for two state-changing calls; one Adaptive Card shows
//! both (arguments redacted), each with its own actions — Approve, Reject
//! with a reason, Edit arguments (a multi-line input prefilled with the
//! JSON), and Trust only with `enable_trust`. Each action decides one call
//! as the verified sender; the card comes back re-drawn (each decided call
//! says how and by whom, without buttons) and its other copies are PUT.
//! Only approved calls reach the API, each once. Every card is checked by
//! Microsoft's Adaptive Cards parser at the end of each test.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::teams_room::{post_activity, token, BOT, CHANNEL, TENANT};
use crate::common::fake_slack::FakeTarget;
use crate::common::fake_teams::{FakeTeams, Hit};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::slack_story::answered;
use crate::common::teams_driver::executes;
use crate::common::{assistant_turns, tool_call, Behaviour, FakeLlm, Sandbox, Say};

const WAIT: Duration = Duration::from_secs(20);
const ANN: &str = "aad-0000-ann";
const BOB: &str = "aad-0000-bob";
/// Neither started the run nor approves.
const CY: &str = "aad-0000-cy";
const WEB: &str = "call_web";
const API: &str = "call_api";
const CARD: &str = "application/vnd.microsoft.card.adaptive";

/// One agent with an HTTP API tool; POSTs change state, so each waits for
/// a human; Ann approves. `$TRUST` is `enable_trust`.
pub(crate) const OPS_SPEC: &str = r#"
version: 0
name: ops
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
security:
  approvers: ["teams:aad-0000-ann"]
tools:
  http_executors:
    - id: deploy_api
      base_url: $TARGET
      description: The deploy API.
agents:
  operator:
    prompt: You are the OPERATOR.
    tools: [deploy_api]
    enable_trust: $TRUST
pattern:
  type: chain
  config:
    steps:
      - agent: operator
        input: Roll out web and api.
"#;

/// The model asks for two POSTs at once (the second carries a password),
/// then answers with what it was told.
fn two_rollouts() -> Behaviour {
    Behaviour::scripted(|_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![
                tool_call(
                    WEB,
                    "deploy_api",
                    json!({"method": "POST", "path": "/rollout/web"}),
                ),
                tool_call(
                    API,
                    "deploy_api",
                    json!({"method": "POST", "path": "/rollout/api", "body": {"password": "hunter2"}}),
                ),
            ])
        } else {
            let results: Vec<String> = crate::common::tool_results(body)
                .into_iter()
                .map(|(id, content)| format!("{id}: {content}"))
                .collect();
            Say::Text(format!("FINISHED with {}", results.join(" / ")))
        }
    })
}

struct World {
    fake: FakeTeams,
    llm: FakeLlm,
    target: FakeTarget,
    sandbox: Sandbox,
    svc: Service,
    /// The run, paused at its tool-call gate.
    id: String,
    /// The card's activity id and the posted activity.
    card_id: String,
    card: Value,
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

/// Starts `ops` from the channel as Bob; waits for its tool-call card.
fn paused(trust: bool) -> World {
    let fake = FakeTeams::start();
    let llm = FakeLlm::start_with(two_rollouts());
    let target = FakeTarget::start();
    let sandbox = Sandbox::new();
    let spec = OPS_SPEC
        .replace("$TARGET", &target.url)
        .replace("$TRUST", if trust { "true" } else { "false" });
    let dir = write_workflows(&sandbox, &llm, &[("ops", &spec)]);
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let svc = Service::launch(cfg);
    let mut w = World {
        fake,
        llm,
        target,
        sandbox,
        svc,
        id: String::new(),
        card_id: String::new(),
        card: Value::Null,
    };
    send(&w, &said(&w, "m:run", BOB, "run ops"));
    // The reply in the command's thread names the run.
    let until = Instant::now() + WAIT;
    let started = loop {
        let hits: Vec<Hit> = w.fake.hits();
        if let Some(h) = hits
            .iter()
            .find(|h| h.method == "POST" && h.path.ends_with("/activities/m:run"))
        {
            break h.body["text"].as_str().unwrap_or_default().to_string();
        }
        assert!(
            Instant::now() < until,
            "no reply: {hits:#?}\n{}",
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    w.id = started
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("the run's id in {started:?}"))
        .to_string();
    wait_status(&w, "paused");
    let until = Instant::now() + WAIT;
    loop {
        let posted: Vec<Hit> = w
            .fake
            .hits()
            .into_iter()
            .filter(|h| h.method == "POST" && h.body.get("attachments").is_some())
            .collect();
        let shown = w.sandbox.show(&w.id);
        if let (Some(h), Some(ts)) = (posted.first(), shown["notification"]["ts"].as_str()) {
            assert_eq!(posted.len(), 1, "one card for the gate: {posted:#?}");
            w.card_id = ts.to_string();
            w.card = h.body.clone();
            return w;
        }
        assert!(
            Instant::now() < until,
            "no card: {shown:#}\n{}",
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `text` said by `aad` in the channel, @mentioning the bot.
fn said(w: &World, id: &str, aad: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "channelId": "msteams",
        "serviceUrl": w.fake.service_url(),
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "text": format!("<at>strands</at> {text}"),
        "entities": [{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}],
    })
}

fn send(w: &World, activity: &Value) {
    let r = post_activity(
        &w.svc,
        &token(&w.fake.service_url(), "signing.key.pem"),
        activity,
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
}

/// The verbs offered for `call`, in order.
fn verbs_for(card: &Value, call: &str) -> Vec<String> {
    executes(card)
        .into_iter()
        .filter(|(_, d)| d["call"] == call)
        .map(|(v, _)| v)
        .collect()
}

/// The action `verb` offered for `call`: its data.
fn data_of(card: &Value, call: &str, verb: &str) -> Value {
    executes(card)
        .into_iter()
        // A turn-wide action (`approve_all`) names no call: `call` "".
        .find(|(v, d)| {
            v == verb && (d["call"] == call || (call.is_empty() && d.get("call").is_none()))
        })
        .map(|(_, d)| d)
        .unwrap_or_else(|| panic!("no {verb} for {call} in {card:#}"))
}

/// Every `Input.Text` in `v`.
fn inputs(v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("Input.Text")) {
                out.push(v.clone());
            }
            m.values().for_each(|x| out.extend(inputs(x)));
        }
        Value::Array(a) => a.iter().for_each(|x| out.extend(inputs(x))),
        _ => {}
    }
    out
}

/// `aad` clicks `verb` on `call`, from the card `card_id`, with what was
/// typed (`typed`: merged into the data, as Teams merges inputs); the
/// invoke's answer.
fn click(w: &World, aad: &str, card_id: &str, verb: &str, call: &str, typed: Value) -> Value {
    let card = &w.card["attachments"][0]["content"];
    let mut data = data_of(card, call, verb);
    if let (Some(d), Value::Object(t)) = (data.as_object_mut(), typed) {
        d.extend(t);
    }
    let activity = json!({
        "type": "invoke",
        "name": "adaptiveCard/action",
        "id": format!("i:{verb}:{call}:{aad}"),
        "channelId": "msteams",
        "serviceUrl": w.fake.service_url(),
        "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": "Someone"},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "replyToId": card_id,
        "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}},
    });
    let r = post_activity(
        &w.svc,
        &token(&w.fake.service_url(), "signing.key.pem"),
        &activity,
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
    let answer: Value = r.json();
    if answer["type"] == CARD {
        w.fake.note_card(&format!("invoke {verb} {call}"), &answer);
    }
    answer
}

fn wait_status(w: &World, want: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        let s = w.sandbox.show(&w.id);
        if s["status"] == want {
            return s;
        }
        assert!(
            Instant::now() < until,
            "{} is {}, wanted {want}\n{}",
            w.id,
            s["status"],
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last PUT of the card `card_id` once it says `words`.
fn put_saying(w: &World, card_id: &str, words: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        if let Some(h) = w.fake.hits().into_iter().rev().find(|h| {
            h.method == "PUT"
                && h.path.ends_with(&format!("/activities/{card_id}"))
                && h.body.to_string().contains(words)
        }) {
            return h.body;
        }
        assert!(
            Instant::now() < until,
            "no PUT of {card_id} saying {words:?}: {:#?}",
            w.fake.hits()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn teams_a_tool_call_card_edits_and_rejects_calls_one_by_one() {
    let w = paused(false);
    let card = &w.card["attachments"][0]["content"];
    assert_eq!(card["version"], "1.5");
    let text = card.to_string();
    assert!(text.contains("Tool approval: ops / operator"), "{text}");
    assert!(text.contains("/rollout/web") && text.contains("/rollout/api"));
    assert!(text.contains(&format!("/sessions/{}", w.id)), "{text}");
    assert!(!text.contains("hunter2"), "no secret on the card: {text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    // Per call: approve, reject, edit — no trust without enable_trust. The
    // call with a hidden value is edited in the browser, not here.
    assert_eq!(verbs_for(card, WEB), ["approve", "reject", "edit"]);
    assert_eq!(verbs_for(card, API), ["approve", "reject"]);
    assert!(text.contains("To edit these arguments, open the run in the browser"));
    let boxes = inputs(card);
    let edit = boxes
        .iter()
        .find(|i| i["id"] == "args.1")
        .unwrap_or_else(|| panic!("an edit box for the first call: {card:#}"));
    assert_eq!(edit["isMultiline"], true);
    let prefilled: Value =
        serde_json::from_str(edit["value"].as_str().expect("prefilled")).expect("JSON");
    assert_eq!(prefilled, json!({"method": "POST", "path": "/rollout/web"}));
    assert_eq!(w.llm.count(), 1);

    // Cy is not an approver: told so, nothing changes.
    let refused = click(&w, CY, &w.card_id, "approve", WEB, json!({}));
    assert_eq!(
        refused["type"], "application/vnd.microsoft.activity.message",
        "{refused}"
    );
    assert!(
        refused["value"]
            .as_str()
            .unwrap_or_default()
            .contains("not an approver"),
        "{refused}"
    );

    // An edit that is not JSON is refused on the card; nothing changes.
    let bad = click(
        &w,
        ANN,
        &w.card_id,
        "edit",
        WEB,
        json!({"args.1": "{not json"}),
    );
    assert_eq!(bad["type"], CARD, "{bad}");
    let said = bad["value"].to_string();
    assert!(said.contains("not valid JSON"), "{said}");
    assert_eq!(verbs_for(&bad["value"], WEB), ["approve", "reject", "edit"]);
    // So is one that does not fit the tool's schema.
    let bad = click(
        &w,
        ANN,
        &w.card_id,
        "edit",
        WEB,
        json!({"args.1": "{\"path\": 5}"}),
    );
    assert!(bad["value"].to_string().contains("schema"), "{bad}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(w.sandbox.show(&w.id)["status"], "paused");
    assert!(w.target.hits().is_empty());

    // A good edit approves the call with the edited arguments; the other
    // call keeps its buttons. Clicked on another copy: this one is PUT.
    let edited = r#"{"method": "POST", "path": "/rollout/web-canary"}"#;
    let ok = click(&w, ANN, "act-copy", "edit", WEB, json!({"args.1": edited}));
    assert_eq!(ok["type"], CARD, "{ok}");
    let shown = ok["value"].to_string();
    assert!(
        shown.contains(&format!("Approved with edited arguments by teams:{ANN}")),
        "{shown}"
    );
    assert!(verbs_for(&ok["value"], WEB).is_empty(), "{shown}");
    assert_eq!(verbs_for(&ok["value"], API), ["approve", "reject"]);
    put_saying(&w, &w.card_id, "Approved with edited arguments");
    assert_eq!(w.llm.count(), 1, "one call still waits");

    // Rejecting the other, with a reason: every call decided, no buttons;
    // the run resumes and the model reads the reason.
    let no = click(
        &w,
        ANN,
        "act-copy",
        "reject",
        API,
        json!({"reason.2": "not on a Friday"}),
    );
    let shown = no["value"].to_string();
    assert!(
        shown.contains(&format!("Rejected by teams:{ANN}")) && shown.contains("not on a Friday"),
        "{shown}"
    );
    assert!(
        executes(&no["value"]).is_empty(),
        "no buttons left: {shown}"
    );
    let last = put_saying(&w, &w.card_id, "not on a Friday");
    assert!(executes(&last).is_empty(), "{last}");
    wait_status(&w, "completed");
    assert_eq!(w.target.count("POST", "/rollout/web-canary"), 1);
    assert_eq!(w.target.count("POST", "/rollout/web"), 0);
    assert_eq!(w.target.count("POST", "/rollout/api"), 0);
    let next = w.llm.request(2);
    let denied = next.tool_result(API);
    assert!(
        denied.contains(&format!("denied by teams:{ANN}")) && denied.contains("not on a Friday"),
        "{denied}"
    );
    assert!(next
        .tool_result(WEB)
        .contains("target got POST /rollout/web-canary"));
}

#[test]
fn teams_approve_runs_a_call_once_and_trust_is_offered_where_allowed() {
    let w = paused(true);
    let card = &w.card["attachments"][0]["content"];
    assert_eq!(
        verbs_for(card, WEB),
        ["approve", "reject", "edit", "trust", "trust"]
    );

    let ok = click(&w, ANN, &w.card_id, "approve", WEB, json!({}));
    assert!(
        ok["value"]
            .to_string()
            .contains(&format!("Approved by teams:{ANN}")),
        "{ok}"
    );
    // Teams retries the invoke: the same card, decided once.
    let again = click(&w, ANN, &w.card_id, "approve", WEB, json!({}));
    assert_eq!(again["type"], CARD, "{again}");
    assert!(verbs_for(&again["value"], WEB).is_empty());
    assert_eq!(w.llm.count(), 1);

    // Trust on the other call — as an Action.Submit (older clients): the
    // card is updated in place; the trust approves the tool for the run.
    let mut data = data_of(&w.card["attachments"][0]["content"], API, "trust");
    data["verb"] = json!("trust");
    let mut submit = said(&w, "m:submit", ANN, "");
    let m = submit.as_object_mut().expect("object");
    m.remove("text");
    m.remove("entities");
    m.insert("replyToId".into(), json!(w.card_id));
    m.insert("value".into(), data);
    send(&w, &submit);
    let updated = put_saying(&w, &w.card_id, &format!("Trusted by teams:{ANN}"));
    assert!(executes(&updated).is_empty(), "{updated}");
    let s = wait_status(&w, "completed");
    assert_eq!(
        w.target.count("POST", "/rollout/web"),
        1,
        "run exactly once"
    );
    assert_eq!(w.target.count("POST", "/rollout/api"), 1);
    let answers = answered(&s);
    assert_eq!(answers.len(), 2, "{s:#}");
    assert!(answers.iter().all(|a| a["via"] == "teams"), "{s:#}");
    assert_eq!(answers[1]["decision"]["action"], "trust", "{s:#}");
}

#[test]
fn teams_trust_for_an_hour_saves_a_grant_and_the_card_says_its_rule() {
    let w = paused(true);
    let card = &w.card["attachments"][0]["content"];
    // The second trust action of a call is "Trust for 1 h": its data says so.
    let hour = executes(card)
        .into_iter()
        .find(|(v, d)| v == "trust" && d["call"] == WEB && d["for"] == "1h")
        .map(|(_, d)| d)
        .unwrap_or_else(|| panic!("no trust for 1 h in {card:#}"));
    assert!(card.to_string().contains("Trust for 1 h"), "{card:#}");
    let ok = click(&w, ANN, &w.card_id, "trust", WEB, hour);
    let text = ok["value"].to_string();
    assert!(text.contains(&format!("Trusted by teams:{ANN}")), "{ok}");
    assert!(text.contains(", for 1h"), "the rule as saved: {ok}");
    assert!(!text.contains("rest of the run"), "{ok}");
    let s = wait_status(&w, "completed");
    assert_eq!(w.target.count("POST", "/rollout/web"), 1);
    assert_eq!(
        w.target.count("POST", "/rollout/api"),
        1,
        "the grant let it run"
    );
    let answers = answered(&s);
    assert_eq!(answers[0]["decision"]["action"], "trust", "{s:#}");
    assert!(answers[0]["decision"].to_string().contains("3600"), "{s:#}");
}

#[test]
fn teams_approve_all_answers_each_waiting_call_on_its_own() {
    let w = paused(false);
    let card = &w.card["attachments"][0]["content"];
    let all = data_of(card, "", "approve_all");
    assert_eq!(all["session"], w.id.as_str(), "{card:#}");
    assert!(card.to_string().contains("Approve all 2"), "{card:#}");

    let ok = click(&w, ANN, &w.card_id, "approve_all", "", json!({}));
    assert_eq!(ok["type"], CARD, "{ok}");
    assert_eq!(
        ok["value"]
            .to_string()
            .matches(&format!("Approved by teams:{ANN}"))
            .count(),
        2,
        "{ok}"
    );
    assert!(
        executes(&ok["value"]).iter().all(|(v, _)| v != "approve"),
        "{ok}"
    );
    let s = wait_status(&w, "completed");
    assert_eq!(w.target.count("POST", "/rollout/web"), 1);
    assert_eq!(w.target.count("POST", "/rollout/api"), 1);
    let answers = answered(&s);
    assert_eq!(answers.len(), 2, "{s:#}");
    assert!(
        answers
            .iter()
            .all(|a| a["via"] == "teams" && a["decision"]["action"] == "approve"),
        "{s:#}"
    );
}
