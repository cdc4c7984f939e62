//! The `routing` pattern: a router agent picks a route, a human may review
//! the pick, then the chosen route's steps run as a chain.
//!
//! - The router's reply is JSON `{"route": "<name>", "reasoning"?: ...}`,
//!   bare, in a ```json fence, or the first object in the text. A reply
//!   that names no valid route is re-asked (up to `max_retries` times) with
//!   the reply and the valid routes; then the run fails, quoting the reply.
//!   Every reply is kept in the state, so a resume never re-asks more.
//! - `router.review_router` opens after the pick: `approved` keeps it,
//!   `route:<name>` overrides it, anything else is refused (listing the
//!   valid answers). Modify re-runs the router with the feedback.
//! - Gates inside a route are chain gates: modify re-runs the route's
//!   previous agent step (or the router, for a gate that opens the route);
//!   a `hitl` answer is the step's response.
//!
//! Model text never becomes template source: the re-ask carries the bad
//! reply in the step's `vars` (`router_retry.reply`), and the feedback note
//! reads `human_feedback` from the context.

use serde_json::{Map, Value};
use std::borrow::Cow;

use super::{mismatch, rec, slots, Next, Work};
use crate::error::{Error, Result};
pub use crate::model::pattern::routing::State;
use crate::model::Position;
use crate::model::{RecordKind, StepRecord};
use crate::spec::routing::{review_answer, ReviewAnswer};
use crate::spec::{AgentStep, ChainStep, Route, RoutingSpec};

/// The first JSON object in a model's reply that has `key`: the whole
/// reply, a fenced block (```json ... ```), or any `{...}` in the text, in
/// that order. Shared with the evaluator, whose replies are read the same way.
pub fn json_object_with(text: &str, key: &str) -> Option<Map<String, Value>> {
    let wanted = |v: Value| match v {
        Value::Object(m) if m.contains_key(key) => Some(m),
        _ => None,
    };
    let t = text.trim();
    if let Some(m) = serde_json::from_str::<Value>(t).ok().and_then(wanted) {
        return Some(m);
    }
    let mut rest = t;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let Some(close) = after.find("```") else {
            break;
        };
        let block = &after[..close];
        // Skip the info string (`json`) on the fence's first line.
        let body = match block.find('\n') {
            Some(nl) if !block[..nl].trim_start().starts_with('{') => &block[nl + 1..],
            _ => block,
        };
        if let Some(m) = serde_json::from_str::<Value>(body.trim())
            .ok()
            .and_then(wanted)
        {
            return Some(m);
        }
        rest = &after[close + 3..];
    }
    // Any object in the text; a bounded number of tries for long replies.
    for (i, _) in t.match_indices('{').take(200) {
        let mut values = serde_json::Deserializer::from_str(&t[i..]).into_iter::<Value>();
        if let Some(m) = values.next().and_then(|v| v.ok()).and_then(wanted) {
            return Some(m);
        }
    }
    None
}

/// A reply cut for messages: trimmed, at most `max` characters.
pub fn quote(text: &str, max: usize) -> String {
    let t = text.trim();
    let (cut, more) = crate::model::cut(t, max);
    if more > 0 {
        format!("{cut}…")
    } else {
        cut
    }
}

/// Appended to the router's first input (as strands-cli does).
const JSON_HINT: &str = "Respond with valid JSON: {\"route\": \"<route_name>\"}";

/// The re-ask after a reply that named no valid route; the reply and the
/// routes come from the step's vars.
const RETRY_NOTE: &str = "Your previous reply did not name a valid route ({{ router_retry.problem }}):\n{{ router_retry.reply }}\n\nRespond with ONLY valid JSON: {\"route\": \"<route_name>\"}, where <route_name> is one of: {{ router_retry.routes|join(\", \") }}";

/// Added to the router's input when it runs again after a reviewer's feedback.
const FEEDBACK_NOTE: &str =
    "{% if human_feedback %}Feedback from a human reviewer on the previous routing decision:\n{{ human_feedback }}{% endif %}";

pub fn initial(_spec: &RoutingSpec) -> State {
    State::default()
}

fn route<'s>(spec: &'s RoutingSpec, name: &str) -> Result<&'s Route> {
    spec.routes
        .iter()
        .find(|r| r.name == name)
        .ok_or_else(mismatch)
}

fn route_names(spec: &RoutingSpec) -> Vec<&str> {
    spec.routes.iter().map(|r| r.name.as_str()).collect()
}

pub fn next<'s>(spec: &'s RoutingSpec, st: &State) -> Result<Next<'s>> {
    let Some(chosen) = &st.chosen else {
        return Ok(Next::Run(vec![router_work(spec, st)]));
    };
    if let (Some(gate), None) = (&spec.review, &st.review) {
        return Ok(Next::gate(Position::RouterReview, gate));
    }
    let r = route(spec, chosen)?;
    let i = (0..r.steps.len())
        .find(|&i| st.steps.get(i).is_none_or(Option::is_none))
        .unwrap_or(r.steps.len());
    let position = Position::Route {
        route: r.name.clone(),
        step: i,
    };
    match r.steps.get(i) {
        Some(ChainStep::Agent(step)) => Ok(Next::Run(vec![Work::borrowed(position, step)])),
        Some(ChainStep::Gate(gate)) => Ok(Next::gate(position, gate)),
        None => Ok(Next::Done {
            output: last_response(st).unwrap_or_default(),
        }),
    }
}

/// The router's step for its next attempt: the spec's input (with the JSON
/// hint), plus the re-ask note after a bad reply and the feedback note
/// after a reviewer's modify.
fn router_work<'s>(spec: &'s RoutingSpec, st: &State) -> Work<'s> {
    let base = spec.router.input.as_deref();
    let first = st.attempts.is_empty();
    let mut parts: Vec<String> = Vec::new();
    let mut vars = spec.router.vars.clone();
    match (base, first) {
        (Some(b), true) => parts.push(format!("{}\n\n{JSON_HINT}", b.trim_end())),
        (Some(b), false) => parts.push(b.trim_end().to_string()),
        (None, _) => {}
    }
    if let Some(bad) = st.attempts.last() {
        let problem = parse_route(spec, &bad.response)
            .err()
            .unwrap_or_else(|| "no valid route".into());
        vars.insert(
            "router_retry".into(),
            serde_json::json!({
                "reply": quote(&bad.response, 2000),
                "problem": problem,
                "routes": route_names(spec),
                "attempt": st.attempts.len() + 1,
            }),
        );
        parts.push(RETRY_NOTE.to_string());
    }
    if st.feedback && !base.is_some_and(|b| b.contains("human_feedback")) {
        parts.push(FEEDBACK_NOTE.to_string());
        if base.is_none() && first {
            // No input of its own: the router's instructions are its system
            // prompt, and the note is the message.
            parts.push(JSON_HINT.to_string());
        }
    }
    // Without an input, a first attempt gets the engine's default (the
    // agent's own prompt), as strands-cli does.
    let input = (!parts.is_empty()).then(|| parts.join("\n\n"));
    Work {
        position: Position::Router,
        step: Cow::Owned(AgentStep {
            agent: spec.router.agent.clone(),
            input,
            vars,
            tools: None,
        }),
    }
}

/// The route a router reply names, and its reasoning; or what is wrong.
fn parse_route(
    spec: &RoutingSpec,
    reply: &str,
) -> std::result::Result<(String, Option<String>), String> {
    let Some(obj) = json_object_with(reply, "route") else {
        return Err("no JSON object with a \"route\" field".into());
    };
    let Some(name) = obj.get("route").and_then(Value::as_str) else {
        return Err("\"route\" is not a string".into());
    };
    let name = name.trim();
    let found = spec.routes.iter().find(|r| r.name == name).or_else(|| {
        spec.routes
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    });
    let Some(r) = found else {
        return Err(format!("`{name}` is not a route"));
    };
    let reasoning = match obj.get("reasoning") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    Ok((r.name.clone(), reasoning))
}

/// Starts a route: fresh slots for its steps.
fn choose(spec: &RoutingSpec, st: &mut State, name: &str) -> Result<()> {
    let r = route(spec, name)?;
    st.chosen = Some(r.name.clone());
    st.steps = vec![None; r.steps.len()];
    Ok(())
}

/// Back to before the router ran (a modify at the review, or at a gate
/// that opens the route).
fn restart(st: &mut State) {
    *st = State {
        feedback: true,
        ..State::default()
    };
}

pub fn record(
    spec: &RoutingSpec,
    st: &mut State,
    position: &Position,
    r: StepRecord,
) -> Result<()> {
    match position {
        Position::Router => {
            let reply = r.response.clone();
            st.attempts.push(r);
            match parse_route(spec, &reply) {
                Ok((name, reasoning)) => {
                    st.picked = Some(name.clone());
                    st.reasoning = reasoning;
                    st.review = None;
                    choose(spec, st, &name)
                }
                Err(problem) if st.attempts.len() as u64 > u64::from(spec.max_retries) => {
                    Err(Error::Runtime(format!(
                        "the router (agent `{}`) named no valid route in {} attempt{} (max_retries: {}): {problem}; valid routes: {}; its last reply: \"{}\"",
                        spec.router.agent,
                        st.attempts.len(),
                        if st.attempts.len() == 1 { "" } else { "s" },
                        spec.max_retries,
                        route_names(spec).join(", "),
                        quote(&reply, 300)
                    )))
                }
                Err(_) => Ok(()),
            }
        }
        Position::RouterReview => {
            if st.chosen.is_none() {
                return Err(mismatch());
            }
            if r.kind != RecordKind::Skipped {
                match review_answer(&r.response, &route_names(spec)) {
                    Ok(ReviewAnswer::Approved) => {}
                    Ok(ReviewAnswer::Route(name)) => {
                        if st.chosen.as_deref() != Some(name.as_str()) {
                            choose(spec, st, &name)?;
                        }
                    }
                    Err(valid) => {
                        return Err(Error::Runtime(format!(
                            "the router review's answer `{}` is not one it takes ({valid})",
                            r.response.trim()
                        )))
                    }
                }
            }
            st.review = Some(r);
            Ok(())
        }
        Position::Route { route: name, step } => {
            if st.chosen.as_deref() != Some(name.as_str()) {
                return Err(mismatch());
            }
            let slot = st.steps.get_mut(*step).ok_or_else(mismatch)?;
            *slot = Some(r);
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

pub fn check_response(
    spec: &RoutingSpec,
    _st: &State,
    position: &Position,
    response: &str,
) -> Result<()> {
    if *position != Position::RouterReview {
        return Ok(());
    }
    review_answer(response, &route_names(spec))
        .map(|_| ())
        .map_err(|valid| {
            Error::Usage(format!(
                "the router review takes `approved` or `route:<name>`, not `{}`; valid answers: {valid}",
                response.trim()
            ))
        })
}

pub fn rejects(_spec: &RoutingSpec, _position: &Position, _response: &str) -> Option<String> {
    None
}

/// The review's modify re-runs the router; a route gate's re-runs the
/// route's previous agent step, or the router when the gate opens the route.
pub fn rerun_targets(spec: &RoutingSpec, _st: &State, gate: &Position) -> Vec<Position> {
    match gate {
        Position::RouterReview => vec![Position::Router],
        Position::Route { route: name, step } => {
            let Some(r) = spec.routes.iter().find(|r| &r.name == name) else {
                return Vec::new();
            };
            let before = &r.steps[..(*step).min(r.steps.len())];
            match before
                .iter()
                .rposition(|s| matches!(s, ChainStep::Agent(_)))
            {
                Some(p) => vec![Position::Route {
                    route: name.clone(),
                    step: p,
                }],
                None => vec![Position::Router],
            }
        }
        _ => Vec::new(),
    }
}

pub fn rewind(spec: &RoutingSpec, st: &mut State, gate: &Position) -> Result<()> {
    match (rerun_targets(spec, st, gate).first(), gate) {
        (Some(Position::Router), _) => {
            restart(st);
            Ok(())
        }
        (Some(Position::Route { step: first, .. }), Position::Route { step: until, .. }) => {
            for slot in st.steps.iter_mut().take(until + 1).skip(*first) {
                *slot = None;
            }
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

/// A triggered gate's modify re-runs the step it reviewed.
pub fn forget(st: &mut State, position: &Position) -> Result<()> {
    match position {
        Position::Router => {
            restart(st);
            Ok(())
        }
        Position::RouterReview => {
            st.review = None;
            Ok(())
        }
        Position::Route { route: name, step } if st.chosen.as_deref() == Some(name.as_str()) => {
            for slot in st.steps.iter_mut().skip(*step) {
                *slot = None;
            }
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

/// The route's last output; before the route has any, the router's reply.
/// The review's answer is a decision, not content, and never counts.
pub fn last_response(st: &State) -> Option<String> {
    st.steps
        .iter()
        .rev()
        .flatten()
        .find(|r| r.kind.has_output())
        .or(st.attempts.last())
        .map(|r| r.response.clone())
}

pub fn agent_records(st: &State) -> Vec<(Position, &StepRecord)> {
    let mut out: Vec<(Position, &StepRecord)> =
        st.attempts.iter().map(|r| (Position::Router, r)).collect();
    if let Some(name) = &st.chosen {
        for (i, r) in st.steps.iter().enumerate() {
            if let Some(r) = r {
                out.push((
                    Position::Route {
                        route: name.clone(),
                        step: i,
                    },
                    r,
                ));
            }
        }
    }
    out
}

/// `router.chosen_route`, `router.response` (the router's raw reply),
/// `router.reasoning` (null when not given), `router.picked_route` (before
/// any override) and `router.overridden`; `steps[i].response` for the
/// chosen route's steps.
pub fn template_vars(
    _spec: &RoutingSpec,
    st: &State,
    root: &mut Map<String, Value>,
    _at: Option<&Position>,
) {
    let response = st
        .attempts
        .last()
        .map(|r| Value::String(r.response.clone()))
        .unwrap_or(Value::Null);
    root.insert(
        "router".into(),
        serde_json::json!({
            "chosen_route": st.chosen,
            "picked_route": st.picked,
            "overridden": st.chosen.is_some() && st.chosen != st.picked,
            "response": response,
            "reasoning": st.reasoning,
            "attempts": st.attempts.len(),
            "review": st.review.as_ref().map(rec),
        }),
    );
    root.insert("steps".into(), slots(&st.steps));
}

pub fn finished(st: &State) -> usize {
    st.attempts.len() + usize::from(st.review.is_some()) + st.steps.iter().flatten().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_bare_fenced_or_embedded() {
        let bare = json_object_with(r#" {"route": "billing"} "#, "route");
        assert_eq!(
            bare.and_then(|m| m.get("route").cloned()),
            Some("billing".into())
        );
        let fenced = json_object_with(
            "Sure!\n```json\n{\"route\": \"technical\", \"reasoning\": \"login\"}\n```\nbye",
            "route",
        );
        assert_eq!(
            fenced.and_then(|m| m.get("reasoning").cloned()),
            Some("login".into())
        );
        let embedded = json_object_with(
            "I think {not json} then {\"route\": \"general\", \"x\": {\"y\": 1}} ok",
            "route",
        );
        assert_eq!(
            embedded.and_then(|m| m.get("route").cloned()),
            Some("general".into())
        );
        assert!(json_object_with("no json here", "route").is_none());
        assert!(json_object_with("{\"other\": 1}", "route").is_none());
    }

    fn spec(extra: &str) -> RoutingSpec {
        let text = format!(
            "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  r:\n    prompt: R\n  a:\n    prompt: A\npattern:\n  type: routing\n  config:\n    router:\n      agent: r\n      input: classify\n      max_retries: 1\n{extra}    routes:\n      one:\n        then:\n          - agent: a\n      two:\n        then:\n          - type: manual_gate\n            prompt: ok?\n          - agent: a\n"
        );
        match crate::spec::parse(
            &text,
            std::path::Path::new("t.yaml"),
            &crate::spec::Limits::default(),
        ) {
            Ok(s) => match s.pattern {
                crate::spec::PatternSpec::Routing(p) => p,
                _ => panic!("not a routing spec"),
            },
            Err(e) => panic!("{e}"),
        }
    }

    fn reply(text: &str) -> StepRecord {
        StepRecord {
            agent: Some("r".into()),
            response: text.into(),
            kind: RecordKind::Agent,
            finished_at: crate::clock::test_epoch(),
        }
    }

    fn router_input(spec: &RoutingSpec, st: &State) -> Option<String> {
        match next(spec, st) {
            Ok(Next::Run(w)) if w[0].position == Position::Router => w[0].step.input.clone(),
            _ => panic!("the router runs next"),
        }
    }

    #[test]
    fn retries_are_counted_in_the_state_and_then_fail() {
        let spec = spec("");
        let mut st = initial(&spec);
        assert_eq!(
            router_input(&spec, &st).as_deref(),
            Some("classify\n\nRespond with valid JSON: {\"route\": \"<route_name>\"}")
        );
        record(&spec, &mut st, &Position::Router, reply("hmm")).unwrap();
        let retry = router_input(&spec, &st).unwrap_or_default();
        assert!(
            retry.starts_with("classify\n\nYour previous reply"),
            "{retry}"
        );
        assert!(
            !retry.contains("hmm"),
            "the reply is data, not template: {retry}"
        );
        let err = record(
            &spec,
            &mut st,
            &Position::Router,
            reply("{\"route\": \"three\"}"),
        );
        let Err(Error::Runtime(msg)) = err else {
            panic!("fails: {err:?}")
        };
        assert!(
            msg.contains(
                "2 attempts (max_retries: 1): `three` is not a route; valid routes: one, two"
            ),
            "{msg}"
        );
    }

    #[test]
    fn a_gate_that_opens_a_route_reruns_the_router() {
        let spec = spec("");
        let mut st = initial(&spec);
        record(
            &spec,
            &mut st,
            &Position::Router,
            reply("{\"route\": \"TWO\"}"),
        )
        .unwrap();
        assert_eq!(st.chosen.as_deref(), Some("two"));
        let gate = Position::Route {
            route: "two".into(),
            step: 0,
        };
        assert!(matches!(next(&spec, &st), Ok(Next::Gates(_))));
        assert_eq!(rerun_targets(&spec, &st, &gate), vec![Position::Router]);
        rewind(&spec, &mut st, &gate).unwrap();
        assert!(st.chosen.is_none() && st.attempts.is_empty() && st.feedback);
        let input = router_input(&spec, &st).unwrap_or_default();
        assert!(input.contains("{{ human_feedback }}"), "{input}");
    }
}
