//! The Teams room against Microsoft's own Teams emulator: the real
//! `strands serve` in the local Playground mode (`TEAMS_LOCAL_PLAYGROUND=1`)
//! and the real Microsoft 365 Agents Playground (npm, pinned), driven over
//! its HTTP API as its test tenant's users, reading what the bot posted
//! from its conversation stream ([`crate::common::playground`]). Plus the
//! mode's refusals, which need no Playground.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::playground::{is_card, Playground, User};
use crate::common::service::{run_to_exit, write_workflows, ServeConfig, Service};
use crate::common::slack_story::DEPLOY;
use crate::common::teams_driver::{action_data, verbs};
use crate::common::{FakeLlm, Sandbox};

const WAIT: Duration = Duration::from_secs(20);
/// Alex Wilber, the Playground's current user: `user-id-0`.
const ALEX: &str = "00000000-0000-0000-0000-0000000000020";

struct World {
    pg: Playground,
    llm: FakeLlm,
    sandbox: Sandbox,
    svc: Service,
}

fn local(sandbox: &Sandbox, dir: &std::path::Path) -> ServeConfig {
    ServeConfig::api(sandbox, dir)
        .with("TEAMS_LOCAL_PLAYGROUND", Some("1"))
        .with("TEAMS_APP_ID", None)
        .with("TEAMS_APP_PASSWORD", None)
        .with("TEAMS_RETRY_BASE_MS", Some("10"))
}

/// `strands serve` in the local mode, deploy approved by Alex alone, and
/// the Playground pointed at it; `None` when the Playground is missing.
fn world() -> Option<World> {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let deploy = DEPLOY.replace(
        "\nagents:",
        // The personal chat holds Alex alone: he starts and approves.
        &format!(
            "\nsecurity:\n  approvers: [\"teams:{ALEX}\"]\n  allow_self_approval: true\nagents:"
        ),
    );
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &deploy)]);
    let svc = Service::launch(local(&sandbox, &dir));
    let pg = Playground::start(&format!("{}/api/messages", svc.url))?;
    Some(World {
        pg,
        llm,
        sandbox,
        svc,
    })
}

impl World {
    fn status(&self, id: &str, want: &str) -> Value {
        let until = Instant::now() + WAIT;
        loop {
            let s = self.sandbox.show(id);
            if s["status"] == want {
                return s;
            }
            assert!(
                Instant::now() < until,
                "{id} is {}, wanted {want}\n{}\n--- playground\n{}",
                s["status"],
                self.svc.log(),
                self.pg.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The only run's id, once there is one.
    fn run_id(&self, nth: usize) -> String {
        let until = Instant::now() + WAIT;
        loop {
            let out = self.sandbox.strands(&["sessions", "list", "--json"]);
            let v: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
            let mut ids: Vec<(String, String)> = v
                .as_array()
                .or_else(|| v["sessions"].as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| {
                            Some((
                                s["created_at"].as_str().unwrap_or_default().to_string(),
                                s["id"].as_str()?.to_string(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            ids.sort();
            if ids.len() >= nth {
                return ids[nth - 1].1.clone();
            }
            assert!(
                Instant::now() < until,
                "no run {nth}: {}\n{}",
                out.stdout,
                self.svc.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn card_content(message: &Value) -> Value {
    message["attachments"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|x| x["contentType"] == "application/vnd.microsoft.card.adaptive")
        })
        .map(|x| x["content"].clone())
        .unwrap_or_else(|| panic!("no card in {message:#}"))
}

/// Someone who decided, as the card names them: by the name Teams gave.
fn names(text: &str, who: &User) -> bool {
    text.contains(&format!("by {}", who.name))
}

#[test]
fn playground_personal_chat_run_card_and_approve() {
    let Some(w) = world() else { return };
    let alex = w.pg.user(0);
    assert_eq!(
        alex.aad, ALEX,
        "the Playground's tenant changed: re-check the pinned facts"
    );
    let chat = w.pg.personal_chat();

    w.pg.say(&chat, &alex, "run deploy service=api", false);
    let id = w.run_id(1);
    w.status(&id, "paused");
    let posted = w.pg.card(1);
    let message = &posted["message"];
    // Sent as a card alone: the Playground gives a split message no id.
    let card_id = message["messageId"]
        .as_str()
        .unwrap_or_else(|| panic!("the card has an id: {posted:#}"))
        .to_string();
    let card = card_content(message);
    assert_eq!(card["version"], "1.5", "{card}");
    let mut v = verbs(&card);
    v.sort();
    assert_eq!(v, ["approve", "modify", "reject"], "{card}");
    assert!(
        card.to_string().contains("Approve the deploy of api?"),
        "{card}"
    );
    let data = action_data(&card, "approve", None).expect("approve on the card");
    let before = w.llm.count();

    // Alex approves: the answer is the decided card, which the Playground
    // stores as the card; the run resumes once.
    let r = w.pg.execute(&chat, &card_id, &alex, "approve", &data);
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
    let ok = r.json();
    assert_eq!(
        ok["type"], "application/vnd.microsoft.card.adaptive",
        "{ok}"
    );
    let decided = ok["value"].to_string();
    assert!(decided.contains("Approved by"), "{decided}");
    assert!(names(&decided, &alex), "{decided}");
    assert!(verbs(&ok["value"]).is_empty(), "no buttons left: {decided}");
    w.status(&id, "completed");

    // Teams (and the Playground) may send the click again: decided once.
    let again = w.pg.execute(&chat, &card_id, &alex, "approve", &data);
    assert_eq!(again.json(), ok);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.llm.count(), before + 1, "the deployer ran once");
    let cards =
        w.pg.events()
            .iter()
            .filter(|e| e["action"] == "createMessage" && is_card(&e["message"]))
            .count();
    assert_eq!(cards, 1, "one card for one gate");
    w.pg.assert_cards_valid();
}

#[test]
fn playground_channel_mention_refusal_reject_with_reason_and_decided_elsewhere() {
    let Some(w) = world() else { return };
    let (alex, megan) = (w.pg.user(0), w.pg.user(1));
    let channel = w.pg.channel();

    // @mention in the channel: the run starts, its card in the post's thread.
    let post = w.pg.say(&channel, &alex, "run deploy service=db", true);
    let thread = format!("{channel};messageid={post}");
    let id = w.run_id(1);
    w.status(&id, "paused");
    let posted = w.pg.card(1);
    assert_eq!(
        posted["actionConversationId"], thread,
        "the card is in the thread: {posted:#}"
    );
    let card_id = posted["message"]["messageId"]
        .as_str()
        .expect("card id")
        .to_string();
    let approve = action_data(&card_content(&posted["message"]), "approve", None)
        .expect("approve on the card");
    // Megan is not an approver: refused on the card, nothing changes.
    let r = w.pg.execute(&thread, &card_id, &megan, "approve", &approve);
    assert_eq!(r.status, 200, "{} {}", r.status, r.body);
    let refused = r.json();
    assert_eq!(
        refused["type"], "application/vnd.microsoft.activity.message",
        "{refused}"
    );
    assert_eq!(w.sandbox.show(&id)["status"], "paused");
    let audit = w.sandbox.strands(&["audit", "export"]);
    assert!(
        audit
            .stdout
            .lines()
            .any(|l| l.contains("refusal") && l.contains(&megan.aad)),
        "{}",
        audit.stdout
    );

    let mut data =
        action_data(&card_content(&posted["message"]), "reject", None).expect("reject on the card");
    data["reason"] = json!("not during the freeze");
    let r = w.pg.execute(&thread, &card_id, &alex, "reject", &data);
    let decided = r.json()["value"].to_string();
    assert!(decided.contains("Rejected by"), "{}", r.body);
    assert!(decided.contains("not during the freeze"), "{decided}");
    assert!(names(&decided, &alex), "{decided}");
    let shown = w.status(&id, "rejected").to_string();
    assert!(shown.contains("not during the freeze"), "{shown}");

    // A second run, decided from the CLI: the Playground's card is updated.
    let post = w.pg.say(&channel, &alex, "run deploy service=web", true);
    let id = w.run_id(2);
    w.status(&id, "paused");
    let posted = w.pg.card(2);
    assert_eq!(
        posted["actionConversationId"],
        format!("{channel};messageid={post}")
    );
    let card_id = posted["message"]["messageId"]
        .as_str()
        .expect("card id")
        .to_string();
    let out = w
        .sandbox
        .strands(&["resume", &id, "--approve", "--as", &format!("teams:{ALEX}")]);
    assert!(
        out.code == 0 || out.code == 19,
        "resume: {} {}",
        out.stdout,
        out.stderr
    );
    let update = w.pg.wait_for("the card's update", |e| {
        e["action"] == "updateMessage" && e["message"]["messageId"] == card_id.as_str()
    });
    let text = update["message"].to_string();
    assert!(text.contains("Approved by"), "{text}");
    assert!(verbs(&update["message"]).is_empty(), "{text}");
    w.pg.assert_cards_valid();
}

#[test]
fn the_local_mode_refuses_what_it_cannot_trust() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows");
    let cfg = local(&sandbox, &dir);

    // Not on a loopback address.
    let out = run_to_exit(
        &cfg.clone().with("STRANDS_BIND", Some("0.0.0.0:0")),
        Duration::from_secs(20),
    );
    assert_eq!(out.code, Some(2), "{}", out.output);
    assert!(
        out.output.contains("TEAMS_LOCAL_PLAYGROUND"),
        "{}",
        out.output
    );
    assert!(out.output.contains("loopback"), "{}", out.output);

    // Not with a real bot's credentials.
    let out = run_to_exit(
        &cfg.clone()
            .with("TEAMS_APP_ID", Some("app"))
            .with("TEAMS_APP_PASSWORD", Some("secret-value-1")),
        Duration::from_secs(20),
    );
    assert_eq!(out.code, Some(2), "{}", out.output);
    assert!(out.output.contains("unauthenticated"), "{}", out.output);
    assert!(!out.output.contains("secret-value-1"), "{}", out.output);

    // Running: a serviceUrl off this machine is refused and audited.
    let svc = Service::launch(cfg);
    assert!(svc.log().contains("unauthenticated"), "{}", svc.log());
    for service_url in [
        "https://smba.trafficmanager.net/amer/",
        "http://10.1.2.3:3978/_connector",
    ] {
        let activity = json!({
            "type": "message", "id": "m1", "channelId": "msteams", "serviceUrl": service_url,
            "from": {"id": "user-id-0", "aadObjectId": ALEX},
            "recipient": {"id": "bot"}, "conversation": {"id": "c1", "conversationType": "personal"},
            "text": "run deploy",
        });
        let r = svc.request(
            "POST",
            "/api/messages",
            &[("Content-Type".to_string(), "application/json".to_string())],
            activity.to_string().as_bytes(),
        );
        assert_eq!(r.status, 401, "{service_url}: {} {}", r.status, r.body);
        assert!(r.body.contains("not_local"), "{}", r.body);
    }
    let audit = sandbox.strands(&["audit", "export"]);
    assert_eq!(
        audit
            .stdout
            .lines()
            .filter(|l| l.contains("not_local"))
            .count(),
        2,
        "{}",
        audit.stdout
    );
    let listed = sandbox.strands(&["teams", "conversations", "--json"]);
    assert!(
        !listed.stdout.contains("c1"),
        "nothing recorded: {}",
        listed.stdout
    );
}

/// The Teams tool-call tests' spec (one agent, an HTTP API whose POSTs
/// wait for a human), approved by Alex — alone in his personal chat, so he
/// may approve what he started.
fn ops_spec(target: &str) -> String {
    super::teams_tools::OPS_SPEC
        .replace("teams:aad-0000-ann", &format!("teams:{ALEX}"))
        .replace("security:\n", "security:\n  allow_self_approval: true\n")
        .replace("$TRUST", "false")
        .replace("$TARGET", target)
}

#[test]
fn playground_tool_call_card_approve_one_reject_one_with_a_reason() {
    use crate::common::fake_slack::FakeTarget;
    use crate::common::{assistant_turns, tool_call, Behaviour, Say};
    let llm = FakeLlm::start_with(Behaviour::scripted(|_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![
                tool_call(
                    "call_web",
                    "deploy_api",
                    json!({"method": "POST", "path": "/rollout/web"}),
                ),
                tool_call(
                    "call_api",
                    "deploy_api",
                    json!({"method": "POST", "path": "/rollout/api"}),
                ),
            ])
        } else {
            Say::Text("FINISHED".into())
        }
    }));
    let target = FakeTarget::start();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("ops", &ops_spec(&target.url))]);
    let svc = Service::launch(local(&sandbox, &dir));
    let Some(pg) = Playground::start(&format!("{}/api/messages", svc.url)) else {
        return;
    };
    let w = World {
        pg,
        llm,
        sandbox,
        svc,
    };
    let alex = w.pg.user(0);
    let chat = w.pg.personal_chat();
    w.pg.say(&chat, &alex, "run ops", false);
    let id = w.run_id(1);
    w.status(&id, "paused");
    let posted = w.pg.card(1);
    let card_id = posted["message"]["messageId"]
        .as_str()
        .expect("card id")
        .to_string();
    let card = card_content(&posted["message"]);
    let approve = action_data(&card, "approve", Some("call_web")).expect("approve for call_web");
    let mut reject = action_data(&card, "reject", Some("call_api")).expect("reject for call_api");
    reject["reason"] = json!("not on a Friday");

    let r = w.pg.execute(&chat, &card_id, &alex, "approve", &approve);
    assert_eq!(
        r.json()["type"],
        "application/vnd.microsoft.card.adaptive",
        "{}",
        r.body
    );
    let redrawn = r.json()["value"].clone();
    assert!(
        action_data(&redrawn, "approve", Some("call_web")).is_none(),
        "web decided: {redrawn:#}"
    );
    assert!(
        action_data(&redrawn, "reject", Some("call_api")).is_some(),
        "api still waits: {redrawn:#}"
    );
    let r = w.pg.execute(&chat, &card_id, &alex, "reject", &reject);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        verbs(&r.json()["value"]).is_empty(),
        "all decided: {}",
        r.body
    );

    w.status(&id, "completed");
    assert_eq!(
        target.count("POST", "/rollout/web"),
        1,
        "approved: run once"
    );
    assert_eq!(
        target.count("POST", "/rollout/api"),
        0,
        "rejected: never run"
    );
    // The reason reached the model with the rejected call's result.
    let last = w.llm.last().body.to_string();
    assert!(last.contains("not on a Friday"), "{last}");
    w.pg.assert_cards_valid();
}

#[test]
fn playground_inbox_lists_what_waits_and_approves_the_selection() {
    let Some(w) = world() else { return };
    let alex = w.pg.user(0);
    let chat = w.pg.personal_chat();
    w.pg.say(&chat, &alex, "run deploy service=api", false);
    let id = w.run_id(1);
    w.status(&id, "paused");
    w.pg.card(1);

    // `inbox` in his personal chat: the inbox card, the gate selectable.
    w.pg.say(&chat, &alex, "inbox", false);
    let posted = w.pg.card(2);
    let card_id = posted["message"]["messageId"]
        .as_str()
        .unwrap_or_else(|| panic!("the inbox card has an id: {posted:#}"))
        .to_string();
    let card = card_content(&posted["message"]);
    let mut v = verbs(&card);
    v.sort();
    assert_eq!(v, ["bulk_approve", "bulk_reject"], "{card:#}");
    let pick = format!("pick:{id}:review#1");
    assert!(card.to_string().contains(&pick), "{card:#}");
    let before = w.llm.count();

    let r = w.pg.execute(
        &chat,
        &card_id,
        &alex,
        "bulk_approve",
        &json!({ pick: "true" }),
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, w.svc.log());
    let shown = r.json();
    assert_eq!(
        shown["type"], "application/vnd.microsoft.card.adaptive",
        "{shown}"
    );
    let text = shown["value"].to_string();
    assert!(text.contains("Of 1 selected: 1 recorded"), "{text}");
    assert!(text.contains("Nothing waits for you."), "{text}");
    w.status(&id, "completed");
    assert_eq!(w.llm.count(), before + 1, "the deployer ran once");
    w.pg.assert_cards_valid();
}
