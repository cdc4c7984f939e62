//! `strands report`: decision analytics over the audit entries of a
//! period and the open gates by age (`hub::insights`), computed on the
//! store, or by the server (`GET /api/v1/insights`) when the CLI talks to
//! one.

use serde_json::json;

use super::Ctx;
use crate::audit::report::{self, By};
use crate::error::{Error, Result};
use crate::hub::insights::{self, Insights, Scope};

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
    // Through a server, it computes them (an approver's token gets their
    // own); on the store, everyone's.
    let insights: Insights = match &ctx.remote {
        Some(remote) => super::remote::insights(remote, &stamp, &args.by).await?,
        None => {
            let store = ctx.open().await?;
            let open = insights::everyone_open(&store, ctx.now()).await?;
            insights::assemble(&store, from, by, open, Scope::Everyone).await?
        }
    };
    if args.json {
        outln!("{}", json!(insights))?;
        return Ok(crate::error::exit::OK);
    }
    let whose = insights.whose();
    let r = report::Report {
        by: insights.by,
        rows: insights.rows,
        total: insights.total,
    };
    if args.csv {
        outln!("{}", report::csv(&r).trim_end())?;
        return Ok(crate::error::exit::OK);
    }
    outln!(
        "decisions since {}, by {}{}",
        insights.since,
        args.by,
        whose
    )?;
    outln!("{}", report::table(&r).trim_end())?;
    let o = &insights.open;
    let buckets: Vec<String> = o
        .buckets
        .iter()
        .map(|b| format!("{} {}", b.count, b.label))
        .collect();
    outln!(
        "open gates: {} ({}); overdue: {}",
        o.open,
        buckets.join(", "),
        o.overdue
    )?;
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
