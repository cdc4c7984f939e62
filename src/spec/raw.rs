//! The spec file exactly as written: serde types for the strands-cli v0
//! document, with `deny_unknown_fields` everywhere so a typo is an error, and
//! `Spanned` on every value a later check may need to point at.
//!
//! Nothing here decides what is valid beyond shape; `validate` turns these
//! into the engine's types and reports problems at file:line:column.

use serde::Deserialize;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

pub type S<T> = Spanned<T>;

/// The whole document. `C` is the pattern's config: `IgnoredAny` for the
/// first pass (which only learns the pattern type), a typed config after.
// Some keys are accepted for strands-cli compatibility and not used by this build.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document<C> {
    pub version: S<Value>,
    pub name: S<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<Value>,
    pub runtime: Runtime,
    pub agents: S<BTreeMap<String, Agent>>,
    pub pattern: Pattern<C>,
    pub inputs: Option<Inputs>,
    pub env: Option<S<Value>>,
    pub telemetry: Option<S<Value>>,
    pub context_policy: Option<S<ContextPolicy>>,
    pub skills: Option<S<Value>>,
    pub tools: Option<Tools>,
    pub outputs: Option<Outputs>,
    pub security: Option<S<Value>>,
    /// Ours: seed 001's gate types and presets.
    pub hitl: Option<Hitl>,
}

/// `hitl:`: a preset and extra gates triggered by the run itself.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hitl {
    /// minimal | standard | strict | paranoid (seed 001 §3.3).
    pub preset: Option<S<String>>,
    pub gates: Option<Vec<S<TriggerGate>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerGate {
    /// final_response | budget_based | threshold_based | custom | plan_approval
    #[serde(rename = "type")]
    pub kind: S<String>,
    pub id: Option<String>,
    pub prompt: Option<S<String>>,
    /// budget_based: tokens used by the run.
    pub cost_threshold: Option<f64>,
    /// threshold_based: pause when the step's `field` is below this.
    pub confidence_threshold: Option<f64>,
    /// threshold_based: the JSON field of the step's output (default `confidence`).
    pub field: Option<String>,
    /// custom: a condition over the templates' variables and `response`.
    pub condition: Option<S<String>>,
    /// Only steps of these agents.
    pub agents: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern<C> {
    #[serde(rename = "type")]
    pub kind: S<String>,
    pub config: C,
}

// Some keys are accepted for strands-cli compatibility and not used by this build.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runtime {
    pub provider: S<String>,
    pub model_id: Option<String>,
    pub region: Option<S<String>>,
    pub host: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub max_parallel: Option<usize>,
    pub budgets: Option<S<Map<String, Value>>>,
    pub failure_policy: Option<S<Value>>,
}

// Some keys are accepted for strands-cli compatibility and not used by this build.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// Required unless the agent is an atomic reference (`$ref`).
    pub prompt: Option<S<String>>,
    /// `$ref: FILE` resolved by `spec::refs` into `{ref, agent}`.
    #[serde(rename = "$atomic")]
    pub atomic: Option<S<Value>>,
    pub description: Option<String>,
    /// Tool references: a name (`file_read`, an http executor id, a known
    /// `strands_tools.*` callable) or `{name, require_approval, ...}`.
    pub tools: Option<Vec<S<Value>>>,
    /// seed 003: tools that run without approval; `*` all, `!name` excluded.
    pub allowed_tools: Option<Vec<S<String>>>,
    /// seed 003: a `trust` answer approves a tool for the rest of the run.
    pub enable_trust: Option<bool>,
    /// Model calls allowed for one agent step with tools (default 10).
    pub max_turns: Option<u32>,
    pub provider: Option<S<String>>,
    pub model_id: Option<String>,
    pub inference: Option<Inference>,
    /// Overrides strands-cli allows beside `$ref` (also read inline).
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Contracts of atomic agents: a schema object, or a path to one.
    pub input_schema: Option<S<Value>>,
    pub output_schema: Option<S<Value>>,
}

/// An atomic agent's definition as its file gives it (no spans: errors in it
/// are reported at the `$ref` that brought it in).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtomicAgent {
    pub prompt: String,
    pub description: Option<String>,
    pub tools: Option<Vec<Value>>,
    pub allowed_tools: Option<Vec<String>>,
    pub enable_trust: Option<bool>,
    pub max_turns: Option<u32>,
    pub provider: Option<String>,
    pub model_id: Option<String>,
    pub inference: Option<Inference>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
}

/// `context_policy` (strands-cli's schema: unknown keys are errors).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextPolicy {
    pub compaction: Option<S<Compaction>>,
    pub notes: Option<S<Notes>>,
    pub retrieval: Option<S<Retrieval>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compaction {
    pub enabled: Option<bool>,
    pub when_tokens_over: Option<S<i64>>,
    pub summary_ratio: Option<S<f64>>,
    pub preserve_recent_messages: Option<S<i64>>,
    pub summarization_model: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notes {
    pub file: S<String>,
    pub include_last: Option<S<i64>>,
    pub format: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retrieval {
    pub jit_tools: Option<Vec<S<String>>>,
    /// strands-cli's placeholder: accepted, ignored with a warning.
    pub mcp_servers: Option<S<Vec<String>>>,
}

/// The top-level `tools` section.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tools {
    /// strands-cli's Python callables: refused (or mapped to built-ins).
    pub python: Option<Vec<S<Value>>>,
    pub http_executors: Option<Vec<S<HttpExecutor>>>,
    pub mcp: Option<Vec<S<McpServer>>>,
    /// Ours: the directory file tools are confined to (default `./workspace`).
    pub workspace: Option<String>,
    /// Ours: `shell` may be offered to agents (it is always gated).
    pub shell: Option<bool>,
    /// Ours: per-call time limit for tools, seconds (default 30).
    pub timeout_seconds: Option<u64>,
    /// Ours: largest tool output returned to the model, bytes (default 65536).
    pub max_output_bytes: Option<usize>,
    /// Ours: where HTTP tools may go besides the public internet.
    pub network: Option<Network>,
}

/// `tools.network`: the egress policy's exceptions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Hosts, `*.domain` wildcards, IP addresses and CIDRs that HTTP tools
    /// may reach even when internal, and that `http_request` may call
    /// without a human.
    pub allow: Option<Vec<S<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct HttpExecutor {
    pub id: S<String>,
    pub base_url: S<String>,
    pub headers: Option<BTreeMap<String, String>>,
    /// Seconds.
    pub timeout: Option<u64>,
    /// strands-cli's spelling, in milliseconds (rounded up to seconds).
    pub timeout_ms: Option<u64>,
    pub description: Option<String>,
    /// strands-cli's documentation fields: metadata for the model and for
    /// readers, accepted and not used to call the API.
    pub examples: Option<Value>,
    pub common_endpoints: Option<Value>,
    pub response_format: Option<Value>,
    pub authentication_info: Option<Value>,
    pub require_approval: Option<bool>,
    pub approval_prompt: Option<String>,
    pub approval_condition: Option<String>,
    pub destructive: Option<bool>,
    pub reversible: Option<bool>,
    pub risk: Option<String>,
}

/// One `tools.mcp` entry: `{id, command, args?, env?}` (a child process)
/// or `{id, url, headers?}` (Streamable HTTP), plus the approval policy of
/// http executors, which applies to all of the server's tools.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    pub id: S<String>,
    pub command: Option<S<String>>,
    pub args: Option<Vec<String>>,
    /// Values may be strings, numbers or booleans.
    pub env: Option<S<BTreeMap<String, Value>>>,
    pub url: Option<S<String>>,
    pub headers: Option<S<BTreeMap<String, String>>>,
    pub description: Option<String>,
    pub require_approval: Option<bool>,
    pub approval_prompt: Option<String>,
    pub approval_condition: Option<String>,
    pub destructive: Option<bool>,
    pub reversible: Option<bool>,
    pub risk: Option<String>,
}

// The policy fields repeat across HttpExecutor, ToolEntry and PythonEntry on
// purpose: serde's `flatten` cannot be combined with `deny_unknown_fields`,
// and unknown keys must stay errors.

/// One entry of an agent's `tools` list in map form (parsed from the
/// entry's value, so unknown keys are reported at the entry).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEntry {
    pub name: Option<String>,
    /// seed 000's `- python: {callable, require_approval, approval_prompt}`.
    pub python: Option<PythonEntry>,
    pub require_approval: Option<bool>,
    pub approval_prompt: Option<String>,
    pub approval_condition: Option<String>,
    pub destructive: Option<bool>,
    pub reversible: Option<bool>,
    pub risk: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonEntry {
    pub callable: String,
    pub require_approval: Option<bool>,
    pub approval_prompt: Option<String>,
    pub approval_condition: Option<String>,
    pub destructive: Option<bool>,
    pub reversible: Option<bool>,
    pub risk: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inference {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    pub required: Option<S<BTreeMap<String, S<Value>>>>,
    pub optional: Option<S<BTreeMap<String, S<Value>>>>,
    pub values: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outputs {
    pub artifacts: Option<Vec<Artifact>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub path: S<String>,
    pub from: S<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    pub steps: S<Vec<S<Step>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowConfig {
    pub tasks: S<Vec<S<Step>>>,
}

/// A chain step or workflow task: an agent step or a gate. One flat shape so
/// that serde reports unknown keys with their location; `validate` checks
/// which keys belong to which kind.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(rename = "type")]
    pub kind: Option<S<String>>,
    pub id: Option<S<String>>,
    // agent steps
    pub agent: Option<S<String>>,
    pub input: Option<S<String>>,
    pub vars: Option<Map<String, Value>>,
    /// strands-cli: this step's tools instead of its agent's.
    pub tool_overrides: Option<Vec<S<Value>>>,
    // workflow tasks
    pub deps: Option<Vec<S<String>>>,
    pub description: Option<String>,
    // gates (hitl and manual_gate)
    pub prompt: Option<S<String>>,
    pub context_display: Option<S<String>>,
    pub default: Option<S<String>>,
    pub timeout_seconds: Option<S<u64>>,
    pub condition: Option<S<String>>,
    pub timeout_minutes: Option<S<u64>>,
    pub fallback_action: Option<S<String>>,
    pub show_preview: Option<bool>,
    pub preview_length: Option<usize>,
    /// Ours: a rejection must say why.
    pub require_reason: Option<bool>,
    /// Ours: the chat channel that approves this gate (the bot).
    pub channel: Option<S<String>>,
    /// Who may answer: Slack user ids (`U…`), group ids (`S…`) or CLI
    /// names — or a list of approval rules (`validate::rules`).
    pub approvers: Option<Approvers>,
    /// Approvals needed before the gate passes (N of the approvers).
    pub approvals_required: Option<u32>,
    /// Rejections needed to reject (default 1: one approver's reject rejects).
    pub rejections_required: Option<u32>,
    /// Whether whoever started the run may approve it.
    pub allow_self_approval: Option<bool>,
    /// Ours: `dm` also sends each approver named by Slack user id a direct
    /// message with the buttons; `channel` (the default) does not.
    pub notify: Option<S<String>>,
    /// Ours: minutes between reminders in the approval thread (fractions allowed).
    pub reminder_interval: Option<S<f64>>,
    /// Ours: how many reminders at most (default 3).
    pub max_reminders: Option<S<u32>>,
    /// Ours: minutes before the timeout when one last reminder goes out
    /// if nobody answered (fractions allowed).
    pub remind_before: Option<S<f64>>,
    /// Ours: minutes without an answer before the request goes to `escalation_target`.
    pub escalation_timeout: Option<S<f64>>,
    /// Ours: who gets an escalated request: Slack user ids (`U…`), group ids
    /// (`S…`) and/or a channel (`C…` or `#name`); one id or a list.
    pub escalation_target: Option<S<Value>>,
    /// Ours: `30m`, `8h`, `1h30m`, `8h business` (only the calendar's
    /// hours count); instead of `timeout_seconds` / `timeout_minutes`.
    pub timeout: Option<S<String>>,
    /// Ours: the service calendar the gate keeps (default: the one named
    /// `default`, else the only one).
    pub calendar: Option<S<String>>,
    /// Ours: what opening outside the calendar's hours does: `wait`,
    /// `escalate` or `reject`.
    pub when_closed: Option<S<String>>,
    /// Ours: `{outside_hours: false}`: a timeout that approves waits for
    /// the calendar to open.
    pub auto_approve: Option<S<AutoApprove>>,
    /// Ours: reminders and escalations may come outside the calendar's hours.
    pub timers_outside_hours: Option<S<bool>>,
    /// Ours (manual gates): the values approving fills in, as a flat JSON
    /// Schema object (`crate::model::form`).
    pub form: Option<S<Form>>,
    /// Ours (manual gates): trust approves too ("approve, and stop asking
    /// for this tool"; the requester remembers it).
    pub allow_trust: Option<S<bool>>,
    /// Ours (manual gates): an approver may approve with the action's
    /// arguments edited (an approval request's `action`).
    pub allow_edit: Option<S<bool>>,
    /// Ours: `passkey`: approving takes a passkey assertion on the gate's
    /// page, not a click.
    pub step_up: Option<S<String>>,
}

/// A gate's `form:` as written: its properties keep their order and each
/// its line (`crate::model::form::Schema` is the same without lines).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Form {
    #[serde(rename = "type")]
    pub kind: Option<S<Value>>,
    pub properties: Option<S<crate::model::form::Entries<S<Value>>>>,
    pub required: Option<S<Value>>,
}

/// A gate's `auto_approve`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoApprove {
    /// `false`: no approval by timeout outside the calendar's hours.
    pub outside_hours: bool,
}

/// An `approvers:` list: names, or approval rules.
pub type Approvers = S<Vec<S<ApproverEntry>>>;

/// One `approvers:` entry: a name, or a rule. A rule is kept as a map so
/// the validator can name an unknown key or a wrong type at its line
/// (serde's untagged error would only say "did not match").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ApproverEntry {
    Name(String),
    Rule(Map<String, Value>),
    Other(Value),
}
