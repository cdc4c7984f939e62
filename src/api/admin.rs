//! Admin routes: the audit export, API tokens (`strands tokens ...` goes
//! through these when the CLI talks to a server), the Teams
//! conversations the room knows (`strands teams conversations`), failed
//! notifications, and webhook deliveries given up on queued again
//! (`strands webhooks retry`).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
use crate::hub::Hub;
use crate::model::token::Role;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Entries at or after this time (RFC 3339, or YYYY-MM-DD).
    pub since: Option<String>,
    /// Entries of this session (an id or its prefix).
    pub session: Option<String>,
}

/// The audit trail as JSON lines, each entry with its place in the hash
/// chain (`strands audit verify` checks it). Admins.
#[utoipa::path(get, path = "/audit", tag = "admin", params(AuditQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, content_type = "application/x-ndjson", body = String, description = "one audit entry per line"),
        (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ))]
pub async fn audit(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Response, ApiError> {
    caller.require(Role::Admin)?;
    let since = q
        .since
        .as_deref()
        .map(crate::audit::parse_since)
        .transpose()
        .map_err(ApiError::bad_request)?;
    let mut body = String::new();
    for entry in hub.store.audit_export(since, q.session.as_deref()).await? {
        body.push_str(
            &serde_json::to_string(&entry).map_err(|e| crate::Error::Internal(e.to_string()))?,
        );
        body.push('\n');
    }
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    pub name: String,
    /// `approver`, `operator` or `admin`.
    pub role: String,
    #[serde(default)]
    pub expires_days: Option<u32>,
}

/// A token just made: `token` is shown this once.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct TokenCreated {
    pub token: String,
    pub name: String,
    pub role: String,
    pub id: String,
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Makes a token. Admins.
#[utoipa::path(post, path = "/tokens", tag = "admin", request_body = TokenRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, body = TokenCreated),
        (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "a token of that name is in use"),
        (status = 422, body = ErrorBody),
    ))]
pub async fn create_token(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<TokenRequest>,
) -> Result<(StatusCode, Json<TokenCreated>), ApiError> {
    caller.require(Role::Admin)?;
    let role = Role::parse(&req.role).ok_or_else(|| {
        ApiError::unprocessable(
            "bad_token",
            format!(
                "role `{}` is not one of approver, operator, admin",
                req.role
            ),
        )
    })?;
    let new = crate::hub::tokens::create(
        &hub.store,
        &req.name,
        role,
        req.expires_days,
        false,
        &caller.name,
        "api",
    )
    .await??;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            name: new.record.name.clone(),
            role: role.to_string(),
            id: new.record.id.clone(),
            expires_at: new.record.expires_at,
            token: new.token,
        }),
    ))
}

/// Every token ever made (never a secret or its hash). Admins.
#[utoipa::path(get, path = "/tokens", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = Object, description = "`{\"tokens\": [...]}`"), (status = 403, body = ErrorBody)))]
pub async fn list_tokens(State(hub): State<Hub>, caller: Caller) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    let tokens: Vec<Value> = hub
        .store
        .tokens()
        .await?
        .iter()
        .map(|t| crate::hub::tokens::listed(t, hub.clock.now()))
        .collect();
    Ok(Json(
        serde_json::json!({ "count": tokens.len(), "tokens": tokens }),
    ))
}

/// The Teams conversations the room knows (where it can post), by id.
/// Admins.
#[utoipa::path(get, path = "/teams/conversations", tag = "admin",
    security(("bearer" = [])),
    responses((status = 200, body = Object, description = "`{\"count\": N, \"conversations\": [{id, type, name, tenant_id, channel_id, bot_id, service_url, service_host, first_seen, last_seen}]}`"), (status = 403, body = ErrorBody)))]
pub async fn teams_conversations(
    State(hub): State<Hub>,
    caller: Caller,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    let conversations: Vec<Value> = hub
        .store
        .teams_conversations()
        .await?
        .iter()
        .map(|c| c.listed())
        .collect();
    Ok(Json(serde_json::json!({
        "count": conversations.len(),
        "conversations": conversations,
    })))
}

/// How many failed notifications to list.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
pub struct FailedQuery {
    /// At most this many (50; at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The notifications (mail) strands gave up on, latest first. Admins.
#[utoipa::path(get, path = "/notifications/failed", tag = "admin",
    params(FailedQuery),
    security(("bearer" = [])),
    responses((status = 200, body = Object, description = "`{\"count\": N, \"failed\": [{channel, to, kind, session, gate, id, attempts, last_error, queued_at, first_attempt_at, last_attempt_at}]}`"), (status = 403, body = ErrorBody)))]
pub async fn failed_notifications(
    State(hub): State<Hub>,
    caller: Caller,
    axum::extract::Query(q): axum::extract::Query<FailedQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    let limit = q.limit.unwrap_or(50).clamp(1, 1000);
    let failed: Vec<Value> = hub
        .store
        .mail_failed(limit)
        .await?
        .iter()
        .map(crate::model::mail::Mail::listed)
        .collect();
    Ok(Json(
        serde_json::json!({ "count": failed.len(), "failed": failed }),
    ))
}

/// The webhook deliveries strands gave up on, latest first, as `strands
/// webhooks failed --json` lists them (endpoints without credentials).
/// Admins.
#[utoipa::path(get, path = "/webhooks/failed", tag = "admin",
    params(FailedQuery),
    security(("bearer" = [])),
    responses((status = 200, body = Object, description = "`{\"count\": N, \"failed\": [{endpoint, type, session, workflow, seq, msg_id, attempts, last_error, queued_at, first_attempt_at, last_attempt_at}]}`"), (status = 403, body = ErrorBody)))]
pub async fn failed_webhooks(
    State(hub): State<Hub>,
    caller: Caller,
    axum::extract::Query(q): axum::extract::Query<FailedQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    let limit = q.limit.unwrap_or(50).min(1000);
    let failed: Vec<Value> = hub
        .store
        .webhook_failed(limit)
        .await?
        .iter()
        .map(crate::model::webhook::Delivery::listed)
        .collect();
    Ok(Json(
        serde_json::json!({ "count": failed.len(), "failed": failed }),
    ))
}

/// Which webhook deliveries given up on to queue again.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RetryQuery {
    /// `all`: every delivery given up on (`strands webhooks retry --all-failed`).
    pub failed: Option<String>,
}

/// What a retry queued again.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct Requeued {
    /// Deliveries queued again (one message goes to each endpoint that
    /// gave it up).
    pub requeued: usize,
}

/// Queues webhook message `id` (its `webhook-id`, as `strands webhooks
/// failed` lists it) again, to every endpoint that gave it up: due now,
/// the same `webhook-id` (receivers drop what they already have), its
/// attempts counted afresh. Admins.
#[utoipa::path(post, path = "/webhooks/{id}/retry", tag = "admin",
    params(("id" = String, Path, description = "the message id (`webhook-id`)")),
    security(("bearer" = [])),
    responses((status = 200, body = Requeued), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn retry_webhook(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Requeued>, ApiError> {
    caller.require(Role::Admin)?;
    let ids = [id];
    let requeued = hub
        .store
        .webhook_requeue(Some(&ids), hub.clock.now())
        .await?;
    if requeued == 0 {
        return Err(ApiError::not_found(format!(
            "no webhook delivery given up on has message id `{}` (`strands webhooks failed` lists them)",
            ids[0]
        )));
    }
    Ok(Json(Requeued { requeued }))
}

/// Queues every webhook delivery given up on again (`?failed=all`), as
/// `POST /webhooks/{id}/retry` does one. Admins.
#[utoipa::path(post, path = "/webhooks/retry", tag = "admin", params(RetryQuery),
    security(("bearer" = [])),
    responses((status = 200, body = Requeued), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn retry_webhooks(
    State(hub): State<Hub>,
    caller: Caller,
    ApiQuery(q): ApiQuery<RetryQuery>,
) -> Result<Json<Requeued>, ApiError> {
    caller.require(Role::Admin)?;
    if q.failed.as_deref() != Some("all") {
        return Err(ApiError::bad_request(
            "say which: `?failed=all` queues every delivery given up on again, `POST /api/v1/webhooks/{id}/retry` one message",
        ));
    }
    let requeued = hub.store.webhook_requeue(None, hub.clock.now()).await?;
    Ok(Json(Requeued { requeued }))
}

/// Revokes the token in use named `name`. Admins.
#[utoipa::path(delete, path = "/tokens/{name}", tag = "admin",
    params(("name" = String, Path, description = "the token's name")),
    security(("bearer" = [])),
    responses((status = 200, body = Object), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revoke_token(
    State(hub): State<Hub>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    match crate::hub::tokens::revoke(&hub.store, &name, &caller.name, "api").await? {
        Some(t) => Ok(Json(crate::hub::tokens::listed(&t, hub.clock.now()))),
        None => Err(ApiError::not_found(format!(
            "no token named `{name}` is in use"
        ))),
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BackupRequest {
    /// An absolute path on the server's machine: a new or empty directory.
    pub dest: String,
}

/// Copies the store (sled) into `dest` with every store call held back
/// meanwhile, opens and verifies the copy, and records it in the store's
/// `backups.log` (`strands store backup DEST` goes through this while the
/// server holds the store). Refused on PostgreSQL (`pg_dump`). Admins.
#[utoipa::path(post, path = "/store/backup", tag = "admin", request_body = BackupRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, body = Object, description = "`{\"dest\", \"files\", \"bytes\", \"verify\": {…}}`"),
        (status = 400, body = ErrorBody, description = "`dest` is not absolute, or exists and is not empty; or the store is PostgreSQL (`pg_dump`)"),
        (status = 403, body = ErrorBody),
        (status = 500, body = ErrorBody, description = "`backup_failed`: the copy could not be made or opened"),
    ))]
pub async fn store_backup(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<BackupRequest>,
) -> Result<Json<Value>, ApiError> {
    caller.require(Role::Admin)?;
    let dest = std::path::PathBuf::from(req.dest.trim());
    let made = match hub.backup(&dest).await {
        Ok(m) => m,
        Err(e @ crate::Error::Usage(_)) => return Err(e.into()),
        Err(e) => {
            tracing::error!("backup to {} failed: {e}", dest.display());
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "backup_failed",
                e.to_string(),
            ));
        }
    };
    tracing::info!(dest = %made.dest.display(), bytes = made.bytes, who = %caller.name, "store backed up");
    Ok(Json(serde_json::to_value(&made).map_err(|e| {
        crate::Error::Internal(format!("encode the backup report: {e}"))
    })?))
}
