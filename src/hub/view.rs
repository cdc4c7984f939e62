//! A session as people and programs read it: the one object
//! `strands sessions show --json` prints and `GET /api/v1/sessions/{id}`
//! returns — status, open gates with their previews and waiting tool
//! calls, the answers taken, usage, output. Built here once from a
//! [`Session`]; the CLI renders its text from the same object, so a CLI
//! talking to a server prints what it prints offline.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::model::{Decision, GateEventKind, OpenGate, Session, Status};

/// A session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionView {
    pub session_id: String,
    pub workflow: String,
    pub pattern: String,
    #[schema(value_type = String, example = "paused")]
    pub status: Status,
    /// What `strands run`/`resume` exits with for this status.
    pub exit_code: u8,
    /// Running, and waiting for a slot: `serve` drives a bounded number of
    /// runs at once (`STRANDS_DRIVES`), the rest oldest first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub queued: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_by: String,
    /// The first open gate.
    pub gate: Option<GateView>,
    pub open_gates: Vec<GateView>,
    pub output: Option<String>,
    pub artifacts: Vec<String>,
    /// Every answer and skip, in order.
    pub gates: Vec<HistoryView>,
    pub gates_asked: u64,
    pub human_wait_ms: u64,
    /// Agent steps finished.
    #[serde(default)]
    pub steps_finished: usize,
    #[schema(value_type = Object)]
    pub usage: Value,
    #[schema(value_type = Option<Object>)]
    pub error: Option<crate::model::Failure>,
    /// The last chat message that asked (or failed to).
    #[schema(value_type = Option<Object>)]
    pub notification: Option<crate::model::Notification>,
    /// The commands that answer it (the CLI adds them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub resume: Option<Value>,
    /// In full views only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub variables: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub state: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_feedback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub pending_answer: Option<crate::model::Answer>,
    /// Who cancelled the run (or asked to: it stops at its next
    /// checkpoint), how and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub cancel: Option<crate::model::CancelRequest>,
}

/// An open gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GateView {
    pub id: String,
    pub name: String,
    /// `id#instance`: what an answer names to be sure it answers this asking.
    pub handle: String,
    pub instance: u64,
    #[schema(value_type = String, example = "manual_gate")]
    pub kind: crate::model::GateKind,
    pub position: String,
    pub prompt: String,
    /// What the gate shows, cut to its preview length (`null`: no preview).
    pub preview: Option<String>,
    pub preview_cut_chars: usize,
    #[serde(default)]
    pub preview_length: usize,
    /// The full context, in full views.
    pub context: Option<String>,
    pub default: Option<String>,
    pub opened_at: DateTime<Utc>,
    pub timeout_at: Option<DateTime<Utc>>,
    /// When its approvers were first reminded: from then on it counts as
    /// overdue (`gate::ages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminded_at: Option<DateTime<Utc>>,
    /// What the timeout does: `approve`, `reject`, `answer `x``, ...
    #[serde(default)]
    pub timeout_effect: Option<String>,
    /// The business hours the gate keeps (its calendar and what it does
    /// when closed); readers word the deadline with it
    /// (`crate::hub::durations::business_deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub hours: Option<crate::model::GateHours>,
    pub calls: Vec<CallView>,
    #[schema(value_type = Vec<String>)]
    pub approvers: Vec<crate::model::Approver>,
    pub approvals_required: u32,
    #[schema(value_type = Vec<Object>)]
    pub approvals: Vec<crate::model::Approval>,
    /// A rejection must say why.
    #[serde(default)]
    pub require_reason: bool,
    /// The approval rule that decided who answers (`gate::policy`), with
    /// the text every channel shows; absent for a fixed approver list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub rule: Option<crate::model::RuleNote>,
    /// The values approving fills in, as JSON Schema (`{type: object,
    /// properties, required}`): answer `{"decision": "approve", "values": {…}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub form: Option<crate::model::form::Form>,
    /// Whether `trust` answers it (a manual gate's `allow_trust`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_trust: bool,
    /// Whether an approve may carry edited `arguments` (a manual gate's
    /// `allow_edit`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_edit: bool,
    /// `passkey`: approving takes the approver's passkey on the gate's
    /// web page; a click elsewhere is refused (`step_up_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub step_up: Option<crate::model::step_up::StepUp>,
}

/// A tool call of the agent turn a tool-call gate asks about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CallView {
    pub id: String,
    pub tool: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    pub digest: String,
    #[schema(value_type = Object)]
    pub state: crate::model::CallState,
    #[schema(value_type = Option<Object>)]
    pub request: Option<crate::model::ApprovalRequest>,
}

/// An answer or a skip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HistoryView {
    pub gate: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<u64>,
    /// `answered` or `skipped`.
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub decision: Option<Decision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The person `by` answered for as a delegate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

impl CallView {
    /// Whether the call waits for a human.
    pub fn waiting(&self) -> bool {
        self.state == crate::model::CallState::Waiting
    }
    /// Whether `trust` may answer it.
    pub fn trustable(&self) -> bool {
        self.request.as_ref().is_some_and(|r| r.trustable)
    }
}

impl GateView {
    pub fn of(s: &Session, g: &OpenGate, full: bool) -> GateView {
        let (preview, cut) = g.preview();
        GateView {
            id: g.id.clone(),
            name: g.id.clone(),
            handle: g.handle(),
            instance: g.instance,
            kind: g.kind,
            position: g.position.to_string(),
            prompt: g.prompt.clone(),
            preview: g.show_preview.then_some(preview),
            preview_cut_chars: cut,
            preview_length: g.preview_length,
            context: full.then(|| g.context.clone()),
            default: g.default.clone(),
            opened_at: g.opened_at,
            timeout_at: g.timeout_at,
            reminded_at: g.reminded_at,
            timeout_effect: g.timeout_at.map(|_| timeout_effect(g)),
            hours: g.hours.clone(),
            calls: s
                .agent_turn
                .iter()
                .flat_map(|t| t.calls.iter())
                .map(|c| CallView {
                    id: c.call.id.clone(),
                    tool: c.call.name.clone(),
                    arguments: c.call.arguments.clone(),
                    digest: c.digest.clone(),
                    state: c.state.clone(),
                    request: c.request.clone(),
                })
                .collect(),
            approvers: g.approvers.clone(),
            approvals_required: g.approvals_required,
            approvals: g.approvals.clone(),
            require_reason: g.require_reason,
            rule: g.rule.clone(),
            form: g.form.clone(),
            allow_trust: g.allow_trust,
            allow_edit: g.allow_edit,
            step_up: g.step_up,
        }
    }
}

/// What a gate's timeout answers, in words (the same whenever it comes).
fn timeout_effect(g: &OpenGate) -> String {
    let at = g.timeout_at.unwrap_or(g.opened_at);
    match crate::gate::timeout_answer(g, at).decision {
        Decision::Approve => "approve".into(),
        Decision::Fill { values } if values.is_empty() => "approve".into(),
        Decision::Fill { values } => format!("approve with {}", crate::model::form::shown(&values)),
        Decision::Respond { text } => format!("answer `{text}`"),
        Decision::Reject { .. } => "reject".into(),
        other => other.verb().into(),
    }
}

/// The exit code a session's status maps to (SPEC.md).
pub fn exit_code(session: &Session) -> u8 {
    use crate::error::exit;
    match session.status {
        Status::Completed => exit::OK,
        Status::Paused => exit::PAUSED,
        Status::Rejected => exit::REJECTED,
        Status::Cancelled => exit::CANCELLED,
        Status::Failed => session
            .failure
            .as_ref()
            .map(|f| f.code)
            .unwrap_or(exit::RUNTIME),
        Status::Running => exit::RUNTIME,
    }
}

impl SessionView {
    /// The view of `s`; `full` adds the context, variables, pattern state
    /// and spec (`sessions show`).
    pub fn of(
        s: &Session,
        full: bool,
        notification: Option<&crate::model::Notification>,
    ) -> SessionView {
        let gates = s
            .history
            .iter()
            .map(|e| match &e.what {
                GateEventKind::Answered { answer, waited_ms } => HistoryView {
                    gate: e.gate.clone(),
                    instance: Some(e.instance),
                    event: "answered".into(),
                    decision: Some(answer.decision.clone()),
                    by: Some(answer.by.clone()),
                    on_behalf_of: answer.on_behalf_of.clone(),
                    at: Some(answer.at),
                    via: Some(answer.via.clone()),
                    asked_at: e.asked_at,
                    waited_ms: Some(*waited_ms),
                    call: answer.call.clone(),
                    condition: None,
                },
                GateEventKind::Skipped { condition } => HistoryView {
                    gate: e.gate.clone(),
                    instance: None,
                    event: "skipped".into(),
                    decision: None,
                    by: None,
                    on_behalf_of: None,
                    at: None,
                    via: None,
                    asked_at: None,
                    waited_ms: None,
                    call: None,
                    condition: Some(condition.clone()),
                },
            })
            .collect();
        SessionView {
            session_id: s.id.clone(),
            workflow: s.workflow.clone(),
            pattern: s.pattern.clone(),
            status: s.status,
            exit_code: exit_code(s),
            queued: false,
            created_at: s.created_at,
            updated_at: s.updated_at,
            started_by: s.started_by.clone(),
            gate: s.first_gate().map(|g| GateView::of(s, g, full)),
            open_gates: s.open_gates().map(|g| GateView::of(s, g, full)).collect(),
            output: s.output.clone(),
            artifacts: s.artifacts.clone(),
            gates,
            gates_asked: s.gates_opened,
            human_wait_ms: s.human_wait_ms(),
            steps_finished: crate::engine::finished_steps(&s.state),
            usage: serde_json::json!({ "total": s.total_usage(), "by_agent": s.usage }),
            error: s.failure.clone(),
            notification: notification.cloned(),
            resume: None,
            variables: full.then(|| s.variables.clone()),
            state: full.then(|| serde_json::to_value(&s.state).unwrap_or(Value::Null)),
            spec_path: full.then(|| s.spec_path.clone()),
            spec_hash: full.then(|| s.spec_hash.clone()),
            human_feedback: if full { s.human_feedback.clone() } else { None },
            pending_answer: if full {
                s.pending.as_ref().map(|p| p.answer.clone())
            } else {
                None
            },
            cancel: s.cancel.clone(),
        }
    }

    /// Without what only a full view shows (the context, variables,
    /// pattern state, spec): what `run` and `resume` print.
    pub fn brief(mut self) -> SessionView {
        for g in self.gate.iter_mut().chain(self.open_gates.iter_mut()) {
            g.context = None;
        }
        self.variables = None;
        self.state = None;
        self.spec_path = None;
        self.spec_hash = None;
        self.human_feedback = None;
        self.pending_answer = None;
        self
    }

    /// Whether it stopped for good.
    pub fn finished(&self) -> bool {
        matches!(
            self.status,
            Status::Completed | Status::Failed | Status::Rejected | Status::Cancelled
        )
    }

    /// Total tokens in and out, and model calls.
    pub fn usage_total(&self) -> crate::model::Usage {
        self.usage
            .get("total")
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .unwrap_or_default()
    }
}
