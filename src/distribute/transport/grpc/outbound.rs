//! The client side: reaching a peer (retrying until it is up), the handshake, and the one
//! long-lived stream that carries every message to it in order.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Status};

use super::config::{endpoint, MAX_MESSAGE_BYTES};
use super::metadata::outgoing;
use super::proto::collective_client::CollectiveClient;
use super::proto::{Envelope, HelloRequest};
use crate::distribute::error::{DistributeError, Result};

/// Who is calling, and with which token.
#[derive(Clone)]
pub(super) struct Caller {
    pub(super) rank: usize,
    pub(super) world_size: usize,
    pub(super) token: Option<AsciiMetadataValue>,
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
) -> Result<CollectiveClient<Channel>> {
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let endpoint = endpoint(uri, left.max(Duration::from_millis(1)))
        .map_err(|message| DistributeError::invalid(format!("rank {peer}: {message}")))?;
    let mut backoff = Duration::from_millis(20);
    loop {
        let attempt = async {
            let channel = endpoint
                .connect()
                .await
                .map_err(|e| Failure::Transient(chain(&e)))?;
            let mut client = CollectiveClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES);
            let hello = HelloRequest {
                rank: caller.rank as u32,
                world_size: caller.world_size as u32,
            };
            let reply = client
                .hello(outgoing(hello, caller.rank, caller.token.as_ref()))
                .await
                .map_err(|status| match status.code() {
                    Code::FailedPrecondition
                    | Code::InvalidArgument
                    | Code::Unauthenticated
                    | Code::PermissionDenied
                    | Code::Unimplemented => Failure::Refused(format!(
                        "refused the handshake of rank {}: {}",
                        caller.rank,
                        status.message()
                    )),
                    _ => Failure::Transient(format!("handshake failed: {}", status.message())),
                })?
                .into_inner();
            if reply.rank as usize != peer || reply.world_size as usize != caller.world_size {
                return Err(Failure::Refused(format!(
                    "the server at {address} is rank {} of {}, where rank {} expects rank \
                     {peer} of {}: are the addresses the same, in rank order, on every process?",
                    reply.rank, reply.world_size, caller.rank, caller.world_size
                )));
            }
            Ok(client)
        };
        let last_error = match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(Failure::Refused(refusal))) => return Err(DistributeError::peer(peer, refusal)),
            Ok(Err(Failure::Transient(error))) => error,
            Err(_) => "no answer".to_string(),
        };
        if Instant::now() + backoff >= deadline {
            return Err(DistributeError::peer(
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
fn chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The stream of messages to one peer.
pub(super) struct Outbound {
    peer: usize,
    /// Feeds the stream; dropped to close it.
    messages: Option<UnboundedSender<Envelope>>,
    /// Messages queued so far.
    sent: u64,
    /// The call: its answer is how many messages the peer received.
    call: Option<JoinHandle<std::result::Result<u64, Status>>>,
    /// Why the call ended early, once it has.
    failure: Arc<Mutex<Option<String>>>,
}

impl Outbound {
    /// Opens the stream to `peer` over `client`, on the current tokio runtime.
    pub(super) fn open(
        caller: &Caller,
        peer: usize,
        mut client: CollectiveClient<Channel>,
    ) -> Self {
        let (tx, rx) = unbounded_channel();
        let request = outgoing(
            UnboundedReceiverStream::new(rx),
            caller.rank,
            caller.token.as_ref(),
        );
        let failure = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&failure);
        let call = tokio::spawn(async move {
            let answer = client.deliver(request).await;
            if let Err(status) = &answer {
                *failed.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("{:?}: {}", status.code(), status.message()));
            }
            answer.map(|ack| ack.into_inner().received)
        });
        Self {
            peer,
            messages: Some(tx),
            sent: 0,
            call: Some(call),
            failure,
        }
    }

    /// Queues a message; fails at once when the stream is known to be broken.
    pub(super) fn send(&mut self, me: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        if payload.len() > MAX_MESSAGE_BYTES {
            return Err(DistributeError::invalid(format!(
                "rank {me} cannot send {} bytes to rank {} in one message (at most {})",
                payload.len(),
                self.peer,
                MAX_MESSAGE_BYTES
            )));
        }
        let envelope = Envelope {
            tag,
            // Takes over the vector's buffer: no copy.
            payload: payload.into(),
        };
        let queued = self
            .messages
            .as_ref()
            .is_some_and(|tx| tx.send(envelope).is_ok());
        if !queued {
            return Err(self.lost(me, tag));
        }
        self.sent += 1;
        Ok(())
    }

    fn lost(&self, me: usize, tag: u64) -> DistributeError {
        let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        let reason = failure.as_deref().unwrap_or("its stream closed");
        DistributeError::peer(
            self.peer,
            format!("connection lost ({reason}) before rank {me} could send it tag {tag:#x}"),
        )
    }

    /// Closes the stream: the peer acknowledges once it has received everything.
    pub(super) fn close(&mut self) {
        self.messages = None;
    }

    /// Waits (until `deadline`) for the peer to acknowledge every message sent.
    pub(super) async fn acknowledged(
        &mut self,
        me: usize,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<()> {
        self.close();
        let Some(call) = self.call.take() else {
            return Ok(());
        };
        let peer = self.peer;
        let received = match tokio::time::timeout_at(deadline, call).await {
            Err(_) => {
                return Err(DistributeError::peer(
                    peer,
                    format!("did not acknowledge rank {me}'s messages within {timeout:?}"),
                ))
            }
            Ok(Err(join)) => {
                return Err(DistributeError::peer(
                    peer,
                    format!("the stream from rank {me} failed: {join}"),
                ))
            }
            Ok(Ok(Err(status))) => {
                return Err(DistributeError::peer(
                    peer,
                    format!(
                        "connection lost ({:?}: {}) before it acknowledged rank {me}'s messages",
                        status.code(),
                        status.message()
                    ),
                ))
            }
            Ok(Ok(Ok(received))) => received,
        };
        if received != self.sent {
            return Err(DistributeError::peer(
                peer,
                format!(
                    "received {received} of the {} messages rank {me} sent it",
                    self.sent
                ),
            ));
        }
        Ok(())
    }
}
