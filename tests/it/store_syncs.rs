//! How often the embedded store syncs to stable storage per answer →
//! resume → complete cycle, read from the real `strands serve`'s
//! `strands_store_syncs_total`. Each durable state change is synced once
//! (the answer, the next model request marked in flight, the outcome);
//! carrying out an answer already on disk, and a step's result, ride with
//! the next one. A change that adds a sync to the cycle fails here.

use std::time::Duration;

use serde_json::json;

use super::api::World;

/// `strands_store_syncs_total` now.
fn syncs(w: &World) -> u64 {
    let body = w.svc.get("/metrics").body;
    body.lines()
        .find_map(|l| l.strip_prefix("strands_store_syncs_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no strands_store_syncs_total in /metrics:\n{body}"))
}

#[test]
fn an_answered_gate_costs_one_sync_per_durable_state_change() {
    let w = World::start();
    let id = w.start_run("billing");
    w.wait_paused(&id);
    // The pause's own writes may still be landing when the status reads
    // paused (on a loaded machine); once they have, nothing else writes
    // while the run waits: the count settles and stays.
    let mut before = syncs(&w);
    let settle_by = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = syncs(&w);
        if now == before {
            break;
        }
        assert!(
            std::time::Instant::now() < settle_by,
            "the store kept syncing while the run waited ({before} → {now})"
        );
        before = now;
    }

    let r = w.answer(&id, &w.alice, json!({ "decision": "approve" }));
    assert!(r.status == 200 || r.status == 202, "{}", r.body);
    let until = std::time::Instant::now() + super::api::WAIT;
    loop {
        let s = w.session(&id);
        if s["status"] == "completed" {
            break;
        }
        assert!(std::time::Instant::now() < until, "never completed: {s}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // answer recorded · deployer's request in flight · completed (the
    // reply is written to ride with the completion: nothing outside acts
    // on it before that write)
    assert_eq!(
        syncs(&w) - before,
        3,
        "syncs for answer → resume → complete\n{}",
        w.svc.log()
    );
}
