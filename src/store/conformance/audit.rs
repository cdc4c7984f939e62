//! Conformance scenarios for the audit: the chain never forks, events
//! have one gap-free sequence, and the decisions reports read are the
//! chain's own, by time.

use super::*;

pub(super) async fn the_audit_chain_never_forks(store: Arc<Store>) {
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let ev = AuditEvent::new(AuditKind::Access, &format!("s{i}"), "wf", store.now());
                store.append_audit(&[ev.clone(), ev]).await
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task").expect("append");
    }
    let mut s = paused_session("a1");
    s.audit = vec![AuditEvent::new(AuditKind::Access, "a1", "wf", store.now())];
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

pub(super) async fn events_have_one_gap_free_sequence(store: Arc<Store>) {
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

/// An answer of `who` at `at`, `ms` after its request.
fn answered(session: &str, who: &str, at: DateTime<Utc>, ms: u64) -> AuditEvent {
    let mut e = AuditEvent::new(AuditKind::Answer, session, "payout", at);
    e.gate = Some("approve#1".into());
    e.who = Some(who.into());
    e.via = Some("slack".into());
    e.decision = Some(serde_json::json!({"action": "approve"}));
    e.response_ms = Some(ms);
    e
}

pub(super) async fn decisions_are_read_by_time_from_the_chain(store: Arc<Store>) {
    let t0 = store.now();
    let day = TimeDelta::days(1);
    // Ten days: a request and an answer a day, and a timeout on day 5.
    for d in 0..10 {
        let at = t0 + day * d;
        let request = AuditEvent::new(AuditKind::Request, &format!("s{d}"), "payout", at);
        store
            .append_audit(&[
                request,
                answered(&format!("s{d}"), "alice", at, 1000 * (d as u64 + 1)),
            ])
            .await
            .expect("append");
    }
    let mut timeout = AuditEvent::new(AuditKind::Timeout, "s5", "payout", t0 + day * 5);
    timeout.gate = Some("approve#2".into());
    store.append_audit(&[timeout]).await.expect("append");
    let since = t0 + day * 7;
    let page = store.decided(since, 0, 100).await.expect("decided");
    let ms: Vec<_> = page
        .iter()
        .map(|(seq, b)| crate::audit::decided::Decided::decode(*seq, b).expect("readable"))
        .map(|d| (d.seq, d.ms))
        .collect();
    assert_eq!(ms, [(16, Some(8000)), (18, Some(9000)), (20, Some(10000))]);
    // Paged: after a number, up to a limit.
    let next = store.decided(t0, 4, 2).await.expect("page");
    assert_eq!(next.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [6, 8]);
    // Read again, the same; entries appended since are found.
    assert_eq!(store.decided(since, 0, 100).await.expect("again"), page);
    store
        .append_audit(&[answered("s10", "bob", t0 + day * 9, 42)])
        .await
        .expect("append");
    let mut all = Vec::new();
    store
        .decisions(t0, |d| all.push((d.seq, d.timeout, d.who)))
        .await
        .expect("decisions");
    assert_eq!(all.len(), 12, "ten answers, one timeout, one more answer");
    assert!(all.contains(&(21, true, None)));
    assert_eq!(all.last(), Some(&(22, false, Some("bob".into()))));
    // From two tasks at once: the same, no row twice.
    let (a, b) = tokio::join!(store.decided(t0, 0, 100), store.decided(t0, 0, 100));
    assert_eq!(a.expect("a"), b.expect("b"));
}
