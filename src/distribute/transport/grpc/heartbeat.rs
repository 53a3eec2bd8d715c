//! Heartbeats on an idle `Deliver` stream: while no message is waiting, an empty envelope
//! with the heartbeat tag goes out every interval, so the peer can tell a quiet rank from
//! a stopped one. The receiver counts neither as a message nor delivers it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::control::HEARTBEAT_TAG;
use super::deliver_framing::envelope_frames;

/// `inner`'s frames, with a heartbeat whenever it has had nothing to send for `interval`.
pub(super) struct WithHeartbeats<B> {
    inner: B,
    interval: Duration,
    next: Pin<Box<Sleep>>,
}

impl<B> WithHeartbeats<B> {
    pub(super) fn new(inner: B, interval: Duration) -> Self {
        Self {
            inner,
            interval,
            next: Box::pin(tokio::time::sleep(interval)),
        }
    }
}

impl<B> Body for WithHeartbeats<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        // The inner body returns `Pending` only between two envelopes (a large payload's
        // frame follows its head at once), so a heartbeat never splits one.
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            let deadline = Instant::now() + this.interval;
            this.next.as_mut().reset(deadline);
            return Poll::Ready(frame);
        }
        match this.next.as_mut().poll(cx) {
            Poll::Ready(()) => {
                let deadline = Instant::now() + this.interval;
                this.next.as_mut().reset(deadline);
                let (head, _) = envelope_frames(HEARTBEAT_TAG, Bytes::new());
                Poll::Ready(Some(Ok(Frame::data(head))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
