//! Conformance scenarios for what is kept beside a session: large texts
//! stored apart, the per-status counters and the index of gates never
//! posted.

use super::*;

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
        finished_at: crate::clock::test_epoch(),
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

pub(super) async fn large_outputs_are_kept_apart_and_read_back_whole(store: Arc<Store>) {
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

pub(super) async fn a_session_written_inline_reads_and_moves_its_text(store: Arc<Store>) {
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
    let fired = crate::store::Fired {
        answer: approve("timeout"),
        gate: inline.first_gate().expect("gate").clone(),
        messages: Vec::new(),
    };
    let past = store.now() - TimeDelta::seconds(1);
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
    Status::ALL
        .into_iter()
        .map(|st| (st, all.iter().filter(|s| s.status == st).count() as u64))
        .collect()
}

pub(super) async fn counters_equal_a_recount(store: Arc<Store>) {
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
        ("c7", Status::Cancelled),
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
    let fired = crate::store::Fired {
        answer: approve("timeout"),
        gate: c3.first_gate().expect("gate").clone(),
        messages: Vec::new(),
    };
    store
        .record_timeout(
            &timer("c3", TimerKind::Timeout, store.now(), 0),
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
        .cleanup(store.now() + TimeDelta::days(1))
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

pub(super) async fn unposted_gates_are_listed_until_posted(store: Arc<Store>) {
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
        at: store.now(),
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
