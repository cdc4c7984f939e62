//! Signing in to the web inbox through a real OpenID provider (panva's
//! oidc-provider, `tests/oidc-provider`): in Chromium, from the login
//! page's link through the provider's own login and consent pages and back,
//! signed in as the directory's person; a gate for `group:finance` answered
//! by someone whose finance membership comes only from the ID token (and
//! the audit says so), and refused to someone without it. Over HTTP with a
//! cookie jar: every way a sign-in must fail (wrong state, a replayed
//! answer, a code the provider refuses, a token for another audience, an
//! expired one, one signed with an unpublished key) ends on a page saying
//! so, signed in as nobody; a rotated signing key is fetched; sign-out ends
//! the sign-in; and a bad issuer stops `serve`, naming the setting.

use crate::common::browser::{self, Browser};
use crate::common::oidc_provider::{self, free_port, Provider, CLIENT_ID, CLIENT_SECRET};
use crate::common::service::{http, run_to_exit, write_workflows, HttpReply, ServeConfig, Service};
use crate::common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const PAYOUT: &str = r#"
version: 0
name: payout
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  clerk:
    prompt: You are the CLERK.
pattern:
  type: chain
  config:
    steps:
      - agent: clerk
        input: Prepare the payout.
      - type: manual_gate
        id: pay
        prompt: Pay the supplier?
        approvers: [group:finance]
      - agent: clerk
        input: Pay.
"#;

/// The service with sign-in through the provider, and the provider.
struct World {
    _llm: FakeLlm,
    sandbox: Sandbox,
    provider: Provider,
    svc: Service,
    ci: String,
    root: String,
}

impl World {
    fn start() -> World {
        World::start_with(|c| c)
    }

    fn start_with(adjust: impl FnOnce(ServeConfig) -> ServeConfig) -> World {
        World::start_on("127.0.0.1", adjust)
    }

    /// The service at `http://HOST:PORT` (`localhost` for passkeys: WebAuthn
    /// takes no IP address).
    fn start_on(host: &str, adjust: impl FnOnce(ServeConfig) -> ServeConfig) -> World {
        let llm = FakeLlm::start();
        let sandbox = Sandbox::new();
        let stepped = PAYOUT.replace("name: payout", "name: stepped").replace(
            "approvers: [group:finance]",
            "approvers: [group:finance]\n        step_up: passkey",
        );
        let dir = write_workflows(&sandbox, &llm, &[("payout", PAYOUT), ("stepped", &stepped)]);
        let ci = crate::common::api::make_token(&sandbox, "ci-bot", "operator");
        let root = crate::common::api::make_token(&sandbox, "root", "admin");
        // alice is in the directory by her email, in no group: finance
        // comes from the provider only.
        sandbox
            .strands(&["people", "add", "alice", "--email", "Alice@corp.example"])
            .expect_code(0);
        // bob is a directory name, with no identity the provider knows.
        sandbox.strands(&["people", "add", "bob"]).expect_code(0);
        // carol is known by the identity provider's name for her.
        sandbox
            .strands(&["people", "add", "carol-ops", "--oidc", "carol@corp.example"])
            .expect_code(0);
        let port = free_port();
        let url = format!("http://{host}:{port}");
        let provider = Provider::start(&url);
        let cfg = ServeConfig::api(&sandbox, &dir)
            .with("STRANDS_BIND", Some(&format!("127.0.0.1:{port}")))
            .with("STRANDS_PUBLIC_URL", Some(&url))
            .with("STRANDS_OIDC_ISSUER", Some(&provider.issuer))
            .with("STRANDS_OIDC_CLIENT_ID", Some(CLIENT_ID))
            .with("STRANDS_OIDC_CLIENT_SECRET", Some(CLIENT_SECRET));
        let svc = Service::launch(adjust(cfg));
        World {
            _llm: llm,
            sandbox,
            provider,
            svc,
            ci,
            root,
        }
    }

    fn start_run(&self) -> String {
        self.start_workflow("payout")
    }

    fn start_workflow(&self, workflow: &str) -> String {
        let r = crate::common::api::call(
            &self.svc,
            "POST",
            "/api/v1/runs",
            Some(&self.ci),
            Some(&json!({"workflow": workflow})),
        );
        assert_eq!(r.status, 201, "{}\n{}", r.body, self.svc.log());
        r.json()["session_id"].as_str().expect("an id").to_string()
    }

    fn session(&self, id: &str) -> Value {
        let r = crate::common::api::call(
            &self.svc,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&self.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    fn wait_status(&self, id: &str, status: &str) -> Value {
        let until = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.session(id);
            if s["status"] == status {
                return s;
            }
            assert!(
                std::time::Instant::now() < until,
                "never {status}: {s}\n{}",
                self.svc.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn audit(&self, id: &str) -> Vec<Value> {
        let r = crate::common::api::call(
            &self.svc,
            "GET",
            &format!("/api/v1/audit?session={id}"),
            Some(&self.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

/// A browser without a browser: cookies by name (everything here is on
/// 127.0.0.1, as a browser keeps them), redirects followed by hand.
#[derive(Default)]
struct Agent {
    jar: BTreeMap<String, String>,
}

fn absolute(base: &str, location: &str) -> String {
    url::Url::parse(base)
        .and_then(|b| b.join(location))
        .expect("a URL")
        .to_string()
}

fn unescape(s: &str) -> String {
    s.replace("&#x2F;", "/")
        .replace("&#47;", "/")
        .replace("&amp;", "&")
        .replace("&quot;", "\"")
}

impl Agent {
    fn send(
        &mut self,
        method: &str,
        url: &str,
        body: &[(&str, &str)],
        origin: Option<&str>,
    ) -> HttpReply {
        let mut headers = Vec::new();
        if !self.jar.is_empty() {
            let cookies: Vec<String> = self.jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            headers.push(("Cookie".to_string(), cookies.join("; ")));
        }
        let bytes = if method == "POST" {
            headers.push((
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            ));
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(body)
                .finish()
                .into_bytes()
        } else {
            Vec::new()
        };
        if let Some(o) = origin {
            headers.push(("Origin".into(), o.to_string()));
        }
        let r = http(method, url, &headers, &bytes).expect("an HTTP answer");
        for (k, v) in &r.headers {
            if !k.eq_ignore_ascii_case("set-cookie") {
                continue;
            }
            let Ok(c) = cookie::Cookie::parse(v.clone()) else {
                continue;
            };
            let gone =
                c.value().is_empty() || c.max_age().is_some_and(|a| a.is_zero() || a.is_negative());
            if gone {
                self.jar.remove(c.name());
            } else {
                self.jar.insert(c.name().to_string(), c.value().to_string());
            }
        }
        r
    }

    /// GETs `url` and follows redirects until one leads to a URL starting
    /// with `stop` (returned, not fetched) or a page answers.
    fn follow(&mut self, mut url: String, stop: &str) -> (String, HttpReply) {
        for _ in 0..20 {
            let r = self.send("GET", &url, &[], None);
            match r.header("location") {
                Some(to) if (300..400).contains(&r.status) => {
                    let next = absolute(&url, &to);
                    if next.starts_with(stop) {
                        return (next, r);
                    }
                    url = next;
                }
                _ => return (url, r),
            }
        }
        panic!("too many redirects from {url}");
    }

    /// POSTs the page's form (its `action`) with `fields` and follows on.
    fn submit(
        &mut self,
        page_url: &str,
        page: &HttpReply,
        fields: &[(&str, &str)],
        stop: &str,
    ) -> (String, HttpReply) {
        let at = page
            .body
            .find("action=\"")
            .unwrap_or_else(|| panic!("a form on {page_url}: {}", page.body));
        let rest = &page.body[at + "action=\"".len()..];
        let action = unescape(&rest[..rest.find('"').expect("end of the action")]);
        let target = absolute(page_url, &action);
        let r = self.send("POST", &target, fields, None);
        match r.header("location") {
            Some(to) if (300..400).contains(&r.status) => {
                let next = absolute(&target, &to);
                if next.starts_with(stop) {
                    return (next, r);
                }
                self.follow(next, stop)
            }
            _ => (target, r),
        }
    }

    /// Through the provider's login and consent pages as `login`: the
    /// callback URL the provider sends the browser back to (not fetched).
    fn through_the_provider(&mut self, svc: &Service, login: &str) -> String {
        let callback = format!("{}/auth/oidc/callback", svc.url);
        let (url, page) = self.follow(format!("{}/auth/oidc/login?next=/", svc.url), &callback);
        assert_eq!(page.status, 200, "the provider's login page: {}", page.body);
        let (url, page) = self.submit(
            &url,
            &page,
            &[("prompt", "login"), ("login", login), ("password", "any")],
            &callback,
        );
        if url.starts_with(&callback) {
            return url;
        }
        assert!(
            page.body.contains("consent") || page.body.contains("Continue"),
            "{}",
            page.body
        );
        let (url, page) = self.submit(&url, &page, &[("prompt", "consent")], &callback);
        assert!(
            url.starts_with(&callback),
            "not back at strands: {url}\n{}",
            page.body
        );
        url
    }

    /// Signs in as `login`: the callback's answer.
    fn sign_in(&mut self, svc: &Service, login: &str) -> HttpReply {
        let url = self.through_the_provider(svc, login);
        self.send("GET", &url, &[], None)
    }
}

/// Asserts a sign-in was refused with `status` and a page saying `why`,
/// and that nobody is signed in.
#[track_caller]
fn refused(agent: &mut Agent, svc: &Service, r: &HttpReply, status: u16, why: &str) {
    assert_eq!(r.status, status, "{}\n{}", r.body, svc.log());
    assert!(r.body.contains(why), "`{why}` not in: {}", r.body);
    assert!(!agent.jar.contains_key("strands_login"), "{:?}", agent.jar);
    let home = agent.send("GET", &format!("{}/", svc.url), &[], None);
    assert_eq!(home.status, 303, "nobody is signed in: {}", home.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_sign_in_through_the_provider_and_answer_as_a_member_of_its_group() {
    if !oidc_provider::available("oidc browser") || !browser::available("oidc browser") {
        return;
    }
    let w = World::start();
    let id = w.start_run();
    w.wait_status(&id, "paused");

    let b = Browser::start(1200, 900).await;
    b.goto(&format!("{}/", w.svc.url)).await;
    // The login page offers the provider beside the token.
    b.find("input#token[type=password]").await;
    b.click("#sign-in-oidc").await;
    // The provider's own pages: login, then consent.
    b.find("input[name=login]").await;
    b.fill("input[name=login]", "alice@corp.example").await;
    b.fill("input[name=password]", "any").await;
    b.click("button[type=submit]").await;
    b.wait_for_text("Continue", None).await;
    b.click("button[type=submit]").await;
    b.find("#inbox").await;
    // Signed in as the directory's alice (matched by email), and the gate
    // for group:finance waits for her: finance is only in her ID token.
    let text = b.wait_for_text("Pay the supplier?", None).await;
    assert!(text.contains("alice"), "{text}");
    b.click(&format!("a[href='/sessions/{id}']")).await;
    b.find("#approve").await;
    b.click("#approve").await;
    let done = w.wait_status(&id, "completed");
    assert_eq!(done["gates"][0]["by"], "alice", "{done}");
    assert_eq!(done["gates"][0]["via"], "web", "{done}");
    b.close().await;

    // The audit entry says the group came from the identity provider.
    let audit = w.audit(&id);
    let answer = audit
        .iter()
        .find(|e| e["event"]["kind"] == "answer")
        .unwrap_or_else(|| panic!("an answer entry: {audit:?}"));
    assert_eq!(answer["event"]["idp_group"], "finance", "{answer}");
    assert!(
        answer["event"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("identity provider")),
        "{answer}"
    );
}

/// Signed in through the provider, alice registers a passkey and approves
/// a `step_up: passkey` gate she may answer only as a member of the
/// provider's finance group: the audit entry carries both the group and
/// her passkey's signature, and `audit verify` checks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_in_through_the_provider_a_passkey_approves_a_stepped_up_gate() {
    if !oidc_provider::available("oidc passkey") || !browser::available("oidc passkey") {
        return;
    }
    let mut w = World::start_on("localhost", |c| c);
    let id = w.start_workflow("stepped");
    w.wait_status(&id, "paused");
    let base = w.svc.url.replace("127.0.0.1", "localhost");

    let b = Browser::start(1200, 900).await;
    b.add_virtual_authenticator().await;
    b.goto(&format!("{base}/")).await;
    b.click("#sign-in-oidc").await;
    b.find("input[name=login]").await;
    b.fill("input[name=login]", "alice@corp.example").await;
    b.fill("input[name=password]", "any").await;
    b.click("button[type=submit]").await;
    b.wait_for_text("Continue", None).await;
    b.click("button[type=submit]").await;
    b.find("#inbox").await;
    b.goto(&format!("{base}/passkeys")).await;
    b.fill("#passkey-label", "alice laptop").await;
    b.click("#add-passkey").await;
    b.wait_for_text("alice laptop", Some(Duration::from_secs(2)))
        .await;

    b.goto(&format!("{base}/sessions/{id}")).await;
    b.wait_for_text("Approving this gate takes your passkey", None)
        .await;
    b.click("#approve").await;
    let done = w.wait_status(&id, "completed");
    assert_eq!(done["gates"][0]["by"], "alice", "{done}");
    b.close().await;

    let audit = w.audit(&id);
    let answer = audit
        .iter()
        .find(|e| e["event"]["kind"] == "answer")
        .unwrap_or_else(|| panic!("an answer entry: {audit:?}"));
    assert_eq!(answer["event"]["idp_group"], "finance", "{answer}");
    assert_eq!(answer["event"]["step_up"]["person"], "alice", "{answer}");
    w.svc.stop();
    w.sandbox
        .strands(&["audit", "verify", "--json"])
        .expect_code(0);
}

#[test]
fn someone_the_provider_puts_in_another_group_is_refused() {
    if !oidc_provider::available("oidc refused") {
        return;
    }
    let w = World::start();
    let id = w.start_run();
    w.wait_status(&id, "paused");
    let mut bob = Agent::default();
    let r = bob.sign_in(&w.svc, "bob@corp.example");
    assert_eq!(r.status, 303, "{}\n{}", r.body, w.svc.log());
    let home = bob.send("GET", &format!("{}/", w.svc.url), &[], None);
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("bob@corp.example"), "{}", home.body);
    assert!(!home.body.contains("Pay the supplier?"), "{}", home.body);
    let csrf = crate::web::csrf_of(&home.body);
    let answer = bob.send(
        "POST",
        &format!("{}/sessions/{id}/answer", w.svc.url),
        &[("csrf", &csrf), ("decision", "approve")],
        Some(&w.svc.url),
    );
    assert!(
        matches!(answer.status, 403 | 404),
        "{} {}",
        answer.status,
        answer.body
    );
    assert_eq!(w.session(&id)["status"], "paused");
}

#[test]
fn every_bad_answer_from_the_provider_is_refused_with_a_page_saying_why() {
    if !oidc_provider::available("oidc refusals") {
        return;
    }
    let w = World::start();
    let svc = &w.svc;

    // Wrong state: the provider's answer for another browser's sign-in.
    let mut a = Agent::default();
    let url = a.through_the_provider(svc, "alice@corp.example");
    let forged = url::Url::parse(&url).expect("url");
    let pairs: Vec<(String, String)> = forged
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" {
                "forged".into()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    let mut tampered = forged.clone();
    tampered.query_pairs_mut().clear().extend_pairs(&pairs);
    let r = a.send("GET", tampered.as_str(), &[], None);
    refused(&mut a, svc, &r, 400, "state");

    // A replayed answer: the same callback URL twice (with the sign-in's
    // cookie kept, as an attacker holding both would).
    let mut a = Agent::default();
    let url = a.through_the_provider(svc, "alice@corp.example");
    let jar = a.jar.clone();
    let first = a.send("GET", &url, &[], None);
    assert_eq!(first.status, 303, "{}\n{}", first.body, svc.log());
    let mut again = Agent { jar };
    let r = again.send("GET", &url, &[], None);
    refused(&mut again, svc, &r, 400, "used twice");

    // A code the provider refuses.
    let mut a = Agent::default();
    let url = a.through_the_provider(svc, "alice@corp.example");
    let bogus = url.replacen("code=", "code=not-", 1);
    let r = a.send("GET", &bogus, &[], None);
    refused(&mut a, svc, &r, 400, "refused the code");

    // ID tokens the provider should never send.
    for (mode, status, why) in [
        ("audience", 401, "another audience"),
        ("expired", 401, "expired"),
        ("unpublished", 401, "unknown signing key"),
    ] {
        w.provider.misbehave(mode);
        let mut a = Agent::default();
        let r = a.sign_in(svc, "alice@corp.example");
        refused(&mut a, svc, &r, status, why);
    }
    w.provider.misbehave("normal");
    let mut a = Agent::default();
    let r = a.sign_in(svc, "alice@corp.example");
    assert_eq!(r.status, 303, "{}\n{}", r.body, svc.log());
    assert!(!svc.log().contains(CLIENT_SECRET), "{}", svc.log());
}

#[test]
fn a_username_claim_is_matched_by_email_and_never_takes_someone_elses_name() {
    if !oidc_provider::available("oidc username") {
        return;
    }
    let w = World::start_with(|c| c.with("STRANDS_OIDC_NAME_CLAIM", Some("preferred_username")));
    // alice's username is `alice`; her verified email finds her.
    let mut a = Agent::default();
    let r = a.sign_in(&w.svc, "alice@corp.example");
    assert_eq!(r.status, 303, "{}\n{}", r.body, w.svc.log());
    // bob's username `bob` is the directory's bob, who is not tied to this
    // provider: refused, saying how to tie them.
    let mut b = Agent::default();
    let r = b.sign_in(&w.svc, "bob@corp.example");
    refused(&mut b, &w.svc, &r, 403, "--oidc bob");
}

#[test]
fn a_wrong_client_secret_is_named_on_the_page() {
    if !oidc_provider::available("oidc client secret") {
        return;
    }
    let w = World::start_with(|c| c.with("STRANDS_OIDC_CLIENT_SECRET", Some("not-the-secret")));
    let mut a = Agent::default();
    let r = a.sign_in(&w.svc, "alice@corp.example");
    refused(&mut a, &w.svc, &r, 401, "STRANDS_OIDC_CLIENT_SECRET");
    assert!(!w.svc.log().contains("not-the-secret"), "{}", w.svc.log());
}

#[test]
fn a_rotated_signing_key_is_fetched_and_sign_out_ends_the_sign_in() {
    if !oidc_provider::available("oidc rotation") {
        return;
    }
    let w = World::start();
    let mut a = Agent::default();
    let r = a.sign_in(&w.svc, "alice@corp.example");
    assert_eq!(r.status, 303, "{}\n{}", r.body, w.svc.log());

    // The provider rotates its key: the next sign-in still works (carol,
    // matched by her `oidc` identity).
    w.provider.misbehave("rotate");
    let mut b = Agent::default();
    let r = b.sign_in(&w.svc, "carol@corp.example");
    assert_eq!(r.status, 303, "{}\n{}", r.body, w.svc.log());
    let home = b.send("GET", &format!("{}/", w.svc.url), &[], None);
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("carol-ops"), "{}", home.body);

    // Sign-out ends it: to the provider's sign-out, and the old cookie no
    // longer opens the inbox.
    let old = b
        .jar
        .get("strands_login")
        .cloned()
        .expect("a sign-in cookie");
    let csrf = crate::web::csrf_of(&home.body);
    let out = b.send(
        "POST",
        &format!("{}/logout", w.svc.url),
        &[("csrf", &csrf)],
        Some(&w.svc.url),
    );
    assert_eq!(out.status, 303, "{}", out.body);
    let to = out.header("location").unwrap_or_default();
    assert!(to.starts_with(&w.provider.issuer), "{to}");
    let mut stale = Agent::default();
    stale.jar.insert("strands_login".into(), old);
    let home = stale.send("GET", &format!("{}/", w.svc.url), &[], None);
    assert_eq!(home.status, 303, "{}", home.body);
    assert!(
        home.header("location")
            .unwrap_or_default()
            .starts_with("/login"),
        "{:?}",
        home.headers
    );
    let _ = &w.sandbox;
}

#[test]
fn serve_with_a_bad_issuer_stops_naming_the_setting() {
    let sandbox = Sandbox::new();
    let llm = FakeLlm::start();
    let dir = write_workflows(&sandbox, &llm, &[("payout", PAYOUT)]);
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let cfg = ServeConfig::api(&sandbox, &dir)
        .with("STRANDS_OIDC_ISSUER", Some(&nobody))
        .with("STRANDS_OIDC_CLIENT_ID", Some("x"))
        .with("STRANDS_OIDC_CLIENT_SECRET", Some("y"));
    let out = run_to_exit(&cfg, Duration::from_secs(30));
    assert!(out.code.is_some_and(|c| c != 0), "{out:?}");
    assert!(out.output.contains("STRANDS_OIDC_ISSUER"), "{}", out.output);
    // A missing secret is named too.
    let cfg = cfg.with("STRANDS_OIDC_CLIENT_SECRET", None);
    let out = run_to_exit(&cfg, Duration::from_secs(30));
    assert!(out.code.is_some_and(|c| c != 0), "{out:?}");
    assert!(
        out.output.contains("STRANDS_OIDC_CLIENT_SECRET"),
        "{}",
        out.output
    );
}
