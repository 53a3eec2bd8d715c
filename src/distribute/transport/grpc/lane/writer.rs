//! The sending end of a lane: a small message goes onto the socket from the sending thread
//! when the socket takes it without blocking and nothing is queued before it, anything else
//! to a thread that writes the queue in order (so a send never waits for the peer); when the transport
//! closes the lane, that thread says how many messages were sent and waits for the peer to
//! confirm it read as many.
//!
//! Sending in place saves a thread wake-up per message, which is most of what a small
//! all-reduce costs between two processes on one machine. A message of
//! [`SHARED_MIN_BYTES`] or more goes into the lane's shared ring when it has one and room
//! there, and only its place goes onto the socket, as a small message.

use std::io::Read;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::super::config::LATENCY_BOUND_BYTES;
use super::super::outbound::{check_received, check_size, lost_before_sending};
use super::super::peer_watch::PeerWatch;
use super::frame::{
    header, send_without_blocking, shared_frame, write_end, write_message_from, HEADER_BYTES,
};
use super::shared_ring::RingWriter;
use crate::distribute::collective_fault::{CollectiveFault, Result};
use crate::distribute::transport::PAYLOAD_POOL;

/// The smallest message that goes through the shared ring: anything smaller is bound by
/// latency, not bytes, and goes onto the socket in place (measured on 2 vCPUs: the MNIST
/// network's 64 KiB segments through the ring trained 8 % slower, in 3 rounds of 3).
pub(super) const SHARED_MIN_BYTES: usize = LATENCY_BOUND_BYTES + 1;

/// A message queued for the writer thread: its frame's header, its payload, and how many
/// bytes of the two the sending thread already put on the socket.
struct Queued {
    header: [u8; HEADER_BYTES],
    payload: Vec<u8>,
    sent: usize,
}

/// Why a message did not go into the shared ring.
enum Unplaced {
    /// It cannot be sent at all.
    Fault(CollectiveFault),
    /// Not into the ring: nothing of it was written.
    NoRoom,
}

/// What the sending thread and the writer thread share.
struct Shared {
    /// The socket; held while a frame is written, so frames never interleave.
    stream: Mutex<UnixStream>,
    /// Messages queued and not yet wholly written: a send goes onto the socket in place
    /// only when this is 0.
    queued: AtomicUsize,
    /// Messages sent, in place or queued: the count the last frame carries.
    sent: AtomicU64,
}

impl Shared {
    fn stream(&self) -> MutexGuard<'_, UnixStream> {
        self.stream.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How a lane's writer thread ended: how many messages the peer said it read, or why the
/// lane broke.
type Outcome = std::result::Result<u64, Broke>;

/// Why a lane broke while this rank wrote to it.
#[derive(Debug)]
enum Broke {
    /// A write (or the shutdown after the last one) failed.
    Writing(std::io::Error),
    /// The peer's count of what it read did not arrive.
    Unconfirmed(std::io::Error),
}

impl std::fmt::Display for Broke {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broke::Writing(e) => write!(f, "the lane to it broke: {e}"),
            Broke::Unconfirmed(e) => {
                write!(f, "its lane ended before it confirmed what it read: {e}")
            }
        }
    }
}

/// The lane from this rank to one peer on the same machine.
pub(super) struct LaneWriter {
    peer: usize,
    /// Feeds the writer thread; dropped to close the lane.
    messages: Option<Sender<Queued>>,
    shared: Arc<Shared>,
    /// Why the lane broke, once it has.
    failure: Arc<Mutex<Option<String>>>,
    /// The writer thread's outcome, once it ends.
    outcome: Option<Receiver<Outcome>>,
    /// The socket, to cut at once when this rank leaves without waiting.
    socket: UnixStream,
    /// The memory shared with the peer, when it took it.
    ring: Option<RingWriter>,
}

impl LaneWriter {
    /// Starts writing to `peer` over `stream`, a lane that passed the handshake, and its
    /// shared `ring` if it has one. A lane that breaks marks the peer lost in `watch`; when
    /// closed, the peer's count is waited for at most `ack_timeout`.
    pub(super) fn start(
        peer: usize,
        stream: UnixStream,
        ring: Option<RingWriter>,
        watch: Arc<PeerWatch>,
        ack_timeout: Duration,
    ) -> std::io::Result<Self> {
        let socket = stream.try_clone()?;
        let shared = Arc::new(Shared {
            stream: Mutex::new(stream),
            queued: AtomicUsize::new(0),
            sent: AtomicU64::new(0),
        });
        let writing = Arc::clone(&shared);
        let (tx, rx) = channel();
        let (done, outcome) = sync_channel(1);
        let failure = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&failure);
        std::thread::Builder::new()
            .name(format!("estimator-lane-to-{peer}"))
            .spawn(move || {
                // The queue outlives the failure's record: a `send` that finds it closed
                // finds the reason too.
                let written = write_all_queued(&writing, &rx, ack_timeout);
                if let Err(broke) = &written {
                    // The peer is gone (or this rank cut the lane): waits for it end now.
                    let reason = broke.to_string();
                    watch.ended(peer, Some(reason.clone()));
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
                }
                drop(rx);
                let _ = done.send(written);
            })?;
        Ok(Self {
            peer,
            messages: Some(tx),
            shared,
            failure,
            outcome: Some(outcome),
            socket,
            ring,
        })
    }

    /// Sends a message: a large one into the shared ring when it has room, its place
    /// then sent as a small message; a small one (latency-bound) in place when nothing is
    /// queued before it and the socket takes it without blocking, else queued; fails at
    /// once once the lane is known to be broken.
    pub(super) fn send(&mut self, me: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        let len = payload.len();
        let placed = self.place_in_ring(me, tag, len, &mut |ring| ring.copy_from_slice(&payload));
        match placed {
            Ok(()) => {
                PAYLOAD_POOL.give(payload);
                Ok(())
            }
            Err(Unplaced::Fault(fault)) => Err(fault),
            Err(Unplaced::NoRoom) => self.enqueue(me, tag, header(tag, len as u64), payload),
        }
    }

    /// Sends a message of `len` bytes that `fill` writes: straight into the shared ring
    /// when it has room, else into a vector of the payload pool, then as [`send`] does.
    ///
    /// [`send`]: LaneWriter::send
    pub(super) fn send_filled(
        &mut self,
        me: usize,
        tag: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        match self.place_in_ring(me, tag, len, fill) {
            Ok(()) => Ok(()),
            Err(Unplaced::Fault(fault)) => Err(fault),
            Err(Unplaced::NoRoom) => {
                let mut payload = PAYLOAD_POOL.take(len);
                fill(&mut payload);
                self.enqueue(me, tag, header(tag, len as u64), payload)
            }
        }
    }

    /// Writes a message of `len` bytes into the shared ring by `fill` and sends its place;
    /// [`Unplaced::NoRoom`] (nothing written) when the lane has no ring, the message is
    /// too small for it, or the ring has no room now.
    fn place_in_ring(
        &mut self,
        me: usize,
        tag: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> std::result::Result<(), Unplaced> {
        check_size(me, self.peer, len).map_err(Unplaced::Fault)?;
        if self.messages.is_none() {
            return Err(Unplaced::Fault(self.lost(me, tag)));
        }
        let placed = (self.ring.as_mut())
            .filter(|_| len >= SHARED_MIN_BYTES)
            .and_then(|ring| ring.write_with(len, fill))
            .ok_or(Unplaced::NoRoom)?;
        let (header, position) = shared_frame(tag, placed, len as u64);
        self.enqueue(me, tag, header, position)
            .map_err(Unplaced::Fault)
    }

    /// Sends a frame (`header`, then `payload`): in place when it is small, nothing is
    /// queued before it and the socket takes it without blocking, else queued.
    fn enqueue(
        &mut self,
        me: usize,
        tag: u64,
        header: [u8; HEADER_BYTES],
        payload: Vec<u8>,
    ) -> Result<()> {
        let Some(tx) = self.messages.as_ref() else {
            return Err(self.lost(me, tag));
        };
        let shared = &*self.shared;
        // The writer thread holds the socket while it writes (perhaps blocked on a peer
        // that reads slowly): then this message queues behind, without waiting.
        let small = payload.len() <= LATENCY_BOUND_BYTES;
        let in_place = (small && shared.queued.load(Ordering::Acquire) == 0)
            .then(|| shared.stream.try_lock().ok())
            .flatten()
            .filter(|_| shared.queued.load(Ordering::Acquire) == 0);
        let mut message = Queued {
            header,
            payload,
            sent: 0,
        };
        if let Some(stream) = &in_place {
            message.sent = send_without_blocking(stream, &message.header, &message.payload);
        }
        if message.sent < HEADER_BYTES + message.payload.len() {
            // Queued while the socket is still held (if it was), so that no later message
            // overtakes it.
            shared.queued.fetch_add(1, Ordering::AcqRel);
            if tx.send(message).is_err() {
                return Err(self.lost(me, tag));
            }
        } else {
            PAYLOAD_POOL.give(message.payload);
        }
        drop(in_place);
        shared.sent.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Whether the lane has a ring of memory shared with the peer.
    pub(super) fn shares_memory(&self) -> bool {
        self.ring.is_some()
    }

    /// The error of a message with `tag` that cannot be sent: the lane broke or closed.
    fn lost(&self, me: usize, tag: u64) -> CollectiveFault {
        let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        let reason = failure.as_deref().unwrap_or("its lane closed");
        lost_before_sending(me, self.peer, tag, reason)
    }

    /// Closes the lane: the writer thread sends what is queued, then the last frame.
    pub(super) fn close(&mut self) {
        self.messages = None;
    }

    /// Waits (until `deadline`) for the peer to confirm it read every message sent.
    pub(super) fn acknowledged(
        &mut self,
        me: usize,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<()> {
        self.close();
        let Some(outcome) = self.outcome.take() else {
            return Ok(());
        };
        let peer = self.peer;
        let left = deadline.saturating_duration_since(Instant::now());
        match outcome.recv_timeout(left) {
            Ok(Ok(received)) => {
                check_received(me, peer, received, self.shared.sent.load(Ordering::Acquire))
            }
            Ok(Err(reason)) => Err(CollectiveFault::peer(
                peer,
                format!("connection lost ({reason}) before it acknowledged rank {me}'s messages"),
            )),
            Err(RecvTimeoutError::Timeout) => Err(CollectiveFault::peer(
                peer,
                format!("did not acknowledge rank {me}'s messages within {timeout:?}"),
            )),
            Err(RecvTimeoutError::Disconnected) => Err(CollectiveFault::peer(
                peer,
                format!("the lane from rank {me} failed: its writer stopped"),
            )),
        }
    }
}

impl Drop for LaneWriter {
    /// Cuts the socket: a writer thread still blocked on it (a peer that stopped reading)
    /// ends, and the peer sees the lane broken unless it was closed and confirmed first.
    fn drop(&mut self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// The writer thread: writes every message of `queue` until the transport drops the queue,
/// then the last frame, and reads the peer's count (waiting at most `ack_timeout`).
fn write_all_queued(shared: &Shared, queue: &Receiver<Queued>, ack_timeout: Duration) -> Outcome {
    let broke = Broke::Writing;
    // Ends when the transport drops the sender, after every message queued before.
    for message in queue.iter() {
        let mut stream = shared.stream();
        write_message_from(
            &mut *stream,
            &message.header,
            &message.payload,
            message.sent,
        )
        .map_err(broke)?;
        shared.queued.fetch_sub(1, Ordering::AcqRel);
        drop(stream);
        PAYLOAD_POOL.give(message.payload);
    }
    let mut stream = shared.stream();
    write_end(&mut *stream, shared.sent.load(Ordering::Acquire)).map_err(broke)?;
    stream.shutdown(Shutdown::Write).map_err(broke)?;
    stream.set_read_timeout(Some(ack_timeout)).map_err(broke)?;
    let mut count = [0; 8];
    stream.read_exact(&mut count).map_err(Broke::Unconfirmed)?;
    Ok(u64::from_le_bytes(count))
}
