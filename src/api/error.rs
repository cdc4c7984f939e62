//! Every refusal of the API is one shape, `{"error": {"code", "message"}}`,
//! with the status that fits: the crate's errors and the intake's refusals
//! are mapped once by the hub ([`crate::hub::problem`], which the web
//! inbox shares), axum's extractor rejections here, so no handler words an
//! error or picks a status itself.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// A refused request: nothing changed (the hub's, worded here as JSON).
pub use crate::hub::problem::Problem as ApiError;

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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let (Some(Value::Object(more)), Some(obj)) = (self.details, error.as_object_mut()) {
            obj.extend(more);
        }
        (self.status, axum::Json(json!({ "error": error }))).into_response()
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
