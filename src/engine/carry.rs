//! Carrying out a recorded answer: what the gate's outcome does to the
//! run (continue, re-run with feedback, reject, skip, abort).
use super::{pattern, Engine};
use crate::audit::{AuditEvent, AuditKind};
use crate::channel::{HumanChannel, Progress};
use crate::error::{Error, Result};
use crate::gate;
use crate::gate::Outcome;
use crate::model::{GateEvent, GateEventKind, RecordKind, Session, Status, StepRecord};
use crate::spec::Spec;

impl Engine<'_> {
    /// Carries out a recorded answer on its open gate.
    pub(super) async fn carry_out<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        pending: crate::model::PendingAnswer,
        channel: &mut C,
    ) -> Result<()> {
        // An answer to an MCP server's question goes back to the server.
        if self.carry_reply(spec, session, &pending, channel).await? {
            return Ok(());
        }
        let answer = pending.answer;
        let gate = session.gates.get(&pending.gate).cloned().ok_or_else(|| {
            Error::Internal(format!(
                "session {} has an answer for gate {} that is not open",
                session.id, pending.gate
            ))
        })?;
        let handle = pending.gate;
        let mut outcome = gate::interpret(&gate, &answer.decision)?;
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
                crate::model::Decision::Modify { .. } | crate::model::Decision::Respond { .. }
            )
        {
            session.denied_calls.clear();
        }
        let waited_ms = gate.waited_ms(answer.at);
        session.history.push(GateEvent {
            gate: gate.id.clone(),
            instance: gate.instance,
            asked_at: Some(gate.opened_at),
            what: GateEventKind::Answered {
                answer: answer.clone(),
                waited_ms,
            },
        });
        session.pending = None;
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
                session.gates.remove(&handle);
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
                        finished_at: self.clock.now(),
                    },
                )?;
                session.hitl_response = Some(response);
                session.human_feedback = None;
                session.gates.remove(&handle);
                session.status = Status::Running;
            }
            Outcome::Rerun { feedback } if gate.trigger.is_some() => {
                pattern::forget(&mut session.state, &gate.position)?;
                let suffix = format!("@{}", gate.position);
                session.triggers_fired.retain(|k| !k.ends_with(&suffix));
                session.human_feedback = Some(feedback);
                session.gates.remove(&handle);
                session.status = Status::Running;
            }
            Outcome::Rerun { feedback } => {
                pattern::rewind(spec, &mut session.state, &gate.position)?;
                session.human_feedback = Some(feedback);
                session.gates.remove(&handle);
                session.status = Status::Running;
            }
            Outcome::Cancel { reason } => {
                let mut ev = AuditEvent::new(
                    AuditKind::Outcome,
                    &session.id,
                    &session.workflow,
                    self.clock.now(),
                );
                ev.gate = Some(gate.handle());
                ev.detail = Some(spec.redactor.redact(&format!(
                    "rejected{}",
                    reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
                )));
                session.audit.push(ev);
                session.gates.clear();
                session.status = Status::Rejected;
                session.events.push(crate::model::EventKind::RunRejected {
                    reason: reason.clone(),
                });
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
                        finished_at: self.clock.now(),
                    },
                )?;
                session.hitl_response = None;
                session.human_feedback = None;
                session.gates.remove(&handle);
                session.status = Status::Running;
            }
            // A timeout's `abort`: the run fails (not rejected: nobody said no).
            Outcome::Abort { reason } => {
                let message = format!(
                    "gate `{}` timed out: {}",
                    gate.id,
                    reason.unwrap_or_else(|| "aborted by fallback".into())
                );
                let mut ev = AuditEvent::new(
                    AuditKind::Outcome,
                    &session.id,
                    &session.workflow,
                    self.clock.now(),
                );
                ev.gate = Some(gate.handle());
                ev.detail = Some(spec.redactor.redact(&format!("failed: {message}")));
                session.audit.push(ev);
                session.gates.clear();
                session.status = Status::Failed;
                session.events.push(crate::model::EventKind::RunFailed {
                    message: message.clone(),
                });
                session.failure = Some(crate::model::Failure {
                    code: crate::error::exit::RUNTIME,
                    message: message.clone(),
                });
                aborted = Some(message);
            }
            Outcome::StayPaused => session.status = Status::Paused,
        }
        // The answer is on disk already (the intake recorded it): carrying
        // it out again after a crash lands here again. A run that goes on
        // reaches a durable write (a model request marked in flight, a gate
        // asked, the outcome) before anything outside acts, so this write
        // rides with it; an ending or still-paused run syncs now.
        let durability = if session.status == Status::Running {
            crate::store::Durability::WithNext
        } else {
            crate::store::Durability::Now
        };
        self.save_with(session, durability).await?;
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
}
