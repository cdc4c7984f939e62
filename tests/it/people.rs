//! The people directory: one person, many channels. `strands people
//! import` is all or nothing (a bad row is named `FILE:LINE` and nothing
//! changes; the same file twice changes nothing); and `strands serve`
//! judges people, not channel ids — started in Slack and approved through
//! the API by the same person is refused, and a quorum of two counts one
//! person once whichever channel they answer from.
//!
//! Real binary, fake Slack, fake model; the API answers with tokens made by
//! the real CLI (through the running server, as the directory is).

use serde_json::json;

use crate::common::api::{call, expect_error, make_token};
use crate::common::fake_slack::{Bot, FakeSlack};
use crate::common::slack_story::{
    assert_llm_stays_at, deploy_paused, wait_llm, APPROVER, DEPLOY, REQUESTER,
};
use crate::common::{FakeLlm, Sandbox};

const GOOD: &str = "name,slack,email,groups\nalice,U04ALICE,alice@corp.example,finance;ops\nbob,U04BOB,bob@corp.example,\n";

#[test]
fn people_import_is_all_or_nothing_and_idempotent() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path();
    std::fs::write(dir.join("people.csv"), GOOD).expect("write");
    let out = sandbox.strands(&["people", "import", "people.csv"]);
    out.expect_code(0);
    assert!(out.stderr.contains("2 added"), "{}", out.stderr);
    let before = sandbox.strands(&["people", "list", "--json"]);
    before.expect_code(0);
    assert_eq!(before.json()["count"], 2, "{}", before.stdout);

    // Row 3 has a bad address: refused with its line; nothing changes,
    // not even alice's new group on row 2.
    std::fs::write(
        dir.join("bad.csv"),
        "name,slack,email,groups\nalice,U04ALICE,alice@corp.example,finance;ops;audit\ncarol,U04CAROL,carol at corp,\n",
    )
    .expect("write");
    let out = sandbox.strands(&["people", "import", "bad.csv"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("bad.csv:3:") && out.stderr.contains("not an email address"),
        "{}",
        out.stderr
    );
    let after = sandbox.strands(&["people", "list", "--json"]);
    assert_eq!(after.stdout, before.stdout, "nothing was half-imported");

    // A clash with someone already there names both, and the row.
    std::fs::write(
        dir.join("clash.yaml"),
        "- name: dave\n  email: dave@corp.example\n- name: erin\n  slack: U04BOB\n",
    )
    .expect("write");
    let out = sandbox.strands(&["people", "import", "clash.yaml"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("clash.yaml:3:")
            && out.stderr.contains("bob's Slack id")
            && out.stderr.contains("erin's Slack id"),
        "{}",
        out.stderr
    );
    assert_eq!(
        sandbox.strands(&["people", "list", "--json"]).stdout,
        before.stdout
    );

    // The same file again changes nothing.
    let out = sandbox.strands(&["people", "import", "people.csv", "--json"]);
    out.expect_code(0);
    assert_eq!(
        out.json(),
        json!({"added": 0, "changed": 0, "unchanged": 2})
    );
    assert_eq!(
        sandbox.strands(&["people", "list", "--json"]).stdout,
        before.stdout
    );

    // add, edit, show, remove; a bad address is refused when added.
    let out = sandbox.strands(&["people", "add", "zoe", "--email", "zoe@@corp"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("not an email address"),
        "{}",
        out.stderr
    );
    sandbox
        .strands(&[
            "people", "add", "zoe", "--slack", "U04ZOE", "--group", "finance",
        ])
        .expect_code(0);
    sandbox
        .strands(&[
            "people",
            "edit",
            "zoe",
            "--email",
            "zoe@corp.example",
            "--no-groups",
        ])
        .expect_code(0);
    let zoe = sandbox.strands(&["people", "show", "zoe", "--json"]);
    zoe.expect_code(0);
    assert_eq!(
        zoe.json(),
        json!({"name": "zoe", "slack": "U04ZOE", "email": "zoe@corp.example"})
    );
    sandbox.strands(&["people", "remove", "zoe"]).expect_code(0);
    sandbox.strands(&["people", "show", "zoe"]).expect_code(17);
    let audit = sandbox.strands(&["audit", "export"]);
    assert!(
        audit.stdout.contains("imported 2 people from people.csv")
            && audit.stdout.contains("removed person `zoe`"),
        "directory changes are audited: {}",
        audit.stdout
    );
}

#[test]
fn one_person_on_slack_and_the_api_is_one_person_for_self_approval_and_quorum() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        "        prompt: Approve the deploy of {{ service }}?\n        approvers: [rita, ana, U05SECOND]\n        approvals_required: 2\n",
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    // Through the running server, as an admin would.
    sandbox
        .strands(&[
            "people", "add", "rita", "--slack", REQUESTER, "--token", "rita-web",
        ])
        .expect_code(0);
    sandbox
        .strands(&[
            "people", "add", "ana", "--slack", APPROVER, "--token", "ana-web",
        ])
        .expect_code(0);
    let list = sandbox.strands(&["people", "list", "--json"]);
    assert_eq!(list.json()["count"], 2, "{}", list.stdout);
    let rita = make_token(&sandbox, "rita-web", "approver");
    let ana = make_token(&sandbox, "ana-web", "approver");

    // Rita started the run in Slack; approving it through the API is still
    // approving her own run.
    let (id, msg) = deploy_paused(&bot, &slack);
    let answers = format!("/api/v1/sessions/{id}/answers");
    let r = call(
        &bot,
        "POST",
        &answers,
        Some(&rita),
        Some(&json!({ "decision": "approve" })),
    );
    let why = expect_error(&r, 403, "forbidden");
    assert!(why.contains("you started this run"), "{why}");

    // Ana approves in Slack, then again through the API: one person, one vote.
    bot.click(&msg, "strands_approve", APPROVER)
        .reply
        .expect_prompt_ok("ana's approval in Slack", &bot);
    slack.wait_for_update(&msg, |c| c.text().contains("1 of 2 approvals"));
    let r = call(
        &bot,
        "POST",
        &answers,
        Some(&ana),
        Some(&json!({ "decision": "approve" })),
    );
    let why = expect_error(&r, 403, "forbidden");
    assert!(why.contains("already approved"), "{why}");
    assert_llm_stays_at(&llm, 1, "one person twice is still one approval of two");

    // A second person releases the gate.
    bot.click(&msg, "strands_approve", "U05SECOND")
        .reply
        .expect_prompt_ok("second approval", &bot);
    wait_llm(&llm, &slack, 2);
    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let audit = sandbox.strands(&["audit", "export"]);
    let refusals: Vec<&str> = audit
        .stdout
        .lines()
        .filter(|l| l.contains("\"kind\":\"refusal\""))
        .collect();
    assert!(
        refusals
            .iter()
            .any(|l| l.contains("\"who\":\"rita-web\"") && l.contains("\"person\":\"rita\"")),
        "the refusal names the channel identity and the person: {refusals:#?}"
    );
    assert!(
        audit
            .stdout
            .lines()
            .any(|l| l.contains("\"kind\":\"answer\"")
                && l.contains(&format!("\"who\":\"{APPROVER}\""))
                && l.contains("\"person\":\"ana\"")),
        "{}",
        audit.stdout
    );
}
