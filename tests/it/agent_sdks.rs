//! The agents people run, answered by people: the real Strands Agents SDK
//! (Python), LangGraph and the MCP SDK — pinned, installed by
//! `clients/setup.sh` with this repository's `strands-hitl` package built
//! into a wheel — against a real `strands serve` with the fake Slack and
//! the fake model (the only fake on the agents' side). Each test runs an
//! example of `examples/agents/python` as its users would.
//!
//! Approved in Slack → the tool ran once; rejected with a reason → the
//! model's next request carries it and the tool never ran; a process killed
//! after asking → a new process resumes on the same request (one request,
//! one tool run); a quorum of two across Slack and the web inbox; a policy
//! chosen by the call's arguments; a Swarm's node; a Graph's node paused by
//! the SDK's own `HumanInTheLoop`; an MCP server's form filled in by a
//! person (over the API, and in a Slack modal); LangGraph resumed after a
//! restart; trust (Slack's Trust button); and bad input (unknown approver,
//! token refused, server down) fails closed naming the cause.

use super::web::Visitor;
use crate::common::agent_sdks::{self, Ran};
use crate::common::api::{call, make_token};
use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
use crate::common::service::{write_workflows, ServeConfig};
use crate::common::{assistant_turns, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The Slack user who approves in these tests.
const SLACK_APPROVER: &str = "U04APPROVER";
const WAIT: Duration = Duration::from_secs(60);

/// A model that answers each agent (recognised by a word of its system
/// prompt) with its scripted turns: the k-th model call of a conversation
/// (counted by its assistant turns, so a resume does not shift it) gets
/// `turns[k]`'s tool calls, then the agent's final text.
fn model(script: Vec<(&'static str, Vec<Vec<Value>>)>) -> FakeLlm {
    FakeLlm::start_with(Behaviour::scripted(move |_, body| {
        let system = body["messages"][0].to_string();
        match script.iter().find(|(word, _)| system.contains(word)) {
            Some((word, turns)) => match turns.get(assistant_turns(body)) {
                Some(calls) => Say::Calls(calls.clone()),
                None => Say::Text(format!("FINAL {word}: done")),
            },
            None => Say::Text("FINAL: nothing to do".into()),
        }
    }))
}

fn delete_call(id: &str, table: &str) -> Value {
    tool_call(
        id,
        "delete_rows",
        json!({"table": table, "older_than_days": 90}),
    )
}

/// The cleanup agent's model: one `delete_rows` call, then text.
fn cleanup_model() -> FakeLlm {
    model(vec![(
        "CLEANUP",
        vec![vec![delete_call("call_del", "events")]],
    )])
}

/// The service (with Slack on the fake), tokens for the agent (ci-bot, an
/// operator) and alice (an approver), and a directory the agents work in.
struct World {
    py: PathBuf,
    llm: FakeLlm,
    slack: FakeSlack,
    sandbox: Sandbox,
    bot: Bot,
    ci: String,
    alice: String,
    root: String,
    work: tempfile::TempDir,
}

impl World {
    /// `None` (the test skips) without the SDKs.
    fn start(llm: FakeLlm) -> Option<World> {
        World::start_with(llm, |_| {}, |cfg| cfg)
    }

    fn start_with(
        llm: FakeLlm,
        before: impl FnOnce(&Sandbox),
        adjust: impl FnOnce(ServeConfig) -> ServeConfig,
    ) -> Option<World> {
        let py = agent_sdks::python()?;
        let slack = FakeSlack::start();
        let sandbox = Sandbox::new();
        let ci = make_token(&sandbox, "ci-bot", "operator");
        let alice = make_token(&sandbox, "alice", "approver");
        let root = make_token(&sandbox, "root", "admin");
        before(&sandbox);
        let dir = write_workflows(&sandbox, &llm, &[]);
        let bot = Bot::launch(&slack, adjust(BotConfig::new(&sandbox, &slack, &dir)));
        Some(World {
            py,
            llm,
            slack,
            sandbox,
            bot,
            ci,
            alice,
            root,
            work: tempfile::tempdir().expect("a work dir"),
        })
    }

    fn tool_log(&self) -> PathBuf {
        self.work.path().join("tool.log")
    }

    /// `python EXAMPLE ARGS` with the service, the model and `env`.
    fn agent(&self, script: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
        let path = agent_sdks::example(&format!("python/{script}"));
        let mut all = vec![path.to_str().expect("a path")];
        all.extend_from_slice(args);
        let log = self.tool_log();
        let sessions = self.work.path().join("sessions");
        let checkpoints = self.work.path().join("checkpoints.sqlite");
        let mut base: Vec<(&str, &str)> = vec![
            ("STRANDS_SERVER", self.bot.url.as_str()),
            ("STRANDS_TOKEN", self.ci.as_str()),
            ("OPENAI_BASE_URL", self.llm.url.as_str()),
            ("OPENAI_API_KEY", "sk-test"),
            ("MODEL_ID", "fake-model"),
            ("TOOL_LOG", log.to_str().expect("a path")),
            ("SESSIONS_DIR", sessions.to_str().expect("a path")),
            ("CHECKPOINTS", checkpoints.to_str().expect("a path")),
            ("STRANDS_RECONNECT_SECS", "20"),
        ];
        base.extend_from_slice(env);
        agent_sdks::command(&self.py, &all, self.work.path(), &base)
    }

    /// What the dangerous tools did, one line per run (`PID what…`).
    fn tool_runs(&self) -> Vec<String> {
        std::fs::read_to_string(self.tool_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Every approval request, newest first (as the admin reads them).
    fn approvals(&self) -> Vec<Value> {
        let r = call(
            &self.bot,
            "GET",
            "/api/v1/approvals",
            Some(&self.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits until `n` requests are pending; the newest. (Looks four times
    /// a second: the service limits each token's requests.)
    #[track_caller]
    fn pending(&self, n: usize) -> Value {
        let until = std::time::Instant::now() + WAIT;
        loop {
            let all = self.approvals();
            let pending: Vec<&Value> = all.iter().filter(|a| a["status"] == "pending").collect();
            // Answerable once its run stands at the gate.
            let newest = pending.first().filter(|a| {
                a["id"]
                    .as_str()
                    .is_some_and(|id| self.session(id)["status"] == "paused")
            });
            if let (true, Some(newest)) = (pending.len() >= n, newest) {
                return (*newest).clone();
            }
            assert!(
                std::time::Instant::now() < until,
                "the agent never asked: {all:#?}\n{}",
                self.bot.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// alice approves request `asked`.
    fn approve(&self, asked: &Value) {
        self.answer(
            asked["id"].as_str().expect("an id"),
            &self.alice,
            json!({"decision": "approve"}),
        );
    }

    fn answer(&self, id: &str, token: &str, body: Value) {
        let r = call(
            &self.bot,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(token),
            Some(&body),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }

    /// The request's session (its open gate: approvers, rule, quorum).
    fn session(&self, id: &str) -> Value {
        let r = call(
            &self.bot,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&self.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    /// The model's requests of the agent whose system prompt has `word`.
    fn model_calls(&self, word: &str) -> Vec<Value> {
        self.llm
            .requests()
            .into_iter()
            .filter(|e| e.body["messages"][0].to_string().contains(word))
            .map(|e| e.body)
            .collect()
    }
}

#[test]
fn a_dangerous_call_approved_in_slack_runs_once() {
    let Some(w) = World::start(cleanup_model()) else {
        return;
    };
    let agent =
        agent_sdks::spawn(w.agent("cleanup_agent.py", &[], &[("APPROVERS", SLACK_APPROVER)]));
    let msg = w.slack.wait_for_approval();
    let card = msg.text();
    assert!(card.contains("delete_rows"), "{card}");
    assert!(
        card.contains("events"),
        "the call's arguments are shown: {card}"
    );
    let asked = w.pending(1);
    assert_eq!(asked["action"]["tool"], "delete_rows", "{asked:#}");
    assert_eq!(asked["action"]["arguments"]["older_than_days"], 90);
    assert!(w.tool_runs().is_empty(), "nothing runs before the answer");
    w.bot
        .click(&msg, "strands_approve", SLACK_APPROVER)
        .reply
        .expect_prompt_ok("the approve click", &w.bot);
    let ran = Ran::wait(agent);
    ran.expect_code(0);
    assert!(ran.stdout.contains("FINAL CLEANUP"), "{}", ran.both());
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 1, "the tool ran once: {runs:?}");
    assert!(runs[0].ends_with("delete_rows events 90"), "{runs:?}");
    // The model saw the tool's result.
    let calls = w.model_calls("CLEANUP");
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(calls[1].to_string().contains("deleted 3 rows from events"));
    let done = &w.approvals()[0];
    assert_eq!(done["status"], "approved", "{done:#}");
    assert_eq!(done["decided_by"], SLACK_APPROVER);
    assert_eq!(done["via"], "slack");
}

#[test]
fn rejected_with_a_reason_the_model_reads_it_and_the_tool_never_runs() {
    const REASON: &str = "change freeze until Monday";
    // The model proposes the rejected call again (a rejection loop).
    let again = vec![
        vec![delete_call("call_del", "events")],
        vec![delete_call("call_again", "events")],
    ];
    let Some(w) = World::start(model(vec![("CLEANUP", again)])) else {
        return;
    };
    let agent =
        agent_sdks::spawn(w.agent("cleanup_agent.py", &[], &[("APPROVERS", SLACK_APPROVER)]));
    let msg = w.slack.wait_for_approval();
    let click = w.bot.click(&msg, "strands_reject_reason", SLACK_APPROVER);
    click.reply.expect_prompt_ok("Reject with reason…", &w.bot);
    let opened = w.slack.wait_for_modal(&click);
    w.bot
        .submit_modal(&opened, SLACK_APPROVER, REASON)
        .expect_prompt_ok("the reason", &w.bot);
    let ran = Ran::wait(agent);
    ran.expect_code(1);
    assert!(w.tool_runs().is_empty(), "{:?}", w.tool_runs());
    let calls = w.model_calls("CLEANUP");
    assert_eq!(calls.len(), 3, "{calls:#?}");
    let next = calls[1].to_string();
    assert!(
        next.contains(&format!("rejected by {SLACK_APPROVER}: {REASON}")),
        "the model's next request carries who and why: {next}"
    );
    // The same call again is denied without asking again.
    assert!(
        calls[2].to_string().contains("it was not asked again"),
        "{:#}",
        calls[2]
    );
    assert_eq!(w.approvals().len(), 1, "asked once");
}

#[test]
fn a_process_killed_after_asking_is_resumed_by_a_new_one_on_the_same_request() {
    let Some(w) = World::start(cleanup_model()) else {
        return;
    };
    let env = [("APPROVERS", "alice")];
    let mut first = agent_sdks::spawn(w.agent("restartable_agent.py", &["job-7"], &env));
    let asked = w.pending(1);
    first.kill().expect("kill -9 the first agent");
    let killed = Ran::wait(first);
    assert_eq!(killed.code, None, "killed by a signal: {}", killed.both());
    assert!(w.tool_runs().is_empty());

    let second = agent_sdks::spawn(w.agent("restartable_agent.py", &["job-7"], &env));
    // Give the second process time to ask (it must find the same request).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(w.approvals().len(), 1, "asked once: {:#?}", w.approvals());
    w.approve(&asked);
    let ran = Ran::wait(second);
    ran.expect_code(0);
    assert!(ran.stderr.contains("resuming job-7"), "{}", ran.both());
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 1, "one tool run: {runs:?}");
    assert_eq!(w.approvals().len(), 1, "one request in the store");
    // The model was not asked for the call again: the first call and the
    // one after the tool's result.
    assert_eq!(w.model_calls("CLEANUP").len(), 2);
}

#[test]
fn a_quorum_of_two_across_slack_and_the_web_inbox() {
    let people = |s: &Sandbox| {
        s.strands(&["people", "add", "bob", "--slack", SLACK_APPROVER])
            .expect_code(0);
        s.strands(&["people", "add", "alice", "--token", "alice"])
            .expect_code(0);
    };
    let Some(w) = World::start_with(cleanup_model(), people, |cfg| cfg) else {
        return;
    };
    let agent = agent_sdks::spawn(w.agent(
        "cleanup_agent.py",
        &[],
        &[("APPROVERS", "alice,bob"), ("QUORUM", "2")],
    ));
    let msg = w.slack.wait_for_approval();
    let asked = w.pending(1);
    let id = asked["id"].as_str().expect("id").to_string();
    w.bot
        .click(&msg, "strands_approve", SLACK_APPROVER)
        .reply
        .expect_prompt_ok("bob's approval", &w.bot);
    w.slack
        .wait_for_update(&msg, |c| c.text().contains("1 of 2 approvals"));
    std::thread::sleep(Duration::from_millis(500));
    assert!(w.tool_runs().is_empty(), "one approval of two runs nothing");
    assert_eq!(w.approvals()[0]["status"], "pending");

    let alice = Visitor::sign_in(&w.bot, &w.alice);
    let csrf = alice.csrf();
    let r = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "approval#1"),
            ("decision", "approve"),
        ],
    );
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let ran = Ran::wait(agent);
    ran.expect_code(0);
    assert_eq!(w.tool_runs().len(), 1);
    let s = w.session(&id);
    let gates = s["gates"].to_string();
    assert!(gates.contains("slack") && gates.contains("web"), "{s:#}");
}

/// The service's `payments` policy: over 10,000 mallory approves, below
/// that alice.
fn payments_policy(dir: &Path) -> String {
    let file = dir.join("service.yaml");
    std::fs::write(
        &file,
        concat!(
            "policies:\n",
            "  payments:\n",
            "    - when: \"{{ details.amount > 10000 }}\"\n",
            "      label: large payments\n",
            "      approvers: [mallory]\n",
            "    - approvers: [alice]\n",
        ),
    )
    .expect("write the service file");
    file.display().to_string()
}

#[test]
fn the_one_line_ask_goes_to_the_approvers_a_policy_picks_by_the_arguments() {
    let llm = model(vec![(
        "PAYMENTS",
        vec![vec![tool_call(
            "call_pay",
            "pay_invoice",
            json!({"invoice": "INV-7", "amount": 20000}),
        )]],
    )]);
    let files = tempfile::tempdir().expect("temp dir");
    let service = payments_policy(files.path());
    let Some(w) = World::start_with(
        llm,
        |_| {},
        |cfg| cfg.with("STRANDS_SERVICE_FILE", Some(service.as_str())),
    ) else {
        return;
    };
    let mallory = make_token(&w.sandbox, "mallory", "approver");
    let agent = agent_sdks::spawn(w.agent("payments_agent.py", &[], &[("POLICY", "payments")]));
    let asked = w.pending(1);
    let id = asked["id"].as_str().expect("id").to_string();
    assert_eq!(asked["action"]["arguments"]["amount"], 20000, "{asked:#}");
    let gate = w.session(&id)["gate"].clone();
    assert_eq!(gate["approvers"], json!(["mallory"]), "{gate:#}");
    // alice is not the approver of a large payment: refused, nothing changes.
    let refused = call(
        &w.bot,
        "POST",
        &format!("/api/v1/sessions/{id}/answers"),
        Some(&w.alice),
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("mallory"), "{}", refused.body);
    w.answer(&id, &mallory, json!({"decision": "approve"}));
    let ran = Ran::wait(agent);
    ran.expect_code(0);
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].ends_with("pay_invoice INV-7 20000"), "{runs:?}");
}

#[test]
fn a_swarm_node_pauses_and_the_swarm_resumes_with_the_answer() {
    let llm = model(vec![
        (
            "PLANNER",
            vec![vec![tool_call(
                "call_handoff",
                "handoff_to_agent",
                json!({"agent_name": "cleaner", "message": "delete old events"}),
            )]],
        ),
        ("CLEANER", vec![vec![delete_call("call_clean", "events")]]),
    ]);
    let Some(w) = World::start(llm) else {
        return;
    };
    let agent =
        agent_sdks::spawn(w.agent("swarm_agents.py", &["swarm-1"], &[("APPROVERS", "alice")]));
    let asked = w.pending(1);
    assert!(w.tool_runs().is_empty());
    w.approve(&asked);
    let ran = Ran::wait(agent);
    ran.expect_code(0);
    assert!(
        ran.stdout
            .contains("swarm completed: ['planner', 'cleaner']"),
        "{}",
        ran.both()
    );
    assert_eq!(w.tool_runs().len(), 1);
}

#[test]
fn a_graph_node_s_human_in_the_loop_interrupt_is_answered_through_strands() {
    let llm = model(vec![
        ("CLEANER", vec![vec![delete_call("call_clean", "events")]]),
        ("REPORTER", vec![]),
    ]);
    let Some(w) = World::start(llm) else {
        return;
    };
    let agent =
        agent_sdks::spawn(w.agent("graph_agents.py", &["graph-1"], &[("APPROVERS", "alice")]));
    let asked = w.pending(1);
    // The SDK's own prompt became the request: the call is its action.
    assert_eq!(asked["action"]["tool"], "delete_rows", "{asked:#}");
    assert_eq!(asked["action"]["arguments"]["table"], "events");
    assert!(w.tool_runs().is_empty());
    w.approve(&asked);
    let ran = Ran::wait(agent);
    ran.expect_code(0);
    assert!(
        ran.stdout
            .contains("graph completed: ['cleaner', 'reporter']"),
        "{}",
        ran.both()
    );
    assert_eq!(w.tool_runs().len(), 1);
    assert_eq!(w.model_calls("REPORTER").len(), 1);
}

/// The refunds agent's model: one `issue_refund` call, then text.
fn refunds_model() -> FakeLlm {
    model(vec![(
        "REFUNDS",
        vec![vec![tool_call(
            "call_refund",
            "issue_refund",
            json!({"order": "A-1042"}),
        )]],
    )])
}

#[test]
fn an_mcp_servers_form_is_filled_in_by_a_person() {
    let llm = refunds_model();
    let Some(w) = World::start(llm) else {
        return;
    };
    let agent = agent_sdks::spawn(w.agent("mcp_refund_agent.py", &[], &[("APPROVERS", "alice")]));
    let asked = w.pending(1);
    let id = asked["id"].as_str().expect("id").to_string();
    assert!(
        asked["title"]
            .as_str()
            .is_some_and(|t| t.contains("refund for order A-1042")),
        "{asked:#}"
    );
    let form = &asked["form"]["properties"];
    for field in ["amount", "reason", "notify_customer"] {
        assert!(
            form.get(field).is_some(),
            "the form asks {field}: {asked:#}"
        );
    }
    // A value the form refuses changes nothing.
    let bad = call(
        &w.bot,
        "POST",
        &format!("/api/v1/sessions/{id}/answers"),
        Some(&w.alice),
        Some(&json!({"decision": "approve", "values": {"amount": "lots"}})),
    );
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(w.tool_runs().is_empty());
    w.answer(
        &id,
        &w.alice,
        json!({"decision": "approve", "values": {"amount": 120, "reason": "arrived broken", "notify_customer": false}}),
    );
    let ran = Ran::wait(agent);
    ran.expect_code(0);
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0].ends_with("refund A-1042 120 False arrived broken"),
        "{runs:?}"
    );
    let calls = w.model_calls("REFUNDS");
    assert!(
        calls[1]
            .to_string()
            .contains("refunded 120 EUR for order A-1042"),
        "{:#?}",
        calls
    );
    let view = &w.approvals()[0];
    assert_eq!(view["values"]["amount"], 120, "{view:#}");
}

#[test]
fn an_mcp_servers_form_is_filled_in_through_a_slack_modal() {
    let Some(w) = World::start(refunds_model()) else {
        return;
    };
    let agent =
        agent_sdks::spawn(w.agent("mcp_refund_agent.py", &[], &[("APPROVERS", SLACK_APPROVER)]));
    let msg = w.slack.wait_for_approval();
    let click = w.bot.click(&msg, "strands_approve", SLACK_APPROVER);
    click
        .reply
        .expect_prompt_ok("Approve opens the form", &w.bot);
    let opened = w.slack.wait_for_modal(&click);
    assert_eq!(opened.body["view"]["callback_id"], "strands_fill");
    let submitted = w.bot.submit_modal_with(&opened, SLACK_APPROVER, "", |p| {
        p["view"]["state"] = json!({"values": {
            "field:amount": {"value": {"type": "number_input", "value": "75"}},
            "field:reason": {"value": {"type": "plain_text_input", "value": "late delivery"}},
            "field:notify_customer": {"value": {"type": "static_select", "selected_option": {
                "text": {"type": "plain_text", "text": "No"}, "value": "false"}}},
        }});
    });
    assert_eq!(submitted.status, 200, "{}", submitted.body);
    assert!(!submitted.body.contains("errors"), "{}", submitted.body);
    Ran::wait(agent).expect_code(0);
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0].ends_with("refund A-1042 75 False late delivery"),
        "{runs:?}"
    );
    assert_eq!(w.approvals()[0]["via"], "slack");
}

#[test]
fn an_mcp_form_rejected_is_declined() {
    let llm = refunds_model();
    let Some(w) = World::start(llm) else {
        return;
    };
    let agent = agent_sdks::spawn(w.agent("mcp_refund_agent.py", &[], &[("APPROVERS", "alice")]));
    let asked = w.pending(1);
    w.answer(
        asked["id"].as_str().expect("id"),
        &w.alice,
        json!({"decision": "reject", "reason": "not ours"}),
    );
    Ran::wait(agent).expect_code(0);
    assert!(w.tool_runs().is_empty());
    let calls = w.model_calls("REFUNDS");
    assert!(
        calls[1]
            .to_string()
            .contains("the refund for order A-1042 was declined"),
        "{calls:#?}"
    );
}

#[test]
fn a_langgraph_graph_is_resumed_after_a_restart() {
    let Some(w) = World::start(FakeLlm::start()) else {
        return;
    };
    let env = [("APPROVERS", "alice")];
    let mut first = agent_sdks::spawn(w.agent("langgraph_refund.py", &["thread-1", "120"], &env));
    let asked = w.pending(1);
    assert_eq!(asked["action"]["tool"], "refund", "{asked:#}");
    first.kill().expect("kill -9 the first process");
    Ran::wait(first);
    let second = agent_sdks::spawn(w.agent("langgraph_refund.py", &["thread-1"], &env));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(w.approvals().len(), 1, "asked once: {:#?}", w.approvals());
    w.approve(&asked);
    let ran = Ran::wait(second);
    ran.expect_code(0);
    assert!(ran.stderr.contains("resuming thread-1"), "{}", ran.both());
    assert!(
        ran.stdout.contains("approved by alice; refunded"),
        "{}",
        ran.both()
    );
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].ends_with("refund A-1042 120"), "{runs:?}");
    assert_eq!(w.approvals().len(), 1);
}

#[test]
fn trust_lets_the_next_call_of_the_tool_run_without_asking() {
    let llm = model(vec![(
        "CLEANUP",
        vec![
            vec![delete_call("call_one", "events")],
            vec![delete_call("call_two", "sessions")],
        ],
    )]);
    let Some(w) = World::start(llm) else {
        return;
    };
    let agent = agent_sdks::spawn(w.agent(
        "cleanup_agent.py",
        &[],
        &[("APPROVERS", SLACK_APPROVER), ("ENABLE_TRUST", "1")],
    ));
    let msg = w.slack.wait_for_approval();
    assert!(
        msg.call.body.to_string().contains("Trust delete_rows"),
        "{:#}",
        msg.call.body
    );
    w.bot
        .click(&msg, "strands_trust", SLACK_APPROVER)
        .reply
        .expect_prompt_ok("the trust click", &w.bot);
    Ran::wait(agent).expect_code(0);
    let runs = w.tool_runs();
    assert_eq!(runs.len(), 2, "both calls ran: {runs:?}");
    assert_eq!(w.approvals().len(), 1, "the second call did not ask");
    assert_eq!(w.approvals()[0]["trusted"], true);
}

/// Bad input never approves: the agent stops naming the cause, and the
/// tool never runs.
#[test]
fn an_unknown_approver_a_refused_token_and_a_server_down_fail_closed() {
    let Some(w) = World::start(cleanup_model()) else {
        return;
    };
    let unknown =
        agent_sdks::run(w.agent("cleanup_agent.py", &[], &[("APPROVERS", "group:nobody")]));
    unknown.expect_code(3);
    assert!(
        unknown.stderr.contains("approvers") && unknown.stderr.contains("no group `nobody`"),
        "{}",
        unknown.both()
    );

    let refused = agent_sdks::run(w.agent(
        "cleanup_agent.py",
        &[],
        &[
            ("APPROVERS", "alice"),
            ("STRANDS_TOKEN", "stk_nobody_secret"),
        ],
    ));
    refused.expect_code(3);
    assert!(
        refused.stderr.contains("refused the token"),
        "{}",
        refused.both()
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let down = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let unreachable = agent_sdks::run(w.agent(
        "cleanup_agent.py",
        &[],
        &[
            ("APPROVERS", "alice"),
            ("STRANDS_SERVER", down.as_str()),
            ("STRANDS_RECONNECT_SECS", "1"),
        ],
    ));
    unreachable.expect_code(3);
    assert!(
        unreachable
            .stderr
            .contains("cannot reach the strands service")
            && unreachable.stderr.contains(&down),
        "{}",
        unreachable.both()
    );
    assert!(w.tool_runs().is_empty(), "{:?}", w.tool_runs());
    assert!(w.approvals().is_empty(), "nothing was asked");
}
