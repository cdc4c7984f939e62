//! Agent steps that call tools, and the approval policy that decides which
//! calls wait for a human.
//!
//! The loop: ask the model → classify each requested call (run now, ask a
//! human, refuse) → pause while any call waits → run the approved calls →
//! give the model every outcome (a rejection reads "denied by WHO: REASON")
//! → ask the model again, up to the agent's turn limit. Everything is in the
//! session: a resume never calls the model again for a turn it already has,
//! never runs a finished call again, and a call that was running when the
//! process died is not run a second time (at most once).
//!
//! Policy (first match wins; every error denies — fail closed):
//! 1. `shell`, and tools negated in `allowed_tools` (`!name`): always ask,
//!    never trusted;
//! 2. tools the human trusted in this run: run;
//! 3. `require_approval: true`: ask (when `approval_condition` holds);
//! 4. `require_approval: false`: run;
//! 5. listed in `allowed_tools` (or `*`): run; `allowed_tools` given but not
//!    listed: ask (when `approval_condition` holds);
//! 6. `destructive: true`, or a call that changes state: ask (when
//!    `approval_condition` holds);
//! 7. otherwise (reads): run.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::provider::{ToolCall, ToolSpec};
use crate::session::{ApprovalRequest, CallState, PendingCall, Session};
use crate::spec::{AgentSpec, Spec, ToolPolicy};
use crate::template::Templates;
use crate::tools::{
    self, builtin::Builtin, http_executor::HttpExecutor, Tool, ToolEnv, ToolResult,
};

/// The tools one agent may call, with their policies and run environment.
pub struct Toolbox {
    tools: BTreeMap<String, (Tool, ToolPolicy)>,
    allowed: Option<Vec<String>>,
    enable_trust: bool,
    agent: String,
    pub env: ToolEnv,
}

/// What the policy says about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Run,
    Ask(ApprovalRequest),
    Refuse(String),
}

impl Toolbox {
    pub fn for_agent(spec: &Spec, agent: &AgentSpec) -> Result<Toolbox> {
        let mut tools = BTreeMap::new();
        for t in &agent.tools {
            let tool = if let Some(b) = Builtin::from_name(&t.name) {
                Tool::Builtin(b)
            } else if let Some(h) = spec.tools.http_executors.iter().find(|h| h.id == t.name) {
                Tool::Http(HttpExecutor {
                    id: h.id.clone(),
                    base_url: h.base_url.clone(),
                    headers: h.headers.clone(),
                    timeout: h.timeout_secs.map(Duration::from_secs),
                    description: h.description.clone(),
                })
            } else {
                return Err(Error::Internal(format!(
                    "tool `{}` vanished after validation",
                    t.name
                )));
            };
            tools.insert(t.name.clone(), (tool, t.policy.clone()));
        }
        let timeout = Duration::from_secs(spec.tools.timeout_secs);
        // The tools follow redirects themselves, hop by hop, with their checks.
        let http = crate::tools::builtin::http_client()
            .map_err(|e| Error::Runtime(format!("cannot build the HTTP client for tools: {e}")))?;
        Ok(Toolbox {
            tools,
            allowed: agent.allowed_tools.clone(),
            enable_trust: agent.enable_trust,
            agent: agent.id.clone(),
            env: ToolEnv {
                workspace: spec.tools.workspace.clone(),
                http,
                max_bytes: spec.tools.max_output_bytes,
                timeout,
                shell_enabled: spec.tools.shell,
            },
        })
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|(t, _)| t.spec()).collect()
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name).map(|(t, _)| t)
    }

    fn negated(&self, name: &str) -> bool {
        self.allowed
            .as_ref()
            .is_some_and(|l| l.iter().any(|e| e.strip_prefix('!') == Some(name)))
    }

    fn allow_listed(&self, name: &str) -> bool {
        self.allowed
            .as_ref()
            .is_some_and(|l| l.iter().any(|e| e == name || e == "*"))
    }

    /// Whether a `trust` answer may approve this tool for the rest of the run.
    pub fn trustable(&self, name: &str) -> bool {
        self.enable_trust && name != Builtin::Shell.name() && !self.negated(name)
    }

    /// Classifies one call. Unknown tools, bad arguments and policy errors
    /// are refusals the model reads; nothing here runs anything.
    pub fn verdict(&self, session: &Session, call: &ToolCall, templates: &Templates) -> Verdict {
        let Some((tool, policy)) = self.tools.get(&call.name) else {
            let names: Vec<&String> = self.tools.keys().collect();
            return Verdict::Refuse(format!(
                "unknown tool `{}`; available: {names:?}",
                call.name
            ));
        };
        if let Err(e) = tool.validate(&call.arguments) {
            return Verdict::Refuse(format!("invalid arguments for `{}`: {e}", call.name));
        }
        let ask = |conditional: bool| -> Verdict {
            if conditional {
                if let Some(cond) = &policy.approval_condition {
                    let ctx = self.context(call);
                    match templates.truthy(
                        &format!("approval_condition of `{}`", call.name),
                        cond,
                        &ctx,
                    ) {
                        Ok(false) => return Verdict::Run,
                        Ok(true) => {}
                        Err(e) => {
                            return Verdict::Refuse(format!(
                                "not run: the approval policy failed ({e})"
                            ))
                        }
                    }
                }
            }
            match self.request(tool, policy, call, templates) {
                Ok(r) => Verdict::Ask(r),
                Err(e) => Verdict::Refuse(format!("not run: the approval request failed ({e})")),
            }
        };
        let name = call.name.as_str();
        if name == Builtin::Shell.name() || self.negated(name) {
            return ask(false);
        }
        if session.trusted_tools.contains(name) {
            return Verdict::Run;
        }
        match policy.require_approval {
            Some(true) => return ask(true),
            Some(false) => return Verdict::Run,
            None => {}
        }
        if self.allowed.is_some() {
            return if self.allow_listed(name) {
                Verdict::Run
            } else {
                ask(true)
            };
        }
        if policy.destructive || tool.changes_state(&call.arguments) {
            return ask(true);
        }
        Verdict::Run
    }

    fn context(&self, call: &ToolCall) -> minijinja::Value {
        minijinja::Value::from_serialize(json!({
            "args": call.arguments,
            "tool": call.name,
            "agent": self.agent,
        }))
    }

    fn request(
        &self,
        tool: &Tool,
        policy: &ToolPolicy,
        call: &ToolCall,
        templates: &Templates,
    ) -> Result<ApprovalRequest> {
        let meta = tool.meta(&call.arguments);
        let description = tool.describe(&call.arguments);
        let prompt = match &policy.approval_prompt {
            Some(t) => templates.render(
                &format!("approval_prompt of `{}`", call.name),
                t,
                &self.context(call),
            )?,
            None => format!("Approve `{}`: {description}?", call.name),
        };
        let mut risk = policy.risk.unwrap_or(meta.risk);
        if policy.destructive {
            risk = risk.max(tools::Risk::High);
        }
        Ok(ApprovalRequest {
            prompt,
            description,
            reversible: policy.reversible.unwrap_or(meta.reversible) && !policy.destructive,
            risk,
            trustable: self.trustable(&call.name),
        })
    }

    /// Turns the model's calls into pending calls: policy verdicts, and the
    /// same call a human already rejected in this run refused without asking.
    pub fn classify(
        &self,
        session: &Session,
        calls: &[ToolCall],
        templates: &Templates,
    ) -> Vec<PendingCall> {
        calls
            .iter()
            .map(|call| {
                let digest = tools::digest(&call.name, &call.arguments);
                let (request, state) = match session.denied_calls.get(&digest) {
                    Some(why) => (
                        None,
                        CallState::Done {
                            result: ToolResult::error(format!(
                                "not run: this exact call was already {why}; it is not proposed again. Try a different approach."
                            )),
                        },
                    ),
                    None => match self.verdict(session, call, templates) {
                        Verdict::Run => (
                            None,
                            CallState::Approved {
                                by: "policy".into(),
                                digest: digest.clone(),
                            },
                        ),
                        Verdict::Ask(r) => (Some(r), CallState::Waiting),
                        Verdict::Refuse(why) => (None, CallState::Done { result: ToolResult::error(why) }),
                    },
                };
                PendingCall {
                    call: call.clone(),
                    digest,
                    request,
                    state,
                }
            })
            .collect()
    }
}

/// Arguments from `--edit-args`: a plain object, or `{name, arguments}`
/// whose name must be the call's own tool — an edit never changes which
/// tool runs.
pub fn edited_arguments(call: &ToolCall, edit: &Value) -> Result<Value> {
    if let Value::Object(o) = edit {
        let named = o.get("name").or_else(|| o.get("tool"));
        if let (Some(name), Some(args)) = (named, o.get("arguments")) {
            if name.as_str() != Some(call.name.as_str()) {
                return Err(Error::Usage(format!(
                    "an edit cannot change which tool runs: call {} is `{}`, the edit names {name}",
                    call.id, call.name
                )));
            }
            return Ok(args.clone());
        }
        if let Some(name) = named {
            if name.as_str() != Some(call.name.as_str()) && !o.contains_key("arguments") {
                // `name` may be a genuine argument of the tool; only refuse
                // when it names another tool's call shape.
                if Builtin::from_name(name.as_str().unwrap_or_default()).is_some() {
                    return Err(Error::Usage(format!(
                        "an edit cannot change which tool runs: call {} is `{}`, the edit names {name}",
                        call.id, call.name
                    )));
                }
            }
        }
        return Ok(edit.clone());
    }
    Err(Error::Usage(
        "--edit-args takes a JSON object of arguments".into(),
    ))
}

/// Text listing the calls of a turn, for the gate's context.
pub fn describe_calls(calls: &[PendingCall]) -> String {
    let mut out = String::new();
    for c in calls {
        let state = match &c.state {
            CallState::Waiting => "WAITING FOR APPROVAL".to_string(),
            CallState::Approved { by, .. } => format!("approved by {by}"),
            CallState::Rejected { by, .. } => format!("rejected by {by}"),
            CallState::Running => "running".to_string(),
            CallState::Done { .. } => "done".to_string(),
        };
        out.push_str(&format!("[{}] {} — {}\n", c.call.id, c.call.name, state));
        if let Some(r) = &c.request {
            out.push_str(&format!(
                "  {}\n  what: {}\n  risk: {}, {}\n",
                r.prompt,
                r.description,
                r.risk.as_str(),
                if r.reversible {
                    "reversible"
                } else {
                    "cannot be undone"
                }
            ));
        }
        let args = serde_json::to_string_pretty(&c.call.arguments).unwrap_or_default();
        for line in args.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}
