//! The encoder through tonic's own encoding body, as a call sends a message.

use std::future::poll_fn;
use std::pin::pin;

use bytes::Bytes;
use http_body::Body;
use prost::Message;
use tonic::codec::{EncodeBody, Encoder, HEADER_SIZE};
use tonic::Status;
use tonic_prost::ProstEncoder;

use super::SizedEncoder;
use crate::distribute::ps::proto::{PullReply, Variable};

/// A reply whose large variable comes before a small one, as a layer's weight before its
/// bias.
fn reply() -> PullReply {
    let variable = |path: &str, bytes: usize| Variable {
        path: path.to_string(),
        shape: vec![bytes as u64 / 4],
        values: Bytes::from((0..bytes).map(|i| i as u8).collect::<Vec<u8>>()),
    };
    PullReply {
        step: 7,
        variables: vec![
            variable("dense/kernel", 3 << 20),
            variable("dense/bias", 4096),
        ],
        ..PullReply::default()
    }
}

/// The one frame `encoder` makes of `reply()`, and the capacity of the buffer it was written
/// into (the frame owns that buffer once the body is gone).
fn encoded<E: Encoder<Item = PullReply, Error = Status>>(encoder: E) -> (Vec<u8>, usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let source = tokio_stream::iter([Ok::<_, Status>(reply())]);
    let frame = runtime.block_on(async {
        let mut body = pin!(EncodeBody::new_client(encoder, source, None, None));
        let frame = poll_fn(|cx| body.as_mut().poll_frame(cx)).await;
        frame
            .expect("a frame")
            .expect("encoded")
            .into_data()
            .expect("data")
    });
    let bytes = Vec::from(frame);
    let capacity = bytes.capacity();
    (bytes, capacity)
}

#[test]
fn a_message_is_written_into_a_buffer_of_its_own_length() {
    let (bytes, capacity) = encoded(SizedEncoder(std::marker::PhantomData));
    let length = reply().encoded_len();
    assert_eq!(bytes.len(), HEADER_SIZE + length);
    assert_eq!(
        PullReply::decode(&bytes[HEADER_SIZE..]).unwrap(),
        reply(),
        "the same message"
    );
    assert!(
        capacity < length + length / 8,
        "buffer of {capacity} bytes for {length}"
    );
    // prost's own encoder grows the buffer past the large variable, doubling it for the small
    // one after.
    let (_, doubled) = encoded(ProstEncoder::<PullReply>::default());
    assert!(
        doubled > length + length / 2,
        "{doubled} bytes for {length}"
    );
}
