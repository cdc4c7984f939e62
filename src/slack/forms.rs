//! The modals a click opens besides feedback and edits: the reason form
//! of a rejection, and "View full output". Both open at once, on the
//! click's `trigger_id` (it lives 3 s), after the click path has checked
//! that the gate still waits ([`super::interactions`]).
//!
//! - **Reasons.** Reject on a gate with `require_reason` opens the form
//!   with the reason required; "Reject with reason…" (any other gate, and
//!   each tool call) opens it with the reason optional. The submission is
//!   an ordinary reject with that reason: it shows on the updated message,
//!   in the thread, in the audit trail and in the API's session object,
//!   and a tool call's agent reads "denied by <@U…>: REASON".
//! - **Full output.** When a preview was cut, the message offers the whole
//!   (redacted) text in a read-only modal — to those who may answer the
//!   gate or started the run; anyone else is told why, the refusal is
//!   audited, and no modal opens.

use super::app::App;
use super::blocks::{ModalView, OutputView};
use super::interactions::{still_open, tell, ModalMeta};
use crate::model::{Decision, Session};

/// Opens the reason form for gate `meta.gate` (or its call `meta.call`).
pub(super) async fn open_reject(
    app: &App,
    trigger_id: &str,
    meta: &ModalMeta,
    session: &Session,
    user: &str,
) {
    let gate = session.open_gate(&meta.gate);
    let (title, prompt, required) = match meta.call.as_deref() {
        Some(id) => {
            let call = session
                .agent_turn
                .as_ref()
                .and_then(|t| t.calls.iter().find(|c| c.call.id == id));
            let name = call.map(|c| c.call.name.as_str()).unwrap_or("the tool");
            let mut prompt = format!(
                "Reject the call to `{name}` (call `{id}`). It does not run; the agent reads \
                 \"denied by {}: your reason\".",
                crate::model::mention(user)
            );
            if let Some(r) = call.and_then(|c| c.request.as_ref()) {
                prompt.push_str(&format!("\n_What it would do:_ {}", r.description));
            }
            ("Reject the call", prompt, false)
        }
        None => {
            let required = gate.is_some_and(|g| g.require_reason);
            let mut prompt = gate.map(|g| g.prompt.clone()).unwrap_or_default();
            prompt.push_str(&format!(
                "\n\nRejecting stops the run of `{}`. The reason shows on the message, in \
                 the thread and in the audit trail{}.",
                session.workflow,
                if required {
                    "; this gate needs one"
                } else {
                    ""
                }
            ));
            ("Reject", prompt, required)
        }
    };
    let view = ModalView {
        kind: "reject".into(),
        title: title.into(),
        prompt,
        private_metadata: serde_json::to_string(meta).unwrap_or_default(),
        required,
        initial_value: None,
    };
    let result = match app.templates.modal(&view) {
        Ok(v) => app.api.views_open(trigger_id, v).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!("could not open the reject modal: {e}");
        tell(
            app,
            &meta.channel,
            user,
            format!("Could not open the reject form ({e}); please try again."),
        );
    }
}

/// Opens the full text under review at gate `handle`, for a reader.
pub(super) async fn open_output(
    app: &App,
    trigger_id: &str,
    channel: &str,
    ts: &str,
    handle: &str,
    user: &str,
) {
    let session = match still_open(app, channel, ts, handle, None).await {
        Ok(s) => s,
        Err(why) => {
            tell(app, channel, user, why);
            return;
        }
    };
    let Some(gate) = session.open_gate(handle) else {
        tell(app, channel, user, "that gate is no longer open".into());
        return;
    };
    // Whoever may answer the gate (rejecting is the least an approver may
    // do), or started the run, may read what it is about.
    if session.started_by != user {
        let probe = Decision::Reject { reason: None };
        if let Err(why) = app.may_answer(&session, handle, probe, user).await {
            let why = format!("you may not read the full output of this gate: {why}");
            app.audit_refused_click(channel, ts, handle, user, None, &why)
                .await;
            tell(app, channel, user, why);
            return;
        }
    }
    let view = OutputView::from_gate(gate, &session.workflow, &session.id);
    let result = match app.templates.output(&view) {
        Ok(v) => app.api.views_open(trigger_id, v).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!("could not open the full output: {e}");
        tell(
            app,
            channel,
            user,
            format!(
                "Could not show the full output ({e}); `strands sessions show {}` shows it.",
                session.id
            ),
        );
    }
}
