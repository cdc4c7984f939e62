//! The modals a click opens besides feedback and edits: the reason form
//! of a rejection, "View full output" and a gate's form. Each opens at
//! once, on the click's `trigger_id` (it lives 3 s), after the click path
//! has checked that the gate still waits ([`super::interactions`]); what a
//! modal carries back ([`ModalMeta`]) is here too.
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
//! - **Values.** Approve on a gate with a form opens the form: an input
//!   per field ([`crate::hub::fields`]), defaults filled in. The submission
//!   sends what was typed, as text, to the intake as a fill; values it
//!   refuses come back as errors under their inputs (`response_action:
//!   errors`) and nothing changes.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use slack_morphism::prelude::SlackViewState;

use super::access::may_answer;
use super::app::App;
use super::blocks::{FormView, ModalView, OutputView};
use super::decide::{answer, audit_refused_click, decide, still_open, tell};
use super::reply::Reply;
use super::words;
use crate::model::{Decision, Refusal, Session};

/// What the bot puts in a modal's `private_metadata`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ModalMeta {
    pub(super) channel: String,
    pub(super) ts: String,
    pub(super) gate: String,
    /// The tool call an edit or reason modal is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) call: Option<String>,
}

/// The block of field `name` in the form modal.
fn block_of(name: &str) -> String {
    format!("field:{name}")
}

/// Opens the form of gate `meta.gate`, to be filled in and approved.
pub(super) async fn open_fill(
    app: &App,
    trigger_id: &str,
    meta: &ModalMeta,
    session: &Session,
    user: &str,
) {
    let Some(form) = session.open_gate(&meta.gate).and_then(|g| g.form.as_ref()) else {
        tell(
            app,
            &meta.channel,
            user,
            "that gate asks for no values".into(),
        );
        return;
    };
    let gate = session.open_gate(&meta.gate);
    let view = FormView {
        title: "Approve".into(),
        prompt: format!(
            "{}\n\nApproving `{}` fills in these values; the run reads them.",
            gate.map(|g| g.prompt.as_str()).unwrap_or_default(),
            session.workflow
        ),
        private_metadata: serde_json::to_string(meta).unwrap_or_default(),
        fields: crate::hub::fields::fields(form),
    };
    let result = match app.templates.form(&view) {
        Ok(v) => app.api.views_open(trigger_id, v).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::warn!("could not open the form: {e}");
        tell(
            app,
            &meta.channel,
            user,
            format!(
                "Could not open the form ({e}); `strands resume {} --approve --value NAME=VALUE` answers it.",
                session.id
            ),
        );
    }
}

/// The values a submitted form carries, by field name, as typed (the
/// selected option's value for a select); empty inputs send nothing.
fn typed(state: Option<&SlackViewState>) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(state) = state else {
        return out;
    };
    for (block, actions) in &state.values {
        let Some(name) = block.0.strip_prefix("field:") else {
            continue;
        };
        let Some(v) = actions.get(&slack_morphism::prelude::SlackActionId("value".into())) else {
            continue;
        };
        let text = v
            .value
            .clone()
            .or_else(|| v.selected_option.as_ref().map(|o| o.value.clone()));
        if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
            out.insert(name.to_string(), Value::String(t));
        }
    }
    out
}

/// A submitted form: approves gate `meta.gate` with its values, through
/// the intake; refused values are errors under their inputs.
pub(super) async fn filled(
    app: &App,
    user: &str,
    meta: &ModalMeta,
    state: Option<&SlackViewState>,
) -> Reply {
    let first = app
        .session_of(&meta.channel, &meta.ts)
        .await
        .and_then(|s| {
            s.open_gate(&meta.gate)
                .and_then(|g| g.form.as_ref())
                .and_then(|f| f.fields().first().map(|f| block_of(&f.name)))
        })
        .unwrap_or_else(|| block_of("value"));
    let fill = match words::decision("approve", None, None, Some(typed(state))) {
        Ok(d) => answer(d, user, None, app.hub.clock.now()),
        Err(why) => {
            return Reply::Body(
                json!({ "response_action": "errors", "errors": { first: cut(&why) } }),
            )
        }
    };
    match decide(app, &meta.channel, &meta.ts, &meta.gate, fill).await {
        Ok(Ok(())) => Reply::Ack,
        Ok(Err(Refusal::BadValues(errors))) => {
            // Each under its input; a name the form does not have, under
            // the first.
            let known =
                |name: &str| state.is_some_and(|s| s.values.keys().any(|b| b.0 == block_of(name)));
            let mut shown = Map::new();
            for e in errors {
                let block = if known(&e.field) {
                    block_of(&e.field)
                } else {
                    first.clone()
                };
                let text = match shown.get(&block).and_then(Value::as_str) {
                    Some(before) => format!("{before}; {}", e.message),
                    None if block == block_of(&e.field) => e.message.clone(),
                    None => e.to_string(),
                };
                shown.insert(block, Value::String(cut(&text)));
            }
            Reply::Body(json!({ "response_action": "errors", "errors": shown }))
        }
        Ok(Err(refusal)) => Reply::Body(json!({
            "response_action": "errors",
            "errors": { first: cut(&words::refusal(&refusal)) },
        })),
        Err(e) => {
            tracing::error!("recording a filled-in form failed: {e}");
            Reply::Body(json!({
                "response_action": "errors",
                "errors": { first: "The answer could not be recorded; nothing changed. Please try again." },
            }))
        }
    }
}

/// An error under an input: at most 500 characters.
fn cut(text: &str) -> String {
    let (mut t, n) = crate::model::cut(text, 500);
    if n > 0 {
        t.push('…');
    }
    t
}

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
                super::words::who(user)
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
        if let Err(why) = may_answer(app, &session, handle, probe, user).await {
            let why = format!("you may not read the full output of this gate: {why}");
            audit_refused_click(app, channel, ts, handle, user, None, &why).await;
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
