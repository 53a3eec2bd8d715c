//! The sending end of a lane: a thread that writes the messages `send` queued, in order,
//! and, when the transport closes the lane, says how many it sent and waits for the peer
//! to confirm it read as many.

use std::io::Read;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::super::outbound::{check_received, check_size, lost_before_sending};
use super::super::peer_watch::PeerWatch;
use super::frame::{write_end, write_message};
use crate::distribute::error::{DistributeError, Result};

/// A message queued for the writer thread.
type Queued = (u64, Vec<u8>);

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
    /// Messages queued so far.
    sent: u64,
    /// Why the lane broke, once it has.
    failure: Arc<Mutex<Option<String>>>,
    /// The writer thread's outcome, once it ends.
    outcome: Option<Receiver<Outcome>>,
    /// The socket, to cut at once when this rank leaves without waiting.
    socket: UnixStream,
}

impl LaneWriter {
    /// Starts writing to `peer` over `stream`, a lane that passed the handshake. A lane
    /// that breaks marks the peer lost in `watch`; when closed, the peer's count is waited
    /// for at most `ack_timeout`.
    pub(super) fn start(
        peer: usize,
        stream: UnixStream,
        watch: Arc<PeerWatch>,
        ack_timeout: Duration,
    ) -> std::io::Result<Self> {
        let socket = stream.try_clone()?;
        let (tx, rx) = channel();
        let (done, outcome) = sync_channel(1);
        let failure = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&failure);
        std::thread::Builder::new()
            .name(format!("estimator-lane-to-{peer}"))
            .spawn(move || {
                // The queue outlives the failure's record: a `send` that finds it closed
                // finds the reason too.
                let written = write_all_queued(stream, &rx, ack_timeout);
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
            sent: 0,
            failure,
            outcome: Some(outcome),
            socket,
        })
    }

    /// Queues a message; fails at once once the lane is known to be broken.
    pub(super) fn send(&mut self, me: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        check_size(me, self.peer, payload.len())?;
        let queued = self
            .messages
            .as_ref()
            .is_some_and(|tx| tx.send((tag, payload)).is_ok());
        if !queued {
            let failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
            let reason = failure.as_deref().unwrap_or("its lane closed");
            return Err(lost_before_sending(me, self.peer, tag, reason));
        }
        self.sent += 1;
        Ok(())
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
            Ok(Ok(received)) => check_received(me, peer, received, self.sent),
            Ok(Err(reason)) => Err(DistributeError::peer(
                peer,
                format!("connection lost ({reason}) before it acknowledged rank {me}'s messages"),
            )),
            Err(RecvTimeoutError::Timeout) => Err(DistributeError::peer(
                peer,
                format!("did not acknowledge rank {me}'s messages within {timeout:?}"),
            )),
            Err(RecvTimeoutError::Disconnected) => Err(DistributeError::peer(
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

/// The writer thread: writes every message of `queue` to `stream` until the transport drops
/// the queue, then the last frame, and reads the peer's count (waiting at most
/// `ack_timeout`).
fn write_all_queued(
    mut stream: UnixStream,
    queue: &Receiver<Queued>,
    ack_timeout: Duration,
) -> Outcome {
    let broke = Broke::Writing;
    let mut written = 0u64;
    // Ends when the transport drops the sender, after every message queued before.
    for (tag, payload) in queue.iter() {
        write_message(&mut stream, tag, &payload).map_err(broke)?;
        written += 1;
    }
    write_end(&mut stream, written).map_err(broke)?;
    stream.shutdown(Shutdown::Write).map_err(broke)?;
    stream.set_read_timeout(Some(ack_timeout)).map_err(broke)?;
    let mut count = [0; 8];
    stream.read_exact(&mut count).map_err(Broke::Unconfirmed)?;
    Ok(u64::from_le_bytes(count))
}
