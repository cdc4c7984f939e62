//! Who a request comes from: `Authorization: Bearer TOKEN`, checked
//! against the store (hash, constant time, not revoked or expired), else
//! 401 before the handler runs. The token's name is the identity — for
//! approver lists, self-approval and the audit trail — except for the
//! local token `strands serve` leaves for the CLI, which acts for the
//! person the CLI names (`X-Strands-As`). What a role may do is checked by
//! [`Caller::require`].

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::error::ApiError;
use crate::hub::Hub;
use crate::model::token;

/// The header the local CLI token names its person in.
pub const ACT_AS: &str = "x-strands-as";

pub use crate::hub::caller::Caller;

/// The bearer token of a request, if it sends one.
pub fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(axum::http::header::AUTHORIZATION)?;
    let value = value.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

impl FromRequestParts<Hub> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, hub: &Hub) -> Result<Self, ApiError> {
        let Some(presented) = bearer(parts) else {
            return Err(ApiError::unauthorized(
                "no token: send `Authorization: Bearer TOKEN` (make one with `strands tokens create`)",
            ));
        };
        let Some(record) = crate::hub::tokens::authenticate(&hub.store, presented).await? else {
            return Err(ApiError::unauthorized(
                "the token is not valid (unknown, revoked or expired)",
            ));
        };
        let mut name = record.name.clone();
        if let Some(person) = parts.headers.get(ACT_AS) {
            if !record.delegate {
                return Err(ApiError::forbidden(format!(
                    "`{}` may not act for someone else ({ACT_AS})",
                    record.name
                )));
            }
            let person = person.to_str().unwrap_or_default().trim();
            if !token::valid_name(person) {
                return Err(ApiError::bad_request(format!(
                    "{ACT_AS} must be a name of letters, digits, `-`, `_`, `.`, `:` or `@`"
                )));
            }
            name = person.to_string();
        }
        Ok(Caller {
            name,
            role: record.role,
            idp_groups: Vec::new(),
        })
    }
}
