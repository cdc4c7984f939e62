//! Where a click becomes a resume. The click path does only: parse, look up
//! the message's session and gate (by the message's channel + ts — the
//! button's value must match it, never trusted alone), record the decision
//! atomically (compare-and-swap, exactly once), and hand the resume to a
//! background task. Modify / Respond open a modal at once (the `trigger_id`
//! lives 3 s); its submission comes back here and is decided the same way.
//! So do the reason forms ([`super::forms`]): Reject on a `require_reason`
//! gate, and "Reject with reason…" on any gate or tool call (the reason is
//! then optional); "View full output" opens the whole text under review,
//! for those who may answer the gate or started the run; and Approve on a
//! gate with a form opens the form, whose submission approves with its
//! values (a refused value is an error under its input). Trust on a gate
//! that allows it approves it (`strands_trust`, as a tool call's).
//!
//! Tool calls: a tool-approval message has a row of buttons per call, each
//! valued `handle|call id`; the decision names that call (`Answer.call`),
//! and the gate closes (and the run resumes) once no call waits. Edit
//! arguments opens a modal prefilled with the call's arguments as JSON; its
//! submission approves the call with the edited arguments, after the same
//! checks as `strands resume --edit-args` (a refused edit keeps the modal
//! open with the error and changes nothing).
//!
//! This module reads the payload and says which answer a click is; taking
//! it (the message's gate checked, the intake, the message updated) is
//! [`super::decide`]'s, and the modals are [`super::forms`]'.

use serde_json::json;
use slack_morphism::prelude::*;

use super::access::may_answer;
use super::app::App;
use super::blocks::{self, ModalView};
use super::decide::{self, answer, audit_refused_click, still_open, tell};
use super::forms::{self, ModalMeta};
use super::home;
// What a click or a submission is answered with, by request URL or over
// Socket Mode alike (`dispatch`).
use super::reply::Reply as Response;
use super::words::{self, split_value};
use crate::model::{Decision, Session};

pub const APPROVE: &str = "strands_approve";
pub const REJECT: &str = "strands_reject";
pub const MODIFY: &str = "strands_modify";
pub const RESPOND: &str = "strands_respond";
/// Tool calls: approve with edited arguments (opens a modal).
pub const EDIT: &str = "strands_edit";
/// Tool calls: approve, and trust the tool for the rest of the run.
pub const TRUST: &str = "strands_trust";
/// Tool calls: approve, and allow the tool's calls for an hour (a grant,
/// `model::grant`; the message says the rule saved).
pub const TRUST_HOUR: &str = "strands_trust_hour";
/// Tool calls: approve every call still waiting (value: the gate's
/// handle), one answer each (`crate::hub::batch`'s rule: a gate needing a
/// passkey is left out).
pub const APPROVE_ALL: &str = "strands_approve_all";
/// "Open in browser": a link to the run's web page; decides nothing.
pub const OPEN_WEB: &str = "strands_open_web";
/// Reject with a reason (a gate without `require_reason`, or a tool call):
/// opens the reason form, the reason optional.
pub const REJECT_REASON: &str = "strands_reject_reason";
/// Opens a modal with the full text a cut preview leaves out.
pub const VIEW_FULL: &str = "strands_view_full";
/// The modal filling in a gate's form (Approve on a gate with one); its
/// submission approves with the values.
pub const FILL: &str = "strands_fill";

fn ok() -> Response {
    Response::Ack
}

pub async fn handle(app: &App, payload: &str) -> Response {
    let event: SlackInteractionEvent = match serde_json::from_str(payload) {
        Ok(e) => e,
        Err(e) => return Response::Unreadable(format!("unreadable interaction payload: {e}")),
    };
    match event {
        SlackInteractionEvent::BlockActions(ev) => block_actions(app, ev).await,
        SlackInteractionEvent::ViewSubmission(ev) => view_submission(app, ev).await,
        _ => ok(),
    }
}

async fn block_actions(app: &App, ev: SlackInteractionBlockActionsEvent) -> Response {
    let Some(user) = ev.user.as_ref().map(|u| u.id.0.clone()) else {
        return ok();
    };
    let Some(action) = ev.actions.as_ref().and_then(|a| a.first()) else {
        return ok();
    };
    // A link button (the web inbox): Slack opened it; nothing to decide.
    if action.action_id.0 == OPEN_WEB || action.action_id.0 == "strands_home_open" {
        return ok();
    }
    let container = match &ev.container {
        SlackInteractionActionContainer::Message(c) => c,
        SlackInteractionActionContainer::View(_) => {
            // A button on the App Home tab.
            let trigger = ev.trigger_id.0.clone();
            let value = action.value.clone().unwrap_or_default();
            return home::action(app, &user, &action.action_id.0, &value, &trigger).await;
        }
        _ => return ok(),
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
    let value = action.value.clone().unwrap_or_default();
    // The message's target and its session, read once for all that follows.
    let known = app.message_target(&channel, &ts).await;
    let target = known.as_ref().ok().cloned().flatten();
    let session = match &target {
        Some(t) => app.hub.store.load(&t.session).await.ok().flatten(),
        None => None,
    };
    // A value that is the message's gate handle whole names no call (a
    // gate id may contain `#1|` itself); otherwise it may be `handle|call`.
    let whole = target.as_ref().is_some_and(|t| t.gate == value);
    let (handle, call) = if whole {
        (value.clone(), None)
    } else {
        let (h, c) = split_value(&value);
        (h.to_string(), c.map(str::to_string))
    };
    let needs_reason = session
        .as_ref()
        .and_then(|s| s.open_gate(&handle).map(|g| g.require_reason))
        .unwrap_or(false);
    let asks_values = call.is_none()
        && session
            .as_ref()
            .and_then(|s| s.open_gate(&handle))
            .is_some_and(|g| g.form.is_some());
    if action.action_id.0 == APPROVE_ALL {
        approve_all(app, &channel, &ts, &handle, session.as_ref(), &user).await;
        return ok();
    }
    let decision = match action.action_id.0.as_str() {
        // A gate with a form: Approve opens it, to be filled in.
        APPROVE if asks_values => {
            let session = match still_open(app, &channel, &ts, &handle, None).await {
                Ok(s) => s,
                Err(why) => {
                    tell(app, &channel, &user, why);
                    return ok();
                }
            };
            let probe = Decision::Fill {
                values: Default::default(),
            };
            if let Err(why) = may_answer(app, &session, &handle, probe, &user).await {
                audit_refused_click(app, &channel, &ts, &handle, &user, None, &why).await;
                tell(app, &channel, &user, why);
                return ok();
            }
            let meta = ModalMeta {
                channel: channel.clone(),
                ts,
                gate: handle,
                call: None,
            };
            forms::open_fill(app, &ev.trigger_id.0, &meta, &session, &user).await;
            return ok();
        }
        APPROVE => words::decision("approve", None, None, None),
        TRUST => words::decision("trust", None, None, None),
        TRUST_HOUR => words::trust_for("1h"),
        // A tool call's rejection is recorded at once (the button has a
        // confirm dialog); the model reads "denied by <@U…>".
        REJECT if call.is_some() || !needs_reason => words::decision("reject", None, None, None),
        EDIT => {
            let Some(call) = call else {
                tell(
                    app,
                    &channel,
                    &user,
                    "this button names no tool call".into(),
                );
                return ok();
            };
            let session = match still_open(app, &channel, &ts, &handle, Some(&call)).await {
                Ok(s) => s,
                Err(why) => {
                    tell(app, &channel, &user, why);
                    return ok();
                }
            };
            let probe = Decision::Edit {
                arguments: serde_json::Value::Null,
            };
            if let Err(why) = may_answer(app, &session, &handle, probe, &user).await {
                audit_refused_click(app, &channel, &ts, &handle, &user, Some(call), &why).await;
                tell(app, &channel, &user, why);
                return ok();
            }
            let meta = ModalMeta {
                channel: channel.clone(),
                ts,
                gate: handle,
                call: Some(call),
            };
            open_edit_modal(app, &ev.trigger_id.0, &meta, &session, &user).await;
            return ok();
        }
        // A reason form: required for a `require_reason` gate, optional
        // for "Reject with reason…" (a gate or a tool call).
        REJECT | REJECT_REASON => {
            let session = match still_open(app, &channel, &ts, &handle, call.as_deref()).await {
                Ok(s) => s,
                Err(why) => {
                    tell(app, &channel, &user, why);
                    return ok();
                }
            };
            let probe = Decision::Reject { reason: None };
            if let Err(why) = may_answer(app, &session, &handle, probe, &user).await {
                audit_refused_click(app, &channel, &ts, &handle, &user, call.clone(), &why).await;
                tell(app, &channel, &user, why);
                return ok();
            }
            let meta = ModalMeta {
                channel: channel.clone(),
                ts,
                gate: handle,
                call,
            };
            forms::open_reject(app, &ev.trigger_id.0, &meta, &session, &user).await;
            return ok();
        }
        VIEW_FULL => {
            let (trigger, gate) = (ev.trigger_id.0.as_str(), handle.as_str());
            forms::open_output(app, trigger, &channel, &ts, gate, &user).await;
            return ok();
        }
        kind @ (MODIFY | RESPOND) => {
            let session = match still_open(app, &channel, &ts, &handle, None).await {
                Ok(s) => s,
                Err(why) => {
                    tell(app, &channel, &user, why);
                    return ok();
                }
            };
            let probe = match kind {
                MODIFY => Decision::Modify {
                    feedback: String::new(),
                },
                _ => Decision::Respond {
                    text: String::new(),
                },
            };
            if let Err(why) = may_answer(app, &session, &handle, probe, &user).await {
                audit_refused_click(app, &channel, &ts, &handle, &user, None, &why).await;
                tell(app, &channel, &user, why);
                return ok();
            }
            let meta = ModalMeta {
                channel: channel.clone(),
                ts,
                gate: handle,
                call: None,
            };
            open_modal(app, &ev.trigger_id.0, kind, &meta, &channel, &user).await;
            return ok();
        }
        _ => return ok(),
    };
    let decision = match decision {
        Ok(d) => d,
        Err(why) => {
            tell(app, &channel, &user, why);
            return ok();
        }
    };
    let answer = answer(decision, &user, call.as_deref(), app.hub.clock.now());
    let decided = match known {
        // The target could not be read: decide reads it again (and says
        // so if it still cannot).
        Err(_) => decide::decide(app, &channel, &ts, &handle, answer).await,
        Ok(_) => decide::decide_read(app, target, session, &channel, &ts, &handle, answer).await,
    };
    match decided {
        Ok(Ok(())) => {}
        Ok(Err(refusal)) => tell(app, &channel, &user, words::refusal(&refusal)),
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

/// "Approve all" on a tool-approval message: one approve per waiting
/// call, each through the intake and audited on its own; what was refused
/// or left out is told to the user.
async fn approve_all(
    app: &App,
    channel: &str,
    ts: &str,
    handle: &str,
    session: Option<&Session>,
    user: &str,
) {
    let Some(s) = session else {
        tell(app, channel, user, "that session no longer exists".into());
        return;
    };
    if let Some(g) = s.open_gate(handle) {
        if let Some(why) = crate::hub::batch::left_out(s, g, &Decision::Approve) {
            tell(
                app,
                channel,
                user,
                format!("Not approved all at once: this gate {why}."),
            );
            return;
        }
    }
    let calls: Vec<String> = s
        .agent_turn
        .iter()
        .flat_map(|t| t.waiting())
        .map(|c| c.call.id.clone())
        .collect();
    let mut refused = Vec::new();
    for call in &calls {
        let answer = answer(Decision::Approve, user, Some(call), app.hub.clock.now());
        match decide::decide(app, channel, ts, handle, answer).await {
            Ok(Ok(())) => {}
            Ok(Err(r)) => refused.push(format!("`{call}`: {}", words::refusal(&r))),
            Err(e) => refused.push(format!("`{call}`: {e}")),
        }
    }
    if !refused.is_empty() {
        tell(
            app,
            channel,
            user,
            format!(
                "{} of {} calls approved; not approved: {}",
                calls.len() - refused.len(),
                calls.len(),
                refused.join("; ")
            ),
        );
    }
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
        _ => "respond",
    };
    let prompt = app
        .session_of(channel, &meta.ts)
        .await
        .and_then(|s| s.open_gate(&meta.gate).map(|g| g.prompt.clone()))
        .unwrap_or_default();
    let view = ModalView {
        kind: kind.into(),
        title: String::new(),
        prompt,
        private_metadata: serde_json::to_string(meta).unwrap_or_default(),
        required: true,
        initial_value: None,
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

/// The text the edit modal starts with: the arguments as pretty JSON, or
/// compact JSON when that is too long for Slack's `initial_value`; `None`
/// when even that does not fit.
fn edit_text(arguments: &serde_json::Value) -> Option<String> {
    let fits = |s: &String| s.chars().count() <= blocks::INITIAL_VALUE_MAX;
    serde_json::to_string_pretty(arguments)
        .ok()
        .filter(fits)
        .or_else(|| serde_json::to_string(arguments).ok().filter(fits))
}

/// Opens the modal that edits a waiting tool call's arguments.
async fn open_edit_modal(
    app: &App,
    trigger_id: &str,
    meta: &ModalMeta,
    session: &Session,
    user: &str,
) {
    let channel = meta.channel.as_str();
    let Some(pc) = meta.call.as_deref().and_then(|id| {
        session
            .agent_turn
            .as_ref()
            .and_then(|t| t.calls.iter().find(|c| c.call.id == id))
    }) else {
        tell(
            app,
            channel,
            user,
            "that tool call is not in this request".into(),
        );
        return;
    };
    let Some(initial) = edit_text(&pc.call.arguments) else {
        tell(
            app,
            channel,
            user,
            format!(
                "The arguments of call `{}` are too long to edit in Slack (a text box holds {} characters). \
                 Use `strands resume {} --call {} --edit-args JSON`.",
                pc.call.id,
                blocks::INITIAL_VALUE_MAX,
                session.id,
                pc.call.id
            ),
        );
        return;
    };
    let mut prompt = format!(
        "Edit the arguments of `{}` (call `{}`). Sending approves the call with them; \
         the tool stays the same and the arguments must fit its schema.",
        pc.call.name, pc.call.id
    );
    if let Some(r) = &pc.request {
        prompt.push_str(&format!("\n_What it does now:_ {}", r.description));
    }
    let view = ModalView {
        kind: "edit".into(),
        title: String::new(),
        prompt,
        private_metadata: serde_json::to_string(meta).unwrap_or_default(),
        required: true,
        initial_value: Some(initial),
    };
    let result = match app.templates.modal(&view) {
        Ok(v) => app.api.views_open(trigger_id, v).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!("could not open the edit modal: {e}");
        tell(
            app,
            channel,
            user,
            format!("Could not open the edit form ({e}); please try again."),
        );
    }
}

/// The edited arguments of a submitted edit modal: the text must be JSON.
/// Deciding checks the rest, as `strands resume --edit-args` does: a
/// `{name, arguments}` form must name the call's own tool, and the
/// arguments must fit the tool's schema.
fn edited(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text.trim()).map_err(|e| format!("This is not valid JSON: {e}"))
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
    if matches!(
        callback.as_str(),
        home::REJECT_MODAL | home::MODIFY_MODAL | home::REJECT_ALL_MODAL
    ) {
        let text = ev
            .view
            .state_params
            .state
            .as_ref()
            .and_then(|s| s.values.get(&SlackBlockId("text".into())))
            .and_then(|b| b.get(&SlackActionId("text".into())))
            .and_then(|v| v.value.clone());
        let meta = modal.private_metadata.clone().unwrap_or_default();
        return home::submission(app, &user, &callback, &meta, text).await;
    }
    let Some(meta) = modal
        .private_metadata
        .as_deref()
        .and_then(|m| serde_json::from_str::<ModalMeta>(m).ok())
    else {
        return ok();
    };
    if callback == FILL {
        let state = ev.view.state_params.state.as_ref();
        return forms::filled(app, &user, &meta, state).await;
    }
    let text = ev
        .view
        .state_params
        .state
        .as_ref()
        .and_then(|s| s.values.get(&SlackBlockId("feedback".into())))
        .and_then(|b| b.get(&SlackActionId("text".into())))
        .and_then(|v| v.value.clone())
        .unwrap_or_default();
    if callback != REJECT && text.trim().is_empty() {
        return modal_error("Please write something.");
    }
    let decision = match callback.as_str() {
        EDIT => match edited(&text) {
            Ok(arguments) => words::decision("edit", None, Some(arguments), None),
            Err(why) => return modal_error(&why),
        },
        MODIFY => words::decision("modify", Some(text.clone()), None, None),
        RESPOND => words::decision("respond", Some(text.clone()), None, None),
        REJECT => {
            let reason = Some(text.trim().to_string()).filter(|t| !t.is_empty());
            let required = meta.call.is_none()
                && app
                    .session_of(&meta.channel, &meta.ts)
                    .await
                    .and_then(|s| s.open_gate(&meta.gate).map(|g| g.require_reason))
                    .unwrap_or(false);
            if required && reason.is_none() {
                return modal_error("This gate needs a reason to reject: please say why.");
            }
            words::decision("reject", reason, None, None)
        }
        _ => return ok(),
    };
    let decision = match decision {
        Ok(d) => d,
        Err(why) => return modal_error(&why),
    };
    match decide::decide(
        app,
        &meta.channel,
        &meta.ts,
        &meta.gate,
        answer(decision, &user, meta.call.as_deref(), app.hub.clock.now()),
    )
    .await
    {
        Ok(Ok(())) => ok(),
        Ok(Err(refusal)) => modal_error(&words::refusal(&refusal)),
        Err(e) => {
            tracing::error!("recording a modal decision failed: {e}");
            modal_error("The decision could not be recorded; nothing changed. Please try again.")
        }
    }
}

/// Keeps the modal open with an error under the input.
fn modal_error(text: &str) -> Response {
    Response::Body(modal_errors(text))
}

/// The `response_action: errors` body, the error cut to 500 characters.
fn modal_errors(text: &str) -> serde_json::Value {
    let (mut text, cut) = crate::model::cut(text, 500);
    if cut > 0 {
        text.push('…');
    }
    json!({ "response_action": "errors", "errors": { "feedback": text } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_text_fits_the_initial_value_limit() {
        let small = json!({"path": "/a"});
        assert_eq!(edit_text(&small).unwrap(), "{\n  \"path\": \"/a\"\n}");
        // Pretty JSON over the limit falls back to compact.
        let items: Vec<u32> = (0..700).collect();
        let medium = json!({ "items": items });
        assert!(
            serde_json::to_string_pretty(&medium)
                .unwrap()
                .chars()
                .count()
                > 3000
        );
        let text = edit_text(&medium).unwrap();
        assert!(text.chars().count() <= 3000 && !text.contains('\n'));
        assert!(edit_text(&json!({"body": "x".repeat(3000)})).is_none());
    }

    #[test]
    fn modal_errors_are_cut() {
        let body = modal_errors(&"é".repeat(2000));
        assert_eq!(body["response_action"], "errors");
        let text = body["errors"]["feedback"].as_str().unwrap();
        assert_eq!(text.chars().count(), 501);
        assert!(text.ends_with('…'));
        assert_eq!(modal_errors("bad")["errors"]["feedback"], "bad");
    }
}
