//! Gate timers in sled: the `timers` tree ordered by due time, one arming
//! mark per gate asking, timeouts recorded with their timer marked fired in
//! one transaction, escalations indexed like the first message.

use super::*;

fn kind_byte(kind: TimerKind) -> u8 {
    match kind {
        TimerKind::Timeout => 1,
        TimerKind::Reminder => 2,
        TimerKind::Escalation => 3,
    }
}

/// A timer's key in the `timers` tree: ordered by due time first.
pub fn timer_key(t: &Timer) -> Vec<u8> {
    let ms = t.due.timestamp_millis().max(0) as u64;
    let mut k = Vec::with_capacity(8 + t.session.len() + t.gate.len() + 7);
    k.extend_from_slice(&ms.to_be_bytes());
    k.extend_from_slice(t.session.as_bytes());
    k.push(0);
    k.extend_from_slice(t.gate.as_bytes());
    k.push(0);
    k.push(kind_byte(t.kind));
    k.extend_from_slice(&t.n.to_be_bytes());
    k
}

impl SledStore {
    /// Arms the timers of one gate asking, once: a second call for the same
    /// session and gate handle changes nothing and returns false, so arming
    /// again at every start-up never re-creates a timer that already fired.
    pub fn arm_timers(&self, session: &str, gate: &str, timers: &[Timer]) -> Result<bool> {
        let marks = self.tree(trees::TIMER_GATES)?;
        let tree = self.tree(trees::TIMERS)?;
        let mut rows = Vec::new();
        for t in timers {
            rows.push((timer_key(t), encode("timer", t)?));
        }
        let res: std::result::Result<bool, TransactionError<String>> =
            (&marks, &tree).transaction(|(m, t)| {
                // One mark per gate (several are open at once in parallel
                // runs); the older mark, session → its one gate, still counts.
                let mark = gate_key(session, gate);
                if m.get(&mark)?.is_some()
                    || m.get(session.as_bytes())?.as_deref() == Some(gate.as_bytes())
                {
                    return Ok(false);
                }
                for (k, v) in &rows {
                    t.insert(k.as_slice(), v.as_slice())?;
                }
                m.insert(mark, gate.as_bytes())?;
                Ok(true)
            });
        let armed = res.map_err(|e| Error::Store(format!("arm timers: {e:?}")))?;
        self.sync()?;
        Ok(armed)
    }

    /// The earliest timer, if any.
    pub fn next_timer(&self) -> Result<Option<Timer>> {
        let tree = self.tree(trees::TIMERS)?;
        match tree.first()? {
            None => Ok(None),
            Some((k, v)) => match serde_json::from_slice::<Timer>(&v) {
                Ok(t) => Ok(Some(t)),
                Err(e) => {
                    // Unreadable: drop it rather than spin on it forever.
                    tracing::error!("dropping an unreadable timer: {e}");
                    tree.remove(k)?;
                    self.sync()?;
                    self.next_timer()
                }
            },
        }
    }

    /// Every timer, earliest first (for `sessions show` and tests).
    pub fn timers(&self) -> Result<Vec<Timer>> {
        let mut out = Vec::new();
        for kv in self.tree(trees::TIMERS)?.iter() {
            let (_, v) = kv?;
            if let Ok(t) = serde_json::from_slice(&v) {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// Removes `done` and adds `next` (the following reminder, a moved
    /// timeout), in one transaction.
    pub fn replace_timer(&self, done: &Timer, next: &[Timer]) -> Result<()> {
        let tree = self.tree(trees::TIMERS)?;
        let mut rows = Vec::new();
        for t in next {
            rows.push((timer_key(t), encode("timer", t)?));
        }
        let old = timer_key(done);
        let res: std::result::Result<(), TransactionError<String>> = tree.transaction(|t| {
            t.remove(old.as_slice())?;
            for (k, v) in &rows {
                t.insert(k.as_slice(), v.as_slice())?;
            }
            Ok(())
        });
        res.map_err(|e| Error::Store(format!("timers: {e:?}")))?;
        self.sync()?;
        Ok(())
    }

    /// Deletes a timer (done, or stale).
    pub fn remove_timer(&self, t: &Timer) -> Result<()> {
        self.replace_timer(t, &[])
    }

    /// Records a timeout's answer exactly once, like [`SledStore::record_answer`]
    /// with the timer's gate handle, and in the same transaction marks the
    /// timer fired (`fired` holds what the messages must show). After a crash
    /// the timer is found fired: the answer is not recorded again, only shown.
    /// A refusal (someone answered first) changes nothing.
    #[allow(clippy::result_large_err)] // see `gate::accept`
    pub fn record_timeout(
        &self,
        timer: &Timer,
        answer: &Answer,
        fired: &Fired,
    ) -> Result<std::result::Result<Session, Refusal>> {
        let timers = self.tree(trees::TIMERS)?;
        let mut marked = timer.clone();
        marked.fired = Some(fired.clone());
        let tkey = timer_key(timer);
        let timer_bytes = encode("timer", &marked)?;
        let key = timer.session.as_bytes();
        let order = self.order()?;
        let out = self.outputs()?;
        let res = (
            &self.sessions,
            &self.summaries,
            &self.audit,
            &self.audit_head,
            &timers,
            &self.events,
            &self.session_events,
            &order,
            &out,
        )
            .transaction(|(s, m, log, head, t, ev, by, ix, o)| {
                let Some(cur) = s.get(key)? else {
                    return Err(ConflictableTransactionError::Abort(Ok(Refusal::NotFound)));
                };
                let mut session = super::outputs::decode_in(o, &timer.session, &cur)?
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e)))?;
                if let Err(refusal) = session.accept(Some(&timer.gate), answer) {
                    return Err(ConflictableTransactionError::Abort(Ok(refusal)));
                }
                session.rev += 1;
                session.updated_at = self.clock.now();
                let stored = crate::store::outputs::split(&session)
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e.to_string())))?;
                let wrote = super::outputs::put_in(o, &timer.session, &stored.outputs)?;
                let bytes = stored.body;
                let row = session.summary();
                let summary = serde_json::to_vec(&row)
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e.to_string())))?;
                s.insert(key, bytes)?;
                super::listing::put_summary(m, ix, key, &row, &summary)?;
                super::awaiting::track(ix, &session)?;
                append_in(log, head, &session.audit)
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e)))?;
                let last = append_events(ev, by, head, &session, &session.events, self.clock.now())
                    .map_err(|e| ConflictableTransactionError::Abort(Err(e)))?;
                t.insert(tkey.as_slice(), timer_bytes.as_slice())?;
                session.audit.clear();
                session.events.clear();
                Ok((session, last, wrote))
            });
        match res {
            Ok((mut session, last, wrote)) => {
                self.sync()?;
                self.announce(last);
                self.wrote_outputs(wrote);
                self.hydrate(&mut session)?;
                Ok(Ok(session))
            }
            Err(TransactionError::Abort(Ok(refusal))) => Ok(Err(refusal)),
            Err(TransactionError::Abort(Err(msg))) => {
                Err(Error::Store(format!("session {}: {msg}", timer.session)))
            }
            Err(TransactionError::Storage(e)) => Err(e.into()),
        }
    }

    /// Records the requests re-posted for an escalation: each message is
    /// indexed like the first approval message (a click on it finds its
    /// session and gate), with the escalation and the removal of the timer
    /// that caused it (plus the timers it leaves, `next`), in one transaction.
    pub fn record_escalation(
        &self,
        session: &str,
        esc: &Escalation,
        done: &Timer,
        next: &[Timer],
    ) -> Result<()> {
        let escalations = self.tree(trees::ESCALATIONS)?;
        let timers = self.tree(trees::TIMERS)?;
        let handle = esc.gate.handle();
        let target = encode(
            "message target",
            &MessageTarget {
                session: session.to_string(),
                gate: handle.clone(),
            },
        )?;
        let index: Vec<Vec<u8>> = esc
            .messages
            .iter()
            .map(|(c, ts)| message_key(c, ts))
            .collect();
        let record = encode("escalation", esc)?;
        let ekey = gate_key(session, &handle);
        let mut rows = Vec::new();
        for t in next {
            rows.push((timer_key(t), encode("timer", t)?));
        }
        let old = timer_key(done);
        let res: std::result::Result<(), TransactionError<String>> =
            (&self.messages, &escalations, &timers).transaction(|(msg, e, t)| {
                for k in &index {
                    msg.insert(k.as_slice(), target.as_slice())?;
                }
                e.insert(ekey.as_slice(), record.as_slice())?;
                t.remove(old.as_slice())?;
                for (k, v) in &rows {
                    t.insert(k.as_slice(), v.as_slice())?;
                }
                Ok(())
            });
        res.map_err(|e| Error::Store(format!("record escalation: {e:?}")))?;
        self.sync()?;
        Ok(())
    }

    /// The escalation of one gate asking, if it was escalated.
    pub fn escalation(&self, session: &str, gate: &str) -> Result<Option<Escalation>> {
        match self
            .tree(trees::ESCALATIONS)?
            .get(gate_key(session, gate))?
        {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| Error::Store(format!("unreadable escalation: {e}"))),
        }
    }
}
