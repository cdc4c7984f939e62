//! Slack messages as templates: the approval message, its decided form, the
//! tool-call approval message (one row of buttons per call, re-rendered
//! after each decision), the feedback / edit modal and progress replies are
//! Block Kit JSON rendered by minijinja from `templates/*.json.j2`, so a
//! team can restyle what the bot posts without rebuilding it
//! (`STRANDS_TEMPLATES=DIR`: a file in DIR replaces the built-in of the same
//! name).
//!
//! Templates are user code and gate text is model output, so nothing that
//! comes out of here is trusted to be well-formed. Every render goes through
//! three gates before it can reach Slack:
//!
//! 1. it must parse as JSON (templates `tojson` every value, and the
//!    environment JSON-escapes any value printed without it);
//! 2. [`check_message`] / [`check_modal`] enforce the Block Kit limits
//!    (SLACK.md): Slack rejects a whole message for one over-long field, and a
//!    rejected approval message is a gate nobody hears about;
//! 3. it must deserialize into slack-morphism's `SlackBlock` / `SlackView`
//!    as a block type it knows (its `Unknown` catch-all is refused).
//!
//! A failure is [`crate::Error::Runtime`] naming the template file.
//!
//! Where long text is cut:
//! - previews and outputs: in Rust, with [`cut_for_section`] (see
//!   [`ApprovalView::from_gate`]), because the message says how many
//!   characters were cut;
//! - everything else user-controlled (prompt, workflow name, gate id, reasons,
//!   names): in the templates, with the filters registered here, because
//!   only the template knows where a string lands (a 150-char header or a
//!   3000-char section) and escaping changes lengths. `mrkdwn(max)` escapes
//!   `&`, `<`, `>` and cuts the *escaped* text to `max` characters;
//!   `truncate_chars(max)` cuts plain text; `mention` renders a Slack user id
//!   as `<@U…>` and anything else as escaped text. Cuts end with `…`.
//! - Lengths are counted in Unicode scalar values (`chars`).
//! - The gate handle is never cut where it is used for routing (button
//!   `value`s); the actions `block_id` is `gate:{handle}` cut to 255, so a
//!   handle over 2000 characters is an error, not a broken button.
//! - Tool calls: a call's buttons carry `handle|call id` (never cut) in an
//!   actions block `call:{handle}:{index}`; its arguments are pretty JSON
//!   cut in Rust (at most [`TOOL_ARGS_MAX`] each, [`TOOL_ARGS_TOTAL`] over
//!   the message) and the message says how much was cut; a call id too long
//!   for a button's 2000 characters gets no buttons and a pointer to the
//!   CLI instead.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::SecondsFormat;
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{Answer, Decision, OpenGate};
use crate::model::{CallState, GateEventKind, PendingCall, Session};
use crate::spec::GateKind;

mod filters;
mod limits;
mod samples;

pub use filters::escape_mrkdwn;
pub use limits::{
    check_message, check_modal, cut_for_section, Limit, LimitError, CODE_BLOCK_MAX,
    INITIAL_VALUE_MAX, SECTION_TEXT_MAX,
};

use filters::sandbox;
use limits::{slack_blocks_shape, slack_view_shape, BUTTON_VALUE_MAX};
use samples::samples;

/// The environment variable naming a directory of template overrides.
pub const TEMPLATES_ENV: &str = "STRANDS_TEMPLATES";

/// The approval message (blocks).
pub const APPROVAL: &str = "approval.json.j2";
/// The approval message after a decision (blocks).
pub const DECIDED: &str = "decided.json.j2";
/// The modify / respond / reject modal (a view).
pub const MODAL: &str = "modal.json.j2";
/// A progress reply in the run's thread (blocks).
pub const PROGRESS: &str = "progress.json.j2";
/// The message asking for decisions on an agent's tool calls (blocks), also
/// re-rendered after each per-call decision.
pub const TOOL_APPROVAL: &str = "tool_approval.json.j2";

/// Every template name; an override directory may replace any of them.
pub const TEMPLATE_NAMES: [&str; 5] = [APPROVAL, DECIDED, MODAL, PROGRESS, TOOL_APPROVAL];

const BUILTINS: [(&str, &str); 5] = [
    (
        APPROVAL,
        include_str!("../../../templates/approval.json.j2"),
    ),
    (DECIDED, include_str!("../../../templates/decided.json.j2")),
    (MODAL, include_str!("../../../templates/modal.json.j2")),
    (
        PROGRESS,
        include_str!("../../../templates/progress.json.j2"),
    ),
    (
        TOOL_APPROVAL,
        include_str!("../../../templates/tool_approval.json.j2"),
    ),
];

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
/// The sandboxed templates: built-ins plus overrides, no file access after
/// [`Templates::load`] (no loader: only the known names exist, so an
/// `{% include %}` can reach nothing else), strict undefined variables, a
/// fuel limit, JSON auto-escaping, and the `mrkdwn`, `truncate_chars` and
/// `mention` filters.
pub struct Templates {
    env: Environment<'static>,
    /// Where each template came from, for errors: its path, or `built-in NAME`.
    origins: BTreeMap<&'static str, String>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("origins", &self.origins)
            .finish_non_exhaustive()
    }
}

impl Templates {
    /// Built-ins, with any same-named file in `dir` replacing its built-in.
    /// Errors (missing directory, unreadable file, template syntax) name the
    /// file. Every template is then rendered once with sample data, so a
    /// template that renders invalid JSON or breaks a limit fails here, at
    /// startup, rather than when a gate opens.
    pub fn load(dir: Option<&Path>) -> Result<Self> {
        let mut env = sandbox();
        let mut origins = BTreeMap::new();
        if let Some(dir) = dir {
            warn_unknown_files(dir)?;
        }
        for (name, builtin) in BUILTINS {
            let (origin, source) = match dir {
                Some(dir) => {
                    let path = dir.join(name);
                    match std::fs::read_to_string(&path) {
                        Ok(text) => (path.display().to_string(), text),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            (format!("built-in {name}"), builtin.to_string())
                        }
                        Err(e) => {
                            return Err(Error::io(
                                format!("reading Slack template {}", path.display()),
                                e,
                            ))
                        }
                    }
                }
                None => (format!("built-in {name}"), builtin.to_string()),
            };
            env.add_template_owned(name, source)
                .map_err(|e| template_error(&origin, &e))?;
            origins.insert(name, origin);
        }
        let templates = Templates { env, origins };
        templates.self_check()?;
        Ok(templates)
    }

    /// Where template `name` came from: a path, or `built-in NAME`.
    pub fn origin<'a>(&'a self, name: &'a str) -> &'a str {
        self.origins.get(name).map(String::as_str).unwrap_or(name)
    }

    /// The approval message's blocks.
    pub fn approval(&self, v: &ApprovalView) -> Result<Vec<Value>> {
        self.message(APPROVAL, v)
    }

    /// The approval message's blocks once decided (no buttons).
    pub fn decided(&self, v: &DecidedView) -> Result<Vec<Value>> {
        self.message(DECIDED, v)
    }

    /// The modal view object, for `views.open`.
    pub fn modal(&self, v: &ModalView) -> Result<Value> {
        let origin = self.origin(MODAL);
        let view = self.render_json(MODAL, v)?;
        check_modal(&view).map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        slack_view_shape(&view)
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        Ok(view)
    }

    /// A progress reply's blocks.
    pub fn progress(&self, v: &ProgressView) -> Result<Vec<Value>> {
        self.message(PROGRESS, v)
    }

    /// The tool-call approval message's blocks (posted, and re-rendered
    /// after each decision).
    pub fn tool_approval(&self, v: &ToolApprovalView) -> Result<Vec<Value>> {
        self.message(TOOL_APPROVAL, v)
    }

    fn message<S: Serialize>(&self, name: &str, ctx: &S) -> Result<Vec<Value>> {
        let origin = self.origin(name);
        let blocks = match self.render_json(name, ctx)? {
            Value::Array(blocks) => blocks,
            other => {
                return Err(Error::Runtime(format!(
                    "Slack template {origin}: rendered a JSON {}, not an array of blocks",
                    json_kind(&other)
                )))
            }
        };
        check_message(&blocks)
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        slack_blocks_shape(&blocks, "")
            .map_err(|e| Error::Runtime(format!("Slack template {origin}: {e}")))?;
        Ok(blocks)
    }

    fn render_json<S: Serialize>(&self, name: &str, ctx: &S) -> Result<Value> {
        let origin = self.origin(name);
        let text = self
            .env
            .get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|e| template_error(origin, &e))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::Runtime(format!(
                "Slack template {origin}: did not render valid JSON: {e}"
            ))
        })
    }

    /// Renders every template with sample views (every gate kind, decision,
    /// modal kind and progress event).
    fn self_check(&self) -> Result<()> {
        let s = samples();
        for v in &s.approvals {
            self.approval(v)?;
        }
        for v in &s.decided {
            self.decided(v)?;
        }
        for v in &s.modals {
            self.modal(v)?;
        }
        for v in &s.progress {
            self.progress(v)?;
        }
        for v in &s.tools {
            self.tool_approval(v)?;
        }
        Ok(())
    }
}

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
    /// Who may answer (user ids, group ids or names); empty: anyone.
    #[serde(default)]
    pub approvers: Vec<String>,
    /// Approvals needed, and who has approved so far.
    #[serde(default = "one")]
    pub approvals_required: u32,
    #[serde(default)]
    pub approvals: Vec<String>,
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
            approvers: gate.approvers.clone(),
            approvals_required: gate.approvals_required,
            approvals: gate.approvals.iter().map(|a| a.by.clone()).collect(),
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
            Decision::Trust => (
                "approve",
                Some("and trusted the tool for this run".to_string()),
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
    /// characters ([`INITIAL_VALUE_MAX`]), not cut.
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

/// The answer a human gave to call `call` of gate `handle`, if any.
pub fn call_answer<'a>(session: &'a Session, handle: &str, call: &str) -> Option<&'a Answer> {
    session.history.iter().rev().find_map(|e| match &e.what {
        GateEventKind::Answered { answer, .. }
            if answer.call.as_deref() == Some(call)
                && format!("{}#{}", e.gate, e.instance) == handle =>
        {
            Some(answer)
        }
        _ => None,
    })
}

fn call_outcome(session: &Session, handle: &str, pc: &PendingCall) -> Option<CallOutcomeView> {
    let outcome = |kind: &str, by: Option<String>, at: Option<String>, detail: Option<String>| {
        Some(CallOutcomeView {
            kind: kind.to_string(),
            by,
            at,
            detail,
        })
    };
    if pc.state == CallState::Waiting {
        return None;
    }
    if let Some(a) = call_answer(session, handle, &pc.call.id) {
        let (kind, detail) = match &a.decision {
            Decision::Edit { .. } => ("edit", None),
            Decision::Trust => ("trust", None),
            Decision::Reject { reason } => ("reject", reason.clone()),
            _ => ("approve", None),
        };
        let at = a.at.to_rfc3339_opts(SecondsFormat::Secs, true);
        return outcome(kind, Some(a.by.clone()), Some(at), detail);
    }
    match &pc.state {
        CallState::Waiting => None,
        CallState::Approved { by, .. } if by == "policy" => outcome("policy", None, None, None),
        CallState::Approved { by, .. } => match by.strip_prefix("trust by ") {
            Some(who) => outcome("trusted", Some(who.to_string()), None, None),
            None => outcome("approve", Some(by.clone()), None, None),
        },
        CallState::Rejected { by, reason } => {
            outcome("reject", Some(by.clone()), None, reason.clone())
        }
        CallState::Running => outcome("running", None, None, None),
        CallState::Done { result } if result.is_error => {
            outcome("not_run", None, None, Some(result.content.clone()))
        }
        CallState::Done { .. } => outcome("done", None, None, None),
    }
}

/// The template name of a gate kind.
pub fn kind_name(kind: GateKind) -> &'static str {
    match kind {
        GateKind::Hitl => "hitl",
        GateKind::ManualGate => "manual_gate",
        GateKind::ToolCall => "tool_call",
    }
}

fn template_error(origin: &str, e: &minijinja::Error) -> Error {
    let mut msg = format!("Slack template {origin}");
    if let Some(line) = e.line() {
        msg.push_str(&format!(":{line}"));
    }
    msg.push_str(": ");
    msg.push_str(&e.kind().to_string());
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
    }
    Error::Runtime(msg)
}

fn warn_unknown_files(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::io(
            format!("reading Slack template directory {}", dir.display()),
            e,
        )
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".j2") && !TEMPLATE_NAMES.contains(&name.as_ref()) {
            tracing::warn!(
                file = %entry.path().display(),
                known = ?TEMPLATE_NAMES,
                "ignoring a file in the Slack template directory that overrides no template"
            );
        }
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::limits::chars;
    use super::samples::fixtures::*;
    use super::samples::sample_approval;
    use super::*;
    use serde_json::{json, Map};
    use slack_morphism::prelude::{SlackBlock, SlackView};

    fn adversarial_approval(kind: GateKind) -> ApprovalView {
        let gate = OpenGate {
            id: nasty(500),
            instance: 7,
            kind,
            position: crate::model::Position::Task(nasty(500)),
            prompt: nasty(5_000),
            context: nasty(100_000),
            show_preview: true,
            preview_length: 200_000,
            default: None,
            fallback: crate::spec::Fallback::Cancel,
            opened_at: chrono::Utc::now(),
            timeout_at: Some(chrono::Utc::now() + chrono::Duration::seconds(60)),
            require_reason: false,
            channel: None,
            approvers: Vec::new(),
            approvals_required: 1,
            allow_self_approval: None,
            approvals: Vec::new(),
            rejections_required: 1,
            rejections: Vec::new(),
            trigger: None,
        };
        ApprovalView::from_gate(&gate, &nasty(500), &nasty(300), &nasty(300))
    }

    // ---- normal views

    #[test]
    fn every_builtin_renders_every_sample() {
        let t = builtins();
        let s = samples();
        for v in &s.approvals {
            let blocks = t.approval(v).unwrap();
            assert_eq!(
                header_text(&blocks),
                "Approval needed: deploy-service / review"
            );
        }
        for v in &s.decided {
            let blocks = t.decided(v).unwrap();
            assert!(blocks.iter().all(|b| b["type"] != "actions"));
        }
        for v in &s.modals {
            let view = t.modal(v).unwrap();
            assert_eq!(view["callback_id"], format!("strands_{}", v.kind));
        }
        for v in &s.progress {
            t.progress(v).unwrap();
        }
        assert_eq!(t.origin(APPROVAL), "built-in approval.json.j2");
    }

    #[test]
    fn approval_has_three_buttons_carrying_the_handle() {
        let t = builtins();
        let blocks = t.approval(&sample_approval(GateKind::ManualGate)).unwrap();
        let actions = block_of(&blocks, "actions");
        assert_eq!(actions["block_id"], "gate:review#1");
        let els = actions["elements"].as_array().unwrap();
        let ids: Vec<&str> = els
            .iter()
            .map(|e| e["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["strands_approve", "strands_reject", "strands_modify"]);
        assert!(els
            .iter()
            .all(|e| e["value"] == "review#1" && e["type"] == "button"));
        assert_eq!(els[0]["style"], "primary");
        assert_eq!(els[1]["style"], "danger");
        assert!(els[2].get("style").is_none());
        let confirm = &els[1]["confirm"];
        for key in ["title", "text", "confirm", "deny"] {
            assert!(
                confirm[key]["text"].as_str().is_some_and(|s| !s.is_empty()),
                "{key}"
            );
        }
        assert!(els[0].get("confirm").is_none());
        // The rest of the message.
        let sections: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "section")
            .map(|b| b["text"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(sections[0], "*Approve the production deploy?*");
        assert!(
            sections[1].starts_with("```\ndiff --git"),
            "{}",
            sections[1]
        );
        let all = serde_json::to_string(&blocks).unwrap();
        assert!(all.contains("120 more characters"), "{all}");
        assert!(all.contains("strands sessions show 3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f"));
        assert!(all.contains("Started by <@U04APPROVER>"));
        assert!(
            all.contains("<!date^1763719200^{date_short_pretty} at {time}|2025-11-21T10:00:00Z>")
        );
    }

    #[test]
    fn hitl_gates_get_respond_instead_of_modify() {
        let t = builtins();
        let blocks = t.approval(&sample_approval(GateKind::Hitl)).unwrap();
        let els = block_of(&blocks, "actions")["elements"]
            .as_array()
            .unwrap()
            .clone();
        let ids: Vec<&str> = els
            .iter()
            .map(|e| e["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["strands_approve", "strands_reject", "strands_respond"]
        );
        assert_eq!(els[2]["value"], "review#1");
    }

    #[test]
    fn decided_says_who_did_what() {
        let t = builtins();
        let s = samples();
        let outcome = |i: usize| {
            let blocks = t.decided(&s.decided[i]).unwrap();
            blocks.last().unwrap()["text"]["text"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            outcome(0),
            "✅ Approved by <@U04APPROVER> at 2025-11-21T09:30:00Z"
        );
        assert_eq!(
            outcome(1),
            "❌ Rejected by <@U04APPROVER> at 2025-11-21T09:30:00Z: not on a Friday"
        );
        assert_eq!(outcome(2), "❌ Rejected by alice at 2025-11-21T09:30:00Z");
        assert!(outcome(3).starts_with("✏️ Modify requested by <@U04APPROVER>"));
        assert!(outcome(4).starts_with("💬 Responded by <@U04APPROVER>"));
        assert!(
            outcome(6).starts_with("⏱ Timed out → continued"),
            "{}",
            outcome(6)
        );
        assert!(outcome(7).starts_with("⏱ Timed out → rejected: timed out"));
    }

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
        };
        let v = DecidedView::from_answer(sample_approval(GateKind::ManualGate), &answer);
        assert_eq!(
            (v.decision.as_str(), v.at.as_str(), v.detail.as_deref()),
            ("reject", "2025-11-21T09:30:00Z", Some("no"))
        );
    }

    #[test]
    fn modal_fields_depend_on_kind() {
        let t = builtins();
        let s = samples();
        let input = |v: &ModalView| {
            t.modal(v).unwrap()["blocks"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .clone()
        };
        for v in &s.modals {
            let view = t.modal(v).unwrap();
            assert_eq!(view["type"], "modal");
            assert_eq!(view["private_metadata"], v.private_metadata);
            let inp = input(v);
            assert_eq!(inp["block_id"], "feedback");
            assert_eq!(inp["element"]["action_id"], "text");
            assert_eq!(inp["element"]["type"], "plain_text_input");
            assert_eq!(inp["element"]["multiline"], true);
            let optional = v.kind == "reject" && !v.required;
            assert_eq!(inp["optional"], optional, "{}", v.kind);
        }
        let mut untitled = s.modals[0].clone();
        untitled.title = " ".into();
        assert_eq!(
            t.modal(&untitled).unwrap()["title"]["text"],
            "Request changes"
        );
    }

    // ---- adversarial views

    #[test]
    fn adversarial_approvals_stay_valid_and_escaped() {
        let t = builtins();
        for kind in [GateKind::ManualGate, GateKind::Hitl] {
            let v = adversarial_approval(kind);
            assert!(v.preview_cut > 90_000, "{}", v.preview_cut);
            let blocks = t.approval(&v).unwrap();
            check_message(&blocks).unwrap();
            assert_escaped(&Value::Array(blocks.clone()));
            let header = header_text(&blocks);
            assert!(chars(&header) <= 150 && header.starts_with("Approval needed: "));
            let els = block_of(&blocks, "actions")["elements"]
                .as_array()
                .unwrap()
                .clone();
            assert!(
                els.iter().all(|e| e["value"] == v.handle),
                "handles are never cut"
            );
            let bid = block_of(&blocks, "actions")["block_id"]
                .as_str()
                .unwrap()
                .to_string();
            assert_eq!(chars(&bid), 255);
            assert!(bid.ends_with('…'));
            // The rendered JSON round-trips into slack-morphism's types.
            let typed: Vec<SlackBlock> =
                serde_json::from_value(Value::Array(blocks.clone())).unwrap();
            assert_eq!(typed.len(), blocks.len());
            // The preview section is exactly at, not over, the section limit.
            let preview = blocks
                .iter()
                .filter_map(|b| b["text"]["text"].as_str())
                .find(|s| s.starts_with("```"))
                .unwrap();
            assert!(chars(preview) <= SECTION_TEXT_MAX);
        }
    }

    #[test]
    fn adversarial_decided_modal_and_progress_stay_valid() {
        let t = builtins();
        for decision in ["approve", "reject", "modify", "respond", &nasty(300)] {
            for by in ["U04APPROVER", "timeout", &nasty(300)] {
                let v = DecidedView {
                    approval: adversarial_approval(GateKind::ManualGate),
                    decision: decision.to_string(),
                    by: by.to_string(),
                    at: nasty(100),
                    detail: Some(nasty(10_000)),
                };
                let blocks = t.decided(&v).unwrap();
                assert_escaped(&Value::Array(blocks));
            }
        }
        for kind in ["modify", "respond", "reject", "edit", &nasty(50)] {
            let v = ModalView {
                kind: kind.to_string(),
                title: nasty(500),
                prompt: nasty(5_000),
                private_metadata: nasty(3_000),
                required: false,
                initial_value: Some(nasty(INITIAL_VALUE_MAX)),
            };
            let view = t.modal(&v).unwrap();
            assert_escaped(&view);
            assert_eq!(
                view["private_metadata"].as_str().unwrap(),
                v.private_metadata
            );
            let typed: SlackView = serde_json::from_value(view).unwrap();
            assert!(matches!(typed, SlackView::Modal(_)));
        }
        for event in [
            "step_done",
            "paused",
            "completed",
            "failed",
            "rejected",
            &nasty(40),
        ] {
            let (output, _) = cut_for_section(&nasty(100_000), CODE_BLOCK_MAX);
            let v = ProgressView {
                event: event.to_string(),
                workflow: nasty(500),
                session_id: nasty(500),
                text: nasty(5_000),
                output: Some(output),
            };
            let blocks = t.progress(&v).unwrap();
            assert_escaped(&Value::Array(blocks));
            // Uncut output is cut by the template, still within limits.
            let v = ProgressView {
                output: Some(nasty(100_000)),
                ..v
            };
            t.progress(&v).unwrap();
        }
    }

    #[test]
    fn empty_strings_never_make_empty_text() {
        let t = builtins();
        let v = ApprovalView {
            workflow: String::new(),
            gate_id: String::new(),
            handle: "#1".into(),
            kind: String::new(),
            position: String::new(),
            prompt: "  ".into(),
            preview: Some(String::new()),
            preview_cut: 0,
            started_by: String::new(),
            session_id: String::new(),
            timeout_at: None,
            timeout_unix: None,
            approvers: vec![String::new()],
            approvals_required: 3,
            approvals: vec![String::new()],
        };
        t.approval(&v).unwrap();
        let d = DecidedView {
            approval: v,
            decision: String::new(),
            by: String::new(),
            at: String::new(),
            detail: Some(String::new()),
        };
        t.decided(&d).unwrap();
        t.modal(&ModalView {
            kind: String::new(),
            title: String::new(),
            prompt: String::new(),
            private_metadata: String::new(),
            required: true,
            initial_value: Some(String::new()),
        })
        .unwrap();
        t.progress(&ProgressView {
            event: String::new(),
            workflow: String::new(),
            session_id: String::new(),
            text: String::new(),
            output: Some(String::new()),
        })
        .unwrap();
    }

    #[test]
    fn an_over_long_handle_is_an_error_not_a_broken_button() {
        let t = builtins();
        let mut v = sample_approval(GateKind::ManualGate);
        v.handle = "x".repeat(2_001);
        let e = t.approval(&v).unwrap_err().to_string();
        assert!(
            e.contains("built-in approval.json.j2") && e.contains("button value"),
            "{e}"
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

    fn actions_blocks(blocks: &[Value]) -> Vec<&Value> {
        blocks.iter().filter(|b| b["type"] == "actions").collect()
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
                        "strands_edit",
                        "strands_trust"
                    ]
                );
            } else {
                assert_eq!(ids, ["strands_approve", "strands_reject", "strands_edit"]);
            }
            assert_eq!(els[0]["style"], "primary");
            assert_eq!(els[1]["style"], "danger");
            assert!(els[1]["confirm"]["text"]["text"]
                .as_str()
                .unwrap()
                .contains("deploy_api"));
            assert_eq!(els[2]["text"]["text"], "Edit arguments");
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
        decide_call(&mut s, 1, Decision::Trust, approved());
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

    #[test]
    fn the_edit_modal_is_prefilled() {
        let t = builtins();
        let v = samples()
            .modals
            .into_iter()
            .find(|m| m.kind == "edit")
            .unwrap();
        let view = t.modal(&v).unwrap();
        assert_eq!(view["callback_id"], "strands_edit");
        assert_eq!(view["submit"]["text"], "Approve");
        let input = view["blocks"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(input["block_id"], "feedback");
        assert_eq!(input["optional"], false);
        assert_eq!(
            input["element"]["initial_value"],
            "{\n  \"path\": \"/v1/rollout\"\n}"
        );
        let mut long = v.clone();
        long.initial_value = Some("x".repeat(INITIAL_VALUE_MAX + 1));
        assert!(t
            .modal(&long)
            .unwrap_err()
            .to_string()
            .contains("initial_value"));
    }

    #[test]
    fn the_tool_approval_template_can_be_overridden() {
        let minimal = r#"[{"type": "section", "text": {"type": "mrkdwn", "text": {{ ("TOOLS " ~ agent)|mrkdwn(100)|tojson }}}}]"#;
        let dir = dir_with(TOOL_APPROVAL, minimal);
        let t = Templates::load(Some(dir.path())).unwrap();
        let v = ToolApprovalView::from_session(
            &tool_session(vec![tool_call(1, "deploy_api", json!({}), true)]),
            "tools#3",
        )
        .unwrap();
        assert_eq!(
            t.tool_approval(&v).unwrap()[0]["text"]["text"],
            "TOOLS deployer"
        );
        assert_eq!(t.origin(APPROVAL), "built-in approval.json.j2");
        let e = load_error(
            TOOL_APPROVAL,
            r#"[{"type": "header", "text": {"type": "plain_text", "text": {{ ("x" * 200)|tojson }}}}]"#,
        );
        assert!(e.contains("header text ≤ 150"), "{e}");
    }

    // ---- overrides

    fn dir_with(name: &str, text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
        dir
    }

    const MINIMAL_APPROVAL: &str = r#"[
      {"type": "header", "text": {"type": "plain_text", "text": {{ ("OVERRIDE " ~ workflow)|truncate_chars(150)|tojson }}}},
      {"type": "actions", "block_id": "gate", "elements": [
        {"type": "button", "action_id": "strands_approve", "text": {"type": "plain_text", "text": "OK"}, "value": {{ handle|tojson }}}
      ]}
    ]"#;

    #[test]
    fn an_override_replaces_only_its_builtin() {
        let dir = dir_with(APPROVAL, MINIMAL_APPROVAL);
        std::fs::write(dir.path().join("README.j2"), "ignored, with a warning").unwrap();
        let t = Templates::load(Some(dir.path())).unwrap();
        let blocks = t.approval(&sample_approval(GateKind::ManualGate)).unwrap();
        assert_eq!(header_text(&blocks), "OVERRIDE deploy-service");
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            t.origin(APPROVAL),
            dir.path().join(APPROVAL).display().to_string()
        );
        // The others are still the built-ins.
        assert_eq!(t.origin(DECIDED), "built-in decided.json.j2");
        let d = t.decided(&samples().decided[0]).unwrap();
        assert!(header_text(&d).starts_with("Approval needed"));
    }

    fn load_error(name: &str, text: &str) -> String {
        let dir = dir_with(name, text);
        let e = Templates::load(Some(dir.path())).unwrap_err().to_string();
        let path = dir.path().join(name).display().to_string();
        assert!(e.contains(&path), "error does not name {path}: {e}");
        e
    }

    #[test]
    fn a_syntax_error_names_the_file_and_line() {
        let e = load_error(PROGRESS, "[\n  {{ oops( }}\n]");
        assert!(e.contains("progress.json.j2:2"), "{e}");
    }

    #[test]
    fn invalid_json_names_the_file() {
        let e = load_error(
            APPROVAL,
            r#"[{"type": "header", "text": {"type": "plain_text", "text": "x"}},]"#,
        );
        assert!(e.contains("did not render valid JSON"), "{e}");
        let e = load_error(MODAL, r#"[]"#);
        assert!(e.contains("view"), "{e}");
        let e = load_error(PROGRESS, r#"{"blocks": []}"#);
        assert!(e.contains("not an array of blocks"), "{e}");
    }

    #[test]
    fn a_broken_limit_names_the_file_and_the_limit() {
        let long = "x".repeat(151);
        let e = load_error(
            PROGRESS,
            &format!(
                r#"[{{"type": "header", "text": {{"type": "plain_text", "text": "{long}"}}}}]"#
            ),
        );
        assert!(
            e.contains("block 0 (header)") && e.contains("header text ≤ 150"),
            "{e}"
        );
    }

    #[test]
    fn a_limit_broken_only_by_some_input_fails_at_render_naming_the_file() {
        let unsafe_prompt =
            r#"[{"type": "section", "text": {"type": "mrkdwn", "text": {{ prompt|tojson }}}}]"#;
        let dir = dir_with(APPROVAL, unsafe_prompt);
        let t = Templates::load(Some(dir.path())).unwrap();
        let mut v = sample_approval(GateKind::ManualGate);
        v.prompt = "p".repeat(5_000);
        let e = t.approval(&v).unwrap_err();
        assert!(matches!(e, Error::Runtime(_)));
        let e = e.to_string();
        assert!(
            e.contains(&dir.path().join(APPROVAL).display().to_string()),
            "{e}"
        );
        assert!(e.contains("section text ≤ 3000"), "{e}");
    }

    #[test]
    fn values_printed_without_tojson_are_still_json_escaped() {
        let sloppy = r#"[{"type": "section", "text": {"type": "mrkdwn", "text": {{ prompt|mrkdwn(3000) }}}}]"#;
        let dir = dir_with(APPROVAL, sloppy);
        let t = Templates::load(Some(dir.path())).unwrap();
        let mut v = sample_approval(GateKind::ManualGate);
        v.prompt = "say \"hi\"\n<!channel>".into();
        let blocks = t.approval(&v).unwrap();
        assert_eq!(blocks[0]["text"]["text"], "say \"hi\"\n&lt;!channel&gt;");
    }

    #[test]
    fn blocks_slack_morphism_cannot_read_are_refused() {
        let e = load_error(
            PROGRESS,
            r#"[{"type": "sektion", "text": {"type": "mrkdwn", "text": "x"}}]"#,
        );
        assert!(e.contains("slack-morphism"), "{e}");
        // A known type with a body of the wrong shape lands in slack-morphism's
        // `Unknown`, which is refused too.
        let e = load_error(
            PROGRESS,
            r#"[{"type": "divider", "block_id": "d"}, {"type": "image", "alt_text": "x", "image_url": "not a url"}]"#,
        );
        assert!(
            e.contains("block 1 (image)") && e.contains("slack-morphism"),
            "{e}"
        );
    }

    #[test]
    fn runaway_templates_run_out_of_fuel() {
        let e = load_error(
            PROGRESS,
            "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}[]",
        );
        assert!(e.to_lowercase().contains("fuel"), "{e}");
    }

    #[test]
    fn a_missing_directory_or_unreadable_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let e = Templates::load(Some(&missing)).unwrap_err().to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        std::fs::create_dir(dir.path().join(APPROVAL)).unwrap();
        let e = Templates::load(Some(dir.path())).unwrap_err().to_string();
        assert!(
            e.contains(&dir.path().join(APPROVAL).display().to_string()),
            "{e}"
        );
    }
}
