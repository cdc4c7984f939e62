//! The run's thread in Slack: a line for each step done, a crash's
//! re-sent request, and the run's end (completed with its output, cut to
//! fit; failed; rejected; cancelled) — in the thread of the run's first
//! approval message, or without one in the approval channel for the events
//! that end a run. An answered gate that was escalated shows its answer on
//! every message that asked ([`super::timers::after_answer`]).
//!
//! The room's side of [`super::room::SlackRoom::progress`]; failures are
//! logged, never fatal to the run.

use super::app::App;
use super::blocks::{self, ProgressView};
use super::timers::after_answer;
use crate::channel::Progress;
use crate::error::Result;
use crate::model::Session;

/// Shows the run's progress in its thread.
pub async fn on_progress(app: &App, session: &Session, event: &Progress) {
    if let Err(e) = post_progress(app, session, event).await {
        tracing::warn!(session = %session.id, "progress not posted: {e}");
    }
    if let Progress::GateAnswered { gate, answer } = event {
        // An escalated gate was asked in several messages: all show it.
        after_answer(app, session, gate, answer).await;
    }
}

/// A progress line in the run's thread (or, without one, in the approval
/// channel for the events that end a run).
async fn post_progress(app: &App, session: &Session, event: &Progress) -> Result<()> {
    let (name, text, output) = match event {
        Progress::StepDone {
            position,
            agent,
            tokens,
            millis,
        } => (
            "step_done",
            format!(
                "{position} done: {agent} ({tokens} tokens, {:.1}s)",
                *millis as f64 / 1000.0
            ),
            None,
        ),
        Progress::Resent { position } => (
            "resent",
            format!("{position}: model request re-sent after a crash"),
            None,
        ),
        Progress::Completed => (
            "completed",
            format!("`{}` completed", session.workflow),
            session.output.clone(),
        ),
        Progress::Failed { message } => (
            "failed",
            format!("`{}` failed: {message}", session.workflow),
            None,
        ),
        Progress::Rejected { reason } => (
            "rejected",
            format!(
                "`{}` rejected{}",
                session.workflow,
                reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            None,
        ),
        Progress::Cancelled { by, reason } => (
            "cancelled",
            format!(
                "`{}` cancelled by {by}{}",
                session.workflow,
                reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            None,
        ),
        Progress::GateSkipped { .. } | Progress::GateAnswered { .. } => return Ok(()),
    };
    let thread = app
        .hub
        .store
        .notifications(&session.id)
        .await?
        .last()
        .and_then(|n| n.thread_ts.clone().map(|t| (n.channel.clone(), t)));
    let (channel, thread_ts) = match thread {
        Some((c, t)) if !c.is_empty() => (c, Some(t)),
        _ if name == "step_done" || name == "resent" => return Ok(()),
        _ => match app.approval_channel(session) {
            Some(c) => (c, None),
            None => return Ok(()),
        },
    };
    let (output, cut) = match output {
        Some(o) => {
            let (text, cut) = blocks::cut_for_section(&o, blocks::CODE_BLOCK_MAX);
            (Some(text), cut)
        }
        None => (None, 0),
    };
    let text = if cut > 0 {
        format!(
            "{text} (output cut by {cut} characters; `strands sessions show {}` shows all)",
            session.id
        )
    } else {
        text
    };
    let view = ProgressView {
        event: name.into(),
        workflow: session.workflow.clone(),
        session_id: session.id.clone(),
        text: text.clone(),
        output,
    };
    let blocks = app.templates.progress(&view)?;
    app.api
        .post_message(&channel, &text, blocks, thread_ts.as_deref())
        .await
        .map(|_| ())
}

/// One progress line in a thread; failures are logged, not fatal.
pub(super) async fn post_progress_line(
    app: &App,
    channel: &str,
    thread: &str,
    session: &Session,
    event: &str,
    text: String,
) {
    let view = ProgressView {
        event: event.into(),
        workflow: session.workflow.clone(),
        session_id: session.id.clone(),
        text: text.clone(),
        output: None,
    };
    let posted = match app.templates.progress(&view) {
        Ok(blocks) => app
            .api
            .post_message(channel, &text, blocks, Some(thread))
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = posted {
        tracing::warn!(session = %session.id, "progress not posted: {e}");
    }
}
