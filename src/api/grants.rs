//! Approvers' grants (trust within limits): `GET /api/v1/grants` lists
//! them (`?all=true`: expired and revoked ones too), `DELETE
//! /api/v1/grants/{id}` revokes one. `strands trust list|revoke` goes
//! through these when the CLI talks to a server. Any approver may read
//! and revoke them: a revocation only ever makes calls ask again, and it
//! is audited with who did it. Grants are made only by answering a tool
//! call (`POST /api/v1/sessions/{id}/answers` with `"decision": "trust"`
//! and `for` / `match`).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{ApiError, ApiPath, ApiQuery, ErrorBody};
use crate::hub::grants::{self, Revoked};
use crate::hub::Hub;
use crate::model::token::Role;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GrantsQuery {
    /// Expired and revoked grants too.
    #[serde(default)]
    pub all: bool,
}

/// The live grants (`?all=true`: every one). Approvers.
#[utoipa::path(get, path = "/grants", tag = "sessions", params(GrantsQuery),
    security(("bearer" = [])),
    responses((status = 200, body = Object, description = "`{\"count\": n, \"grants\": [...]}`"), (status = 403, body = ErrorBody)))]
pub async fn list(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<GrantsQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Approver)?;
    let now = hub.clock.now();
    let list: Vec<Value> = grants::list(&hub.store, q.all, now)
        .await?
        .iter()
        .map(|g| grants::listed(g, now))
        .collect();
    Ok(Json(
        serde_json::json!({ "count": list.len(), "grants": list }),
    ))
}

/// Revokes grant `id`: later calls it allowed ask again. The grant as
/// revoked (one revoked before is returned as it was). Approvers.
#[utoipa::path(delete, path = "/grants/{id}", tag = "sessions",
    params(("id" = String, Path, description = "the grant's id (`gr_…`)")),
    security(("bearer" = [])),
    responses((status = 200, body = Object), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revoke(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Approver)?;
    let now = hub.clock.now();
    match grants::revoke(&hub.store, &id, &caller.name, "api").await? {
        Revoked::Now(g) | Revoked::Before(g) => Ok(Json(grants::listed(&g, now))),
        Revoked::Unknown => Err(ApiError::not_found(format!("no grant `{id}`"))),
    }
}
