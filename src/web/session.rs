//! A run's page (`/sessions/{id}`): its whole story on one page — steps
//! with their (redacted) outputs, every gate asked and answered (who, when,
//! via which channel, time waited), tool calls with their arguments and
//! results, timeouts, escalations, refusals, the output and artifacts —
//! and the actions its open gates allow, answered through the hub's intake
//! (`POST /sessions/{id}/answer`). A gate with a form shows its fields as
//! inputs of the Approve form ([`crate::hub::fields`]); what they send
//! goes to the intake as text, typed and checked there. A gate allowing
//! trust has a Trust button.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::auth::{check_post, Form, Viewer};
use super::{html, Web, WebError};
use crate::audit::redact::Redactor;
use crate::audit::AuditKind;
use crate::hub::answers::AnswerRequest;
use crate::hub::door::{Accepted, Door, DoorAnswer};
use crate::hub::view::{GateView, SessionView};
use crate::model::{Refusal, Session};

/// One line of the timeline.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub at: DateTime<Utc>,
    /// `step`, `request`, `answer`, `timeout`, `refusal`, `skip`, `tool`,
    /// `egress`, `resent`, `escalation`, `outcome`.
    pub kind: &'static str,
    pub title: String,
    pub who: Option<String>,
    pub via: Option<String>,
    /// Short text shown at once (redacted).
    pub detail: Option<String>,
    /// Long text shown on demand (redacted).
    pub long: Option<String>,
}

/// An open gate and whether this viewer may answer it here.
#[derive(Debug, Serialize)]
pub struct Action {
    pub gate: GateView,
    /// The deadline of a gate keeping business hours, in its calendar's
    /// words (`crate::hub::durations::business_deadline`).
    pub business: Option<String>,
    pub can_answer: bool,
    /// Waiting tool calls, with their arguments pretty-printed for editing.
    pub calls: Vec<Value>,
    /// The form's fields, inputs of the Approve form (empty: no form).
    pub fields: Vec<crate::hub::fields::FieldView>,
    /// The Trust button's words, when the gate allows trust.
    pub trust: Option<String>,
    /// The action's arguments, pretty-printed for editing, when the gate
    /// takes edits (`allow_edit`: an approval request's editable action).
    pub edit: Option<String>,
}

/// What an answer did, shown on the page.
#[derive(Debug, Serialize)]
pub struct Result {
    pub ok: bool,
    pub message: String,
}

/// How a refusal reads on a page: a late answer says who decided.
pub fn refusal_text(r: &Refusal) -> String {
    match r {
        Refusal::AlreadyAnswered(a) => format!(
            "Already decided by {} at {} ({}).",
            a.by,
            a.at.format("%Y-%m-%d %H:%M:%S UTC"),
            a.decision.verb()
        ),
        other => other.to_string(),
    }
}

/// The step records of a pattern's state, wherever the pattern keeps
/// them: every object shaped like a `StepRecord`, with its path.
fn step_records(state: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match state {
        Value::Object(m) => {
            if m.contains_key("response") && m.contains_key("finished_at") && m.contains_key("kind")
            {
                out.push((path.to_string(), state.clone()));
                return;
            }
            for (k, v) in m {
                if k == "pattern" {
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                step_records(v, &p, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                step_records(v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn timeline(s: &Session, audit: &[crate::audit::AuditEntry], redactor: &Redactor) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut records = Vec::new();
    step_records(
        &serde_json::to_value(&s.state).unwrap_or(Value::Null),
        "",
        &mut records,
    );
    for (path, r) in records {
        let at = r
            .get("finished_at")
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .unwrap_or(s.created_at);
        let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
        if kind != "agent" {
            continue;
        }
        let agent = r.get("agent").and_then(Value::as_str).unwrap_or("agent");
        let text = r
            .get("response")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push(Entry {
            at,
            kind: "step",
            title: format!("{agent} finished ({path})"),
            who: None,
            via: None,
            detail: Some(format!("{} characters", text.chars().count())),
            long: Some(redactor.redact(text)),
        });
    }
    for entry in audit {
        let e = &entry.event;
        let kind = match e.kind {
            Some(AuditKind::Request) => "request",
            Some(AuditKind::Answer) => "answer",
            Some(AuditKind::Timeout) => "timeout",
            Some(AuditKind::Refusal) => "refusal",
            Some(AuditKind::Skip) => "skip",
            Some(AuditKind::ToolRun) => "tool",
            Some(AuditKind::EgressBlocked) => "egress",
            Some(AuditKind::Resent) => "resent",
            Some(AuditKind::Outcome) => "outcome",
            Some(AuditKind::Grant) => "grant",
            Some(AuditKind::Access) | None => continue,
        };
        let gate = e.gate.clone().unwrap_or_default();
        let title = match kind {
            "request" => format!("gate {gate} asked"),
            "answer" => {
                let d = e
                    .decision
                    .as_ref()
                    .map(|d| match d {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .unwrap_or_default();
                match &e.call {
                    Some(c) => format!("tool call {c} at {gate}: {d}"),
                    None => format!("gate {gate}: {d}"),
                }
            }
            "timeout" => format!("gate {gate} timed out"),
            "refusal" => format!("an answer to {gate} was refused"),
            "skip" => format!("gate {gate} skipped"),
            "tool" => match &e.grant {
                Some(g) => format!(
                    "tool call {} ran, allowed by grant {g}",
                    e.call.clone().unwrap_or_default()
                ),
                None => format!("tool call {} ran", e.call.clone().unwrap_or_default()),
            },
            "grant" => format!("grant {}", e.grant.clone().unwrap_or_default()),
            "egress" => "a tool's destination was blocked".into(),
            "resent" => "a model request was sent again after a crash".into(),
            _ => "the run ended".into(),
        };
        let mut detail = e.detail.clone();
        if let Some(ms) = e.response_ms {
            let waited = format!(
                "waited {}",
                crate::hub::durations::duration((ms / 1000) as i64)
            );
            detail = Some(match detail {
                Some(d) => format!("{d} · {waited}"),
                None => waited,
            });
        }
        out.push(Entry {
            at: e.at.unwrap_or(s.created_at),
            kind,
            title,
            who: e.who.clone(),
            via: e.via.clone(),
            detail,
            long: e.preview.clone(),
        });
    }
    out.sort_by_key(|e| e.at);
    out
}

async fn escalations(web: &Web, s: &Session) -> Vec<Entry> {
    let mut handles: Vec<String> = s
        .history
        .iter()
        .map(|e| format!("{}#{}", e.gate, e.instance))
        .collect();
    handles.extend(s.open_gates().map(|g| g.handle()));
    handles.sort();
    handles.dedup();
    let mut out = Vec::new();
    for h in handles {
        if let Ok(Some(esc)) = web.hub.store.escalation(&s.id, &h).await {
            out.push(Entry {
                at: esc.at,
                kind: "escalation",
                title: format!("gate {h} escalated"),
                who: None,
                via: None,
                detail: Some(format!(
                    "to {}",
                    esc.targets
                        .iter()
                        .map(|t| match t {
                            crate::spec::EscalationTarget::User(u) => format!("user {u}"),
                            crate::spec::EscalationTarget::Group(g) => format!("group {g}"),
                            crate::spec::EscalationTarget::Channel(c) => format!("channel {c}"),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                long: None,
            });
        }
    }
    out
}

async fn render_page(
    web: &Web,
    viewer: &Viewer,
    s: &Session,
    result: Option<Result>,
) -> std::result::Result<String, WebError> {
    let hub = &web.hub;
    let after = hub.store.last_event().await?;
    let redactor = hub
        .spec_of(s)
        .map(|spec| spec.redactor.clone())
        .unwrap_or_default();
    let audit = hub.store.audit_export(None, Some(&s.id)).await?;
    let audit: Vec<_> = audit
        .into_iter()
        .filter(|a| a.event.session == s.id)
        .collect();
    let mut entries = timeline(s, &audit, &redactor);
    entries.extend(escalations(web, s).await);
    entries.sort_by_key(|e| e.at);
    let notes = hub.store.notifications(&s.id).await?;
    let view = SessionView::of(s, false, notes.last());
    let now = web.hub.clock.now();
    let actions: Vec<Action> = s
        .open_gates()
        .map(|g| {
            let gate = GateView::of(s, g, false);
            let in_scope = viewer.only_gate().is_none_or(|h| h == gate.handle);
            let calls = gate
                .calls
                .iter()
                .filter(|c| c.waiting())
                .map(|c| {
                    serde_json::json!({
                        "id": c.id,
                        "tool": c.tool,
                        "arguments": serde_json::to_string_pretty(&c.arguments).unwrap_or_default(),
                        "trustable": c.trustable(),
                    })
                })
                .collect();
            Action {
                business: crate::hub::durations::business_deadline(
                    g.hours.as_ref(),
                    g.timeout_at,
                    now,
                ),
                can_answer: in_scope
                    && crate::hub::inbox::may_answer(
                        hub,
                        &viewer.caller.name,
                        &viewer.caller.idp_groups,
                        s,
                        g,
                    ),
                gate,
                calls,
                fields: g
                    .form
                    .as_ref()
                    .map(crate::hub::fields::fields)
                    .unwrap_or_default(),
                trust: g.allow_trust.then(|| crate::hub::fields::trust_label(s)),
                edit: g.allow_edit.then(|| editable_arguments(s)).flatten(),
            }
        })
        .collect();
    let output = s.output.as_deref().map(|o| redactor.redact(o));
    Ok(web.pages.render(
        "session.html",
        serde_json::json!({
            "title": format!("{} · {}", s.workflow, s.id),
            "viewer": { "name": viewer.caller.name, "role": viewer.caller.role },
            "csrf": viewer.login.csrf,
            "scoped": viewer.only_gate().is_some(),
            "s": view,
            "actions": actions,
            "timeline": entries,
            "output": output,
            "result": result,
            "after": after,
            "now": now,
        }),
    ))
}

/// The session `id`, when this sign-in may read it.
async fn readable(web: &Web, viewer: &Viewer, id: &str) -> std::result::Result<Session, WebError> {
    let s = web.hub.store.get(id).await?;
    if !viewer.scoped_to(&s.id) {
        return Err(WebError::forbidden(
            "this sign-in (a one-tap link) opens one run only",
        ));
    }
    if !crate::hub::inbox::may_read(
        &web.hub,
        &viewer.caller.name,
        &viewer.caller.idp_groups,
        viewer.caller.role,
        &s,
    ) {
        return Err(WebError::forbidden(format!(
            "`{}` may not read session {}: approvers read the runs they may answer, started or answered",
            viewer.caller.name, s.id
        )));
    }
    Ok(s)
}

/// The session page.
pub async fn page(
    State(web): State<Web>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> std::result::Result<Response, WebError> {
    let s = readable(&web, &viewer, &id).await?;
    Ok(html(render_page(&web, &viewer, &s, None).await?))
}

/// One answer from the page's forms, through the hub's intake as the
/// signed-in person, `via: web`.
pub async fn answer(
    State(web): State<Web>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> std::result::Result<Response, WebError> {
    let form = Form::parse(&body);
    check_post(&web, &viewer, &headers, &form)?;
    let s = readable(&web, &viewer, &id).await?;
    let gate = form
        .get("gate")
        .filter(|g| !g.is_empty())
        .map(str::to_string);
    if let Some(only) = viewer.only_gate() {
        if gate.as_deref() != Some(only) {
            return Err(WebError::forbidden(
                "this sign-in (a one-tap link) answers its own gate only",
            ));
        }
    }
    let text = |name: &str| form.get(name).map(str::to_string);
    let args = match form.get("args") {
        Some(raw) if !raw.trim().is_empty() => match serde_json::from_str::<Value>(raw) {
            Ok(v) => Some(v),
            Err(e) => {
                return respond(
                    &web,
                    &viewer,
                    &s,
                    false,
                    format!("The arguments are not JSON: {e}"),
                )
                .await
            }
        },
        _ => None,
    };
    let decision = form.get("decision").unwrap_or_default().to_string();
    // Approving a gate with a form sends its inputs (`value.NAME`); an
    // unticked checkbox sends nothing, which means false.
    let asked = match &gate {
        Some(g) => s.open_gate(g),
        None => s.first_gate(),
    }
    .and_then(|g| g.form.as_ref());
    let values = match asked {
        Some(f) if decision == "approve" => Some(
            f.fields()
                .iter()
                .filter_map(|field| {
                    let sent = form.get(&format!("value.{}", field.name));
                    let boolean =
                        matches!(field.kind, crate::model::form::FieldKind::Boolean { .. });
                    match (sent, boolean) {
                        (Some(v), _) => Some((field.name.clone(), Value::String(v.to_string()))),
                        (None, true) => Some((field.name.clone(), Value::String("false".into()))),
                        (None, false) => None,
                    }
                })
                .collect(),
        ),
        _ => None,
    };
    let req = AnswerRequest {
        decision,
        gate: gate.clone(),
        call: text("call").filter(|c| !c.is_empty()),
        reason: text("reason"),
        feedback: text("feedback"),
        response: text("response"),
        args,
        vars: Default::default(),
        values,
        ..AnswerRequest::default()
    };
    let decision = match req.decision() {
        Ok(d) => d,
        Err(e) => return respond(&web, &viewer, &s, false, e.message).await,
    };
    let answer = DoorAnswer::new(&s.id, &viewer.caller.name, Door::Web, decision)
        .idp_groups(viewer.caller.idp_groups.iter().cloned())
        .at(gate.as_deref())
        .call(req.call.as_deref());
    let (ok, message) = match web.hub.take(answer).await? {
        Ok(Accepted::Counted(_)) => (
            true,
            "Your answer is counted; the gate waits for more.".to_string(),
        ),
        Ok(Accepted::Queued(_)) => (
            true,
            "Your answer is recorded; the run takes it as soon as its current step ends.".into(),
        ),
        Ok(Accepted::Recorded(_)) => (true, format!("Recorded: {} decided by you.", req.decision)),
        Ok(Accepted::Repeated(_)) => (
            true,
            format!(
                "You decided this already ({}); nothing new was recorded.",
                req.decision
            ),
        ),
        Err(refusal) => {
            let status = crate::hub::problem::Problem::from(refusal.clone()).status;
            let s = web.hub.store.get(&s.id).await?;
            return respond_with(&web, &viewer, &s, status, false, refusal_text(&refusal)).await;
        }
    };
    let s = web.hub.store.get(&s.id).await?;
    respond(&web, &viewer, &s, ok, message).await
}

async fn respond(
    web: &Web,
    viewer: &Viewer,
    s: &Session,
    ok: bool,
    message: String,
) -> std::result::Result<Response, WebError> {
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    respond_with(web, viewer, s, status, ok, message).await
}

/// The run's page with what became of an answer, under `status`.
async fn respond_with(
    web: &Web,
    viewer: &Viewer,
    s: &Session,
    status: StatusCode,
    ok: bool,
    message: String,
) -> std::result::Result<Response, WebError> {
    let page = render_page(web, viewer, s, Some(Result { ok, message })).await?;
    Ok((status, html(page)).into_response())
}

/// The arguments of session `s`'s action (an approval request keeps it as
/// JSON text in the variable `action`), pretty-printed.
fn editable_arguments(s: &Session) -> Option<String> {
    let text = s.variables.get("action")?.as_str()?;
    let action: Value = serde_json::from_str(text).ok()?;
    serde_json::to_string_pretty(action.get("arguments")?).ok()
}
