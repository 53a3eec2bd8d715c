//! The receiving end of the lanes into this rank: a thread per lane that hands each message
//! to the peer's inbox, as the peer's gRPC stream would, and confirms the count when the
//! peer closes the lane; and the record of which lanes are still open, which shutdown waits
//! on.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::super::inbound::Delivery;
use super::super::peer_watch::PeerWatch;
use super::frame::{read_frame, Frame};
use super::shared_ring::RingReader;
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// A lane into this rank.
enum Lane {
    /// Delivering; the socket, to cut when this rank leaves without waiting.
    Open(UnixStream),
    /// Over: closed by the peer (and its count confirmed) or broken.
    Ended,
}

/// The lanes into one rank, by peer.
pub(super) struct InboundLanes {
    rank: usize,
    lanes: Mutex<BTreeMap<usize, Lane>>,
    changed: Condvar,
}

impl InboundLanes {
    pub(super) fn new(rank: usize) -> Self {
        Self {
            rank,
            lanes: Mutex::new(BTreeMap::new()),
            changed: Condvar::new(),
        }
    }

    fn lanes(&self) -> MutexGuard<'_, BTreeMap<usize, Lane>> {
        self.lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `peer`'s lane, open, over `socket`.
    pub(super) fn opened(&self, peer: usize, socket: UnixStream) {
        self.lanes().insert(peer, Lane::Open(socket));
    }

    /// Records that `peer`'s lane is over.
    pub(super) fn ended(&self, peer: usize) {
        self.lanes().insert(peer, Lane::Ended);
        self.changed.notify_all();
    }

    /// Waits until every lane into this rank is over, at most until `deadline`; the error
    /// names a peer whose lane is still open.
    pub(super) fn wait_ended(&self, deadline: Instant, timeout: Duration) -> Result<()> {
        let mut lanes = self.lanes();
        loop {
            let open = lanes
                .iter()
                .find_map(|(peer, lane)| matches!(lane, Lane::Open(_)).then_some(*peer));
            let Some(peer) = open else {
                return Ok(());
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let me = self.rank;
                return Err(CollectiveFault::peer(
                    peer,
                    format!(
                        "did not close its lane to rank {me} within {timeout:?} of rank {me} \
                         shutting down"
                    ),
                ));
            }
            lanes = self
                .changed
                .wait_timeout(lanes, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Cuts every open lane at once, as a crash would: the peers see them broken.
    pub(super) fn cut(&self) {
        for lane in self.lanes().values() {
            if let Lane::Open(socket) = lane {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Reads `peer`'s lane to its end: each message into `inbox` (one in shared memory lent
/// from `ring` where it lies), marked heard in `watch`; the peer's last frame answered with
/// how many messages arrived; the end (or the break) recorded in `watch`, `inbox` and
/// `lanes`.
pub(super) fn read_lane(
    peer: usize,
    mut stream: UnixStream,
    ring: Option<Arc<RingReader>>,
    inbox: Sender<Delivery>,
    watch: &PeerWatch,
    lanes: &InboundLanes,
) {
    let mut received = 0u64;
    let broken = loop {
        match read_frame(&mut stream) {
            Ok(Some(Frame::Message { tag, payload })) => {
                watch.heard(peer);
                received += 1;
                // The inbox may be gone (the transport dropped); the lane is still read to
                // its end so that the peer's shutdown gets its count.
                let payload = payload.into();
                let _ = inbox.send(Delivery::Message { tag, payload });
            }
            Ok(Some(Frame::Shared { tag, start, len })) => {
                let lent = match &ring {
                    Some(ring) => ring.lend(start, len),
                    None => Err(std::io::Error::other(
                        "a message in shared memory it never offered",
                    )),
                };
                match lent {
                    Ok(bytes) => {
                        watch.heard(peer);
                        received += 1;
                        let payload = bytes.into();
                        let _ = inbox.send(Delivery::Message { tag, payload });
                    }
                    Err(e) => break format!("its lane broke: {e}"),
                }
            }
            Ok(Some(Frame::End { sent })) => {
                if sent != received {
                    tracing::warn!(
                        "rank {} read {received} of the {sent} messages rank {peer} sent on \
                         its lane",
                        lanes.rank
                    );
                }
                watch.ended(peer, None);
                let _ = inbox.send(Delivery::Ended("it shut down".into()));
                // The count tells the peer that everything it sent is in the inbox.
                let confirmed = stream.write_all(&received.to_le_bytes());
                if let Err(e) = confirmed {
                    tracing::debug!("rank {peer} left before its lane's count was sent: {e}");
                }
                let _ = stream.shutdown(Shutdown::Both);
                lanes.ended(peer);
                return;
            }
            Ok(None) => break "its lane closed without ending (its process is gone)".to_string(),
            Err(e) => break format!("its lane broke: {e}"),
        }
    };
    watch.ended(peer, Some(broken.clone()));
    let _ = inbox.send(Delivery::Ended(broken));
    lanes.ended(peer);
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::super::super::peer_watch::PeerWatch;
    use super::super::frame::{shared_frame, write_end, write_message_from};
    use super::super::shared_ring::{RingReader, RingWriter};
    use super::*;

    /// What rank 0's inbox gets from reading a lane from rank 1 (with `ring`, if any) on
    /// which rank 1 wrote a message of `len` bytes placed at `at` in shared memory, then
    /// its last frame.
    fn deliveries(ring: Option<Arc<RingReader>>, at: u64, len: u64) -> Vec<Delivery> {
        let (mut sender, receiver) = UnixStream::pair().unwrap();
        let (header, position) = shared_frame(5, at, len);
        write_message_from(&mut sender, &header, &position, 0).unwrap();
        write_end(&mut sender, 1).unwrap();
        let (inbox, delivered) = channel();
        let second = Duration::from_secs(1);
        let watch = PeerWatch::new(0, 2, vec![], second, 60 * second);
        read_lane(1, receiver, ring, inbox, &watch, &InboundLanes::new(0));
        delivered.try_iter().collect()
    }

    #[test]
    fn a_message_in_shared_memory_is_lent_and_one_never_offered_breaks_the_lane() {
        let (mut writer, fd) = RingWriter::create(1 << 20).unwrap();
        let ring = RingReader::open(fd, 1 << 20).unwrap();
        let message: Vec<u8> = (0..100_000).map(|i| (i % 251) as u8).collect();
        let at = writer.write(&message).unwrap();
        let got = deliveries(Some(ring), at, message.len() as u64);
        match &got[..] {
            [Delivery::Message { tag: 5, payload }, Delivery::Ended(reason)] => {
                let bytes: Vec<u8> = payload.lent().pieces().flatten().copied().collect();
                assert!(bytes == message, "the lent bytes differ");
                assert_eq!(reason, "it shut down");
            }
            _ => panic!("{} deliveries", got.len()),
        }
        let got = deliveries(None, 0, 100_000);
        match &got[..] {
            [Delivery::Ended(reason)] => assert!(reason.contains("never offered"), "{reason}"),
            _ => panic!("{} deliveries", got.len()),
        }
        let (_, fd) = RingWriter::create(1 << 20).unwrap();
        let got = deliveries(
            Some(RingReader::open(fd, 1 << 20).unwrap()),
            (1 << 20) - 32,
            64,
        );
        match &got[..] {
            [Delivery::Ended(reason)] => assert!(reason.contains("lane broke"), "{reason}"),
            _ => panic!("{} deliveries", got.len()),
        }
    }
}
