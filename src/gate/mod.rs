//! Human gates: what a human can answer, and what each answer means.
//!
//! Every channel (terminal, CLI flags, Slack, HTTP) produces the same
//! [`Answer`] carrying a [`Decision`]; [`interpret`] turns it into the one
//! thing the engine needs to know — continue with a response, re-run the
//! previous step with feedback, end the run rejected, or stay paused. Timeouts
//! become answers too ([`timeout_answer`]), recorded as given by `timeout`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::spec::{Fallback, GateKind, GateSpec};

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
    /// Tool calls: approve, and approve this tool for the rest of the run.
    Trust,
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
            Decision::Trust => "trusted",
            Decision::Skip => "skipped",
            Decision::Abort { .. } => "aborted",
        }
    }
}

/// The longest reason, feedback or response a human may give, in
/// characters (Slack's own limit for a text input): the text reaches the
/// model and the audit trail, whatever the channel.
pub const MAX_ANSWER_TEXT: usize = 3000;
/// The longest edited tool-call arguments, in bytes of JSON.
pub const MAX_EDITED_ARGS: usize = 65_536;

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
    /// Session-wide ordinal of this asking; a re-ask after modify gets a new
    /// one, so an answer meant for an earlier asking is detected as stale.
    pub instance: u64,
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
    pub approvers: Vec<String>,
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
    /// Set for gates the run itself triggered (`hitl.gates`): the trigger's
    /// id. Such a gate reviews the step at `position` (modify re-runs it)
    /// and records nothing in the pattern's state when approved.
    #[serde(default)]
    pub trigger: Option<String>,
}

fn one() -> u32 {
    1
}

/// Which tally an answer counts towards.
#[derive(Clone, Copy)]
enum Vote {
    Approve,
    Reject,
}

/// One approval towards a quorum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub by: String,
    pub at: DateTime<Utc>,
}

/// Who is answering, and what the channel knows about them.
pub struct Identity<'a> {
    pub who: &'a str,
    /// The run's starter.
    pub started_by: &'a str,
    /// The Slack bot (self-approval is off by default there).
    pub in_bot: bool,
    /// Bot-wide admins: they may answer any gate.
    pub admins: &'a [String],
    /// Whether `who` belongs to a group id (`S…`) listed as approver.
    pub member_of: &'a dyn Fn(&str) -> bool,
}

/// Whether `id` may give `decision` at `gate`: self-approval first (admins
/// too — nobody approves their own run where that is off), then the
/// approver list (admins and group members count). The error is what the
/// person is told.
pub fn authorize(
    gate: &OpenGate,
    decision: &Decision,
    id: &Identity<'_>,
) -> std::result::Result<(), String> {
    let approves = matches!(
        decision,
        Decision::Approve | Decision::Edit { .. } | Decision::Trust
    ) || matches!(decision, Decision::Respond { text } if text.trim().eq_ignore_ascii_case("approved"));
    let self_ok = gate
        .allow_self_approval
        .unwrap_or(!(id.in_bot && gate.kind != GateKind::Hitl));
    if approves && !self_ok && id.who == id.started_by {
        return Err(
            "you started this run, so you cannot approve it (allow_self_approval is off)".into(),
        );
    }
    if gate.approvers.is_empty() || id.admins.iter().any(|a| a == id.who) {
        return Ok(());
    }
    let listed = gate
        .approvers
        .iter()
        .any(|a| a == id.who || (is_group(a) && (id.member_of)(a)));
    if listed {
        Ok(())
    } else {
        let names: Vec<String> = gate.approvers.iter().map(|a| show_approver(a)).collect();
        Err(format!(
            "you are not an approver for this gate (approvers: {})",
            names.join(", ")
        ))
    }
}

/// Slack user-group ids start with `S`.
pub fn is_group(approver: &str) -> bool {
    approver.len() > 2
        && approver.starts_with('S')
        && approver
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && approver.chars().any(|c| c.is_ascii_digit())
}

/// How an approver is named in messages: mentions for Slack ids.
pub fn show_approver(a: &str) -> String {
    if is_group(a) {
        format!("<!subteam^{a}>")
    } else if a.len() > 1
        && (a.starts_with('U') || a.starts_with('W'))
        && a.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        format!("<@{a}>")
    } else {
        a.to_string()
    }
}

impl OpenGate {
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

/// What the engine does after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The gate passes; `response` is what templates read as the gate's response.
    Continue { response: String },
    /// Re-run the previous agent step with this feedback, then ask again.
    Rerun { feedback: String },
    /// End the run rejected.
    Cancel { reason: Option<String> },
    /// The gate passes with no response (a timeout's `skip`).
    Skip,
    /// End the run failed (a timeout's `abort`).
    Abort { reason: Option<String> },
    /// Keep waiting.
    StayPaused,
}

/// Interprets an answer for a gate of this kind. Answers that do not fit the
/// gate (free text on a manual gate that is neither approve nor reject) are
/// usage errors listing the valid answers; nothing changes.
pub fn interpret(kind: GateKind, decision: &Decision) -> Result<Outcome> {
    Ok(match decision {
        Decision::Approve => Outcome::Continue {
            response: "approved".into(),
        },
        Decision::Reject { reason } => Outcome::Cancel {
            reason: reason.clone(),
        },
        Decision::Modify { feedback } => {
            if feedback.trim().is_empty() {
                return Err(Error::Usage("modify needs feedback (--feedback TEXT)".into()));
            }
            Outcome::Rerun {
                feedback: feedback.clone(),
            }
        }
        Decision::Defer => Outcome::StayPaused,
        Decision::Skip => Outcome::Skip,
        Decision::Abort { reason } => Outcome::Abort {
            reason: reason.clone(),
        },
        Decision::Edit { .. } | Decision::Trust => {
            return Err(Error::Usage(
                "--edit-args and --trust answer tool calls; this gate is not one".into(),
            ))
        }
        Decision::Respond { text } => match kind {
            GateKind::ToolCall => {
                return Err(Error::Usage(
                    "a tool call takes --approve, --reject, --edit-args JSON or --trust".into(),
                ))
            }
            GateKind::Hitl => Outcome::Continue {
                response: text.clone(),
            },
            GateKind::ManualGate => match text.trim().to_ascii_lowercase().as_str() {
                "approved" | "approve" | "yes" | "y" => Outcome::Continue {
                    response: "approved".into(),
                },
                "rejected" | "reject" | "no" | "n" => Outcome::Cancel { reason: None },
                _ => {
                    return Err(Error::Usage(format!(
                        "a manual_gate takes approve or reject, not `{text}` (use --approve, --reject [--reason R], --modify --feedback F)"
                    )))
                }
            },
        },
    })
}

/// The answer a timed-out gate gets from its `fallback_action` (a `hitl`
/// gate without one answers its `default`). Every path without a usable
/// answer rejects (fail closed): `default` with no default, and `escalate`
/// — the bot escalates before it gets here ([`crate::slack::timers`]); what
/// is left is an escalation nobody answered, or no bot to escalate.
pub fn timeout_answer(gate: &OpenGate, now: DateTime<Utc>) -> Answer {
    let by_fallback = |what: &str| {
        Some(format!(
            "{what} by fallback (fallback_action: {})",
            gate.fallback.name()
        ))
    };
    let decision = match (gate.kind, gate.fallback) {
        (GateKind::ToolCall, _) => Decision::Reject {
            reason: Some("timed out".into()),
        },
        (_, Fallback::Continue) => Decision::Approve,
        (_, Fallback::Cancel) => Decision::Reject {
            reason: by_fallback("rejected"),
        },
        (_, Fallback::Skip) => Decision::Skip,
        (_, Fallback::Abort) => Decision::Abort {
            reason: by_fallback("aborted"),
        },
        (GateKind::Hitl, Fallback::Default) => match &gate.default {
            Some(d) => Decision::Respond { text: d.clone() },
            None => Decision::Reject {
                reason: Some("timed out with no default answer".into()),
            },
        },
        (GateKind::ManualGate, Fallback::Default) => {
            match gate
                .default
                .as_deref()
                .map(|d| d.trim().to_ascii_lowercase())
                .as_deref()
            {
                Some("approve" | "approved") => Decision::Approve,
                Some("reject" | "rejected") => Decision::Reject {
                    reason: Some(
                        "rejected by fallback (fallback_action: default, default: reject)".into(),
                    ),
                },
                _ => Decision::Reject {
                    reason: Some("timed out with no default answer".into()),
                },
            }
        }
        (_, Fallback::Escalate) => Decision::Reject {
            reason: by_fallback("rejected"),
        },
    };
    Answer {
        decision,
        by: "timeout".into(),
        at: now,
        via: "timeout".into(),
        vars: Map::new(),
        call: None,
    }
}

/// Opens a gate from its spec, with the rendered prompt and context.
pub fn open(
    spec: &GateSpec,
    position: Position,
    instance: u64,
    prompt: String,
    context: String,
    now: DateTime<Utc>,
) -> OpenGate {
    OpenGate {
        id: spec.id.clone(),
        instance,
        kind: spec.kind,
        position,
        prompt,
        context,
        show_preview: spec.show_preview,
        preview_length: spec.preview_length,
        default: spec.default.clone(),
        fallback: spec.fallback,
        require_reason: spec.require_reason,
        channel: spec.channel.clone(),
        approvers: spec.approvers.clone().unwrap_or_default(),
        approvals_required: spec.approvals_required.unwrap_or(1).max(1),
        rejections_required: spec.rejections_required.unwrap_or(1).max(1),
        rejections: Vec::new(),
        allow_self_approval: spec.allow_self_approval,
        approvals: Vec::new(),
        trigger: None,
        opened_at: now,
        timeout_at: spec
            .timeout_secs
            .and_then(|s| chrono::Duration::try_seconds(s as i64))
            .map(|d| now + d),
    }
}

/// Appends the audit record of an answer (redacted: an edit's arguments may
/// hold secrets) to the session's outbox, written with the answer itself.
fn audit_answer(
    session: &mut crate::session::Session,
    gate: &OpenGate,
    answer: &Answer,
    waited_ms: u64,
) {
    use crate::audit::{AuditEvent, AuditKind};
    let kind = if answer.via == "timeout" {
        AuditKind::Timeout
    } else {
        AuditKind::Answer
    };
    let mut ev = AuditEvent::new(kind, &session.id, &session.workflow);
    ev.at = Some(answer.at);
    ev.gate = Some(gate.handle());
    ev.call = answer.call.clone();
    ev.who = Some(answer.by.clone());
    ev.via = Some(answer.via.clone());
    let redactor = crate::audit::redact::Redactor::default();
    let text = serde_json::to_string(&answer.decision).unwrap_or_default();
    let redacted = redactor.redact(&text);
    ev.decision = Some(serde_json::from_str(&redacted).unwrap_or(Value::String(redacted)));
    ev.response_ms = Some(waited_ms);
    session.audit.push(ev);
}

// A refusal carries the answer that won, for "already decided by"; it is
// returned once per click, so its size does not matter.
#[allow(clippy::result_large_err)]
/// Records `answer` on the open gate of `session`, exactly once — the body
/// of the store's compare-and-swap. A manual or `hitl` gate takes the answer
/// whole (the engine carries it out next); a tool-call gate takes one
/// decision per call and closes when no call waits any more.
pub fn accept(
    session: &mut crate::session::Session,
    handle: Option<&str>,
    answer: &Answer,
) -> std::result::Result<(), crate::store::Refusal> {
    use crate::session::{CallState, GateEvent, GateEventKind, Status};
    use crate::store::Refusal;

    if let Some(prev) = &session.pending_answer {
        return Err(Refusal::AlreadyAnswered(prev.clone()));
    }
    let last = |s: &crate::session::Session, call: Option<&str>| {
        s.history.iter().rev().find_map(|e| match &e.what {
            GateEventKind::Answered { answer, .. }
                if handle.is_none_or(|h| h == format!("{}#{}", e.gate, e.instance))
                    && (call.is_none() || answer.call.as_deref() == call) =>
            {
                Some(answer.clone())
            }
            _ => None,
        })
    };
    if session.status != Status::Paused {
        return Err(
            match handle.and_then(|_| last(session, answer.call.as_deref())) {
                Some(a) => Refusal::AlreadyAnswered(a),
                None => Refusal::NotPaused(session.status),
            },
        );
    }
    if let Some(want) = handle {
        // A parked gate (several open at once) is answered by its handle.
        session.focus(want);
    }
    let Some(gate) = session.gate.clone() else {
        return Err(Refusal::NotPaused(session.status));
    };
    if let Some(want) = handle {
        if gate.handle() != want {
            return Err(match last(session, answer.call.as_deref()) {
                Some(a) => Refusal::AlreadyAnswered(a),
                None => Refusal::StaleGate {
                    open: Some(gate.handle()),
                },
            });
        }
    }
    let waited_ms = (answer.at - gate.opened_at).num_milliseconds().max(0) as u64;
    if gate.kind != GateKind::ToolCall {
        // A timeout's answer is final; it never counts as one vote.
        let vote = match answer.decision {
            _ if answer.via == "timeout" => None,
            Decision::Approve if gate.approvals_required > 1 => Some(Vote::Approve),
            Decision::Reject { .. } if gate.rejections_required > 1 => Some(Vote::Reject),
            _ => None,
        };
        audit_answer(session, &gate, answer, waited_ms);
        if let Some(vote) = vote {
            let (tally, required, noun) = match vote {
                Vote::Approve => (&gate.approvals, gate.approvals_required, "approv"),
                Vote::Reject => (&gate.rejections, gate.rejections_required, "reject"),
            };
            if tally.iter().any(|a| a.by == answer.by) {
                return Err(Refusal::Invalid(format!(
                    "you already {noun}ed this gate ({} of {required} {noun}{})",
                    tally.len(),
                    if noun == "approv" { "als" } else { "ions" }
                )));
            }
            let Some(open) = session.gate.as_mut() else {
                return Err(Refusal::NotPaused(session.status));
            };
            let list = match vote {
                Vote::Approve => &mut open.approvals,
                Vote::Reject => &mut open.rejections,
            };
            list.push(Approval {
                by: answer.by.clone(),
                at: answer.at,
            });
            if (list.len() as u32) < required {
                // Counted; the gate stays open until the tally is complete.
                session.history.push(GateEvent {
                    gate: gate.id.clone(),
                    instance: gate.instance,
                    asked_at: Some(gate.opened_at),
                    what: GateEventKind::Answered {
                        answer: answer.clone(),
                        waited_ms,
                    },
                });
                return Ok(());
            }
        }
        session.pending_answer = Some(answer.clone());
        session.status = Status::Running;
        return Ok(());
    }

    // A tool-call gate: one decision per call.
    let already = last(session, answer.call.as_deref());
    let Some(turn) = session.agent_turn.as_mut() else {
        return Err(Refusal::Invalid("no tool calls are waiting".into()));
    };
    let waiting: Vec<String> = turn.waiting().map(|c| c.call.id.clone()).collect();
    let id = match (&answer.call, waiting.as_slice()) {
        (Some(id), _) => id.clone(),
        (None, [only]) => only.clone(),
        (None, []) => return Err(Refusal::Invalid("no tool calls are waiting".into())),
        (None, many) => {
            return Err(Refusal::Invalid(format!(
                "{} calls are waiting; name one with --call: {}",
                many.len(),
                many.join(", ")
            )))
        }
    };
    let Some(pc) = turn.calls.iter_mut().find(|c| c.call.id == id) else {
        return Err(Refusal::Invalid(format!("no call `{id}` in this request")));
    };
    if pc.state != CallState::Waiting {
        return Err(match already {
            Some(a) => Refusal::AlreadyAnswered(a),
            None => Refusal::Invalid(format!("call `{id}` is no longer waiting")),
        });
    }
    let by = answer.by.clone();
    let mut trusted = None;
    pc.state = match &answer.decision {
        Decision::Approve => CallState::Approved {
            by: by.clone(),
            digest: pc.digest.clone(),
        },
        Decision::Trust => {
            trusted = Some(pc.call.name.clone());
            CallState::Approved {
                by: by.clone(),
                digest: pc.digest.clone(),
            }
        }
        Decision::Edit { arguments } => {
            // `{name, arguments}` naming the call's own tool unwraps to its
            // arguments; naming another tool is refused.
            let arguments = crate::engine::tools::edited_arguments(&pc.call, arguments)
                .map_err(|e| Refusal::Invalid(e.to_string()))?;
            pc.call.arguments = arguments.clone();
            pc.digest = crate::tools::digest(&pc.call.name, &arguments);
            CallState::Approved {
                by: by.clone(),
                digest: pc.digest.clone(),
            }
        }
        Decision::Reject { reason } => {
            let why = match reason {
                Some(r) if !r.trim().is_empty() => format!("denied by {by}: {r}"),
                _ => format!("denied by {by}"),
            };
            session.denied_calls.insert(pc.digest.clone(), why);
            CallState::Rejected {
                by: by.clone(),
                reason: reason.clone(),
            }
        }
        other => {
            return Err(Refusal::Invalid(format!(
                "a tool call takes approve, reject, edit or trust, not {}",
                other.verb()
            )))
        }
    };
    let mut answer = answer.clone();
    answer.call = Some(id);
    if let Some(name) = trusted {
        // Trust approves the tool for the rest of the run, starting with the
        // other calls of this batch.
        for other in turn.calls.iter_mut() {
            if other.call.name == name && other.state == CallState::Waiting {
                other.state = CallState::Approved {
                    by: format!("trust by {by}"),
                    digest: other.digest.clone(),
                };
            }
        }
        session.trusted_tools.insert(name);
    }
    let done = turn.waiting().next().is_none();
    audit_answer(session, &gate, &answer, waited_ms);
    session.history.push(GateEvent {
        gate: gate.id.clone(),
        instance: gate.instance,
        asked_at: Some(gate.opened_at),
        what: GateEventKind::Answered { answer, waited_ms },
    });
    if done {
        session.gate = None;
        session.status = Status::Running;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hitl_free_text_is_the_response_and_manual_gates_refuse_it() {
        let r = interpret(
            GateKind::Hitl,
            &Decision::Respond {
                text: "ship it".into(),
            },
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome::Continue {
                response: "ship it".into()
            }
        );
        assert!(interpret(
            GateKind::ManualGate,
            &Decision::Respond {
                text: "ship it".into()
            }
        )
        .is_err());
        let r = interpret(
            GateKind::ManualGate,
            &Decision::Respond {
                text: "approved".into(),
            },
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome::Continue {
                response: "approved".into()
            }
        );
    }

    #[test]
    fn modify_without_feedback_is_refused() {
        assert!(interpret(
            GateKind::ManualGate,
            &Decision::Modify {
                feedback: " ".into()
            }
        )
        .is_err());
    }

    #[test]
    fn preview_cuts_on_char_boundaries() {
        assert_eq!(cut("héllo wörld", 4), ("héll".to_string(), 7));
        assert_eq!(cut("abc", 10), ("abc".to_string(), 0));
    }

    #[test]
    fn timeouts_fail_closed_without_a_default() {
        let spec = GateSpec {
            id: "g".into(),
            kind: GateKind::Hitl,
            prompt: "p".into(),
            context_display: None,
            default: None,
            timeout_secs: Some(1),
            fallback: Fallback::Cancel,
            condition: None,
            show_preview: true,
            preview_length: 10,
            require_reason: false,
            channel: None,
            approvers: None,
            approvals_required: None,
            rejections_required: None,
            allow_self_approval: None,
            timers: Default::default(),
        };
        let now = Utc::now();
        let g = open(&spec, Position::Step(1), 1, "p".into(), "c".into(), now);
        assert!(!g.timed_out(now));
        assert!(g.timed_out(now + chrono::Duration::seconds(2)));
        assert!(matches!(
            timeout_answer(&g, now).decision,
            Decision::Reject { .. }
        ));
    }
}
