//! The one long-lived `Deliver` stream that carries every message to a peer, in order.

use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tonic::body::Body;
use tonic::codegen::http::{header, HeaderMap, HeaderValue, Method, Request, Uri};
use tonic::codegen::Service;
use tonic::transport::Channel;
use tonic::Status;

use super::config::MAX_MESSAGE_BYTES;
use super::deliver_framing::{read_ack, EnvelopeBody, Outgoing, DELIVER_PATH};
use super::dial::{chain, Caller};
use super::heartbeat::WithHeartbeats;
use super::metadata::outgoing_headers;
use crate::distribute::collective_fault::{CollectiveFault, Result};
use crate::distribute::transport::PAYLOAD_POOL;

/// The stream of messages to one peer.
pub(super) struct Outbound {
    peer: usize,
    /// Feeds the stream; dropped to close it.
    messages: Option<UnboundedSender<Outgoing>>,
    /// Messages queued so far.
    sent: u64,
    /// The call: its answer is how many messages the peer received.
    call: Option<JoinHandle<std::result::Result<u64, Status>>>,
    /// Why the call ended early, once it has.
    failure: Arc<Mutex<Option<String>>>,
}

impl Outbound {
    /// Opens the stream to `peer` over `channel`, on the current tokio runtime.
    pub(super) fn open(caller: &Caller, peer: usize, channel: Channel) -> Self {
        let (tx, rx) = unbounded_channel();
        let headers = outgoing_headers(caller.rank, caller.token.as_ref());
        let failure = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&failure);
        let heartbeat = caller.heartbeat;
        let watch = Arc::clone(&caller.watch);
        let call = tokio::spawn(async move {
            let answer = deliver(channel, headers, rx, heartbeat).await;
            if let Err(status) = &answer {
                let reason = format!("{:?}: {}", status.code(), status.message());
                // The peer is gone (crashed, or replaced by a restarted process): waits for
                // it, or behind it, end at once.
                watch.ended(peer, Some(format!("the stream to it broke: {reason}")));
                *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
            }
            answer
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
        check_size(me, self.peer, payload.len())?;
        // `Bytes` takes over the vector's buffer: no copy; it goes back to the payload pool
        // once written.
        let queued = self
            .messages
            .as_ref()
            .is_some_and(|tx| tx.send((tag, PAYLOAD_POOL.bytes(payload))).is_ok());
        if !queued {
            return Err(self.lost(me, tag));
        }
        self.sent += 1;
        Ok(())
    }

    fn lost(&self, me: usize, tag: u64) -> CollectiveFault {
        let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        let reason = failure.as_deref().unwrap_or("its stream closed");
        lost_before_sending(me, self.peer, tag, reason)
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
                return Err(CollectiveFault::peer(
                    peer,
                    format!("did not acknowledge rank {me}'s messages within {timeout:?}"),
                ))
            }
            Ok(Err(join)) => {
                return Err(CollectiveFault::peer(
                    peer,
                    format!("the stream from rank {me} failed: {join}"),
                ))
            }
            Ok(Ok(Err(status))) => {
                return Err(CollectiveFault::peer(
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
        check_received(me, peer, received, self.sent)
    }
}

/// Refuses a message of `len` bytes from rank `me` to `peer` over the size limit.
pub(super) fn check_size(me: usize, peer: usize, len: usize) -> Result<()> {
    if len > MAX_MESSAGE_BYTES {
        return Err(CollectiveFault::invalid(format!(
            "rank {me} cannot send {len} bytes to rank {peer} in one message (at most \
             {MAX_MESSAGE_BYTES})"
        )));
    }
    Ok(())
}

/// A message with `tag` that rank `me` could not send to `peer`, whose connection ended for
/// `reason`.
pub(super) fn lost_before_sending(
    me: usize,
    peer: usize,
    tag: u64,
    reason: &str,
) -> CollectiveFault {
    CollectiveFault::peer(
        peer,
        format!("connection lost ({reason}) before rank {me} could send it tag {tag:#x}"),
    )
}

/// Checks that `peer` acknowledged as `received` every one of the `sent` messages rank `me`
/// sent it.
pub(super) fn check_received(me: usize, peer: usize, received: u64, sent: u64) -> Result<()> {
    if received != sent {
        return Err(CollectiveFault::peer(
            peer,
            format!("received {received} of the {sent} messages rank {me} sent it"),
        ));
    }
    Ok(())
}

/// The `Deliver` call: streams `messages` until the sender closes them, then returns how many
/// the peer acknowledged.
async fn deliver(
    mut channel: Channel,
    headers: HeaderMap,
    messages: UnboundedReceiver<Outgoing>,
    heartbeat: Duration,
) -> std::result::Result<u64, Status> {
    let body = WithHeartbeats::new(EnvelopeBody::new(messages), heartbeat);
    let mut request = Request::new(Body::new(body));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = Uri::from_static(DELIVER_PATH);
    *request.headers_mut() = headers;
    let grpc = HeaderValue::from_static("application/grpc");
    request.headers_mut().insert(header::CONTENT_TYPE, grpc);
    let trailers = HeaderValue::from_static("trailers");
    request.headers_mut().insert(header::TE, trailers);
    let unavailable = |e: tonic::transport::Error| Status::unavailable(chain(&e));
    poll_fn(|cx| channel.poll_ready(cx))
        .await
        .map_err(unavailable)?;
    let response = channel.call(request).await.map_err(unavailable)?;
    let (head, body) = response.into_parts();
    read_ack(&head.headers, body).await
}
