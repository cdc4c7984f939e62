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
//!    never trusted; so does an `http_request` or `web_fetch` to a host the
//!    spec does not name (the model chose where to go);
//! 2. tools the human trusted in this run, and calls a live grant allows
//!    (trust within limits: `model::grant`, same workflow and tool, its
//!    argument conditions holding, not expired or revoked): run — unless
//!    the call's approval rule says `trust: never`;
//!    then `hitl.preset` strict/paranoid (every call) and standard
//!    (external tools) ask;
//! 3. `require_approval: true`: ask (when `approval_condition` holds);
//! 4. `require_approval: false`: run;
//! 5. listed in `allowed_tools` (or `*`): run; `allowed_tools` given but not
//!    listed: ask (when `approval_condition` holds);
//! 6. `destructive: true`, or a call that changes state: ask (when
//!    `approval_condition` holds);
//! 7. otherwise (reads): run.
//!
//! MCP tools (`tools.mcp`): an agent that lists a server's id gets every
//! tool the server lists, named `{id}__{tool}`, once [`Toolbox::connect`]
//! has connected to the server (the engine does that when the tool step
//! starts; the connections end with the toolbox). Nobody can tell whether
//! an MCP tool changes state, so rule 6 always asks for them: they run
//! without a human only by `require_approval: false`, `allowed_tools`
//! (`{id}__{tool}` or `*`) or trust.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::grant::Grant;
use crate::model::{ApprovalRequest, CallState, PendingCall, Session};
use crate::provider::{ToolCall, ToolSpec};
use crate::spec::{AgentSpec, McpServerSpec, Spec, ToolPolicy};
use crate::template::Templates;
use crate::tools::{
    self, builtin::Builtin, egress::Egress, http_executor::HttpExecutor, mcp, Tool, ToolEnv,
    ToolResult,
};

/// The tools one agent may call, with their policies and run environment.
pub struct Toolbox {
    tools: BTreeMap<String, (Tool, ToolPolicy)>,
    /// MCP servers the agent uses, with the policy for all their tools;
    /// their tools join `tools` on [`Toolbox::connect`].
    mcp: Vec<(McpServerSpec, ToolPolicy)>,
    allowed: Option<Vec<String>>,
    enable_trust: bool,
    agent: String,
    /// The `hitl.preset`'s demands: every call asks, or these tools ask.
    ask_all: bool,
    ask_tools: Vec<String>,
    pub env: ToolEnv,
}

/// What the policy says about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Run,
    /// Runs because this grant (its id) allows it.
    Granted(String),
    Ask(ApprovalRequest),
    Refuse(String),
}

impl Toolbox {
    /// `installation`: the installation-wide egress allow-list.
    pub fn for_agent(
        spec: &Spec,
        agent: &AgentSpec,
        installation: &[crate::spec::network::Rule],
    ) -> Result<Toolbox> {
        let mut tools = BTreeMap::new();
        let mut servers = Vec::new();
        for t in &agent.tools {
            if let Some(m) = spec.tools.mcp.iter().find(|m| m.id == t.name) {
                servers.push((m.clone(), t.policy.clone()));
                continue;
            }
            // An executor may be named after a native tool (never after a
            // reserved built-in): the spec's own tool wins.
            let tool = if let Some(h) = spec.tools.http_executors.iter().find(|h| h.id == t.name) {
                Tool::Http(HttpExecutor {
                    id: h.id.clone(),
                    base_url: h.base_url.clone(),
                    headers: h.headers.clone(),
                    timeout: h.timeout_secs.map(Duration::from_secs),
                    description: h.description.clone(),
                })
            } else if let Some(b) = Builtin::from_name(&t.name) {
                Tool::Builtin(b)
            } else {
                return Err(Error::Internal(format!(
                    "tool `{}` vanished after validation",
                    t.name
                )));
            };
            tools.insert(t.name.clone(), (tool, t.policy.clone()));
        }
        let timeout = Duration::from_secs(spec.tools.timeout_secs);
        // The hosts the spec names as destinations are reachable although
        // internal; so is what the spec and the installation allow.
        let mut destinations: Vec<String> = spec
            .tools
            .http_executors
            .iter()
            .map(|h| h.base_url.clone())
            .collect();
        destinations.extend(spec.tools.mcp.iter().filter_map(|m| match &m.transport {
            crate::spec::McpTransport::Http { url, .. } => Some(url.clone()),
            crate::spec::McpTransport::Stdio { .. } => None,
        }));
        let egress = std::sync::Arc::new(Egress::new(
            spec.tools.network_allow.clone(),
            &destinations,
            installation.to_vec(),
        ));
        // The tools follow redirects themselves, hop by hop, with their checks.
        let http = crate::tools::egress::client(&egress)
            .map_err(|e| Error::Runtime(format!("cannot build the HTTP client for tools: {e}")))?;
        Ok(Toolbox {
            tools,
            mcp: servers,
            allowed: agent.allowed_tools.clone(),
            enable_trust: agent.enable_trust,
            agent: agent.id.clone(),
            ask_all: spec.hitl.ask_all_tools,
            ask_tools: spec.hitl.ask_tools.clone(),
            env: ToolEnv {
                workspace: spec.tools.workspace.clone(),
                http,
                egress,
                max_bytes: spec.tools.max_output_bytes,
                timeout,
                shell_enabled: spec.tools.shell,
                search: Default::default(),
                clock: crate::clock::system(),
            },
        })
    }

    /// `current_time` reads `clock` (the engine's).
    pub fn with_clock(mut self, clock: crate::clock::SharedClock) -> Toolbox {
        self.env.clock = clock;
        self
    }

    /// The search tools' endpoints and keys (the process's settings).
    pub fn with_search(mut self, search: tools::builtin::SearchSettings) -> Toolbox {
        self.env.search = search;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.mcp.is_empty()
    }

    /// Connects to the agent's MCP servers (starting their processes) and
    /// adds their tools, each under its server's policy. A server that
    /// cannot be reached or listed, or a tool name another tool of the
    /// agent already has, is a runtime error naming the server. The
    /// connections close when the toolbox is dropped.
    pub async fn connect(&mut self) -> Result<()> {
        for (server, policy) in &self.mcp {
            let (conn, listed) =
                mcp::Connection::open(server, self.env.timeout, &self.env.egress).await?;
            for l in listed {
                if self.tools.contains_key(&l.name) {
                    return Err(Error::Runtime(format!(
                        "MCP server `{}` lists `{}`, which would be called `{}` like another tool of agent `{}`",
                        server.id, l.remote, l.name, self.agent
                    )));
                }
                let name = l.name.clone();
                let tool = Tool::Mcp(mcp::McpTool::new(&server.id, l, Some(conn.clone())));
                self.tools.insert(name, (tool, policy.clone()));
            }
        }
        Ok(())
    }

    /// The MCP server a tool name `{id}__{tool}` belongs to, when the agent
    /// uses that server.
    fn mcp_server(&self, name: &str) -> Option<&McpServerSpec> {
        let id = mcp::server_of(name)?;
        self.mcp.iter().map(|(s, _)| s).find(|s| s.id == id)
    }

    /// Checks a human's edited arguments for call `name` against the tool's
    /// schema. For an MCP tool that is not connected, the schema its server
    /// last listed in this process is used (see [`prepare_answer_check`]);
    /// with none, the edit is accepted here and checked against the live
    /// schema before the call runs (a call that does not fit never runs).
    pub fn check_edit(&self, name: &str, args: &Value) -> Result<()> {
        let misfit = |e: String| {
            Error::Usage(format!(
                "edited arguments for `{name}` do not fit its schema: {e}"
            ))
        };
        if let Some(tool) = self.tool(name) {
            return tool.validate(args).map_err(misfit);
        }
        if let Some(server) = self.mcp_server(name) {
            if !args.is_object() {
                return Err(misfit("the arguments must be a JSON object".into()));
            }
            return match mcp::cached_schema(&mcp::fingerprint(server), name) {
                Some(schema) => tools::schema::validate(&schema, args).map_err(misfit),
                None => Ok(()),
            };
        }
        Err(Error::Usage(format!(
            "`{name}` is not one of the agent's tools"
        )))
    }

    /// Makes the schema of MCP tool `name` available to [`check_edit`]
    /// (connecting to its server for a moment when this process has not
    /// listed it). Not an MCP tool, or already known: nothing to do.
    ///
    /// [`check_edit`]: Toolbox::check_edit
    pub async fn prepare_schema(&self, name: &str) -> Result<()> {
        let Some(server) = self.mcp_server(name) else {
            return Ok(());
        };
        let fp = mcp::fingerprint(server);
        if self.tools.contains_key(name) || mcp::cached_schema(&fp, name).is_some() {
            return Ok(());
        }
        let (conn, listed) = mcp::Connection::open(server, self.env.timeout, &self.env.egress)
            .await
            .map_err(|e| {
                Error::Runtime(format!(
                    "cannot check the edited arguments of `{name}`: {e}"
                ))
            })?;
        drop(conn);
        if !listed.iter().any(|l| l.name == name) {
            return Err(Error::Usage(format!(
                "`{name}` is no longer a tool of MCP server `{}`",
                server.id
            )));
        }
        Ok(())
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

    /// The full URL of an `http_request` or `web_fetch` call whose host the
    /// spec does not name (`tools.network.allow`, an executor's or MCP
    /// server's host): the model chose where to go, so a human looks at it
    /// first. `None` for other tools, named hosts, and URLs that do not
    /// parse (those fail when run).
    fn unnamed_destination(&self, tool: &Tool, call: &ToolCall) -> Option<String> {
        if !matches!(
            tool,
            Tool::Builtin(Builtin::HttpRequest | Builtin::WebFetch)
        ) {
            return None;
        }
        let raw = call.arguments.get("url").and_then(Value::as_str)?;
        let url = url::Url::parse(raw.trim()).ok()?;
        let host = url.host()?;
        if self.env.egress.names(&host) {
            return None;
        }
        Some(url.to_string())
    }

    /// Classifies one call. Unknown tools, bad arguments and policy errors
    /// are refusals the model reads; nothing here runs anything.
    pub fn verdict(
        &self,
        session: &Session,
        call: &ToolCall,
        templates: &Templates,
        standing: &Standing<'_>,
    ) -> Verdict {
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
        // A destination the model chose: always a human, whatever the
        // preset, trust or `require_approval: false` say.
        if let Some(url) = self.unnamed_destination(tool, call) {
            return match self.request(tool, policy, call, templates) {
                Ok(mut r) => {
                    r.prompt = format!(
                        "`{}` wants to reach a host the workflow does not name: {} {}",
                        call.name,
                        call.arguments
                            .get("method")
                            .and_then(Value::as_str)
                            .unwrap_or("GET")
                            .to_ascii_uppercase(),
                        crate::model::cut(&url, 2000).0
                    );
                    r.trustable = false;
                    Verdict::Ask(r)
                }
                Err(e) => Verdict::Refuse(format!("not run: the approval request failed ({e})")),
            };
        }
        let never = (standing.trust_never)(call);
        if !never && session.trusted_tools.contains(name) {
            return Verdict::Run;
        }
        if !never && self.trustable(name) {
            if let Some(g) = standing.grants.iter().find(|g| {
                g.allows(
                    standing.now,
                    &session.workflow,
                    &session.id,
                    name,
                    &call.arguments,
                )
            }) {
                return Verdict::Granted(g.id.clone());
            }
        }
        // A rule with `trust: never`: the request offers no trust.
        let ask = |conditional: bool| match ask(conditional) {
            Verdict::Ask(mut r) if never => {
                r.trustable = false;
                Verdict::Ask(r)
            }
            v => v,
        };
        // A preset's demands come before the spec's relaxations.
        if self.ask_all || self.ask_tools.iter().any(|t| t == name) {
            return ask(false);
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
        standing: &Standing<'_>,
    ) -> Vec<PendingCall> {
        calls
            .iter()
            .map(|call| {
                let digest = tools::digest(&call.name, &call.arguments);
                let mut grant = None;
                let (request, state) = match session.denied_calls.get(&digest) {
                    Some(why) => (
                        None,
                        CallState::Done {
                            result: ToolResult::error(format!(
                                "not run: this exact call was already {why}; it is not proposed again. Try a different approach."
                            )),
                        },
                    ),
                    None => match self.verdict(session, call, templates, standing) {
                        Verdict::Run => (
                            None,
                            CallState::Approved {
                                by: "policy".into(),
                                digest: digest.clone(),
                            },
                        ),
                        Verdict::Granted(id) => {
                            let by = format!("grant {id}");
                            grant = Some(id);
                            (
                                None,
                                CallState::Approved {
                                    by,
                                    digest: digest.clone(),
                                },
                            )
                        }
                        Verdict::Ask(r) => (Some(r), CallState::Waiting),
                        Verdict::Refuse(why) => (None, CallState::Done { result: ToolResult::error(why) }),
                    },
                };
                PendingCall {
                    call: call.clone(),
                    digest,
                    request,
                    state,
                    grant,
                }
            })
            .collect()
    }
}

/// What the policy reads besides the spec and the session: the grants
/// of the workflow (live or not: each is checked at `now`, the engine's
/// clock), and whether a call's approval rule forbids trust
/// (`trust: never`), for which neither trust nor a grant lets it run.
pub struct Standing<'a> {
    pub grants: &'a [Grant],
    pub now: DateTime<Utc>,
    pub trust_never: &'a (dyn Fn(&ToolCall) -> bool + Sync),
}

/// Before an answer to a tool-call gate is checked: when it edits an MCP
/// tool's arguments, make sure the tool's schema is at hand (this process
/// may never have connected to the server, e.g. `strands resume` after a
/// pause), so the edit is checked against it before anything is recorded.
pub async fn prepare_answer_check(
    spec: &Spec,
    session: &Session,
    handle: &str,
    answer: &crate::model::Answer,
) -> Result<()> {
    if !matches!(answer.decision, crate::model::Decision::Edit { .. }) {
        return Ok(());
    }
    if session.gates.get(handle).map(|g| g.kind) != Some(crate::spec::GateKind::ToolCall) {
        return Ok(());
    }
    let Some(turn) = &session.agent_turn else {
        return Ok(());
    };
    let pc = match &answer.call {
        Some(id) => turn.calls.iter().find(|c| &c.call.id == id),
        None => {
            let waiting: Vec<&PendingCall> = turn.waiting().collect();
            match waiting[..] {
                [only] => Some(only),
                _ => None,
            }
        }
    };
    // Calls that are not there are for `check_answer` to explain.
    let (Some(pc), Some(agent)) = (pc, spec.agents.get(&turn.agent)) else {
        return Ok(());
    };
    Toolbox::for_agent(spec, agent, &[])?
        .prepare_schema(&pc.call.name)
        .await
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
            CallState::Asking { .. } => "waiting for input its MCP server asked for".to_string(),
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
