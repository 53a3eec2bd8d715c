//! Which connections a server takes, before any of them is authenticated: at most
//! `max_connections` at once, each of which must open with its handshake (the HTTP/2
//! preface, or a TLS ClientHello) within `handshake_timeout`.
//!
//! Every connection holds a file descriptor, and the token or certificate is checked only
//! once the connection speaks. Without a cap, idle connections to a task's port exhaust its
//! descriptors and the task dies at its next checkpoint ("Too many open files"); without a
//! timeout, a connection that never speaks holds its place under the cap for ever. hyper's
//! HTTP/2 keepalive bounds a connection only once its handshake is done.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::{Connected, TcpIncoming};

/// How long a connection may take to open with its handshake unless told otherwise.
pub(crate) const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections a server of an unknown cluster size takes at once (the ps tasks'): about
/// half of the 1,024 descriptors a process is commonly allowed, the rest left for
/// checkpoints, input files and the connections it makes itself.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The HTTP/2 connection preface is 24 bytes; a TLS ClientHello is longer.
const OPENING_BYTES: usize = 24;

/// How often an over-cap refusal is logged at most: a flood must not flood the log too.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// What a server admits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub(crate) max_connections: usize,
    /// How long a connection may take to send its first bytes (the HTTP/2 preface, or a
    /// TLS ClientHello) before it is closed.
    pub(crate) handshake_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

impl ConnectionLimits {
    /// The limits of a rank of a cluster of `world_size` ranks: each peer keeps one
    /// connection and may have a few more being dialled or closing (a restarted peer's old
    /// one until keepalive drops it), so 4 per rank and 64 to spare — far below the 1,024
    /// descriptors a process is commonly allowed for clusters of up to ~200 tasks.
    pub(crate) fn for_cluster(world_size: usize, handshake_timeout: Duration) -> Self {
        Self {
            max_connections: world_size.saturating_mul(4).saturating_add(64),
            handshake_timeout,
        }
    }
}

/// The connections of `incoming` within `limits`; one over the cap is closed at once.
pub(crate) fn admit(
    incoming: TcpIncoming,
    limits: ConnectionLimits,
) -> impl Stream<Item = io::Result<Admitted<TcpStream>>> + Send + 'static {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let last_warned: Mutex<Option<Instant>> = Mutex::new(None);
    incoming.filter_map(move |accepted| {
        let tcp = match accepted {
            Ok(tcp) => tcp,
            Err(e) => return Some(Err(e)),
        };
        match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => Some(Ok(Admitted::new(tcp, permit, limits.handshake_timeout))),
            Err(_) => {
                let from = describe_peer(&tcp);
                drop(tcp);
                let mut last = last_warned.lock().unwrap_or_else(|e| e.into_inner());
                if last.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                    *last = Some(Instant::now());
                    tracing::warn!(
                        "closed a connection from {from}: {} connections are open, the most \
                         this task takes (refusals are logged once per {WARN_EVERY:?})",
                        limits.max_connections
                    );
                }
                None
            }
        }
    })
}

fn describe_peer(tcp: &TcpStream) -> String {
    tcp.peer_addr()
        .map_or_else(|_| "an unknown address".to_string(), |a| a.to_string())
}

/// An admitted connection: holds its place under the cap until dropped, and fails its reads
/// once `handshake_timeout` has passed before its first [`OPENING_BYTES`] arrived.
pub(crate) struct Admitted<T> {
    io: T,
    _permit: OwnedSemaphorePermit,
    /// Running until the opening bytes have arrived; `None` after.
    handshake: Option<Pin<Box<Sleep>>>,
    timeout: Duration,
    received: usize,
}

impl<T> Admitted<T> {
    fn new(io: T, permit: OwnedSemaphorePermit, timeout: Duration) -> Self {
        Self {
            io,
            _permit: permit,
            handshake: Some(Box::pin(tokio::time::sleep(timeout))),
            timeout,
            received: 0,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Admitted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if this.handshake.is_none() {
            return read;
        }
        if let Poll::Ready(Ok(())) = read {
            this.received += buf.filled().len() - before;
            if this.received >= OPENING_BYTES {
                this.handshake = None;
            }
            return read;
        }
        if read.is_pending() {
            let expired = this
                .handshake
                .as_mut()
                .is_some_and(|sleep| sleep.as_mut().poll(cx).is_ready());
            if expired {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no handshake within {:?}", this.timeout),
                )));
            }
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Admitted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<T: Connected> Connected for Admitted<T> {
    type ConnectInfo = T::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}
