//! The timer service on paused time: a real store in a temp dir, the echo
//! provider, a notifier that records what it was asked, and tokio's clock
//! advanced by hand — no sleeps, no fractional minutes.

use super::*;
use crate::engine::testkit::{World, CHAIN};
use crate::engine::Asker;
use crate::model::{Answer, Position};
use std::sync::Mutex;

mod hours;

/// What the timers asked the channel to do.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Remind {
        gate: String,
        n: u32,
        of: u32,
    },
    Escalate {
        gate: String,
        targets: usize,
        why: EscalationWhy,
    },
    TimedOut {
        gate: String,
        by: String,
        decision: String,
    },
    Resume,
}

#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Call>>,
    escalate: bool,
}

impl Recorder {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }
    fn push(&self, c: Call) {
        self.calls.lock().expect("calls").push(c);
    }
}

impl Notifier for Recorder {
    async fn messages(&self, _: &Session, handle: &str) -> Vec<(String, String)> {
        vec![("C1".into(), format!("ts-of-{handle}"))]
    }
    async fn remind(&self, _: &Session, gate: &OpenGate, n: u32, of: u32) {
        self.push(Call::Remind {
            gate: gate.handle(),
            n,
            of,
        });
    }
    async fn escalate(
        &self,
        _: &Session,
        gate: &OpenGate,
        targets: &[EscalationTarget],
        why: &EscalationWhy,
    ) -> Vec<(String, String)> {
        self.push(Call::Escalate {
            gate: gate.handle(),
            targets: targets.len(),
            why: why.clone(),
        });
        vec![("D0BOSS".into(), "ts-escalated".into())]
    }
    async fn timed_out(&self, _: &Session, fired: &Fired) {
        self.push(Call::TimedOut {
            gate: fired.gate.handle(),
            by: fired.answer.by.clone(),
            decision: fired.answer.decision.verb().into(),
        });
    }
    async fn resume(&self, _: &str) {
        self.push(Call::Resume);
    }
    fn can_escalate(&self) -> bool {
        self.escalate
    }
}

/// The kit's world, with a notifier that records what it was asked.
struct Timed {
    w: World,
    notifier: Recorder,
}

impl std::ops::Deref for Timed {
    type Target = World;
    fn deref(&self) -> &World {
        &self.w
    }
}

impl Timed {
    fn new(escalate: bool) -> Timed {
        Timed {
            w: World::new(),
            notifier: Recorder {
                escalate,
                ..Default::default()
            },
        }
    }

    fn timers(&self) -> Timers<'_, Recorder> {
        Timers {
            store: &self.store,
            notifier: &self.notifier,
            clock: Arc::clone(&self.clock),
            specs: Arc::clone(&self.specs),
            wake: Arc::clone(&self.wake),
        }
    }

    /// A run paused at `review`, whose own spec lines are `gate`.
    async fn paused(&self, gate: &str) -> Session {
        self.w.paused(&CHAIN.replace("$GATE", gate)).await
    }
}

async fn advance(secs: u64) {
    tokio::time::advance(Duration::from_secs(secs)).await;
}

fn click(by: &str) -> Answer {
    Answer {
        decision: crate::model::Decision::Approve,
        by: by.into(),
        at: crate::clock::test_epoch(),
        via: "slack".into(),
        vars: Default::default(),
        call: None,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_armed_when_the_gate_opens_and_fires_once_at_its_time() {
    let w = Timed::new(false);
    let s = w
        .paused("        timeout_minutes: 10\n        fallback_action: reject")
        .await;
    let timers = w.store.timers().await.expect("timers");
    assert_eq!(
        timers.len(),
        1,
        "armed with the checkpoint that opened the gate"
    );
    assert_eq!(timers[0].kind, TimerKind::Timeout);

    advance(9 * 60 + 59).await;
    assert_eq!(
        w.timers().fire_due().await.expect("fire"),
        0,
        "not before its time"
    );
    assert_eq!(w.session(&s.id).await.status, Status::Paused);

    advance(1).await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 1);
    let after = w.session(&s.id).await;
    let pending = after.pending.expect("the fallback is recorded");
    assert_eq!(pending.answer.by, "timeout");
    assert_eq!(
        w.notifier.calls(),
        vec![
            Call::Resume,
            Call::TimedOut {
                gate: "review#1".into(),
                by: "timeout".into(),
                decision: "rejected".into()
            }
        ]
    );
    // Once: nothing is left to fire, and a late click hears who decided.
    assert!(w.store.timers().await.expect("timers").is_empty());
    assert_eq!(w.timers().fire_due().await.expect("fire"), 0);
    let late = w
        .store
        .record_answer(&s.id, Some("review#1"), &click("U0LATE"))
        .await
        .expect("store");
    assert!(matches!(late, Err(crate::model::Refusal::AlreadyAnswered(a)) if a.by == "timeout"));
}

#[tokio::test(start_paused = true)]
async fn a_click_before_the_timeout_wins_and_the_timer_only_deletes_itself() {
    let w = Timed::new(false);
    let s = w.paused("        timeout_minutes: 1").await;
    let who = "U0FAST".to_string();
    let asker = Asker {
        who: &who,
        admins: &[],
        default_approvers: &[],
        shared: false,
        member_of: &|_| false,
        idp_groups: &[],
        now: w.clock.now(),
    };
    let took = w
        .engine()
        .submit(&s.id, None, click(&who), &asker)
        .await
        .expect("submit");
    assert!(took.is_ok(), "{took:?}");
    advance(120).await;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 1);
    assert!(w.notifier.calls().is_empty(), "{:?}", w.notifier.calls());
    let after = w.session(&s.id).await;
    assert_eq!(after.pending.expect("the click").answer.by, "U0FAST");
    assert!(w.store.timers().await.expect("timers").is_empty());
}

#[tokio::test(start_paused = true)]
async fn reminders_come_every_interval_up_to_the_maximum_and_never_after_the_timeout() {
    let w = Timed::new(false);
    let s = w
        .paused(
            "        timeout_minutes: 10\n        reminder_interval: 3\n        max_reminders: 5",
        )
        .await;
    let reminded = |s: &Session| s.open_gate("review#1").and_then(|g| g.reminded_at);
    let opened = w.session(&s.id).await;
    let opened_at = opened.open_gate("review#1").expect("open").opened_at;
    for minute in 1..=9 {
        advance(60).await;
        w.timers().fire_due().await.expect("fire");
        // Overdue (`gate::ages`) from the first reminder on, at its time.
        let now = reminded(&w.session(&s.id).await);
        if minute < 3 {
            assert_eq!(now, None, "minute {minute}");
        } else {
            let at = now.expect("reminded");
            assert!(at >= opened_at + chrono::TimeDelta::minutes(3), "{at}");
            assert!(at < opened_at + chrono::TimeDelta::minutes(4), "{at}");
        }
    }
    let reminders: Vec<Call> = w
        .notifier
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::Remind { .. }))
        .collect();
    // At 3, 6 and 9 minutes; the one at 12 would come after the timeout.
    assert_eq!(
        reminders,
        (1..=3)
            .map(|n| Call::Remind {
                gate: "review#1".into(),
                n,
                of: 5
            })
            .collect::<Vec<_>>()
    );
    advance(60).await;
    w.timers().fire_due().await.expect("fire");
    assert!(w.session(&s.id).await.pending.is_some(), "then the timeout");
    assert!(w.store.timers().await.expect("timers").is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_escalation_reposts_once_and_makes_the_targets_approvers() {
    let w = Timed::new(true);
    let s = w
        .paused("        approvers: [U0ALICE]\n        escalation_timeout: 5\n        escalation_target: [U0BOSS]")
        .await;
    advance(5 * 60).await;
    w.timers().fire_due().await.expect("fire");
    let calls = w.notifier.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        matches!(&calls[0], Call::Escalate { targets: 1, why: EscalationWhy::Waited(d), .. } if d.num_minutes() == 5)
    );
    let gate = w
        .session(&s.id)
        .await
        .first_gate()
        .cloned()
        .expect("still open");
    assert!(
        gate.approvers.iter().any(|a| a == "U0BOSS"),
        "{:?}",
        gate.approvers
    );
    let esc = w
        .store
        .escalation(&s.id, "review#1")
        .await
        .expect("store")
        .expect("recorded");
    assert_eq!(
        esc.messages,
        vec![("D0BOSS".to_string(), "ts-escalated".to_string())]
    );
    // The re-posted message finds the session like the first one.
    let target = w
        .store
        .message_target("D0BOSS", "ts-escalated")
        .await
        .expect("index");
    assert_eq!(target.map(|t| t.gate).as_deref(), Some("review#1"));
    advance(3600).await;
    w.timers().fire_due().await.expect("fire");
    assert_eq!(w.notifier.calls().len(), 1, "escalated once");
}

#[tokio::test(start_paused = true)]
async fn an_escalate_fallback_gives_one_more_period_then_rejects() {
    let w = Timed::new(true);
    let s = w
        .paused("        timeout_minutes: 10\n        fallback_action: escalate\n        escalation_target: [U0BOSS]")
        .await;
    advance(10 * 60).await;
    w.timers().fire_due().await.expect("fire");
    let gate = w.session(&s.id).await.first_gate().cloned().expect("open");
    let until = gate.timeout_at.expect("a deadline");
    assert_eq!(
        (until - gate.opened_at).num_minutes(),
        20,
        "one more period"
    );
    assert!(matches!(
        &w.notifier.calls()[0],
        Call::Escalate {
            why: EscalationWhy::TimedOut { .. },
            ..
        }
    ));
    advance(10 * 60).await;
    w.timers().fire_due().await.expect("fire");
    let after = w.session(&s.id).await;
    let answer = after.pending.expect("rejected by fallback").answer;
    match answer.decision {
        crate::model::Decision::Reject { reason } => assert!(
            reason
                .as_deref()
                .is_some_and(|r| r.contains("no answer since the escalation to U0BOSS")),
            "{reason:?}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn without_a_bot_an_escalate_fallback_rejects_and_escalations_are_dropped() {
    let w = Timed::new(false);
    let s = w
        .paused("        timeout_minutes: 10\n        fallback_action: escalate\n        escalation_timeout: 5\n        escalation_target: [U0BOSS]")
        .await;
    advance(10 * 60).await;
    w.timers().fire_due().await.expect("fire");
    assert!(!w
        .notifier
        .calls()
        .iter()
        .any(|c| matches!(c, Call::Escalate { .. })));
    let answer = w.session(&s.id).await.pending.expect("rejected").answer;
    assert!(matches!(
        answer.decision,
        crate::model::Decision::Reject { .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_recorded_before_a_restart_is_shown_again_never_recorded_again() {
    let w = Timed::new(false);
    let s = w.paused("        timeout_minutes: 1").await;
    advance(61).await;
    let t = w.store.next_timer().await.expect("store").expect("a timer");
    let gate = w.session(&s.id).await.first_gate().cloned().expect("open");
    let answer = crate::gate::timeout_answer(&gate, w.clock.now());
    let fired = Fired {
        answer: answer.clone(),
        gate,
        messages: Vec::new(),
    };
    // The transaction ran, then the process died before showing it.
    crate::engine::intake::record_timeout(&w.store, &t, &answer, &fired)
        .await
        .expect("store")
        .expect("recorded");
    let rev = w.session(&s.id).await.rev;
    assert_eq!(w.timers().fire_due().await.expect("fire"), 1);
    assert_eq!(w.session(&s.id).await.rev, rev, "nothing recorded twice");
    assert!(w
        .notifier
        .calls()
        .iter()
        .any(|c| matches!(c, Call::TimedOut { .. })));
    assert!(w.store.timers().await.expect("timers").is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_loop_sleeps_until_the_next_timer_and_wakes_when_a_gate_opens() {
    let w = Arc::new(Timed::new(false));
    let looping = Arc::clone(&w);
    let task = tokio::spawn(async move { looping.timers().run().await });
    // The loop goes to sleep with nothing to do (a long nap); a gate armed
    // after that wakes it, so its 10-second timeout fires on time.
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    let text = "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  a:\n    prompt: hi\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n      - type: hitl\n        prompt: ok?\n        timeout_seconds: 10\n";
    let s = w.w.paused(text).await;
    advance(9).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(
        w.session(&s.id).await.pending.is_none(),
        "not before its time"
    );
    advance(2).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        w.session(&s.id)
            .await
            .pending
            .map(|p| p.answer.by)
            .as_deref(),
        Some("timeout"),
        "fired at 10 s, not at the end of the loop's 60 s nap"
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn the_bot_wide_default_timeout_applies_to_gates_without_one() {
    let w = Timed::new(false);
    let engine = w
        .engine()
        .with_settings(Arc::new(crate::config::Settings {
            default_timeout: Some(TimeDelta::minutes(7)),
            ..Default::default()
        }))
        .with_clock(Arc::clone(&w.clock));
    let s = w.paused_with(engine, &CHAIN.replace("$GATE", "")).await;
    let g = s.first_gate().expect("open");
    assert_eq!(
        g.timeout_at.map(|t| (t - g.opened_at).num_minutes()),
        Some(7)
    );
    assert_eq!(w.store.timers().await.expect("timers").len(), 1);
}

fn gate(timeout: Option<i64>) -> OpenGate {
    let now = crate::clock::test_epoch();
    OpenGate {
        reminded_at: None,
        id: "review".into(),
        instance: 2,
        order: 2,
        kind: GateKind::ManualGate,
        position: Position::Step(1),
        prompt: "p".into(),
        context: "c".into(),
        show_preview: true,
        preview_length: 10,
        default: None,
        fallback: Fallback::Cancel,
        opened_at: now,
        timeout_at: timeout.map(|s| now + TimeDelta::seconds(s)),
        require_reason: false,
        channel: None,
        approvers: Vec::new(),
        approvals_required: 1,
        allow_self_approval: None,
        approvals: Vec::new(),
        rejections_required: 1,
        rejections: Vec::new(),
        notify_dm: false,
        notify_email: false,
        trigger: None,
        rule: None,
        hours: None,
        form: None,
        allow_trust: false,
        allow_edit: false,
        step_up: None,
    }
}

#[test]
fn plans_no_reminder_or_escalation_past_the_timeout() {
    let g = gate(Some(60));
    let timing = GateTimers {
        reminder_interval: Some(Duration::from_secs(30)),
        max_reminders: 3,
        remind_before: None,
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
    assert!(plan("s", &gate(None), &GateTimers::default()).is_empty());
}

#[test]
fn plans_one_reminder_before_the_timeout_when_asked() {
    let g = gate(Some(60));
    let timing = GateTimers {
        remind_before: Some(Duration::from_secs(20)),
        ..GateTimers::default()
    };
    let planned = plan("s", &g, &timing);
    let kinds: Vec<(TimerKind, u32)> = planned.iter().map(|t| (t.kind, t.n)).collect();
    assert_eq!(
        kinds,
        vec![(TimerKind::Timeout, 0), (TimerKind::Reminder, 0)]
    );
    let timeout = g.timeout_at.expect("a timeout");
    assert_eq!(timeout - planned[1].due, chrono::TimeDelta::seconds(20));
    // Not before the gate opened, and not without a timeout.
    let early = GateTimers {
        remind_before: Some(Duration::from_secs(600)),
        ..GateTimers::default()
    };
    assert_eq!(plan("s", &g, &early).len(), 1);
    assert_eq!(plan("s", &gate(None), &timing).len(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_chosen_rules_timeout_and_escalation_are_the_ones_armed_and_fired() {
    let w = Timed::new(true);
    let s = w
        .paused(concat!(
            "        fallback_action: reject\n",
            "        approvers:\n",
            "          - when: \"{{ true }}\"\n",
            "            approvers: [U0ALICE]\n",
            "            timeout: 10m\n",
            "            escalation_timeout: 5\n",
            "            escalation_target: [U0BOSS]\n",
            "          - approvers: [U0CAROL]",
        ))
        .await;
    let gate = s.first_gate().cloned().expect("open");
    assert_eq!(gate.approvers, vec!["U0ALICE"]);
    assert_eq!(
        gate.timeout_at.map(|t| (t - gate.opened_at).num_minutes()),
        Some(10)
    );
    advance(5 * 60).await;
    w.timers().fire_due().await.expect("fire");
    let calls = w.notifier.calls();
    assert!(
        matches!(calls.as_slice(), [Call::Escalate { targets: 1, .. }]),
        "the rule's escalation after 5 minutes: {calls:?}"
    );
    advance(5 * 60).await;
    w.timers().fire_due().await.expect("fire");
    let calls = w.notifier.calls();
    assert!(
        calls
            .iter()
            .any(|c| matches!(c, Call::TimedOut { decision, .. } if decision == "rejected")),
        "the rule's 10-minute timeout: {calls:?}"
    );
}
