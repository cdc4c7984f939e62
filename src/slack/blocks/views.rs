//! The views handed to the Slack templates, and how they are built from
//! what the engine holds: [`ApprovalView::from_gate`] (an open gate),
//! [`DecidedView::from_answer`] (a decision on it), and
//! [`ToolApprovalView::from_session`] (an agent's tool calls, with each
//! call's outcome read from its state and the gate history). [`ModalView`]
//! and [`ProgressView`] are filled in by their callers.
//!
//! Views carry text uncut, except previews, outputs and tool-call arguments,
//! which are cut here with [`cut_for_section`] so the message can say how
//! much was left out; everything else is cut by the templates. Nothing here
//! renders, escapes or checks Block Kit limits.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::limits::{cut_for_section, BUTTON_VALUE_MAX, CODE_BLOCK_MAX};
use crate::hub::calls::{self, Outcome};
use crate::hub::fields::{fields, trust_label, FieldView};
use crate::model::{Answer, Decision, OpenGate};
use crate::model::{CallState, PendingCall, Session};
use crate::spec::GateKind;

/// Calls one tool-approval message shows; waiting calls come first, the
/// rest are counted in a note (4 blocks per call keeps the message under 50).
pub const MAX_TOOL_CALLS: usize = 10;
/// What one call's arguments may take in its code-block section (escaped
/// chars), leaving room for the fences and the "cut" note.
pub const TOOL_ARGS_MAX: usize = 2800;
/// What all shown calls' arguments may take together, so ten calls do not
/// make a wall of JSON; each call gets at least [`TOOL_ARGS_MIN`].
pub const TOOL_ARGS_TOTAL: usize = 12_000;
/// The least one call's arguments get, however many calls are shown.
pub const TOOL_ARGS_MIN: usize = 800;

/// What the approval message shows. Strings are uncut except `preview`,
/// which [`ApprovalView::from_gate`] cuts (templates cut the rest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalView {
    pub workflow: String,
    pub gate_id: String,
    /// `id#instance`: every button's `value`.
    pub handle: String,
    /// `hitl` | `manual_gate`.
    pub kind: String,
    /// `steps[2]`, `tasks.review`.
    pub position: String,
    pub prompt: String,
    /// The preview, already cut to fit a section ([`cut_for_section`]).
    pub preview: Option<String>,
    /// How many characters of the context the preview leaves out.
    pub preview_cut: usize,
    /// A Slack user id (`U…`, shown as a mention) or any name.
    pub started_by: String,
    pub session_id: String,
    /// RFC 3339.
    pub timeout_at: Option<String>,
    pub timeout_unix: Option<i64>,
    /// The deadline of a gate keeping business hours, in its calendar's
    /// words ("Mon 30 Nov 09:30 CET (business hours of calendar `eu`)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_words: Option<String>,
    /// Who may answer (user ids, group ids or names); empty: anyone.
    #[serde(default)]
    pub approvers: Vec<String>,
    /// Approvals needed, and who has approved so far.
    #[serde(default = "one")]
    pub approvals_required: u32,
    #[serde(default)]
    pub approvals: Vec<String>,
    /// A rejection must say why: Reject opens the reason form at once (no
    /// confirm dialog, no separate "Reject with reason…").
    #[serde(default)]
    pub require_reason: bool,
    /// The approval rule that decided who answers, in words.
    #[serde(default)]
    pub rule: Option<String>,
    /// A form's fields: the message lists them, and Approve opens the
    /// form to fill them in (a modal, [`FormView`]).
    #[serde(default)]
    pub fields: Vec<FieldView>,
    /// The Trust button's words, when the gate allows trust
    /// (`strands_trust`, valued with the handle).
    #[serde(default)]
    pub trust: Option<String>,
    /// `step_up: passkey`: the message says approving takes a passkey,
    /// linking to the run's page (an Approve click is refused there with
    /// the same link).
    #[serde(default)]
    pub step_up: bool,
}

fn one() -> u32 {
    1
}

impl ApprovalView {
    /// The view of an open gate. The preview (when the gate shows one) is
    /// the context cut to the spec's `preview_length`, then cut again by
    /// [`cut_for_section`] to fit a code-block section; `preview_cut` counts
    /// both cuts.
    pub fn from_gate(gate: &OpenGate, workflow: &str, session_id: &str, started_by: &str) -> Self {
        let (preview, preview_cut) = if gate.show_preview && !gate.context.trim().is_empty() {
            let (text, cut_spec) = gate.preview();
            let (text, cut_section) = cut_for_section(&text, CODE_BLOCK_MAX);
            (Some(text), cut_spec + cut_section)
        } else {
            (None, 0)
        };
        ApprovalView {
            workflow: workflow.to_string(),
            gate_id: gate.id.clone(),
            handle: gate.handle(),
            kind: kind_name(gate.kind).to_string(),
            position: gate.position.to_string(),
            prompt: gate.prompt.clone(),
            preview,
            preview_cut,
            started_by: started_by.to_string(),
            session_id: session_id.to_string(),
            timeout_at: gate
                .timeout_at
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            timeout_unix: gate.timeout_at.map(|t| t.timestamp()),
            timeout_words: crate::hub::durations::business_deadline_posted(
                gate.hours.as_ref(),
                gate.timeout_at,
            ),
            approvers: gate.approvers.iter().map(|a| a.to_string()).collect(),
            approvals_required: gate.approvals_required,
            approvals: gate.approvals.iter().map(|a| a.by.clone()).collect(),
            require_reason: gate.require_reason,
            rule: gate.rule.as_ref().map(|r| r.shown()),
            fields: gate.form.as_ref().map(fields).unwrap_or_default(),
            trust: gate.allow_trust.then(|| "Approve and trust".to_string()),
            step_up: gate.step_up.is_some(),
        }
    }

    /// The view of `gate`, open in `session`: [`ApprovalView::from_gate`],
    /// with the Trust button naming the request's tool.
    pub fn of(gate: &OpenGate, session: &Session) -> Self {
        let mut v = Self::from_gate(gate, &session.workflow, &session.id, &session.started_by);
        if gate.allow_trust {
            v.trust = Some(trust_label(session));
        }
        v
    }
}

/// The modal that fills in a gate's form (Approve on a gate with one):
/// an input per field (`block_id` `field:NAME`, `action_id` `value`); its
/// submission approves with what was typed, checked by the intake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormView {
    /// Cut to 24 characters by the template; empty: "Approve".
    pub title: String,
    pub prompt: String,
    /// Opaque, returned on submission; at most 3000 characters.
    pub private_metadata: String,
    pub fields: Vec<FieldView>,
}

/// Pieces of the full output a "View full output" modal shows at most
/// (one code-block section each, about 90,000 characters in all); the
/// rest is counted in a note.
pub const MAX_OUTPUT_CHUNKS: usize = 30;

/// The "View full output" modal: the whole text under review at a gate
/// (already redacted when the gate opened), in pieces that each fit a
/// code-block section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputView {
    pub workflow: String,
    pub gate_id: String,
    pub session_id: String,
    /// Each cut with [`cut_for_section`]`(…, CODE_BLOCK_MAX)`.
    pub chunks: Vec<String>,
    /// Characters left out after the last piece.
    pub cut: usize,
}

impl OutputView {
    /// The view of gate `gate`'s full context.
    pub fn from_gate(gate: &OpenGate, workflow: &str, session_id: &str) -> Self {
        let mut chunks = Vec::new();
        let mut rest = gate.context.as_str();
        while !rest.is_empty() && chunks.len() < MAX_OUTPUT_CHUNKS {
            let (piece, _) = cut_for_section(rest, CODE_BLOCK_MAX);
            if piece.is_empty() {
                break;
            }
            rest = &rest[piece.len()..];
            chunks.push(piece);
        }
        OutputView {
            workflow: workflow.to_string(),
            gate_id: gate.id.clone(),
            session_id: session_id.to_string(),
            chunks,
            cut: rest.chars().count(),
        }
    }
}

/// The approval message after a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecidedView {
    pub approval: ApprovalView,
    /// `approve` | `reject` | `modify` | `respond` (`defer` renders generically).
    pub decision: String,
    /// A Slack user id, a name, or `timeout` (rendered as "Timed out → …").
    pub by: String,
    pub at: String,
    /// Reject reason, modify feedback or response text.
    pub detail: Option<String>,
    /// The person `by` answered for as a delegate ("… by bob for alice").
    #[serde(default)]
    pub on_behalf_of: Option<String>,
}

impl DecidedView {
    /// The view of `answer` given to the gate shown by `approval`.
    pub fn from_answer(approval: ApprovalView, answer: &Answer) -> Self {
        let (decision, detail) = match &answer.decision {
            Decision::Approve => ("approve", None),
            Decision::Reject { reason } => ("reject", reason.clone()),
            Decision::Modify { feedback } => ("modify", Some(feedback.clone())),
            Decision::Respond { text } => ("respond", Some(text.clone())),
            Decision::Defer => ("defer", None),
            Decision::Edit { arguments } => (
                "approve",
                Some(format!("with edited arguments {arguments}")),
            ),
            Decision::Trust { .. } if approval.kind == "manual_gate" => {
                ("approve", Some("and trusted the tool".to_string()))
            }
            Decision::Trust { .. } => (
                "approve",
                Some("and trusted the tool for this run".to_string()),
            ),
            Decision::Fill { values } => (
                "approve",
                Some(format!("with {}", crate::model::form::shown(values))),
            ),
            Decision::Skip => ("skip", None),
            Decision::Abort { reason } => ("abort", reason.clone()),
        };
        DecidedView {
            approval,
            decision: decision.to_string(),
            by: answer.by.clone(),
            at: answer.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            detail,
            on_behalf_of: answer.on_behalf_of.clone(),
        }
    }
}

/// The modal asking for modify feedback, a hitl response, or a reject reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModalView {
    /// `modify` | `respond` | `reject`; the callback_id is `strands_{kind}`.
    pub kind: String,
    /// Cut to 24 characters by the template; empty → a default per kind.
    pub title: String,
    pub prompt: String,
    /// Opaque, returned on submission; at most 3000 characters (not cut).
    pub private_metadata: String,
    /// Whether a reject reason is required (modify/respond always are).
    pub required: bool,
    /// Prefilled text (`edit`: the call's arguments as JSON); at most 3000
    /// characters ([`INITIAL_VALUE_MAX`](super::INITIAL_VALUE_MAX)), not cut.
    #[serde(default)]
    pub initial_value: Option<String>,
}

/// A progress reply in the run's thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressView {
    /// `step_done` | `paused` | `completed` | `failed` | `rejected`.
    pub event: String,
    pub workflow: String,
    pub session_id: String,
    pub text: String,
    /// Output, pre-cut with [`cut_for_section`]`(…, CODE_BLOCK_MAX)`; say
    /// in `text` when it was cut.
    pub output: Option<String>,
}

/// The tool-call approval message: every call of the agent's latest turn
/// (at most [`MAX_TOOL_CALLS`], waiting ones first), each with buttons while
/// it waits and its outcome once decided. Built from the session, so the
/// same view serves the first post and every re-render.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolApprovalView {
    pub workflow: String,
    /// The agent whose calls these are.
    pub agent: String,
    /// The gate handle (`tools#N`).
    pub handle: String,
    /// Where the agent step stands (`steps[0]`, `tasks.fetch`).
    pub position: String,
    pub session_id: String,
    /// A Slack user id (`U…`, shown as a mention) or any name.
    pub started_by: String,
    /// Calls in the request.
    pub total: usize,
    /// Calls still waiting for a human, shown or not.
    pub waiting: usize,
    /// The calls shown, in request order.
    pub calls: Vec<ToolCallView>,
    /// Calls not shown, and how many of those wait.
    pub hidden: usize,
    pub hidden_waiting: usize,
    /// The approval rule that decided who answers, in words.
    #[serde(default)]
    pub rule: Option<String>,
}

/// One call of a [`ToolApprovalView`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallView {
    /// 1-based position in the request.
    pub index: usize,
    /// The provider's call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// `handle|call id`: every button's `value` (never cut).
    pub value: String,
    /// `call:handle:index`, unique in the message.
    pub block_id: String,
    /// `low` | `medium` | `high` | `critical`, when the call needed approval.
    pub risk: Option<String>,
    pub reversible: Option<bool>,
    /// The approval prompt.
    pub prompt: Option<String>,
    /// What the call would do.
    pub description: Option<String>,
    /// Pretty-printed arguments, already cut ([`cut_for_section`]).
    pub arguments: String,
    /// Characters of the pretty-printed arguments left out.
    pub arguments_cut: usize,
    /// Still waiting for a human: show the buttons.
    pub waiting: bool,
    /// False when `value` is too long for a button (a model's absurd call
    /// id): the message says to decide it with the CLI instead.
    pub buttons: bool,
    /// Whether a Trust button is offered.
    pub trustable: bool,
    /// How it was decided, once it was.
    pub outcome: Option<CallOutcomeView>,
}

/// How a call was decided (or why it needed no decision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOutcomeView {
    /// `approve` | `edit` | `trust` (the human trusted the tool on this
    /// call) | `trusted` (approved by that trust) | `reject` | `policy` |
    /// `running` | `done` | `not_run` (refused without asking; `detail` says
    /// why).
    pub kind: String,
    /// A Slack user id or a name.
    pub by: Option<String>,
    /// RFC 3339.
    pub at: Option<String>,
    /// A reject reason, or why a call was not run.
    pub detail: Option<String>,
}

impl ToolApprovalView {
    /// The view of the tool calls `handle` asks about, from the session as
    /// it stands (decisions are read from the calls' states and the gate
    /// history). `None` when the session has no tool calls.
    pub fn from_session(session: &Session, handle: &str) -> Option<Self> {
        let turn = session.agent_turn.as_ref()?;
        let total = turn.calls.len();
        let is_waiting = |i: &usize| turn.calls[*i].state == CallState::Waiting;
        let waiting = (0..total).filter(is_waiting).count();
        // Waiting calls first (they need buttons), then decided ones; shown
        // in request order. Hidden waiting calls appear as others are decided.
        let mut shown: Vec<usize> = (0..total).filter(is_waiting).take(MAX_TOOL_CALLS).collect();
        let room = MAX_TOOL_CALLS - shown.len();
        shown.extend((0..total).filter(|i| !is_waiting(i)).take(room));
        shown.sort_unstable();
        let hidden_waiting = waiting - shown.iter().filter(|i| is_waiting(i)).count();
        let budget = (TOOL_ARGS_TOTAL / shown.len().max(1)).clamp(TOOL_ARGS_MIN, TOOL_ARGS_MAX);
        let calls = shown
            .iter()
            .map(|&i| ToolCallView::new(session, handle, i, &turn.calls[i], budget))
            .collect();
        Some(ToolApprovalView {
            workflow: session.workflow.clone(),
            agent: turn.agent.clone(),
            handle: handle.to_string(),
            position: turn.position.to_string(),
            session_id: session.id.clone(),
            started_by: session.started_by.clone(),
            total,
            waiting,
            calls,
            hidden: total - shown.len(),
            hidden_waiting,
            rule: session
                .gates
                .get(handle)
                .and_then(|g| g.rule.as_ref())
                .map(|r| r.shown()),
        })
    }
}

impl ToolCallView {
    fn new(session: &Session, handle: &str, i: usize, pc: &PendingCall, budget: usize) -> Self {
        let value = format!("{handle}|{}", pc.call.id);
        let pretty = serde_json::to_string_pretty(&pc.call.arguments)
            .unwrap_or_else(|_| pc.call.arguments.to_string());
        let (arguments, arguments_cut) = cut_for_section(&pretty, budget.min(TOOL_ARGS_MAX));
        let request = pc.request.as_ref();
        ToolCallView {
            index: i + 1,
            id: pc.call.id.clone(),
            name: pc.call.name.clone(),
            buttons: value.chars().count() <= BUTTON_VALUE_MAX,
            value,
            block_id: format!("call:{handle}:{}", i + 1),
            risk: request.map(|r| r.risk.as_str().to_string()),
            reversible: request.map(|r| r.reversible),
            prompt: request.map(|r| r.prompt.clone()),
            description: request.map(|r| r.description.clone()),
            arguments,
            arguments_cut,
            waiting: pc.state == CallState::Waiting,
            trustable: request.is_some_and(|r| r.trustable),
            outcome: call_outcome(session, handle, pc),
        }
    }
}

/// The answer a human gave to call `call` of gate `handle`, if any (the
/// hub's reading, shared with the other rooms).
pub fn call_answer<'a>(session: &'a Session, handle: &str, call: &str) -> Option<&'a Answer> {
    calls::answer_to(session, handle, call)
}

/// How a call was decided, as the templates name it: the hub's reading
/// ([`calls::outcome`]).
fn call_outcome(session: &Session, handle: &str, pc: &PendingCall) -> Option<CallOutcomeView> {
    let at = |t: DateTime<Utc>| Some(t.to_rfc3339_opts(SecondsFormat::Secs, true));
    let view = |kind: &str, by: Option<String>, at: Option<String>, detail: Option<String>| {
        CallOutcomeView {
            kind: kind.to_string(),
            by,
            at,
            detail,
        }
    };
    Some(match calls::outcome(session, handle, pc)? {
        Outcome::Approved { by, at: t } => view("approve", Some(by), t.and_then(at), None),
        Outcome::Edited { by, at: t } => view("edit", Some(by), at(t), None),
        Outcome::Trusted { by, at: t, rule } => view("trust", Some(by), at(t), rule),
        Outcome::ByTrust { by } => view("trusted", Some(by), None, None),
        Outcome::Rejected { by, at: t, reason } => view("reject", Some(by), t.and_then(at), reason),
        Outcome::Policy => view("policy", None, None, None),
        Outcome::Running => view("running", None, None, None),
        Outcome::Done => view("done", None, None, None),
        Outcome::NotRun(why) => view("not_run", None, None, Some(why)),
    })
}

/// The template name of a gate kind.
pub fn kind_name(kind: GateKind) -> &'static str {
    match kind {
        GateKind::Hitl => "hitl",
        GateKind::ManualGate => "manual_gate",
        GateKind::ToolCall => "tool_call",
    }
}

#[cfg(test)]
mod tests {
    use super::super::limits::{chars, check_message, slack_blocks_shape, SECTION_TEXT_MAX};
    use super::super::samples::fixtures::*;
    use super::super::samples::sample_approval;
    use super::*;
    use crate::model::GateEventKind;
    use serde_json::{json, Map, Value};

    #[test]
    fn decided_from_an_answer() {
        let answer = Answer {
            decision: Decision::Reject {
                reason: Some("no".into()),
            },
            by: "U04APPROVER".into(),
            at: chrono::DateTime::parse_from_rfc3339("2025-11-21T09:30:00Z")
                .unwrap()
                .into(),
            via: "slack".into(),
            vars: Map::new(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        };
        let v = DecidedView::from_answer(sample_approval(GateKind::ManualGate), &answer);
        assert_eq!(
            (v.decision.as_str(), v.at.as_str(), v.detail.as_deref()),
            ("reject", "2025-11-21T09:30:00Z", Some("no"))
        );
    }

    // ---- tool-call approvals

    /// Records a human decision on call `i` the way the gate does: the
    /// call's state and an `answered` event naming the call.
    fn decide_call(s: &mut Session, i: usize, decision: Decision, state: CallState) {
        let id = format!("call_{i}");
        if let Some(pc) = s
            .agent_turn
            .as_mut()
            .and_then(|t| t.calls.iter_mut().find(|c| c.call.id == id))
        {
            pc.state = state;
        }
        s.history.push(crate::model::GateEvent {
            gate: "tools".into(),
            instance: 3,
            asked_at: None,
            what: GateEventKind::Answered {
                answer: Answer {
                    decision,
                    by: "U04APPROVER".into(),
                    at: chrono::DateTime::parse_from_rfc3339("2025-11-21T09:30:00Z")
                        .unwrap()
                        .into(),
                    via: "slack".into(),
                    vars: Map::new(),
                    call: Some(id),
                    person: None,
                    on_behalf_of: None,
                    step_up: None,
                    idp_group: None,
                },
                waited_ms: 10,
            },
        });
    }

    fn approved() -> CallState {
        CallState::Approved {
            by: "U04APPROVER".into(),
            digest: String::new(),
        }
    }

    fn render_tools(s: &Session) -> (ToolApprovalView, Vec<Value>) {
        let v = ToolApprovalView::from_session(s, "tools#3").unwrap();
        let blocks = builtins().tool_approval(&v).unwrap();
        check_message(&blocks).unwrap();
        slack_blocks_shape(&blocks, "").unwrap();
        (v, blocks)
    }

    /// The per-call rows of buttons (not the turn's "Approve all").
    fn actions_blocks(blocks: &[Value]) -> Vec<&Value> {
        blocks
            .iter()
            .filter(|b| b["type"] == "actions" && b["block_id"] != "strands_all_calls")
            .collect()
    }

    /// The turn's "Approve all N" button, when there is one.
    fn approve_all(blocks: &[Value]) -> Option<&Value> {
        blocks
            .iter()
            .find(|b| b["block_id"] == "strands_all_calls")
            .map(|b| &b["elements"][0])
    }

    fn contexts(blocks: &[Value]) -> Vec<String> {
        blocks
            .iter()
            .filter(|b| b["type"] == "context")
            .map(|b| b["elements"][0]["text"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn tool_approval_has_a_row_of_buttons_per_waiting_call() {
        let mut policy = tool_call(3, "list_files", json!({"path": "."}), false);
        policy.request = None;
        policy.state = CallState::Approved {
            by: "policy".into(),
            digest: String::new(),
        };
        let s = tool_session(vec![
            tool_call(
                1,
                "deploy_api",
                json!({"method": "POST", "path": "/a"}),
                true,
            ),
            tool_call(
                2,
                "deploy_api",
                json!({"method": "POST", "path": "/b"}),
                false,
            ),
            policy,
        ]);
        let (v, blocks) = render_tools(&s);
        assert_eq!((v.total, v.waiting, v.hidden), (3, 2, 0));
        assert_eq!(header_text(&blocks), "Tool approval: deploy / deployer");
        // One button for the whole turn: every waiting call, one answer each.
        let all = approve_all(&blocks).expect("an Approve all button");
        assert_eq!(all["action_id"], "strands_approve_all");
        assert_eq!(all["value"], "tools#3");
        assert_eq!(all["text"]["text"], "Approve all 2");
        let rows = actions_blocks(&blocks);
        assert_eq!(rows.len(), 2);
        for (n, row) in rows.iter().enumerate() {
            assert_eq!(row["block_id"], format!("call:tools#3:{}", n + 1));
            let els = row["elements"].as_array().unwrap();
            assert!(els
                .iter()
                .all(|e| e["value"] == format!("tools#3|call_{}", n + 1)));
            let ids: Vec<&str> = els
                .iter()
                .map(|e| e["action_id"].as_str().unwrap())
                .collect();
            if n == 0 {
                assert_eq!(
                    ids,
                    [
                        "strands_approve",
                        "strands_reject",
                        "strands_reject_reason",
                        "strands_edit",
                        "strands_trust",
                        "strands_trust_hour"
                    ]
                );
            } else {
                assert_eq!(
                    ids,
                    [
                        "strands_approve",
                        "strands_reject",
                        "strands_reject_reason",
                        "strands_edit"
                    ]
                );
            }
            assert_eq!(els[0]["style"], "primary");
            assert_eq!(els[1]["style"], "danger");
            assert!(els[1]["confirm"]["text"]["text"]
                .as_str()
                .unwrap()
                .contains("deploy_api"));
            assert_eq!(els[2]["text"]["text"], "Reject with reason…");
            assert_eq!(els[3]["text"]["text"], "Edit arguments");
        }
        let all = serde_json::to_string(&blocks).unwrap();
        assert!(all.contains("Approve `deploy_api` number 1?"), "{all}");
        assert!(
            all.contains("POST https://api.example.com/2 via deploy_api"),
            "{all}"
        );
        assert!(all.contains("risk: *high*"), "{all}");
        // Call 1 is not reversible, call 2 is.
        let sections: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "section")
            .map(|b| b["text"]["text"].as_str().unwrap())
            .collect();
        let head = |i: usize| {
            *sections
                .iter()
                .find(|t| t.starts_with(&format!("*{i}. ")))
                .unwrap()
        };
        assert!(head(1).contains("cannot be undone"), "{}", head(1));
        assert!(!head(2).contains("cannot be undone"), "{}", head(2));
        assert!(
            sections.contains(&"```\n{\n  \"method\": \"POST\",\n  \"path\": \"/a\"\n}\n```"),
            "{sections:#?}"
        );
        assert!(contexts(&blocks)
            .iter()
            .any(|c| c == "✅ approved by policy"));
        assert!(all.contains("2 need your decision"), "{all}");
    }

    #[test]
    fn decided_calls_say_who_decided_and_lose_their_buttons() {
        let mut s = tool_session(vec![
            tool_call(1, "deploy_api", json!({"path": "/a"}), true),
            tool_call(2, "deploy_api", json!({"path": "/b"}), true),
            tool_call(3, "deploy_api", json!({"path": "/c"}), true),
        ]);
        decide_call(&mut s, 1, Decision::Approve, approved());
        let (v, blocks) = render_tools(&s);
        assert_eq!(v.waiting, 2);
        let rows = actions_blocks(&blocks);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["block_id"], "call:tools#3:2");
        assert_eq!(
            contexts(&blocks)[1],
            "✅ approved by <@U04APPROVER> at 2025-11-21T09:30:00Z"
        );

        decide_call(
            &mut s,
            2,
            Decision::Reject {
                reason: Some("not <!channel> on a Friday".into()),
            },
            CallState::Rejected {
                by: "U04APPROVER".into(),
                reason: Some("not <!channel> on a Friday".into()),
            },
        );
        decide_call(
            &mut s,
            3,
            Decision::Edit {
                arguments: json!({"path": "/c2"}),
            },
            approved(),
        );
        let (v, blocks) = render_tools(&s);
        assert_eq!(v.waiting, 0);
        assert!(actions_blocks(&blocks).is_empty());
        assert!(!serde_json::to_string(&blocks).unwrap().contains("strands_"));
        let ctx = contexts(&blocks);
        assert_eq!(
            ctx[2],
            "❌ rejected by <@U04APPROVER> at 2025-11-21T09:30:00Z: not &lt;!channel&gt; on a Friday"
        );
        assert_eq!(
            ctx[3],
            "✏️ approved with edited arguments by <@U04APPROVER> at 2025-11-21T09:30:00Z"
        );
        assert!(serde_json::to_string(&blocks)
            .unwrap()
            .contains("Every call is decided."));
        assert_escaped(&Value::Array(blocks));
    }

    #[test]
    fn trust_and_policy_outcomes() {
        let mut refused = tool_call(4, "nope", json!({}), false);
        refused.request = None;
        refused.state = CallState::Done {
            result: crate::tools::ToolResult::error("unknown tool `nope`"),
        };
        let mut s = tool_session(vec![
            tool_call(1, "deploy_api", json!({"path": "/a"}), true),
            tool_call(2, "deploy_api", json!({"path": "/b"}), true),
            tool_call(3, "other", json!({}), false),
            refused,
        ]);
        decide_call(&mut s, 1, Decision::Trust { limit: None }, approved());
        if let Some(pc) = s.agent_turn.as_mut().map(|t| &mut t.calls[1]) {
            pc.state = CallState::Approved {
                by: "trust by U04APPROVER".into(),
                digest: String::new(),
            };
        }
        s.agent_turn.as_mut().unwrap().calls[2].state = CallState::Running;
        let (_, blocks) = render_tools(&s);
        let ctx = contexts(&blocks);
        assert!(
            ctx[1].starts_with("🤝 trusted by <@U04APPROVER> at "),
            "{ctx:?}"
        );
        assert_eq!(
            ctx[2],
            "🤝 approved: <@U04APPROVER> trusted `deploy_api` for this run"
        );
        assert_eq!(ctx[3], "⏳ running");
        assert_eq!(ctx[4], "⛔ not run: unknown tool `nope`");
    }

    #[test]
    fn adversarial_tool_calls_stay_valid_escaped_and_routable() {
        // Twelve calls with huge, hostile arguments, names, prompts and ids.
        let calls: Vec<PendingCall> = (1..=12)
            .map(|i| {
                let args = json!({
                    "body": nasty(100_000),
                    "note": "\"quoted\" <@U123> <!channel> ```",
                    "list": (0..50).collect::<Vec<u32>>(),
                });
                let mut pc = tool_call(i, &nasty(300), args, true);
                pc.call.id = format!("call_{i}_\"q\"_<@U123>");
                if let Some(r) = pc.request.as_mut() {
                    r.prompt = nasty(5_000);
                    r.description = nasty(5_000);
                }
                pc
            })
            .collect();
        let mut s = tool_session(calls);
        s.workflow = nasty(500);
        s.started_by = nasty(300);
        s.agent_turn.as_mut().unwrap().agent = nasty(500);
        let (v, blocks) = render_tools(&s);
        assert!(blocks.len() < 50, "{} blocks", blocks.len());
        assert_eq!((v.calls.len(), v.hidden, v.hidden_waiting), (10, 2, 2));
        assert_escaped(&Value::Array(blocks.clone()));
        assert!(chars(&header_text(&blocks)) <= 150);
        // Every button carries its call's full id.
        let rows = actions_blocks(&blocks);
        assert_eq!(rows.len(), 10);
        for (row, c) in rows.iter().zip(&v.calls) {
            for e in row["elements"].as_array().unwrap() {
                assert_eq!(e["value"].as_str().unwrap(), format!("tools#3|{}", c.id));
            }
        }
        // Arguments are cut within the section and say so.
        assert!(v.calls.iter().all(|c| c.arguments_cut > 90_000));
        let args: Vec<&str> = blocks
            .iter()
            .filter_map(|b| b["text"]["text"].as_str())
            .filter(|t| t.starts_with("```"))
            .collect();
        assert_eq!(args.len(), 10);
        for a in args {
            assert!(chars(a) <= SECTION_TEXT_MAX);
            assert!(a.contains("more characters not shown"), "{a:.200}");
        }
        let all = serde_json::to_string(&blocks).unwrap();
        assert!(
            all.contains("2 more calls not shown (2 waiting"),
            "{all:.300}"
        );

        // Decided calls make room: the hidden waiting calls are shown next.
        for i in 1..=5 {
            let id = s.agent_turn.as_ref().unwrap().calls[i - 1].call.id.clone();
            decide_call(&mut s, i, Decision::Approve, approved());
            // decide_call names `call_{i}`; these ids are longer.
            if let Some(GateEventKind::Answered { answer, .. }) =
                s.history.last_mut().map(|e| &mut e.what)
            {
                answer.call = Some(id.clone());
            }
            s.agent_turn.as_mut().unwrap().calls[i - 1].state = approved();
        }
        let (v, blocks) = render_tools(&s);
        assert_eq!(v.waiting, 7);
        assert_eq!(
            actions_blocks(&blocks).len(),
            7,
            "every waiting call is shown"
        );
        assert_eq!((v.hidden, v.hidden_waiting), (2, 0));
        assert_eq!(v.calls.last().unwrap().index, 12);
    }

    #[test]
    fn a_call_id_too_long_for_a_button_is_decided_elsewhere() {
        let mut pc = tool_call(1, "deploy_api", json!({}), true);
        pc.call.id = "x".repeat(2_500);
        let (v, blocks) = render_tools(&tool_session(vec![pc]));
        assert!(!v.calls[0].buttons);
        assert!(actions_blocks(&blocks).is_empty());
        assert!(
            contexts(&blocks)[1].contains("strands resume"),
            "{blocks:#?}"
        );
    }

    #[test]
    fn empty_tool_strings_never_make_empty_text() {
        let mut pc = tool_call(1, "", Value::String(String::new()), true);
        pc.call.id = String::new();
        if let Some(r) = pc.request.as_mut() {
            r.prompt = String::new();
            r.description = " ".into();
        }
        let mut s = tool_session(vec![pc]);
        s.workflow = String::new();
        s.started_by = String::new();
        s.agent_turn.as_mut().unwrap().agent = String::new();
        render_tools(&s);
        assert!(ToolApprovalView::from_session(
            &Session {
                agent_turn: None,
                ..s
            },
            "tools#3"
        )
        .is_none());
    }
}
