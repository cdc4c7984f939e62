//! Approvals from any code: a request for a human "yes" that is not part of
//! a strands workflow (a deploy pipeline, a Python agent, a cron job).
//!
//! A request becomes an ordinary session whose spec is a one-gate workflow
//! built here (a `manual_gate` carrying the request's approvers, quorum,
//! timeout and fallback) and run through the normal spec validator, so
//! every rule that applies to a gate in a spec — approvers, timeouts,
//! notify — applies once, and the engine, its intake, the timers, every
//! room, the audit and the webhooks see a paused run like any other.
//! Nothing in the rooms knows about approval requests. What the request
//! says (title, body, labels, action, details) is its session's variables,
//! not the spec's text, so requests of one shape share one spec.
//!
//! Idempotency needs no new store method: the session id is derived from
//! (requester, key), and the store refuses to create a session whose id
//! exists, so the same key returns the same request, never a second one.
//!
//! An `action` ({tool, arguments}) is shown as fields and bound by its
//! digest: the view carries the SHA-256 of exactly what was shown, which
//! the requester compares with what it is about to do. Labels are kept as
//! the session's variables, so a listing filters on them.
//!
//! A `form` (a flat JSON Schema, `crate::model::form`) becomes the gate's
//! `form:`: approving is filling it in, and the view returns the values
//! the deciding approver gave, typed. `trust: true` (with an `action`)
//! becomes `allow_trust:`: an approver may answer "approve, and stop
//! asking for this tool"; the view says `trusted`, and the requester is
//! the one that remembers it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::Hub;
use crate::config::service::Policy;
use crate::engine::Start;
use crate::error::{Error, Result};
use crate::model::form::{Form, Schema};
use crate::model::{Approver, Decision, GateEventKind, Place, Session, Status};

/// The workflow name every approval request's session carries.
pub const WORKFLOW: &str = "approval";
/// The gate's id in the synthetic spec.
pub const GATE: &str = "approval";
/// The variable an approval request that names a policy keeps its name in.
pub const POLICY_VAR: &str = "policy";
/// The path an approval request's spec is stored under (it has no file).
pub const SPEC_PATH: &str = "approval.yaml";
/// The longest a `?wait=` may hold a request open, in seconds.
pub const MAX_WAIT_SECS: u64 = 60;
/// The longest a title may be, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// The largest body, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// What to do when nobody answers in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    #[default]
    Reject,
    Approve,
}

/// A request for approval, as code sends it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// What is asked, one line ("Deploy v1.2 to prod?").
    pub title: String,
    /// More context, markdown; redacted like a gate's preview.
    #[serde(default)]
    pub body: String,
    /// Structured facts shown as fields (`version: 1.2`).
    #[serde(default)]
    pub details: BTreeMap<String, String>,
    /// Who may answer: names, Slack ids, `group:NAME`. Not with `policy`.
    #[serde(default)]
    #[schema(value_type = Vec<String>)]
    pub approvers: Vec<crate::model::Approver>,
    /// A named approval policy of the service file (`policies:`): its
    /// rules, judged on `details`, decide who answers, the quorum,
    /// `require_reason`, the timeout and escalation. Not with `approvers`
    /// or `quorum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Approvals needed (default 1). Not with `policy`.
    #[serde(default)]
    pub quorum: Option<u32>,
    /// A rejection must say why.
    #[serde(default)]
    pub require_reason: bool,
    /// Minutes before `on_timeout` applies (none: it waits).
    #[serde(default)]
    pub timeout_minutes: Option<u64>,
    #[serde(default)]
    pub on_timeout: OnTimeout,
    /// Minutes between reminders.
    #[serde(default)]
    pub reminder_minutes: Option<f64>,
    /// Minutes without an answer before it goes to `escalate_to`.
    #[serde(default)]
    pub escalation_minutes: Option<f64>,
    /// Who gets an escalated request (as a gate's `escalation_target`).
    #[serde(default)]
    pub escalate_to: Vec<String>,
    /// Where else to ask: `slack:#channel`, `teams:<conversation id>`, `dm`, `email`.
    #[serde(default)]
    pub notify: Vec<String>,
    /// The same key (from the same requester) returns the same request.
    #[serde(default)]
    pub key: Option<String>,
    /// Free labels, kept with the request; `GET /approvals?labels=k=v` filters by them.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// What will be done once approved: shown, and bound by its digest.
    #[serde(default)]
    pub action: Option<Action>,
    /// The values approving fills in: a flat JSON Schema object
    /// (`{type: object, properties: {NAME: {type: string|number|integer|boolean,
    /// …}}, required: [NAME]}`, as MCP elicitation's `requestedSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub form: Option<FormSchema>,
    /// With an `action`: an approver may answer `trust` ("approve, and
    /// stop asking for this tool"); the view says `trusted`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
    /// With an `action`: an approver may approve with its arguments edited
    /// (`{"decision": "edit", "args": {…}}`); the view returns them as
    /// `arguments`, and the requester does what was approved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub editable: bool,
    /// `"passkey"`: approving takes the approver's passkey on the
    /// request's web page, not a click (a click elsewhere is refused with
    /// `step_up_required` and the page's link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub step_up: Option<crate::model::step_up::StepUp>,
}

/// A request's `"form"` as sent: a schema (its properties kept in the
/// order sent), or anything else, refused with the reason (422, field
/// `form`) rather than as an unreadable body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FormSchema {
    Schema(Schema),
    Other(Value),
}

impl FormSchema {
    /// The form it describes, or why not.
    pub fn form(&self) -> std::result::Result<Form, String> {
        match self {
            FormSchema::Schema(s) => Form::parse(s),
            FormSchema::Other(v) => Form::from_value(v),
        }
        .map_err(|e| e.message)
    }
}

/// An action an approval request is about, like a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Action {
    pub tool: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub arguments: Value,
}

impl Action {
    /// SHA-256 of `{"arguments", "tool"}` as compact JSON with sorted keys:
    /// what the approval binds; the requester checks it before acting.
    pub fn digest(&self) -> String {
        let canonical = json!({"tool": self.tool, "arguments": self.arguments});
        crate::spec::sha256_hex(&canonical.to_string())
    }
}

/// Why a request was refused; nothing was created.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// The request's field at fault (`approvers`, `timeout_minutes`, …).
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Invalid {
    Invalid {
        field,
        message: message.into(),
    }
}

/// An approval request and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalView {
    pub id: String,
    pub title: String,
    /// `pending`, `approved`, `rejected`, `timed_out` (the fallback
    /// applied: see `decision`) or `failed`.
    pub status: String,
    /// `approved` or `rejected`, once decided.
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    /// `api`, `slack`, `cli`, `web`, `timeout`, …
    pub via: Option<String>,
    pub reason: Option<String>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub action: Option<Value>,
    /// The SHA-256 of the action approved (see [`Action::digest`]).
    #[serde(default)]
    pub action_digest: Option<String>,
    /// The form approving fills in, as the request gave it; `null`: none.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub form: Option<Schema>,
    /// The values the deciding approver filled in, typed by the form;
    /// `null` until approved with values.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub values: Option<Map<String, Value>>,
    /// Approved with `trust` ("approve, and stop asking for this tool");
    /// `decision` is `approved`. The requester remembers the trust.
    #[serde(default)]
    pub trusted: bool,
    /// The action's arguments as the deciding approver edited them
    /// (`editable` requests); `null`: approved as asked, or not approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
    /// True when this call created it (false: the key named an existing one).
    #[serde(default)]
    pub created: bool,
    #[schema(value_type = Object)]
    pub links: Value,
}

impl ApprovalView {
    /// The view of session `s` (an approval request's).
    pub fn of(s: &Session) -> ApprovalView {
        let answer = s.history.iter().rev().find_map(|e| match &e.what {
            GateEventKind::Answered { answer, .. } => Some(answer.clone()),
            _ => None,
        });
        let timed_out = answer
            .as_ref()
            .is_some_and(|a| a.via == "timeout" || a.by == "timeout");
        let status = match s.status {
            Status::Running | Status::Paused => "pending",
            Status::Failed => "failed",
            _ if timed_out => "timed_out",
            Status::Completed => "approved",
            Status::Rejected => "rejected",
            Status::Cancelled => "cancelled",
        };
        let decision = match s.status {
            Status::Completed => Some("approved".to_string()),
            Status::Rejected => Some("rejected".to_string()),
            _ => None,
        };
        let reason = answer.as_ref().and_then(|a| match &a.decision {
            Decision::Reject { reason } | Decision::Abort { reason } => reason.clone(),
            _ => None,
        });
        // What the deciding answer approved with: its values, or trust.
        let approving = answer
            .as_ref()
            .filter(|_| decision.as_deref() == Some("approved"));
        let values = approving.and_then(|a| match &a.decision {
            Decision::Fill { values } => Some(values.clone()),
            _ => None,
        });
        let trusted = approving.is_some_and(|a| matches!(a.decision, Decision::Trust { .. }));
        let arguments = approving.and_then(|a| match &a.decision {
            Decision::Edit { arguments } => Some(arguments.clone()),
            _ => None,
        });
        let text = |k: &str| {
            s.variables
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ApprovalView {
            id: s.id.clone(),
            title: text("title"),
            status: status.into(),
            decided_by: decision.as_ref().and(answer.as_ref()).map(|a| a.by.clone()),
            decided_at: decision.as_ref().and(answer.as_ref()).map(|a| a.at),
            via: decision
                .as_ref()
                .and(answer.as_ref())
                .map(|a| a.via.clone()),
            decision,
            reason,
            requested_by: s.started_by.clone(),
            created_at: s.created_at,
            labels: serde_json::from_str(&text("labels")).unwrap_or_default(),
            action: serde_json::from_str(&text("action")).ok(),
            action_digest: Some(text("action_digest")).filter(|d| !d.is_empty()),
            form: serde_json::from_str(&text("form")).ok(),
            values,
            trusted,
            arguments,
            created: false,
            links: json!({
                "self": format!("/api/v1/approvals/{}", s.id),
                "session": format!("/api/v1/sessions/{}", s.id),
                "answers": format!("/api/v1/sessions/{}/answers", s.id),
                "events": format!("/api/v1/sessions/{}/events", s.id),
                "page": format!("/sessions/{}", s.id),
            }),
        }
    }

    /// Whether it is decided (or failed): nothing more will change.
    pub fn finished(&self) -> bool {
        self.status != "pending"
    }
}

/// The session id of `requester`'s request with idempotency `key`: the
/// same pair always gives the same id.
pub fn keyed_id(requester: &str, key: &str) -> String {
    let h = crate::spec::sha256_hex(&format!("strands-approval\0{requester}\0{key}"));
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Checks `req` and builds its one-gate spec (JSON text, which is YAML).
/// `groups`: whether the people directory has a group of that name.
/// `policies`: the service file's named policies, for `req.policy`.
pub fn spec_text(
    req: &ApprovalRequest,
    max_timeout_secs: u64,
    has_group: impl Fn(&str) -> bool,
    policies: &BTreeMap<String, Policy>,
) -> std::result::Result<String, Invalid> {
    let title = req.title.trim();
    if title.is_empty() {
        return Err(invalid("title", "a request needs a title"));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(invalid(
            "title",
            format!("at most {MAX_TITLE_CHARS} characters"),
        ));
    }
    if req.body.len() > MAX_BODY_BYTES {
        return Err(invalid(
            "body",
            format!(
                "{} bytes is over the limit of {MAX_BODY_BYTES}",
                req.body.len()
            ),
        ));
    }
    let approvers: Vec<Approver> = req
        .approvers
        .iter()
        .filter(|a| !a.text().is_empty())
        .cloned()
        .collect();
    let policy = match req.policy.as_deref().map(str::trim) {
        None => None,
        Some(name) => Some(named_policy(name, req, &approvers, policies)?),
    };
    if approvers.is_empty() && policy.is_none() {
        return Err(invalid(
            "approvers",
            "name at least one approver (a name, a Slack id or group:NAME), or a policy",
        ));
    }
    for a in &approvers {
        if let Approver::Group(g) = a {
            if !has_group(g) {
                return Err(invalid(
                    "approvers",
                    format!("no group `{g}` in the people directory"),
                ));
            }
        }
    }
    if let Some(a) = &req.action {
        if a.tool.trim().is_empty() {
            return Err(invalid("action", "an action names its tool"));
        }
    }
    let form = match &req.form {
        None => None,
        Some(f) => Some(f.form().map_err(|why| invalid("form", why))?),
    };
    if req.trust {
        if req.action.is_none() {
            return Err(invalid(
                "trust",
                "trust is \"approve, and stop asking for this tool\": it needs an `action` naming the tool",
            ));
        }
        if form.is_some() {
            return Err(invalid(
                "trust",
                "trust approves without values: a request with a `form` cannot allow it",
            ));
        }
    }
    if req.editable && req.action.is_none() {
        return Err(invalid(
            "editable",
            "editable lets an approver edit the action's arguments: it needs an `action`",
        ));
    }
    if req.editable && form.is_some() {
        return Err(invalid(
            "editable",
            "an editable action and a form do not go together: approving fills in the form",
        ));
    }
    if let (Some(f), Some(_), OnTimeout::Approve) = (&form, req.timeout_minutes, req.on_timeout) {
        let missing = f.needs_a_human();
        if !missing.is_empty() {
            return Err(invalid(
                "on_timeout",
                format!(
                    "a timeout that approves fills in the form's defaults, but {} required without one",
                    missing
                        .iter()
                        .map(|f| format!("`{}`", f.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if req.quorum == Some(0) {
        return Err(invalid("quorum", "at least 1"));
    }
    // Groups (ours or Slack's `S…`) may hold more people; named people only
    // count once each.
    if let Some(q) = req.quorum {
        if !approvers.iter().any(Approver::is_many) && q as usize > approvers.len() {
            return Err(invalid(
                "quorum",
                format!(
                    "{q} approvals needed but only {} approver(s) named",
                    approvers.len()
                ),
            ));
        }
    }
    if let Some(m) = req.timeout_minutes {
        if m == 0 {
            return Err(invalid("timeout_minutes", "at least 1 minute"));
        }
        if m.saturating_mul(60) > max_timeout_secs {
            return Err(invalid(
                "timeout_minutes",
                format!(
                    "{m} minutes is over the service's maximum of {} minutes (STRANDS_MAX_TIMEOUT_DAYS)",
                    max_timeout_secs / 60
                ),
            ));
        }
    }
    let mut gate = Map::new();
    gate.insert("type".into(), json!("manual_gate"));
    gate.insert("id".into(), json!(GATE));
    gate.insert("prompt".into(), json!("{{ title }}"));
    gate.insert("context_display".into(), json!("{{ body }}"));
    match policy {
        // The policy's rules, as written: the validator reads them like a
        // spec gate's, and the engine picks one on `details`.
        Some(p) => gate.insert("approvers".into(), json!(p.rules)),
        None => gate.insert("approvers".into(), json!(approvers)),
    };
    gate.insert("allow_self_approval".into(), json!(false));
    if let Some(q) = req.quorum {
        gate.insert("approvals_required".into(), json!(q));
    }
    if req.require_reason {
        gate.insert("require_reason".into(), json!(true));
    }
    if let Some(m) = req.timeout_minutes {
        gate.insert("timeout_minutes".into(), json!(m));
        let fallback = match req.on_timeout {
            OnTimeout::Reject => "reject",
            OnTimeout::Approve => "approve",
        };
        gate.insert("fallback_action".into(), json!(fallback));
    }
    if let Some(r) = req.reminder_minutes {
        gate.insert("reminder_interval".into(), json!(r));
    }
    if let Some(m) = req.escalation_minutes {
        gate.insert("escalation_timeout".into(), json!(m));
    }
    if !req.escalate_to.is_empty() {
        gate.insert("escalation_target".into(), json!(req.escalate_to));
    }
    if req.trust {
        gate.insert("allow_trust".into(), json!(true));
    }
    if req.editable {
        gate.insert("allow_edit".into(), json!(true));
    }
    if let Some(s) = req.step_up {
        gate.insert("step_up".into(), json!(s.name()));
    }
    for n in &req.notify {
        let n = n.trim();
        if teams_place(n).is_some() {
            // The run's origin: the Teams room asks there (see `prepare`).
        } else if let Some(c) = n.strip_prefix("slack:") {
            gate.insert("channel".into(), json!(c));
        } else if n == "dm" || n == "email" {
            gate.insert("notify".into(), json!(n));
        } else {
            return Err(invalid(
                "notify",
                format!("`{n}`: use slack:#channel, teams:<conversation id>, dm or email"),
            ));
        }
    }
    // The schema as given, its properties in the order sent (the view
    // returns it), and as the gate's `form:` (a `Value` would sort them).
    let schema = form.as_ref().map(Form::schema);
    let given = match &req.form {
        Some(FormSchema::Schema(s)) => serde_json::to_string(s).unwrap_or_default(),
        Some(FormSchema::Other(v)) => v.to_string(),
        None => String::new(),
    };
    let mut head = json!({
        "version": 0,
        "name": WORKFLOW,
        "description": "An approval request (strands ask, POST /api/v1/approvals).",
        "runtime": {"provider": "echo", "model_id": "none"},
        // What the request says is the session's ([`request_values`]); the
        // spec declares it empty, so requests of one shape share one spec.
        "inputs": {"values": {
            "title": "",
            "body": "",
            "labels": "",
            "action": "",
            "action_digest": "",
            "form": given,
            "details": {},
        }},
        "agents": {"requester": {"prompt": "Never run: an approval request has no agents."}},
    });
    // The policy's name, kept with the request (`strands policy backtest`
    // judges it again by the policy of that name in another file).
    if let Some(name) = req.policy.as_deref().map(str::trim) {
        head["inputs"]["values"][POLICY_VAR] = json!(name);
    }
    let spec = SpecDoc {
        head,
        pattern: PatternDoc {
            kind: "chain",
            config: ConfigDoc {
                steps: [GateDoc {
                    keys: gate,
                    form: schema.as_ref(),
                }],
            },
        },
    };
    serde_json::to_string_pretty(&spec).map_err(|e| invalid("request", e.to_string()))
}

/// What `req` says, as the variables its session starts with: its title,
/// body (with the details and action shown), labels, action and digest,
/// and details. Kept out of the spec's text, so that every request of one
/// shape (approvers, quorum, timeouts, form, policy) has the same spec,
/// parsed once and stored once.
pub fn request_values(req: &ApprovalRequest) -> Map<String, Value> {
    let mut v = Map::new();
    v.insert("title".into(), json!(req.title.trim()));
    v.insert("body".into(), json!(shown_body(req)));
    v.insert(
        "labels".into(),
        json!(serde_json::to_string(&req.labels).unwrap_or_default()),
    );
    v.insert(
        "action".into(),
        json!(req
            .action
            .as_ref()
            .map(|a| json!(a).to_string())
            .unwrap_or_default()),
    );
    v.insert(
        "action_digest".into(),
        json!(req.action.as_ref().map(Action::digest).unwrap_or_default()),
    );
    v.insert("details".into(), json!(req.details));
    v
}

/// The synthetic spec, written in order (`serde_json::Value` sorts keys,
/// and a form's properties keep the order they were sent in).
#[derive(Serialize)]
struct SpecDoc<'a> {
    #[serde(flatten)]
    head: Value,
    pattern: PatternDoc<'a>,
}

#[derive(Serialize)]
struct PatternDoc<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    config: ConfigDoc<'a>,
}

#[derive(Serialize)]
struct ConfigDoc<'a> {
    steps: [GateDoc<'a>; 1],
}

#[derive(Serialize)]
struct GateDoc<'a> {
    #[serde(flatten)]
    keys: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    form: Option<&'a Schema>,
}

/// The policy `name` of the service file. A request names a policy or
/// its own approvers and quorum, never both: the policy decides who
/// answers, and a request cannot loosen it.
fn named_policy<'p>(
    name: &str,
    req: &ApprovalRequest,
    approvers: &[Approver],
    policies: &'p BTreeMap<String, Policy>,
) -> std::result::Result<&'p Policy, Invalid> {
    let Some(p) = policies.get(name) else {
        let known: Vec<&str> = policies.keys().map(String::as_str).collect();
        return Err(invalid(
            "policy",
            if known.is_empty() {
                format!("no policy `{name}`: the service file (STRANDS_SERVICE_FILE) names none")
            } else {
                format!(
                    "no policy `{name}` in the service file (policies: {})",
                    known.join(", ")
                )
            },
        ));
    };
    if !approvers.is_empty() {
        return Err(invalid(
            "approvers",
            format!("a request names a policy or its approvers, not both: policy `{name}` decides who answers"),
        ));
    }
    if req.quorum.is_some() {
        return Err(invalid(
            "quorum",
            format!("a request names a policy or a quorum, not both: policy `{name}` decides the quorum"),
        ));
    }
    Ok(p)
}

/// `teams:<conversation id>` (Teams' ids have a `:`): the place a request
/// is asked in Teams.
fn teams_place(n: &str) -> Option<&str> {
    match Place::parse(n) {
        Place::Teams(c) if c.contains(':') => Some(n),
        _ => None,
    }
}

/// The body, with the details and the action as fields under it.
fn shown_body(req: &ApprovalRequest) -> String {
    let mut out = req.body.trim_end().to_string();
    let mut fields: Vec<(String, String)> = req
        .details
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(a) = &req.action {
        fields.push(("action".into(), format!("`{}` {}", a.tool, a.arguments)));
        fields.push(("action digest".into(), format!("`{}`", a.digest())));
    }
    if !fields.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        for (k, v) in fields {
            out.push_str(&format!("**{k}**: {v}\n"));
        }
    }
    out
}

/// What [`create`] did.
#[derive(Debug)]
pub enum Created {
    /// Created now.
    New(Session),
    /// The key named a request already made.
    Existing(Session),
}

/// A checked request, ready to be created: its session id, spec and start.
pub struct Prepared {
    pub id: String,
    pub spec: std::sync::Arc<crate::spec::Spec>,
    pub start: Start,
}

/// The session id a request will have: derived from the key, else new.
pub fn id_of(req: &ApprovalRequest, requester: &str) -> std::result::Result<String, Invalid> {
    match req.key.as_deref().map(str::trim) {
        Some("") => Err(invalid("key", "an empty key")),
        Some(k) => Ok(keyed_id(requester, k)),
        None => Ok(uuid::Uuid::new_v4().to_string()),
    }
}

/// Checks `req` against `limits` and the people `directory`, and builds
/// its one-gate spec through the normal validator.
pub fn prepare(
    req: &ApprovalRequest,
    requester: &str,
    limits: &crate::spec::Limits,
    specs: &crate::engine::specs::SpecCache,
    directory: &crate::model::person::Directory,
    policies: &BTreeMap<String, Policy>,
) -> std::result::Result<Prepared, Invalid> {
    let id = id_of(req, requester)?;
    let has_group = |g: &str| directory.people().iter().any(|p| p.in_group(g));
    let text = spec_text(req, limits.max_timeout_secs, has_group, policies)?;
    let spec = specs
        .parsed(&text, Path::new(SPEC_PATH))
        .map_err(|e| invalid("request", e.to_string()))?;
    let mut variables = spec
        .resolve_variables(&[])
        .map_err(|e| invalid("request", e.to_string()))?;
    variables.extend(request_values(req));
    let start = Start {
        variables,
        started_by: requester.to_string(),
        out_dir: std::env::temp_dir().join("strands-artifacts"),
        origin: req
            .notify
            .iter()
            .find_map(|n| teams_place(n.trim()))
            .map(|place| crate::model::Origin {
                channel: place.to_string(),
                user: requester.to_string(),
                approval_channel: place.to_string(),
            }),
        overwrite_artifacts: true,
    };
    Ok(Prepared { id, spec, start })
}

impl Hub {
    /// Creates `requester`'s approval request (or, with a key already used
    /// by them, returns that one) and starts it: it pauses at its gate.
    pub async fn request_approval(
        &self,
        req: &ApprovalRequest,
        requester: &str,
    ) -> Result<std::result::Result<Created, Invalid>> {
        self.request_approval_in(req, requester, None).await
    }

    /// [`Hub::request_approval`] with the people `directory` the caller
    /// has just read from the store (a door that read it to name the
    /// requester need not read it twice); `None`: read here.
    pub async fn request_approval_in(
        &self,
        req: &ApprovalRequest,
        requester: &str,
        directory: Option<&crate::model::person::Directory>,
    ) -> Result<std::result::Result<Created, Invalid>> {
        if req.key.is_some() {
            if let Ok(id) = id_of(req, requester) {
                if let Some(s) = self.store.load(&id).await? {
                    return Ok(Ok(Created::Existing(s)));
                }
            }
        }
        let read;
        let directory = match directory {
            Some(d) => d,
            None => {
                read = self.store.directory().await?;
                &read
            }
        };
        let policies = &self.settings.service.policies;
        let p = match prepare(
            req,
            requester,
            &self.settings.limits,
            &self.specs,
            directory,
            policies,
        ) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        let id = p.id.clone();
        let (session, paused) = match self.engine().create_asking(&p.spec, p.start, p.id).await {
            Ok(made) => made,
            // Another request with the same key won the race: it is the one.
            Err(e) if req.key.is_some() => match self.store.load(&id).await? {
                Some(s) => return Ok(Ok(Created::Existing(s))),
                None => return Err(e),
            },
            Err(e) => return Err(e),
        };
        // Created paused, all its drive would do is ask in the rooms: with
        // none (the API, the web inbox and the queue read the store) there
        // is nothing to drive.
        if !paused || !self.hall().rooms().is_empty() {
            self.drive_new(session.id.clone());
        }
        Ok(Ok(Created::New(session)))
    }

    /// Approval requests `who` (of `role`) may read, newest first, with
    /// `status` and every label of `labels`; at most `limit`.
    pub async fn list_approvals(
        &self,
        who: &str,
        role: crate::model::token::Role,
        status: Option<Status>,
        labels: &[(String, String)],
        limit: usize,
    ) -> Result<Vec<ApprovalView>> {
        const BATCH: usize = 256;
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let batch = self
                .store
                .page(status, Some(WORKFLOW), after.clone(), BATCH)
                .await?;
            let last = batch.len() < BATCH;
            for row in batch {
                after = Some((row.created_at, row.id.clone()));
                let Some(s) = self.store.load(&row.id).await? else {
                    continue;
                };
                if !is_approval(&s) || !super::inbox::may_read(self, who, &[], role, &s) {
                    continue;
                }
                let view = ApprovalView::of(&s);
                if labels.iter().all(|(k, v)| view.labels.get(k) == Some(v)) {
                    out.push(view);
                    if out.len() == limit {
                        return Ok(out);
                    }
                }
            }
            if last {
                return Ok(out);
            }
        }
    }

    /// Request `id` as `who` (of `role`) may read it, after waiting up to
    /// `secs` for its decision: `Ok(Err(why))` when it is not theirs to
    /// read or not an approval request; an unknown id is the store's error.
    pub async fn approval_for(
        &self,
        who: &str,
        role: crate::model::token::Role,
        id: &str,
        secs: u64,
    ) -> Result<std::result::Result<ApprovalView, String>> {
        let s = self.store.get(id).await?;
        if !super::inbox::may_read(self, who, &[], role, &s) {
            return Ok(Err(format!(
                "`{who}` may not read request {}: it is read by its requester and its approvers",
                s.id
            )));
        }
        if !is_approval(&s) {
            return Ok(Err(format!(
                "{} is a workflow's session, not an approval request",
                s.id
            )));
        }
        let s = self.wait_approval(&s.id, secs).await?;
        Ok(Ok(ApprovalView::of(&s)))
    }

    /// Waits up to `secs` (at most [`MAX_WAIT_SECS`]) for request `id` to be
    /// decided, following its events; returns it as it then is.
    pub async fn wait_approval(&self, id: &str, secs: u64) -> Result<Session> {
        let secs = secs.min(MAX_WAIT_SECS);
        if secs > 0 {
            let events = super::follow::follow_session(self.clone(), id.to_string(), 0);
            let drained = async move {
                futures_util::pin_mut!(events);
                while events.next().await.is_some() {}
            };
            let _ = tokio::time::timeout(Duration::from_secs(secs), drained).await;
        }
        self.store.get(id).await
    }
}

/// Whether session `s` is an approval request.
pub fn is_approval(s: &Session) -> bool {
    s.workflow == WORKFLOW && s.spec_path == SPEC_PATH
}

/// A session that is not an approval request, as an error.
pub fn not_an_approval(id: &str) -> Error {
    Error::Session(format!("{id} is not an approval request"))
}

#[cfg(test)]
mod tests;
