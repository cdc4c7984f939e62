//! What the Slack room does about gate timers ([`crate::engine::timers`]
//! decides when they fire; [`super::room::SlackRoom`] is called): reminders in the approval thread mentioning who must
//! answer, escalated requests re-posted to the `escalation_target` (a
//! channel, else a direct message to each user; groups are mentioned in the
//! approval channel) with working buttons and a note in the original
//! thread, and timeouts shown on every message that asked ("⏱ Timed out →
//! rejected by fallback"). Posting to Slack cannot be made atomic with the
//! store: a crash between posting an escalation and recording it re-posts it
//! once at start-up (at least once, never lost); everything recorded is
//! exactly once.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::app::App;
use super::asked::{asking_messages, note_for};
use super::blocks::{escape_mrkdwn, ApprovalView, DecidedView};
use super::words::who;
use crate::model::timer::EscalationWhy;
use crate::model::timer::Fired;
use crate::model::{Answer, Decision, GateEventKind, OpenGate, Session};
use crate::spec::{EscalationTarget, Fallback};

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
    let view = ApprovalView::of(gate, session);
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
            "{verb} by {}{} at {}",
            who(&answer.by),
            answer.for_whom(),
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
            EscalationTarget::Channel(crate::model::Place::Slack(c)) => Some(c.clone()),
            _ => None,
        })
        .collect();
    if places.is_empty() {
        // A `teams:` person is the Teams room's to ask.
        places.extend(targets.iter().filter_map(|t| match t {
            EscalationTarget::User(crate::model::Approver::SlackUser(u)) => Some(u.clone()),
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
        .map(super::words::target)
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
    let view = ApprovalView::of(gate, session);
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
    let esc = match app.hub.store.escalation(&session.id, &handle).await {
        Ok(Some(e)) => e,
        _ => return,
    };
    // The original, its direct copies (`notify: dm`) and the escalated ones.
    let messages = asking_messages(app, &session.id, &handle, None).await;
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
        .map(super::words::target)
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

/// The messages that asked for gate `handle`: the approval message and
/// its direct copies (escalated copies are the engine's to add).
pub async fn messages(app: &App, session: &Session, handle: &str) -> Vec<(String, String)> {
    let Some(n) = note_for(app, &session.id, handle).await else {
        return Vec::new();
    };
    n.ts.map(|ts| (n.channel, ts))
        .into_iter()
        .chain(n.copies)
        .collect()
}

/// Reminder `n` of `of` in the approval thread, mentioning who must answer.
pub async fn remind(app: &App, session: &Session, gate: &OpenGate, n: u32, of: u32) {
    let Some((channel, thread_ts)) = note_for(app, &session.id, &gate.handle())
        .await
        .filter(|n| n.ts.is_some() && !n.channel.is_empty())
        .and_then(|n| Some((n.channel.clone(), n.thread_ts.clone().or(n.ts.clone())?)))
    else {
        return;
    };
    let who = if gate.approvers.is_empty() {
        who(&session.started_by)
    } else {
        super::words::approvers(&gate.approvers, " ")
    };
    let business =
        crate::hub::durations::business_deadline_posted(gate.hours.as_ref(), gate.timeout_at);
    let deadline = gate
        .timeout_at
        .map(|at| {
            format!(
                " It times out {} ({}).",
                business
                    .as_deref()
                    .map(escape_mrkdwn)
                    .unwrap_or_else(|| slack_date(at)),
                fallback_words(gate.fallback)
            )
        })
        .unwrap_or_default();
    let text = format!(
        "⏰ {}: {who}, gate `{}` of `{}` is waiting for your answer.{deadline}",
        crate::hub::durations::reminder(n, of),
        escape_mrkdwn(&gate.id),
        escape_mrkdwn(&session.workflow),
    );
    let blocks = note_blocks(&text, session);
    if let Err(e) = app
        .api
        .post_message(&channel, &plain(&text), blocks, Some(&thread_ts))
        .await
    {
        // A lost reminder is not worth a retry storm; the next one comes.
        tracing::warn!(session = %session.id, "reminder not posted: {e}");
    }
}

/// Re-posts the request to `targets`, with a note in the original thread.
pub async fn escalate(
    app: &App,
    session: &Session,
    gate: &OpenGate,
    targets: &[EscalationTarget],
    why: &EscalationWhy,
) -> Vec<(String, String)> {
    // `why` is ours (a duration, a Slack date): no user text in it.
    let why = match why {
        EscalationWhy::TimedOut { until } => format!(
            "no answer before the timeout; it waits for you until {}, then it is rejected.",
            until.map(slack_date).unwrap_or_else(|| "later".into()),
        ),
        EscalationWhy::Waited(d) => format!("no answer for {}.", human_duration(*d)),
        EscalationWhy::OutsideHours { calendar } => {
            format!("it was asked outside the business hours of calendar `{calendar}`.")
        }
    };
    let messages = post_copies(app, session, gate, targets, &why).await;
    if messages.is_empty() {
        return messages;
    }
    tracing::info!(session = %session.id, gate = %gate.handle(), "escalated to {}", targets_text(targets));
    // A note in the original thread.
    if let Some(n) = note_for(app, &session.id, &gate.handle())
        .await
        .filter(|n| !n.channel.is_empty())
    {
        if let Some(thread) = n.thread_ts.clone().or(n.ts.clone()) {
            let text = format!("🔺 Escalated to {}: {why}", targets_text(targets));
            let blocks = note_blocks(&text, session);
            if let Err(e) = app
                .api
                .post_message(&n.channel, &plain(&text), blocks, Some(&thread))
                .await
            {
                tracing::warn!(session = %session.id, "escalation note not posted: {e}");
            }
        }
    }
    messages
}

/// A timeout's answer on every message that asked ("⏱ Timed out → ...").
pub async fn timed_out(app: &App, session: &Session, fired: &Fired) {
    // Another room's messages (Teams cards) are that room's to update.
    let mine: Vec<(String, String)> = fired
        .messages
        .iter()
        .filter(|(place, _)| crate::model::Place::parse(place).slack().is_some())
        .cloned()
        .collect();
    show_answer(app, session, &fired.gate, &mine, &fired.answer).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_as_the_fallback_did() {
        let rejected = Answer {
            decision: Decision::Reject {
                reason: Some("rejected by fallback (fallback_action: reject)".into()),
            },
            by: "timeout".into(),
            at: crate::clock::test_epoch(),
            via: "timeout".into(),
            vars: Default::default(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        };
        assert_eq!(outcome_text(&rejected), "rejected by fallback");
        assert_eq!(human_duration(chrono::TimeDelta::seconds(90)), "90 seconds");
        assert_eq!(human_duration(chrono::TimeDelta::minutes(5)), "5 minutes");
        assert_eq!(human_duration(chrono::TimeDelta::minutes(150)), "2.5 hours");
    }
}
