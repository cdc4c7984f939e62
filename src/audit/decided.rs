//! The audit's decisions as reports read them. Each answer and timeout of
//! the chain, cut to the fields `strands report`, `/insights` and the
//! approver's own view group and time by (when, workflow, gate, who,
//! door, rule, what was decided, how long it took).
//!
//! Why a projection: a month's report over a store of a million decisions
//! must not read and decode two million whole entries (requests, previews,
//! passkey proofs) to keep a month of answers. The stores keep these small
//! records beside the chain, indexed by time ([`crate::store`]'s
//! `decided`), built from the chain by whoever reads them next — derived,
//! never a second source: lost or stale, it is made again from the audit.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{AuditEntry, AuditKind};

/// One decision: an answer, or a gate's timeout. Kept small (short field
/// names; its time is the index's key, not in the record): a report reads
/// a million of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decided {
    /// The entry's place in the chain.
    #[serde(skip)]
    pub seq: u64,
    /// A gate decided by its timeout, not by a person.
    #[serde(rename = "t", default, skip_serializing_if = "std::ops::Not::not")]
    pub timeout: bool,
    #[serde(rename = "w")]
    pub workflow: String,
    #[serde(rename = "g", default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    #[serde(rename = "v", default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// `approve`, `reject`, `edit`, … (the answer's action).
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Milliseconds from the request to the answer.
    #[serde(rename = "ms", default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
}

impl Decided {
    /// The decision `entry` records, and when: `None` for every other kind
    /// of entry, and for entries without a time (no period can hold them).
    pub fn of(entry: &AuditEntry) -> Option<(DateTime<Utc>, Decided)> {
        let e = &entry.event;
        let at = e.at?;
        let timeout = match e.kind? {
            AuditKind::Answer => false,
            AuditKind::Timeout => true,
            _ => return None,
        };
        // `{"action": "approve", …}`; entries of early releases hold the
        // bare word.
        let action = e
            .decision
            .as_ref()
            .and_then(|d| d.get("action").unwrap_or(d).as_str())
            .map(str::to_string);
        let d = Decided {
            seq: entry.seq,
            timeout,
            workflow: e.workflow.clone(),
            gate: e.gate.clone(),
            who: e.who.clone(),
            person: e.person.clone(),
            via: e.via.clone(),
            rule: e.rule.clone(),
            action,
            ms: e.response_ms,
        };
        Some((at, d))
    }

    /// Whether `person` made this decision, under any channel identity.
    pub fn made_by(&self, person: &str) -> bool {
        self.person.as_deref() == Some(person) || self.who.as_deref() == Some(person)
    }

    /// As the stores keep it.
    pub fn encode(&self) -> Vec<u8> {
        // Plain data of strings and numbers: serializing cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Read back from the stores' bytes, as entry `seq`.
    pub fn decode(seq: u64, bytes: &[u8]) -> Result<Decided, String> {
        let mut d: Decided = serde_json::from_slice(bytes)
            .map_err(|e| format!("decision #{seq} is unreadable ({e})"))?;
        d.seq = seq;
        Ok(d)
    }
}

/// A decision as a store indexes it: its time and its bytes.
pub type Indexed = (DateTime<Utc>, Vec<u8>);

/// For a store building its index: the stored audit entry `bytes` (number
/// `seq`) as its decision's time and bytes, or `None` when it is no
/// decision. An unreadable entry is an error naming it.
pub fn project(seq: u64, bytes: &[u8]) -> Result<Option<Indexed>, String> {
    let entry: AuditEntry = serde_json::from_slice(bytes).map_err(|e| {
        format!("audit entry #{seq} is unreadable ({e}); run `strands audit verify`")
    })?;
    Ok(Decided::of(&entry).map(|(at, d)| (at, d.encode())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditEvent;

    fn entry(kind: AuditKind) -> AuditEntry {
        let mut e = AuditEvent::new(kind, "s1", "payout", crate::clock::test_epoch());
        e.gate = Some("approve#1".into());
        e.who = Some("U1".into());
        e.person = Some("alice".into());
        e.via = Some("slack".into());
        e.rule = Some("2".into());
        e.decision = Some(serde_json::json!({"action": "approve", "reason": "ok"}));
        e.response_ms = Some(1500);
        e.preview = Some("a long preview the report never reads".into());
        AuditEntry {
            seq: 7,
            prev: String::new(),
            hash: String::new(),
            event: e,
        }
    }

    #[test]
    fn answers_and_timeouts_are_projected_and_read_back() {
        let a = entry(AuditKind::Answer);
        let (at, d) = Decided::of(&a).expect("an answer is a decision");
        assert_eq!(at, crate::clock::test_epoch());
        assert_eq!(d.action.as_deref(), Some("approve"));
        assert!(!d.timeout && d.made_by("alice") && d.made_by("U1") && !d.made_by("bob"));
        let bytes = serde_json::to_vec(&a).expect("entry");
        let (at, stored) = project(7, &bytes).expect("readable").expect("a decision");
        assert_eq!(at, crate::clock::test_epoch());
        assert_eq!(Decided::decode(7, &stored), Ok(d));
        assert!(!String::from_utf8_lossy(&stored).contains("preview"));

        let (_, t) = Decided::of(&entry(AuditKind::Timeout)).expect("a timeout is a decision");
        assert!(t.timeout);
        assert_eq!(Decided::of(&entry(AuditKind::Request)), None);
        let mut old = entry(AuditKind::Answer);
        old.event.decision = Some(serde_json::json!("reject"));
        assert_eq!(
            Decided::of(&old).and_then(|(_, d)| d.action),
            Some("reject".into())
        );
        let mut untimed = entry(AuditKind::Answer);
        untimed.event.at = None;
        assert_eq!(Decided::of(&untimed), None);
        assert!(project(9, b"{not json").is_err_and(|e| e.contains("#9")));
    }
}
