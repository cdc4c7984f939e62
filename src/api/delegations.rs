//! Delegations over HTTP (`strands people delegate|delegations|undelegate`
//! go through these when the CLI talks to a server):
//!
//! - `GET    /api/v1/people/delegations`          every delegation not over (admins)
//! - `GET    /api/v1/people/{name}/delegations`   from or to one person (that person, or admins)
//! - `POST   /api/v1/people/{name}/delegations`   set one (that person, or admins): 201;
//!   an unknown person 404, a bad day, an overlap or a cycle 400, anyone else 403
//! - `DELETE /api/v1/people/{name}/delegations[?to=bob]`  remove them (same rule): 204
//!
//! A person is the caller's token name as the people directory knows it.
//! Handlers are thin: parse, hand off to [`crate::hub::people::delegations`]
//! (which also judges who may), map errors once.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use crate::hub::people::delegations::{self, DelegateRequest, DelegationView};
use crate::hub::Hub;
use crate::model::token::Role;

/// A list of delegations.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Delegations {
    pub count: usize,
    pub delegations: Vec<DelegationView>,
}

/// Which delegations to remove.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct Undelegate {
    /// Only the one to this person (default: all of the person's).
    #[serde(default)]
    pub to: Option<String>,
}

/// Every delegation not over yet. Admins.
#[utoipa::path(get, path = "/people/delegations", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = Delegations), (status = 403, body = ErrorBody)))]
pub async fn all(State(hub): State<Hub>, caller: Caller) -> Result<Json<Delegations>, ApiError> {
    caller.require(Role::Admin)?;
    let people = hub.fresh_people().await?;
    let list = delegations::list(&people, None, hub.clock.now())?;
    Ok(Json(Delegations {
        count: list.len(),
        delegations: list,
    }))
}

/// The delegations from or to one person. That person, or admins.
#[utoipa::path(get, path = "/people/{name}/delegations", tag = "people",
    params(("name" = String, Path, description = "the person's name")),
    security(("bearer" = [])),
    responses((status = 200, body = Delegations), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn of(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Delegations>, ApiError> {
    let people = hub.fresh_people().await?;
    let list = delegations::list(&people, Some(&name), hub.clock.now())?;
    let person = people.canonical(&name);
    delegations::may_set(&people, &caller.name, caller.role >= Role::Admin, person)?;
    Ok(Json(Delegations {
        count: list.len(),
        delegations: list,
    }))
}

/// Sets a delegation: from `from` 00:00 UTC to the end of `until`. That
/// person, or admins.
#[utoipa::path(post, path = "/people/{name}/delegations", tag = "people",
    request_body = DelegateRequest,
    params(("name" = String, Path, description = "the person who is away")),
    security(("bearer" = [])),
    responses(
        (status = 201, body = DelegationView, description = "the delegation as stored"),
        (status = 400, body = ErrorBody, description = "a bad day, a window over, an overlap with another delegate, a cycle"),
        (status = 403, body = ErrorBody, description = "not that person, not an admin"),
        (status = 404, body = ErrorBody, description = "no such person"),
    ))]
pub async fn create(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(req): ApiJson<DelegateRequest>,
) -> Result<(StatusCode, Json<DelegationView>), ApiError> {
    let by = (caller.name.as_str(), caller.role >= Role::Admin, "api");
    let view = delegations::delegate(&hub.store, &name, &req, by, hub.clock.now()).await?;
    hub.fresh_people().await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Removes a person's delegations (`?to=`: only the one to that person).
/// That person, or admins.
#[utoipa::path(delete, path = "/people/{name}/delegations", tag = "people",
    params(("name" = String, Path, description = "the person"), Undelegate),
    security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody, description = "no such person, or no such delegation")))]
pub async fn remove(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiQuery(q): ApiQuery<Undelegate>,
) -> Result<StatusCode, ApiError> {
    let by = (caller.name.as_str(), caller.role >= Role::Admin, "api");
    delegations::undelegate(&hub.store, &name, q.to.as_deref(), by).await?;
    hub.fresh_people().await?;
    Ok(StatusCode::NO_CONTENT)
}
