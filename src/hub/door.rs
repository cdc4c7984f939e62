//! One way in: every door — Slack, Teams, the web inbox, the API, a mail's
//! one-tap link, a queue message, the CLI — turns what it heard into one [`DoorAnswer`] and
//! hands it to [`Hub::take`]. The hub types the variables the answer
//! carries, authorizes who is asking (the gate's approvers, groups,
//! admins, self-approval, delegation: `crate::gate`, through the engine's
//! intake), records the answer exactly once and drives the run on. A door
//! only reads its input and shows the outcome; it never calls the engine
//! or the store to answer.
//!
//! What differs between doors is data, not code: through which [`Door`]
//! (recorded as the answer's `via`; whether the service's shared rules
//! apply — self-approval off by default, the installation's default
//! approvers), for Slack, the user groups the person belongs to (which
//! only Slack can tell), and for the web inbox signed in through the
//! identity provider, the groups its ID token named (`idp_groups`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::Hub;
use crate::channel::HumanChannel;
use crate::error::Result;
use crate::model::{Answer, Decision, Refusal, Session};

pub use crate::engine::{Accepted, CancelOutcome};

/// The door an answer came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    Api,
    Web,
    /// A mail's one-tap link.
    Email,
    Slack,
    Teams,
    /// A message on the queue room's queue (RabbitMQ, `crate::amqp`).
    Amqp,
    /// `strands resume` on the store (not through a server).
    Cli,
}

impl Door {
    /// What the answer records as its `via`.
    pub fn via(self) -> &'static str {
        match self {
            Door::Api => "api",
            Door::Web => "web",
            Door::Email => "email",
            Door::Slack => "slack",
            Door::Teams => "teams",
            Door::Amqp => "amqp",
            Door::Cli => "cli",
        }
    }

    /// Whether the service's shared rules apply: self-approval off by
    /// default for manual and tool gates, and gates naming nobody answered
    /// by the installation's default approvers. The CLI on its own store
    /// is its user's tool: neither.
    fn shared(self) -> bool {
        self != Door::Cli
    }
}

/// An answer as a door heard it.
#[derive(Debug, Clone)]
pub struct DoorAnswer {
    /// The session: its id (from the CLI and the API, an unambiguous
    /// prefix will do).
    pub session: String,
    /// The gate: a handle `id#n` or an id; `None`: the only open gate.
    pub gate: Option<String>,
    /// A tool-call gate's call.
    pub call: Option<String>,
    /// Who answers, as the door knows them (a Slack id, a token's name,
    /// an e-mail address, a Unix user, `teams:<aad>`).
    pub who: String,
    pub door: Door,
    pub decision: Decision,
    /// Variable overrides; text values are typed by the spec's inputs.
    pub vars: Map<String, Value>,
    /// The Slack user groups (`S…`) the person is in, as far as the door
    /// could tell; other doors leave it empty.
    pub member_of: BTreeSet<String>,
    /// A stepped-up approval's passkey proof: only the web door's passkey
    /// ceremony makes one (`crate::web::passkeys`); the intake checks it.
    pub step_up: Option<crate::model::step_up::Proof>,
    /// The groups the identity provider put the person in (the web inbox,
    /// signed in through OpenID Connect): they count for `group:NAME`
    /// approvers, and the answer records when one did. Empty elsewhere.
    pub idp_groups: Vec<String>,
}

impl DoorAnswer {
    /// `who` answers `decision` at session `session` through `door`.
    pub fn new(session: &str, who: &str, door: Door, decision: Decision) -> DoorAnswer {
        DoorAnswer {
            session: session.to_string(),
            gate: None,
            call: None,
            who: who.to_string(),
            door,
            decision,
            vars: Map::new(),
            member_of: BTreeSet::new(),
            step_up: None,
            idp_groups: Vec::new(),
        }
    }

    /// With a passkey's proof (`step_up: passkey` gates).
    pub fn proven(mut self, proof: crate::model::step_up::Proof) -> DoorAnswer {
        self.step_up = Some(proof);
        self
    }

    /// For gate `gate` (a handle or an id).
    pub fn at(mut self, gate: Option<&str>) -> DoorAnswer {
        self.gate = gate.map(str::to_string);
        self
    }

    /// For call `call` of a tool-call gate.
    pub fn call(mut self, call: Option<&str>) -> DoorAnswer {
        self.call = call.map(str::to_string);
        self
    }

    /// With variable overrides.
    pub fn vars(mut self, vars: Map<String, Value>) -> DoorAnswer {
        self.vars = vars;
        self
    }

    /// As a member of these groups of the identity provider.
    pub fn idp_groups(mut self, groups: impl IntoIterator<Item = String>) -> DoorAnswer {
        self.idp_groups = groups.into_iter().collect();
        self
    }

    /// As a member of these Slack user groups.
    pub fn member_of(mut self, groups: impl IntoIterator<Item = String>) -> DoorAnswer {
        self.member_of = groups.into_iter().collect();
        self
    }
}

impl Hub {
    /// The one way in: takes `a`, and drives the run on in the background
    /// when the answer lets it go (a run the CLI answers goes on in the
    /// CLI's own process: [`Hub::record`] and [`Hub::continue_here`]).
    #[allow(clippy::result_large_err)] // see `Session::accept`
    pub async fn take(&self, a: DoorAnswer) -> Result<std::result::Result<Accepted, Refusal>> {
        let outcome = self.record(a).await?;
        if let Ok(
            accepted @ (Accepted::Recorded(_) | Accepted::Queued(_) | Accepted::Repeated(_)),
        ) = &outcome
        {
            self.drive(accepted.session().id.clone());
        }
        Ok(outcome)
    }

    /// Takes `a` without driving the run: its session found, its variables
    /// typed, who is asking authorized, the answer recorded exactly once
    /// (or refused, and the refusal audited).
    #[allow(clippy::result_large_err)] // see `Session::accept`
    pub async fn record(&self, a: DoorAnswer) -> Result<std::result::Result<Accepted, Refusal>> {
        // People type ids into the CLI and the API (the CLI through a
        // server too): an unambiguous prefix will do, and an unknown or
        // ambiguous one is the store's error, as every command says it.
        // The other doors carry the whole ids they were given.
        let id = match a.door {
            Door::Cli | Door::Api => self.store.resolve(&a.session).await?,
            _ => a.session.clone(),
        };
        let vars = match self.typed_vars(&id, a.vars).await? {
            Ok(v) => v,
            Err(r) => return Ok(Err(r)),
        };
        let answer = Answer {
            decision: a.decision,
            by: a.who.clone(),
            at: self.clock.now(),
            via: a.door.via().into(),
            vars,
            call: a.call,
            person: None,
            on_behalf_of: None,
            step_up: a.step_up.map(Box::new),
            idp_group: None,
        };
        let groups = a.member_of;
        let member_of = |g: &str| groups.contains(g);
        let mut asker = self.asker(&a.who, &member_of);
        asker.idp_groups = &a.idp_groups;
        if !a.door.shared() {
            asker.shared = false;
            asker.default_approvers = &[];
        }
        let decision = super::metrics::decision_name(&answer.decision);
        let via = a.door.via();
        // A server's door answers within a chat platform's deadline; the
        // CLI may take the time an edited call's schema takes to fetch.
        let mut engine = match a.door {
            Door::Cli => self.engine().without_prepare_deadline(),
            _ => self.engine(),
        };
        let outcome = engine
            .submit(&id, a.gate.as_deref(), answer, &asker)
            .await?;
        // A repeat records nothing: nothing to count.
        match &outcome {
            Ok(crate::engine::Accepted::Repeated(_)) | Err(_) => {}
            Ok(accepted) => {
                self.metrics.gate_answered(decision);
                if let crate::engine::Accepted::Recorded(session) = accepted {
                    if let Some((ms, rule)) = waited(session) {
                        self.metrics.decided(via, &session.workflow, rule, ms);
                    }
                }
            }
        }
        // A stepped-up gate is confirmed on its page: say where.
        let outcome = outcome.map_err(|r| match r {
            crate::model::Refusal::StepUp { .. } => crate::model::Refusal::StepUp {
                link: super::pages::session(&self.public_url, &id),
            },
            other => other,
        });
        Ok(outcome)
    }

    /// Whether `who` (in `groups`) may answer gate `handle` of `session`
    /// with a decision like `decision` — the intake's own rules, asked
    /// before a door opens a form for the answer. Nothing is recorded.
    #[allow(clippy::result_large_err)] // see `Session::accept`
    pub async fn may_answer(
        &self,
        session: &Session,
        handle: &str,
        decision: &Decision,
        who: &str,
        groups: &BTreeSet<String>,
    ) -> std::result::Result<(), Refusal> {
        let Some(gate) = session.open_gate(handle) else {
            return Err(Refusal::Stale { open: None });
        };
        let member_of = |g: &str| groups.contains(g);
        let asker = self.asker(who, &member_of);
        // The directory as stored (the intake judges on the same); the
        // last one read when the store does not answer.
        let people = match self.fresh_people().await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("could not read the people directory: {e}");
                self.people()
            }
        };
        crate::engine::intake::authorize(gate, session, decision, &asker, &people).map(|_| ())
    }

    /// Audits a refusal a door gave before the intake saw the answer (a
    /// message it does not know, a stale button, a refused signature);
    /// nothing else changes. The refusal stands whether or not its audit
    /// could be written (an error is logged).
    pub async fn audit_refusal(&self, ev: crate::audit::AuditEvent) {
        if let Err(e) = self.store.append_audit(&[ev]).await {
            tracing::error!("could not audit a refusal: {e}");
        }
    }

    /// Asks run `id` to stop, as `who` through `door` (see
    /// `Engine::request_cancel`): a running run ends `cancelled` at its
    /// next checkpoint; a paused one comes back for its open gate to be
    /// rejected through [`Hub::take`].
    pub async fn request_cancel(
        &self,
        id: &str,
        who: &str,
        door: Door,
        reason: Option<String>,
    ) -> Result<CancelOutcome> {
        let request = crate::model::CancelRequest {
            by: who.to_string(),
            via: door.via().into(),
            reason,
            at: self.clock.now(),
        };
        self.engine().request_cancel(id, request).await
    }

    /// Runs session `id` on in this process, asking through `channel`
    /// (the CLI's terminal, or nobody), until its next stop; `overwrite`:
    /// artifacts may replace files that exist.
    pub async fn continue_here<C: HumanChannel>(
        &self,
        id: &str,
        channel: &mut C,
        overwrite: bool,
    ) -> Result<Session> {
        self.engine()
            .without_prepare_deadline()
            .with_overwrite(overwrite)
            .with_lease(crate::store::lease::owner("cli"), self.settings.lease)
            .resume(id, channel)
            .await
    }

    /// Text overrides (the CLI's `--var`, the seed's
    /// `variable_overrides`) typed by the spec's input declarations; other
    /// JSON values are taken as they are.
    async fn typed_vars(
        &self,
        id: &str,
        mut vars: Map<String, Value>,
    ) -> Result<std::result::Result<Map<String, Value>, Refusal>> {
        let raw: Vec<(String, String)> = vars
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect();
        if raw.is_empty() {
            return Ok(Ok(vars));
        }
        let Some(session) = self.store.load(id).await? else {
            return Ok(Err(Refusal::NotFound));
        };
        let spec = self.engine().spec(&session)?;
        match spec.type_overrides(&raw) {
            Ok(typed) => {
                vars.extend(typed);
                Ok(Ok(vars))
            }
            Err(e) => Ok(Err(Refusal::BadAnswer(e.to_string()))),
        }
    }
}

/// How long the gate an answer just decided waited for it, and the
/// approval rule that chose its approvers: the answer waiting to be
/// carried out, from its gate's opening; else (a tool call's, decided at
/// once) the last answer of the session's history.
fn waited(session: &crate::model::Session) -> Option<(u64, Option<usize>)> {
    if let Some(p) = &session.pending {
        if let Some(gate) = session.open_gate(&p.gate) {
            return Some((
                gate.waited_ms(p.answer.at),
                gate.rule.as_ref().map(|r| r.index),
            ));
        }
    }
    let ms = session.history.iter().rev().find_map(|e| match &e.what {
        crate::model::GateEventKind::Answered { waited_ms, .. } => Some(*waited_ms),
        _ => None,
    })?;
    // The answer's audit entry names its rule ("rule 2: …").
    let rule = session
        .audit
        .iter()
        .rev()
        .find(|e| e.kind == Some(crate::audit::AuditKind::Answer))
        .and_then(|e| e.rule.as_deref())
        .and_then(|r| r.strip_prefix("rule "))
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok());
    Some((ms, rule))
}
