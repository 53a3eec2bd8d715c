//! What travels in the metadata of every call: the caller's rank and the cluster token, and
//! the server's check of the token.

use crate::cluster::TokenError;
use std::sync::Arc;

use tonic::codegen::http::HeaderMap;
use tonic::metadata::AsciiMetadataValue;
use tonic::{Request, Status};

/// Metadata key of the caller's rank (on `Deliver`).
pub(super) const RANK_KEY: &str = "x-estimator-rank";

/// Metadata key of the cluster token.
pub(crate) const TOKEN_KEY: &str = "x-estimator-cluster-token";

/// The token as it goes on the wire: refuses an empty one (it would check nothing) and one
/// that is not printable ASCII (HTTP/2 header values cannot hold it).
pub(crate) fn token_value(token: &str) -> Result<AsciiMetadataValue, TokenError> {
    if token.is_empty() {
        return Err(TokenError::Empty);
    }
    let printable = token.bytes().all(|b| (0x20..0x7f).contains(&b));
    match AsciiMetadataValue::try_from(token) {
        Ok(value) if printable => Ok(value),
        _ => Err(TokenError::NotPrintable),
    }
}

/// `message` as a request from `rank`, carrying `token` when there is one.
pub(super) fn outgoing<T>(
    message: T,
    rank: usize,
    token: Option<&AsciiMetadataValue>,
) -> Request<T> {
    let mut request = Request::new(message);
    let metadata = request.metadata_mut();
    metadata.insert(RANK_KEY, AsciiMetadataValue::from(rank));
    if let Some(token) = token {
        metadata.insert(TOKEN_KEY, token.clone());
    }
    request
}

/// The metadata of [`outgoing`] as HTTP headers, for a call made without the generated client.
pub(super) fn outgoing_headers(rank: usize, token: Option<&AsciiMetadataValue>) -> HeaderMap {
    let (metadata, _, ()) = outgoing((), rank, token).into_parts();
    metadata.into_headers()
}

/// The caller's rank from a request's headers.
pub(super) fn caller_rank(headers: &HeaderMap) -> Result<usize, Status> {
    headers
        .get(RANK_KEY)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| Status::invalid_argument(format!("no valid {RANK_KEY} in the metadata")))
}

/// The server's interceptor: with an `expected` token, refuses every call that does not carry
/// it as [`tonic::Code::Unauthenticated`]; without one, lets everything through.
pub(crate) fn check_token(
    expected: Option<Arc<[u8]>>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone + Send + Sync + 'static {
    move |request: Request<()>| {
        let Some(expected) = &expected else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get(TOKEN_KEY)
            .map_or(&[][..], |value| value.as_bytes());
        if constant_time_eq(expected, given) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(format!(
                "missing or wrong cluster token ({TOKEN_KEY})"
            )))
        }
    }
}

/// Whether `expected == given`, in a time that depends only on their lengths: how many
/// leading bytes of a guess are right cannot be measured.
pub(super) fn constant_time_eq(expected: &[u8], given: &[u8]) -> bool {
    let mut difference = u8::from(expected.len() != given.len());
    for (i, &e) in expected.iter().enumerate() {
        difference |= e ^ given.get(i).copied().unwrap_or(!e);
    }
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_equal_only_when_identical() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret!"));
        assert!(!constant_time_eq(b"secret", b"secre"));
        assert!(!constant_time_eq(b"secret", b""));
    }

    #[test]
    fn empty_and_non_ascii_tokens_are_refused() {
        assert!(matches!(token_value(""), Err(TokenError::Empty)));
        assert!(token_value("jeton-\u{e9}").is_err());
        assert!(token_value("a\tb").is_err());
        assert_eq!(token_value("s3cret").unwrap(), "s3cret");
    }

    #[test]
    fn the_interceptor_wants_the_exact_token() {
        let token = token_value("s3cret").unwrap();
        let mut check = check_token(Some(Arc::from(&b"s3cret"[..])));
        assert!(check(outgoing((), 1, Some(&token))).is_ok());
        let missing = check(outgoing((), 1, None)).unwrap_err();
        assert_eq!(missing.code(), tonic::Code::Unauthenticated);
        let wrong = token_value("s3creT").unwrap();
        assert!(check(outgoing((), 1, Some(&wrong))).is_err());
        let mut open = check_token(None);
        assert!(open(outgoing((), 1, None)).is_ok());
    }

    #[test]
    fn the_rank_travels_in_the_metadata() {
        let token = token_value("s3cret").unwrap();
        let headers = outgoing_headers(3, Some(&token));
        assert_eq!(caller_rank(&headers).unwrap(), 3);
        assert_eq!(headers.get(TOKEN_KEY).unwrap(), "s3cret");
        let status = caller_rank(&HeaderMap::new()).unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
    }
}
