//! The audit trail as a file a reviewer opens: JSON lines (each entry
//! with its place in the chain) or CSV (one column per field;
//! `on_behalf_of` names the person a delegate answered for; `trace_id`,
//! the run's OpenTelemetry trace; `grant`, the approver's grant that let
//! a tool call run or that an entry made or revoked; `step_up`, last, a stepped-up approval's
//! passkey proof as JSON — credential, public key, authenticator data,
//! client data and signature, all a verifier needs). Shared by
//! `strands audit export` and the web inbox's audit download.

use super::AuditEntry;

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 22] = [
    "seq",
    "at",
    "session",
    "workflow",
    "kind",
    "gate",
    "call",
    "who",
    "person",
    "on_behalf_of",
    "via",
    "decision",
    "response_ms",
    "shown_digest",
    "preview",
    "detail",
    "rule",
    "prev",
    "hash",
    "trace_id",
    "grant",
    "step_up",
];

/// `entries` as CSV with a header row.
pub fn csv(entries: &[AuditEntry]) -> Result<Vec<u8>, String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)
        .map_err(|e| format!("csv: {e}"))?;
    for entry in entries {
        let e = &entry.event;
        let kind = e
            .kind
            .and_then(|k| serde_json::to_value(k).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        w.write_record([
            entry.seq.to_string(),
            e.at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            e.session.clone(),
            e.workflow.clone(),
            kind,
            e.gate.clone().unwrap_or_default(),
            e.call.clone().unwrap_or_default(),
            e.who.clone().unwrap_or_default(),
            e.person.clone().unwrap_or_default(),
            e.on_behalf_of.clone().unwrap_or_default(),
            e.via.clone().unwrap_or_default(),
            e.decision
                .as_ref()
                .map(|d| d.to_string())
                .unwrap_or_default(),
            e.response_ms.map(|m| m.to_string()).unwrap_or_default(),
            e.shown_digest.clone().unwrap_or_default(),
            e.preview.clone().unwrap_or_default(),
            e.detail.clone().unwrap_or_default(),
            e.rule.clone().unwrap_or_default(),
            entry.prev.clone(),
            entry.hash.clone(),
            e.trace_id.clone().unwrap_or_default(),
            e.grant.clone().unwrap_or_default(),
            e.step_up
                .as_ref()
                .and_then(|p| serde_json::to_string(p).ok())
                .unwrap_or_default(),
        ])
        .map_err(|e| format!("csv: {e}"))?;
    }
    w.into_inner().map_err(|e| format!("csv: {e}"))
}

/// `entries` as JSON lines.
pub fn jsonl(entries: &[AuditEntry]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for entry in entries {
        out.extend(serde_json::to_vec(entry).map_err(|e| e.to_string())?);
        out.push(b'\n');
    }
    Ok(out)
}
