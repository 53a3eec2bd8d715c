//! [`ServeError`]: why a request failed, with the HTTP status TF Serving gives it.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use estimator::{Error, ErrorKind};

/// A failed request: the status and the message of TF Serving's `{"error": "..."}` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServeError {
    /// 400: the request is malformed or does not fit the signature.
    BadRequest(String),
    /// 404: no such model, version or label.
    NotFound(String),
    /// 408: the body did not arrive within the body-read timeout.
    Timeout(String),
    /// 413: the body is above the server's limit.
    TooLarge(String),
    /// 500: the model failed on a well-formed request.
    Internal(String),
    /// 503: the server cannot take the request now (a full batching queue).
    Unavailable(String),
    /// 501: a method the server does not implement (a MultiInference task's).
    Unimplemented(String),
}

impl ServeError {
    /// The HTTP status TF Serving answers it with.
    pub fn status(&self) -> StatusCode {
        match self {
            ServeError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServeError::NotFound(_) => StatusCode::NOT_FOUND,
            ServeError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            ServeError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServeError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ServeError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServeError::Unimplemented(_) => StatusCode::NOT_IMPLEMENTED,
        }
    }

    fn message(&self) -> &str {
        match self {
            ServeError::BadRequest(m)
            | ServeError::NotFound(m)
            | ServeError::Timeout(m)
            | ServeError::TooLarge(m)
            | ServeError::Internal(m)
            | ServeError::Unavailable(m)
            | ServeError::Unimplemented(m) => m,
        }
    }
}

impl From<Error> for ServeError {
    /// A request that does not fit the signature is the client's to fix (400); anything
    /// else failed on the server's side (500).
    fn from(error: Error) -> Self {
        match error.kind() {
            ErrorKind::Request => ServeError::BadRequest(error.to_string()),
            _ => ServeError::Internal(error.to_string()),
        }
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ServeError {}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message() });
        let mut response = (self.status(), Json(body)).into_response();
        if matches!(self, ServeError::Timeout(_)) {
            // The rest of the body may still come: the connection cannot carry another
            // request, so the client is told it closes.
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        response
    }
}
