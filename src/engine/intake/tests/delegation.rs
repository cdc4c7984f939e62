//! Delegation at the intake: a delegate in force answers a gate listing
//! the person they stand in for, recorded and audited as "bob for alice";
//! the self-approval and one-human-one-vote rules hold through it.

use super::*;
use crate::model::person::delegation::Delegation;
use crate::model::person::{Directory, Person};

/// Adds erin (`U04ERIN`), then sets each `(from, to)` delegation, in
/// force from yesterday until tomorrow.
async fn delegations(w: &World, pairs: &[(&str, &str)]) {
    delegations_around(w, pairs, w.clock.now()).await
}

/// [`delegations`], in force from the day before `now` to the day after.
async fn delegations_around(w: &World, pairs: &[(&str, &str)], now: chrono::DateTime<chrono::Utc>) {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    w.store
        .update_people(
            &move |stored| {
                let mut erin = Person::named("erin");
                erin.slack = Some("U04ERIN".into());
                let mut d = Directory::new(stored)?.with(erin, false)?;
                for (from, to) in &pairs {
                    let delegation = Delegation {
                        to: to.clone(),
                        starts: now - chrono::TimeDelta::days(1),
                        ends: now + chrono::TimeDelta::days(1),
                        set_by: from.clone(),
                        set_at: now,
                        reason: None,
                    };
                    d = d.delegate(from, delegation, now)?;
                }
                Ok(d.into_people())
            },
            &crate::audit::AuditEvent::new(crate::audit::AuditKind::Access, "", "", w.clock.now()),
        )
        .await
        .expect("delegations");
}

fn recorded(got: &std::result::Result<Accepted, Refusal>) -> crate::model::Answer {
    let s = match got {
        Ok(a) => a.session().clone(),
        Err(r) => panic!("refused: {r}"),
    };
    s.pending
        .as_ref()
        .map(|p| p.answer.clone())
        .or_else(|| {
            s.history.iter().rev().find_map(|e| match &e.what {
                crate::model::GateEventKind::Answered { answer, .. } => Some(answer.clone()),
                _ => None,
            })
        })
        .expect("an answer")
}

#[tokio::test]
async fn a_delegate_answers_for_the_person_and_the_audit_says_so() {
    let w = World::new();
    with_people(&w).await;
    delegations(&w, &[("alice", "bob")]).await;
    let s = w
        .paused(&CHAIN.replace("$GATE", "        approvers: [alice]"))
        .await;
    let got = submit(&w, &s.id, None, Decision::Approve, "U04ERIN", true).await;
    check("a stranger", &got, &Want::NotAllowed("not an approver"));
    let got = submit(&w, &s.id, None, Decision::Approve, "U04BOB", true).await;
    check("bob for alice", &got, &Want::Recorded);
    let a = recorded(&got);
    assert_eq!(
        (
            a.by.as_str(),
            a.person.as_deref(),
            a.on_behalf_of.as_deref()
        ),
        ("U04BOB", Some("bob"), Some("alice"))
    );
    let answers: Vec<serde_json::Value> = w
        .store
        .audit_entries()
        .await
        .expect("audit")
        .iter()
        .map(|(_, e)| serde_json::from_slice::<serde_json::Value>(e).expect("json"))
        .filter(|e| e["event"]["kind"] == "answer")
        .collect();
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert_eq!(answers[0]["event"]["on_behalf_of"], "alice");
    assert_eq!(answers[0]["event"]["detail"], "bob for alice");
}

#[tokio::test]
async fn outside_the_window_the_delegate_is_refused() {
    for (when, days) in [("after the end", -3), ("before the start", 3)] {
        let w = World::new();
        with_people(&w).await;
        let then = w.clock.now() + chrono::TimeDelta::days(days);
        delegations_around(&w, &[("alice", "bob")], then).await;
        let s = w
            .paused(&CHAIN.replace("$GATE", "        approvers: [alice]"))
            .await;
        let got = submit(&w, &s.id, None, Decision::Approve, "U04BOB", true).await;
        check(when, &got, &Want::NotAllowed("not an approver"));
    }
}

#[tokio::test]
async fn a_delegate_cannot_approve_a_run_they_started_even_where_self_approval_is_allowed() {
    let w = World::new();
    with_people(&w).await;
    // carol started the run (her Unix user is `starter`).
    delegations(&w, &[("alice", "carol")]).await;
    let s = w
        .paused(&CHAIN.replace(
            "$GATE",
            "        approvers: [alice]\n        allow_self_approval: true",
        ))
        .await;
    let before = w.store.get(&s.id).await.expect("session");
    let got = submit(&w, &s.id, None, Decision::Approve, "U04CAROL", true).await;
    check(
        "carol for alice, on her own run",
        &got,
        &Want::NotAllowed("not even as alice's delegate"),
    );
    assert_eq!(w.store.get(&s.id).await.expect("session"), before);
    let got = submit(&w, &s.id, None, reject(), "U04CAROL", true).await;
    check("rejecting is fine", &got, &Want::Recorded);
}

#[tokio::test]
async fn a_person_stood_in_for_cannot_approve_their_own_run_through_a_delegate() {
    let w = World::new();
    with_people(&w).await;
    delegations(&w, &[("carol", "bob")]).await;
    let s = w
        .paused(&CHAIN.replace("$GATE", "        approvers: [carol]"))
        .await;
    let got = submit(&w, &s.id, None, Decision::Approve, "U04BOB", true).await;
    check(
        "bob for carol, who started it",
        &got,
        &Want::NotAllowed("carol started this run"),
    );
}

#[tokio::test]
async fn a_quorum_counts_the_human_who_clicked_once() {
    let w = World::new();
    with_people(&w).await;
    // bob stands in for alice and for erin.
    delegations(&w, &[("alice", "bob"), ("erin", "bob")]).await;
    let s = w
        .paused(&CHAIN.replace(
            "$GATE",
            "        approvers: [alice, erin, U0DAVE]\n        approvals_required: 2",
        ))
        .await;
    let got = submit(&w, &s.id, None, Decision::Approve, "U04BOB", true).await;
    check("bob for alice", &got, &Want::Counted);
    assert_eq!(recorded(&got).on_behalf_of.as_deref(), Some("alice"));
    let got = submit(&w, &s.id, None, Decision::Approve, "bob@corp.example", true).await;
    check(
        "bob again, from the web",
        &got,
        &Want::NotAllowed("already approved"),
    );
    let got = submit(&w, &s.id, None, Decision::Approve, "U04ALICE", true).await;
    check(
        "alice, already counted through bob",
        &got,
        &Want::NotAllowed("bob already answered this gate for you"),
    );
    let got = submit(&w, &s.id, None, Decision::Approve, "U0DAVE", true).await;
    check("a second human completes the quorum", &got, &Want::Recorded);
}

#[tokio::test]
async fn a_delegate_answers_for_someone_not_counted_yet() {
    let w = World::new();
    with_people(&w).await;
    delegations(&w, &[("alice", "bob"), ("erin", "bob")]).await;
    let s = w
        .paused(&CHAIN.replace(
            "$GATE",
            "        approvers: [alice, erin]\n        approvals_required: 2",
        ))
        .await;
    let got = submit(&w, &s.id, None, Decision::Approve, "U04ALICE", true).await;
    check("alice herself", &got, &Want::Counted);
    let got = submit(&w, &s.id, None, Decision::Approve, "U04BOB", true).await;
    check("bob, for erin", &got, &Want::Recorded);
    assert_eq!(recorded(&got).on_behalf_of.as_deref(), Some("erin"));
}
