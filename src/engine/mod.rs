//! The engine: drives a session from where it stands to its next stop — a
//! gate nobody can answer right now, completion, rejection or failure.
//!
//! The loop is: carry out a recorded answer if there is one; if paused, ask
//! the [`HumanChannel`]; otherwise ask the pattern what is next and do it,
//! checkpointing after every step. Answers are recorded in the store first
//! (compare-and-swap, exactly once) and only then carried out, so a process
//! that dies in between leaves a session that `resume` finishes.

pub mod artifacts;
pub mod context;
pub mod pattern;
pub mod tools;

use chrono::Utc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

use crate::audit::{AuditEvent, AuditKind};
use crate::channel::{HumanChannel, Progress, Reply};
use crate::error::{Error, Result};
use crate::gate::{self, Answer, Outcome, Position};
use crate::provider::{ChatRequest, Message, Provider, ProviderConfig, ProviderKind};
use crate::session::{
    AgentTurn, CallState, GateEvent, GateEventKind, PatternState, RecordKind, Session, Status,
    StepRecord,
};
use crate::spec::{self, AgentStep, Spec};
use crate::store::Store;
use crate::template::Templates;
use pattern::{GateWork, Next};

/// How a new run is started.
pub struct Start {
    pub variables: serde_json::Map<String, serde_json::Value>,
    pub started_by: String,
    pub out_dir: PathBuf,
    /// Set when a chat command started the run.
    pub origin: Option<crate::session::Origin>,
}

pub struct Engine<'a> {
    store: &'a Store,
    templates: Templates,
    providers: BTreeMap<(ProviderKind, Option<String>), Provider>,
    timeout: Duration,
}

impl<'a> Engine<'a> {
    pub fn new(store: &'a Store) -> Self {
        let timeout = std::env::var("STRANDS_LLM_TIMEOUT_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_secs)
            .unwrap_or(Duration::from_secs(120));
        Engine {
            store,
            templates: Templates::new(),
            providers: BTreeMap::new(),
            timeout,
        }
    }

    /// Refuses, before anything is saved, what this build cannot run:
    /// providers it does not ship (exit 18).
    pub fn preflight(spec: &Spec) -> Result<()> {
        for agent in spec.agents.values() {
            ProviderKind::parse(agent.provider.as_deref().unwrap_or(&spec.runtime.provider))?;
        }
        Ok(())
    }

    /// Starts a new run and drives it to its first stop.
    pub async fn start<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        start: Start,
        channel: &mut C,
    ) -> Result<Session> {
        let session = self.create(spec, start)?;
        self.drive(spec, session, channel).await
    }

    /// Saves a new session, `running` at its first step, without running it
    /// (the bot answers the slash command first and drives it afterwards).
    pub fn create(&self, spec: &Spec, start: Start) -> Result<Session> {
        Self::preflight(spec)?;
        let now = Utc::now();
        let mut session = Session {
            id: uuid::Uuid::new_v4().to_string(),
            workflow: spec.name.clone(),
            spec_path: spec.path.display().to_string(),
            spec_hash: spec.hash.clone(),
            spec_snapshot: spec.text.clone(),
            pattern: spec.pattern.name().to_string(),
            status: Status::Running,
            created_at: now,
            updated_at: now,
            started_by: start.started_by,
            variables: start.variables,
            state: pattern::initial(spec),
            gate: None,
            parked: Vec::new(),
            pending_answer: None,
            human_feedback: None,
            hitl_response: None,
            history: Vec::new(),
            gates_opened: 0,
            usage: BTreeMap::new(),
            output: None,
            artifacts: Vec::new(),
            out_dir: start.out_dir.display().to_string(),
            failure: None,
            origin: start.origin,
            notification: None,
            messages: Default::default(),
            agent_turn: None,
            trusted_tools: Default::default(),
            denied_calls: Default::default(),
            audit: Vec::new(),
            triggers_fired: Default::default(),
            final_approved: false,
            in_flight: Default::default(),
            rev: 0,
        };
        self.store.create(&mut session)?;
        Ok(session)
    }

    /// Loads a session's spec from its snapshot (not the file, which may have changed).
    pub fn spec_of(session: &Session) -> Result<Spec> {
        spec::parse(
            &session.spec_snapshot,
            Path::new(&session.spec_path),
            &spec::Limits::from_env(),
        )
    }

    /// Checks that an answer fits the open gate, before it is recorded, so a
    /// bad answer changes nothing.
    pub fn check_answer(spec: &Spec, session: &Session, answer: &Answer) -> Result<()> {
        answer.decision.check_limits().map_err(Error::Usage)?;
        let Some(gate) = &session.gate else {
            return Err(Error::Session(format!(
                "session {} has no open gate",
                session.id
            )));
        };
        if gate.kind == crate::spec::GateKind::ToolCall {
            return Self::check_tool_answer(spec, session, answer);
        }
        if let (true, crate::gate::Decision::Reject { reason }) =
            (gate.require_reason, &answer.decision)
        {
            if reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return Err(Error::Usage(format!(
                    "gate `{}` needs a reason to reject (--reason R)",
                    gate.id
                )));
            }
        }
        let outcome = gate::interpret(gate.kind, &answer.decision)?;
        if let (Outcome::Continue { response }, None) = (&outcome, &gate.trigger) {
            pattern::check_response(spec, &session.state, &gate.position, response)?;
        }
        if let Outcome::Rerun { .. } = outcome {
            // A triggered gate reviews its own step: modify re-runs that step.
            if gate.trigger.is_none()
                && pattern::rerun_targets(spec, &session.state, &gate.position).is_empty()
            {
                return Err(Error::Usage(format!(
                    "gate `{}`: {}",
                    gate.id,
                    pattern::no_rerun(spec, &session.state, &gate.position)
                )));
            }
        }
        Ok(())
    }

    /// An answer to a tool-call gate: it must name a waiting call (or there
    /// is just one), an edit keeps the tool and fits its schema, and trust
    /// only where the spec allows it. Checked before anything is recorded.
    fn check_tool_answer(spec: &Spec, session: &Session, answer: &Answer) -> Result<()> {
        let turn = session
            .agent_turn
            .as_ref()
            .ok_or_else(|| Error::Session("no tool calls are waiting".into()))?;
        let waiting: Vec<&crate::session::PendingCall> = turn.waiting().collect();
        let pc = match &answer.call {
            Some(id) => turn
                .calls
                .iter()
                .find(|c| &c.call.id == id)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "no call `{id}`; waiting: {}",
                        waiting
                            .iter()
                            .map(|c| c.call.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?,
            None if waiting.len() == 1 => waiting[0],
            None => {
                return Err(Error::Usage(format!(
                    "{} calls are waiting; pick one with --call: {}",
                    waiting.len(),
                    waiting
                        .iter()
                        .map(|c| format!("{} ({})", c.call.id, c.call.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        };
        let agent = spec
            .agents
            .get(&turn.agent)
            .ok_or_else(|| Error::Internal(format!("agent `{}` vanished", turn.agent)))?;
        let toolbox = tools::Toolbox::for_agent(spec, agent)?;
        match &answer.decision {
            crate::gate::Decision::Approve | crate::gate::Decision::Reject { .. } => Ok(()),
            crate::gate::Decision::Trust => {
                if toolbox.trustable(&pc.call.name)
                    && pc.request.as_ref().is_none_or(|r| r.trustable)
                {
                    Ok(())
                } else {
                    Err(Error::Usage(format!(
                        "`{}` cannot be trusted here (trust needs enable_trust on the agent; shell and `!`-negated tools never)",
                        pc.call.name
                    )))
                }
            }
            crate::gate::Decision::Edit { arguments } => {
                let args = tools::edited_arguments(&pc.call, arguments)?;
                toolbox.check_edit(&pc.call.name, &args)
            }
            other => Err(Error::Usage(format!(
                "a tool call takes --approve, --reject [--reason R], --edit-args JSON or --trust, not {}",
                other.verb()
            ))),
        }
    }

    /// Continues a session: with `answer` for a paused one, or without to
    /// finish an interrupted (`running`) one. A session that is not in a
    /// state to take the request is exit 17 and is left as it was.
    pub async fn resume<C: HumanChannel>(
        &mut self,
        id: &str,
        answer: Option<Answer>,
        channel: &mut C,
    ) -> Result<Session> {
        self.resume_gate(id, None, answer, channel).await
    }

    /// [`Engine::resume`] answering one of several open gates (`--gate`):
    /// its handle `id#n`, or its id when only one open gate has it.
    pub async fn resume_gate<C: HumanChannel>(
        &mut self,
        id: &str,
        pick: Option<&str>,
        answer: Option<Answer>,
        channel: &mut C,
    ) -> Result<Session> {
        let mut session = self.store.get(id)?;
        if answer.is_some() && session.status == Status::Paused {
            let open: Vec<String> = session
                .open_gates()
                .map(|g| format!("{} ({})", g.handle(), g.position))
                .collect();
            match pick {
                Some(want) if !session.focus(want) => {
                    return Err(Error::Usage(format!(
                        "session {id} has no open gate `{want}`; open: {}",
                        open.join(", ")
                    )))
                }
                None if open.len() > 1 => {
                    return Err(Error::Usage(format!(
                        "session {id} has {} gates open; pick one with --gate: {}",
                        open.len(),
                        open.join(", ")
                    )))
                }
                _ => {}
            }
        }
        let spec = Self::spec_of(&session)?;
        Self::preflight(&spec)?;
        let session = match (session.status, answer) {
            (Status::Paused, Some(answer)) => {
                let gate = session.gate.clone().ok_or_else(|| Error::Internal("paused without a gate".into()))?;
                if gate.timed_out(Utc::now()) {
                    // The fallback wins; the drive loop applies it.
                    eprintln!(
                        "gate `{}` timed out at {}; its fallback applies instead of this answer",
                        gate.id,
                        gate.timeout_at.map(|t| t.to_rfc3339()).unwrap_or_default()
                    );
                    session
                } else {
                    if let Err(why) = authorize_locally(&gate, &session, &answer) {
                        self.audit_refusal(&session, &answer, &why);
                        return Err(Error::Session(format!("session {}: {why}", session.id)));
                    }
                    tools::prepare_answer_check(&spec, &session, &answer).await?;
                    Self::check_answer(&spec, &session, &answer)?;
                    match self.store.record_answer(&session.id, Some(&gate.handle()), &answer)? {
                        Ok(s) => s,
                        Err(refusal) => {
                            self.audit_refusal(&session, &answer, &refusal.to_string());
                            return Err(Error::Session(format!("session {}: {refusal}", session.id)));
                        }
                    }
                }
            }
            // No answer: a passed timeout applies, or the channel asks its human.
            (Status::Paused, None) => session,
            (Status::Running, None) => session,
            (Status::Running, Some(_)) => {
                return Err(Error::Session(format!(
                    "session {} is running (interrupted or answered already); `strands resume {}` without a decision continues it",
                    session.id, session.id
                )))
            }
            (status, answer) => {
                let why = format!("session {} is {status}; there is nothing to resume", session.id);
                if let Some(a) = &answer {
                    self.audit_refusal(&session, a, &why);
                }
                return Err(Error::Session(why));
            }
        };
        self.drive(&spec, session, channel).await
    }

    /// Runs until the next stop. Run failures (provider, template, budget,
    /// artifact errors) are saved on the session as `failed` and returned in
    /// it; only store and internal errors come back as `Err`.
    pub async fn drive<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        mut session: Session,
        channel: &mut C,
    ) -> Result<Session> {
        loop {
            match self.advance(spec, &mut session, channel).await {
                Ok(true) => continue,
                Ok(false) => return Ok(session),
                Err(e @ (Error::Store(_) | Error::Internal(_))) => return Err(e),
                Err(e) => {
                    session.status = Status::Failed;
                    session.failure = Some(crate::session::Failure {
                        code: e.exit_code(),
                        message: e.to_string(),
                    });
                    let mut ev =
                        AuditEvent::new(AuditKind::Outcome, &session.id, &session.workflow);
                    ev.detail = Some(spec.redactor.redact(&format!("failed: {e}")));
                    session.audit.push(ev);
                    self.store.checkpoint(&mut session)?;
                    channel
                        .progress(
                            &session,
                            &Progress::Failed {
                                message: e.to_string(),
                            },
                        )
                        .await;
                    return Ok(session);
                }
            }
        }
    }

    /// One move. `Ok(true)`: keep going; `Ok(false)`: stop here.
    async fn advance<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        channel: &mut C,
    ) -> Result<bool> {
        if let Some(answer) = session.pending_answer.clone() {
            self.carry_out(spec, session, answer, channel).await?;
            return Ok(!session.status.is_terminal());
        }
        match session.status {
            Status::Paused => {
                if self.apply_queued(session)? {
                    return Ok(true);
                }
                return self.ask(spec, session, channel).await;
            }
            Status::Running => {}
            _ => return Ok(false),
        }
        if self.open_triggered_gate(spec, session)? {
            return Ok(true);
        }
        if let Some(at) = pattern::pending_choice(spec, &session.state) {
            // A graph `choose` edge: its conditions see the whole context.
            let ctx = context::build(spec, session, None, Some(&at));
            let templates = &self.templates;
            pattern::choose(spec, &mut session.state, |what, cond| {
                templates.truthy(what, cond, &ctx)
            })?;
            self.store.checkpoint(session)?;
            return Ok(true);
        }
        match pattern::next(spec, &session.state)? {
            Next::Run(work) => self.run_agents(spec, session, work, channel).await?,
            Next::Gates(gates) => {
                for GateWork { position, gate } in gates {
                    if session.open_gates().any(|g| g.position == position) {
                        continue;
                    }
                    match self.open_gate(spec, session, position, gate)? {
                        Some(opened) => {
                            audit_request(session, &opened);
                            session.parked.push(opened);
                        }
                        None => {
                            // Condition false: recorded as skipped; look again.
                            self.store.checkpoint(session)?;
                            channel
                                .progress(
                                    session,
                                    &Progress::GateSkipped {
                                        gate: gate.id.clone(),
                                    },
                                )
                                .await;
                            return Ok(true);
                        }
                    }
                }
                if session.gate.is_none() && !session.parked.is_empty() {
                    let first = session.parked.remove(0);
                    session.gate = Some(first);
                }
                if session.gate.is_none() {
                    return Err(Error::Internal(
                        "the pattern waits on a gate that is not open".into(),
                    ));
                }
                session.status = Status::Paused;
                self.store.checkpoint(session)?;
            }
            Next::Done { output } => {
                let final_gate = spec
                    .hitl
                    .triggers
                    .iter()
                    .find(|t| t.trigger == crate::spec::Trigger::FinalResponse);
                if let (false, Some(t)) = (session.final_approved, final_gate) {
                    let position = pattern::agent_records(&session.state)
                        .last()
                        .map(|(p, _)| p.clone())
                        .unwrap_or(Position::Step(0));
                    self.open_triggered(spec, session, t, position, output)?;
                    return Ok(true);
                }
                let ctx = context::build(spec, session, None, None);
                let out_dir = PathBuf::from(&session.out_dir);
                session.artifacts =
                    artifacts::write(&self.templates, &spec.artifacts, &ctx, &out_dir)?;
                let mut ev = AuditEvent::new(AuditKind::Outcome, &session.id, &session.workflow);
                ev.detail = Some(format!(
                    "completed; output {} characters, sha256 {}",
                    output.chars().count(),
                    crate::audit::sha256_hex(&output)
                ));
                session.audit.push(ev);
                session.output = Some(output);
                session.status = Status::Completed;
                self.store.checkpoint(session)?;
                channel.progress(session, &Progress::Completed).await;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Opens a spec gate at `position`: `None` when its condition is false
    /// (then recorded as skipped), else the gate to ask, with the workflow's
    /// `security` defaults filling what the gate leaves open.
    fn open_gate(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        position: Position,
        gate: &crate::spec::GateSpec,
    ) -> Result<Option<gate::OpenGate>> {
        let ctx = context::build(spec, session, None, Some(&position));
        if let Some(cond) = &gate.condition {
            if !self.templates.truthy(
                &format!("the condition of gate `{}`", gate.id),
                cond,
                &ctx,
            )? {
                pattern::record(
                    spec,
                    &mut session.state,
                    &position,
                    StepRecord {
                        agent: None,
                        response: String::new(),
                        kind: RecordKind::Skipped,
                        finished_at: Utc::now(),
                    },
                )?;
                session.history.push(GateEvent {
                    gate: gate.id.clone(),
                    instance: 0,
                    asked_at: None,
                    what: GateEventKind::Skipped {
                        condition: cond.clone(),
                    },
                });
                let mut ev = AuditEvent::new(AuditKind::Skip, &session.id, &session.workflow);
                ev.gate = Some(gate.id.clone());
                ev.detail = Some(format!("condition `{cond}` was false"));
                session.audit.push(ev);
                return Ok(None);
            }
        }
        let prompt = self.templates.render(
            &format!("the prompt of gate `{}`", gate.id),
            &gate.prompt,
            &ctx,
        )?;
        let shown = match &gate.context_display {
            Some(t) => self.templates.render(
                &format!("the context_display of gate `{}`", gate.id),
                t,
                &ctx,
            )?,
            None => pattern::last_response_at(&session.state, Some(&position)).unwrap_or_default(),
        };
        session.gates_opened += 1;
        // What humans are shown is redacted (security.redact + secrets).
        let mut opened = gate::open(
            gate,
            position,
            session.gates_opened,
            spec.redactor.redact(&prompt),
            spec.redactor.redact(&shown),
            Utc::now(),
        );
        if gate.approvers.is_none() {
            opened.approvers = spec.approval.approvers.clone();
        }
        if gate.approvals_required.is_none() {
            opened.approvals_required = spec.approval.approvals_required.unwrap_or(1).max(1);
        }
        if gate.allow_self_approval.is_none() {
            opened.allow_self_approval = spec.approval.allow_self_approval;
        }
        Ok(Some(opened))
    }

    /// Records an answer the bot queued for one of several open gates while
    /// the run was busy (`store::queued`), exactly as if it had just been
    /// given: compare-and-swap, refusals audited. True when one was recorded.
    fn apply_queued(&mut self, session: &mut Session) -> Result<bool> {
        if session.parked.is_empty() && session.gate.is_none() {
            return Ok(false);
        }
        for (handle, answer) in self.store.queued_answers(&session.id)? {
            if session.open_gate(&handle).is_none() {
                self.store.drop_queued(&session.id, &handle)?;
                continue;
            }
            let recorded = self
                .store
                .record_answer(&session.id, Some(&handle), &answer)?;
            self.store.drop_queued(&session.id, &handle)?;
            match recorded {
                Ok(updated) => {
                    *session = updated;
                    return Ok(true);
                }
                Err(refusal) => self.audit_refusal(session, &answer, &refusal.to_string()),
            }
        }
        Ok(false)
    }

    /// Paused: apply a due timeout, or ask the channel.
    async fn ask<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        channel: &mut C,
    ) -> Result<bool> {
        let now = Utc::now();
        // A parked gate whose timeout passed is answered by its fallback
        // first (several gates open at once each keep their own deadline).
        if !session.gate.as_ref().is_some_and(|g| g.timed_out(now)) {
            if let Some(h) = session
                .parked
                .iter()
                .find(|g| g.timed_out(now))
                .map(|g| g.handle())
            {
                session.focus(&h);
            }
        }
        let Some(gate) = session.gate.clone() else {
            return Err(Error::Internal(format!(
                "session {} is paused without a gate",
                session.id
            )));
        };
        let answer = if gate.timed_out(now) {
            gate::timeout_answer(&gate, now)
        } else {
            match channel.ask(session).await? {
                Reply::Later => return Ok(false),
                Reply::Now(answer) => {
                    // A refused answer leaves the session paused as it was:
                    // the human is told why, and it is audited.
                    if let Err(why) = authorize_locally(&gate, session, &answer) {
                        self.audit_refusal(session, &answer, &why);
                        eprintln!("refused: {why}; the session stays paused");
                        return Ok(false);
                    }
                    let checked = match tools::prepare_answer_check(spec, session, &answer).await {
                        Ok(()) => Self::check_answer(spec, session, &answer),
                        Err(e) => Err(e),
                    };
                    if let Err(e) = checked {
                        eprintln!("refused: {e}; the session stays paused");
                        return Ok(false);
                    }
                    answer
                }
            }
        };
        match self
            .store
            .record_answer(&session.id, Some(&gate.handle()), &answer)?
        {
            Ok(updated) => {
                *session = updated;
                Ok(true)
            }
            Err(refusal) => {
                self.audit_refusal(session, &answer, &refusal.to_string());
                eprintln!("refused: {refusal}; the session stays as it was");
                Ok(false)
            }
        }
    }

    /// Carries out a recorded answer on the open gate.
    async fn carry_out<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        answer: Answer,
        channel: &mut C,
    ) -> Result<()> {
        let gate = session.gate.clone().ok_or_else(|| {
            Error::Internal(format!(
                "session {} has an answer but no open gate",
                session.id
            ))
        })?;
        let mut outcome = gate::interpret(gate.kind, &answer.decision)?;
        if let (Outcome::Continue { response }, None) = (&outcome, &gate.trigger) {
            // Some positions read certain answers as "stop the run".
            if let Some(reason) = pattern::rejects(spec, &gate.position, response) {
                outcome = Outcome::Cancel {
                    reason: Some(reason),
                };
            }
        }
        for (k, v) in &answer.vars {
            session.variables.insert(k.clone(), v.clone());
        }
        // New human input (feedback, an answer, variables) lets the model
        // propose calls a human rejected before.
        if !answer.vars.is_empty()
            || matches!(
                answer.decision,
                crate::gate::Decision::Modify { .. } | crate::gate::Decision::Respond { .. }
            )
        {
            session.denied_calls.clear();
        }
        let waited_ms = (answer.at - gate.opened_at).num_milliseconds().max(0) as u64;
        session.history.push(GateEvent {
            gate: gate.id.clone(),
            instance: gate.instance,
            asked_at: Some(gate.opened_at),
            what: GateEventKind::Answered {
                answer: answer.clone(),
                waited_ms,
            },
        });
        session.pending_answer = None;
        let mut rejected = None;
        let mut aborted = None;
        match outcome {
            Outcome::Continue { .. } if gate.trigger.is_some() => {
                if spec.hitl.triggers.iter().any(|t| {
                    Some(&t.id) == gate.trigger.as_ref()
                        && t.trigger == crate::spec::Trigger::FinalResponse
                }) {
                    session.final_approved = true;
                }
                session.human_feedback = None;
                session.gate = None;
                session.status = Status::Running;
            }
            Outcome::Continue { response } => {
                let kind = match gate.kind {
                    crate::spec::GateKind::Hitl => RecordKind::Answer,
                    crate::spec::GateKind::ManualGate | crate::spec::GateKind::ToolCall => {
                        RecordKind::Approval
                    }
                };
                pattern::record(
                    spec,
                    &mut session.state,
                    &gate.position,
                    StepRecord {
                        agent: None,
                        response: response.clone(),
                        kind,
                        finished_at: Utc::now(),
                    },
                )?;
                session.hitl_response = Some(response);
                session.human_feedback = None;
                session.gate = None;
                session.status = Status::Running;
            }
            Outcome::Rerun { feedback } if gate.trigger.is_some() => {
                pattern::forget(&mut session.state, &gate.position)?;
                let suffix = format!("@{}", gate.position);
                session.triggers_fired.retain(|k| !k.ends_with(&suffix));
                session.human_feedback = Some(feedback);
                session.gate = None;
                session.status = Status::Running;
            }
            Outcome::Rerun { feedback } => {
                pattern::rewind(spec, &mut session.state, &gate.position)?;
                session.human_feedback = Some(feedback);
                session.gate = None;
                session.status = Status::Running;
            }
            Outcome::Cancel { reason } => {
                let mut ev = AuditEvent::new(AuditKind::Outcome, &session.id, &session.workflow);
                ev.gate = Some(gate.handle());
                ev.detail = Some(spec.redactor.redact(&format!(
                    "rejected{}",
                    reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
                )));
                session.audit.push(ev);
                session.gate = None;
                session.parked.clear();
                session.status = Status::Rejected;
                rejected = Some(reason);
            }
            // A timeout's `skip`: the gate passes with no response of its own.
            Outcome::Skip => {
                pattern::record(
                    spec,
                    &mut session.state,
                    &gate.position,
                    StepRecord {
                        agent: None,
                        response: String::new(),
                        kind: RecordKind::Skipped,
                        finished_at: Utc::now(),
                    },
                )?;
                session.hitl_response = None;
                session.human_feedback = None;
                session.gate = None;
                session.status = Status::Running;
            }
            // A timeout's `abort`: the run fails (not rejected: nobody said no).
            Outcome::Abort { reason } => {
                let message = format!(
                    "gate `{}` timed out: {}",
                    gate.id,
                    reason.unwrap_or_else(|| "aborted by fallback".into())
                );
                let mut ev = AuditEvent::new(AuditKind::Outcome, &session.id, &session.workflow);
                ev.gate = Some(gate.handle());
                ev.detail = Some(spec.redactor.redact(&format!("failed: {message}")));
                session.audit.push(ev);
                session.gate = None;
                session.parked.clear();
                session.status = Status::Failed;
                session.failure = Some(crate::session::Failure {
                    code: crate::error::exit::RUNTIME,
                    message: message.clone(),
                });
                aborted = Some(message);
            }
            Outcome::StayPaused => session.status = Status::Paused,
        }
        self.store.checkpoint(session)?;
        channel
            .progress(
                session,
                &Progress::GateAnswered {
                    gate: gate.id.clone(),
                    answer,
                },
            )
            .await;
        if let Some(reason) = rejected {
            channel
                .progress(session, &Progress::Rejected { reason })
                .await;
        }
        if let Some(message) = aborted {
            channel
                .progress(session, &Progress::Failed { message })
                .await;
        }
        Ok(())
    }

    /// Records a refused answer in the audit log; nothing else changed.
    fn audit_refusal(&self, session: &Session, answer: &Answer, why: &str) {
        let mut ev = AuditEvent::new(AuditKind::Refusal, &session.id, &session.workflow);
        ev.gate = session.gate.as_ref().map(|g| g.handle());
        ev.call = answer.call.clone();
        ev.who = Some(answer.by.clone());
        ev.via = Some(answer.via.clone());
        ev.detail = Some(why.to_string());
        if let Err(e) = self.store.append_audit(&[ev]) {
            tracing::error!("could not audit a refused answer: {e}");
        }
    }

    fn provider(&mut self, spec: &Spec, agent: &str) -> Result<(Provider, String)> {
        let a = spec
            .agents
            .get(agent)
            .ok_or_else(|| Error::Internal(format!("agent `{agent}` vanished")))?;
        let name = a.provider.as_deref().unwrap_or(&spec.runtime.provider);
        let kind = ProviderKind::parse(name)?;
        // runtime.host belongs to the runtime's provider; an agent that names
        // another provider uses that provider's defaults.
        let host = if a.provider.is_none()
            || a.provider.as_deref() == Some(spec.runtime.provider.as_str())
        {
            spec.runtime.host.clone()
        } else {
            None
        };
        let model = a
            .model_id
            .clone()
            .or_else(|| spec.runtime.model_id.clone())
            .unwrap_or_else(|| default_model(kind).to_string());
        let key = (kind, host.clone());
        if let Some(p) = self.providers.get(&key) {
            return Ok((p.clone(), model));
        }
        let p = Provider::new(&ProviderConfig {
            kind,
            host,
            timeout: self.timeout,
            retry: crate::provider::retry::RetryPolicy::from_env(),
        })?;
        self.providers.insert(key, p.clone());
        Ok((p, model))
    }

    fn request(
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
        let system = self.templates.render(
            &format!("the prompt of agent `{}`", agent.id),
            &agent.prompt,
            &ctx,
        )?;
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
    async fn mark_in_flight<C: HumanChannel>(
        &mut self,
        session: &mut Session,
        positions: &[String],
        channel: &mut C,
    ) -> Result<()> {
        let mut resent = Vec::new();
        for p in positions {
            if !session.in_flight.insert(p.clone()) {
                let mut ev = AuditEvent::new(AuditKind::Resent, &session.id, &session.workflow);
                ev.detail = Some(format!(
                    "{p}: model request re-sent after a crash (the earlier one may have reached the model)"
                ));
                session.audit.push(ev);
                resent.push(p.clone());
            }
        }
        self.store.checkpoint(session)?;
        for position in resent {
            channel
                .progress(session, &Progress::Resent { position })
                .await;
        }
        Ok(())
    }

    fn check_budget(spec: &Spec, session: &Session) -> Result<()> {
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
    async fn run_agents<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        work: Vec<pattern::Work<'_>>,
        channel: &mut C,
    ) -> Result<()> {
        Self::check_budget(spec, session)?;
        // Steps whose agent has tools run one at a time through the tool
        // loop; a step interrupted mid-conversation continues first.
        let has_tools = |w: &&pattern::Work<'_>| {
            spec.agents
                .get(&w.step.agent)
                .is_some_and(|a| !a.tools.is_empty())
        };
        let resumed = session
            .agent_turn
            .as_ref()
            .and_then(|t| work.iter().find(|w| w.position == t.position));
        if let Some(w) = resumed.or_else(|| work.iter().find(has_tools)) {
            return self.run_tool_step(spec, session, w, channel).await;
        }
        let mut queue = Vec::new();
        for w in &work {
            let (provider, req) = self.request(spec, session, &w.step, &w.position)?;
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
                running.spawn(async move {
                    let started = Instant::now();
                    let res = provider.complete(&req).await;
                    (
                        position,
                        req.agent,
                        started.elapsed().as_millis() as u64,
                        res,
                    )
                });
            }
            let Some(joined) = running.join_next().await else {
                break;
            };
            let (position, agent, millis, res) =
                joined.map_err(|e| Error::Internal(format!("model call task failed: {e}")))?;
            let resp = res?;
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
                    finished_at: Utc::now(),
                },
            )?;
            self.store.checkpoint(session)?;
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
}

impl Engine<'_> {
    /// One agent step with tools, from wherever its conversation stands to
    /// its answer — or to a tool-call gate, leaving the session paused.
    async fn run_tool_step<C: HumanChannel>(
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
        let mut toolbox = tools::Toolbox::for_agent(spec, agent)?;
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
            self.store.checkpoint(session)?;
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
                if self.open_tool_gate(spec, session, &w.position)? {
                    return Ok(());
                }
                self.run_approved_calls(session, &toolbox).await?;
            }
            // 2. Ask the model.
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
            let resp = provider.complete(&req).await?;
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
                session.agent_turn = None;
                pattern::record(
                    spec,
                    &mut session.state,
                    &w.position,
                    StepRecord {
                        agent: Some(agent.id.clone()),
                        response: resp.text,
                        kind: RecordKind::Agent,
                        finished_at: Utc::now(),
                    },
                )?;
                self.store.checkpoint(session)?;
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
            let calls = toolbox.classify(&snapshot, &resp.tool_calls, &self.templates);
            if let Some(turn) = session.agent_turn.as_mut() {
                turn.calls = calls;
            }
            self.store.checkpoint(session)?;
        }
    }

    /// Opens the tool-call gate when any call waits for a human. True when
    /// the session is now paused.
    fn open_tool_gate(
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
        let now = Utc::now();
        session.gates_opened += 1;
        session.gate = Some(gate::OpenGate {
            id: "tools".into(),
            instance: session.gates_opened,
            kind: crate::spec::GateKind::ToolCall,
            position: position.clone(),
            prompt: format!(
                "agent `{}` asks to run {waiting} tool call{} that need{} approval",
                turn.agent,
                if waiting == 1 { "" } else { "s" },
                if waiting == 1 { "s" } else { "" }
            ),
            context: tools::describe_calls(&turn.calls),
            show_preview: true,
            preview_length: 4000,
            default: None,
            fallback: crate::spec::Fallback::Cancel,
            opened_at: now,
            timeout_at: None,
            require_reason: false,
            channel: None,
            approvers: spec.approval.approvers.clone(),
            // Each call is one decision: tool gates take no quorum.
            approvals_required: 1,
            allow_self_approval: spec.approval.allow_self_approval,
            approvals: Vec::new(),
            rejections_required: 1,
            rejections: Vec::new(),
            trigger: None,
        });
        if let Some(g) = session.gate.clone() {
            audit_request(session, &g);
        }
        session.status = Status::Paused;
        self.store.checkpoint(session)?;
        Ok(true)
    }

    /// Runs the approved calls of the latest turn, in order, each at most
    /// once, then hands every outcome to the conversation.
    async fn run_approved_calls(
        &mut self,
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
                    Some(r) if !r.trim().is_empty() => format!("denied by {by}: {r}"),
                    _ => format!("denied by {by}"),
                }),
                CallState::Approved { digest, .. } => {
                    if crate::tools::digest(&pc.call.name, &pc.call.arguments) != *digest {
                        crate::tools::ToolResult::error("not run: the call differs from what was approved")
                    } else if let Some(tool) = toolbox.tool(&pc.call.name) {
                        set_call_state(session, i, CallState::Running);
                        self.store.checkpoint(session)?;
                        // A call a human looked at may follow redirects
                        // anywhere the egress policy allows.
                        let grant = match &pc.request {
                            Some(_) if !by_policy(&pc.state) => crate::tools::Grant::Human,
                            _ => crate::tools::Grant::Policy,
                        };
                        let result = tool.run(&pc.call.arguments, &toolbox.env, grant).await;
                        if let Some(why) = &result.blocked {
                            let mut ev = AuditEvent::new(AuditKind::EgressBlocked, &session.id, &session.workflow);
                            ev.call = Some(pc.call.id.clone());
                            ev.detail = Some(spec_redact(why));
                            session.audit.push(ev);
                        }
                        let mut ev = AuditEvent::new(AuditKind::ToolRun, &session.id, &session.workflow);
                        ev.call = Some(pc.call.id.clone());
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
            self.store.checkpoint(session)?;
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
        self.store.checkpoint(session)?;
        Ok(())
    }
}

impl Engine<'_> {
    /// Opens the first `hitl.gates` trigger that fires: a budget passed, a
    /// step reporting low confidence, a custom condition. Each step is
    /// checked once per trigger; an error while checking asks a human
    /// (fail closed).
    fn open_triggered_gate(&mut self, spec: &Spec, session: &mut Session) -> Result<bool> {
        use crate::spec::Trigger;
        for t in &spec.hitl.triggers {
            match &t.trigger {
                Trigger::Budget { tokens } => {
                    let used = session.total_usage().total();
                    if used >= *tokens && !session.triggers_fired.contains(&t.id) {
                        session.triggers_fired.insert(t.id.clone());
                        let Some((position, _)) = pattern::agent_records(&session.state)
                            .last()
                            .map(|(p, r)| (p.clone(), r.response.clone()))
                        else {
                            continue;
                        };
                        let context = format!(
                            "{used} tokens used; the budget gate `{}` asks at {tokens}.",
                            t.id
                        );
                        self.open_triggered(spec, session, t, position, context)?;
                        return Ok(true);
                    }
                }
                Trigger::Confidence { .. } | Trigger::Custom { .. } => {
                    let steps: Vec<(Position, Option<String>, String)> =
                        pattern::agent_records(&session.state)
                            .into_iter()
                            .map(|(p, r)| (p, r.agent.clone(), r.response.clone()))
                            .collect();
                    for (position, agent, response) in steps {
                        let key = format!("{}@{}", t.id, position);
                        if !session.triggers_fired.insert(key) {
                            continue;
                        }
                        if let (Some(only), Some(a)) = (&t.agents, &agent) {
                            if !only.contains(a) {
                                continue;
                            }
                        }
                        let (fires, context) =
                            self.trigger_fires(spec, session, &t.trigger, &response);
                        if fires {
                            self.open_triggered(spec, session, t, position, context)?;
                            return Ok(true);
                        }
                    }
                }
                Trigger::FinalResponse | Trigger::PlanApproval => {}
            }
        }
        Ok(false)
    }

    /// Whether a per-step trigger fires on `response`, and what to show.
    fn trigger_fires(
        &self,
        spec: &Spec,
        session: &Session,
        trigger: &crate::spec::Trigger,
        response: &str,
    ) -> (bool, String) {
        use crate::spec::Trigger;
        match trigger {
            Trigger::Confidence { threshold, field } => match confidence_of(response, field) {
                Some(c) if c < *threshold => (
                    true,
                    format!("confidence {c} is below {threshold}\n\n{response}"),
                ),
                Some(_) => (false, String::new()),
                None => (
                    true,
                    format!("no numeric `{field}` in the output; a human decides\n\n{response}"),
                ),
            },
            Trigger::Custom { condition } => {
                let mut vars = serde_json::Map::new();
                vars.insert(
                    "response".into(),
                    serde_json::Value::String(response.to_string()),
                );
                let ctx = context::build(spec, session, Some(&vars), None);
                match self
                    .templates
                    .truthy("a hitl gate condition", condition, &ctx)
                {
                    Ok(fires) => (fires, response.to_string()),
                    Err(e) => (
                        true,
                        format!("the condition failed ({e}); a human decides\n\n{response}"),
                    ),
                }
            }
            _ => (false, String::new()),
        }
    }

    /// Opens a gate the run triggered, reviewing the step at `position`.
    fn open_triggered(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        t: &crate::spec::TriggerSpec,
        position: Position,
        context: String,
    ) -> Result<()> {
        let ctx = context::build(spec, session, None, None);
        let prompt = self
            .templates
            .render(
                &format!("the prompt of hitl gate `{}`", t.id),
                &t.prompt,
                &ctx,
            )
            .unwrap_or_else(|_| t.prompt.clone());
        let spec_gate = crate::spec::GateSpec {
            id: t.id.clone(),
            kind: crate::spec::GateKind::ManualGate,
            prompt: prompt.clone(),
            context_display: None,
            default: None,
            timeout_secs: None,
            fallback: crate::spec::Fallback::Cancel,
            condition: None,
            show_preview: true,
            preview_length: 2000,
            require_reason: false,
            channel: None,
            approvers: None,
            approvals_required: None,
            rejections_required: None,
            allow_self_approval: None,
            timers: Default::default(),
        };
        session.gates_opened += 1;
        let mut opened = gate::open(
            &spec_gate,
            position,
            session.gates_opened,
            spec.redactor.redact(&prompt),
            spec.redactor.redact(&context),
            Utc::now(),
        );
        opened.approvers = spec.approval.approvers.clone();
        opened.approvals_required = spec.approval.approvals_required.unwrap_or(1).max(1);
        opened.allow_self_approval = spec.approval.allow_self_approval;
        opened.trigger = Some(t.id.clone());
        audit_request(session, &opened);
        session.gate = Some(opened);
        session.status = Status::Paused;
        self.store.checkpoint(session)
    }
}

/// A numeric field of a step's JSON output (the whole output, or the first
/// `{...}` in it).
fn confidence_of(response: &str, field: &str) -> Option<f64> {
    let parsed: Option<serde_json::Value> =
        serde_json::from_str(response.trim()).ok().or_else(|| {
            let start = response.find('{')?;
            let end = response.rfind('}')?;
            serde_json::from_str(response.get(start..=end)?).ok()
        });
    let v = parsed?;
    let n = v.get(field)?;
    n.as_f64()
        .or_else(|| n.as_str().and_then(|s| s.trim().parse().ok()))
}

/// Who may answer from this machine (CLI, terminal, auto-approve): the
/// identity is the OS user or `--as NAME`; admins come from `STRANDS_ADMINS`.
/// Slack groups cannot be resolved here, so group approvers are not matched.
fn authorize_locally(
    gate: &gate::OpenGate,
    session: &Session,
    answer: &Answer,
) -> std::result::Result<(), String> {
    if answer.via == "timeout" {
        return Ok(());
    }
    let admins = admins_from_env();
    gate::authorize(
        gate,
        &answer.decision,
        &gate::Identity {
            who: &answer.by,
            started_by: &session.started_by,
            in_bot: false,
            admins: &admins,
            member_of: &|_| false,
        },
    )
}

/// `STRANDS_ADMINS`: a comma-separated list of identities that may answer any gate.
pub fn admins_from_env() -> Vec<String> {
    std::env::var("STRANDS_ADMINS")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Records that a gate asked: a digest of exactly what was shown, and a
/// short (already redacted) preview.
fn audit_request(session: &mut Session, gate: &gate::OpenGate) {
    let mut ev = AuditEvent::new(AuditKind::Request, &session.id, &session.workflow);
    ev.gate = Some(gate.handle());
    ev.shown_digest = Some(crate::audit::sha256_hex(&format!(
        "{}\n{}",
        gate.prompt, gate.context
    )));
    ev.preview = Some(gate::cut(&gate.context, 300).0);
    ev.detail = Some(gate.prompt.clone());
    session.audit.push(ev);
}

/// Whether an approved call was approved by the policy (or a trust), not
/// by a human answering this call.
fn by_policy(state: &CallState) -> bool {
    matches!(state, CallState::Approved { by, .. } if by == "policy" || by.starts_with("trust by "))
}

/// Refusal texts name addresses, not secrets; still, run them through the
/// built-in secret patterns before they enter the log.
fn spec_redact(text: &str) -> String {
    crate::audit::redact::Redactor::default().redact(text)
}

fn set_call_state(session: &mut Session, i: usize, state: CallState) {
    if let Some(pc) = session.agent_turn.as_mut().and_then(|t| t.calls.get_mut(i)) {
        pc.state = state;
    }
}

fn default_model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "gpt-4o-mini",
        ProviderKind::Ollama => "llama3.2",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::Echo => "echo",
    }
}

/// How many steps of a session have finished, for display.
pub fn finished_steps(state: &PatternState) -> usize {
    pattern::finished(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Detached;

    fn assert_send<T: Send>(_: &T) {}

    /// The Slack bot drives sessions from `tokio::spawn`: the engine's
    /// futures must stay `Send`.
    #[test]
    fn engine_futures_are_send() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let mut engine = Engine::new(&store);
        let mut channel = Detached;
        let fut = engine.resume("nope", None, &mut channel);
        assert_send(&fut);
    }
}
