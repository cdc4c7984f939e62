//! The edges of the service's API: seed 000's routes as written there;
//! bad input (unknown workflows, `../` names, bad decisions, oversized
//! bodies, missing or wrong tokens, too many requests) refused with the
//! right status and `{"error": {"code", "message"}}`, changing nothing; and
//! an OpenAPI 3.1 document that lists every route the server answers.

use super::api::{World, WAIT};
use crate::common::api::{call, expect_error};
use serde_json::{json, Value};

#[test]
fn the_seed_routes_run_pause_resume_and_report() {
    let w = World::start();
    let r = call(
        &w.svc,
        "POST",
        "/workflows/run",
        Some(&w.ci),
        Some(&json!({ "spec_path": "deploy.yaml", "variables": { "service": "seed" } })),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "paused", "{v}");
    let id = v["session_id"].as_str().expect("an id").to_string();
    assert_eq!(v["interrupt"]["interrupt_name"], "review");
    assert_eq!(v["interrupt"]["interrupt_type"], "manual_gate");
    assert_eq!(v["interrupt"]["prompt"], "Approve the deploy of seed?");

    let r = call(
        &w.svc,
        "GET",
        &format!("/workflows/{id}"),
        Some(&w.alice),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "paused");
    assert_eq!(r.json()["workflow_name"], "deploy");

    let r = call(
        &w.svc,
        "POST",
        "/workflows/resume",
        Some(&w.alice),
        Some(
            &json!({ "session_id": id, "action": "approve", "feedback": null, "variable_overrides": {} }),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "completed", "{v}");
    assert!(
        v["result"].as_str().is_some_and(|o| o.contains("REPLY 2")),
        "{v}"
    );
    // Not paused any more: the seed's 400; unknown: its 404.
    let r = call(
        &w.svc,
        "POST",
        "/workflows/resume",
        Some(&w.alice),
        Some(&json!({ "session_id": id, "action": "approve" })),
    );
    expect_error(&r, 400, "bad_request");
    let r = call(
        &w.svc,
        "GET",
        "/workflows/no-such-session",
        Some(&w.alice),
        None,
    );
    expect_error(&r, 404, "not_found");
}

/// Sessions in the store, as root sees them.
fn count(w: &World) -> u64 {
    let r = call(&w.svc, "GET", "/api/v1/sessions", Some(&w.root), None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["count"].as_u64().expect("a count")
}

#[test]
fn bad_input_is_refused_with_a_clear_error_and_changes_nothing() {
    let w = World::start_with(|cfg| cfg.with("STRANDS_MAX_BODY_BYTES", Some("4096")));
    let id = w.start_run("edge");
    w.wait_paused(&id);
    let before = count(&w);
    let runs = |body: Value| call(&w.svc, "POST", "/api/v1/runs", Some(&w.ci), Some(&body));

    let why = expect_error(
        &runs(json!({ "workflow": "nope" })),
        404,
        "unknown_workflow",
    );
    assert!(why.contains("deploy"), "names what there is: {why}");
    for name in ["../deploy", "/etc/passwd", "deploy/../deploy", "..", ""] {
        expect_error(&runs(json!({ "workflow": name })), 404, "unknown_workflow");
    }
    expect_error(
        &runs(json!({ "workflow": "deploy", "extra": 1 })),
        422,
        "bad_field",
    );
    expect_error(&runs(json!({ "vars": {} })), 422, "bad_field");
    let r = w.svc.request(
        "POST",
        "/api/v1/runs",
        &[
            ("Authorization".into(), format!("Bearer {}", w.ci)),
            ("Content-Type".into(), "application/json".into()),
        ],
        b"{\"workflow\": ",
    );
    expect_error(&r, 400, "bad_request");
    let big = "x".repeat(8192);
    expect_error(
        &runs(json!({ "workflow": "deploy", "vars": { "service": big } })),
        413,
        "body_too_large",
    );
    // Approvers may not start runs.
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/runs",
        Some(&w.alice),
        Some(&json!({ "workflow": "deploy" })),
    );
    expect_error(&r, 403, "forbidden");

    // Answers that do not fit.
    let answers = format!("/api/v1/sessions/{id}/answers");
    let answer = |body: Value| call(&w.svc, "POST", &answers, Some(&w.alice), Some(&body));
    let why = expect_error(&answer(json!({ "decision": "maybe" })), 422, "bad_answer");
    assert!(why.contains("approve"), "{why}");
    expect_error(&answer(json!({ "decision": "modify" })), 422, "bad_answer");
    expect_error(
        &answer(json!({ "decision": "edit", "args": {} })),
        422,
        "bad_answer",
    );
    expect_error(
        &answer(json!({ "decision": "approve", "gate": "other" })),
        422,
        "bad_answer",
    );
    expect_error(
        &call(
            &w.svc,
            "POST",
            "/api/v1/sessions/zzzz-none/answers",
            Some(&w.alice),
            Some(&json!({ "decision": "approve" })),
        ),
        404,
        "not_found",
    );
    // No token, a wrong one, a malformed one: 401.
    expect_error(
        &call(
            &w.svc,
            "POST",
            &answers,
            None,
            Some(&json!({ "decision": "approve" })),
        ),
        401,
        "unauthorized",
    );
    expect_error(
        &call(
            &w.svc,
            "POST",
            &answers,
            Some("stk_000000000000_deadbeef"),
            Some(&json!({ "decision": "approve" })),
        ),
        401,
        "unauthorized",
    );
    let forged = format!("{}x", w.alice);
    expect_error(
        &call(
            &w.svc,
            "POST",
            &answers,
            Some(&forged),
            Some(&json!({ "decision": "approve" })),
        ),
        401,
        "unauthorized",
    );
    // Nothing changed: one session, still paused at its gate, no answer.
    assert_eq!(count(&w), before);
    let s = w.session(&id);
    assert_eq!(s["status"], "paused", "{s}");
    assert_eq!(s["gates"], json!([]), "{s}");
    assert_eq!(w.llm.count(), 1);
    let r = call(&w.svc, "GET", "/api/v1/nowhere", Some(&w.root), None);
    expect_error(&r, 404, "not_found");

    // Cancelling: operators may; the run ends rejected, told who.
    let r = call(
        &w.svc,
        "POST",
        &format!("/api/v1/sessions/{id}/cancel"),
        Some(&w.alice),
        None,
    );
    expect_error(&r, 403, "forbidden");
    let r = call(
        &w.svc,
        "POST",
        &format!("/api/v1/sessions/{id}/cancel"),
        Some(&w.ci),
        Some(&json!({ "reason": "wrong week" })),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let until = std::time::Instant::now() + WAIT;
    while w.session(&id)["status"] != "rejected" {
        assert!(std::time::Instant::now() < until, "{}", w.session(&id));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_token_that_asks_too_often_is_told_when_to_come_back() {
    let w = World::start_with(|cfg| {
        cfg.with("STRANDS_API_RATE_PER_SEC", Some("1"))
            .with("STRANDS_API_BURST", Some("3"))
    });
    let statuses: Vec<u16> = (0..6)
        .map(|_| call(&w.svc, "GET", "/api/v1/sessions", Some(&w.alice), None).status)
        .collect();
    assert_eq!(&statuses[..3], &[200, 200, 200], "{statuses:?}");
    let r = call(&w.svc, "GET", "/api/v1/sessions", Some(&w.alice), None);
    expect_error(&r, 429, "rate_limited");
    let after: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=5).contains(&after), "{after}");
    // The MCP server shares the token's budget: spent, it is refused too.
    let r = call(
        &w.svc,
        "POST",
        "/mcp",
        Some(&w.alice),
        Some(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
    );
    assert_eq!(r.status, 429, "{}", r.body);
    // Another token has its own budget.
    let r = call(&w.svc, "GET", "/api/v1/sessions", Some(&w.ci), None);
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn the_openapi_document_lists_every_route_the_server_answers() {
    // One unauthenticated call per route, all at once: more than the
    // default burst of the rate limit (which would answer 429, not 401).
    let w = World::start_with(|cfg| cfg.with("STRANDS_API_BURST", Some("200")));
    let r = call(&w.svc, "GET", "/api/v1/openapi.json", None, None);
    assert_eq!(r.status, 200, "{}", r.body);
    let doc = r.json();
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        doc["openapi"]
    );
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    // Every route this server has (kept by hand here, from the router).
    let routes = [
        ("post", "/api/v1/runs"),
        ("post", "/api/v1/approvals"),
        ("get", "/api/v1/approvals"),
        ("get", "/api/v1/approvals/{id}"),
        ("get", "/api/v1/sessions"),
        ("get", "/api/v1/sessions/{id}"),
        ("post", "/api/v1/sessions/{id}/answers"),
        ("post", "/api/v1/sessions/{id}/cancel"),
        ("get", "/api/v1/sessions/{id}/events"),
        ("get", "/api/v1/events"),
        ("post", "/api/v1/sessions/{id}/links"),
        ("get", "/api/v1/audit"),
        ("post", "/api/v1/tokens"),
        ("get", "/api/v1/tokens"),
        ("delete", "/api/v1/tokens/{name}"),
        ("get", "/api/v1/teams/conversations"),
        ("post", "/api/v1/store/backup"),
        ("get", "/api/v1/people"),
        ("post", "/api/v1/people"),
        ("get", "/api/v1/people/{name}"),
        ("patch", "/api/v1/people/{name}"),
        ("delete", "/api/v1/people/{name}"),
        ("post", "/api/v1/people/import"),
        ("delete", "/api/v1/people/{name}/passkeys/{id}"),
        ("get", "/api/v1/people/delegations"),
        ("get", "/api/v1/people/{name}/delegations"),
        ("post", "/api/v1/people/{name}/delegations"),
        ("delete", "/api/v1/people/{name}/delegations"),
        ("get", "/api/v1/notifications/failed"),
        ("get", "/api/v1/webhooks/failed"),
        ("post", "/api/v1/webhooks/{id}/retry"),
        ("post", "/api/v1/webhooks/retry"),
        ("post", "/api/v1/answers"),
        ("get", "/api/v1/insights"),
        ("get", "/api/v1/grants"),
        ("delete", "/api/v1/grants/{id}"),
        ("get", "/api/v1/openapi.json"),
        ("post", "/api/v1/hooks/claude-code"),
        ("post", "/workflows/run"),
        ("post", "/workflows/resume"),
        ("get", "/workflows/{session_id}"),
    ];
    let paths = doc["paths"].as_object().expect("paths");
    for (method, path) in routes {
        assert!(
            paths.get(path).is_some_and(|p| p.get(method).is_some()),
            "{method} {path} is missing from the document"
        );
    }
    // And everything the document lists is served: not a 404 or 405 from
    // the router (a protected route answers 401 without a token).
    let mut listed = 0;
    for (path, item) in paths {
        for method in item.as_object().expect("an item").keys() {
            listed += 1;
            let concrete = path
                .replace("{id}", "00000000")
                .replace("{name}", "nobody")
                .replace("{session_id}", "00000000");
            let r = call(&w.svc, &method.to_uppercase(), &concrete, None, None);
            assert!(
                r.status != 405 && (r.status != 404 || r.json()["error"]["code"] != "not_found"),
                "{method} {path}: {} {}",
                r.status,
                r.body
            );
            if path != "/api/v1/openapi.json" {
                assert_eq!(r.status, 401, "{method} {path} needs a token: {}", r.body);
            }
        }
    }
    assert_eq!(
        listed,
        routes.len(),
        "the document lists exactly the server's routes"
    );
}
