//! The store's promises: exactly-once answers, compare-and-swap writes,
//! summaries that follow their sessions.

use super::*;
use crate::gate::{self};
use crate::model::PatternState;
use crate::model::{Decision, Position};
use crate::spec::{Fallback, GateKind, GateSpec};
use std::sync::Arc;

fn paused_session(id: &str) -> Session {
    let now = Utc::now();
    let spec = GateSpec {
        id: "review".into(),
        kind: GateKind::ManualGate,
        prompt: "ok?".into(),
        context_display: None,
        default: None,
        timeout_secs: None,
        fallback: Fallback::Cancel,
        condition: None,
        show_preview: true,
        preview_length: 10,
        require_reason: false,
        channel: None,
        approvers: None,
        approvals_required: None,
        rejections_required: None,
        allow_self_approval: None,
        timers: Default::default(),
    };
    Session {
        id: id.into(),
        workflow: "wf".into(),
        spec_path: "wf.yaml".into(),
        spec_hash: "h".into(),
        spec_snapshot: String::new(),
        pattern: "chain".into(),
        status: Status::Paused,
        created_at: now,
        updated_at: now,
        started_by: "alice".into(),
        variables: Default::default(),
        state: PatternState::Chain {
            next: 1,
            steps: vec![None, None],
        },
        format: crate::model::SESSION_FORMAT,
        gates: [gate::open(
            &spec,
            Position::Step(1),
            1,
            "ok?".into(),
            "ctx".into(),
            now,
        )]
        .into_iter()
        .map(|g| (g.handle(), g))
        .collect(),
        pending: None,
        human_feedback: None,
        hitl_response: None,
        history: Vec::new(),
        gates_opened: 1,
        usage: Default::default(),
        output: None,
        artifacts: Vec::new(),
        out_dir: ".".into(),
        failure: None,
        origin: None,
        agent_turn: None,
        trusted_tools: Default::default(),
        denied_calls: Default::default(),
        audit: Vec::new(),
        arm: Vec::new(),
        events: Vec::new(),
        triggers_fired: Default::default(),
        final_approved: false,
        in_flight: Default::default(),
        rev: 0,
    }
}

fn approve(by: &str) -> Answer {
    Answer {
        decision: Decision::Approve,
        by: by.into(),
        at: Utc::now(),
        via: "test".into(),
        vars: Default::default(),
        call: None,
    }
}

#[test]
fn fifty_concurrent_answers_record_exactly_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SledStore::open(dir.path()).expect("open"));
    let mut s = paused_session("s1");
    store.create(&mut s).expect("create");
    let threads: Vec<_> = (0..50)
        .map(|i| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                store.record_answer("s1", Some("review#1"), &approve(&format!("u{i}")))
            })
        })
        .collect();
    let mut won = Vec::new();
    let mut refused = 0;
    for t in threads {
        match t.join().expect("thread").expect("store ok") {
            Ok(s) => won.push(s),
            Err(Refusal::AlreadyAnswered(_)) => refused += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(won.len(), 1, "exactly one answer wins");
    assert_eq!(refused, 49);
    let stored = store.get("s1").expect("get");
    assert_eq!(stored.status, Status::Running);
    assert_eq!(
        stored.pending.as_ref().map(|p| p.answer.by.clone()),
        won[0].pending.as_ref().map(|p| p.answer.by.clone())
    );
}

#[test]
fn a_stale_gate_handle_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let mut s = paused_session("s2");
    store.create(&mut s).expect("create");
    let before = store.get("s2").expect("get");
    let r = store
        .record_answer("s2", Some("review#7"), &approve("bob"))
        .expect("store ok");
    assert!(matches!(r, Err(Refusal::Stale { .. })), "{r:?}");
    assert_eq!(store.get("s2").expect("get"), before);
    assert!(matches!(
        store
            .record_answer("nope", None, &approve("bob"))
            .expect("ok"),
        Err(Refusal::NotFound)
    ));
}

#[test]
fn a_checkpoint_from_a_stale_copy_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let mut s = paused_session("s3");
    store.create(&mut s).expect("create");
    let mut a = store.get("s3").expect("get");
    let mut b = a.clone();
    store.checkpoint(&mut a).expect("first writer wins");
    b.output = Some("lost update".into());
    assert!(matches!(store.checkpoint(&mut b), Err(Error::Session(_))));
    assert_eq!(store.get("s3").expect("get").output, None);
}

#[test]
fn summaries_follow_sessions_and_cleanup_keeps_paused_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let mut paused = paused_session("p1");
    store.create(&mut paused).expect("create");
    let mut done = paused_session("d1");
    done.status = Status::Completed;
    done.gates.clear();
    store.create(&mut done).expect("create");
    assert_eq!(store.list(Some(Status::Paused)).expect("list").len(), 1);
    assert_eq!(store.list(None).expect("list").len(), 2);
    let removed = store
        .cleanup(Utc::now() + chrono::Duration::days(1))
        .expect("cleanup");
    assert_eq!(removed, vec!["d1".to_string()]);
    assert!(store.load("p1").expect("load").is_some());
    assert_eq!(store.resolve("p1").expect("resolve"), "p1");
}

#[test]
fn timer_keys_sort_by_due_time() {
    let due = Utc::now();
    let a = Timer {
        session: "zzz".into(),
        gate: "review#2".into(),
        kind: TimerKind::Timeout,
        due,
        n: 0,
        fired: None,
    };
    let b = Timer {
        session: "aaa".into(),
        due: due + chrono::TimeDelta::milliseconds(1),
        ..a.clone()
    };
    assert!(
        timer_key(&a) < timer_key(&b),
        "earlier first, whatever the session id"
    );
}

#[test]
fn a_token_name_is_in_use_once_and_every_change_is_audited() {
    use crate::audit::{AuditEvent, AuditKind};
    use crate::model::token::{NewToken, Role};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let now = Utc::now();
    let ev = || AuditEvent::new(AuditKind::Access, "", "");
    let a = NewToken::generate("ci", Role::Operator, now, None);
    assert!(store.create_token(&a.record, &ev()).expect("create"));
    let b = NewToken::generate("ci", Role::Admin, now, None);
    assert!(
        !store.create_token(&b.record, &ev()).expect("create"),
        "name in use"
    );
    assert_eq!(
        store.token(&b.record.id).expect("read"),
        None,
        "nothing written"
    );
    let got = store.token(&a.record.id).expect("read").expect("stored");
    assert_eq!(got, a.record);
    assert!(!serde_json::to_string(&got)
        .expect("json")
        .contains(&a.token[17..]));
    let revoked = store
        .revoke_token("ci", now, &ev())
        .expect("revoke")
        .expect("was in use");
    assert_eq!(revoked.revoked_at, Some(now));
    assert_eq!(store.revoke_token("ci", now, &ev()).expect("revoke"), None);
    assert!(
        store.create_token(&b.record, &ev()).expect("create"),
        "name free again"
    );
    assert_eq!(store.tokens().expect("list").len(), 2);
    assert_eq!(store.audit_head().expect("head").map(|h| h.seq), Some(3));
}
