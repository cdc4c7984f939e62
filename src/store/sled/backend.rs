//! The sled store behind the [`crate::store::Backend`] seam.

use super::*;

/// The sled backend: each operation is the synchronous one above (sled's
/// transactions and flushes), run to completion before the future yields.
impl crate::store::Backend for SledStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }
    async fn create(&self, session: &mut Session) -> Result<()> {
        SledStore::create(self, session)
    }
    async fn checkpoint(&self, session: &mut Session) -> Result<()> {
        SledStore::checkpoint(self, session)
    }
    async fn checkpoint_with(
        &self,
        session: &mut Session,
        durability: crate::store::Durability,
    ) -> Result<()> {
        SledStore::checkpoint_with(self, session, durability)
    }
    async fn syncs(&self) -> Result<Option<u64>> {
        Ok(Some(self.syncs.load(std::sync::atomic::Ordering::Relaxed)))
    }
    async fn load(&self, id: &str) -> Result<Option<Session>> {
        SledStore::load(self, id)
    }
    async fn resolve(&self, id_or_prefix: &str) -> Result<String> {
        SledStore::resolve(self, id_or_prefix)
    }
    async fn list(&self, status: Option<Status>) -> Result<Vec<Summary>> {
        SledStore::list(self, status)
    }
    async fn sessions_with_status(&self, status: Status) -> Result<Vec<Session>> {
        SledStore::sessions_with_status(self, status)
    }
    async fn count(&self) -> Result<usize> {
        Ok(SledStore::count(self))
    }
    async fn delete(&self, id: &str) -> Result<()> {
        SledStore::delete(self, id)
    }
    async fn cleanup(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>> {
        SledStore::cleanup(self, cutoff)
    }
    async fn record_answer(
        &self,
        id: &str,
        gate: Option<&str>,
        answer: &crate::model::Answer,
    ) -> Result<std::result::Result<Session, Refusal>> {
        SledStore::record_answer(self, id, gate, answer)
    }
    async fn update_open_gate(
        &self,
        id: &str,
        gate: &str,
        change: &(dyn Fn(&mut crate::model::OpenGate) + Send + Sync),
    ) -> Result<Option<Session>> {
        SledStore::update_open_gate(self, id, gate, change)
    }
    async fn record_notification(
        &self,
        session: &str,
        n: &crate::model::Notification,
    ) -> Result<()> {
        SledStore::record_notification(self, session, n)
    }
    async fn notifications(&self, session: &str) -> Result<Vec<crate::model::Notification>> {
        SledStore::notifications(self, session)
    }
    async fn message_target(&self, channel: &str, ts: &str) -> Result<Option<MessageTarget>> {
        SledStore::message_target(self, channel, ts)
    }
    async fn first_sighting(&self, event_id: &str) -> Result<bool> {
        SledStore::first_sighting(self, event_id)
    }
    async fn append_audit(&self, events: &[crate::audit::AuditEvent]) -> Result<()> {
        SledStore::append_audit(self, events)
    }
    async fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        SledStore::audit_page(self, after, limit)
    }
    async fn audit_head(&self) -> Result<Option<crate::audit::Head>> {
        SledStore::audit_head(self)
    }
    async fn arm_timers(&self, session: &str, gate: &str, timers: &[Timer]) -> Result<bool> {
        SledStore::arm_timers(self, session, gate, timers)
    }
    async fn next_timer(&self) -> Result<Option<Timer>> {
        SledStore::next_timer(self)
    }
    async fn timers(&self) -> Result<Vec<Timer>> {
        SledStore::timers(self)
    }
    async fn replace_timer(&self, done: &Timer, next: &[Timer]) -> Result<()> {
        SledStore::replace_timer(self, done, next)
    }
    async fn record_timeout(
        &self,
        timer: &Timer,
        answer: &crate::model::Answer,
        fired: &Fired,
    ) -> Result<std::result::Result<Session, Refusal>> {
        SledStore::record_timeout(self, timer, answer, fired)
    }
    async fn record_escalation(
        &self,
        session: &str,
        esc: &Escalation,
        done: &Timer,
        next: &[Timer],
    ) -> Result<()> {
        SledStore::record_escalation(self, session, esc, done, next)
    }
    async fn escalation(&self, session: &str, gate: &str) -> Result<Option<Escalation>> {
        SledStore::escalation(self, session, gate)
    }
    async fn queue_answer(
        &self,
        id: &str,
        handle: &str,
        answer: &crate::model::Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        SledStore::queue_answer(self, id, handle, answer)
    }
    async fn queued_answers(&self, id: &str) -> Result<Vec<(String, crate::model::Answer)>> {
        SledStore::queued_answers(self, id)
    }
    async fn drop_queued(&self, id: &str, handle: &str) -> Result<()> {
        SledStore::drop_queued(self, id, handle)
    }
    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<crate::model::Event>> {
        SledStore::events_after(self, after, limit)
    }
    async fn session_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::model::Event>> {
        SledStore::session_events_after(self, session, after, limit)
    }
    async fn last_event(&self) -> Result<u64> {
        SledStore::last_event(self)
    }
    fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64> {
        SledStore::subscribe_events(self)
    }
    async fn create_token(
        &self,
        record: &crate::model::token::TokenRecord,
        audit: &crate::audit::AuditEvent,
    ) -> Result<bool> {
        SledStore::create_token(self, record, audit)
    }
    async fn token(&self, id: &str) -> Result<Option<crate::model::token::TokenRecord>> {
        SledStore::token(self, id)
    }
    async fn tokens(&self) -> Result<Vec<crate::model::token::TokenRecord>> {
        SledStore::tokens(self)
    }
    async fn revoke_token(
        &self,
        name: &str,
        at: DateTime<Utc>,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Option<crate::model::token::TokenRecord>> {
        SledStore::revoke_token(self, name, at, audit)
    }
    async fn webhook_pull(
        &self,
        endpoints: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize> {
        SledStore::webhook_pull(self, endpoints, now, limit)
    }
    async fn webhook_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> Result<Vec<crate::model::webhook::Delivery>> {
        SledStore::webhook_due(self, now, lease, limit)
    }
    async fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>> {
        SledStore::webhook_next_due(self)
    }
    async fn webhook_settle(
        &self,
        taken: &crate::model::webhook::Delivery,
        outcome: crate::model::webhook::Settle,
    ) -> Result<()> {
        SledStore::webhook_settle(self, taken, outcome)
    }
    async fn webhook_failed(&self, limit: usize) -> Result<Vec<crate::model::webhook::Delivery>> {
        SledStore::webhook_failed(self, limit)
    }
    async fn put_login(&self, login: &crate::model::login::Login) -> Result<()> {
        SledStore::put_login(self, login)
    }
    async fn login(&self, id: &str) -> Result<Option<crate::model::login::Login>> {
        SledStore::login(self, id)
    }
    async fn end_login(&self, id: &str) -> Result<bool> {
        SledStore::end_login(self, id)
    }
    async fn key(&self, name: &str) -> Result<Vec<u8>> {
        SledStore::key(self, name)
    }
    async fn list_page(
        &self,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        SledStore::list_page(self, status, after, limit)
    }
    async fn status_counts(&self) -> Result<Vec<(Status, u64)>> {
        SledStore::status_counts(self)
    }
    async fn unposted(&self) -> Result<Vec<String>> {
        SledStore::unposted(self)
    }
    async fn workflow_page(
        &self,
        workflow: &str,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        SledStore::workflow_page(self, workflow, status, after, limit)
    }
    async fn awaiting(&self, approvers: &[String]) -> Result<Vec<String>> {
        SledStore::awaiting(self, approvers)
    }
    async fn awaiting_groups(&self) -> Result<Vec<String>> {
        SledStore::awaiting_groups(self)
    }
}
