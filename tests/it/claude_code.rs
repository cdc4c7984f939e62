//! Claude Code (pinned, `tests/agent-hosts`) as a client of strands: its
//! tool calls decided by people. Claude Code runs headless (`claude -p`)
//! against the fake Anthropic API, which has the model ask for `Bash`
//! `echo … >> marker.txt`; the marker file says whether the call ran, and
//! the model's next request says what Claude Code told it. The MCP clients
//! on the official TypeScript and Python SDKs (`tests/agent-hosts`) are
//! the other hosts.
//!
//! The harness first, with no strands server (one Claude Code run takes
//! about 0.7 s): with nothing configured the call is denied without asking
//! (and listed in `permission_denials`); an HTTP `PreToolUse` hook on a
//! test-local server lets it run once, or denies it with a reason the
//! model reads; a `PermissionRequest` hook may edit the input or deny with
//! the exact message; a permission prompt tool on a test-local MCP server
//! allows, edits or denies; the MCP clients list, call with progress,
//! cancel, and fail on a refused token.
//!
//! Then strands itself: the same decisions made by a person over the API,
//! through the permission prompt tool, the HTTP hook endpoint and the MCP
//! clients' `request_approval` (Slack, the web inbox, keys, roles and the
//! stdio bridge are `mcp_server.rs`'s).

use crate::common::api::{call, make_token};
use crate::common::claude_code::{
    self, bash_marker, http_hook_settings, lines_of, pre_tool_use, Claude, HookServer, McpCall,
    McpClient, McpRun, Sdk,
};
use crate::common::fake_anthropic::{tool_use_id, FakeAnthropic};
use crate::common::fake_mcp::{slowly, text_result, tool, FakeMcp};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The prompt every run is given (the fake does not read it).
const PROMPT: &str = "Append a line to marker.txt.";

/// A fresh working directory for Claude Code; `marker.txt` in it.
pub(super) fn workdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a working directory");
    let marker = dir.path().join("marker.txt");
    (dir, marker)
}

/// The one tool_use the fake answered with, and the tool_result Claude
/// Code sent back for it.
#[track_caller]
pub(super) fn the_result(fake: &FakeAnthropic) -> crate::common::fake_anthropic::ToolResult {
    let ids = fake.tool_use_ids();
    assert_eq!(ids.len(), 1, "one tool_use wanted: {:#?}", fake.requests());
    fake.result_for(&ids[0]).1
}

/// Nothing but the Messages API was asked.
#[track_caller]
pub(super) fn no_strays(fake: &FakeAnthropic) {
    let strays: Vec<String> = fake.strays().iter().map(|r| r.path.clone()).collect();
    assert!(
        strays.is_empty(),
        "requests off the Messages API: {strays:?}"
    );
}

pub(super) fn claude(bin: &Path, fake: &FakeAnthropic, dir: &Path) -> Claude {
    Claude::new(bin, &fake.url, dir, PROMPT)
}

#[test]
fn with_nothing_configured_a_bash_call_is_denied_without_asking() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let run = claude(&bin, &fake, dir.path()).run();
    run.expect_code(0);
    eprintln!("one claude run: {:?}", run.elapsed);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    let denials = run.permission_denials();
    assert_eq!(denials.len(), 1, "{}", run.both());
    assert_eq!(denials[0]["tool_name"], "Bash", "{denials:#?}");
    assert_eq!(
        denials[0]["tool_input"]["command"], "echo ran >> marker.txt",
        "{denials:#?}"
    );
    let result = the_result(&fake);
    assert!(result.is_error, "{result:?}");
    assert!(run.result().starts_with("FINAL: "), "{}", run.both());
    no_strays(&fake);
}

/// A `PreToolUse` HTTP hook answering `answer` for every `Bash` call.
fn hooked(answer: Value) -> (HookServer, Value) {
    let hook = HookServer::start(move |_| answer.clone());
    let settings = http_hook_settings(
        "PreToolUse",
        "Bash",
        &hook.url,
        &[("Authorization", "Bearer hook-token")],
    );
    (hook, settings)
}

#[test]
fn a_pre_tool_use_http_hook_that_allows_lets_the_call_run_once() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let (hook, settings) = hooked(pre_tool_use("allow", "approved by alice"));
    let run = claude(&bin, &fake, dir.path())
        .settings_json(&settings)
        .run();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["ran"], "{}", run.both());
    assert!(run.permission_denials().is_empty(), "{}", run.both());
    // What the hook was sent: the call, named as the model named it.
    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let input = &calls[0].body;
    assert_eq!(input["hook_event_name"], "PreToolUse", "{input:#}");
    assert_eq!(input["tool_name"], "Bash", "{input:#}");
    assert_eq!(input["tool_input"], bash_marker("ran"), "{input:#}");
    assert_eq!(input["tool_use_id"], tool_use_id(1), "{input:#}");
    assert_eq!(
        input["cwd"].as_str().map(Path::new),
        Some(dir.path()),
        "{input:#}"
    );
    assert_eq!(
        calls[0].headers.get("authorization").map(String::as_str),
        Some("Bearer hook-token")
    );
    let result = the_result(&fake);
    assert!(!result.is_error, "{result:?}");
    no_strays(&fake);
}

#[test]
fn a_pre_tool_use_http_hook_that_denies_tells_the_model_why_and_nothing_runs() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let (hook, settings) = hooked(pre_tool_use("deny", "not today"));
    let run = claude(&bin, &fake, dir.path())
        .settings_json(&settings)
        .run();
    run.expect_code(0);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    assert_eq!(hook.calls().len(), 1);
    let result = the_result(&fake);
    assert!(result.content.contains("not today"), "{result:?}");
    assert!(result.is_error, "{result:?}");
    no_strays(&fake);
}

/// A `PermissionRequest` HTTP hook answering `decision` (`{behavior, …}`).
fn permission_hook(decision: Value) -> (HookServer, Value) {
    let answer = json!({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": decision
    }});
    let hook = HookServer::start(move |_| answer.clone());
    let settings = http_hook_settings("PermissionRequest", "Bash", &hook.url, &[]);
    (hook, settings)
}

#[test]
fn a_permission_request_http_hook_may_edit_the_input_or_deny_with_the_exact_message() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    // Allowed with an edited input: the edited command is what runs.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let (hook, settings) =
        permission_hook(json!({"behavior": "allow", "updatedInput": bash_marker("edited")}));
    let run = claude(&bin, &fake, dir.path())
        .settings_json(&settings)
        .run();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["edited"], "{}", run.both());
    // What the hook was sent: no tool_use_id here, suggestions instead.
    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let input = &calls[0].body;
    assert_eq!(input["hook_event_name"], "PermissionRequest", "{input:#}");
    assert_eq!(input["tool_name"], "Bash", "{input:#}");
    assert_eq!(input["tool_input"], bash_marker("ran"), "{input:#}");
    assert!(input.get("tool_use_id").is_none(), "{input:#}");
    assert!(input["permission_suggestions"].is_array(), "{input:#}");

    // Denied: the model reads exactly the message.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let (_hook, settings) =
        permission_hook(json!({"behavior": "deny", "message": "rejected by alice: not today"}));
    let run = claude(&bin, &fake, dir.path())
        .settings_json(&settings)
        .run();
    run.expect_code(0);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    let result = the_result(&fake);
    assert_eq!(result.content, "rejected by alice: not today", "{result:?}");
    assert!(result.is_error, "{result:?}");
    assert_eq!(run.permission_denials().len(), 1, "{}", run.both());
}

/// A test-local MCP server `gate` whose `approve` tool answers every
/// permission prompt with `answer` (one text block, as Claude Code wants).
fn prompt_server(answer: Value) -> FakeMcp {
    FakeMcp::start(
        "gate",
        Some("mcp-token"),
        vec![tool("approve")],
        move |_, _, _| text_result(&answer.to_string()),
    )
}

/// `claude` with the `gate` server and its `approve` tool as the
/// permission prompt tool.
fn prompted(bin: &Path, fake: &FakeAnthropic, dir: &Path, gate: &FakeMcp) -> Claude {
    claude(bin, fake, dir)
        .mcp_http("gate", &gate.url, &[("Authorization", "Bearer mcp-token")])
        .permission_prompt_tool("mcp__gate__approve")
}

#[test]
fn a_permission_prompt_tool_over_http_allows_edits_or_denies() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    // Allowed: runs once, as asked.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let gate = prompt_server(json!({"behavior": "allow", "updatedInput": bash_marker("ran")}));
    let run = prompted(&bin, &fake, dir.path(), &gate).run();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["ran"], "{}", run.both());
    // What the tool was given, with the bearer token of the MCP config.
    let calls = gate.calls();
    assert_eq!(calls.len(), 1, "{:#?}", gate.messages());
    let params = &calls[0].body["params"];
    assert_eq!(params["name"], "approve", "{params:#}");
    let args = &params["arguments"];
    assert_eq!(args["tool_name"], "Bash", "{args:#}");
    assert_eq!(args["input"], bash_marker("ran"), "{args:#}");
    assert_eq!(args["tool_use_id"], tool_use_id(1), "{args:#}");
    assert_eq!(
        calls[0].headers.get("authorization").map(String::as_str),
        Some("Bearer mcp-token")
    );
    // Claude Code 2.1.332 probes `server/discover` (protocol 2026-07-28)
    // first; told the method is unknown, it does the initialize handshake
    // (2025-11-25), and the call comes after it.
    let methods = gate.methods();
    let at = |m: &str| methods.iter().position(|x| x == m);
    assert!(
        at("initialize").is_some() && at("initialize") < at("tools/call"),
        "{methods:?}"
    );

    // Allowed with an edited input: the edit is what runs.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let gate = prompt_server(json!({"behavior": "allow", "updatedInput": bash_marker("edited")}));
    prompted(&bin, &fake, dir.path(), &gate)
        .run()
        .expect_code(0);
    assert_eq!(lines_of(&marker), ["edited"]);

    // Denied: the model reads exactly the message; nothing runs.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let gate =
        prompt_server(json!({"behavior": "deny", "message": "rejected by alice: not today"}));
    let run = prompted(&bin, &fake, dir.path(), &gate).run();
    run.expect_code(0);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    let result = the_result(&fake);
    assert_eq!(result.content, "rejected by alice: not today", "{result:?}");
    assert!(result.is_error, "{result:?}");
    no_strays(&fake);
}

// ---------------------------------------------------------------------------
// The MCP clients (TypeScript and Python SDKs) against a test-local server
// ---------------------------------------------------------------------------

/// A server `local` with a `slow` tool: `steps` progress notifications
/// 150 ms apart, then `done <steps>`.
fn slow_server() -> FakeMcp {
    FakeMcp::start(
        "local",
        Some("mcp-token"),
        vec![tool("slow")],
        |_, params, progress| {
            let steps = params["arguments"]["steps"].as_u64().unwrap_or(1) as usize;
            slowly(
                progress,
                steps,
                Duration::from_millis(150),
                &format!("done {steps}"),
            )
        },
    )
}

pub(super) fn each_client(test: impl Fn(McpClient)) {
    for sdk in [Sdk::TypeScript, Sdk::Python] {
        if let Some(client) = claude_code::mcp_client(sdk) {
            test(client);
        }
    }
}

#[test]
fn the_mcp_clients_list_call_and_see_progress() {
    each_client(|client| {
        let server = slow_server();
        let run = client
            .run(&McpCall::new(&server.url, Some("mcp-token")).call("slow", json!({"steps": 3})));
        assert_eq!(run.code, Some(0), "{:?}: {}", client.sdk, run.both());
        assert_eq!(run.one("connected")["server"], "local", "{}", run.both());
        assert_eq!(run.tools(), ["slow"], "{}", run.both());
        let progress = run.progress();
        assert_eq!(progress.len(), 3, "{}", run.both());
        assert_eq!(progress[2]["message"], "step 3", "{}", run.both());
        assert_eq!(run.result_text(), "done 3", "{}", run.both());
        assert_eq!(run.one("result")["isError"], false, "{}", run.both());
        // Every request carried the token.
        assert!(
            server.messages().iter().all(|m| m.status != 401),
            "{:#?}",
            server.messages()
        );
    });
}

#[test]
fn the_mcp_clients_cancel_a_call_and_fail_on_a_refused_token() {
    each_client(|client| {
        let server = slow_server();
        let run = client.run(
            &McpCall::new(&server.url, Some("mcp-token"))
                .call("slow", json!({"steps": 40}))
                .cancel_after(Duration::from_millis(1500)),
        );
        assert_eq!(run.code, Some(0), "{:?}: {}", client.sdk, run.both());
        run.one("cancelled");
        assert!(run.all("result").is_empty(), "{}", run.both());
        assert!(!run.progress().is_empty(), "{}", run.both());

        let run = client.run(&McpCall::new(&server.url, Some("wrong")));
        assert_eq!(run.code, Some(1), "{:?}: {}", client.sdk, run.both());
        assert!(run.all("tools").is_empty(), "{}", run.both());
    });
}

// ---------------------------------------------------------------------------
// strands: its MCP server (`{base}/mcp`) and its hook endpoint
// (`{base}/api/v1/hooks/claude-code`), the calls decided by a person over
// the API.
// ---------------------------------------------------------------------------

/// How long a test waits for strands, Claude Code or a client.
pub(super) const WAIT: Duration = Duration::from_secs(60);

/// The service file: every Claude Code call asks alice (policy `claude`),
/// except `echo safe …`, which passes without asking.
const SERVICE_FILE: &str = r#"
agent_hosts:
  policy: claude
  pass:
    - "{{ tool.name == 'Bash' and tool.args.command == 'echo safe >> marker.txt' }}"
policies:
  claude:
    - label: Claude Code's calls
      approvers: [alice]
"#;

/// `strands serve` with the service file, tokens for the agent host
/// (ci-bot, an operator), the approver (alice) and root (an admin).
pub(super) struct Strands {
    pub(super) svc: Service,
    /// The store and the service file (kept until the test ends).
    _sandbox: Sandbox,
    _llm: FakeLlm,
    pub(super) ci: String,
    pub(super) alice: String,
    pub(super) root: String,
}

impl Strands {
    pub(super) fn start() -> Strands {
        let llm = FakeLlm::start();
        let sandbox = Sandbox::new();
        let dir = write_workflows(&sandbox, &llm, &[]);
        let file = sandbox.path().join("service.yaml");
        std::fs::write(&file, SERVICE_FILE).expect("write the service file");
        let ci = make_token(&sandbox, "ci-bot", "operator");
        let alice = make_token(&sandbox, "alice", "approver");
        let root = make_token(&sandbox, "root", "admin");
        let cfg = ServeConfig::api(&sandbox, &dir)
            .with("STRANDS_SERVICE_FILE", Some(&file.display().to_string()))
            .with("STRANDS_MCP_PROGRESS_SECONDS", Some("1"));
        Strands {
            svc: Service::launch(cfg),
            _sandbox: sandbox,
            _llm: llm,
            ci,
            alice,
            root,
        }
    }

    pub(super) fn mcp_url(&self) -> String {
        format!("{}/mcp", self.svc.url)
    }

    pub(super) fn hook_url(&self) -> String {
        format!("{}/api/v1/hooks/claude-code", self.svc.url)
    }

    /// Every approval request, newest first (as root reads them).
    pub(super) fn approvals(&self) -> Vec<Value> {
        let r = call(
            &self.svc,
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

    /// Waits until a request is pending and its run stands at the gate;
    /// the newest. (Four looks a second: the service limits each token.)
    #[track_caller]
    pub(super) fn pending(&self) -> Value {
        let until = std::time::Instant::now() + WAIT;
        loop {
            let r = call(
                &self.svc,
                "GET",
                "/api/v1/approvals?status=pending",
                Some(&self.root),
                None,
            );
            assert_eq!(r.status, 200, "{}", r.body);
            let first = r.json()["approvals"]
                .as_array()
                .and_then(|a| a.first().cloned());
            if let Some(asked) = first {
                let id = asked["id"].as_str().expect("an id");
                if self.session(id)["status"] == "paused" {
                    return asked;
                }
            }
            assert!(
                std::time::Instant::now() < until,
                "nothing was asked within {WAIT:?}\n{}",
                self.svc.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    pub(super) fn session(&self, id: &str) -> Value {
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

    /// alice answers request `asked` with `body`.
    #[track_caller]
    pub(super) fn answer(&self, asked: &Value, body: Value) {
        let id = asked["id"].as_str().expect("an id");
        let r = call(
            &self.svc,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(&self.alice),
            Some(&body),
        );
        assert_eq!(r.status, 200, "{}\n{}", r.body, self.svc.log());
    }

    /// Claude Code with strands as its MCP server `strands` and
    /// `approve_tool_call` as its permission prompt tool.
    pub(super) fn prompted(&self, bin: &Path, fake: &FakeAnthropic, dir: &Path) -> Claude {
        let bearer = format!("Bearer {}", self.ci);
        claude(bin, fake, dir)
            .mcp_http("strands", &self.mcp_url(), &[("Authorization", &bearer)])
            .permission_prompt_tool("mcp__strands__approve_tool_call")
            .env("MCP_TOOL_TIMEOUT", "120000")
            .timeout(WAIT * 2)
    }

    /// Claude Code with strands' hook endpoint as its `event` HTTP hook
    /// for `Bash`.
    pub(super) fn hooked(
        &self,
        bin: &Path,
        fake: &FakeAnthropic,
        dir: &Path,
        event: &str,
    ) -> Claude {
        let bearer = format!("Bearer {}", self.ci);
        let settings = http_hook_settings(
            event,
            "Bash",
            &self.hook_url(),
            &[("Authorization", &bearer)],
        );
        claude(bin, fake, dir)
            .settings_json(&settings)
            .timeout(WAIT * 2)
    }
}

/// The request strands made for Claude Code's `Bash` call with `input`.
#[track_caller]
fn asked_for(asked: &Value, input: &Value) {
    assert_eq!(asked["action"]["tool"], "Bash", "{asked:#}");
    assert_eq!(asked["action"]["arguments"], *input, "{asked:#}");
    assert_eq!(asked["requested_by"], "ci-bot", "{asked:#}");
}

#[test]
fn strands_as_the_permission_prompt_tool_a_call_approved_over_the_api_runs_once() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w.prompted(&bin, &fake, dir.path()).spawn();
    let asked = w.pending();
    asked_for(&asked, &bash_marker("ran"));
    assert!(!marker.exists(), "it ran before anyone answered");
    w.answer(&asked, json!({"decision": "approve"}));
    let run = running.wait();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["ran"], "{}", run.both());
    assert!(run.permission_denials().is_empty(), "{}", run.both());
    assert!(!the_result(&fake).is_error);
    // One request, decided by alice over the API.
    let all = w.approvals();
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["status"], "approved", "{all:#?}");
    assert_eq!(all[0]["decided_by"], "alice", "{all:#?}");
    no_strays(&fake);
}

#[test]
fn strands_as_the_permission_prompt_tool_a_rejection_s_reason_reaches_the_model_and_nothing_runs() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w.prompted(&bin, &fake, dir.path()).spawn();
    let asked = w.pending();
    w.answer(
        &asked,
        json!({"decision": "reject", "reason": "not on a Friday"}),
    );
    let run = running.wait();
    run.expect_code(0);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    let result = the_result(&fake);
    assert!(result.is_error, "{result:?}");
    assert!(result.content.contains("not on a Friday"), "{result:?}");
    assert_eq!(run.permission_denials().len(), 1, "{}", run.both());
    assert_eq!(w.approvals()[0]["status"], "rejected");
}

#[test]
fn strands_as_the_permission_prompt_tool_an_edited_call_runs_as_edited() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w.prompted(&bin, &fake, dir.path()).spawn();
    let asked = w.pending();
    w.answer(
        &asked,
        json!({"decision": "edit", "args": bash_marker("edited")}),
    );
    let run = running.wait();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["edited"], "{}", run.both());
}

#[test]
fn strands_as_the_permission_prompt_tool_lets_a_passed_call_run_without_asking() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("safe"));
    let (dir, marker) = workdir();
    let run = w.prompted(&bin, &fake, dir.path()).run();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["safe"], "{}", run.both());
    assert!(w.approvals().is_empty(), "{:#?}", w.approvals());
}

#[test]
fn strands_hook_endpoint_pre_tool_use_approved_runs_once_rejected_tells_the_model_why() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    // Approved.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w.hooked(&bin, &fake, dir.path(), "PreToolUse").spawn();
    let asked = w.pending();
    asked_for(&asked, &bash_marker("ran"));
    w.answer(&asked, json!({"decision": "approve"}));
    let run = running.wait();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["ran"], "{}", run.both());
    // Rejected with a reason.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w.hooked(&bin, &fake, dir.path(), "PreToolUse").spawn();
    let asked = w.pending();
    w.answer(
        &asked,
        json!({"decision": "reject", "reason": "not on a Friday"}),
    );
    let run = running.wait();
    run.expect_code(0);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    let result = the_result(&fake);
    assert!(result.is_error, "{result:?}");
    assert!(result.content.contains("not on a Friday"), "{result:?}");
    // A passed call: allowed at once, nobody asked (the one request is
    // still the first two).
    let fake = FakeAnthropic::calling("Bash", bash_marker("safe"));
    let (dir, marker) = workdir();
    let run = w.hooked(&bin, &fake, dir.path(), "PreToolUse").run();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["safe"], "{}", run.both());
    assert_eq!(w.approvals().len(), 2, "{:#?}", w.approvals());
}

#[test]
fn strands_hook_endpoint_permission_request_approved_runs_rejected_gives_the_reason() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w
        .hooked(&bin, &fake, dir.path(), "PermissionRequest")
        .spawn();
    let asked = w.pending();
    asked_for(&asked, &bash_marker("ran"));
    w.answer(&asked, json!({"decision": "approve"}));
    let run = running.wait();
    run.expect_code(0);
    assert_eq!(lines_of(&marker), ["ran"], "{}", run.both());

    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let running = w
        .hooked(&bin, &fake, dir.path(), "PermissionRequest")
        .spawn();
    let asked = w.pending();
    w.answer(
        &asked,
        json!({"decision": "reject", "reason": "not on a Friday"}),
    );
    let run = running.wait();
    run.expect_code(0);
    assert!(!marker.exists(), "the command ran: {:?}", lines_of(&marker));
    let result = the_result(&fake);
    assert!(result.content.contains("not on a Friday"), "{result:?}");
}

#[test]
fn strands_hook_endpoint_refuses_a_bad_token_and_the_call_does_not_run() {
    let Some(bin) = claude_code::binary() else {
        return;
    };
    let w = Strands::start();
    // The endpoint itself: no token, 401.
    let body = json!({
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": bash_marker("ran"), "tool_use_id": "toolu_x",
        "session_id": "s", "cwd": "/tmp", "permission_mode": "default"
    });
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/hooks/claude-code",
        None,
        Some(&body),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    // Claude Code with a wrong token: nothing asked, nothing run.
    let fake = FakeAnthropic::calling("Bash", bash_marker("ran"));
    let (dir, marker) = workdir();
    let settings = http_hook_settings(
        "PreToolUse",
        "Bash",
        &w.hook_url(),
        &[("Authorization", "Bearer stk_wrong")],
    );
    let run = claude(&bin, &fake, dir.path())
        .settings_json(&settings)
        .run();
    assert!(!marker.exists(), "the command ran: {}", run.both());
    assert!(w.approvals().is_empty(), "{:#?}", w.approvals());
}

/// The arguments of a `request_approval` call: a `Bash` call for alice.
pub(super) fn approval_args(key: &str) -> Value {
    json!({
        "title": "Run a shell command?",
        "body": "The agent wants to append to marker.txt.",
        "details": {"host": "ci"},
        "action": {"tool": "Bash", "arguments": bash_marker("ran")},
        "approvers": ["alice"],
        "timeout_minutes": 5,
        "key": key,
        "labels": {"agent": "mcp-client"}
    })
}

#[test]
fn the_mcp_clients_ask_strands_see_progress_and_get_the_decision() {
    let w = Strands::start();
    each_client(|client| {
        let key = format!("mcp-{:?}", client.sdk);
        let what =
            McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", approval_args(&key));
        let child = client.spawn(&what);
        let asked = w.pending();
        assert_eq!(asked["title"], "Run a shell command?", "{asked:#}");
        assert_eq!(asked["labels"]["agent"], "mcp-client", "{asked:#}");
        // Some waiting, so that progress is seen.
        std::thread::sleep(Duration::from_secs(2));
        w.answer(&asked, json!({"decision": "approve"}));
        let run = McpRun::wait(child);
        assert_eq!(run.code, Some(0), "{:?}: {}", client.sdk, run.both());
        assert_eq!(run.one("connected")["server"], "strands", "{}", run.both());
        let tools = run.tools();
        for t in [
            "request_approval",
            "get_approval",
            "list_my_requests",
            "approve_tool_call",
        ] {
            assert!(tools.iter().any(|n| n == t), "{t} not in {tools:?}");
        }
        assert!(!run.progress().is_empty(), "no progress: {}", run.both());
        let result = run.one("result");
        assert_eq!(result["isError"], false, "{}", run.both());
        let view = &result["structuredContent"];
        assert_eq!(view["id"], asked["id"], "{}", run.both());
        assert_eq!(view["status"], "approved", "{}", run.both());
        assert_eq!(view["decided_by"], "alice", "{}", run.both());
        // The one text block holds the same view as JSON.
        let content = result["content"].as_array().expect("content");
        assert_eq!(content.len(), 1, "{}", run.both());
        let text: Value = serde_json::from_str(run.result_text().as_str())
            .unwrap_or_else(|e| panic!("the text block is not JSON ({e}): {}", run.both()));
        assert_eq!(text["id"], asked["id"], "{text:#}");
    });
}

#[test]
fn the_mcp_clients_get_a_rejection_and_read_their_requests() {
    let w = Strands::start();
    each_client(|client| {
        let key = format!("mcp-reject-{:?}", client.sdk);
        let what =
            McpCall::new(&w.mcp_url(), Some(&w.ci)).call("request_approval", approval_args(&key));
        let child = client.spawn(&what);
        let asked = w.pending();
        w.answer(
            &asked,
            json!({"decision": "reject", "reason": "not on a Friday"}),
        );
        let run = McpRun::wait(child);
        assert_eq!(run.code, Some(0), "{:?}: {}", client.sdk, run.both());
        let view = &run.one("result")["structuredContent"];
        assert_eq!(view["status"], "rejected", "{}", run.both());
        assert_eq!(view["reason"], "not on a Friday", "{}", run.both());
        // get_approval and list_my_requests read it back.
        let id = asked["id"].as_str().expect("an id");
        let run = client
            .run(&McpCall::new(&w.mcp_url(), Some(&w.ci)).call("get_approval", json!({"id": id})));
        assert_eq!(
            run.one("result")["structuredContent"]["status"],
            "rejected",
            "{}",
            run.both()
        );
        let run = client.run(&McpCall::new(&w.mcp_url(), Some(&w.ci)).call(
            "list_my_requests",
            json!({"status": "rejected", "limit": 10}),
        ));
        assert!(run.result_text().contains(id), "{}", run.both());
    });
}

#[test]
fn the_mcp_endpoint_refuses_a_missing_or_wrong_token() {
    let w = Strands::start();
    each_client(|client| {
        let run = client.run(&McpCall::new(&w.mcp_url(), Some("stk_wrong")));
        assert_eq!(run.code, Some(1), "{:?}: {}", client.sdk, run.both());
        let run = client.run(&McpCall::new(&w.mcp_url(), None));
        assert_eq!(run.code, Some(1), "{:?}: {}", client.sdk, run.both());
    });
}
