//! Where an answer enters the run: one intake for every channel.
//!
//! [`Engine::submit`] is the only way an answer reaches a session: the
//! CLI's `resume`, the terminal and `--auto-approve` (through
//! [`Engine::drive`]'s ask), Slack clicks and modals, and later every other
//! room. It does, in order: find the gate the answer is for → refuse a
//! gate whose timeout passed (its fallback applies) → authorize who is
//! asking (approvers, groups, admins, self-approval) → type a form's
//! values (`gate::form`) → check the answer fits the gate → queue it (a
//! parked gate of a run that is busy with another branch) or record it
//! exactly once (compare-and-swap) → audit a refusal. What comes back is typed ([`Accepted`], [`Refusal`]); each
//! channel says it its own way. The engine prints nothing.

use super::{pattern, tools, Engine};
use crate::audit::{AuditEvent, AuditKind};
use crate::error::{Error, Result};
use crate::gate;
use crate::gate::Outcome;
use crate::model::person::Directory;
use crate::model::Refusal;
use crate::model::{Answer, GateEventKind, Session, Status};
use crate::spec::Spec;

/// Who is answering, as the channel that heard them knows them.
pub struct Asker<'a> {
    /// The identity: an OS user or `--as` name, a Slack user id, a token's name.
    pub who: &'a str,
    /// Admins of this installation: they may answer any gate.
    pub admins: &'a [String],
    /// Who may answer gates whose spec names nobody (empty: anyone).
    pub default_approvers: &'a [crate::model::Approver],
    /// Answers through a shared service (the bot): self-approval is off by
    /// default there for manual and tool gates.
    pub shared: bool,
    /// Whether `who` belongs to a group id (`S…`) listed as approver.
    pub member_of: &'a (dyn Fn(&str) -> bool + Sync),
    /// The groups the identity provider puts `who` in (a web sign-in's
    /// groups claim; empty elsewhere): `group:NAME` approvers count them.
    pub idp_groups: &'a [String],
    /// When they answer (the engine's clock): which delegations are in
    /// force.
    pub now: chrono::DateTime<chrono::Utc>,
}

/// What became of an accepted answer.
#[derive(Debug)]
pub enum Accepted {
    /// Recorded: the run can continue from it (drive the session).
    Recorded(Session),
    /// Recorded as one vote of a quorum, or one decision of several tool
    /// calls: the gate stays open.
    Counted(Session),
    /// For a gate of a run busy with another branch: it waits, and is
    /// recorded (first one wins) as soon as the run stops moving.
    Queued(Session),
    /// The same person gave this same answer to this gate already
    /// ([`Answer::repeats`]): nothing new is recorded; the run goes on from
    /// the first (drive the session).
    Repeated(Session),
}

impl Accepted {
    /// The session as the answer left it.
    pub fn session(&self) -> &Session {
        match self {
            Accepted::Recorded(s)
            | Accepted::Counted(s)
            | Accepted::Queued(s)
            | Accepted::Repeated(s) => s,
        }
    }
}

/// The handle of the gate an answer is for: `want` (a handle, or an id one
/// open gate has), or the only open gate.
#[allow(clippy::result_large_err)] // see `Session::accept`
fn pick_gate(
    session: &Session,
    want: Option<&str>,
    answer: &Answer,
) -> std::result::Result<String, Refusal> {
    let last = |handle: &str| {
        session.history.iter().rev().find_map(|e| match &e.what {
            GateEventKind::Answered { answer: a, .. }
                if format!("{}#{}", e.gate, e.instance) == handle
                    && (answer.call.is_none() || a.call == answer.call) =>
            {
                Some(a.clone())
            }
            _ => None,
        })
    };
    let listed = || {
        session
            .open_gates()
            .map(|g| format!("{} ({})", g.handle(), g.position))
            .collect::<Vec<_>>()
    };
    if let Some(p) = &session.pending {
        if want.is_none_or(|w| w == p.gate || session.find_gate(w).as_deref() == Some(&p.gate)) {
            return Err(Refusal::AlreadyAnswered(p.answer.clone()));
        }
    }
    match want {
        Some(w) => match session.find_gate(w) {
            Some(h) => Ok(h),
            None => Err(match last(w) {
                Some(a) => Refusal::AlreadyAnswered(a),
                None if session.gates.is_empty() => Refusal::NotOpen(session.status),
                None => Refusal::BadAnswer(format!(
                    "session {} has no open gate `{w}`; open: {}",
                    session.id,
                    listed().join(", ")
                )),
            }),
        },
        None => {
            let open: Vec<String> = session.open_gates().map(|g| g.handle()).collect();
            match open.as_slice() {
                [only] => Ok(only.clone()),
                // A finished run, or one going on after an answer: the
                // answer that decided its last gate.
                [] if session.status.is_terminal() || session.status == Status::Running => {
                    Err(session
                        .history
                        .iter()
                        .rev()
                        .find_map(|e| match &e.what {
                            GateEventKind::Answered { answer: a, .. } => Some(a.clone()),
                            _ => None,
                        })
                        .map(Refusal::AlreadyAnswered)
                        .unwrap_or(Refusal::NotOpen(session.status)))
                }
                [] => Err(Refusal::NotOpen(session.status)),
                many => Err(Refusal::BadAnswer(format!(
                    "session {} has {} gates open; pick one with --gate: {}",
                    session.id,
                    many.len(),
                    listed().join(", ")
                ))),
            }
        }
    }
}

/// The tool call an answer to a tool-call gate is for: the one it names,
/// or the only one waiting.
fn answered_call<'s>(
    session: &'s Session,
    answer: &Answer,
) -> Option<&'s crate::model::PendingCall> {
    let turn = session.agent_turn.as_ref()?;
    match &answer.call {
        Some(id) => turn.calls.iter().find(|c| &c.call.id == id),
        None => {
            let mut waiting = turn.waiting();
            match (waiting.next(), waiting.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        }
    }
}

/// The answer that already decided the gate `answer` is for, when
/// `answer` repeats it ([`Answer::repeats`]): recorded and not yet carried
/// out (a process killed mid-resume), or carried out since.
fn repeated(session: &Session, want: Option<&str>, answer: &Answer) -> Option<Answer> {
    let Err(Refusal::AlreadyAnswered(earlier)) = pick_gate(session, want, answer) else {
        return None;
    };
    answer.repeats(&earlier).then_some(earlier)
}

impl Engine<'_> {
    /// The one intake: takes `answer` for gate `gate` (a handle or a gate
    /// id; `None`: the only open gate) of session `id`, from `asker`.
    /// `Ok(Err(refusal))` changed nothing but the audit trail;
    /// `Err` is a store or internal failure.
    #[allow(clippy::result_large_err)] // see `Session::accept`
    pub async fn submit(
        &mut self,
        id: &str,
        gate: Option<&str>,
        answer: Answer,
        asker: &Asker<'_>,
    ) -> Result<std::result::Result<Accepted, Refusal>> {
        let Some(session) = self.store.load(id).await? else {
            return Ok(Err(Refusal::NotFound));
        };
        // What follows is in the answer's span (each part instrumented:
        // the futures of a run nest deep enough as they are).
        use tracing::Instrument as _;
        let span = crate::traces::answer_span(&session, gate, &answer);
        // Judged on people: the directory as stored now (small), so every
        // process and replica judges alike. The answer keeps the channel
        // identity used (`by`) and the person it belongs to.
        let people = self.store.directory().instrument(span.clone()).await?;
        let mut answer = answer;
        answer.person = people.person_of(&answer.by).map(|p| p.name.clone());
        if repeated(&session, gate, &answer).is_some() {
            return Ok(Ok(Accepted::Repeated(session)));
        }
        let outcome = self
            .take(&session, gate, &answer, asker, &people)
            .instrument(span.clone())
            .await?;
        if let Err(refusal) = &outcome {
            if !matches!(refusal, Refusal::NotFound) {
                let handle = gate
                    .and_then(|w| session.find_gate(w))
                    .or_else(|| gate.map(str::to_string))
                    .or_else(|| session.first_gate().map(|g| g.handle()));
                self.audit_refusal(&session, handle.as_deref(), &answer, &refusal.to_string())
                    .instrument(span)
                    .await;
            }
        }
        Ok(outcome)
    }

    #[allow(clippy::result_large_err)] // see `Session::accept`
    pub(super) async fn take(
        &mut self,
        session: &Session,
        want: Option<&str>,
        answer: &Answer,
        asker: &Asker<'_>,
        people: &Directory,
    ) -> Result<std::result::Result<Accepted, Refusal>> {
        let handle = match pick_gate(session, want, answer) {
            Ok(h) => h,
            Err(r) => return Ok(Err(r)),
        };
        let Some(open) = session.gates.get(&handle) else {
            return Ok(Err(Refusal::Stale { open: None }));
        };
        let mut allowed = gate::Allowed::default();
        if answer.via != "timeout" {
            if let Some(at) = open.timeout_at.filter(|_| open.timed_out(self.clock.now())) {
                return Ok(Err(Refusal::TimedOut {
                    gate: open.id.clone(),
                    at,
                }));
            }
            match authorize(open, session, &answer.decision, asker, people) {
                Ok(a) => allowed = a,
                Err(refusal) => return Ok(Err(refusal)),
            }
            // `step_up: passkey`: an approval carries a passkey's proof.
            if let Err(refusal) = gate::step_up::check(session, open, answer, people) {
                return Ok(Err(refusal));
            }
        }
        // A form's values are recorded as the gate reads them (typed,
        // defaults filled in), or refused each naming its field.
        let settled = match gate::form::settle(open, &answer.decision) {
            Ok(d) => d,
            Err(errors) => return Ok(Err(Refusal::BadValues(errors))),
        };
        // Recorded as given, with whom a delegate answered for, or the
        // identity provider's group that listed them.
        let delegated;
        let answer = match (allowed, settled) {
            (
                gate::Allowed {
                    on_behalf_of: None,
                    idp_group: None,
                },
                None,
            ) => answer,
            (allowed, decision) => {
                let mut a = answer.clone();
                if let Some(whom) = allowed.on_behalf_of {
                    a.on_behalf_of = Some(whom);
                }
                if let Some(g) = allowed.idp_group {
                    a.idp_group = Some(g);
                }
                if let Some(d) = decision {
                    a.decision = d;
                }
                delegated = a;
                &delegated
            }
        };
        let spec = self.spec(session)?;
        // An edited MCP call is checked against its server's schema,
        // fetched now if this process has not seen it; past the deadline
        // (a click must be acknowledged in 3 s) the live schema is checked
        // before the call runs instead.
        let prepare = tools::prepare_answer_check(&spec, session, &handle, answer);
        let prepared = match self.prepare_deadline {
            Some(d) => tokio::time::timeout(d, prepare).await.unwrap_or(Ok(())),
            None => prepare.await,
        };
        match prepared {
            Ok(()) => {}
            Err(Error::Usage(why)) => return Ok(Err(Refusal::BadAnswer(why))),
            Err(e) => return Err(e),
        }
        // `trust: never` on the rule that decides the call: no trust.
        if let (crate::model::Decision::Trust { .. }, crate::model::GateKind::ToolCall) =
            (&answer.decision, open.kind)
        {
            if let Some(pc) = answered_call(session, answer) {
                if self.trust_never(&spec, session, Some(&open.position), &pc.call) {
                    return Ok(Err(Refusal::NotAllowed(format!(
                        "`{}` cannot be trusted: the approval rule that decides this call says `trust: never` (approve or reject it instead)",
                        pc.call.name
                    ))));
                }
            }
        }
        if let Err(e) = Self::check_answer(&spec, session, &handle, answer) {
            return Ok(Err(Refusal::BadAnswer(e.to_string())));
        }
        if session.status == Status::Running && open.kind != crate::model::GateKind::ToolCall {
            // Another branch is running: the answer waits for the engine.
            return Ok(
                match self
                    .store
                    .queue_answer(&session.id, &handle, answer)
                    .await?
                {
                    Ok(()) => Ok(Accepted::Queued(session.clone())),
                    Err(r) => Err(r),
                },
            );
        }
        let recorded = self
            .store
            .record_answer(&session.id, Some(&handle), answer)
            .await?;
        if recorded.is_ok() {
            self.put_grant(session, &handle, answer).await?;
        }
        Ok(match recorded {
            Ok(s) if s.status == Status::Paused => Ok(Accepted::Counted(s)),
            Ok(s) => Ok(Accepted::Recorded(s)),
            Err(r) => Err(r),
        })
    }

    /// A recorded trust within limits becomes its grant, stored with its
    /// audit entry (once: the id comes from the answer). Stored after the
    /// answer: a crash between the two leaves the call approved and no
    /// grant — later calls ask again, never the other way round.
    async fn put_grant(&self, before: &Session, handle: &str, answer: &Answer) -> Result<()> {
        let crate::model::Decision::Trust { limit: Some(limit) } = &answer.decision else {
            return Ok(());
        };
        let Some(pc) = answered_call(before, answer) else {
            return Ok(());
        };
        let by = answer.person.as_deref().unwrap_or(&answer.by);
        let grant = crate::model::grant::Grant::new(
            limit,
            &pc.call.name,
            &before.workflow,
            by,
            answer.at,
            crate::model::grant::Origin {
                session: before.id.clone(),
                gate: handle.to_string(),
                call: pc.call.id.clone(),
            },
        );
        let mut ev = AuditEvent::new(AuditKind::Grant, &before.id, &before.workflow, answer.at);
        ev.gate = Some(handle.to_string());
        ev.call = Some(pc.call.id.clone());
        ev.who = Some(answer.by.clone());
        ev.person = answer.person.clone();
        ev.via = Some(answer.via.clone());
        ev.grant = Some(grant.id.clone());
        ev.detail = Some(
            crate::audit::redact::Redactor::default().redact(&format!("granted: {}", grant.rule())),
        );
        self.store.put_grant(&grant, &ev).await?;
        Ok(())
    }

    /// Checks that an answer fits the open gate, before it is recorded, so a
    /// bad answer changes nothing.
    pub fn check_answer(
        spec: &Spec,
        session: &Session,
        handle: &str,
        answer: &Answer,
    ) -> Result<()> {
        answer.decision.check_limits().map_err(Error::Usage)?;
        let Some(gate) = session.gates.get(handle) else {
            return Err(Error::Session(format!(
                "session {} has no open gate `{handle}`",
                session.id
            )));
        };
        if gate.kind == crate::spec::GateKind::ToolCall {
            return Self::check_tool_answer(spec, session, answer);
        }
        if let Some(fits) = super::elicit::check_reply(session, gate, answer) {
            return fits;
        }
        if let (true, crate::model::Decision::Reject { reason }) =
            (gate.require_reason, &answer.decision)
        {
            if reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return Err(Error::Usage(format!(
                    "gate `{}` needs a reason to reject (--reason R)",
                    gate.id
                )));
            }
        }
        let outcome = gate::interpret(gate, &answer.decision)?;
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
    pub(super) fn check_tool_answer(spec: &Spec, session: &Session, answer: &Answer) -> Result<()> {
        let turn = session
            .agent_turn
            .as_ref()
            .ok_or_else(|| Error::Session("no tool calls are waiting".into()))?;
        let waiting: Vec<&crate::model::PendingCall> = turn.waiting().collect();
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
        let toolbox = tools::Toolbox::for_agent(spec, agent, &[])?;
        match &answer.decision {
            crate::model::Decision::Approve | crate::model::Decision::Reject { .. } => Ok(()),
            crate::model::Decision::Trust { limit } => {
                if toolbox.trustable(&pc.call.name)
                    && pc.request.as_ref().is_none_or(|r| r.trustable)
                {
                    match limit {
                        Some(l) if !l.holds(&pc.call.arguments) => Err(Error::Usage(format!(
                            "the match does not hold for this call, so it would allow nothing like it: {} (arguments: {})",
                            l.rule(&pc.call.name),
                            crate::model::cut(&pc.call.arguments.to_string(), 300).0
                        ))),
                        _ => Ok(()),
                    }
                } else {
                    Err(Error::Usage(format!(
                        "`{}` cannot be trusted here (trust needs enable_trust on the agent; shell and `!`-negated tools never)",
                        pc.call.name
                    )))
                }
            }
            crate::model::Decision::Edit { arguments } => {
                let args = crate::model::edited_arguments(&pc.call, arguments).map_err(Error::Usage)?;
                toolbox.check_edit(&pc.call.name, &args)
            }
            other => Err(Error::Usage(format!(
                "a tool call takes --approve, --reject [--reason R], --edit-args JSON or --trust, not {}",
                other.verb()
            ))),
        }
    }

    /// Records an answer queued for one of several open gates while the
    /// run was busy (`store::queued`), exactly as if it had just been
    /// given: compare-and-swap, refusals audited. True when one was
    /// recorded.
    pub(super) async fn apply_queued(&mut self, session: &mut Session) -> Result<bool> {
        if session.gates.is_empty() {
            return Ok(false);
        }
        for (handle, answer) in self.store.queued_answers(&session.id).await? {
            if session.open_gate(&handle).is_none() {
                self.store.drop_queued(&session.id, &handle).await?;
                continue;
            }
            let recorded = self
                .store
                .record_answer(&session.id, Some(&handle), &answer)
                .await?;
            self.store.drop_queued(&session.id, &handle).await?;
            match recorded {
                Ok(updated) => {
                    *session = updated;
                    return Ok(true);
                }
                Err(refusal) => {
                    self.audit_refusal(session, Some(&handle), &answer, &refusal.to_string())
                        .await
                }
            }
        }
        Ok(false)
    }

    /// Records a refused answer in the audit log; nothing else changed.
    pub(super) async fn audit_refusal(
        &self,
        session: &Session,
        gate: Option<&str>,
        answer: &Answer,
        why: &str,
    ) {
        let mut ev = AuditEvent::new(
            AuditKind::Refusal,
            &session.id,
            &session.workflow,
            self.clock.now(),
        );
        ev.gate = gate.map(str::to_string);
        ev.call = answer.call.clone();
        ev.who = Some(answer.by.clone());
        ev.person = answer.person.clone();
        ev.via = Some(answer.via.clone());
        ev.detail = Some(why.to_string());
        ev.trace_id = session.trace_id().map(str::to_string);
        if let Err(e) = self.store.append_audit(&[ev]).await {
            tracing::error!("could not audit a refused answer: {e}");
        }
    }
}

/// Records a timeout's answer for gate `timer.gate` exactly once — the
/// same rule as every answer (`Session::accept`, compare-and-swap) — and
/// marks the timer fired in the same transaction. A refusal (someone
/// answered first) changes nothing.
#[allow(clippy::result_large_err)] // see `Session::accept`
pub async fn record_timeout(
    store: &crate::store::Store,
    timer: &crate::store::Timer,
    answer: &Answer,
    fired: &crate::store::Fired,
) -> Result<std::result::Result<Session, Refusal>> {
    store.record_timeout(timer, answer, fired).await
}

/// Whether `asker` may give `answer` at `gate`: the gate's approvers (the
/// installation's default approvers when the spec names nobody), groups,
/// admins, self-approval ([`gate::authorize`]), judged on the people of
/// `people` (a caller it does not know: on their channel identity). The
/// error is what the person is told; [`gate::Allowed`] says whether they
/// answer as a delegate or through a group of the identity provider.
#[allow(clippy::result_large_err)] // see `Session::accept`
pub fn authorize(
    gate: &crate::model::OpenGate,
    session: &Session,
    decision: &crate::model::Decision,
    asker: &Asker<'_>,
    people: &Directory,
) -> std::result::Result<gate::Allowed, Refusal> {
    let with_default;
    let gate = if gate.approvers.is_empty() && !asker.default_approvers.is_empty() {
        let mut g = gate.clone();
        g.approvers = asker.default_approvers.to_vec();
        with_default = g;
        &with_default
    } else {
        gate
    };
    gate::authorize(
        gate,
        decision,
        &gate::Identity {
            who: asker.who,
            started_by: &session.started_by,
            in_bot: asker.shared,
            admins: asker.admins,
            member_of: asker.member_of,
            idp_groups: asker.idp_groups,
            people,
            now: asker.now,
        },
    )
}

#[cfg(test)]
mod tests;
