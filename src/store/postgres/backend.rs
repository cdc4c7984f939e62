//! The PostgreSQL store behind the [`crate::store::Backend`] seam.

use chrono::{DateTime, Utc};

use super::PgStore;
use crate::error::Result;
use crate::model::{Refusal, Session, Status, Summary};
use crate::store::{Escalation, Fired, MessageTarget, Timer};

/// Each operation is the one of the same name in this module's files.
impl crate::store::Backend for PgStore {
    fn location(&self) -> String {
        PgStore::location(self)
    }
    async fn create(&self, session: &mut Session) -> Result<()> {
        PgStore::create(self, session).await
    }
    async fn checkpoint(&self, session: &mut Session) -> Result<()> {
        PgStore::checkpoint(self, session).await
    }
    async fn load(&self, id: &str) -> Result<Option<Session>> {
        PgStore::load(self, id).await
    }
    async fn resolve(&self, id_or_prefix: &str) -> Result<String> {
        PgStore::resolve(self, id_or_prefix).await
    }
    async fn list(&self, status: Option<Status>) -> Result<Vec<Summary>> {
        PgStore::list(self, status).await
    }
    async fn list_page(
        &self,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        PgStore::list_page(self, status, after, limit).await
    }
    async fn status_counts(&self) -> Result<Vec<(Status, u64)>> {
        PgStore::status_counts(self).await
    }
    async fn unposted(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        PgStore::unposted(self, after, limit).await
    }
    async fn sessions_with_status(&self, status: Status) -> Result<Vec<Session>> {
        PgStore::sessions_with_status(self, status).await
    }
    async fn count(&self) -> Result<usize> {
        PgStore::count(self).await
    }
    async fn delete(&self, id: &str) -> Result<()> {
        PgStore::delete(self, id).await
    }
    async fn cleanup(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>> {
        PgStore::cleanup(self, cutoff).await
    }
    async fn record_answer(
        &self,
        id: &str,
        gate: Option<&str>,
        answer: &crate::model::Answer,
    ) -> Result<std::result::Result<Session, Refusal>> {
        PgStore::record_answer(self, id, gate, answer).await
    }
    async fn update_open_gate(
        &self,
        id: &str,
        gate: &str,
        change: &(dyn Fn(&mut crate::model::OpenGate) + Send + Sync),
    ) -> Result<Option<Session>> {
        PgStore::update_open_gate(self, id, gate, change).await
    }
    async fn record_notification(
        &self,
        session: &str,
        n: &crate::model::Notification,
    ) -> Result<()> {
        PgStore::record_notification(self, session, n).await
    }
    async fn notifications(&self, session: &str) -> Result<Vec<crate::model::Notification>> {
        PgStore::notifications(self, session).await
    }
    async fn message_target(&self, channel: &str, ts: &str) -> Result<Option<MessageTarget>> {
        PgStore::message_target(self, channel, ts).await
    }
    async fn first_sighting(&self, event_id: &str) -> Result<bool> {
        PgStore::first_sighting(self, event_id).await
    }
    async fn append_audit(&self, events: &[crate::audit::AuditEvent]) -> Result<()> {
        PgStore::append_audit(self, events).await
    }
    async fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        PgStore::audit_page(self, after, limit).await
    }
    async fn decided(
        &self,
        since: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        PgStore::decided(self, since, after, limit).await
    }
    async fn audit_head(&self) -> Result<Option<crate::audit::Head>> {
        PgStore::audit_head(self).await
    }
    async fn arm_timers(&self, session: &str, gate: &str, timers: &[Timer]) -> Result<bool> {
        PgStore::arm_timers(self, session, gate, timers).await
    }
    async fn next_timer(&self) -> Result<Option<Timer>> {
        PgStore::next_timer(self).await
    }
    async fn timers(&self) -> Result<Vec<Timer>> {
        PgStore::timers(self).await
    }
    async fn replace_timer(&self, done: &Timer, next: &[Timer]) -> Result<()> {
        PgStore::replace_timer(self, done, next).await
    }
    async fn record_timeout(
        &self,
        timer: &Timer,
        answer: &crate::model::Answer,
        fired: &Fired,
    ) -> Result<std::result::Result<Session, Refusal>> {
        PgStore::record_timeout(self, timer, answer, fired).await
    }
    async fn record_escalation(
        &self,
        session: &str,
        esc: &Escalation,
        done: &Timer,
        next: &[Timer],
    ) -> Result<()> {
        PgStore::record_escalation(self, session, esc, done, next).await
    }
    async fn escalation(&self, session: &str, gate: &str) -> Result<Option<Escalation>> {
        PgStore::escalation(self, session, gate).await
    }
    async fn queue_answer(
        &self,
        id: &str,
        handle: &str,
        answer: &crate::model::Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        PgStore::queue_answer(self, id, handle, answer).await
    }
    async fn queued_answers(&self, id: &str) -> Result<Vec<(String, crate::model::Answer)>> {
        PgStore::queued_answers(self, id).await
    }
    async fn drop_queued(&self, id: &str, handle: &str) -> Result<()> {
        PgStore::drop_queued(self, id, handle).await
    }
    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<crate::model::Event>> {
        PgStore::events_after(self, after, limit).await
    }
    async fn session_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::model::Event>> {
        PgStore::session_events_after(self, session, after, limit).await
    }
    async fn last_event(&self) -> Result<u64> {
        PgStore::last_event(self).await
    }
    fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64> {
        PgStore::subscribe_events(self)
    }
    async fn create_token(
        &self,
        record: &crate::model::token::TokenRecord,
        audit: &crate::audit::AuditEvent,
    ) -> Result<bool> {
        PgStore::create_token(self, record, audit).await
    }
    async fn token(&self, id: &str) -> Result<Option<crate::model::token::TokenRecord>> {
        PgStore::token(self, id).await
    }
    async fn tokens(&self) -> Result<Vec<crate::model::token::TokenRecord>> {
        PgStore::tokens(self).await
    }
    async fn revoke_token(
        &self,
        name: &str,
        at: DateTime<Utc>,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Option<crate::model::token::TokenRecord>> {
        PgStore::revoke_token(self, name, at, audit).await
    }
    async fn put_grant(
        &self,
        grant: &crate::model::grant::Grant,
        audit: &crate::audit::AuditEvent,
    ) -> Result<bool> {
        PgStore::put_grant(self, grant, audit).await
    }
    async fn grants(&self) -> Result<Vec<crate::model::grant::Grant>> {
        PgStore::grants(self).await
    }
    async fn revoke_grant(
        &self,
        id: &str,
        revocation: &crate::model::grant::Revocation,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Option<crate::model::grant::Grant>> {
        PgStore::revoke_grant(self, id, revocation, audit).await
    }
    async fn webhook_pull(
        &self,
        endpoints: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize> {
        PgStore::webhook_pull(self, endpoints, now, limit).await
    }
    async fn webhook_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> Result<Vec<crate::model::webhook::Delivery>> {
        PgStore::webhook_due(self, now, lease, limit).await
    }
    async fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>> {
        PgStore::webhook_next_due(self).await
    }
    async fn webhook_settle(
        &self,
        settled: &[(
            crate::model::webhook::Delivery,
            crate::model::webhook::Settle,
        )],
    ) -> Result<()> {
        PgStore::webhook_settle(self, settled).await
    }
    async fn webhook_requeue(
        &self,
        msg_ids: Option<&[String]>,
        now: DateTime<Utc>,
    ) -> Result<usize> {
        PgStore::webhook_requeue(self, msg_ids, now).await
    }
    async fn webhook_failed(&self, limit: usize) -> Result<Vec<crate::model::webhook::Delivery>> {
        PgStore::webhook_failed(self, limit).await
    }
    async fn mail_queue(&self, mail: &crate::model::mail::Mail) -> Result<bool> {
        PgStore::mail_queue(self, mail).await
    }
    async fn mail_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> Result<Vec<crate::model::mail::Mail>> {
        PgStore::mail_due(self, now, lease, limit).await
    }
    async fn mail_settle(
        &self,
        taken: &crate::model::mail::Mail,
        outcome: crate::model::mail::Settle,
    ) -> Result<()> {
        PgStore::mail_settle(self, taken, outcome).await
    }
    async fn mail_failed(&self, limit: usize) -> Result<Vec<crate::model::mail::Mail>> {
        PgStore::mail_failed(self, limit).await
    }
    async fn put_login(&self, login: &crate::model::login::Login) -> Result<()> {
        PgStore::put_login(self, login).await
    }
    async fn login(&self, id: &str) -> Result<Option<crate::model::login::Login>> {
        PgStore::login(self, id).await
    }
    async fn end_login(&self, id: &str) -> Result<bool> {
        PgStore::end_login(self, id).await
    }
    async fn put_teams_conversation(
        &self,
        conversation: &crate::model::teams::TeamsConversation,
    ) -> Result<()> {
        PgStore::put_teams_conversation(self, conversation).await
    }
    async fn teams_conversations(&self) -> Result<Vec<crate::model::teams::TeamsConversation>> {
        PgStore::teams_conversations(self).await
    }
    async fn people(&self) -> Result<Vec<crate::model::person::Person>> {
        PgStore::people(self).await
    }
    async fn update_people(
        &self,
        change: &crate::store::PeopleChange,
        audit: &crate::audit::AuditEvent,
    ) -> Result<Vec<crate::model::person::Person>> {
        PgStore::update_people(self, change, audit).await
    }
    async fn key(&self, name: &str) -> Result<Vec<u8>> {
        PgStore::key(self, name).await
    }
    async fn take_lease(
        &self,
        session: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<bool> {
        PgStore::take_lease(self, session, owner, ttl).await
    }
    async fn release_lease(&self, session: &str, owner: &str) -> Result<()> {
        PgStore::release_lease(self, session, owner).await
    }
    async fn lease_holder(&self, session: &str) -> Result<Option<String>> {
        PgStore::lease_holder(self, session).await
    }
    async fn unleased_running(
        &self,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<(DateTime<Utc>, String)>> {
        PgStore::unleased_running(self, after, limit).await
    }
    async fn workflow_page(
        &self,
        workflow: &str,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        PgStore::workflow_page(self, workflow, status, after, limit).await
    }
    async fn awaiting(&self, approvers: &[String]) -> Result<Vec<String>> {
        PgStore::awaiting(self, approvers).await
    }
    async fn awaiting_groups(&self) -> Result<Vec<String>> {
        PgStore::awaiting_groups(self).await
    }
}
