//! The sled store behind the [`crate::store::Backend`] seam, and where its
//! synchronous work runs.
//!
//! Every sled call is synchronous: a transaction may wait on sled's locks
//! and page in from disk, and each durable write ends with `db.flush()` —
//! an fsync that takes milliseconds, far more on a busy disk. Run inline in
//! an `async fn`, each one holds a tokio worker thread for its whole
//! length, and `strands serve` (a multi-threaded runtime with one worker
//! per core — two on a small machine) then stops acknowledging Slack
//! clicks and answering `/healthz` while resumes write. So every operation
//! here runs through [`off_worker`]:
//!
//! - on a multi-threaded runtime (`strands serve`), inside
//!   [`tokio::task::block_in_place`]: the worker hands its queue of other
//!   tasks to a fresh thread before the call blocks, so they go on at once;
//! - anywhere else (the CLI's current-thread runtime, where one session
//!   runs and nothing waits to be acknowledged; plain threads; tests),
//!   inline — `block_in_place` would panic on a current-thread runtime.
//!
//! Why `block_in_place` rather than `spawn_blocking` or a writer thread:
//! the operations borrow their arguments (`&mut Session`, a `&dyn Fn` that
//! edits an open gate, slices of timers), which `spawn_blocking`'s
//! `'static` closures cannot take without copying each session (or changing
//! the seam every backend shares); and a call that is already on its way to
//! the disk runs to its end in the future that started it, as before,
//! instead of going on unseen after its caller was dropped. A single writer
//! thread would also serialise resumes that sled lets run side by side.
//! The cost is a thread hand-over per call (microseconds, against a flush's
//! milliseconds).
//!
//! A call that writes syncs after its slot is freed ([`SledStore::call`],
//! [`super::commit`]): a slot is held for the write, not for the disk, and
//! one sync covers the writes of every caller queued meanwhile.
//!
//! At most one background sled call per core runs at once (a FIFO
//! semaphore, waited on asynchronously), and as many again for requests
//! someone waits on, in a lane of their own ([`crate::store::lane`]): unbounded, every queued resume's transaction ran
//! side by side with the click's, and under load they conflicted, retried
//! and took the CPU from it (`benches/slack_clicks.rs` showed acks slower,
//! not faster). Bounded, sled does as much at once as when the workers ran
//! it inline, while the workers themselves stay free to accept, parse and
//! answer.

use chrono::{DateTime, Utc};

use super::{Escalation, Fired, MessageTarget, SledStore, Timer};
use crate::error::Result;
use crate::model::{Refusal, Session, Status, Summary};

/// How many background sled calls run at once: one per core (as many as
/// the workers that ran them inline before), at least two.
fn slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| tokio::sync::Semaphore::new(slot_count()))
}

/// The acknowledgement lane's own slots ([`crate::store::lane`]): a
/// request's calls never queue behind background work, only behind other
/// requests'.
fn ack_slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| tokio::sync::Semaphore::new(slot_count()))
}

fn slot_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    cores.max(2)
}

/// Runs `f` once no other sled call runs and none can start until it
/// returns: it takes every slot of [`slots`] (calls already waiting go
/// first, the semaphore is fair). `strands serve`'s backup copies the
/// store's files this way. Outside a multi-threaded runtime (the CLI, one
/// call at a time) it runs inline.
pub(crate) async fn quiesced<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            let all = u32::try_from(slot_count()).unwrap_or(u32::MAX);
            let _every = slots().acquire_many(all).await.ok();
            let _every_ack = ack_slots().acquire_many(all).await.ok();
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The slots of the lane this task's calls run in.
fn lane() -> &'static tokio::sync::Semaphore {
    match crate::store::lane::Lane::current() {
        crate::store::lane::Lane::Ack => ack_slots(),
        crate::store::lane::Lane::Background => slots(),
    }
}

/// Runs `f` (synchronous sled work) where it cannot stall the runtime's
/// other tasks: see the module doc.
pub(crate) async fn off_worker<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            // Waiting for a slot is asynchronous: the worker goes on with
            // other tasks meanwhile. The semaphores are never closed.
            let _slot = lane().acquire().await.ok();
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl SledStore {
    /// [`off_worker`] for a call that may write: what it writes is synced
    /// after its slot is freed, so that the next writers' commits join
    /// that sync ([`super::commit`]); `Ok` only once it is synced.
    async fn call<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                let slot = lane().acquire().await.ok();
                let (out, owed) = tokio::task::block_in_place(|| super::commit::deferring(f));
                drop(slot);
                let Some(owed) = owed else { return out };
                // Owed even when the call failed after a write.
                let synced = tokio::task::block_in_place(|| self.settle(owed));
                let value = out?;
                synced.map(|()| value)
            }
            _ => f(),
        }
    }
}

/// The sled backend: each operation is the synchronous one in this module's
/// parent, run through [`off_worker`].
impl crate::store::Backend for SledStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }
    async fn create(&self, session: &mut Session) -> Result<()> {
        self.call(|| SledStore::create(self, session)).await
    }
    async fn checkpoint(&self, session: &mut Session) -> Result<()> {
        self.call(|| SledStore::checkpoint(self, session)).await
    }
    async fn checkpoint_with(
        &self,
        session: &mut Session,
        durability: crate::store::Durability,
    ) -> Result<()> {
        self.call(|| SledStore::checkpoint_with(self, session, durability))
            .await
    }
    async fn syncs(&self) -> Result<Option<u64>> {
        Ok(Some(self.syncs.load(std::sync::atomic::Ordering::Relaxed)))
    }
    async fn load(&self, id: &str) -> Result<Option<Session>> {
        self.call(|| SledStore::load(self, id)).await
    }
    async fn resolve(&self, id_or_prefix: &str) -> Result<String> {
        self.call(|| SledStore::resolve(self, id_or_prefix)).await
    }
    async fn list(&self, status: Option<Status>) -> Result<Vec<Summary>> {
        self.call(|| SledStore::list(self, status)).await
    }
    async fn sessions_with_status(&self, status: Status) -> Result<Vec<Session>> {
        self.call(|| SledStore::sessions_with_status(self, status))
            .await
    }
    async fn count(&self) -> Result<usize> {
        Ok(off_worker(|| SledStore::count(self)).await)
    }
    async fn delete(&self, id: &str) -> Result<()> {
        self.call(|| SledStore::delete(self, id)).await
    }
    async fn cleanup(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>> {
        self.call(|| SledStore::cleanup(self, cutoff)).await
    }
    async fn record_answer(
        &self,
        id: &str,
        gate: Option<&str>,
        answer: &crate::model::Answer,
    ) -> Result<std::result::Result<Session, Refusal>> {
        self.call(|| SledStore::record_answer(self, id, gate, answer))
            .await
    }
    async fn update_open_gate(
        &self,
        id: &str,
        gate: &str,
        change: &(dyn Fn(&mut crate::model::OpenGate) + Send + Sync),
    ) -> Result<Option<Session>> {
        self.call(|| SledStore::update_open_gate(self, id, gate, change))
            .await
    }
    async fn record_notification(
        &self,
        session: &str,
        n: &crate::model::Notification,
    ) -> Result<()> {
        self.call(|| SledStore::record_notification(self, session, n))
            .await
    }
    async fn notifications(&self, session: &str) -> Result<Vec<crate::model::Notification>> {
        self.call(|| SledStore::notifications(self, session)).await
    }
    async fn message_target(&self, channel: &str, ts: &str) -> Result<Option<MessageTarget>> {
        self.call(|| SledStore::message_target(self, channel, ts))
            .await
    }
    async fn first_sighting(&self, event_id: &str) -> Result<bool> {
        self.call(|| SledStore::first_sighting(self, event_id))
            .await
    }
    async fn append_audit(&self, events: &[crate::audit::AuditEvent]) -> Result<()> {
        self.call(|| SledStore::append_audit(self, events)).await
    }
    async fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        self.call(|| SledStore::audit_page(self, after, limit))
            .await
    }
    async fn audit_head(&self) -> Result<Option<crate::audit::Head>> {
        self.call(|| SledStore::audit_head(self)).await
    }
    async fn decided(
        &self,
        since: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        self.call(|| SledStore::decided(self, since, after, limit))
            .await
    }
    async fn arm_timers(&self, session: &str, gate: &str, timers: &[Timer]) -> Result<bool> {
        self.call(|| SledStore::arm_timers(self, session, gate, timers))
            .await
    }
    async fn next_timer(&self) -> Result<Option<Timer>> {
        self.call(|| SledStore::next_timer(self)).await
    }
    async fn timers(&self) -> Result<Vec<Timer>> {
        self.call(|| SledStore::timers(self)).await
    }
    async fn replace_timer(&self, done: &Timer, next: &[Timer]) -> Result<()> {
        self.call(|| SledStore::replace_timer(self, done, next))
            .await
    }
    async fn record_timeout(
        &self,
        timer: &Timer,
        answer: &crate::model::Answer,
        fired: &Fired,
    ) -> Result<std::result::Result<Session, Refusal>> {
        self.call(|| SledStore::record_timeout(self, timer, answer, fired))
            .await
    }
    async fn record_escalation(
        &self,
        session: &str,
        esc: &Escalation,
        done: &Timer,
        next: &[Timer],
    ) -> Result<()> {
        self.call(|| SledStore::record_escalation(self, session, esc, done, next))
            .await
    }
    async fn escalation(&self, session: &str, gate: &str) -> Result<Option<Escalation>> {
        self.call(|| SledStore::escalation(self, session, gate))
            .await
    }
    async fn queue_answer(
        &self,
        id: &str,
        handle: &str,
        answer: &crate::model::Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        self.call(|| SledStore::queue_answer(self, id, handle, answer))
            .await
    }
    async fn queued_answers(&self, id: &str) -> Result<Vec<(String, crate::model::Answer)>> {
        self.call(|| SledStore::queued_answers(self, id)).await
    }
    async fn drop_queued(&self, id: &str, handle: &str) -> Result<()> {
        self.call(|| SledStore::drop_queued(self, id, handle)).await
    }
    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<crate::model::Event>> {
        self.call(|| SledStore::events_after(self, after, limit))
            .await
    }
    async fn session_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::model::Event>> {
        self.call(|| SledStore::session_events_after(self, session, after, limit))
            .await
    }
    async fn last_event(&self) -> Result<u64> {
        self.call(|| SledStore::last_event(self)).await
    }
    fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64> {
        SledStore::subscribe_events(self)
    }
    async fn create_token(
        &self,
        record: &crate::model::token::TokenRecord,
        audit: &crate::audit::AuditEvent,
    ) -> Result<bool> {
        self.call(|| SledStore::create_token(self, record, audit))
            .await
    }
    async fn token(&self, id: &str) -> Result<Option<crate::model::token::TokenRecord>> {
        self.call(|| SledStore::token(self, id)).await
    }
    async fn tokens(&self) -> Result<Vec<crate::model::token::TokenRecord>> {
        self.call(|| SledStore::tokens(self)).await
    }
    async fn revoke_token(
        &self,
        name: &str,
        at: DateTime<Utc>,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Option<crate::model::token::TokenRecord>> {
        self.call(|| SledStore::revoke_token(self, name, at, audit))
            .await
    }
    async fn put_grant(
        &self,
        grant: &crate::model::grant::Grant,
        audit: &crate::audit::AuditEvent,
    ) -> Result<bool> {
        self.call(|| SledStore::put_grant(self, grant, audit)).await
    }
    async fn grants(&self) -> Result<Vec<crate::model::grant::Grant>> {
        self.call(|| SledStore::grants(self)).await
    }
    async fn revoke_grant(
        &self,
        id: &str,
        revocation: &crate::model::grant::Revocation,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Option<crate::model::grant::Grant>> {
        self.call(|| SledStore::revoke_grant(self, id, revocation, audit))
            .await
    }
    async fn webhook_pull(
        &self,
        endpoints: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize> {
        self.call(|| SledStore::webhook_pull(self, endpoints, now, limit))
            .await
    }
    async fn webhook_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> Result<Vec<crate::model::webhook::Delivery>> {
        self.call(|| SledStore::webhook_due(self, now, lease, limit))
            .await
    }
    async fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>> {
        self.call(|| SledStore::webhook_next_due(self)).await
    }
    async fn webhook_settle(
        &self,
        settled: &[(
            crate::model::webhook::Delivery,
            crate::model::webhook::Settle,
        )],
    ) -> Result<()> {
        self.call(|| SledStore::webhook_settle(self, settled)).await
    }
    async fn webhook_requeue(
        &self,
        msg_ids: Option<&[String]>,
        now: DateTime<Utc>,
    ) -> Result<usize> {
        self.call(|| SledStore::webhook_requeue(self, msg_ids, now))
            .await
    }
    async fn webhook_failed(&self, limit: usize) -> Result<Vec<crate::model::webhook::Delivery>> {
        self.call(|| SledStore::webhook_failed(self, limit)).await
    }
    async fn mail_queue(&self, mail: &crate::model::mail::Mail) -> Result<bool> {
        self.call(|| SledStore::mail_queue(self, mail)).await
    }
    async fn mail_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> Result<Vec<crate::model::mail::Mail>> {
        self.call(|| SledStore::mail_due(self, now, lease, limit))
            .await
    }
    async fn mail_settle(
        &self,
        taken: &crate::model::mail::Mail,
        outcome: crate::model::mail::Settle,
    ) -> Result<()> {
        self.call(|| SledStore::mail_settle(self, taken, outcome))
            .await
    }
    async fn mail_failed(&self, limit: usize) -> Result<Vec<crate::model::mail::Mail>> {
        self.call(|| SledStore::mail_failed(self, limit)).await
    }
    async fn put_login(&self, login: &crate::model::login::Login) -> Result<()> {
        self.call(|| SledStore::put_login(self, login)).await
    }
    async fn login(&self, id: &str) -> Result<Option<crate::model::login::Login>> {
        self.call(|| SledStore::login(self, id)).await
    }
    async fn end_login(&self, id: &str) -> Result<bool> {
        self.call(|| SledStore::end_login(self, id)).await
    }
    async fn key(&self, name: &str) -> Result<Vec<u8>> {
        self.call(|| SledStore::key(self, name)).await
    }
    async fn put_teams_conversation(
        &self,
        conversation: &crate::model::teams::TeamsConversation,
    ) -> Result<()> {
        self.call(|| SledStore::put_teams_conversation(self, conversation))
            .await
    }
    async fn teams_conversations(&self) -> Result<Vec<crate::model::teams::TeamsConversation>> {
        self.call(|| SledStore::teams_conversations(self)).await
    }
    async fn people(&self) -> Result<Vec<crate::model::person::Person>> {
        self.call(|| SledStore::people(self)).await
    }
    async fn update_people(
        &self,
        change: &crate::store::PeopleChange,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Vec<crate::model::person::Person>> {
        self.call(|| SledStore::update_people(self, change, audit))
            .await
    }
    async fn unleased_running(
        &self,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<(DateTime<Utc>, String)>> {
        self.call(|| SledStore::running_oldest_first(self, after, limit))
            .await
    }
    async fn list_page(
        &self,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        self.call(|| SledStore::list_page(self, status, after, limit))
            .await
    }
    async fn status_counts(&self) -> Result<Vec<(Status, u64)>> {
        self.call(|| SledStore::status_counts(self)).await
    }
    async fn unposted(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.call(|| SledStore::unposted(self, after, limit)).await
    }
    async fn workflow_page(
        &self,
        workflow: &str,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        self.call(|| SledStore::workflow_page(self, workflow, status, after, limit))
            .await
    }
    async fn awaiting(&self, approvers: &[String]) -> Result<Vec<String>> {
        self.call(|| SledStore::awaiting(self, approvers)).await
    }
    async fn awaiting_groups(&self) -> Result<Vec<String>> {
        self.call(|| SledStore::awaiting_groups(self)).await
    }
}

#[cfg(test)]
mod tests {
    use super::off_worker;
    use std::sync::mpsc;
    use std::time::Duration;

    /// On the service's runtime, a store call that blocks does not keep the
    /// worker's other tasks from running: with one worker, a task blocked
    /// in `off_worker` waits for a message only another task can send. Run
    /// inline, the sender would never be polled and the wait would time out.
    #[test]
    fn a_blocking_call_leaves_the_worker_to_other_tasks() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let got = rt.block_on(async {
            let (tx, rx) = mpsc::channel::<&str>();
            let (started_tx, started_rx) = tokio::sync::oneshot::channel();
            let blocked = tokio::spawn(async move {
                let _ = started_tx.send(());
                off_worker(move || rx.recv_timeout(Duration::from_secs(20))).await
            });
            // The worker is in the blocking call before the other task exists.
            started_rx.await.expect("the blocked task started");
            let other = tokio::spawn(async move {
                tx.send("from another task").expect("send");
            });
            other.await.expect("the other task ran");
            blocked.await.expect("the blocked task")
        });
        assert_eq!(got, Ok("from another task"));
    }

    /// A quiesced call starts only once the sled calls in flight ended.
    #[test]
    fn a_quiesced_call_waits_for_the_calls_in_flight() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::sync::Arc;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let saw_done = rt.block_on(async {
            let done = Arc::new(AtomicBool::new(false));
            let (started_tx, started_rx) = tokio::sync::oneshot::channel();
            let flag = Arc::clone(&done);
            let busy = tokio::spawn(async move {
                off_worker(move || {
                    let _ = started_tx.send(());
                    std::thread::sleep(Duration::from_millis(300));
                    flag.store(true, SeqCst);
                })
                .await
            });
            started_rx.await.expect("the call started");
            let seen = super::quiesced(|| done.load(SeqCst)).await;
            busy.await.expect("the busy call");
            seen
        });
        assert!(
            saw_done,
            "the quiesced call ran while another was in flight"
        );
    }

    /// A request's call runs while every background slot is taken: it
    /// waits only for other requests ([`crate::store::lane`]).
    #[test]
    fn an_acknowledgement_does_not_queue_behind_background_calls() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let got = rt.block_on(async {
            let (release_tx, release_rx) = tokio::sync::watch::channel(false);
            let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel();
            // Every background slot busy, and more background work queued.
            let mut busy = Vec::new();
            for _ in 0..super::slot_count() + 2 {
                let mut release = release_rx.clone();
                let started = started_tx.clone();
                busy.push(tokio::spawn(async move {
                    off_worker(move || {
                        let _ = started.send(());
                        // Held until the acknowledgement was seen.
                        let deadline = std::time::Instant::now() + Duration::from_secs(20);
                        while !*release.borrow_and_update() && std::time::Instant::now() < deadline
                        {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    })
                    .await
                }));
            }
            for _ in 0..super::slot_count() {
                started_rx.recv().await.expect("a background call started");
            }
            let ack = tokio::time::timeout(
                Duration::from_secs(10),
                crate::store::lane::acknowledging(off_worker(|| "acknowledged")),
            )
            .await;
            let _ = release_tx.send(true);
            for b in busy {
                b.await.expect("a background call");
            }
            ack
        });
        assert_eq!(
            got.ok(),
            Some("acknowledged"),
            "the request waited for the background"
        );
    }

    /// The CLI's current-thread runtime (and tests) run it inline, where
    /// `block_in_place` would panic.
    #[test]
    fn on_a_current_thread_runtime_it_runs_inline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let here = std::thread::current().id();
        let ran_on = rt.block_on(async { off_worker(|| std::thread::current().id()).await });
        assert_eq!(ran_on, here);
    }
}
