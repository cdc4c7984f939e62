//! Where a click becomes a resume. The click path does only: parse, look up
//! the message's session and gate (by the message's channel + ts — the
//! button's value must match it, never trusted alone), record the decision
//! atomically (compare-and-swap, exactly once), and hand the resume to a
//! background task. Modify / Respond open a modal at once (the `trigger_id`
//! lives 3 s); its submission comes back here and is decided the same way.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::json;
use slack_morphism::prelude::*;

use super::app::{refusal_text, App};
use super::blocks::ModalView;
use crate::gate::{Answer, Decision};
use crate::session::Status;

pub const APPROVE: &str = "strands_approve";
pub const REJECT: &str = "strands_reject";
pub const MODIFY: &str = "strands_modify";
pub const RESPOND: &str = "strands_respond";

/// What the bot puts in a modal's `private_metadata`.
#[derive(Debug, Serialize, Deserialize)]
struct ModalMeta {
    channel: String,
    ts: String,
    gate: String,
}

fn ok() -> Response {
    StatusCode::OK.into_response()
}

pub async fn handle(app: &App, payload: &str) -> Response {
    let event: SlackInteractionEvent = match serde_json::from_str(payload) {
        Ok(e) => e,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("unreadable interaction payload: {e}"),
            )
                .into_response()
        }
    };
    match event {
        SlackInteractionEvent::BlockActions(ev) => block_actions(app, ev).await,
        SlackInteractionEvent::ViewSubmission(ev) => view_submission(app, ev).await,
        _ => ok(),
    }
}

fn answer(decision: Decision, user: &str) -> Answer {
    Answer {
        decision,
        by: user.to_string(),
        at: Utc::now(),
        via: "slack".into(),
        vars: Default::default(),
        call: None,
    }
}

/// Tells one user something only they see, without holding up the ack.
fn tell(app: &App, channel: &str, user: &str, text: String) {
    let (app2, channel, user) = (app.clone(), channel.to_string(), user.to_string());
    app.tasks().spawn(async move {
        if let Err(e) = app2.api.post_ephemeral(&channel, &user, &text).await {
            tracing::warn!("ephemeral reply failed: {e}");
        }
    });
}

async fn block_actions(app: &App, ev: SlackInteractionBlockActionsEvent) -> Response {
    let Some(user) = ev.user.as_ref().map(|u| u.id.0.clone()) else {
        return ok();
    };
    let Some(action) = ev.actions.as_ref().and_then(|a| a.first()) else {
        return ok();
    };
    let SlackInteractionActionContainer::Message(container) = &ev.container else {
        return ok();
    };
    let Some(channel) = container
        .channel_id
        .as_ref()
        .map(|c| c.0.clone())
        .or_else(|| ev.channel.as_ref().map(|c| c.id.0.clone()))
    else {
        return ok();
    };
    let ts = container.message_ts.0.clone();
    let handle = action.value.clone().unwrap_or_default();
    let needs_reason = || {
        app.store
            .message_target(&channel, &ts)
            .ok()
            .flatten()
            .and_then(|t| app.store.load(&t.session).ok().flatten())
            .and_then(|s| s.gate)
            .is_some_and(|g| g.require_reason && g.handle() == handle)
    };
    let decision = match action.action_id.0.as_str() {
        APPROVE => Decision::Approve,
        REJECT if !needs_reason() => Decision::Reject { reason: None },
        kind @ (REJECT | MODIFY | RESPOND) => {
            if let Err(why) = still_open(app, &channel, &ts, &handle).await {
                tell(app, &channel, &user, why);
                return ok();
            }
            let meta = ModalMeta {
                channel: channel.clone(),
                ts,
                gate: handle,
            };
            open_modal(app, &ev.trigger_id.0, kind, &meta, &channel, &user).await;
            return ok();
        }
        _ => return ok(),
    };
    match app
        .decide(&channel, &ts, &handle, answer(decision, &user))
        .await
    {
        Ok(Ok(())) => {}
        Ok(Err(why)) => tell(app, &channel, &user, why),
        Err(e) => {
            tracing::error!("recording a decision failed: {e}");
            tell(
                app,
                &channel,
                &user,
                "Sorry, that decision could not be recorded; nothing changed.".into(),
            );
        }
    }
    ok()
}

/// Refuses early (before a modal opens) when the gate is no longer open.
async fn still_open(app: &App, channel: &str, ts: &str, handle: &str) -> Result<(), String> {
    let target = app
        .message_target(channel, ts)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "this message is not an approval request I know".to_string())?;
    if target.gate != handle {
        return Err("this button belongs to an earlier request".into());
    }
    let session = app
        .store
        .load(&target.session)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "that session no longer exists".to_string())?;
    let open = session.status == Status::Paused
        && session.gate.as_ref().is_some_and(|g| g.handle() == handle);
    if open && session.pending_answer.is_none() {
        return Ok(());
    }
    let last = session.history.iter().rev().find_map(|e| match &e.what {
        crate::session::GateEventKind::Answered { answer, .. }
            if format!("{}#{}", e.gate, e.instance) == handle =>
        {
            Some(answer.clone())
        }
        _ => None,
    });
    Err(match (last, session.pending_answer) {
        (_, Some(a)) | (Some(a), None) => refusal_text(&crate::store::Refusal::AlreadyAnswered(a)),
        (None, None) => refusal_text(&crate::store::Refusal::NotPaused(session.status)),
    })
}

async fn open_modal(
    app: &App,
    trigger_id: &str,
    action: &str,
    meta: &ModalMeta,
    channel: &str,
    user: &str,
) {
    let kind = match action {
        MODIFY => "modify",
        REJECT => "reject",
        _ => "respond",
    };
    let prompt = app
        .store
        .message_target(channel, &meta.ts)
        .ok()
        .flatten()
        .and_then(|t| app.store.load(&t.session).ok().flatten())
        .and_then(|s| s.gate.map(|g| g.prompt))
        .unwrap_or_default();
    let view = ModalView {
        kind: kind.into(),
        title: String::new(),
        prompt,
        private_metadata: serde_json::to_string(meta).unwrap_or_default(),
        required: true,
    };
    let result = match app.templates.modal(&view) {
        Ok(v) => app.api.views_open(trigger_id, v).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!("could not open the {kind} modal: {e}");
        tell(
            app,
            channel,
            user,
            format!("Could not open the {kind} form ({e}); please try again."),
        );
    }
}

async fn view_submission(app: &App, ev: SlackInteractionViewSubmissionEvent) -> Response {
    let user = ev.user.id.0.clone();
    let SlackView::Modal(modal) = &ev.view.view else {
        return ok();
    };
    let callback = modal
        .callback_id
        .as_ref()
        .map(|c| c.0.clone())
        .unwrap_or_default();
    let Some(meta) = modal
        .private_metadata
        .as_deref()
        .and_then(|m| serde_json::from_str::<ModalMeta>(m).ok())
    else {
        return ok();
    };
    let text = ev
        .view
        .state_params
        .state
        .as_ref()
        .and_then(|s| s.values.get(&SlackBlockId("feedback".into())))
        .and_then(|b| b.get(&SlackActionId("text".into())))
        .and_then(|v| v.value.clone())
        .unwrap_or_default();
    let decision = match callback.as_str() {
        MODIFY => Decision::Modify {
            feedback: text.clone(),
        },
        RESPOND => Decision::Respond { text: text.clone() },
        REJECT => Decision::Reject {
            reason: Some(text.clone()).filter(|t| !t.trim().is_empty()),
        },
        _ => return ok(),
    };
    if callback != REJECT && text.trim().is_empty() {
        return modal_error("Please write something.");
    }
    match app
        .decide(&meta.channel, &meta.ts, &meta.gate, answer(decision, &user))
        .await
    {
        Ok(Ok(())) => ok(),
        Ok(Err(why)) => modal_error(&why),
        Err(e) => {
            tracing::error!("recording a modal decision failed: {e}");
            modal_error("The decision could not be recorded; nothing changed. Please try again.")
        }
    }
}

/// Keeps the modal open with an error under the input.
fn modal_error(text: &str) -> Response {
    Json(json!({ "response_action": "errors", "errors": { "feedback": text } })).into_response()
}
