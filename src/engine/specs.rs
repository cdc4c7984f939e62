//! Parsed specs, by the SHA-256 of their text: a session runs the spec
//! snapshot it started with, and a click or a drive never re-parses YAML
//! for a snapshot this process has seen. Bounded: past [`MAX_SPECS`]
//! distinct snapshots the cache starts over.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::model::Session;
use crate::spec::{self, Spec};

/// Distinct spec snapshots kept at most.
pub const MAX_SPECS: usize = 256;

#[derive(Default)]
pub struct SpecCache {
    specs: Mutex<HashMap<String, Arc<Spec>>>,
    limits: spec::Limits,
}

impl SpecCache {
    /// A cache whose specs are validated within `limits`.
    pub fn new(limits: spec::Limits) -> Self {
        SpecCache {
            specs: Mutex::new(HashMap::new()),
            limits,
        }
    }

    /// The spec of `session`'s snapshot.
    pub fn get(&self, session: &Session) -> Result<Arc<Spec>> {
        if let Some(s) = self
            .specs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&session.spec_hash)
        {
            return Ok(Arc::clone(s));
        }
        let parsed = Arc::new(spec::parse(
            &session.spec_snapshot,
            Path::new(&session.spec_path),
            &self.limits,
        )?);
        let mut cache = self.specs.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_SPECS {
            cache.clear();
        }
        cache.insert(session.spec_hash.clone(), Arc::clone(&parsed));
        Ok(parsed)
    }
}
