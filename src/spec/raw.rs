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
    pub env: Option<Value>,
    pub telemetry: Option<Value>,
    pub context_policy: Option<Value>,
    pub skills: Option<Value>,
    pub tools: Option<Value>,
    pub outputs: Option<Outputs>,
    pub security: Option<Value>,
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
    pub region: Option<String>,
    pub host: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub max_parallel: Option<usize>,
    pub budgets: Option<S<Map<String, Value>>>,
    pub failure_policy: Option<Value>,
}

// Some keys are accepted for strands-cli compatibility and not used by this build.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    pub prompt: S<String>,
    pub description: Option<String>,
    pub tools: Option<S<Value>>,
    pub provider: Option<S<String>>,
    pub model_id: Option<String>,
    pub inference: Option<Inference>,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
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
    // workflow tasks
    pub deps: Option<Vec<S<String>>>,
    pub description: Option<String>,
    // gates (hitl and manual_gate)
    pub prompt: Option<S<String>>,
    pub context_display: Option<S<String>>,
    pub default: Option<S<String>>,
    pub timeout_seconds: Option<u64>,
    pub condition: Option<S<String>>,
    pub timeout_minutes: Option<u64>,
    pub fallback_action: Option<S<String>>,
    pub show_preview: Option<bool>,
    pub preview_length: Option<usize>,
    /// Ours: a rejection must say why.
    pub require_reason: Option<bool>,
    /// Ours: the chat channel that approves this gate (the bot).
    pub channel: Option<S<String>>,
}
