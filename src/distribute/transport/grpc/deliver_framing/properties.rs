//! Properties of the hand-framed `Deliver` stream: any bytes, cut anywhere, are envelopes
//! or an error, never a panic; envelopes read back exactly however they are chunked.

use proptest::prelude::*;

use super::tests::{chunks, read_all};
use super::*;

fn read(bytes: &[u8], chunk: usize) -> Result<Vec<(u64, Vec<u8>)>, Status> {
    read_all(chunks(bytes, chunk))
}

proptest! {
    #[test]
    fn any_bytes_are_envelopes_or_an_error(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        chunk in 1usize..50,
    ) {
        let _ = read(&bytes, chunk);
        // The same after a valid gRPC prefix announcing the rest.
        let mut framed = vec![0];
        framed.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        framed.extend_from_slice(&bytes);
        let _ = read(&framed, chunk);
    }

    #[test]
    fn envelopes_read_back_exactly_however_chunked(
        envelopes in prop::collection::vec(
            (any::<u64>(), prop::collection::vec(any::<u8>(), 0..300)),
            0..6,
        ),
        chunk in 1usize..100,
    ) {
        let mut bytes = Vec::new();
        for (tag, payload) in &envelopes {
            let (head, rest) = envelope_frames(*tag, Bytes::from(payload.clone()));
            bytes.extend_from_slice(&head);
            bytes.extend(rest.unwrap_or_default());
        }
        prop_assert_eq!(read(&bytes, chunk).unwrap(), envelopes);
    }

    #[test]
    fn a_length_over_the_limit_is_refused_before_reading(extra in 1u32..1000) {
        let len = (MAX_MESSAGE_BYTES + ENVELOPE_OVERHEAD) as u32 + extra;
        let mut bytes = vec![0];
        bytes.extend_from_slice(&len.to_be_bytes());
        let err = read(&bytes, 5).unwrap_err();
        prop_assert_eq!(err.code(), Code::ResourceExhausted);
    }
}
