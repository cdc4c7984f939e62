//! Agents brought in by `$ref` (strands-cli's atomic agents): `spec::refs`
//! has already put the referenced definition on the `$ref` line as
//! `$atomic: {ref, agent}`; here it is merged under the fields written
//! beside the reference, which win, as strands-cli does. Every problem in
//! the referenced agent is reported at that line, naming the file.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::raw::{self, Inference, S};
use super::{at, Validator};

impl Validator {
    /// Agent `id` as it runs: the atomic definition with `a`'s overrides;
    /// `None` once a problem has been reported.
    pub(super) fn atomic_agent(
        &mut self,
        id: &str,
        a: &raw::Agent,
        atomic: &S<Value>,
    ) -> Option<raw::Agent> {
        let reference = atomic.value["ref"].as_str().unwrap_or("?").to_string();
        let def: raw::AtomicAgent = match serde_json::from_value(atomic.value["agent"].clone()) {
            Ok(d) => d,
            Err(e) => {
                self.error(
                    at(atomic),
                    format!("agent `{id}` (from `{reference}`): {e}"),
                    Some("an atomic agent has a `prompt` and the usual agent fields".into()),
                );
                return None;
            }
        };
        if a.prompt.is_some() {
            self.error(
                at(atomic),
                format!("agent `{id}` has both `$ref` and `prompt`"),
                Some("the prompt comes from the referenced file; remove one".into()),
            );
            return None;
        }
        let own = a.inference.as_ref();
        let theirs = def.inference.as_ref();
        let inference = Inference {
            temperature: a
                .temperature
                .or(own.and_then(|i| i.temperature))
                .or(def.temperature)
                .or(theirs.and_then(|i| i.temperature)),
            top_p: a
                .top_p
                .or(own.and_then(|i| i.top_p))
                .or(def.top_p)
                .or(theirs.and_then(|i| i.top_p)),
            max_tokens: a
                .max_tokens
                .or(own.and_then(|i| i.max_tokens))
                .or(def.max_tokens)
                .or(theirs.and_then(|i| i.max_tokens)),
        };
        Some(raw::Agent {
            prompt: Some(Spanned::new(def.prompt, atomic.referenced, atomic.defined)),
            atomic: None,
            description: a.description.clone().or(def.description),
            tools: a.tools.clone().or_else(|| {
                def.tools.map(|l| {
                    l.into_iter()
                        .map(|t| Spanned::new(t, atomic.referenced, atomic.defined))
                        .collect()
                })
            }),
            allowed_tools: a.allowed_tools.clone().or_else(|| {
                def.allowed_tools.map(|l| {
                    l.into_iter()
                        .map(|t| Spanned::new(t, atomic.referenced, atomic.defined))
                        .collect()
                })
            }),
            enable_trust: a.enable_trust.or(def.enable_trust),
            max_turns: a.max_turns.or(def.max_turns),
            provider: a.provider.clone().or_else(|| {
                def.provider
                    .map(|p| Spanned::new(p, atomic.referenced, atomic.defined))
            }),
            model_id: a.model_id.clone().or(def.model_id),
            inference: Some(inference),
            temperature: None,
            top_p: None,
            max_tokens: None,
            input_schema: def
                .input_schema
                .map(|v| Spanned::new(v, atomic.referenced, atomic.defined)),
            output_schema: def
                .output_schema
                .map(|v| Spanned::new(v, atomic.referenced, atomic.defined)),
        })
    }
}

impl Validator {
    /// The line of `agents.<id>:` (for problems of the agent as a whole).
    pub(super) fn agent_line(&self, id: &str) -> (u32, u32) {
        let mut in_agents = false;
        for (n, line) in self.text.lines().enumerate() {
            if line.starts_with("agents:") {
                in_agents = true;
                continue;
            }
            if in_agents
                && !line.starts_with(' ')
                && !line.trim().is_empty()
                && !line.starts_with('#')
            {
                in_agents = false;
            }
            let t = line.trim_start();
            if in_agents
                && (t.starts_with(&format!("{id}:")) || t.starts_with(&format!("\"{id}\":")))
            {
                return (n as u32 + 1, (line.len() - t.len()) as u32 + 1);
            }
        }
        (1, 1)
    }
}
