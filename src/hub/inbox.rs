//! What waits for a person: the open gates and tool calls they may answer,
//! newest first. One query for every place that lists them (the web inbox,
//! later Slack's App Home), judged by the engine's own approver rules
//! ([`crate::engine::intake::authorize`]) — never a second copy of who may
//! answer.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::view::GateView;
use super::Hub;
use crate::error::Result;
use crate::model::token::Role;
use crate::model::{Decision, GateEventKind, GateKind, Session, Status};

/// One open gate someone may answer.
#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    pub session: String,
    pub workflow: String,
    pub started_by: String,
    pub started_at: DateTime<Utc>,
    pub gate: GateView,
    /// Seconds since the gate opened.
    pub waited_secs: i64,
    /// Seconds until its timeout answers (negative: overdue).
    pub timeout_in_secs: Option<i64>,
    /// Approve alone answers it (a manual gate needing one approval more
    /// or a `hitl` gate approving by its default): it may be bulk approved.
    pub routine: bool,
}

/// Whether `who` may answer gate `g` of `s` (any decision the gate takes).
pub fn may_answer(hub: &Hub, who: &str, s: &Session, g: &crate::model::OpenGate) -> bool {
    let nobody = |_: &str| false;
    let asker = hub.asker(who, &nobody);
    crate::engine::intake::authorize(g, s, &Decision::Reject { reason: None }, &asker).is_ok()
        || crate::engine::intake::authorize(g, s, &Decision::Approve, &asker).is_ok()
}

/// Who may read a session: operators and admins any; an approver the
/// sessions it started, answered, or may answer now.
pub fn may_read(hub: &Hub, who: &str, role: Role, s: &Session) -> bool {
    if role >= Role::Operator || s.started_by == who {
        return true;
    }
    let answered = s
        .history
        .iter()
        .any(|e| matches!(&e.what, GateEventKind::Answered { answer, .. } if answer.by == who));
    answered || s.open_gates().any(|g| may_answer(hub, who, s, g))
}

/// The open gates of `s` that `who` may answer.
pub fn waiting_in(hub: &Hub, who: &str, s: &Session, now: DateTime<Utc>) -> Vec<Waiting> {
    if s.status != Status::Paused {
        return Vec::new();
    }
    s.open_gates()
        .filter(|g| may_answer(hub, who, s, g))
        .map(|g| {
            let view = GateView::of(s, g, false);
            Waiting {
                session: s.id.clone(),
                workflow: s.workflow.clone(),
                started_by: s.started_by.clone(),
                started_at: s.created_at,
                waited_secs: (now - g.opened_at).num_seconds().max(0),
                timeout_in_secs: g.timeout_at.map(|t| (t - now).num_seconds()),
                routine: g.kind == GateKind::ManualGate,
                gate: view,
            }
        })
        .collect()
}

/// Every open gate `who` may answer, newest first; only runs of
/// `workflow` when given.
pub async fn waiting_for(hub: &Hub, who: &str, workflow: Option<&str>) -> Result<Vec<Waiting>> {
    let now = hub.clock.now();
    let mut out = Vec::new();
    for s in hub.store.sessions_with_status(Status::Paused).await? {
        if workflow.is_some_and(|w| w != s.workflow) {
            continue;
        }
        out.extend(waiting_in(hub, who, &s, now));
    }
    out.sort_by(|a, b| {
        b.gate
            .opened_at
            .cmp(&a.gate.opened_at)
            .then(a.session.cmp(&b.session))
    });
    Ok(out)
}
