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
    minijinja::Value::from_serialize(&root)
}

fn opt(v: &Option<String>) -> Value {
    v.as_ref()
        .map(|s| Value::String(s.clone()))
        .unwrap_or(Value::Null)
}
