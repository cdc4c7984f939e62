//! `POST /api/v1/answers`: one decision for several gates
//! ([`crate::hub::batch`]): each answered on its own through the one way
//! in, audited on its own; a gate that needs more than one answer (a
//! quorum still to gather, a passkey, a form) is left out, saying why.
//! `strands answer ID…` goes through it when the CLI talks to a server.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ErrorBody};
use crate::hub::batch::{self, Item, Outcome};
use crate::hub::door::{Door, DoorAnswer};
use crate::hub::Hub;
use crate::model::token::Role;
use crate::model::Decision;

/// At most this many gates in one batch.
pub const MAX: usize = 500;

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// `approve` or `reject`.
    pub decision: String,
    /// `reject`: the one reason recorded with every rejection.
    #[serde(default)]
    pub reason: Option<String>,
    /// The gates: `{"session": ID, "gate": HANDLE?}` each (the only open
    /// gate when `gate` is absent).
    #[schema(value_type = Vec<Object>)]
    pub gates: Vec<Item>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchOutcome {
    /// One per gate, in order: `result` is `recorded`, `left_out` or
    /// `refused`, with a `message`.
    #[schema(value_type = Vec<Object>)]
    pub outcomes: Vec<Outcome>,
    pub recorded: usize,
    pub left_out: usize,
    pub refused: usize,
}

/// Approves or rejects several gates at once, each on its own.
#[utoipa::path(post, path = "/answers", tag = "sessions",
    request_body = BatchRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, body = BatchOutcome, description = "what became of each gate"),
        (status = 400, body = ErrorBody, description = "no gates, too many, or a decision a batch does not take"),
    ))]
pub async fn answer_many(
    State(hub): State<Hub>,
    caller: Caller,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Json<BatchOutcome>, ApiError> {
    caller.require(Role::Approver)?;
    let decision = match req.decision.as_str() {
        "approve" if req.reason.is_none() => Decision::Approve,
        "reject" => Decision::Reject {
            reason: req.reason.filter(|r| !r.trim().is_empty()),
        },
        "approve" => {
            return Err(ApiError::bad_request(
                "`reason` comes with `reject`".to_string(),
            ))
        }
        other => {
            return Err(ApiError::bad_request(format!(
                "a batch takes `approve` or `reject`, not `{other}`: answer other decisions one gate at a time"
            )))
        }
    };
    if req.gates.is_empty() || req.gates.len() > MAX {
        return Err(ApiError::bad_request(format!(
            "`gates` holds {} gates; a batch takes 1 to {MAX}",
            req.gates.len()
        )));
    }
    let how = DoorAnswer::new("", &caller.name, Door::Api, decision)
        .idp_groups(caller.idp_groups.iter().cloned());
    let outcomes = batch::decide(&hub, &how, &req.gates, true).await?;
    let count = |r: batch::Fate| outcomes.iter().filter(|o| o.result == r).count();
    Ok(Json(BatchOutcome {
        recorded: count(batch::Fate::Recorded),
        left_out: count(batch::Fate::LeftOut),
        refused: count(batch::Fate::Refused),
        outcomes,
    }))
}
