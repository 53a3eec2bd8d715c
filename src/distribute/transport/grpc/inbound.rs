//! The server side: the `Collective` service that takes each peer's stream of messages and
//! feeds them to that peer's inbox, and the state of those streams.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};

use super::metadata::caller_rank;
use super::proto::collective_server::Collective;
use super::proto::{Ack, Envelope, HelloReply, HelloRequest};
use crate::distribute::error::{DistributeError, Result};

/// What a peer's stream delivers to its inbox.
pub(super) enum Event {
    /// A message, in the order the peer sent it.
    Message {
        /// Its tag.
        tag: u64,
        /// Its payload.
        payload: Bytes,
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
    rank: usize,
    world_size: usize,
    /// The sending half of each peer's inbox, taken by the peer's stream when it opens.
    senders: Vec<Mutex<Option<Sender<Event>>>>,
    state: Mutex<State>,
    changed: Condvar,
    /// The first handshake or stream this server refused: that peer will never join, which
    /// `connect` reports at once.
    refusal: watch::Sender<Option<DistributeError>>,
}

impl Inbound {
    /// The inbound side of `rank` among `world_size` ranks, with the receiving half of each
    /// peer's inbox (`None` at `rank`).
    pub(super) fn new(rank: usize, world_size: usize) -> (Arc<Self>, Vec<Option<Receiver<Event>>>) {
        let (senders, receivers) = (0..world_size)
            .map(|peer| {
                if peer == rank {
                    (Mutex::new(None), None)
                } else {
                    let (tx, rx) = channel();
                    (Mutex::new(Some(tx)), Some(rx))
                }
            })
            .unzip();
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
            senders,
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

    fn refuse(&self, peer: usize, message: String) -> String {
        self.refusal.send_if_modified(|refusal| {
            let first = refusal.is_none();
            if first {
                *refusal = Some(DistributeError::peer(peer, message.clone()));
            }
            first
        });
        // Taking the lock orders this after any `wait` that checked before the refusal.
        drop(self.state());
        self.changed.notify_all();
        message
    }

    /// The first refusal of this server, once there is one.
    pub(super) async fn refused(&self) -> DistributeError {
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
                DistributeError::peer(
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
                DistributeError::peer(
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
        late: impl Fn(&State) -> DistributeError,
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

/// The `Collective` service of one rank.
pub(super) struct CollectiveService {
    inbound: Arc<Inbound>,
}

impl CollectiveService {
    pub(super) fn new(inbound: Arc<Inbound>) -> Self {
        Self { inbound }
    }
}

/// Marks a peer's stream over when its handler ends, however it ends: the server may drop a
/// handler without running it to completion.
struct OpenStream<'a> {
    inbound: &'a Inbound,
    peer: usize,
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        self.inbound.set(self.peer, Stream::Ended);
    }
}

#[tonic::async_trait]
impl Collective for CollectiveService {
    async fn hello(
        &self,
        request: Request<HelloRequest>,
    ) -> std::result::Result<Response<HelloReply>, Status> {
        let inbound = &*self.inbound;
        let HelloRequest { rank, world_size } = request.into_inner();
        let (peer, peer_world) = (rank as usize, world_size as usize);
        if peer_world != inbound.world_size {
            let message = inbound.refuse(
                peer,
                format!(
                    "was started with a world size of {peer_world}, rank {} with {}",
                    inbound.rank, inbound.world_size
                ),
            );
            return Err(Status::failed_precondition(format!(
                "rank {peer} {message}"
            )));
        }
        if peer >= inbound.world_size || peer == inbound.rank {
            let message = inbound.refuse(
                peer,
                format!(
                    "claims rank {peer}, which is rank {}'s own or outside 0..{}: are the \
                     ranks and addresses the same on every process?",
                    inbound.rank, inbound.world_size
                ),
            );
            return Err(Status::invalid_argument(format!("a caller {message}")));
        }
        Ok(Response::new(HelloReply {
            rank: inbound.rank as u32,
            world_size: inbound.world_size as u32,
        }))
    }

    async fn deliver(
        &self,
        request: Request<Streaming<Envelope>>,
    ) -> std::result::Result<Response<Ack>, Status> {
        let inbound = &*self.inbound;
        let peer = caller_rank(request.metadata())?;
        if peer >= inbound.world_size || peer == inbound.rank {
            return Err(Status::invalid_argument(format!(
                "rank {peer} cannot stream to rank {} (world size {})",
                inbound.rank, inbound.world_size
            )));
        }
        let taken = inbound.senders[peer]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(inbox) = taken else {
            let message = inbound.refuse(
                peer,
                format!("opened a second stream to rank {}", inbound.rank),
            );
            return Err(Status::already_exists(format!("rank {peer} {message}")));
        };
        inbound.set(peer, Stream::Open);
        let _open = OpenStream { inbound, peer };
        let mut stream = request.into_inner();
        let mut received = 0u64;
        // The inbox may be gone (the transport dropped); the stream is still read to its end
        // so the peer's shutdown gets its acknowledgement.
        loop {
            match stream.message().await {
                Ok(Some(Envelope { tag, payload })) => {
                    received += 1;
                    let _ = inbox.send(Event::Message { tag, payload });
                }
                Ok(None) => {
                    let _ = inbox.send(Event::Ended("it shut down".into()));
                    return Ok(Response::new(Ack { received }));
                }
                Err(status) => {
                    let reason = format!("its stream broke: {}", status.message());
                    let _ = inbox.send(Event::Ended(reason));
                    return Err(status);
                }
            }
        }
    }
}
