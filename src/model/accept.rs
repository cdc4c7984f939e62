//! Recording an answer exactly once: the rule the store runs inside its
//! compare-and-swap ([`Session::accept`]), and why an answer may be refused
//! ([`Refusal`]).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::gate::{Answer, Approval, Decision, GateKind, OpenGate};
use super::session::{CallState, GateEvent, GateEventKind, PendingAnswer, Session, Status};

/// Why an answer was not taken. Nothing changed in any of these cases.
/// Every channel renders it its own way (an exit code, an ephemeral, an
/// HTTP status); the engine prints nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// No such session.
    NotFound,
    /// The session is not waiting for an answer (its status).
    NotOpen(Status),
    /// The answer names a gate (or call) that is no longer open.
    Stale { open: Option<String> },
    /// This person may not give this answer here; says why.
    NotAllowed(String),
    /// This person is none of the gate's approvers (who are named, for the
    /// door to show its way).
    NotApprover(Vec<super::Approver>),
    /// Another answer got there first.
    AlreadyAnswered(Answer),
    /// The answer does not fit the gate; says what would.
    BadAnswer(String),
    /// Values the gate's form refuses: each field, and what it must be.
    BadValues(Vec<super::form::FieldError>),
    /// The gate's timeout passed: its fallback applies instead.
    TimedOut { gate: String, at: DateTime<Utc> },
    /// Approving this gate takes the approver's passkey
    /// (`step_up: passkey`), on the gate's web page at `link` (filled in
    /// by the hub, which knows where the pages are).
    StepUp { link: String },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotFound => write!(f, "no such session"),
            Refusal::NotOpen(s) => write!(f, "the session is {s}, not paused"),
            Refusal::Stale { open: Some(g) } => {
                write!(f, "that gate is no longer open (the open gate is {g})")
            }
            Refusal::Stale { open: None } => write!(f, "that gate is no longer open"),
            Refusal::NotAllowed(why) | Refusal::BadAnswer(why) => f.write_str(why),
            Refusal::StepUp { link } if link.is_empty() => f.write_str(
                "approving this needs your passkey: confirm with your passkey on the gate's web page",
            ),
            Refusal::StepUp { link } => write!(
                f,
                "approving this needs your passkey: confirm with your passkey at {link}"
            ),
            Refusal::NotApprover(approvers) => write!(
                f,
                "you are not an approver for this gate (approvers: {})",
                super::identity::listed(approvers)
            ),
            Refusal::BadValues(errors) => write!(
                f,
                "the values do not fit the form: {}",
                errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Refusal::AlreadyAnswered(a) => write!(
                f,
                "already {} by {} at {}",
                a.decision.verb(),
                a.by,
                a.at.format("%Y-%m-%d %H:%M:%S UTC")
            ),
            Refusal::TimedOut { gate, at } => write!(
                f,
                "gate `{gate}` timed out at {}; its fallback applies instead of this answer",
                at.to_rfc3339()
            ),
        }
    }
}

/// Which tally an answer counts towards.
#[derive(Clone, Copy)]
enum Vote {
    Approve,
    Reject,
}

/// Appends the audit record of an answer (redacted: an edit's arguments may
/// hold secrets) to the session's outbox, written with the answer itself.
fn audit_answer(session: &mut Session, gate: &OpenGate, answer: &Answer, waited_ms: u64) {
    use crate::audit::{AuditEvent, AuditKind};
    let kind = if answer.via == "timeout" {
        AuditKind::Timeout
    } else {
        AuditKind::Answer
    };
    let mut ev = AuditEvent::new(kind, &session.id, &session.workflow, answer.at);
    ev.gate = Some(gate.handle());
    ev.call = answer.call.clone();
    ev.who = Some(answer.by.clone());
    ev.person = answer.person.clone();
    ev.on_behalf_of = answer.on_behalf_of.clone();
    if let Some(whom) = &answer.on_behalf_of {
        let me = answer.person.as_deref().unwrap_or(&answer.by);
        ev.detail = Some(format!("{me} for {whom}"));
    }
    if let Some(g) = &answer.idp_group {
        ev.idp_group = Some(g.clone());
        ev.detail = Some(format!(
            "approver as a member of group:{g} by the identity provider's groups claim"
        ));
    }
    ev.via = Some(answer.via.clone());
    let redactor = crate::audit::redact::Redactor::default();
    let text = serde_json::to_string(&answer.decision).unwrap_or_default();
    let redacted = redactor.redact(&text);
    ev.decision = Some(serde_json::from_str(&redacted).unwrap_or(Value::String(redacted)));
    ev.response_ms = Some(waited_ms);
    ev.trace_id = session.trace_id().map(str::to_string);
    ev.step_up = answer.step_up.as_deref().cloned();
    // Trust within limits: the answer points to the grant it makes (whose
    // origin — session, gate, call — points back to this entry).
    if let (Decision::Trust { limit: Some(_) }, Some(call)) = (&answer.decision, &answer.call) {
        ev.grant = Some(super::grant::Grant::id_for(
            &session.id,
            &gate.handle(),
            call,
        ));
    }
    session.audit.push(ev);
}

impl Session {
    // A refusal carries the answer that won, for "already decided by"; it
    // is returned once per click, so its size does not matter.
    #[allow(clippy::result_large_err)]
    /// Records `answer` on the open gate `handle` (or the only open gate),
    /// exactly once — the body of the store's compare-and-swap. A manual or
    /// `hitl` gate takes the answer whole (the engine carries it out next);
    /// a tool-call gate takes one decision per call and closes when no call
    /// waits any more.
    pub fn accept(&mut self, handle: Option<&str>, answer: &Answer) -> Result<(), Refusal> {
        accept(self, handle, answer)
    }
}

#[allow(clippy::result_large_err)] // see `Session::accept`
fn accept(
    session: &mut Session,
    handle: Option<&str>,
    answer: &Answer,
) -> std::result::Result<(), Refusal> {
    if let Some(prev) = &session.pending {
        return Err(Refusal::AlreadyAnswered(prev.answer.clone()));
    }
    let last = |s: &Session, call: Option<&str>| {
        s.history.iter().rev().find_map(|e| match &e.what {
            GateEventKind::Answered { answer, .. }
                if handle.is_none_or(|h| h == format!("{}#{}", e.gate, e.instance))
                    && (call.is_none() || answer.call.as_deref() == call) =>
            {
                Some(answer.clone())
            }
            _ => None,
        })
    };
    if session.status != Status::Paused {
        return Err(
            match handle.and_then(|_| last(session, answer.call.as_deref())) {
                Some(a) => Refusal::AlreadyAnswered(a),
                None => Refusal::NotOpen(session.status),
            },
        );
    }
    let gate = match handle {
        Some(want) => match session.gates.get(want) {
            Some(g) => g.clone(),
            None => {
                return Err(match last(session, answer.call.as_deref()) {
                    Some(a) => Refusal::AlreadyAnswered(a),
                    None => Refusal::Stale {
                        open: session.first_gate().map(|g| g.handle()),
                    },
                })
            }
        },
        None => {
            let mut open = session.open_gates();
            match (open.next(), open.next()) {
                (Some(g), None) => g.clone(),
                (None, _) => return Err(Refusal::NotOpen(session.status)),
                (Some(_), Some(_)) => {
                    let all: Vec<String> = session.open_gates().map(|g| g.handle()).collect();
                    return Err(Refusal::BadAnswer(format!(
                        "{} gates are open; pick one with --gate: {}",
                        all.len(),
                        all.join(", ")
                    )));
                }
            }
        }
    };
    let handle = gate.handle();
    let waited_ms = gate.waited_ms(answer.at);
    if gate.kind != GateKind::ToolCall {
        // A timeout's answer is final; it never counts as one vote.
        let vote = match answer.decision {
            _ if answer.via == "timeout" => None,
            // A fill and a manual gate's trust approve too.
            Decision::Approve | Decision::Fill { .. } | Decision::Trust { .. }
                if gate.approvals_required > 1 =>
            {
                Some(Vote::Approve)
            }
            Decision::Reject { .. } if gate.rejections_required > 1 => Some(Vote::Reject),
            _ => None,
        };
        audit_answer(session, &gate, answer, waited_ms);
        session
            .events
            .push(super::event::EventKind::answered(&handle, answer));
        if let Some(vote) = vote {
            let (tally, required, noun) = match vote {
                Vote::Approve => (&gate.approvals, gate.approvals_required, "approv"),
                Vote::Reject => (&gate.rejections, gate.rejections_required, "reject"),
            };
            // One person counts once: the same channel identity, or the
            // same person (the directory's) from another channel. A
            // delegate's vote is theirs (one human, one vote, whoever
            // they stand in for); and the person stood in for is not
            // counted twice either (alice, then bob for alice).
            let same = |a: &Approval| {
                a.by == answer.by || (a.person.is_some() && a.person == answer.person)
            };
            if tally.iter().any(same) {
                return Err(Refusal::NotAllowed(format!(
                    "you already {noun}ed this gate ({} of {required} {noun}{})",
                    tally.len(),
                    if noun == "approv" { "als" } else { "ions" }
                )));
            }
            let whom = answer.on_behalf_of.as_deref();
            if let Some(whom) = whom.filter(|w| {
                tally.iter().any(|a| {
                    a.person.as_deref() == Some(*w) || a.on_behalf_of.as_deref() == Some(*w)
                })
            }) {
                return Err(Refusal::NotAllowed(format!(
                    "{whom} is already counted at this gate ({} of {required} {noun}{})",
                    tally.len(),
                    if noun == "approv" { "als" } else { "ions" }
                )));
            }
            if let Some(a) = answer
                .person
                .as_deref()
                .and_then(|me| tally.iter().find(|a| a.on_behalf_of.as_deref() == Some(me)))
            {
                return Err(Refusal::NotAllowed(format!(
                    "{} already answered this gate for you ({} of {required} {noun}{})",
                    a.person.as_deref().unwrap_or(&a.by),
                    tally.len(),
                    if noun == "approv" { "als" } else { "ions" }
                )));
            }
            let Some(open) = session.gates.get_mut(&handle) else {
                return Err(Refusal::NotOpen(session.status));
            };
            let list = match vote {
                Vote::Approve => &mut open.approvals,
                Vote::Reject => &mut open.rejections,
            };
            list.push(Approval {
                by: answer.by.clone(),
                at: answer.at,
                person: answer.person.clone(),
                on_behalf_of: answer.on_behalf_of.clone(),
            });
            if (list.len() as u32) < required {
                // Counted; the gate stays open until the tally is complete.
                session.history.push(GateEvent {
                    gate: gate.id.clone(),
                    instance: gate.instance,
                    asked_at: Some(gate.opened_at),
                    what: GateEventKind::Answered {
                        answer: answer.clone(),
                        waited_ms,
                    },
                });
                return Ok(());
            }
        }
        session.pending = Some(PendingAnswer {
            gate: handle,
            answer: answer.clone(),
        });
        session.status = Status::Running;
        return Ok(());
    }

    // A tool-call gate: one decision per call.
    let already = last(session, answer.call.as_deref());
    let Some(turn) = session.agent_turn.as_mut() else {
        return Err(Refusal::BadAnswer("no tool calls are waiting".into()));
    };
    let waiting: Vec<String> = turn.waiting().map(|c| c.call.id.clone()).collect();
    let id = match (&answer.call, waiting.as_slice()) {
        (Some(id), _) => id.clone(),
        (None, [only]) => only.clone(),
        (None, []) => return Err(Refusal::BadAnswer("no tool calls are waiting".into())),
        (None, many) => {
            return Err(Refusal::BadAnswer(format!(
                "{} calls are waiting; name one with --call: {}",
                many.len(),
                many.join(", ")
            )))
        }
    };
    let Some(pc) = turn.calls.iter_mut().find(|c| c.call.id == id) else {
        return Err(Refusal::BadAnswer(format!(
            "no call `{id}` in this request"
        )));
    };
    if pc.state != CallState::Waiting {
        return Err(match already {
            Some(a) => Refusal::AlreadyAnswered(a),
            None => Refusal::BadAnswer(format!("call `{id}` is no longer waiting")),
        });
    }
    let by = answer.by.clone();
    let mut trusted = None;
    pc.state = match &answer.decision {
        Decision::Approve => CallState::Approved {
            by: by.clone(),
            digest: pc.digest.clone(),
        },
        Decision::Trust { limit } => {
            trusted = Some((pc.call.name.clone(), limit.clone()));
            CallState::Approved {
                by: by.clone(),
                digest: pc.digest.clone(),
            }
        }
        Decision::Edit { arguments } => {
            // `{name, arguments}` naming the call's own tool unwraps to its
            // arguments; naming another tool is refused.
            let arguments = super::conversation::edited_arguments(&pc.call, arguments)
                .map_err(Refusal::BadAnswer)?;
            pc.call.arguments = arguments.clone();
            pc.digest = super::conversation::digest(&pc.call.name, &arguments);
            CallState::Approved {
                by: by.clone(),
                digest: pc.digest.clone(),
            }
        }
        Decision::Reject { reason } => {
            let why = match reason {
                Some(r) if !r.trim().is_empty() => {
                    format!("denied by {}: {r}", crate::model::identity::quoted(&by))
                }
                _ => format!("denied by {}", crate::model::identity::quoted(&by)),
            };
            session.denied_calls.insert(pc.digest.clone(), why);
            CallState::Rejected {
                by: by.clone(),
                reason: reason.clone(),
            }
        }
        other => {
            return Err(Refusal::BadAnswer(format!(
                "a tool call takes approve, reject, edit or trust, not {}",
                other.verb()
            )))
        }
    };
    let mut answer = answer.clone();
    answer.call = Some(id.clone());
    // A call whose request offers no trust (a host the model chose, a
    // rule with `trust: never`) waits for its own answer.
    let offers_trust =
        |c: &super::session::PendingCall| c.request.as_ref().is_none_or(|r| r.trustable);
    match trusted {
        // Trust approves the tool for the rest of the run, starting with the
        // other calls of this batch.
        Some((name, None)) => {
            for other in turn.calls.iter_mut() {
                if other.call.name == name
                    && other.state == CallState::Waiting
                    && offers_trust(other)
                {
                    other.state = CallState::Approved {
                        by: format!("trust by {by}"),
                        digest: other.digest.clone(),
                    };
                }
            }
            session.trusted_tools.insert(name);
        }
        // Within limits: the grant (stored by the intake once this is
        // recorded) approves the other calls of this batch it allows.
        Some((name, Some(limit))) => {
            let grant = super::grant::Grant::id_for(&session.id, &handle, &id);
            for other in turn.calls.iter_mut() {
                if other.call.name == name
                    && other.state == CallState::Waiting
                    && offers_trust(other)
                    && limit.holds(&other.call.arguments)
                {
                    other.state = CallState::Approved {
                        by: format!("grant {grant} by {by}"),
                        digest: other.digest.clone(),
                    };
                    other.grant = Some(grant.clone());
                }
            }
        }
        None => {}
    }
    let done = turn.waiting().next().is_none();
    audit_answer(session, &gate, &answer, waited_ms);
    session
        .events
        .push(super::event::EventKind::answered(&handle, &answer));
    session.history.push(GateEvent {
        gate: gate.id.clone(),
        instance: gate.instance,
        asked_at: Some(gate.opened_at),
        what: GateEventKind::Answered { answer, waited_ms },
    });
    if done {
        session.gates.remove(&handle);
        session.status = Status::Running;
    }
    Ok(())
}
