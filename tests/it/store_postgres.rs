//! Two real `strands serve` replicas on one PostgreSQL database (a real
//! server: `strands::store::postgres::testdb`), with the fake Slack and the
//! fake model: clicks split across both resume once; a replica killed
//! mid-step leaves its run to the other; a gate timeout fires once; the
//! audit chain both wrote verifies; a sled store migrated to PostgreSQL
//! resumes there; a `strands run` in a terminal is never driven by a
//! replica too; a stream on one replica gets the other's events by
//! `NOTIFY`. Skipped with a notice when no PostgreSQL server can be
//! started, failed under `STRANDS_REQUIRE_POSTGRES=1`.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::fake_slack::{Bot, BotConfig, Click, FakeSlack};
use crate::common::service::write_workflows;
use crate::common::slack_story::{
    answered, approval, assert_closed, assert_llm_stays_at, deploy_paused, wait_llm, DEPLOY, OPS,
    REQUESTER,
};
use crate::common::{Behaviour, FakeLlm, Sandbox};

/// A fresh database on the test server, or `None` (skip).
fn database(name: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(strands::store::postgres::testdb::database(name))
}

/// A sandbox whose store is the database `url`.
fn sandbox_on(url: &str) -> Sandbox {
    let mut sandbox = Sandbox::new();
    sandbox.store = PathBuf::from(url);
    sandbox
}

/// Two replicas of the bot on the sandbox's database; leases of `lease` s.
fn replicas(
    sandbox: &Sandbox,
    slack: &FakeSlack,
    llm: &FakeLlm,
    workflows: &[(&str, &str)],
    lease: &str,
) -> (Bot, Bot) {
    let dir = write_workflows(sandbox, llm, workflows);
    let cfg = BotConfig::new(sandbox, slack, &dir).with("STRANDS_LEASE_SECS", Some(lease));
    let a = Bot::launch(slack, cfg.clone());
    let b = Bot::launch(slack, cfg);
    (a, b)
}

fn wait_status(sandbox: &Sandbox, id: &str, status: &str, within: Duration) -> Value {
    let until = Instant::now() + within;
    loop {
        let show = sandbox.show(id);
        if show["status"] == status {
            return show;
        }
        assert!(
            Instant::now() < until,
            "{id} is not {status} after {within:?}: {show:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[track_caller]
fn assert_audit_intact(sandbox: &Sandbox) {
    let out = sandbox.strands(&["audit", "verify"]);
    assert_eq!(out.code, 0, "audit verify: {} {}", out.stdout, out.stderr);
}

#[test]
fn sixty_clicks_split_across_two_replicas_resume_once() {
    let Some(url) = database("sixty_clicks") else {
        return;
    };
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = sandbox_on(&url);
    let (mut a, mut b) = replicas(&sandbox, &slack, &llm, &[("deploy", DEPLOY)], "30");
    let (id, msg) = deploy_paused(&a, &slack);

    let users: Vec<String> = (0..60).map(|i| format!("U0CLICK{i:02}")).collect();
    let barrier = Arc::new(Barrier::new(users.len()));
    let clicks: Vec<Click> = std::thread::scope(|s| {
        let handles: Vec<_> = users
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let bot = if i % 2 == 0 { &a } else { &b };
                let (msg, barrier) = (&msg, barrier.clone());
                s.spawn(move || {
                    barrier.wait();
                    bot.click(msg, "strands_approve", u)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a click thread"))
            .collect()
    });
    for (i, c) in clicks.iter().enumerate() {
        let bot = if i % 2 == 0 { &a } else { &b };
        c.reply
            .expect_prompt_ok(&format!("the click of {}", c.user), bot);
    }
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U0CLICK");
    wait_llm(&llm, &slack, 2);
    assert_llm_stays_at(&llm, 2, "the step after the gate runs once, on one replica");
    assert_eq!(llm.calls_of("DEPLOYER").len(), 1);
    let approvals = slack
        .updates_of(&msg)
        .into_iter()
        .filter(|u| u.text().contains("Approved"))
        .count();
    assert_eq!(approvals, 1, "one chat.update");

    let show = wait_status(&sandbox, &id, "completed", Duration::from_secs(15));
    assert_eq!(answered(&show).len(), 1, "answered exactly once: {show:#}");
    a.stop();
    b.stop();
    assert_audit_intact(&sandbox);
}

#[test]
fn a_replica_killed_mid_step_leaves_its_run_to_the_other() {
    let Some(url) = database("kill_mid_step") else {
        return;
    };
    // The deployer's first request (the second one) never comes back in time.
    let llm = FakeLlm::start_with(Behaviour {
        delay: Some((2, Duration::from_secs(120))),
        ..Behaviour::default()
    });
    let slack = FakeSlack::start();
    let sandbox = sandbox_on(&url);
    let (mut a, mut b) = replicas(&sandbox, &slack, &llm, &[("deploy", DEPLOY)], "2");
    let (id, msg) = deploy_paused(&a, &slack);
    let click = a.click(&msg, "strands_approve", "U0APPROVER");
    click.reply.expect_prompt_ok("the approval", &a);
    wait_llm(&llm, &slack, 2);
    let killed = Instant::now();
    a.kill();

    let show = wait_status(&sandbox, &id, "completed", Duration::from_secs(30));
    let took = killed.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "taken over within a bounded time: {took:?}"
    );
    assert_eq!(
        llm.calls_of("PLANNER").len(),
        1,
        "a recorded step is never re-run"
    );
    assert_eq!(
        llm.calls_of("DEPLOYER").len(),
        2,
        "the step in flight is re-sent once: {:#?}",
        llm.requests()
    );
    assert_eq!(answered(&show).len(), 1, "{show:#}");
    b.stop();
    assert_audit_intact(&sandbox);
    let export = sandbox.strands(&["audit", "export"]);
    assert!(export.stdout.contains("resent"), "{}", export.stdout);
}

const TIMED: &str = r#"
version: 0
name: timed
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: Write.
      - type: hitl
        id: review
        prompt: Ship it?
        timeout_seconds: 2
        fallback_action: reject
"#;

#[test]
fn a_gate_timeout_with_both_replicas_up_fires_once() {
    let Some(url) = database("timeout_once") else {
        return;
    };
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = sandbox_on(&url);
    let (mut a, mut b) = replicas(&sandbox, &slack, &llm, &[("timed", TIMED)], "30");
    let ack = a.command(REQUESTER, OPS, "run timed");
    ack.expect_prompt_ok("/strands run timed", &a);
    let id = crate::common::fake_slack::started(&ack, "timed");
    let msg = approval(&slack, "review#1");
    slack.wait_for_update(&msg, |c| c.text().contains("Timed out"));
    let show = wait_status(&sandbox, &id, "rejected", Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(1500));
    let timed_out = slack
        .updates_of(&msg)
        .into_iter()
        .filter(|u| u.text().contains("Timed out"))
        .count();
    assert_eq!(timed_out, 1, "{}", slack.describe());
    let gates = answered(&show);
    assert_eq!(gates.len(), 1, "one answer: {show:#}");
    assert_eq!(gates[0]["by"], "timeout");
    a.stop();
    b.stop();
    assert_audit_intact(&sandbox);
}

#[test]
fn an_unreachable_database_is_exit_12_naming_host_and_port() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let sandbox = sandbox_on(&format!("postgres://u:hunter2@127.0.0.1:{port}/db"));
    let out = sandbox.strands_env(
        &[("STRANDS_PG_CONNECT_TIMEOUT_SECS", "2")],
        &["sessions", "list"],
    );
    assert_eq!(out.code, 12, "{} {}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("hunter2"),
        "no password: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

const REVIEW: &str = r#"
version: 0
name: review
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  researcher:
    prompt: You are the RESEARCHER.
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: researcher
        input: Research.
      - type: manual_gate
        id: review
        prompt: Review it.
      - agent: writer
        input: "Write from: {{ steps[0].response }}"
"#;

#[test]
fn a_sled_store_migrated_to_postgres_resumes_there() {
    let Some(url) = database("migrate") else {
        return;
    };
    // Replies long enough to be kept apart from their sessions.
    let long = "a finding worth a human's review. ".repeat(200);
    let llm = {
        let long = long.clone();
        FakeLlm::start_with(Behaviour {
            reply: Arc::new(move |n, _| format!("REPLY {n}: {long}")),
            ..Behaviour::default()
        })
    };
    let sled = Sandbox::new();
    let spec = sled.spec("review.yaml", REVIEW, &llm);
    let run = sled.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(19);
    let id = crate::common::session_id(&run.json());
    let tok = sled.strands(&["tokens", "create", "ci", "--role", "operator"]);
    tok.expect_code(0);
    let from = sled.store.display().to_string();

    let pg = sandbox_on(&url);
    let migrate = |extra: &[&str]| {
        let mut args = vec![
            "store",
            "migrate",
            "--from",
            from.as_str(),
            "--to",
            url.as_str(),
        ];
        args.extend_from_slice(extra);
        pg.strands_verbatim(&args)
    };
    let first = migrate(&[]);
    assert_eq!(first.code, 0, "{} {}", first.stdout, first.stderr);
    assert!(
        first.stdout.contains("audit chain verified"),
        "{}",
        first.stdout
    );
    let again = migrate(&[]);
    assert_eq!(
        again.code, 0,
        "idempotent: {} {}",
        again.stdout, again.stderr
    );
    assert!(again.stdout.contains("nothing copied"), "{}", again.stdout);

    // The paused session is there, and resumes on PostgreSQL.
    let show = pg.show(&id);
    assert_eq!(show["status"], "paused", "{show:#}");
    let resumed = pg.strands(&["resume", &id, "--approve", "--json"]);
    assert_eq!(resumed.code, 0, "{} {}", resumed.stdout, resumed.stderr);
    assert_eq!(pg.show(&id)["status"], "completed");
    assert_eq!(llm.calls_of("RESEARCHER").len(), 1);
    assert_eq!(llm.calls_of("WRITER").len(), 1);
    // The researcher's long reply crossed whole, from sled's outputs tree
    // to PostgreSQL's table.
    let writer = llm.only_call_of("WRITER").user();
    assert!(
        writer.contains(&format!("REPLY 1: {long}")),
        "the writer read: {writer}"
    );
    let tokens = pg.strands(&["tokens", "list", "--json"]);
    assert!(tokens.stdout.contains("\"ci\""), "{}", tokens.stdout);
    assert_audit_intact(&pg);

    // The target now holds more than the source: refused unless --force.
    let refused = migrate(&[]);
    assert_eq!(refused.code, 2, "{} {}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    let forced = migrate(&["--force"]);
    assert_eq!(forced.code, 0, "{} {}", forced.stdout, forced.stderr);
    assert_eq!(pg.show(&id)["status"], "paused", "replaced by the source");
}

/// A `strands run` in a terminal on the shared database races two
/// replicas that look for running sessions with no live lease three
/// times a second (1 s leases): the CLI holds its run's lease from before
/// the session exists, so neither replica drives it, and each step's
/// model call is made once, by the CLI.
#[test]
fn a_cli_run_on_the_shared_database_is_never_driven_by_a_replica_too() {
    let Some(url) = database("cli_run_lease") else {
        return;
    };
    // The planner's call takes 4 s: twelve looks by each replica.
    let llm = FakeLlm::start_with(Behaviour {
        delay: Some((1, Duration::from_secs(4))),
        ..Behaviour::default()
    });
    let slack = FakeSlack::start();
    let sandbox = sandbox_on(&url);
    let (mut a, mut b) = replicas(&sandbox, &slack, &llm, &[], "1");
    let spec = sandbox.spec("two.yaml", crate::cli_cancel::TWO_STEPS, &llm);
    let mut run = sandbox.spawn(&["run", spec.to_str().expect("utf-8 path")]);
    let until = Instant::now() + Duration::from_secs(60);
    let code = loop {
        if let Some(status) = run.try_wait().expect("wait for strands run") {
            break status.code();
        }
        assert!(Instant::now() < until, "strands run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, Some(0), "strands run: {}", a.log());
    assert_eq!(
        llm.calls_of("PLANNER").len(),
        1,
        "the planner's step ran twice: {:#?}",
        llm.requests()
    );
    assert_eq!(llm.calls_of("WRITER").len(), 1, "{:#?}", llm.requests());
    let list = sandbox.list();
    assert_eq!(list["sessions"][0]["status"], "completed", "{list:#}");
    a.stop();
    b.stop();
    assert_audit_intact(&sandbox);
}

/// Two API replicas on the database, whose listeners read the event head
/// on their own only every 10 minutes: a stream open on one replica gets
/// the events of a run started on the other at once — they can only have
/// come by `NOTIFY` — in order, with nothing skipped.
#[test]
fn a_stream_on_one_replica_gets_events_written_by_the_other_by_notify() {
    use crate::common::api::{call, make_token, Sse};
    use crate::common::service::{ServeConfig, Service};
    let Some(url) = database("events_notify") else {
        return;
    };
    let llm = FakeLlm::start();
    let sandbox = sandbox_on(&url);
    let dir = write_workflows(&sandbox, &llm, &[("deploy", DEPLOY)]);
    let ci = make_token(&sandbox, "ci-bot", "operator");
    let cfg = ServeConfig::api(&sandbox, &dir).with("STRANDS_PG_EVENTS_POLL_SECS", Some("600"));
    let writer = Service::launch(cfg.clone());
    let reader = Service::launch(cfg);
    let mut stream = Sse::open(&reader, "/api/v1/events", &ci, None);
    assert_eq!(stream.status(), 200, "{}", stream.head);

    let mut started = Vec::new();
    for n in 0..3 {
        let r = call(
            &writer,
            "POST",
            "/api/v1/runs",
            Some(&ci),
            Some(
                &serde_json::json!({ "workflow": "deploy", "vars": { "service": format!("s{n}") } }),
            ),
        );
        assert_eq!(r.status, 201, "{}\n{}", r.body, writer.log());
        started.push(r.json()["session_id"].as_str().expect("an id").to_string());
    }
    let mut opened = Vec::new();
    let mut last = 0;
    while opened.len() < started.len() {
        let e = stream.next(Duration::from_secs(30)).unwrap_or_else(|| {
            panic!(
                "the reader replica never got the other's events (got {opened:?}):\n{}",
                reader.log()
            )
        });
        assert_eq!(e.id, last + 1, "events skipped or out of order: {e:?}");
        last = e.id;
        if e.event == "gate.opened" {
            opened.push(e.data["session"].as_str().unwrap_or_default().to_string());
        }
    }
    // The runs are driven side by side: their gates open in any order.
    opened.sort();
    started.sort();
    assert_eq!(opened, started);
}
