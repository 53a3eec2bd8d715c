//! Reaching a peer: connecting (retrying while it is not up yet) and the handshake.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::Channel;
use tonic::Code;

use super::collective_proto::collective_client::CollectiveClient;
use super::collective_proto::HelloRequest;
use super::config::{endpoint, MAX_MESSAGE_BYTES};
use super::metadata::{outgoing, TokenRefusals};
use crate::cluster::{CLUSTER_TOKEN, CLUSTER_TOKEN_FILE};
use crate::distribute::collective_fault::{CollectiveFault, Result};
use crate::distribute::transport::tls::{tls_refusal, ClusterTls};

/// Who is calling, and with which token.
#[derive(Clone)]
pub(super) struct Caller {
    pub(super) rank: usize,
    pub(super) world_size: usize,
    pub(super) token: Option<AsciiMetadataValue>,
    /// Mutual TLS, when the cluster uses it.
    pub(super) tls: Option<std::sync::Arc<ClusterTls>>,
    /// How often an idle stream carries a heartbeat.
    pub(super) heartbeat: std::time::Duration,
    /// Where a broken stream to a peer is recorded: the peer is gone.
    pub(super) watch: std::sync::Arc<super::peer_watch::PeerWatch>,
    /// The calls this rank's server refused for their token.
    pub(super) token_refusals: Arc<TokenRefusals>,
    /// The peer whose server refused this rank's token, once one has.
    pub(super) token_refused_by: Arc<Mutex<Option<usize>>>,
}

/// Why an attempt to reach a peer failed.
enum Failure {
    /// The peer answered and refused: trying again cannot help.
    Refused(String),
    /// The peer is not up (yet), or the connection failed: worth another try.
    Transient(String),
}

/// Connects to `peer` at `address` and shakes hands, retrying with backoff until `deadline`
/// while the peer is not up yet. A refused handshake is not retried.
pub(super) async fn dial(
    caller: &Caller,
    peer: usize,
    address: &str,
    deadline: Instant,
    connect_timeout: Duration,
) -> Result<Channel> {
    let left = deadline.saturating_duration_since(Instant::now());
    let endpoint = endpoint(
        address,
        left.max(Duration::from_millis(1)),
        caller.tls.as_deref(),
    )
    .map_err(|source| CollectiveFault::Address { rank: peer, source })?;
    let mut backoff = Duration::from_millis(20);
    loop {
        let attempt = async {
            let channel = endpoint
                .connect()
                .await
                .map_err(|e| match tls_refusal(&e) {
                    Some(refusal) => Failure::Refused(format!("at {address}: {refusal}")),
                    None => Failure::Transient(chain(&e)),
                })?;
            let mut client = CollectiveClient::new(channel.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES);
            let hello = HelloRequest {
                rank: caller.rank as u32,
                world_size: caller.world_size as u32,
            };
            let reply = client
                .hello(outgoing(hello, caller.rank, caller.token.as_ref()))
                .await
                .map_err(|status| match (tls_refusal(&status), status.code()) {
                    (Some(refusal), _) => Failure::Refused(format!("at {address}: {refusal}")),
                    (None, Code::Unauthenticated) => {
                        let mut refused_by = caller
                            .token_refused_by
                            .lock()
                            .unwrap_or_else(|e| e.into_inner());
                        refused_by.get_or_insert(peer);
                        Failure::Refused(format!(
                            "refused the handshake of rank {}: {}",
                            caller.rank,
                            status.message()
                        ))
                    }
                    (
                        None,
                        Code::FailedPrecondition
                        | Code::InvalidArgument
                        | Code::PermissionDenied
                        | Code::Unimplemented,
                    ) => Failure::Refused(format!(
                        "refused the handshake of rank {}: {}",
                        caller.rank,
                        status.message()
                    )),
                    (None, _) => {
                        Failure::Transient(format!("handshake failed: {}", status.message()))
                    }
                })?
                .into_inner();
            if reply.rank as usize != peer || reply.world_size as usize != caller.world_size {
                return Err(Failure::Refused(format!(
                    "the server at {address} is rank {} of {}, where rank {} expects rank \
                     {peer} of {}: are the addresses the same, in rank order, on every process?",
                    reply.rank, reply.world_size, caller.rank, caller.world_size
                )));
            }
            Ok(channel)
        };
        let last_error = match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok(channel)) => return Ok(channel),
            Ok(Err(Failure::Refused(refusal))) => {
                return Err(CollectiveFault::Refused {
                    rank: peer,
                    message: refusal,
                })
            }
            Ok(Err(Failure::Transient(error))) => error,
            Err(_) => "no answer".to_string(),
        };
        if Instant::now() + backoff >= deadline {
            // The peer may have come up, been refused by this rank's server for its token and
            // left before this rank reached it: a configuration error, which no restart cures.
            if let Some(refused) = caller.token_refusals.claiming(peer) {
                let from = refused
                    .from
                    .map_or_else(|| "an unknown address".to_string(), |a| a.to_string());
                return Err(CollectiveFault::Refused {
                    rank: peer,
                    message: format!(
                        "could not be reached at {address} within {connect_timeout:?}, and \
                         rank {} refused a call from {from} claiming to be rank {peer} for a \
                         missing or wrong cluster token: every task of a cluster needs the \
                         same {CLUSTER_TOKEN} (or {CLUSTER_TOKEN_FILE})",
                        caller.rank
                    ),
                });
            }
            return Err(CollectiveFault::peer(
                peer,
                format!(
                    "could not be reached at {address} within {connect_timeout:?} (last \
                     error: {last_error})"
                ),
            ));
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// An error with its sources: tonic's transport errors say little at the top level.
pub(super) fn chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
