//! Tests of the hand-made framing against what prost encodes, chunked every way.

use std::collections::VecDeque;

use super::*;
use crate::distribute::transport::grpc::collective_proto::Envelope;

/// A body made of given chunks.
pub(super) struct Chunks(VecDeque<Bytes>);

impl Body for Chunks {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        Poll::Ready(self.0.pop_front().map(|c| Ok(Frame::data(c))))
    }
}

/// `bytes` cut into chunks of `size` bytes.
pub(super) fn chunks(bytes: &[u8], size: usize) -> Chunks {
    Chunks(bytes.chunks(size).map(Bytes::copy_from_slice).collect())
}

/// gRPC framing of a prost-encoded message.
fn framed(message: &impl Message) -> Vec<u8> {
    let encoded = message.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    out.extend_from_slice(&encoded);
    out
}

pub(super) fn read_all(body: Chunks) -> Result<Vec<(u64, Vec<u8>)>, Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut reader = EnvelopeReader::new(body);
        let mut out = Vec::new();
        while let Some((tag, payload)) = reader.next().await? {
            out.push((tag, payload.into_vec()));
        }
        Ok(out)
    })
}

fn envelopes() -> Vec<(u64, Vec<u8>)> {
    vec![
        (0, vec![]),
        (0, vec![1, 2, 3]),
        (u64::MAX, vec![]),
        (0x0300_0000_0000_0102, (0..=255).collect()),
        (7, vec![9; INLINE_PAYLOAD_BYTES + 1]),
    ]
}

#[test]
fn what_prost_encodes_is_read_whatever_the_chunking() {
    let mut bytes = Vec::new();
    for (tag, payload) in envelopes() {
        let envelope = Envelope {
            tag,
            payload: payload.into(),
        };
        bytes.extend(framed(&envelope));
    }
    for size in [1, 2, 3, 7, 1000, bytes.len()] {
        assert_eq!(
            read_all(chunks(&bytes, size)).unwrap(),
            envelopes(),
            "{size}"
        );
    }
}

#[test]
fn what_is_sent_is_what_prost_encodes() {
    for (tag, payload) in envelopes() {
        let (head, rest) = envelope_frames(tag, Bytes::from(payload.clone()));
        let mut bytes = head.to_vec();
        assert_eq!(rest.is_some(), payload.len() > INLINE_PAYLOAD_BYTES);
        bytes.extend(rest.unwrap_or_default());
        let decoded = Envelope::decode(&bytes[5..]).unwrap();
        assert_eq!((decoded.tag, decoded.payload.to_vec()), (tag, payload));
        assert_eq!(
            u32::from_be_bytes(bytes[1..5].try_into().unwrap()) as usize,
            bytes.len() - 5
        );
    }
}

#[test]
fn unknown_fields_are_skipped_and_the_last_payload_wins() {
    // field 3 varint, field 1 varint, field 4 fixed64, field 2 twice, field 5 fixed32,
    // field 6 length-delimited.
    let fields: Vec<u8> = [
        &[0x18, 0x96, 0x01][..],
        &[0x08, 0x05],
        &[0x21, 1, 2, 3, 4, 5, 6, 7, 8],
        &[0x12, 0x01, 0xaa],
        &[0x12, 0x02, 0xbb, 0xcc],
        &[0x2d, 1, 2, 3, 4],
        &[0x32, 0x03, 1, 2, 3],
    ]
    .concat();
    let mut bytes = vec![0];
    bytes.extend_from_slice(&(fields.len() as u32).to_be_bytes());
    bytes.extend(fields);
    assert_eq!(
        read_all(chunks(&bytes, 2)).unwrap(),
        vec![(5, vec![0xbb, 0xcc])]
    );
}

#[test]
fn truncated_compressed_and_oversized_messages_are_refused() {
    let whole = framed(&Envelope {
        tag: 1,
        payload: vec![1, 2, 3].into(),
    });
    let cut = read_all(chunks(&whole[..whole.len() - 1], 3)).unwrap_err();
    assert_eq!(cut.code(), Code::InvalidArgument);
    let mut compressed = whole.clone();
    compressed[0] = 1;
    assert_eq!(
        read_all(chunks(&compressed, 100)).unwrap_err().code(),
        Code::Unimplemented
    );
    let mut huge = whole.clone();
    huge[1..5].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(
        read_all(chunks(&huge, 100)).unwrap_err().code(),
        Code::ResourceExhausted
    );
    // A field claiming more bytes than its message holds.
    let bad = [0, 0, 0, 0, 2, 0x12, 0x05];
    assert_eq!(
        read_all(chunks(&bad, 100)).unwrap_err().code(),
        Code::InvalidArgument
    );
}

#[test]
fn acknowledgements_round_trip_and_failures_come_back() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let received = runtime
        .block_on(read_ack(&HeaderMap::new(), AckBody::new(42)))
        .unwrap();
    assert_eq!(received, 42);
    let failed: tonic::codegen::http::Response<tonic::body::Body> =
        Status::already_exists("twice").into_http();
    let status = runtime
        .block_on(read_ack(failed.headers(), tonic::body::Body::empty()))
        .unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);
    assert_eq!(status.message(), "twice");
}
