//! What waits for a person: the open gates and tool calls they may answer,
//! newest first. One query for every place that lists them (the web inbox,
//! Slack's App Home), judged by the engine's own approver rules
//! ([`crate::engine::intake::authorize`]) — never a second copy of who may
//! answer. The runs judged are only the candidates the store's index by
//! approver names ([`crate::store::awaiting`]): those whose open gates list
//! the person, one of their groups or nobody; admins, who may answer
//! anything, get every paused run.

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
/// `workflow` when given. The web knows no groups, so only the gates
/// listing `who` or nobody are candidates (see [`candidates`]).
pub async fn waiting_for(hub: &Hub, who: &str, workflow: Option<&str>) -> Result<Vec<Waiting>> {
    let now = hub.clock.now();
    let mut out = Vec::new();
    for id in candidates(hub, who, &[], workflow).await? {
        let Some(s) = hub.store.load(&id).await? else {
            continue;
        };
        if workflow.is_some_and(|w| w != s.workflow) {
            continue;
        }
        out.extend(waiting_in(hub, who, &s, now));
    }
    sort_newest_first(&mut out);
    Ok(out)
}

/// Newest gate first; ties by session (a session's gates keep their order).
pub fn sort_newest_first(waiting: &mut [Waiting]) {
    waiting.sort_by(|a, b| {
        b.gate
            .opened_at
            .cmp(&a.gate.opened_at)
            .then(a.session.cmp(&b.session))
    });
}

/// The paused runs that may hold a gate `who` (a member of `groups`) may
/// answer: those whose open gates list `who`, one of `groups` or nobody,
/// read from the store's index by approver — or, for an admin (who may
/// answer any gate), every paused run (of `workflow`), a page at a time.
/// Only a narrowing: each run is still judged by [`may_answer`].
pub async fn candidates(
    hub: &Hub,
    who: &str,
    groups: &[String],
    workflow: Option<&str>,
) -> Result<Vec<String>> {
    if hub.settings.admins.iter().any(|a| a == who) {
        const PAGE: usize = 512;
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = hub
                .store
                .page(Some(Status::Paused), workflow, after, PAGE)
                .await?;
            after = page.last().map(|s| (s.created_at, s.id.clone()));
            let full = page.len() == PAGE;
            out.extend(page.into_iter().map(|s| s.id));
            if !full {
                return Ok(out);
            }
        }
    }
    let mut keys = vec![who.to_string(), crate::store::awaiting::ANYONE.to_string()];
    keys.extend(groups.iter().cloned());
    hub.store.awaiting(&keys).await
}

/// What [`waiting_for`] answered before the index: every paused run read
/// in full and judged. The index must give the same.
#[cfg(test)]
pub(crate) async fn waiting_for_by_scan(
    hub: &Hub,
    who: &str,
    workflow: Option<&str>,
) -> Result<Vec<Waiting>> {
    let now = hub.clock.now();
    let mut out = Vec::new();
    for s in hub.store.sessions_with_status(Status::Paused).await? {
        if workflow.is_some_and(|w| w != s.workflow) {
            continue;
        }
        out.extend(waiting_in(hub, who, &s, now));
    }
    sort_newest_first(&mut out);
    Ok(out)
}
