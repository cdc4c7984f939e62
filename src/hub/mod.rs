//! The approval service's core: what `strands serve` shares between its
//! rooms (Slack, later chat tools) and its HTTP API — the store, the
//! settings, the parsed specs, the clock, and the one place a session is
//! driven in the background.
//!
//! Every door into the service ends here: a run started from Slack or by
//! `POST /api/v1/runs` goes through [`Hub::start`]; an answer from a click,
//! a modal or `POST /sessions/{id}/answers` goes through [`Hub::answer`]
//! (the engine's intake, then a background drive); a timer that fires
//! drives through [`Hub::drive`] too. The engine asks people through the
//! [`Hall`] of rooms the service opened ([`Hub::open_rooms`]).
//!
//! Modules: [`metrics`] (one registry), [`notifier`] (the timers' notifier
//! over the hall), [`workflows`] (the named specs runs may start),
//! [`view`] (the session as API and CLI show it), [`tokens`] (API tokens),
//! [`repost`] (start-up's paced queue of messages never posted).
//!
//! What the doors (`api`, `web`, `slack`, later others) share lives here
//! too, so that each door uses only the hub and never another door:
//! [`inbox`] (what waits for whom), [`follow`] (the event stream that says
//! it changed), [`durations`] (how long, in words), [`pages`] (links to
//! the web inbox), [`links`] (one-tap links), [`answers`] (an answer
//! request as a door receives it), [`calls`] (a tool-call gate's calls as
//! a room shows them), [`caller`] (who a request comes from),
//! [`recipients`] (who is mailed about a gate)
//! and [`problem`] (a refused request, with its status).

pub mod answers;
pub mod approvals;
pub mod batch;
pub mod caller;
pub mod calls;
pub mod door;
pub mod drives;
pub mod durations;
pub mod fields;
pub mod follow;
pub mod grants;
pub mod hosts;
pub mod inbox;
pub mod insights;
pub mod links;
pub mod metrics;
pub mod notifier;
pub mod pages;
pub mod people;
pub mod problem;
pub mod recipients;
pub mod repost;
pub mod tokens;
pub mod view;
pub mod workflows;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::channel::hall::{Hall, Room};
use crate::clock::{SharedClock, TokioClock};
use crate::config::Settings;
use crate::engine::specs::SpecCache;
use crate::engine::{Asker, Engine, Start};
use crate::error::Result;
use crate::model::{Origin, Session, Status};
use crate::store::Store;

pub use crate::store::lane::acknowledging;
pub use workflows::StartRefusal;

/// How long checking an edited tool call may spend fetching its schema (a
/// Slack click must be acknowledged within 3 s).
const PREPARE_DEADLINE: Duration = Duration::from_millis(1500);

/// The service's shared state. Cheap to clone.
#[derive(Clone)]
pub struct Hub(Arc<Inner>);

pub struct Inner {
    pub store: Store,
    /// What the engine, the tools and the timers are configured with.
    pub settings: Arc<Settings>,
    /// The directory of specs runs may be started from, by name.
    pub workflows: Option<PathBuf>,
    /// Parsed specs by SHA-256 of their text.
    pub specs: Arc<SpecCache>,
    /// Where "now" comes from for gates and their timers.
    pub clock: SharedClock,
    /// Wakes the timer loop when a gate's timers are armed.
    pub wake: Arc<tokio::sync::Notify>,
    pub metrics: Arc<metrics::Metrics>,
    /// The largest request body any route reads.
    pub max_body_bytes: usize,
    /// How people reach this service (links to the web inbox), no
    /// trailing slash.
    pub public_url: String,
    hall: OnceLock<Hall>,
    /// The bounded slots runs are driven in, and the queues waiting for
    /// them ([`drives`]).
    pub drives: drives::Drives,
    /// Background drives, so shutdown can wait for them.
    tasks: tokio_util::task::TaskTracker,
    /// Cancelled when the service begins to shut down: event streams
    /// (SSE followers) end, so open browsers do not hold shutdown up.
    pub stopping: tokio_util::sync::CancellationToken,
    /// This process among the replicas on a shared store (lease owner).
    pub replica: String,
    /// How long a lease on driving a session lasts unrenewed.
    pub lease: Duration,
    /// Every new event, read from the store once and broadcast
    /// ([`follow`]); started on first use.
    bus: tokio::sync::OnceCell<Arc<follow::Bus>>,
    /// The people directory as last read (listing what waits for whom;
    /// the intake reads the store's).
    people: people::Cache,
}

impl std::ops::Deref for Hub {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// 256 KiB: far above any answer or run request, far below harm.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

/// Where the service listens unless told otherwise (`STRANDS_BIND`), and
/// so the hub's public URL until `serve` sets one.
pub const DEFAULT_BIND: &str = "127.0.0.1:3000";

impl Hub {
    /// A hub on `store`, it and the store following tokio's clock until
    /// given the process's ([`Hub::with_clock`]).
    pub fn new(mut store: Store, settings: Arc<Settings>, workflows: Option<PathBuf>) -> Hub {
        let limits = settings.limits.clone();
        let slots = settings.drives;
        let lease = settings.lease;
        let clock: SharedClock = Arc::new(TokioClock::default());
        store.set_clock(Arc::clone(&clock));
        Hub(Arc::new(Inner {
            store,
            settings,
            workflows,
            specs: Arc::new(SpecCache::new(limits)),
            clock,
            wake: Arc::new(tokio::sync::Notify::new()),
            metrics: Arc::new(metrics::Metrics::new()),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            public_url: format!("http://{DEFAULT_BIND}"),
            hall: OnceLock::new(),
            drives: drives::Drives::new(slots),
            tasks: tokio_util::task::TaskTracker::new(),
            stopping: tokio_util::sync::CancellationToken::new(),
            replica: crate::store::lease::owner("serve"),
            lease,
            bus: tokio::sync::OnceCell::new(),
            people: people::Cache::default(),
        }))
    }

    /// The same hub with another body limit (before it is shared).
    pub fn with_max_body_bytes(self, max: usize) -> Hub {
        match Arc::try_unwrap(self.0) {
            Ok(mut inner) => {
                inner.max_body_bytes = max;
                Hub(Arc::new(inner))
            }
            Err(shared) => Hub(shared),
        }
    }

    /// The same hub, and its store, taking "now" from `clock` (the
    /// process's, made at start-up; before the hub is shared).
    pub fn with_clock(self, clock: SharedClock) -> Hub {
        match Arc::try_unwrap(self.0) {
            Ok(mut inner) => {
                inner.store.set_clock(Arc::clone(&clock));
                inner.clock = clock;
                Hub(Arc::new(inner))
            }
            Err(shared) => Hub(shared),
        }
    }

    /// The same hub with another public URL (before it is shared).
    pub fn with_public_url(self, url: &str) -> Hub {
        match Arc::try_unwrap(self.0) {
            Ok(mut inner) => {
                inner.public_url = url.trim_end_matches('/').to_string();
                Hub(Arc::new(inner))
            }
            Err(shared) => Hub(shared),
        }
    }

    /// Opens the rooms people are asked in, once (later calls are ignored:
    /// the rooms of a running service do not change).
    pub fn open_rooms(&self, rooms: Vec<Arc<dyn Room>>) {
        if self.hall.set(Hall::new(rooms)).is_err() {
            tracing::warn!("the rooms were already opened");
        }
    }

    /// The rooms, as the engine's channel (empty before they are opened).
    pub fn hall(&self) -> Hall {
        self.hall.get().cloned().unwrap_or_default()
    }

    pub fn tasks(&self) -> &tokio_util::task::TaskTracker {
        &self.tasks
    }

    /// An engine on the service's store, settings, clock and spec cache.
    pub fn engine(&self) -> Engine<'_> {
        Engine::new(&self.store)
            .with_prepare_deadline(PREPARE_DEADLINE)
            .with_clock(Arc::clone(&self.clock))
            .with_settings(Arc::clone(&self.settings))
            .with_wake(Arc::clone(&self.wake))
            .with_specs(Arc::clone(&self.specs))
    }

    /// The spec session `s` runs (from the cache, or parsed from the
    /// store's copy).
    pub fn spec_of(&self, s: &Session) -> Result<std::sync::Arc<crate::spec::Spec>> {
        self.engine().spec(s)
    }

    /// A consistent copy of the (sled) store at `dest`, made while the
    /// service runs.
    pub async fn backup(&self, dest: &std::path::Path) -> Result<crate::store::backup::Made> {
        crate::store::backup::backup(&self.store, dest).await
    }

    /// Who is answering through the service: the installation's admins
    /// and default approvers, self-approval off by default.
    pub fn asker<'a>(
        &'a self,
        who: &'a str,
        member_of: &'a (dyn Fn(&str) -> bool + Sync),
    ) -> Asker<'a> {
        Asker {
            who,
            admins: &self.settings.admins,
            default_approvers: &self.settings.default_approvers,
            shared: true,
            member_of,
            idp_groups: &[],
            now: self.clock.now(),
        }
    }

    /// The people directory as last read; read again in the background
    /// when it is older than [`people::Cache::TTL`].
    pub fn people(&self) -> Arc<crate::model::person::Directory> {
        let (directory, stale) = self.people.get();
        if stale {
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    let hub = self.clone();
                    rt.spawn(async move {
                        if let Err(e) = hub.people.refresh(&hub.store).await {
                            tracing::warn!("could not read the people directory: {e}");
                        }
                    });
                }
                Err(_) => tracing::debug!("no runtime to read the people directory"),
            }
        }
        directory
    }

    /// The people directory read from the store now (after a change, or
    /// before listing what waits for whom).
    pub async fn fresh_people(&self) -> Result<Arc<crate::model::person::Directory>> {
        self.people.refresh(&self.store).await
    }

    /// Starts workflow `name` (a spec in the workflows directory) with
    /// `vars`, as `started_by`, and drives it in the background.
    pub async fn start(
        &self,
        name: &str,
        vars: &[(String, String)],
        started_by: &str,
        origin: Option<Origin>,
    ) -> Result<std::result::Result<Session, StartRefusal>> {
        let spec = match workflows::load(self.workflows.as_deref(), name, &self.settings.limits) {
            Ok(s) => s,
            Err(r) => return Ok(Err(r)),
        };
        if let Err(e) = Engine::preflight(&spec, &self.settings) {
            return Ok(Err(StartRefusal::CannotRun(e.to_string())));
        }
        let variables = match spec.resolve_variables(vars) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(StartRefusal::BadInputs {
                    message: e.to_string(),
                    inputs: spec
                        .inputs
                        .iter()
                        .map(|d| {
                            format!("{}{}", d.name, if d.required { " (required)" } else { "" })
                        })
                        .collect(),
                }))
            }
        };
        let start = Start {
            variables,
            started_by: started_by.to_string(),
            out_dir: std::env::temp_dir().join("strands-artifacts"),
            origin,
            // The service's scratch directory: each run replaces the last.
            overwrite_artifacts: true,
        };
        let session = self.engine().create(&spec, start).await?;
        self.drive_new(session.id.clone());
        Ok(Ok(session))
    }

    /// Drives `id` in the background until its next stop, ahead of runs
    /// merely started (a person or a timer waits on it): at once when a
    /// slot is free, else when one frees ([`drives`]). At most one task
    /// drives a session; a drive ending re-checks the store so that an
    /// answer recorded while it was busy is never left waiting. On a shared
    /// store the task first takes the session's lease (another replica
    /// holding it drives instead) and renews it while it works.
    pub fn drive(&self, id: String) {
        self.drive_holding(id, None);
    }

    /// [`Hub::drive`] for a run just started here: it waits behind the
    /// answered ones, oldest first.
    pub fn drive_new(&self, id: String) {
        self.offer(drives::Item {
            id,
            turn: drives::Turn::Fresh,
            permit: None,
        });
    }

    /// [`Hub::drive`], holding `permit` (a place in another bounded queue)
    /// until the drive ends; dropped at once when another task drives `id`.
    fn drive_holding(&self, id: String, permit: Option<tokio::sync::OwnedSemaphorePermit>) {
        self.offer(drives::Item {
            id,
            turn: drives::Turn::Urgent,
            permit,
        });
    }

    fn offer(&self, item: drives::Item) {
        if let (drives::Offered::Drive, Some(item)) = self.drives.offer(item) {
            self.spawn_drives(item);
        }
    }

    /// One slot's task: drives `first`, then whatever the slot is handed
    /// next, until nothing waits.
    fn spawn_drives(&self, first: drives::Item) {
        let hub = self.clone();
        self.tasks.spawn(async move {
            let mut item = first;
            loop {
                let (id, turn) = (item.id.clone(), item.turn);
                // Its own task, so that a drive that panics still frees
                // its slot.
                let one = tokio::spawn({
                    let hub = hub.clone();
                    let id = id.clone();
                    async move { hub.drive_once(&id, turn).await }
                });
                let look_again = match one.await {
                    Ok(again) => again,
                    Err(e) => {
                        tracing::error!(session = %id, "the drive of the session stopped: {e}");
                        false
                    }
                };
                drop(item.permit.take());
                let next = hub.drives.finished(&id);
                // An answer recorded between the last look and letting go
                // found this drive still going and left it to us: look once
                // more (a later one starts its own drive).
                if look_again && hub.needs_driving(&id).await {
                    hub.drive(id);
                }
                match next {
                    Some(n) => item = n,
                    None => break,
                }
            }
        });
    }

    /// Drives `id` under its lease until it needs nothing more; whether to
    /// look at it once more after letting go of its slot.
    async fn drive_once(&self, id: &str, turn: drives::Turn) -> bool {
        // Read from the backlog a moment ago: it may have moved on since.
        if turn == drives::Turn::Backlog && !self.needs_driving(id).await {
            return false;
        }
        let drives = async {
            loop {
                let mut hall = self.hall();
                // On the heap: the engine's future is large.
                if let Err(e) = Box::pin(self.engine().resume(id, &mut hall)).await {
                    // Left as it is in the store; a restart picks it up.
                    tracing::error!(session = %id, "driving the session failed: {e}");
                    return false;
                }
                if !self.needs_driving(id).await {
                    return true;
                }
            }
        };
        match crate::store::lease::driving(&self.store, id, &self.replica, self.lease, drives).await
        {
            Ok(Some(again)) => again,
            // Another replica drives it (and re-checks when it stops).
            Ok(None) => false,
            Err(e) => {
                tracing::error!(session = %id, "cannot take the lease on the session: {e}");
                false
            }
        }
    }

    /// Whether `s` waits for a slot to be driven in: running, and neither
    /// this process nor (on a shared store) another holds it.
    pub async fn queued(&self, s: &Session) -> bool {
        s.status == Status::Running
            && s.failure.is_none()
            && !self.drives.is_driving(&s.id)
            && matches!(self.store.lease_holder(&s.id).await, Ok(None))
    }

    /// Reads the store's backlog — running sessions no process drives,
    /// oldest first — a page the size of the free slots at a time, while
    /// the service runs ([`drives`]): at start-up what the last process
    /// left running; on a shared store also runs started faster than other
    /// replicas drive them, and those whose replica died (their leases
    /// lapsed), looked for every third of a lease.
    pub fn start_backlog(&self) {
        let hub = self.clone();
        let shared = self.store.is_shared();
        let pause = self.lease / 3;
        tokio::spawn(async move {
            let mut cursor: drives::Cursor = None;
            let mut taken = 0usize;
            loop {
                let room = hub.drives.room_for_backlog();
                if room == 0 {
                    tokio::select! {
                        _ = hub.drives.room_changed() => {}
                        _ = tokio::time::sleep(pause) => {}
                        _ = hub.stopping.cancelled() => return,
                    }
                    continue;
                }
                let page = match hub.store.unleased_running(cursor.clone(), room).await {
                    Ok(page) => page,
                    Err(e) => {
                        tracing::warn!("cannot read the runs waiting to be driven: {e}");
                        tokio::select! {
                            _ = tokio::time::sleep(pause) => {}
                            _ = hub.stopping.cancelled() => return,
                        }
                        continue;
                    }
                };
                if page.is_empty() {
                    if taken > 0 {
                        tracing::info!(
                            runs = taken,
                            "drove the runs that were waiting in the store"
                        );
                        taken = 0;
                    }
                    if !shared {
                        // One process per store: nothing joins the backlog
                        // but through this process, which drives it.
                        return;
                    }
                    cursor = None;
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = hub.stopping.cancelled() => return,
                    }
                    continue;
                }
                for (at, id) in page {
                    cursor = Some((at, id.clone()));
                    if !hub.drives.is_driving(&id) {
                        tracing::info!(session = %id, "driving a run that was waiting in the store");
                        taken += 1;
                    }
                    hub.offer(drives::Item {
                        id,
                        turn: drives::Turn::Backlog,
                        permit: None,
                    });
                }
            }
        });
    }

    /// At shutdown: hands back the leases of runs still being driven, so
    /// another replica takes them over at its next look.
    pub async fn hand_back(&self) {
        for id in self.drives.driving_ids() {
            if let Err(e) = self.store.release_lease(&id, &self.replica).await {
                tracing::warn!(session = %id, "cannot hand the lease back: {e}");
            }
        }
    }

    /// Whether session `id` has work a drive would do: running (an answer
    /// recorded, or interrupted), or paused with an answer queued for one
    /// of its gates.
    pub async fn needs_driving(&self, id: &str) -> bool {
        match self.store.load(id).await {
            Ok(Some(s)) if s.failure.is_none() => {
                s.status == Status::Running
                    || (s.status == Status::Paused
                        && self
                            .store
                            .queued_answers(id)
                            .await
                            .is_ok_and(|q| !q.is_empty()))
            }
            _ => false,
        }
    }

    /// At start-up: fires every timer already due (before any answer is
    /// taken), then runs the timer loop in the background.
    pub async fn start_timers(&self) -> Result<()> {
        let notifier = notifier::HallNotifier { hub: self.clone() };
        notifier.timers().fire_due().await?;
        tokio::spawn(async move {
            notifier.timers().run().await;
        });
        Ok(())
    }

    /// At start-up: carries out decisions recorded but not yet carried out
    /// (and runs interrupted mid-step), and starts asking again, in the
    /// background, where a room never asked ([`Hub::start_reposting`]).
    pub async fn recover(&self) -> Result<()> {
        self.start_backlog();
        self.start_reposting(self.settings.repost);
        Ok(())
    }

    /// Asks again for the paused runs with a gate never posted (an index
    /// the store keeps with each pause and each posted message, read a page
    /// at a time), through a bounded, paced queue that runs in the
    /// background and stops with the service ([`repost`]).
    pub fn start_reposting(&self, pace: repost::Pace) {
        let hall = self.hall();
        if hall.rooms().is_empty() {
            // Nobody is asked in a room (no Slack): no paused run can have
            // gone unasked, and start-up reads none of them.
            return;
        }
        let hub = self.clone();
        self.tasks.spawn(async move {
            let (queue, hall) = (hub.clone(), &hall);
            let outcome = repost::run(
                pace,
                &hub.stopping,
                |after, limit| {
                    let hub = hub.clone();
                    async move { hub.store.unposted(after.as_deref(), limit).await }
                },
                |id| {
                    let hub = hub.clone();
                    async move {
                        match hub.store.load(&id).await {
                            Ok(Some(s)) => s.status == Status::Paused && hall.unasked(&s).await,
                            Ok(None) => false,
                            Err(e) => {
                                tracing::error!(session = %id, "cannot read a run to ask again: {e}");
                                false
                            }
                        }
                    }
                },
                |id, permit| {
                    tracing::info!(session = %id, "asking for a gate that was never asked");
                    queue.drive_holding(id, Some(permit));
                },
            )
            .await;
            match outcome {
                Ok(0) => {}
                Ok(n) => tracing::info!(runs = n, "asked again where no message was posted"),
                Err(e) => tracing::error!("cannot read the runs never asked: {e}"),
            }
        });
    }
}
