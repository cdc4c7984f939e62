//! The one seam for "ask a human": the engine hands a paused session to a
//! [`HumanChannel`] and gets back an answer now, or "later" (the session stays
//! paused in the store and someone resumes it when a human answers).
//!
//! Implementations: [`Detached`] (the CLI prints how to resume and exits 19),
//! [`terminal::Terminal`] (`--interactive`), [`AutoApprove`]
//! (`--auto-approve`), and in `strands serve` the [`hall::Hall`] of rooms
//! (Slack, ...).

pub mod hall;
pub mod terminal;

use std::future::Future;

use crate::error::Result;
use crate::model::Session;
use crate::model::{Answer, Decision};

/// What a channel got from its human.
// One per question asked, moved straight into the intake: boxing the
// answer would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An answer, to be recorded and carried out now.
    Now(Answer),
    /// No answer yet: leave the session paused.
    Later,
}

/// Progress the engine reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    StepDone {
        position: String,
        agent: String,
        tokens: u64,
        millis: u64,
    },
    GateSkipped {
        gate: String,
    },
    /// A model request that may have been in flight when the process died
    /// is sent again.
    Resent {
        position: String,
    },
    GateAnswered {
        gate: String,
        answer: Answer,
    },
    Completed,
    Rejected {
        reason: Option<String>,
    },
    Failed {
        message: String,
    },
    /// An operator cancelled the running run (`sessions cancel`).
    Cancelled {
        by: String,
        reason: Option<String>,
    },
}

/// Ask a human. The futures are `Send` so that a server (the Slack bot) can
/// drive sessions on a multi-threaded runtime.
pub trait HumanChannel: Send {
    /// Called when `session` has been saved as paused at `session.gate`.
    fn ask(&mut self, session: &Session) -> impl Future<Output = Result<Reply>> + Send;

    /// Called when the answer this channel gave was refused (nothing
    /// changed; the session stays paused): tell the human why.
    fn refused(
        &mut self,
        _session: &Session,
        _refusal: &crate::model::Refusal,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Called as the run makes progress; channels may show it or not.
    fn progress(
        &mut self,
        _session: &Session,
        _event: &Progress,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Nobody is there to answer now: the CLI's default.
pub struct Detached;

impl HumanChannel for Detached {
    async fn ask(&mut self, _session: &Session) -> Result<Reply> {
        Ok(Reply::Later)
    }
}

/// Approves every gate (`--auto-approve`), saying so on stderr.
pub struct AutoApprove {
    pub by: String,
    /// Answers are stamped by it.
    pub clock: crate::clock::SharedClock,
}

impl HumanChannel for AutoApprove {
    async fn ask(&mut self, session: &Session) -> Result<Reply> {
        if let Some(g) = session.first_gate() {
            eprintln!("⚠ auto-approving gate `{}` (--auto-approve)", g.id);
        }
        // Tool-call gates are answered one call at a time.
        let call = session
            .agent_turn
            .as_ref()
            .and_then(|t| t.waiting().next().map(|c| c.call.id.clone()));
        // A form is approved with its defaults (the intake refuses it when
        // a required field has none, and the run stays paused).
        let decision = match session.first_gate().filter(|g| g.form.is_some()) {
            Some(_) => Decision::Fill {
                values: Default::default(),
            },
            None => Decision::Approve,
        };
        Ok(Reply::Now(Answer {
            decision,
            by: self.by.clone(),
            at: self.clock.now(),
            via: "auto-approve".into(),
            vars: Default::default(),
            call,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        }))
    }
}

/// Wraps another channel and reports progress on stderr (human text never
/// goes to stdout, which `--json` keeps for its one object).
pub struct WithProgress<C> {
    pub inner: C,
}

impl<C: HumanChannel> HumanChannel for WithProgress<C> {
    async fn ask(&mut self, session: &Session) -> Result<Reply> {
        self.inner.ask(session).await
    }

    async fn refused(&mut self, session: &Session, refusal: &crate::model::Refusal) {
        eprintln!("refused: {refusal}; the session stays paused");
        self.inner.refused(session, refusal).await
    }

    async fn progress(&mut self, session: &Session, event: &Progress) {
        match event {
            Progress::StepDone {
                position,
                agent,
                tokens,
                millis,
            } => eprintln!(
                "✓ {position} completed: {agent} ({tokens} tokens, {:.1}s)",
                *millis as f64 / 1000.0
            ),
            Progress::GateSkipped { gate } => {
                eprintln!("↷ gate `{gate}` skipped (condition false)")
            }
            Progress::Resent { position } => eprintln!(
                "↻ {position}: model request re-sent after a crash (the earlier one may have reached the model)"
            ),
            Progress::GateAnswered { gate, answer } => {
                eprintln!(
                    "✓ gate `{gate}` {} by {} ({})",
                    answer.decision.verb(),
                    answer.by,
                    answer.via
                )
            }
            Progress::Completed => eprintln!("✓ workflow `{}` completed", session.workflow),
            Progress::Rejected { reason } => eprintln!(
                "✗ workflow `{}` rejected{}",
                session.workflow,
                reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            Progress::Failed { message } => {
                eprintln!("✗ workflow `{}` failed: {message}", session.workflow)
            }
            Progress::Cancelled { by, reason } => eprintln!(
                "✗ workflow `{}` cancelled by {by}{}",
                session.workflow,
                reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        }
        self.inner.progress(session, event).await
    }
}
