//! Conformance scenarios for the indexes by workflow and by approver of
//! open gates: whatever the writes, a page or a lookup says what a scan
//! of every session says.

use super::*;

/// A session of `workflow` created at `at`, paused at one gate listing
/// `approvers`.
fn gated(id: &str, workflow: &str, approvers: &[&str], at: DateTime<Utc>) -> crate::model::Session {
    let mut s = paused_session(id);
    s.workflow = workflow.into();
    s.created_at = at;
    for g in s.gates.values_mut() {
        g.approvers = approvers.iter().map(|a| (*a).into()).collect();
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
                crate::store::awaiting::entries(s)
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
        .flat_map(crate::store::awaiting::entries)
        .filter_map(|(_, a)| {
            crate::model::Approver::parse(&a)
                .slack_group()
                .map(str::to_string)
        })
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

pub(super) async fn the_workflow_and_approver_indexes_follow_every_change(store: Arc<Store>) {
    let t0 = store.now() - TimeDelta::minutes(1);
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
    let due = store.now() - TimeDelta::seconds(1);
    let t = timer("w3", TimerKind::Timeout, due, 0);
    store
        .arm_timers("w3", "review#1", std::slice::from_ref(&t))
        .await
        .expect("arm");
    let w3 = store.load("w3").await.expect("load").expect("w3");
    let fired = crate::store::Fired {
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
