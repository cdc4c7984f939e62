//! `GET /api/v1/insights`: time to decision and outcomes, and the open
//! gates by age ([`crate::hub::insights`]) — an approver's own, everyone's
//! for operators and admins. `strands report` reads it through a server.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{ApiError, ApiQuery, ErrorBody};
use crate::audit::report::By;
use crate::hub::Hub;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InsightsQuery {
    /// Decisions at or after this time (RFC 3339, or YYYY-MM-DD); the
    /// last 30 days when absent.
    pub since: Option<String>,
    /// Rows per `workflow`, `gate` (default), `approver`, `rule` or `door`.
    pub by: Option<String>,
}

/// Decision analytics: per group and in total, decisions, approved,
/// rejected, other, timeouts and p50/p90/p99 time to decision (ms); the
/// open gates by age and overdue. Approvers get their own.
#[utoipa::path(get, path = "/insights", tag = "sessions", params(InsightsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, body = Object, description = "what `strands report --json` prints"),
        (status = 400, body = ErrorBody),
    ))]
pub async fn show(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<InsightsQuery>,
) -> Result<Json<crate::hub::insights::Insights>, ApiError> {
    let since = match q.since.as_deref() {
        Some(s) => crate::audit::parse_since(s).map_err(ApiError::bad_request)?,
        None => hub.clock.now() - chrono::TimeDelta::days(30),
    };
    let by = match q.by.as_deref() {
        None => By::Gate,
        Some(b) => By::parse(b).ok_or_else(|| {
            ApiError::bad_request(format!("by `{b}` is not one of {:?}", By::NAMES))
        })?,
    };
    Ok(Json(
        crate::hub::insights::for_caller(&hub, &caller, since, by).await?,
    ))
}
