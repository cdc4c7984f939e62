//! `strands audit verify|export`.

use serde_json::json;

use super::{AuditCommand, Ctx, STDOUT};
use crate::error::{exit, Error, Result};

pub(super) async fn audit(ctx: &Ctx, cmd: AuditCommand) -> Result<u8> {
    use crate::audit::Verdict;
    match cmd {
        AuditCommand::Verify { file, json } => {
            let verdict = match &file {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| Error::io(path.display().to_string(), e))?;
                    crate::audit::verify_export(&text)
                }
                None => {
                    let store = ctx.open().await?;
                    let people = store.directory().await?;
                    crate::audit::verify_with_keys(
                        store.audit_entries().await?.into_iter(),
                        store.audit_head().await?,
                        &|person, credential| {
                            crate::hub::people::passkeys::registered(&people, person, credential)
                        },
                    )
                }
            };
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
            let entries = match &ctx.remote {
                Some(remote) => {
                    super::remote::audit_entries(remote, since_raw.as_deref(), session.as_deref())
                        .await?
                }
                None => {
                    ctx.open()
                        .await?
                        .audit_export(since, session.as_deref())
                        .await?
                }
            };
            let bytes = if format == "csv" {
                crate::audit::export::csv(&entries)
            } else {
                crate::audit::export::jsonl(&entries)
            }
            .map_err(Error::Internal)?;
            use std::io::Write;
            std::io::stdout()
                .lock()
                .write_all(&bytes)
                .map_err(|e| Error::io(STDOUT, e))?;
            Ok(exit::OK)
        }
    }
}
