//! Passkeys and step-up in a real headless Chromium with its virtual
//! authenticator (WebDriver's WebAuthn extension: ctap2, internal, user
//! verification on): a person registers a passkey; a `step_up: passkey`
//! request is not approved by a click through the API (403
//! `step_up_required` with the page's link) but by the passkey on its
//! page; an assertion for another run, a replayed one, another person's
//! passkey and a removed passkey are refused with nothing recorded; `audit
//! verify` checks the signature, and fails on a copy of the store whose
//! signature was changed (its hash chain rewritten to match, so only the
//! signature can tell).

use crate::api::{World, WAIT};
use crate::common::api::call;
use crate::common::browser::{available, Browser};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn sign_in(b: &Browser, base: &str, token: &str) {
    b.goto(&format!("{base}/login")).await;
    b.fill("#token", token).await;
    b.click("#sign-in").await;
    b.find("#inbox").await;
}

async fn sign_out(b: &Browser) {
    b.click("header form[action='/logout'] button").await;
    b.find("#token").await;
}

async fn register(b: &Browser, base: &str, label: &str) {
    b.goto(&format!("{base}/passkeys")).await;
    b.fill("#passkey-label", label).await;
    b.click("#add-passkey").await;
    b.wait_for_text(label, Some(Duration::from_secs(2))).await;
}

/// Runs `body` (an async function body with `csrf`, `post` and `get` in
/// scope) in the page; its result.
async fn script(b: &Browser, body: &str) -> Value {
    let js = format!(
        r#"const done = arguments[arguments.length - 1];
        const csrf = (document.querySelector("[data-csrf]") || {{dataset: {{}}}}).dataset.csrf
          || (document.querySelector("input[name=csrf]") || {{}}).value;
        async function post(url, body) {{
          const r = await fetch(url, {{method: "POST", credentials: "same-origin",
            headers: {{"content-type": "application/json"}}, body: JSON.stringify(body)}});
          let j = {{}}; try {{ j = await r.json(); }} catch (e) {{}}
          return {{status: r.status, body: j}};
        }}
        async function get(options) {{
          const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey);
          const c = await navigator.credentials.get({{publicKey}});
          return c.toJSON();
        }}
        (async () => {{ {body} }})().then(done, (e) => done({{error: String(e)}}));"#
    );
    b.client
        .execute_async(&js, Vec::new())
        .await
        .unwrap_or_else(|e| panic!("script failed: {e}"))
}

fn request(w: &World, title: &str, amount: u64) -> String {
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/approvals",
        Some(&w.ci),
        Some(&json!({
            "title": title,
            "approvers": ["alice", "mallory"],
            "action": {"tool": "payout", "arguments": {"amount": amount, "iban": "DE00 1234"}},
            "step_up": "passkey",
        })),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["id"].as_str().expect("id").to_string()
}

fn status(w: &World, id: &str) -> String {
    let r = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}"),
        Some(&w.ci),
        None,
    );
    r.json()["status"].as_str().unwrap_or_default().to_string()
}

fn wait_pending(w: &World, id: &str) {
    w.wait_paused(id);
    assert_eq!(status(w, id), "pending");
}

/// The gate handle the page's step-up button carries.
async fn gate_of(b: &Browser, base: &str, id: &str) -> String {
    b.goto(&format!("{base}/sessions/{id}")).await;
    b.find("button[data-step-up]")
        .await
        .attr("data-gate")
        .await
        .expect("attr")
        .expect("a gate handle")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passkey_approves_a_stepped_up_request_and_the_audit_proves_it() {
    if !available("passkeys") {
        return;
    }
    let port = free_port();
    let base = format!("http://localhost:{port}");
    let w = World::start_with(|cfg| {
        cfg.with("STRANDS_BIND", Some(&format!("127.0.0.1:{port}")))
            .with("STRANDS_PUBLIC_URL", Some(&base))
    });
    for (name, token) in [("alice", "alice"), ("mallory", "mallory")] {
        let r = call(
            &w.svc,
            "POST",
            "/api/v1/people",
            Some(&w.root),
            Some(&json!({"name": name, "tokens": [token]})),
        );
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let r1 = request(&w, "Pay out EUR 50,000?", 50_000);
    wait_pending(&w, &r1);

    // A click through the API is not enough: 403 with the page to confirm on.
    let click = w.answer(&r1, &w.alice, json!({"decision": "approve"}));
    assert_eq!(click.status, 403, "{}", click.body);
    let v = click.json()["error"].clone();
    assert_eq!(v["code"], "step_up_required", "{v}");
    assert_eq!(v["link"], format!("{base}/sessions/{r1}"), "{v}");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("Confirm with your passkey")
                || m.contains("confirm with your passkey")),
        "{v}"
    );
    assert_eq!(status(&w, &r1), "pending");
    // Rejecting stops the payout: a click still does that (not tested
    // here); a request without step-up is unaffected (the API suite).

    let b = Browser::start(1200, 900).await;
    b.add_virtual_authenticator().await;
    sign_in(&b, &base, &w.alice).await;
    register(&b, &base, "alice laptop").await;

    // The page's button asks the authenticator; the approval is recorded.
    b.goto(&format!("{base}/sessions/{r1}")).await;
    b.wait_for_text("Approving this gate takes your passkey", None)
        .await;
    b.click("#approve").await;
    b.wait_for_text("confirmed with your passkey", None).await;
    let until = Instant::now() + WAIT;
    while status(&w, &r1) != "approved" {
        assert!(Instant::now() < until, "never approved: {}", w.svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }

    // An assertion made for one run, sent for another: refused.
    let r2 = request(&w, "Pay out EUR 7,000?", 7_000);
    let r3 = request(&w, "Pay out EUR 9,000?", 9_000);
    wait_pending(&w, &r2);
    wait_pending(&w, &r3);
    let g2 = gate_of(&b, &base, &r2).await;
    let g3 = gate_of(&b, &base, &r3).await;
    let crossed = script(
        &b,
        &format!(
            r#"const o = await post("/sessions/{r2}/step-up", {{csrf, gate: "{g2}"}});
            const cred = await get(o.body);
            const wrong = await post("/sessions/{r3}/step-up/finish", {{csrf, credential: cred}});
            // The same assertion, for a ceremony of the other run.
            await post("/sessions/{r3}/step-up", {{csrf, gate: "{g3}"}});
            const other = await post("/sessions/{r3}/step-up/finish", {{csrf, credential: cred}});
            return {{wrong, other}};"#
        ),
    )
    .await;
    assert_eq!(crossed["wrong"]["status"], 409, "{crossed}");
    assert_eq!(crossed["other"]["status"], 403, "{crossed}");
    assert!(
        crossed["other"]["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing was recorded")),
        "{crossed}"
    );
    assert_eq!(status(&w, &r2), "pending");
    assert_eq!(status(&w, &r3), "pending");

    // A replayed assertion: the first is recorded, the second refused.
    let replay = script(
        &b,
        &format!(
            r#"const o = await post("/sessions/{r2}/step-up", {{csrf, gate: "{g2}"}});
            const cred = await get(o.body);
            const first = await post("/sessions/{r2}/step-up/finish", {{csrf, credential: cred}});
            const again = await post("/sessions/{r2}/step-up/finish", {{csrf, credential: cred}});
            await post("/sessions/{r3}/step-up", {{csrf, gate: "{g3}"}});
            const elsewhere = await post("/sessions/{r3}/step-up/finish", {{csrf, credential: cred}});
            return {{first, again, elsewhere}};"#
        ),
    )
    .await;
    assert_eq!(replay["first"]["status"], 200, "{replay}");
    assert_ne!(replay["again"]["status"], 200, "{replay}");
    assert_ne!(replay["elsewhere"]["status"], 200, "{replay}");
    assert_eq!(status(&w, &r3), "pending");

    // Alice's credential id, as the directory keeps it.
    let alice = call(&w.svc, "GET", "/api/v1/people/alice", Some(&w.root), None).json();
    let alice_key = alice["passkeys"][0]["id"]
        .as_str()
        .expect("alice's passkey")
        .to_string();

    // Mallory, with a passkey of her own, tries alice's: refused.
    sign_out(&b).await;
    sign_in(&b, &base, &w.mallory).await;
    register(&b, &base, "mallory phone").await;
    let g3 = gate_of(&b, &base, &r3).await;
    let borrowed = script(
        &b,
        &format!(
            r#"const o = await post("/sessions/{r3}/step-up", {{csrf, gate: "{g3}"}});
            o.body.publicKey.allowCredentials = [{{type: "public-key", id: "{alice_key}"}}];
            const cred = await get(o.body);
            return await post("/sessions/{r3}/step-up/finish", {{csrf, credential: cred}});"#
        ),
    )
    .await;
    assert_eq!(borrowed["status"], 403, "{borrowed}");
    assert_eq!(status(&w, &r3), "pending");

    // Mallory's passkey removed (an admin): it confirms nothing more.
    let mallory = call(&w.svc, "GET", "/api/v1/people/mallory", Some(&w.root), None).json();
    let mallory_key = mallory["passkeys"][0]["id"]
        .as_str()
        .expect("a passkey")
        .to_string();
    let gone = call(
        &w.svc,
        "DELETE",
        &format!("/api/v1/people/mallory/passkeys/{mallory_key}"),
        Some(&w.root),
        None,
    );
    assert_eq!(gone.status, 204, "{}", gone.body);
    let removed = script(
        &b,
        &format!(r#"return await post("/sessions/{r3}/step-up", {{csrf, gate: "{g3}"}});"#),
    )
    .await;
    assert_eq!(removed["status"], 403, "{removed}");
    assert_eq!(status(&w, &r3), "pending");
    b.close().await;

    // The audit: both approvals carry alice's signature, and it holds.
    let mut w = w;
    w.svc.stop();
    let verify = w.sandbox.strands(&["audit", "verify", "--json"]);
    verify.expect_code(0);
    let listed = w
        .sandbox
        .strands(&["people", "passkeys", "mallory", "--all", "--json"]);
    listed.expect_code(0);
    assert!(
        listed.json()["passkeys"][0]["removed_at"].is_string(),
        "{}",
        listed.stdout
    );

    // A copy of the store where one byte of a signature changed, and the
    // chain re-hashed to hide it: the signature check finds it.
    let copy = tempfile::tempdir().expect("tempdir");
    let copied = copy.path().join("store");
    let cp = std::process::Command::new("cp")
        .args(["-a"])
        .arg(&w.sandbox.store)
        .arg(&copied)
        .status()
        .expect("cp");
    assert!(cp.success());
    let tampered_at = {
        let db = sled::open(&copied).expect("open the copy");
        let log = db
            .open_tree(strands::store::sled::trees::AUDIT)
            .expect("audit tree");
        let head = db
            .open_tree(strands::store::sled::trees::AUDIT_HEAD)
            .expect("head tree");
        let mut entries: Vec<strands::audit::AuditEntry> = log
            .iter()
            .map(|kv| serde_json::from_slice(&kv.expect("read").1).expect("an entry"))
            .collect();
        let at = entries
            .iter()
            .position(|e| e.event.step_up.is_some())
            .expect("a stepped-up entry");
        let proof = entries[at].event.step_up.as_mut().expect("proof");
        let mut sig = proof.signature.clone().into_bytes();
        sig[10] = if sig[10] == b'A' { b'B' } else { b'A' };
        proof.signature = String::from_utf8(sig).expect("ascii");
        let mut prev = entries[at].prev.clone();
        for e in entries.iter_mut().skip(at) {
            e.prev = prev.clone();
            e.hash = strands::audit::entry_hash(e.seq, &e.prev, &e.event);
            prev = e.hash.clone();
            log.insert(e.seq.to_be_bytes(), serde_json::to_vec(&e).expect("json"))
                .expect("write");
        }
        let last = entries.last().expect("entries");
        head.insert(
            b"head",
            serde_json::to_vec(&json!({"seq": last.seq, "hash": last.hash})).expect("json"),
        )
        .expect("head");
        db.flush().expect("flush");
        entries[at].seq
    };
    let broken = w.sandbox.strands_verbatim(&[
        "--store",
        &copied.display().to_string(),
        "audit",
        "verify",
        "--json",
    ]);
    broken.expect_code(22);
    let v = broken.json();
    assert_eq!(v["broken_at"], tampered_at, "{v}");
    assert!(
        v["why"].as_str().is_some_and(|m| m.contains("signature")),
        "{v}"
    );

    // Offline, from exports: the good one holds, the tampered one does not.
    let good = copy.path().join("good.jsonl");
    let export = w.sandbox.strands(&["audit", "export"]);
    export.expect_code(0);
    assert!(
        export.stdout.contains("\"step_up\""),
        "the export carries the proofs"
    );
    std::fs::write(&good, &export.stdout).expect("write");
    let ok = w.sandbox.strands_verbatim(&[
        "audit",
        "verify",
        "--file",
        &good.display().to_string(),
        "--json",
    ]);
    ok.expect_code(0);
    let bad = copy.path().join("bad.jsonl");
    let export =
        w.sandbox
            .strands_verbatim(&["--store", &copied.display().to_string(), "audit", "export"]);
    export.expect_code(0);
    std::fs::write(&bad, &export.stdout).expect("write");
    let off = w.sandbox.strands_verbatim(&[
        "audit",
        "verify",
        "--file",
        &bad.display().to_string(),
        "--json",
    ]);
    off.expect_code(22);
    assert_eq!(off.json()["broken_at"], tampered_at, "{}", off.stdout);
}

/// In Slack, a `step_up: passkey` gate says so on its message, linking to
/// the run's page; an Approve click is refused there with the same link,
/// and the run stays paused.
#[test]
fn a_slack_click_does_not_approve_a_stepped_up_gate() {
    use crate::common::fake_slack::{Bot, FakeSlack};
    use crate::common::slack_story::{assert_llm_stays_at, deploy_paused, APPROVER, DEPLOY};
    use crate::common::{FakeLlm, Sandbox};
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        "        prompt: Approve the deploy of {{ service }}?\n        step_up: passkey\n",
    );
    assert_ne!(spec, DEPLOY);
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let (id, msg) = deploy_paused(&bot, &slack);
    let page = format!("/sessions/{id}");
    assert!(
        msg.text().contains("Confirm with your passkey")
            && msg.call.body.to_string().contains(&page),
        "{:#}",
        msg.call.body
    );
    let click = bot.click(&msg, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("the approve click", &bot);
    let note = slack.wait_for_ephemeral(&click);
    assert!(
        note.text.contains("passkey") && note.text.contains(&page),
        "{}",
        note.text
    );
    assert_llm_stays_at(&llm, 1, "a click does not approve a stepped-up gate");
    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "paused", "{show:#}");
}
