//! The audit trail (seed 001 §2.7): every request, answer, refusal,
//! timeout, skip, tool run and outcome, appended to an append-only log in
//! sled. Each entry carries the SHA-256 of the previous one, so changing,
//! removing or reordering an entry breaks the chain at that entry, and
//! `strands audit verify` names it. Previews are redacted (see [`redact`])
//! and full outputs are never copied in: an outcome records its size and
//! digest, a request the digest of exactly what the human was shown.

pub mod decided;
pub mod export;
pub mod redact;
pub mod report;
pub mod step_up;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// A gate asked a human.
    Request,
    /// A human (or auto-approve) answered.
    Answer,
    /// A gate's timeout answered.
    Timeout,
    /// An answer or click was refused; nothing changed.
    Refusal,
    /// A gate's condition was false.
    Skip,
    /// An approved tool call ran.
    ToolRun,
    /// The egress policy refused a tool's destination; nothing was sent.
    EgressBlocked,
    /// A model request that may have been in flight when the process died
    /// was sent again (model calls are at-least-once).
    Resent,
    /// The run ended (completed, rejected, failed).
    Outcome,
    /// An API token was created or revoked (`detail` says which; never
    /// its secret).
    Access,
    /// An approver's grant (trust within limits) was made or revoked
    /// (`grant` names it, `detail` says which and its rule).
    Grant,
}

/// One event, as the code that saw it describes it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AuditEvent {
    pub at: Option<DateTime<Utc>>,
    pub session: String,
    pub workflow: String,
    pub kind: Option<AuditKind>,
    /// The gate handle (`id#instance`).
    pub gate: Option<String>,
    /// The tool call, for tool-call gates.
    pub call: Option<String>,
    pub who: Option<String>,
    /// The directory's person `who` belongs to (`model::person`), when
    /// known; `who` is the channel identity used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The person `who` stood in for, when they answered as a delegate
    /// ("bob for alice"); absent otherwise, so older entries hash alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    /// The group that made `who` an approver when only the identity
    /// provider's groups claim put them in it (a web sign-in), not the
    /// directory; absent otherwise, so older entries hash alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idp_group: Option<String>,
    /// Channel: cli, terminal, auto-approve, slack, timeout.
    pub via: Option<String>,
    pub decision: Option<Value>,
    /// How long the human took, from the request.
    pub response_ms: Option<u64>,
    /// SHA-256 of the prompt and context the human was shown.
    pub shown_digest: Option<String>,
    /// A redacted, cut preview of what was shown.
    pub preview: Option<String>,
    /// Outcome, refusal reason, tool result summary (redacted).
    pub detail: Option<String>,
    /// The approval rule that decided who answers a request
    /// (`gate::policy`): its 1-based number and what channels show. Absent
    /// from older entries and from gates without rules, so their hashes
    /// are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The OpenTelemetry trace of the run (`crate::traces`), when it
    /// was traced. Absent from older entries and untraced runs, so their
    /// hashes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// A stepped-up approval's passkey proof (`crate::model::step_up`):
    /// credential, public key, authenticator data, client data and
    /// signature, which `strands audit verify` checks offline. Absent
    /// otherwise, so other entries hash as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_up: Option<step_up::Proof>,
    /// The grant (`model::grant`) that let a call run without asking,
    /// on its `tool_run` entry, or that a `grant` entry made or revoked.
    /// Absent otherwise, so other entries hash as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

impl AuditEvent {
    /// An entry of `kind` about `session`, made `at` (by the clock of
    /// whoever records it).
    pub fn new(kind: AuditKind, session: &str, workflow: &str, at: DateTime<Utc>) -> Self {
        AuditEvent {
            at: Some(at),
            session: session.to_string(),
            workflow: workflow.to_string(),
            kind: Some(kind),
            ..Default::default()
        }
    }
}

/// A stored entry: the event, its place in the chain and the chain hashes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub seq: u64,
    /// Hash of the previous entry (64 zeros for the first).
    pub prev: String,
    pub hash: String,
    pub event: AuditEvent,
}

pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of an entry: SHA-256 over its sequence number, the previous
/// hash and the event's JSON.
pub fn entry_hash(seq: u64, prev: &str, event: &AuditEvent) -> String {
    let body = serde_json::to_string(event).unwrap_or_default();
    let mut h = Sha256::new();
    h.update(seq.to_be_bytes());
    h.update(prev.as_bytes());
    h.update(body.as_bytes());
    hex(&h.finalize())
}

pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The chain's last entry, kept beside the log so a removed tail shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub seq: u64,
    pub hash: String,
}

/// The result of checking the whole chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Intact { entries: u64 },
    Broken { seq: u64, why: String },
}

/// Checks entries in order: each must parse, follow its predecessor's seq
/// and hash, and hash to what it says; the head must name the last one.
pub fn verify(entries: impl Iterator<Item = (u64, Vec<u8>)>, head: Option<Head>) -> Verdict {
    verify_with_keys(entries, head, &|_, _| None)
}

/// The public key (COSE, as a step-up proof carries it) registered for
/// a person's passkey: `(person, credential id)`; `None`: not known here.
pub type Keys<'a> = dyn Fn(&str, &str) -> Option<Value> + 'a;

/// [`verify`], and every stepped-up entry's passkey signature
/// (`crate::model::step_up::Proof::check`): made for this entry's
/// session, gate and decision, by the public key it carries — which must
/// be the one `keys` has registered for that person and credential, when
/// `keys` knows it.
pub fn verify_with_keys(
    entries: impl Iterator<Item = (u64, Vec<u8>)>,
    head: Option<Head>,
    keys: &Keys<'_>,
) -> Verdict {
    let mut prev = GENESIS.to_string();
    let mut count = 0u64;
    for (expected_seq, (key_seq, bytes)) in (1u64..).zip(entries) {
        let entry: AuditEntry = match serde_json::from_slice(&bytes) {
            Ok(e) => e,
            Err(e) => {
                return Verdict::Broken {
                    seq: key_seq,
                    why: format!("unreadable: {e}"),
                }
            }
        };
        if entry.seq != key_seq || entry.seq != expected_seq {
            return Verdict::Broken {
                seq: key_seq,
                why: format!(
                    "expected entry #{expected_seq}, found #{} (an entry was removed or moved)",
                    entry.seq
                ),
            };
        }
        if entry.prev != prev {
            return Verdict::Broken {
                seq: entry.seq,
                why: "its `prev` does not match the previous entry's hash".into(),
            };
        }
        let computed = entry_hash(entry.seq, &entry.prev, &entry.event);
        if computed != entry.hash {
            return Verdict::Broken {
                seq: entry.seq,
                why: "its content does not match its hash (the entry was changed)".into(),
            };
        }
        if let Some(why) = entry
            .event
            .step_up
            .as_ref()
            .and_then(|p| step_up_broken(&entry.event, p, keys))
        {
            return Verdict::Broken {
                seq: entry.seq,
                why,
            };
        }
        prev = entry.hash;
        count += 1;
    }
    match head {
        Some(h) if h.seq != count || (count > 0 && h.hash != prev) => Verdict::Broken {
            seq: h.seq,
            why: format!(
                "the log ends at #{count} but its head says #{} (entries were removed)",
                h.seq
            ),
        },
        _ => Verdict::Intact { entries: count },
    }
}

/// Checks an export (`strands audit export`'s JSON lines) offline: each
/// entry's hash, the links between consecutive entries (an export filtered
/// by time or session skips some), and every passkey signature against the
/// public key its entry carries.
pub fn verify_export(text: &str) -> Verdict {
    let mut last: Option<AuditEntry> = None;
    let mut count = 0u64;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let entry: AuditEntry = match serde_json::from_str(line) {
            Ok(e) => e,
            Err(e) => {
                return Verdict::Broken {
                    seq: 0,
                    why: format!("line {} is not an audit entry: {e}", n + 1),
                }
            }
        };
        if entry_hash(entry.seq, &entry.prev, &entry.event) != entry.hash {
            return Verdict::Broken {
                seq: entry.seq,
                why: "its content does not match its hash (the entry was changed)".into(),
            };
        }
        if let Some(before) = last.as_ref().filter(|b| b.seq + 1 == entry.seq) {
            if before.hash != entry.prev {
                return Verdict::Broken {
                    seq: entry.seq,
                    why: "its `prev` does not match the previous entry's hash".into(),
                };
            }
        }
        if let Some(why) = entry
            .event
            .step_up
            .as_ref()
            .and_then(|p| step_up_broken(&entry.event, p, &|_, _| None))
        {
            return Verdict::Broken {
                seq: entry.seq,
                why,
            };
        }
        count += 1;
        last = Some(entry);
    }
    Verdict::Intact { entries: count }
}

/// Why a stepped-up entry's proof does not hold, if it does not.
fn step_up_broken(ev: &AuditEvent, proof: &step_up::Proof, keys: &Keys<'_>) -> Option<String> {
    let gate = ev.gate.as_deref().unwrap_or_default();
    // The decision signed is the proof's own (`approved`, …): it is in
    // the challenge, so a proof moved to another decision does not hold.
    if let Err(e) = proof.check(&ev.session, gate, &proof.decision) {
        return Some(format!("its passkey signature does not hold: {e}"));
    }
    match keys(&proof.person, &proof.credential) {
        Some(k) if k != proof.public_key => Some(format!(
            "its passkey {} is not the one registered to {}",
            proof.credential, proof.person
        )),
        _ => None,
    }
}

/// A `since` bound: RFC 3339, or a date meaning its midnight UTC. The
/// error says what would work.
pub fn parse_since(s: &str) -> std::result::Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| {
            format!("--since `{s}` is not RFC 3339 (2026-11-21T09:00:00Z) or a date (2026-11-21)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: u64) -> (Vec<(u64, Vec<u8>)>, Head) {
        let mut prev = GENESIS.to_string();
        let mut out = Vec::new();
        for seq in 1..=n {
            let event = AuditEvent {
                detail: Some(format!("event {seq}")),
                ..AuditEvent::new(AuditKind::Answer, "s", "wf", crate::clock::test_epoch())
            };
            let hash = entry_hash(seq, &prev, &event);
            let entry = AuditEntry {
                seq,
                prev: prev.clone(),
                hash: hash.clone(),
                event,
            };
            out.push((seq, serde_json::to_vec(&entry).expect("json")));
            prev = hash;
        }
        (out, Head { seq: n, hash: prev })
    }

    /// An entry as a build without traces wrote it (no `trace_id` key)
    /// still verifies; a traced entry's trace id is under its hash.
    #[test]
    fn the_trace_id_leaves_older_entries_alone_and_is_hashed_when_there() {
        let old = r#"{"at":"2026-11-01T10:00:00Z","session":"s","workflow":"wf","kind":"answer","gate":"review#1","call":null,"who":"bob","via":"cli","decision":"approve","response_ms":5,"shown_digest":null,"preview":null,"detail":null}"#;
        let event: AuditEvent = serde_json::from_str(old).expect("an older event");
        assert_eq!(event.trace_id, None);
        let hash = {
            let mut h = Sha256::new();
            h.update(1u64.to_be_bytes());
            h.update(GENESIS.as_bytes());
            h.update(old.as_bytes());
            hex(&h.finalize())
        };
        assert_eq!(entry_hash(1, GENESIS, &event), hash, "hashed as written");
        let entry = AuditEntry {
            seq: 1,
            prev: GENESIS.into(),
            hash: hash.clone(),
            event: event.clone(),
        };
        let bytes = serde_json::to_vec(&entry).expect("json");
        assert_eq!(
            verify(std::iter::once((1, bytes)), None),
            Verdict::Intact { entries: 1 }
        );

        let traced = AuditEvent {
            trace_id: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
            ..event
        };
        assert_ne!(entry_hash(1, GENESIS, &traced), hash);
        let entry = AuditEntry {
            seq: 1,
            prev: GENESIS.into(),
            hash: hash.clone(),
            event: traced,
        };
        let bytes = serde_json::to_vec(&entry).expect("json");
        assert!(
            matches!(
                verify(std::iter::once((1, bytes)), None),
                Verdict::Broken { .. }
            ),
            "a trace id added afterwards breaks the chain"
        );
    }

    #[test]
    fn an_intact_chain_verifies() {
        let (entries, head) = chain(5);
        assert_eq!(
            verify(entries.into_iter(), Some(head)),
            Verdict::Intact { entries: 5 }
        );
    }

    #[test]
    fn one_changed_byte_breaks_the_chain_at_that_entry() {
        let (mut entries, head) = chain(5);
        let text = String::from_utf8(entries[2].1.clone())
            .expect("utf8")
            .replace("event 3", "event 8");
        entries[2].1 = text.into_bytes();
        assert!(matches!(
            verify(entries.into_iter(), Some(head)),
            Verdict::Broken { seq: 3, .. }
        ));
    }

    #[test]
    fn removed_entries_are_found() {
        let (mut entries, head) = chain(5);
        entries.remove(1);
        assert!(matches!(
            verify(entries.clone().into_iter(), Some(head.clone())),
            Verdict::Broken { seq: 3, .. }
        ));
        let (mut tail, head) = chain(5);
        tail.pop();
        assert!(matches!(
            verify(tail.into_iter(), Some(head)),
            Verdict::Broken { .. }
        ));
    }
}
