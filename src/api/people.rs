//! The people directory over HTTP, for admins (`strands people …` goes
//! through these when the CLI talks to a server):
//!
//! - `GET    /api/v1/people`              every person
//! - `POST   /api/v1/people`              add one (a bad field, a taken name or a clash: 400)
//! - `GET    /api/v1/people/{name}`       one person
//! - `PATCH  /api/v1/people/{name}`       change the fields given
//! - `DELETE /api/v1/people/{name}`       remove one
//! - `POST   /api/v1/people/import`       rows read from a file, all or nothing
//!
//! Handlers are thin: the operations and their checks are
//! [`crate::hub::people`]; refusals map once, through [`crate::Error`].

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ErrorBody};
use crate::hub::people::{Imported, PersonPatch, Row};
use crate::hub::Hub;
use crate::model::person::{Person, PersonError};
use crate::model::token::Role;

/// An import: the rows of a file (`source` names it in errors).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    pub source: String,
    pub rows: Vec<Row>,
}

/// Every person, by name. Admins.
#[utoipa::path(get, path = "/people", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = Object, description = "`{\"count\": N, \"people\": [{name, slack, teams, email, tokens, unix, groups}]}`"), (status = 403, body = ErrorBody)))]
pub async fn list(State(hub): State<Hub>, caller: Caller) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    let people = hub.store.people().await?;
    Ok(Json(
        serde_json::json!({ "count": people.len(), "people": people }),
    ))
}

/// Adds a person. Admins.
#[utoipa::path(post, path = "/people", tag = "admin", request_body = Object,
    security(("bearer" = [])),
    responses(
        (status = 201, body = Object, description = "the person as stored"),
        (status = 400, body = ErrorBody, description = "a malformed field, a taken name, or an identity that is someone else's"),
        (status = 403, body = ErrorBody),
    ))]
pub async fn add(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(person): ApiJson<Person>,
) -> Result<(StatusCode, Json<Person>), ApiError> {
    caller.require(Role::Admin)?;
    let added = crate::hub::people::add(&hub.store, person, &caller.name, "api").await?;
    hub.fresh_people().await?;
    Ok((StatusCode::CREATED, Json(added)))
}

/// One person. Admins.
#[utoipa::path(get, path = "/people/{name}", tag = "admin",
    params(("name" = String, Path, description = "the person's name")),
    security(("bearer" = [])),
    responses((status = 200, body = Object), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn show(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Person>, ApiError> {
    caller.require(Role::Admin)?;
    let people = hub.store.people().await?;
    match people.into_iter().find(|p| p.name == name) {
        Some(p) => Ok(Json(p)),
        None => Err(crate::Error::from(PersonError::Unknown(name)).into()),
    }
}

/// Changes the fields given (`""` or `[]` clears one). Admins.
#[utoipa::path(patch, path = "/people/{name}", tag = "admin", request_body = PersonPatch,
    params(("name" = String, Path, description = "the person's name")),
    security(("bearer" = [])),
    responses((status = 200, body = Object), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn edit(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(patch): ApiJson<PersonPatch>,
) -> Result<Json<Person>, ApiError> {
    caller.require(Role::Admin)?;
    let p = crate::hub::people::edit(&hub.store, &name, &patch, &caller.name, "api").await?;
    hub.fresh_people().await?;
    Ok(Json(p))
}

/// Removes a person. Admins.
#[utoipa::path(delete, path = "/people/{name}", tag = "admin",
    params(("name" = String, Path, description = "the person's name")),
    security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn remove(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin)?;
    crate::hub::people::remove(&hub.store, &name, &caller.name, "api").await?;
    hub.fresh_people().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Imports rows read from a file: each person added or replaced whole;
/// a bad row refuses the whole import (`FILE:LINE: why`). Admins.
#[utoipa::path(post, path = "/people/import", tag = "admin", request_body = ImportRequest,
    security(("bearer" = [])),
    responses((status = 200, body = Imported), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn import(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<ImportRequest>,
) -> Result<Json<Imported>, ApiError> {
    caller.require(Role::Admin)?;
    let done =
        crate::hub::people::import(&hub.store, &req.source, req.rows, &caller.name, "api").await?;
    hub.fresh_people().await?;
    Ok(Json(done))
}

/// Removes one of a person's passkeys (it stays on record, marked
/// removed, so what it signed can still be verified). Admins.
#[utoipa::path(delete, path = "/people/{name}/passkeys/{id}", tag = "admin",
    params(("name" = String, Path, description = "the person's name"),
           ("id" = String, Path, description = "the passkey's credential id (base64url)")),
    security(("bearer" = [])),
    responses((status = 204), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn remove_passkey(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath((name, id)): ApiPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    caller.require(Role::Admin)?;
    crate::hub::people::passkeys::remove(&hub.store, &name, &id, &caller.name, "api").await?;
    hub.fresh_people().await?;
    Ok(StatusCode::NO_CONTENT)
}
