//! Opening a spec's gate at a position: its condition, its rendered
//! prompt and context (redacted), the workflow's approval defaults, its
//! business hours (the service calendar it keeps, its business-time
//! deadline, `when_closed`), and the audit record of the request.
use super::{context, pattern, timers, Engine};
use crate::audit::{AuditEvent, AuditKind};
use crate::error::{Error, Result};
use crate::gate;
use crate::model::{GateEvent, GateEventKind, Position, RecordKind, Session, StepRecord};
use crate::spec::Spec;

impl Engine<'_> {
    /// A gate the engine opens about a tool call (the calls of a turn that
    /// wait for approval, or an MCP server's question during one): the
    /// workflow's `security` approvers, one decision (no quorum), no
    /// timeout of its own; rules (`security.approvers`) refine it after.
    /// `asks`: its prompt and its (redacted) context.
    pub(super) fn call_gate(
        &self,
        spec: &Spec,
        session: &Session,
        (id, kind): (&str, crate::spec::GateKind),
        position: Position,
        (prompt, context): (String, String),
    ) -> crate::model::OpenGate {
        crate::model::OpenGate {
            reminded_at: None,
            id: id.into(),
            instance: session.next_instance(id),
            order: 0,
            kind,
            position,
            prompt,
            context,
            show_preview: true,
            preview_length: 4000,
            default: None,
            fallback: crate::spec::Fallback::Cancel,
            opened_at: self.clock.now(),
            timeout_at: None,
            require_reason: false,
            channel: None,
            approvers: spec.approval.approvers.clone(),
            approvals_required: 1,
            allow_self_approval: spec.approval.allow_self_approval,
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

    /// Opens a spec gate at `position`: `None` when its condition is false
    /// (then recorded as skipped), else the gate to ask, with the workflow's
    /// `security` defaults filling what the gate leaves open.
    pub(super) fn open_gate(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        position: Position,
        gate: &crate::spec::GateSpec,
    ) -> Result<Option<crate::model::OpenGate>> {
        let ctx = context::build(spec, session, None, Some(&position));
        if let Some(cond) = &gate.condition {
            if !self.templates.truthy(
                &format!("the condition of gate `{}`", gate.id),
                cond,
                &ctx,
            )? {
                pattern::record(
                    spec,
                    &mut session.state,
                    &position,
                    StepRecord {
                        agent: None,
                        response: String::new(),
                        kind: RecordKind::Skipped,
                        finished_at: self.clock.now(),
                    },
                )?;
                session.history.push(GateEvent {
                    gate: gate.id.clone(),
                    instance: 0,
                    asked_at: None,
                    what: GateEventKind::Skipped {
                        condition: cond.clone(),
                    },
                });
                let mut ev = AuditEvent::new(
                    AuditKind::Skip,
                    &session.id,
                    &session.workflow,
                    self.clock.now(),
                );
                ev.gate = Some(gate.id.clone());
                ev.detail = Some(format!("condition `{cond}` was false"));
                session.audit.push(ev);
                return Ok(None);
            }
        }
        let prompt = self.templates.render(
            &format!("the prompt of gate `{}`", gate.id),
            &gate.prompt,
            &ctx,
        )?;
        let shown = match &gate.context_display {
            Some(t) => self.templates.render(
                &format!("the context_display of gate `{}`", gate.id),
                t,
                &ctx,
            )?,
            None => pattern::last_response_at(&session.state, Some(&position)).unwrap_or_default(),
        };
        // What humans are shown is redacted (security.redact + secrets).
        let mut opened = gate::open(
            gate,
            position,
            session.next_instance(&gate.id),
            spec.redactor.redact(&prompt),
            spec.redactor.redact(&shown),
            self.clock.now(),
        );
        if gate.approvers.is_none() {
            opened.approvers = spec.approval.approvers.clone();
        }
        if gate.approvals_required.is_none() {
            opened.approvals_required = spec.approval.approvals_required.unwrap_or(1).max(1);
        }
        if gate.allow_self_approval.is_none() {
            opened.allow_self_approval = spec.approval.allow_self_approval;
        }
        if let Some(h) = &gate.hours {
            self.keep_hours(gate, h, &mut opened)?;
        }
        let rules = gate::policy::rules_of(spec, gate);
        if !rules.is_empty() {
            let ctx = context::for_rules(spec, session, Some(&opened.position), None);
            let base = opened.approvals_required;
            if let Some(choice) = gate::policy::choose(rules, self.templates, &ctx, base) {
                // A rule's business timeout counts on the gate's calendar,
                // or the service's default one when the gate names none.
                if opened.hours.is_none() && choice.rule.timeout.is_some_and(|t| t.business) {
                    self.keep_hours(gate, &crate::spec::HoursSpec::default(), &mut opened)?;
                }
                gate::policy::apply(&mut opened, &choice);
            }
        }
        Ok(Some(opened))
    }

    /// The business hours a gate keeps: its calendar (as the service has
    /// it now, kept with the gate), its deadline in business time when the
    /// timeout says so, and whether it opened while the calendar was closed.
    fn keep_hours(
        &self,
        gate: &crate::spec::GateSpec,
        h: &crate::spec::HoursSpec,
        opened: &mut crate::model::OpenGate,
    ) -> Result<()> {
        let calendars = &self.settings.service.calendars;
        let names: Vec<String> = calendars.keys().cloned().collect();
        let name = gate::calendar::pick(&names, h.calendar.as_deref()).map_err(|why| {
            Error::Usage(format!(
                "gate `{}` keeps business hours, but {why}",
                gate.id
            ))
        })?;
        let Some(cal) = calendars.get(&name) else {
            return Err(Error::Internal(format!("calendar `{name}` vanished")));
        };
        if let (true, Some(secs)) = (h.business_timeout, gate.timeout_secs) {
            let timeout = crate::spec::timeout::Timeout {
                secs,
                business: true,
            };
            opened.timeout_at = Some(gate::calendar::deadline(
                opened.opened_at,
                &timeout,
                Some(cal),
            ));
        }
        opened.hours = Some(crate::model::GateHours {
            calendar: name,
            when_closed: h.when_closed,
            auto_approve_outside_hours: h.auto_approve_outside_hours,
            timers_outside_hours: h.timers_outside_hours,
            opened_closed: !cal.is_open(opened.opened_at),
            rules: cal.clone(),
        });
        Ok(())
    }
}

/// What a gate's hours do to its deadline once it is known: a gate opened
/// outside hours with `when_closed: reject` is due at once (its timeout
/// answer is that rejection, [`gate::timeout_answer`]); a timeout that
/// would approve outside hours with `auto_approve: {outside_hours: false}`
/// waits for the next opening, and so does one that escalates
/// (`fallback_action: escalate`) unless `timers_outside_hours`.
fn settle_deadline(opened: &mut crate::model::OpenGate) {
    let Some(h) = &opened.hours else {
        return;
    };
    if h.opened_closed && h.when_closed == crate::model::WhenClosed::Reject {
        opened.timeout_at = Some(opened.opened_at);
        return;
    }
    let Some(at) = opened.timeout_at else {
        return;
    };
    let approves = matches!(
        gate::interpret(opened, &gate::timeout_answer(opened, at).decision),
        Ok(gate::Outcome::Continue { .. })
    );
    let escalates = opened.fallback == crate::model::Fallback::Escalate;
    if (approves && !h.auto_approve_outside_hours) || (escalates && !h.timers_outside_hours) {
        opened.timeout_at = Some(h.rules.settle(at));
    }
}

impl Engine<'_> {
    /// Adds an opened gate to the session: a bot-wide default timeout for a
    /// gate without one, the audit record of the request, and its timers,
    /// armed with the next checkpoint (`timing`: the gate's spec timers;
    /// tool-call gates have none).
    pub(super) fn add_gate(
        &self,
        session: &mut Session,
        mut opened: crate::model::OpenGate,
        timing: Option<&crate::spec::GateTimers>,
    ) {
        if let (None, Some(d), false) = (
            opened.timeout_at,
            self.settings.default_timeout,
            opened.kind == crate::model::GateKind::ToolCall,
        ) {
            opened.timeout_at = Some(opened.opened_at + d);
        }
        settle_deadline(&mut opened);
        let _span = tracing::info_span!(
            "gate",
            gate.id = %opened.id,
            gate.handle = %opened.handle(),
            gate.kind = opened.kind.name(),
            approvers = opened.approvers.len(),
        )
        .entered();
        // The session-wide order of openings; the handle counts per gate.
        session.gates_opened += 1;
        opened.order = session.gates_opened;
        audit_request(session, &opened, self.clock.now());
        session
            .events
            .push(crate::model::EventKind::opened(&opened));
        if opened.kind != crate::model::GateKind::ToolCall {
            let mut timing = timing.cloned().unwrap_or_default();
            if timing.remind_before.is_none() {
                timing.remind_before = self.settings.remind_before.and_then(|d| d.to_std().ok());
            }
            let planned = timers::plan(&session.id, &opened, &timing);
            if !planned.is_empty() {
                session.arm.push((opened.handle(), planned));
            }
        }
        session.gates.insert(opened.handle(), opened);
    }

    /// Checkpoints `session` (with its outboxes: audit events, timers to
    /// arm) and wakes this process's timer loop when timers were armed.
    pub(super) async fn save(&self, session: &mut Session) -> Result<()> {
        self.save_with(session, crate::store::Durability::Now).await
    }

    /// [`Self::save`], synced now or with the next durable write.
    pub(super) async fn save_with(
        &self,
        session: &mut Session,
        durability: crate::store::Durability,
    ) -> Result<()> {
        let armed = !session.arm.is_empty();
        session.stamp_audit();
        if let Err(e) = self.store.checkpoint_with(session, durability).await {
            // An operator's cancel moved the revision: the run stops here,
            // and what it did since its last checkpoint is kept.
            if self.cancel_arrived(session).await? {
                return Err(Error::Cancelled(session.id.clone()));
            }
            return Err(e);
        }
        self.unsynced.store(
            durability == crate::store::Durability::WithNext,
            std::sync::atomic::Ordering::SeqCst,
        );
        if let (true, Some(w)) = (armed, &self.wake) {
            w.notify_one();
        }
        Ok(())
    }
}

/// Records that a gate asked: a digest of exactly what was shown, and a
/// short (already redacted) preview.
pub(super) fn audit_request(
    session: &mut Session,
    gate: &crate::model::OpenGate,
    at: chrono::DateTime<chrono::Utc>,
) {
    let mut ev = AuditEvent::new(AuditKind::Request, &session.id, &session.workflow, at);
    ev.gate = Some(gate.handle());
    ev.shown_digest = Some(crate::audit::sha256_hex(&format!(
        "{}\n{}",
        gate.prompt, gate.context
    )));
    ev.preview = Some(crate::model::cut(&gate.context, 300).0);
    ev.detail = Some(gate.prompt.clone());
    ev.rule = gate.rule.as_ref().map(|r| {
        let mut text = format!("rule {}: {}", r.index, r.summary);
        if let Some(f) = &r.failed {
            text.push_str(&format!(" [fail closed: {f}]"));
        }
        text
    });
    session.audit.push(ev);
}
