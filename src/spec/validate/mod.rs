//! Turns the raw document into a [`Spec`], collecting every problem with its
//! file:line:column and a hint, so one `strands validate` shows them all.
//!
//! This module holds the `Validator` (diagnostics, template checks, where a
//! line of a multi-line value is in the file) and the top level of a spec:
//! `version`, `name`, `runtime`, and the order in which the sections are
//! checked. Each section is checked in a submodule of its own (`tools`,
//! `agents`, `inputs`, `artifacts`, `security`, `hitl`), and so is each
//! pattern (`chain`, with the step every pattern is built of, `workflow`,
//! `parallel`, `routing`, `evaluator`, `orchestrator`, `graph`); `gates`
//! checks a gate step wherever it stands. Nothing here reads files or the
//! environment: the caller hands over the text and the [`Limits`].

use serde::de::IgnoredAny;
use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::path::Path;

use super::raw::{self, Document};
use serde_json::Map;

use super::{
    sha256_hex, AgentSpec, AgentStep, AgentTool, ApprovalDefaults, ArtifactSpec, GateSpec,
    HitlSpec, InputDecl, Limits, PatternSpec, RuntimeSpec, Spec, ToolsConfig, KNOWN_PATTERNS,
};
use crate::error::{Diagnostic, Error, Result};
use crate::provider::ProviderKind;
use crate::template::Templates;

mod agents;
mod artifacts;
mod atomic;
mod chain;
mod context;
mod evaluator;
mod form;
mod gates;
mod graph;
mod hitl;
mod hours;
mod inputs;
mod orchestrator;
mod parallel;
mod reach;
mod routing;
mod rules;
mod security;
#[cfg(test)]
mod testkit;
mod tools;
mod workflow;

use hitl::plan_approval;
use security::approval_defaults;

pub fn parse(text: &str, path: &Path, limits: &Limits) -> Result<Spec> {
    let file = path.display().to_string();
    let text = &*super::refs::inline(text, path).map_err(Error::Spec)?;
    let head: Document<IgnoredAny> = from_yaml(text, &file)?;
    let kind = head.pattern.kind.value.trim().to_string();
    if !KNOWN_PATTERNS.contains(&kind.as_str()) {
        let (line, column) = at(&head.pattern.kind);
        return Err(Error::Spec(vec![Diagnostic {
            file,
            line,
            column,
            message: format!("unknown pattern type `{kind}`"),
            hint: Some(format!(
                "pattern.type is one of: {}",
                KNOWN_PATTERNS.join(", ")
            )),
        }]));
    }
    let mut v = Validator {
        file: file.clone(),
        text: text.to_string(),
        diags: Vec::new(),
        warnings: Vec::new(),
        templates: Templates::shared(),
        limits: limits.clone(),
        uses: Vec::new(),
        tools_cfg: None,
        tavily_at: None,
        default_approvers: Vec::new(),
    };
    let spec = match kind.as_str() {
        "chain" => {
            let doc: Document<raw::ChainConfig> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let steps = v.chain(&doc.pattern.config, &common.agents);
            common.finish(PatternSpec::Chain { steps }, text, path, &mut v)
        }
        "workflow" => {
            let doc: Document<raw::WorkflowConfig> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.workflow(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "parallel" => {
            let doc: Document<parallel::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.parallel(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "routing" => {
            let doc: Document<routing::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.routing(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "evaluator_optimizer" => {
            let doc: Document<evaluator::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.evaluator(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
        "orchestrator_workers" => {
            let doc: Document<orchestrator::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let mut pattern = v.orchestrator(&doc.pattern.config, &common.agents);
            plan_approval(&mut pattern, &common.hitl);
            common.finish(pattern, text, path, &mut v)
        }
        _ => {
            let doc: Document<graph::Config> = from_yaml(text, &file)?;
            let common = v.common(&doc);
            let pattern = v.graph(&doc.pattern.config, &common.agents);
            common.finish(pattern, text, path, &mut v)
        }
    };
    if v.diags.is_empty() {
        let mut spec = spec;
        let values: Vec<String> = spec.input_values.keys().cloned().collect();
        spec.needs = v.needs(text, &spec.inputs, &values);
        spec.warnings = v.warnings;
        Ok(spec)
    } else {
        Err(Error::Spec(v.diags))
    }
}

/// Deserializes, turning serde-saphyr's error into one located diagnostic.
fn from_yaml<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T> {
    serde_saphyr::from_str::<T>(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line() as u32, l.column() as u32))
            .unwrap_or((1, 1));
        let mut message = e.without_snippet().to_string();
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
        let message = message.trim_start_matches("error: ").to_string();
        let hint = if message.contains("unknown field") {
            Some("remove the key or check its spelling against the strands-cli v0 format".into())
        } else if message.contains("missing field") {
            Some("add the required key".into())
        } else {
            None
        };
        Error::Spec(vec![Diagnostic {
            file: file.to_string(),
            line,
            column,
            message,
            hint,
        }])
    })
}

fn at<T>(s: &Spanned<T>) -> (u32, u32) {
    (s.referenced.line() as u32, s.referenced.column() as u32)
}

struct Validator {
    file: String,
    /// The spec text, to place errors on lines inside multi-line values.
    text: String,
    diags: Vec<Diagnostic>,
    warnings: Vec<String>,
    templates: &'static Templates,
    limits: Limits,
    /// What each template reads, for `reach`.
    uses: Vec<reach::Use>,
    /// The resolved `tools` section, for steps' `tool_overrides`.
    tools_cfg: Option<ToolsConfig>,
    /// Where `tavily_search` is first used (it needs `TAVILY_API_KEY`).
    tavily_at: Option<(u32, u32)>,
    /// `security.approvers`: who answers gates that name nobody (a gate's
    /// `notify: dm` needs a Slack user among its approvers).
    default_approvers: Vec<crate::model::Approver>,
}

/// Everything but the pattern, validated.
struct Common {
    name: String,
    runtime: RuntimeSpec,
    agents: BTreeMap<String, AgentSpec>,
    inputs: Vec<InputDecl>,
    input_values: Map<String, Value>,
    artifacts: Vec<ArtifactSpec>,
    tools: ToolsConfig,
    redactor: crate::audit::redact::Redactor,
    approval: ApprovalDefaults,
    hitl: HitlSpec,
    context: crate::spec::context::ContextPolicy,
}

impl Common {
    fn finish(mut self, pattern: PatternSpec, text: &str, path: &Path, v: &mut Validator) -> Spec {
        self.tools.tavily_at = v.tavily_at.map(|(line, _)| format!("{}:{line}", v.file));
        Spec {
            path: path.to_path_buf(),
            text: text.to_string(),
            hash: sha256_hex(text),
            name: self.name,
            runtime: self.runtime,
            agents: self.agents,
            inputs: self.inputs,
            input_values: self.input_values,
            pattern,
            artifacts: self.artifacts,
            tools: self.tools,
            redactor: self.redactor,
            approval: self.approval,
            hitl: self.hitl,
            context: self.context,
            warnings: Vec::new(),
            needs: Vec::new(),
        }
    }
}

/// What a step or task turned out to be.
// Specs are built once and hold a handful of steps: boxing the gate buys nothing.
#[allow(clippy::large_enum_variant)]
enum Body {
    Agent(AgentStep),
    Gate(GateSpec),
}

impl Validator {
    fn error(
        &mut self,
        (line, column): (u32, u32),
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.diags.push(Diagnostic {
            file: self.file.clone(),
            line,
            column,
            message: message.into(),
            hint,
        });
    }

    /// Checks a template's syntax, locating errors inside multi-line values.
    fn template(&mut self, s: &Spanned<String>, what: &str) {
        self.template_as(s, what, true);
    }

    /// [`Validator::template`]; `strict: false` for text strands-cli sends
    /// as written when a name in it is unknown (agent prompts).
    fn template_as(&mut self, s: &Spanned<String>, what: &str, strict: bool) {
        self.record_use(s, what, strict);
        if let Err(e) = self.templates.check(&s.value) {
            let loc = self.template_line(s, e.line);
            self.error(
                loc,
                format!("template syntax error in {what}: {}", e.message),
                Some(
                    "templates use Jinja syntax: {{ variable }}, {% if ... %}...{% endif %}".into(),
                ),
            );
        }
    }

    /// Where line `n` (1-based) of a template value is in the file. Escapes
    /// (`\n`), folding and blank lines mean template lines need not be file
    /// lines, so the template's lines are found in the value's source text;
    /// anything not found falls back to the start of the value.
    fn template_line(&self, s: &Spanned<String>, n: u32) -> (u32, u32) {
        let start = at(s);
        if n <= 1 {
            return start;
        }
        let span = s.referenced.span();
        let (Some(off), Some(len)) = (span.byte_offset(), span.byte_len()) else {
            return start;
        };
        let (off, len) = (off as usize, len as usize);
        let Some(src) = self.text.get(off..off + len) else {
            return start;
        };
        // Find lines 1..=n in order, so a repeated line maps to the right one.
        let mut from = 0;
        let mut found = None;
        for wanted in s.value.lines().take(n as usize) {
            let wanted = wanted.trim();
            found = None;
            if wanted.is_empty() {
                continue;
            }
            if let Some(i) = src.get(from..).and_then(|rest| rest.find(wanted)) {
                found = Some(from + i);
                from += i + wanted.len();
            }
        }
        let Some(pos) = found else {
            return start;
        };
        let before = &self.text[..off + pos];
        let line = before.matches('\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() as u32 + 1;
        (line, column)
    }

    fn common<C>(&mut self, doc: &Document<C>) -> Common {
        // strands-cli's schema takes any integer or string (`0`, `1`,
        // `"1.0.0"`); the format read is the same v0 whatever it says.
        let version_ok = match &doc.version.value {
            Value::Number(n) => n.is_u64() || n.is_i64(),
            Value::String(s) => !s.trim().is_empty(),
            _ => false,
        };
        if !version_ok {
            self.error(
                at(&doc.version),
                format!("unsupported version {}", doc.version.value),
                Some("`version` is an integer or a string, e.g. `version: 0`".into()),
            );
        }
        if doc.name.value.trim().is_empty() {
            self.error(
                at(&doc.name),
                "`name` is empty",
                Some("give the workflow a name".into()),
            );
        }

        let rt = &doc.runtime;
        if let Err(e) = ProviderKind::parse(&rt.provider.value) {
            self.warnings.push(format!("{}: {e}", self.file));
        }
        let max_parallel = rt.max_parallel.unwrap_or(4).max(1);
        let mut budget_max_tokens = None;
        if let Some(b) = &rt.budgets {
            for (k, val) in &b.value {
                match (k.as_str(), val) {
                    ("max_tokens", Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                        budget_max_tokens = n.as_u64();
                    }
                    ("max_tokens", other) => self.error(
                        at(b),
                        format!(
                            "runtime.budgets.max_tokens must be a positive integer, not {other}"
                        ),
                        None,
                    ),
                    (other, _) => self.warnings.push(format!(
                        "{}:{}: runtime.budgets.{other} is not enforced by this build",
                        self.file,
                        at(b).0
                    )),
                }
            }
        }
        let runtime = RuntimeSpec {
            provider: rt.provider.value.trim().to_string(),
            model_id: rt.model_id.clone(),
            host: rt.host.clone(),
            region: rt
                .region
                .as_ref()
                .map(|r| r.value.trim().to_string())
                .filter(|r| !r.is_empty()),
            temperature: rt.temperature,
            top_p: rt.top_p,
            max_tokens: rt.max_tokens,
            max_parallel,
            budget_max_tokens,
            budgets: rt
                .budgets
                .as_ref()
                .map(|b| b.value.clone())
                .unwrap_or_default(),
            failure_policy: rt.failure_policy.as_ref().map(|f| f.value.clone()),
        };

        if doc.agents.value.is_empty() {
            self.error(
                at(&doc.agents),
                "`agents` is empty",
                Some("define at least one agent with a `prompt`".into()),
            );
        }
        let mut tools = self.tools_section(doc.tools.as_ref());
        let context = self.context_policy(doc.context_policy.as_ref(), &tools);
        tools.jit_tools = context.jit_tools.clone();
        self.ignored_keys(doc);
        self.tools_cfg = Some(tools.clone());
        let agents = self.agents(&doc.agents.value, &tools);
        let (inputs, input_values) = self.inputs(doc.inputs.as_ref());
        let artifacts = self.artifacts(doc.outputs.as_ref());
        let redactor = self.redactor(doc.security.as_ref());
        let mut approval = approval_defaults(doc.security.as_ref().map(|s| &s.value));
        approval.rules = self.security_rules();
        self.default_approvers = if approval.rules.is_empty() {
            approval.approvers.clone()
        } else {
            every_approver(&approval.rules)
        };
        let hitl = self.hitl(doc.hitl.as_ref());
        Common {
            context,
            hitl,
            approval,
            redactor,
            tools,
            name: doc.name.value.trim().to_string(),
            runtime,
            agents,
            inputs,
            input_values,
            artifacts,
        }
    }
}

impl Validator {
    /// A step's `tool_overrides`, resolved like an agent's `tools`.
    fn step_tools(
        &mut self,
        label: &str,
        entries: Option<&Vec<raw::S<Value>>>,
    ) -> Option<Vec<AgentTool>> {
        let entries = entries?;
        let cfg = self.tools_cfg.clone()?;
        Some(self.tool_list(label, entries, false, &cfg))
    }
}

/// Everyone any rule names, in order, once: who a gate with rules may
/// notify (`notify: dm`, `email`).
fn every_approver(rules: &[crate::spec::rules::ApprovalRule]) -> Vec<crate::model::Approver> {
    let mut all: Vec<crate::model::Approver> = Vec::new();
    for a in rules.iter().flat_map(|r| &r.approvers) {
        if !all.contains(a) {
            all.push(a.clone());
        }
    }
    all
}
