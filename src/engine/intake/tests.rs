//! The intake in process: a real store in a temp dir, a scripted model, no
//! sockets. One table of answers and what each must come to — accepted
//! (recorded, counted, queued) or refused with the reason every channel
//! renders — and, for every refusal, an audit entry and nothing else.

use super::*;
use crate::channel::Detached;
use crate::engine::testkit::{answer, World, CHAIN};
use crate::model::Decision;

const PARALLEL: &str = "version: 0
name: p
runtime:
  provider: openai
agents:
  a:
    prompt: hi
pattern:
  type: parallel
  config:
    branches:
      - id: left
        steps:
          - agent: a
          - type: manual_gate
            id: left_review
            prompt: left?
          - agent: a
      - id: right
        steps:
          - agent: a
          - type: manual_gate
            id: right_review
            prompt: right?
";

async fn submit(
    w: &World,
    id: &str,
    gate: Option<&str>,
    decision: Decision,
    who: &str,
    shared: bool,
) -> std::result::Result<Accepted, Refusal> {
    let asker = Asker {
        who,
        admins: &[],
        default_approvers: &[],
        shared,
        member_of: &|g| g == "S0TEAM" && who == "teammate",
        idp_groups: &[],
        now: w.clock.now(),
    };
    w.engine()
        .submit(id, gate, answer(decision, who), &asker)
        .await
        .expect("no store error")
}

async fn refusals(w: &World) -> usize {
    w.store
        .audit_entries()
        .await
        .expect("audit")
        .iter()
        .filter(|(_, e)| String::from_utf8_lossy(e).contains("\"kind\":\"refusal\""))
        .count()
}

fn reject() -> Decision {
    Decision::Reject { reason: None }
}

fn fill(values: serde_json::Value) -> Decision {
    Decision::Fill {
        values: serde_json::from_value(values).expect("an object"),
    }
}

/// A form asking for a whole `amount` (1–100, required) and a `note`
/// (default `none`), as a gate's spec lines.
const FORM: &str = "        form:
          properties:
            amount: {type: integer, minimum: 1, maximum: 100}
            note: {type: string, default: none}
          required: [amount]";

/// What a submission must come to.
#[derive(Debug)]
enum Want {
    Recorded,
    /// Refused naming these fields, in this order.
    BadValues(&'static [&'static str]),
    Counted,
    NotAllowed(&'static str),
    BadAnswer(&'static str),
    AlreadyBy(&'static str),
    NotFound,
}

fn check(case: &str, got: &std::result::Result<Accepted, Refusal>, want: &Want) {
    let ok = match (got, want) {
        (Ok(Accepted::Recorded(_)), Want::Recorded) => true,
        (Ok(Accepted::Counted(_)), Want::Counted) => true,
        (Err(Refusal::NotAllowed(why)), Want::NotAllowed(w)) => why.contains(w),
        (Err(r @ Refusal::NotApprover(_)), Want::NotAllowed(w)) => r.to_string().contains(w),
        (Err(Refusal::BadAnswer(why)), Want::BadAnswer(w)) => why.contains(w),
        (Err(Refusal::BadValues(errors)), Want::BadValues(fields)) => {
            errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>() == *fields
        }
        (Err(Refusal::AlreadyAnswered(a)), Want::AlreadyBy(w)) => a.by == *w,
        (Err(Refusal::NotFound), Want::NotFound) => true,
        _ => false,
    };
    assert!(ok, "{case}: wanted {want:?}, got {got:?}");
}

/// Each row: the gate's extra spec lines, then answers in order (who,
/// decision, through the bot or not) and what each must come to.
#[tokio::test]
async fn every_answer_is_authorized_checked_and_recorded_once_or_refused_and_audited() {
    type Row = (
        &'static str,
        &'static str,
        Vec<(&'static str, Decision, bool, Want)>,
    );
    let rows: Vec<Row> = vec![
        (
            "anyone may approve once",
            "",
            vec![
                ("bob", Decision::Approve, false, Want::Recorded),
                ("carol", Decision::Approve, false, Want::AlreadyBy("bob")),
            ],
        ),
        (
            "approvers only",
            "        approvers: [alice, S0TEAM]",
            vec![
                (
                    "mallory",
                    Decision::Approve,
                    false,
                    Want::NotAllowed("not an approver"),
                ),
                (
                    "mallory",
                    reject(),
                    false,
                    Want::NotAllowed("not an approver"),
                ),
                ("teammate", Decision::Approve, false, Want::Recorded),
            ],
        ),
        (
            "no self-approval in the bot",
            "",
            vec![
                (
                    "starter",
                    Decision::Approve,
                    true,
                    Want::NotAllowed("you started this run"),
                ),
                ("starter", reject(), true, Want::Recorded),
            ],
        ),
        (
            "self-approval allowed from the CLI",
            "",
            vec![("starter", Decision::Approve, false, Want::Recorded)],
        ),
        (
            "a quorum counts each person once",
            "        approvers: [a1, a2, a3]\n        approvals_required: 2",
            vec![
                ("a1", Decision::Approve, false, Want::Counted),
                (
                    "a1",
                    Decision::Approve,
                    false,
                    Want::NotAllowed("already approved"),
                ),
                ("a2", Decision::Approve, false, Want::Recorded),
            ],
        ),
        (
            "answers that do not fit",
            "        require_reason: true",
            vec![
                (
                    "bob",
                    Decision::Respond {
                        text: "maybe".into(),
                    },
                    false,
                    Want::BadAnswer("approve or reject"),
                ),
                ("bob", reject(), false, Want::BadAnswer("needs a reason")),
                (
                    "bob",
                    Decision::Reject {
                        reason: Some("x".repeat(3001)),
                    },
                    false,
                    Want::BadAnswer("at most 3000"),
                ),
                (
                    "bob",
                    Decision::Trust { limit: None },
                    false,
                    Want::BadAnswer("does not allow trust"),
                ),
                (
                    "bob",
                    fill(serde_json::json!({"amount": 1})),
                    false,
                    Want::BadAnswer("asks for no values"),
                ),
                (
                    "bob",
                    Decision::Reject {
                        reason: Some("wrong".into()),
                    },
                    false,
                    Want::Recorded,
                ),
            ],
        ),
        (
            "a form is approved by filling it in, values checked",
            FORM,
            vec![
                (
                    "bob",
                    Decision::Approve,
                    false,
                    Want::BadAnswer("amount (integer, required)"),
                ),
                (
                    "bob",
                    fill(serde_json::json!({"amount": "0", "extra": 1})),
                    false,
                    Want::BadValues(&["amount", "extra"]),
                ),
                (
                    "bob",
                    fill(serde_json::json!({"note": "hi"})),
                    false,
                    Want::BadValues(&["amount"]),
                ),
                ("bob", fill(serde_json::json!({"amount": "7"})), false, Want::Recorded),
            ],
        ),
        (
            "a fill is an approval: no self-approval, quorum counted",
            "        approvals_required: 2\n        approvers: [a1, a2, starter]\n        allow_self_approval: false\n$FORM",
            vec![
                (
                    "starter",
                    fill(serde_json::json!({"amount": 1})),
                    false,
                    Want::NotAllowed("you started this run"),
                ),
                ("a1", fill(serde_json::json!({"amount": 1})), false, Want::Counted),
                ("a2", fill(serde_json::json!({"amount": 2})), false, Want::Recorded),
            ],
        ),
        (
            "trust approves a gate that allows it",
            "        allow_trust: true",
            vec![
                (
                    "starter",
                    Decision::Trust { limit: None },
                    true,
                    Want::NotAllowed("you started this run"),
                ),
                ("bob", Decision::Trust { limit: None }, false, Want::Recorded),
            ],
        ),
    ];
    for (case, gate, answers) in rows {
        let gate = gate.replace("$FORM", FORM);
        let gate = gate.as_str();
        let w = World::new();
        let s = w.paused(&CHAIN.replace("$GATE", gate)).await;
        let before = refusals(&w).await;
        let mut refused = 0;
        for (who, decision, shared, want) in answers {
            let stored = w.store.get(&s.id).await.expect("session");
            let got = submit(&w, &s.id, None, decision, who, shared).await;
            check(case, &got, &want);
            if got.is_err() {
                refused += 1;
                let after = w.store.get(&s.id).await.expect("session");
                assert_eq!(after, stored, "{case}: a refusal changes nothing");
            }
        }
        assert_eq!(
            refusals(&w).await - before,
            refused,
            "{case}: every refusal is audited"
        );
    }
    let w = World::new();
    check(
        "unknown session",
        &submit(&w, "nope", None, Decision::Approve, "bob", false).await,
        &Want::NotFound,
    );
}

#[tokio::test]
async fn with_several_gates_open_an_answer_names_one_and_a_busy_run_queues_it() {
    let w = World::new();
    let s = w.paused(PARALLEL).await;
    assert_eq!(s.gates.len(), 2);
    // Which one? The intake does not guess.
    check(
        "no gate named",
        &submit(&w, &s.id, None, Decision::Approve, "bob", false).await,
        &Want::BadAnswer("2 gates open; pick one with --gate"),
    );
    // By id: recorded; the run is now busy carrying it out.
    let left = submit(
        &w,
        &s.id,
        Some("left_review"),
        Decision::Approve,
        "bob",
        false,
    )
    .await;
    check("left", &left, &Want::Recorded);
    // The other gate, meanwhile: queued, recorded when the run stops moving.
    match submit(
        &w,
        &s.id,
        Some("right_review"),
        Decision::Approve,
        "carol",
        false,
    )
    .await
    {
        Ok(Accepted::Queued(_)) => {}
        other => panic!("wanted queued, got {other:?}"),
    }
    let done = w
        .engine()
        .resume(&s.id, &mut Detached)
        .await
        .expect("resume");
    assert_eq!(done.status, Status::Completed, "{done:?}");
    let answered: Vec<String> = done
        .history
        .iter()
        .filter_map(|e| match &e.what {
            crate::model::GateEventKind::Answered { answer, .. } => {
                Some(format!("{}={}", e.gate, answer.by))
            }
            _ => None,
        })
        .collect();
    assert_eq!(answered, vec!["left_review=bob", "right_review=carol"]);
    // Three agent steps (left before and after its gate, right), each
    // asked once.
    assert_eq!(w.model.count(), 3, "{:#?}", w.model.requests());
}

#[tokio::test(start_paused = true)]
async fn an_answer_after_the_timeout_is_refused_and_the_fallback_applies() {
    let w = World::new();
    let s = w
        .paused(&CHAIN.replace(
            "$GATE",
            "        timeout_minutes: 5\n        fallback_action: approve",
        ))
        .await;
    tokio::time::advance(std::time::Duration::from_secs(301)).await;
    match submit(&w, &s.id, None, reject(), "bob", false).await {
        Err(Refusal::TimedOut { gate, .. }) => assert_eq!(gate, "review"),
        other => panic!("wanted timed out, got {other:?}"),
    }
    let done = w
        .engine()
        .resume(&s.id, &mut Detached)
        .await
        .expect("resume");
    assert_eq!(done.status, Status::Completed, "the fallback approved");
}

#[tokio::test(start_paused = true)]
async fn a_fill_is_recorded_typed_and_read_as_the_gates_response() {
    let w = World::new();
    let s = w.paused(&CHAIN.replace("$GATE", FORM)).await;
    match submit(
        &w,
        &s.id,
        None,
        fill(serde_json::json!({"amount": " 42 "})),
        "bob",
        false,
    )
    .await
    {
        Ok(Accepted::Recorded(_)) => {}
        other => panic!("wanted recorded, got {other:?}"),
    }
    let done = w
        .engine()
        .resume(&s.id, &mut Detached)
        .await
        .expect("resume");
    assert_eq!(done.status, Status::Completed, "{done:?}");
    let recorded = done.history.iter().find_map(|e| match &e.what {
        crate::model::GateEventKind::Answered { answer, .. } => Some(answer.decision.clone()),
        _ => None,
    });
    assert_eq!(
        recorded,
        Some(fill(serde_json::json!({"amount": 42, "note": "none"})))
    );
    // The next step reads the values as the gate's response.
    let state = serde_json::to_string(&done.state).expect("state");
    assert!(
        state.contains(r#"{\"amount\":42,\"note\":\"none\"}"#),
        "{state}"
    );
    // A timeout that approves a form fills in its defaults.
    let w = World::new();
    let form = "        timeout_minutes: 5\n        fallback_action: approve\n        form:\n          properties:\n            env: {type: string, enum: [prod, staging], default: staging}\n          required: [env]";
    let s = w.paused(&CHAIN.replace("$GATE", form)).await;
    tokio::time::advance(std::time::Duration::from_secs(301)).await;
    let done = w
        .engine()
        .resume(&s.id, &mut Detached)
        .await
        .expect("resume");
    assert_eq!(done.status, Status::Completed, "the fallback approved");
    assert!(done.history.iter().any(|e| matches!(&e.what,
        crate::model::GateEventKind::Answered { answer, .. }
            if answer.decision == fill(serde_json::json!({"env": "staging"})))));
}

/// The directory the people rows run with: carol started every run (her
/// Unix user is `starter`); alice is in finance; bob is not.
async fn with_people(w: &World) {
    use crate::model::person::Person;
    let person = |name: &str, slack: &str, unix: Option<&str>, groups: &[&str]| Person {
        name: name.into(),
        slack: Some(slack.into()),
        teams: Some(format!("0000{}", slack.len())),
        email: Some(format!("{name}@corp.example")),
        tokens: vec![format!("{name}-api")],
        unix: unix.map(str::to_string),
        oidc: None,
        amqp: None,
        groups: groups.iter().map(|g| g.to_string()).collect(),
        delegations: Vec::new(),
        passkeys: Vec::new(),
    };
    let rows = vec![
        person("carol", "U04CAROL", Some("starter"), &[]),
        person("alice", "U04ALICE", None, &["finance"]),
        person("bob", "U04BOB", Some("bobby"), &[]),
    ];
    let all: Vec<Person> = rows
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            p.teams = Some(format!("0000-{i}"));
            p
        })
        .collect();
    w.store
        .update_people(
            &move |_| Ok(crate::model::person::Directory::new(all.clone())?.into_people()),
            &crate::audit::AuditEvent::new(crate::audit::AuditKind::Access, "", "", w.clock.now()),
        )
        .await
        .expect("the directory");
}

/// The same rules, judged on people: each row's answers come from several
/// channel identities of one person (Slack id, email as the web knows
/// them, a token name, `teams:<aad>`, a Unix user).
#[tokio::test]
async fn people_are_judged_across_channels() {
    type Row = (
        &'static str,
        &'static str,
        Vec<(&'static str, Decision, bool, Want)>,
    );
    let rows: Vec<Row> = vec![
        (
            "self-approval is refused from another channel (started in the CLI, Slack then the web)",
            "",
            vec![
                ("U04CAROL", Decision::Approve, true, Want::NotAllowed("you started this run")),
                ("carol@corp.example", Decision::Approve, true, Want::NotAllowed("you started this run")),
                ("carol-api", Decision::Approve, true, Want::NotAllowed("you started this run")),
                ("U04BOB", Decision::Approve, true, Want::Recorded),
            ],
        ),
        (
            "a quorum counts a person once, whichever channel",
            "        approvers: [alice, bob]\n        approvals_required: 2",
            vec![
                ("U04ALICE", Decision::Approve, true, Want::Counted),
                ("alice@corp.example", Decision::Approve, true, Want::NotAllowed("already approved")),
                ("teams:0000-1", Decision::Approve, true, Want::NotAllowed("already approved")),
                ("bobby", Decision::Approve, true, Want::Recorded),
            ],
        ),
        (
            "an approver named by name is matched on every channel",
            "        approvers: [alice]",
            vec![
                ("U04BOB", Decision::Approve, true, Want::NotAllowed("not an approver")),
                ("alice-api", Decision::Approve, true, Want::Recorded),
            ],
        ),
        (
            "an approver named by a channel id is matched from another channel",
            "        approvers: [U04ALICE]",
            vec![("alice@corp.example", Decision::Approve, true, Want::Recorded)],
        ),
        (
            "group:NAME matches the directory's groups",
            "        approvers: [group:finance]",
            vec![
                ("bob@corp.example", Decision::Approve, true, Want::NotAllowed("not an approver")),
                ("U0STRANGER", Decision::Approve, true, Want::NotAllowed("not an approver")),
                ("teams:0000-1", Decision::Approve, true, Want::Recorded),
            ],
        ),
        (
            "unknown callers keep their channel identity (and Slack groups still work)",
            "        approvers: [U0DAVE, S0TEAM]\n        approvals_required: 2",
            vec![
                ("U0MALLORY", Decision::Approve, true, Want::NotAllowed("not an approver")),
                ("U0DAVE", Decision::Approve, true, Want::Counted),
                ("U0DAVE", Decision::Approve, true, Want::NotAllowed("already approved")),
                ("teammate", Decision::Approve, true, Want::Recorded),
            ],
        ),
        (
            "an unknown starter is compared by identity, as before",
            "",
            vec![("starter", reject(), true, Want::Recorded)],
        ),
        (
            "a form is approved by filling it in, values checked",
            FORM,
            vec![
                (
                    "bob",
                    Decision::Approve,
                    false,
                    Want::BadAnswer("amount (integer, required)"),
                ),
                (
                    "bob",
                    fill(serde_json::json!({"amount": "0", "extra": 1})),
                    false,
                    Want::BadValues(&["amount", "extra"]),
                ),
                (
                    "bob",
                    fill(serde_json::json!({"note": "hi"})),
                    false,
                    Want::BadValues(&["amount"]),
                ),
                ("bob", fill(serde_json::json!({"amount": "7"})), false, Want::Recorded),
            ],
        ),
        (
            "a fill is an approval: no self-approval, quorum counted",
            "        approvals_required: 2\n        approvers: [a1, a2, starter]\n        allow_self_approval: false\n$FORM",
            vec![
                (
                    "starter",
                    fill(serde_json::json!({"amount": 1})),
                    false,
                    Want::NotAllowed("you started this run"),
                ),
                ("a1", fill(serde_json::json!({"amount": 1})), false, Want::Counted),
                ("a2", fill(serde_json::json!({"amount": 2})), false, Want::Recorded),
            ],
        ),
        (
            "trust approves a gate that allows it",
            "        allow_trust: true",
            vec![
                (
                    "starter",
                    Decision::Trust { limit: None },
                    true,
                    Want::NotAllowed("you started this run"),
                ),
                ("bob", Decision::Trust { limit: None }, false, Want::Recorded),
            ],
        ),
    ];
    for (case, gate, answers) in rows {
        let gate = gate.replace("$FORM", FORM);
        let gate = gate.as_str();
        let w = World::new();
        with_people(&w).await;
        let s = w.paused(&CHAIN.replace("$GATE", gate)).await;
        let before = refusals(&w).await;
        let mut refused = 0;
        for (who, decision, shared, want) in answers {
            let stored = w.store.get(&s.id).await.expect("session");
            let got = submit(&w, &s.id, None, decision, who, shared).await;
            check(case, &got, &want);
            if got.is_err() {
                refused += 1;
                let after = w.store.get(&s.id).await.expect("session");
                assert_eq!(after, stored, "{case}: a refusal changes nothing");
            }
        }
        assert_eq!(
            refusals(&w).await - before,
            refused,
            "{case}: every refusal is audited"
        );
    }
}

/// The answer and its audit entry keep the channel identity used and the
/// person it belongs to; a caller the directory does not know has none.
#[tokio::test]
async fn the_record_keeps_the_channel_identity_and_the_person() {
    let w = World::new();
    with_people(&w).await;
    let s = w
        .paused(&CHAIN.replace("$GATE", "        approvals_required: 2"))
        .await;
    let got = submit(&w, &s.id, None, Decision::Approve, "U04ALICE", true).await;
    check("alice from Slack", &got, &Want::Counted);
    let got = submit(&w, &s.id, None, Decision::Approve, "U0DAVE", true).await;
    check("an unknown caller", &got, &Want::Recorded);
    let after = w.store.get(&s.id).await.expect("session");
    let answers: Vec<(String, Option<String>)> = after
        .history
        .iter()
        .filter_map(|e| match &e.what {
            crate::model::GateEventKind::Answered { answer, .. } => {
                Some((answer.by.clone(), answer.person.clone()))
            }
            _ => None,
        })
        .chain(
            after
                .pending
                .iter()
                .map(|p| (p.answer.by.clone(), p.answer.person.clone())),
        )
        .collect();
    assert_eq!(
        answers,
        vec![
            ("U04ALICE".to_string(), Some("alice".to_string())),
            ("U0DAVE".to_string(), None)
        ]
    );
    let audit: Vec<serde_json::Value> = w
        .store
        .audit_entries()
        .await
        .expect("audit")
        .iter()
        .map(|(_, e)| serde_json::from_slice::<serde_json::Value>(e).expect("json"))
        .filter(|e| e["event"]["kind"] == "answer")
        .collect();
    assert_eq!(audit.len(), 2, "{audit:#?}");
    assert_eq!(audit[0]["event"]["who"], "U04ALICE");
    assert_eq!(audit[0]["event"]["person"], "alice");
    assert_eq!(audit[1]["event"]["who"], "U0DAVE");
    assert!(audit[1]["event"].get("person").is_none());
}

mod delegation;
