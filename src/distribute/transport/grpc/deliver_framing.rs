//! The `Deliver` stream on the wire, framed by hand so that payloads are not copied more than
//! once: gRPC's 5-byte message prefix and the protobuf encoding of `Envelope { tag, payload }`
//! (`proto/collective.proto`), byte for byte what tonic and prost would produce and accept.
//!
//! tonic's codec copies every message twice on top of the socket's own copies: into its
//! encode buffer when sending, and from the HTTP/2 frames into its decode buffer when
//! receiving (plus once more here, from that buffer into the `Vec` that `recv` returns). On a
//! ring all-reduce those copies cost as much CPU as the kernel's, and with a few cores shared
//! by every rank that halves the throughput. Here a large payload goes to HTTP/2 as its own
//! frame, untouched, and is read from the HTTP/2 frames straight into its own vector.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use prost::encoding::{encode_varint, encoded_len_varint};
use prost::Message;
use tokio::sync::mpsc::UnboundedReceiver;
use tonic::codegen::http::HeaderMap;
use tonic::{Code, Status};

use super::collective_proto::Ack;
use super::config::MAX_MESSAGE_BYTES;
use super::payload::Payload;

/// The HTTP/2 path of `Deliver`.
pub(super) const DELIVER_PATH: &str = "/estimator.collective.Collective/Deliver";

/// Payloads up to this size share one HTTP/2 data frame with their prefix (a small copy);
/// larger ones travel as a frame of their own (no copy).
const INLINE_PAYLOAD_BYTES: usize = 16 << 10;

/// Bytes of an envelope besides its payload, at most: two keys and two 10-byte varints.
const ENVELOPE_OVERHEAD: usize = 22;

/// A message queued for a peer: (tag, payload).
pub(super) type Outgoing = (u64, Bytes);

/// The gRPC prefix of a message of `len` bytes: not compressed, big-endian length.
fn put_prefix(buf: &mut BytesMut, len: usize) {
    buf.put_u8(0);
    buf.put_u32(len as u32);
}

/// The bytes of one envelope as HTTP/2 data: its prefix and header fields, then (when large)
/// the payload itself.
pub(super) fn envelope_frames(tag: u64, payload: Bytes) -> (Bytes, Option<Bytes>) {
    let len = payload.len();
    let fields = 1 + encoded_len_varint(tag) + 1 + encoded_len_varint(len as u64) + len;
    let inline = len <= INLINE_PAYLOAD_BYTES;
    let mut head = BytesMut::with_capacity(5 + fields - if inline { 0 } else { len });
    put_prefix(&mut head, fields);
    head.put_u8(0x08); // field 1 (tag), varint
    encode_varint(tag, &mut head);
    head.put_u8(0x12); // field 2 (payload), length-delimited
    encode_varint(len as u64, &mut head);
    if inline {
        head.extend_from_slice(&payload);
        (head.freeze(), None)
    } else {
        (head.freeze(), Some(payload))
    }
}

/// The request body of `Deliver`: the envelopes queued on `messages`, in order, until the
/// sender drops it.
pub(super) struct EnvelopeBody {
    messages: UnboundedReceiver<Outgoing>,
    /// A large payload whose prefix was just sent.
    payload: Option<Bytes>,
}

impl EnvelopeBody {
    pub(super) fn new(messages: UnboundedReceiver<Outgoing>) -> Self {
        Self {
            messages,
            payload: None,
        }
    }
}

impl Body for EnvelopeBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(payload) = self.payload.take() {
            return Poll::Ready(Some(Ok(Frame::data(payload))));
        }
        self.messages.poll_recv(cx).map(|message| {
            message.map(|(tag, payload)| {
                let (head, payload) = envelope_frames(tag, payload);
                self.payload = payload;
                Ok(Frame::data(head))
            })
        })
    }
}

/// The response body of a successful `Deliver`: the `Ack`, then trailers saying OK.
pub(super) struct AckBody {
    ack: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl AckBody {
    pub(super) fn new(received: u64) -> Self {
        let ack = Ack { received }.encode_to_vec();
        let mut data = BytesMut::with_capacity(5 + ack.len());
        put_prefix(&mut data, ack.len());
        data.extend_from_slice(&ack);
        let mut trailers = HeaderMap::new();
        Status::ok("")
            .add_header(&mut trailers)
            .expect("an OK status is a valid header");
        Self {
            ack: Some(data.freeze()),
            trailers: Some(trailers),
        }
    }
}

impl Body for AckBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = match self.ack.take() {
            Some(ack) => Some(Frame::data(ack)),
            None => self.trailers.take().map(Frame::trailers),
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.ack.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.ack.as_ref().map_or(0, |a| a.len() as u64))
    }
}

/// The number of messages a `Deliver` response acknowledges, or the status it failed with.
pub(super) async fn read_ack<B>(headers: &HeaderMap, mut body: B) -> Result<u64, Status>
where
    B: Body<Data = Bytes, Error = Status> + Unpin,
{
    // A failure before any message is answered with headers alone ("trailers-only").
    if let Some(status) = Status::from_header_map(headers) {
        if status.code() != Code::Ok {
            return Err(status);
        }
    }
    let mut data = BytesMut::new();
    let mut status = None;
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        match frame?.into_data() {
            Ok(chunk) => data.extend_from_slice(&chunk),
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    status = Status::from_header_map(&trailers);
                }
            }
        }
    }
    let status = status.unwrap_or_else(|| Status::unknown("the answer had no grpc-status"));
    if status.code() != Code::Ok {
        return Err(status);
    }
    let malformed = || Status::internal("malformed acknowledgement");
    if data.len() < 5 || data[0] != 0 {
        return Err(malformed());
    }
    let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    let message = data.get(5..5 + len).ok_or_else(malformed)?;
    Ok(Ack::decode(message).map_err(|_| malformed())?.received)
}

fn malformed(what: &str) -> Status {
    Status::invalid_argument(format!("malformed envelope: {what}"))
}

/// Reads the envelopes of a `Deliver` request body, each payload copied once, from the HTTP/2
/// frames into a vector of its own. Any valid protobuf encoding of `Envelope` is accepted
/// (fields in any order, defaults omitted, unknown fields skipped).
pub(super) struct EnvelopeReader<B> {
    body: B,
    /// The unread part of the current data frame.
    chunk: Bytes,
}

impl<B> EnvelopeReader<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    pub(super) fn new(body: B) -> Self {
        Self {
            body,
            chunk: Bytes::new(),
        }
    }

    /// The next envelope as (tag, payload); `None` when the stream ended between two.
    pub(super) async fn next(&mut self) -> Result<Option<(u64, Payload)>, Status> {
        if !self.fill().await? {
            return Ok(None);
        }
        let mut prefix = [0u8; 5];
        for byte in &mut prefix {
            *byte = self.byte().await?;
        }
        if prefix[0] != 0 {
            return Err(Status::unimplemented(
                "compressed messages are not supported",
            ));
        }
        let mut left = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        if left > MAX_MESSAGE_BYTES + ENVELOPE_OVERHEAD {
            return Err(Status::resource_exhausted(format!(
                "a message of {left} bytes is over the limit of {MAX_MESSAGE_BYTES}"
            )));
        }
        let (mut tag, mut payload) = (0, Payload::default());
        while left > 0 {
            let key = self.varint(&mut left).await?;
            match (key >> 3, key & 7) {
                (1, 0) => tag = self.varint(&mut left).await?,
                (field, 2) => {
                    let len = usize::try_from(self.varint(&mut left).await?)
                        .ok()
                        .filter(|&len| len <= left)
                        .ok_or_else(|| malformed("a field runs past the message"))?;
                    left -= len;
                    if field == 2 {
                        payload = self.read(len).await?;
                    } else {
                        self.skip(len).await?;
                    }
                }
                (_, 0) => {
                    self.varint(&mut left).await?;
                }
                (_, wire) if wire == 1 || wire == 5 => {
                    let len = if wire == 1 { 8 } else { 4 };
                    left = left
                        .checked_sub(len)
                        .ok_or_else(|| malformed("a field runs past the message"))?;
                    self.skip(len).await?;
                }
                _ => return Err(malformed("unknown wire type")),
            }
        }
        Ok(Some((tag, payload)))
    }

    /// Makes `chunk` non-empty; false at the end of the body.
    async fn fill(&mut self) -> Result<bool, Status> {
        while self.chunk.is_empty() {
            let frame = poll_fn(|cx| Pin::new(&mut self.body).poll_frame(cx)).await;
            match frame {
                None => return Ok(false),
                Some(Err(e)) => return Err(Status::from_error(e.into())),
                // Trailers on a request mean nothing here.
                Some(Ok(frame)) => self.chunk = frame.into_data().unwrap_or_default(),
            }
        }
        Ok(true)
    }

    async fn byte(&mut self) -> Result<u8, Status> {
        if !self.fill().await? {
            return Err(malformed("the stream ended inside a message"));
        }
        Ok(self.chunk.get_u8())
    }

    /// A varint of the message, counted against the `left` bytes of the message.
    async fn varint(&mut self, left: &mut usize) -> Result<u64, Status> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            *left = left
                .checked_sub(1)
                .ok_or_else(|| malformed("a varint runs past the message"))?;
            let byte = self.byte().await?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("a varint is longer than 10 bytes"))
    }

    /// The next `len` bytes, as the slices of HTTP/2 frames they arrived in.
    async fn read(&mut self, len: usize) -> Result<Payload, Status> {
        let mut pieces = Vec::new();
        let mut left = len;
        while left > 0 {
            if !self.fill().await? {
                return Err(malformed("the stream ended inside a message"));
            }
            let n = left.min(self.chunk.len());
            pieces.push(self.chunk.split_to(n));
            left -= n;
        }
        Ok(Payload::from_pieces(pieces))
    }

    async fn skip(&mut self, mut len: usize) -> Result<(), Status> {
        while len > 0 {
            if !self.fill().await? {
                return Err(malformed("the stream ended inside a message"));
            }
            let n = len.min(self.chunk.len());
            self.chunk.advance(n);
            len -= n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
