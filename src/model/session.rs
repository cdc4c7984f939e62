//! A run's durable state: everything needed to continue it in another
//! process, days later, exactly where it stopped.
//!
//! A session is written after every step (see `store`); the engine only ever
//! changes it in memory and hands it to the store to checkpoint.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

use super::conversation::{Message, Risk, ToolCall, ToolResult, Usage};
use super::gate::{Answer, OpenGate, Position};
use super::record::StepRecord;

/// Who asked to cancel a running run, how and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRequest {
    pub by: String,
    /// `cli`, `api`, `web`.
    pub via: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Executing, or interrupted while executing (a crash): `strands resume ID` continues it.
    Running,
    /// Waiting at a human gate.
    Paused,
    Completed,
    Failed,
    /// A human (or a timeout fallback) rejected it at a gate.
    Rejected,
    /// An operator cancelled it while it was running (`sessions cancel`):
    /// it stopped at its next checkpoint.
    Cancelled,
}

impl Status {
    /// Every status, in the order listings and counters show them.
    pub const ALL: [Status; 6] = [
        Status::Running,
        Status::Paused,
        Status::Completed,
        Status::Failed,
        Status::Rejected,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Rejected => "rejected",
            Status::Cancelled => "cancelled",
        }
    }
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Status::Completed | Status::Failed | Status::Rejected | Status::Cancelled
        )
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Status::Running,
            "paused" => Status::Paused,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "rejected" => Status::Rejected,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-pattern progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "pattern", rename_all = "snake_case")]
pub enum PatternState {
    Chain {
        /// Index of the next step to run.
        next: usize,
        /// One slot per spec step; `None` until the step has run.
        steps: Vec<Option<StepRecord>>,
    },
    Workflow {
        /// Finished tasks by id.
        tasks: BTreeMap<String, StepRecord>,
    },
    Parallel {
        /// One slot per step of each branch, by branch id.
        branches: BTreeMap<String, Vec<Option<StepRecord>>>,
        reduce: Option<StepRecord>,
    },
    Routing(super::pattern::routing::State),
    EvaluatorOptimizer(super::pattern::evaluator::State),
    OrchestratorWorkers(super::pattern::orchestrator::State),
    Graph(super::pattern::graph::State),
}

/// One event in a gate's life, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateEvent {
    pub gate: String,
    pub instance: u64,
    pub asked_at: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub what: GateEventKind,
}

// Nearly every event is an answer: boxing it would only add an allocation
// to the common case.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum GateEventKind {
    /// A human (or timeout/auto-approve) answered.
    Answered { answer: Answer, waited_ms: u64 },
    /// The gate's condition was false; it was not asked.
    Skipped { condition: String },
}

/// Why a run failed, with the exit code it maps to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

/// Where a run's trace starts: the ids of its first `run` span (W3C hex),
/// which the spans of later processes are children of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRef {
    pub trace_id: String,
    pub span_id: String,
    /// Whether that span was sampled (exported): later spans follow its
    /// choice.
    #[serde(default = "sampled")]
    pub sampled: bool,
}

fn sampled() -> bool {
    true
}

/// The session format this build writes. Older formats are read
/// (`super::wire`) and written back in this one.
pub const SESSION_FORMAT: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// [`SESSION_FORMAT`] when written by this build.
    pub format: u32,
    pub id: String,
    pub workflow: String,
    pub spec_path: String,
    pub spec_hash: String,
    /// The spec text the run started with; resumes run this, not the file.
    pub spec_snapshot: String,
    pub pattern: String,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Who started the run.
    pub started_by: String,
    pub variables: Map<String, Value>,
    pub state: PatternState,
    /// Every gate waiting for a human, by handle (`id#instance`): one,
    /// or several when parallel branches all wait at once; each is
    /// answered on its own, in any order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gates: BTreeMap<String, OpenGate>,
    /// An answer recorded for an open gate but not yet carried out (the
    /// process may die between recording and continuing); applied first
    /// on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingAnswer>,
    /// Feedback from the latest `modify`, visible as `human_feedback`.
    #[serde(default)]
    pub human_feedback: Option<String>,
    /// The latest gate answer, visible as `hitl_response`.
    #[serde(default)]
    pub hitl_response: Option<String>,
    /// Every gate asked, skipped or answered.
    pub history: Vec<GateEvent>,
    /// How many gates have been opened (the next instance number).
    pub gates_opened: u64,
    /// Token usage per agent.
    pub usage: BTreeMap<String, Usage>,
    /// The final output, when completed.
    pub output: Option<String>,
    /// Artifact files written on completion.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// Where artifacts go (`--out`).
    pub out_dir: String,
    /// Existing artifact files may be replaced (`run --force`; runs
    /// started by `strands serve`). Without it a file already there stops
    /// the run before it is written, and `resume ID --force` writes it.
    #[serde(default)]
    pub overwrite_artifacts: bool,
    /// The directory the run was started in: relative
    /// `context_policy.notes.file` paths lead there, as in strands-cli
    /// (which resolves them against its working directory).
    #[serde(default)]
    pub work_dir: Option<String>,
    pub failure: Option<Failure>,
    /// Where a run started from a chat channel came from (the Slack bot).
    #[serde(default)]
    pub origin: Option<Origin>,
    /// An agent step in the middle of a tool-calling conversation.
    #[serde(default)]
    pub agent_turn: Option<AgentTurn>,
    /// Tools a human trusted for the rest of this run (`trust` answers).
    #[serde(default)]
    pub trusted_tools: BTreeSet<String>,
    /// `hitl.gates` triggers already fired or checked (`id` for one-shot
    /// budgets, `id@position` per step).
    #[serde(default)]
    pub triggers_fired: BTreeSet<String>,
    /// The `final_response` gate approved the output.
    #[serde(default)]
    pub final_approved: bool,
    /// Digests of calls a human rejected → what the model was told. The same
    /// call is not proposed to a human again in this run without new input.
    #[serde(default)]
    pub denied_calls: BTreeMap<String, String>,
    /// Positions (`steps[1]`, `branches.a.steps[0]`) whose model request
    /// was sent and not yet answered, as of the last checkpoint. A process
    /// that dies with requests in flight cannot take them back: recovery
    /// sends them again and says so (model calls are at-least-once; tool
    /// calls, by `CallState::Running`, at-most-once).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub in_flight: BTreeSet<String>,
    /// An operator asked to cancel this running run (`sessions cancel`):
    /// written by the canceller with a compare-and-swap, read by the
    /// engine that drives the run at its next checkpoint (and while it
    /// waits on a model), which then ends it `cancelled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<CancelRequest>,
    /// The run's trace, when traces were on as it started
    /// (`crate::traces`): later processes continue it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
    /// Store revision, bumped by every write (compare-and-swap).
    pub rev: u64,
    /// Audit events waiting to be appended with the next write of this
    /// session (in the same transaction). Never stored with the session.
    #[serde(skip)]
    pub audit: Vec<crate::audit::AuditEvent>,
    /// Events waiting to be written with the next write of this session
    /// (in the same transaction, numbered by the store). Never stored with
    /// the session.
    #[serde(skip)]
    pub events: Vec<super::event::EventKind>,
    /// Timers of gates that just opened, by gate handle, armed with the
    /// next write of this session (in the same transaction, once per gate
    /// asking). Never stored with the session.
    #[serde(skip)]
    pub arm: Vec<(String, Vec<super::timer::Timer>)>,
}

/// An agent step that is calling tools: the conversation so far and the
/// calls of the model's latest turn. Completed results are kept, so a resume
/// never calls the model again for a turn it already answered and never runs
/// a finished call twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentTurn {
    pub position: Position,
    pub agent: String,
    pub system: String,
    /// The conversation after the system prompt.
    pub messages: Vec<Message>,
    /// Model calls made so far for this step.
    pub turns: u32,
    /// The calls of the latest assistant message, in order.
    pub calls: Vec<PendingCall>,
}

impl AgentTurn {
    pub fn waiting(&self) -> impl Iterator<Item = &PendingCall> {
        self.calls.iter().filter(|c| c.state == CallState::Waiting)
    }
}

/// One tool call and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    pub call: ToolCall,
    /// SHA-256 of the tool name and the exact arguments (`tools::digest`).
    pub digest: String,
    /// What the human is shown, when the call needs approval.
    pub request: Option<ApprovalRequest>,
    pub state: CallState,
    /// The grant ([`super::grant::Grant`]) that let this call run without
    /// asking, by id: its `tool_run` audit entry points to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

/// What an approval request says about a call (seed 001 §2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The rendered `approval_prompt`, or a default.
    pub prompt: String,
    /// What the call would do.
    pub description: String,
    pub reversible: bool,
    pub risk: Risk,
    /// Whether a `trust` answer is allowed for this tool.
    pub trustable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CallState {
    /// Waiting for a human.
    Waiting,
    /// May run: approved by a human or by policy. `digest` is what was approved.
    Approved { by: String, digest: String },
    /// A human said no; the model reads `denied by WHO: REASON` (a Slack
    /// user as `<@U…>`).
    Rejected { by: String, reason: Option<String> },
    /// Started; if the process dies now the call is not run again (at most once).
    Running,
    /// Its MCP server asked a person for input while it ran: it waits at
    /// the gate of the round without a reply, or — every round answered —
    /// is made again with the replies (`super::elicitation`).
    Asking {
        elicitation: super::elicitation::Elicitation,
    },
    /// Finished (or refused by policy): the result the model reads.
    Done { result: ToolResult },
}

/// Where a run was started from in a chat tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub channel: String,
    pub user: String,
    /// Where approval messages go for this run.
    pub approval_channel: String,
}

/// An answer recorded for an open gate, waiting to be carried out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingAnswer {
    /// The gate's handle (`id#instance`).
    pub gate: String,
    pub answer: Answer,
}

/// A message that asked for a gate's answer in a chat channel (or why
/// posting it failed). Kept by the store beside the session, not in it:
/// the run never reads it, and a post must not race the engine's
/// checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// The gate handle (`id#instance`) the message is about.
    pub gate: String,
    pub channel: String,
    /// The message's `ts`, once posted.
    pub ts: Option<String>,
    /// The first message's `ts`: progress goes into its thread.
    pub thread_ts: Option<String>,
    pub at: DateTime<Utc>,
    /// Why the last attempt to post failed, if it did.
    pub error: Option<String>,
    /// `(channel, ts)` of the copies sent as direct messages to the gate's
    /// approvers (`notify: dm`); indexed like the message itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<(String, String)>,
}

/// What an approval message asks about: a click finds its session and gate
/// by the message's channel and `ts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageTarget {
    pub session: String,
    /// The gate handle (`id#instance`) the message was posted for.
    pub gate: String,
}

impl Notification {
    /// What the store keys this record by within its session: the gate
    /// handle for Slack's message, `<handle>@teams` for a Teams card — each
    /// room asking for the same gate keeps its own record (with Slack and
    /// Teams both on, a run started from the CLI is asked in both).
    pub fn record_key(&self) -> String {
        match super::Place::parse(&self.channel) {
            super::Place::Teams(_) => format!("{}@teams", self.gate),
            super::Place::Email(_) => format!("{}@email", self.gate),
            super::Place::Slack(_) => self.gate.clone(),
        }
    }
}

impl Session {
    /// The run's trace id, when it is traced.
    pub fn trace_id(&self) -> Option<&str> {
        self.trace.as_ref().map(|t| t.trace_id.as_str())
    }

    /// Gives the audit events waiting for this session's next write its
    /// trace id (those that have none).
    pub fn stamp_audit(&mut self) {
        if let Some(t) = &self.trace {
            for ev in self.audit.iter_mut().filter(|e| e.trace_id.is_none()) {
                ev.trace_id = Some(t.trace_id.clone());
            }
        }
    }

    /// Every open gate, in the order they were opened.
    pub fn open_gates(&self) -> impl Iterator<Item = &OpenGate> {
        let mut gates: Vec<&OpenGate> = self.gates.values().collect();
        gates.sort_by_key(|g| (g.order, g.instance));
        gates.into_iter()
    }

    /// The gate shown first: the earliest open one. With one gate open,
    /// the gate an answer without `--gate` is for.
    pub fn first_gate(&self) -> Option<&OpenGate> {
        self.gates.values().min_by_key(|g| (g.order, g.instance))
    }

    /// The instance the next asking of gate `id` gets: one more than any
    /// asking of it so far (answered, skipped or open), so handles count
    /// per gate — `review#1`, then `review#2` after a modify — and stay
    /// unique in sessions whose earlier gates were numbered session-wide.
    pub fn next_instance(&self, id: &str) -> u64 {
        let asked = self
            .history
            .iter()
            .filter(|e| e.gate == id)
            .map(|e| e.instance);
        let open = self
            .gates
            .values()
            .filter(|g| g.id == id)
            .map(|g| g.instance);
        asked.chain(open).max().unwrap_or(0) + 1
    }

    /// The open gate with this handle (`id#instance`).
    pub fn open_gate(&self, handle: &str) -> Option<&OpenGate> {
        self.gates.get(handle)
    }

    /// The open gate with this handle, to change it.
    pub fn open_gate_mut(&mut self, handle: &str) -> Option<&mut OpenGate> {
        self.gates.get_mut(handle)
    }

    /// The handle of the open gate `want` names: its handle, or its id
    /// when exactly one open gate has that id.
    pub fn find_gate(&self, want: &str) -> Option<String> {
        if self.gates.contains_key(want) {
            return Some(want.to_string());
        }
        let mut by_id = self.gates.values().filter(|g| g.id == want);
        match (by_id.next(), by_id.next()) {
            (Some(g), None) => Some(g.handle()),
            _ => None,
        }
    }

    /// The gate the pending answer is for.
    pub fn pending_gate(&self) -> Option<&OpenGate> {
        self.pending.as_ref().and_then(|p| self.gates.get(&p.gate))
    }

    pub fn total_usage(&self) -> Usage {
        let mut u = Usage::default();
        for v in self.usage.values() {
            u.add(*v);
        }
        u
    }

    /// Milliseconds spent waiting for humans over the whole run.
    pub fn human_wait_ms(&self) -> u64 {
        self.history
            .iter()
            .map(|e| match &e.what {
                GateEventKind::Answered { waited_ms, .. } => *waited_ms,
                GateEventKind::Skipped { .. } => 0,
            })
            .sum()
    }

    pub fn summary(&self) -> Summary {
        Summary {
            id: self.id.clone(),
            workflow: self.workflow.clone(),
            status: self.status,
            created_at: self.created_at,
            updated_at: self.updated_at,
            gate: self.first_gate().map(|g| g.id.clone()),
            prompt: self.first_gate().map(|g| g.prompt.clone()),
        }
    }
}

/// The small record `sessions list` reads, kept beside each session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub id: String,
    pub workflow: String,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub gate: Option<String>,
    pub prompt: Option<String>,
}

impl Summary {
    /// Where a page that ends with this summary resumes: `{created nanos}_{id}`.
    pub fn cursor(&self) -> String {
        format!(
            "{}_{}",
            self.created_at.timestamp_nanos_opt().unwrap_or_default(),
            self.id
        )
    }
}

/// The (created time, id) a [`Summary::cursor`] names; `None` when `c` is
/// not one.
pub fn parse_cursor(c: &str) -> Option<(DateTime<Utc>, String)> {
    let (nanos, id) = c.split_once('_')?;
    let nanos: i64 = nanos.parse().ok()?;
    (!id.is_empty()).then(|| (DateTime::from_timestamp_nanos(nanos), id.to_string()))
}
