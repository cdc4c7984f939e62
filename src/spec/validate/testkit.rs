//! What the validator's unit tests share: a one-gate chain spec and the
//! gate (or the diagnostics) it validates to.

use std::path::Path;

use crate::error::{Diagnostic, Error};
use crate::spec::{parse, ChainStep, GateSpec, Limits, PatternSpec};

/// A chain: agent `a`, then one gate whose lines are `gate` (line 14 on).
pub fn spec(gate: &str) -> String {
    format!(
        "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  a:\n    prompt: hi\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n{gate}"
    )
}

/// The gate of a [`spec`] text, with the spec's warnings; panics with the
/// errors when it does not validate.
pub fn gate_with(text: &str, limits: &Limits) -> (GateSpec, Vec<String>) {
    match parse(text, Path::new("f.yaml"), limits) {
        Ok(s) => {
            let warnings = s.warnings.clone();
            match s.pattern {
                PatternSpec::Chain { steps } => match steps.into_iter().nth(1) {
                    Some(ChainStep::Gate(g)) => (g, warnings),
                    _ => panic!("no gate"),
                },
                _ => panic!("not a chain"),
            }
        }
        Err(e) => panic!("{e}\n{text}"),
    }
}

/// The gate of a [`spec`] text under the default limits.
pub fn gate_of(text: &str) -> GateSpec {
    gate_with(text, &Limits::default()).0
}

/// The diagnostics of a text that must not validate.
pub fn errors_with(text: &str, limits: &Limits) -> Vec<Diagnostic> {
    match parse(text, Path::new("f.yaml"), limits) {
        Err(Error::Spec(d)) => d,
        other => panic!("expected diagnostics, got {other:?}"),
    }
}

/// [`errors_with`] under the default limits.
pub fn errors(text: &str) -> Vec<Diagnostic> {
    errors_with(text, &Limits::default())
}
