//! The web inbox over real sockets, without a browser: the real
//! `strands serve`, the fake model, tokens made by the real CLI. Every
//! route refuses without a sign-in; sign-in sets a hardened cookie; every
//! state-changing request is refused cross-site or without the sign-in's
//! CSRF token, and a refused one changes nothing; hostile text shows as
//! text; one-tap links decide nothing when opened and sign in once, for
//! their gate only; bulk approve answers each gate on its own; the audit
//! view is for admins.

use crate::api::{World, WAIT};
use crate::common::api::call;
use crate::common::service::{HttpReply, Service};
use serde_json::json;
use std::time::{Duration, Instant};

/// A browser's view of the service: a cookie jar of one cookie.
pub struct Visitor<'a> {
    pub svc: &'a Service,
    pub cookie: String,
}

fn headers(cookie: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut h = vec![("Accept".to_string(), "text/html".to_string())];
    if !cookie.is_empty() {
        h.push(("Cookie".into(), format!("strands_login={cookie}")));
    }
    h.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    h
}

fn form(fields: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes()
}

/// The value of `strands_login` a reply sets.
fn set_cookie(r: &HttpReply) -> Option<(String, String)> {
    let raw = r.header("set-cookie")?;
    let value = raw
        .strip_prefix("strands_login=")?
        .split(';')
        .next()?
        .to_string();
    Some((value, raw))
}

/// The CSRF token a page's forms carry.
pub fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no CSRF field in:\n{html}"));
    let rest = &html[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').expect("end of the value")].to_string()
}

impl<'a> Visitor<'a> {
    /// Signs in with `token` on the login page.
    #[track_caller]
    pub fn sign_in(svc: &'a Service, token: &str) -> Visitor<'a> {
        let r = svc.request(
            "POST",
            "/login",
            &headers("", &[("Content-Type", "application/x-www-form-urlencoded")]),
            &form(&[("token", token), ("next", "/")]),
        );
        assert_eq!(r.status, 303, "{}", r.body);
        let (cookie, _) = set_cookie(&r).expect("a sign-in cookie");
        Visitor { svc, cookie }
    }

    pub fn get(&self, path: &str) -> HttpReply {
        self.svc
            .request("GET", path, &headers(&self.cookie, &[]), b"")
    }

    /// A same-origin form post (as a browser sends it).
    pub fn post(&self, path: &str, fields: &[(&str, &str)]) -> HttpReply {
        self.post_with(path, fields, &[("Sec-Fetch-Site", "same-origin")])
    }

    pub fn post_with(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        extra: &[(&str, &str)],
    ) -> HttpReply {
        let mut h = vec![("Content-Type", "application/x-www-form-urlencoded")];
        h.extend_from_slice(extra);
        self.svc
            .request("POST", path, &headers(&self.cookie, &h), &form(fields))
    }

    /// The CSRF token of this sign-in (read off the inbox).
    pub fn csrf(&self) -> String {
        let r = self.get("/");
        assert_eq!(r.status, 200, "{}", r.body);
        csrf_of(&r.body)
    }
}

/// Waits until session `id` has `status` (as root sees it over the API).
#[track_caller]
pub fn wait_status(w: &World, id: &str, status: &str) -> serde_json::Value {
    let until = Instant::now() + WAIT;
    loop {
        let s = w.session(id);
        if s["status"] == status {
            return s;
        }
        assert!(
            Instant::now() < until,
            "never {status}: {s}\n{}",
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn nothing_is_shown_without_a_sign_in_and_the_cookie_is_hardened() {
    let w = World::start();
    let id = w.start_run("web");
    w.wait_paused(&id);

    // Every page sends a stranger to the login page; nothing of the run shows.
    for path in [
        "/",
        &format!("/sessions/{id}"),
        "/inbox/list",
        "/audit",
        "/audit/export",
    ] {
        let r = w.svc.get(path);
        assert_eq!(r.status, 303, "{path}: {}", r.body);
        let to = r.header("location").unwrap_or_default();
        assert!(to.starts_with("/login?next="), "{path} → {to}");
        assert!(!r.body.contains(&id), "{path} leaked the session");
    }
    let r = w.svc.get("/login");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("type=\"password\""), "{}", r.body);
    assert_eq!(r.header("x-frame-options").as_deref(), Some("DENY"));
    assert!(r
        .header("content-security-policy")
        .unwrap_or_default()
        .contains("frame-ancestors 'none'"));

    // A wrong token: 401, no cookie.
    let h = headers("", &[("Content-Type", "application/x-www-form-urlencoded")]);
    let bad = w
        .svc
        .request("POST", "/login", &h, &form(&[("token", "stk_nope_nope")]));
    assert_eq!(bad.status, 401, "{}", bad.body);
    assert!(set_cookie(&bad).is_none());
    assert!(bad.body.contains("not valid"), "{}", bad.body);

    // A good one: HttpOnly, SameSite=Lax, expiring; Secure only over HTTPS.
    let good = w.svc.request(
        "POST",
        "/login",
        &h,
        &form(&[("token", &w.alice), ("next", &format!("/sessions/{id}"))]),
    );
    assert_eq!(good.status, 303, "{}", good.body);
    assert_eq!(good.header("location"), Some(format!("/sessions/{id}")));
    let (cookie, raw) = set_cookie(&good).expect("a cookie");
    assert!(
        raw.contains("HttpOnly") && raw.contains("SameSite=Lax") && raw.contains("Max-Age="),
        "{raw}"
    );
    assert!(!raw.contains("Secure"), "plain HTTP: {raw}");
    assert!(!cookie.contains(&w.alice) && !w.alice.contains(&cookie));
    let mut proxied = h.clone();
    proxied.push(("X-Forwarded-Proto".into(), "https".into()));
    let secure = w
        .svc
        .request("POST", "/login", &proxied, &form(&[("token", &w.alice)]));
    assert!(set_cookie(&secure).expect("a cookie").1.contains("Secure"));

    // An open redirect is not offered.
    let r = w.svc.request(
        "POST",
        "/login",
        &h,
        &form(&[("token", &w.alice), ("next", "//evil.example/")]),
    );
    assert_eq!(r.header("location").as_deref(), Some("/"));

    let alice = Visitor {
        svc: &w.svc,
        cookie,
    };
    let page = alice.get(&format!("/sessions/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Approve the deploy of web?"),
        "{}",
        page.body
    );

    // A forged cookie (right id, wrong secret) is nobody.
    let (lid, _) = alice.cookie.split_once('.').expect("id.secret");
    let forged = Visitor {
        svc: &w.svc,
        cookie: format!("{lid}.{}", "ab".repeat(32)),
    };
    assert_eq!(forged.get("/").status, 303);
}

#[test]
fn the_inbox_lists_what_waits_for_you_and_an_answer_resumes_the_run() {
    let w = World::start();
    let id = w.start_run("payments");
    w.wait_paused(&id);

    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let inbox = alice.get("/");
    assert_eq!(inbox.status, 200);
    for needed in [
        "deploy · review",
        "Approve the deploy of payments?",
        "ci-bot",
        &id,
        "Waiting",
    ] {
        assert!(
            inbox.body.contains(needed),
            "no {needed:?} in the inbox:\n{}",
            inbox.body
        );
    }
    // The list alone (live refresh) and the filters.
    let list = alice.get("/inbox/list?workflow=deploy");
    assert!(list.body.contains(&id), "{}", list.body);
    let other = alice.get("/inbox/list?workflow=other");
    assert!(
        other.body.contains("Nothing waits for you"),
        "{}",
        other.body
    );
    let bad = alice.get("/?status=sleeping");
    assert_eq!(bad.status, 400, "{}", bad.body);

    // mallory is no approver: nothing waits for her, the page is refused.
    let mallory = Visitor::sign_in(&w.svc, &w.mallory);
    let theirs = mallory.get("/");
    assert!(!theirs.body.contains(&id), "{}", theirs.body);
    let page = mallory.get(&format!("/sessions/{id}"));
    assert_eq!(page.status, 403, "{}", page.body);
    let csrf = mallory.csrf();
    let r = mallory.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "review#1"),
            ("decision", "approve"),
        ],
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(w.session(&id)["status"], "paused");

    // alice approves from the page; the run completes; the answer says web.
    let csrf = alice.csrf();
    let r = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "review#1"),
            ("decision", "approve"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Recorded"), "{}", r.body);
    let done = wait_status(&w, &id, "completed");
    assert_eq!(done["gates"][0]["by"], "alice");
    assert_eq!(done["gates"][0]["via"], "web");

    // The page tells the story: the answer, the step outputs, the output.
    let page = alice.get(&format!("/sessions/{id}"));
    for needed in [
        "approve by",
        "alice",
        "via web",
        "Output",
        "planner finished",
        "Timeline",
    ] {
        assert!(
            page.body.contains(needed),
            "no {needed:?} on:\n{}",
            page.body
        );
    }

    // A late answer is told who decided, and changes nothing.
    let late = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "review#1"),
            ("decision", "reject"),
            ("reason", "late"),
        ],
    );
    assert_eq!(late.status, 409, "{}", late.body);
    assert!(
        late.body.contains("the session is completed")
            || late.body.contains("Already decided by alice"),
        "{}",
        late.body
    );
    assert_eq!(w.session(&id)["status"], "completed");
}

#[test]
fn cross_site_or_tokenless_posts_are_refused_and_change_nothing() {
    let w = World::start();
    let id = w.start_run("csrf");
    w.wait_paused(&id);
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let csrf = alice.csrf();
    let path = format!("/sessions/{id}/answer");
    let approve = [("gate", "review#1"), ("decision", "approve")];

    // No CSRF token; a wrong one; another site's Origin; a cross-site fetch.
    let mut no_token = approve.to_vec();
    no_token.push(("csrf", ""));
    let r = alice.post(&path, &no_token);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("CSRF"), "{}", r.body);
    let mut wrong = approve.to_vec();
    wrong.push(("csrf", "0123456789abcdef"));
    assert_eq!(alice.post(&path, &wrong).status, 403);
    let mut right = approve.to_vec();
    right.push(("csrf", &csrf));
    let r = alice.post_with(&path, &right, &[("Origin", "http://evil.example")]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("another site"), "{}", r.body);
    let r = alice.post_with(&path, &right, &[("Sec-Fetch-Site", "cross-site")]);
    assert_eq!(r.status, 403, "{}", r.body);
    // Bulk approve and sign-out are guarded the same way.
    let pick = format!("{id} review#1");
    let r = alice.post_with(
        "/inbox/approve",
        &[("csrf", &csrf), ("pick", &pick)],
        &[("Sec-Fetch-Site", "cross-site")],
    );
    assert_eq!(r.status, 403);
    let r = alice.post("/logout", &[("csrf", "nope")]);
    assert_eq!(r.status, 403);
    // A cross-site login attempt is refused too.
    let h = headers(
        "",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", "http://evil.example"),
        ],
    );
    assert_eq!(
        w.svc
            .request("POST", "/login", &h, &form(&[("token", &w.alice)]))
            .status,
        403
    );

    // Nothing changed: still paused, no answer, nothing in the audit.
    let s = w.session(&id);
    assert_eq!(s["status"], "paused", "{s}");
    assert!(s["gates"].as_array().is_some_and(|g| g.is_empty()), "{s}");

    // The same post, same-origin with the token, works (Origin = this host).
    let host = w.svc.url.trim_start_matches("http://").to_string();
    let origin = format!("http://{host}");
    let r = alice.post_with(&path, &right, &[("Origin", &origin)]);
    assert_eq!(r.status, 200, "{}", r.body);
    wait_status(&w, &id, "completed");

    // Sign-out ends the sign-in in the store: the old cookie is nobody.
    let r = alice.post("/logout", &[("csrf", &csrf)]);
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(alice.get("/").status, 303);
}

#[test]
fn hostile_text_in_prompts_and_outputs_is_shown_as_text() {
    let w = World::start();
    let evil = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    let id = w.start_run(evil);
    w.wait_paused(&id);
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    for path in ["/".to_string(), format!("/sessions/{id}")] {
        let page = alice.get(&path);
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(
            !page.body.contains("<script>alert"),
            "{path} has live script:\n{}",
            page.body
        );
        assert!(!page.body.contains("<img src=x"), "{path}");
        assert!(
            page.body
                .contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;")
                || page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{path}:\n{}",
            page.body
        );
    }
}

#[test]
fn a_revoked_token_ends_its_sign_ins() {
    let w = World::start();
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    assert_eq!(alice.get("/").status, 200);
    let r = call(
        &w.svc,
        "DELETE",
        "/api/v1/tokens/alice",
        Some(&w.root),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        alice.get("/").status,
        303,
        "a revoked token's sign-in still works"
    );
}

#[test]
fn bulk_approve_answers_each_gate_on_its_own() {
    let w = World::start();
    let a = w.start_run("one");
    let b = w.start_run("two");
    w.wait_paused(&a);
    w.wait_paused(&b);
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let csrf = alice.csrf();
    let pa = format!("{a} review#1");
    let pb = format!("{b} review#1");
    // One of them is answered elsewhere first (the API): its pick is refused,
    // the other is approved.
    let r = w.answer(
        &b,
        &w.alice,
        json!({ "decision": "reject", "reason": "not today" }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = alice.post(
        "/inbox/approve",
        &[("csrf", &csrf), ("pick", &pa), ("pick", &pb)],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains(&format!("{a}</a> review#1: approved")),
        "{}",
        r.body
    );
    assert!(
        r.body.contains("review#1: already rejected by alice at "),
        "{}",
        r.body
    );
    wait_status(&w, &a, "completed");
    assert_eq!(w.session(&b)["status"], "rejected");
    // Each answer is its own audit entry.
    let audit = call(
        &w.svc,
        "GET",
        &format!("/api/v1/audit?session={a}"),
        Some(&w.root),
        None,
    );
    let web_answers = audit
        .body
        .lines()
        .filter(|l| l.contains("\"kind\":\"answer\"") && l.contains("\"via\":\"web\""))
        .count();
    assert_eq!(web_answers, 1, "{}", audit.body);
    // Nothing selected: a clear refusal.
    let r = alice.post("/inbox/approve", &[("csrf", &csrf)]);
    assert_eq!(r.status, 400);
}

#[test]
fn bulk_reject_rejects_each_gate_with_the_one_reason() {
    let w = World::start();
    let ids = ["one", "two", "three"].map(|n| w.start_run(n));
    for id in &ids {
        w.wait_paused(id);
    }
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let csrf = alice.csrf();
    // The inbox offers it next to the approve button.
    let page = alice.get("/");
    assert!(
        page.body.contains(r#"formaction="/inbox/reject""#),
        "{}",
        page.body
    );
    // The third is approved elsewhere first: its pick is refused, the
    // other two are rejected.
    let r = w.answer(&ids[2], &w.alice, json!({ "decision": "approve" }));
    assert_eq!(r.status, 200, "{}", r.body);
    let picks = ids.clone().map(|id| format!("{id} review#1"));
    let r = alice.post(
        "/inbox/reject",
        &[
            ("csrf", csrf.as_str()),
            ("pick", &picks[0]),
            ("pick", &picks[1]),
            ("pick", &picks[2]),
            ("reason", "  budget frozen this quarter "),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for id in &ids[..2] {
        assert!(
            r.body.contains(&format!("{id}</a> review#1: rejected")),
            "{}",
            r.body
        );
        wait_status(&w, id, "rejected");
    }
    assert!(
        !r.body
            .contains(&format!("{}</a> review#1: rejected", ids[2])),
        "{}",
        r.body
    );
    wait_status(&w, &ids[2], "completed");
    // One audit entry per rejection, each with the reason, trimmed.
    for id in &ids[..2] {
        let audit = call(
            &w.svc,
            "GET",
            &format!("/api/v1/audit?session={id}"),
            Some(&w.root),
            None,
        );
        let rejections = audit
            .body
            .lines()
            .filter(|l| {
                l.contains("\"kind\":\"answer\"")
                    && l.contains("\"via\":\"web\"")
                    && l.contains("\"reason\":\"budget frozen this quarter\"")
            })
            .count();
        assert_eq!(rejections, 1, "{}", audit.body);
    }
    // A refused post (no CSRF token) rejects nothing; nothing selected is
    // a clear refusal.
    let other = w.start_run("four");
    w.wait_paused(&other);
    let pick = format!("{other} review#1");
    let r = alice.post("/inbox/reject", &[("pick", pick.as_str())]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(w.session(&other)["status"], "paused");
    let r = alice.post(
        "/inbox/reject",
        &[("csrf", csrf.as_str()), ("reason", "no")],
    );
    assert_eq!(r.status, 400);
    assert!(r.body.contains("tick the gates to reject"), "{}", r.body);
}

#[test]
fn a_one_tap_link_decides_nothing_when_opened_and_signs_in_once_for_its_gate() {
    let w = World::start();
    let id = w.start_run("linked");
    let other = w.start_run("other");
    w.wait_paused(&id);
    w.wait_paused(&other);

    // Approvers may not make links; operators may.
    let body = json!({ "for": "alice", "hours": 2 });
    let r = call(
        &w.svc,
        "POST",
        &format!("/api/v1/sessions/{id}/links"),
        Some(&w.alice),
        Some(&body),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = call(
        &w.svc,
        "POST",
        &format!("/api/v1/sessions/{id}/links"),
        Some(&w.ci),
        Some(&body),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let made = r.json();
    assert_eq!(made["gate"], "review#1");
    let url = made["url"].as_str().expect("a url").to_string();
    let path = &url[url.find("/l/").expect("a /l/ link")..];

    // Opening it (a link previewer, twice) decides nothing and uses nothing.
    for _ in 0..2 {
        let r = w.svc.get(path);
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body.contains("Continue as alice"), "{}", r.body);
        assert!(set_cookie(&r).is_none());
    }
    assert_eq!(w.session(&id)["status"], "paused");

    // A tampered link is refused.
    let tampered = format!("{}x", path);
    assert_eq!(w.svc.get(&tampered).status, 403);

    // Pressing the button signs in, for that run's page and gate only.
    let h = headers("", &[("Sec-Fetch-Site", "same-origin")]);
    let r = w.svc.request("POST", path, &h, b"");
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location"), Some(format!("/sessions/{id}")));
    let (cookie, _) = set_cookie(&r).expect("a cookie");
    let holder = Visitor {
        svc: &w.svc,
        cookie,
    };
    assert_eq!(holder.get(&format!("/sessions/{id}")).status, 200);
    assert_eq!(holder.get(&format!("/sessions/{other}")).status, 403);
    assert_eq!(
        holder.get("/").status,
        303,
        "the inbox sends a link's sign-in to its run"
    );
    assert_eq!(holder.get("/audit").status, 403);
    let page = holder.get(&format!("/sessions/{id}"));
    let csrf = csrf_of(&page.body);
    let r = holder.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "review#1"),
            ("decision", "approve"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let done = wait_status(&w, &id, "completed");
    assert_eq!(done["gates"][0]["by"], "alice");

    // Used once: a second press is refused.
    let again = w.svc.request("POST", path, &h, b"");
    assert_eq!(again.status, 403, "{}", again.body);
    assert!(again.body.contains("used already"), "{}", again.body);
}

#[test]
fn the_audit_view_is_for_admins_and_downloads_what_it_shows() {
    let w = World::start();
    let id = w.start_run("audited");
    w.wait_paused(&id);
    let r = w.answer(&id, &w.alice, json!({ "decision": "approve" }));
    assert_eq!(r.status, 200, "{}", r.body);
    wait_status(&w, &id, "completed");

    let alice = Visitor::sign_in(&w.svc, &w.alice);
    assert_eq!(alice.get("/audit").status, 403);
    assert_eq!(alice.get("/audit/export?format=csv").status, 403);

    let root = Visitor::sign_in(&w.svc, &w.root);
    let page = root.get(&format!("/audit?who=alice&session={id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Chain: intact"), "{}", page.body);
    assert!(page.body.contains("by alice via api"), "{}", page.body);
    let csv = root.get(&format!("/audit/export?format=csv&who=alice&session={id}"));
    assert_eq!(csv.status, 200);
    assert!(csv
        .header("content-type")
        .unwrap_or_default()
        .starts_with("text/csv"));
    let mut lines = csv.body.lines();
    assert!(lines
        .next()
        .unwrap_or_default()
        .starts_with("seq,at,session,workflow,kind"));
    let rows: Vec<&str> = lines.collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|l| l.contains(",alice,")),
        "{}",
        csv.body
    );
    let jsonl = root.get(&format!("/audit/export?session={id}"));
    assert!(jsonl.body.lines().count() >= 3, "{}", jsonl.body);
    for line in jsonl.body.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON lines");
        assert!(v["hash"].is_string() && v["prev"].is_string());
    }
    assert_eq!(root.get("/audit?since=yesterday-ish").status, 400);
}

#[test]
fn the_event_stream_pings_when_a_gate_opens() {
    let w = World::start();
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    // A raw SSE read with the cookie.
    let mut sse = crate::common::api::Sse::open_with(
        &w.svc,
        "/inbox/events",
        &[("Cookie".into(), format!("strands_login={}", alice.cookie))],
    );
    assert_eq!(sse.status(), 200, "{}", sse.head);
    let id = w.start_run("live");
    let seen = sse.until("change", WAIT);
    assert!(!seen.is_empty());
    // Pings carry no content of the run, only its event number.
    assert!(seen.iter().all(|e| e.data.is_u64()), "{seen:?}");
    w.wait_paused(&id);
    // A page connects with the event number it was rendered at: what
    // happened in between comes at once.
    let mut late = crate::common::api::Sse::open_with(
        &w.svc,
        "/inbox/events?after=0",
        &[("Cookie".into(), format!("strands_login={}", alice.cookie))],
    );
    let replayed = late.until("change", Duration::from_secs(5));
    assert!(!replayed.is_empty(), "nothing replayed after event 0");
    let page = alice.get("/");
    assert!(page.body.contains("data-after=\""), "{}", page.body);
}

#[test]
fn an_open_inbox_does_not_hold_up_shutdown() {
    let mut w = World::start();
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let mut sse = crate::common::api::Sse::open_with(
        &w.svc,
        "/inbox/events",
        &[("Cookie".into(), format!("strands_login={}", alice.cookie))],
    );
    assert_eq!(sse.status(), 200, "{}", sse.head);
    let mut api = crate::common::api::Sse::open(&w.svc, "/api/v1/events", &w.root, None);
    assert_eq!(api.status(), 200, "{}", api.head);
    let t = Instant::now();
    w.svc.stop();
    // `stop` SIGKILLs after 10 s: a clean exit is well before that.
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t.elapsed()
    );
    assert!(sse.closed_within(Duration::from_secs(2)));
    assert!(api.closed_within(Duration::from_secs(2)));
}
