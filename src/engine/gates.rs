//! Opening a spec's gate at a position: its condition, its rendered
//! prompt and context (redacted), the workflow's approval defaults, and
//! the audit record of the request.
use super::*;

impl Engine<'_> {
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
                        finished_at: Utc::now(),
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
                let mut ev = AuditEvent::new(AuditKind::Skip, &session.id, &session.workflow);
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
        let rules = gate::policy::rules_of(spec, gate);
        if !rules.is_empty() {
            let ctx = context::for_rules(spec, session, Some(&opened.position), None);
            let base = opened.approvals_required;
            if let Some(choice) = gate::policy::choose(rules, &self.templates, &ctx, base) {
                gate::policy::apply(&mut opened, &choice);
            }
        }
        Ok(Some(opened))
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
        // The session-wide order of openings; the handle counts per gate.
        session.gates_opened += 1;
        opened.order = session.gates_opened;
        audit_request(session, &opened);
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
        self.store.checkpoint_with(session, durability).await?;
        if let (true, Some(w)) = (armed, &self.wake) {
            w.notify_one();
        }
        Ok(())
    }
}

/// Records that a gate asked: a digest of exactly what was shown, and a
/// short (already redacted) preview.
pub(super) fn audit_request(session: &mut Session, gate: &crate::model::OpenGate) {
    let mut ev = AuditEvent::new(AuditKind::Request, &session.id, &session.workflow);
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
