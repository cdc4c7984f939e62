//! The same questions through `strands serve`: the API (the service
//! killed while a question waits, then started again), the web inbox,
//! Slack's modal and a Teams card — every room answers through the one
//! intake, with the form's typed inputs.

use super::*;
use crate::common::api::{call, make_token};
use crate::common::service::{write_workflows, ServeConfig, Service};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

struct Served {
    setup: Setup,
    svc: Service,
    ci: String,
    alice: String,
}

impl Served {
    fn start() -> Option<Served> {
        Served::calling(file_report("call_1"))
    }

    /// The service, its model calling `call`.
    fn calling(call: Value) -> Option<Served> {
        let setup = Setup::new(vec![call], false)?;
        let yaml = std::fs::read_to_string(&setup.spec).expect("the spec");
        let yaml = yaml.replace("\nagents:", "\nsecurity:\n  approvers: [alice]\nagents:");
        let dir = write_workflows(&setup.sandbox, &setup.fake, &[("mcp-elicitation", &yaml)]);
        let ci = make_token(&setup.sandbox, "ci-bot", "operator");
        let alice = make_token(&setup.sandbox, "alice", "approver");
        let svc = Service::launch(ServeConfig::api(&setup.sandbox, &dir));
        Some(Served {
            setup,
            svc,
            ci,
            alice,
        })
    }

    fn session(&self, id: &str) -> Value {
        let r = call(
            &self.svc,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&self.ci),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    #[track_caller]
    fn wait_for(&self, id: &str, status: &str) -> Value {
        let until = Instant::now() + WAIT;
        loop {
            let s = self.session(id);
            if s["status"] == status {
                return s;
            }
            assert!(
                Instant::now() < until,
                "never {status}: {s:#}\n{}",
                self.svc.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the workflow as ci-bot; the session id.
    #[track_caller]
    fn start_run(&self) -> String {
        let r = call(
            &self.svc,
            "POST",
            "/api/v1/runs",
            Some(&self.ci),
            Some(&json!({"workflow": "mcp-elicitation"})),
        );
        assert_eq!(r.status, 201, "{}\n{}", r.body, self.svc.log());
        r.json()["session_id"]
            .as_str()
            .expect("a session id")
            .to_string()
    }

    fn answer(&self, id: &str, body: Value) -> crate::common::service::HttpReply {
        call(
            &self.svc,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(&self.alice),
            Some(&body),
        )
    }
}

/// The handles of the open gates in the API's view of a session.
fn open_handles(v: &Value) -> Vec<String> {
    v["open_gates"]
        .as_array()
        .or_else(|| v["gates"].as_array())
        .map(|g| {
            g.iter()
                .filter_map(|g| g["handle"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn killed_while_it_waits_the_service_asks_on_the_same_gate_and_the_tool_completes_once() {
    let Some(mut w) = Served::start() else {
        return;
    };
    let id = w.start_run();
    let paused = w.wait_for(&id, "paused");
    let handles = open_handles(&paused);
    assert_eq!(handles, ["elicit_call_1#1"], "{paused:#}");

    // Killed while it waits, started again: the same gate asks.
    w.svc.kill();
    w.svc.restart();
    let paused = w.wait_for(&id, "paused");
    assert_eq!(open_handles(&paused), handles, "{paused:#}");
    assert!(w.setup.done().is_empty(), "nothing completed yet");

    // A value that does not fit the form is refused, naming the field.
    let bad = w.answer(
        &id,
        json!({"decision": "approve", "values": {"reason": "audit", "count": "many"}}),
    );
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(bad.body.contains("count"), "{}", bad.body);

    let ok = w.answer(
        &id,
        json!({"decision": "approve", "values": {"reason": "audit", "count": "2"}}),
    );
    assert!(
        ok.status == 200 || ok.status == 202,
        "{} {}",
        ok.status,
        ok.body
    );
    let done = w.wait_for(&id, "completed");
    assert_eq!(done["output"], FINAL, "{done:#}");
    let completed = w.setup.done();
    assert_eq!(completed.len(), 1, "the tool completed once: {completed:?}");
    assert_eq!(
        completed[0]["content"],
        json!({"reason": "audit", "count": 2})
    );
    let result = w.setup.fake.request(2).tool_result("call_1");
    assert!(
        result.contains(r#"accept: {"count": 2, "reason": "audit"}"#),
        "{result}"
    );

    // Answered once: a second answer is told, nothing runs again.
    let again = w.answer(&id, json!({"decision": "reject"}));
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(w.setup.done().len(), 1);
}

#[test]
fn the_web_inbox_shows_the_question_as_typed_inputs_and_takes_the_answer() {
    use crate::web::Visitor;
    let Some(w) = Served::start() else {
        return;
    };
    let id = w.start_run();
    w.wait_for(&id, "paused");
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let page = alice.get(&format!("/sessions/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    for want in [
        "Why should the report be filed",
        r#"type="text" id="field-1-2" name="value.reason""#,
        "Reason <span class=\"req\">(required)</span>",
        r#"type="number" id="field-1-1" name="value.count" step="1" value="1""#,
        "Approve with these values",
    ] {
        assert!(page.body.contains(want), "{want} in\n{}", page.body);
    }
    let csrf = alice.csrf();
    let ok = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "elicit_call_1#1"),
            ("decision", "approve"),
            ("value.reason", "from the web"),
        ],
    );
    assert!(ok.status < 400, "{} {}", ok.status, ok.body);
    w.wait_for(&id, "completed");
    let completed = w.setup.done();
    assert_eq!(
        completed,
        vec![
            json!({"tool": "file_report", "title": "Q3", "action": "accept",
                    "content": {"reason": "from the web", "count": 1}})
        ],
        "the default filled in: {completed:?}"
    );
}

#[test]
fn in_slack_the_question_opens_a_modal_of_typed_inputs_and_the_values_reach_the_tool() {
    use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
    let Some(setup) = Setup::new(vec![file_report("call_1")], false) else {
        return;
    };
    let slack = FakeSlack::start();
    let yaml = std::fs::read_to_string(&setup.spec).expect("the spec");
    let yaml = yaml.replace(
        "\nagents:",
        "\nsecurity:\n  approvers: [U04APPROVER]\nagents:",
    );
    let dir = write_workflows(&setup.sandbox, &setup.fake, &[("mcp-elicitation", &yaml)]);
    let ci = make_token(&setup.sandbox, "ci-bot", "operator");
    let bot = Bot::launch(&slack, BotConfig::new(&setup.sandbox, &slack, &dir));
    let r = call(
        &bot,
        "POST",
        "/api/v1/runs",
        Some(&ci),
        Some(&json!({"workflow": "mcp-elicitation"})),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let msg = slack.wait_for_approval();
    let posted = msg.call.body.to_string();
    assert!(
        posted.contains("Why should the report be filed")
            && posted.contains("Approving fills in: Count, Reason"),
        "{:#}",
        msg.call.body
    );
    let click = bot.click(&msg, "strands_approve", "U04APPROVER");
    click.reply.expect_prompt_ok("the approve click", &bot);
    let opened = slack.wait_for_modal(&click);
    let view = &opened.body["view"];
    assert_eq!(view["callback_id"], "strands_fill", "{view:#}");
    let blocks = view["blocks"].as_array().expect("blocks");
    let input = |name: &str| {
        blocks
            .iter()
            .find(|b| b["block_id"] == format!("field:{name}"))
            .unwrap_or_else(|| panic!("no input for {name}: {view:#}"))
            .clone()
    };
    assert_eq!(input("count")["element"]["type"], "number_input");
    assert_eq!(input("reason")["element"]["type"], "plain_text_input");
    let ok = bot.submit_modal_with(&opened, "U04APPROVER", "", |p| {
        p["view"]["state"] = json!({"values": {
            "field:reason": {"value": {"type": "plain_text_input", "value": "from Slack"}},
            "field:count": {"value": {"type": "number_input", "value": "4"}},
        }});
    });
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(!ok.body.contains("errors"), "{}", ok.body);
    let until = Instant::now() + WAIT;
    while setup.done().is_empty() {
        assert!(Instant::now() < until, "the tool never completed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        setup.done(),
        vec![
            json!({"tool": "file_report", "title": "Q3", "action": "accept",
                    "content": {"reason": "from Slack", "count": 4}})
        ]
    );
}

#[test]
fn in_the_web_inbox_a_url_question_shows_its_link_is_never_bulk_approved_and_an_approval_accepts() {
    use crate::web::Visitor;
    let Some(w) = Served::calling(tool_call("call_1", "reports__connect_account", json!({})))
    else {
        return;
    };
    let id = w.start_run();
    w.wait_for(&id, "paused");
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let inbox = alice.get("/inbox/list");
    assert_eq!(inbox.status, 200, "{}", inbox.body);
    assert!(inbox.body.contains(&id), "listed: {}", inbox.body);
    assert!(
        !inbox.body.contains(&format!("{id} elicit_call_1#1")),
        "not offered for bulk approval: {}",
        inbox.body
    );
    let page = alice.get(&format!("/sessions/{id}"));
    assert!(
        page.body
            .contains("accounts.example&#x2f;connect?session=42")
            && page.body.contains("does not follow"),
        "{}",
        page.body
    );
    let csrf = alice.csrf();
    let ok = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "elicit_call_1#1"),
            ("decision", "approve"),
        ],
    );
    assert!(ok.status < 400, "{} {}", ok.status, ok.body);
    w.wait_for(&id, "completed");
    assert_eq!(
        w.setup.done(),
        vec![json!({"tool": "connect_account", "action": "accept"})]
    );
}

#[test]
fn in_teams_the_question_is_a_card_with_typed_inputs_and_approve_sends_them() {
    use crate::common::fake_teams::FakeTeams;
    use crate::common::teams_driver::{token, verbs, BOT, CHANNEL, TENANT};
    use crate::teams_room::post_activity;
    const ANN: &str = "aad-0000-ann";
    const BOB: &str = "aad-0000-bob";
    let Some(setup) = Setup::new(vec![file_report("call_1")], false) else {
        return;
    };
    let fake = FakeTeams::start();
    let yaml = std::fs::read_to_string(&setup.spec).expect("the spec");
    let yaml = yaml.replace(
        "\nagents:",
        &format!("\nsecurity:\n  approvers: [\"teams:{ANN}\"]\nagents:"),
    );
    let dir = write_workflows(&setup.sandbox, &setup.fake, &[("mcp-elicitation", &yaml)]);
    let mut cfg = ServeConfig::api(&setup.sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let svc = Service::launch(cfg);
    let activity = |who: &str, rest: Value| {
        let mut a = json!({
            "channelId": "msteams",
            "serviceUrl": fake.service_url(),
            "from": {"id": format!("29:{who}"), "aadObjectId": who, "name": "Someone"},
            "recipient": {"id": BOT, "name": "strands"},
            "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
            "channelData": {"tenant": {"id": TENANT}},
        });
        if let (Some(a), Value::Object(rest)) = (a.as_object_mut(), rest) {
            a.extend(rest);
        }
        a
    };
    let send = |a: Value| {
        let r = post_activity(&svc, &token(&fake.service_url(), "signing.key.pem"), &a);
        assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, svc.log());
        if r.body.trim().is_empty() {
            Value::Null
        } else {
            r.json()
        }
    };
    // Bob starts the run; Ann, the approver, answers.
    send(activity(
        BOB,
        json!({"type": "message", "id": "m:run",
        "text": "<at>strands</at> run mcp-elicitation",
        "entities": [{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}]}),
    ));
    let until = Instant::now() + WAIT;
    let card = loop {
        if let Some(h) = fake.hits().into_iter().find(|h| {
            h.method == "POST"
                && h.body.get("attachments").is_some()
                && h.body
                    .to_string()
                    .contains("Why should the report be filed")
        }) {
            break h.body["attachments"][0]["content"].clone();
        }
        assert!(Instant::now() < until, "no card\n{}", svc.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(verbs(&card).contains(&"approve".to_string()), "{card:#}");
    let approve_card = card["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["title"] == "Approve…"))
        .unwrap_or_else(|| panic!("Approve… with the inputs: {card:#}"));
    let inputs: Vec<(String, String)> = approve_card["card"]["body"]
        .as_array()
        .expect("inputs")
        .iter()
        .filter(|i| i["id"].is_string())
        .map(|i| {
            (
                i["id"].as_str().unwrap_or_default().to_string(),
                i["type"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        inputs,
        [
            ("value.count".to_string(), "Input.Number".to_string()),
            ("value.reason".to_string(), "Input.Text".to_string()),
        ]
    );
    let text = card.to_string();
    let id = text
        .split("/sessions/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the run's page")
        .to_string();
    let answer = send(activity(
        ANN,
        json!({"type": "invoke", "name": "adaptiveCard/action", "id": "i:1",
        "replyToId": "card",
        "value": {"action": {"type": "Action.Execute", "verb": "approve", "data": {
            "session": id, "gate": "elicit_call_1#1",
            "value.reason": "from Teams", "value.count": "5"}}}}),
    ));
    assert!(!answer.to_string().contains("cannot approve"), "{answer:#}");
    let until = Instant::now() + WAIT;
    while setup.done().is_empty() {
        assert!(
            Instant::now() < until,
            "the tool never completed\n{}",
            svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        setup.done(),
        vec![
            json!({"tool": "file_report", "title": "Q3", "action": "accept",
                    "content": {"reason": "from Teams", "count": 5}})
        ]
    );
    fake.assert_cards_valid();
}
