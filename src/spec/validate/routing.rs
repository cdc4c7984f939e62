//! Validation of the `routing` pattern: `router {agent, input?, vars?,
//! max_retries?, review_router?}` and `routes.<name>.then[]` (each route a
//! little chain of agent steps and gates), in file order.
//!
//! Routes are kept in the order they are written (a YAML mapping, read
//! here key by key), because messages list them and the first one written
//! is what a reader expects to see first. The review gate's `default` is
//! checked against the answers the review takes, so a timeout can never
//! record an answer that would fail the run later.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::raw::{Step, S};
use super::{at, Body, Validator};
use crate::spec::{AgentSpec, AgentStep, ChainStep, GateKind, PatternSpec, Route, RoutingSpec};

/// Re-asks of the router when `max_retries` is not given (strands-cli's default).
const DEFAULT_MAX_RETRIES: u32 = 2;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    pub router: S<RouterConfig>,
    pub routes: S<RouteMap>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RouterConfig {
    pub agent: S<String>,
    pub input: Option<S<String>>,
    pub vars: Option<Map<String, Value>>,
    /// Signed so that a negative number is reported here, not as a type error.
    pub max_retries: Option<S<i64>>,
    pub review_router: Option<S<Step>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RouteConfig {
    pub then: Option<S<Vec<S<Step>>>>,
}

/// `routes:` as written: `(name, route)` pairs in file order.
#[derive(Debug)]
pub(super) struct RouteMap(pub Vec<(S<String>, S<RouteConfig>)>);

impl<'de> Deserialize<'de> for RouteMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = RouteMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of route names to `{then: [steps]}`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RouteMap, A::Error> {
                let mut out = Vec::new();
                while let Some(name) = map.next_key::<S<String>>()? {
                    let route = map.next_value::<S<RouteConfig>>()?;
                    out.push((name, route));
                }
                Ok(RouteMap(out))
            }
        }
        d.deserialize_map(Pairs)
    }
}

impl Validator {
    pub(super) fn routing(
        &mut self,
        cfg: &Config,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        let r = &cfg.router.value;
        let agent = r.agent.value.trim().to_string();
        if !agents.contains_key(&agent) {
            let known: Vec<&str> = agents.keys().map(String::as_str).collect();
            self.error(
                at(&r.agent),
                format!("router uses undefined agent `{agent}`"),
                Some(format!("defined agents: {}", known.join(", "))),
            );
        }
        if let Some(input) = &r.input {
            self.template(input, "the input of the router");
        }
        let max_retries = match &r.max_retries {
            None => DEFAULT_MAX_RETRIES,
            Some(m) => match u32::try_from(m.value) {
                Ok(n) => n,
                Err(_) => {
                    self.error(
                        at(m),
                        format!("router.max_retries is {}; it counts re-asks, 0 or more", m.value),
                        Some(format!(
                            "max_retries: {DEFAULT_MAX_RETRIES}   # re-ask a router whose reply names no route twice"
                        )),
                    );
                    DEFAULT_MAX_RETRIES
                }
            },
        };

        let routes = self.routes(&cfg.routes, agents);
        let names: Vec<&str> = routes.iter().map(|r| r.name.as_str()).collect();

        let review = r.review_router.as_ref().and_then(|st| {
            match self.step(st, "router.review_router", false, agents, "review_router")? {
                Body::Gate(g) => Some(g),
                Body::Agent(_) => {
                    self.error(
                        at(st),
                        "router.review_router is a human gate, not an agent step",
                        Some("review_router: {type: hitl, prompt: \"Approve the route?\"}   # answered `approved` or `route:<name>`".into()),
                    );
                    None
                }
            }
        });
        if let (Some(g), Some(st)) = (&review, &r.review_router) {
            match g.kind {
                GateKind::Hitl => {
                    if let (Some(d), Some(raw)) = (&g.default, &st.value.default) {
                        if let Err(valid) = crate::spec::routing::review_answer(d, &names) {
                            self.error(
                                at(raw),
                                format!("router.review_router: default `{}` is not an answer the review takes", d.trim()),
                                Some(format!("valid answers: {valid}")),
                            );
                        }
                    }
                }
                _ => self.warnings.push(format!(
                    "{}: router.review_router is a manual_gate: it approves or rejects the router's pick but cannot override it (`route:<name>` needs `type: hitl`)",
                    self.file
                )),
            }
        }

        // The review's id must not be a route gate's (those are checked in `routes`).
        if let (Some(g), Some(st)) = (&review, &r.review_router) {
            let clash = routes
                .iter()
                .flat_map(|r| &r.steps)
                .any(|s| matches!(s, ChainStep::Gate(rg) if rg.id == g.id));
            if clash {
                self.error(
                    at(st),
                    format!("gate id `{}` is used twice", g.id),
                    Some("gate ids must be unique across the review and every route".into()),
                );
            }
        }

        PatternSpec::Routing(RoutingSpec {
            router: AgentStep {
                agent,
                input: r.input.as_ref().map(|i| i.value.clone()),
                vars: r.vars.clone().unwrap_or_default(),
                tools: None,
            },
            max_retries,
            review,
            routes,
        })
    }

    /// `routes.<name>.then[]`, each step checked like a chain step.
    fn routes(&mut self, routes: &S<RouteMap>, agents: &BTreeMap<String, AgentSpec>) -> Vec<Route> {
        if routes.value.0.is_empty() {
            self.error(
                at(routes),
                "routing has no routes",
                Some("routes:\n  general:\n    then:\n      - agent: helper".into()),
            );
        }
        let mut seen = BTreeSet::new();
        let mut gate_ids = BTreeSet::new();
        let mut out = Vec::new();
        for (name, route) in &routes.value.0 {
            let n = name.value.trim().to_string();
            if n.is_empty() || n.chars().any(char::is_whitespace) {
                self.error(
                    at(name),
                    format!("route name `{}` is empty or has spaces", name.value),
                    Some("name routes like `billing` or `tech-support`: the router answers {\"route\": \"<name>\"}".into()),
                );
                continue;
            }
            if !seen.insert(n.clone()) {
                self.error(
                    at(name),
                    format!("route `{n}` is defined twice"),
                    Some("route names must be unique".into()),
                );
                continue;
            }
            let mut steps = Vec::new();
            match &route.value.then {
                Some(then) if !then.value.is_empty() => {
                    for (i, st) in then.value.iter().enumerate() {
                        let label = format!("routes.{n}.then[{i}]");
                        match self.step(st, &label, false, agents, &format!("{n}.step{i}")) {
                            Some(Body::Agent(a)) => steps.push(ChainStep::Agent(a)),
                            Some(Body::Gate(g)) => {
                                if !gate_ids.insert(g.id.clone()) {
                                    self.error(
                                        at(st),
                                        format!("gate id `{}` is used twice", g.id),
                                        Some("gate ids must be unique across the review and every route".into()),
                                    );
                                }
                                steps.push(ChainStep::Gate(g))
                            }
                            None => {}
                        }
                    }
                }
                _ => self.warnings.push(format!(
                    "{}:{}: route `{n}` has no steps; when it is chosen, the router's reply is the output",
                    self.file,
                    at(route).0
                )),
            }
            out.push(Route { name: n, steps });
        }
        out
    }
}
