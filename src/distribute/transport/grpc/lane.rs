//! The same-host lane: messages to a peer on this machine go over a Unix-domain socket
//! instead of HTTP/2, whose framing, task hops and copies cost far more than the socket.
//!
//! A peer is on this machine when its address in the cluster is a loopback IP or
//! `localhost` (see [`is_same_host`]); anything that leaves the machine stays on gRPC, with
//! its token and TLS. Every rank whose own address is local listens on a socket in this
//! user's private directory, named after the network namespace and the address, so that
//! its peers find it and ranks of other namespaces do not. Once the gRPC join succeeded,
//! each rank opens a lane to every local peer: a handshake like gRPC's `Hello` (rank,
//! world size, token), then frames of (tag, length, payload). gRPC keeps the handshake,
//! heartbeats and give-up messages; a lane that cannot be opened leaves that peer on gRPC.
//!
//! The lane's messages go into the same inbox as the peer's gRPC stream, so tag matching,
//! timeouts and liveness do not change. Closing a lane is lossless as the gRPC stream's
//! close is: the sender's last frame says how many messages it sent, and the receiver
//! answers with how many it read.

mod frame;
mod handshake;
mod listener;
mod no_lane;
mod path;
mod reader;
mod shared_ring;
mod writer;

use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(test)]
pub(super) use handshake::dial_lane;
#[cfg(test)]
pub(super) use path::LaneDirectory;

use super::address::is_same_host;
use super::inbound::Inbound;
use super::peer_watch::PeerWatch;
use super::GrpcConfig;
use crate::distribute::collective_fault::{CollectiveFault, Result};
use listener::{Acceptor, LaneListener};
use no_lane::NoLane;
use reader::InboundLanes;
use writer::LaneWriter;

/// The capacity of the shared ring of each lane: several pipelined segments of the
/// collectives (1 MiB at most each) in flight, and a few buckets of a model's gradients.
/// Memory is taken only as the ring is used; an idle ring starts over at its first byte.
const SHARED_RING_BYTES: usize = 32 << 20;

/// The lanes of one rank: its socket, the lanes it opened to its peers, and the lanes its
/// peers opened to it.
pub(super) struct Lanes {
    rank: usize,
    /// Where the peers' sockets are; `None` when lanes are off or cannot be used here.
    directory: Option<path::LaneDirectory>,
    /// This rank's socket, while it accepts lanes.
    listener: Option<LaneListener>,
    /// The lane to each peer (`None` for peers on gRPC).
    writers: Vec<Option<LaneWriter>>,
    /// The lanes into this rank.
    inbound: Arc<InboundLanes>,
    /// The shared ring each lane this rank opens offers its peer (0: none).
    ring_bytes: usize,
}

impl Lanes {
    /// Listens for lanes from the peers of `rank` on this machine, when `config` allows it
    /// and the address of `rank` is local. Anything that fails leaves the peers on gRPC.
    pub(super) fn listen(
        rank: usize,
        addresses: &[String],
        config: &GrpcConfig,
        inbound: &Arc<Inbound>,
    ) -> Self {
        let world_size = addresses.len();
        let mut lanes = Self {
            rank,
            directory: None,
            listener: None,
            writers: (0..world_size).map(|_| None).collect(),
            inbound: Arc::new(InboundLanes::new(rank)),
            ring_bytes: if config.shared_memory {
                SHARED_RING_BYTES
            } else {
                0
            },
        };
        let any_local = addresses.iter().any(|address| is_same_host(address));
        if !config.same_host_lane || world_size < 2 || !any_local {
            return lanes;
        }
        let directory = match path::LaneDirectory::private() {
            Ok(directory) => directory,
            Err(reason) => {
                tracing::info!("rank {rank}: no same-host lane, gRPC only: {reason}");
                return lanes;
            }
        };
        if is_same_host(&addresses[rank]) {
            let acceptor = Acceptor {
                rank,
                world_size,
                token: config.token.as_deref().map(|t| Arc::from(t.as_bytes())),
                inbound: Arc::clone(inbound),
                lanes: Arc::clone(&lanes.inbound),
            };
            let bound = directory.socket_path(&addresses[rank]).and_then(|path| {
                LaneListener::bind(path.clone(), acceptor)
                    .map_err(|source| NoLane::Listen { path, source })
            });
            match bound {
                Ok(listener) => lanes.listener = Some(listener),
                Err(reason) => {
                    tracing::info!("rank {rank}: peers on this host reach it over gRPC: {reason}")
                }
            }
        }
        lanes.directory = Some(directory);
        lanes
    }

    /// Opens a lane to every peer on this machine that accepts one, as rank `self.rank` of
    /// `addresses.len()` with the cluster's `token`: to be called once every peer has joined
    /// over gRPC (so each one listens). A lane closed is waited for at most `peer_timeout`.
    pub(super) fn connect(
        &mut self,
        addresses: &[String],
        token: Option<&str>,
        watch: &Arc<PeerWatch>,
        peer_timeout: Duration,
    ) {
        let Some(directory) = &self.directory else {
            return;
        };
        let (me, world_size) = (self.rank, addresses.len());
        for (peer, address) in addresses.iter().enumerate() {
            if peer == me || !is_same_host(address) {
                continue;
            }
            let opened = directory.socket_path(address).and_then(|path| {
                let token = token.map(str::as_bytes);
                let (stream, ring) =
                    handshake::dial_lane(&path, me, world_size, token, peer, self.ring_bytes)?;
                LaneWriter::start(peer, stream, ring, Arc::clone(watch), peer_timeout)
                    .map_err(NoLane::Writer)
            });
            match opened {
                Ok(writer) => self.writers[peer] = Some(writer),
                Err(reason) => tracing::info!(
                    "rank {me}: no same-host lane to rank {peer}, gRPC instead: {reason}"
                ),
            }
        }
        let (peers, sharing) = (self.peers(), self.sharing_memory());
        if !peers.is_empty() {
            tracing::info!(
                "rank {me}: same-host lane (Unix socket) to ranks {peers:?}, with shared memory \
                 to {sharing:?}"
            );
        }
    }

    /// The peers this rank sends to over a lane.
    pub(super) fn peers(&self) -> Vec<usize> {
        let open = self.writers.iter().enumerate();
        open.filter_map(|(peer, writer)| writer.as_ref().map(|_| peer))
            .collect()
    }

    /// The peers whose lane from this rank has a shared ring.
    pub(super) fn sharing_memory(&self) -> Vec<usize> {
        let open = self.writers.iter().enumerate();
        open.filter_map(|(peer, writer)| writer.as_ref()?.shares_memory().then_some(peer))
            .collect()
    }

    /// Whether messages to `peer` go over a lane.
    pub(super) fn carries(&self, peer: usize) -> bool {
        self.writers.get(peer).is_some_and(Option::is_some)
    }

    /// Queues a message to `peer` on its lane, which [`carries`](Lanes::carries) it.
    pub(super) fn send(&mut self, peer: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        let me = self.rank;
        match self.writers.get_mut(peer).and_then(Option::as_mut) {
            Some(writer) => writer.send(me, tag, payload),
            None => Err(CollectiveFault::peer(
                peer,
                format!("no lane from rank {me}"),
            )),
        }
    }

    /// Queues a message of `len` bytes that `fill` writes to `peer` on its lane, which
    /// [`carries`](Lanes::carries) it: written straight into the lane's shared ring when
    /// there is room.
    pub(super) fn send_filled(
        &mut self,
        peer: usize,
        tag: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        let me = self.rank;
        match self.writers.get_mut(peer).and_then(Option::as_mut) {
            Some(writer) => writer.send_filled(me, tag, len, fill),
            None => Err(CollectiveFault::peer(
                peer,
                format!("no lane from rank {me}"),
            )),
        }
    }

    /// Closes every lane to a peer: each sends what is queued, then its last frame.
    pub(super) fn close(&mut self) {
        self.writers
            .iter_mut()
            .flatten()
            .for_each(LaneWriter::close);
    }

    /// Waits (until `deadline`) for every peer to confirm it read every message sent over
    /// its lane; the error names the first that did not.
    pub(super) fn acknowledged(&mut self, deadline: Instant, timeout: Duration) -> Result<()> {
        let me = self.rank;
        let mut first = Ok(());
        for mut writer in self.writers.iter_mut().filter_map(Option::take) {
            first = first.and(writer.acknowledged(me, deadline, timeout));
        }
        first
    }

    /// Waits (until `deadline`) for every lane into this rank to be over; the error names a
    /// peer whose lane is still open.
    pub(super) fn wait_ended(&self, deadline: Instant, timeout: Duration) -> Result<()> {
        self.inbound.wait_ended(deadline, timeout)
    }

    /// Stops accepting lanes and removes this rank's socket.
    pub(super) fn stop_listening(&mut self) {
        self.listener = None;
    }

    /// Drops every lane at once, as a crash would: peers see them broken.
    pub(super) fn cut(&mut self) {
        self.writers
            .iter_mut()
            .for_each(|writer| drop(writer.take()));
        self.inbound.cut();
        self.stop_listening();
    }
}
