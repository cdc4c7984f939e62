//! The variables templates see (SPEC.md): the inputs, `steps[n].response`,
//! `tasks.<id>.response`, `hitl_response`, `human_feedback`,
//! `last_response`, plus a step's own `vars`.
//!
//! `hitl_response` and `human_feedback` are always defined (none until set),
//! so `{% if human_feedback %}` works on the first run as well as the re-run.

use serde_json::{json, Map, Value};

use super::pattern::last_response;
use crate::session::{PatternState, RecordKind, Session, StepRecord};

fn rec(r: &StepRecord) -> Value {
    json!({
        "response": r.response,
        "agent": r.agent,
        "skipped": r.kind == RecordKind::Skipped,
    })
}

pub fn build(session: &Session, step_vars: Option<&Map<String, Value>>) -> minijinja::Value {
    let mut root = session.variables.clone();
    if let Some(v) = step_vars {
        for (k, val) in v {
            root.insert(k.clone(), val.clone());
        }
    }
    match &session.state {
        PatternState::Chain { steps, .. } => {
            let list: Vec<Value> = steps
                .iter()
                .map(|s| s.as_ref().map(rec).unwrap_or(Value::Null))
                .collect();
            root.insert("steps".into(), Value::Array(list));
        }
        PatternState::Workflow { tasks } => {
            let map: Map<String, Value> = tasks.iter().map(|(k, r)| (k.clone(), rec(r))).collect();
            root.insert("tasks".into(), Value::Object(map));
        }
    }
    root.insert("hitl_response".into(), opt(&session.hitl_response));
    root.insert("human_feedback".into(), opt(&session.human_feedback));
    root.insert("last_response".into(), opt(&last_response(&session.state)));
    minijinja::Value::from_serialize(&root)
}

fn opt(v: &Option<String>) -> Value {
    v.as_ref()
        .map(|s| Value::String(s.clone()))
        .unwrap_or(Value::Null)
}
