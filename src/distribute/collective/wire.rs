//! f32 values as message payloads (little-endian, in the compression's format), and folding
//! a received payload into a buffer where it lies, piece by piece.

use half::f16;

use super::compression::{bf16_from_f32, bf16_to_f32};
use super::{Combine, Compression};
use crate::distribute::Lent;

/// The little-endian bytes of `values` in `compression`'s format.
pub(super) fn encode(values: &[f32], compression: Compression) -> Vec<u8> {
    let width = compression.element_bytes();
    let mut out = vec![0u8; values.len() * width];
    match compression {
        Compression::None => {
            for (dst, v) in out.chunks_exact_mut(4).zip(values) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
        }
        Compression::Fp16 => {
            for (dst, v) in out.chunks_exact_mut(2).zip(values) {
                dst.copy_from_slice(&f16::from_f32(*v).to_le_bytes());
            }
        }
        Compression::Bf16 => {
            for (dst, v) in out.chunks_exact_mut(2).zip(values) {
                dst.copy_from_slice(&bf16_from_f32(*v).to_le_bytes());
            }
        }
    }
    out
}

/// A payload whose size does not fit the buffer it is folded into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "sent {received_bytes} bytes where {} ({expected_values} values of {element_bytes} bytes) \
     were expected; do all ranks pass buffers of the same length and the same compression?",
    .expected_values * .element_bytes
)]
pub(super) struct PayloadSizeError {
    /// The size of the payload received.
    pub(super) received_bytes: usize,
    /// The length of the buffer, in values.
    pub(super) expected_values: usize,
    /// Bytes of one value on the wire.
    pub(super) element_bytes: usize,
}

/// Folds the values of `payload`, in `compression`'s format, into `dst` by `combine`, reading
/// the payload in the pieces it arrived in (a piece may end inside a value). The error says
/// how the sizes differ; nothing is folded then.
pub(super) fn fold_into(
    dst: &mut [f32],
    payload: Lent<'_>,
    combine: Combine,
    compression: Compression,
) -> Result<(), PayloadSizeError> {
    let width = compression.element_bytes();
    if payload.len() != dst.len() * width {
        return Err(PayloadSizeError {
            received_bytes: payload.len(),
            expected_values: dst.len(),
            element_bytes: width,
        });
    }
    let mut at = 0;
    let mut split = [0u8; 4];
    let mut carried = 0;
    for mut piece in payload.pieces() {
        if carried > 0 {
            let take = (width - carried).min(piece.len());
            split[carried..carried + take].copy_from_slice(&piece[..take]);
            (carried, piece) = (carried + take, &piece[take..]);
            if carried < width {
                continue;
            }
            fold_whole(&mut dst[at..at + 1], &split[..width], combine, compression);
            at += 1;
        }
        let whole = piece.len() / width;
        fold_whole(
            &mut dst[at..at + whole],
            &piece[..whole * width],
            combine,
            compression,
        );
        at += whole;
        let rest = &piece[whole * width..];
        split[..rest.len()].copy_from_slice(rest);
        carried = rest.len();
    }
    Ok(())
}

/// Folds `bytes`, exactly `dst.len()` values, into `dst`: one loop per format and
/// combination, so that each compiles to straight vector code.
fn fold_whole(dst: &mut [f32], bytes: &[u8], combine: Combine, compression: Compression) {
    fn run(
        dst: &mut [f32],
        bytes: &[u8],
        width: usize,
        combine: Combine,
        decode: fn(&[u8]) -> f32,
    ) {
        let incoming = bytes.chunks_exact(width).map(decode);
        match combine {
            Combine::Add => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d += v),
            Combine::Copy => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d = v),
        }
    }
    match compression {
        Compression::None => run(dst, bytes, 4, combine, |b| {
            f32::from_le_bytes([b[0], b[1], b[2], b[3]])
        }),
        Compression::Fp16 => run(dst, bytes, 2, combine, |b| {
            f16::from_le_bytes([b[0], b[1]]).to_f32()
        }),
        Compression::Bf16 => run(dst, bytes, 2, combine, |b| {
            bf16_to_f32(u16::from_le_bytes([b[0], b[1]]))
        }),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn fold(
        dst: &mut [f32],
        pieces: &[Vec<u8>],
        combine: Combine,
        c: Compression,
    ) -> Result<(), PayloadSizeError> {
        let pieces: Vec<Bytes> = pieces.iter().cloned().map(Bytes::from).collect();
        fold_into(dst, Lent::new(&pieces), combine, c)
    }

    #[test]
    fn values_survive_the_wire_bit_for_bit() {
        let values = [
            1.5f32,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::MIN_POSITIVE / 2.0,
        ];
        let mut out = [0.0f32; 5];
        fold(
            &mut out,
            &[encode(&values, Compression::None)],
            Combine::Copy,
            Compression::None,
        )
        .unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&values));
    }

    #[test]
    fn pieces_may_cut_values_anywhere() {
        let values: Vec<f32> = (0..37).map(|i| i as f32 * 0.37 - 3.0).collect();
        for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
            let bytes = encode(&values, c);
            let mut whole = vec![1.0f32; values.len()];
            fold(&mut whole, std::slice::from_ref(&bytes), Combine::Add, c).unwrap();
            for cuts in [vec![1], vec![3, 5], vec![1, 2, 3, 7, 11], vec![0, 0, 13]] {
                let (mut pieces, mut at, mut sizes) = (Vec::new(), 0, cuts.iter().cycle());
                while at < bytes.len() {
                    let end = (at + sizes.next().unwrap()).min(bytes.len());
                    pieces.push(bytes[at..end].to_vec());
                    at = end;
                }
                let mut got = vec![1.0f32; values.len()];
                fold(&mut got, &pieces, Combine::Add, c).unwrap();
                assert_eq!(got, whole, "{c} cut by {cuts:?}");
            }
            for (v, w) in values.iter().zip(&whole) {
                assert_eq!(*w, 1.0 + c.round(*v), "{c}");
            }
        }
    }

    #[test]
    fn add_folds_and_sizes_must_match() {
        let mut acc = [1.0f32, 2.0];
        fold(
            &mut acc,
            &[encode(&[0.5, 0.25], Compression::None)],
            Combine::Add,
            Compression::None,
        )
        .unwrap();
        assert_eq!(acc, [1.5, 2.25]);
        let err = fold(
            &mut acc,
            &[encode(&[1.0], Compression::None)],
            Combine::Add,
            Compression::None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("sent 4 bytes where 8 (2 values of 4 bytes) were expected"),
            "{err}"
        );
        assert_eq!(acc, [1.5, 2.25], "nothing folded");
        let err = fold(
            &mut acc,
            &[encode(&[1.0, 2.0], Compression::None)],
            Combine::Add,
            Compression::Bf16,
        )
        .unwrap_err();
        assert_eq!(err.received_bytes, 8);
        assert_eq!(err.element_bytes, 2);
    }

    #[test]
    fn sixteen_bit_formats_halve_the_bytes() {
        assert_eq!(encode(&[1.0; 10], Compression::Bf16).len(), 20);
        assert_eq!(encode(&[1.0; 10], Compression::Fp16).len(), 20);
        assert_eq!(encode(&[1.0; 10], Compression::None).len(), 40);
    }
}
