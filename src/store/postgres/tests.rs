//! What only the PostgreSQL backend has: versioned migrations that refuse
//! a newer schema, and errors that name the server, never its password.

use super::*;

#[tokio::test]
async fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let Some(url) = testdb::database("schema").await else {
        return;
    };
    let settings = PgSettings::default();
    let first = PgStore::connect(&url, &settings).await.expect("migrate");
    let again = PgStore::connect(&url, &settings).await.expect("no-op");
    let client = again.client().await.expect("client");
    let versions: i64 = client
        .query_one("SELECT count(*) FROM strands_schema", &[])
        .await
        .expect("versions")
        .get(0);
    assert_eq!(versions, i64::from(schema::VERSION));
    client
        .execute("INSERT INTO strands_schema (version) VALUES (99)", &[])
        .await
        .expect("a newer strands was here");
    drop(client);
    drop((first, again));
    let err = PgStore::connect(&url, &settings)
        .await
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(text.contains("schema version 99"), "{text}");
    assert!(text.contains("newer strands"), "{text}");
    assert_eq!(err.exit_code(), 12);
}

#[tokio::test]
async fn a_wrong_database_is_named_without_its_password() {
    let Some(url) = testdb::database("wrongdb").await else {
        return;
    };
    let wrong = url
        .replace("strands@", "strands:s3cret@")
        .rsplit_once('/')
        .map(|(base, _)| format!("{base}/no_such_database"))
        .expect("a URL with a database");
    let settings = PgSettings::default();
    let err = PgStore::connect(&wrong, &settings)
        .await
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(text.contains("127.0.0.1:"), "{text}");
    assert!(text.contains("no_such_database"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(shown(&wrong), wrong.replace("strands:s3cret@", ""));
}

#[tokio::test]
async fn a_database_of_schema_2_gets_the_workflow_and_approver_indexes_once() {
    let Some(url) = testdb::database("schema2").await else {
        return;
    };
    let settings = PgSettings::default();
    let store = PgStore::connect(&url, &settings).await.expect("connect");
    let mut a = crate::store::sled::tests::paused_session("a");
    a.workflow = "wf-x".into();
    for g in a.gates.values_mut() {
        g.approvers = vec!["U1".into()];
    }
    store.create(&mut a).await.expect("create");
    let mut b = crate::store::sled::tests::paused_session("b");
    b.workflow = "wf-y".into();
    store.create(&mut b).await.expect("create");
    // As schema 2 left it: no workflow column, no approver table.
    store
        .client()
        .await
        .expect("client")
        .batch_execute(
            "DROP TABLE gate_approvers;
             DROP INDEX sessions_workflow_newest;
             DROP INDEX sessions_workflow_status_newest;
             ALTER TABLE sessions DROP COLUMN workflow;
             DROP TABLE session_outputs, session_counts, unposted;
             ALTER TABLE notifications DROP COLUMN posted;
             DROP TABLE teams_conversations, people, mail_outbox, grants, decided;
             DELETE FROM heads WHERE name = 'decided';
             DELETE FROM strands_schema WHERE version >= 3;
             DELETE FROM meta WHERE key = 'index/gate_approvers';",
        )
        .await
        .expect("back to schema 2");
    drop(store);
    let store = PgStore::connect(&url, &settings).await.expect("migrate");
    let u1 = vec!["U1".to_string()];
    assert_eq!(store.awaiting(&u1).await.expect("awaiting"), ["a"]);
    assert_eq!(
        store
            .awaiting(&[crate::store::awaiting::ANYONE.to_string()])
            .await
            .expect("awaiting"),
        ["b"]
    );
    let page = store
        .workflow_page("wf-y", None, None, 10)
        .await
        .expect("page");
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, "b");
    // Once: a second connect finds the mark and the rows as they are.
    drop(store);
    let store = PgStore::connect(&url, &settings).await.expect("again");
    assert_eq!(store.awaiting(&u1).await.expect("awaiting"), ["a"]);
}

fn notification(gate: &str, ts: Option<&str>) -> crate::model::Notification {
    crate::model::Notification {
        gate: gate.into(),
        channel: "C1".into(),
        ts: ts.map(Into::into),
        thread_ts: None,
        at: crate::clock::test_epoch(),
        error: None,
        copies: Vec::new(),
    }
}

#[tokio::test]
async fn schema_4_counts_and_indexes_what_an_existing_database_holds() {
    use crate::model::Status;
    use crate::store::sled::tests::paused_session;
    let Some(url) = testdb::database("schema3").await else {
        return;
    };
    let settings = PgSettings::default();
    {
        let store = PgStore::connect(&url, &settings).await.expect("connect");
        for id in ["p1", "p2"] {
            store.create(&mut paused_session(id)).await.expect("create");
        }
        let mut done = paused_session("d1");
        done.status = Status::Completed;
        done.gates.clear();
        store.create(&mut done).await.expect("create");
        store
            .record_notification("p2", &notification("review#1", Some("1.2")))
            .await
            .expect("posted");
        store
            .record_notification("p1", &notification("review#1", None))
            .await
            .expect("failed post");
        // Back to schema 2, as a database the previous release wrote.
        let client = store.client().await.expect("client");
        client
            .batch_execute(
                "DROP TABLE session_outputs, session_counts, unposted, teams_conversations, people, mail_outbox, grants, decided;
                 DELETE FROM heads WHERE name = 'decided';
                 ALTER TABLE notifications DROP COLUMN posted;
                 DELETE FROM strands_schema WHERE version >= 4;",
            )
            .await
            .expect("downgrade");
    }
    let store = PgStore::connect(&url, &settings).await.expect("migrate");
    let counts = store.status_counts().await.expect("counts");
    assert_eq!(counts[1], (Status::Paused, 2));
    assert_eq!(counts[2], (Status::Completed, 1));
    assert_eq!(
        store.unposted(None, usize::MAX).await.expect("unposted"),
        ["p1"]
    );
    // And they go on from there.
    store
        .record_notification("p1", &notification("review#1", Some("3.4")))
        .await
        .expect("posted");
    assert!(store
        .unposted(None, usize::MAX)
        .await
        .expect("unposted")
        .is_empty());
    // Schema 5 came with it: the Teams conversations' table; 6: the mail
    // outbox.
    assert!(store
        .teams_conversations()
        .await
        .expect("Teams conversations")
        .is_empty());
    assert!(store.mail_failed(10).await.expect("mail outbox").is_empty());
}

#[tokio::test]
async fn a_sled_store_moves_with_its_texts_counters_and_unposted_gates() {
    use crate::model::{PatternState, RecordKind, Status, StepRecord};
    use crate::store::sled::tests::paused_session;
    let Some(url) = testdb::database("import_texts").await else {
        return;
    };
    let text = "A long draft that a human reviews. ".repeat(100);
    let dir = tempfile::tempdir().expect("tempdir");
    let sled = crate::store::sled::SledStore::open(dir.path()).expect("sled");
    for (id, status) in [
        ("a", Status::Paused),
        ("b", Status::Paused),
        ("c", Status::Completed),
    ] {
        let mut s = paused_session(id);
        s.status = status;
        s.state = PatternState::Chain {
            next: 1,
            steps: vec![
                Some(StepRecord {
                    agent: Some("drafter".into()),
                    response: format!("{id}: {text}"),
                    kind: RecordKind::Agent,
                    finished_at: crate::clock::test_epoch(),
                }),
                None,
            ],
        };
        sled.create(&mut s).expect("create");
    }
    sled.record_notification("b", &notification("review#1", Some("1.2")))
        .expect("posted");
    let t0 = chrono::DateTime::from_timestamp(1_770_000_000, 0).expect("a time");
    let conv = crate::model::teams::TeamsConversation {
        id: "a:personal".into(),
        service_url: "https://smba.trafficmanager.net/amer/".into(),
        tenant_id: None,
        channel_id: "msteams".into(),
        bot_id: "28:app".into(),
        kind: crate::model::teams::ConversationKind::Personal,
        name: None,
        first_seen: t0,
        last_seen: t0 + chrono::TimeDelta::hours(1),
    };
    sled.put_teams_conversation(&conv)
        .expect("Teams conversation");
    let mut alice = crate::model::person::Person::named("alice");
    alice.slack = Some("U04ALICE".into());
    alice.groups = vec!["finance".into()];
    let people = vec![alice, crate::model::person::Person::named("bob")];
    let all = people.clone();
    sled.update_people(
        &move |_| Ok(all.clone()),
        &crate::audit::AuditEvent::new(
            crate::audit::AuditKind::Access,
            "",
            "",
            crate::clock::test_epoch(),
        ),
    )
    .expect("people");
    let dump = sled.export().expect("export");
    let settings = PgSettings::default();
    let pg = PgStore::connect(&url, &settings).await.expect("connect");
    pg.import(&dump, false).await.expect("import");
    assert_eq!(
        pg.people().await.expect("people"),
        people,
        "the directory moves"
    );
    for id in ["a", "b", "c"] {
        let want = sled.load(id).expect("load");
        assert!(want.is_some());
        assert_eq!(pg.load(id).await.expect("load"), want, "{id} whole");
        let (raw, apart) = pg.stored_raw(id).await.expect("raw");
        assert!(raw.expect("row").len() < text.len() / 2, "{id} small");
        assert_eq!(apart, 1, "{id}: its text apart");
    }
    assert_eq!(
        pg.status_counts().await.expect("counts"),
        sled.status_counts().expect("counts")
    );
    assert_eq!(
        pg.unposted(None, usize::MAX).await.expect("unposted"),
        ["a"]
    );
    assert_eq!(sled.unposted(None, usize::MAX).expect("unposted"), ["a"]);
    assert_eq!(
        pg.teams_conversations().await.expect("Teams conversations"),
        [conv]
    );
}

#[tokio::test]
async fn each_room_keeps_its_own_record_and_a_failed_card_is_asked_again() {
    use crate::store::sled::tests::paused_session;
    let Some(url) = testdb::database("rooms").await else {
        return;
    };
    let settings = PgSettings::default();
    let store = PgStore::connect(&url, &settings).await.expect("connect");
    store
        .create(&mut paused_session("p1"))
        .await
        .expect("create");
    let unposted = || async { store.unposted(None, usize::MAX).await.expect("unposted") };
    assert_eq!(unposted().await, ["p1"]);
    // Slack posted: asked.
    store
        .record_notification("p1", &notification("review#1", Some("1.2")))
        .await
        .expect("posted");
    assert!(unposted().await.is_empty());
    // The Teams card beside it failed: asked again at start-up, and a
    // checkpoint keeps it so; Slack's record stands.
    let mut card = notification("review#1", None);
    card.channel = "teams:19:a@thread.tacv2".into();
    card.error = Some("not known".into());
    store
        .record_notification("p1", &card)
        .await
        .expect("failed");
    assert_eq!(unposted().await, ["p1"]);
    let mut p1 = store.load("p1").await.expect("load").expect("p1");
    store.checkpoint(&mut p1).await.expect("checkpoint");
    assert_eq!(unposted().await, ["p1"]);
    assert_eq!(store.notifications("p1").await.expect("notes").len(), 2);
    // Posted: every room asked.
    card.ts = Some("act-1".into());
    store
        .record_notification("p1", &card)
        .await
        .expect("posted");
    assert!(unposted().await.is_empty());
    let t = store
        .message_target("teams:19:a@thread.tacv2", "act-1")
        .await
        .expect("read")
        .expect("indexed");
    assert_eq!(t.gate, "review#1");
}

/// What the server function `strands_append` writes is what Rust would:
/// audit entries chained with `audit::entry_hash` and encoded byte for
/// byte as serde_json encodes them, events numbered with no gap and
/// encoded the same (so a store still moves between backends byte for
/// byte), the chain verifies, and the counters follow the statuses.
#[tokio::test]
async fn the_server_appends_exactly_what_rust_would_write() {
    use crate::audit::{entry_hash, AuditEntry, AuditEvent, AuditKind, GENESIS};
    let Some(url) = testdb::database("append").await else {
        return;
    };
    let store = PgStore::connect(&url, &PgSettings::default())
        .await
        .expect("connect");
    let mut want_audit = Vec::new();
    for (i, id) in ["a", "b"].into_iter().enumerate() {
        let mut s = crate::store::sled::tests::paused_session(id);
        s.audit = (0..=i)
            .map(|n| {
                let mut e = AuditEvent::new(
                    AuditKind::Access,
                    id,
                    "wf \"quoted\" é",
                    crate::clock::test_epoch(),
                );
                e.who = Some(format!("user-{n}"));
                e
            })
            .collect();
        s.events = vec![
            crate::model::EventKind::RunCompleted { output_chars: 7 },
            crate::model::EventKind::RunCompleted { output_chars: 8 },
        ];
        want_audit.extend(s.audit.clone());
        store.create(&mut s).await.expect("create");
    }
    let client = store.client().await.expect("client");
    let rows = client
        .query("SELECT seq, body FROM audit ORDER BY seq", &[])
        .await
        .expect("audit");
    assert_eq!(rows.len(), 3);
    let mut prev = GENESIS.to_string();
    for (row, event) in rows.iter().zip(&want_audit) {
        let seq = row.get::<_, i64>(0) as u64;
        let hash = entry_hash(seq, &prev, event);
        let entry = AuditEntry {
            seq,
            prev: prev.clone(),
            hash: hash.clone(),
            event: event.clone(),
        };
        let want = serde_json::to_vec(&entry).expect("encode");
        assert_eq!(
            String::from_utf8_lossy(row.get::<_, &[u8]>(1)),
            String::from_utf8_lossy(&want)
        );
        prev = hash;
    }
    let head = store.audit_head().await.expect("head").expect("a head");
    assert_eq!((head.seq, head.hash), (3, prev));
    let events = client
        .query("SELECT seq, body FROM events ORDER BY seq", &[])
        .await
        .expect("events");
    let seqs: Vec<i64> = events.iter().map(|r| r.get(0)).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
    for row in &events {
        let stored: &[u8] = row.get(1);
        let event: crate::model::Event = decode("event", stored).expect("decode");
        assert_eq!(event.seq, row.get::<_, i64>(0) as u64);
        assert_eq!(
            stored,
            serde_json::to_vec(&event).expect("encode").as_slice()
        );
    }
    assert_eq!(store.last_event().await.expect("head"), 4);
    let counts = store.status_counts().await.expect("counts");
    assert!(
        counts.contains(&(crate::model::Status::Paused, 2)),
        "{counts:?}"
    );
    store.delete("a").await.expect("delete");
    let counts = store.status_counts().await.expect("counts");
    assert!(
        counts.contains(&(crate::model::Status::Paused, 1)),
        "{counts:?}"
    );
}
