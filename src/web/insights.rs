//! The Insights page (`/insights`): how long decisions take and where
//! gates wait — an approver's own, everyone's for operators and admins
//! ([`crate::hub::insights`], what `strands report --json` prints). Charts
//! are SVG drawn here on the server: no script, nothing fetched.

use axum::extract::{Query, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::auth::Viewer;
use super::{html, Web, WebError};
use crate::audit::report::By;

/// `?since=7d&by=workflow`.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct Period {
    /// `7d`, `30d` (default) or `90d`.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
}

/// The periods the page offers.
const PERIODS: [(&str, i64); 3] = [("7d", 7), ("30d", 30), ("90d", 90)];

/// One bar of a chart: its label, value, shown text and width in the
/// chart's 100-unit-wide box.
#[derive(Debug, Serialize)]
struct Bar {
    label: String,
    value: u64,
    text: String,
    width: f64,
    y: u32,
}

/// Horizontal bars scaled to the largest value (a zero-width bar for 0).
fn bars(items: impl IntoIterator<Item = (String, u64, String)>) -> Vec<Bar> {
    let items: Vec<(String, u64, String)> = items.into_iter().collect();
    let max = items.iter().map(|(_, v, _)| *v).max().unwrap_or(0).max(1);
    items
        .into_iter()
        .enumerate()
        .map(|(i, (label, value, text))| Bar {
            width: (value as f64 / max as f64 * 100.0 * 10.0).round() / 10.0,
            label,
            value,
            text,
            y: i as u32 * 24,
        })
        .collect()
}

/// Milliseconds as people read them ("1 h 5 min", "4 s", "350 ms").
fn ms(v: Option<u64>) -> String {
    match v {
        None => "–".into(),
        Some(ms) if ms < 1000 => format!("{ms} ms"),
        Some(ms) => crate::hub::durations::duration((ms / 1000) as i64),
    }
}

pub async fn page(
    State(web): State<Web>,
    viewer: Viewer,
    Query(p): Query<Period>,
) -> Result<Response, WebError> {
    if viewer.only_gate().is_some() {
        return Err(WebError::forbidden(
            "a one-tap link's sign-in reaches one gate, not the insights".to_string(),
        ));
    }
    let period = p.since.as_deref().unwrap_or("30d");
    let days = PERIODS
        .iter()
        .find(|(k, _)| *k == period)
        .map(|(_, d)| *d)
        .ok_or_else(|| WebError::bad_request(format!("since `{period}` is not 7d, 30d or 90d")))?;
    let by_name = p.by.as_deref().unwrap_or("gate");
    let by = By::parse(by_name).ok_or_else(|| {
        WebError::bad_request(format!("by `{by_name}` is not one of {:?}", By::NAMES))
    })?;
    let since = web.hub.clock.now() - chrono::TimeDelta::days(days);
    let insights = crate::hub::insights::for_caller(&web.hub, &viewer.caller, since, by).await?;
    let ages = bars(
        insights
            .open
            .buckets
            .iter()
            .map(|b| (b.label.clone(), b.count, b.count.to_string())),
    );
    let p50 = bars(
        insights
            .rows
            .iter()
            .map(|r| (r.key.clone(), r.p50_ms.unwrap_or(0), ms(r.p50_ms))),
    );
    let rows: Vec<serde_json::Value> = insights
        .rows
        .iter()
        .chain(std::iter::once(&insights.total))
        .map(|r| {
            serde_json::json!({
                "row": r,
                "p50": ms(r.p50_ms), "p90": ms(r.p90_ms), "p99": ms(r.p99_ms),
            })
        })
        .collect();
    Ok(html(web.pages.render(
        "insights.html",
        serde_json::json!({
            "title": "Insights",
            "viewer": { "name": viewer.caller.name, "role": viewer.caller.role },
            "csrf": viewer.login.csrf,
            "insights": insights,
            "whose": insights.whose(),
            "period": period,
            "periods": PERIODS.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            "by": by_name,
            "bys": By::NAMES,
            "ages": ages,
            "ages_height": ages.len() * 24,
            "p50": p50,
            "p50_height": p50.len().max(1) * 24,
            "rows": rows,
            "oldest": insights.open.oldest_secs.map(crate::hub::durations::duration),
        }),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_stack_down() {
        let b = bars([
            ("a".to_string(), 50, "50".to_string()),
            ("b".to_string(), 200, "200".to_string()),
            ("c".to_string(), 0, "0".to_string()),
        ]);
        let w: Vec<f64> = b.iter().map(|b| b.width).collect();
        assert_eq!(w, [25.0, 100.0, 0.0]);
        assert_eq!(b[2].y, 48);
    }

    #[test]
    fn times_read_as_people_say_them() {
        assert_eq!(ms(None), "–");
        assert_eq!(ms(Some(350)), "350 ms");
        assert_eq!(ms(Some(3_700_000)), "1 h 1 min");
    }
}
