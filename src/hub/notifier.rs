//! The timers' [`Notifier`] in a service: what the rooms do about a
//! reminder, an escalation or a timeout, and a background drive when a
//! timeout's answer lets the run go on. One timer loop per service, whichever
//! rooms are open; with none (the API alone) timeouts still fire and runs
//! still resume.

use crate::engine::timers::{EscalationWhy, Notifier, Timers};
use crate::model::{OpenGate, Session};
use crate::spec::EscalationTarget;
use crate::store::Fired;

use super::Hub;

pub struct HallNotifier {
    pub hub: Hub,
}

impl HallNotifier {
    /// The service's timers, told through this notifier.
    pub fn timers(&self) -> Timers<'_, HallNotifier> {
        Timers {
            store: &self.hub.store,
            notifier: self,
            clock: self.hub.clock.clone(),
            specs: self.hub.specs.clone(),
            wake: self.hub.wake.clone(),
        }
    }
}

impl Notifier for HallNotifier {
    async fn messages(&self, session: &Session, handle: &str) -> Vec<(String, String)> {
        self.hub.hall().messages(session, handle).await
    }

    async fn remind(&self, session: &Session, gate: &OpenGate, n: u32, of: u32) {
        self.hub.hall().remind(session, gate, n, of).await
    }

    async fn escalate(
        &self,
        session: &Session,
        gate: &OpenGate,
        targets: &[EscalationTarget],
        why: &EscalationWhy,
    ) -> Vec<(String, String)> {
        self.hub.hall().escalate(session, gate, targets, why).await
    }

    async fn timed_out(&self, session: &Session, fired: &Fired) {
        self.hub
            .metrics
            .gate_answered(super::metrics::decision_name(&fired.answer.decision));
        self.hub.hall().timed_out(session, fired).await
    }

    async fn resume(&self, session: &str) {
        self.hub.drive(session.to_string());
    }

    fn can_escalate(&self) -> bool {
        self.hub.hall().can_escalate()
    }
}
