//! Workflow specs: the strands-cli v0 format plus the seed's `manual_gate`.
//!
//! [`load`] reads a file, [`parse`] a text; both return a validated [`Spec`]
//! or every problem found, each at file:line:column (exit 3). Patterns that
//! strands-cli has but this build does not run yet are recognised and refused
//! with exit 18, never with a parse error.
//!
//! Validation depends on the text and the [`Limits`] it is given, nothing
//! else: it does not read the environment (`crate::config` reads it once
//! and passes the limits down) and keeps no state between calls.
//!
//! The types here are what the engine runs: already checked, no `Option`s
//! that validation has ruled out.

pub mod context;
pub mod graph;
pub mod network;
mod raw;
pub mod refs;
pub mod routing;
pub mod rules;
pub mod timeout;
mod validate;

pub use crate::model::{Fallback, GateKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Patterns strands-cli defines; only some run in this build.
pub const SUPPORTED_PATTERNS: &[&str] = KNOWN_PATTERNS;
pub const KNOWN_PATTERNS: &[&str] = &[
    "chain",
    "workflow",
    "parallel",
    "routing",
    "evaluator_optimizer",
    "orchestrator_workers",
    "graph",
];

/// A validated spec, ready to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub path: PathBuf,
    /// The file's text, snapshotted into sessions so a resume runs what was started.
    pub text: String,
    /// SHA-256 of `text`, hex.
    pub hash: String,
    pub name: String,
    pub runtime: RuntimeSpec,
    pub agents: BTreeMap<String, AgentSpec>,
    pub inputs: Vec<InputDecl>,
    /// `inputs.values` from the file.
    pub input_values: Map<String, Value>,
    pub pattern: PatternSpec,
    pub artifacts: Vec<ArtifactSpec>,
    pub tools: ToolsConfig,
    /// `security.redact` patterns plus the built-in secret patterns: applied
    /// to what gates show and what the audit log keeps.
    pub redactor: crate::audit::redact::Redactor,
    pub approval: ApprovalDefaults,
    /// seed 001's preset (tool policy) and run-triggered gates.
    pub hitl: HitlSpec,
    /// `context_policy`: notes, just-in-time retrieval tools, compaction.
    pub context: context::ContextPolicy,
    /// Problems that do not stop a run (e.g. a provider this build lacks is only
    /// refused when a run needs it).
    pub warnings: Vec<String>,
    /// Variables templates read that no input declares (see [`Need`]).
    pub needs: Vec<Need>,
}

#[derive(Debug, Clone)]
pub struct RuntimeSpec {
    pub provider: String,
    pub model_id: Option<String>,
    pub host: Option<String>,
    /// `runtime.region`: the AWS region `bedrock` calls.
    pub region: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    /// `runtime.max_parallel`, at least 1.
    pub max_parallel: usize,
    /// `runtime.budgets.max_tokens`.
    pub budget_max_tokens: Option<u64>,
    /// `runtime.budgets` as written (templates read every key, enforced
    /// or not, as strands-cli's do).
    pub budgets: Map<String, Value>,
    /// `runtime.failure_policy` as written (templates only).
    pub failure_policy: Option<Value>,
}

#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub id: String,
    /// System prompt template.
    pub prompt: String,
    pub provider: Option<String>,
    pub model_id: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Tools the agent may call, with their approval settings.
    pub tools: Vec<AgentTool>,
    /// seed 003: tools that run without approval (`*`, `!name` excluded).
    pub allowed_tools: Option<Vec<String>>,
    /// seed 003: `trust` answers are allowed.
    pub enable_trust: bool,
    /// Model calls allowed for one step with tools.
    pub max_turns: u32,
}

/// A tool an agent may call.
#[derive(Debug, Clone)]
pub struct AgentTool {
    /// A built-in name, an http executor id, or an MCP server id (all of
    /// that server's tools, named `{id}__{tool}`).
    pub name: String,
    pub policy: ToolPolicy,
}

/// Approval settings for one tool (seed 000 `require_approval` /
/// `approval_prompt`, seed 001 `destructive` / `reversible` / risk, and
/// `approval_condition`).
#[derive(Debug, Clone, Default)]
pub struct ToolPolicy {
    pub require_approval: Option<bool>,
    /// Template over `args`, `tool`, `agent`.
    pub approval_prompt: Option<String>,
    /// Template or expression over `args`: ask only when true.
    pub approval_condition: Option<String>,
    pub destructive: bool,
    pub reversible: Option<bool>,
    pub risk: Option<crate::model::Risk>,
}

/// The top-level `tools` section, resolved.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    pub workspace: PathBuf,
    pub shell: bool,
    pub timeout_secs: u64,
    pub max_output_bytes: usize,
    pub http_executors: Vec<HttpExecutorSpec>,
    /// `tools.mcp`: MCP servers whose tools agents may call.
    pub mcp: Vec<McpServerSpec>,
    /// `tools.network.allow`: destinations HTTP tools may reach although
    /// internal, and that `http_request` may call without asking.
    pub network_allow: Vec<network::Rule>,
    /// The built-ins `tools.python` names (strands-cli's native tools):
    /// what an agent without a `tools` list gets, as in strands-cli.
    pub python_tools: Vec<String>,
    /// `context_policy.retrieval.jit_tools`: what every agent gets.
    pub jit_tools: Vec<String>,
    /// `file:line` where the spec first uses `tavily_search`, which needs
    /// `TAVILY_API_KEY` (checked by the CLI, which reads the environment).
    pub tavily_at: Option<String>,
}

/// One `tools.mcp` entry: an MCP server. An agent that lists its `id` gets
/// every tool the server lists, named `{id}__{tool}`; the policy applies to
/// all of them (the agent's own entry wins where both say something).
#[derive(Debug, Clone)]
pub struct McpServerSpec {
    /// Letters, digits, `-` and `_` (never `__`, never a trailing `_`), at
    /// most [`MCP_ID_MAX`] characters, so `{id}__` always splits cleanly.
    pub id: String,
    pub transport: McpTransport,
    pub description: Option<String>,
    pub policy: ToolPolicy,
}

/// The longest MCP server id: leaves room for tool names within the 64
/// characters model APIs allow.
pub const MCP_ID_MAX: usize = 32;

/// How to reach an MCP server.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum McpTransport {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the small inherited environment; values may be secrets.
        env: BTreeMap<String, String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request; values are secrets.
        headers: BTreeMap<String, String>,
    },
}

/// Environment and header values may be secrets: `Debug` shows only names.
impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpTransport::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HttpExecutorSpec {
    pub id: String,
    pub base_url: String,
    pub headers: BTreeMap<String, String>,
    pub timeout_secs: Option<u64>,
    pub description: Option<String>,
    pub policy: ToolPolicy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
}

/// A variable a template reads that nothing in the spec defines: the run
/// needs it as `--var` (asked for on a terminal) before the first model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub name: String,
    /// `file:line` of its first use.
    pub at: String,
    /// Which template ("the input of steps[0]").
    pub what: String,
}

#[derive(Debug, Clone)]
pub struct InputDecl {
    pub name: String,
    pub ty: InputType,
    pub required: bool,
    pub default: Option<Value>,
    pub allowed: Option<Vec<Value>>,
}

#[derive(Debug, Clone)]
pub enum PatternSpec {
    Chain {
        steps: Vec<ChainStep>,
    },
    Workflow {
        tasks: Vec<Task>,
        layers: Vec<Vec<usize>>,
    },
    Parallel(ParallelSpec),
    Routing(RoutingSpec),
    EvaluatorOptimizer(EvaluatorSpec),
    OrchestratorWorkers(OrchestratorSpec),
    Graph(GraphSpec),
}

impl PatternSpec {
    pub fn name(&self) -> &'static str {
        match self {
            PatternSpec::Chain { .. } => "chain",
            PatternSpec::Workflow { .. } => "workflow",
            PatternSpec::Parallel(_) => "parallel",
            PatternSpec::Routing(_) => "routing",
            PatternSpec::EvaluatorOptimizer(_) => "evaluator_optimizer",
            PatternSpec::OrchestratorWorkers(_) => "orchestrator_workers",
            PatternSpec::Graph(_) => "graph",
        }
    }
}

/// `parallel`: branches run concurrently (up to `runtime.max_parallel`),
/// each a little chain; `reduce` runs (or asks) once every branch is done.
#[derive(Debug, Clone)]
pub struct ParallelSpec {
    pub branches: Vec<Branch>,
    pub reduce: Option<ChainStep>,
}

#[derive(Debug, Clone)]
pub struct Branch {
    pub id: String,
    pub steps: Vec<ChainStep>,
}

/// `routing`: a router agent picks a route (`{"route": "<name>"}`), a
/// human may review the pick, then the route's steps run as a chain.
#[derive(Debug, Clone)]
pub struct RoutingSpec {
    pub router: AgentStep,
    /// Re-asks of the router after a reply that names no valid route.
    pub max_retries: u32,
    /// `router.review_router`: answered `approved` or `route:<name>`.
    pub review: Option<GateSpec>,
    /// In file order.
    pub routes: Vec<Route>,
}

#[derive(Debug, Clone)]
pub struct Route {
    pub name: String,
    pub steps: Vec<ChainStep>,
}

/// `evaluator_optimizer`: the producer drafts, the evaluator scores
/// (`{score, issues, fixes}`), the producer revises until `min_score` or
/// `max_iters`; humans may stand between iterations.
#[derive(Debug, Clone)]
pub struct EvaluatorSpec {
    /// The producer agent; its first input is its own prompt.
    pub producer: AgentStep,
    pub evaluator: AgentStep,
    /// 0–100.
    pub min_score: f64,
    pub max_iters: u32,
    pub revise_prompt: Option<String>,
    /// Asked after each evaluation that does not end the loop: `continue` / `stop`.
    pub review_gate: Option<GateSpec>,
    /// The seed's quality gate: `accept.manual_review`.
    pub manual_review: Option<ManualReview>,
}

/// `accept.manual_review {after_iterations, prompt, condition}`: asked after
/// an evaluation once `after_iterations` iterations have run (and the
/// condition holds); answered approve-current / continue / reject / feedback.
#[derive(Debug, Clone)]
pub struct ManualReview {
    pub after_iterations: u32,
    /// The gate (its `condition` is the manual review's condition).
    pub gate: GateSpec,
}

/// `orchestrator_workers`: the orchestrator plans subtasks (JSON), workers
/// run them in parallel, then an optional reduce and writeup.
#[derive(Debug, Clone)]
pub struct OrchestratorSpec {
    pub orchestrator: AgentStep,
    /// `limits.max_workers`: subtasks taken from a plan (and run at once).
    pub max_workers: usize,
    /// `limits.max_rounds`: plans the orchestrator may make (re-plans after
    /// review feedback count).
    pub max_rounds: u32,
    /// The worker agent; the subtask is its input unless `input` is set.
    pub worker: AgentStep,
    pub decomposition_review: Option<GateSpec>,
    pub reduce_review: Option<GateSpec>,
    pub reduce: Option<AgentStep>,
    pub writeup: Option<AgentStep>,
}

/// `graph`: nodes (agents or gates) joined by edges; the first node is the
/// entry, a node without outgoing edges ends the run.
#[derive(Debug, Clone)]
pub struct GraphSpec {
    /// In file order; `nodes[0]` is the entry.
    pub nodes: Vec<GraphNode>,
    /// Outgoing edge by source node id (one per node).
    pub edges: BTreeMap<String, Edge>,
    /// Visits allowed per node.
    pub max_iterations: u32,
}

#[derive(Debug, Clone)]
pub struct GraphNode {
    pub id: String,
    pub body: TaskBody,
}

#[derive(Debug, Clone)]
pub enum Edge {
    /// `to: [ids]`: the first target runs next (strands-cli runs only the first).
    To(Vec<String>),
    /// `choose`: the first `when` that holds, else the `else` entry.
    Choose(Vec<Choice>),
}

#[derive(Debug, Clone)]
pub struct Choice {
    pub when: When,
    pub to: String,
}

#[derive(Debug, Clone)]
pub enum When {
    Else,
    /// A condition, with or without `{{ }}`.
    Condition(String),
}

// Specs are built once and hold a handful of steps: boxing the gate buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum ChainStep {
    Agent(AgentStep),
    Gate(GateSpec),
}

#[derive(Debug, Clone)]
pub struct AgentStep {
    pub agent: String,
    /// Input template; `None` means "the previous response" (or the agent's own prompt first).
    pub input: Option<String>,
    /// Step-local template variables (`vars:`).
    pub vars: Map<String, Value>,
    /// strands-cli's `tool_overrides` (and `worker_template.tools`): the
    /// tools this step offers instead of its agent's.
    pub tools: Option<Vec<AgentTool>>,
}

#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub deps: Vec<String>,
    pub body: TaskBody,
}

// Specs are built once and hold a handful of steps: boxing the gate buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum TaskBody {
    Agent(AgentStep),
    Gate(GateSpec),
}

/// Reminders and escalation of a gate; the Slack bot acts on them
/// (`slack::timers`), the CLI ignores them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateTimers {
    /// Between reminders in the approval thread (`reminder_interval`).
    pub reminder_interval: Option<std::time::Duration>,
    /// Reminders at most (`max_reminders`, default 3).
    pub max_reminders: u32,
    /// One last reminder this long before the timeout, if nobody answered
    /// (`remind_before`; `STRANDS_REMIND_BEFORE_MINUTES` for gates without).
    pub remind_before: Option<std::time::Duration>,
    /// Without an answer this long, the request is re-posted to
    /// `escalation_target` (`escalation_timeout`).
    pub escalation_timeout: Option<std::time::Duration>,
    pub escalation_target: Vec<EscalationTarget>,
}

/// Default `max_reminders` when `reminder_interval` is set.
pub const DEFAULT_MAX_REMINDERS: u32 = 3;

/// Who an escalated request goes to. Stored as `{"kind", "id"}` with the
/// id as specs write it (`U0BOSS`, `teams:<aad>`, `ops`, `teams:19:…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum EscalationTarget {
    /// A person: a Slack user (`U…`/`W…`; mentioned, and sent the request
    /// directly when no channel is named) or a Teams user (`teams:<aad>`;
    /// sent the request 1:1).
    User(crate::model::Approver),
    /// A Slack user group (`S…`): mentioned.
    Group(crate::model::Approver),
    /// A Slack channel id (`C…`/`G…`) or name (without `#`), or a Teams
    /// conversation: the request is posted there.
    Channel(crate::model::Place),
}

impl std::fmt::Display for EscalationTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EscalationTarget::User(a) | EscalationTarget::Group(a) => write!(f, "{a}"),
            EscalationTarget::Channel(p) => write!(f, "{p}"),
        }
    }
}

impl EscalationTarget {
    /// Parses one `escalation_target` entry: `teams:<Entra object ID>` is
    /// a person, `teams:<conversation id>` (Teams' ids have a `:`,
    /// `19:…@thread.tacv2`) a conversation the request is posted in.
    pub fn parse(raw: &str) -> std::result::Result<Self, String> {
        use crate::model::{Approver, Place};
        let t = raw.trim();
        if let Some(name) = t.strip_prefix('#') {
            let ok = !name.is_empty()
                && name.chars().all(|c| {
                    c.is_ascii_lowercase()
                        || c.is_ascii_digit()
                        || "-_.".contains(c)
                        || !c.is_ascii()
                });
            return if ok {
                Ok(EscalationTarget::Channel(Place::Slack(name.to_string())))
            } else {
                Err(format!("`{t}` is not a channel name"))
            };
        }
        match Approver::parse(t) {
            Approver::TeamsUser(rest) if rest.is_empty() => {
                Err(format!("`{t}` names no Teams person or conversation"))
            }
            Approver::TeamsUser(rest) if rest.contains(':') => {
                Ok(EscalationTarget::Channel(Place::Teams(rest)))
            }
            user @ (Approver::TeamsUser(_) | Approver::SlackUser(_)) => {
                Ok(EscalationTarget::User(user))
            }
            group @ Approver::SlackGroup(_) => Ok(EscalationTarget::Group(group)),
            _ if looks_like_channel_id(t) => Ok(EscalationTarget::Channel(Place::Slack(t.to_string()))),
            _ => Err(format!(
                "`{t}` is not a Slack user id (U…), user group id (S…) or channel (C… or #name), nor teams:<Entra object ID or conversation id>"
            )),
        }
    }
}

/// `C…`/`G…` followed by capitals and digits: a Slack channel id.
pub fn looks_like_channel_id(c: &str) -> bool {
    c.len() > 1
        && (c.starts_with('C') || c.starts_with('G'))
        && c.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// A human gate, from either syntax, normalised.
#[derive(Debug, Clone)]
pub struct GateSpec {
    pub id: String,
    pub kind: GateKind,
    pub prompt: String,
    pub context_display: Option<String>,
    /// The answer `fallback_action: default` gives (a `hitl` gate's text; a
    /// manual gate's `approve` or `reject`).
    pub default: Option<String>,
    /// Seconds; `None` (or 0 in the file) means no timeout. At most
    /// [`Limits::max_timeout_secs`].
    pub timeout_secs: Option<u64>,
    pub fallback: Fallback,
    pub condition: Option<String>,
    pub show_preview: bool,
    pub preview_length: usize,
    /// A rejection must carry a reason (the bot asks for it in a modal).
    pub require_reason: bool,
    /// The chat channel whose members approve this gate (the Slack bot).
    pub channel: Option<String>,
    /// Who may answer (the workflow's `security.approvers` when unset).
    /// `None` too when the gate's `approvers:` is a list of rules.
    pub approvers: Option<Vec<crate::model::Approver>>,
    /// `approvers:` as rules (`gate::policy`): the first that
    /// holds decides who answers; empty for a plain list.
    pub rules: Vec<rules::ApprovalRule>,
    pub approvals_required: Option<u32>,
    pub rejections_required: Option<u32>,
    pub allow_self_approval: Option<bool>,
    /// `notify: dm`: each approver named by Slack user id also gets the
    /// request as a direct message, with working buttons (the bot).
    pub notify_dm: bool,
    /// `notify: email`: each approver also gets the request by e-mail.
    pub notify_email: bool,
    /// Reminders and escalation (the bot).
    pub timers: GateTimers,
    /// Business hours (`calendar`, `when_closed`, `auto_approve`,
    /// `timers_outside_hours`, a `timeout: … business`); `None`: every
    /// hour counts.
    pub hours: Option<HoursSpec>,
    /// `form:` (manual gates): the values approving fills in.
    pub form: Option<crate::model::form::Form>,
    /// `allow_trust: true` (manual gates): trust approves too.
    pub allow_trust: bool,
    /// `allow_edit: true` (manual gates): approving with edited arguments
    /// (`Decision::Edit`) approves too.
    pub allow_edit: bool,
    /// `step_up: passkey`: approving takes a passkey assertion
    /// (`crate::model::step_up`).
    pub step_up: Option<crate::model::step_up::StepUp>,
}

/// A gate's business hours as its spec gives them (`crate::model::calendar`);
/// the default is what a gate with no keys of its own keeps (an approval
/// rule's `8h business` on the service's default calendar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoursSpec {
    /// The service calendar it names; `None`: the one named `default`,
    /// else the only one.
    pub calendar: Option<String>,
    /// `timeout: 8h business`: only business time counts.
    pub business_timeout: bool,
    /// What opening outside hours does (default `wait`).
    pub when_closed: crate::model::WhenClosed,
    /// `auto_approve: {outside_hours: false}` makes this false.
    pub auto_approve_outside_hours: bool,
    /// `timers_outside_hours: true`: reminders and escalations ignore the
    /// calendar.
    pub timers_outside_hours: bool,
}

impl Default for HoursSpec {
    fn default() -> Self {
        HoursSpec {
            calendar: None,
            business_timeout: false,
            when_closed: crate::model::WhenClosed::Wait,
            auto_approve_outside_hours: true,
            timers_outside_hours: false,
        }
    }
}

/// `hitl:` resolved: what the preset asks of tools, and the gates the run
/// itself triggers.
#[derive(Debug, Clone, Default)]
pub struct HitlSpec {
    pub preset: Option<String>,
    /// Every tool call asks (presets strict and paranoid).
    pub ask_all_tools: bool,
    /// These tools always ask (preset standard: external tools).
    pub ask_tools: Vec<String>,
    pub triggers: Vec<TriggerSpec>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// Approve the final answer before the run completes.
    FinalResponse,
    /// Pause once when the run's token use passes this.
    Budget { tokens: u64 },
    /// Pause after a step whose JSON output reports `field` below `threshold`.
    Confidence { threshold: f64, field: String },
    /// Pause after a step when the condition holds.
    Custom { condition: String },
    /// Approve an orchestrator's plan (takes effect with that pattern).
    PlanApproval,
}

#[derive(Debug, Clone)]
pub struct TriggerSpec {
    pub id: String,
    pub trigger: Trigger,
    pub prompt: String,
    /// Only steps of these agents (all when `None`).
    pub agents: Option<Vec<String>>,
}

/// Workflow-wide approval defaults (`security.approvers`,
/// `security.approvals_required`, `security.allow_self_approval`).
#[derive(Debug, Clone, Default)]
pub struct ApprovalDefaults {
    pub approvers: Vec<crate::model::Approver>,
    /// `security.approvers` as rules: for gates that name no approvers,
    /// and for tool calls.
    pub rules: Vec<rules::ApprovalRule>,
    pub approvals_required: Option<u32>,
    pub allow_self_approval: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct ArtifactSpec {
    pub path: String,
    pub from: String,
}

/// The limits validation applies, passed to [`load`] and [`parse`]: a plain
/// value, so validating a text gives the same answer wherever it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The longest gate timeout, and the longest reminder interval and
    /// escalation timeout, in seconds.
    pub max_timeout_secs: u64,
    /// The service's business-hours calendars, by name: a gate naming
    /// another (or using business time when there is none to pick) is an
    /// error. `None`: not known here (`strands validate` without a service
    /// file), so such a gate is only a warning.
    pub calendars: Option<std::sync::Arc<[String]>>,
}

/// Gates wait at most this many days unless the limits say otherwise.
const DEFAULT_MAX_TIMEOUT_DAYS: u64 = 7;

impl Default for Limits {
    /// 7 days.
    fn default() -> Self {
        Limits::with_max_timeout_days(None)
    }
}

impl Limits {
    /// `days` as `STRANDS_MAX_TIMEOUT_DAYS` is written: a whole number of
    /// days above 0; anything else (unset, empty, not a number, 0) keeps
    /// the default of 7 days.
    pub fn with_max_timeout_days(days: Option<&str>) -> Self {
        let days = days
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|d| *d > 0)
            .unwrap_or(DEFAULT_MAX_TIMEOUT_DAYS);
        Limits {
            max_timeout_secs: days.saturating_mul(86_400),
            calendars: None,
        }
    }
}

/// Default characters of preview shown at a gate.
pub const DEFAULT_PREVIEW_LENGTH: usize = 500;

/// Reads and validates a spec file within `limits`.
pub fn load(path: &Path, limits: &Limits) -> Result<Spec> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read spec {}", path.display()), e))?;
    parse(&text, path, limits)
}

/// Validates a spec text within `limits`; `path` is used in diagnostics.
pub fn parse(text: &str, path: &Path, limits: &Limits) -> Result<Spec> {
    validate::parse(text, path, limits)
}

/// `./a/b.md` → `a/b.md`: a path a spec names inside a directory (an
/// artifact under `--out`, a notes file); `None` for absolute paths, any
/// `..`, or nothing.
pub fn relative_inside(p: &str) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in Path::new(p.trim()).components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Hex SHA-256 of a text.
pub fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl Spec {
    /// Every gate the pattern declares, in file order.
    pub fn gates(&self) -> Vec<&GateSpec> {
        fn of_steps(steps: &[ChainStep]) -> impl Iterator<Item = &GateSpec> {
            steps.iter().filter_map(|s| match s {
                ChainStep::Gate(g) => Some(g),
                ChainStep::Agent(_) => None,
            })
        }
        match &self.pattern {
            PatternSpec::Chain { steps } => of_steps(steps).collect(),
            PatternSpec::Workflow { tasks, .. } => tasks
                .iter()
                .filter_map(|t| match &t.body {
                    TaskBody::Gate(g) => Some(g),
                    TaskBody::Agent(_) => None,
                })
                .collect(),
            PatternSpec::Parallel(p) => p
                .branches
                .iter()
                .flat_map(|b| of_steps(&b.steps))
                .chain(of_steps(p.reduce.as_slice()))
                .collect(),
            PatternSpec::Routing(p) => p
                .review
                .iter()
                .chain(p.routes.iter().flat_map(|r| of_steps(&r.steps)))
                .collect(),
            PatternSpec::EvaluatorOptimizer(p) => p
                .review_gate
                .iter()
                .chain(p.manual_review.iter().map(|m| &m.gate))
                .collect(),
            PatternSpec::OrchestratorWorkers(p) => p
                .decomposition_review
                .iter()
                .chain(p.reduce_review.iter())
                .collect(),
            PatternSpec::Graph(g) => g
                .nodes
                .iter()
                .filter_map(|n| match &n.body {
                    TaskBody::Gate(g) => Some(g),
                    TaskBody::Agent(_) => None,
                })
                .collect(),
        }
    }

    /// The agent steps' and gates' ids in order, for messages.
    pub fn agent_ids(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }

    /// Merges `inputs.values`, defaults and `--var` overrides into the run's
    /// variables, typed per the input declarations. Missing required inputs
    /// and values of the wrong type are usage errors (exit 2).
    pub fn resolve_variables(&self, overrides: &[(String, String)]) -> Result<Map<String, Value>> {
        let mut vars = Map::new();
        for decl in &self.inputs {
            if let Some(d) = &decl.default {
                vars.insert(decl.name.clone(), d.clone());
            }
        }
        for (k, v) in &self.input_values {
            vars.insert(k.clone(), v.clone());
        }
        vars.extend(self.type_overrides(overrides)?);
        let mut missing = Vec::new();
        for decl in &self.inputs {
            match vars.get(&decl.name) {
                None if decl.required => missing.push(decl.name.clone()),
                Some(v) => {
                    if let Some(allowed) = &decl.allowed {
                        if !allowed.contains(v) {
                            return Err(Error::Usage(format!(
                                "input `{}` is {v}, which is not one of {}",
                                decl.name,
                                Value::Array(allowed.clone())
                            )));
                        }
                    }
                }
                None => {}
            }
        }
        for n in &self.needs {
            if !vars.contains_key(&n.name) {
                missing.push(format!("{} (read by {} at {})", n.name, n.what, n.at));
            }
        }
        if !missing.is_empty() {
            let flags: Vec<String> = missing
                .iter()
                .map(|m| format!("--var {}=...", m.split(' ').next().unwrap_or(m)))
                .collect();
            return Err(Error::Usage(format!(
                "missing required input{}: {} (pass {})",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                flags.join(" ")
            )));
        }
        Ok(vars)
    }
}

impl Spec {
    /// Inputs a run of this spec still lacks given `overrides`: required
    /// inputs without a value, then variables templates read ([`Need`]).
    pub fn missing_inputs(&self, overrides: &[(String, String)]) -> Vec<String> {
        let given =
            |n: &str| overrides.iter().any(|(k, _)| k == n) || self.input_values.contains_key(n);
        let mut out: Vec<String> = self
            .inputs
            .iter()
            .filter(|d| d.required && d.default.is_none() && !given(&d.name))
            .map(|d| d.name.clone())
            .collect();
        out.extend(
            self.needs
                .iter()
                .filter(|n| !given(&n.name))
                .map(|n| n.name.clone()),
        );
        out
    }

    /// Types `--var` values by their input declarations (undeclared ones stay
    /// strings) and checks `enum` lists; no required-input check, so it also
    /// serves answers that override a few variables of a running session.
    pub fn type_overrides(&self, overrides: &[(String, String)]) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for (k, raw) in overrides {
            let decl = self.inputs.iter().find(|d| &d.name == k);
            let value = match decl {
                Some(d) => coerce(raw, d.ty).map_err(|why| {
                    Error::Usage(format!(
                        "--var {k}={raw}: {why} (input `{k}` is {:?})",
                        d.ty
                    ))
                })?,
                None => Value::String(raw.clone()),
            };
            if let Some(allowed) = decl.and_then(|d| d.allowed.as_ref()) {
                if !allowed.contains(&value) {
                    return Err(Error::Usage(format!(
                        "input `{k}` is {value}, which is not one of {}",
                        Value::Array(allowed.clone())
                    )));
                }
            }
            out.insert(k.clone(), value);
        }
        Ok(out)
    }
}

/// Parses one `--var` value into the declared type.
pub fn coerce(raw: &str, ty: InputType) -> std::result::Result<Value, String> {
    match ty {
        InputType::String => Ok(Value::String(raw.to_string())),
        InputType::Integer => raw
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "not an integer".to_string()),
        InputType::Number => {
            let n: f64 = raw.trim().parse().map_err(|_| "not a number".to_string())?;
            serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or_else(|| "not a finite number".to_string())
        }
        InputType::Boolean => match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Ok(Value::Bool(true)),
            "false" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err("not a boolean (true/false)".to_string()),
        },
        InputType::Array | InputType::Object => {
            let v: Value = serde_json::from_str(raw).map_err(|e| format!("not valid JSON: {e}"))?;
            match (ty, &v) {
                (InputType::Array, Value::Array(_)) | (InputType::Object, Value::Object(_)) => {
                    Ok(v)
                }
                _ => Err(format!("JSON is not an {ty:?}").to_lowercase()),
            }
        }
    }
}

/// Splits `k=v` command-line variables.
pub fn parse_var(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests;
