//! The e-mail room over real sockets: the real `strands serve` with
//! `STRANDS_SMTP_URL` pointed at a fake mail server (`common::fake_smtp`),
//! the fake model, tokens made by the real CLI. A gate with `notify:
//! email` mails each approver once, with one-tap links; opening a link
//! changes nothing, the page's button decides once (a second approver's
//! press is told who decided); Reject takes a reason; a hostile prompt is
//! escaped in the HTML part; a reminder is mailed once before the timeout
//! and not after an answer, and the outcome replies in the gate's thread;
//! a `421` is retried and the mail delivered once; a `550` is given up and
//! listed by `strands notifications failed`, through the server and offline;
//! while an approver is away, their delegate is mailed and approves for them.

use crate::api::WAIT;
use crate::common::api::{call, make_token};
use crate::common::fake_smtp::{FakeSmtp, Mail};
use crate::common::service::{write_workflows, HttpReply, ServeConfig, Service};
use crate::common::{FakeLlm, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

const CAROL: &str = "carol@corp.example";
const DAN: &str = "dan@corp.example";
const ASKS: &str = "[strands] Approval needed: deploy / review";

/// The deploy workflow, its gate answered by carol and dan by mail;
/// `timers`: extra gate lines.
fn spec(timers: &str) -> String {
    crate::common::slack_story::DEPLOY
        .replace(
            "\nagents:",
            &format!("\nsecurity:\n  approvers: [{CAROL}, {DAN}]\nagents:"),
        )
        .replace(
            "        prompt: Approve the deploy of {{ service }}?\n",
            &format!(
                "        prompt: Approve the deploy of {{{{ service }}}}?\n        notify: email\n        require_reason: true\n{timers}"
            ),
        )
}

struct Mailed {
    _llm: FakeLlm,
    sandbox: Sandbox,
    svc: Service,
    smtp: FakeSmtp,
    ci: String,
    root: String,
}

impl Mailed {
    fn start(timers: &str, before: impl FnOnce(&FakeSmtp), auth: Option<&str>) -> Mailed {
        let llm = FakeLlm::start();
        let sandbox = Sandbox::new();
        let dir = write_workflows(&sandbox, &llm, &[("deploy", &spec(timers))]);
        let ci = make_token(&sandbox, "ci-bot", "operator");
        let root = make_token(&sandbox, "root", "admin");
        let smtp = FakeSmtp::start();
        before(&smtp);
        let cfg = ServeConfig::api(&sandbox, &dir)
            .with("STRANDS_SMTP_URL", Some(&smtp.url(auth)))
            .with(
                "STRANDS_EMAIL_FROM",
                Some("Strands <approvals@corp.example>"),
            )
            .with("STRANDS_EMAIL_RETRY_BASE_MS", Some("100"));
        let svc = Service::launch(cfg);
        Mailed {
            _llm: llm,
            sandbox,
            svc,
            smtp,
            ci,
            root,
        }
    }

    #[track_caller]
    fn start_run(&self, service: &str) -> String {
        let r = call(
            &self.svc,
            "POST",
            "/api/v1/runs",
            Some(&self.ci),
            Some(&serde_json::json!({ "workflow": "deploy", "vars": { "service": service } })),
        );
        assert_eq!(r.status, 201, "{}\n{}", r.body, self.svc.log());
        r.json()["session_id"].as_str().expect("an id").to_string()
    }

    #[track_caller]
    fn session(&self, id: &str) -> Value {
        let r = call(
            &self.svc,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&self.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    #[track_caller]
    fn wait_status(&self, id: &str, status: &str) -> Value {
        let until = Instant::now() + WAIT;
        loop {
            let s = self.session(id);
            if s["status"] == status {
                return s;
            }
            assert!(
                Instant::now() < until,
                "never {status}: {s}\n{}",
                self.svc.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The asking mail to `to` for run `id` (waits for it).
    #[track_caller]
    fn ask_to(&self, to: &str, id: &str) -> Mail {
        let msg_id = format!("<review-1.{id}@corp.example>");
        let mails = self.smtp.wait(&format!("an asking mail to {to}"), |m| {
            m.iter()
                .any(|m| is_to(m, to) && m.header("Message-ID").as_deref() == Some(&msg_id))
        });
        let asks: Vec<Mail> = mails
            .into_iter()
            .filter(|m| is_to(m, to) && m.header("Message-ID").as_deref() == Some(&msg_id))
            .collect();
        assert_eq!(asks.len(), 1, "one asking mail to {to}");
        asks[0].clone()
    }

    fn get(&self, path: &str) -> HttpReply {
        self.svc
            .request("GET", path, &[("Accept".into(), "text/html".into())], b"")
    }

    /// The link page's button, as a browser presses it.
    fn press(&self, path: &str, fields: &[(&str, &str)]) -> HttpReply {
        self.press_from("same-origin", path, fields)
    }

    /// A press sent from `site` (`Sec-Fetch-Site`).
    fn press_from(&self, site: &str, path: &str, fields: &[(&str, &str)]) -> HttpReply {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        self.svc.request(
            "POST",
            path,
            &[
                (
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
                ("Sec-Fetch-Site".into(), site.into()),
            ],
            body.as_bytes(),
        )
    }
}

fn is_to(m: &Mail, to: &str) -> bool {
    m.to.iter().any(|t| t.eq_ignore_ascii_case(to))
}

/// Mails to `to` whose Message-ID contains `part`.
fn with_id(mails: &[Mail], to: &str, part: &str) -> Vec<Mail> {
    mails
        .iter()
        .filter(|m| is_to(m, to) && m.header("Message-ID").unwrap_or_default().contains(part))
        .cloned()
        .collect()
}

#[test]
fn a_gate_mails_each_approver_once_and_only_the_pages_button_decides() {
    let w = Mailed::start("", |_| {}, Some("strands:s3cret"));
    let hostile = r#"<script>alert("x")</script><img src=http://evil.example/t.png>"#;
    let id = w.start_run(hostile);
    w.wait_status(&id, "paused");

    let carol = w.ask_to(CAROL, &id);
    let dan = w.ask_to(DAN, &id);
    // The mail: from the service, threaded per gate, plain text and HTML.
    assert_eq!(carol.header("Subject").as_deref(), Some(ASKS));
    assert!(carol
        .header("From")
        .unwrap_or_default()
        .contains("approvals@corp.example"));
    assert_eq!(
        carol.header("Auto-Submitted").as_deref(),
        Some("auto-generated")
    );
    assert!(carol.header("In-Reply-To").is_none());
    assert!(carol.header("List-Unsubscribe").is_none());
    assert!(carol
        .header("Content-Type")
        .unwrap_or_default()
        .starts_with("multipart/alternative"));
    assert_eq!(carol.auth.as_deref(), Some("strands:s3cret"), "AUTH PLAIN");
    assert!(
        !w.svc.log().contains("s3cret"),
        "the password is never logged"
    );
    let text = carol.part("text/plain").expect("a text part");
    assert!(text.contains("started by ci-bot"), "{text}");
    assert!(
        text.contains(hostile),
        "the text part says it as it is: {text}"
    );
    // The HTML part escapes a hostile prompt and loads nothing remote.
    let html = carol.part("text/html").expect("an HTML part");
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"),
        "{html}"
    );
    let labels: Vec<String> = carol.links().into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels, ["Approve", "Reject", "Open in browser"]);

    // Opening a link (a mail scanner, twice) decides nothing.
    let approve = carol.link("Approve");
    for _ in 0..2 {
        let r = w.get(&approve);
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(
            r.body.contains("Approve as carol@corp.example"),
            "{}",
            r.body
        );
        assert!(r.header("set-cookie").is_none());
    }
    assert_eq!(w.session(&id)["status"], "paused");
    // A press from another site is refused, and uses nothing.
    let r = w.press_from("cross-site", &approve, &[("decision", "approve")]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(w.session(&id)["status"], "paused");
    // A press that is not the link's own answer is refused, and uses nothing.
    assert_eq!(w.press(&approve, &[("decision", "reject")]).status, 400);
    assert_eq!(w.session(&id)["status"], "paused");

    // The page's button approves, once.
    let r = w.press(&approve, &[("decision", "approve")]);
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location"), Some(format!("/sessions/{id}")));
    let done = w.wait_status(&id, "completed");
    let answered = done.to_string();
    assert!(answered.contains(CAROL), "{answered}");
    assert_eq!(
        w.press(&approve, &[("decision", "approve")]).status,
        403,
        "a link works once"
    );
    // Dan's press comes too late and is told who decided.
    let r = w.press(&dan.link("Approve"), &[("decision", "approve")]);
    assert_ne!(r.status, 303, "{}", r.body);
    assert!(
        r.body.contains("already approved by carol@corp.example"),
        "{}",
        r.body
    );

    // Each approver hears the outcome, in the gate's thread; nobody was
    // asked twice.
    let thread = format!("<review-1.{id}@corp.example>");
    let mails = w.smtp.wait("the outcome to both", |m| {
        with_id(m, CAROL, "outcome").len() == 1 && with_id(m, DAN, "outcome").len() == 1
    });
    let outcome = &with_id(&mails, DAN, "outcome")[0];
    assert_eq!(
        outcome.header("In-Reply-To").as_deref(),
        Some(thread.as_str())
    );
    assert_eq!(
        outcome.header("References").as_deref(),
        Some(thread.as_str())
    );
    assert!(
        outcome
            .part("text/plain")
            .unwrap_or_default()
            .contains("Approved by carol@corp.example"),
        "{:?}",
        outcome.part("text/plain")
    );
    std::thread::sleep(Duration::from_millis(700));
    let mails = w.smtp.mails();
    assert_eq!(mails.len(), 4, "two asks, two outcomes");
}

#[test]
fn the_reject_link_opens_a_reason_box_and_rejects_with_the_reason() {
    let w = Mailed::start("", |_| {}, None);
    let id = w.start_run("web");
    w.wait_status(&id, "paused");
    let reject = w.ask_to(CAROL, &id).link("Reject");
    let page = w.get(&reject);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("<textarea id=\"reason\" name=\"reason\""),
        "{}",
        page.body
    );
    // The gate requires a reason: a press without one uses nothing.
    assert_eq!(w.press(&reject, &[("decision", "reject")]).status, 400);
    assert_eq!(w.session(&id)["status"], "paused");
    let r = w.press(
        &reject,
        &[("decision", "reject"), ("reason", "not on a Friday")],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let s = w.wait_status(&id, "rejected");
    assert!(s.to_string().contains("not on a Friday"), "{s}");
    let mails = w
        .smtp
        .wait("the outcome", |m| with_id(m, CAROL, "outcome").len() == 1);
    let text = with_id(&mails, CAROL, "outcome")[0]
        .part("text/plain")
        .unwrap_or_default();
    assert!(text.contains("Rejected by carol@corp.example"), "{text}");
    assert!(text.contains("not on a Friday"), "{text}");
}

#[test]
fn a_reminder_is_mailed_once_before_the_timeout_and_not_after_an_answer() {
    // A reminder every 1.8 s (at most 3), a timeout in a minute.
    let w = Mailed::start(
        "        reminder_interval: 0.03\n        max_reminders: 3\n        timeout_minutes: 1\n",
        |_| {},
        None,
    );
    let id = w.start_run("web");
    w.wait_status(&id, "paused");
    let carol = w.ask_to(CAROL, &id);
    let mails = w
        .smtp
        .wait("a reminder", |m| with_id(m, CAROL, "reminder-1").len() == 1);
    let reminder = &with_id(&mails, CAROL, "reminder-1")[0];
    let thread = format!("<review-1.{id}@corp.example>");
    assert_eq!(
        reminder.header("In-Reply-To").as_deref(),
        Some(thread.as_str())
    );
    let text = reminder.part("text/plain").unwrap_or_default();
    assert!(text.contains("Reminder 1 of 3"), "{text}");
    assert!(text.contains("Please answer by"), "{text}");
    let r = w.press(&carol.link("Approve"), &[("decision", "approve")]);
    assert_eq!(r.status, 303, "{}", r.body);
    w.wait_status(&id, "completed");
    // Reminder 2 was due 1.8 s after the first: none comes after the answer.
    std::thread::sleep(Duration::from_secs(4));
    let mails = w.smtp.mails();
    assert_eq!(with_id(&mails, CAROL, "reminder").len(), 1, "one reminder");
    assert_eq!(with_id(&mails, CAROL, "outcome").len(), 1, "the outcome");
}

#[test]
fn a_421_is_retried_and_delivered_once_and_a_550_is_given_up_and_listed() {
    let w = Mailed::start(
        "",
        |smtp| {
            smtp.fail_next("421 4.3.2 busy, try again later");
            smtp.refuse(DAN);
        },
        None,
    );
    let id = w.start_run("web");
    w.wait_status(&id, "paused");
    w.ask_to(CAROL, &id);
    // Dan's address is refused for good: listed, through the server …
    let until = Instant::now() + WAIT;
    let failed = loop {
        let r = call(
            &w.svc,
            "GET",
            "/api/v1/notifications/failed",
            Some(&w.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        if v["count"] == 1 {
            break v;
        }
        assert!(Instant::now() < until, "never failed: {v}\n{}", w.svc.log());
        std::thread::sleep(Duration::from_millis(100));
    };
    let row = &failed["failed"][0];
    assert_eq!(row["to"], DAN);
    assert_eq!(row["kind"], "ask");
    assert_eq!(row["session"], id.as_str());
    assert!(
        row["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("550"),
        "{row}"
    );
    assert_eq!(row["attempts"], 1, "a permanent failure is not retried");
    std::thread::sleep(Duration::from_millis(700));
    let mails = w.smtp.mails();
    assert_eq!(mails.len(), 1, "carol's mail, once, after the 421");
    assert!(w.smtp.attempts() >= 3, "421, dan's 550, carol's retry");
    let metrics = w.get("/metrics").body;
    assert!(metrics.contains("strands_mail_failed 1"), "{metrics}");
    assert!(
        metrics.contains("strands_mail_total{outcome=\"retried\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("strands_mail_total{outcome=\"sent\"} 1"),
        "{metrics}"
    );
    // … and offline, from the store.
    let mut w = w;
    w.svc.stop();
    let out = w.sandbox.strands(&["notifications", "failed", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["count"], 1, "{v}");
    assert_eq!(v["failed"][0]["to"], DAN);
}

#[test]
fn remind_before_mails_each_approver_once_before_the_timeout() {
    // A minute's timeout, one reminder 57 s before it (3 s after asking).
    let w = Mailed::start(
        "        timeout_minutes: 1\n        remind_before: 0.95\n",
        |_| {},
        None,
    );
    let id = w.start_run("web");
    w.wait_status(&id, "paused");
    let carol = w.ask_to(CAROL, &id);
    let mails = w.smtp.wait("the last reminder", |m| {
        with_id(m, CAROL, "reminder-0").len() == 1 && with_id(m, DAN, "reminder-0").len() == 1
    });
    let reminder = &with_id(&mails, DAN, "reminder-0")[0];
    let thread = format!("<review-1.{id}@corp.example>");
    assert_eq!(
        reminder.header("In-Reply-To").as_deref(),
        Some(thread.as_str())
    );
    let text = reminder.part("text/plain").unwrap_or_default();
    assert!(text.contains("Last reminder before the timeout"), "{text}");
    let r = w.press(
        &carol.link("Reject"),
        &[("decision", "reject"), ("reason", "too late")],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    w.wait_status(&id, "rejected");
    w.smtp
        .wait("the outcome", |m| with_id(m, DAN, "outcome").len() == 1);
    assert_eq!(with_id(&w.smtp.mails(), CAROL, "reminder").len(), 1, "once");
}

#[test]
fn while_carol_is_away_her_mail_goes_to_her_delegate_who_approves_for_her() {
    const ERIN: &str = "erin@corp.example";
    let w = Mailed::start("", |_| {}, None);
    for (name, email) in [("carol", CAROL), ("erin", ERIN)] {
        let body = serde_json::json!({ "name": name, "email": email });
        let r = call(&w.svc, "POST", "/api/v1/people", Some(&w.root), Some(&body));
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let body = serde_json::json!({ "to": "erin", "from": today, "until": today });
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/people/carol/delegations",
        Some(&w.root),
        Some(&body),
    );
    assert_eq!(r.status, 201, "{}", r.body);

    let id = w.start_run("billing");
    w.wait_status(&id, "paused");
    let erin = w.ask_to(ERIN, &id);
    let _dan = w.ask_to(DAN, &id);
    let all = w.smtp.wait("the asking mails", |m| m.len() >= 2);
    assert!(
        !all.iter().any(|m| is_to(m, CAROL)),
        "carol is away: nothing is mailed to her"
    );
    let approve = erin.link("Approve");
    let r = w.press(&approve, &[("decision", "approve")]);
    assert_eq!(r.status, 303, "{}", r.body);
    let done = w.wait_status(&id, "completed");
    assert_eq!(done["gates"][0]["by"], ERIN, "{done:#}");
    assert_eq!(done["gates"][0]["on_behalf_of"], "carol", "{done:#}");
}
