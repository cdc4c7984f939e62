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

mod apart;
mod audit;
mod indexes;
mod records;
use apart::*;
use audit::*;
use indexes::*;
use records::*;

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
        .cleanup(store.now() + TimeDelta::days(1))
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
        at: store.now(),
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
    let past = store.now() - TimeDelta::seconds(5);
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

const HOOK: &str = "http://127.0.0.1:9/hook";
const LEASE: std::time::Duration = std::time::Duration::from_secs(60);

async fn the_webhook_outbox_queues_and_settles_once(store: Arc<Store>) {
    reports(&store, "old", vec![run_failed("history")]).await;
    let hooks = [HOOK.to_string()];
    let now = store.now();
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
        .webhook_settle(&[(taken[0].clone(), Settle::Delivered)])
        .await
        .expect("delivered");
    // A retry and a give-up settled in one write.
    let later = now + TimeDelta::seconds(5);
    store
        .webhook_settle(&[
            (
                taken[1].clone(),
                Settle::Retry {
                    at: later,
                    error: "HTTP 503".into(),
                },
            ),
            (
                taken[2].clone(),
                Settle::GaveUp {
                    error: "HTTP 400".into(),
                },
            ),
        ])
        .await
        .expect("retry and gave up");
    let again = store.webhook_due(later, LEASE, 10).await.expect("due");
    assert_eq!(again.iter().map(Delivery::seq).collect::<Vec<_>>(), [4]);
    assert_eq!(again[0].attempts, 2);
    let failed = store.webhook_failed(10).await.expect("failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].last_error.as_deref(), Some("HTTP 400"));
    assert!(store.webhook_next_due().await.expect("next").is_some());
}

/// Gives up on every pending delivery due by `now`; their message ids.
async fn give_up_all(store: &Store, now: DateTime<Utc>) -> Vec<String> {
    let mut ids = Vec::new();
    for d in store.webhook_due(now, LEASE, 100).await.expect("due") {
        ids.push(d.msg_id.clone());
        let error = "HTTP 410".to_string();
        store
            .webhook_settle(&[(d, Settle::GaveUp { error })])
            .await
            .expect("gave up");
    }
    ids
}

async fn given_up_deliveries_are_queued_again_once(store: Arc<Store>) {
    let hooks = [HOOK.to_string(), "http://127.0.0.1:9/other".to_string()];
    let now = store.now();
    store.webhook_pull(&hooks, now, 100).await.expect("cursor");
    reports(&store, "s1", vec![run_failed("a"), run_failed("b")]).await;
    assert_eq!(store.webhook_pull(&hooks, now, 100).await.expect("pull"), 4);
    let ids = give_up_all(&store, now).await;
    assert_eq!(ids.len(), 4);
    assert!(store.webhook_next_due().await.expect("next").is_none());

    // One message id: its deliveries to both endpoints, once.
    let one = [ids[0].clone()];
    let (a, b) = tokio::join!(
        store.webhook_requeue(Some(&one), now),
        store.webhook_requeue(Some(&one), now)
    );
    assert_eq!(a.expect("requeue") + b.expect("requeue"), 2);
    assert_eq!(store.webhook_failed(10).await.expect("failed").len(), 2);
    let later = now + TimeDelta::seconds(1);
    let again = store.webhook_due(later, LEASE, 10).await.expect("due");
    assert_eq!(again.len(), 2);
    assert!(
        again.iter().all(|d| d.msg_id == ids[0]),
        "the same message id"
    );
    assert!(
        again
            .iter()
            .all(|d| d.attempts == 1 && d.first_attempt_at == Some(later)),
        "attempts counted afresh: {again:?}"
    );
    for d in &again {
        store
            .webhook_settle(&[(d.clone(), Settle::Delivered)])
            .await
            .expect("delivered");
    }

    // An unknown id changes nothing; none means all.
    let unknown = ["msg_nope_1".to_string()];
    assert_eq!(
        store
            .webhook_requeue(Some(&unknown), now)
            .await
            .expect("requeue"),
        0
    );
    assert_eq!(store.webhook_requeue(None, now).await.expect("requeue"), 2);
    assert!(store.webhook_failed(10).await.expect("failed").is_empty());
    assert_eq!(
        store
            .webhook_due(later, LEASE, 10)
            .await
            .expect("due")
            .len(),
        2
    );
    assert_eq!(store.webhook_requeue(None, now).await.expect("requeue"), 0);
}

async fn a_mail_is_queued_once_and_sent_once(store: Arc<Store>) {
    use crate::model::mail::{Mail, MailKind};
    let now = store.now();
    let mails: Vec<Mail> = ["a@x.example", "b@x.example", "c@x.example"]
        .iter()
        .map(|to| Mail::new("s1", "review#1", MailKind::Ask, to, now))
        .collect();
    for m in &mails {
        assert!(store.mail_queue(m).await.expect("queue"));
        assert!(!store.mail_queue(m).await.expect("again"), "queued once");
    }
    // Two senders take at once: each mail goes to one of them.
    let (a, b) = tokio::join!(store.mail_due(now, LEASE, 3), store.mail_due(now, LEASE, 3));
    let mut taken = a.expect("due");
    taken.extend(b.expect("due"));
    taken.sort_by(|x, y| x.to.cmp(&y.to));
    assert_eq!(taken.len(), 3);
    assert!(taken.iter().all(|m| m.attempts == 1));
    assert!(store
        .mail_due(now + TimeDelta::seconds(59), LEASE, 10)
        .await
        .expect("due")
        .is_empty());
    store
        .mail_settle(&taken[0], Settle::Delivered)
        .await
        .expect("sent");
    // A late retry of a sent mail changes nothing; neither does queuing it.
    let later = now + TimeDelta::seconds(5);
    let retry = Settle::Retry {
        at: later,
        error: "421".into(),
    };
    store
        .mail_settle(&taken[0], retry.clone())
        .await
        .expect("late");
    assert!(!store.mail_queue(&mails[0]).await.expect("sent once"));
    store.mail_settle(&taken[1], retry).await.expect("retry");
    store
        .mail_settle(
            &taken[2],
            Settle::GaveUp {
                error: "550 no such user".into(),
            },
        )
        .await
        .expect("gave up");
    let again = store.mail_due(later, LEASE, 10).await.expect("due");
    assert_eq!(
        again.iter().map(|m| m.to.as_str()).collect::<Vec<_>>(),
        ["b@x.example"]
    );
    assert_eq!(again[0].attempts, 2);
    let failed = store.mail_failed(10).await.expect("failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].to, "c@x.example");
    assert_eq!(failed[0].last_error.as_deref(), Some("550 no such user"));
    assert!(!store.mail_queue(&mails[2]).await.expect("failed once"));
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
        assert!(store
            .unleased_running(None, 10)
            .await
            .expect("list")
            .is_empty());
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let ids = |page: Vec<(chrono::DateTime<chrono::Utc>, String)>| {
            page.into_iter().map(|(_, id)| id).collect::<Vec<_>>()
        };
        assert_eq!(
            ids(store.unleased_running(None, 10).await.expect("list")),
            ["s"]
        );
        assert!(store.take_lease("s", "b", ttl).await.expect("lapsed"));
        store.release_lease("s", "a").await.expect("not a's");
        assert!(!store.take_lease("s", "a", ttl).await.expect("b's"));
        store.release_lease("s", "b").await.expect("release");
        assert!(store.take_lease("s", "a", ttl).await.expect("free"));
    }
}

async fn the_backlog_reads_running_runs_oldest_first_a_page_at_a_time(store: Arc<Store>) {
    let t0 = store.now();
    // Created out of order; two share a time (then by id).
    for (secs, id) in [(3, "rc"), (1, "rb"), (1, "ra"), (0, "r0"), (2, "p1")] {
        let mut s = paused_session(id);
        s.created_at = t0 + TimeDelta::seconds(secs);
        if id.starts_with('r') {
            s.status = Status::Running;
        }
        store.create(&mut s).await.expect("create");
    }
    let ids = |page: &[(chrono::DateTime<chrono::Utc>, String)]| {
        page.iter().map(|(_, id)| id.clone()).collect::<Vec<_>>()
    };
    let first = store.unleased_running(None, 2).await.expect("page");
    assert_eq!(ids(&first), ["r0", "ra"]);
    let rest = store
        .unleased_running(first.last().cloned(), 10)
        .await
        .expect("page");
    assert_eq!(ids(&rest), ["rb", "rc"]);
    assert!(store
        .unleased_running(rest.last().cloned(), 10)
        .await
        .expect("page")
        .is_empty());
    // Paused: no longer part of the backlog.
    let mut s = store.load("ra").await.expect("load").expect("there");
    s.status = Status::Paused;
    store.checkpoint(&mut s).await.expect("pause");
    let all = store.unleased_running(None, 10).await.expect("page");
    assert_eq!(ids(&all), ["r0", "rb", "rc"]);
    if store.is_shared() {
        // Leased by a replica: not in anyone's backlog.
        assert!(store
            .take_lease("rb", "a", std::time::Duration::from_secs(30))
            .await
            .expect("take"));
        let all = store.unleased_running(None, 10).await.expect("page");
        assert_eq!(ids(&all), ["r0", "rc"]);
    }
}

async fn pages_list_newest_first_and_counts_follow(store: Arc<Store>) {
    let t0 = store.now();
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

async fn a_teams_conversation_keeps_its_first_sighting(store: Arc<Store>) {
    use crate::model::teams::{ConversationKind, TeamsConversation};
    // Whole seconds: both backends keep them exactly.
    let t0 = chrono::DateTime::from_timestamp(1_770_000_000, 0).expect("a time");
    let conv = |id: &str, url: &str, at: chrono::DateTime<Utc>| TeamsConversation {
        id: id.into(),
        service_url: url.into(),
        tenant_id: Some("tid".into()),
        channel_id: "msteams".into(),
        bot_id: "28:app".into(),
        kind: ConversationKind::Channel,
        name: Some("General".into()),
        first_seen: at,
        last_seen: at,
    };
    assert!(store.teams_conversations().await.expect("list").is_empty());
    let first = conv(
        "19:a@thread.tacv2",
        "https://smba.trafficmanager.net/amer/",
        t0,
    );
    store.put_teams_conversation(&first).await.expect("put");
    let other = conv("a:personal", "https://smba.trafficmanager.net/amer/", t0);
    store.put_teams_conversation(&other).await.expect("put");
    // Seen again, from another region, with no name this time.
    let later = t0 + TimeDelta::minutes(5);
    let mut again = conv(
        "19:a@thread.tacv2",
        "https://smba.trafficmanager.net/emea/",
        later,
    );
    again.name = None;
    store.put_teams_conversation(&again).await.expect("refresh");
    let all = store.teams_conversations().await.expect("list");
    assert_eq!(all.len(), 2, "{all:?}");
    let got = all.iter().find(|c| c.id == first.id).expect("listed");
    assert_eq!(got.first_seen, t0);
    assert_eq!(got.last_seen, later);
    assert_eq!(got.service_url, "https://smba.trafficmanager.net/emea/");
    assert_eq!(got.name.as_deref(), Some("General"));
    assert_eq!(all.iter().find(|c| c.id == other.id), Some(&other));
}

async fn the_people_directory_changes_whole_or_not_at_all(store: Arc<Store>) {
    use crate::model::person::{Directory, Person};
    let now = store.now();
    let audit = move |what: &str| {
        let mut ev = AuditEvent::new(AuditKind::Access, "", "", now);
        ev.detail = Some(what.to_string());
        ev
    };
    assert!(store.people().await.expect("people").is_empty());
    let mut alice = Person::named("alice");
    alice.slack = Some("U04ALICE".into());
    alice.groups = vec!["finance".into()];
    let a = alice.clone();
    let got = store
        .update_people(
            &move |now| Ok(Directory::new(now)?.with(a.clone(), false)?.into_people()),
            &audit("added alice"),
        )
        .await
        .expect("added");
    assert_eq!(got, vec![alice.clone()]);
    let entries = store.audit_entries().await.expect("audit").len();
    // A refused change writes nothing, not even its audit entry.
    let refused = store
        .update_people(
            &|now| {
                let mut bob = Person::named("bob");
                bob.slack = Some("U04ALICE".into());
                Ok(Directory::new(now)?.with(bob, false)?.into_people())
            },
            &audit("added bob"),
        )
        .await
        .expect_err("a clash");
    assert!(refused.to_string().contains("U04ALICE"), "{refused}");
    assert_eq!(store.people().await.expect("people"), vec![alice.clone()]);
    assert_eq!(store.audit_entries().await.expect("audit").len(), entries);
    // Concurrent changes: none is lost.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let p = Person::named(&format!("p{i:02}"));
            store
                .update_people(
                    &move |now| Ok(Directory::new(now)?.with(p.clone(), false)?.into_people()),
                    &audit("added one"),
                )
                .await
                .expect("added")
        }));
    }
    for t in tasks {
        t.await.expect("joined");
    }
    let all = store.people().await.expect("people");
    assert_eq!(all.len(), 17, "{all:?}");
    assert_eq!(
        store.audit_entries().await.expect("audit").len(),
        entries + 16
    );
    let d = store.directory().await.expect("directory");
    assert_eq!(d.canonical("U04ALICE"), "alice");
    // A delegation is kept with the person, and a cycle stores nothing.
    use crate::model::person::delegation::Delegation;
    let now = chrono::DateTime::parse_from_rfc3339("2026-12-20T09:00:00Z")
        .expect("a time")
        .to_utc();
    let away = |to: &str| Delegation {
        to: to.into(),
        starts: now,
        ends: now + chrono::TimeDelta::days(14),
        set_by: "alice".into(),
        set_at: now,
        reason: Some("winter break".into()),
    };
    let one = away("p00");
    let got = store
        .update_people(
            &move |stored| {
                Ok(Directory::new(stored)?
                    .delegate("alice", one.clone(), now)?
                    .into_people())
            },
            &audit("delegated alice"),
        )
        .await
        .expect("delegated");
    let stored = store.people().await.expect("people");
    assert_eq!(got, stored);
    let alice_now = stored.iter().find(|p| p.name == "alice").expect("alice");
    assert_eq!(alice_now.delegations, vec![away("p00")]);
    let entries = store.audit_entries().await.expect("audit").len();
    let back = away("alice");
    let refused = store
        .update_people(
            &move |stored| {
                Ok(Directory::new(stored)?
                    .delegate("p00", back.clone(), now)?
                    .into_people())
            },
            &audit("delegated p00"),
        )
        .await
        .expect_err("a cycle");
    assert!(refused.to_string().contains("cycle"), "{refused}");
    assert_eq!(store.people().await.expect("people"), stored);
    assert_eq!(store.audit_entries().await.expect("audit").len(), entries);
    let d = store.directory().await.expect("directory");
    assert_eq!(d.delegates_of("alice", now), ["p00"]);
}

/// The stores' clock: from a known instant, moving with tokio's.
fn test_clock() -> crate::clock::SharedClock {
    Arc::new(crate::clock::TokioClock::starting_at(
        crate::clock::test_epoch(),
    ))
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod on_sled {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let store = super::Store::open(dir.path())
                        .expect("open")
                        .with_clock(super::test_clock());
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
                        .expect("connect")
                        .with_clock(super::test_clock());
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
    decisions_are_read_by_time_from_the_chain,
    events_have_one_gap_free_sequence,
    a_token_name_is_in_use_once,
    a_grant_is_made_once_and_revoked_once,
    sign_ins_and_keys,
    the_webhook_outbox_queues_and_settles_once,
    given_up_deliveries_are_queued_again_once,
    a_mail_is_queued_once_and_sent_once,
    leases_go_to_one_replica_at_a_time,
    the_backlog_reads_running_runs_oldest_first_a_page_at_a_time,
    pages_list_newest_first_and_counts_follow,
    the_workflow_and_approver_indexes_follow_every_change,
    large_outputs_are_kept_apart_and_read_back_whole,
    a_session_written_inline_reads_and_moves_its_text,
    counters_equal_a_recount,
    unposted_gates_are_listed_until_posted,
    a_teams_conversation_keeps_its_first_sighting,
    the_people_directory_changes_whole_or_not_at_all,
}
