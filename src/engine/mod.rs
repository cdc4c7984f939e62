//! The engine: drives a session from where it stands to its next stop — a
//! gate nobody can answer right now, completion, rejection or failure.
//!
//! The loop is: carry out a recorded answer if there is one; if paused, ask
//! the [`HumanChannel`]; otherwise ask the pattern what is next and do it,
//! checkpointing after every step. Answers are recorded in the store first
//! (compare-and-swap, exactly once) and only then carried out, so a process
//! that dies in between leaves a session that `resume` finishes.

pub mod artifacts;
pub mod cancel;
pub mod context;
pub mod pattern;
pub mod tools;

pub mod intake;
pub mod specs;
pub mod timers;

#[cfg(test)]
mod testkit;

mod agents;
mod carry;
mod compaction;
pub mod elicit;
mod gates;
mod notes;
mod triggers;

pub use cancel::CancelOutcome;
pub use intake::{Accepted, Asker};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::{AuditEvent, AuditKind};
use crate::channel::{HumanChannel, Progress, Reply};
use crate::error::{Error, Result};
use crate::gate::{self};
use crate::model::Position;
use crate::model::{PatternState, Session, Status};
use crate::provider::{Provider, ProviderKind};
use crate::spec::Spec;
use crate::store::Store;
use crate::template::Templates;
use pattern::{GateWork, Next};

/// How a new run is started.
pub struct Start {
    pub variables: serde_json::Map<String, serde_json::Value>,
    pub started_by: String,
    pub out_dir: PathBuf,
    /// Set when a chat command started the run.
    pub origin: Option<crate::model::Origin>,
    /// Existing artifact files may be replaced (`--force`).
    pub overwrite_artifacts: bool,
}

pub struct Engine<'a> {
    store: &'a Store,
    specs: Arc<specs::SpecCache>,
    /// What this process was configured with (read once at start).
    settings: Arc<crate::config::Settings>,
    /// How long the intake may spend fetching a tool's schema to check an
    /// edit (`None`: as long as it takes).
    prepare_deadline: Option<Duration>,
    /// Where "now" comes from for gates and their timers.
    clock: crate::clock::SharedClock,
    /// Wakes this process's timer loop when a gate's timers are armed.
    wake: Option<Arc<tokio::sync::Notify>>,
    templates: &'static Templates,
    /// Built providers by kind, `runtime.host` and `runtime.region`.
    providers: BTreeMap<(ProviderKind, Option<String>, Option<String>), Provider>,
    /// Answers every agent instead of the spec's provider (tests, benches).
    model: Option<Provider>,
    /// This invocation may replace existing artifact files (`--force`),
    /// whatever the session says.
    overwrite_artifacts: bool,
    /// Who this engine drives sessions as, and for how long a lease lasts
    /// unrenewed: on a shared store it drives only under the session's
    /// lease ([`crate::store::lease`]). `None`: the caller holds it (the
    /// service's drives) or nothing else drives (sled).
    lease: Option<(String, Duration)>,
    /// The last checkpoint was written to ride with the next durable one
    /// ([`crate::store::Durability::WithNext`]) and none has synced it yet:
    /// nothing outside the store may act on it (an artifact file) before
    /// one does.
    unsynced: std::sync::atomic::AtomicBool,
}

/// The settings of an engine not given any: one copy for the process
/// (the service makes an engine per request, then gives it its own).
fn default_settings() -> Arc<crate::config::Settings> {
    static DEFAULT: std::sync::OnceLock<Arc<crate::config::Settings>> = std::sync::OnceLock::new();
    Arc::clone(DEFAULT.get_or_init(|| Arc::new(crate::config::Settings::default())))
}

impl<'a> Engine<'a> {
    /// An engine on `store` with default settings (nothing is read from
    /// the environment here; see [`Engine::with_settings`]) and a clock
    /// following tokio's until given the process's ([`Engine::with_clock`]).
    pub fn new(store: &'a Store) -> Self {
        Engine {
            store,
            specs: Arc::new(specs::SpecCache::default()),
            settings: default_settings(),
            prepare_deadline: None,
            clock: Arc::new(crate::clock::TokioClock::default()),
            wake: None,
            templates: Templates::shared(),
            unsynced: Default::default(),
            providers: BTreeMap::new(),
            model: None,
            overwrite_artifacts: false,
            lease: None,
        }
    }

    /// The engine drives sessions only under their lease, as `owner`,
    /// for `ttl` at a time (the CLI on a shared store).
    pub fn with_lease(mut self, owner: String, ttl: Duration) -> Self {
        self.lease = Some((owner, ttl));
        self
    }

    /// The lease this engine must hold to drive, on a shared store.
    fn lease(&self) -> Option<(String, Duration)> {
        self.lease.clone().filter(|_| self.store.is_shared())
    }

    /// Existing artifact files may be replaced by this engine's runs
    /// (`resume --force`), besides those started with `--force`.
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite_artifacts = overwrite;
        self
    }

    /// Every agent talks to `model` instead of its spec's provider (an
    /// in-process scripted model in tests and benches).
    pub fn with_model(mut self, model: Provider) -> Self {
        self.model = Some(model);
        self
    }

    /// The same engine with this process's settings (and a spec cache
    /// that validates within its limits).
    pub fn with_settings(mut self, settings: Arc<crate::config::Settings>) -> Self {
        self.specs = Arc::new(specs::SpecCache::new(settings.limits.clone()));
        self.settings = settings;
        self
    }

    /// The same engine, sharing a spec cache with other engines (the bot
    /// keeps one for all its drives and clicks).
    pub fn with_specs(mut self, specs: Arc<specs::SpecCache>) -> Self {
        self.specs = specs;
        self
    }

    /// The specs this engine has parsed (a caller building a spec from
    /// text parses it here, once: [`specs::SpecCache::parsed`]).
    pub fn specs(&self) -> &specs::SpecCache {
        &self.specs
    }

    /// Gates opened by this engine take their times from `clock`.
    pub fn with_clock(mut self, clock: crate::clock::SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The engine's clock now (answers are judged at it).
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Armed timers wake this process's timer loop.
    pub fn with_wake(mut self, wake: Arc<tokio::sync::Notify>) -> Self {
        self.wake = Some(wake);
        self
    }

    /// Bounds the time the intake spends checking an edited tool call
    /// against a schema it must fetch (the bot answers clicks within 3 s).
    pub fn with_prepare_deadline(mut self, d: Duration) -> Self {
        self.prepare_deadline = Some(d);
        self
    }

    /// No deadline on preparing an answer (the CLI's own process).
    pub fn without_prepare_deadline(mut self) -> Self {
        self.prepare_deadline = None;
        self
    }

    /// Refuses, before anything is saved, what this build cannot run:
    /// providers it does not ship (exit 18), and providers this process
    /// cannot set up — a key or endpoint missing from the environment, a
    /// bad base URL (exit 2, naming the variable). Credentials that need a
    /// network round trip (bedrock's) are checked at the first call.
    pub fn preflight(spec: &Spec, settings: &crate::config::Settings) -> Result<()> {
        let mut checked = std::collections::BTreeSet::new();
        for agent in spec.agents.values() {
            let (config, _) = agents::provider_config(spec, agent, settings)?;
            if checked.insert((config.kind, config.host.clone())) {
                Provider::new(&config)?;
            }
        }
        Ok(())
    }

    /// Starts a new run and drives it to its first stop.
    pub async fn start<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        start: Start,
        channel: &mut C,
    ) -> Result<Session> {
        use tracing::Instrument as _;
        // One span from before the session exists: its creation is part
        // of the run's trace, whose root this is.
        let span = crate::traces::run_span(&spec.name, spec.pattern.name(), None);
        let id = uuid::Uuid::new_v4().to_string();
        span.record("session.id", id.as_str());
        // Leased before it exists: no other process finds it running and
        // free in between.
        if let Some((owner, ttl)) = self.lease() {
            if !self.store.take_lease(&id, &owner, ttl).await? {
                return Err(Error::Internal(format!(
                    "a fresh session id {id} is leased"
                )));
            }
        }
        let session = match self
            .create_as(spec, start, id.clone())
            .instrument(span.clone())
            .await
        {
            Ok(s) => s,
            Err(e) => {
                if let Some((owner, _)) = self.lease() {
                    let _ = self.store.release_lease(&id, &owner).await;
                }
                return Err(e);
            }
        };
        self.drive(spec, session, channel).instrument(span).await
    }

    /// Saves a new session, `running` at its first step, without running it
    /// (the bot answers the slash command first and drives it afterwards).
    /// An artifact file already there whose path the inputs decide is
    /// refused here, before any model call, unless the run may overwrite.
    pub async fn create(&self, spec: &Spec, start: Start) -> Result<Session> {
        self.create_as(spec, start, uuid::Uuid::new_v4().to_string())
            .await
    }

    /// [`Engine::create`] under a given id: the store refuses it when a
    /// session of that id exists (an approval request's idempotency key).
    pub async fn create_as(&self, spec: &Spec, start: Start, id: String) -> Result<Session> {
        let mut session = self.new_session(spec, start, id)?;
        self.store.create(&mut session).await?;
        // Its first drive finds the spec parsed.
        self.specs.put(spec);
        tracing::info!(session = %session.id, workflow = %session.workflow, "session created");
        Ok(session)
    }

    /// [`Engine::create_as`] of a run that asks before anything runs (an
    /// approval request): when its first move is to open gates, they are
    /// opened in memory and the session is created `paused` in one
    /// durable write — the one that queues their `gate.opened` events —
    /// instead of a write `running` and another when its drive pauses.
    /// Anything else (a condition to judge, a trigger, a step to run, a
    /// gate that cannot be opened) is left to the drive, as `create_as`
    /// leaves it. Whether it was created paused.
    pub async fn create_asking(
        &mut self,
        spec: &Spec,
        start: Start,
        id: String,
    ) -> Result<(Session, bool)> {
        let fresh = self.new_session(spec, start, id)?;
        let mut session = fresh.clone();
        let paused = match self.open_first_gates(spec, &mut session) {
            Ok(opened) => opened,
            Err(e) => {
                tracing::debug!(session = %fresh.id, "its gates open in its drive: {e}");
                false
            }
        };
        if !paused {
            session = fresh;
        }
        session.stamp_audit();
        let armed = !session.arm.is_empty();
        self.store.create(&mut session).await?;
        self.specs.put(spec);
        if let (true, Some(w)) = (armed, &self.wake) {
            w.notify_one();
        }
        tracing::info!(session = %session.id, workflow = %session.workflow, paused, "session created");
        Ok((session, paused))
    }

    /// Opens the gates a new session's first move opens, when that is all
    /// it does: no trigger or choice to judge first, and no gate with a
    /// condition (a skipped gate moves the run on). Whether it opened them.
    fn open_first_gates(&mut self, spec: &Spec, session: &mut Session) -> Result<bool> {
        if !spec.hitl.triggers.is_empty() || pattern::pending_choice(spec, &session.state).is_some()
        {
            return Ok(false);
        }
        let Next::Gates(gates) = pattern::next(spec, &session.state)? else {
            return Ok(false);
        };
        if gates.is_empty() || gates.iter().any(|g| g.gate.condition.is_some()) {
            return Ok(false);
        }
        for GateWork { position, gate } in gates {
            let Some(opened) = self.open_gate(spec, session, position, gate)? else {
                return Ok(false);
            };
            let timing = gate::policy::gate_timers(spec, gate, opened.rule.as_ref());
            self.add_gate(session, opened, Some(&timing));
        }
        session.status = Status::Paused;
        Ok(true)
    }

    /// A new session of `spec`, `running` before its first step, not yet
    /// stored; refused when the spec cannot run here or an artifact is in
    /// the way.
    fn new_session(&self, spec: &Spec, start: Start, id: String) -> Result<Session> {
        Self::preflight(spec, &self.settings)?;
        if !(start.overwrite_artifacts || self.overwrite_artifacts) {
            artifacts::precheck(
                self.templates,
                &spec.artifacts,
                &start.variables,
                &start.out_dir,
            )?;
        }
        let now = self.clock.now();
        let session = Session {
            id,
            workflow: spec.name.clone(),
            spec_path: spec.path.display().to_string(),
            spec_hash: spec.hash.clone(),
            spec_snapshot: spec.text.clone(),
            pattern: spec.pattern.name().to_string(),
            status: Status::Running,
            created_at: now,
            updated_at: now,
            started_by: start.started_by,
            variables: start.variables,
            state: pattern::initial(spec),
            format: crate::model::SESSION_FORMAT,
            gates: BTreeMap::new(),
            pending: None,
            human_feedback: None,
            hitl_response: None,
            history: Vec::new(),
            gates_opened: 0,
            usage: BTreeMap::new(),
            output: None,
            artifacts: Vec::new(),
            out_dir: start.out_dir.display().to_string(),
            overwrite_artifacts: start.overwrite_artifacts,
            work_dir: std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string()),
            failure: None,
            origin: start.origin,
            agent_turn: None,
            trusted_tools: Default::default(),
            denied_calls: Default::default(),
            audit: Vec::new(),
            arm: Vec::new(),
            events: Vec::new(),
            triggers_fired: Default::default(),
            final_approved: false,
            in_flight: Default::default(),
            cancel: None,
            // The run's trace starts with the span creating it, if any.
            trace: crate::traces::current(),
            rev: 0,
        };
        Ok(session)
    }

    /// Continues a session from the store: a recorded answer is carried
    /// out, an interrupted (`running`) run goes on, a paused one applies a
    /// passed timeout or asks `channel`. Answers come in through
    /// [`Engine::submit`] first. A finished session is exit 17, unchanged.
    pub async fn resume<C: HumanChannel>(&mut self, id: &str, channel: &mut C) -> Result<Session> {
        let session = self.store.get(id).await?;
        if session.status.is_terminal() {
            return Err(Error::Session(format!(
                "session {} is {}; there is nothing to resume",
                session.id, session.status
            )));
        }
        let spec = self.spec(&session)?;
        Self::preflight(&spec, &self.settings)?;
        use tracing::Instrument as _;
        let span = crate::traces::run_span(&session.workflow, &session.pattern, Some(&session));
        self.drive(&spec, session, channel).instrument(span).await
    }

    /// The session's spec, parsed once per distinct snapshot (shared cache).
    pub fn spec(&self, session: &Session) -> Result<Arc<Spec>> {
        self.specs.get(session)
    }

    /// Runs until the next stop. Run failures (provider, template, budget,
    /// artifact errors) are saved on the session as `failed` and returned in
    /// it; only store and internal errors come back as `Err`.
    ///
    /// Callers run it in a `run` span ([`crate::traces::run_span`]),
    /// which becomes the run's trace when it has none yet (kept at the
    /// next checkpoint).
    pub async fn drive<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: Session,
        channel: &mut C,
    ) -> Result<Session> {
        let Some((owner, ttl)) = self.lease() else {
            return self.drive_here(spec, session, channel).await;
        };
        let (store, id) = (self.store, session.id.clone());
        let driven = crate::store::lease::driving(
            store,
            &id,
            &owner,
            ttl,
            self.drive_here(spec, session, channel),
        )
        .await?;
        driven.unwrap_or_else(|| {
            Err(Error::Session(format!(
                "session {id} is being driven by another process right now; try again once it pauses"
            )))
        })
    }

    /// [`Engine::drive`] once this process may drive the session.
    async fn drive_here<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        mut session: Session,
        channel: &mut C,
    ) -> Result<Session> {
        if session.trace.is_none() {
            session.trace = crate::traces::current();
        }
        // Cancelled while no engine drove it (or this one died before it
        // could stop): it stops here, before anything runs.
        if session.status == Status::Running && session.cancel.is_some() {
            self.end_cancelled(spec, &mut session, channel).await?;
            return Ok(session);
        }
        loop {
            match self.advance(spec, &mut session, channel).await {
                Ok(true) => continue,
                Ok(false) => return Ok(session),
                // A checkpoint found the operator's cancel: nothing more runs.
                Err(Error::Cancelled(_)) => {
                    self.end_cancelled(spec, &mut session, channel).await?;
                    return Ok(session);
                }
                Err(e @ (Error::Store(_) | Error::Internal(_))) => return Err(e),
                // The run is done but may not replace a file: it stays as it
                // is (every step checkpointed) for `resume --force`.
                Err(Error::ArtifactExists { path, .. }) => {
                    return Err(Error::ArtifactExists {
                        path,
                        session: Some(session.id.clone()),
                        resume: None,
                    })
                }
                Err(e) => {
                    session.status = Status::Failed;
                    session.events.push(crate::model::EventKind::RunFailed {
                        message: spec.redactor.redact(&e.to_string()),
                    });
                    session.failure = Some(crate::model::Failure {
                        code: e.exit_code(),
                        message: e.to_string(),
                    });
                    let mut ev = AuditEvent::new(
                        AuditKind::Outcome,
                        &session.id,
                        &session.workflow,
                        self.clock.now(),
                    );
                    ev.detail = Some(spec.redactor.redact(&format!("failed: {e}")));
                    session.audit.push(ev);
                    self.save(&mut session).await?;
                    channel
                        .progress(
                            &session,
                            &Progress::Failed {
                                message: e.to_string(),
                            },
                        )
                        .await;
                    return Ok(session);
                }
            }
        }
    }

    /// One move. `Ok(true)`: keep going; `Ok(false)`: stop here.
    async fn advance<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        channel: &mut C,
    ) -> Result<bool> {
        if let Some(pending) = session.pending.clone() {
            self.carry_out(spec, session, pending, channel).await?;
            return Ok(!session.status.is_terminal());
        }
        match session.status {
            Status::Paused => {
                if self.apply_queued(session).await? {
                    return Ok(true);
                }
                return self.ask(session, channel).await;
            }
            Status::Running => {}
            _ => return Ok(false),
        }
        if self.open_triggered_gate(spec, session).await? {
            return Ok(true);
        }
        if let Some(at) = pattern::pending_choice(spec, &session.state) {
            // A graph `choose` edge: its conditions see the whole context.
            let ctx = context::build(spec, session, None, Some(&at));
            let templates = &self.templates;
            pattern::choose(spec, &mut session.state, |what, cond| {
                templates.truthy(what, cond, &ctx)
            })?;
            self.save(session).await?;
            return Ok(true);
        }
        match pattern::next(spec, &session.state)? {
            Next::Run(work) => self.run_agents(spec, session, work, channel).await?,
            Next::Gates(gates) => {
                for GateWork { position, gate } in gates {
                    if session.open_gates().any(|g| g.position == position) {
                        continue;
                    }
                    match self.open_gate(spec, session, position, gate)? {
                        Some(opened) => {
                            let timing =
                                gate::policy::gate_timers(spec, gate, opened.rule.as_ref());
                            self.add_gate(session, opened, Some(&timing))
                        }
                        None => {
                            // Condition false: recorded as skipped; look again.
                            self.save(session).await?;
                            channel
                                .progress(
                                    session,
                                    &Progress::GateSkipped {
                                        gate: gate.id.clone(),
                                    },
                                )
                                .await;
                            return Ok(true);
                        }
                    }
                }
                if session.gates.is_empty() {
                    return Err(Error::Internal(
                        "the pattern waits on a gate that is not open".into(),
                    ));
                }
                session.status = Status::Paused;
                self.save(session).await?;
            }
            Next::Done { output } => {
                let final_gate = spec
                    .hitl
                    .triggers
                    .iter()
                    .find(|t| t.trigger == crate::spec::Trigger::FinalResponse);
                if let (false, Some(t)) = (session.final_approved, final_gate) {
                    let position = pattern::agent_records(&session.state)
                        .last()
                        .map(|(p, _)| p.clone())
                        .unwrap_or(Position::Step(0));
                    self.open_triggered(spec, session, t, position, output)
                        .await?;
                    return Ok(true);
                }
                // The files are written once the steps they are made of are
                // durable: a crash after writing them must not run a step again
                // (and then find its own file in the way).
                if self.unsynced.load(std::sync::atomic::Ordering::SeqCst)
                    && !spec.artifacts.is_empty()
                {
                    self.save(session).await?;
                }
                let ctx = context::for_artifacts(spec, session, self.clock.now());
                let out_dir = PathBuf::from(&session.out_dir);
                session.artifacts = artifacts::write(
                    self.templates,
                    &spec.artifacts,
                    &ctx,
                    &out_dir,
                    self.overwrite_artifacts || session.overwrite_artifacts,
                )?;
                let mut ev = AuditEvent::new(
                    AuditKind::Outcome,
                    &session.id,
                    &session.workflow,
                    self.clock.now(),
                );
                ev.detail = Some(format!(
                    "completed; output {} characters, sha256 {}",
                    output.chars().count(),
                    crate::audit::sha256_hex(&output)
                ));
                session.audit.push(ev);
                session.output = Some(output);
                session.status = Status::Completed;
                session.events.push(crate::model::EventKind::RunCompleted {
                    output_chars: session
                        .output
                        .as_deref()
                        .map(|o| o.chars().count())
                        .unwrap_or(0),
                });
                self.save(session).await?;
                channel.progress(session, &Progress::Completed).await;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Paused: apply a due timeout (any open gate's, each keeps its own
    /// deadline), or ask the channel. Either answer goes through the
    /// intake; a refused one leaves the session paused, and the channel
    /// says why.
    async fn ask<C: HumanChannel>(
        &mut self,
        session: &mut Session,
        channel: &mut C,
    ) -> Result<bool> {
        let now = self.clock.now();
        let due = session.open_gates().find(|g| g.timed_out(now)).cloned();
        let (handle, answer) = match due {
            Some(g) => (g.handle(), gate::timeout_answer(&g, now)),
            None => {
                let Some(first) = session.first_gate().map(|g| g.handle()) else {
                    return Err(Error::Internal(format!(
                        "session {} is paused without a gate",
                        session.id
                    )));
                };
                match channel.ask(session).await? {
                    Reply::Later => return Ok(false),
                    Reply::Now(answer) => (first, answer),
                }
            }
        };
        let admins = self.settings.admins.clone();
        let who = answer.by.clone();
        let asker = Asker {
            who: &who,
            admins: &admins,
            default_approvers: &[],
            shared: false,
            member_of: &|_| false,
            idp_groups: &[],
            now: self.clock.now(),
        };
        match self
            .submit(&session.id, Some(&handle), answer, &asker)
            .await?
        {
            Ok(Accepted::Recorded(updated))
            | Ok(Accepted::Counted(updated))
            | Ok(Accepted::Repeated(updated)) => {
                *session = updated;
                Ok(true)
            }
            Ok(Accepted::Queued(_)) => Ok(false),
            Err(refusal) => {
                channel.refused(session, &refusal).await;
                Ok(false)
            }
        }
    }
}

impl Engine<'_> {}

impl Engine<'_> {}

/// How many steps of a session have finished, for display.
pub fn finished_steps(state: &PatternState) -> usize {
    pattern::finished(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Detached;

    fn assert_send<T: Send>(_: &T) {}

    /// The Slack bot drives sessions from `tokio::spawn`: the engine's
    /// futures must stay `Send`.
    #[test]
    fn engine_futures_are_send() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let mut engine = Engine::new(&store);
        let mut channel = Detached;
        let fut = engine.resume("nope", &mut channel);
        assert_send(&fut);
    }

    /// A run whose first move is to ask is created paused, its gate open
    /// and its `gate.opened` queued, in its first write; its drive then
    /// only asks, writing nothing. A gate with a condition is left to the
    /// drive: created running.
    #[tokio::test]
    async fn a_run_that_asks_first_is_created_paused_in_one_write() {
        use crate::engine::testkit::{parse, World};
        let w = World::new();
        let asks_first = "version: 0
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
      - type: manual_gate
        id: review
        prompt: ok?
$COND
      - agent: a
";
        let spec = parse(&asks_first.replace("$COND", ""));
        let (made, paused) = w
            .engine()
            .create_asking(&spec, w.start(), "first".into())
            .await
            .expect("create");
        assert!(paused);
        let stored = w.session("first").await;
        assert_eq!(stored.status, Status::Paused);
        assert_eq!(stored.rev, 1, "one write");
        assert_eq!(made.rev, 1);
        assert!(
            stored.gates.values().any(|g| g.id == "review"),
            "{stored:?}"
        );
        let events = w.store.events_after(0, 10).await.expect("events");
        let names: Vec<&str> = events.iter().map(|e| e.what.name()).collect();
        assert_eq!(names, ["gate.opened"], "{events:?}");
        assert_eq!(w.store.audit_entries().await.expect("audit").len(), 1);
        let again = w
            .engine()
            .resume("first", &mut Detached)
            .await
            .expect("resume");
        assert_eq!((again.status, again.rev), (Status::Paused, 1));

        let spec = parse(&asks_first.replace("$COND", "        condition: \"{{ 1 == 1 }}\"\n"));
        let (made, paused) = w
            .engine()
            .create_asking(&spec, w.start(), "cond".into())
            .await
            .expect("create");
        assert!(!paused);
        assert_eq!((made.status, made.rev), (Status::Running, 1));
        assert!(made.gates.is_empty());
        assert_eq!(w.store.events_after(0, 10).await.expect("events").len(), 1);
    }

    /// What the outside world hears, in one gap-free sequence: written with
    /// the changes they report, and announced to this process's readers.
    #[tokio::test]
    async fn a_run_reports_its_events_in_order() {
        use crate::engine::testkit::{answer, World, CHAIN};
        let w = World::new();
        let mut seen = w.store.subscribe_events();
        let s = w.paused(&CHAIN.replace("$GATE", "")).await;
        assert!(seen.has_changed().unwrap_or(false), "readers are told");
        let asker = Asker {
            who: "bob",
            admins: &[],
            default_approvers: &[],
            shared: false,
            member_of: &|_| false,
            idp_groups: &[],
            now: w.clock.now(),
        };
        let took = w
            .engine()
            .submit(
                &s.id,
                None,
                answer(crate::model::Decision::Approve, "bob"),
                &asker,
            )
            .await
            .expect("store");
        assert!(took.is_ok());
        w.engine()
            .resume(&s.id, &mut Detached)
            .await
            .expect("resume");
        let events = w.store.events_after(0, 100).await.expect("events");
        let kinds: Vec<&str> = events.iter().map(|e| e.what.name()).collect();
        assert_eq!(
            kinds,
            vec![
                "step.done",
                "gate.opened",
                "gate.answered",
                "step.done",
                "run.completed"
            ]
        );
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=5).collect::<Vec<_>>(), "no gaps");
        assert_eq!(*seen.borrow_and_update(), 5);
        assert_eq!(w.store.last_event().await.expect("last"), 5);
        let later = w
            .store
            .session_events_after(&s.id, 2, 100)
            .await
            .expect("session events");
        assert_eq!(later.first().map(|e| e.seq), Some(3));
        assert!(w
            .store
            .session_events_after("another", 0, 100)
            .await
            .expect("none")
            .is_empty());
    }
}
