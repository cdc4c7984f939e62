//! The approval card: an Adaptive Card 1.5 asking for one open gate, and
//! the same card once it is decided (who, when, the reason; no buttons).
//!
//! The card shows the workflow, the gate, its prompt, the redacted preview
//! the gate keeps (the one Slack shows: [`OpenGate::preview`]), who started
//! the run, the timeout and what it does, and the quorum's progress. Its
//! actions are `Action.Execute` with verbs `approve`, `reject` (a `reason`
//! input, required when the gate requires one), `modify` (a `feedback`
//! input, manual gates) and `respond` (a `response` input, `hitl` gates),
//! each carrying `{session, gate}` as data; "Open in browser" opens the
//! run's page. The data is only where to answer: who answers is always the
//! verified activity's sender. A gate with a form is approved from
//! "Approve…", a card of its fields' inputs ([`form`]); a gate allowing
//! trust has a Trust action (verb `trust`).
//!
//! A tool-call gate gets the tool-call card instead ([`tools`];
//! [`for_gate`] picks). A person's inbox across runs, with bulk approve
//! and reject, is its own card ([`inbox`]).
//!
//! Posted as an activity with the attachment alone (no `text` beside it:
//! Teams would show both). Every card the Teams tests see is checked by
//! Microsoft's Adaptive Cards parser (`tests/teams-cards`).

pub mod form;
pub mod inbox;
pub mod tools;

use chrono::SecondsFormat;
use serde_json::{json, Value};

use crate::hub::{durations, pages, Hub};
use crate::model::{Answer, Decision, OpenGate, Session};
use crate::spec::GateKind;

/// The attachment's content type.
pub const CONTENT_TYPE: &str = "application/vnd.microsoft.card.adaptive";

/// Teams refuses activities over about 28 KB: the card is kept under this
/// many bytes of JSON, the preview cut (halved until it fits, then left
/// out) to make it so.
pub const MAX_CARD_BYTES: usize = 24 * 1024;

/// The most of the preview a card starts with.
pub const MAX_PREVIEW_CHARS: usize = 12_000;

/// The most of the prompt a card shows.
pub const MAX_PROMPT_CHARS: usize = 3_000;

/// The message activity carrying `card` and nothing else.
pub fn activity(card: Value) -> Value {
    json!({
        "type": "message",
        "attachments": [{ "contentType": CONTENT_TYPE, "content": card }],
    })
}

fn card(body: Vec<Value>, actions: Vec<Value>) -> Value {
    let mut c = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.5",
        "body": body,
    });
    if !actions.is_empty() {
        c["actions"] = Value::Array(actions);
    }
    c
}

fn text(t: impl Into<String>) -> Value {
    json!({ "type": "TextBlock", "text": t.into(), "wrap": true })
}

/// The facts both cards start with.
fn facts(workflow: &str, id: &str, started_by: &str, gate: &str) -> Vec<Value> {
    vec![
        json!({
            "type": "TextBlock",
            "text": format!("Approval needed: {workflow}"),
            "weight": "Bolder",
            "size": "Medium",
            "wrap": true,
        }),
        json!({
            "type": "FactSet",
            "facts": [
                {"title": "Workflow", "value": workflow},
                {"title": "Gate", "value": gate},
                {"title": "Started by", "value": started_by},
                {"title": "Run", "value": id},
            ],
        }),
    ]
}

fn open_in_browser(public_url: &str, session_id: &str) -> Value {
    json!({
        "type": "Action.OpenUrl",
        "title": "Open in browser",
        "url": pages::session(public_url, session_id),
    })
}

fn execute(title: &str, verb: &str, data: &Value) -> Value {
    json!({ "type": "Action.Execute", "title": title, "verb": verb, "data": data })
}

/// An action that shows a small form: one text input and its button.
fn form(title: &str, verb: &str, input: &str, label: &str, required: bool, data: &Value) -> Value {
    let mut field = json!({
        "type": "Input.Text",
        "id": input,
        "label": label,
        "isMultiline": true,
        "maxLength": 2000,
    });
    if required {
        field["isRequired"] = json!(true);
        field["errorMessage"] = json!(format!("{label} is required"));
    }
    json!({
        "type": "Action.ShowCard",
        "title": title,
        "card": {
            "type": "AdaptiveCard",
            "body": [field],
            "actions": [execute(title, verb, data)],
        },
    })
}

/// The card asking for `gate` of `session` now: the approval card, or for
/// a tool-call gate the tool-call card ([`tools`]) with the arguments
/// through the spec's redactor.
pub fn for_gate(hub: &Hub, session: &Session, gate: &OpenGate) -> Value {
    if gate.kind == GateKind::ToolCall {
        tools::card_for(
            session,
            &gate.handle(),
            &redactor(hub, session),
            &hub.public_url,
            None,
        )
    } else {
        approval(session, gate, &hub.public_url, hub.clock.now())
    }
}

/// What people are shown of `session` goes through its spec's redactor
/// (`security.redact` and the built-in secret patterns).
pub fn redactor(hub: &Hub, session: &Session) -> crate::audit::redact::Redactor {
    hub.spec_of(session)
        .map(|spec| spec.redactor.clone())
        .unwrap_or_default()
}

/// The card asking for `gate` of `session`, at `now`, under
/// [`MAX_CARD_BYTES`].
pub fn approval(
    session: &Session,
    gate: &OpenGate,
    public_url: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let trust = crate::hub::fields::trust_label(session);
    let run = Run {
        workflow: &session.workflow,
        id: &session.id,
        started_by: &session.started_by,
        trust: &trust,
    };
    approval_of(&run, gate, public_url, now)
}

/// What the card says about the run.
struct Run<'a> {
    workflow: &'a str,
    id: &'a str,
    started_by: &'a str,
    /// The Trust action's title, for a gate that allows trust.
    trust: &'a str,
}

fn approval_of(
    run: &Run<'_>,
    gate: &OpenGate,
    public_url: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let mut budget = MAX_PREVIEW_CHARS;
    loop {
        let card = approval_with(run, gate, public_url, now, budget, true);
        let size = serde_json::to_string(&card).map_or(0, |t| t.len());
        if size <= MAX_CARD_BYTES {
            return card;
        }
        if budget == 0 {
            // A form too large for a card is filled in in the browser.
            return approval_with(run, gate, public_url, now, 0, false);
        }
        budget = if budget > 64 { budget / 2 } else { 0 };
    }
}

/// The card with at most `budget` characters of the preview, and the
/// form's inputs when `inputs` (else a word that the browser fills it in).
fn approval_with(
    run: &Run<'_>,
    gate: &OpenGate,
    public_url: &str,
    now: chrono::DateTime<chrono::Utc>,
    budget: usize,
    inputs: bool,
) -> Value {
    let mut body = facts(
        run.workflow,
        run.id,
        run.started_by,
        &format!("{} ({})", gate.id, gate.position),
    );
    body.push(text(
        gate.prompt
            .chars()
            .take(MAX_PROMPT_CHARS)
            .collect::<String>(),
    ));
    if gate.show_preview && !gate.context.trim().is_empty() {
        let (preview, cut) = gate.preview();
        let shown: String = preview.chars().take(budget).collect();
        let cut = cut + preview.chars().count() - shown.chars().count();
        if !shown.is_empty() {
            body.push(json!({
                "type": "TextBlock",
                "text": shown,
                "wrap": true,
                "fontType": "Monospace",
                "separator": true,
            }));
        }
        if cut > 0 {
            body.push(json!({
                "type": "TextBlock",
                "text": format!("… {cut} more characters: open the run in the browser"),
                "isSubtle": true,
                "wrap": true,
            }));
        }
    }
    if gate.step_up.is_some() {
        body.push(text(format!(
            "🔐 Approving takes your passkey: [Confirm with your passkey]({})",
            pages::session(public_url, run.id)
        )));
    }
    let business = durations::business_deadline(gate.hours.as_ref(), gate.timeout_at, now);
    match (gate.timeout_at, business) {
        (Some(_), Some(words)) => body.push(text(format!(
            "Times out {words}; then: {}",
            gate.fallback.name()
        ))),
        (Some(at), None) => body.push(text(format!(
            "Times out in {} ({}); then: {}",
            durations::duration((at - now).num_seconds()),
            at.to_rfc3339_opts(SecondsFormat::Secs, true),
            gate.fallback.name()
        ))),
        (None, Some(words)) => body.push(text(format!("Business hours: {words}"))),
        (None, None) => {}
    }
    if let Some(r) = &gate.rule {
        body.push(text(r.shown()));
    }
    if gate.approvals_required > 1 {
        let who: Vec<String> = gate
            .approvals
            .iter()
            .map(|a| {
                let by = super::names::shown_as(&a.by, a.person.as_deref());
                match &a.on_behalf_of {
                    Some(p) => format!("{by} for {p}"),
                    None => by,
                }
            })
            .collect();
        body.push(text(format!(
            "Approvals: {} of {}{}",
            gate.approvals.len(),
            gate.approvals_required,
            if who.is_empty() {
                String::new()
            } else {
                format!(" ({})", who.join(", "))
            }
        )));
    }
    let data = json!({ "session": run.id, "gate": gate.handle() });
    let mut actions = Vec::new();
    if gate.kind == GateKind::Hitl {
        actions.push(form(
            "Answer",
            "respond",
            "response",
            "Your answer",
            true,
            &data,
        ));
    }
    match &gate.form {
        None => actions.push(execute("Approve", "approve", &data)),
        Some(f) if inputs => {
            let fields = crate::hub::fields::fields(f);
            body.push(text(format!(
                "Approving fills in: {}",
                fields
                    .iter()
                    .map(|f| f.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
            actions.push(json!({
                "type": "Action.ShowCard",
                "title": "Approve…",
                "card": {
                    "type": "AdaptiveCard",
                    "body": form::inputs(&fields),
                    "actions": [execute("Approve", "approve", &data)],
                },
            }));
        }
        Some(f) => body.push(text(format!(
            "Approving fills in {}: open the run in the browser to do so.",
            f.summary()
        ))),
    }
    if gate.allow_trust {
        actions.push(execute(run.trust, "trust", &data));
    }
    actions.push(form(
        "Reject",
        "reject",
        "reason",
        "Reason",
        gate.require_reason,
        &data,
    ));
    if gate.kind == GateKind::ManualGate {
        actions.push(form(
            "Modify", "modify", "feedback", "Feedback", true, &data,
        ));
    }
    actions.push(open_in_browser(public_url, run.id));
    card(body, actions)
}

/// The card once gate `gate_id` of `session` was decided by `answer`:
/// who, when, the reason or feedback; no buttons but the browser's.
pub fn decided(session: &Session, gate_id: &str, answer: &Answer, public_url: &str) -> Value {
    let mut body = facts(&session.workflow, &session.id, &session.started_by, gate_id);
    body[0]["text"] = json!(format!("Decided: {}", session.workflow));
    let verb = answer.decision.verb();
    let mut verb_cap = verb.to_string();
    if let Some(first) = verb_cap.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    let at = answer.at.format("%Y-%m-%d %H:%M:%S UTC");
    body.push(json!({
        "type": "TextBlock",
        "text": if answer.via == "timeout" {
            format!("⏱ Timed out at {at} → {}", timeout_outcome(&answer.decision))
        } else {
            format!(
                "{verb_cap} by {}{} at {at}",
                super::names::shown_as(&answer.by, answer.person.as_deref()),
                answer.for_whom()
            )
        },
        "weight": "Bolder",
        "wrap": true,
        "color": if matches!(answer.decision, Decision::Approve | Decision::Fill { .. } | Decision::Trust { .. }) { "Good" } else { "Attention" },
    }));
    let detail = match &answer.decision {
        Decision::Reject { reason: Some(r) } => Some(format!("Reason: {r}")),
        Decision::Modify { feedback } => Some(format!("Feedback: {feedback}")),
        Decision::Respond { text } => Some(format!("Answer: {text}")),
        Decision::Fill { values } => Some(format!("Values: {}", crate::model::form::shown(values))),
        _ => None,
    };
    if let Some(d) = detail {
        body.push(text(d));
    }
    card(body, vec![open_in_browser(public_url, &session.id)])
}

/// What a timeout's fallback did, as a timed-out card says it (the
/// Slack room's words: "rejected by fallback", ...).
fn timeout_outcome(decision: &Decision) -> String {
    match decision {
        Decision::Approve => "approved by fallback".into(),
        Decision::Reject { .. } => "rejected by fallback".into(),
        Decision::Respond { text } => format!("answered \"{text}\" (the default)"),
        Decision::Skip => "skipped by fallback".into(),
        Decision::Abort { .. } => "aborted by fallback: the run failed".into(),
        other => other.verb().into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::{Fallback, Position};

    fn gate(kind: GateKind, context: &str) -> OpenGate {
        let now = crate::clock::test_epoch();
        OpenGate {
            reminded_at: None,
            id: "review".into(),
            instance: 1,
            order: 1,
            kind,
            position: Position::Step(1),
            prompt: "Ship it?".into(),
            context: context.into(),
            show_preview: true,
            preview_length: 100_000,
            default: None,
            fallback: Fallback::Cancel,
            opened_at: now,
            timeout_at: Some(now + chrono::TimeDelta::minutes(90)),
            require_reason: true,
            channel: None,
            approvers: Vec::new(),
            approvals_required: 2,
            allow_self_approval: None,
            approvals: Vec::new(),
            rejections_required: 1,
            rejections: Vec::new(),
            notify_dm: false,
            notify_email: false,
            trigger: None,
            rule: None,
            hours: None,
            form: None,
            allow_trust: false,
            allow_edit: false,
            step_up: None,
        }
    }

    const RUN: Run<'static> = Run {
        workflow: "deploy",
        id: "s1",
        started_by: "teams:aad-1",
        trust: "Trust rm for this session",
    };

    /// Every `Action.Execute` verb on a card (also for `card::tools`' tests).
    pub(crate) fn verbs(v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        match v {
            Value::Object(m) => {
                if m.get("type") == Some(&json!("Action.Execute")) {
                    out.push(m["verb"].as_str().unwrap_or_default().to_string());
                }
                m.values().for_each(|x| out.extend(verbs(x)));
            }
            Value::Array(a) => a.iter().for_each(|x| out.extend(verbs(x))),
            _ => {}
        }
        out
    }

    #[test]
    fn a_decided_card_says_for_whom_a_delegate_answered() {
        let session = crate::gate::testkit::paused_session("s1");
        let answer = Answer {
            decision: Decision::Approve,
            by: "teams:aad-bob".into(),
            at: crate::clock::test_epoch(),
            via: "teams".into(),
            vars: Default::default(),
            call: None,
            person: Some("bob".into()),
            on_behalf_of: Some("alice".into()),
            step_up: None,
            idp_group: None,
        };
        let card = decided(&session, "review", &answer, "http://x").to_string();
        assert!(card.contains("Approved by bob for alice at"), "{card}");
    }

    #[test]
    fn a_card_offers_what_the_gate_allows_and_says_what_it_waits_for() {
        let now = crate::clock::test_epoch();
        let mut ruled = gate(GateKind::ManualGate, "the plan");
        ruled.rule = Some(crate::model::RuleNote {
            index: 1,
            summary: "needs 2 of cfo, group:finance because amount > 10000".into(),
            failed: None,
        });
        let manual = approval_of(&RUN, &ruled, "http://x", now);
        assert_eq!(manual["version"], "1.5");
        assert_eq!(verbs(&manual), ["approve", "reject", "modify"]);
        let text = manual.to_string();
        for want in [
            "Ship it?",
            "the plan",
            "teams:aad-1",
            "then: reject",
            "Approvals: 0 of 2",
            "Policy: needs 2 of cfo, group:finance because amount > 10000",
            "http://x/sessions/s1",
            "\"isRequired\":true",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        let hitl = approval_of(&RUN, &gate(GateKind::Hitl, "q"), "http://x", now);
        assert_eq!(verbs(&hitl), ["respond", "approve", "reject"]);
    }

    #[test]
    fn a_form_is_filled_in_from_approve_and_trust_is_an_action() {
        let now = crate::clock::test_epoch();
        let mut g = gate(GateKind::ManualGate, "the plan");
        g.form = Some(
            serde_json::from_str(
                r#"{"properties": {
                    "zone": {"type": "string", "title": "Zone", "enum": ["eu", "us"], "default": "eu"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
                    "notify": {"type": "boolean", "default": true},
                    "mail": {"type": "string", "format": "email"},
                    "day": {"type": "string", "format": "date"}
                }, "required": ["replicas"]}"#,
            )
            .expect("form"),
        );
        let card = approval_of(&RUN, &g, "http://x", now);
        assert_eq!(verbs(&card), ["approve", "reject", "modify"]);
        let approve = &card["actions"][0];
        assert_eq!(approve["type"], "Action.ShowCard");
        let inputs = approve["card"]["body"].as_array().expect("inputs");
        let by = |id: &str| {
            inputs
                .iter()
                .find(|i| i["id"] == id)
                .unwrap_or_else(|| panic!("{id} in {approve:#}"))
        };
        assert_eq!(by("value.zone")["type"], "Input.ChoiceSet");
        assert_eq!(by("value.zone")["value"], "eu");
        assert_eq!(by("value.replicas")["type"], "Input.Number");
        assert_eq!(by("value.replicas")["min"], 1);
        assert_eq!(by("value.replicas")["isRequired"], true);
        assert_eq!(by("value.notify")["type"], "Input.Toggle");
        assert_eq!(by("value.notify")["value"], "true");
        assert_eq!(by("value.mail")["style"], "Email");
        assert_eq!(by("value.day")["type"], "Input.Date");
        assert!(
            card.to_string()
                .contains("Approving fills in: Zone, replicas"),
            "{card}"
        );
        // What comes back is read by name.
        let data = json!({"session": "s1", "value.replicas": "3", "value.zone": "", "value.notify": "false"});
        let sent = form::values(g.form.as_ref().expect("form"), &data);
        assert_eq!(json!(sent), json!({"replicas": "3", "notify": "false"}));

        let mut t = gate(GateKind::ManualGate, "the plan");
        t.allow_trust = true;
        let card = approval_of(&RUN, &t, "http://x", now);
        assert_eq!(verbs(&card), ["approve", "trust", "reject", "modify"]);
        assert!(card.to_string().contains("Trust rm for this session"));
    }

    #[test]
    fn a_gate_keeping_business_hours_says_its_deadline_in_the_calendars_words() {
        let (hours, fri, mon) = crate::gate::calendar::office_for_tests();
        let mut g = gate(GateKind::ManualGate, "the plan");
        g.hours = Some(hours);
        g.timeout_at = Some(mon);
        let text = approval_of(&RUN, &g, "http://x", fri).to_string();
        assert!(
            text.contains("Times out Monday 09:30 CET, in 2 business hours 30 min (calendar `eu-office`); then: reject"),
            "{text}"
        );
    }

    #[test]
    fn a_huge_preview_is_cut_to_keep_the_card_under_the_limit() {
        let now = crate::clock::test_epoch();
        for context in ["x".repeat(200_000), "\u{1}\u{10FFFF}".repeat(50_000)] {
            let c = approval_of(&RUN, &gate(GateKind::ManualGate, &context), "http://x", now);
            let size = serde_json::to_string(&activity(c.clone()))
                .expect("json")
                .len();
            assert!(size <= MAX_CARD_BYTES + 200, "{size}");
            assert!(c.to_string().contains("more characters"), "the cut is said");
        }
    }
}
