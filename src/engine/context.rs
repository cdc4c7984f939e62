//! The variables templates see (SPEC.md): the inputs, the pattern's own
//! (`steps[n].response`, `tasks.<id>.response`, `branches.<id>.response`,
//! `router.chosen_route`, `draft` / `evaluation`, `workers`, `nodes`, ...),
//! `hitl_response`, `human_feedback`, `last_response`, plus a step's own
//! `vars`.
//!
//! `hitl_response` and `human_feedback` are always defined (none until set),
//! so `{% if human_feedback %}` works on the first run as well as the re-run.

use serde_json::{Map, Value};

use super::pattern;
use crate::model::Position;
use crate::model::Session;
use crate::spec::Spec;

/// The template context at `at` (where the template is rendered; a parallel
/// branch's steps see their own branch as `steps`).
pub fn build(
    spec: &Spec,
    session: &Session,
    step_vars: Option<&Map<String, Value>>,
    at: Option<&Position>,
) -> minijinja::Value {
    minijinja::Value::from_serialize(root(spec, session, step_vars, at))
}

fn root(
    spec: &Spec,
    session: &Session,
    step_vars: Option<&Map<String, Value>>,
    at: Option<&Position>,
) -> Map<String, Value> {
    let mut root = session.variables.clone();
    pattern::template_vars(spec, &session.state, &mut root, at);
    if let Some(v) = step_vars {
        for (k, val) in v {
            root.insert(k.clone(), val.clone());
        }
    }
    root.insert("hitl_response".into(), opt(&session.hitl_response));
    root.insert("human_feedback".into(), opt(&session.human_feedback));
    root.insert(
        "last_response".into(),
        opt(&pattern::last_response_at(&session.state, at)),
    );
    root
}

/// The context approval rules' `when` conditions see
/// ([`crate::gate::policy`]): [`build`]'s, plus `details` — the run's
/// variables, merged with a variable `details` that is a map (an approval
/// request's), numbers written as text read as numbers — and `tool`
/// ([`crate::gate::policy::add_rule_vars`]).
pub fn for_rules(
    spec: &Spec,
    session: &Session,
    at: Option<&Position>,
    tool: Option<&crate::model::ToolCall>,
) -> minijinja::Value {
    let mut root = root(spec, session, None, at);
    add_rule_vars(&mut root, &session.variables, tool);
    minijinja::Value::from_serialize(root)
}

/// Adds to `root` what only rules see, from a run's `variables`:
/// `details` — the variables, merged with a variable `details` that is a
/// map (an approval request's) — and `tool`: `tool`, else an approval
/// request's `action` (`strands policy backtest` rebuilds a recorded
/// request's context with it).
pub fn add_rule_vars(
    root: &mut Map<String, Value>,
    variables: &Map<String, Value>,
    tool: Option<&crate::model::ToolCall>,
) {
    let mut details = variables.clone();
    if let Some(Value::Object(own)) = variables.get("details") {
        details.remove("details");
        for (k, v) in own {
            details.insert(k.clone(), v.clone());
        }
    }
    // An approval request's `action` ({tool, arguments}, kept as JSON text
    // in the variable `action`) is the call its rules judge, as a spec's
    // tool call is: a policy on `tool.name`/`tool.args` serves both.
    let action: Option<(String, Value)> = match (tool, variables.get("action")) {
        (None, Some(Value::String(text))) => serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|a| Some((a.get("tool")?.as_str()?.to_string(), a["arguments"].clone()))),
        _ => None,
    };
    crate::gate::policy::add_rule_vars(
        root,
        &details,
        tool.map(|c| (c.name.as_str(), &c.arguments))
            .or(action.as_ref().map(|(n, a)| (n.as_str(), a))),
    );
}

/// The context of `outputs.artifacts` when the run completes: [`build`]'s,
/// plus what strands-cli's execution context adds at the top level (a
/// variable of the run's own wins): `name`, `timestamp` (RFC 3339, now),
/// `total_steps` (agent steps run), `cumulative_tokens`, `runtime` (every
/// key of strands-cli's: `provider`, `model_id`, `region`, `host`,
/// `temperature`, `top_p`, `max_tokens`, `max_parallel`, `budgets`,
/// `failure_policy`; those the spec leaves out are none) and for a graph
/// `terminal_node`.
pub fn for_artifacts(
    spec: &Spec,
    session: &Session,
    now: chrono::DateTime<chrono::Utc>,
) -> minijinja::Value {
    let mut extra = Map::new();
    extra.insert("name".into(), Value::String(spec.name.clone()));
    extra.insert("timestamp".into(), Value::String(now.to_rfc3339()));
    extra.insert(
        "total_steps".into(),
        Value::from(pattern::agent_records(&session.state).len()),
    );
    let cp = &spec.context;
    extra.insert(
        "context_policy".into(),
        serde_json::json!({
            "compaction": cp.compaction.as_ref().map(|c| serde_json::json!({
                "enabled": true,
                "when_tokens_over": c.when_tokens_over,
                "summary_ratio": c.summary_ratio,
                "preserve_recent_messages": c.preserve_recent_messages,
                "summarization_model": c.summarization_model,
            })),
            "notes": cp.notes.as_ref().map(|n| serde_json::json!({
                "file": n.file.display().to_string(),
                "include_last": n.include_last,
            })),
            "retrieval": {"jit_tools": cp.jit_tools},
        }),
    );
    let tokens: u64 = session.usage.values().map(|u| u.total()).sum();
    extra.insert("cumulative_tokens".into(), Value::from(tokens));
    let rt = &spec.runtime;
    extra.insert(
        "runtime".into(),
        serde_json::json!({
            "provider": rt.provider,
            "model_id": rt.model_id,
            "host": rt.host,
            "region": rt.region,
            "temperature": rt.temperature,
            "top_p": rt.top_p,
            "max_tokens": rt.max_tokens,
            "max_parallel": rt.max_parallel,
            "budgets": rt.budgets,
            "failure_policy": rt.failure_policy,
        }),
    );
    match &session.state {
        crate::model::PatternState::Graph(g) => {
            if let Some(last) = g.visits.last() {
                extra.insert("terminal_node".into(), Value::String(last.node.clone()));
            }
        }
        crate::model::PatternState::Routing(r) => {
            if let crate::spec::PatternSpec::Routing(p) = &spec.pattern {
                extra.insert("router_agent".into(), Value::String(p.router.agent.clone()));
            }
            if let Some(route) = &r.chosen {
                extra.insert("chosen_route".into(), Value::String(route.clone()));
            }
        }
        _ => {}
    }
    // strands-cli's `{{ TRACE }}`: the run's trace as pretty JSON (here the
    // session's event log, which is what it traced).
    let trace = serde_json::json!({
        "trace_id": session.id,
        "spec_name": spec.name,
        "pattern": spec.pattern.name(),
        "events": session.events,
    });
    extra.insert(
        "TRACE".into(),
        Value::String(serde_json::to_string_pretty(&trace).unwrap_or_default()),
    );
    let mut root = root(spec, session, None, None);
    for (k, v) in extra {
        root.entry(k).or_insert(v);
    }
    // strands-cli's graph results list every node, those never visited as
    // `not_executed` (so `{% if nodes.x %}` works in an artifact).
    if let (crate::spec::PatternSpec::Graph(g), Some(Value::Object(nodes))) =
        (&spec.pattern, root.get_mut("nodes"))
    {
        for n in &g.nodes {
            let agent = match &n.body {
                crate::spec::TaskBody::Agent(a) => Value::String(a.agent.clone()),
                crate::spec::TaskBody::Gate(_) => Value::Null,
            };
            nodes.entry(n.id.clone()).or_insert_with(|| {
                serde_json::json!({
                    "response": null,
                    "agent": agent,
                    "status": "not_executed",
                    "skipped": false,
                    "iteration": 0,
                    "visits": 0,
                })
            });
        }
    }
    minijinja::Value::from_serialize(root)
}

fn opt(v: &Option<String>) -> Value {
    v.as_ref()
        .map(|s| Value::String(s.clone()))
        .unwrap_or(Value::Null)
}
