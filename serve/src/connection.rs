//! One connection: hyper's HTTP/1 over the socket, what the connection is doing (waiting
//! for a request, reading a request head, answering), and when it is closed for quiet.
//!
//! hyper's own header-read timer starts when the connection goes idle, so it would close a
//! quiet keep-alive connection after the header timeout whatever the idle timeout; reads
//! are watched here instead, so that the head is timed from its first byte and the wait
//! between requests by the idle timeout.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::body_timeout::TimedBody;

/// What a connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request (none yet, or the last one answered).
    Idle,
    /// Bytes of a request arrived; its head is not complete.
    Head,
    /// A request is being answered (its body read, its prediction made).
    Busy,
}

struct State {
    phase: Phase,
    since: Instant,
    in_flight: usize,
    closing: bool,
}

/// A connection's phase, shared by its socket, its requests and the connection list.
pub(crate) struct Activity {
    state: Mutex<State>,
    changed: Notify,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                phase: Phase::Idle,
                since: Instant::now(),
                in_flight: 0,
                closing: false,
            }),
            changed: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read_some(&self) {
        let mut state = self.state();
        if state.phase == Phase::Idle {
            state.phase = Phase::Head;
            state.since = Instant::now();
            drop(state);
            self.changed.notify_one();
        }
    }

    fn begin(self: &Arc<Self>) -> Answering {
        let mut state = self.state();
        state.in_flight += 1;
        state.phase = Phase::Busy;
        Answering(Arc::clone(self))
    }

    /// Since when the connection has waited for a request; `None` while it reads or
    /// answers one, or once it is closing.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let state = self.state();
        (state.phase == Phase::Idle && !state.closing).then_some(state.since)
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.state().closing
    }

    /// Asks the connection to close: at once when idle, after its answer otherwise.
    pub(crate) fn close(&self) {
        self.state().closing = true;
        self.changed.notify_one();
    }
}

/// A request being answered; dropping it (the answer made) makes the connection idle.
struct Answering(Arc<Activity>);

impl Drop for Answering {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight -= 1;
        if state.in_flight == 0 {
            state.phase = Phase::Idle;
            state.since = Instant::now();
            drop(state);
            self.0.changed.notify_one();
        }
    }
}

/// The socket, telling the connection's activity when request bytes arrive.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_some();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// How long a connection may stay quiet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) header_read: Option<Duration>,
    pub(crate) idle: Option<Duration>,
    pub(crate) body_read: Option<Duration>,
}

/// Serves `router` on `stream` until the client closes, a timeout expires or `activity`
/// is asked to close.
pub(crate) async fn serve(
    stream: TcpStream,
    activity: Arc<Activity>,
    router: Router,
    timeouts: Timeouts,
) {
    let io = TokioIo::new(Watched {
        stream,
        activity: Arc::clone(&activity),
    });
    let app = TowerToHyperService::new(router);
    let requests = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
        let answering = requests.begin();
        let request = request.map(|body| TimedBody::new(body, timeouts.body_read));
        let answer = hyper::service::Service::call(&app, request);
        async move {
            let response = answer.await;
            drop(answering);
            response
        }
    });
    let connection = http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    let mut closing = false;
    loop {
        let (asked_to_close, phase, since) = {
            let state = activity.state();
            (state.closing, state.phase, state.since)
        };
        if asked_to_close && !closing {
            // An idle connection closes at once, a busy one after its answer; one still
            // reading a head keeps its header timeout.
            connection.as_mut().graceful_shutdown();
            closing = true;
        }
        let deadline = match phase {
            Phase::Idle => timeouts.idle.map(|t| since + t),
            Phase::Head => timeouts.header_read.map(|t| since + t),
            Phase::Busy => None,
        };
        if deadline.is_some_and(|d| d <= Instant::now()) {
            // Dropping the connection closes the socket; no request is under way on it.
            tracing::debug!("closing a connection quiet past its timeout");
            return;
        }
        let expiry = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!("connection ended: {e}");
                }
                return;
            }
            () = activity.changed.notified() => {}
            () = expiry => {}
        }
    }
}
