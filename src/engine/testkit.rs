//! What the engine's in-process tests share: a store in a temp dir, a
//! scripted model behind the provider seam, one clock that follows tokio's
//! (so `start_paused` tests move it), one spec cache and wake-up, and the
//! few calls every story starts with.

use std::sync::Arc;
use tokio::sync::Notify;

use super::specs::SpecCache;
use super::{Engine, Start};
use crate::channel::Detached;
use crate::clock::{SharedClock, TokioClock};
use crate::model::{Answer, Decision, Session, Status};
use crate::provider::scripted::Scripted;
use crate::provider::Provider;
use crate::store::Store;

/// A chain: agent `a`, the manual gate `review` with `$GATE` lines of its
/// own, agent `a` again.
pub const CHAIN: &str = "version: 0
name: t
runtime:
  provider: openai
agents:
  a:
    prompt: hi
pattern:
  type: chain
  config:
    steps:
      - agent: a
      - type: manual_gate
        id: review
        prompt: ok?
$GATE
      - agent: a
";

pub struct World {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub model: Scripted,
    pub clock: SharedClock,
    pub specs: Arc<SpecCache>,
    pub wake: Arc<Notify>,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        // One clock for the engine and the store, from a known instant;
        // it moves with tokio's clock (paused in timer tests).
        let clock: SharedClock = Arc::new(TokioClock::starting_at(crate::clock::test_epoch()));
        let store = Store::open(&dir.path().join("store"))
            .expect("store")
            .with_clock(Arc::clone(&clock));
        World {
            dir,
            store,
            model: Scripted::replies(),
            clock,
            specs: Arc::new(SpecCache::default()),
            wake: Arc::new(Notify::new()),
        }
    }

    pub fn engine(&self) -> Engine<'_> {
        Engine::new(&self.store)
            .with_model(Provider::Scripted(self.model.clone()))
            .with_clock(Arc::clone(&self.clock))
            .with_specs(Arc::clone(&self.specs))
            .with_wake(Arc::clone(&self.wake))
    }

    /// Starts a run of `yaml` (started by `starter`) and expects it paused.
    pub async fn paused(&self, yaml: &str) -> Session {
        self.paused_with(self.engine(), yaml).await
    }

    /// [`World::paused`] on an engine set up by the test.
    pub async fn paused_with(&self, mut engine: Engine<'_>, yaml: &str) -> Session {
        let s = engine
            .start(&parse(yaml), self.start(), &mut Detached)
            .await
            .expect("start");
        assert_eq!(s.status, Status::Paused, "{s:?}");
        s
    }

    /// How a test starts a run: by `starter`, writing under the world's
    /// directory.
    pub fn start(&self) -> Start {
        Start {
            variables: Default::default(),
            started_by: "starter".into(),
            out_dir: self.dir.path().join("out"),
            origin: None,
            overwrite_artifacts: false,
        }
    }

    pub async fn session(&self, id: &str) -> Session {
        self.store.get(id).await.expect("session")
    }
}

/// `yaml` parsed as the spec `t.yaml`.
pub fn parse(yaml: &str) -> crate::spec::Spec {
    crate::spec::parse(yaml, std::path::Path::new("t.yaml"), &Default::default()).expect("spec")
}

/// An answer given now through a test channel.
pub fn answer(decision: Decision, who: &str) -> Answer {
    Answer {
        decision,
        by: who.into(),
        at: crate::clock::test_epoch(),
        via: "test".into(),
        vars: Default::default(),
        call: None,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    }
}
