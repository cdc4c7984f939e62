//! The intake's rule for stepped-up gates (`step_up: passkey`): an
//! approval is recorded only with a [`Proof`] that a passkey of the
//! answering person signed exactly this approval. Every door's answer
//! comes through here; the web door is the only one that can obtain a
//! proof (`crate::web::passkeys`), so a click in Slack, Teams, a mail or
//! the API is refused with the page to confirm on.

use crate::model::person::Directory;
use crate::model::step_up::Proof;
use crate::model::{Answer, Decision, GateKind, OpenGate, Refusal, Session};

/// Whether `decision` lets the action go on: only those need the step-up.
/// Rejecting, deferring or asking for changes stops nothing from being
/// stopped, so a click still does.
pub fn needed_for(decision: &Decision) -> bool {
    matches!(
        decision,
        Decision::Approve | Decision::Edit { .. } | Decision::Trust { .. } | Decision::Fill { .. }
    ) || matches!(decision, Decision::Respond { text } if text.trim().eq_ignore_ascii_case("approved"))
}

/// The digest a stepped-up approval of `gate` binds: the tool call's
/// (with its arguments as edited, for an edit), else an approval
/// request's action digest, else the digest of what the gate showed (the
/// audit's `shown_digest`).
pub fn digest(
    session: &Session,
    gate: &OpenGate,
    call: Option<&str>,
    decision: &Decision,
) -> String {
    if gate.kind == GateKind::ToolCall {
        if let Some(turn) = &session.agent_turn {
            let waiting: Vec<_> = turn.waiting().collect();
            let pc = match call {
                Some(id) => turn.calls.iter().find(|c| c.call.id == id),
                None if waiting.len() == 1 => waiting.first().copied(),
                None => None,
            };
            if let Some(pc) = pc {
                if let Decision::Edit { arguments } = decision {
                    if let Ok(a) = crate::model::conversation::edited_arguments(&pc.call, arguments)
                    {
                        return crate::model::conversation::digest(&pc.call.name, &a);
                    }
                }
                return pc.digest.clone();
            }
        }
    }
    if let Some(d) = session
        .variables
        .get("action_digest")
        .and_then(|v| v.as_str())
        .filter(|d| !d.is_empty())
    {
        return d.to_string();
    }
    crate::audit::sha256_hex(&format!("{}\n{}", gate.prompt, gate.context))
}

/// Whether `answer` may be recorded at stepped-up `gate`: nothing to
/// check when the gate asks no step-up or the decision lets nothing go on;
/// else the answer's proof must be by a current passkey of the person
/// answering, over this session, gate, decision and action digest.
#[allow(clippy::result_large_err)] // see `Session::accept`
pub fn check(
    session: &Session,
    gate: &OpenGate,
    answer: &Answer,
    people: &Directory,
) -> Result<(), Refusal> {
    if gate.step_up.is_none() || !needed_for(&answer.decision) {
        return Ok(());
    }
    let Some(proof) = &answer.step_up else {
        return Err(Refusal::StepUp {
            link: String::new(),
        });
    };
    holds(session, gate, answer, proof, people).map_err(Refusal::NotAllowed)
}

fn holds(
    session: &Session,
    gate: &OpenGate,
    answer: &Answer,
    proof: &Proof,
    people: &Directory,
) -> Result<(), String> {
    let person = people.person_of(&answer.by).ok_or_else(|| {
        format!(
            "`{}` is not in the people directory, so has no passkey",
            answer.by
        )
    })?;
    if proof.person != person.name {
        return Err(format!(
            "that passkey is {}'s, not {}'s",
            proof.person, person.name
        ));
    }
    let key = person
        .passkey(&proof.credential)
        .filter(|k| k.removed_at.is_none())
        .ok_or_else(|| {
            format!(
                "passkey {} is not one of {}'s current passkeys (removed?)",
                proof.credential, person.name
            )
        })?;
    if key.public_key() != Some(proof.public_key.clone()) {
        return Err(format!(
            "passkey {} of {} has another public key than the proof's",
            proof.credential, person.name
        ));
    }
    let want = digest(session, gate, answer.call.as_deref(), &answer.decision);
    if proof.digest != want {
        return Err(format!(
            "the passkey confirmed another action (digest {}, this one is {want})",
            proof.digest
        ));
    }
    proof
        .check(&session.id, &gate.handle(), answer.decision.verb())
        .map_err(|e| e.0)
}
