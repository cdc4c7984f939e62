//! Gates that keep business hours, on a paused clock started on chosen
//! instants in Paris (Monday to Friday, 09:00-17:00): a business deadline
//! across the weekend, `when_closed` each way, a reminder deferred to the
//! opening, an approving timeout deferred by `auto_approve: {outside_hours:
//! false}`.

use super::*;
use crate::config::service::ServiceFile;
use crate::config::Settings;
use crate::gate::calendar::{Calendar, CalendarSpec};
use crate::model::{GateEventKind, WhenClosed};
use chrono::{NaiveDateTime, TimeZone};

fn paris() -> Calendar {
    Calendar::try_from(CalendarSpec {
        zone: "Europe/Paris".into(),
        hours: [("mon-fri".to_string(), "09:00-17:00".to_string())].into(),
        holidays: vec!["2026-12-25".into()],
    })
    .expect("calendar")
}

/// `2026-11-27 16:00` Paris time.
fn paris_at(text: &str) -> DateTime<Utc> {
    let n = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("time");
    chrono_tz::Europe::Paris
        .from_local_datetime(&n)
        .single()
        .expect("exists")
        .with_timezone(&Utc)
}

/// The timers' world with its clock reading `now` (Paris time).
fn world_at(now: &str, escalate: bool) -> Timed {
    let mut w = Timed::new(escalate);
    w.w.clock = Arc::new(TokioClock::starting_at(paris_at(now)));
    w
}

impl Timed {
    /// An engine whose service has the calendar `eu-office`.
    fn office_engine(&self) -> crate::engine::Engine<'_> {
        let mut service = ServiceFile::default();
        service.calendars.insert("eu-office".into(), paris());
        let settings = Settings {
            service,
            ..Default::default()
        };
        self.engine()
            .with_settings(Arc::new(settings))
            .with_specs(Arc::clone(&self.specs))
            .with_clock(Arc::clone(&self.clock))
    }

    /// Starts the chain with the gate's `lines`, wherever it stops.
    async fn start_office(&self, lines: &str) -> Session {
        let yaml = CHAIN.replace("$GATE", lines);
        let spec = crate::spec::parse(&yaml, std::path::Path::new("t.yaml"), &Default::default())
            .expect("spec");
        let start = crate::engine::Start {
            variables: Default::default(),
            started_by: "starter".into(),
            out_dir: self.dir.path().join("out"),
            origin: None,
            overwrite_artifacts: false,
        };
        // Boxed: a run's whole future, held on the test thread's stack,
        // came within a few KiB of its 2 MiB in debug builds.
        Box::pin(
            self.office_engine()
                .start(&spec, start, &mut crate::channel::Detached),
        )
        .await
        .expect("start")
    }

    async fn due(&self) -> Vec<(TimerKind, DateTime<Utc>)> {
        let mut t: Vec<_> = self
            .store
            .timers()
            .await
            .expect("timers")
            .into_iter()
            .map(|t| (t.kind, t.due))
            .collect();
        t.sort_by_key(|(_, due)| *due);
        t
    }
}

/// Advances the paused clock to `to` (Paris time).
async fn advance_to(w: &Timed, to: &str) {
    let left = (paris_at(to) - w.clock.now()).to_std().expect("ahead");
    tokio::time::advance(left).await;
}

#[tokio::test(start_paused = true)]
async fn a_business_timeout_opened_on_saturday_counts_from_monday_and_waits() {
    let w = world_at("2026-11-28 10:00", false);
    let s = w
        .start_office("        timeout: 2h business\n        calendar: eu-office\n        reminder_interval: 30\n        max_reminders: 2")
        .await;
    assert_eq!(s.status, Status::Paused, "when_closed: wait keeps it open");
    let g = s.first_gate().expect("open");
    let h = g.hours.as_ref().expect("hours");
    assert!(h.opened_closed && h.when_closed == WhenClosed::Wait);
    assert_eq!(h.calendar, "eu-office");
    assert_eq!(g.timeout_at, Some(paris_at("2026-11-30 11:00")));
    assert_eq!(
        w.due().await,
        vec![
            (TimerKind::Reminder, paris_at("2026-11-30 09:30")),
            (TimerKind::Timeout, paris_at("2026-11-30 11:00")),
        ]
    );
    // Nothing over the weekend.
    advance_to(&w, "2026-11-30 09:29").await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 0);
    for at in ["2026-11-30 09:30", "2026-11-30 10:00", "2026-11-30 11:00"] {
        advance_to(&w, at).await;
        w.timers().fire_due().await.expect("fire");
    }
    let reminders = w
        .notifier
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::Remind { .. }))
        .count();
    assert_eq!(reminders, 2, "09:30 and 10:00, {:?}", w.notifier.calls());
    assert_eq!(
        w.session(&s.id).await.pending.expect("timed out").answer.by,
        "timeout"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reminder_that_would_come_after_closing_waits_for_the_opening() {
    let w = world_at("2026-11-27 16:40", false);
    w.start_office(
        "        timeout: 4h business\n        reminder_interval: 30\n        max_reminders: 1",
    )
    .await;
    // 17:10 on Friday is closed: Monday 09:00; the timeout is Monday 12:40.
    assert_eq!(
        w.due().await,
        vec![
            (TimerKind::Reminder, paris_at("2026-11-30 09:00")),
            (TimerKind::Timeout, paris_at("2026-11-30 12:40")),
        ]
    );
    advance_to(&w, "2026-11-27 17:10").await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 0);
    advance_to(&w, "2026-11-30 09:00").await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 1);
    assert_eq!(
        w.notifier.calls(),
        vec![Call::Remind {
            gate: "review#1".into(),
            n: 1,
            of: 1
        }]
    );

    // Told to, it comes outside hours.
    let w = world_at("2026-11-27 16:40", false);
    w.start_office("        timeout: 4h business\n        reminder_interval: 30\n        max_reminders: 1\n        timers_outside_hours: true")
        .await;
    assert_eq!(
        w.due().await[0],
        (TimerKind::Reminder, paris_at("2026-11-27 17:10"))
    );
}

#[tokio::test(start_paused = true)]
async fn when_closed_escalate_goes_to_the_on_call_at_once() {
    let w = world_at("2026-11-28 10:00", true);
    let s = w
        .start_office("        approvers: [U0ALICE]\n        when_closed: escalate\n        escalation_target: [U0ONCALL]")
        .await;
    assert_eq!(s.status, Status::Paused);
    assert_eq!(
        w.due().await,
        vec![(TimerKind::Escalation, paris_at("2026-11-28 10:00"))]
    );
    assert_eq!(w.timers().fire_due().await.expect("fire"), 1);
    assert_eq!(
        w.notifier.calls(),
        vec![Call::Escalate {
            gate: "review#1".into(),
            targets: 1,
            why: EscalationWhy::OutsideHours {
                calendar: "eu-office".into()
            },
        }]
    );
    let g = w.session(&s.id).await.first_gate().cloned().expect("open");
    assert!(g.approvers.iter().any(|a| a == "U0ONCALL"), "{g:?}");

    // Opened within hours, it is not escalated.
    let w = world_at("2026-11-27 10:00", true);
    w.start_office("        approvers: [U0ALICE]\n        when_closed: escalate\n        escalation_target: [U0ONCALL]")
        .await;
    assert!(w.due().await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn when_closed_reject_rejects_at_once_saying_why() {
    let w = world_at("2026-12-25 10:00", false);
    let s = w
        .start_office("        timeout: 8h business\n        fallback_action: approve\n        when_closed: reject")
        .await;
    assert_eq!(s.status, Status::Rejected, "Christmas is a holiday");
    let answer = s
        .history
        .iter()
        .find_map(|e| match &e.what {
            GateEventKind::Answered { answer, .. } => Some(answer.clone()),
            _ => None,
        })
        .expect("answered");
    assert_eq!(answer.by, "timeout");
    assert_eq!(
        answer.decision,
        crate::model::Decision::Reject {
            reason: Some(
                "outside business hours of calendar `eu-office` (when_closed: reject)".into()
            )
        }
    );
    let audit = w
        .store
        .audit_export(None, Some(&s.id))
        .await
        .expect("audit");
    let text = serde_json::to_string(&audit).expect("json");
    assert!(
        text.contains("outside business hours of calendar `eu-office`"),
        "{text}"
    );

    // Within hours the gate waits as usual.
    let w = world_at("2026-12-24 10:00", false);
    let s = w
        .start_office("        timeout: 8h business\n        fallback_action: approve\n        when_closed: reject")
        .await;
    assert_eq!(s.status, Status::Paused);
    // 7 hours on the 24th, the 25th is a holiday: 1 more on Monday 28th.
    assert_eq!(
        s.first_gate().expect("open").timeout_at,
        Some(paris_at("2026-12-28 10:00"))
    );
}

#[tokio::test(start_paused = true)]
async fn an_approving_timeout_outside_hours_waits_for_the_opening_when_told() {
    let w = world_at("2026-11-27 16:00", false);
    let s = w
        .start_office("        timeout: 2h\n        fallback_action: approve\n        auto_approve: {outside_hours: false}")
        .await;
    // Two wall-clock hours: Friday 18:00, closed; it approves Monday 09:00.
    let g = s.first_gate().expect("open");
    assert_eq!(g.timeout_at, Some(paris_at("2026-11-30 09:00")));
    advance_to(&w, "2026-11-27 18:00").await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 0);
    assert_eq!(w.session(&s.id).await.status, Status::Paused);
    advance_to(&w, "2026-11-30 09:00").await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 1);
    let pending = w.session(&s.id).await.pending.expect("timed out");
    assert_eq!(pending.answer.decision, crate::model::Decision::Approve);

    // A rejecting timeout is not held back.
    let w = world_at("2026-11-27 16:00", false);
    let s = w
        .start_office("        timeout: 2h\n        fallback_action: reject\n        auto_approve: {outside_hours: false}")
        .await;
    assert_eq!(
        s.first_gate().expect("open").timeout_at,
        Some(paris_at("2026-11-27 18:00"))
    );
    // An escalating one waits for the opening too (an escalation), unless
    // told otherwise.
    for (extra, due) in [
        ("", "2026-11-30 09:00"),
        ("\n        timers_outside_hours: true", "2026-11-27 18:00"),
    ] {
        let w = world_at("2026-11-27 16:00", false);
        let s = w
            .start_office(&format!("        timeout: 2h\n        fallback_action: escalate\n        escalation_target: [U0ONCALL]\n        calendar: eu-office{extra}"))
            .await;
        assert_eq!(
            s.first_gate().expect("open").timeout_at,
            Some(paris_at(due)),
            "{extra}"
        );
    }
    // Nor is an approving one without `auto_approve`.
    let w = world_at("2026-11-27 16:00", false);
    let s = w
        .start_office(
            "        timeout: 2h\n        fallback_action: approve\n        calendar: eu-office",
        )
        .await;
    assert_eq!(
        s.first_gate().expect("open").timeout_at,
        Some(paris_at("2026-11-27 18:00"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_gate_naming_a_calendar_the_service_lacks_does_not_open() {
    let w = world_at("2026-11-27 10:00", false);
    let yaml = CHAIN.replace("$GATE", "        calendar: us-office");
    let spec = crate::spec::parse(&yaml, std::path::Path::new("t.yaml"), &Default::default())
        .expect("spec (calendars unknown: a warning)");
    let start = crate::engine::Start {
        variables: Default::default(),
        started_by: "starter".into(),
        out_dir: w.dir.path().join("out"),
        origin: None,
        overwrite_artifacts: false,
    };
    let s = w
        .office_engine()
        .start(&spec, start, &mut crate::channel::Detached)
        .await
        .expect("start");
    assert_eq!(s.status, Status::Failed);
    let why = s.failure.map(|f| f.message).unwrap_or_default();
    assert!(
        why.contains("`us-office`") && why.contains("`eu-office`"),
        "{why}"
    );
}
