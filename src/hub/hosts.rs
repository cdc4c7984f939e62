//! Agent hosts' tool calls, decided by people: Claude Code's `PreToolUse`
//! and `PermissionRequest` hooks (`POST /api/v1/hooks/claude-code`) and its
//! permission prompt tool (`approve_tool_call` of the MCP server) both ask
//! here, so a call means the same whichever way the host asks.
//!
//! A call is judged by the service file's `agent_hosts:`
//! ([`crate::config::service::AgentHosts`]): it passes when one of `pass`
//! holds (conditions on `tool.name`, `tool.args` and `details`); else it
//! becomes an ordinary approval request ([`super::approvals`]) whose
//! `action` is the call and whose rules are the named `policy` — judged on
//! `tool: {name, args}` like a spec's tool call, so the same rule line is on
//! every card — and waits for its decision. Approved → allow (with the
//! approver's edited input, when edited); rejected → deny with the
//! approver's reason; nobody in time, cancelled or failed → deny: a call is
//! never allowed without a person's yes.
//!
//! The request's idempotency key is the host's call (its session and tool
//! use id, or for a `PermissionRequest`, which has none, its prompt and the
//! call's digest): a host that retries, or the hook and the prompt tool
//! both asking about one call, ask once.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::approvals::{Action, ApprovalRequest, ApprovalView, Created, Invalid, OnTimeout};
use super::Hub;
use crate::error::Result;
use crate::template::Templates;

/// Which host asks (recorded in the request's details and labels).
pub const CLAUDE_CODE: &str = "claude-code";

/// The longest command or input shown in a request's title.
const TITLE_INPUT_CHARS: usize = 120;

/// A tool call an agent host is about to make.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostCall {
    /// The host (`claude-code`).
    pub host: String,
    /// The host's own session id.
    pub session: Option<String>,
    /// The prompt the call belongs to, when the host names one.
    pub prompt: Option<String>,
    /// The working directory the host runs in.
    pub cwd: Option<String>,
    /// The tool (`Bash`, `Write`, `mcp__github__create_issue`).
    pub tool: String,
    /// Its input, as the host would run it.
    pub input: Value,
    /// The host's id of this call (`toolu_…`), when it gives one.
    pub call_id: Option<String>,
}

/// What to tell the host.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Run it; `input`: the approver's edited input (run that instead).
    Allow {
        input: Option<Value>,
        /// Why, in a line: who approved, or the condition that passed it.
        reason: String,
    },
    /// Do not run it; the model reads `message`.
    Deny { message: String },
}

/// How a call is handled before anyone is asked.
#[derive(Debug)]
pub enum Judged {
    /// A `pass` condition holds: no one is asked.
    Pass { condition: String },
    /// A person decides: the request made (or found, for the same call).
    Asked(Box<ApprovalView>),
    /// The request could not be made (no such policy, …): denied, saying why.
    Refused(Invalid),
}

impl HostCall {
    /// The rule context's `details`: what the host says about the call.
    fn details(&self) -> BTreeMap<String, String> {
        let mut d = BTreeMap::new();
        d.insert("host".to_string(), self.host.clone());
        if let Some(s) = &self.session {
            d.insert("session".to_string(), s.clone());
        }
        if let Some(c) = &self.cwd {
            d.insert("cwd".to_string(), c.clone());
        }
        d.insert("tool".to_string(), self.tool.clone());
        d
    }

    /// The idempotency key: one request per call of one host session.
    fn key(&self) -> String {
        let session = self.session.as_deref().unwrap_or("-");
        match &self.call_id {
            Some(id) => format!("{}:{session}:{id}", self.host),
            None => {
                let action = self.action();
                format!(
                    "{}:{session}:{}:{}",
                    self.host,
                    self.prompt.as_deref().unwrap_or("-"),
                    action.digest()
                )
            }
        }
    }

    fn action(&self) -> Action {
        Action {
            tool: self.tool.clone(),
            arguments: self.input.clone(),
        }
    }

    /// "Claude Code wants to run Bash: rm -rf build".
    fn title(&self) -> String {
        let shown = match self.input.get("command").and_then(Value::as_str) {
            Some(c) => c.to_string(),
            None => match self
                .input
                .get("file_path")
                .or_else(|| self.input.get("path"))
                .and_then(Value::as_str)
            {
                Some(p) => p.to_string(),
                None => self.input.to_string(),
            },
        };
        let one_line = shown.split_whitespace().collect::<Vec<_>>().join(" ");
        let (cut, more) = crate::model::gate::cut(&one_line, TITLE_INPUT_CHARS);
        format!(
            "{} wants to run {}: {cut}{}",
            host_name(&self.host),
            self.tool,
            if more > 0 { "…" } else { "" }
        )
    }

    fn body(&self) -> String {
        let mut out = String::new();
        if let Some(d) = self.input.get("description").and_then(Value::as_str) {
            out.push_str(d.trim());
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "{} asks before it runs `{}`{}.",
            host_name(&self.host),
            self.tool,
            match &self.cwd {
                Some(c) => format!(" in `{c}`"),
                None => String::new(),
            }
        ));
        out
    }
}

/// A host's name as people read it.
fn host_name(host: &str) -> &str {
    match host {
        CLAUDE_CODE => "Claude Code",
        other => other,
    }
}

impl Hub {
    /// Judges `call` for `requester` (the token's name): passes it, or
    /// asks through an approval request (the same call → the same request).
    pub async fn judge_host_call(&self, call: &HostCall, requester: &str) -> Result<Judged> {
        let hosts = &self.settings.service.agent_hosts;
        let mut root = Map::new();
        let details: Map<String, Value> = call
            .details()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        crate::gate::policy::add_rule_vars(&mut root, &details, Some((&call.tool, &call.input)));
        let ctx = minijinja::Value::from_serialize(&root);
        let templates = Templates::shared();
        for condition in &hosts.pass {
            // A condition that fails to evaluate does not pass the call.
            if templates
                .truthy("agent_hosts: pass", condition, &ctx)
                .unwrap_or(false)
            {
                return Ok(Judged::Pass {
                    condition: condition.clone(),
                });
            }
        }
        let req = ApprovalRequest {
            title: call.title(),
            body: call.body(),
            details: call.details(),
            policy: Some(hosts.policy.clone()),
            timeout_minutes: Some(hosts.timeout_minutes),
            on_timeout: OnTimeout::Reject,
            key: Some(call.key()),
            labels: BTreeMap::from([("host".to_string(), call.host.clone())]),
            action: Some(call.action()),
            editable: hosts.editable,
            ..ApprovalRequest::default()
        };
        Ok(match self.request_approval(&req, requester).await? {
            Ok(Created::New(s)) => {
                let mut v = ApprovalView::of(&s);
                v.created = true;
                Judged::Asked(Box::new(v))
            }
            Ok(Created::Existing(s)) => Judged::Asked(Box::new(ApprovalView::of(&s))),
            Err(e) => Judged::Refused(e),
        })
    }

    /// Waits for request `id` to be decided, at most `limit`, calling
    /// `tick` with the request as it is every `every` while it waits (the
    /// MCP server's progress notifications). Returns the request as it then is.
    pub async fn await_decision<F, Fut>(
        &self,
        id: &str,
        limit: std::time::Duration,
        every: std::time::Duration,
        mut tick: F,
    ) -> Result<ApprovalView>
    where
        F: FnMut(ApprovalView, std::time::Duration) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let started = std::time::Instant::now();
        let every = every.max(std::time::Duration::from_secs(1));
        loop {
            let left = limit.saturating_sub(started.elapsed());
            let step = every.min(left).as_secs().max(1);
            let s = self.wait_approval(id, step).await?;
            let view = ApprovalView::of(&s);
            if view.finished() || started.elapsed() >= limit {
                return Ok(view);
            }
            tick(view, started.elapsed()).await;
        }
    }

    /// The verdict on a judged call: at once when it passed or was refused,
    /// else once its request is decided (or [`Hub::host_wait`] is over,
    /// which denies), `tick`ing every `every` while it waits.
    pub async fn host_verdict<F, Fut>(
        &self,
        judged: &Judged,
        every: std::time::Duration,
        tick: F,
    ) -> Result<Verdict>
    where
        F: FnMut(ApprovalView, std::time::Duration) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        if let Some(v) = judged.settled() {
            return Ok(v);
        }
        let Judged::Asked(view) = judged else {
            return Ok(Verdict::Deny {
                message: "strands could not judge this call".into(),
            });
        };
        let view = self
            .await_decision(&view.id, self.host_wait(), every, tick)
            .await?;
        Ok(verdict(&view))
    }

    /// How long a host call may wait for its decision: the gate's timeout
    /// and a minute for the timer to fire.
    pub fn host_wait(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.settings
                .service
                .agent_hosts
                .timeout_minutes
                .saturating_add(1)
                .saturating_mul(60),
        )
    }
}

impl Judged {
    /// The verdict, when it is known without waiting.
    pub fn settled(&self) -> Option<Verdict> {
        match self {
            Judged::Pass { condition } => Some(Verdict::Allow {
                input: None,
                reason: format!("strands: passes without asking ({condition})"),
            }),
            Judged::Refused(e) => Some(Verdict::Deny {
                message: format!("strands could not ask anyone, so the call is denied: {e}"),
            }),
            Judged::Asked(v) if v.finished() => Some(verdict(v)),
            Judged::Asked(_) => None,
        }
    }
}

/// The verdict of a finished (or given-up-on) request: only an approval
/// allows.
pub fn verdict(v: &ApprovalView) -> Verdict {
    let by = v.decided_by.clone().unwrap_or_else(|| "nobody".into());
    match (v.status.as_str(), v.decision.as_deref()) {
        ("approved", _) => Verdict::Allow {
            input: v.arguments.clone(),
            reason: format!(
                "Approved by {by} in strands{}",
                if v.arguments.is_some() {
                    " (with edits)"
                } else {
                    ""
                }
            ),
        },
        ("rejected", _) => Verdict::Deny {
            message: match &v.reason {
                Some(r) => format!("Rejected by {by}: {r}"),
                None => format!("Rejected by {by} (no reason given)"),
            },
        },
        ("timed_out", _) => Verdict::Deny {
            message: "No one approved this call in time, so it was not run.".into(),
        },
        ("pending", _) => Verdict::Deny {
            message: format!(
                "No decision yet on strands request {}; the call was not run.",
                v.id
            ),
        },
        (other, _) => Verdict::Deny {
            message: format!(
                "The strands request {} is {other}; the call was not run.",
                v.id
            ),
        },
    }
}

/// Claude Code's hook answer for `event` (`PreToolUse` or
/// `PermissionRequest`).
pub fn claude_hook_output(event: &str, v: &Verdict) -> Value {
    match (event, v) {
        ("PermissionRequest", Verdict::Allow { input, .. }) => {
            let mut decision = json!({"behavior": "allow"});
            if let Some(i) = input {
                decision["updatedInput"] = i.clone();
            }
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
        }
        ("PermissionRequest", Verdict::Deny { message }) => json!({
            "hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": message}}
        }),
        (_, Verdict::Allow { input, reason }) => {
            let mut out = json!({"hookEventName": "PreToolUse",
                "permissionDecision": "allow", "permissionDecisionReason": reason});
            if let Some(i) = input {
                out["updatedInput"] = i.clone();
            }
            json!({ "hookSpecificOutput": out })
        }
        (_, Verdict::Deny { message }) => json!({
            "hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": message}
        }),
    }
}

/// Claude Code's permission prompt tool answer: the one JSON text it accepts.
pub fn claude_prompt_tool_output(v: &Verdict) -> Value {
    match v {
        Verdict::Allow { input: Some(i), .. } => json!({"behavior": "allow", "updatedInput": i}),
        Verdict::Allow { input: None, .. } => json!({"behavior": "allow"}),
        Verdict::Deny { message } => json!({"behavior": "deny", "message": message}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(status: &str, reason: Option<&str>, args: Option<Value>) -> ApprovalView {
        ApprovalView {
            id: "r1".into(),
            title: "t".into(),
            status: status.into(),
            decision: None,
            decided_by: Some("carol".into()),
            decided_at: None,
            via: None,
            reason: reason.map(str::to_string),
            requested_by: "ci".into(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            labels: BTreeMap::new(),
            action: None,
            action_digest: None,
            form: None,
            values: None,
            trusted: false,
            arguments: args,
            created: false,
            links: Value::Null,
        }
    }

    #[test]
    fn only_an_approval_allows_and_an_edit_is_what_runs() {
        let edited = json!({"command": "ls"});
        match verdict(&view("approved", None, Some(edited.clone()))) {
            Verdict::Allow { input, .. } => assert_eq!(input, Some(edited)),
            other => panic!("{other:?}"),
        }
        for status in ["rejected", "timed_out", "pending", "failed", "cancelled"] {
            assert!(
                matches!(verdict(&view(status, None, None)), Verdict::Deny { .. }),
                "{status} must deny"
            );
        }
        match verdict(&view("rejected", Some("not on Friday"), None)) {
            Verdict::Deny { message } => assert_eq!(message, "Rejected by carol: not on Friday"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hook_and_prompt_tool_answers_have_claude_codes_shapes() {
        let allow = Verdict::Allow {
            input: Some(json!({"command": "echo edited"})),
            reason: "Approved by carol".into(),
        };
        let deny = Verdict::Deny {
            message: "Rejected by carol: no".into(),
        };
        assert_eq!(
            claude_hook_output("PermissionRequest", &deny),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "Rejected by carol: no"}}})
        );
        assert_eq!(
            claude_hook_output("PreToolUse", &allow)["hookSpecificOutput"]["updatedInput"],
            json!({"command": "echo edited"})
        );
        assert_eq!(
            claude_hook_output("PreToolUse", &deny)["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        assert_eq!(
            claude_prompt_tool_output(&allow),
            json!({"behavior": "allow", "updatedInput": {"command": "echo edited"}})
        );
        assert_eq!(
            claude_prompt_tool_output(&deny),
            json!({"behavior": "deny", "message": "Rejected by carol: no"})
        );
    }

    #[test]
    fn the_same_call_has_the_same_key_and_a_title_people_read() {
        let call = HostCall {
            host: CLAUDE_CODE.into(),
            session: Some("s1".into()),
            tool: "Bash".into(),
            input: json!({"command": "rm -rf\n build", "description": "clean"}),
            ..HostCall::default()
        };
        assert_eq!(call.key(), call.clone().key());
        let mut other = call.clone();
        other.input = json!({"command": "ls"});
        assert_ne!(call.key(), other.key(), "a different call asks anew");
        assert_eq!(call.title(), "Claude Code wants to run Bash: rm -rf build");
        let mut with_id = call.clone();
        with_id.call_id = Some("toolu_1".into());
        assert_eq!(with_id.key(), "claude-code:s1:toolu_1");
    }
}
