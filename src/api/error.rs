//! Every refusal of the API is one shape, `{"error": {"code", "message"}}`,
//! with the status that fits: mapped here once from the crate's errors,
//! the intake's refusals and axum's extractor rejections, so no handler
//! words an error or picks a status itself.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::hub::StartRefusal;
use crate::model::Refusal;

/// A refused request: nothing changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    /// Stable, for programs: `not_found`, `already_answered`, ...
    pub code: &'static str,
    /// For people: what is wrong and what would work.
    pub message: String,
    /// More, for programs (who answered first and when, ...).
    pub details: Option<Value>,
}

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `bad_request`, `unauthorized`, `forbidden`, `not_found`,
    /// `already_answered`, `not_open`, `body_too_large`, `bad_answer`,
    /// `rate_limited`, ...
    pub code: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }
    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }
    fn with(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let (Some(Value::Object(more)), Some(obj)) = (self.details, error.as_object_mut()) {
            obj.extend(more);
        }
        (self.status, axum::Json(json!({ "error": error }))).into_response()
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> ApiError {
        use crate::Error as E;
        match e {
            E::Usage(m) => ApiError::bad_request(m),
            E::Session(m) => ApiError::not_found(m),
            E::Spec(_) => ApiError::unprocessable("invalid_spec", e.to_string()),
            other => {
                // The detail goes to the log; the caller learns it failed.
                tracing::error!("API request failed: {other}");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the server could not do that; its log says why",
                )
            }
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        let message = r.to_string();
        match r {
            Refusal::NotFound => ApiError::not_found(message),
            Refusal::NotOpen(status) => {
                ApiError::conflict("not_open", message).with(json!({ "status": status }))
            }
            Refusal::Stale { open } => {
                ApiError::conflict("stale", message).with(json!({ "open_gate": open }))
            }
            Refusal::NotAllowed(_) => ApiError::forbidden(message),
            Refusal::AlreadyAnswered(a) => ApiError::conflict("already_answered", message).with(
                json!({ "by": a.by, "at": a.at, "decision": a.decision.verb(), "via": a.via }),
            ),
            Refusal::BadAnswer(_) => ApiError::unprocessable("bad_answer", message),
            Refusal::TimedOut { at, .. } => {
                ApiError::conflict("timed_out", message).with(json!({ "timed_out_at": at }))
            }
        }
    }
}

impl From<StartRefusal> for ApiError {
    fn from(r: StartRefusal) -> ApiError {
        let message = r.to_string();
        match r {
            StartRefusal::NoWorkflows | StartRefusal::Unknown { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_workflow", message)
            }
            StartRefusal::Invalid { .. } => ApiError::unprocessable("invalid_spec", message),
            StartRefusal::CannotRun(_) => ApiError::unprocessable("cannot_run", message),
            StartRefusal::BadInputs { .. } => ApiError::unprocessable("bad_inputs", message),
        }
    }
}

impl From<crate::hub::tokens::TokenRefusal> for ApiError {
    fn from(r: crate::hub::tokens::TokenRefusal) -> ApiError {
        use crate::hub::tokens::TokenRefusal as T;
        match r {
            T::NameTaken(_) => ApiError::conflict("name_taken", r.to_string()),
            T::BadName(_) | T::BadExpiry => ApiError::unprocessable("bad_token", r.to_string()),
        }
    }
}

fn rejection(status: StatusCode, text: String) -> ApiError {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            status,
            "body_too_large",
            "the request body is larger than this server accepts (STRANDS_MAX_BODY_BYTES)",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            status,
            "unsupported_media_type",
            "send JSON with `Content-Type: application/json`",
        ),
        StatusCode::UNPROCESSABLE_ENTITY => ApiError::unprocessable("bad_field", text),
        _ => ApiError::new(StatusCode::BAD_REQUEST, "bad_request", text),
    }
}

/// `axum::Json`, refusing in the API's shape (400 malformed, 413 too
/// large, 415 not JSON, 422 a field of the wrong kind).
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(e) => Err(json_rejection(e)),
        }
    }
}

fn json_rejection(e: JsonRejection) -> ApiError {
    rejection(e.status(), e.body_text())
}

/// `axum::extract::Query`, refusing in the API's shape.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(e) => Err(query_rejection(e)),
        }
    }
}

fn query_rejection(e: QueryRejection) -> ApiError {
    ApiError::bad_request(e.body_text())
}

/// `axum::extract::Path`, refusing in the API's shape.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(e) => Err(path_rejection(e)),
        }
    }
}

fn path_rejection(e: PathRejection) -> ApiError {
    ApiError::bad_request(e.body_text())
}
