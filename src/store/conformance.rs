//! One suite of store behaviour, run against every backend: each scenario
//! is a generic async fn over a [`Store`]; the macro at the bottom runs it
//! on a fresh sled directory and on a fresh database of a real PostgreSQL
//! server (`postgres::testdb`; skipped with a notice when none can start,
//! failing under `STRANDS_REQUIRE_POSTGRES=1`). Concurrency is real: many
//! tasks on a multi-threaded runtime, and on PostgreSQL many connections.

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};

use super::sled::tests::{approve, paused_session};
use super::{Store, Timer, TimerKind};
use crate::audit::{AuditEvent, AuditKind, Verdict};
use crate::error::Error;
use crate::model::webhook::{Delivery, Settle};
use crate::model::{
    EventKind, Notification, PatternState, RecordKind, Refusal, Session, Status, StepRecord,
};

fn run_failed(message: &str) -> EventKind {
    EventKind::RunFailed {
        message: message.into(),
    }
}

fn step_done() -> EventKind {
    EventKind::StepDone {
        tokens: 0,
        millis: 0,
        position: "steps[0]".into(),
        agent: "a".into(),
    }
}

/// Writes a new paused session whose write reports `kinds`.
async fn reports(store: &Store, id: &str, kinds: Vec<EventKind>) {
    let mut s = paused_session(id);
    s.events = kinds;
    store.create(&mut s).await.expect("create");
}

async fn a_checkpoint_from_a_stale_copy_is_refused(store: Arc<Store>) {
    let mut s = paused_session("s3");
    store.create(&mut s).await.expect("create");
    let mut a = store.get("s3").await.expect("get");
    let mut b = a.clone();
    store.checkpoint(&mut a).await.expect("first writer wins");
    assert_eq!(a.rev, 2);
    b.output = Some("lost update".into());
    assert!(matches!(
        store.checkpoint(&mut b).await,
        Err(Error::Session(_))
    ));
    assert_eq!(store.get("s3").await.expect("get").output, None);
    let mut again = paused_session("s3");
    assert!(store.create(&mut again).await.is_err(), "ids are unique");
}

async fn fifty_concurrent_answers_record_exactly_one(store: Arc<Store>) {
    let mut s = paused_session("s1");
    store.create(&mut s).await.expect("create");
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .record_answer("s1", Some("review#1"), &approve(&format!("u{i}")))
                    .await
            })
        })
        .collect();
    let (mut won, mut refused) = (Vec::new(), 0);
    for t in tasks {
        match t.await.expect("task").expect("store ok") {
            Ok(s) => won.push(s),
            Err(Refusal::AlreadyAnswered(a)) => {
                assert!(a.by.starts_with('u'), "told who decided");
                refused += 1
            }
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(won.len(), 1, "exactly one answer wins");
    assert_eq!(refused, 49);
    let stored = store.get("s1").await.expect("get");
    assert_eq!(stored.status, Status::Running);
    assert_eq!(
        stored.pending.as_ref().map(|p| p.answer.by.clone()),
        won[0].pending.as_ref().map(|p| p.answer.by.clone())
    );
    let stale = store
        .record_answer("s1", Some("review#7"), &approve("late"))
        .await
        .expect("ok");
    assert!(stale.is_err());
    assert!(matches!(
        store.record_answer("nope", None, &approve("bob")).await,
        Ok(Err(Refusal::NotFound))
    ));
}

async fn summaries_follow_sessions_and_prefixes_resolve(store: Arc<Store>) {
    let mut paused = paused_session("p1-aaaa");
    store.create(&mut paused).await.expect("create");
    let mut done = paused_session("d1-bbbb");
    done.status = Status::Completed;
    done.gates.clear();
    store.create(&mut done).await.expect("create");
    assert_eq!(
        store.list(Some(Status::Paused)).await.expect("list").len(),
        1
    );
    assert_eq!(store.list(None).await.expect("list").len(), 2);
    assert_eq!(store.count().await.expect("count"), 2);
    assert_eq!(store.resolve("p1-a").await.expect("prefix"), "p1-aaaa");
    assert!(matches!(
        store.resolve("zzzz").await,
        Err(Error::Session(_))
    ));
    let running = store
        .sessions_with_status(Status::Paused)
        .await
        .expect("full");
    assert_eq!(running.len(), 1);
    let removed = store
        .cleanup(Utc::now() + TimeDelta::days(1))
        .await
        .expect("cleanup");
    assert_eq!(removed, vec!["d1-bbbb".to_string()]);
    assert!(store.load("p1-aaaa").await.expect("load").is_some());
    assert!(store.load("d1-bbbb").await.expect("load").is_none());
}

async fn a_message_finds_its_session_and_gate(store: Arc<Store>) {
    let mut s = paused_session("m1");
    store.create(&mut s).await.expect("create");
    let n = Notification {
        gate: "review#1".into(),
        channel: "C1".into(),
        ts: Some("1700.01".into()),
        thread_ts: None,
        at: Utc::now(),
        error: None,
        copies: vec![("D1".into(), "1700.02".into())],
    };
    store.record_notification("m1", &n).await.expect("record");
    let target = store
        .message_target("C1", "1700.01")
        .await
        .expect("read")
        .expect("indexed");
    assert_eq!(
        (target.session.as_str(), target.gate.as_str()),
        ("m1", "review#1")
    );
    assert_eq!(store.message_target("C1", "9").await.expect("read"), None);
    // A copy sent to an approver directly finds the same gate.
    let copy = store
        .message_target("D1", "1700.02")
        .await
        .expect("read")
        .expect("the copy is indexed");
    assert_eq!(copy.gate, "review#1");
    let later = Notification {
        ts: Some("1700.02".into()),
        at: n.at + TimeDelta::seconds(1),
        ..n.clone()
    };
    store
        .record_notification("m1", &later)
        .await
        .expect("again");
    assert_eq!(
        store.notifications("m1").await.expect("list"),
        vec![later],
        "the latest per gate"
    );
}

async fn a_chat_event_is_seen_first_once(store: Arc<Store>) {
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.first_sighting("Ev1").await })
        })
        .collect();
    let mut firsts = 0;
    for t in tasks {
        firsts += usize::from(t.await.expect("task").expect("ok"));
    }
    assert_eq!(firsts, 1);
    assert!(store.first_sighting("Ev2").await.expect("ok"));
}

async fn an_answer_queued_for_a_busy_run_waits_once(store: Arc<Store>) {
    let mut s = paused_session("q1");
    s.status = Status::Running;
    store.create(&mut s).await.expect("create");
    store
        .queue_answer("q1", "review#1", &approve("ann"))
        .await
        .expect("ok")
        .expect("queued");
    match store.queue_answer("q1", "review#1", &approve("bob")).await {
        Ok(Err(Refusal::AlreadyAnswered(a))) => assert_eq!(a.by, "ann"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.queue_answer("q1", "nope#1", &approve("bob")).await,
        Ok(Err(Refusal::Stale { .. }))
    ));
    let queued = store.queued_answers("q1").await.expect("list");
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].0, "review#1");
    store.drop_queued("q1", "review#1").await.expect("drop");
    assert!(store.queued_answers("q1").await.expect("list").is_empty());
    let mut p = paused_session("q2");
    store.create(&mut p).await.expect("create");
    assert!(matches!(
        store.queue_answer("q2", "review#1", &approve("x")).await,
        Ok(Err(Refusal::NotOpen(Status::Paused)))
    ));
}

fn timer(session: &str, kind: TimerKind, due: chrono::DateTime<Utc>, n: u32) -> Timer {
    Timer {
        session: session.into(),
        gate: "review#1".into(),
        kind,
        due,
        n,
        fired: None,
    }
}

async fn timers_arm_once_and_fire_once(store: Arc<Store>) {
    let mut s = paused_session("t1");
    store.create(&mut s).await.expect("create");
    let past = Utc::now() - TimeDelta::seconds(5);
    let timeout = timer("t1", TimerKind::Timeout, past, 0);
    let reminder = timer("t1", TimerKind::Reminder, past + TimeDelta::hours(1), 1);
    let both = [timeout.clone(), reminder.clone()];
    assert!(store
        .arm_timers("t1", "review#1", &both)
        .await
        .expect("arm"));
    assert!(
        !store
            .arm_timers("t1", "review#1", &both)
            .await
            .expect("arm"),
        "armed once per asking"
    );
    assert_eq!(store.timers().await.expect("list").len(), 2);
    // Many loops look at once: on a shared store the due one is claimed
    // by one of them; the reminder (not due) is never claimed.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.next_timer().await })
        })
        .collect();
    let mut got_timeout = 0;
    for t in tasks {
        if let Some(t) = t.await.expect("task").expect("ok") {
            got_timeout += usize::from(t.kind == TimerKind::Timeout);
        }
    }
    if store.is_shared() {
        assert_eq!(got_timeout, 1, "a due timer goes to one loop");
    } else {
        assert!(got_timeout >= 1);
    }
    // Two replicas firing it anyway: the answer is recorded once.
    let fired = super::Fired {
        answer: approve("timeout"),
        gate: s.first_gate().expect("gate").clone(),
        messages: Vec::new(),
    };
    let a = store
        .record_timeout(&timeout, &approve("timeout"), &fired)
        .await
        .expect("ok");
    let b = store
        .record_timeout(&timeout, &approve("timeout"), &fired)
        .await
        .expect("ok");
    assert!(a.is_ok() && b.is_err(), "{a:?} / {b:?}");
    let marked = store.timers().await.expect("list");
    assert!(marked.iter().any(|t| t.fired.is_some()), "marked fired");
    let moved = Timer {
        due: reminder.due + TimeDelta::minutes(1),
        n: 2,
        ..reminder.clone()
    };
    store.remove_timer(&timeout).await.expect("remove");
    store
        .replace_timer(&reminder, std::slice::from_ref(&moved))
        .await
        .expect("replace");
    let left = store.timers().await.expect("list");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].n, 2);
    let next = store.next_timer().await.expect("next").expect("one");
    assert_eq!(next.n, 2, "the earliest");
}

async fn the_audit_chain_never_forks(store: Arc<Store>) {
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let ev = AuditEvent::new(AuditKind::Access, &format!("s{i}"), "wf");
                store.append_audit(&[ev.clone(), ev]).await
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task").expect("append");
    }
    let mut s = paused_session("a1");
    s.audit = vec![AuditEvent::new(AuditKind::Access, "a1", "wf")];
    store.create(&mut s).await.expect("create with audit");
    let entries = store.audit_entries().await.expect("entries");
    assert_eq!(entries.len(), 41);
    let head = store.audit_head().await.expect("head");
    assert_eq!(head.as_ref().map(|h| h.seq), Some(41));
    match crate::audit::verify(entries.into_iter(), head) {
        Verdict::Intact { entries } => assert_eq!(entries, 41),
        broken => panic!("{broken:?}"),
    }
    assert_eq!(
        store
            .audit_export(None, Some("a1"))
            .await
            .expect("export")
            .len(),
        1
    );
}

async fn events_have_one_gap_free_sequence(store: Arc<Store>) {
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut s = paused_session(&format!("e{i}"));
                s.events = vec![step_done(), run_failed("x")];
                store.create(&mut s).await
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task").expect("create");
    }
    assert_eq!(store.last_event().await.expect("last"), 24);
    let all = store.events_after(0, 100).await.expect("events");
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=24).collect::<Vec<_>>());
    let page = store.events_after(20, 2).await.expect("page");
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [21, 22]);
    let mine = store.session_events_after("e3", 0, 10).await.expect("mine");
    assert_eq!(mine.len(), 2);
    assert!(mine.iter().all(|e| e.session == "e3") && mine[0].seq < mine[1].seq);
    let after = store
        .session_events_after("e3", mine[0].seq, 10)
        .await
        .expect("after");
    assert_eq!(after.len(), 1);
}

async fn a_token_name_is_in_use_once(store: Arc<Store>) {
    use crate::model::token::{NewToken, Role};
    let now = Utc::now();
    let ev = || AuditEvent::new(AuditKind::Access, "", "");
    let a = NewToken::generate("ci", Role::Operator, now, None);
    assert!(store.create_token(&a.record, &ev()).await.expect("create"));
    let b = NewToken::generate("ci", Role::Admin, now, None);
    assert!(!store.create_token(&b.record, &ev()).await.expect("create"));
    assert_eq!(store.token(&b.record.id).await.expect("read"), None);
    assert_eq!(
        store.token(&a.record.id).await.expect("read"),
        Some(a.record.clone())
    );
    let revoked = store
        .revoke_token("ci", now, &ev())
        .await
        .expect("revoke")
        .expect("was in use");
    assert_eq!(revoked.revoked_at, Some(now));
    assert_eq!(
        store.revoke_token("ci", now, &ev()).await.expect("revoke"),
        None
    );
    assert!(store.create_token(&b.record, &ev()).await.expect("create"));
    assert_eq!(store.tokens().await.expect("list").len(), 2);
    assert_eq!(
        store.audit_head().await.expect("head").map(|h| h.seq),
        Some(3)
    );
}

async fn sign_ins_and_keys(store: Arc<Store>) {
    use crate::model::login::{LoginScope, NewLogin};
    use crate::model::token::Role;
    let now = Utc::now();
    let l = NewLogin::generate(
        "ann",
        Role::Approver,
        LoginScope::Token {
            token_id: "t1".into(),
        },
        now,
        now + TimeDelta::hours(1),
    )
    .login;
    store.put_login(&l).await.expect("put");
    assert_eq!(store.login(&l.id).await.expect("read"), Some(l.clone()));
    assert!(store.end_login(&l.id).await.expect("end"));
    assert!(!store.end_login(&l.id).await.expect("end"));
    assert_eq!(store.login(&l.id).await.expect("read"), None);
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.key("links").await })
        })
        .collect();
    let mut keys = Vec::new();
    for t in tasks {
        keys.push(t.await.expect("task").expect("key"));
    }
    assert_eq!(keys[0].len(), 32);
    assert!(keys.iter().all(|k| *k == keys[0]), "one key for everyone");
    assert_ne!(store.key("other").await.expect("key"), keys[0]);
}

const HOOK: &str = "http://127.0.0.1:9/hook";
const LEASE: std::time::Duration = std::time::Duration::from_secs(60);

async fn the_webhook_outbox_queues_and_settles_once(store: Arc<Store>) {
    reports(&store, "old", vec![run_failed("history")]).await;
    let hooks = [HOOK.to_string()];
    let now = Utc::now();
    assert_eq!(store.webhook_pull(&hooks, now, 100).await.expect("pull"), 0);
    reports(&store, "s1", vec![step_done(), run_failed("one")]).await;
    reports(
        &store,
        "s2",
        (0..4).map(|i| run_failed(&i.to_string())).collect(),
    )
    .await;
    assert_eq!(store.webhook_pull(&hooks, now, 3).await.expect("pull"), 3);
    assert_eq!(store.webhook_pull(&hooks, now, 3).await.expect("pull"), 2);
    assert_eq!(store.webhook_pull(&hooks, now, 3).await.expect("pull"), 0);
    // Two loops take at once: each delivery goes to one of them.
    let (a, b) = tokio::join!(
        store.webhook_due(now, LEASE, 3),
        store.webhook_due(now, LEASE, 3)
    );
    let mut taken: Vec<Delivery> = a.expect("due");
    taken.extend(b.expect("due"));
    let mut seqs: Vec<u64> = taken.iter().map(Delivery::seq).collect();
    seqs.sort();
    assert_eq!(seqs, [3, 4, 5, 6, 7]);
    assert!(store
        .webhook_due(now + TimeDelta::seconds(59), LEASE, 10)
        .await
        .expect("due")
        .is_empty());
    taken.sort_by_key(Delivery::seq);
    store
        .webhook_settle(&taken[0], Settle::Delivered)
        .await
        .expect("delivered");
    let later = now + TimeDelta::seconds(5);
    store
        .webhook_settle(
            &taken[1],
            Settle::Retry {
                at: later,
                error: "HTTP 503".into(),
            },
        )
        .await
        .expect("retry");
    store
        .webhook_settle(
            &taken[2],
            Settle::GaveUp {
                error: "HTTP 400".into(),
            },
        )
        .await
        .expect("gave up");
    let again = store.webhook_due(later, LEASE, 10).await.expect("due");
    assert_eq!(again.iter().map(Delivery::seq).collect::<Vec<_>>(), [4]);
    assert_eq!(again[0].attempts, 2);
    let failed = store.webhook_failed(10).await.expect("failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].last_error.as_deref(), Some("HTTP 400"));
    assert!(store.webhook_next_due().await.expect("next").is_some());
}

async fn leases_go_to_one_replica_at_a_time(store: Arc<Store>) {
    let ttl = std::time::Duration::from_millis(300);
    assert!(store.take_lease("s", "a", ttl).await.expect("take"));
    assert!(store.take_lease("s", "a", ttl).await.expect("renew"));
    if store.is_shared() {
        assert!(!store.take_lease("s", "b", ttl).await.expect("held"));
        let mut r = paused_session("s");
        r.status = Status::Running;
        store.create(&mut r).await.expect("create");
        assert!(store.unleased_running().await.expect("list").is_empty());
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        assert_eq!(store.unleased_running().await.expect("list"), ["s"]);
        assert!(store.take_lease("s", "b", ttl).await.expect("lapsed"));
        store.release_lease("s", "a").await.expect("not a's");
        assert!(!store.take_lease("s", "a", ttl).await.expect("b's"));
        store.release_lease("s", "b").await.expect("release");
        assert!(store.take_lease("s", "a", ttl).await.expect("free"));
    }
}

async fn pages_list_newest_first_and_counts_follow(store: Arc<Store>) {
    let t0 = Utc::now();
    for (i, id) in ["pa", "pb", "pc", "pd", "pe"].iter().enumerate() {
        let mut s = paused_session(id);
        s.created_at = t0 + TimeDelta::seconds(i as i64);
        store.create(&mut s).await.expect("create");
    }
    let ids = |v: &[crate::model::Summary]| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    let first = store.list_page(None, None, 2).await.expect("page");
    assert_eq!(ids(&first), ["pe", "pd"]);
    let after = crate::model::parse_cursor(&first[1].cursor());
    let second = store.list_page(None, after, 2).await.expect("page");
    assert_eq!(ids(&second), ["pc", "pb"]);
    let mut c = store.load("pc").await.expect("load").expect("pc");
    c.status = Status::Completed;
    store.checkpoint(&mut c).await.expect("checkpoint");
    let paused = store
        .list_page(Some(Status::Paused), None, 10)
        .await
        .expect("page");
    assert_eq!(ids(&paused), ["pe", "pd", "pb", "pa"]);
    let counts = store.status_counts().await.expect("counts");
    assert_eq!(counts[1], (Status::Paused, 4));
    assert_eq!(counts[2], (Status::Completed, 1));
    // The pages agree with a full listing.
    let all: Vec<String> = store
        .list(None)
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        ids(&store.list_page(None, None, 100).await.expect("page")),
        all
    );
}

/// A session of `workflow` created at `at`, paused at one gate listing
/// `approvers`.
fn gated(id: &str, workflow: &str, approvers: &[&str], at: DateTime<Utc>) -> crate::model::Session {
    let mut s = paused_session(id);
    s.workflow = workflow.into();
    s.created_at = at;
    for g in s.gates.values_mut() {
        g.approvers = approvers.iter().map(|a| a.to_string()).collect();
    }
    s
}

/// Asserts the index by approver says what a read of every paused session
/// says, for each set of keys and for the group ids.
async fn awaiting_agrees_with_a_scan(store: &Store) {
    let paused = store
        .sessions_with_status(Status::Paused)
        .await
        .expect("paused");
    let sets: [&[&str]; 9] = [
        &["U1"],
        &["U2"],
        &["U3"],
        &["U7"],
        &["U9"],
        &["*"],
        &["S0TEAM1"],
        &["U1", "*", "S0TEAM2"],
        &["nobody"],
    ];
    for set in sets {
        let keys: Vec<String> = set.iter().map(|k| k.to_string()).collect();
        let mut want: Vec<String> = paused
            .iter()
            .filter(|s| {
                super::awaiting::entries(s)
                    .iter()
                    .any(|(_, a)| keys.contains(a))
            })
            .map(|s| s.id.clone())
            .collect();
        want.sort();
        let mut got = store.awaiting(&keys).await.expect("awaiting");
        got.sort();
        assert_eq!(got, want, "sessions awaiting {keys:?}");
    }
    let mut want: Vec<String> = paused
        .iter()
        .flat_map(super::awaiting::entries)
        .map(|(_, a)| a)
        .filter(|a| crate::gate::is_group(a))
        .collect();
    want.sort();
    want.dedup();
    let mut got = store.awaiting_groups().await.expect("groups");
    got.sort();
    assert_eq!(got, want, "groups awaited");
}

/// Asserts every workflow page (of each status) is the full list filtered.
async fn workflow_pages_agree_with_a_scan(store: &Store) {
    let statuses = [
        None,
        Some(Status::Paused),
        Some(Status::Running),
        Some(Status::Completed),
    ];
    for wf in ["wf-a", "wf-b", "wf-none"] {
        for st in statuses {
            let want: Vec<String> = store
                .list(st)
                .await
                .expect("list")
                .into_iter()
                .filter(|s| s.workflow == wf)
                .map(|s| s.id)
                .collect();
            let got: Vec<String> = store
                .workflow_page(wf, st, None, 100)
                .await
                .expect("page")
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(got, want, "{wf} {st:?}");
        }
    }
}

async fn the_workflow_and_approver_indexes_follow_every_change(store: Arc<Store>) {
    let t0 = Utc::now() - TimeDelta::minutes(1);
    let at = |n: i64| t0 + TimeDelta::seconds(n);
    for s in [
        gated("w1", "wf-a", &["U1"], at(1)),
        gated("w2", "wf-b", &["S0TEAM1", "U2"], at(2)),
        gated("w3", "wf-a", &[], at(3)),
        gated("w4", "wf-a", &["U1", "U3"], at(4)),
        gated("w5", "wf-b", &["U1"], at(5)),
        gated("w6", "wf-a", &["S0TEAM2"], at(6)),
    ] {
        let mut s = s;
        store.create(&mut s).await.expect("create");
    }
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let ids = |v: &[crate::model::Summary]| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    let u1 = vec!["U1".to_string()];
    assert_eq!(
        sorted(store.awaiting(&u1).await.expect("awaiting")),
        ["w1", "w4", "w5"]
    );
    assert_eq!(
        sorted(store.awaiting_groups().await.expect("groups")),
        ["S0TEAM1", "S0TEAM2"]
    );
    awaiting_agrees_with_a_scan(&store).await;

    // Pages of one workflow go on from their cursor, skipping the other's.
    let first = store
        .workflow_page("wf-a", None, None, 2)
        .await
        .expect("page");
    assert_eq!(ids(&first), ["w6", "w4"]);
    let after = crate::model::parse_cursor(&first[1].cursor());
    let second = store
        .workflow_page("wf-a", None, after, 2)
        .await
        .expect("page");
    assert_eq!(ids(&second), ["w3", "w1"]);
    let after = crate::model::parse_cursor(&second[1].cursor());
    assert!(store
        .workflow_page("wf-a", None, after, 2)
        .await
        .expect("page")
        .is_empty());
    assert_eq!(
        ids(&store
            .page(Some(Status::Paused), Some("wf-b"), None, 10)
            .await
            .expect("page")),
        ["w5", "w2"]
    );
    workflow_pages_agree_with_a_scan(&store).await;

    // A run that ends leaves both: its gate closed, its status moved.
    let mut w4 = store.load("w4").await.expect("load").expect("w4");
    w4.status = Status::Completed;
    w4.gates.clear();
    store.checkpoint(&mut w4).await.expect("checkpoint");
    assert!(store
        .awaiting(&["U3".to_string()])
        .await
        .expect("awaiting")
        .is_empty());
    assert_eq!(
        ids(&store
            .workflow_page("wf-a", Some(Status::Paused), None, 10)
            .await
            .expect("page")),
        ["w6", "w3", "w1"]
    );
    // An answer recorded takes the gate out.
    store
        .record_answer("w1", Some("review#1"), &approve("U1"))
        .await
        .expect("io")
        .expect("recorded");
    assert_eq!(sorted(store.awaiting(&u1).await.expect("awaiting")), ["w5"]);
    // So does a timeout.
    let due = Utc::now() - TimeDelta::seconds(1);
    let t = timer("w3", TimerKind::Timeout, due, 0);
    store
        .arm_timers("w3", "review#1", std::slice::from_ref(&t))
        .await
        .expect("arm");
    let w3 = store.load("w3").await.expect("load").expect("w3");
    let fired = super::Fired {
        answer: approve("timeout"),
        gate: w3.first_gate().expect("gate").clone(),
        messages: Vec::new(),
    };
    store
        .record_timeout(&t, &approve("timeout"), &fired)
        .await
        .expect("io")
        .expect("recorded");
    assert!(store
        .awaiting(&["*".to_string()])
        .await
        .expect("awaiting")
        .is_empty());
    // More approvers on an open gate; a second gate opened.
    store
        .update_open_gate("w6", "review#1", &|g| g.approvers.push("U9".into()))
        .await
        .expect("update")
        .expect("open");
    let mut w5 = store.load("w5").await.expect("load").expect("w5");
    let mut second = w5.first_gate().expect("gate").clone();
    second.id = "second".into();
    second.order = 2;
    second.approvers = vec!["U7".into()];
    w5.gates.insert(second.handle(), second);
    store.checkpoint(&mut w5).await.expect("checkpoint");
    assert_eq!(
        store.awaiting(&["U7".to_string()]).await.expect("awaiting"),
        ["w5"]
    );
    assert_eq!(
        store.awaiting(&["U9".to_string()]).await.expect("awaiting"),
        ["w6"]
    );
    // A deleted run leaves every index.
    store.delete("w2").await.expect("delete");
    assert_eq!(store.awaiting_groups().await.expect("groups"), ["S0TEAM2"]);
    awaiting_agrees_with_a_scan(&store).await;
    workflow_pages_agree_with_a_scan(&store).await;
}

// ------------------------------------------- kept apart, counted, indexed

/// The stored record of a session (if any) and how many texts it has apart.
async fn stored_raw(store: &Store, id: &str) -> (Option<Vec<u8>>, usize) {
    match store {
        Store::Sled(s) => s.stored_raw(id),
        Store::Postgres(s) => s.stored_raw(id).await,
    }
    .expect("stored record")
}

/// Replaces the stored record of a session, as an earlier release wrote it.
async fn put_raw(store: &Store, id: &str, body: &[u8]) {
    match store {
        Store::Sled(s) => s.put_raw(id, body),
        Store::Postgres(s) => s.put_raw(id, body).await,
    }
    .expect("raw write")
}

/// A text well above `outputs::THRESHOLD`.
fn big(tag: &str) -> String {
    format!(
        "{tag}: {}",
        "Durable gates let a workflow stop for a human \"and\" go on.\n".repeat(80)
    )
}

fn step(text: &str) -> Option<StepRecord> {
    Some(StepRecord {
        agent: Some("drafter".into()),
        response: text.into(),
        kind: RecordKind::Agent,
        finished_at: Utc::now(),
    })
}

/// A paused session whose first step produced `text`.
fn with_output(id: &str, text: &str) -> Session {
    let mut s = paused_session(id);
    s.state = PatternState::Chain {
        next: 1,
        steps: vec![step(text), None],
    };
    s
}

fn step_text(s: &Session, i: usize) -> Option<String> {
    match &s.state {
        PatternState::Chain { steps, .. } => steps
            .get(i)
            .and_then(|r| r.as_ref().map(|r| r.response.clone())),
        _ => None,
    }
}

async fn large_outputs_are_kept_apart_and_read_back_whole(store: Arc<Store>) {
    let draft = big("draft");
    let mut s = with_output("o1", &draft);
    store.create(&mut s).await.expect("create");
    let (raw, apart) = stored_raw(&store, "o1").await;
    let raw = raw.expect("stored");
    assert!(
        raw.len() < draft.len() / 2,
        "{} bytes stored with a {} byte output",
        raw.len(),
        draft.len()
    );
    assert!(!String::from_utf8_lossy(&raw).contains("Durable gates"));
    assert_eq!(apart, 1);
    let loaded = store.load("o1").await.expect("load").expect("o1");
    assert_eq!(loaded, s, "read back whole");

    // Checkpoints, a changed gate and an answer keep the text and do not
    // write it again.
    let before = store.outputs_written();
    let mut c = loaded.clone();
    c.human_feedback = Some("short".into());
    store.checkpoint(&mut c).await.expect("checkpoint");
    let g = store
        .update_open_gate("o1", "review#1", &|g| g.approvers.push("carol".into()))
        .await
        .expect("update")
        .expect("open");
    assert_eq!(step_text(&g, 0).as_deref(), Some(draft.as_str()));
    let answered = store
        .record_answer("o1", None, &approve("bob"))
        .await
        .expect("io")
        .expect("recorded");
    assert_eq!(step_text(&answered, 0).as_deref(), Some(draft.as_str()));
    assert_eq!(store.outputs_written(), before, "nothing written again");
    assert_eq!(stored_raw(&store, "o1").await.1, 1);

    // A new text is written once; the final output, the same text as the
    // last step, is the same record.
    let report = big("report");
    let mut done = store.load("o1").await.expect("load").expect("o1");
    assert_eq!(done, answered);
    if let PatternState::Chain { steps, .. } = &mut done.state {
        steps[1] = step(&report);
    }
    done.output = Some(report.clone());
    done.status = Status::Completed;
    done.gates.clear();
    done.pending = None;
    store.checkpoint(&mut done).await.expect("checkpoint");
    assert_eq!(store.outputs_written(), before + 1);
    assert_eq!(stored_raw(&store, "o1").await.1, 2);
    assert_eq!(store.load("o1").await.expect("load").expect("o1"), done);
    assert_eq!(
        store
            .sessions_with_status(Status::Completed)
            .await
            .expect("full"),
        vec![done]
    );

    // Deleting the session drops its texts.
    store.delete("o1").await.expect("delete");
    assert_eq!(stored_raw(&store, "o1").await, (None, 0));
}

async fn a_session_written_inline_reads_and_moves_its_text(store: Arc<Store>) {
    let text = big("inline");
    let mut s = paused_session("old1");
    store.create(&mut s).await.expect("create");
    // As a release before texts were kept apart wrote it.
    let mut inline = with_output("old1", &text);
    inline.rev = s.rev;
    inline.created_at = s.created_at;
    inline.updated_at = s.updated_at;
    put_raw(&store, "old1", &serde_json::to_vec(&inline).expect("json")).await;
    assert_eq!(
        store.load("old1").await.expect("load"),
        Some(inline.clone())
    );
    assert_eq!(stored_raw(&store, "old1").await.1, 0);
    // A timeout's answer decodes it and writes it back, its text apart.
    let fired = super::Fired {
        answer: approve("timeout"),
        gate: inline.first_gate().expect("gate").clone(),
        messages: Vec::new(),
    };
    let past = Utc::now() - TimeDelta::seconds(1);
    let t = store
        .record_timeout(
            &timer("old1", TimerKind::Timeout, past, 0),
            &approve("timeout"),
            &fired,
        )
        .await
        .expect("io")
        .expect("recorded");
    assert_eq!(step_text(&t, 0).as_deref(), Some(text.as_str()));
    let (raw, apart) = stored_raw(&store, "old1").await;
    assert!(raw.expect("stored").len() < text.len() / 2);
    assert_eq!(apart, 1);
    let back = store.load("old1").await.expect("load").expect("old1");
    assert_eq!(back, t);
}

/// Sessions per status counted from a full listing.
async fn recount(store: &Store) -> Vec<(Status, u64)> {
    let all = store.list(None).await.expect("list");
    [
        Status::Running,
        Status::Paused,
        Status::Completed,
        Status::Failed,
        Status::Rejected,
    ]
    .into_iter()
    .map(|st| (st, all.iter().filter(|s| s.status == st).count() as u64))
    .collect()
}

async fn counters_equal_a_recount(store: Arc<Store>) {
    let check = |what: &'static str| {
        let store = Arc::clone(&store);
        async move {
            assert_eq!(
                store.status_counts().await.expect("counts"),
                recount(&store).await,
                "after {what}"
            );
        }
    };
    for (id, st) in [
        ("c1", Status::Running),
        ("c2", Status::Paused),
        ("c3", Status::Paused),
        ("c4", Status::Completed),
        ("c5", Status::Failed),
        ("c6", Status::Rejected),
    ] {
        let mut s = paused_session(id);
        s.status = st;
        if st != Status::Paused {
            s.gates.clear();
        }
        store.create(&mut s).await.expect("create");
    }
    check("creates").await;
    store
        .record_answer("c2", None, &approve("bob"))
        .await
        .expect("io")
        .expect("recorded");
    check("an answer").await;
    let c3 = store.load("c3").await.expect("load").expect("c3");
    let fired = super::Fired {
        answer: approve("timeout"),
        gate: c3.first_gate().expect("gate").clone(),
        messages: Vec::new(),
    };
    store
        .record_timeout(
            &timer("c3", TimerKind::Timeout, Utc::now(), 0),
            &approve("timeout"),
            &fired,
        )
        .await
        .expect("io")
        .expect("recorded");
    check("a timeout").await;
    let mut c1 = store.load("c1").await.expect("load").expect("c1");
    store.checkpoint(&mut c1).await.expect("same status");
    c1.status = Status::Failed;
    store.checkpoint(&mut c1).await.expect("status change");
    check("checkpoints").await;
    store.delete("c5").await.expect("delete");
    store.delete("c5").await.expect("delete again");
    check("deletes").await;
    store
        .cleanup(Utc::now() + TimeDelta::days(1))
        .await
        .expect("cleanup");
    check("a cleanup").await;

    // Many writers at once, moving sessions both ways between paused and
    // running (on PostgreSQL: the same counter rows, locked in one order).
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let id = format!("w{i}");
                let mut s = paused_session(&id);
                if i % 2 == 0 {
                    s.status = Status::Running;
                }
                store.create(&mut s).await.expect("create");
                for _ in 0..6 {
                    s.status = match s.status {
                        Status::Paused => Status::Running,
                        _ => Status::Paused,
                    };
                    store.checkpoint(&mut s).await.expect("checkpoint");
                }
                if i % 3 == 0 {
                    store.delete(&id).await.expect("delete");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    check("concurrent writers").await;
}

async fn unposted_gates_are_listed_until_posted(store: Arc<Store>) {
    store
        .create(&mut paused_session("p1"))
        .await
        .expect("create");
    store
        .create(&mut paused_session("p2"))
        .await
        .expect("create");
    let mut done = paused_session("d1");
    done.status = Status::Completed;
    done.gates.clear();
    store.create(&mut done).await.expect("create");
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("read"),
        ["p1", "p2"]
    );
    // A failed post leaves it listed; a posted message takes it out.
    let mut n = Notification {
        gate: "review#1".into(),
        channel: "C1".into(),
        ts: None,
        thread_ts: None,
        at: Utc::now(),
        error: Some("ratelimited".into()),
        copies: Vec::new(),
    };
    store.record_notification("p1", &n).await.expect("record");
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("read"),
        ["p1", "p2"]
    );
    n.ts = Some("1.2".into());
    n.error = None;
    store.record_notification("p1", &n).await.expect("record");
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("read"),
        ["p2"]
    );
    // A checkpoint of a posted gate does not bring it back; a gate opened
    // since does; leaving the pause clears the entry.
    let mut p1 = store.load("p1").await.expect("load").expect("p1");
    store.checkpoint(&mut p1).await.expect("checkpoint");
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("read"),
        ["p2"]
    );
    let mut second = p1.first_gate().expect("gate").clone();
    second.instance = 2;
    p1.gates.insert(second.handle(), second);
    store.checkpoint(&mut p1).await.expect("checkpoint");
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("read"),
        ["p1", "p2"]
    );
    let mut p2 = store.load("p2").await.expect("load").expect("p2");
    p2.status = Status::Completed;
    store.checkpoint(&mut p2).await.expect("checkpoint");
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("read"),
        ["p1"]
    );
    // A deleted session is not listed.
    store.delete("p1").await.expect("delete");
    assert!(store
        .unposted(None, usize::MAX)
        .await
        .expect("read")
        .is_empty());
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod on_sled {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let store = super::Store::open(dir.path()).expect("open");
                    super::$name(std::sync::Arc::new(store)).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(url) = crate::store::postgres::testdb::database(stringify!($name)).await else {
                        return;
                    };
                    let store = super::Store::connect(std::path::Path::new(&url))
                        .await
                        .expect("connect");
                    assert!(store.ping().await.is_ok());
                    super::$name(std::sync::Arc::new(store)).await;
                }
            )*
        }
    };
}

conformance! {
    a_checkpoint_from_a_stale_copy_is_refused,
    fifty_concurrent_answers_record_exactly_one,
    summaries_follow_sessions_and_prefixes_resolve,
    a_message_finds_its_session_and_gate,
    a_chat_event_is_seen_first_once,
    an_answer_queued_for_a_busy_run_waits_once,
    timers_arm_once_and_fire_once,
    the_audit_chain_never_forks,
    events_have_one_gap_free_sequence,
    a_token_name_is_in_use_once,
    sign_ins_and_keys,
    the_webhook_outbox_queues_and_settles_once,
    leases_go_to_one_replica_at_a_time,
    pages_list_newest_first_and_counts_follow,
    the_workflow_and_approver_indexes_follow_every_change,
    large_outputs_are_kept_apart_and_read_back_whole,
    a_session_written_inline_reads_and_moves_its_text,
    counters_equal_a_recount,
    unposted_gates_are_listed_until_posted,
}
