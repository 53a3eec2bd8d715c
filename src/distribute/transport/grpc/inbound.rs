//! What the server shares with the transport: the sending half of each peer's inbox, and
//! where each peer's stream to this rank stands.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::payload::Payload;
use super::peer_watch::PeerWatch;
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// What a peer's stream delivers to its inbox.
pub(super) enum Delivery {
    /// A message, in the order the peer sent it.
    Message {
        /// Its tag.
        tag: u64,
        /// Its payload.
        payload: Payload,
    },
    /// The stream is over: why (the peer shut down, or the connection broke). Nothing follows.
    Ended(String),
}

/// Where a peer's stream to this rank stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// Not opened yet.
    Expected,
    /// Delivering.
    Open,
    /// Over (shut down or broken); a peer opens one stream per lifetime.
    Ended,
}

#[derive(Debug)]
struct State {
    streams: Vec<Stream>,
}

/// The streams from every peer to this rank, shared by the service and the transport.
pub(super) struct Inbound {
    pub(super) rank: usize,
    pub(super) world_size: usize,
    /// Each peer's liveness, as its stream shows it.
    pub(super) watch: Arc<PeerWatch>,
    /// The sending half of each peer's inbox, taken by the peer's stream when it opens.
    senders: Vec<Mutex<Option<Sender<Delivery>>>>,
    /// A second sending half of each peer's inbox, for its same-host lane: taken by the lane
    /// when it is accepted, dropped when the peer's stream ends without one, so that an
    /// inbox nobody feeds any more still reads as disconnected.
    lane_senders: Vec<Mutex<Option<Sender<Delivery>>>>,
    /// Whether each peer's messages come over its lane: then the lane, not the gRPC stream,
    /// says when they are over.
    carried_by_lane: Vec<AtomicBool>,
    state: Mutex<State>,
    changed: Condvar,
    /// The first handshake or stream this server refused: that peer will never join, which
    /// `connect` reports at once.
    refusal: watch::Sender<Option<CollectiveFault>>,
}

impl Inbound {
    /// The inbound side of `rank` among `world_size` ranks, with the receiving half of each
    /// peer's inbox (`None` at `rank`).
    pub(super) fn new(
        rank: usize,
        world_size: usize,
        watch: Arc<PeerWatch>,
    ) -> (Arc<Self>, Vec<Option<Receiver<Delivery>>>) {
        let mut senders = Vec::with_capacity(world_size);
        let mut lane_senders = Vec::with_capacity(world_size);
        let mut receivers = Vec::with_capacity(world_size);
        for peer in 0..world_size {
            if peer == rank {
                senders.push(Mutex::new(None));
                lane_senders.push(Mutex::new(None));
                receivers.push(None);
            } else {
                let (tx, rx) = channel();
                lane_senders.push(Mutex::new(Some(tx.clone())));
                senders.push(Mutex::new(Some(tx)));
                receivers.push(Some(rx));
            }
        }
        let streams = (0..world_size)
            .map(|peer| {
                if peer == rank {
                    Stream::Ended
                } else {
                    Stream::Expected
                }
            })
            .collect();
        let inbound = Inbound {
            rank,
            world_size,
            watch,
            senders,
            lane_senders,
            carried_by_lane: (0..world_size).map(|_| AtomicBool::new(false)).collect(),
            state: Mutex::new(State { streams }),
            changed: Condvar::new(),
            refusal: watch::Sender::new(None),
        };
        (Arc::new(inbound), receivers)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, peer: usize, stream: Stream) {
        self.state().streams[peer] = stream;
        self.changed.notify_all();
    }

    /// The sending half of `peer`'s inbox, for its stream; `None` if a stream took it already.
    pub(super) fn take_inbox(&self, peer: usize) -> Option<Sender<Delivery>> {
        self.senders[peer]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The sending half of `peer`'s inbox for its same-host lane; `None` if a lane took it
    /// already, or the peer's stream ended without one.
    pub(super) fn take_lane_inbox(&self, peer: usize) -> Option<Sender<Delivery>> {
        let sender = self.lane_senders.get(peer)?;
        sender.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Records whether `peer`'s messages come over its same-host lane.
    pub(super) fn set_carried_by_lane(&self, peer: usize, carried: bool) {
        if let Some(flag) = self.carried_by_lane.get(peer) {
            flag.store(carried, Ordering::Release);
        }
    }

    /// Whether `peer`'s messages come over its same-host lane.
    pub(super) fn carried_by_lane(&self, peer: usize) -> bool {
        self.carried_by_lane
            .get(peer)
            .is_some_and(|carried| carried.load(Ordering::Acquire))
    }

    /// Marks `peer`'s stream open until the guard returned is dropped.
    pub(super) fn open(&self, peer: usize) -> OpenStream<'_> {
        self.set(peer, Stream::Open);
        OpenStream {
            inbound: self,
            peer,
        }
    }

    /// Records that this server refused `peer` (the first refusal is kept); `message` back.
    pub(super) fn refuse(&self, peer: usize, message: String) -> String {
        self.refusal.send_if_modified(|refusal| {
            let first = refusal.is_none();
            if first {
                *refusal = Some(CollectiveFault::peer(peer, message.clone()));
            }
            first
        });
        // Taking the lock orders this after any `wait` that checked before the refusal.
        drop(self.state());
        self.changed.notify_all();
        message
    }

    /// The first refusal of this server, once there is one.
    pub(super) async fn refused(&self) -> CollectiveFault {
        let mut refusal = self.refusal.subscribe();
        let refused = refusal.wait_for(Option::is_some).await;
        match refused.as_deref() {
            Ok(Some(error)) => error.clone(),
            _ => unreachable!("the sender lives as long as `self`, and waited for Some"),
        }
    }

    /// Waits until every peer has opened its stream to this rank, at most until `deadline`;
    /// the error names a peer that did not (or that this server refused).
    pub(super) fn wait_opened(&self, deadline: Instant, timeout: Duration) -> Result<()> {
        self.wait(
            deadline,
            |state| match &*self.refusal.borrow() {
                Some(refused) => Some(Err(refused.clone())),
                None => (!state.streams.contains(&Stream::Expected)).then_some(Ok(())),
            },
            |state| {
                let missing = state.streams.iter().position(|s| *s == Stream::Expected);
                CollectiveFault::peer(
                    missing.unwrap_or_default(),
                    format!("did not connect to rank {} within {timeout:?}", self.rank),
                )
            },
        )
    }

    /// Waits until every peer's stream to this rank is over, at most until `deadline`; the
    /// error names a peer whose stream is still open.
    pub(super) fn wait_ended(&self, deadline: Instant, timeout: Duration) -> Result<()> {
        self.wait(
            deadline,
            |state| {
                state
                    .streams
                    .iter()
                    .all(|s| *s == Stream::Ended)
                    .then_some(Ok(()))
            },
            |state| {
                let open = state.streams.iter().position(|s| *s != Stream::Ended);
                CollectiveFault::peer(
                    open.unwrap_or_default(),
                    format!(
                        "did not close its stream to rank {} within {timeout:?} of rank {} \
                         shutting down",
                        self.rank, self.rank
                    ),
                )
            },
        )
    }

    /// Waits until `settled` (asked under the lock after every change) says how it ended, or
    /// until `deadline`, when `late` says what is missing.
    fn wait(
        &self,
        deadline: Instant,
        settled: impl Fn(&State) -> Option<Result<()>>,
        late: impl Fn(&State) -> CollectiveFault,
    ) -> Result<()> {
        let mut state = self.state();
        loop {
            if let Some(result) = settled(&state) {
                return result;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(late(&state));
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Marks a peer's stream over when dropped, however its handler ends: the server may drop a
/// handler without running it to completion.
pub(super) struct OpenStream<'a> {
    inbound: &'a Inbound,
    peer: usize,
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        // A peer opens its lane before it can close its stream: none will come now.
        drop(
            self.inbound.lane_senders[self.peer]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        self.inbound.set(self.peer, Stream::Ended);
    }
}
