//! What only the PostgreSQL backend has: versioned migrations that refuse
//! a newer schema, and errors that name the server, never its password.

use super::*;

#[tokio::test]
async fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let Some(url) = testdb::database("schema").await else {
        return;
    };
    let settings = PgSettings::from_env().expect("settings");
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
    let settings = PgSettings::from_env().expect("settings");
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
    let settings = PgSettings::from_env().expect("settings");
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
             DELETE FROM strands_schema WHERE version = 3;
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
