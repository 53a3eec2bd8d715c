//! f32 values as message payloads (little-endian, in the compression's format), and folding
//! a received payload into a buffer where it lies, piece by piece.

use half::f16;

use super::compression::{bf16_from_f32, bf16_to_f32};
use super::split_pass::{split_pass, split_pass_reading};
use super::{Combine, Compression};
use crate::distribute::Lent;

/// Whether values can be written and read as native words: the wire is little-endian.
const NATIVE_IS_WIRE: bool = cfg!(target_endian = "little");

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
/// how the sizes differ; nothing is folded then. Long pieces are split as [`encode_into`] is.
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
mod tests;
