//! Gate timers in the bot: timeouts, reminders and escalations act when
//! their time comes — not at the next resume — from timers kept in the store
//! (the `timers` tree, keyed so that the earliest due timer is the first
//! key), so a restart neither loses nor repeats one.
//!
//! **Arming.** When a gate is asked in Slack ([`arm`], from
//! `SlackChannel::ask`, before the approval message is posted) and at
//! start-up for every paused session, the gate's timers are written: its
//! timeout (`timeout_at`; a gate without one gets `STRANDS_DEFAULT_TIMEOUT_MINUTES`
//! written into it first), its first reminder and its escalation. Arming is
//! once per gate asking (a marker per session names the handle armed, set in
//! the same transaction as the timers), so arming again never re-creates a
//! timer that already fired.
//!
//! **Firing.** One task sleeps until the earliest timer is due (adding
//! timers wakes it), fires it, and looks again. A timer whose gate is no
//! longer the open, waiting one is stale and is only deleted. Due timers
//! fire at start-up before the bot accepts clicks.
//!
//! **A timeout, exactly once.** The fallback answer is recorded through the
//! same compare-and-swap as a click ([`Store::record_timeout`], i.e.
//! `gate::accept` with the timer's gate handle): a click that got there
//! first wins and the timer is deleted; a click that comes later is told
//! "already rejected by timeout". In the *same transaction* the timer is
//! rewritten as fired, holding the answer and the messages that must show
//! it. Only then are the messages updated and the session driven, and the
//! timer deleted last. A crash before the transaction leaves an unfired
//! timer (it fires at start-up); a crash after it leaves a fired timer,
//! which at start-up only re-does the idempotent part (`chat.update` with
//! the same content, driving the session) — the answer is never recorded
//! twice and never lost.
//!
//! **Reminders** post in the approval thread, mentioning the gate's
//! approvers (the run's starter when there are none), and schedule the next
//! one (up to `max_reminders`, never past the timeout) in the transaction
//! that deletes the current one.
//!
//! **Escalation** (`escalation_timeout`, or `fallback_action: escalate` when
//! the timeout comes) re-posts the approval message to `escalation_target`
//! — a channel, or a direct message to each user; groups are mentioned, in
//! the approval channel when no channel is named — and indexes every copy
//! like the original, so its buttons work the same. Targets become
//! approvers of a gate that names approvers. An `escalate` fallback gives
//! the target one more timeout period (the deadline moves) and then
//! rejects. Posting to Slack cannot be made atomic with the store: a crash
//! between posting and recording re-posts the request once at start-up
//! (at least once, never lost); everything recorded is exactly once.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::Notify;

use super::app::{decision_name, mention, App};
use super::blocks::{escape_mrkdwn, ApprovalView, DecidedView};
use crate::error::{Error, Result};
use crate::gate::{Answer, Decision, OpenGate};
use crate::session::{GateEventKind, Session, Status};
use crate::spec::{EscalationTarget, Fallback, GateKind, GateSpec, GateTimers};
use crate::store::{Escalation, Fired, Timer, TimerKind};

/// Wakes the timer task when timers are added.
static WAKE: Notify = Notify::const_new();

/// The longest the task sleeps without looking at the store again.
const MAX_NAP: Duration = Duration::from_secs(60);
/// How long a timer that failed (Slack or the store down) waits to try again.
const RETRY: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

/// `STRANDS_DEFAULT_TIMEOUT_MINUTES`: the timeout of gates without one, in
/// the bot (fractions allowed; at most the longest timeout allowed).
pub fn default_timeout() -> Option<chrono::TimeDelta> {
    let minutes: f64 = std::env::var("STRANDS_DEFAULT_TIMEOUT_MINUTES")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if !minutes.is_finite() || minutes <= 0.0 {
        return None;
    }
    let max = crate::spec::Limits::from_env().max_timeout_secs as f64;
    let ms = (minutes * 60.0).min(max) * 1000.0;
    chrono::TimeDelta::try_milliseconds(ms as i64)
}

/// The open gate of `session` when it is waiting for an answer: paused at
/// it, nothing recorded yet. Tool-call gates have no timers.
fn waiting_gate<'a>(session: &'a Session, handle: Option<&str>) -> Option<&'a OpenGate> {
    if session.status != Status::Paused || session.pending_answer.is_some() {
        return None;
    }
    session
        .open_gates()
        .find(|g| g.kind != GateKind::ToolCall && handle.is_none_or(|h| g.handle() == h))
}

/// The spec of a gate, by id, in the session's spec snapshot.
fn gate_spec(session: &Session, id: &str) -> Result<GateTimers> {
    let spec = crate::engine::Engine::spec_of(session)?;
    let found = |g: &GateSpec| (g.id == id).then(|| g.timers.clone());
    let timers = spec.gates().into_iter().find_map(found);
    Ok(timers.unwrap_or_default())
}

fn later(at: DateTime<Utc>, by: Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(by)
        .ok()
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
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
        let due = later(gate.opened_at, every);
        if before_timeout(due) {
            out.push(timer(TimerKind::Reminder, due, 1));
        }
    }
    if let Some(after) = timing
        .escalation_timeout
        .filter(|_| !timing.escalation_target.is_empty())
    {
        let due = later(gate.opened_at, after);
        if before_timeout(due) {
            out.push(timer(TimerKind::Escalation, due, 0));
        }
    }
    out
}

/// Arms the timers of the gate `id` waits at (once per gate asking), after
/// giving a gate without a timeout the bot-wide default. Nothing happens for
/// a session that is not waiting.
pub async fn arm(app: &App, id: &str) -> Result<()> {
    let Some(session) = app.store.load(id)? else {
        return Ok(());
    };
    // Every open gate has its own timers (parallel branches wait at once).
    let handles: Vec<String> = session
        .open_gates()
        .filter(|g| g.kind != GateKind::ToolCall)
        .map(|g| g.handle())
        .collect();
    for handle in handles {
        arm_gate(app, id, &session, &handle)?;
    }
    Ok(())
}

fn arm_gate(app: &App, id: &str, session: &Session, handle: &str) -> Result<()> {
    let Some(gate) = waiting_gate(session, Some(handle)) else {
        return Ok(());
    };
    let handle = gate.handle();
    let mut gate = gate.clone();
    if gate.timeout_at.is_none() {
        if let Some(d) = default_timeout() {
            let at = gate.opened_at + d;
            let updated = app.store.update_open_gate(id, &handle, |g| {
                if g.timeout_at.is_none() {
                    g.timeout_at = Some(at);
                }
            })?;
            match updated.as_ref().and_then(|s| s.open_gate(&handle).cloned()) {
                Some(g) => gate = g,
                None => return Ok(()),
            }
        }
    }
    let timing = gate_spec(session, &gate.id)?;
    let timers = plan(id, &gate, &timing);
    if app.store.arm_timers(id, &handle, &timers)? && !timers.is_empty() {
        tracing::debug!(session = %id, gate = %handle, timers = timers.len(), "timers armed");
        WAKE.notify_one();
    }
    Ok(())
}

/// At start-up: arms the timers of every paused session, fires every timer
/// already due (before the bot takes clicks), then runs the timer task.
pub async fn start(app: &App) -> Result<()> {
    for s in app.store.sessions_with_status(Status::Paused)? {
        if let Err(e) = arm(app, &s.id).await {
            tracing::error!(session = %s.id, "could not arm the gate's timers: {e}");
        }
    }
    let now = Utc::now();
    while let Some(t) = app.store.next_timer()? {
        if t.due > now {
            break;
        }
        fire_or_postpone(app, &t).await;
    }
    let app = app.clone();
    tokio::spawn(async move { run(app).await });
    Ok(())
}

/// The timer task: sleep until the next timer is due or a timer is added.
async fn run(app: App) {
    loop {
        let next = match app.store.next_timer() {
            Ok(n) => n,
            Err(e) => {
                tracing::error!("cannot read the timers: {e}");
                tokio::time::sleep(Duration::from_secs(5)).await;
                continue;
            }
        };
        let nap = match &next {
            None => MAX_NAP,
            Some(t) => match (t.due - Utc::now()).to_std() {
                Ok(wait) if !wait.is_zero() => wait.min(MAX_NAP),
                _ => {
                    fire_or_postpone(&app, t).await;
                    continue;
                }
            },
        };
        tokio::select! {
            _ = WAKE.notified() => {}
            _ = tokio::time::sleep(nap) => {}
        }
    }
}

/// Fires `t`; when that fails (Slack or the store), tries again later
/// instead of spinning on it.
async fn fire_or_postpone(app: &App, t: &Timer) {
    if let Err(e) = fire(app, t).await {
        tracing::error!(session = %t.session, gate = %t.gate, kind = ?t.kind, "timer failed, trying again in {}s: {e}", RETRY.num_seconds());
        let mut again = t.clone();
        again.due = Utc::now() + RETRY;
        if let Err(e) = app.store.replace_timer(t, &[again]) {
            tracing::error!("cannot postpone a timer: {e}");
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    }
}

async fn fire(app: &App, t: &Timer) -> Result<()> {
    tracing::info!(session = %t.session, gate = %t.gate, kind = ?t.kind, n = t.n, "timer due");
    match t.kind {
        TimerKind::Timeout => fire_timeout(app, t).await,
        TimerKind::Reminder => fire_reminder(app, t).await,
        TimerKind::Escalation => {
            let Some(session) = app.store.load(&t.session)? else {
                return app.store.remove_timer(t);
            };
            let Some(gate) = waiting_gate(&session, Some(&t.gate)).cloned() else {
                return app.store.remove_timer(t);
            };
            escalate(app, &session, &gate, t).await
        }
    }
}

/// A timeout: the fallback answer, recorded exactly once, then shown.
async fn fire_timeout(app: &App, t: &Timer) -> Result<()> {
    if let Some(fired) = &t.fired {
        // Recorded before a restart: show it (again) and carry on.
        finish_timeout(app, t, fired).await;
        return app.store.remove_timer(t);
    }
    let Some(session) = app.store.load(&t.session)? else {
        return app.store.remove_timer(t);
    };
    let Some(gate) = waiting_gate(&session, Some(&t.gate)).cloned() else {
        // Answered (or moved on) before its time: nothing to do.
        return app.store.remove_timer(t);
    };
    let escalated = app.store.escalation(&session.id, &t.gate)?;
    if gate.fallback == Fallback::Escalate && escalated.is_none() {
        return escalate(app, &session, &gate, t).await;
    }
    let now = Utc::now();
    match gate.timeout_at {
        None => return app.store.remove_timer(t),
        // The deadline moved (an escalation): fire then, not now.
        Some(at) if at > now => {
            let mut moved = t.clone();
            moved.due = at;
            app.store.replace_timer(t, &[moved])?;
            WAKE.notify_one();
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
                        EscalationTarget::User(id) | EscalationTarget::Group(id) => id.clone(),
                        EscalationTarget::Channel(c) => format!("#{c}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
    }
    let mut messages = Vec::new();
    if let Some(n) = session.notification.as_ref().filter(|n| n.gate == t.gate) {
        if let Some(ts) = &n.ts {
            messages.push((n.channel.clone(), ts.clone()));
        }
    }
    if let Some(esc) = &escalated {
        messages.extend(esc.messages.iter().cloned());
    }
    let fired = Fired {
        answer: answer.clone(),
        gate,
        messages,
    };
    match app.store.record_timeout(t, &answer, &fired)? {
        Ok(_) => {
            tracing::info!(session = %t.session, gate = %t.gate, "timed out: {}", outcome_text(&answer));
            app.metrics.gate_answered(decision_name(&answer));
            finish_timeout(app, t, &fired).await;
        }
        Err(refusal) => {
            // Someone answered first; their answer stands.
            tracing::info!(session = %t.session, gate = %t.gate, "timeout not applied: {refusal}");
        }
    }
    app.store.remove_timer(t)
}

/// What follows a recorded timeout, idempotent: the run goes on, and the
/// messages that asked show what happened.
async fn finish_timeout(app: &App, t: &Timer, fired: &Fired) {
    let session = match app.store.load(&t.session) {
        Ok(Some(s)) => s,
        _ => return,
    };
    if session.status == Status::Running {
        app.drive(session.id.clone());
    }
    show_answer(app, &session, &fired.gate, &fired.messages, &fired.answer).await;
}

/// Replaces the buttons of `messages` with what `answer` did.
async fn show_answer(
    app: &App,
    session: &Session,
    gate: &OpenGate,
    messages: &[(String, String)],
    answer: &Answer,
) {
    if messages.is_empty() {
        return;
    }
    let view = ApprovalView::from_gate(gate, &session.workflow, &session.id, &session.started_by);
    let blocks = match app
        .templates
        .decided(&DecidedView::from_answer(view, answer))
    {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(session = %session.id, "cannot render the decided message: {e}");
            return;
        }
    };
    let text = if answer.by == "timeout" {
        format!("⏱ Timed out → {}", outcome_text(answer))
    } else {
        let verb = answer.decision.verb();
        let mut c = verb.chars();
        let verb = c
            .next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default();
        format!(
            "{verb} by {} at {}",
            mention(&answer.by),
            answer.at.format("%Y-%m-%d %H:%M UTC")
        )
    };
    for (channel, ts) in messages {
        if let Err(e) = app.api.update(channel, ts, &text, blocks.clone()).await {
            tracing::warn!(session = %session.id, channel = %channel, "could not update an approval message: {e}");
        }
    }
}

/// "rejected by fallback", "continued (approved by fallback)", ...
fn outcome_text(answer: &Answer) -> String {
    match &answer.decision {
        Decision::Approve => "approved by fallback".into(),
        Decision::Reject { reason } => match reason.as_deref() {
            Some(r) if r.starts_with("rejected by fallback") => "rejected by fallback".into(),
            Some(r) => format!("rejected: {r}"),
            None => "rejected".into(),
        },
        Decision::Respond { text } => format!("answered `{text}` (the default)"),
        Decision::Skip => "skipped by fallback".into(),
        Decision::Abort { .. } => "aborted by fallback: the run failed".into(),
        other => other.verb().into(),
    }
}

/// A reminder in the approval thread; schedules the next one.
async fn fire_reminder(app: &App, t: &Timer) -> Result<()> {
    let Some(session) = app.store.load(&t.session)? else {
        return app.store.remove_timer(t);
    };
    let Some(gate) = waiting_gate(&session, Some(&t.gate)).cloned() else {
        return app.store.remove_timer(t);
    };
    let timing = gate_spec(&session, &gate.id)?;
    let thread = session
        .notification
        .as_ref()
        .filter(|n| n.gate == t.gate && n.ts.is_some() && !n.channel.is_empty())
        .and_then(|n| Some((n.channel.clone(), n.thread_ts.clone().or(n.ts.clone())?)));
    if let Some((channel, thread_ts)) = thread {
        let who = if gate.approvers.is_empty() {
            mention(&session.started_by)
        } else {
            gate.approvers
                .iter()
                .map(|a| crate::gate::show_approver(a))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let deadline = gate
            .timeout_at
            .map(|at| {
                format!(
                    " It times out {} ({}).",
                    slack_date(at),
                    fallback_words(gate.fallback)
                )
            })
            .unwrap_or_default();
        let text = format!(
            "⏰ Reminder {} of {}: {who}, gate `{}` of `{}` is waiting for your answer.{deadline}",
            t.n,
            timing.max_reminders.max(t.n),
            escape_mrkdwn(&gate.id),
            escape_mrkdwn(&session.workflow),
        );
        let blocks = note_blocks(&text, &session);
        if let Err(e) = app
            .api
            .post_message(&channel, &plain(&text), blocks, Some(&thread_ts))
            .await
        {
            // A lost reminder is not worth a retry storm; the next one comes.
            tracing::warn!(session = %session.id, "reminder not posted: {e}");
        }
    }
    let mut next = Vec::new();
    if let Some(every) = timing.reminder_interval {
        // After the bot was down a while, the next one comes an interval
        // from now, not in a burst of the missed ones.
        let now = Utc::now();
        let base = if later(t.due, every) < now {
            now
        } else {
            t.due
        };
        let due = later(base, every);
        if t.n < timing.max_reminders && gate.timeout_at.is_none_or(|to| due < to) {
            next.push(Timer {
                due,
                n: t.n + 1,
                ..t.clone()
            });
        }
    }
    app.store.replace_timer(t, &next)
}

/// Re-posts the request to the escalation target, once per gate asking.
/// `t` is the escalation timer, or the timeout of an `escalate` fallback
/// (which then moves the deadline by one more timeout period).
async fn escalate(app: &App, session: &Session, gate: &OpenGate, t: &Timer) -> Result<()> {
    if app.store.escalation(&session.id, &t.gate)?.is_some() {
        return app.store.remove_timer(t);
    }
    let timing = gate_spec(session, &gate.id)?;
    let targets = timing.escalation_target.clone();
    if targets.is_empty() {
        return app.store.remove_timer(t);
    }
    let on_timeout = t.kind == TimerKind::Timeout;
    let now = Utc::now();
    // Targets may answer a gate that names its approvers; an `escalate`
    // fallback gives them one more timeout period. Both are idempotent
    // against the stored gate (a retry after a crash changes nothing more).
    let period = gate.timeout_at.map(|at| at - gate.opened_at);
    let ids: Vec<String> = targets
        .iter()
        .filter_map(|t| match t {
            EscalationTarget::User(u) | EscalationTarget::Group(u) => Some(u.clone()),
            EscalationTarget::Channel(_) => None,
        })
        .collect();
    let updated = app.store.update_open_gate(&session.id, &t.gate, |g| {
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
    })?;
    let Some(session) = updated else {
        // Answered meanwhile.
        return app.store.remove_timer(t);
    };
    let Some(gate) = session.gate.clone() else {
        return app.store.remove_timer(t);
    };
    let waited = now - gate.opened_at;
    let why = if on_timeout {
        format!(
            "no answer before the timeout; it waits for you until {}, then it is rejected.",
            gate.timeout_at
                .map(slack_date)
                .unwrap_or_else(|| "later".into()),
        )
    } else {
        format!("no answer for {}.", human_duration(waited))
    };
    let messages = post_copies(app, &session, &gate, &targets, &why).await;
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
    app.store.record_escalation(&session.id, &esc, t, &next)?;
    WAKE.notify_one();
    tracing::info!(session = %session.id, gate = %t.gate, "escalated to {}", targets_text(&targets));
    // A note in the original thread.
    if let Some(n) = session
        .notification
        .as_ref()
        .filter(|n| n.gate == t.gate && !n.channel.is_empty())
    {
        if let Some(thread) = n.thread_ts.clone().or(n.ts.clone()) {
            // `why` is ours (a duration, a Slack date): no user text in it.
            let text = format!("🔺 Escalated to {}: {why}", targets_text(&targets));
            let blocks = note_blocks(&text, &session);
            if let Err(e) = app
                .api
                .post_message(&n.channel, &plain(&text), blocks, Some(&thread))
                .await
            {
                tracing::warn!(session = %session.id, "escalation note not posted: {e}");
            }
        }
    }
    Ok(())
}

/// Posts the approval message again where `targets` say: the channel named,
/// else a direct message to each user; groups are mentioned (in the
/// approval channel when no channel is named). Returns `(channel, ts)` of
/// every copy posted.
async fn post_copies(
    app: &App,
    session: &Session,
    gate: &OpenGate,
    targets: &[EscalationTarget],
    why: &str,
) -> Vec<(String, String)> {
    let mut places: Vec<String> = targets
        .iter()
        .filter_map(|t| match t {
            EscalationTarget::Channel(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    if places.is_empty() {
        places.extend(targets.iter().filter_map(|t| match t {
            EscalationTarget::User(u) => Some(u.clone()),
            _ => None,
        }));
        let groups = targets
            .iter()
            .any(|t| matches!(t, EscalationTarget::Group(_)));
        if groups {
            if let Some(c) = app.approval_channel(session) {
                places.push(c);
            }
        }
    }
    let mentions: Vec<String> = targets
        .iter()
        .filter(|t| !matches!(t, EscalationTarget::Channel(_)))
        .map(EscalationTarget::mention)
        .collect();
    let who = if mentions.is_empty() {
        "this channel".to_string()
    } else {
        mentions.join(" ")
    };
    // `why` is ours (a duration, a Slack date): no user text in it.
    let head = format!(
        "🔺 *Escalated to {who}*: gate `{}` of `{}` got {why}",
        escape_mrkdwn(&gate.id),
        escape_mrkdwn(&session.workflow),
    );
    let view = ApprovalView::from_gate(gate, &session.workflow, &session.id, &session.started_by);
    let approval = match app.templates.approval(&view) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(session = %session.id, "cannot render the approval message: {e}");
            return Vec::new();
        }
    };
    let mut blocks =
        vec![json!({"type": "section", "text": {"type": "mrkdwn", "text": cut(&head)}})];
    blocks.extend(approval);
    if let Err(e) = super::blocks::check_message(&blocks) {
        tracing::error!(session = %session.id, "the escalated request breaks Block Kit limits: {e:?}");
        return Vec::new();
    }
    let text = format!(
        "Escalated: approval needed: {} / {} ({who})",
        session.workflow, gate.id
    );
    let mut posted = Vec::new();
    for place in places {
        match app.api.post_message_in(&place, &text, blocks.clone()).await {
            Ok((channel, ts)) => posted.push((channel, ts)),
            Err(e) => {
                tracing::warn!(session = %session.id, to = %place, "escalated request not posted: {e}")
            }
        }
    }
    posted
}

/// After an answer is carried out: a gate that was escalated was asked in
/// several messages; all of them show the answer (a timeout shows its own).
pub async fn after_answer(app: &App, session: &Session, gate_id: &str, answer: &Answer) {
    if answer.via == "timeout" {
        return;
    }
    let Some(handle) = session.history.iter().rev().find_map(|e| match &e.what {
        GateEventKind::Answered { .. } if e.gate == gate_id => {
            Some(format!("{}#{}", e.gate, e.instance))
        }
        _ => None,
    }) else {
        return;
    };
    let esc = match app.store.escalation(&session.id, &handle) {
        Ok(Some(e)) => e,
        _ => return,
    };
    let mut messages = esc.messages.clone();
    if let Some(n) = session.notification.as_ref().filter(|n| n.gate == handle) {
        if let Some(ts) = &n.ts {
            messages.push((n.channel.clone(), ts.clone()));
        }
    }
    show_answer(app, session, &esc.gate, &messages, answer).await;
}

/// A one-section note (mrkdwn `text`, already escaped where it must be)
/// with the run named below it.
fn note_blocks(text: &str, session: &Session) -> Vec<Value> {
    vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "text": cut(text)}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text": cut(&format!(
            "*{}* · session `{}`",
            escape_mrkdwn(&session.workflow),
            escape_mrkdwn(&session.id)
        ))}]}),
    ]
}

/// Cuts mrkdwn to a section's 3000 characters (by chars; mentions and
/// escapes are short and come first).
fn cut(text: &str) -> String {
    if text.chars().count() <= 2900 {
        return text.to_string();
    }
    let mut out: String = text.chars().take(2899).collect();
    out.push('…');
    out
}

/// The notification text (no markup) of a note.
fn plain(text: &str) -> String {
    text.replace('*', "")
}

/// A date Slack shows in the reader's time zone.
fn slack_date(at: DateTime<Utc>) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} at {{time}}|{}>",
        at.timestamp(),
        at.format("%Y-%m-%d %H:%M UTC")
    )
}

fn fallback_words(f: Fallback) -> &'static str {
    match f {
        Fallback::Continue => "then it is approved by fallback",
        Fallback::Cancel => "then it is rejected by fallback",
        Fallback::Skip => "then it is skipped by fallback",
        Fallback::Abort => "then the run is aborted by fallback",
        Fallback::Default => "then it takes its default answer",
        Fallback::Escalate => "then it is escalated",
    }
}

fn targets_text(targets: &[EscalationTarget]) -> String {
    targets
        .iter()
        .map(EscalationTarget::mention)
        .collect::<Vec<_>>()
        .join(", ")
}

/// "90 seconds", "5 minutes", "2.5 hours", "3 days".
fn human_duration(d: chrono::TimeDelta) -> String {
    let s = d.num_seconds().max(0) as f64;
    let (n, unit) = if s < 120.0 {
        (s, "second")
    } else if s < 2.0 * 3600.0 {
        (s / 60.0, "minute")
    } else if s < 2.0 * 86_400.0 {
        (s / 3600.0, "hour")
    } else {
        (s / 86_400.0, "day")
    };
    let n = (n * 10.0).round() / 10.0;
    if n == 1.0 {
        format!("1 {unit}")
    } else if n.fract() == 0.0 {
        format!("{n:.0} {unit}s")
    } else {
        format!("{n:.1} {unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Position;

    fn gate(timeout: Option<i64>) -> OpenGate {
        let now = Utc::now();
        OpenGate {
            id: "review".into(),
            instance: 2,
            kind: GateKind::ManualGate,
            position: Position::Step(1),
            prompt: "p".into(),
            context: "c".into(),
            show_preview: true,
            preview_length: 10,
            default: None,
            fallback: Fallback::Cancel,
            opened_at: now,
            timeout_at: timeout.map(|s| now + chrono::TimeDelta::seconds(s)),
            require_reason: false,
            channel: None,
            approvers: Vec::new(),
            approvals_required: 1,
            allow_self_approval: None,
            approvals: Vec::new(),
            rejections_required: 1,
            rejections: Vec::new(),
            trigger: None,
        }
    }

    /// A store with one session paused at a hitl gate `review` (echo provider).
    async fn paused(dir: &std::path::Path) -> (crate::store::Store, Session) {
        let text = "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  a:\n    prompt: hi\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n      - type: hitl\n        id: review\n        prompt: ok?\n        timeout_seconds: 60\n        fallback_action: reject\n";
        let spec = crate::spec::parse(
            text,
            std::path::Path::new("t.yaml"),
            &crate::spec::Limits::default(),
        )
        .unwrap();
        let store = crate::store::Store::open(&dir.join("store")).unwrap();
        let start = crate::engine::Start {
            variables: Default::default(),
            started_by: "U01STARTER".into(),
            out_dir: dir.join("out"),
            origin: None,
        };
        let session = crate::engine::Engine::new(&store)
            .start(&spec, start, &mut crate::channel::Detached)
            .await
            .unwrap();
        assert_eq!(session.status, Status::Paused);
        (store, session)
    }

    fn click(by: &str) -> Answer {
        Answer {
            decision: Decision::Approve,
            by: by.into(),
            at: Utc::now(),
            via: "slack".into(),
            vars: Default::default(),
            call: None,
        }
    }

    #[tokio::test]
    async fn a_timeout_is_recorded_once_and_marks_its_timer_in_the_same_step() {
        let dir = tempfile::tempdir().unwrap();
        let (store, session) = paused(dir.path()).await;
        let gate = session.gate.clone().unwrap();
        let timers = plan(&session.id, &gate, &GateTimers::default());
        assert!(store
            .arm_timers(&session.id, &gate.handle(), &timers)
            .unwrap());
        assert!(
            !store
                .arm_timers(&session.id, &gate.handle(), &timers)
                .unwrap(),
            "armed once per gate asking"
        );
        // Another gate open at the same time (parallel branches) is armed on
        // its own, and arming it does not let the first be armed again.
        assert!(store.arm_timers(&session.id, "other#9", &[]).unwrap());
        assert!(!store
            .arm_timers(&session.id, &gate.handle(), &timers)
            .unwrap());
        assert!(!store.arm_timers(&session.id, "other#9", &[]).unwrap());
        let t = store.next_timer().unwrap().unwrap();
        assert_eq!(t.kind, TimerKind::Timeout);
        let answer = crate::gate::timeout_answer(&gate, Utc::now());
        let fired = Fired {
            answer: answer.clone(),
            gate: gate.clone(),
            messages: vec![("C1".into(), "1.0".into())],
        };
        let recorded = store.record_timeout(&t, &answer, &fired).unwrap().unwrap();
        assert_eq!(recorded.pending_answer.as_ref(), Some(&answer));
        // The timer says so: a restart shows the answer, never records it again.
        let after = store.next_timer().unwrap().unwrap();
        assert_eq!(after.fired.as_ref(), Some(&fired));
        assert!(matches!(
            store.record_timeout(&t, &answer, &fired).unwrap(),
            Err(crate::store::Refusal::AlreadyAnswered(_))
        ));
        // A click after it is told the timeout decided.
        match store
            .record_answer(&session.id, Some(&gate.handle()), &click("U0LATE01"))
            .unwrap()
        {
            Err(crate::store::Refusal::AlreadyAnswered(a)) => assert_eq!(a.by, "timeout"),
            other => panic!("{other:?}"),
        }
        store.remove_timer(&after).unwrap();
        assert!(store.next_timer().unwrap().is_none());
    }

    #[tokio::test]
    async fn a_click_first_wins_and_the_timer_is_left_unfired() {
        let dir = tempfile::tempdir().unwrap();
        let (store, session) = paused(dir.path()).await;
        let gate = session.gate.clone().unwrap();
        let timers = plan(&session.id, &gate, &GateTimers::default());
        store
            .arm_timers(&session.id, &gate.handle(), &timers)
            .unwrap();
        store
            .record_answer(&session.id, Some(&gate.handle()), &click("U0FAST01"))
            .unwrap()
            .unwrap();
        let t = store.next_timer().unwrap().unwrap();
        let answer = crate::gate::timeout_answer(&gate, Utc::now());
        let fired = Fired {
            answer: answer.clone(),
            gate,
            messages: Vec::new(),
        };
        assert!(store.record_timeout(&t, &answer, &fired).unwrap().is_err());
        assert_eq!(store.next_timer().unwrap().unwrap().fired, None);
    }

    #[test]
    fn plans_no_reminder_or_escalation_past_the_timeout() {
        let g = gate(Some(60));
        let timing = GateTimers {
            reminder_interval: Some(Duration::from_secs(30)),
            max_reminders: 3,
            escalation_timeout: Some(Duration::from_secs(90)),
            escalation_target: vec![EscalationTarget::User("U0BOSS".into())],
        };
        let kinds: Vec<(TimerKind, u32)> = plan("s", &g, &timing)
            .iter()
            .map(|t| (t.kind, t.n))
            .collect();
        assert_eq!(
            kinds,
            vec![(TimerKind::Timeout, 0), (TimerKind::Reminder, 1)]
        );
        let none = plan("s", &gate(None), &GateTimers::default());
        assert!(none.is_empty());
    }

    #[test]
    fn timer_keys_sort_by_due_time() {
        let g = gate(Some(60));
        let mut a = plan("zzz", &g, &GateTimers::default()).remove(0);
        let mut b = a.clone();
        b.session = "aaa".into();
        a.due = Utc::now();
        b.due = a.due + chrono::TimeDelta::milliseconds(1);
        assert!(a.key() < b.key(), "earlier first, whatever the session id");
    }

    #[test]
    fn outcomes_read_as_the_fallback_did() {
        let g = gate(Some(1));
        let a = crate::gate::timeout_answer(&g, Utc::now());
        assert_eq!(outcome_text(&a), "rejected by fallback");
        assert_eq!(human_duration(chrono::TimeDelta::seconds(90)), "90 seconds");
        assert_eq!(human_duration(chrono::TimeDelta::minutes(5)), "5 minutes");
        assert_eq!(human_duration(chrono::TimeDelta::minutes(150)), "2.5 hours");
    }
}
