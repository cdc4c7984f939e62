//! Gate data: what a human may decide ([`Decision`]), an answer with who
//! gave it ([`Answer`]), where a gate stands ([`Position`]) and a gate that
//! waits ([`OpenGate`]). Pure data with the few rules that only read it;
//! who may answer and what an answer means live in `crate::gate`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::limits::{MAX_ANSWER_TEXT, MAX_EDITED_ARGS};

/// Which gate syntax a gate was written in; it decides how answers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// strands-cli's `type: hitl`: the answer is free text; `approved` approves.
    Hitl,
    /// The seed's `type: manual_gate`: approve / reject / modify / defer.
    ManualGate,
    /// Tool calls waiting for approval (one decision per call).
    ToolCall,
}

impl GateKind {
    /// The word the spec and the JSON use: `hitl`, `manual_gate`, `tool_call`.
    pub fn name(self) -> &'static str {
        match self {
            GateKind::Hitl => "hitl",
            GateKind::ManualGate => "manual_gate",
            GateKind::ToolCall => "tool_call",
        }
    }
}

impl std::fmt::Display for GateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a gate does when its timeout passes unanswered (`fallback_action`,
/// seed 001 §2.4.1). Stored with open gates under these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// `approve` (or `continue`): the gate passes as approved.
    Continue,
    /// `reject` (or `cancel`): the run ends rejected.
    Cancel,
    /// `skip`: the gate passes with no response.
    Skip,
    /// `abort`: the run ends failed (not rejected).
    Abort,
    /// `default`: the gate's `default` answer (a `hitl` gate's text; a manual
    /// gate's `approve` or `reject`). A `hitl` gate without `fallback_action`.
    Default,
    /// `escalate`: the bot re-posts the request to `escalation_target` and
    /// waits one more timeout, then rejects; without the bot it rejects.
    Escalate,
}

impl Fallback {
    /// The `fallback_action` word for it.
    pub fn name(self) -> &'static str {
        match self {
            Fallback::Continue => "approve",
            Fallback::Cancel => "reject",
            Fallback::Skip => "skip",
            Fallback::Abort => "abort",
            Fallback::Default => "default",
            Fallback::Escalate => "escalate",
        }
    }
}

/// What a human decided. One type for every channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Decision {
    /// Continue. On a `hitl` gate the response is `approved`.
    Approve,
    /// End the run with status `rejected`.
    Reject { reason: Option<String> },
    /// Re-run the previous agent step with `human_feedback`, then ask again.
    Modify { feedback: String },
    /// Leave the gate open; the session stays paused.
    Defer,
    /// Free text, for `hitl` gates (`approved` counts as approval).
    Respond { text: String },
    /// Tool calls: approve with these arguments instead (same tool, checked
    /// against its schema; the approval binds the edited call).
    Edit { arguments: serde_json::Value },
    /// Tool calls: approve, and approve this tool for the rest of the run
    /// — or, with a `limit`, record a grant ([`super::grant`]) allowing the
    /// same for a time, for this run, or for calls whose arguments match.
    /// A manual gate with `allow_trust`: approve, and the requester stops
    /// asking about this tool (strands records it; the requester
    /// remembers); no limit there. Without a limit it is written
    /// `{"action":"trust"}`, as before limits existed.
    Trust {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<super::grant::Limit>,
    },
    /// A gate with a form: approve with these values, the form's fields
    /// filled in. Recorded as checked, typed and completed with defaults
    /// (`crate::gate::form`).
    Fill { values: Map<String, Value> },
    /// Timeouts only (`fallback_action: skip`): the gate passes with no response.
    Skip,
    /// Timeouts only (`fallback_action: abort`): the run ends `failed`.
    Abort { reason: Option<String> },
}

impl Decision {
    pub fn verb(&self) -> &'static str {
        match self {
            Decision::Approve => "approved",
            Decision::Reject { .. } => "rejected",
            Decision::Modify { .. } => "modified",
            Decision::Defer => "deferred",
            Decision::Respond { .. } => "responded",
            Decision::Edit { .. } => "approved with edits",
            Decision::Trust { .. } => "trusted",
            Decision::Fill { .. } => "approved",
            Decision::Skip => "skipped",
            Decision::Abort { .. } => "aborted",
        }
    }
}

impl Decision {
    /// Refuses human text over the limits ([`MAX_ANSWER_TEXT`],
    /// [`MAX_EDITED_ARGS`]), naming the field and its size.
    pub fn check_limits(&self) -> std::result::Result<(), String> {
        let text = |field: &str, t: &str| {
            let n = t.chars().count();
            if n > MAX_ANSWER_TEXT {
                Err(format!(
                    "the {field} is {n} characters long; at most {MAX_ANSWER_TEXT} are accepted"
                ))
            } else {
                Ok(())
            }
        };
        match self {
            Decision::Reject { reason: Some(r) } | Decision::Abort { reason: Some(r) } => {
                text("reason", r)
            }
            Decision::Modify { feedback } => text("feedback", feedback),
            Decision::Respond { text: t } => text("response", t),
            Decision::Edit { arguments } => {
                let n = arguments.to_string().len();
                if n > MAX_EDITED_ARGS {
                    Err(format!(
                        "the edited arguments are {n} bytes of JSON; at most {MAX_EDITED_ARGS} are accepted"
                    ))
                } else {
                    Ok(())
                }
            }
            Decision::Fill { values } => {
                let n = Value::Object(values.clone()).to_string().len();
                if n > MAX_EDITED_ARGS {
                    Err(format!(
                        "the values are {n} bytes of JSON; at most {MAX_EDITED_ARGS} are accepted"
                    ))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}

/// A decision with who gave it, when, through which channel, and any
/// variable overrides that come with it (`--var` on resume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub decision: Decision,
    pub by: String,
    pub at: DateTime<Utc>,
    /// `cli`, `terminal`, `auto-approve`, `timeout`, `slack`, ...
    pub via: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub vars: Map<String, Value>,
    /// For tool-call gates: which call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The directory's person for `by` (`model::person`), set by the
    /// intake when the directory knows them; `by` stays the channel
    /// identity used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// Set by the intake when `by` answered as a delegate
    /// (`model::person::delegation`): the person they stood in for, as
    /// cards and the audit say it ("bob for alice").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    /// The passkey assertion a stepped-up approval carries
    /// ([`super::step_up`]); checked by the intake, kept in the audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_up: Option<Box<super::step_up::Proof>>,
    /// Set by the intake when `by` was an approver only through this
    /// group of the identity provider's groups claim (a web sign-in), not
    /// the directory's: the audit says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idp_group: Option<String>,
}

impl Answer {
    /// Whether this answer gives again what `earlier` gave: the same person
    /// (the directory's, else the same channel identity), the same call, the
    /// same decision. A retry — a command run again after its process was
    /// killed, a request sent twice — so nothing new is recorded and the
    /// run goes on; any other answer to a decided gate is refused.
    pub fn repeats(&self, earlier: &Answer) -> bool {
        let same_person = match (&self.person, &earlier.person) {
            (Some(a), Some(b)) => a == b,
            _ => self.by == earlier.by,
        };
        same_person
            && earlier.via != "timeout"
            && self.call == earlier.call
            && self.decision == earlier.decision
    }

    /// " for alice" when the answer was given as a delegate, else "":
    /// what every channel appends to "Approved by bob".
    pub fn for_whom(&self) -> String {
        match self.on_behalf_of.as_deref() {
            Some(p) if !p.is_empty() => format!(" for {p}"),
            _ => String::new(),
        }
    }
}

/// Where a step or gate stands in its pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// `steps[i]` of a chain.
    Step(usize),
    /// `tasks.<id>` of a workflow.
    Task(String),
    /// `branches.<id>.steps[i]` of a parallel pattern.
    Branch { branch: String, step: usize },
    /// The `reduce` step of a parallel or orchestrator pattern.
    Reduce,
    /// routing: the router agent.
    Router,
    /// routing: `router.review_router`.
    RouterReview,
    /// routing: `routes.<name>.then[i]`.
    Route { route: String, step: usize },
    /// evaluator_optimizer: the producer's draft of iteration i (0-based).
    Draft(u32),
    /// evaluator_optimizer: the evaluation of iteration i.
    Evaluation(u32),
    /// evaluator_optimizer: `review_gate` after iteration i.
    ReviewGate(u32),
    /// evaluator_optimizer: `accept.manual_review` after iteration i.
    ManualReview(u32),
    /// orchestrator_workers: the orchestrator's plan of round r (0-based).
    Plan(u32),
    /// orchestrator_workers: `decomposition_review` of round r's plan.
    DecompositionReview(u32),
    /// orchestrator_workers: worker i of round r.
    Worker { round: u32, index: usize },
    /// orchestrator_workers: `reduce_review`.
    ReduceReview,
    /// orchestrator_workers: `writeup`.
    Writeup,
    /// graph: the run's n-th visit (0-based) of node `id`.
    Node { id: String, visit: u32 },
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Step(i) => write!(f, "steps[{i}]"),
            Position::Task(id) => write!(f, "tasks.{id}"),
            Position::Branch { branch, step } => write!(f, "branches.{branch}.steps[{step}]"),
            Position::Reduce => write!(f, "reduce"),
            Position::Router => write!(f, "router"),
            Position::RouterReview => write!(f, "router.review_router"),
            Position::Route { route, step } => write!(f, "routes.{route}.then[{step}]"),
            Position::Draft(i) => write!(f, "iterations[{i}].draft"),
            Position::Evaluation(i) => write!(f, "iterations[{i}].evaluation"),
            Position::ReviewGate(i) => write!(f, "iterations[{i}].review_gate"),
            Position::ManualReview(i) => write!(f, "iterations[{i}].manual_review"),
            Position::Plan(r) => write!(f, "rounds[{r}].plan"),
            Position::DecompositionReview(r) => write!(f, "rounds[{r}].decomposition_review"),
            Position::Worker { round, index } => write!(f, "rounds[{round}].workers[{index}]"),
            Position::ReduceReview => write!(f, "reduce_review"),
            Position::Writeup => write!(f, "writeup"),
            Position::Node { id, visit } => write!(f, "nodes.{id}#{visit}"),
        }
    }
}

/// A gate that is waiting for a human, as stored in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenGate {
    /// The gate's id in the spec (`review_research`, a task id, `step2`).
    pub id: String,
    /// Which asking of this gate it is (1 the first time, 2 after a
    /// modify, ...); a re-ask gets a new one, so an answer meant for an
    /// earlier asking is detected as stale. Sessions written before it was
    /// counted per gate hold a session-wide ordinal here (still unique).
    pub instance: u64,
    /// Session-wide ordinal of the opening (the order gates were opened
    /// in); 0 in sessions written before it existed, whose `instance` is
    /// that ordinal.
    #[serde(default)]
    pub order: u64,
    pub kind: GateKind,
    /// Where it stands in the pattern.
    pub position: Position,
    pub prompt: String,
    /// The full rendered context under review (previews are cut from it).
    pub context: String,
    pub show_preview: bool,
    pub preview_length: usize,
    pub default: Option<String>,
    pub fallback: Fallback,
    pub opened_at: DateTime<Utc>,
    pub timeout_at: Option<DateTime<Utc>>,
    /// A rejection must carry a reason.
    #[serde(default)]
    pub require_reason: bool,
    /// The chat channel the spec names for this gate.
    #[serde(default)]
    pub channel: Option<String>,
    /// Who may answer; empty: anyone who can reach the gate.
    #[serde(default)]
    pub approvers: Vec<crate::model::Approver>,
    /// Approvals needed before the gate passes.
    #[serde(default = "one")]
    pub approvals_required: u32,
    /// Whether the run's starter may approve; `None`: the channel's default
    /// (the bot forbids it for manual and tool gates, the CLI allows it).
    #[serde(default)]
    pub allow_self_approval: Option<bool>,
    /// Approvals so far, while a quorum is being gathered.
    #[serde(default)]
    pub approvals: Vec<Approval>,
    /// Rejections needed to reject (1: a single reject by an approver).
    #[serde(default = "one")]
    pub rejections_required: u32,
    #[serde(default)]
    pub rejections: Vec<Approval>,
    /// `notify: dm`: each approver named by Slack user id also gets the
    /// request as a direct message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify_dm: bool,
    /// `notify: email`: each approver also gets the request by e-mail
    /// (approvers named by an address get it anyway: `crate::hub::recipients`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify_email: bool,
    /// Set for gates the run itself triggered (`hitl.gates`): the trigger's
    /// id. Such a gate reviews the step at `position` (modify re-runs it)
    /// and records nothing in the pattern's state when approved.
    #[serde(default)]
    pub trigger: Option<String>,
    /// The approval rule that decided this gate's approvers, quorum,
    /// reason, timeout and escalation (`crate::gate::policy`), shown on
    /// every channel and recorded in the audit trail; `None`: the gate's
    /// one fixed list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleNote>,
    /// The business-hours calendar this gate keeps (`crate::model::calendar`);
    /// `None`: every hour counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<GateHours>,
    /// The values its approver fills in (`form:`, manual gates): approving
    /// is filling them in (`Decision::Fill`); a plain approve is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<super::form::Form>,
    /// `allow_trust: true` (manual gates): `Decision::Trust` approves too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_trust: bool,
    /// `allow_edit: true` (manual gates): `Decision::Edit` approves with
    /// the action's arguments edited.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_edit: bool,
    /// `step_up: passkey` (the gate's, its rule's or its request's):
    /// approving takes a passkey assertion, not a click
    /// ([`super::step_up`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_up: Option<super::step_up::StepUp>,
    /// When its approvers were first reminded (`engine::timers`): from then
    /// on the gate counts as overdue (`gate::ages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminded_at: Option<DateTime<Utc>>,
}

/// Which approval rule applied to a gate instance, and why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RuleNote {
    /// 1-based position of the rule in its list.
    pub index: usize,
    /// What every channel shows: "needs 2 of cfo, group:finance because
    /// amount > 10000".
    pub summary: String,
    /// Set when a condition failed to evaluate, so the strictest rule
    /// applies (fail closed): what failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl RuleNote {
    /// The line every channel shows: "Policy: needs 2 of cfo,
    /// group:finance because amount > 10000" (after a failed condition the
    /// summary says the strictest rule applied, and why).
    pub fn shown(&self) -> String {
        format!("Policy: {}", self.summary)
    }
}

/// The business hours a gate keeps (its spec's `calendar`, `when_closed`,
/// `auto_approve`, `timers_outside_hours`), with the calendar as it was
/// when the gate opened: its deadline, timers and words stay the same if
/// the service's calendars change while it waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateHours {
    /// The service calendar's name.
    pub calendar: String,
    /// What opening outside hours does.
    #[serde(default)]
    pub when_closed: WhenClosed,
    /// Whether a timeout whose fallback approves may approve outside hours
    /// (`auto_approve: {outside_hours: false}` says no: it waits for the
    /// next opening).
    #[serde(default = "yes")]
    pub auto_approve_outside_hours: bool,
    /// Whether reminders and escalations may come outside hours.
    #[serde(default)]
    pub timers_outside_hours: bool,
    /// Whether the gate opened while the calendar was closed.
    #[serde(default)]
    pub opened_closed: bool,
    /// The calendar itself.
    pub rules: crate::model::calendar::Calendar,
}

/// What a gate opened outside its calendar's hours does (`when_closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenClosed {
    /// Stays open; business time, reminders and escalation start at the
    /// next opening.
    #[default]
    Wait,
    /// Goes at once to its `escalation_target` (the on-call).
    Escalate,
    /// Is rejected at once ("outside business hours of calendar `x`").
    Reject,
}

impl WhenClosed {
    /// The spec's word for it.
    pub fn name(self) -> &'static str {
        match self {
            WhenClosed::Wait => "wait",
            WhenClosed::Escalate => "escalate",
            WhenClosed::Reject => "reject",
        }
    }
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// One approval towards a quorum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub by: String,
    pub at: DateTime<Utc>,
    /// The person `by` belongs to, when the directory knew them: one
    /// person counts once, whichever channel they answered from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// Set when `by` answered as a delegate: the person they stood in for
    /// (the audit reads "bob for alice").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

impl OpenGate {
    /// How long the gate had waited at `at` (an answer's time), in
    /// milliseconds: the audit's `response_ms` and the time-to-decision
    /// metric. Never negative (clocks of several replicas may differ).
    pub fn waited_ms(&self, at: DateTime<Utc>) -> u64 {
        (at - self.opened_at).num_milliseconds().max(0) as u64
    }

    /// A manual gate `id`, opened now at step 1, asking "Ship it?", with no
    /// approvers listed: what unit tests start from.
    #[cfg(test)]
    pub fn for_tests(id: &str) -> OpenGate {
        OpenGate {
            reminded_at: None,
            id: id.into(),
            instance: 1,
            order: 1,
            kind: GateKind::ManualGate,
            position: Position::Step(1),
            prompt: "Ship it?".into(),
            context: String::new(),
            show_preview: true,
            preview_length: 300,
            default: None,
            fallback: Fallback::Cancel,
            opened_at: crate::clock::test_epoch(),
            timeout_at: None,
            require_reason: false,
            channel: None,
            approvers: Vec::new(),
            approvals_required: 1,
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

    /// `id#instance`, the handle channels put on buttons and resume commands.
    pub fn handle(&self) -> String {
        format!("{}#{}", self.id, self.instance)
    }

    /// Whether the timeout has passed at `now`.
    pub fn timed_out(&self, now: DateTime<Utc>) -> bool {
        self.timeout_at.is_some_and(|t| now >= t)
    }

    /// The preview cut to `preview_length` characters, and how many were cut.
    pub fn preview(&self) -> (String, usize) {
        cut(&self.context, self.preview_length)
    }
}

/// Cuts `text` to at most `max` characters on a char boundary.
pub fn cut(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_string(), 0);
    }
    (text.chars().take(max).collect(), total - max)
}
