//! Cross-origin requests as TF Serving answers them: a preflight (`OPTIONS`) to a model's
//! URL is answered when it names the origin, and with `--rest-api-enable-cors-support`
//! every answer of the model URLs lets any origin read it.

use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN, ORIGIN,
};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::ServeError;

/// A preflight: answered (200, no body) when its `Origin` is an http(s) origin, as TF
/// Serving checks it; else TF Serving's refusal.
pub(crate) async fn preflight(headers: HeaderMap) -> Response {
    let origin = headers.get(ORIGIN).and_then(|o| o.to_str().ok());
    match origin {
        Some(origin) if origin.contains("http://") || origin.contains("https://") => {
            ().into_response()
        }
        _ => ServeError::BadRequest("Origin header is missing in CORS preflight".into())
            .into_response(),
    }
}

/// `response` with TF Serving's CORS headers: any origin, `POST` and `GET`, a
/// `Content-Type` header.
pub(crate) async fn allow_any_origin(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, GET"),
    );
    headers.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type"),
    );
    response
}
