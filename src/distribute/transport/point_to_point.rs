//! The point-to-point messaging contract every transport (in-memory, gRPC) fulfils.

use bytes::Bytes;

use super::PAYLOAD_POOL;
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// A received message lent to its reader: its bytes as the consecutive pieces they arrived
/// in (HTTP/2 frames, socket reads), read in place instead of gathered into one vector.
#[derive(Debug, Clone, Copy)]
pub struct Lent<'a> {
    pieces: &'a [Bytes],
}

impl<'a> Lent<'a> {
    /// The message made of `pieces`, in order.
    pub fn new(pieces: &'a [Bytes]) -> Self {
        Self { pieces }
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Bytes::len).sum()
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes, piece by piece, in order (pieces may cut an element of a typed payload).
    pub fn pieces(&self) -> impl Iterator<Item = &'a [u8]> {
        self.pieces.iter().map(|piece| &piece[..])
    }
}

/// Where [`Transport::recv_and_send_filled`] sends on: `len` bytes to rank `to` with `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Onward {
    /// The rank sent to.
    pub to: usize,
    /// The message's tag.
    pub tag: u64,
    /// The message's length in bytes.
    pub len: usize,
}

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
///   [`CollectiveFault::Peer`](crate::distribute::CollectiveFault::Peer) naming `from`, and a
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

    /// Queues for rank `to` under `tag` a payload of `len` bytes that `fill` writes (all
    /// of them, called once), as [`send`](Transport::send) would `fill`'s bytes: a
    /// transport may hand `fill` memory of its own (a same-host lane's shared ring), so
    /// that the bytes are written where the peer reads them.
    fn send_filled(
        &mut self,
        to: usize,
        tag: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        fill_and_send(self, to, tag, len, fill)
    }

    /// The oldest message from rank `from` with `tag`, waiting at most the transport's timeout.
    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u8>>;

    /// [`recv`](Transport::recv) lending the message to `consume` instead of returning it,
    /// so that a transport holding it in pieces copies nothing: a collective folds it
    /// straight into its buffer. `consume`'s error is returned as it is.
    fn recv_lent(
        &mut self,
        from: usize,
        tag: u64,
        consume: &mut dyn FnMut(Lent<'_>) -> Result<()>,
    ) -> Result<()> {
        let payload = Bytes::from(self.recv(from, tag)?);
        consume(Lent::new(std::slice::from_ref(&payload)))
    }

    /// Receives the oldest message from rank `from` with `tag` and sends one on at once as
    /// `onward` says, written by `fill` while it reads the received one: a ring
    /// all-reduce's completed sum, added, divided and encoded for the next rank in one pass.
    /// `check` sees the received message first; its error is returned as it is, and nothing
    /// is sent then. A transport holding the message in pieces lends them, as
    /// [`recv_lent`](Transport::recv_lent) does.
    fn recv_and_send_filled(
        &mut self,
        from: usize,
        tag: u64,
        onward: Onward,
        check: &mut dyn FnMut(Lent<'_>) -> Result<()>,
        fill: &mut dyn FnMut(Lent<'_>, &mut [u8]),
    ) -> Result<()> {
        let received = Bytes::from(self.recv(from, tag)?);
        let lent = Lent::new(std::slice::from_ref(&received));
        check(lent)?;
        self.send_filled(onward.to, onward.tag, onward.len, &mut |out| {
            fill(lent, out)
        })
    }

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

/// An error unless `peer` is another rank of the world of `transport`; `verb` says what
/// the rank tried to do with it ("send to", "receive from").
pub(super) fn check_peer<T: Transport + ?Sized>(
    transport: &T,
    peer: usize,
    verb: &str,
) -> Result<()> {
    let (rank, world_size) = (transport.rank(), transport.world_size());
    if peer == rank || peer >= world_size {
        return Err(CollectiveFault::invalid(format!(
            "rank {rank} cannot {verb} rank {peer} (world size {world_size})"
        )));
    }
    Ok(())
}

/// [`Transport::send_filled`] through [`Transport::send`]: `fill` writes a vector of the
/// payload pool, which is then sent.
pub(crate) fn fill_and_send<T: Transport + ?Sized>(
    transport: &mut T,
    to: usize,
    tag: u64,
    len: usize,
    fill: &mut dyn FnMut(&mut [u8]),
) -> Result<()> {
    let mut payload = PAYLOAD_POOL.take(len);
    fill(&mut payload);
    transport.send(to, tag, payload)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::distribute::collective_fault::CollectiveFault;
    use crate::distribute::InMemoryTransport;

    #[test]
    fn a_message_passed_on_is_written_from_the_received_one_and_a_refused_one_sends_nothing() {
        let mut ranks = InMemoryTransport::cluster_with_timeout(3, Duration::from_millis(200));
        let mut third = ranks.pop().unwrap();
        let mut second = ranks.pop().unwrap();
        let mut first = ranks.pop().unwrap();
        first.send(1, 7, vec![1, 2, 3]).unwrap();
        let onward = Onward {
            to: 2,
            tag: 8,
            len: 3,
        };
        let mut check = |_: Lent<'_>| Ok(());
        let mut fill = |received: Lent<'_>, out: &mut [u8]| {
            for (o, r) in out.iter_mut().zip(received.pieces().flatten()) {
                *o = r * 10;
            }
        };
        second
            .recv_and_send_filled(0, 7, onward, &mut check, &mut fill)
            .unwrap();
        assert_eq!(third.recv(1, 8).unwrap(), vec![10, 20, 30]);

        first.send(1, 9, vec![4]).unwrap();
        let mut refuse = |received: Lent<'_>| {
            Err(CollectiveFault::invalid(format!(
                "{} bytes",
                received.len()
            )))
        };
        let refused = second.recv_and_send_filled(0, 9, onward, &mut refuse, &mut fill);
        assert!(refused.unwrap_err().to_string().contains("1 bytes"));
        assert!(third.recv(1, 8).is_err(), "nothing was sent on");
    }
}
