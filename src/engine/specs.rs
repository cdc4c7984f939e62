//! Parsed specs, by the SHA-256 of their text: a session runs the spec
//! snapshot it started with, and a click or a drive never re-parses YAML
//! for a snapshot this process has seen. A run this process creates puts
//! its spec in at once: an approval request's spec is its own, and was
//! parsed a moment ago to validate it, so its first drive would otherwise
//! parse it again. Bounded: two generations of at most [`MAX_SPECS`]
//! distinct snapshots; when the newer fills, the older is dropped, so a
//! burst of new specs does not push out the ones still to be driven.

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
    specs: Mutex<Generations>,
    limits: spec::Limits,
}

/// The newer generation, and the older one (looked in second, moved up
/// when used).
#[derive(Default)]
struct Generations {
    newer: HashMap<String, Arc<Spec>>,
    older: HashMap<String, Arc<Spec>>,
}

impl Generations {
    fn get(&mut self, hash: &str) -> Option<Arc<Spec>> {
        if let Some(s) = self.newer.get(hash) {
            return Some(Arc::clone(s));
        }
        let s = self.older.remove(hash)?;
        self.put(hash.to_string(), Arc::clone(&s));
        Some(s)
    }

    fn put(&mut self, hash: String, spec: Arc<Spec>) {
        if self.newer.len() >= MAX_SPECS {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(hash, spec);
    }
}

impl SpecCache {
    /// A cache whose specs are validated within `limits`.
    pub fn new(limits: spec::Limits) -> Self {
        SpecCache {
            specs: Mutex::new(Generations::default()),
            limits,
        }
    }

    /// The spec of `session`'s snapshot.
    pub fn get(&self, session: &Session) -> Result<Arc<Spec>> {
        if let Some(s) = self.lock().get(&session.spec_hash) {
            return Ok(s);
        }
        let parsed = Arc::new(spec::parse(
            &session.spec_snapshot,
            Path::new(&session.spec_path),
            &self.limits,
        )?);
        self.lock()
            .put(session.spec_hash.clone(), Arc::clone(&parsed));
        Ok(parsed)
    }

    /// The spec of `text` (read from `path`, for its errors): the one
    /// parsed before, or parsed and validated now and kept. Requests built
    /// from one shape (approval requests) parse their spec once.
    pub fn parsed(&self, text: &str, path: &Path) -> Result<Arc<Spec>> {
        let hash = spec::sha256_hex(text);
        if let Some(s) = self.lock().get(&hash) {
            return Ok(s);
        }
        let parsed = Arc::new(spec::parse(text, path, &self.limits)?);
        // Keyed by what a session's snapshot is looked up by (the same
        // hash, unless the text named files to inline).
        self.lock().put(parsed.hash.clone(), Arc::clone(&parsed));
        Ok(parsed)
    }

    /// Keeps `spec`, just parsed and validated, for the runs of its text.
    pub fn put(&self, spec: &Spec) {
        let mut specs = self.lock();
        if specs.get(&spec.hash).is_none() {
            specs.put(spec.hash.clone(), Arc::new(spec.clone()));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        self.specs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(n: usize) -> Spec {
        let yaml = format!(
            "version: 0\nname: s{n}\nruntime:\n  provider: openai\n  model_id: m\nagents:\n  a:\n    prompt: p\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n        input: hi\n"
        );
        spec::parse(&yaml, Path::new("t.yaml"), &spec::Limits::default()).expect("valid")
    }

    #[test]
    fn a_text_parsed_once_is_shared_and_a_bad_one_is_refused() {
        let cache = SpecCache::default();
        let text = spec(1).text;
        let a = cache.parsed(&text, Path::new("t.yaml")).expect("valid");
        let b = cache.parsed(&text, Path::new("t.yaml")).expect("valid");
        assert!(Arc::ptr_eq(&a, &b), "parsed once");
        let other = cache
            .parsed(&spec(2).text, Path::new("t.yaml"))
            .expect("valid");
        assert!(!Arc::ptr_eq(&a, &other));
        let err = cache
            .parsed("version: 0\nname: [", Path::new("bad.yaml"))
            .expect_err("refused");
        assert!(err.to_string().contains("bad.yaml"), "{err}");
    }

    #[test]
    fn a_put_spec_is_found_and_the_newest_outlive_a_burst() {
        let cache = SpecCache::default();
        let first = spec(0);
        cache.put(&first);
        assert!(cache.lock().get(&first.hash).is_some());
        // A burst of new specs: the last MAX_SPECS are all still there.
        let burst: Vec<Spec> = (1..=MAX_SPECS * 2 + 10).map(spec).collect();
        for s in &burst {
            cache.put(s);
        }
        for s in &burst[burst.len() - MAX_SPECS..] {
            assert!(cache.lock().get(&s.hash).is_some(), "{}", s.name);
        }
        assert!(cache.lock().get(&first.hash).is_none(), "bounded");
        let g = cache.lock();
        assert!(g.newer.len() <= MAX_SPECS && g.older.len() <= MAX_SPECS);
    }
}
