//! [`TimedBody`]: a request body that fails once it has taken longer than the body-read
//! timeout, so that a client stalling mid-body gets 408 instead of holding its connection
//! (and, had it gone on, a share of the decoding budget) for ever.
//!
//! The connection's own timers see only its phase: once a head is read the request is
//! being answered, and the time spent waiting for its body is not told apart from the time
//! spent predicting, which has no limit. The body is where the waiting happens, so it is
//! timed there, from the moment the handler is called.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

/// Why a body read failed: it was not complete within `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyTimeout {
    pub(crate) timeout: Duration,
}

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body was not received within {} ms (--body-read-timeout-ms)",
            self.timeout.as_millis()
        )
    }
}

impl std::error::Error for BodyTimeout {}

impl BodyTimeout {
    /// The timeout behind `error`, found anywhere in its chain of sources (axum wraps body
    /// errors in two layers of its own).
    pub(crate) fn find(error: &(dyn std::error::Error + 'static)) -> Option<BodyTimeout> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(timeout) = e.downcast_ref::<BodyTimeout>() {
                return Some(*timeout);
            }
            next = e.source();
        }
        None
    }
}

/// `inner`, failing with [`BodyTimeout`] when its last frame has not come `timeout` after
/// it was made (when its request's head had been read).
pub(crate) struct TimedBody<B> {
    inner: Pin<Box<B>>,
    deadline: Option<Pin<Box<Sleep>>>,
    timeout: Duration,
}

impl<B> TimedBody<B> {
    /// `inner` with no deadline when `timeout` is `None`.
    pub(crate) fn new(inner: B, timeout: Option<Duration>) -> Self {
        Self {
            inner: Box::pin(inner),
            deadline: timeout.map(|t| Box::pin(tokio::time::sleep(t))),
            timeout: timeout.unwrap_or_default(),
        }
    }
}

impl<B> Body for TimedBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = self.inner.as_mut().poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let timeout = self.timeout;
        let expired = match self.deadline.as_mut() {
            Some(deadline) => deadline.as_mut().poll(cx).is_ready(),
            None => false,
        };
        if expired {
            return Poll::Ready(Some(Err(Box::new(BodyTimeout { timeout }))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
