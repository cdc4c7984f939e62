//! The commands that say what strands would do, without running anything:
//! `plan SPEC` (runtime, agents, the pattern step by step, gates,
//! artifacts), `explain SPEC` (what this build cannot run and what to do
//! about it — the remediation exit 18 points to), `list-supported`,
//! `list-tools` and `version`. strands-cli has the same commands; the
//! JSON of `plan` keeps its keys (`name`, `version`, `supported`,
//! `runtime`, `agents`, `pattern`, `issues`) and adds ours.

use crate::cli::human;
use crate::cli::Ctx;
use crate::error::exit;
use crate::error::{Error, Result};
use crate::provider::ProviderKind;
use crate::spec;
use crate::spec::{AgentStep, ChainStep, Edge, GateSpec, PatternSpec, Spec, TaskBody, When};
use serde_json::json;
use serde_json::Value;

/// Printed after every exit 18.
pub(super) const UNSUPPORTED_HINT: &str = "what to do: `strands explain SPEC` names each unsupported feature with its fix; `strands list-supported` lists what this build runs. \
Models this build has no client for are usually reachable through an OpenAI-compatible endpoint: `provider: openai` with `runtime.host`.";

/// Something in a spec this build cannot run, where, and what to do.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Issue {
    /// JSON pointer into the spec, as strands-cli reports it.
    pub pointer: String,
    pub reason: String,
    pub remediation: String,
}

/// What to write instead of a provider this build lacks.
fn provider_remediation(_name: &str) -> String {
    "use `provider: openai` with `runtime.host` (any OpenAI-compatible server), or one of `anthropic`, `ollama`, `gemini`, `azure_openai`, `bedrock`, `echo` (offline rehearsal)".into()
}

/// Everything in `spec` this build cannot run (empty: it runs).
pub(super) fn issues(spec: &Spec) -> Vec<Issue> {
    let mut out = Vec::new();
    let mut check = |pointer: String, name: &str| {
        if let Err(e) = ProviderKind::parse(name) {
            out.push(Issue {
                pointer,
                reason: e.to_string(),
                remediation: provider_remediation(name),
            });
        }
    };
    check("/runtime/provider".into(), &spec.runtime.provider);
    for (id, a) in &spec.agents {
        if let Some(p) = &a.provider {
            check(format!("/agents/{id}/provider"), p);
        }
    }
    out
}

/// The error `run` exits 18 with: every issue and what to do about it.
pub(super) fn unsupported(path: &std::path::Path, issues: &[Issue]) -> Error {
    let mut text = format!(
        "{} uses what this build cannot run ({} issue{}):",
        path.display(),
        issues.len(),
        if issues.len() == 1 { "" } else { "s" }
    );
    for i in issues {
        text.push_str(&format!(
            "\n  • {}: {}\n    → {}",
            i.pointer, i.reason, i.remediation
        ));
    }
    Error::Unsupported(text)
}

/// `strands explain SPEC`.
pub(super) fn explain(ctx: &Ctx, path: &std::path::Path, json: bool) -> Result<u8> {
    let spec = spec::load(path, &ctx.settings.checking_limits())?;
    let found = issues(&spec);
    if json {
        outln!(
            "{}",
            json!({ "name": spec.name, "supported": found.is_empty(), "issues": found, "warnings": spec.warnings })
        )?;
        return Ok(exit::OK);
    }
    if found.is_empty() {
        outln!(
            "✓ No unsupported features: `{}` runs with this build.",
            spec.name
        )?;
    } else {
        outln!("Unsupported features in `{}`:\n", spec.name)?;
        for (n, i) in found.iter().enumerate() {
            outln!("{}. {}", n + 1, i.pointer)?;
            outln!("   Reason: {}", i.reason)?;
            outln!("   → Remediation: {}\n", i.remediation)?;
        }
        outln!("`strands plan SPEC` shows the whole plan; `strands list-supported` what this build runs.")?;
    }
    for w in &spec.warnings {
        outln!("note: {w}")?;
    }
    Ok(exit::OK)
}

/// `strands plan SPEC`.
pub(super) fn plan(ctx: &Ctx, path: &std::path::Path, json: bool) -> Result<u8> {
    let spec = spec::load(path, &ctx.settings.checking_limits())?;
    let found = issues(&spec);
    let outline = outline(&spec);
    if json {
        let agents: Vec<Value> = spec
            .agents
            .values()
            .map(|a| {
                json!({
                    "id": a.id,
                    "provider": a.provider.as_deref().unwrap_or(&spec.runtime.provider),
                    "model_id": a.model_id.as_ref().or(spec.runtime.model_id.as_ref()),
                    "tools": a.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        let gates: Vec<Value> = spec.gates().iter().map(|g| gate_json(g)).collect();
        outln!(
            "{}",
            json!({
                "name": spec.name,
                "version": 0,
                "supported": found.is_empty(),
                "runtime": {
                    "provider": spec.runtime.provider,
                    "model_id": spec.runtime.model_id,
                    "region": Value::Null,
                    "host": spec.runtime.host,
                    "max_parallel": spec.runtime.max_parallel,
                    "budget_max_tokens": spec.runtime.budget_max_tokens,
                },
                "agents": spec.agents.keys().collect::<Vec<_>>(),
                "agent_details": agents,
                "pattern": spec.pattern.name(),
                "issues": found.len(),
                "issue_details": found,
                "outline": outline,
                "gates": gates,
                "triggers": spec.hitl.triggers.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
                "inputs": spec.inputs.iter().map(|i| json!({"name": i.name, "required": i.required, "default": i.default})).collect::<Vec<_>>(),
                "artifacts": spec.artifacts.iter().map(|a| a.path.clone()).collect::<Vec<_>>(),
                "warnings": spec.warnings,
            })
        )?;
        return Ok(exit::OK);
    }
    outln!("Workflow plan: {} ({})", spec.name, path.display())?;
    outln!("\nRuntime")?;
    outln!("  provider   {}", spec.runtime.provider)?;
    outln!(
        "  model      {}",
        spec.runtime.model_id.as_deref().unwrap_or("default")
    )?;
    if let Some(h) = &spec.runtime.host {
        outln!("  host       {h}")?;
    }
    outln!("  parallel   {} at most", spec.runtime.max_parallel)?;
    if let Some(b) = spec.runtime.budget_max_tokens {
        outln!("  budget     {b} tokens")?;
    }
    outln!("\nAgents")?;
    let rows: Vec<Vec<String>> = spec
        .agents
        .values()
        .map(|a| {
            let tools: Vec<&str> = a.tools.iter().map(|t| t.name.as_str()).collect();
            vec![
                a.id.clone(),
                a.provider
                    .clone()
                    .unwrap_or_else(|| spec.runtime.provider.clone()),
                if tools.is_empty() {
                    "no tools".into()
                } else {
                    tools.join(", ")
                },
            ]
        })
        .collect();
    for line in human::table(&["ID", "PROVIDER", "TOOLS"], &rows) {
        outln!("  {line}")?;
    }
    outln!("\nPattern: {}", spec.pattern.name())?;
    for line in &outline {
        outln!("  {line}")?;
    }
    if !spec.hitl.triggers.is_empty() {
        outln!("\nGates the run triggers (hitl.gates)")?;
        for t in &spec.hitl.triggers {
            outln!("  {} ({})", t.id, trigger_text(&t.trigger))?;
        }
    }
    if !spec.inputs.is_empty() {
        outln!("\nInputs")?;
        for i in &spec.inputs {
            let default = i
                .default
                .as_ref()
                .map(|d| format!(" (default {d})"))
                .unwrap_or_default();
            let required = if i.required { ", required" } else { "" };
            outln!("  {}{required}{default}", i.name)?;
        }
    }
    if !spec.artifacts.is_empty() {
        outln!("\nArtifacts (under --out; existing files need --force)")?;
        for a in &spec.artifacts {
            outln!("  {}", a.path)?;
        }
    }
    if found.is_empty() {
        outln!("\n✓ Runs with this build.")?;
    } else {
        outln!("\n⚠ Unsupported ({}):", found.len())?;
        for i in &found {
            outln!("  • {}: {}", i.pointer, i.reason)?;
        }
        outln!("  `strands explain {}` says what to do.", path.display())?;
    }
    for w in &spec.warnings {
        outln!("note: {w}")?;
    }
    Ok(exit::OK)
}

fn trigger_text(t: &crate::spec::Trigger) -> String {
    use crate::spec::Trigger as T;
    match t {
        T::FinalResponse => "approve the final response".into(),
        T::Budget { tokens } => format!("once the run passes {tokens} tokens"),
        T::Confidence { threshold, field } => {
            format!("after a step whose `{field}` is below {threshold}")
        }
        T::Custom { condition } => format!("after a step when {condition}"),
        T::PlanApproval => "approve the orchestrator's plan".into(),
    }
}

fn gate_json(g: &GateSpec) -> Value {
    json!({
        "id": g.id,
        "kind": g.kind.name(),
        "timeout_seconds": g.timeout_secs,
        "fallback": g.fallback.name(),
        "condition": g.condition,
        "approvers": g.approvers,
        "approvals_required": g.approvals_required,
        "approval_rules": g.rules.len(),
    })
}

fn gate_line(g: &GateSpec) -> String {
    let mut text = format!("gate {} ({}", g.id, g.kind.name());
    if let Some(secs) = g.timeout_secs {
        text.push_str(&format!(
            "; after {} without an answer: {}",
            human_secs(secs),
            g.fallback.name()
        ));
    }
    if let Some(c) = &g.condition {
        text.push_str(&format!("; only when {c}"));
    }
    if !g.rules.is_empty() {
        text.push_str(&format!(
            "; {} approval rules: `strands policy explain` shows which applies",
            g.rules.len()
        ));
    }
    text.push(')');
    text
}

fn human_secs(secs: u64) -> String {
    human::span(secs)
}

fn agent_line(a: &AgentStep) -> String {
    format!("agent {}", a.agent)
}

fn step_line(s: &ChainStep) -> String {
    match s {
        ChainStep::Agent(a) => agent_line(a),
        ChainStep::Gate(g) => gate_line(g),
    }
}

fn task_line(b: &TaskBody) -> String {
    match b {
        TaskBody::Agent(a) => agent_line(a),
        TaskBody::Gate(g) => gate_line(g),
    }
}

/// The pattern, one line per step, in the order it runs.
fn outline(spec: &Spec) -> Vec<String> {
    let mut out = Vec::new();
    let steps = |out: &mut Vec<String>, prefix: &str, steps: &[ChainStep]| {
        for (i, s) in steps.iter().enumerate() {
            out.push(format!("{prefix}steps[{i}]  {}", step_line(s)));
        }
    };
    match &spec.pattern {
        PatternSpec::Chain { steps: s } => steps(&mut out, "", s),
        PatternSpec::Workflow { tasks, layers } => {
            for (n, layer) in layers.iter().enumerate() {
                out.push(format!("layer {} (at once):", n + 1));
                for &i in layer {
                    if let Some(t) = tasks.get(i) {
                        let after = if t.deps.is_empty() {
                            String::new()
                        } else {
                            format!(" — after {}", t.deps.join(", "))
                        };
                        out.push(format!("  tasks.{}  {}{after}", t.id, task_line(&t.body)));
                    }
                }
            }
        }
        PatternSpec::Parallel(p) => {
            for b in &p.branches {
                out.push(format!("branch {} (alongside the others):", b.id));
                steps(&mut out, &format!("  branches.{}.", b.id), &b.steps);
            }
            if let Some(r) = &p.reduce {
                out.push(format!("reduce  {}", step_line(r)));
            }
        }
        PatternSpec::Routing(r) => {
            out.push(format!(
                "router  {} (picks a route; {} retries)",
                agent_line(&r.router),
                r.max_retries
            ));
            if let Some(g) = &r.review {
                out.push(format!("router.review_router  {}", gate_line(g)));
            }
            for route in &r.routes {
                out.push(format!("route {}:", route.name));
                for (i, s) in route.steps.iter().enumerate() {
                    out.push(format!(
                        "  routes.{}.then[{i}]  {}",
                        route.name,
                        step_line(s)
                    ));
                }
            }
        }
        PatternSpec::EvaluatorOptimizer(e) => {
            out.push(format!(
                "up to {} iterations, until the score reaches {}:",
                e.max_iters, e.min_score
            ));
            out.push(format!("  draft       {}", agent_line(&e.producer)));
            out.push(format!("  evaluation  {}", agent_line(&e.evaluator)));
            if let Some(g) = &e.review_gate {
                out.push(format!("  review_gate {}", gate_line(g)));
            }
            if let Some(m) = &e.manual_review {
                out.push(format!(
                    "  manual_review (from iteration {})  {}",
                    m.after_iterations,
                    gate_line(&m.gate)
                ));
            }
        }
        PatternSpec::OrchestratorWorkers(o) => {
            out.push(format!(
                "plan      {} (up to {} rounds)",
                agent_line(&o.orchestrator),
                o.max_rounds
            ));
            if let Some(g) = &o.decomposition_review {
                out.push(format!("decomposition_review  {}", gate_line(g)));
            }
            out.push(format!(
                "workers   {} (up to {} at once)",
                agent_line(&o.worker),
                o.max_workers
            ));
            if let Some(g) = &o.reduce_review {
                out.push(format!("reduce_review  {}", gate_line(g)));
            }
            if let Some(r) = &o.reduce {
                out.push(format!("reduce    {}", agent_line(r)));
            }
            if let Some(w) = &o.writeup {
                out.push(format!("writeup   {}", agent_line(w)));
            }
        }
        PatternSpec::Graph(g) => {
            out.push(format!(
                "nodes (each visited at most {} times):",
                g.max_iterations
            ));
            for n in &g.nodes {
                let next = match g.edges.get(&n.id) {
                    None => "end".to_string(),
                    Some(Edge::To(to)) => to.first().cloned().unwrap_or_else(|| "end".into()),
                    Some(Edge::Choose(choices)) => choices
                        .iter()
                        .map(|c| match &c.when {
                            When::Else => format!("else {}", c.to),
                            When::Condition(w) => format!("{} if {w}", c.to),
                        })
                        .collect::<Vec<_>>()
                        .join(" | "),
                };
                out.push(format!("  nodes.{}  {} → {next}", n.id, task_line(&n.body)));
            }
        }
    }
    out
}

/// `strands list-supported`.
pub(super) fn list_supported(json: bool) -> Result<u8> {
    let tools: Vec<&str> = crate::tools::builtin::Builtin::ALL
        .iter()
        .map(|b| b.name())
        .collect();
    let features: Vec<(&str, String)> = vec![
        ("Spec format", "strands-cli v0 (`version: 0`), unchanged; unknown keys are errors (exit 3)".into()),
        ("Patterns", crate::spec::SUPPORTED_PATTERNS.join(", ")),
        ("Providers", "openai (any OpenAI-compatible server via runtime.host), anthropic, ollama, echo (offline rehearsal); others exit 18 — see `strands explain`".into()),
        ("Human gates", "`type: hitl` (strands-cli) and `type: manual_gate`, at every position strands-cli allows; timeouts enforced with fallback_action; approvers and quorum".into()),
        ("Tool approvals", "require_approval, approval_condition, allowed_tools, hitl presets, trust".into()),
        ("Built-in tools", format!("{} (`strands_tools.<name>` maps to them; `strands list-tools`)", tools.join(", "))),
        ("Other tools", "tools.http_executors; tools.mcp (stdio and streamable HTTP); other Python callables are refused (exit 3)".into()),
        ("Budgets", "runtime.budgets.max_tokens enforced (exit 20)".into()),
        ("Retries", "exponential backoff on 429/5xx/timeouts (STRANDS_MAX_RETRIES, STRANDS_RETRY_BASE_MS)".into()),
        ("Artifacts", "outputs.artifacts templates under --out; existing files need --force".into()),
        ("Sessions", "durable (sled store): resume after a pause or a crash; `strands serve` (HTTP API, Slack)".into()),
        ("Audit", "tamper-evident log: `strands audit verify|export`".into()),
        ("Accepted, not acted on", "telemetry (OTLP traces come from OTEL_* variables), context_policy, skills, env".into()),
    ];
    if json {
        let list: Vec<Value> = features
            .iter()
            .map(|(f, s)| json!({ "feature": f, "support": s }))
            .collect();
        outln!(
            "{}",
            json!({ "version": env!("CARGO_PKG_VERSION"), "features": list })
        )?;
        return Ok(exit::OK);
    }
    let rows: Vec<Vec<String>> = features
        .into_iter()
        .map(|(f, s)| vec![f.to_string(), s])
        .collect();
    outln!("strands {} — supported features", env!("CARGO_PKG_VERSION"))?;
    for line in human::table(&["FEATURE", "SUPPORT"], &rows) {
        outln!("{line}")?;
    }
    Ok(exit::OK)
}

/// `strands list-tools`.
pub(super) fn list_tools(json: bool) -> Result<u8> {
    let specs: Vec<crate::provider::ToolSpec> = crate::tools::builtin::Builtin::ALL
        .iter()
        .map(|b| b.spec())
        .collect();
    if json {
        let list: Vec<Value> = specs
            .iter()
            .map(|t| json!({ "id": t.name, "strands_cli": format!("strands_tools.{}", t.name), "description": t.description, "parameters": t.parameters }))
            .collect();
        outln!("{}", json!({ "tools": list, "count": list.len() }))?;
        return Ok(exit::OK);
    }
    let rows: Vec<Vec<String>> = specs
        .iter()
        .map(|t| {
            // The first sentence is the summary.
            let summary = t
                .description
                .split_inclusive(". ")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            vec![t.name.clone(), summary]
        })
        .collect();
    for line in human::table(&["TOOL", "DESCRIPTION"], &rows) {
        outln!("{line}")?;
    }
    outln!(
        "\n{} built-in tools. In a spec: `agents.<id>.tools: [file_read]` (or strands-cli's `strands_tools.file_read`); HTTP executors and MCP servers add more.",
        rows.len()
    )?;
    Ok(exit::OK)
}

/// `strands version`.
pub(super) fn version(json: bool) -> Result<u8> {
    if json {
        outln!(
            "{}",
            json!({ "name": "strands", "version": env!("CARGO_PKG_VERSION"), "spec_format": "strands-cli v0" })
        )?;
    } else {
        outln!(
            "strands {} (runs strands-cli v0 specs)",
            env!("CARGO_PKG_VERSION")
        )?;
    }
    Ok(exit::OK)
}
