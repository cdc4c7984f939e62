//! The store's promises: exactly-once answers, compare-and-swap writes,
//! summaries that follow their sessions.

use super::*;
use crate::model::webhook::{Delivery, Settle};
use crate::model::Decision;
use std::sync::Arc;

pub(crate) use crate::gate::testkit::paused_session;

pub(crate) fn approve(by: &str) -> Answer {
    Answer {
        decision: Decision::Approve,
        by: by.into(),
        at: crate::clock::test_epoch(),
        via: "test".into(),
        vars: Default::default(),
        call: None,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
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
        .cleanup(crate::clock::test_epoch() + chrono::Duration::days(1))
        .expect("cleanup");
    assert_eq!(removed, vec!["d1".to_string()]);
    assert!(store.load("p1").expect("load").is_some());
    assert_eq!(store.resolve("p1").expect("resolve"), "p1");
}

#[test]
fn timer_keys_sort_by_due_time() {
    let due = crate::clock::test_epoch();
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
    let now = crate::clock::test_epoch();
    let ev = || AuditEvent::new(AuditKind::Access, "", "", crate::clock::test_epoch());
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

/// Writes a session whose write reports `kinds` (numbered by the store).
fn reports(store: &SledStore, id: &str, kinds: Vec<crate::model::EventKind>) {
    let mut s = paused_session(id);
    s.events = kinds;
    store.create(&mut s).expect("create");
}

fn run_failed(message: &str) -> crate::model::EventKind {
    crate::model::EventKind::RunFailed {
        message: message.into(),
    }
}

fn step_done() -> crate::model::EventKind {
    crate::model::EventKind::StepDone {
        tokens: 0,
        millis: 0,
        position: "steps[0]".into(),
        agent: "a".into(),
    }
}

const HOOK: &str = "http://127.0.0.1:9/hook";
const LEASE: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn a_new_endpoint_starts_at_the_last_event_and_then_misses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    reports(
        &store,
        "old",
        vec![run_failed("history"), run_failed("more")],
    );
    let hooks = [HOOK.to_string()];
    let now = crate::clock::test_epoch();
    assert_eq!(store.webhook_pull(&hooks, now, 100).expect("pull"), 0);
    assert!(
        store.webhook_due(now, LEASE, 10).expect("due").is_empty(),
        "no history"
    );

    reports(&store, "s1", vec![step_done(), run_failed("one")]);
    reports(&store, "s2", vec![run_failed("two")]);
    assert_eq!(
        store.webhook_pull(&hooks, now, 100).expect("pull"),
        2,
        "step.done is not carried"
    );
    assert_eq!(
        store.webhook_pull(&hooks, now, 100).expect("pull"),
        0,
        "queued once"
    );
    let due = store.webhook_due(now, LEASE, 10).expect("due");
    let seqs: Vec<u64> = due.iter().map(Delivery::seq).collect();
    assert_eq!(seqs, [4, 5]);
    assert_eq!(due[0].event.session, "s1");
    assert_eq!(due[0].endpoint, HOOK);
    assert!(due
        .iter()
        .all(|d| d.attempts == 1 && d.first_attempt_at == Some(now)));
    assert_ne!(due[0].msg_id, due[1].msg_id);

    // A second endpoint added now starts at event 5, like the first did.
    let both = [HOOK.to_string(), "http://127.0.0.1:9/other".to_string()];
    assert_eq!(store.webhook_pull(&both, now, 100).expect("pull"), 0);
    reports(&store, "s3", vec![run_failed("three")]);
    assert_eq!(
        store.webhook_pull(&both, now, 100).expect("pull"),
        2,
        "one each"
    );
}

/// Only events on stable storage go out: those of a write whose sync is
/// still owed (one made `WithNext`) are queued once a sync covers them.
#[test]
fn a_pull_queues_no_event_of_a_write_not_synced_yet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let hooks = [HOOK.to_string()];
    let now = crate::clock::test_epoch();
    store.webhook_pull(&hooks, now, 10).expect("start");
    let mut s = paused_session("held");
    store.create(&mut s).expect("create");
    s.events = vec![run_failed("held back")];
    store
        .checkpoint_with(&mut s, crate::store::Durability::WithNext)
        .expect("write");
    assert_eq!(
        store.webhook_pull(&hooks, now, 10).expect("pull"),
        0,
        "its write is not on stable storage yet"
    );
    reports(&store, "next", vec![run_failed("synced")]);
    assert_eq!(
        store.webhook_pull(&hooks, now, 10).expect("pull"),
        2,
        "the next write's sync covers both"
    );
    // What a store holds when it is opened is queued at once.
    let more = {
        let mut t = paused_session("later");
        store.create(&mut t).expect("create");
        t.events = vec![run_failed("before a restart")];
        store
            .checkpoint_with(&mut t, crate::store::Durability::WithNext)
            .expect("write");
        drop(store);
        SledStore::open(dir.path()).expect("reopen")
    };
    assert_eq!(more.webhook_pull(&hooks, now, 10).expect("pull"), 1);
}

#[test]
fn pulls_are_bounded_and_catch_up_over_several_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let hooks = [HOOK.to_string()];
    let now = crate::clock::test_epoch();
    store
        .webhook_pull(&hooks, now, 3)
        .expect("start the cursor");
    // Many events webhooks do not carry, then five they do.
    reports(&store, "quiet", (0..20).map(|_| step_done()).collect());
    reports(
        &store,
        "loud",
        (0..5).map(|i| run_failed(&i.to_string())).collect(),
    );
    assert_eq!(store.webhook_pull(&hooks, now, 3).expect("pull"), 3);
    assert_eq!(store.webhook_pull(&hooks, now, 3).expect("pull"), 2);
    assert_eq!(store.webhook_pull(&hooks, now, 3).expect("pull"), 0);
    let due = store.webhook_due(now, LEASE, 100).expect("due");
    assert_eq!(
        due.iter().map(Delivery::seq).collect::<Vec<_>>(),
        [21, 22, 23, 24, 25]
    );
}

#[test]
fn pending_deliveries_survive_a_restart_with_the_same_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = [HOOK.to_string()];
    let now = crate::clock::test_epoch();
    let first_id = {
        let store = SledStore::open(dir.path()).expect("open");
        store.webhook_pull(&hooks, now, 10).expect("start");
        reports(&store, "s1", vec![run_failed("one"), run_failed("two")]);
        assert_eq!(store.webhook_pull(&hooks, now, 10).expect("pull"), 2);
        // One is taken for an attempt and the process dies with it in flight.
        let taken = store.webhook_due(now, LEASE, 1).expect("due");
        assert_eq!(taken.len(), 1);
        taken[0].msg_id.clone()
    };
    let store = SledStore::open(dir.path()).expect("reopen");
    let again = store.webhook_due(now, LEASE, 10).expect("due");
    assert_eq!(again.len(), 1, "the one in flight waits for its lease");
    assert_eq!(again[0].seq(), 2);
    store
        .webhook_settle(&[(again[0].clone(), Settle::Delivered)])
        .expect("delivered");
    let after_lease = now + chrono::TimeDelta::seconds(61);
    let retried = store.webhook_due(after_lease, LEASE, 10).expect("due");
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].seq(), 1);
    assert_eq!(
        retried[0].msg_id, first_id,
        "the same webhook-id on every attempt"
    );
    assert_eq!(retried[0].attempts, 2, "the attempt that died counts");
    assert_eq!(retried[0].first_attempt_at, Some(now));
    assert_eq!(
        store.webhook_pull(&hooks, now, 10).expect("pull"),
        0,
        "nothing queued twice"
    );
}

#[test]
fn a_taken_delivery_is_not_taken_again_during_its_lease() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let hooks = [HOOK.to_string()];
    let now = crate::clock::test_epoch();
    store.webhook_pull(&hooks, now, 10).expect("start");
    reports(&store, "s1", vec![run_failed("one")]);
    store.webhook_pull(&hooks, now, 10).expect("pull");
    let taken = store.webhook_due(now, LEASE, 10).expect("due");
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].next_at, now + chrono::TimeDelta::seconds(60));
    assert_eq!(
        store.webhook_next_due().expect("next"),
        Some(taken[0].next_at)
            .map(|t| { DateTime::from_timestamp_millis(t.timestamp_millis()).expect("ms") })
    );
    let almost = now + chrono::TimeDelta::seconds(59);
    assert!(store
        .webhook_due(almost, LEASE, 10)
        .expect("due")
        .is_empty());
    // A zero lease takes it once per call, never twice in one.
    let late = now + chrono::TimeDelta::seconds(60);
    let zero = std::time::Duration::ZERO;
    assert_eq!(store.webhook_due(late, zero, 10).expect("due").len(), 1);
}

#[test]
fn settling_deletes_reschedules_or_gives_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(dir.path()).expect("open");
    let hooks = [HOOK.to_string()];
    let now = crate::clock::test_epoch();
    store.webhook_pull(&hooks, now, 10).expect("start");
    reports(
        &store,
        "s1",
        vec![run_failed("a"), run_failed("b"), run_failed("c")],
    );
    store.webhook_pull(&hooks, now, 10).expect("pull");
    let taken = store.webhook_due(now, LEASE, 10).expect("due");
    let [a, b, c] = taken.as_slice() else {
        panic!("three deliveries: {taken:?}");
    };
    store
        .webhook_settle(&[(a.clone(), Settle::Delivered)])
        .expect("delivered");
    let later = now + chrono::TimeDelta::seconds(5);
    let retry = Settle::Retry {
        at: later,
        error: "HTTP 503".into(),
    };
    let gave_up = Settle::GaveUp {
        error: "HTTP 400".into(),
    };
    store
        .webhook_settle(&[(b.clone(), retry), (c.clone(), gave_up)])
        .expect("retry and gave up");

    assert!(store
        .webhook_due(later - chrono::TimeDelta::seconds(1), LEASE, 10)
        .expect("due")
        .is_empty());
    let again = store.webhook_due(later, LEASE, 10).expect("due");
    assert_eq!(again.iter().map(Delivery::seq).collect::<Vec<_>>(), [2]);
    assert_eq!(again[0].last_error.as_deref(), Some("HTTP 503"));
    assert_eq!(again[0].attempts, 2);

    // A settle from the attempt that was replaced changes nothing.
    store
        .webhook_settle(&[(
            b.clone(),
            Settle::GaveUp {
                error: "stale".into(),
            },
        )])
        .expect("stale");
    assert!(store
        .webhook_failed(10)
        .expect("failed")
        .iter()
        .all(|d| d.seq() != 2));

    let failed = store.webhook_failed(10).expect("failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].seq(), 3);
    assert_eq!(failed[0].last_error.as_deref(), Some("HTTP 400"));
    assert_eq!(failed[0].attempts, 1);

    store
        .webhook_settle(&[(again[0].clone(), Settle::Delivered)])
        .expect("delivered");
    assert_eq!(
        store.webhook_next_due().expect("next"),
        None,
        "nothing pending"
    );
    let far = now + chrono::TimeDelta::days(30);
    assert!(store.webhook_due(far, LEASE, 10).expect("due").is_empty());
    assert_eq!(
        store.webhook_failed(10).expect("failed").len(),
        1,
        "failed ones stay"
    );
}

#[test]
fn writers_waiting_on_a_sync_share_the_next_one() {
    use std::sync::atomic::Ordering::SeqCst;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SledStore::open(dir.path()).expect("open"));
    let before = store.syncs.load(SeqCst);
    // A sync in progress: six writers commit and queue behind it.
    let busy = store.synced.lock().expect("lock");
    let tickets = store.sync_tickets.load(SeqCst);
    let writers: Vec<_> = (0..6)
        .map(|i| {
            let s = Arc::clone(&store);
            std::thread::spawn(move || s.create(&mut paused_session(&format!("w{i}"))))
        })
        .collect();
    while store.sync_tickets.load(SeqCst) < tickets + 6 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(busy);
    for w in writers {
        w.join().expect("writer").expect("create");
    }
    assert_eq!(
        store.syncs.load(SeqCst) - before,
        1,
        "one sync covers every write committed before it began"
    );
    for i in 0..6 {
        assert!(store.load(&format!("w{i}")).expect("load").is_some());
    }
    // A write after it gets a sync of its own.
    store.create(&mut paused_session("after")).expect("create");
    assert_eq!(store.syncs.load(SeqCst) - before, 2);
}

/// Through the seam (`strands serve`'s runtime), a write's slot is freed
/// before its sync: twenty writers queued behind one slow sync all commit
/// meanwhile, and the next sync covers every one of them — with the sync
/// inside the slot, only one writer per slot could.
#[test]
fn writers_through_the_seam_commit_while_a_sync_runs_and_share_the_next() {
    use crate::store::Backend;
    use std::sync::atomic::Ordering::SeqCst;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SledStore::open(dir.path()).expect("open"));
    let before = store.syncs.load(SeqCst);
    let busy = store.synced.lock().expect("lock");
    let tickets = store.sync_tickets.load(SeqCst);
    let writers: Vec<_> = (0..20)
        .map(|i| {
            let s = Arc::clone(&store);
            rt.spawn(async move {
                let mut session = paused_session(&format!("w{i}"));
                Backend::create(&*s, &mut session).await
            })
        })
        .collect();
    // Every writer committed and waits on the sync: none holds a slot.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while store.sync_tickets.load(SeqCst) < tickets + 20 {
        assert!(
            std::time::Instant::now() < until,
            "only {} of 20 writers reached the sync",
            store.sync_tickets.load(SeqCst) - tickets
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(busy);
    for w in writers {
        rt.block_on(w).expect("writer").expect("create");
    }
    assert_eq!(store.syncs.load(SeqCst) - before, 1, "one sync for all");
    for i in 0..20 {
        assert!(store.load(&format!("w{i}")).expect("load").is_some());
    }
}

/// `store verify` on sled: a summary gone, a record gone, a record that
/// does not decode — each is named; a sound store has none.
#[test]
fn verify_names_each_record_that_disagrees_with_the_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let store = crate::store::Store::open(dir.path()).expect("open");
    let crate::store::Store::Sled(sled) = &store else {
        panic!("a sled store");
    };
    for id in ["aaaa-1", "bbbb-2", "cccc-3", "dddd-4"] {
        sled.create(&mut paused_session(id)).expect("create");
    }
    let sound = rt
        .block_on(crate::store::verify::verify(&store))
        .expect("verify");
    assert!(sound.ok, "{sound:?}");
    assert_eq!((sound.sessions, sound.listed), (4, 4));
    sled.summaries.remove("aaaa-1").expect("remove a summary");
    sled.sessions.remove("bbbb-2").expect("remove a record");
    sled.sessions
        .insert("cccc-3", &b"{not json"[..])
        .expect("garble a record");
    let found = rt
        .block_on(crate::store::verify::verify(&store))
        .expect("verify");
    assert!(!found.ok);
    let all = found.problems.join("\n");
    assert!(
        all.contains("session aaaa-1 (paused) has no summary"),
        "{all}"
    );
    assert!(
        all.contains("lists session bbbb-2, which has no record"),
        "{all}"
    );
    assert!(
        all.contains("session cccc-3: its record does not decode"),
        "{all}"
    );
    assert!(!all.contains("dddd-4"), "{all}");
    assert_eq!(found.decoded, 2);
}

/// `store verify` on sled: index entries by workflow and by approver that
/// went missing are named, session by session.
#[test]
fn verify_names_sessions_missing_from_the_workflow_and_approver_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let store = crate::store::Store::open(dir.path()).expect("open");
    let crate::store::Store::Sled(sled) = &store else {
        panic!("a sled store");
    };
    for id in ["aaaa-1", "bbbb-2"] {
        sled.create(&mut paused_session(id)).expect("create");
    }
    let sound = rt
        .block_on(crate::store::verify::verify(&store))
        .expect("verify");
    assert!(sound.ok, "{sound:?}");
    // Drop every entry of both indexes (keys `W…` and `A…`).
    let order = sled.tree(trees::SESSION_ORDER).expect("order tree");
    let keys: Vec<sled::IVec> = order
        .iter()
        .keys()
        .filter_map(|k| k.ok())
        .filter(|k| k.first().is_some_and(|b| *b == b'W' || *b == b'A'))
        .collect();
    assert!(!keys.is_empty(), "the store keeps both indexes");
    for k in keys {
        order.remove(k).expect("remove an index entry");
    }
    let found = rt
        .block_on(crate::store::verify::verify(&store))
        .expect("verify");
    assert!(!found.ok);
    let all = found.problems.join("\n");
    for id in ["aaaa-1", "bbbb-2"] {
        assert!(
            found
                .problems
                .iter()
                .any(|p| p.starts_with("the index of workflow")
                    && p.ends_with(&format!("misses session {id}"))),
            "{all}"
        );
        assert!(
            all.contains(&format!("the index by approver misses session {id}")),
            "{all}"
        );
    }
}

/// sled lets go of its lock a moment after the last handle drops: a store
/// this process just closed is reopened once the lock is free, while one
/// whose lock nobody here let go of is "in use" at once.
#[test]
fn a_store_closed_here_is_reopened_once_its_lock_is_let_go() {
    use fs2::FileExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store");
    let store = SledStore::open(&path).expect("open");
    // What sled's background thread does for a moment: hold the lock.
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path.join("db"))
        .expect("db");
    drop(store);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while holder.try_lock_exclusive().is_err() {
        assert!(std::time::Instant::now() < until, "sled never let go");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(holder);
    });
    let started = std::time::Instant::now();
    let again = SledStore::open(&path).expect("reopened once the lock was let go");
    assert!(started.elapsed() >= std::time::Duration::from_millis(150));
    release.join().expect("join");
    drop(again);

    // A store this process never closed, locked by someone else: at once.
    let other = tempfile::tempdir().expect("tempdir");
    let other_path = other.path().join("store");
    drop(SledStore::open(&other_path).expect("create"));
    recently_closed()
        .lock()
        .expect("registry")
        .remove(&other_path);
    let foreign = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(other_path.join("db"))
        .expect("db");
    foreign.try_lock_exclusive().expect("lock");
    let started = std::time::Instant::now();
    let Err(e) = SledStore::open(&other_path) else {
        panic!("a store locked elsewhere must not open");
    };
    assert!(
        e.to_string().contains("in use by another strands process"),
        "{e}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}
