//! Accepting lanes: a rank's socket, a thread that accepts on it, and a thread per accepted
//! connection that checks the handshake and then reads the lane.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::super::inbound::Inbound;
use super::handshake::{
    answer_ring, read_hello, receive_ring, write_welcome, Refusal, HANDSHAKE_TIMEOUT,
};
use super::reader::{read_lane, InboundLanes};
use super::shared_ring::RingReader;

/// How long the accepting thread pauses after a failed accept (out of descriptors, say)
/// before the next, so that it does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(20);

/// What every accepted connection is checked against, and where its messages go.
#[derive(Clone)]
pub(super) struct Acceptor {
    pub(super) rank: usize,
    pub(super) world_size: usize,
    /// The cluster token, when the cluster has one.
    pub(super) token: Option<Arc<[u8]>>,
    pub(super) inbound: Arc<Inbound>,
    pub(super) lanes: Arc<InboundLanes>,
}

/// A rank's lane socket, accepting until dropped; the socket file is removed then.
pub(super) struct LaneListener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
}

impl LaneListener {
    /// Listens at `path` (replacing a socket file a dead process left there) and accepts
    /// lanes for `acceptor`.
    pub(super) fn bind(path: PathBuf, acceptor: Acceptor) -> io::Result<Self> {
        let listener = bind_replacing_stale(&path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let rank = acceptor.rank;
        let accepting = std::thread::Builder::new()
            .name(format!("estimator-lanes-{rank}"))
            .spawn(move || accept_until_stopped(&listener, &stopped, &acceptor));
        match accepting {
            Ok(accepting) => Ok(Self {
                path,
                stop,
                accepting: Some(accepting),
            }),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }
}

impl Drop for LaneListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A connection of its own wakes the accepting thread, which then sees `stop`. If
        // none can be made, the thread is left blocked on a socket no one reaches any more.
        let woken = UnixStream::connect(&self.path).is_ok();
        if let (true, Some(accepting)) = (woken, self.accepting.take()) {
            let _ = accepting.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `path`; a socket file there that nobody listens on any more (its process died)
/// is removed first. One that still answers is left alone: the bind fails.
fn bind_replacing_stale(path: &Path) -> io::Result<UnixListener> {
    match UnixListener::bind(path) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "another process listens on it",
                ));
            }
            std::fs::remove_file(path)?;
            UnixListener::bind(path)
        }
        bound => bound,
    }
}

/// Connections to a lane socket handled at once beyond one per peer: each holds a thread
/// and a descriptor, and only this user can connect (the directory is theirs alone), but a
/// stray program looping on the socket must not take them all.
const SPARE_CONNECTIONS: usize = 8;

fn accept_until_stopped(listener: &UnixListener, stop: &AtomicBool, acceptor: &Acceptor) {
    let live = Arc::new(AtomicUsize::new(0));
    let most = acceptor.world_size + SPARE_CONNECTIONS;
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, _)) => {
                let rank = acceptor.rank;
                if live.fetch_add(1, Ordering::SeqCst) >= most {
                    live.fetch_sub(1, Ordering::SeqCst);
                    tracing::info!(
                        "rank {rank} closed a connection to its lane socket: {most} are open \
                         already"
                    );
                    continue;
                }
                let acceptor = acceptor.clone();
                let counted = Live(Arc::clone(&live));
                let spawned = std::thread::Builder::new()
                    .name(format!("estimator-lane-into-{rank}"))
                    .spawn(move || {
                        let _counted = counted;
                        accept_lane(stream, &acceptor)
                    });
                if let Err(e) = spawned {
                    tracing::warn!("rank {rank}: cannot start a lane reader: {e}");
                }
            }
            Err(e) => {
                tracing::debug!("rank {}: accepting a lane failed: {e}", acceptor.rank);
                std::thread::sleep(ACCEPT_RETRY);
            }
        }
    }
}

/// One connection to a lane socket, counted until dropped.
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Checks an accepted connection's handshake, then reads the lane to its end. A refused
/// connection is closed, which tells the connecting rank to keep gRPC.
fn accept_lane(mut stream: UnixStream, acceptor: &Acceptor) {
    let me = acceptor.rank;
    let token = acceptor.token.as_deref();
    if let Err(e) = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)) {
        tracing::debug!("rank {me}: cannot time a lane handshake: {e}");
        return;
    }
    let peer = match read_hello(&mut stream, me, acceptor.world_size, token) {
        Ok(peer) => peer,
        Err(Refusal::Peer { rank, reason }) => {
            tracing::warn!("rank {me} refused a same-host lane from rank {rank}: {reason}");
            return;
        }
        Err(Refusal::Stranger(reason)) => {
            tracing::info!("rank {me} dropped a connection to its lane socket: {reason}");
            return;
        }
    };
    let inbound = &acceptor.inbound;
    let Some(inbox) = inbound.take_lane_inbox(peer) else {
        tracing::warn!(
            "rank {me} refused a same-host lane from rank {peer}: it has one already, or its \
             stream has ended"
        );
        return;
    };
    let socket = match stream.try_clone() {
        Ok(socket) => socket,
        Err(e) => {
            tracing::info!("rank {me} cannot take the lane from rank {peer}: {e}");
            return;
        }
    };
    // Before the welcome: once welcomed, the peer may send, and later close its stream,
    // whose end must then leave the inbox open for the lane.
    inbound.set_carried_by_lane(peer, true);
    acceptor.lanes.opened(peer, socket);
    let welcomed = write_welcome(&mut stream, me, acceptor.world_size)
        .and_then(|()| take_ring(&stream, me, peer))
        .and_then(|ring| stream.set_read_timeout(None).map(|()| ring));
    let ring = match welcomed {
        Ok(ring) => ring,
        Err(e) => {
            tracing::info!("rank {me}: the lane from rank {peer} closed during its handshake: {e}");
            inbound.set_carried_by_lane(peer, false);
            acceptor.lanes.ended(peer);
            return;
        }
    };
    read_lane(peer, stream, ring, inbox, &inbound.watch, &acceptor.lanes);
}

/// Maps the shared ring rank `peer` offers on `stream`, if it offers one, and tells it
/// whether that worked; a ring that cannot be mapped leaves the lane on its socket.
fn take_ring(stream: &UnixStream, me: usize, peer: usize) -> io::Result<Option<Arc<RingReader>>> {
    let ring = receive_ring(stream)?.and_then(|(fd, capacity)| {
        RingReader::open(fd, capacity)
            .map_err(|e| {
                tracing::info!(
                    "rank {me}: the lane from rank {peer} goes without shared memory: {e}"
                )
            })
            .ok()
    });
    answer_ring(stream, ring.is_some())?;
    Ok(ring)
}
