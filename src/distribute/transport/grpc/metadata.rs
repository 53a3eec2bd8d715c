//! What travels in the metadata of every call: the caller's rank and the cluster token, and
//! the server's check of the token.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::cluster::{Error as ClusterError, CLUSTER_TOKEN, CLUSTER_TOKEN_FILE};

use tonic::codegen::http::HeaderMap;
use tonic::metadata::AsciiMetadataValue;
use tonic::{Request, Status};

/// Metadata key of the caller's rank (on `Deliver`).
pub(super) const RANK_KEY: &str = "x-estimator-rank";

/// Metadata key of the cluster token.
pub(crate) const TOKEN_KEY: &str = "x-estimator-cluster-token";

/// The token as it goes on the wire: refuses an empty one (it would check nothing) and one
/// that is not printable ASCII (HTTP/2 header values cannot hold it).
pub(crate) fn token_value(token: &str) -> Result<AsciiMetadataValue, ClusterError> {
    if token.is_empty() {
        return Err(ClusterError::TokenEmpty);
    }
    let printable = token.bytes().all(|b| (0x20..0x7f).contains(&b));
    match AsciiMetadataValue::try_from(token) {
        Ok(value) if printable => Ok(value),
        _ => Err(ClusterError::TokenNotPrintable),
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

/// What a call refused for its token is told, and what the refusing side logs.
const TOKEN_MISMATCH: &str = "missing or wrong cluster token";

/// Calls kept at most by [`TokenRefusals`]: what a flood of strangers adds is not logged.
const MAX_REFUSALS_KEPT: usize = 64;

/// A call a server refused for its token: where it came from, and the rank it claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenRefusal {
    pub(crate) from: Option<SocketAddr>,
    pub(crate) claimed: Option<usize>,
}

/// The calls a server refused for their token. Each new (address, claimed rank) is logged
/// once on the refusing side, naming both; a rank's `connect` reads them to tell a peer that
/// another token kept away from one that is merely down.
#[derive(Debug, Default)]
pub(crate) struct TokenRefusals {
    seen: Mutex<Vec<TokenRefusal>>,
}

impl TokenRefusals {
    fn note(&self, refusal: TokenRefusal) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let host = |r: &TokenRefusal| r.from.map(|a| a.ip());
        let known = seen
            .iter()
            .any(|r| host(r) == host(&refusal) && r.claimed == refusal.claimed);
        if known || seen.len() >= MAX_REFUSALS_KEPT {
            return;
        }
        seen.push(refusal);
        let from = refusal
            .from
            .map_or_else(|| "an unknown address".to_string(), |a| a.to_string());
        let claimed = refusal
            .claimed
            .map_or_else(|| "no rank".to_string(), |r| format!("rank {r}"));
        tracing::warn!(
            "refused a call from {from} claiming {claimed}: {TOKEN_MISMATCH} ({TOKEN_KEY}); \
             every task of a cluster needs the same {CLUSTER_TOKEN} (or {CLUSTER_TOKEN_FILE})"
        );
    }

    /// The first refused call that claimed to be `rank`.
    pub(super) fn claiming(&self, rank: usize) -> Option<TokenRefusal> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.iter().copied().find(|r| r.claimed == Some(rank))
    }
}

/// The server's interceptor: with an `expected` token, refuses every call that does not carry
/// it as [`tonic::Code::Unauthenticated`], logging it (see [`TokenRefusals`]); without one,
/// lets everything through.
pub(crate) fn check_token(
    expected: Option<Arc<[u8]>>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone + Send + Sync + 'static {
    check_token_noting(expected, Arc::default())
}

/// [`check_token`], keeping the refusals in `refusals`.
pub(super) fn check_token_noting(
    expected: Option<Arc<[u8]>>,
    refusals: Arc<TokenRefusals>,
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
            return Ok(request);
        }
        refusals.note(TokenRefusal {
            from: request.remote_addr(),
            claimed: caller_rank(request.metadata().as_ref()).ok(),
        });
        Err(Status::unauthenticated(format!(
            "{TOKEN_MISMATCH} ({TOKEN_KEY}): every task of a cluster needs the same \
             {CLUSTER_TOKEN} (or {CLUSTER_TOKEN_FILE})"
        )))
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
        assert!(matches!(token_value(""), Err(ClusterError::TokenEmpty)));
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
        let refused = check(outgoing((), 1, Some(&wrong))).unwrap_err();
        assert!(
            refused.message().contains("ESTIMATOR_CLUSTER_TOKEN"),
            "{refused:?}"
        );
        let mut open = check_token(None);
        assert!(open(outgoing((), 1, None)).is_ok());
    }

    #[test]
    fn refusals_are_kept_once_per_address_and_claimed_rank() {
        let refusals = Arc::new(TokenRefusals::default());
        let mut check = check_token_noting(Some(Arc::from(&b"s3cret"[..])), Arc::clone(&refusals));
        let at = |port: u16| Some(SocketAddr::from(([127, 0, 0, 1], port)));
        for (port, rank) in [(4000, 1), (4001, 1), (4002, 2)] {
            let mut request = outgoing((), rank, None);
            // What tonic's server puts into a request's extensions.
            let info = tonic::transport::server::TcpConnectInfo {
                local_addr: None,
                remote_addr: at(port),
            };
            request.extensions_mut().insert(info);
            assert!(check(request).is_err());
        }
        let seen = refusals.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                TokenRefusal {
                    from: at(4000),
                    claimed: Some(1)
                },
                TokenRefusal {
                    from: at(4002),
                    claimed: Some(2)
                }
            ]
        );
        assert_eq!(refusals.claiming(2).unwrap().from, at(4002));
        assert_eq!(refusals.claiming(0), None);
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
