//! Conformance scenarios for the records made once and revoked once:
//! tokens, grants, web sign-ins and keys.

use super::*;

pub(super) async fn a_token_name_is_in_use_once(store: Arc<Store>) {
    use crate::model::token::{NewToken, Role};
    let now = store.now();
    let ev = || AuditEvent::new(AuditKind::Access, "", "", store.now());
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

pub(super) async fn a_grant_is_made_once_and_revoked_once(store: Arc<Store>) {
    use crate::model::grant::{Grant, Limit, Origin, Revocation, State};
    let now = store.now();
    let ev = || AuditEvent::new(AuditKind::Grant, "s1", "wf", store.now());
    let origin = |call: &str| Origin {
        session: "s1".into(),
        gate: "tools#1".into(),
        call: call.into(),
    };
    let limit = Limit::parse(Some("1h"), &["url^=https://api.example.com/".into()]).unwrap();
    let a = Grant::new(&limit, "http_request", "wf", "alice", now, origin("c1"));
    assert!(store.put_grant(&a, &ev()).await.expect("put"));
    assert!(
        !store.put_grant(&a, &ev()).await.expect("put"),
        "the same answer makes one grant"
    );
    let run = Limit::parse(Some("run"), &[]).unwrap();
    let b = Grant::new(&run, "file_write", "wf", "bob", now, origin("c2"));
    assert!(store.put_grant(&b, &ev()).await.expect("put"));
    assert_eq!(store.grants().await.expect("list").len(), 2);
    let by_carol = Revocation {
        at: now,
        by: "carol".into(),
    };
    let revoked = store
        .revoke_grant(&a.id, &by_carol, &ev())
        .await
        .expect("revoke")
        .expect("known");
    assert_eq!(revoked.revoked, Some(by_carol.clone()));
    assert_eq!(revoked.state(now), State::Revoked);
    let later = Revocation {
        at: now,
        by: "dave".into(),
    };
    let again = store
        .revoke_grant(&a.id, &later, &ev())
        .await
        .expect("revoke")
        .expect("known");
    assert_eq!(again.revoked, Some(by_carol), "the first revocation stays");
    assert_eq!(
        store
            .revoke_grant("gr_none", &later, &ev())
            .await
            .expect("revoke"),
        None
    );
    let listed = store.grants().await.expect("list");
    assert_eq!(
        listed
            .iter()
            .find(|g| g.id == a.id)
            .unwrap()
            .revoked
            .as_ref()
            .unwrap()
            .by,
        "carol"
    );
    assert_eq!(listed.iter().find(|g| g.id == b.id), Some(&b));
    // Two made, one revoked: three entries, nothing for the repeats.
    assert_eq!(
        store.audit_head().await.expect("head").map(|h| h.seq),
        Some(3)
    );
}

pub(super) async fn sign_ins_and_keys(store: Arc<Store>) {
    use crate::model::login::{LoginScope, NewLogin};
    use crate::model::token::Role;
    let now = store.now();
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
