//! The App Home inbox against the fake Slack, with the real bot: opening
//! the home tab publishes what waits for that person (approver rules
//! apply), with the gate's timeout in the reader's time zone and working
//! buttons; Approve from the tab resumes the run; Reject… opens a modal
//! whose reason reaches the run; the tab is published again when a gate
//! opens elsewhere; a long list stays within 100 blocks and says how many
//! more wait; a member of an approver group finds the group's gates there.

use crate::common::fake_slack::{
    block_actions_payload_raw, check_blocks, Bot, FakeSlack, Signing, SlackCall, WAIT,
};
use crate::common::slack_story::{DEPLOY, OPS, REQUESTER};
use crate::common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::time::Duration;

const APPROVER: &str = "U04APPROVER";
const OUTSIDER: &str = "U09OUTSIDER";

fn spec() -> String {
    DEPLOY
        .replace(
            "\nagents:",
            "\nsecurity:\n  approvers: [U04APPROVER]\nagents:",
        )
        .replace(
            "prompt: Approve the deploy of {{ service }}?",
            "prompt: Approve the deploy of {{ service }}?\n        timeout_minutes: 60\n        fallback_action: cancel",
        )
}

fn home_opened(bot: &Bot, user: &str, n: u32) {
    let body = json!({
        "token": "x", "team_id": "T0ACME01", "api_app_id": "A0STRANDS1",
        "type": "event_callback", "event_id": format!("Ev0HOME{user}{n}"), "event_time": 1763720000,
        "event": { "type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home",
                   "event_ts": "1763720000.000100" },
    });
    let r = bot.event(&body, None, Signing::Valid);
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The latest home tab published for `user` after call number `after`.
fn published(
    slack: &FakeSlack,
    user: &str,
    after: usize,
    pred: impl Fn(&str) -> bool,
) -> SlackCall {
    slack.wait_for(
        "views.publish",
        |c| c.n > after && c.body["user_id"] == user && pred(&c.body["view"].to_string()),
        WAIT,
    )
}

fn buttons(view: &Value) -> Vec<Value> {
    view["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn start(bot: &Bot, service: &str) -> String {
    let ack = bot.command(REQUESTER, OPS, &format!("run deploy service={service}"));
    ack.expect_prompt_ok("/strands run deploy", bot);
    crate::common::fake_slack::started(&ack, "deploy")
}

#[test]
fn the_home_tab_lists_what_waits_for_you_and_its_buttons_work() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec())]);
    let id = start(&bot, "billing");
    slack.wait_for_approval_of("review#1");

    // The approver's tab: the gate, its timeout in their own time zone, who
    // started it, working buttons, a link to its web page.
    home_opened(&bot, APPROVER, 1);
    let call = published(&slack, APPROVER, 0, |v| {
        v.contains("Approve the deploy of billing?")
    });
    assert!(call.ok(), "{:#?}", call.response);
    let view = &call.body["view"];
    check_blocks(&view["blocks"], 100).expect("valid Block Kit");
    let text = view.to_string();
    assert!(text.contains("<!date^"), "{text}");
    assert!(text.contains(&format!("<@{REQUESTER}>")), "{text}");
    let bs = buttons(view);
    let approve = bs
        .iter()
        .find(|b| b["action_id"] == "strands_home_approve")
        .expect("an Approve button");
    assert_eq!(approve["value"], format!("{id}|review#1"));
    assert!(bs.iter().any(|b| b["action_id"] == "strands_home_reject"));
    assert!(bs.iter().any(|b| b["action_id"] == "strands_home_modify"));
    assert!(bs.iter().any(|b| b["url"]
        .as_str()
        .is_some_and(|u| u.ends_with(&format!("/sessions/{id}")))));

    // An outsider's tab has nothing to answer.
    home_opened(&bot, OUTSIDER, 1);
    let theirs = published(&slack, OUTSIDER, 0, |_| true);
    let text = theirs.body["view"].to_string();
    assert!(
        text.contains("Nothing waits for you") && !text.contains(&id),
        "{text}"
    );

    // Approve from the tab: the run goes on to its end; the tab says so.
    let before = slack.len();
    let click = block_actions_payload_raw(
        APPROVER,
        "strands_home_approve",
        &format!("{id}|review#1"),
        &slack.issue_trigger_id(),
    );
    let r = bot.interaction(&click, Signing::Valid);
    assert_eq!(r.status, 200, "{}", r.body);
    let after = published(&slack, APPROVER, before, |v| v.contains("approved"));
    assert!(
        after.body["view"]
            .to_string()
            .contains("Nothing waits for you"),
        "{:#}",
        after.body["view"]
    );
    let until = std::time::Instant::now() + WAIT;
    loop {
        let show = sandbox.strands(&["sessions", "show", &id, "--json"]).json();
        if show["status"] == "completed" {
            assert_eq!(show["gates"][0]["by"], APPROVER);
            break;
        }
        assert!(std::time::Instant::now() < until, "never completed: {show}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn reject_from_the_tab_asks_for_a_reason_and_a_new_gate_republishes_the_tab() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec())]);
    let id = start(&bot, "search");
    slack.wait_for_approval_of("review#1");
    home_opened(&bot, APPROVER, 1);
    published(&slack, APPROVER, 0, |v| v.contains(&id));

    // A gate opening elsewhere re-publishes the tab with it.
    let before = slack.len();
    let other = start(&bot, "ledger");
    published(&slack, APPROVER, before, |v| {
        v.contains(&other) && v.contains(&id)
    });

    // Reject… opens a modal; its reason reaches the run and the audit.
    let trigger = slack.issue_trigger_id();
    let click = block_actions_payload_raw(
        APPROVER,
        "strands_home_reject",
        &format!("{id}|review#1"),
        &trigger,
    );
    assert_eq!(bot.interaction(&click, Signing::Valid).status, 200);
    let opened = slack.wait_for("views.open", |c| c.field("trigger_id") == trigger, WAIT);
    assert!(opened.ok(), "{:#?}", opened.response);
    let r = bot.submit_modal(&opened, APPROVER, "the ledger is frozen");
    assert_eq!(r.status, 200, "{}", r.body);
    let until = std::time::Instant::now() + WAIT;
    loop {
        let show = sandbox.strands(&["sessions", "show", &id, "--json"]).json();
        if show["status"] == "rejected" {
            assert_eq!(
                show["gates"][0]["decision"]["reason"], "the ledger is frozen",
                "{show}"
            );
            break;
        }
        assert!(std::time::Instant::now() < until, "never rejected: {show}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // An outsider's Reject… opens nothing.
    let trigger = slack.issue_trigger_id();
    let click = block_actions_payload_raw(
        OUTSIDER,
        "strands_home_reject",
        &format!("{other}|review#1"),
        &trigger,
    );
    assert_eq!(bot.interaction(&click, Signing::Valid).status, 200);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!slack
        .calls()
        .iter()
        .any(|c| c.method == "views.open" && c.field("trigger_id") == trigger));
}

#[test]
fn a_long_list_stays_within_100_blocks_and_says_how_many_more() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec())]);
    for i in 0..30 {
        start(&bot, &format!("svc{i}"));
    }
    slack.wait_until(WAIT, |s| s.approvals().len() >= 30);
    home_opened(&bot, APPROVER, 1);
    let call = published(&slack, APPROVER, 0, |v| v.contains("more waiting"));
    assert!(call.ok(), "{:#?}", call.response);
    let blocks = call.body["view"]["blocks"]
        .as_array()
        .expect("blocks")
        .len();
    assert!(blocks <= 100, "{blocks} blocks");
    let text = call.body["view"].to_string();
    let shown = text.matches("\"strands_home_approve\"").count();
    // "Approve all" names every routine gate shown.
    assert!(
        text.contains(&format!("\"Approve all {shown}\"")),
        "{shown} shown: {text}"
    );
    assert!(
        text.contains(&format!("…and {} more waiting", 30 - shown)),
        "{shown} shown: {text}"
    );
}

#[test]
fn a_member_of_an_approver_group_finds_the_gate_on_their_tab() {
    const LEAD: &str = "U06LEAD";
    let llm = FakeLlm::start();
    let mut behaviour = crate::common::fake_slack::SlackBehaviour::default();
    behaviour
        .usergroups
        .insert("S0LEADS1".into(), vec![LEAD.into()]);
    let slack = FakeSlack::start_with(behaviour);
    let sandbox = Sandbox::new();
    let spec = spec().replace("approvers: [U04APPROVER]", "approvers: [S0LEADS1]");
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let id = start(&bot, "ledger");
    slack.wait_for_approval_of("review#1");

    // Only the group lists the gate: its member is shown it, with buttons.
    home_opened(&bot, LEAD, 1);
    let call = published(&slack, LEAD, 0, |v| {
        v.contains("Approve the deploy of ledger?")
    });
    let view = &call.body["view"];
    assert!(
        buttons(view)
            .iter()
            .any(|b| b["value"] == format!("{id}|review#1")),
        "{view:#}"
    );
    // The approver named elsewhere and an outsider are not.
    for who in [APPROVER, OUTSIDER] {
        home_opened(&bot, who, 1);
        let theirs = published(&slack, who, 0, |_| true);
        let text = theirs.body["view"].to_string();
        assert!(
            text.contains("Nothing waits for you") && !text.contains(&id),
            "{who}: {text}"
        );
    }
}

/// The tab's "Approve all" and "Reject all…": every routine gate shown,
/// each answered and audited on its own; one reason for all rejections.
#[test]
fn approve_all_and_reject_all_from_the_tab_answer_each_gate_on_its_own() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec())]);
    let ids: Vec<String> = ["one", "two", "three"]
        .iter()
        .map(|s| {
            let id = start(&bot, s);
            slack.wait_for_approval_of("review#1");
            id
        })
        .collect();
    let status = |id: &str| sandbox.strands(&["sessions", "show", id, "--json"]).json();
    let wait_status = |id: &str, want: &str| {
        let until = std::time::Instant::now() + WAIT;
        loop {
            let show = status(id);
            if show["status"] == want {
                return show;
            }
            assert!(std::time::Instant::now() < until, "never {want}: {show}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for id in &ids {
        wait_status(id, "paused");
    }
    home_opened(&bot, APPROVER, 1);
    let call = published(&slack, APPROVER, 0, |v| ids.iter().all(|id| v.contains(id)));
    check_blocks(&call.body["view"]["blocks"], 100).expect("valid Block Kit");
    let bs = buttons(&call.body["view"]);
    let all = bs
        .iter()
        .find(|b| b["action_id"] == "strands_home_approve_all")
        .expect("an Approve all button");
    assert_eq!(all["text"]["text"], "Approve all 3");
    assert!(all["confirm"].is_object(), "{all}");
    let value = all["value"].as_str().unwrap_or_default().to_string();
    for id in &ids {
        assert!(value.contains(&format!("{id}|review#1")), "{value}");
    }

    // Reject all… first, for two of them: one modal, one reason.
    let two = format!("{}|review#1,{}|review#1", ids[0], ids[1]);
    let trigger = slack.issue_trigger_id();
    let click = block_actions_payload_raw(APPROVER, "strands_home_reject_all", &two, &trigger);
    assert_eq!(bot.interaction(&click, Signing::Valid).status, 200);
    let opened = slack.wait_for("views.open", |c| c.field("trigger_id") == trigger, WAIT);
    let before = slack.len();
    let r = bot.submit_modal(&opened, APPROVER, "change freeze");
    assert_eq!(r.status, 200, "{}", r.body);
    for id in &ids[..2] {
        let s = wait_status(id, "rejected");
        assert_eq!(s["gates"][0]["decision"]["reason"], "change freeze", "{s}");
    }
    published(&slack, APPROVER, before, |v| v.contains("answered 2 of 2"));

    // Approve all with the old list: the two decided are refused (each
    // says so), the third is approved and its run completes.
    let before = slack.len();
    let click = block_actions_payload_raw(
        APPROVER,
        "strands_home_approve_all",
        &value,
        &slack.issue_trigger_id(),
    );
    assert_eq!(bot.interaction(&click, Signing::Valid).status, 200);
    let s = wait_status(&ids[2], "completed");
    assert_eq!(s["gates"][0]["by"], APPROVER, "{s}");
    let tab = published(&slack, APPROVER, before, |v| v.contains("answered 1 of 3"));
    assert!(
        tab.body["view"].to_string().contains("already rejected"),
        "{:#}",
        tab.body["view"]
    );
    // Three answers and two refusals, each its own audit entry.
    let export = sandbox.strands(&["audit", "export"]);
    let kinds: Vec<Value> = export
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["via"] == "slack")
        .map(|e| e["event"]["kind"].clone())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "answer").count(),
        3,
        "{}",
        export.stdout
    );
}
