//! Webhooks as a receiver sees them: a real store in a temp dir, a
//! receiver on 127.0.0.1 that answers what each test scripts, and the
//! deliverer in between. Backoffs are shortened to milliseconds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::Value;

use super::*;
use crate::model::{EventKind, Session};

mod exchange;

const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const FIXTURE: &[u8] = include_bytes!("../../tests/fixtures/sessions/v1/chain-manual-gate-0.json");

/// One request the receiver got.
struct Got {
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON payload")
    }
}

/// What the receiver answers request `n` (1-based): a status and headers.
type Answer = dyn Fn(usize) -> (u16, Vec<(&'static str, &'static str)>) + Send + Sync;
/// What arrived (taken by the test) and how many ever did.
type Inbox = Arc<Mutex<(Vec<Got>, usize)>>;

/// An endpoint on 127.0.0.1, stopped when dropped.
struct Receiver {
    url: String,
    inbox: Inbox,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    async fn start(
        answer: impl Fn(usize) -> (u16, Vec<(&'static str, &'static str)>) + Send + Sync + 'static,
    ) -> Receiver {
        let inbox: Inbox = Arc::default();
        let answer: Arc<Answer> = Arc::new(answer);
        let app = Router::new()
            .route("/hook", post(hook))
            .with_state((Arc::clone(&inbox), answer));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let addr = listener.local_addr().expect("its address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url: format!("http://{addr}/hook"),
            inbox,
            server,
        }
    }

    /// Answers `status` to every request.
    async fn always(status: u16) -> Receiver {
        Receiver::start(move |_| (status, Vec::new())).await
    }

    /// Requests received and not yet taken.
    fn count(&self) -> usize {
        self.inbox.lock().expect("inbox").0.len()
    }

    fn take(&self) -> Vec<Got> {
        std::mem::take(&mut self.inbox.lock().expect("inbox").0)
    }
}

async fn hook(
    State((inbox, answer)): State<(Inbox, Arc<Answer>)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let n = {
        let mut inbox = inbox.lock().expect("inbox");
        inbox.0.push(Got {
            headers,
            body: body.to_vec(),
        });
        inbox.1 += 1;
        inbox.1
    };
    let (status, extra) = answer(n);
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::from_u16(status).expect("a status");
    for (k, v) in extra {
        response
            .headers_mut()
            .insert(HeaderName::from_static(k), HeaderValue::from_static(v));
    }
    response
}

fn config(endpoints: &[&Receiver], give_up: Duration) -> Config {
    Config {
        endpoints: endpoints.iter().map(|r| r.url.clone()).collect(),
        secret: SECRET.to_string().into(),
        give_up,
        public_url: "https://strands.example".into(),
    }
}

/// A deliverer whose backoff starts at 10 ms.
fn deliverer(config: Config) -> (Deliverer, Arc<Stats>) {
    let stats = Arc::new(Stats::default());
    let d = Deliverer::new(config, Arc::clone(&stats))
        .expect("a deliverer")
        .with_base_delay(Duration::from_millis(10))
        .with_poll(Duration::from_millis(50));
    (d, stats)
}

fn counters(stats: &Stats) -> [u64; 3] {
    stats.counters().map_or([0; 3], |c| c.map(|(_, n)| n))
}

fn published(stats: &Stats) -> [u64; 3] {
    stats.published().map_or([0; 3], |c| c.map(|(_, n)| n))
}

fn fixture() -> Session {
    crate::model::wire::decode(FIXTURE).expect("the fixture decodes")
}

/// Writes a new session whose write reports `kinds`; its id.
async fn report(store: &Store, kinds: Vec<EventKind>) -> String {
    let mut s = fixture();
    s.id = uuid::Uuid::new_v4().to_string();
    s.events = kinds;
    store.create(&mut s).await.expect("create");
    s.id
}

fn opened() -> EventKind {
    EventKind::opened(fixture().first_gate().expect("the fixture waits at a gate"))
}

fn failed(message: &str) -> EventKind {
    EventKind::RunFailed {
        message: message.into(),
    }
}

/// A store in `dir`, on the system's clock: the receivers check the
/// signatures' timestamps against it.
fn store_in(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("store")).expect("open the store")
}

/// Runs rounds until `n` requests arrived (10 s at most).
async fn rounds_until(d: &Deliverer, store: &Store, r: &Receiver, n: usize) {
    let start = Instant::now();
    while r.count() < n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} of {n} requests arrived",
            r.count()
        );
        d.run_once(store).await.expect("a round");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn verify(got: &Got) {
    let signer = standardwebhooks::Webhook::new(SECRET).expect("secret");
    signer
        .verify(&got.body, &got.headers)
        .expect("the signature verifies");
}

#[tokio::test]
async fn a_failing_endpoint_gets_the_same_signed_message_until_it_answers_2xx() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::start(|n| (if n <= 2 { 500 } else { 200 }, Vec::new())).await;
    // A long poll: only a new event and the next retry's due time wake it.
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    let d = d.with_poll(Duration::from_secs(30));
    d.run_once(&store).await.expect("start the cursor");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let session = tokio::join!(
        d.run(&store, async {
            let _ = stopped.await;
        }),
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let id = report(&store, vec![opened()]).await;
            let start = Instant::now();
            while r.count() < 3 || store.webhook_next_due().await.expect("due").is_some() {
                assert!(start.elapsed() < Duration::from_secs(10), "{}", r.count());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let _ = stop.send(());
            id
        }
    )
    .1;
    let got = r.take();
    assert_eq!(got.len(), 3, "two failures, then delivered, then nothing");
    let id = got[0].header("webhook-id");
    assert!(id.starts_with("msg_") && id.ends_with("_1"), "{id}");
    for g in &got {
        verify(g);
        assert_eq!(g.header("webhook-id"), id, "the same id on every attempt");
        assert!(g.header("webhook-signature").starts_with("v1,"));
        assert_eq!(g.header("content-type"), "application/json");
    }
    let body = got[2].json();
    assert_eq!(body["type"], "gate.opened");
    assert_eq!(body["data"]["session"], session.as_str());
    assert_eq!(body["data"]["seq"], 1);
    assert_eq!(body["data"]["gate"], "review#1");
    assert_eq!(body["data"]["prompt"], "Approve the research?");
    assert_eq!(
        body["data"]["links"]["answers"],
        format!("https://strands.example/api/v1/sessions/{session}/answers")
    );
    assert_eq!(counters(&stats), [1, 2, 0]);
    assert!(store.webhook_failed(10).await.expect("failed").is_empty());
}

#[tokio::test]
async fn a_tampered_payload_does_not_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(204).await;
    let (d, _) = deliverer(config(&[&r], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![failed("boom")]).await;
    rounds_until(&d, &store, &r, 1).await;
    let mut got = r.take().remove(0);
    verify(&got);
    got.body = got.body.replace_bytes("boom", "BOOM");
    let signer = standardwebhooks::Webhook::new(SECRET).expect("secret");
    assert!(signer.verify(&got.body, &got.headers).is_err());
    let other = standardwebhooks::Webhook::new("whsec_MTIzNDU2Nzg5MDEyMzQ1Ng==").expect("secret");
    got.body = got.body.replace_bytes("BOOM", "boom");
    assert!(
        other.verify(&got.body, &got.headers).is_err(),
        "another secret does not verify it"
    );
}

/// `replace` on bytes, for tampering.
trait ReplaceBytes {
    fn replace_bytes(&self, from: &str, to: &str) -> Vec<u8>;
}

impl ReplaceBytes for Vec<u8> {
    fn replace_bytes(&self, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8_lossy(self).replace(from, to).into_bytes()
    }
}

#[tokio::test]
async fn pending_deliveries_survive_closing_and_reopening_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = Receiver::start(|n| (if n == 1 { 503 } else { 200 }, Vec::new())).await;
    let first_id = {
        let store = store_in(&dir);
        let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
        d.run_once(&store).await.expect("start the cursor");
        report(&store, vec![failed("one")]).await;
        rounds_until(&d, &store, &r, 1).await;
        assert_eq!(counters(&stats), [0, 1, 0], "failed once, to be retried");
        r.take()[0].header("webhook-id")
        // The process "stops" here with the retry pending.
    };
    let store = store_in(&dir);
    assert!(
        store.webhook_next_due().await.expect("due").is_some(),
        "the retry is still in the store"
    );
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    rounds_until(&d, &store, &r, 1).await;
    let got = r.take();
    assert_eq!(
        got[0].header("webhook-id"),
        first_id,
        "same id after a restart"
    );
    verify(&got[0]);
    assert_eq!(counters(&stats), [1, 0, 0]);
    assert_eq!(store.webhook_next_due().await.expect("due"), None);
}

#[tokio::test]
async fn a_400_gives_up_at_once_and_is_listed_as_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(400).await;
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    let session = report(&store, vec![failed("boom")]).await;
    rounds_until(&d, &store, &r, 1).await;
    for _ in 0..3 {
        d.run_once(&store).await.expect("a round");
    }
    assert_eq!(r.count(), 1, "never retried");
    assert_eq!(counters(&stats), [0, 0, 1]);
    let failed = store.webhook_failed(10).await.expect("failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].event.session, session);
    assert_eq!(failed[0].event.what.name(), "run.failed");
    assert_eq!(failed[0].attempts, 1);
    assert_eq!(
        failed[0].last_error.as_deref(),
        Some("HTTP 400 Bad Request")
    );
    assert_eq!(store.webhook_next_due().await.expect("due"), None);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::start(|_| (307, vec![("location", "/elsewhere")])).await;
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![failed("boom")]).await;
    rounds_until(&d, &store, &r, 1).await;
    d.run_once(&store).await.expect("a round");
    assert_eq!(r.count(), 1);
    assert_eq!(counters(&stats), [0, 0, 1]);
    let failed = store.webhook_failed(10).await.expect("failed");
    let error = failed[0].last_error.clone().unwrap_or_default();
    assert!(error.starts_with("HTTP 307"), "{error}");
}

#[tokio::test]
async fn an_endpoint_that_keeps_failing_is_given_up_after_the_give_up_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(500).await;
    let (d, stats) = deliverer(config(&[&r], Duration::from_millis(300)));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![failed("boom")]).await;
    let start = Instant::now();
    while store.webhook_failed(10).await.expect("failed").is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "never gave up");
        d.run_once(&store).await.expect("a round");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "not before the give-up time"
    );
    let failed = store.webhook_failed(10).await.expect("failed");
    assert!(failed[0].attempts >= 3, "retried meanwhile: {failed:?}");
    let error = failed[0].last_error.clone().unwrap_or_default();
    assert!(error.contains("HTTP 500"), "{error}");
    let [delivered, retried, gave_up] = counters(&stats);
    assert_eq!((delivered, gave_up), (0, 1));
    assert_eq!(u64::from(failed[0].attempts), retried + 1);
    assert_eq!(store.webhook_next_due().await.expect("due"), None);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::start(|_| (429, vec![("retry-after", "3")])).await;
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![failed("boom")]).await;
    rounds_until(&d, &store, &r, 1).await;
    assert_eq!(counters(&stats), [0, 1, 0]);
    let next = store
        .webhook_next_due()
        .await
        .expect("due")
        .expect("pending");
    let wait = next - store.now();
    assert!(
        wait > chrono::TimeDelta::milliseconds(2500),
        "waits what the endpoint asked, not 10 ms: {wait}"
    );
}

#[tokio::test]
async fn an_endpoint_added_later_does_not_get_the_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let first = Receiver::always(200).await;
    let (d, _) = deliverer(config(&[&first], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    report(&store, vec![failed("before")]).await;
    rounds_until(&d, &store, &first, 1).await;

    let later = Receiver::always(200).await;
    let (d, _) = deliverer(config(&[&first, &later], Duration::from_secs(60)));
    for _ in 0..3 {
        d.run_once(&store).await.expect("a round");
    }
    assert_eq!(later.count(), 0, "nothing from before it was added");
    report(&store, vec![failed("after")]).await;
    rounds_until(&d, &store, &later, 1).await;
    rounds_until(&d, &store, &first, 2).await;
    let got = later.take();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json()["data"]["message"], "after");
    assert_eq!(first.count(), 2, "the first one got both, once each");
}

#[tokio::test]
async fn step_events_are_not_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(200).await;
    let (d, _) = deliverer(config(&[&r], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    let step = EventKind::StepDone {
        tokens: 0,
        millis: 0,
        position: "steps[0]".into(),
        agent: "a".into(),
    };
    report(&store, vec![step, failed("end")]).await;
    rounds_until(&d, &store, &r, 1).await;
    d.run_once(&store).await.expect("a round");
    let got = r.take();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json()["type"], "run.failed");
}

#[test]
fn the_payload_carries_the_event_and_links_back() {
    let event = crate::model::Event {
        seq: 42,
        at: DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
            .expect("date")
            .with_timezone(&Utc),
        session: "s-1".into(),
        workflow: "wf".into(),
        trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        what: EventKind::GateAnswered {
            gate: "review#1".into(),
            call: None,
            decision: "approved".into(),
            by: "alice".into(),
            via: "api".into(),
            reason: None,
            // A form's values, as the approver filled them in.
            values: serde_json::from_value(serde_json::json!({"replicas": 3})).ok(),
        },
    };
    let p = payload(&event, "http://127.0.0.1:3000");
    assert_eq!(
        p,
        serde_json::json!({
            "type": "gate.answered",
            "timestamp": "2026-11-23T10:00:00.000Z",
            "data": {
                "seq": 42,
                "session": "s-1",
                "workflow": "wf",
                "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                "gate": "review#1",
                "decision": "approved",
                "by": "alice",
                "via": "api",
                "values": {"replicas": 3},
                "links": {
                    "session": "http://127.0.0.1:3000/api/v1/sessions/s-1",
                    "answers": "http://127.0.0.1:3000/api/v1/sessions/s-1/answers",
                    "events": "http://127.0.0.1:3000/api/v1/sessions/s-1/events",
                    "page": "http://127.0.0.1:3000/sessions/s-1",
                },
            },
        })
    );
}

#[test]
fn backoff_doubles_is_capped_and_jittered() {
    let base = Duration::from_secs(1);
    for attempts in 1..=12u32 {
        let full = (base * 2u32.pow(attempts - 1)).min(MAX_DELAY);
        for _ in 0..20 {
            let d = backoff(base, attempts);
            assert!(d >= full / 2 && d <= full, "attempt {attempts}: {d:?}");
        }
    }
    assert!(backoff(base, 40) <= MAX_DELAY);
    assert!(backoff(base, u32::MAX) <= MAX_DELAY);
}

#[test]
fn a_retry_is_never_scheduled_past_the_give_up_time() {
    let (d, _) = deliverer(Config {
        endpoints: vec!["http://127.0.0.1:9/".into()],
        secret: SECRET.to_string().into(),
        give_up: Duration::from_secs(60),
        public_url: "http://127.0.0.1:3000".into(),
    });
    let now = crate::clock::test_epoch();
    let mut taken = crate::model::webhook::Delivery::new(
        "http://127.0.0.1:9/",
        "st",
        crate::model::Event {
            seq: 1,
            at: now,
            session: "s".into(),
            workflow: "w".into(),
            trace_id: None,
            what: failed("x"),
        },
        now,
    );
    taken.attempts = 1;
    taken.first_attempt_at = Some(now);
    let hour = Attempt::Transient {
        error: "HTTP 429 Too Many Requests".into(),
        after: Some(Duration::from_secs(3600)),
    };
    assert_eq!(
        d.judge(&taken, hour.clone(), now),
        Settle::Retry {
            at: now + chrono::TimeDelta::seconds(60),
            error: "HTTP 429 Too Many Requests".into()
        },
        "one last try at the give-up time"
    );
    match d.judge(&taken, hour, now + chrono::TimeDelta::seconds(60)) {
        Settle::GaveUp { error } => assert!(error.contains("still failing 1m"), "{error}"),
        other => panic!("{other:?}"),
    }
    let zero = Attempt::Transient {
        error: "HTTP 429".into(),
        after: Some(Duration::ZERO),
    };
    match d.judge(&taken, zero, now) {
        Settle::Retry { at, .. } => assert!(at > now, "Retry-After: 0 does not spin"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn statuses_sort_into_delivered_retry_and_give_up() {
    let none = reqwest::header::HeaderMap::new();
    let at = |code: u16| sort(reqwest::StatusCode::from_u16(code).expect("status"), &none);
    assert_eq!(at(200), Attempt::Delivered);
    assert_eq!(at(204), Attempt::Delivered);
    for code in [408, 429, 500, 502, 503] {
        assert!(matches!(at(code), Attempt::Transient { .. }), "{code}");
    }
    for code in [301, 400, 401, 403, 404, 410, 422] {
        assert!(matches!(at(code), Attempt::Permanent { .. }), "{code}");
    }
    let mut asked = reqwest::header::HeaderMap::new();
    asked.insert(
        reqwest::header::RETRY_AFTER,
        reqwest::header::HeaderValue::from_static("7"),
    );
    assert_eq!(
        sort(reqwest::StatusCode::SERVICE_UNAVAILABLE, &asked),
        Attempt::Transient {
            error: "HTTP 503 Service Unavailable".into(),
            after: Some(Duration::from_secs(7)),
        }
    );
}

mod settings {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<Config>> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| env.get(k).cloned(), "http://127.0.0.1:3000")
    }

    fn error(pairs: &[(&str, &str)]) -> String {
        match read(pairs) {
            Err(e) => {
                assert_eq!(e.exit_code(), crate::error::exit::USAGE);
                e.to_string()
            }
            Ok(c) => panic!("accepted: {c:?}"),
        }
    }

    #[test]
    fn no_url_no_webhooks() {
        assert!(read(&[]).expect("ok").is_none());
        assert!(read(&[("STRANDS_WEBHOOK_URL", " , ")])
            .expect("ok")
            .is_none());
        assert!(read(&[("STRANDS_WEBHOOK_SECRET", "nonsense")])
            .expect("the secret alone is not checked")
            .is_none());
    }

    #[test]
    fn urls_secret_give_up_and_public_url_are_read() {
        let c = read(&[
            (
                "STRANDS_WEBHOOK_URL",
                "https://hooks.example/in, http://127.0.0.1:8080/x,https://hooks.example/in",
            ),
            ("STRANDS_WEBHOOK_SECRET", SECRET),
            ("STRANDS_WEBHOOK_GIVE_UP", "3d"),
            ("STRANDS_PUBLIC_URL", "https://strands.example/base/"),
        ])
        .expect("ok")
        .expect("configured");
        assert_eq!(
            c.endpoints,
            ["https://hooks.example/in", "http://127.0.0.1:8080/x"],
            "duplicates dropped"
        );
        assert_eq!(c.give_up, Duration::from_secs(3 * 86_400));
        assert_eq!(c.public_url, "https://strands.example/base");
        let defaults = read(&[
            ("STRANDS_WEBHOOK_URL", "https://hooks.example/in"),
            ("STRANDS_WEBHOOK_SECRET", SECRET),
        ])
        .expect("ok")
        .expect("configured");
        assert_eq!(defaults.give_up, DEFAULT_GIVE_UP);
        assert_eq!(defaults.public_url, "http://127.0.0.1:3000");
    }

    #[test]
    fn a_bad_url_is_named() {
        let e = error(&[
            (
                "STRANDS_WEBHOOK_URL",
                "https://ok.example/, ftp://files.example/x",
            ),
            ("STRANDS_WEBHOOK_SECRET", SECRET),
        ]);
        assert!(
            e.contains("STRANDS_WEBHOOK_URL") && e.contains("ftp://files.example/x"),
            "{e}"
        );
        let e = error(&[("STRANDS_WEBHOOK_URL", "hooks.example/in")]);
        assert!(e.contains("`hooks.example/in`"), "{e}");
        let e = error(&[
            ("STRANDS_WEBHOOK_URL", "https://ok.example/"),
            ("STRANDS_WEBHOOK_SECRET", SECRET),
            ("STRANDS_PUBLIC_URL", "strands.example"),
        ]);
        assert!(e.contains("STRANDS_PUBLIC_URL"), "{e}");
    }

    #[test]
    fn the_secret_is_required_checked_and_never_shown() {
        let url = ("STRANDS_WEBHOOK_URL", "https://ok.example/");
        let e = error(&[url]);
        assert!(e.contains("STRANDS_WEBHOOK_SECRET is not set"), "{e}");
        for bad in [
            "C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            "whsec_",
            "whsec_not*base64!",
        ] {
            let e = error(&[url, ("STRANDS_WEBHOOK_SECRET", bad)]);
            assert!(e.contains("STRANDS_WEBHOOK_SECRET"), "{e}");
            assert!(!e.contains("C2FVsBQ") && !e.contains("not*base64"), "{e}");
        }
        let c = read(&[
            (
                "STRANDS_WEBHOOK_URL",
                "https://user:pw@ok.example/in?token=T0KEN",
            ),
            ("STRANDS_WEBHOOK_SECRET", SECRET),
        ])
        .expect("ok")
        .expect("configured");
        let debug = format!("{c:?}");
        assert!(!debug.contains("C2FVsBQ"), "{debug}");
        assert!(!debug.contains("T0KEN") && !debug.contains("pw"), "{debug}");
        assert!(
            debug.contains("REDACTED") && debug.contains("ok.example"),
            "{debug}"
        );
    }

    #[test]
    fn give_up_times() {
        assert_eq!(parse_span("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_span(" 10m "), Some(Duration::from_secs(600)));
        assert_eq!(parse_span("24h"), Some(Duration::from_secs(86_400)));
        assert_eq!(parse_span("3d"), Some(Duration::from_secs(3 * 86_400)));
        for bad in ["", "h", "10", "1.5h", "-1m", "10w", "forever"] {
            assert_eq!(parse_span(bad), None, "{bad}");
        }
        let e = error(&[
            ("STRANDS_WEBHOOK_URL", "https://ok.example/"),
            ("STRANDS_WEBHOOK_SECRET", SECRET),
            ("STRANDS_WEBHOOK_GIVE_UP", "a day"),
        ]);
        assert!(
            e.contains("STRANDS_WEBHOOK_GIVE_UP") && e.contains("a day"),
            "{e}"
        );
    }
}

/// `strands serve` runs the deliverer from `tokio::spawn`: its futures
/// must stay `Send`.
#[test]
fn deliverer_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let (d, _) = deliverer(Config {
        endpoints: vec!["http://127.0.0.1:9/".into()],
        secret: SECRET.to_string().into(),
        give_up: Duration::from_secs(1),
        public_url: "http://127.0.0.1:3000".into(),
    });
    assert_send(&d.run_once(&store));
    assert_send(&d.run(&store, std::future::pending()));
}

#[tokio::test]
async fn a_backlog_goes_out_over_several_rounds_each_event_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_in(&dir);
    let r = Receiver::always(200).await;
    let (d, stats) = deliverer(config(&[&r], Duration::from_secs(60)));
    d.run_once(&store).await.expect("start the cursor");
    let n = TAKE * 2 + 5;
    report(&store, (0..n).map(|i| failed(&i.to_string())).collect()).await;
    let first = d.run_once(&store).await.expect("a round");
    assert_eq!(first, TAKE, "a round takes at most {TAKE}");
    rounds_until(&d, &store, &r, n).await;
    d.run_once(&store).await.expect("a round");
    let mut ids: Vec<String> = r.take().iter().map(|g| g.header("webhook-id")).collect();
    assert_eq!(ids.len(), n);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "each event once");
    assert_eq!(counters(&stats), [n as u64, 0, 0]);
}
