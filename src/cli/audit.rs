//! `strands audit verify|export`.

use super::*;

pub(super) async fn audit(ctx: &Ctx, cmd: AuditCommand) -> Result<u8> {
    use crate::audit::Verdict;
    match cmd {
        AuditCommand::Verify { json } => {
            let store = ctx.open()?;
            let verdict = crate::audit::verify(
                store.audit_entries().await?.into_iter(),
                store.audit_head().await?,
            );
            let (code, text, obj) = match &verdict {
                Verdict::Intact { entries } => (
                    exit::OK,
                    format!("audit chain intact: {entries} entries"),
                    json!({ "intact": true, "entries": entries }),
                ),
                Verdict::Broken { seq, why } => (
                    exit::AUDIT_BROKEN,
                    format!("audit chain broken at entry #{seq}: {why}"),
                    json!({ "intact": false, "broken_at": seq, "why": why }),
                ),
            };
            if json {
                outln!("{obj}")?;
            }
            if code == exit::OK {
                eprintln!("{text}");
            } else {
                eprintln!("error: {text}");
            }
            Ok(code)
        }
        AuditCommand::Export {
            since,
            session,
            format,
        } => {
            let since_raw = since.clone();
            let since = match since.as_deref() {
                None => None,
                Some(s) => Some(crate::audit::parse_since(s).map_err(Error::Usage)?),
            };
            let mut out = std::io::stdout().lock();
            let mut csv = (format == "csv").then(|| csv::Writer::from_writer(Vec::new()));
            if let Some(w) = csv.as_mut() {
                w.write_record([
                    "seq",
                    "at",
                    "session",
                    "workflow",
                    "kind",
                    "gate",
                    "call",
                    "who",
                    "via",
                    "decision",
                    "response_ms",
                    "shown_digest",
                    "preview",
                    "detail",
                    "prev",
                    "hash",
                ])
                .map_err(|e| Error::Internal(format!("csv: {e}")))?;
            }
            let entries = match &ctx.remote {
                Some(remote) => {
                    super::remote::audit_entries(remote, since_raw.as_deref(), session.as_deref())
                        .await?
                }
                None => ctx.open()?.audit_export(since, session.as_deref()).await?,
            };
            for entry in entries {
                let e = &entry.event;
                match csv.as_mut() {
                    Some(w) => {
                        let kind = e
                            .kind
                            .map(|k| {
                                serde_json::to_value(k)
                                    .ok()
                                    .and_then(|v| v.as_str().map(str::to_string))
                                    .unwrap_or_default()
                            })
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
                            e.via.clone().unwrap_or_default(),
                            e.decision
                                .as_ref()
                                .map(|d| d.to_string())
                                .unwrap_or_default(),
                            e.response_ms.map(|m| m.to_string()).unwrap_or_default(),
                            e.shown_digest.clone().unwrap_or_default(),
                            e.preview.clone().unwrap_or_default(),
                            e.detail.clone().unwrap_or_default(),
                            entry.prev.clone(),
                            entry.hash.clone(),
                        ])
                        .map_err(|e| Error::Internal(format!("csv: {e}")))?;
                    }
                    None => {
                        use std::io::Write;
                        let line = serde_json::to_string(&entry)
                            .map_err(|e| Error::Internal(e.to_string()))?;
                        writeln!(out, "{line}").map_err(|e| Error::io(STDOUT, e))?;
                    }
                }
            }
            if let Some(w) = csv {
                use std::io::Write;
                let bytes = w
                    .into_inner()
                    .map_err(|e| Error::Internal(format!("csv: {e}")))?;
                out.write_all(&bytes).map_err(|e| Error::io(STDOUT, e))?;
            }
            Ok(exit::OK)
        }
    }
}
