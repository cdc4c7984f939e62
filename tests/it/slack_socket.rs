//! `strands serve` over Slack's Socket Mode: the real binary with an app
//! token and no signing secret, against the fake Web API (whose
//! `apps.connections.open` names the fake WebSocket of
//! `tests/common/fake_slack/socket.rs`) and the fake model server.
//!
//! The scenarios: a run started, approved and finished with nothing but
//! envelopes; a modal whose error rides in the ack; events carried out once
//! per `event_id`; `disconnect`, a clean close and a dropped connection,
//! each followed by a reconnection that loses nothing; the same envelope
//! delivered twice; replicas holding a connection each; the start-up
//! refusals. Every envelope must be acknowledged within Slack's 3 s.

use crate::common::fake_slack::{
    block_actions_payload, run_to_exit, view_submission_payload, write_workflows, ApprovalMessage,
    Bot, BotConfig, FakeSlack, FakeSocket, Signing, SlackBehaviour, SocketAck, ACK_DEADLINE,
    APP_TOKEN, WAIT,
};
use crate::common::slack_story::{
    approval, assert_closed, assert_llm_stays_at, wait_llm, APPROVER, DEPLOY, OPS, QUIET, REQUESTER,
};
use crate::common::{FakeLlm, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The bot in Socket Mode: app token, no signing secret.
fn socket_config(sandbox: &Sandbox, slack: &FakeSlack, llm: &FakeLlm) -> BotConfig {
    let dir = write_workflows(sandbox, llm, &[("deploy", DEPLOY)]);
    BotConfig::new(sandbox, slack, &dir)
        .with("SLACK_SIGNING_SECRET", None)
        .with("SLACK_APP_TOKEN", Some(APP_TOKEN))
}

/// Starts the bot in Socket Mode and waits for its first connection.
fn socket_bot(sandbox: &Sandbox, slack: &FakeSlack, llm: &FakeLlm) -> (Bot, FakeSocket) {
    let bot = Bot::launch(slack, socket_config(sandbox, slack, llm));
    let socket = slack.socket();
    socket.wait_connections(1);
    (bot, socket)
}

/// Asserts the ack came within Slack's deadline and nothing was refused.
#[track_caller]
fn prompt(ack: &SocketAck, what: &str, socket: &FakeSocket, slack: &FakeSlack) {
    eprintln!("ack latency, {what}: {:?}", ack.elapsed);
    assert!(
        ack.elapsed < ACK_DEADLINE,
        "{what}: acknowledged after {:?}, Slack gives up after {ACK_DEADLINE:?}\n{}",
        ack.elapsed,
        slack.describe()
    );
    assert!(
        socket.refusals().is_empty(),
        "{what}: {:?}",
        socket.refusals()
    );
}

/// The text of an ack's payload (a command's ephemeral answer).
fn ack_text(ack: &SocketAck) -> String {
    ack.payload
        .as_ref()
        .and_then(|p| p["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Sends `/strands TEXT` as an envelope; returns its ack.
#[track_caller]
fn command(socket: &FakeSocket, slack: &FakeSlack, text: &str) -> SocketAck {
    let id = socket.send(&socket.command(REQUESTER, OPS, text, &slack.response_url()));
    let ack = socket.wait_ack(&id);
    prompt(&ack, &format!("/strands {text}"), socket, slack);
    ack
}

/// Starts a deploy over the socket; returns the session id and its approval.
#[track_caller]
fn deploy(socket: &FakeSocket, slack: &FakeSlack) -> (String, ApprovalMessage) {
    let ack = command(socket, slack, "run deploy service=billing");
    let text = ack_text(&ack);
    let id = text
        .strip_prefix("started deploy as ")
        .unwrap_or_else(|| panic!("the ack says the run started: {:?}", ack.payload))
        .to_string();
    (id, approval(slack, "review#1"))
}

/// `user` clicks `action_id` on `msg`, as an `interactive` envelope.
fn click(
    socket: &FakeSocket,
    slack: &FakeSlack,
    msg: &ApprovalMessage,
    action_id: &str,
    user: &str,
) -> (Value, String) {
    let trigger = slack.issue_trigger_id();
    let payload = block_actions_payload(
        msg,
        &msg.button(action_id),
        user,
        &trigger,
        &slack.response_url(),
    );
    (socket.interactive(&payload), trigger)
}

/// The value of one sample of `/metrics`, 0 when absent.
fn metric(bot: &Bot, sample: &str) -> f64 {
    let body = bot.get("/metrics").body;
    body.lines()
        .find_map(|l| l.strip_prefix(sample))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn socket_mode_needs_no_signing_secret_from_command_to_approval() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let (bot, socket) = socket_bot(&sandbox, &slack, &llm);

    let opened = slack.calls_to("apps.connections.open");
    assert_eq!(opened.len(), 1, "{}", slack.describe());
    assert_eq!(
        opened[0].authorization.as_deref(),
        Some(format!("Bearer {APP_TOKEN}").as_str()),
        "apps.connections.open takes the app token"
    );
    // No signing secret: there are no request URLs to post to.
    let refused = bot.post(
        "/slack/commands",
        "application/x-www-form-urlencoded",
        b"text=help",
        Signing::Valid,
        &[],
    );
    assert_eq!(refused.status, 404, "{refused:?}");

    let (id, msg) = deploy(&socket, &slack);
    assert!(!id.is_empty());
    let (envelope, _) = click(&socket, &slack, &msg, "strands_approve", APPROVER);
    let ack = socket.wait_ack(&socket.send(&envelope));
    prompt(&ack, "Approve", &socket, &slack);
    assert_eq!(ack.payload, None, "a click's ack carries nothing");
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, &format!("Approved by <@{APPROVER}>"));
    wait_llm(&llm, &slack, 2);
    slack.wait_for_thread_reply(&msg, |c| c.text().contains("`deploy` completed"));

    let status = command(&socket, &slack, &format!("status {id}"));
    assert!(
        ack_text(&status).contains("completed"),
        "{:?}",
        status.payload
    );
    // The click's ack latency is measured like an HTTP click's.
    assert!(metric(&bot, "strands_click_ack_seconds_count") >= 1.0);
    let log = bot.log();
    assert!(log.contains("connected to Slack over Socket Mode"), "{log}");
    assert!(!log.contains(APP_TOKEN), "the app token leaked");
}

#[test]
fn a_modal_submission_is_answered_in_its_ack() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let (_bot, socket) = socket_bot(&sandbox, &slack, &llm);
    let (_id, msg) = deploy(&socket, &slack);

    let (envelope, trigger) = click(&socket, &slack, &msg, "strands_modify", APPROVER);
    prompt(
        &socket.wait_ack(&socket.send(&envelope)),
        "Modify",
        &socket,
        &slack,
    );
    let modal = slack.wait_for("views.open", |c| c.field("trigger_id") == trigger, WAIT);
    assert!(modal.ok(), "{}", slack.describe());

    // An empty answer keeps the modal open: the error rides in the ack.
    let empty = socket.interactive(&view_submission_payload(&modal, APPROVER, "  "));
    let ack = socket.wait_ack(&socket.send(&empty));
    prompt(&ack, "an empty submission", &socket, &slack);
    let payload = ack.payload.expect("the errors ride in the ack");
    assert_eq!(payload["response_action"], "errors", "{payload}");
    assert_llm_stays_at(&llm, 1, "an empty submission decides nothing");

    let sent = socket.interactive(&view_submission_payload(&modal, APPROVER, "canary first"));
    let ack = socket.wait_ack(&socket.send(&sent));
    prompt(&ack, "a submission", &socket, &slack);
    assert_eq!(ack.payload, None, "a good submission closes the modal");
    wait_llm(&llm, &slack, 2);
    assert!(
        llm.request(2).user().contains("canary first"),
        "{:#?}",
        llm.request(2)
    );
}

#[test]
fn a_slow_handler_does_not_hold_up_the_ack() {
    let llm = FakeLlm::start();
    // Opening the modal takes 2.6 s: over HTTP the click would be answered
    // after it; over the socket the ack goes out at the budget regardless.
    let slack = FakeSlack::start_with(SlackBehaviour {
        views_open_delay: Duration::from_millis(2600),
        ..SlackBehaviour::default()
    });
    let sandbox = Sandbox::new();
    let (_bot, socket) = socket_bot(&sandbox, &slack, &llm);
    let (_id, msg) = deploy(&socket, &slack);
    let (envelope, trigger) = click(&socket, &slack, &msg, "strands_modify", APPROVER);
    let ack = socket.wait_ack(&socket.send(&envelope));
    prompt(&ack, "Modify, with a slow views.open", &socket, &slack);
    assert!(
        ack.elapsed < Duration::from_millis(2300),
        "acknowledged after {:?}: the ack waited for the work",
        ack.elapsed
    );
    let modal = slack.wait_for("views.open", |c| c.field("trigger_id") == trigger, WAIT);
    assert!(
        modal.ok(),
        "the work went on after the ack: {}",
        slack.describe()
    );
}

#[test]
fn events_are_acknowledged_and_carried_out_once_per_event_id() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let (bot, socket) = socket_bot(&sandbox, &slack, &llm);
    let counted = "strands_slack_events_total{type=\"member_joined_channel\"}";

    let first = socket.send(&socket.event("Ev0PV52K25", "member_joined_channel", 0));
    prompt(&socket.wait_ack(&first), "an event", &socket, &slack);
    assert_eq!(metric(&bot, counted), 1.0);
    // Slack retries it in a new envelope: acknowledged, not carried out again.
    let retry = socket.send(&socket.event("Ev0PV52K25", "member_joined_channel", 1));
    prompt(&socket.wait_ack(&retry), "a retried event", &socket, &slack);
    assert_eq!(metric(&bot, counted), 1.0, "a retry is carried out once");
    let other = socket.send(&socket.event("Ev0PV52K26", "member_joined_channel", 0));
    prompt(&socket.wait_ack(&other), "another event", &socket, &slack);
    assert_eq!(metric(&bot, counted), 2.0);
}

#[test]
fn after_disconnect_or_a_dropped_connection_the_bot_reconnects_and_loses_nothing() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let (bot, socket) = socket_bot(&sandbox, &slack, &llm);

    // Slack asks for a new connection: the bot opens one at once, and the
    // old one still carries out and acknowledges what arrives on it.
    let asked = Instant::now();
    let old = socket.disconnect("refresh_requested");
    socket.wait_connections(2);
    eprintln!("reconnected after disconnect in {:?}", asked.elapsed());
    let late = socket.send_on(
        old,
        &socket.command(
            REQUESTER,
            OPS,
            "run deploy service=billing",
            &slack.response_url(),
        ),
    );
    let ack = socket.wait_ack(&late);
    prompt(
        &ack,
        "a command on the draining connection",
        &socket,
        &slack,
    );
    assert_eq!(ack.conn, old, "acknowledged where it arrived");
    assert!(
        ack_text(&ack).starts_with("started deploy as "),
        "{:?}",
        ack.payload
    );
    socket.close(old);
    let msg = approval(&slack, "review#1");

    // The connection drops without a word: the bot reconnects after a backoff.
    let dropped = Instant::now();
    socket.kill_latest();
    socket.wait_connections(3);
    eprintln!("reconnected after a drop in {:?}", dropped.elapsed());
    let (envelope, _) = click(&socket, &slack, &msg, "strands_approve", APPROVER);
    let ack = socket.wait_ack(&socket.send(&envelope));
    prompt(&ack, "a click after reconnecting", &socket, &slack);
    assert_eq!(ack.conn, 3);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, &format!("Approved by <@{APPROVER}>"));
    wait_llm(&llm, &slack, 2);

    // A new ticket for every connection.
    assert_eq!(slack.calls_to("apps.connections.open").len(), 3);
    assert_eq!(socket.open_connections(), 1);
    assert_eq!(metric(&bot, "strands_slack_socket_connections_total"), 3.0);
}

#[test]
fn an_envelope_delivered_twice_is_carried_out_once() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let (_bot, socket) = socket_bot(&sandbox, &slack, &llm);

    // A command delivered again (its ack lost): the same answer, one run.
    let envelope = socket.command(
        REQUESTER,
        OPS,
        "run deploy service=billing",
        &slack.response_url(),
    );
    let id = socket.send(&envelope);
    let first = socket.wait_ack(&id);
    prompt(&first, "a command", &socket, &slack);
    socket.send(&envelope);
    let second = socket.wait_ack_n(&id, 2);
    prompt(&second, "the same command again", &socket, &slack);
    assert!(
        ack_text(&first).starts_with("started deploy as "),
        "{:?}",
        first.payload
    );
    assert_eq!(
        first.payload, second.payload,
        "the redelivery gets the first answer"
    );
    let msg = approval(&slack, "review#1");
    assert_llm_stays_at(&llm, 1, "one run, not two");
    assert_eq!(slack.approvals().len(), 1, "{}", slack.describe());

    // A click delivered twice at once: both acknowledged, decided once, and
    // nobody is told it was already decided.
    let (click_envelope, _) = click(&socket, &slack, &msg, "strands_approve", APPROVER);
    let id = socket.send(&click_envelope);
    socket.send(&click_envelope);
    prompt(
        &socket.wait_ack_n(&id, 2),
        "the same click again",
        &socket,
        &slack,
    );
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, &format!("Approved by <@{APPROVER}>"));
    wait_llm(&llm, &slack, 2);
    std::thread::sleep(QUIET);
    assert_eq!(slack.updates_of(&msg).len(), 1, "{}", slack.describe());
    assert!(
        slack.ephemerals().is_empty(),
        "no one is told it was already decided: {}",
        slack.describe()
    );
}

#[test]
fn replicas_hold_a_connection_each_and_request_urls_work_beside_the_socket() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let (one, two) = (Sandbox::new(), Sandbox::new());
    let (_a, socket) = socket_bot(&one, &slack, &llm);
    // The second replica also has the signing secret: both ways work.
    let both = socket_config(&two, &slack, &llm).with(
        "SLACK_SIGNING_SECRET",
        Some(crate::common::fake_slack::SIGNING_SECRET),
    );
    let b = Bot::launch(&slack, both);
    socket.wait_connections(2);
    assert_eq!(socket.open_connections(), 2);
    for conn in [1, 2] {
        let id = socket.send_on(
            conn,
            &socket.command(REQUESTER, OPS, "help", &slack.response_url()),
        );
        let ack = socket.wait_ack(&id);
        prompt(&ack, "help", &socket, &slack);
        assert_eq!(ack.conn, conn);
        assert!(ack_text(&ack).contains("/strands run"), "{:?}", ack.payload);
    }
    let over_http = b.command(REQUESTER, OPS, "help");
    over_http.expect_prompt_ok("/strands help over HTTP", &b);
    assert!(over_http.text().contains("/strands run"), "{over_http:?}");
}

#[test]
fn serve_with_only_the_bot_token_says_to_set_an_app_token_or_a_signing_secret() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let base = socket_config(&sandbox, &slack, &llm);

    let run = run_to_exit(
        &base.clone().with("SLACK_APP_TOKEN", None),
        Duration::from_secs(15),
    );
    assert!(run.code.is_some_and(|c| c != 0), "{run:?}");
    assert!(
        run.output.contains("SLACK_APP_TOKEN") && run.output.contains("SLACK_SIGNING_SECRET"),
        "names both ways: {run:?}"
    );
    let misplaced = "xoxb-misplaced-canary-42";
    let run = run_to_exit(
        &base.with("SLACK_APP_TOKEN", Some(misplaced)),
        Duration::from_secs(15),
    );
    assert!(run.code.is_some_and(|c| c != 0), "{run:?}");
    assert!(run.output.contains("xapp-"), "{run:?}");
    assert!(!run.output.contains(misplaced), "the token leaked: {run:?}");
    assert!(slack.is_empty(), "{}", slack.describe());
}

#[test]
fn the_app_token_and_the_connection_ticket_never_reach_the_log() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let cfg = socket_config(&sandbox, &slack, &llm).with("STRANDS_LOG", Some("debug"));
    let mut bot = Bot::launch(&slack, cfg);
    let socket = slack.socket();
    socket.wait_connections(1);
    command(&socket, &slack, "help");
    socket.kill_latest();
    socket.wait_connections(2);
    bot.stop();
    let log = bot.log();
    assert!(log.contains("Socket Mode"), "the log speaks of it: {log}");
    assert!(!log.contains(APP_TOKEN), "the app token leaked:\n{log}");
    assert!(
        !log.contains("ticket-"),
        "the connection URL leaked:\n{log}"
    );
}

#[test]
fn the_socket_mode_manifest_is_the_request_url_one_without_urls() {
    let read = |file: &str| -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("manifests")
            .join(file);
        let text = std::fs::read_to_string(&path).expect("the manifest");
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let socket = read("slack-app-socket.yaml");
    let urls = read("slack-app.yaml");
    assert_eq!(socket["settings"]["socket_mode_enabled"], true);
    assert_eq!(urls["settings"]["socket_mode_enabled"], false);
    assert_eq!(
        socket["oauth_config"], urls["oauth_config"],
        "the same scopes"
    );
    assert_eq!(socket["settings"]["interactivity"]["is_enabled"], true);
    assert!(socket["settings"]["interactivity"]["request_url"].is_null());
    let (mut command, theirs) = (
        socket["features"]["slash_commands"][0].clone(),
        &urls["features"]["slash_commands"][0],
    );
    assert!(command["url"].is_null(), "no request URL: {command}");
    command["url"] = theirs["url"].clone();
    assert_eq!(&command, theirs, "the same /strands");
    assert_eq!(socket["display_information"], urls["display_information"]);
    assert_eq!(socket["features"]["app_home"], urls["features"]["app_home"]);
    assert_eq!(socket["features"]["app_home"]["home_tab_enabled"], true);
    assert_eq!(
        socket["settings"]["event_subscriptions"]["bot_events"],
        urls["settings"]["event_subscriptions"]["bot_events"],
        "the same events"
    );
    assert!(socket["settings"]["event_subscriptions"]["request_url"].is_null());
}
