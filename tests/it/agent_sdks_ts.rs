//! A Strands Agents TypeScript agent (`@strands-agents/sdk` 1.19.0, its
//! OpenAI model pointed at the fake model) asks the real `strands serve`
//! through `strands-hitl` before its dangerous tool runs, and a person
//! answers in (fake) Slack: approved, the tool runs exactly once and the
//! agent exits 0, its digest of the call being the server's; rejected with
//! a reason in Slack's modal, the tool never runs, the agent exits 1 and
//! the model's next request carries the reason as the tool's result; a
//! refused token stops the agent with the cause named and nothing asked;
//! killed while it waits, the interrupt / resume agent run again on the same
//! session waits on the same request and runs the tool there, once.
//!
//! The agents are `examples/agents/typescript/{agent,interrupt}.mjs`,
//! installed by `clients/setup.sh`; without them these tests skip (and
//! fail under `STRANDS_REQUIRE_AGENT_SDKS=1`).

use crate::common::agent_sdks::{self, Ran};
use crate::common::api::{call, make_token};
use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
use crate::common::service::write_workflows;
use crate::common::{last_role, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

const APPROVER: &str = "U04APPROVER";
const CHANNEL: &str = "C0DEPLOYS";
const REASON: &str = "change freeze until Monday";

/// The fake model: a user's message gets one `delete_rows` call; a tool's
/// result gets the final text, quoting it.
fn model() -> FakeLlm {
    FakeLlm::start_with(Behaviour::scripted(|_, body| {
        if last_role(body) == "tool" {
            let result = crate::common::tool_results(body)
                .last()
                .map(|(_, c)| c.clone())
                .unwrap_or_default();
            Say::Text(format!("FINAL: the tool said: {result}"))
        } else {
            Say::Calls(vec![tool_call(
                "call_1",
                "delete_rows",
                json!({"table": "events", "older_than_days": 90}),
            )])
        }
    }))
}

/// `strands serve` with the fake Slack and an operator token for the agent.
struct World {
    llm: FakeLlm,
    slack: FakeSlack,
    sandbox: Sandbox,
    bot: Bot,
    /// ci-bot's operator token: the agent asks with it.
    ci: String,
    dir: PathBuf,
}

impl World {
    fn start(dir: PathBuf) -> World {
        let llm = model();
        let slack = FakeSlack::start();
        let sandbox = Sandbox::new();
        let ci = make_token(&sandbox, "ci-bot", "operator");
        let workflows = write_workflows(&sandbox, &llm, &[]);
        let bot = Bot::launch(&slack, BotConfig::new(&sandbox, &slack, &workflows));
        World {
            llm,
            slack,
            sandbox,
            bot,
            ci,
            dir,
        }
    }

    fn rows_log(&self) -> PathBuf {
        self.sandbox.path().join("rows.log")
    }

    /// The lines `delete_rows` wrote: one per run of the tool.
    fn tool_runs(&self) -> usize {
        std::fs::read_to_string(self.rows_log())
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// Starts `node SCRIPT` in the example with the world's settings and `extra`.
    fn agent(&self, script: &str, token: &str, extra: &[(&str, &str)]) -> Running {
        let rows = self.rows_log().display().to_string();
        let mut env = vec![
            ("OPENAI_BASE_URL", self.llm.url.as_str()),
            ("OPENAI_API_KEY", "test-key"),
            ("MODEL_ID", "fake-model"),
            ("STRANDS_SERVER", self.bot.url.as_str()),
            ("STRANDS_TOKEN", token),
            ("APPROVERS", APPROVER),
            ("NOTIFY", "slack:#C0DEPLOYS"),
            ("ROWS_LOG", rows.as_str()),
        ];
        env.extend_from_slice(extra);
        let c = agent_sdks::command(Path::new("node"), &[script], &self.dir, &env);
        Running(Some(agent_sdks::spawn(c)))
    }

    /// The approval requests ci-bot made, newest first.
    fn approvals(&self) -> Vec<Value> {
        let r = call(&self.bot, "GET", "/api/v1/approvals", Some(&self.ci), None);
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// An agent process, killed if the test fails before it ends.
struct Running(Option<Child>);

impl Running {
    fn finish(mut self) -> Ran {
        Ran::wait(self.0.take().expect("a running agent"))
    }

    fn kill(mut self) {
        let mut child = self.0.take().expect("a running agent");
        child.kill().expect("kill the agent");
        child.wait().expect("the killed agent ends");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The digest the agent printed for its call (`… (digest HEX)`).
fn printed_digest(ran: &Ran) -> String {
    let at = ran
        .stderr
        .find("(digest ")
        .unwrap_or_else(|| panic!("no digest printed\n{}", ran.both()));
    ran.stderr[at + 8..at + 8 + 64].to_string()
}

#[test]
fn approved_in_slack_the_tool_runs_once_and_the_agent_exits_0() {
    let Some(dir) = agent_sdks::typescript() else {
        return;
    };
    let w = World::start(dir);
    // The one-line `ask` of the SDK's HumanInTheLoop.
    let agent = w.agent("agent.mjs", &w.ci, &[("HITL_MODE", "ask")]);
    let msg = w.slack.wait_for_approval();
    assert_eq!(msg.channel, CHANNEL);
    assert!(msg.text().contains("delete_rows"), "{:#}", msg.call.body);
    assert_eq!(w.tool_runs(), 0, "nothing runs before the answer");
    w.bot
        .click(&msg, "strands_approve", APPROVER)
        .reply
        .expect_prompt_ok("the approve click", &w.bot);
    let ran = agent.finish();
    ran.expect_code(0);
    assert_eq!(w.tool_runs(), 1, "{}", ran.both());
    assert!(
        ran.stdout
            .contains("FINAL: the tool said: deleted 3 rows from events"),
        "{}",
        ran.both()
    );
    assert!(
        ran.stderr.contains("approved by U04APPROVER (via slack)"),
        "{}",
        ran.both()
    );
    // One request, bound to the call: the agent's digest is the server's.
    let all = w.approvals();
    assert_eq!(all.len(), 1, "{all:#?}");
    let a = &all[0];
    assert_eq!(a["status"], "approved", "{a:#}");
    assert_eq!(
        a["action"],
        json!({"tool": "delete_rows", "arguments": {"table": "events", "older_than_days": 90}})
    );
    assert_eq!(a["action_digest"], printed_digest(&ran), "{a:#}");
    assert_eq!(a["labels"]["tool"], "delete_rows", "{a:#}");
    assert_eq!(w.llm.count(), 2, "one tool call, one final answer");
}

#[test]
fn rejected_with_a_reason_in_slack_the_model_reads_it_and_the_tool_never_runs() {
    let Some(dir) = agent_sdks::typescript() else {
        return;
    };
    let w = World::start(dir);
    // The intervention handler: the reason goes back to the model.
    let agent = w.agent("agent.mjs", &w.ci, &[("HITL_MODE", "handler")]);
    let msg = w.slack.wait_for_approval();
    let click = w.bot.click(&msg, "strands_reject_reason", APPROVER);
    click.reply.expect_prompt_ok("Reject with reason…", &w.bot);
    let opened = w.slack.wait_for_modal(&click);
    w.bot
        .submit_modal(&opened, APPROVER, REASON)
        .expect_prompt_ok("the reason", &w.bot);
    let ran = agent.finish();
    ran.expect_code(1);
    assert_eq!(w.tool_runs(), 0, "{}", ran.both());
    let denied = format!("rejected by {APPROVER}: {REASON}");
    let last = w.llm.last();
    assert!(
        last.tool_result("call_1").contains(&denied),
        "the model's next request: {:#}",
        last.body["messages"]
    );
    assert!(ran.stdout.contains(&denied), "{}", ran.both());
    assert_eq!(w.approvals()[0]["reason"], REASON);
}

#[test]
fn a_refused_token_stops_the_agent_naming_the_cause_and_nothing_runs() {
    let Some(dir) = agent_sdks::typescript() else {
        return;
    };
    let w = World::start(dir);
    let ran = w
        .agent("agent.mjs", "stk_nobody_0000", &[("HITL_MODE", "handler")])
        .finish();
    ran.expect_code(2);
    assert!(
        ran.stderr.contains(&format!(
            "the strands server at {} refused the token",
            w.bot.url
        )),
        "{}",
        ran.both()
    );
    assert!(
        ran.stderr.contains("delete_rows did not run"),
        "{}",
        ran.both()
    );
    assert_eq!(w.tool_runs(), 0, "{}", ran.both());
    assert!(w.approvals().is_empty());
    assert!(w.slack.approvals().is_empty(), "nobody was asked");
}

#[test]
fn interrupted_and_killed_while_waiting_a_second_process_waits_on_the_same_request() {
    let Some(dir) = agent_sdks::typescript() else {
        return;
    };
    let w = World::start(dir);
    let sessions = w.sandbox.path().join("sessions").display().to_string();
    let env = [
        ("SESSION_ID", "cleanup-7"),
        ("SESSION_DIR", sessions.as_str()),
    ];
    let first = w.agent("interrupt.mjs", &w.ci, &env);
    let msg = w.slack.wait_for_approval();
    first.kill();
    assert_eq!(w.llm.count(), 1, "the first process asked the model once");
    let second = w.agent("interrupt.mjs", &w.ci, &env);
    // Time to start and ask with the same key; answered before or after
    // that, it is the same request.
    std::thread::sleep(Duration::from_secs(3));
    w.bot
        .click(&msg, "strands_approve", APPROVER)
        .reply
        .expect_prompt_ok("the approve click", &w.bot);
    let ran = second.finish();
    ran.expect_code(0);
    assert!(
        ran.stderr
            .contains("resuming session cleanup-7: 1 interrupt(s) pending"),
        "{}",
        ran.both()
    );
    assert_eq!(w.tool_runs(), 1, "{}", ran.both());
    assert_eq!(w.approvals().len(), 1, "asked once");
    assert_eq!(w.slack.approvals().len(), 1, "one Slack message");
    assert_eq!(
        w.llm.count(),
        2,
        "the model is not asked for the call again after the restart"
    );
}
