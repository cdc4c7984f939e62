//! A manual gate's two powers, against the real `strands serve`: a `form`
//! its approver fills in, and `allow_trust` ("approve, and stop asking
//! for this tool"). An approval request with a form is answered with
//! values over the API (typed in its view; a bad value is 422 naming the
//! field and changes nothing; a plain approve is refused naming the
//! fields), in the web inbox (an HTTP form post, as a browser sends it),
//! through a Slack modal on the fake Slack (a bad value is an error under
//! its input) and from a Teams card's inputs (checked by the Adaptive
//! Cards parser); `strands resume --approve --value` answers one on a
//! local store and through the server. Trust is taken on a request that
//! allows it — over the API, in Slack and on the web — and refused on one
//! that does not.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::api::World;
use super::web::Visitor;
use crate::common::api::call;
use crate::common::service::{HttpReply, Service};

const WAIT: Duration = Duration::from_secs(20);

/// The form of every request here: its properties in this order.
const FORM: &str = r#"{"type": "object", "properties": {
    "zone": {"type": "string", "title": "Zone", "enum": ["eu", "us"], "enumNames": ["Europe", "US"]},
    "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 9},
    "notify": {"type": "boolean", "title": "Tell the channel", "default": true}
}, "required": ["zone", "replicas"]}"#;

fn form() -> Value {
    serde_json::from_str(FORM).expect("the form")
}

/// `POST /api/v1/approvals` with `token`, the body `{FIELDS, "form": FORM}`
/// sent as text: the form's properties in [`FORM`]'s order (a `Value`
/// would sort them).
fn request_with_form(svc: &Service, token: &str, fields: &str) -> HttpReply {
    let body = format!("{{{fields}, \"form\": {FORM}}}");
    let headers = [
        ("Accept", "application/json".to_string()),
        ("Authorization", format!("Bearer {token}")),
        ("Content-Type", "application/json".to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v));
    svc.request("POST", "/api/v1/approvals", &headers, body.as_bytes())
}

/// `POST /api/v1/approvals` as ci-bot (an operator).
fn request(w: &World, body: Value) -> HttpReply {
    call(
        &w.svc,
        "POST",
        "/api/v1/approvals",
        Some(&w.ci),
        Some(&body),
    )
}

/// Asks alice for `title` with `extra` fields; the request's id, once it
/// waits at its gate.
#[track_caller]
fn ask(w: &World, title: &str, extra: Value) -> String {
    let mut body = json!({"title": title, "approvers": ["alice"]});
    if let (Some(b), Value::Object(more)) = (body.as_object_mut(), extra) {
        b.extend(more);
    }
    let r = request(w, body);
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("an id").to_string();
    let until = Instant::now() + WAIT;
    while w.session(&id)["status"] != "paused" {
        assert!(Instant::now() < until, "never paused: {}", w.svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    id
}

/// `GET /api/v1/approvals/{id}?wait=` until it is decided (or the wait ends).
fn decided(w: &World, id: &str) -> Value {
    let r = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}?wait=20"),
        Some(&w.ci),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

/// `GET /api/v1/approvals/{id}` now.
fn view(w: &World, id: &str) -> Value {
    let r = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}"),
        Some(&w.ci),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

fn approvals(w: &World) -> usize {
    let r = call(&w.svc, "GET", "/api/v1/approvals", Some(&w.ci), None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["count"].as_u64().expect("a count") as usize
}

#[test]
fn forms_a_request_with_a_form_is_answered_over_the_api_with_typed_values() {
    let w = World::start();
    let r = request_with_form(
        &w.svc,
        &w.ci,
        r#""title": "Scale the API?", "approvers": ["alice"]"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    // The view returns the schema as given, its properties in that order.
    let at = |k: &str| r.body.find(&format!("\"{k}\"")).expect(k);
    assert!(
        at("zone") < at("replicas") && at("replicas") < at("notify"),
        "{}",
        r.body
    );
    let v = r.json();
    assert_eq!(v["form"]["properties"]["replicas"]["maximum"], 9, "{v}");
    assert_eq!(v["values"], Value::Null);
    assert_eq!(v["trusted"], false);
    let id = v["id"].as_str().expect("an id").to_string();
    let until = Instant::now() + WAIT;
    while w.session(&id)["status"] != "paused" {
        assert!(Instant::now() < until, "never paused: {}", w.svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The open gate carries the form.
    let before = w.session(&id);
    assert_eq!(
        before["gate"]["form"]["required"],
        json!(["zone", "replicas"])
    );

    // A plain approve is refused, naming the fields to fill in.
    let r = w.answer(&id, &w.alice, json!({"decision": "approve"}));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("zone (choice, required)")
            && r.body.contains("replicas (integer, required)"),
        "{}",
        r.body
    );
    // Values that do not fit: 422 naming each field.
    let r = w.answer(
        &id,
        &w.alice,
        json!({"decision": "approve", "values": {"zone": "mars", "replicas": "12", "colour": "red"}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let e = &r.json()["error"];
    assert_eq!(e["code"], "bad_answer", "{e}");
    assert_eq!(e["field"], "zone", "{e}");
    assert!(
        e["fields"]["zone"]
            .as_str()
            .unwrap_or_default()
            .contains("`eu`"),
        "{e}"
    );
    assert!(
        e["fields"]["replicas"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 9"),
        "{e}"
    );
    assert!(
        e["fields"]["colour"]
            .as_str()
            .unwrap_or_default()
            .contains("not a field"),
        "{e}"
    );
    // Values go with approve only.
    let r = w.answer(
        &id,
        &w.alice,
        json!({"decision": "reject", "values": {"zone": "eu"}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["error"]["field"], "values");
    // Nothing changed: still paused, no answer recorded.
    let after = w.session(&id);
    assert_eq!(after["status"], "paused");
    assert_eq!(after["gates"], before["gates"]);
    assert_eq!(view(&w, &id)["status"], "pending");

    // The values, as text: typed by the form, the default filled in.
    let r = w.answer(
        &id,
        &w.alice,
        json!({"decision": "approve", "values": {"zone": "eu", "replicas": "3"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = decided(&w, &id);
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["decision"], "approved");
    assert_eq!(v["decided_by"], "alice");
    assert_eq!(
        v["values"],
        json!({"zone": "eu", "replicas": 3, "notify": true}),
        "{v}"
    );
    assert_eq!(v["trusted"], false);
    // The session's history keeps them (sessions show, the audit).
    let s = w.session(&id);
    assert_eq!(
        s["gates"][0]["decision"],
        json!({"action": "fill", "values": {"zone": "eu", "replicas": 3, "notify": true}}),
        "{s}"
    );

    // Its events (and so its webhooks) carry the form and the values.
    let events = call(
        &w.svc,
        "GET",
        &format!("/api/v1/sessions/{id}/events"),
        Some(&w.ci),
        None,
    );
    assert_eq!(events.status, 200, "{}", events.body);
    assert!(
        events
            .body
            .contains(r#""values":{"notify":true,"replicas":3,"zone":"eu"}"#)
            && events.body.contains(r#""required":["zone","replicas"]"#),
        "{}",
        events.body
    );

    // The OpenAPI document has the new fields.
    let doc = call(&w.svc, "GET", "/api/v1/openapi.json", Some(&w.ci), None);
    assert_eq!(doc.status, 200, "{}", doc.body);
    let schemas = &doc.json()["components"]["schemas"];
    for (schema, field) in [
        ("AnswerRequest", "values"),
        ("ApprovalRequest", "form"),
        ("ApprovalRequest", "trust"),
        ("ApprovalView", "form"),
        ("ApprovalView", "values"),
        ("ApprovalView", "trusted"),
        ("GateView", "form"),
    ] {
        assert!(
            schemas[schema]["properties"].get(field).is_some(),
            "{schema}.{field}: {:#}",
            schemas[schema]
        );
    }

    // A schema that is not a form: 422 naming `form`, nothing created.
    let n = approvals(&w);
    for bad in [
        json!({"properties": {"where": {"type": "object"}}}),
        json!({"properties": {"a": {"type": "string"}}, "required": ["b"]}),
        json!("a form"),
    ] {
        let r = request(
            &w,
            json!({"title": "Bad form", "approvers": ["alice"], "form": bad}),
        );
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.json()["error"]["field"], "form", "{}", r.body);
    }
    assert_eq!(approvals(&w), n, "nothing was created");
}

#[test]
fn forms_trust_is_taken_where_a_request_allows_it_and_refused_elsewhere() {
    let w = World::start();
    let action = json!({"tool": "delete_rows", "arguments": {"table": "events"}});
    // `trust` needs an action naming the tool, and no form.
    for (body, field) in [
        (
            json!({"title": "t", "approvers": ["alice"], "trust": true}),
            "trust",
        ),
        (
            json!({"title": "t", "approvers": ["alice"], "trust": true, "action": action, "form": form()}),
            "trust",
        ),
    ] {
        let r = request(&w, body);
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.json()["error"]["field"], field, "{}", r.body);
    }
    // Without `trust`: refused, nothing changed.
    let plain = ask(&w, "Delete old events?", json!({"action": action}));
    let r = w.answer(&plain, &w.alice, json!({"decision": "trust"}));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("does not allow trust"), "{}", r.body);
    assert_eq!(view(&w, &plain)["status"], "pending");
    // With it: approved, and the view says trusted.
    let trusting = ask(
        &w,
        "Delete old events?",
        json!({"action": action, "trust": true}),
    );
    assert_eq!(w.session(&trusting)["gate"]["allow_trust"], true);
    let r = w.answer(&trusting, &w.alice, json!({"decision": "trust"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = decided(&w, &trusting);
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["decision"], "approved");
    assert_eq!(v["trusted"], true, "{v}");
    assert_eq!(v["values"], Value::Null);
    // Self-approval holds for trust as for any approval: ci-bot asked.
    let own = ask(
        &w,
        "Mine?",
        json!({"action": action, "trust": true, "approvers": ["alice", "ci-bot"]}),
    );
    let r = w.answer(&own, &w.ci, json!({"decision": "trust"}));
    assert_eq!(r.status, 403, "{}", r.body);
}

#[test]
fn forms_the_web_inbox_fills_in_a_form_and_trusts() {
    let w = World::start();
    let id = ask(&w, "Scale the API?", json!({"form": form()}));
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let page = alice.get(&format!("/sessions/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    for want in [
        r#"name="value.zone" required"#,
        r#"<option value="eu">Europe</option>"#,
        r#"type="number" id="field-1-2" name="value.replicas" step="1" min="1" max="9""#,
        r#"name="value.notify" value="true" checked"#,
        "Replicas <span class=\"req\">(required)</span>",
        "Approve with these values",
    ] {
        assert!(page.body.contains(want), "{want} in\n{}", page.body);
    }
    let csrf = alice.csrf();
    let gate = "approval#1";
    // A value the form refuses: the page says which and why; nothing changed.
    let refused = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", gate),
            ("decision", "approve"),
            ("value.zone", "eu"),
            ("value.replicas", "lots"),
        ],
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("`replicas` must be a whole number, not `lots`"),
        "{}",
        refused.body
    );
    assert_eq!(w.session(&id)["status"], "paused");
    // Filled in (the checkbox left unticked: false).
    let ok = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", gate),
            ("decision", "approve"),
            ("value.zone", "us"),
            ("value.replicas", "2"),
        ],
    );
    assert!(ok.status < 400, "{} {}", ok.status, ok.body);
    let v = decided(&w, &id);
    assert_eq!(
        v["values"],
        json!({"zone": "us", "replicas": 2, "notify": false}),
        "{v}"
    );
    assert_eq!(v["via"], "web");
    // The run's page shows the values given.
    let page = alice.get(&format!("/sessions/{id}"));
    assert!(page.body.contains("replicas: 2"), "{}", page.body);

    // Trust, where the request allows it: the button names the tool.
    let action = json!({"tool": "delete_rows", "arguments": {"table": "events"}});
    let id = ask(
        &w,
        "Delete old events?",
        json!({"action": action, "trust": true}),
    );
    let page = alice.get(&format!("/sessions/{id}"));
    assert!(
        page.body.contains("Trust delete_rows for this session"),
        "{}",
        page.body
    );
    let ok = alice.post(
        &format!("/sessions/{id}/answer"),
        &[("csrf", &csrf), ("gate", gate), ("decision", "trust")],
    );
    assert!(ok.status < 400, "{} {}", ok.status, ok.body);
    assert_eq!(decided(&w, &id)["trusted"], true);
    // No Trust button where the request does not allow it.
    let id = ask(&w, "Delete new events?", json!({"action": action}));
    assert!(!alice
        .get(&format!("/sessions/{id}"))
        .body
        .contains("Trust delete_rows"));
}

#[test]
fn forms_a_slack_modal_fills_in_a_form_and_a_trust_button_trusts() {
    use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
    use crate::common::service::write_workflows;
    use crate::common::{FakeLlm, Sandbox};

    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let ci = crate::common::api::make_token(&sandbox, "ci-bot", "operator");
    let dir = write_workflows(&sandbox, &llm, &[]);
    let bot = Bot::launch(&slack, BotConfig::new(&sandbox, &slack, &dir));
    let id_of = |r: HttpReply| {
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["id"].as_str().expect("id").to_string()
    };
    let ask = |body: Value| {
        id_of(call(
            &bot,
            "POST",
            "/api/v1/approvals",
            Some(&ci),
            Some(&body),
        ))
    };
    let approval = |id: &str, wait: u32| {
        let r = call(
            &bot,
            "GET",
            &format!("/api/v1/approvals/{id}?wait={wait}"),
            Some(&ci),
            None,
        );
        r.json()
    };
    let id = id_of(request_with_form(
        &bot,
        &ci,
        r##""title": "Scale the API?", "approvers": ["U04APPROVER"], "notify": ["slack:#C0DEPLOYS"]"##,
    ));
    let msg = slack.wait_for_approval();
    // The message lists what approving fills in.
    assert!(
        msg.call
            .body
            .to_string()
            .contains("Approving fills in: Zone, Replicas, Tell the channel"),
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
    };
    assert_eq!(input("zone")["element"]["type"], "static_select");
    assert_eq!(input("replicas")["element"]["type"], "number_input");
    assert_eq!(
        input("notify")["element"]["initial_option"]["value"],
        "true"
    );
    let submit = |zone: &str, replicas: &str| {
        bot.submit_modal_with(&opened, "U04APPROVER", "", |p| {
            p["view"]["state"] = json!({"values": {
                "field:zone": {"value": {"type": "static_select", "selected_option": {
                    "text": {"type": "plain_text", "text": zone}, "value": zone}}},
                "field:replicas": {"value": {"type": "number_input", "value": replicas}},
                "field:notify": {"value": {"type": "static_select", "selected_option": null}},
            }});
        })
    };
    // A value the form refuses: an error under its input, nothing changed.
    let refused = submit("eu", "12");
    assert_eq!(refused.status, 200, "{}", refused.body);
    let body = refused.json();
    assert_eq!(body["response_action"], "errors", "{body}");
    assert!(
        body["errors"]["field:replicas"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 9"),
        "{body}"
    );
    assert_eq!(approval(&id, 0)["status"], "pending");
    // The values: recorded typed, the default filled in.
    let ok = submit("us", "4");
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(!ok.body.contains("errors"), "{}", ok.body);
    let v = approval(&id, 20);
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["via"], "slack");
    assert_eq!(
        v["values"],
        json!({"zone": "us", "replicas": 4, "notify": true}),
        "{v}"
    );

    // A request allowing trust: its message has a Trust button that trusts.
    let id = ask(json!({
        "title": "Delete old events?",
        "approvers": ["U04APPROVER"],
        "notify": ["slack:#C0DEPLOYS"],
        "action": {"tool": "delete_rows", "arguments": {"table": "events"}},
        "trust": true,
    }));
    let until = Instant::now() + WAIT;
    let msg = loop {
        if let Some(m) = slack
            .approvals()
            .into_iter()
            .find(|m| m.call.body.to_string().contains("Delete old events?"))
        {
            break m;
        }
        assert!(Instant::now() < until, "no message for the trust request");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        msg.call
            .body
            .to_string()
            .contains("Trust delete_rows for this session"),
        "{:#}",
        msg.call.body
    );
    bot.click(&msg, "strands_trust", "U04APPROVER")
        .reply
        .expect_prompt_ok("the trust click", &bot);
    let v = approval(&id, 20);
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["trusted"], true, "{v}");
}

#[test]
fn forms_resume_fills_in_a_form_with_values_locally_and_through_the_server() {
    // On a local store: ask without waiting, answer with --value.
    let sandbox = crate::common::Sandbox::new();
    let asked = sandbox.strands(&[
        "ask",
        "Scale the API?",
        "--approvers",
        "alice",
        "--form",
        FORM,
        "--no-wait",
    ]);
    asked.expect_code(0);
    let id = asked.stdout.trim().to_string();
    let shown = sandbox.strands(&["sessions", "show", &id]);
    assert!(
        shown.stdout.contains(
            "Fill in:   zone (choice, required), replicas (integer, required), notify (boolean)"
        ) && shown
            .stdout
            .contains("--approve --value zone=… --value replicas=… --value notify=…"),
        "{}",
        shown.stdout
    );
    let plain = sandbox.strands_as("alice", &[], &["resume", &id, "--approve"]);
    assert_ne!(plain.code, 0, "a plain approve is refused");
    assert!(
        plain.stderr.contains("replicas (integer, required)"),
        "{}",
        plain.stderr
    );
    let bad = sandbox.strands_as(
        "alice",
        &[],
        &[
            "resume",
            &id,
            "--approve",
            "--value",
            "zone=eu",
            "--value",
            "replicas=many",
        ],
    );
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("`replicas` must be a whole number"),
        "{}",
        bad.stderr
    );
    assert_eq!(sandbox.show(&id)["status"], "paused", "nothing changed");
    let ok = sandbox.strands_as(
        "alice",
        &[],
        &[
            "resume",
            &id,
            "--approve",
            "--value",
            "zone=eu",
            "--value",
            "replicas=5",
            "--value",
            "notify=off",
        ],
    );
    ok.expect_code(0);
    let s = sandbox.show(&id);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(
        s["gates"][0]["decision"]["values"],
        json!({"zone": "eu", "replicas": 5, "notify": false}),
        "{s}"
    );
    let shown = sandbox.strands(&["sessions", "show", &id]);
    assert!(
        shown.stdout.contains("approved by alice") && shown.stdout.contains("replicas: 5"),
        "{}",
        shown.stdout
    );

    // Through the server: the same flags, the same answer.
    let w = World::start();
    let id = ask(&w, "Scale the API?", json!({"form": form()}));
    let out = w.sandbox.strands_as(
        "alice",
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", w.alice.as_str()),
        ],
        &[
            "resume",
            &id,
            "--approve",
            "--value",
            "zone=us",
            "--value",
            "replicas=7",
        ],
    );
    out.expect_code(0);
    let v = decided(&w, &id);
    assert_eq!(
        v["values"],
        json!({"zone": "us", "replicas": 7, "notify": true}),
        "{v}"
    );
    assert_eq!(v["decided_by"], "alice");
}

/// A real browser (headless Chromium, when this machine has it) fills in
/// the form: a select, a number, a checkbox untick, and Approve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_a_browser_fills_in_the_form_and_approves() {
    use crate::common::browser::{available, Browser};
    if !available("browser form") {
        return;
    }
    let w = World::start();
    let id = ask(&w, "Scale the API?", json!({"form": form()}));
    let b = Browser::start(1200, 900).await;
    b.goto(&format!("{}/", w.svc.url)).await;
    b.fill("#token", &w.alice).await;
    b.click("#sign-in").await;
    b.find("#inbox").await;
    b.goto(&format!("{}/sessions/{id}", w.svc.url)).await;
    b.click("select[name='value.zone'] option[value='us']")
        .await;
    b.fill("input[name='value.replicas']", "4").await;
    b.click("input[name='value.notify']").await;
    b.click("#approve").await;
    let v = decided(&w, &id);
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(
        v["values"],
        json!({"zone": "us", "replicas": 4, "notify": false}),
        "{v}"
    );
    b.wait_for_text("replicas: 4", Some(Duration::from_secs(2)))
        .await;
    b.close().await;
}

/// The deploy workflow, its gate answered by Ann with a form, in Teams.
mod teams {
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use super::super::teams_room::{post_activity, token, BOT, CHANNEL, TENANT};
    use crate::common::fake_teams::FakeTeams;
    use crate::common::service::{write_workflows, ServeConfig, Service};
    use crate::common::slack_story::DEPLOY;
    use crate::common::teams_driver::verbs;
    use crate::common::{FakeLlm, Sandbox};

    const WAIT: Duration = Duration::from_secs(20);
    const ANN: &str = "aad-0000-ann";
    const BOB: &str = "aad-0000-bob";

    const GATE_FORM: &str = "        form:
          properties:
            zone: {type: string, title: Zone, enum: [eu, us], enumNames: [Europe, US]}
            replicas: {type: integer, title: Replicas, minimum: 1, maximum: 9}
            notify: {type: boolean, title: Tell the channel, default: true}
          required: [zone, replicas]
";

    struct World {
        fake: FakeTeams,
        _llm: FakeLlm,
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
        let llm = FakeLlm::start();
        let sandbox = Sandbox::new();
        let deploy = DEPLOY
            .replace(
                "\nagents:",
                &format!("\nsecurity:\n  approvers: [\"teams:{ANN}\"]\nagents:"),
            )
            .replace(
                "        prompt: Approve the deploy of {{ service }}?\n",
                &format!("        prompt: Approve the deploy of {{{{ service }}}}?\n{GATE_FORM}"),
            );
        let dir = write_workflows(&sandbox, &llm, &[("deploy", &deploy)]);
        let mut cfg = ServeConfig::api(&sandbox, &dir);
        for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
            cfg = cfg.with(&k, Some(&v));
        }
        let svc = Service::launch(cfg);
        World {
            fake,
            _llm: llm,
            sandbox,
            svc,
        }
    }

    /// An activity from `aad` in the channel.
    fn from(w: &World, aad: &str, rest: Value) -> Value {
        let mut a = json!({
            "channelId": "msteams",
            "serviceUrl": w.fake.service_url(),
            "from": {"id": format!("29:{aad}"), "aadObjectId": aad, "name": "Someone"},
            "recipient": {"id": BOT, "name": "strands"},
            "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
            "channelData": {"tenant": {"id": TENANT}},
        });
        if let (Some(a), Value::Object(rest)) = (a.as_object_mut(), rest) {
            a.extend(rest);
        }
        a
    }

    fn send(w: &World, activity: &Value) -> Value {
        let r = post_activity(
            &w.svc,
            &token(&w.fake.service_url(), "signing.key.pem"),
            activity,
        );
        assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
        if r.body.trim().is_empty() {
            Value::Null
        } else {
            r.json()
        }
    }

    /// Ann's `approve` on the card, with `data` (the card's inputs).
    fn approve(w: &World, n: usize, data: Value) -> Value {
        let answer = send(
            w,
            &from(
                w,
                ANN,
                json!({"type": "invoke", "name": "adaptiveCard/action", "id": format!("i:{n}"),
                       "replyToId": "card",
                       "value": {"action": {"type": "Action.Execute", "verb": "approve", "data": data}}}),
            ),
        );
        if answer["type"] == "application/vnd.microsoft.card.adaptive" {
            w.fake.note_card(&format!("invoke {n}"), &answer);
        }
        answer
    }

    fn status(w: &World, id: &str, want: &str) -> Value {
        let until = Instant::now() + WAIT;
        loop {
            let s = w.sandbox.show(id);
            if s["status"] == want {
                return s;
            }
            assert!(
                Instant::now() < until,
                "{id} is {}\n{}",
                s["status"],
                w.svc.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn forms_a_teams_card_carries_the_inputs_and_approve_sends_them() {
        let w = world();
        let said = from(
            &w,
            BOB,
            json!({"type": "message", "id": "m:run",
                   "text": "<at>strands</at> run deploy service=api",
                   "entities": [{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}]}),
        );
        send(&w, &said);
        // The run pauses and its card is posted.
        let until = Instant::now() + WAIT;
        let card = loop {
            if let Some(h) = w
                .fake
                .hits()
                .into_iter()
                .find(|h| h.method == "POST" && h.body.get("attachments").is_some())
            {
                break h.body["attachments"][0]["content"].clone();
            }
            assert!(Instant::now() < until, "no card\n{}", w.svc.log());
            std::thread::sleep(Duration::from_millis(50));
        };
        let text = card.to_string();
        let id = text
            .split("/sessions/")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the run's page")
            .to_string();
        status(&w, &id, "paused");
        let mut v = verbs(&card);
        v.sort();
        assert_eq!(v, ["approve", "modify", "reject"], "{card:#}");
        assert!(
            text.contains("Approving fills in: Zone, Replicas, Tell the channel"),
            "{text}"
        );
        let approve_card = card["actions"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["title"] == "Approve…"))
            .expect("Approve… with the inputs");
        let inputs = approve_card["card"]["body"].as_array().expect("inputs");
        let kinds: Vec<(&str, &str)> = inputs
            .iter()
            .filter(|i| i["id"].is_string())
            .map(|i| {
                (
                    i["id"].as_str().unwrap_or_default(),
                    i["type"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("value.zone", "Input.ChoiceSet"),
                ("value.replicas", "Input.Number"),
                ("value.notify", "Input.Toggle"),
            ]
        );

        let gate = json!({"session": id, "gate": "review#1"});
        let with = |inputs: Value| {
            let mut d = gate.clone();
            if let (Some(d), Value::Object(i)) = (d.as_object_mut(), inputs) {
                d.extend(i);
            }
            d
        };
        // A value the form refuses: said why, nothing changed.
        let refused = approve(
            &w,
            1,
            with(json!({"value.zone": "eu", "value.replicas": "12", "value.notify": "true"})),
        );
        assert_eq!(
            refused["type"], "application/vnd.microsoft.activity.message",
            "{refused}"
        );
        assert!(
            refused["value"]
                .as_str()
                .unwrap_or_default()
                .contains("`replicas` must be at most 9"),
            "{refused}"
        );
        assert_eq!(w.sandbox.show(&id)["status"], "paused");
        // The inputs as Teams sends them: text, typed by the form.
        let ok = approve(
            &w,
            2,
            with(json!({"value.zone": "us", "value.replicas": "3", "value.notify": "false"})),
        );
        assert_eq!(
            ok["type"], "application/vnd.microsoft.card.adaptive",
            "{ok}"
        );
        let decided = ok["value"].to_string();
        assert!(
            decided.contains("Values: notify: false, replicas: 3, zone: us"),
            "{decided}"
        );
        let s = status(&w, &id, "completed");
        assert_eq!(
            s["gates"][0]["decision"],
            json!({"action": "fill", "values": {"zone": "us", "replicas": 3, "notify": false}}),
            "{s}"
        );
    }
}
