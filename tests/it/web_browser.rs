//! The web inbox in a real headless Chromium (Debian's, over WebDriver):
//! a person signs in with a token, sees a gate appear live, approves it
//! and watches the run complete; rejects with a reason; edits a tool
//! call's arguments (a bad edit is shown inline, a good one runs); and the
//! inbox reads on a phone-sized window without sideways scrolling.

use crate::api::{World, WAIT};
use crate::common::browser::{available, Browser};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::target::Target;
use crate::common::{assistant_turns, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use crate::web::wait_status;
use serde_json::json;
use std::time::Duration;

async fn sign_in(b: &Browser, svc: &Service, token: &str) {
    b.goto(&format!("{}/", svc.url)).await;
    // Not signed in: the login page.
    b.find("input#token[type=password]").await;
    b.fill("#token", token).await;
    b.click("#sign-in").await;
    b.find("#inbox").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_see_the_gate_appear_live_approve_and_watch_the_run_complete() {
    if !available("browser approve") {
        return;
    }
    let w = World::start();
    let b = Browser::start(1200, 900).await;
    sign_in(&b, &w.svc, &w.alice).await;
    b.wait_for_text("Nothing waits for you", None).await;

    // A run started elsewhere (the API) shows up without a reload.
    let id = w.start_run("checkout");
    b.wait_for_text("Approve the deploy of checkout?", None)
        .await;
    let text = b.text().await;
    assert!(
        text.contains("ci-bot") && text.contains("Waiting"),
        "{text}"
    );

    b.click(&format!("a[href='/sessions/{id}']")).await;
    b.find("#approve").await;
    b.click("#approve").await;
    let text = b.wait_for_text("Recorded", None).await;
    assert!(text.contains("approve"), "{text}");
    // The page follows the run to its end by itself.
    b.wait_for_text("completed", None).await;
    let done = wait_status(&w, &id, "completed");
    assert_eq!(done["gates"][0]["by"], "alice");
    assert_eq!(done["gates"][0]["via"], "web");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_a_reason_and_read_it_back() {
    if !available("browser reject") {
        return;
    }
    let w = World::start();
    let id = w.start_run("billing");
    w.wait_paused(&id);
    let b = Browser::start(1200, 900).await;
    sign_in(&b, &w.svc, &w.alice).await;
    b.goto(&format!("{}/sessions/{id}", w.svc.url)).await;
    b.fill("textarea[name=reason]", "freeze week: no deploys")
        .await;
    b.click("#reject").await;
    // Wait for the recorded answer, not the page's transient "Recorded"
    // notice: under load the live update may already have replaced it
    // with the finished run.
    let s = wait_status(&w, &id, "rejected");
    assert_eq!(
        s["gates"][0]["decision"]["reason"], "freeze week: no deploys",
        "{s}"
    );
    b.goto(&format!("{}/sessions/{id}", w.svc.url)).await;
    let text = b.wait_for_text("freeze week: no deploys", None).await;
    assert!(text.contains("rejected"), "{text}");
    b.close().await;
}

const OPS: &str = r#"
version: 0
name: ops
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  http_executors:
    - id: deploy_api
      base_url: $TARGET
      description: The deploy API.
agents:
  operator:
    prompt: You are the OPERATOR.
    tools: [deploy_api]
pattern:
  type: chain
  config:
    steps:
      - agent: operator
        input: Roll out web.
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_a_tool_calls_arguments_with_errors_shown_inline() {
    if !available("browser edit") {
        return;
    }
    let llm = FakeLlm::start_with(Behaviour::scripted(|_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![tool_call(
                "call_web",
                "deploy_api",
                json!({"method": "POST", "path": "/rollout/web"}),
            )])
        } else {
            Say::Text("DONE".into())
        }
    }));
    let target = Target::start();
    let sandbox = Sandbox::new();
    let spec = OPS.replace("$TARGET", &target.url);
    let dir = write_workflows(&sandbox, &llm, &[("ops", &spec)]);
    let ci = crate::common::api::make_token(&sandbox, "ci-bot", "operator");
    let alice = crate::common::api::make_token(&sandbox, "alice", "approver");
    let svc = Service::launch(ServeConfig::api(&sandbox, &dir));
    let r = crate::common::api::call(
        &svc,
        "POST",
        "/api/v1/runs",
        Some(&ci),
        Some(&json!({"workflow": "ops"})),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["session_id"].as_str().expect("an id").to_string();

    let b = Browser::start(1200, 900).await;
    sign_in(&b, &svc, &alice).await;
    b.wait_for_text("deploy_api", None).await;
    b.goto(&format!("{}/sessions/{id}", svc.url)).await;
    let editor = "form.json-editor textarea[name=args]";
    // Not JSON: refused in the page, nothing sent.
    b.fill(editor, "{\"method\": \"POST\", ").await;
    b.click("form.json-editor button.edit").await;
    let err = b.find("form.json-editor .error").await;
    let shown = err.text().await.unwrap_or_default();
    assert!(shown.contains("Not valid"), "{shown}");
    assert_eq!(target.writes(), 0);
    // JSON the tool's schema refuses: the server says so, nothing runs.
    b.fill(editor, "{\"method\": \"POST\", \"path\": 42}").await;
    b.click("form.json-editor button.edit").await;
    let text = b.wait_for_text("path", None).await;
    assert!(
        b.find("#result.refused")
            .await
            .text()
            .await
            .unwrap_or_default()
            .len()
            > 3,
        "{text}"
    );
    assert_eq!(target.writes(), 0);
    // A good edit runs the edited call.
    b.fill(
        editor,
        "{\"method\": \"POST\", \"path\": \"/rollout/canary\"}",
    )
    .await;
    b.click("form.json-editor button.edit").await;
    b.wait_for_text("Recorded", None).await;
    target.wait_for("POST", "/rollout/canary", 1, WAIT);
    assert_eq!(target.count("POST", "/rollout/web"), 0);
    b.wait_for_text("completed", Some(Duration::from_secs(2)))
        .await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_reads_on_a_phone_without_sideways_scrolling() {
    if !available("browser phone") {
        return;
    }
    let w = World::start();
    let long =
        "a-very-long-service-name-without-any-spaces-that-would-push-the-page-sideways-on-a-phone";
    let id = w.start_run(long);
    w.wait_paused(&id);
    let b = Browser::start(390, 844).await;
    sign_in(&b, &w.svc, &w.alice).await;
    b.wait_for_text("Approve the deploy of", None).await;
    for path in ["/".to_string(), format!("/sessions/{id}")] {
        b.goto(&format!("{}{path}", w.svc.url)).await;
        b.find("main").await;
        let widths = b
            .eval("return [document.documentElement.scrollWidth, window.innerWidth]")
            .await;
        let (scroll, inner) = (
            widths[0].as_u64().unwrap_or(0),
            widths[1].as_u64().unwrap_or(0),
        );
        assert!(inner > 0 && inner <= 400, "not a phone window: {widths}");
        assert!(
            scroll <= inner,
            "{path}: the page is {scroll}px wide in a {inner}px window"
        );
    }
    // Buttons are real buttons, reachable from the keyboard, and big enough.
    let approve = b.find("button#approve").await;
    let h = b
        .eval("return document.getElementById('approve').getBoundingClientRect().height")
        .await;
    assert!(
        h.as_f64().unwrap_or(0.0) >= 40.0,
        "the Approve button is {h}px tall"
    );
    approve.click().await.expect("tap Approve");
    b.wait_for_text("Recorded", None).await;
    if std::env::var("STRANDS_UPDATE_SCREENSHOT").as_deref() == Ok("1") {
        let id2 = w.start_run("payments-api");
        w.wait_paused(&id2);
        b.goto(&format!("{}/", w.svc.url)).await;
        b.wait_for_text("payments-api", None).await;
        let png = b.client.screenshot().await.expect("a screenshot");
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/inbox.png"),
            png,
        )
        .expect("write docs/src/inbox.png");
    }
    b.close().await;
}

/// The Chromium processes whose command line names `profile`.
fn chromium_of(profile: &std::path::Path) -> Vec<u32> {
    let needle = profile.display().to_string();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                        .unwrap_or(false)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A browser dropped without being closed — what a failing test does —
/// takes its Chromium down with its driver (a failed test used to leave a
/// headless Chromium running on the machine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_dropped_unclosed_leaves_no_chromium_behind() {
    if !available("browser dropped") {
        return;
    }
    let b = Browser::start(400, 300).await;
    let profile = b.profile();
    assert!(
        !chromium_of(&profile).is_empty(),
        "a Chromium runs on the profile"
    );
    drop(b);
    crate::common::wait_until(
        Duration::from_secs(10),
        "every Chromium of the dropped browser gone",
        || chromium_of(&profile).is_empty(),
        || format!("still running: {:?}", chromium_of(&profile)),
    );
}

/// The figures of `strands report --json` (through the server, with
/// `token`) as the Insights page's table carries them: key → [decisions,
/// approved, rejected, timeouts, p50, p90, p99].
fn report_rows(w: &World, token: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let out = w.sandbox.strands_as(
        "x",
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", token),
        ],
        &["report", "--json", "--by", "gate"],
    );
    out.expect_code(0);
    let r = out.json();
    let cell = |v: &serde_json::Value| v.as_u64().map(|n| n.to_string()).unwrap_or_default();
    let rows = r["rows"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .chain(std::iter::once(&r["total"]))
        .map(|row| {
            json!([
                row["key"],
                cell(&row["decisions"]),
                cell(&row["approved"]),
                cell(&row["rejected"]),
                cell(&row["timeouts"]),
                cell(&row["p50_ms"]),
                cell(&row["p90_ms"]),
                cell(&row["p99_ms"]),
            ])
        })
        .collect();
    (r, rows)
}

const PAGE_ROWS: &str = "return [...document.querySelectorAll('#rows tbody tr')].map(t => [t.dataset.key, t.dataset.decisions, t.dataset.approved, t.dataset.rejected, t.dataset.timeouts, t.dataset.p50, t.dataset.p90, t.dataset.p99])";

/// The Insights page on a phone: its numbers are `strands report --json`'s
/// (everyone's for an admin, their own for an approver), it shows the
/// gates still waiting, and it reads without sideways scrolling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_insights_page_shows_the_reports_numbers_on_a_phone() {
    if !available("browser insights") {
        return;
    }
    let w = World::start();
    let ids: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|s| w.start_run(s))
        .collect();
    for id in &ids {
        w.wait_paused(id);
    }
    for (id, who, decision) in [
        (&ids[0], &w.alice, json!({"decision": "approve"})),
        (
            &ids[1],
            &w.alice,
            json!({"decision": "reject", "reason": "no"}),
        ),
    ] {
        let r = w.answer(id, who, decision);
        assert_eq!(r.status, 200, "{}", r.body);
    }

    let b = Browser::start(390, 844).await;
    sign_in(&b, &w.svc, &w.root).await;
    b.goto(&format!("{}/insights", w.svc.url)).await;
    b.find("#rows").await;
    let (report, expected) = report_rows(&w, &w.root);
    assert_eq!(report["total"]["decisions"], 2, "{report}");
    let shown = b.eval(PAGE_ROWS).await;
    assert_eq!(shown, json!(expected), "page {shown} vs report {report}");
    let open = b
        .eval(
            "const p = document.getElementById('open'); return [p.dataset.open, p.dataset.overdue]",
        )
        .await;
    assert_eq!(open, json!(["2", "0"]), "{open}");
    assert_eq!(report["open"]["open"], 2, "{report}");
    let widths = b
        .eval("return [document.documentElement.scrollWidth, window.innerWidth]")
        .await;
    assert!(
        widths[0].as_u64().unwrap_or(u64::MAX) <= widths[1].as_u64().unwrap_or(0),
        "the Insights page is wider than the phone: {widths}"
    );
    b.click("form[action='/logout'] button").await;

    // Mallory, an approver of nothing here, sees her own: no decisions,
    // no gate she may answer.
    sign_in(&b, &w.svc, &w.mallory).await;
    b.goto(&format!("{}/insights", w.svc.url)).await;
    let text = b.wait_for_text("mallory's own", None).await;
    assert!(text.contains("0 open gates"), "{text}");
    let (mine, expected) = report_rows(&w, &w.mallory);
    assert_eq!(mine["total"]["decisions"], 0, "{mine}");
    assert_eq!(mine["open"]["open"], 0, "{mine}");
    let shown = b.eval(PAGE_ROWS).await;
    assert_eq!(shown, json!(expected), "page {shown} vs report {mine}");
    b.close().await;
}
