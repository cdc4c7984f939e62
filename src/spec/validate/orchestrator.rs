//! Validation of the `orchestrator` pattern's config (stub: filled in by its owner).

use std::collections::BTreeMap;

use super::Validator;
use crate::spec::{AgentSpec, PatternSpec};

pub(super) type Config = serde::de::IgnoredAny;

impl Validator {
    pub(super) fn orchestrator(
        &mut self,
        _cfg: &Config,
        _agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        self.error((1, 1), "pattern `orchestrator` is not built yet", None);
        PatternSpec::Chain { steps: Vec::new() }
    }
}
