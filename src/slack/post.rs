//! Asking in Slack: the approval message of each open gate, posted where
//! the gate or the run says ([`App::approval_channel`]) and recorded with
//! the run — with its failure when it could not be posted, so `strands
//! sessions notify ID` (or `/strands notify ID`) can post it again — and
//! indexed so a click on it finds the gate. A tool-call gate gets one
//! message with a row of buttons per call; a `notify: dm` gate also its
//! direct copies ([`super::dms`]). A run paused again says so in its
//! thread ([`super::progress`]).
//!
//! The room's side of [`super::room::SlackRoom::ask`]; what happens once
//! an answer comes is [`super::decide`]'s and [`super::update`]'s.

use super::app::App;
use super::asked::posted;
use super::blocks::{ApprovalView, ToolApprovalView};
use super::dms;
use super::progress::post_progress_line;
use crate::error::{Error, Result};
use crate::model::{Notification, Session, Status};
use crate::spec::GateKind;

/// Asks for every open gate of `session` not asked here yet: one
/// message each (several when parallel branches wait at once).
pub async fn ask(app: &App, session: &Session) {
    let notes = match app.hub.store.notifications(&session.id).await {
        Ok(n) => n,
        Err(e) => {
            tracing::error!(session = %session.id, "cannot read the approval messages: {e}");
            return;
        }
    };
    let unposted: Vec<String> = session
        .open_gates()
        .map(|g| g.handle())
        .filter(|h| !posted(&notes, h))
        .collect();
    for handle in unposted {
        if let Err(e) = notify_gate(app, &session.id, Some(&handle)).await {
            // Recorded on the session; `strands sessions notify ID` retries.
            tracing::error!(session = %session.id, gate = %handle, "approval message not posted: {e}");
        }
    }
}

/// Posts (or re-posts) the approval message for the open gate of a
/// paused session, and the messages of other open gates (parallel
/// branches) that were never posted; records each, with its failure if
/// posting failed.
pub async fn notify(app: &App, session_id: &str) -> Result<()> {
    let session = app.hub.store.get(session_id).await?;
    let notes = app.hub.store.notifications(&session.id).await?;
    let others: Vec<String> = session
        .open_gates()
        .skip(1)
        .map(|g| g.handle())
        .filter(|h| !posted(&notes, h))
        .collect();
    let first = notify_gate(app, session_id, None).await;
    for h in others {
        notify_gate(app, session_id, Some(&h)).await?;
    }
    first
}

/// Posts the approval message of one open gate (`None`: the first one).
pub async fn notify_gate(app: &App, session_id: &str, handle: Option<&str>) -> Result<()> {
    let session = app.hub.store.get(session_id).await?;
    let gate = match handle {
        Some(h) => session.open_gate(h).cloned(),
        None => session.first_gate().cloned(),
    };
    let Some(gate) = gate else {
        return Err(Error::Session(format!(
            "session {session_id} has no open gate{}",
            handle.map(|h| format!(" `{h}`")).unwrap_or_default()
        )));
    };
    if session.status != Status::Paused {
        return Err(Error::Session(format!(
            "session {session_id} is {}, not paused",
            session.status
        )));
    }
    let Some(channel) = app.channel_for(&session, Some(&gate)) else {
        let n = Notification {
            gate: gate.handle(),
            channel: String::new(),
            ts: None,
            thread_ts: None,
            at: app.hub.clock.now(),
            error: Some("no approval channel: set STRANDS_APPROVAL_CHANNEL".into()),
            copies: Vec::new(),
        };
        app.hub.store.record_notification(&session.id, &n).await?;
        return Err(Error::Usage(
            "no approval channel: set STRANDS_APPROVAL_CHANNEL".into(),
        ));
    };
    // A tool-call gate gets one message with a row of buttons per call.
    let rendered = if gate.kind == GateKind::ToolCall {
        match ToolApprovalView::from_session(&session, &gate.handle()) {
            Some(view) => app
                .templates
                .tool_approval(&view)
                .map(|blocks| (tool_text(&view), blocks)),
            None => Err(Error::Internal(
                "a tool-call gate without tool calls".into(),
            )),
        }
    } else {
        let view = ApprovalView::of(&gate, &session);
        app.templates.approval(&view).map(|blocks| {
            (
                format!("Approval needed: {} / {}", session.workflow, gate.id),
                blocks,
            )
        })
    };
    // Progress stays in the first message's thread while the channel does.
    let notes = app.hub.store.notifications(&session.id).await?;
    let thread_ts = notes
        .iter()
        .rev()
        .find(|n| n.channel == channel && n.thread_ts.is_some())
        .and_then(|n| n.thread_ts.clone());
    app.begin_posting(&channel);
    let posted = match rendered {
        Ok((text, blocks)) => app.api.post_message(&channel, &text, blocks, None).await,
        Err(e) => Err(e),
    };
    let (ts, error) = match posted {
        Ok(ts) => (Some(ts), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut n = Notification {
        gate: gate.handle(),
        channel: channel.clone(),
        thread_ts: thread_ts.clone().or_else(|| ts.clone()),
        ts,
        at: app.hub.clock.now(),
        error: error.clone(),
        copies: Vec::new(),
    };
    let recorded = app.hub.store.record_notification(&session.id, &n).await;
    app.end_posting(&channel);
    recorded?;
    if error.is_none() && gate.notify_dm {
        // `notify: dm`: each approver named by user id gets a copy,
        // indexed like the message so a click on any copy decides.
        let (copies, places) = dms::post(app, &session, &gate, &channel).await;
        let recorded = if copies.is_empty() {
            Ok(())
        } else {
            n.copies = copies;
            app.hub.store.record_notification(&session.id, &n).await
        };
        for place in &places {
            app.end_posting(place);
        }
        recorded?;
    }
    match error {
        None => {
            app.metrics.gate_opened();
            if let (Some(thread), Some(ts)) = (&thread_ts, &n.ts) {
                if thread != ts {
                    let note = format!(
                        "paused again at gate `{}`: a new approval message is in the channel",
                        gate.id
                    );
                    post_progress_line(app, &channel, thread, &session, "paused", note).await;
                }
            }
            Ok(())
        }
        Some(e) => Err(Error::Runtime(format!(
            "the approval message was not posted: {e}"
        ))),
    }
}

/// The notification text of a tool-approval message.
pub(super) fn tool_text(view: &ToolApprovalView) -> String {
    let status = if view.waiting > 0 {
        format!("{} of {} calls waiting", view.waiting, view.total)
    } else {
        "every call decided".to_string()
    };
    format!(
        "Tool approval: {} / {}: {status}",
        view.workflow, view.agent
    )
}
