//! `strands report`: decision analytics (`audit::report`) over the audit
//! entries of a period, read from the store or through the server as
//! `audit export` reads them.

use serde_json::json;

use super::Ctx;
use crate::audit::report::{self, By};
use crate::error::{Error, Result};

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The period: decisions at or after this — a span back from now
    /// (`30d`, `12h`, `90m`), an RFC 3339 time or a date.
    #[arg(long, default_value = "30d")]
    pub since: String,
    /// One row per workflow, gate, approver, rule or door.
    #[arg(long, default_value = "gate", value_parser = By::NAMES)]
    pub by: String,
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    #[arg(long)]
    pub csv: bool,
}

/// `since` as a time: `N` + `d`/`h`/`m` back from `now`, else RFC 3339 or
/// a date (`strands report --since`, `strands policy backtest --since`).
pub(super) fn since(
    s: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>> {
    let s = s.trim();
    let span = s
        .strip_suffix('d')
        .map(|n| (n, 86_400))
        .or_else(|| s.strip_suffix('h').map(|n| (n, 3_600)))
        .or_else(|| s.strip_suffix('m').map(|n| (n, 60)));
    if let Some((n, unit)) = span {
        if let Ok(n) = n.parse::<i64>() {
            if n >= 0 {
                return Ok(now - chrono::TimeDelta::seconds(n.saturating_mul(unit)));
            }
        }
    }
    crate::audit::parse_since(s).map_err(|e| {
        Error::Usage(format!(
            "{e}; a span back from now works too (30d, 12h, 90m)"
        ))
    })
}

/// `from` as the period's commands print and send it.
pub(super) fn stamp(from: chrono::DateTime<chrono::Utc>) -> String {
    from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The audit entries at or after `from`, read as `audit export` reads
/// them: through the server this invocation goes through, else from
/// `store` (opened here when none is given).
pub(super) async fn audit_since(
    ctx: &Ctx,
    store: Option<&crate::store::Store>,
    from: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<crate::audit::AuditEntry>> {
    match (&ctx.remote, store) {
        (Some(remote), _) => super::remote::audit_entries(remote, Some(&stamp(from)), None).await,
        (None, Some(store)) => store.audit_export(Some(from), None).await,
        (None, None) => ctx.open().await?.audit_export(Some(from), None).await,
    }
}

pub(super) async fn report(ctx: &Ctx, args: ReportArgs) -> Result<u8> {
    let by = By::parse(&args.by)
        .ok_or_else(|| Error::Usage(format!("--by `{}`: one of {:?}", args.by, By::NAMES)))?;
    let from = since(&args.since, ctx.now())?;
    let stamp = stamp(from);
    let entries = audit_since(ctx, None, from).await?;
    let r = report::report(&entries, by);
    if args.json {
        outln!(
            "{}",
            json!({ "since": stamp, "by": r.by, "rows": r.rows, "total": r.total })
        )?;
    } else if args.csv {
        outln!("{}", report::csv(&r).trim_end())?;
    } else {
        outln!("decisions since {stamp}, by {}", args.by)?;
        outln!("{}", report::table(&r).trim_end())?;
    }
    Ok(crate::error::exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_span_a_time_or_a_date() {
        let now = crate::clock::test_epoch();
        assert_eq!(
            since("30d", now).ok(),
            Some(now - chrono::TimeDelta::days(30))
        );
        assert_eq!(
            since("12h", now).ok(),
            Some(now - chrono::TimeDelta::hours(12))
        );
        assert_eq!(
            since("90m", now).ok(),
            Some(now - chrono::TimeDelta::minutes(90))
        );
        assert!(since("2026-11-01", now).is_ok());
        assert!(since("2026-11-01T09:00:00Z", now).is_ok());
        let e = since("yesterday", now)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("30d, 12h, 90m"), "{e}");
    }
}
