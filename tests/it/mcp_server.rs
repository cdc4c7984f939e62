//! strands serve's MCP server with the official Python and TypeScript MCP
//! SDK clients (pinned, `tests/agent-hosts`), the way an agent host uses it:
//! `request_approval` answered in Slack (the fake Slack) and rejected in the
//! web inbox, with progress while it waits; the same key asks once (a
//! cancelled call leaves the request open, and asking again finds it); a
//! token without the operator role and malformed arguments are refused
//! with an MCP error naming why, and nothing is created; `strands mcp`
//! bridges stdio to the server (progress passed on); Claude Code's call
//! approved in Slack runs once, and a hook that times out blocks it; and a
//! client declaring MCP Tasks (the Rust SDK) gets a task it leaves and
//! comes back to.

use super::claude_code::{approval_args, claude, each_client, no_strays, workdir, Strands, WAIT};
use super::web::Visitor;
use crate::common::api::make_token;
use crate::common::claude_code::{self, bash_marker, lines_of, McpCall, McpRun, Sdk};
use crate::common::fake_anthropic::FakeAnthropic;
use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
use crate::common::service::write_workflows;
use crate::common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::time::Duration;

const SLACK_APPROVER: &str = "U04APPROVER";

/// `strands serve` with Slack (fake), a service file whose Claude Code
/// calls ask the Slack approver in #C0DEPLOYS, and an operator token.
struct WithSlack {
    slack: FakeSlack,
    bot: Bot,
    ci: String,
    _sandbox: Sandbox,
    _llm: FakeLlm,
}

impl WithSlack {
    fn start() -> WithSlack {
        let llm = FakeLlm::start();
        let slack = FakeSlack::start();
        let sandbox = Sandbox::new();
        let ci = make_token(&sandbox, "ci-bot", "operator");
        let dir = write_workflows(&sandbox, &llm, &[]);
        let file = sandbox.path().join("service.yaml");
        std::fs::write(
            &file,
            format!(
                "agent_hosts:\n  policy: sre\npolicies:\n  sre:\n    - when: \"{{{{ tool.name == 'Bash' and (tool.args.command | regex_search('(rm|kubectl|terraform|marker)')) }}}}\"\n      label: shell commands that change things\n      approvers: [{SLACK_APPROVER}]\n    - approvers: [{SLACK_APPROVER}]\n"
            ),
        )
        .expect("write the service file");
        let cfg = BotConfig::new(&sandbox, &slack, &dir)
            .with("STRANDS_SERVICE_FILE", Some(&file.display().to_string()))
            .with("STRANDS_MCP_PROGRESS_SECONDS", Some("1"));
        let bot = Bot::launch(&slack, cfg);
        WithSlack {
            slack,
            bot,
            ci,
            _sandbox: sandbox,
            _llm: llm,
        }
    }

    fn mcp_url(&self) -> String {
        format!("{}/mcp", self.bot.url)
    }
}

fn python() -> Option<claude_code::McpClient> {
    claude_code::mcp_client(Sdk::Python)
}

fn typescript() -> Option<claude_code::McpClient> {
    claude_code::mcp_client(Sdk::TypeScript)
}

#[test]
fn request_approval_is_a_slack_card_approved_there_with_progress_while_it_waits() {
    let Some(client) = python() else {
        return;
    };
    let w = WithSlack::start();
    let args = json!({
        "title": "Deploy v1.2 to prod?",
        "details": {"version": "1.2"},
        "approvers": [SLACK_APPROVER],
        "notify": ["slack:#C0DEPLOYS"],
        "key": "deploy-1.2"
    });
    let child =
        client.spawn(&McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", args));
    let msg = w.slack.wait_for_approval();
    assert_eq!(msg.channel, "C0DEPLOYS");
    assert!(
        msg.text().contains("Deploy v1.2 to prod?"),
        "{:#}",
        msg.call.body
    );
    std::thread::sleep(Duration::from_millis(2500));
    w.bot
        .click(&msg, "strands_approve", SLACK_APPROVER)
        .reply
        .expect_prompt_ok("the approve click", &w.bot);
    let run = McpRun::wait(child);
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert!(!run.progress().is_empty(), "no progress: {}", run.both());
    let view = &run.one("result")["structuredContent"];
    assert_eq!(view["status"], "approved", "{}", run.both());
    assert_eq!(view["decided_by"], SLACK_APPROVER, "{}", run.both());
    assert_eq!(view["via"], "slack", "{}", run.both());
    assert_eq!(view["requested_by"], "ci-bot", "{}", run.both());
}

#[test]
fn request_approval_rejected_in_the_web_inbox_returns_the_reason() {
    let Some(client) = typescript() else {
        return;
    };
    let w = Strands::start();
    let child = client.spawn(
        &McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", approval_args("web-1")),
    );
    let asked = w.pending();
    let id = asked["id"].as_str().expect("an id").to_string();
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let inbox = alice.get("/");
    assert!(
        inbox.body.contains("Run a shell command?"),
        "{}",
        inbox.body
    );
    let csrf = alice.csrf();
    let answered = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "approval#1"),
            ("decision", "reject"),
            ("reason", "use the staging table"),
        ],
    );
    assert!(
        answered.status < 400,
        "{} {}",
        answered.status,
        answered.body
    );
    let run = McpRun::wait(child);
    assert_eq!(run.code, Some(0), "{}", run.both());
    let view = &run.one("result")["structuredContent"];
    assert_eq!(view["status"], "rejected", "{}", run.both());
    assert_eq!(view["reason"], "use the staging table", "{}", run.both());
    assert_eq!(view["via"], "web", "{}", run.both());
}

#[test]
fn the_same_key_asks_once_and_a_cancelled_call_leaves_the_request_open() {
    let Some(client) = python() else {
        return;
    };
    let w = Strands::start();
    // Asked, then given up on by the host: the request stays, pending.
    let first = client.run(
        &McpCall::new(&w.mcp_url(), Some(&w.ci))
            .call("request_approval", approval_args("retry-1"))
            .cancel_after(Duration::from_millis(2500)),
    );
    assert_eq!(first.all("cancelled").len(), 1, "{}", first.both());
    let asked = w.pending();
    assert_eq!(w.approvals().len(), 1);
    // The host retries with the same key: the same request, not a new one.
    let again = client.spawn(
        &McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", approval_args("retry-1")),
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(w.approvals().len(), 1, "a second request was made");
    w.answer(&asked, json!({"decision": "approve"}));
    let run = McpRun::wait(again);
    let view = &run.one("result")["structuredContent"];
    assert_eq!(view["id"], asked["id"], "{}", run.both());
    assert_eq!(view["status"], "approved", "{}", run.both());
    assert_eq!(view["created"], false, "{}", run.both());
    // One request, answered once.
    let s = w.session(asked["id"].as_str().expect("an id"));
    let answers = s["gates"]
        .as_array()
        .map(|h| h.iter().filter(|e| e["event"] == "answered").count())
        .unwrap_or(0);
    assert_eq!(answers, 1, "{s:#}");
    assert_eq!(w.approvals().len(), 1);
}

#[test]
fn a_token_without_the_role_and_malformed_arguments_are_refused_and_nothing_is_created() {
    let w = Strands::start();
    each_client(|client| {
        // An approver's token may answer, not ask.
        let run = client.run(
            &McpCall::new(&w.mcp_url(), Some(&w.alice))
                .call("request_approval", approval_args("role-1")),
        );
        let e = run.one("error");
        assert!(
            e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("operator"),
            "{:?}: {}",
            client.sdk,
            run.both()
        );
        // A field of the wrong type, an unknown field, a bad approver list:
        // each named.
        for (args, field) in [
            (
                json!({"title": "x", "approvers": ["alice"], "quorum": "two"}),
                "quorum",
            ),
            (json!({"titel": "x", "approvers": ["alice"]}), "titel"),
            (json!({"title": "x"}), "approvers"),
            (
                json!({"title": "x", "approvers": ["group:nobody"]}),
                "approvers",
            ),
        ] {
            let run = client.run(
                &McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", args.clone()),
            );
            let e = run.one("error");
            assert_eq!(e["code"], -32602, "{args}: {}", run.both());
            assert!(
                e["message"].as_str().unwrap_or_default().contains(field),
                "{args} should name `{field}`: {}",
                run.both()
            );
        }
        assert!(w.approvals().is_empty(), "{:#?}", w.approvals());
    });
}

#[test]
fn strands_mcp_bridges_stdio_to_the_server_with_progress() {
    let Some(client) = python() else {
        return;
    };
    let w = Strands::start();
    let strands = std::path::PathBuf::from(env!("CARGO_BIN_EXE_strands"));
    let what = McpCall::new("", Some(&w.ci))
        .stdio(&[&strands.display().to_string(), "mcp"])
        .env("STRANDS_SERVER", &w.svc.url)
        .call("request_approval", approval_args("stdio-1"));
    let child = client.spawn(&what);
    let asked = w.pending();
    std::thread::sleep(Duration::from_millis(2500));
    w.answer(&asked, json!({"decision": "approve"}));
    let run = McpRun::wait(child);
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert_eq!(run.one("connected")["server"], "strands", "{}", run.both());
    assert!(
        run.tools().iter().any(|t| t == "approve_tool_call"),
        "{}",
        run.both()
    );
    assert!(
        !run.progress().is_empty(),
        "progress not passed on: {}",
        run.both()
    );
    let view = &run.one("result")["structuredContent"];
    assert_eq!(view["status"], "approved", "{}", run.both());
    assert_eq!(view["id"], asked["id"], "{}", run.both());
}

/// `strands claude-code setup --write DIR` for server `url` and `token`.
fn setup(url: &str, token: &str, dir: &std::path::Path) {
    crate::common::Sandbox::new()
        .strands(&[
            "claude-code",
            "setup",
            "--server",
            url,
            "--token",
            token,
            "--write",
            &dir.display().to_string(),
        ])
        .expect_code(0);
}

#[test]
fn claude_codes_call_approved_in_slack_runs_once_with_the_rule_on_the_card() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = WithSlack::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    // The configuration `strands claude-code setup` writes.
    setup(&w.bot.url, &w.ci, dir.path());
    let settings = dir.path().join(".claude/settings.local.json");
    let running = claude(&bin, &fake, dir.path())
        .settings(&settings)
        .timeout(WAIT * 2)
        .spawn();
    let msg = w.slack.wait_for_approval();
    let card = msg.call.body.to_string();
    assert!(card.contains("shell commands that change things"), "{card}");
    assert!(card.contains("Claude Code wants to run Bash"), "{card}");
    assert!(!marker.exists(), "it ran before anyone answered");
    w.bot
        .click(&msg, "strands_approve", SLACK_APPROVER)
        .reply
        .expect_prompt_ok("the approve click", &w.bot);
    let run = running.wait();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["ran"], "{}", run.both());
    no_strays(&fake);
}

#[test]
fn a_hook_that_times_out_blocks_the_call() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    setup(&w.svc.url, &w.ci, dir.path());
    // As written, but waiting 3 s instead of the gate's minutes.
    let path = dir.path().join(".claude/settings.local.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("settings")).expect("JSON");
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["hooks"][0]["onFailure"],
        "block"
    );
    settings["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = json!(3);
    let run = claude(&bin, &fake, dir.path())
        .settings_json(&settings)
        .timeout(WAIT)
        .run();
    assert!(!marker.exists(), "the command ran: {}", run.both());
    assert_eq!(run.permission_denials().len(), 1, "{}", run.both());
    // The request stays open; nobody's answer ran anything.
    let asked = w.pending();
    assert_eq!(asked["status"], "pending");
}

/// An rmcp client (the official Rust SDK) that declares the Tasks extension.
async fn tasks_client(
    url: &str,
    token: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, rmcp::model::ClientConfig> {
    use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::ServiceExt;
    strands::http::install_crypto();
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("tasks-test", "0"),
    )
    .serve(transport)
    .await
    .expect("connect with tasks")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_approval_runs_as_a_task_a_host_leaves_and_comes_back_to() {
    use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskStatus};
    let w = tokio::task::spawn_blocking(Strands::start)
        .await
        .expect("start");
    let client = tasks_client(&w.mcp_url(), &w.ci).await;
    let args = approval_args("task-1")
        .as_object()
        .cloned()
        .expect("an object");
    let created = client
        .call_tool_once(CallToolRequestParams::new("request_approval").with_arguments(args))
        .await
        .expect("tools/call");
    let CallToolResponse::Task(task) = created else {
        panic!("not a task: {created:?}");
    };
    let id = task.task.task_id.clone();
    assert_eq!(task.task.status, TaskStatus::InputRequired, "{task:?}");
    // input_required: a person's decision at the request's page.
    let got = client
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get");
    assert_eq!(got.task.status(), TaskStatus::InputRequired);
    let wire = serde_json::to_value(&got).expect("JSON");
    let url = wire["inputRequests"]["decision"]["params"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(url.ends_with(&format!("/sessions/{id}")), "{wire:#}");
    // The host leaves; a person decides; the host comes back.
    client.cancel().await.expect("close");
    let pending = tokio::task::block_in_place(|| w.pending());
    assert_eq!(pending["id"], id.as_str());
    tokio::task::block_in_place(|| w.answer(&pending, json!({"decision": "approve"})));
    let again = tasks_client(&w.mcp_url(), &w.ci).await;
    let mut done = None;
    for _ in 0..40 {
        let got = again
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        if got.task.status() == TaskStatus::Completed {
            done = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let done = done.expect("the task completed");
    let wire = serde_json::to_value(&done).expect("JSON");
    assert_eq!(
        wire["result"]["structuredContent"]["status"], "approved",
        "{wire:#}"
    );
    assert_eq!(
        wire["result"]["structuredContent"]["decided_by"], "alice",
        "{wire:#}"
    );
    // Still one request.
    assert_eq!(tokio::task::block_in_place(|| w.approvals()).len(), 1);
    let _ = again.cancel().await;
    tokio::task::spawn_blocking(move || drop(w))
        .await
        .expect("stop");
}

#[test]
fn without_a_policy_a_hosts_call_is_denied_saying_why_and_read_only_calls_pass() {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let ci = make_token(&sandbox, "ci-bot", "operator");
    let dir = write_workflows(&sandbox, &llm, &[]);
    let svc = crate::common::service::Service::launch(crate::common::service::ServeConfig::api(
        &sandbox, &dir,
    ));
    let hook = |tool: &str, input: Value| {
        let r = crate::common::api::call(
            &svc,
            "POST",
            "/api/v1/hooks/claude-code",
            Some(&ci),
            Some(&json!({
                "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input,
                "tool_use_id": format!("toolu_{tool}"), "session_id": "s1", "cwd": "/repo"
            })),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["hookSpecificOutput"].clone()
    };
    // No service file: Claude Code's read-only tools pass...
    let read = hook("Read", json!({"file_path": "/repo/README.md"}));
    assert_eq!(read["permissionDecision"], "allow", "{read}");
    // ...and anything else is denied, naming the missing policy; nothing asked.
    let bash = hook("Bash", bash_marker("ran"));
    assert_eq!(bash["permissionDecision"], "deny", "{bash}");
    let why = bash["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("agent-hosts"), "{why}");
    let listed = crate::common::api::call(&svc, "GET", "/api/v1/approvals", Some(&ci), None);
    assert_eq!(listed.json()["count"], 0, "{}", listed.body);
    // An event the hook does not answer is refused, naming it.
    let r = crate::common::api::call(
        &svc,
        "POST",
        "/api/v1/hooks/claude-code",
        Some(&ci),
        Some(&json!({"hook_event_name": "Stop", "tool_name": "Bash"})),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("Stop"), "{}", r.body);
}

#[test]
fn an_editable_action_is_approved_with_the_arguments_edited_in_the_web_inbox() {
    let Some(client) = python() else {
        return;
    };
    let w = Strands::start();
    let mut args = approval_args("edit-1");
    args["editable"] = json!(true);
    let child =
        client.spawn(&McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", args));
    let asked = w.pending();
    let id = asked["id"].as_str().expect("an id").to_string();
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let page = alice.get(&format!("/sessions/{id}"));
    assert!(
        page.body.contains("Approve with these arguments"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("marker.txt"),
        "the arguments are shown: {}",
        page.body
    );
    let csrf = alice.csrf();
    // Not JSON: refused on the page, nothing recorded.
    let bad = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "approval#1"),
            ("decision", "edit"),
            ("args", "{rm"),
        ],
    );
    assert!(bad.body.contains("not JSON"), "{}", bad.body);
    assert_eq!(w.session(&id)["status"], "paused");
    let edited = bash_marker("edited");
    let answered = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "approval#1"),
            ("decision", "edit"),
            ("args", &edited.to_string()),
        ],
    );
    assert!(
        answered.status < 400,
        "{} {}",
        answered.status,
        answered.body
    );
    let run = McpRun::wait(child);
    let view = &run.one("result")["structuredContent"];
    assert_eq!(view["status"], "approved", "{}", run.both());
    assert_eq!(view["arguments"], edited, "{}", run.both());
    assert_eq!(view["via"], "web", "{}", run.both());
}
