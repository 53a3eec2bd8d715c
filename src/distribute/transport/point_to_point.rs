//! The point-to-point messaging contract every transport (in-memory, gRPC) fulfils.

use crate::distribute::error::Result;

/// Tagged, ordered messages between the `world_size` ranks of a cluster.
///
/// The collectives rely on this contract, which a network implementation must keep:
///
/// - **ordered per (peer, tag)**: messages from one peer with one tag arrive in the order they
///   were sent (collectives reuse tags from one call to the next and rely on this);
/// - **buffered sends**: `send` returns without waiting for the peer to call `recv` (a ring
///   step sends before it receives; a blocking send would deadlock the ring);
/// - **tag matching**: `recv(from, tag)` returns the oldest message from `from` with `tag`,
///   keeping messages of other tags (and from other peers) that arrived earlier for later;
/// - **bounded waits**: `recv` gives up after the transport's timeout with a
///   [`DistributeError::Peer`](crate::distribute::DistributeError::Peer) naming `from`, and a
///   peer that went away is reported the same way, never as a hang.
///
/// Tags whose top byte is 0 are free for callers; the others belong to the collectives (see
/// [`Tag`](crate::distribute::Tag)).
pub trait Transport: Send {
    /// This process's rank, in `0..world_size()`.
    fn rank(&self) -> usize;

    /// The number of ranks in the cluster.
    fn world_size(&self) -> usize;

    /// Queues `payload` for rank `to` under `tag`, without waiting for it to be received.
    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> Result<()>;

    /// The oldest message from rank `from` with `tag`, waiting at most the transport's timeout.
    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u8>>;

    /// Drops every connection at once, as a crash would, instead of the graceful shutdown
    /// that waits for peers to acknowledge: for a run that failed, whose peers may be the
    /// ones missing. Later calls fail.
    fn abandon(&mut self) {}

    /// How many distinct tasks stall warnings named since the last call (0 for transports
    /// that do not watch their peers).
    fn take_stalled_tasks(&mut self) -> usize {
        0
    }
}
