//! The queue room's exchange as an endpoint of the outbox: retried while
//! the broker is down, a burst taken in one round, a slow publish holding
//! up nothing written after it, and its own counters.

use super::*;

/// An exchange that is "down" for its first `down` attempts, then takes
/// everything; what it took, by message id, in the order it took it.
/// Holding, its first attempt waits for `release` (a slow confirm).
struct FakeExchange {
    down: usize,
    hold: Option<Hold>,
    attempts: Mutex<usize>,
    took: Mutex<Vec<(String, String, bool)>>,
}

/// The first attempt started; it may go on.
#[derive(Default)]
struct Hold {
    started: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

impl FakeExchange {
    fn new(down: usize) -> FakeExchange {
        FakeExchange {
            down,
            hold: None,
            attempts: Mutex::new(0),
            took: Mutex::new(Vec::new()),
        }
    }

    fn holding_first() -> FakeExchange {
        FakeExchange {
            hold: Some(Hold::default()),
            ..FakeExchange::new(0)
        }
    }

    fn kinds(&self) -> Vec<String> {
        let took = self.took.lock().expect("took");
        took.iter().map(|t| t.1.clone()).collect()
    }
}

impl Exchange for FakeExchange {
    fn endpoint(&self) -> String {
        format!("{EXCHANGE_PREFIX}strands.events")
    }

    fn give_up(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn max_backoff(&self) -> Duration {
        Duration::from_millis(40)
    }

    fn publish<'a>(
        &'a self,
        d: &'a Delivery,
        body: Vec<u8>,
        ended: Option<Session>,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let n = {
                let mut a = self.attempts.lock().expect("attempts");
                *a += 1;
                *a
            };
            if let (1, Some(h)) = (n, &self.hold) {
                h.started.notify_one();
                h.release.notified().await;
            }
            if n <= self.down {
                return Err("not connected to the broker".into());
            }
            let v: Value = serde_json::from_slice(&body).expect("the payload");
            self.took.lock().expect("took").push((
                d.msg_id.clone(),
                v["type"].as_str().unwrap_or_default().to_string(),
                ended.is_some(),
            ));
            Ok(())
        })
    }
}

/// A deliverer whose only endpoint is exchange `x`, counting in `stats`.
fn exchange_alone(x: &Arc<FakeExchange>, stats: Arc<Stats>) -> Deliverer {
    Deliverer::new(Config::without_endpoints("https://strands.example"), stats)
        .expect("a deliverer")
        .with_exchange(Arc::clone(x) as Arc<dyn Exchange>)
}

/// A round waiting on a slow publish does not hold up what is written
/// meanwhile: it is queued, taken and published in that same round.
#[tokio::test]
async fn events_written_while_a_round_waits_on_a_slow_publish_go_out_in_that_round() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let x = Arc::new(FakeExchange::holding_first());
    let hold = x.hold.as_ref().expect("holding");
    let d = exchange_alone(&x, Arc::new(Stats::default()));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![opened()]).await;
    let later = async {
        hold.started.notified().await;
        report(&store, vec![failed("meanwhile")]).await;
        let start = Instant::now();
        while x.kinds().is_empty() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "what was written meanwhile waited for the slow publish"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        hold.release.notify_one();
    };
    let (attempted, ()) = tokio::join!(d.run_once(&store), later);
    assert_eq!(attempted.expect("a round"), 2, "both in one round");
    assert_eq!(
        x.kinds(),
        ["run.failed", "gate.opened"],
        "the later event went out while the first waited"
    );
    // Both settled: the next round has nothing to do.
    assert_eq!(d.run_once(&store).await.expect("a round"), 0);
}

#[tokio::test]
async fn the_exchange_is_an_endpoint_of_the_outbox_retried_until_the_broker_takes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let x = Arc::new(FakeExchange::new(3));
    // No webhook endpoint: the outbox carries the exchange only.
    let stats = Arc::new(Stats::default());
    let d = exchange_alone(&x, Arc::clone(&stats)).with_base_delay(Duration::from_millis(10));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![opened(), failed("boom")]).await;
    let start = Instant::now();
    while x.took.lock().expect("took").len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "never taken");
        d.run_once(&store).await.expect("a round");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Settled once each: nothing more is due or failed.
    for _ in 0..5 {
        d.run_once(&store).await.expect("a round");
    }
    let took = x.took.lock().expect("took").clone();
    assert_eq!(took.len(), 2, "{took:?}");
    let types: Vec<&str> = took.iter().map(|t| t.1.as_str()).collect();
    assert!(
        types.contains(&"gate.opened") && types.contains(&"run.failed"),
        "{types:?}"
    );
    // The run's end comes with its session (a reply may be owed).
    assert!(took.iter().any(|t| t.1 == "run.failed" && t.2), "{took:?}");
    assert!(took.iter().all(|t| t.0.starts_with("msg_")));
    assert_ne!(took[0].0, took[1].0);
    // Counted as publishes, not as webhook deliveries (there are none).
    assert_eq!(published(&stats)[0], 2);
    assert!(
        published(&stats)[1] >= 2,
        "retried while down: {:?}",
        published(&stats)
    );
    assert_eq!(published(&stats)[2], 0);
    assert!(
        stats.counters().is_none(),
        "no webhook endpoint, no webhook counters"
    );
    assert!(store.webhook_next_due().await.expect("due").is_none());
    assert!(store.webhook_failed(10).await.expect("failed").is_empty());
}

#[tokio::test]
async fn with_the_exchange_alone_a_round_takes_a_burst_and_with_http_too_it_takes_few() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let exchange = || Arc::new(FakeExchange::new(0));
    let x = exchange();
    let alone = exchange_alone(&x, Arc::new(Stats::default()));
    alone.run_once(&store).await.expect("start the cursor");
    let n = TAKE * 4;
    report(&store, (0..n).map(|i| failed(&i.to_string())).collect()).await;
    let syncs = || async { store.syncs().await.expect("syncs").expect("sled counts") };
    let before = syncs().await;
    assert_eq!(
        alone.run_once(&store).await.expect("a round"),
        n,
        "one round"
    );
    // The outcomes that ended while a store call held the round are
    // settled together, not one write each (taking is not synced apart).
    let written = syncs().await - before;
    assert!(written <= 2, "{written} syncs for a burst of {n}");
    let mut ids: Vec<String> = x
        .took
        .lock()
        .expect("took")
        .iter()
        .map(|t| t.0.clone())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "each event once");
    assert_eq!(
        alone.run_once(&store).await.expect("a round"),
        0,
        "all settled"
    );

    // With an HTTP endpoint besides, a round stays within what is posted
    // in its lease.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(204).await;
    let (both, _) = deliverer(config(&[&r], Duration::from_secs(60)));
    let both = both.with_exchange(exchange() as Arc<dyn Exchange>);
    both.run_once(&store).await.expect("start the cursor");
    report(&store, (0..n).map(|i| failed(&i.to_string())).collect()).await;
    assert_eq!(both.run_once(&store).await.expect("a round"), TAKE);
}

#[tokio::test]
async fn publishes_to_the_exchange_are_not_counted_as_webhook_deliveries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(204).await;
    let x = Arc::new(FakeExchange::new(1));
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    let d = d.with_exchange(Arc::clone(&x) as Arc<dyn Exchange>);
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![opened()]).await;
    let start = Instant::now();
    while r.count() < 1 || x.took.lock().expect("took").is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "never delivered");
        d.run_once(&store).await.expect("a round");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // One POST delivered; one publish refused (the broker down), then one
    // confirmed: each in its own family.
    assert_eq!(counters(&stats), [1, 0, 0]);
    assert_eq!(published(&stats), [1, 1, 0]);
    // How `/metrics` names the two families is `hub::metrics`'s (the
    // queue tests read them from a real server).
}
