//! Gate timers: timeouts, reminders and escalations act when their time
//! comes — not at the next resume — from timers kept in the store, so a
//! restart neither loses nor repeats one. One implementation for every
//! process: the bot runs [`Timers::run`]; `strands sessions sweep` runs
//! [`Timers::fire_due`] once (cron). What a channel does about a timer —
//! post a reminder, re-post an escalated request, show a timeout on the
//! messages that asked — is its [`Notifier`].
//!
//! **Arming.** When the engine opens a gate it plans the gate's timers
//! ([`plan`]: its timeout, its first reminder, its escalation) and the store
//! writes them in the same transaction as the checkpoint that opens the gate,
//! once per gate asking. Nothing is re-armed at start-up.
//!
//! **A timeout, exactly once.** The fallback answer goes through the intake's
//! rule (`Session::accept`, the same compare-and-swap as a click) with the
//! timer's gate handle: an answer that got there first wins and the timer is
//! deleted; a later one is told "already rejected by timeout". In the *same
//! transaction* the timer is rewritten as fired, holding the answer and the
//! messages that must show it. Only then are the messages updated and the
//! run driven, and the timer deleted last. A crash before the transaction
//! leaves an unfired timer (it fires at start-up); a crash after it leaves a
//! fired timer, which at start-up only re-does the idempotent part.
//!
//! **Reminders** go to the notifier and schedule the next one (up to
//! `max_reminders`, never past the timeout) in the transaction that deletes
//! the current one. **Escalation** (`escalation_timeout`, or `fallback_action:
//! escalate` when the timeout comes) makes the targets approvers of a gate
//! that names approvers, gives an `escalate` fallback one more timeout
//! period, and has the notifier re-post the request; a notifier that cannot
//! (no bot) leaves the fallback to reject.
//!
//! **Business hours.** A gate that keeps a calendar (`OpenGate::hours`)
//! gets its reminders and escalation counted from the calendar's next
//! opening, and one that would come outside hours comes at the next
//! opening instead ([`in_hours`]), unless `timers_outside_hours: true`. A
//! gate opened outside hours with `when_closed: escalate` is escalated at
//! once: its escalation timer is due the instant it opened.
//!
//! Time comes from the [`Clock`] they are given ([`crate::clock`]); tests
//! run timers on paused time.

use chrono::{DateTime, TimeDelta, Utc};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

use super::specs::SpecCache;
use crate::error::{Error, Result};
use crate::model::{Decision, Fallback, GateKind, OpenGate, Session, Status, WhenClosed};
use crate::spec::{EscalationTarget, GateSpec, GateTimers};
use crate::store::{Escalation, Fired, Store, Timer, TimerKind};

/// The longest the timer loop sleeps without looking at the store again.
const MAX_NAP: Duration = Duration::from_secs(60);
/// How long a timer that failed (a channel or the store down) waits.
const RETRY: TimeDelta = TimeDelta::seconds(30);

pub use crate::clock::{Clock, TokioClock};
pub use crate::model::timer::EscalationWhy;

/// What a channel does about timers. The bot posts in Slack; without a
/// bot ([`Quiet`]) reminders go nowhere and escalation is impossible.
pub trait Notifier: Send + Sync {
    /// `(channel, ts)` of the messages that asked for gate `handle`.
    fn messages(
        &self,
        session: &Session,
        handle: &str,
    ) -> impl Future<Output = Vec<(String, String)>> + Send;
    /// Reminder `n` of `of` for `gate`; `n` = 0: the last one before the
    /// timeout (`remind_before`).
    fn remind(
        &self,
        session: &Session,
        gate: &OpenGate,
        n: u32,
        of: u32,
    ) -> impl Future<Output = ()> + Send;
    /// Re-posts the request for `gate` to `targets`: `(channel, ts)` of
    /// each copy (indexed by the engine so their buttons work). Empty:
    /// it could not be posted anywhere.
    fn escalate(
        &self,
        session: &Session,
        gate: &OpenGate,
        targets: &[EscalationTarget],
        why: &EscalationWhy,
    ) -> impl Future<Output = Vec<(String, String)>> + Send;
    /// A timeout's answer was recorded (or found recorded after a
    /// restart): show it on the messages that asked. Idempotent.
    fn timed_out(&self, session: &Session, fired: &Fired) -> impl Future<Output = ()> + Send;
    /// The run can go on from a recorded answer.
    fn resume(&self, session: &str) -> impl Future<Output = ()> + Send;
    /// Whether this channel can re-post requests (a bot can; the CLI not).
    fn can_escalate(&self) -> bool;
}

/// No channel: what `strands sessions sweep` uses. Timeouts recorded and
/// runs to resume are collected for the caller.
#[derive(Default)]
pub struct Quiet {
    pub resume: std::sync::Mutex<Vec<String>>,
    pub fired: std::sync::Mutex<Vec<(String, Fired)>>,
}

impl Notifier for Quiet {
    async fn messages(&self, _: &Session, _: &str) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn remind(&self, _: &Session, _: &OpenGate, _: u32, _: u32) {}
    async fn escalate(
        &self,
        _: &Session,
        _: &OpenGate,
        _: &[EscalationTarget],
        _: &EscalationWhy,
    ) -> Vec<(String, String)> {
        Vec::new()
    }
    async fn timed_out(&self, session: &Session, fired: &Fired) {
        self.fired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((session.id.clone(), fired.clone()));
    }
    async fn resume(&self, session: &str) {
        self.resume
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(session.to_string());
    }
    fn can_escalate(&self) -> bool {
        false
    }
}

fn later(at: DateTime<Utc>, by: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(by)
        .ok()
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// When a reminder or escalation due at `due` comes for `gate`: then, or
/// — for a gate keeping business hours, unless `timers_outside_hours` —
/// at the calendar's next opening when it is closed then.
pub fn in_hours(gate: &OpenGate, due: DateTime<Utc>) -> DateTime<Utc> {
    match &gate.hours {
        Some(h) if !h.timers_outside_hours => h.rules.settle(due),
        _ => due,
    }
}

/// Where a gate's reminders and escalation count from: its opening, or
/// for a gate keeping business hours that opened while closed, the
/// calendar's next opening.
fn counts_from(gate: &OpenGate) -> DateTime<Utc> {
    match &gate.hours {
        Some(h) if !h.timers_outside_hours => h.rules.next_open(gate.opened_at),
        _ => gate.opened_at,
    }
}

/// Whether `gate` opened outside hours with `when_closed: escalate`.
fn escalates_when_closed(gate: &OpenGate) -> bool {
    gate.hours
        .as_ref()
        .is_some_and(|h| h.opened_closed && h.when_closed == WhenClosed::Escalate)
}

/// The timers of one gate asking, as first armed.
pub fn plan(session: &str, gate: &OpenGate, timing: &GateTimers) -> Vec<Timer> {
    let handle = gate.handle();
    let timer = |kind, due, n| Timer {
        session: session.to_string(),
        gate: handle.clone(),
        kind,
        due,
        n,
        fired: None,
    };
    let before_timeout = |due: DateTime<Utc>| gate.timeout_at.is_none_or(|t| due < t);
    let mut out = Vec::new();
    if let Some(t) = gate.timeout_at {
        out.push(timer(TimerKind::Timeout, t, 0));
    }
    if let Some(every) = timing
        .reminder_interval
        .filter(|_| timing.max_reminders > 0)
    {
        let due = in_hours(gate, later(counts_from(gate), every));
        if before_timeout(due) {
            out.push(timer(TimerKind::Reminder, due, 1));
        }
    }
    // One last reminder before the timeout (`remind_before`): reminder 0.
    if let (Some(to), Some(before)) = (gate.timeout_at, timing.remind_before) {
        let due = TimeDelta::from_std(before)
            .ok()
            .and_then(|b| to.checked_sub_signed(b));
        let due = due
            .filter(|d| *d > gate.opened_at)
            .map(|d| in_hours(gate, d))
            .filter(|d| before_timeout(*d));
        if let Some(due) = due {
            out.push(timer(TimerKind::Reminder, due, 0));
        }
    }
    if escalates_when_closed(gate) && !timing.escalation_target.is_empty() {
        // Closed: the on-call gets it now (once per asking, so no other).
        out.push(timer(TimerKind::Escalation, gate.opened_at, 0));
    } else if let Some(after) = timing
        .escalation_timeout
        .filter(|_| !timing.escalation_target.is_empty())
    {
        let due = in_hours(gate, later(counts_from(gate), after));
        if before_timeout(due) {
            out.push(timer(TimerKind::Escalation, due, 0));
        }
    }
    out
}

/// The open gate `handle` of `session` while it waits for an answer:
/// paused at it, nothing recorded yet. Tool-call gates have no timers.
fn waiting<'a>(session: &'a Session, handle: &str) -> Option<&'a OpenGate> {
    if session.status != Status::Paused || session.pending.is_some() {
        return None;
    }
    session
        .open_gate(handle)
        .filter(|g| g.kind != GateKind::ToolCall)
}

/// The timer service of one process.
pub struct Timers<'a, N: Notifier> {
    pub store: &'a Store,
    pub notifier: &'a N,
    pub clock: crate::clock::SharedClock,
    pub specs: Arc<SpecCache>,
    /// Woken when timers are added or moved.
    pub wake: Arc<Notify>,
}

impl<N: Notifier> Timers<'_, N> {
    /// Fires every timer due now, earliest first (start-up before clicks
    /// are taken; `sessions sweep`). Returns how many fired.
    pub async fn fire_due(&self) -> Result<usize> {
        let mut fired = 0;
        loop {
            let Some(t) = self.store.next_timer().await? else {
                return Ok(fired);
            };
            if t.due > self.clock.now() {
                return Ok(fired);
            }
            self.fire_or_postpone(&t).await;
            fired += 1;
        }
    }

    /// The timer loop: sleeps until the next timer is due or one is added.
    pub async fn run(&self) {
        loop {
            let next = match self.store.next_timer().await {
                Ok(n) => n,
                Err(e) => {
                    tracing::error!("cannot read the timers: {e}");
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    continue;
                }
            };
            let nap = match &next {
                None => MAX_NAP,
                Some(t) => match (t.due - self.clock.now()).to_std() {
                    Ok(wait) if !wait.is_zero() => wait.min(MAX_NAP),
                    _ => {
                        self.fire_or_postpone(t).await;
                        continue;
                    }
                },
            };
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(nap) => {}
            }
        }
    }

    /// Fires `t`; when that fails, tries again later instead of spinning.
    async fn fire_or_postpone(&self, t: &Timer) {
        if let Err(e) = self.fire(t).await {
            tracing::error!(session = %t.session, gate = %t.gate, kind = ?t.kind, "timer failed, trying again in {}s: {e}", RETRY.num_seconds());
            let mut again = t.clone();
            again.due = self.clock.now() + RETRY;
            if let Err(e) = self.store.replace_timer(t, &[again]).await {
                tracing::error!("cannot postpone a timer: {e}");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    }

    /// Fires one timer.
    pub async fn fire(&self, t: &Timer) -> Result<()> {
        tracing::info!(session = %t.session, gate = %t.gate, kind = ?t.kind, n = t.n, "timer due");
        match t.kind {
            TimerKind::Timeout => self.fire_timeout(t).await,
            TimerKind::Reminder => self.fire_reminder(t).await,
            TimerKind::Escalation => {
                let Some(session) = self.store.load(&t.session).await? else {
                    return self.store.remove_timer(t).await;
                };
                let Some(gate) = waiting(&session, &t.gate).cloned() else {
                    return self.store.remove_timer(t).await;
                };
                self.escalate(&session, &gate, t).await
            }
        }
    }

    /// The timing a gate's spec gives it, with the escalation settings of
    /// the approval rule that decided this instance (`gate::policy`).
    fn timing(&self, session: &Session, gate: &OpenGate) -> Result<GateTimers> {
        let spec = self.specs.get(session)?;
        let found = |g: &GateSpec| {
            (g.id == gate.id)
                .then(|| crate::gate::policy::gate_timers(&spec, g, gate.rule.as_ref()))
        };
        Ok(spec.gates().into_iter().find_map(found).unwrap_or_default())
    }

    /// A timeout: the fallback answer, recorded exactly once, then shown.
    async fn fire_timeout(&self, t: &Timer) -> Result<()> {
        if let Some(fired) = &t.fired {
            // Recorded before a restart: show it (again) and carry on.
            self.finish_timeout(t, fired).await;
            return self.store.remove_timer(t).await;
        }
        let Some(session) = self.store.load(&t.session).await? else {
            return self.store.remove_timer(t).await;
        };
        let Some(gate) = waiting(&session, &t.gate).cloned() else {
            // Answered (or moved on) before its time: nothing to do.
            return self.store.remove_timer(t).await;
        };
        let escalated = self.store.escalation(&session.id, &t.gate).await?;
        // A gate rejected for opening outside hours is not escalated.
        let rejects_closed = gate
            .hours
            .as_ref()
            .is_some_and(|h| h.opened_closed && h.when_closed == WhenClosed::Reject);
        if gate.fallback == Fallback::Escalate
            && escalated.is_none()
            && self.notifier.can_escalate()
            && !rejects_closed
        {
            return self.escalate(&session, &gate, t).await;
        }
        let now = self.clock.now();
        match gate.timeout_at {
            None => return self.store.remove_timer(t).await,
            // The deadline moved (an escalation): fire then, not now.
            Some(at) if at > now => {
                let mut moved = t.clone();
                moved.due = at;
                self.store.replace_timer(t, &[moved]).await?;
                self.wake.notify_one();
                return Ok(());
            }
            Some(_) => {}
        }
        let mut answer = crate::gate::timeout_answer(&gate, now);
        if let (Fallback::Escalate, Some(esc)) = (gate.fallback, &escalated) {
            answer.decision = Decision::Reject {
                reason: Some(format!(
                    "rejected by fallback (fallback_action: escalate): no answer since the escalation to {}",
                    esc.targets
                        .iter()
                        .map(|t| match t {
                            EscalationTarget::Channel(c @ crate::model::Place::Slack(_)) => {
                                format!("#{c}")
                            }
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            };
        }
        let mut messages = self.notifier.messages(&session, &t.gate).await;
        if let Some(esc) = &escalated {
            messages.extend(esc.messages.iter().cloned());
        }
        let fired = Fired {
            answer: answer.clone(),
            gate,
            messages,
        };
        match super::intake::record_timeout(self.store, t, &answer, &fired).await? {
            Ok(_) => {
                tracing::info!(session = %t.session, gate = %t.gate, "timed out: {}", answer.decision.verb());
                self.finish_timeout(t, &fired).await;
            }
            Err(refusal) => {
                // Someone answered first; their answer stands.
                tracing::info!(session = %t.session, gate = %t.gate, "timeout not applied: {refusal}");
            }
        }
        self.store.remove_timer(t).await
    }

    /// What follows a recorded timeout, idempotent: the run goes on, and
    /// the messages that asked show what happened.
    async fn finish_timeout(&self, t: &Timer, fired: &Fired) {
        let Ok(Some(session)) = self.store.load(&t.session).await else {
            return;
        };
        if session.status == Status::Running {
            self.notifier.resume(&session.id).await;
        }
        self.notifier.timed_out(&session, fired).await;
    }

    /// A reminder; schedules the next one.
    async fn fire_reminder(&self, t: &Timer) -> Result<()> {
        let Some(session) = self.store.load(&t.session).await? else {
            return self.store.remove_timer(t).await;
        };
        let Some(gate) = waiting(&session, &t.gate).cloned() else {
            return self.store.remove_timer(t).await;
        };
        let timing = self.timing(&session, &gate)?;
        if gate.reminded_at.is_none() {
            // From the first reminder on, the gate counts as overdue.
            let now = self.clock.now();
            self.store
                .update_open_gate(&session.id, &t.gate, &move |g| {
                    g.reminded_at.get_or_insert(now);
                })
                .await?;
        }
        if t.n == 0 {
            // The last reminder before the timeout (`remind_before`): once.
            self.notifier.remind(&session, &gate, 0, 0).await;
            return self.store.remove_timer(t).await;
        }
        self.notifier
            .remind(&session, &gate, t.n, timing.max_reminders.max(t.n))
            .await;
        let mut next = Vec::new();
        if let Some(every) = timing.reminder_interval {
            // After a long pause (the bot was down), the next one comes an
            // interval from now, not in a burst of the missed ones.
            let now = self.clock.now();
            let base = if later(t.due, every) < now {
                now
            } else {
                t.due
            };
            let due = in_hours(&gate, later(base, every));
            if t.n < timing.max_reminders && gate.timeout_at.is_none_or(|to| due < to) {
                next.push(Timer {
                    due,
                    n: t.n + 1,
                    ..t.clone()
                });
            }
        }
        self.store.replace_timer(t, &next).await
    }

    /// Re-posts the request to the escalation target, once per gate asking.
    /// `t` is the escalation timer, or the timeout of an `escalate`
    /// fallback (which then moves the deadline by one more timeout period).
    async fn escalate(&self, session: &Session, gate: &OpenGate, t: &Timer) -> Result<()> {
        if !self.notifier.can_escalate()
            || self.store.escalation(&session.id, &t.gate).await?.is_some()
        {
            return self.store.remove_timer(t).await;
        }
        let timing = self.timing(session, gate)?;
        let targets = timing.escalation_target.clone();
        if targets.is_empty() {
            return self.store.remove_timer(t).await;
        }
        let on_timeout = t.kind == TimerKind::Timeout;
        let now = self.clock.now();
        // Targets may answer a gate that names its approvers; an `escalate`
        // fallback gives them one more timeout period. Both are idempotent
        // against the stored gate (a retry after a crash changes nothing).
        let period = gate.timeout_at.map(|at| at - gate.opened_at);
        let ids: Vec<crate::model::Approver> = targets
            .iter()
            .filter_map(|t| match t {
                EscalationTarget::User(u) | EscalationTarget::Group(u) => Some(u.clone()),
                EscalationTarget::Channel(_) => None,
            })
            .collect();
        let change = |g: &mut OpenGate| {
            if !g.approvers.is_empty() {
                for id in &ids {
                    if !g.approvers.contains(id) {
                        g.approvers.push(id.clone());
                    }
                }
            }
            if let (true, Some(p)) = (on_timeout, period) {
                if g.timeout_at.is_some_and(|at| at <= now) {
                    g.timeout_at = Some(now + p);
                }
            }
        };
        let updated = self
            .store
            .update_open_gate(&session.id, &t.gate, &change)
            .await?;
        let Some(session) = updated else {
            // Answered meanwhile.
            return self.store.remove_timer(t).await;
        };
        let Some(gate) = session.open_gate(&t.gate).cloned() else {
            return self.store.remove_timer(t).await;
        };
        let why = if on_timeout {
            EscalationWhy::TimedOut {
                until: gate.timeout_at,
            }
        } else if let (true, Some(h)) = (escalates_when_closed(&gate), &gate.hours) {
            EscalationWhy::OutsideHours {
                calendar: h.calendar.clone(),
            }
        } else {
            EscalationWhy::Waited(now - gate.opened_at)
        };
        let messages = self
            .notifier
            .escalate(&session, &gate, &targets, &why)
            .await;
        if messages.is_empty() {
            return Err(Error::Runtime(
                "the escalated request could not be posted anywhere".into(),
            ));
        }
        let next: Vec<Timer> = match (on_timeout, gate.timeout_at) {
            (true, Some(at)) => vec![Timer {
                due: at,
                fired: None,
                ..t.clone()
            }],
            _ => Vec::new(),
        };
        let esc = Escalation {
            gate: gate.clone(),
            at: now,
            messages,
            targets: targets.clone(),
        };
        self.store
            .record_escalation(&session.id, &esc, t, &next)
            .await?;
        self.wake.notify_one();
        tracing::info!(session = %session.id, gate = %t.gate, "escalated");
        Ok(())
    }
}

#[cfg(test)]
mod tests;
