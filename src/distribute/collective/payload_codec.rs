//! f32 values as message payloads (little-endian, in the compression's format), and folding
//! a received payload into a buffer where it lies, piece by piece.

use half::f16;

use super::compression::{bf16_from_f32, bf16_to_f32};
use super::split_pass::{split_pass, split_pass_reading};
use super::{Combine, Compression};
#[cfg(test)]
use crate::distribute::transport::PAYLOAD_POOL;
use crate::distribute::Lent;

/// Whether values can be written and read as native words: the wire is little-endian.
const NATIVE_IS_WIRE: bool = cfg!(target_endian = "little");

/// The little-endian bytes of `values` in `compression`'s format, in a buffer from the
/// payload pool.
#[cfg(test)]
pub(super) fn encode(values: &[f32], compression: Compression, threads: usize) -> Vec<u8> {
    let mut out = PAYLOAD_POOL.take(values.len() * compression.element_bytes());
    encode_into(&mut out, values, compression, threads);
    out
}

/// Writes the little-endian bytes of `values` in `compression`'s format to `out` (exactly
/// their size). Written as whole words where the buffer is aligned for them (it always is,
/// coming from the allocator), so that the loop compiles to vector code; split over up to
/// `threads` threads of the calling pool.
pub(crate) fn encode_into(
    out: &mut [u8],
    values: &[f32],
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => match bytemuck::try_cast_slice_mut::<u8, u32>(out) {
            Ok(words) if NATIVE_IS_WIRE => split_pass_reading(words, values, threads, |w, v| {
                w.iter_mut().zip(v).for_each(|(w, v)| *w = v.to_bits())
            }),
            _ => encode_bytes(out, values, |v| v.to_bits().to_le_bytes()),
        },
        Compression::Fp16 => encode_halves(out, values, threads, |v| f16::from_f32(v).to_bits()),
        Compression::Bf16 => encode_halves(out, values, threads, bf16_from_f32),
    }
}

/// [`finalize_and_encode_into`] a buffer from the payload pool.
#[cfg(test)]
pub(super) fn finalize_and_encode(
    values: &mut [f32],
    divisor: f32,
    compression: Compression,
    threads: usize,
) -> Vec<u8> {
    let mut out = PAYLOAD_POOL.take(values.len() * compression.element_bytes());
    finalize_and_encode_into(&mut out, values, divisor, compression, threads);
    out
}

/// Divides `values` by `divisor` and rounds them to `compression`'s format in place,
/// writing their encoding to `out` (exactly its size): what the rank that completed a
/// chunk's sum keeps and sends round the ring, in one pass over it (split as
/// [`encode_into`] is).
pub(super) fn finalize_and_encode_into(
    out: &mut [u8],
    values: &mut [f32],
    divisor: f32,
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => match bytemuck::try_cast_slice_mut::<u8, u32>(out) {
            Ok(words) if NATIVE_IS_WIRE => split_pass(words, values, threads, |w, v| {
                for (w, v) in w.iter_mut().zip(v.iter_mut()) {
                    *v /= divisor;
                    *w = v.to_bits();
                }
            }),
            _ => {
                values.iter_mut().for_each(|v| *v /= divisor);
                encode_bytes(out, values, |v| v.to_bits().to_le_bytes());
            }
        },
        Compression::Fp16 => {
            values
                .iter_mut()
                .for_each(|v| *v = compression.round(*v / divisor));
            encode_halves(out, values, threads, |v| f16::from_f32(v).to_bits());
        }
        Compression::Bf16 => match bytemuck::try_cast_slice_mut::<u8, u16>(out) {
            Ok(halves) if NATIVE_IS_WIRE => split_pass(halves, values, threads, |h, v| {
                for (h, v) in h.iter_mut().zip(v.iter_mut()) {
                    *h = bf16_from_f32(*v / divisor);
                    *v = bf16_to_f32(*h);
                }
            }),
            _ => {
                values
                    .iter_mut()
                    .for_each(|v| *v = compression.round(*v / divisor));
                encode_bytes(out, values, |v| bf16_from_f32(v).to_le_bytes());
            }
        },
    }
}

fn encode_halves(out: &mut [u8], values: &[f32], threads: usize, half: impl Fn(f32) -> u16 + Sync) {
    match bytemuck::try_cast_slice_mut::<u8, u16>(out) {
        Ok(halves) if NATIVE_IS_WIRE => split_pass_reading(halves, values, threads, |h, v| {
            h.iter_mut().zip(v).for_each(|(h, v)| *h = half(*v))
        }),
        _ => encode_bytes(out, values, |v| half(v).to_le_bytes()),
    }
}

fn encode_bytes<const N: usize>(out: &mut [u8], values: &[f32], bytes: impl Fn(f32) -> [u8; N]) {
    for (dst, v) in out.chunks_exact_mut(N).zip(values) {
        dst.copy_from_slice(&bytes(*v));
    }
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
/// how the sizes differ; nothing is folded then. Long pieces are split as [`encode`] is.
pub(super) fn fold_into(
    dst: &mut [f32],
    payload: Lent<'_>,
    combine: Combine,
    compression: Compression,
    threads: usize,
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
            fold_whole(
                &mut dst[at..at + 1],
                &split[..width],
                combine,
                compression,
                1,
            );
            at += 1;
        }
        let whole = piece.len() / width;
        fold_whole(
            &mut dst[at..at + whole],
            &piece[..whole * width],
            combine,
            compression,
            threads,
        );
        at += whole;
        let rest = &piece[whole * width..];
        split[..rest.len()].copy_from_slice(rest);
        carried = rest.len();
    }
    Ok(())
}

/// Folds `bytes`, exactly `dst.len()` values, into `dst`: one loop per format and
/// combination, over whole words where the bytes are aligned for them, so that each
/// compiles to straight vector code.
fn fold_whole(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => match bytemuck::try_cast_slice::<u8, u32>(bytes) {
            Ok(words) if NATIVE_IS_WIRE => split_pass_reading(dst, words, threads, |d, w| {
                fold_words(d, w, combine, f32::from_bits)
            }),
            _ => fold_bytes(dst, bytes, combine, |b: [u8; 4]| f32::from_le_bytes(b)),
        },
        Compression::Fp16 => {
            fold_halves(dst, bytes, combine, threads, |h| f16::from_bits(h).to_f32())
        }
        Compression::Bf16 => fold_halves(dst, bytes, combine, threads, bf16_to_f32),
    }
}

fn fold_halves(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
    threads: usize,
    decode: impl Fn(u16) -> f32 + Sync,
) {
    match bytemuck::try_cast_slice::<u8, u16>(bytes) {
        Ok(halves) if NATIVE_IS_WIRE => split_pass_reading(dst, halves, threads, |d, h| {
            fold_words(d, h, combine, &decode)
        }),
        _ => fold_bytes(dst, bytes, combine, |b: [u8; 2]| {
            decode(u16::from_le_bytes(b))
        }),
    }
}

#[inline(always)]
fn fold_words<W: Copy>(dst: &mut [f32], words: &[W], combine: Combine, decode: impl Fn(W) -> f32) {
    let incoming = words.iter().map(|w| decode(*w));
    match combine {
        Combine::Add => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d += v),
        Combine::Copy => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d = v),
    }
}

fn fold_bytes<const N: usize>(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
    decode: impl Fn([u8; N]) -> f32,
) {
    let incoming = bytes
        .chunks_exact(N)
        .map(|b| decode(b.try_into().expect("chunks of N bytes")));
    match combine {
        Combine::Add => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d += v),
        Combine::Copy => dst.iter_mut().zip(incoming).for_each(|(d, v)| *d = v),
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
        fold_into(dst, Lent::new(&pieces), combine, c, 1)
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
            &[encode(&values, Compression::None, 1)],
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
            let bytes = encode(&values, c, 1);
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
            &[encode(&[0.5, 0.25], Compression::None, 1)],
            Combine::Add,
            Compression::None,
        )
        .unwrap();
        assert_eq!(acc, [1.5, 2.25]);
        let err = fold(
            &mut acc,
            &[encode(&[1.0], Compression::None, 1)],
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
            &[encode(&[1.0, 2.0], Compression::None, 1)],
            Combine::Add,
            Compression::Bf16,
        )
        .unwrap_err();
        assert_eq!(err.received_bytes, 8);
        assert_eq!(err.element_bytes, 2);
    }

    #[test]
    fn a_finalized_chunk_is_kept_as_it_is_sent() {
        let values: Vec<f32> = (0..29).map(|i| i as f32 * 1.37 - 9.0).collect();
        for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
            let mut kept = values.clone();
            let sent = finalize_and_encode(&mut kept, 3.0, c, 1);
            let mut received = vec![0.0f32; values.len()];
            fold(&mut received, &[sent], Combine::Copy, c).unwrap();
            assert_eq!(
                received, kept,
                "{c}: the owner keeps what the others receive"
            );
            for (k, v) in kept.iter().zip(&values) {
                assert_eq!(*k, c.round(v / 3.0), "{c}");
            }
        }
    }

    #[test]
    fn passes_split_over_a_pool_give_the_bits_of_one_thread() {
        let len = 5 * (16 << 10) + 7;
        let values: Vec<f32> = (0..len).map(|i| (i as f32 * 0.731).sin() * 1e3).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let passes = |threads: usize| {
            let mut outputs = Vec::new();
            for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
                let sent = encode(&values, c, threads);
                let mut kept = values.clone();
                let finalized = finalize_and_encode(&mut kept, 3.0, c, threads);
                let mut summed = values.clone();
                let pieces = [Bytes::from(sent.clone())];
                fold_into(&mut summed, Lent::new(&pieces), Combine::Add, c, threads).unwrap();
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                outputs.push((sent, finalized, bits(&kept), bits(&summed)));
            }
            outputs
        };
        let alone = passes(1);
        assert_eq!(pool.install(|| passes(4)), alone);
        assert_eq!(pool.install(|| passes(3)), alone);
    }

    #[test]
    fn sixteen_bit_formats_halve_the_bytes() {
        assert_eq!(encode(&[1.0; 10], Compression::Bf16, 1).len(), 20);
        assert_eq!(encode(&[1.0; 10], Compression::Fp16, 1).len(), 20);
        assert_eq!(encode(&[1.0; 10], Compression::None, 1).len(), 40);
    }
}
