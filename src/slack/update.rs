//! After an answer is taken: the message that asked shows it. A decision
//! replaces the buttons with who decided what; a quorum still gathering
//! shows its progress and keeps them; a tool-approval message is
//! re-rendered call by call, its updates in the order the decisions were
//! recorded (an older state never replaces a newer). Every copy of the
//! message (direct, escalated) shows the same, the clicked one first.
//!
//! [`super::decide`] hands these to the background once the intake has
//! recorded an answer; they only render and post, and decide nothing.

use super::app::App;
use super::asked::asking_messages;
use super::blocks::{ApprovalView, DecidedView, ToolApprovalView};
use super::post::tool_text;
use super::words::who;
use crate::error::{Error, Result};
use crate::model::{Answer, Session};

/// Re-renders the approval message with the quorum's progress.
pub(super) async fn show_progress(
    app: &App,
    session: &Session,
    handle: &str,
    channel: &str,
    ts: &str,
) -> Result<()> {
    let Some(gate) = session.open_gate(handle) else {
        return Ok(());
    };
    let view = ApprovalView::of(gate, session);
    let text = format!(
        "{} of {} approvals",
        gate.approvals.len(),
        gate.approvals_required
    );
    let blocks = app.templates.approval(&view)?;
    // Every copy (direct, escalated) shows the progress; the clicked one first.
    let mut result = Ok(());
    for (c, t) in asking_messages(app, &session.id, handle, Some((channel, ts))).await {
        if let Err(e) = app.api.update(&c, &t, &text, blocks.clone()).await {
            tracing::warn!(session = %session.id, channel = %c, "could not update an approval message: {e}");
            result = Err(e);
        }
    }
    result
}

/// Replaces the approval message's buttons with who decided what.
pub(super) async fn show_decision(
    app: &App,
    session: &Session,
    handle: &str,
    channel: &str,
    ts: &str,
    answer: &Answer,
) -> Result<()> {
    let gate = session
        .open_gate(handle)
        .ok_or_else(|| Error::Internal("answered session without its gate".into()))?;
    let view = ApprovalView::of(gate, session);
    let text = format!(
        "{} by {}{} at {}",
        capitalize(answer.decision.verb()),
        who(&answer.by),
        answer.for_whom(),
        answer.at.format("%Y-%m-%d %H:%M UTC")
    );
    let blocks = app
        .templates
        .decided(&DecidedView::from_answer(view, answer))?;
    // Every copy (direct, escalated) shows the decision; the clicked one first.
    let mut result = Ok(());
    for (c, t) in asking_messages(app, &session.id, handle, Some((channel, ts))).await {
        if let Err(e) = app.api.update(&c, &t, &text, blocks.clone()).await {
            tracing::warn!(session = %session.id, channel = %c, "could not update an approval message: {e}");
            result = Err(e);
        }
    }
    result
}

/// Re-renders the tool-approval message from `session` (the state a
/// decision was recorded in): decided calls say who decided, waiting
/// ones keep their buttons. Updates of one message go out in the order
/// the decisions were recorded; an older state never replaces a newer.
pub(super) async fn show_tool_calls(
    app: &App,
    session: &Session,
    channel: &str,
    ts: &str,
    handle: &str,
) -> Result<()> {
    let view = ToolApprovalView::from_session(session, handle).ok_or_else(|| {
        Error::Internal("a tool-call decision on a session without tool calls".into())
    })?;
    let text = tool_text(&view);
    let blocks = app.templates.tool_approval(&view)?;
    let slot = app.update_slot(channel, ts);
    let mut shown = slot.lock().await;
    if session.rev <= *shown {
        return Ok(());
    }
    app.api.update(channel, ts, &text, blocks).await?;
    *shown = session.rev;
    Ok(())
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
