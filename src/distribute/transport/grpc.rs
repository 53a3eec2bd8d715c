//! A transport between processes over gRPC (tonic on HTTP/2).
//!
//! Every rank runs a `Collective` server (`proto/collective.proto`) and holds one long-lived
//! client stream (`Deliver`) to every other rank's server, so messages to a peer arrive in the
//! order they were sent. `send` queues onto that stream and returns; the server hands what it
//! receives to the peer's inbox, where `recv` matches tags. `Hello` (the handshake) goes
//! through the code tonic generates; `Deliver` carries the same protobuf messages framed by
//! hand ([`deliver_framing`]) so that payloads are not copied on the way. Messages to a peer on the
//! same machine go over a Unix-domain socket instead ([`lane`]), into the same inbox.

mod address;
mod admission;
mod collective_proto;
mod config;
mod control;
mod deliver_framing;
mod dial;
mod heartbeat;
mod inbound;
mod inbox;
mod join;
mod lane;
mod metadata;
mod outbound;
mod payload;
mod peer_watch;
mod service;
mod shutdown;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub(crate) use address::listen_address;
pub(crate) use admission::Admitted;
pub use config::GrpcConfig;
pub(crate) use config::MAX_MESSAGE_BYTES;
pub(crate) use config::{endpoint, serve_grpc};
pub(crate) use metadata::TOKEN_KEY;

use super::point_to_point::{check_peer, fill_and_send};
use super::{Lent, Onward, Transport};
use crate::distribute::collective_fault::{CollectiveFault, Result};
use inbound::Inbound;
use inbox::Inbox;
use lane::Lanes;
use metadata::TokenRefusals;
pub(crate) use metadata::{check_token, token_value};
use outbound::Outbound;
use payload::Payload;

/// Worker threads of each transport's tokio runtime: enough for the server and the streams to
/// peers to progress side by side; more would only compete with training for the cores.
const RUNTIME_THREADS: usize = 2;

/// How long dropping the runtime waits for its tasks once every message is delivered.
const RUNTIME_GRACE: Duration = Duration::from_millis(500);

/// One rank's end of a cluster connected over gRPC; see the docs of
/// `src/distribute/transport/grpc.rs`.
///
/// Owns a tokio runtime: create, use and drop it from ordinary threads, not from async code.
/// A message may hold up to 1 GiB.
///
/// Dropping it shuts down as [`shutdown`](GrpcTransport::shutdown) does, logging instead of
/// returning errors (and without waiting for peers while the thread panics).
pub struct GrpcTransport {
    rank: usize,
    world_size: usize,
    peer_timeout: Duration,
    local_addr: SocketAddr,
    /// The stream to each peer (`None` at this rank's own index).
    outbound: Vec<Option<Outbound>>,
    /// The messages from each peer (`None` at this rank's own index).
    inboxes: Vec<Option<Inbox>>,
    /// The state of every peer's stream to this rank's server.
    inbound: Arc<Inbound>,
    /// The same-host lanes: to and from the peers on this machine.
    lanes: Lanes,
    /// Stops the server gracefully: it finishes the calls under way (sends their answers).
    stop_server: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
    /// `None` once shut down.
    runtime: Option<Runtime>,
    /// The peer this rank's last failed `recv` or `send` named: the one it gives up on.
    gave_up_on: Option<usize>,
}

impl std::fmt::Debug for GrpcTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcTransport")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("local_addr", &self.local_addr)
            .field("peer_timeout", &self.peer_timeout)
            .finish_non_exhaustive()
    }
}

impl GrpcTransport {
    /// The address this rank's server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The peers this rank sends to over a same-host lane (a Unix-domain socket) instead
    /// of gRPC, in rank order; see [`GrpcConfig::same_host_lane`].
    pub fn same_host_peers(&self) -> Vec<usize> {
        self.lanes.peers()
    }

    /// The peers whose same-host lane from this rank carries large messages through
    /// memory shared with them, in rank order; see [`GrpcConfig::shared_memory`].
    pub fn shared_memory_peers(&self) -> Vec<usize> {
        self.lanes.sharing_memory()
    }

    /// How long `recv` waits for a peer.
    pub fn peer_timeout(&self) -> Duration {
        self.peer_timeout
    }

    /// Changes how long `recv` waits for a peer.
    pub fn set_peer_timeout(&mut self, timeout: Duration) {
        self.peer_timeout = timeout;
    }
}

impl Transport for GrpcTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        check_peer(self, to, "send to")?;
        let me = self.rank;
        let sent = match &mut self.outbound[to] {
            _ if self.lanes.carries(to) => self.lanes.send(to, tag, payload),
            Some(stream) => stream.send(me, tag, payload),
            None => Err(CollectiveFault::peer(
                to,
                format!("no stream from rank {me}"),
            )),
        };
        self.note_failure(sent)
    }

    fn send_filled(
        &mut self,
        to: usize,
        tag: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        if !self.lanes.carries(to) {
            return fill_and_send(self, to, tag, len, fill);
        }
        check_peer(self, to, "send to")?;
        let sent = self.lanes.send_filled(to, tag, len, fill);
        self.note_failure(sent)
    }

    fn abandon(&mut self) {
        self.give_up();
    }

    fn take_stalled_tasks(&mut self) -> usize {
        self.inbound.watch.take_stalled()
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u8>> {
        self.recv_payload(from, tag).map(Payload::into_vec)
    }

    fn recv_lent(
        &mut self,
        from: usize,
        tag: u64,
        consume: &mut dyn FnMut(Lent<'_>) -> Result<()>,
    ) -> Result<()> {
        let payload = self.recv_payload(from, tag)?;
        let consumed = consume(payload.lent());
        payload.recycle();
        consumed
    }

    fn recv_and_send_filled(
        &mut self,
        from: usize,
        tag: u64,
        onward: Onward,
        check: &mut dyn FnMut(Lent<'_>) -> Result<()>,
        fill: &mut dyn FnMut(Lent<'_>, &mut [u8]),
    ) -> Result<()> {
        let payload = self.recv_payload(from, tag)?;
        let sent = check(payload.lent()).and_then(|()| {
            let fill = &mut |out: &mut [u8]| fill(payload.lent(), out);
            self.send_filled(onward.to, onward.tag, onward.len, fill)
        });
        payload.recycle();
        sent
    }
}

impl GrpcTransport {
    /// The oldest message from `from` with `tag`, in the pieces it arrived in.
    fn recv_payload(&mut self, from: usize, tag: u64) -> Result<Payload> {
        check_peer(self, from, "receive from")?;
        let (me, timeout) = (self.rank, self.peer_timeout);
        let received = match &mut self.inboxes[from] {
            Some(inbox) => inbox.recv_payload(me, tag, timeout, &self.inbound.watch),
            None => Err(CollectiveFault::peer(
                from,
                format!("no stream to rank {me}"),
            )),
        };
        self.note_failure(received)
    }

    /// Remembers the peer a failure names, to tell the others when this rank gives up.
    fn note_failure<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(CollectiveFault::Peer { rank, .. }) = &result {
            self.gave_up_on.get_or_insert(*rank);
        }
        result
    }
}

/// How long a rank whose token a peer refused keeps serving, so that the peer's own dial
/// reaches it and is refused in turn: longer than the longest pause between a rank's dials.
const TOKEN_REFUSAL_LINGER: Duration = Duration::from_secs(2);

/// Keeps the server of a rank whose token `peer` refused answering (with refusals) until
/// `peer` has called and been refused too, for at most [`TOKEN_REFUSAL_LINGER`]. Without it
/// the refused rank leaves at once, and `peer`, finding no one at its address, would wait
/// out its start-up timeout and report a peer that could not be reached — a retryable
/// failure — instead of the token.
fn linger_for_token_refusal(refusals: &TokenRefusals, peer: usize) {
    let deadline = std::time::Instant::now() + TOKEN_REFUSAL_LINGER;
    while refusals.claiming(peer).is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn out_of_range(rank: usize, addresses: &[String]) -> CollectiveFault {
    CollectiveFault::invalid(format!(
        "rank {rank} is outside the {} addresses given",
        addresses.len()
    ))
}
