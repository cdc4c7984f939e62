//! `strands report`: decision analytics from the audit, counted exactly
//! from a store whose decisions the test made — offline on the store, and
//! through the server as the same figures (and the server's
//! `strands_decision_seconds` as they happen).

use crate::common::{session_id, FakeLlm, Sandbox};

use super::cli_cancel::GATED;

#[test]
fn the_report_counts_each_decision_once_offline() {
    counts_each_decision_once(&Sandbox::new());
}

#[test]
fn on_postgresql_the_report_is_the_same() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(url) = rt.block_on(strands::store::postgres::testdb::database("report")) else {
        return;
    };
    let mut sandbox = Sandbox::new();
    sandbox.store = std::path::PathBuf::from(url);
    counts_each_decision_once(&sandbox);
}

/// Three runs paused, then two approved and one rejected through the CLI
/// on `sb`'s store: the report's exact counts, quantiles and open gates.
fn counts_each_decision_once(sb: &Sandbox) {
    let llm = FakeLlm::start();
    let spec = sb.spec("gated.yaml", GATED, &llm);
    let spec = spec.display().to_string();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let out = sb.strands(&["run", &spec, "--json"]);
        out.expect_code(19);
        ids.push(session_id(&out.json()));
    }
    // Three gates wait, all opened this minute, none overdue.
    let waiting = sb.strands(&["report", "--json"]).json();
    assert_eq!(waiting["open"]["open"], 3, "{waiting}");
    assert_eq!(waiting["open"]["buckets"][0]["key"], "1h", "{waiting}");
    assert_eq!(waiting["open"]["buckets"][0]["count"], 3, "{waiting}");
    assert_eq!(waiting["open"]["overdue"], 0, "{waiting}");
    assert_eq!(waiting["scope"], "everyone", "{waiting}");
    sb.strands(&["resume", &ids[0], "--approve"]).expect_code(0);
    sb.strands(&["resume", &ids[1], "--approve"]).expect_code(0);
    sb.strands(&["resume", &ids[2], "--reject", "--reason", "no"])
        .expect_code(21);

    let out = sb.strands(&["report", "--json", "--by", "gate"]);
    out.expect_code(0);
    let r = out.json();
    let rows = r["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{r}");
    assert_eq!(rows[0]["key"], "gated/review", "{r}");
    assert_eq!(rows[0]["decisions"], 3, "{r}");
    assert_eq!(rows[0]["approved"], 2, "{r}");
    assert_eq!(rows[0]["rejected"], 1, "{r}");
    assert_eq!(rows[0]["timeouts"], 0, "{r}");
    assert!(rows[0]["p50_ms"].is_u64(), "{r}");
    assert!(
        rows[0]["p99_ms"].as_u64() >= rows[0]["p50_ms"].as_u64(),
        "{r}"
    );
    assert_eq!(r["total"]["decisions"], 3, "{r}");
    assert_eq!(r["open"]["open"], 0, "{r}");
    // The quantiles are the nearest-rank ones of the audit's own
    // response times, computed here apart.
    let export = sb.strands(&["audit", "export"]);
    export.expect_code(0);
    let mut times: Vec<u64> = export
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "answer")
        .filter_map(|e| e["event"]["response_ms"].as_u64())
        .collect();
    times.sort_unstable();
    assert_eq!(times.len(), 3, "{}", export.stdout);
    // Nearest rank of 3: p50 is the 2nd, p90 and p99 the 3rd.
    assert_eq!(r["total"]["p50_ms"], times[1], "{r}");
    assert_eq!(r["total"]["p90_ms"], times[2], "{r}");
    assert_eq!(r["total"]["p99_ms"], times[2], "{r}");

    // By who answered, through which door.
    let who = sb.strands(&["report", "--json", "--by", "approver"]).json();
    assert_eq!(who["rows"][0]["key"], "tester", "{who}");
    let csv = sb.strands(&["report", "--csv", "--by", "door"]);
    csv.expect_code(0);
    assert!(
        csv.stdout.starts_with(
            "key,decisions,approved,rejected,other,timeouts,p50_ms,p90_ms,p99_ms\ncli,3,2,1,0,0,"
        ),
        "{}",
        csv.stdout
    );
    let table = sb.strands(&["report"]);
    table.expect_code(0);
    assert!(table.stdout.contains("gated/review"), "{}", table.stdout);
    assert!(
        table.stdout.contains("open gates: 0 (0 under 1 hour, "),
        "{}",
        table.stdout
    );

    // A period that ends before them counts none; a bad one is named.
    let none = sb.strands(&["report", "--json", "--since", "0d"]).json();
    assert_eq!(none["total"]["decisions"], 0, "{none}");
    let bad = sb.strands(&["report", "--since", "last week"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("30d, 12h, 90m"), "{}", bad.stderr);
}

#[test]
fn through_the_server_the_report_is_the_same() {
    let w = super::api::World::start();
    let a = w.start_run("one");
    let b = w.start_run("two");
    w.wait_paused(&a);
    w.wait_paused(&b);
    // Both gates wait: the gauges say so at scrape time.
    let metrics = w.svc.get("/metrics").body;
    assert!(
        metrics.contains("strands_gates_open{age=\"1h\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains("strands_gates_overdue 0"), "{metrics}");
    let r = w.answer(&a, &w.alice, serde_json::json!({ "decision": "approve" }));
    assert_eq!(r.status, 200, "{}", r.body);
    let r = w.answer(
        &b,
        &w.alice,
        serde_json::json!({ "decision": "reject", "reason": "not now" }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let out = w.sandbox.strands_as(
        "x",
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", w.root.as_str()),
        ],
        &["report", "--json", "--by", "door"],
    );
    out.expect_code(0);
    let r = out.json();
    assert_eq!(r["rows"][0]["key"], "api", "{r}");
    assert_eq!(r["rows"][0]["decisions"], 2, "{r}");
    assert_eq!(r["rows"][0]["approved"], 1, "{r}");
    assert_eq!(r["rows"][0]["rejected"], 1, "{r}");
    assert_eq!(r["open"]["open"], 0, "{r}");
    // The server counts the same decisions as they happen, by door,
    // workflow and rule.
    let metrics = w.svc.get("/metrics").body;
    assert!(
        metrics.contains(
            "strands_decision_seconds_count{door=\"api\",workflow=\"deploy\",rule=\"none\"} 2"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("strands_gates_open{age=\"1h\"} 0"),
        "{metrics}"
    );

    // An approver's token gets their own: alice made both decisions,
    // mallory none.
    let mine = |token: &str| {
        let out = w.sandbox.strands_as(
            "x",
            &[
                ("STRANDS_SERVER", w.svc.url.as_str()),
                ("STRANDS_TOKEN", token),
            ],
            &["report", "--json"],
        );
        out.expect_code(0);
        out.json()
    };
    let alice = mine(&w.alice);
    assert_eq!(alice["scope"], "person", "{alice}");
    assert_eq!(alice["person"], "alice", "{alice}");
    assert_eq!(alice["total"]["decisions"], 2, "{alice}");
    let mallory = mine(&w.mallory);
    assert_eq!(mallory["person"], "mallory", "{mallory}");
    assert_eq!(mallory["total"]["decisions"], 0, "{mallory}");
}
