//! Batches: many gates decided in one action — the web inbox's ticked
//! gates, `strands answer ID…`, `POST /api/v1/answers`. Each gate gets its
//! own answer through the one way in ([`Hub::record`]): authorized,
//! recorded exactly once and audited on its own, as if answered alone.
//!
//! A batch decides only what one answer decides. A gate that needs more
//! than this answer — approvals still to gather from others (a quorum), a
//! passkey, a form to fill in, an MCP server's question — is left out,
//! saying why, to be answered on its own page. Nothing is recorded for it.

use serde::{Deserialize, Serialize};

use super::door::{Accepted, DoorAnswer};
use super::Hub;
use crate::error::Result;
use crate::model::{Decision, GateKind, OpenGate, Session, Status};

/// One gate to decide: a session (an id, or an unambiguous prefix from
/// the CLI and the API) and which of its gates (its handle or id; the
/// only open one when absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
}

/// What became of one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    pub result: Fate,
    /// What happened, in words ("approved", "needs 2 more approvals: …").
    pub message: String,
}

/// How one item ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// The answer was recorded (it decided the gate, or counted toward it).
    Recorded,
    /// Not part of a batch: it needs more than this one answer.
    LeftOut,
    /// The intake refused it (not an approver, already decided, …).
    Refused,
}

impl Outcome {
    pub fn recorded(&self) -> bool {
        self.result == Fate::Recorded
    }
}

/// Why `g` cannot be decided by `decision` within a batch, if it cannot.
pub fn left_out(s: &Session, g: &OpenGate, decision: &Decision) -> Option<String> {
    if g.step_up.is_some() && matches!(decision, Decision::Approve) {
        return Some("needs a passkey: approve it on its own page".into());
    }
    if g.form.is_some() && matches!(decision, Decision::Approve) {
        return Some("has a form to fill in: answer it on its own page".into());
    }
    if crate::engine::elicit::asking_at(s, &g.handle()).is_some() {
        return Some("is an MCP server's question: answer it on its own page".into());
    }
    let (needed, have, what) = match decision {
        Decision::Reject { .. } => (g.rejections_required, g.rejections.len(), "rejections"),
        _ => (g.approvals_required, g.approvals.len(), "approvals"),
    };
    let more = (needed as usize).saturating_sub(have);
    if more > 1 && g.kind == GateKind::ManualGate {
        return Some(format!(
            "needs {more} more {what} (a quorum of {needed}): each approver answers it on their own"
        ));
    }
    None
}

/// The gate `item` names in `s`: by handle or id, else the only open one.
fn target<'a>(s: &'a Session, gate: Option<&str>) -> Option<&'a OpenGate> {
    match gate {
        Some(g) => s
            .open_gates()
            .find(|o| o.handle() == g)
            .or_else(|| s.open_gates().find(|o| o.id == g)),
        None => {
            let mut open = s.open_gates();
            let first = open.next();
            open.next().is_none().then_some(first).flatten()
        }
    }
}

/// Decides every item as `how` says — who answers, through which door,
/// with which groups, what decision (its session and gate are each
/// item's) — one answer each, in order. `drive`: the runs answered go on
/// in the background (a server); the CLI drives them itself.
pub async fn decide(
    hub: &Hub,
    how: &DoorAnswer,
    items: &[Item],
    drive: bool,
) -> Result<Vec<Outcome>> {
    let decision = &how.decision;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let mut outcome = Outcome {
            session: item.session.clone(),
            gate: item.gate.clone(),
            result: Fate::Refused,
            message: String::new(),
        };
        let id = match hub.store.resolve(&item.session).await {
            Ok(id) => id,
            Err(e) => {
                outcome.message = e.to_string();
                out.push(outcome);
                continue;
            }
        };
        outcome.session = id.clone();
        if let Some(s) = hub.store.load(&id).await? {
            if s.status == Status::Paused {
                if let Some(g) = target(&s, item.gate.as_deref()) {
                    outcome.gate = Some(g.handle());
                    if let Some(why) = left_out(&s, g, decision) {
                        outcome.result = Fate::LeftOut;
                        outcome.message = format!("left out: `{}` {why}", g.id);
                        out.push(outcome);
                        continue;
                    }
                }
            }
        }
        let mut answer = how.clone();
        answer.session = id.clone();
        answer.gate = outcome.gate.clone().or_else(|| item.gate.clone());
        match hub.record(answer).await? {
            Ok(accepted) => {
                outcome.result = Fate::Recorded;
                outcome.message = match &accepted {
                    Accepted::Counted(_) => "counted; more are needed".into(),
                    Accepted::Repeated(_) => "already recorded (the same answer)".into(),
                    _ => decision.verb().into(),
                };
                if drive
                    && matches!(
                        accepted,
                        Accepted::Recorded(_) | Accepted::Queued(_) | Accepted::Repeated(_)
                    )
                {
                    hub.drive(id);
                }
            }
            Err(refusal) => outcome.message = refusal.to_string(),
        }
        out.push(outcome);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Approval;

    fn session_with(g: OpenGate) -> Session {
        let mut s = crate::gate::testkit::paused_session("s1");
        s.gates.clear();
        s.gates.insert(g.handle(), g);
        s
    }

    fn approval(by: &str) -> Approval {
        Approval {
            by: by.into(),
            at: crate::clock::test_epoch(),
            person: None,
            on_behalf_of: None,
        }
    }

    #[test]
    fn a_gate_one_answer_decides_is_in_a_quorum_still_to_gather_is_left_out() {
        let mut g = OpenGate::for_tests("review");
        let s = session_with(g.clone());
        assert_eq!(left_out(&s, &g, &Decision::Approve), None);
        g.approvals_required = 3;
        g.approvals.push(approval("alice"));
        let s = session_with(g.clone());
        let why = left_out(&s, &g, &Decision::Approve).unwrap_or_default();
        assert!(
            why.contains("needs 2 more approvals (a quorum of 3)"),
            "{why}"
        );
        // The last approval a quorum needs: one answer decides it.
        g.approvals.push(approval("bob"));
        let s = session_with(g.clone());
        assert_eq!(left_out(&s, &g, &Decision::Approve), None);
        // One reject rejects it.
        assert_eq!(left_out(&s, &g, &Decision::Reject { reason: None }), None);
    }

    #[test]
    fn the_only_open_gate_is_the_target_else_the_one_named() {
        let s = session_with(OpenGate::for_tests("review"));
        assert_eq!(target(&s, None).map(|g| g.id.as_str()), Some("review"));
        assert_eq!(
            target(&s, Some("review#1")).map(|g| g.id.as_str()),
            Some("review")
        );
        assert!(target(&s, Some("other")).is_none());
    }
}
