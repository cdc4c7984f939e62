//! Where a click or a modal becomes an answer: the message it came from
//! must ask about the gate the click claims (the message's channel + ts
//! are looked up, the button's value never trusted alone), the answer goes
//! to the service's intake (authorize → check → record exactly once or
//! queue → audit a refusal), the run's drive is the service's, and the
//! message is updated in the background ([`super::update`]). A refusal is
//! told to the one who clicked (an ephemeral message, or an error in the
//! modal) and audited when the intake never saw it.
//!
//! The parts that receive clicks ([`super::interactions`], [`super::forms`],
//! [`super::home`], [`super::commands`]) parse and hand over here; nothing
//! here parses a payload.

use chrono::{DateTime, Utc};

use super::access::groups_of;
use super::app::App;
use super::blocks;
use super::update::{show_decision, show_progress, show_tool_calls};
use super::words::refusal;
use crate::audit::{AuditEvent, AuditKind};
use crate::error::Result;
use crate::hub::door::{Accepted, Door, DoorAnswer};
use crate::model::{Answer, Decision, Refusal};
use crate::model::{CallState, Session, Status};
use crate::spec::GateKind;

/// The answer a Slack user's click or modal makes.
pub(super) fn answer(
    decision: Decision,
    user: &str,
    call: Option<&str>,
    at: DateTime<Utc>,
) -> Answer {
    Answer {
        decision,
        by: user.to_string(),
        at,
        via: "slack".into(),
        vars: Default::default(),
        call: call.map(str::to_string),
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    }
}

/// Tells one user something only they see, without holding up the ack.
pub(super) fn tell(app: &App, channel: &str, user: &str, text: String) {
    let (app2, channel, user) = (app.clone(), channel.to_string(), user.to_string());
    app.tasks().spawn(async move {
        if let Err(e) = app2.api.post_ephemeral(&channel, &user, &text).await {
            tracing::warn!("ephemeral reply failed: {e}");
        }
    });
}

/// Takes `answer` for the gate the message `channel`/`ts` asks about,
/// through the engine's intake (authorize → check → record exactly once
/// or queue → audit a refusal), then hands the resume to the background
/// and updates the message. `handle` is the gate handle the click
/// claims (the button's value); it must be the one the message was
/// posted for. `Ok(Err(why))`: refused, nothing changed, `why` is what
/// the clicker is told.
pub async fn decide(
    app: &App,
    channel: &str,
    ts: &str,
    handle: &str,
    answer: Answer,
) -> Result<std::result::Result<(), Refusal>> {
    let target = app.message_target(channel, ts).await?;
    let session = match &target {
        Some(t) if t.gate == handle => app.hub.store.load(&t.session).await?,
        _ => None,
    };
    decide_read(app, target, session, channel, ts, handle, answer).await
}

/// [`decide`] with the message's target and its session already
/// read (a click reads them once for everything it does).
pub async fn decide_read(
    app: &App,
    target: Option<crate::model::MessageTarget>,
    session: Option<Session>,
    channel: &str,
    ts: &str,
    handle: &str,
    answer: Answer,
) -> Result<std::result::Result<(), Refusal>> {
    let why = match target {
        None => "this message is not an approval request I know".to_string(),
        Some(t) if t.gate != handle => format!(
            "this button belongs to an earlier request (gate {handle}); the message asks about {}",
            t.gate
        ),
        Some(_) => match session {
            Some(session) => return decide_on(app, &session, channel, ts, handle, answer).await,
            None => "that session no longer exists".to_string(),
        },
    };
    audit_refused_click(
        app,
        channel,
        ts,
        handle,
        &answer.by,
        answer.call.clone(),
        &why,
    )
    .await;
    Ok(Err(Refusal::BadAnswer(why)))
}

/// [`decide`] once the message's session is known.
async fn decide_on(
    app: &App,
    session: &Session,
    channel: &str,
    ts: &str,
    handle: &str,
    answer: Answer,
) -> Result<std::result::Result<(), Refusal>> {
    let tool_gate = session
        .open_gate(handle)
        .is_some_and(|g| g.kind == GateKind::ToolCall);
    // The service drives the run when the answer lets it go on.
    let accepted = match take(app, session, handle, &answer).await? {
        Ok(a) => a,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let app2 = app.clone();
    let (channel, ts, handle) = (channel.to_string(), ts.to_string(), handle.to_string());
    match accepted {
        Accepted::Recorded(recorded) | Accepted::Counted(recorded) if tool_gate => {
            // One call decided: the run resumes only once no call waits.
            app.tasks().spawn(async move {
                if let Err(e) = show_tool_calls(&app2, &recorded, &channel, &ts, &handle).await {
                    tracing::warn!(session = %recorded.id, "could not update the tool approval message: {e}");
                }
            });
        }
        Accepted::Counted(recorded) => {
            // A quorum still gathering: show the progress, keep the buttons.
            app.tasks().spawn(async move {
                if let Err(e) = show_progress(&app2, &recorded, &handle, &channel, &ts).await {
                    tracing::warn!(session = %recorded.id, "could not update the approval message: {e}");
                }
            });
        }
        Accepted::Recorded(shown) | Accepted::Queued(shown) | Accepted::Repeated(shown) => {
            // Queued: another branch is running; the engine records it
            // as soon as the run stops moving. Recorded: shown as the
            // intake recorded it (a delegate's answer says for whom).
            let answer = shown
                .pending
                .as_ref()
                .filter(|p| p.gate == handle)
                .map(|p| p.answer.clone())
                .unwrap_or(answer);
            app.tasks().spawn(async move {
                if let Err(e) = show_decision(&app2, &shown, &handle, &channel, &ts, &answer).await {
                    tracing::warn!(session = %shown.id, "could not update the approval message: {e}");
                }
            });
        }
    }
    Ok(Ok(()))
}

/// Hands `answer` for gate `handle` of `session` to the service's
/// intake as a Slack user (groups resolved, the installation's admins
/// and default approvers, self-approval off by default); the service
/// drives the run when the answer lets it go on.
#[allow(clippy::result_large_err)] // see `Session::accept`
pub async fn take(
    app: &App,
    session: &Session,
    handle: &str,
    answer: &Answer,
) -> Result<std::result::Result<Accepted, crate::model::Refusal>> {
    let groups = groups_of(app, session, handle, &answer.by).await;
    let door = DoorAnswer::new(
        &session.id,
        &answer.by,
        Door::Slack,
        answer.decision.clone(),
    )
    .at(Some(handle))
    .call(answer.call.as_deref())
    .member_of(groups);
    app.hub.take(door).await
}

/// Every refused click (or refused modal) that the intake did not see
/// is audited here; nothing else changed.
pub async fn audit_refused_click(
    app: &App,
    channel: &str,
    ts: &str,
    handle: &str,
    who: &str,
    call: Option<String>,
    why: &str,
) {
    let (session, workflow) = match app.session_of(channel, ts).await {
        Some(s) => (s.id, s.workflow),
        None => (String::new(), String::new()),
    };
    let mut ev = AuditEvent::new(AuditKind::Refusal, &session, &workflow, app.hub.clock.now());
    ev.gate = Some(handle.to_string());
    ev.call = call;
    ev.who = Some(who.to_string());
    ev.via = Some(format!("slack {channel}"));
    ev.detail = Some(why.to_string());
    app.hub.audit_refusal(ev).await;
}

/// Refuses early (before a modal opens) when the gate — or, for a tool
/// call, the call — no longer waits; otherwise returns the session.
pub(super) async fn still_open(
    app: &App,
    channel: &str,
    ts: &str,
    handle: &str,
    call: Option<&str>,
) -> Result<Session, String> {
    let target = app
        .message_target(channel, ts)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "this message is not an approval request I know".to_string())?;
    if target.gate != handle {
        return Err("this button belongs to an earlier request".into());
    }
    let session = app
        .hub
        .store
        .load(&target.session)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "that session no longer exists".to_string())?;
    let open = session.status == Status::Paused && session.open_gate(handle).is_some();
    if let Some(call) = call {
        let waiting = session
            .agent_turn
            .as_ref()
            .and_then(|t| t.calls.iter().find(|c| c.call.id == call))
            .map(|c| c.state == CallState::Waiting);
        if open && waiting == Some(true) {
            return Ok(session);
        }
        return Err(match blocks::call_answer(&session, handle, call) {
            Some(a) => refusal(&crate::model::Refusal::AlreadyAnswered(a.clone())),
            None if waiting.is_none() && open => format!("no call `{call}` in this request"),
            None if open => format!("call `{call}` is no longer waiting"),
            None => refusal(&crate::model::Refusal::NotOpen(session.status)),
        });
    }
    if open && session.pending.is_none() {
        return Ok(session);
    }
    let last = session.history.iter().rev().find_map(|e| match &e.what {
        crate::model::GateEventKind::Answered { answer, .. }
            if format!("{}#{}", e.gate, e.instance) == handle =>
        {
            Some(answer.clone())
        }
        _ => None,
    });
    Err(match (last, session.pending.map(|p| p.answer)) {
        (_, Some(a)) | (Some(a), None) => refusal(&crate::model::Refusal::AlreadyAnswered(a)),
        (None, None) => refusal(&crate::model::Refusal::NotOpen(session.status)),
    })
}
