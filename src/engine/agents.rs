//! Agent steps: model requests (several at once, up to `max_parallel`),
//! the tool-calling loop, tool-call gates, and running approved calls at
//! most once (a call whose MCP server asks a person something pauses at
//! its question's gate and is made again once answered: `super::elicit`).
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::task::JoinSet;

use super::{context, notes, pattern, tools, Engine};
use crate::audit::{AuditEvent, AuditKind};
use crate::channel::{HumanChannel, Progress};
use crate::error::{Error, Result};
use crate::gate;
use crate::model::{AgentTurn, CallState, Position, RecordKind, Session, Status, StepRecord};
use crate::provider::{ChatRequest, Message, Provider, ProviderConfig, ProviderKind};
use crate::spec::{AgentStep, Spec};

impl Engine<'_> {
    pub(super) fn provider(&mut self, spec: &Spec, agent: &str) -> Result<(Provider, String)> {
        let a = spec
            .agents
            .get(agent)
            .ok_or_else(|| Error::Internal(format!("agent `{agent}` vanished")))?;
        let (config, model) = provider_config(spec, a, &self.settings)?;
        if let Some(m) = &self.model {
            return Ok((m.clone(), model));
        }
        let key = (config.kind, config.host.clone(), config.region.clone());
        if let Some(p) = self.providers.get(&key) {
            return Ok((p.clone(), model));
        }
        let p = Provider::new(&config)?;
        self.providers.insert(key, p.clone());
        Ok((p, model))
    }

    pub(super) fn request(
        &mut self,
        spec: &Spec,
        session: &Session,
        step: &AgentStep,
        position: &Position,
    ) -> Result<(Provider, ChatRequest)> {
        let agent = spec
            .agents
            .get(&step.agent)
            .ok_or_else(|| Error::Internal(format!("agent `{}` vanished", step.agent)))?;
        let ctx = context::build(spec, session, Some(&step.vars), Some(position));
        let system = self.templates.render_or_verbatim(
            &format!("the prompt of agent `{}`", agent.id),
            &agent.prompt,
            &ctx,
        )?;
        let system = notes::with_notes(spec, session, system);
        let input = match &step.input {
            Some(t) => self
                .templates
                .render(&format!("the input of {position}"), t, &ctx)?,
            None => pattern::last_response_at(&session.state, Some(position))
                .unwrap_or_else(|| system.clone()),
        };
        let (provider, model) = self.provider(spec, &step.agent)?;
        Ok((
            provider,
            ChatRequest {
                agent: agent.id.clone(),
                model,
                system,
                messages: vec![Message::user(input)],
                temperature: agent.temperature.or(spec.runtime.temperature),
                top_p: agent.top_p.or(spec.runtime.top_p),
                max_tokens: agent.max_tokens.or(spec.runtime.max_tokens),
                tools: Vec::new(),
            },
        ))
    }

    /// Marks model requests as sent, durably, before they go out. A
    /// position already marked was in flight when an earlier process
    /// stopped: its request is sent again (at-least-once), which is
    /// audited and reported.
    pub(super) async fn mark_in_flight<C: HumanChannel>(
        &mut self,
        session: &mut Session,
        positions: &[String],
        channel: &mut C,
    ) -> Result<()> {
        let mut resent = Vec::new();
        for p in positions {
            if !session.in_flight.insert(p.clone()) {
                let mut ev = AuditEvent::new(
                    AuditKind::Resent,
                    &session.id,
                    &session.workflow,
                    self.clock.now(),
                );
                ev.detail = Some(format!(
                    "{p}: model request re-sent after a crash (the earlier one may have reached the model)"
                ));
                session.audit.push(ev);
                resent.push(p.clone());
            }
        }
        self.save(session).await?;
        for position in resent {
            channel
                .progress(session, &Progress::Resent { position })
                .await;
        }
        Ok(())
    }

    pub(super) fn check_budget(spec: &Spec, session: &Session) -> Result<()> {
        if let Some(max) = spec.runtime.budget_max_tokens {
            let used = session.total_usage().total();
            if used >= max {
                return Err(Error::Budget(format!(
                    "{used} tokens used, runtime.budgets.max_tokens is {max}"
                )));
            }
        }
        Ok(())
    }

    /// Runs ready agent steps, at most `max_parallel` at a time, recording
    /// and checkpointing each as it finishes.
    pub(super) async fn run_agents<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        work: Vec<pattern::Work<'_>>,
        channel: &mut C,
    ) -> Result<()> {
        Self::check_budget(spec, session)?;
        // Steps whose agent has tools run one at a time through the tool
        // loop; a step interrupted mid-conversation continues first.
        let has_tools = |w: &&pattern::Work<'_>| match &w.step.tools {
            Some(tools) => !tools.is_empty(),
            None => spec
                .agents
                .get(&w.step.agent)
                .is_some_and(|a| !a.tools.is_empty()),
        };
        let resumed = session
            .agent_turn
            .as_ref()
            .and_then(|t| work.iter().find(|w| w.position == t.position));
        if let Some(w) = resumed.or_else(|| work.iter().find(has_tools)) {
            use tracing::Instrument as _;
            let span = step_span(&w.position, &w.step.agent);
            // Boxed: the tool loop's future is deep (MCP clients, HTTP
            // tools); on the heap, the futures around it need not nest it.
            return Box::pin(self.run_tool_step(spec, session, w, channel))
                .instrument(span)
                .await;
        }
        let mut queue = Vec::new();
        // Each step's input, for its note.
        let mut inputs = BTreeMap::new();
        for w in &work {
            let (provider, req) = self.request(spec, session, &w.step, &w.position)?;
            if let Some(Message::User { content }) = req.messages.first() {
                inputs.insert(w.position.to_string(), content.clone());
            }
            queue.push((w.position.clone(), provider, req));
        }
        queue.reverse();
        let mut running: JoinSet<(Position, String, u64, Result<crate::provider::ChatResponse>)> =
            JoinSet::new();
        let limit = spec.runtime.max_parallel.max(1);
        loop {
            let mut batch = Vec::new();
            while running.len() + batch.len() < limit {
                let Some(next) = queue.pop() else {
                    break;
                };
                batch.push(next);
            }
            if !batch.is_empty() {
                let positions: Vec<String> = batch.iter().map(|(p, _, _)| p.to_string()).collect();
                self.mark_in_flight(session, &positions, channel).await?;
            }
            for (position, provider, req) in batch {
                use tracing::Instrument as _;
                trace_request(spec, &req);
                let span = step_span(&position, &req.agent);
                running.spawn(
                    async move {
                        let started = Instant::now();
                        let res = provider.complete(&req).await;
                        (
                            position,
                            req.agent,
                            started.elapsed().as_millis() as u64,
                            res,
                        )
                    }
                    .instrument(span),
                );
            }
            // The calls race the operator's cancel: on a cancel they are
            // abandoned (dropped unread) and the run stops here.
            let id = session.id.clone();
            let joined = tokio::select! {
                j = running.join_next() => j,
                c = self.cancel_signal(&id) => {
                    c?;
                    running.abort_all();
                    let what = session.in_flight.iter().cloned().collect::<Vec<_>>().join(", ");
                    return Err(self.abandon_call(session, &what).await?);
                }
            };
            let Some(joined) = joined else {
                break;
            };
            let (position, agent, millis, res) =
                joined.map_err(|e| Error::Internal(format!("model call task failed: {e}")))?;
            let resp = res?;
            trace_response(spec, &agent, &resp);
            let outcome = resp.text.clone();
            session.in_flight.remove(&position.to_string());
            session
                .usage
                .entry(agent.clone())
                .or_default()
                .add(resp.usage);
            pattern::record(
                spec,
                &mut session.state,
                &position,
                StepRecord {
                    agent: Some(agent.clone()),
                    response: resp.text,
                    kind: RecordKind::Agent,
                    finished_at: self.clock.now(),
                },
            )?;
            session.events.push(crate::model::EventKind::StepDone {
                position: position.to_string(),
                agent: agent.clone(),
                tokens: resp.usage.total(),
                millis,
            });
            // While other requests are out, the next durable write may be
            // a long way off: a crash meanwhile must not run this step again.
            let durability = if running.is_empty() {
                step_done(spec)
            } else {
                crate::store::Durability::Now
            };
            self.save_with(session, durability).await?;
            notes::note_step(
                spec,
                session,
                self.clock.now(),
                notes::StepNote {
                    agent: &agent,
                    input: inputs
                        .get(&position.to_string())
                        .map(String::as_str)
                        .unwrap_or_default(),
                    tools: Vec::new(),
                    outcome: &outcome,
                },
            );
            channel
                .progress(
                    session,
                    &Progress::StepDone {
                        position: position.to_string(),
                        agent,
                        tokens: resp.usage.total(),
                        millis,
                    },
                )
                .await;
            if let Some(max) = spec.runtime.budget_max_tokens {
                let used = session.total_usage().total();
                if used > max {
                    return Err(Error::Budget(format!(
                        "{used} tokens used, runtime.budgets.max_tokens is {max}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// One agent step with tools, from wherever its conversation stands to
    /// its answer — or to a tool-call gate, leaving the session paused.
    pub(super) async fn run_tool_step<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        w: &pattern::Work<'_>,
        channel: &mut C,
    ) -> Result<()> {
        let agent = spec
            .agents
            .get(&w.step.agent)
            .ok_or_else(|| Error::Internal(format!("agent `{}` vanished", w.step.agent)))?;
        // A step's `tool_overrides` (or `worker_template.tools`) replace the
        // agent's tools for this step only.
        let overridden;
        let agent = match &w.step.tools {
            Some(tools) => {
                overridden = crate::spec::AgentSpec {
                    tools: tools.clone(),
                    ..agent.clone()
                };
                &overridden
            }
            None => agent,
        };
        let mut toolbox = tools::Toolbox::for_agent(spec, agent, &self.settings.network_allow)?
            .with_search(self.settings.search.clone())
            .with_clock(Arc::clone(&self.clock));
        toolbox.connect().await?;
        let (provider, first) = self.request(spec, session, &w.step, &w.position)?;
        if session.agent_turn.as_ref().map(|t| &t.position) != Some(&w.position) {
            session.agent_turn = Some(AgentTurn {
                position: w.position.clone(),
                agent: agent.id.clone(),
                system: first.system.clone(),
                messages: first.messages.clone(),
                turns: 0,
                calls: Vec::new(),
            });
            self.save(session).await?;
        }
        let started = Instant::now();
        loop {
            // 1. The latest turn's calls: wait for humans, then run what was approved.
            let pending = session
                .agent_turn
                .as_ref()
                .map(|t| !t.calls.is_empty())
                .unwrap_or(false);
            if pending {
                if self.open_tool_gate(spec, session, &w.position).await? {
                    return Ok(());
                }
                self.run_approved_calls(spec, session, &toolbox).await?;
                // A call's MCP server asked a person something.
                if session.status == Status::Paused {
                    return Ok(());
                }
            }
            // 2. Compact a conversation that grew past its budget, then ask the model.
            if let Some(policy) = &spec.context.compaction {
                self.compact(spec, session, &provider, &first.model, policy)
                    .await?;
            }
            Self::check_budget(spec, session)?;
            let turn = session
                .agent_turn
                .as_mut()
                .ok_or_else(|| Error::Internal("tool step lost its conversation".into()))?;
            if turn.turns >= agent.max_turns {
                return Err(Error::Runtime(format!(
                    "agent `{}` reached its turn limit ({}) at {} without answering",
                    agent.id, agent.max_turns, w.position
                )));
            }
            let mut req = first.clone();
            req.system = turn.system.clone();
            req.messages = turn.messages.clone();
            req.tools = toolbox.specs();
            let at = w.position.to_string();
            self.mark_in_flight(session, std::slice::from_ref(&at), channel)
                .await?;
            trace_request(spec, &req);
            let id = session.id.clone();
            let resp = tokio::select! {
                r = provider.complete(&req) => r?,
                c = self.cancel_signal(&id) => {
                    c?;
                    return Err(self.abandon_call(session, &at).await?);
                }
            };
            trace_response(spec, &agent.id, &resp);
            session.in_flight.remove(&at);
            let turn = session
                .agent_turn
                .as_mut()
                .ok_or_else(|| Error::Internal("tool step lost its conversation".into()))?;
            turn.turns += 1;
            session
                .usage
                .entry(agent.id.clone())
                .or_default()
                .add(resp.usage);
            let turn = session
                .agent_turn
                .as_mut()
                .ok_or_else(|| Error::Internal("tool step lost its conversation".into()))?;
            if resp.tool_calls.is_empty() {
                let called = notes::tools_called(&turn.messages);
                session.agent_turn = None;
                pattern::record(
                    spec,
                    &mut session.state,
                    &w.position,
                    StepRecord {
                        agent: Some(agent.id.clone()),
                        response: resp.text.clone(),
                        kind: RecordKind::Agent,
                        finished_at: self.clock.now(),
                    },
                )?;
                session.events.push(crate::model::EventKind::StepDone {
                    position: w.position.to_string(),
                    agent: agent.id.clone(),
                    tokens: session.usage.get(&agent.id).map(|u| u.total()).unwrap_or(0),
                    millis: started.elapsed().as_millis() as u64,
                });
                self.save_with(session, step_done(spec)).await?;
                let input = match first.messages.first() {
                    Some(Message::User { content }) => content.as_str(),
                    _ => "",
                };
                notes::note_step(
                    spec,
                    session,
                    self.clock.now(),
                    notes::StepNote {
                        agent: &agent.id,
                        input,
                        tools: called,
                        outcome: &resp.text,
                    },
                );
                channel
                    .progress(
                        session,
                        &Progress::StepDone {
                            position: w.position.to_string(),
                            agent: agent.id.clone(),
                            tokens: session.usage.get(&agent.id).map(|u| u.total()).unwrap_or(0),
                            millis: started.elapsed().as_millis() as u64,
                        },
                    )
                    .await;
                return Ok(());
            }
            if turn.turns >= agent.max_turns {
                // Its results could never reach the model: run and ask nothing.
                return Err(Error::Runtime(format!(
                    "agent `{}` reached its turn limit ({}) at {} still calling tools",
                    agent.id, agent.max_turns, w.position
                )));
            }
            turn.messages.push(Message::Assistant {
                content: resp.text.clone(),
                tool_calls: resp.tool_calls.clone(),
            });
            let snapshot = session.clone();
            // Grants are read as stored now: a revocation takes effect at
            // the next call.
            let grants = self.store.grants().await?;
            let never = |call: &crate::model::ToolCall| {
                self.trust_never(spec, &snapshot, Some(&w.position), call)
            };
            let standing = tools::Standing {
                grants: &grants,
                now: self.clock.now(),
                trust_never: &never,
            };
            let calls = toolbox.classify(&snapshot, &resp.tool_calls, self.templates, &standing);
            if let Some(turn) = session.agent_turn.as_mut() {
                turn.calls = calls;
            }
            self.save(session).await?;
        }
    }

    /// Opens the tool-call gate when any call waits for a human. True when
    /// the session is now paused.
    pub(super) async fn open_tool_gate(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        position: &Position,
    ) -> Result<bool> {
        let Some(turn) = session.agent_turn.as_ref() else {
            return Ok(false);
        };
        let waiting = turn.waiting().count();
        if waiting == 0 {
            return Ok(false);
        }
        // Each call is one decision: tool gates take no quorum.
        let mut opened = self.call_gate(
            spec,
            session,
            ("tools", crate::spec::GateKind::ToolCall),
            position.clone(),
            (
                format!(
                    "agent `{}` asks to run {waiting} tool call{} that need{} approval",
                    turn.agent,
                    if waiting == 1 { "" } else { "s" },
                    if waiting == 1 { "s" } else { "" }
                ),
                tools::describe_calls(&turn.calls),
            ),
        );
        self.tool_rule(spec, session, &mut opened);
        self.add_gate(session, opened, None);
        session.status = Status::Paused;
        self.save(session).await?;
        Ok(true)
    }

    /// `security.approvers` rules on a tool-call gate: each waiting call
    /// is judged on its own (`tool` = its name and arguments), and the gate
    /// takes the strictest rule chosen — the most approvals, the earliest
    /// listed on a tie — so one gate asks for every call what the
    /// strictest of them needs. A rule decides the approvers here; quorum,
    /// timeout and `require_reason` stay the tool gate's: one approver
    /// decides each call, tool calls wait without a timeout, and the rooms
    /// record a call's rejection at once, without asking a reason.
    fn tool_rule(&self, spec: &Spec, session: &Session, opened: &mut crate::model::OpenGate) {
        let rules = &spec.approval.rules;
        let Some(turn) = session.agent_turn.as_ref().filter(|_| !rules.is_empty()) else {
            return;
        };
        let base = opened.approvals_required;
        let choices = turn
            .waiting()
            .filter_map(|c| {
                let ctx = context::for_rules(spec, session, Some(&opened.position), Some(&c.call));
                gate::policy::choose(rules, self.templates, &ctx, base)
            })
            .collect();
        if let Some(choice) = gate::policy::strictest_of(choices) {
            let rule = gate::policy::ApprovalRule {
                quorum: None,
                timeout: None,
                require_reason: None,
                ..choice.rule.clone()
            };
            gate::policy::apply(
                opened,
                &gate::policy::Choice {
                    rule: &rule,
                    ..choice
                },
            );
        }
    }

    /// Whether the `security.approvers` rule that decides `call` says
    /// `trust: never`. A condition that fails to evaluate counts as
    /// forbidding (fail closed), whatever rule would then apply.
    pub(super) fn trust_never(
        &self,
        spec: &Spec,
        session: &Session,
        at: Option<&Position>,
        call: &crate::model::ToolCall,
    ) -> bool {
        let rules = &spec.approval.rules;
        if !rules.iter().any(|r| r.trust_never) {
            return false;
        }
        let ctx = context::for_rules(spec, session, at, Some(call));
        match gate::policy::choose(rules, self.templates, &ctx, 1) {
            Some(choice) => choice.rule.trust_never || choice.failed.is_some(),
            None => false,
        }
    }

    /// Runs the approved calls of the latest turn, in order, each at most
    /// once, then hands every outcome to the conversation.
    pub(super) async fn run_approved_calls(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        toolbox: &tools::Toolbox,
    ) -> Result<()> {
        let count = session
            .agent_turn
            .as_ref()
            .map(|t| t.calls.len())
            .unwrap_or(0);
        for i in 0..count {
            let Some(pc) = session
                .agent_turn
                .as_ref()
                .and_then(|t| t.calls.get(i))
                .cloned()
            else {
                continue;
            };
            let result = match &pc.state {
                CallState::Done { .. } => continue,
                CallState::Waiting => return Err(Error::Internal("a waiting call reached execution".into())),
                CallState::Running => crate::tools::ToolResult::error(
                    "interrupted while running (the process stopped); not run again — it may or may not have taken effect",
                ),
                CallState::Rejected { by, reason } => crate::tools::ToolResult::error(match reason {
                    Some(r) if !r.trim().is_empty() => format!("denied by {}: {r}", crate::model::identity::quoted(by)),
                    _ => format!("denied by {}", crate::model::identity::quoted(by)),
                }),
                // Approved, or asked a person something and answered: made
                // (again) with the replies so far.
                CallState::Approved { .. } | CallState::Asking { .. } => {
                    let (approved, prior) = match &pc.state {
                        CallState::Approved { digest, .. } => (Some(digest), None),
                        CallState::Asking { elicitation } => (None, Some(elicitation.clone())),
                        _ => (None, None),
                    };
                    if let Some(e) = prior.as_ref().filter(|e| e.unanswered().is_some()) {
                        self.ask_person(spec, session, i, e.clone()).await?;
                        if session.status == Status::Paused {
                            return Ok(());
                        }
                        // Ended instead (a question no form shows).
                        continue;
                    }
                    if approved.is_some_and(|d| crate::tools::digest(&pc.call.name, &pc.call.arguments) != *d) {
                        crate::tools::ToolResult::error("not run: the call differs from what was approved")
                    } else if let Some(tool) = toolbox.tool(&pc.call.name) {
                        set_call_state(session, i, CallState::Running);
                        self.save(session).await?;
                        // A call a human looked at may follow redirects
                        // anywhere the egress policy allows.
                        let grant = match &pc.request {
                            Some(_) if !by_policy(&pc.state) => crate::tools::Grant::Human,
                            _ => crate::tools::Grant::Policy,
                        };
                        use tracing::Instrument as _;
                        // Its name only: arguments may hold secrets.
                        let span = tracing::info_span!(
                            "tool.call",
                            tool.name = %pc.call.name,
                            call.id = %pc.call.id,
                            otel.status_code = tracing::field::Empty,
                        );
                        let called = tool
                            .run_asking(&pc.call.arguments, &toolbox.env, grant, prior)
                            .instrument(span.clone())
                            .await;
                        let result = match called {
                            crate::tools::mcp::Called::Done(r) => r,
                            crate::tools::mcp::Called::Asks(e) => {
                                self.ask_person(spec, session, i, e).await?;
                                if session.status == Status::Paused {
                                    return Ok(());
                                }
                                // Ended instead (a question no form shows).
                                continue;
                            }
                        };
                        if result.is_error || result.blocked.is_some() {
                            span.record("otel.status_code", "ERROR");
                        }
                        if let Some(why) = &result.blocked {
                            let mut ev = AuditEvent::new(AuditKind::EgressBlocked, &session.id, &session.workflow, self.clock.now());
                            ev.call = Some(pc.call.id.clone());
                            ev.detail = Some(spec_redact(why));
                            session.audit.push(ev);
                        }
                        let mut ev = AuditEvent::new(AuditKind::ToolRun, &session.id, &session.workflow, self.clock.now());
                        ev.call = Some(pc.call.id.clone());
                        ev.grant = pc.grant.clone();
                        ev.detail = Some(format!(
                            "{} ran: {}, {} characters of result",
                            pc.call.name,
                            if result.is_error { "error" } else { "ok" },
                            result.content.chars().count()
                        ));
                        session.audit.push(ev);
                        result
                    } else {
                        crate::tools::ToolResult::error(format!("unknown tool `{}`", pc.call.name))
                    }
                }
            };
            set_call_state(session, i, CallState::Done { result });
            self.save(session).await?;
        }
        if let Some(turn) = session.agent_turn.as_mut() {
            for pc in std::mem::take(&mut turn.calls) {
                let (mut content, is_error) = match pc.state {
                    CallState::Done { result } => (result.content, result.is_error),
                    _ => ("not run".to_string(), true),
                };
                // Tell the model when a human edited what it asked for.
                let proposed = turn.messages.iter().rev().find_map(|m| match m {
                    Message::Assistant { tool_calls, .. } => tool_calls
                        .iter()
                        .find(|c| c.id == pc.call.id)
                        .map(|c| c.arguments.clone()),
                    _ => None,
                });
                if proposed.is_some_and(|p| p != pc.call.arguments) {
                    content = format!(
                        "(a human edited the arguments before it ran; it ran with {})\n{content}",
                        pc.call.arguments
                    );
                }
                turn.messages.push(Message::Tool {
                    call_id: pc.call.id,
                    name: pc.call.name,
                    content,
                    is_error,
                });
            }
        }
        self.save(session).await?;
        Ok(())
    }
}

/// The span of one agent step (`crate::traces`): its position and agent.
fn step_span(position: &Position, agent: &str) -> tracing::Span {
    tracing::info_span!("step", position = %position, agent = %agent)
}

/// Whether an approved call was approved by the policy (or a trust), not
/// by a human answering this call.
fn by_policy(state: &CallState) -> bool {
    matches!(state, CallState::Approved { by, .. } if by == "policy" || by.starts_with("trust by ") || by.starts_with("grant "))
}

/// Refusal texts name addresses, not secrets; still, run them through the
/// built-in secret patterns before they enter the log.
/// Where `--trace` (and `STRANDS_LOG=strands::model=trace`) shows what
/// goes to models and what comes back.
const MODEL_TRACE: &str = "strands::model";

/// A model request as sent (system prompt, messages, tools offered),
/// through the spec's redactor: the built-in secret patterns and
/// `security.redact`. Credentials are headers, never part of it.
fn trace_request(spec: &Spec, req: &ChatRequest) {
    if tracing::enabled!(target: MODEL_TRACE, tracing::Level::TRACE) {
        let body = serde_json::to_string(req).unwrap_or_default();
        tracing::trace!(
            target: MODEL_TRACE,
            agent = %req.agent,
            model = %req.model,
            request = %spec.redactor.redact(&body),
            "model request"
        );
    }
}

/// A model's answer (text, tool calls, usage), redacted as requests are.
fn trace_response(spec: &Spec, agent: &str, resp: &crate::provider::ChatResponse) {
    if tracing::enabled!(target: MODEL_TRACE, tracing::Level::TRACE) {
        let body = serde_json::to_string(resp).unwrap_or_default();
        tracing::trace!(
            target: MODEL_TRACE,
            agent = %agent,
            response = %spec.redactor.redact(&body),
            "model response"
        );
    }
}

fn spec_redact(text: &str) -> String {
    crate::audit::redact::Redactor::default().redact(text)
}

fn set_call_state(session: &mut Session, i: usize, state: CallState) {
    if let Some(pc) = session.agent_turn.as_mut().and_then(|t| t.calls.get_mut(i)) {
        pc.state = state;
    }
}

/// The provider settings and the model of `agent`: its own provider and
/// model, else the runtime's, else the provider's default model.
/// `runtime.host` belongs to the runtime's provider (an agent naming
/// another provider uses that provider's defaults); `runtime.region` is the
/// AWS region of every bedrock agent, as in strands-cli, which has no
/// per-agent region.
pub(super) fn provider_config(
    spec: &Spec,
    agent: &crate::spec::AgentSpec,
    settings: &crate::config::Settings,
) -> Result<(ProviderConfig, String)> {
    let name = agent.provider.as_deref().unwrap_or(&spec.runtime.provider);
    let kind = ProviderKind::parse(name)?;
    let host = if agent.provider.is_none()
        || agent.provider.as_deref() == Some(spec.runtime.provider.as_str())
    {
        spec.runtime.host.clone()
    } else {
        None
    };
    let model = agent
        .model_id
        .clone()
        .or_else(|| spec.runtime.model_id.clone())
        .unwrap_or_else(|| kind.default_model().to_string());
    Ok((
        ProviderConfig {
            kind,
            host,
            region: spec.runtime.region.clone(),
            timeout: settings.llm_timeout,
            retry: settings.retry,
            credentials: settings.providers.clone(),
        },
        model,
    ))
}

/// How a finished step's checkpoint is synced when no other model request
/// is out. The model's answer is not yet acted on when it is recorded:
/// what comes next, at once — the next request marked in flight, a gate
/// asked, the run's end, a tool call — is a durable write made before
/// anything outside acts, and it carries this one (a crash in between
/// loses the answer; the request, still marked in flight, is sent again
/// and audited as such). A notes file is written at once, though, so with
/// one the step is synced first.
fn step_done(spec: &Spec) -> crate::store::Durability {
    if spec.context.notes.is_some() {
        crate::store::Durability::Now
    } else {
        crate::store::Durability::WithNext
    }
}
