//! f32 values as message payloads (little-endian, in the compression's format), and folding
//! a received payload into a buffer where it lies, piece by piece.

use half::f16;

use super::compression::{bf16_from_f32, bf16_to_f32};
use super::split_pass::{split_pass_reading, split_pass_with};
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

/// Adds the values of `payload` (in `compression`'s format) to `values`, divides the sums
/// by `divisor` and rounds them to the format, keeping them in `values` and writing their
/// encoding to `out` (exactly its size): what the rank that completes a chunk's sum keeps
/// and sends round the ring, in one pass over the received segment, the kept one and the
/// one sent, with the bits of [`fold_into`] then a division and [`encode_into`]. Read in
/// the pieces the payload arrived in, split over threads as [`encode_into`] is. The payload
/// holds as many values as `values` ([`check_size`] says whether it does).
pub(super) fn fold_finalize_and_encode_into(
    out: &mut [u8],
    values: &mut [f32],
    payload: Lent<'_>,
    divisor: f32,
    compression: Compression,
    threads: usize,
) {
    let width = compression.element_bytes();
    debug_assert!(check_size(payload, values.len(), compression).is_ok());
    for_each_run(payload, width, |at, bytes| {
        let n = bytes.len() / width;
        let (values, out) = (
            &mut values[at..at + n],
            &mut out[at * width..(at + n) * width],
        );
        match compression {
            Compression::None => {
                fold_finalize_run(out, values, bytes, threads, f32::from_bits, |s| {
                    let s = s / divisor;
                    (s, s.to_bits())
                })
            }
            Compression::Fp16 => fold_finalize_run(out, values, bytes, threads, f16_to_f32, |s| {
                let s = compression.round(s / divisor);
                (s, f16::from_f32(s).to_bits())
            }),
            Compression::Bf16 => fold_finalize_run(out, values, bytes, threads, bf16_to_f32, |s| {
                let h = bf16_from_f32(s / divisor);
                (bf16_to_f32(h), h)
            }),
        }
    });
}

/// One run of whole values of [`fold_finalize_and_encode_into`]: `finish` turns a sum into
/// the value kept and its word on the wire (`u32` or `u16`, little-endian). Over whole
/// words where both buffers are aligned for them, so that the loop compiles to vector code.
fn fold_finalize_run<W: Wire>(
    out: &mut [u8],
    values: &mut [f32],
    bytes: &[u8],
    threads: usize,
    decode: impl Fn(W) -> f32 + Sync,
    finish: impl Fn(f32) -> (f32, W) + Sync,
) {
    let words = (bytemuck::try_cast_slice_mut::<u8, W>(out).ok())
        .zip(bytemuck::try_cast_slice::<u8, W>(bytes).ok())
        .filter(|_| NATIVE_IS_WIRE);
    match words {
        Some((out, incoming)) => split_pass_with(out, values, incoming, threads, |o, v, r| {
            for ((o, v), r) in o.iter_mut().zip(v.iter_mut()).zip(r) {
                (*v, *o) = finish(*v + decode(*r));
            }
        }),
        None => {
            let (outs, ins) = (out.chunks_exact_mut(W::BYTES), bytes.chunks_exact(W::BYTES));
            for ((o, v), r) in outs.zip(values.iter_mut()).zip(ins) {
                let wire;
                (*v, wire) = finish(*v + decode(W::from_le(r)));
                wire.write_le(o);
            }
        }
    }
}

/// A word on the wire: 32 or 16 bits, little-endian.
trait Wire: bytemuck::Pod + Send + Sync {
    const BYTES: usize;
    fn from_le(bytes: &[u8]) -> Self;
    fn write_le(self, out: &mut [u8]);
}

impl Wire for u32 {
    const BYTES: usize = 4;
    fn from_le(bytes: &[u8]) -> Self {
        u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
    }
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

impl Wire for u16 {
    const BYTES: usize = 2;
    fn from_le(bytes: &[u8]) -> Self {
        u16::from_le_bytes(bytes.try_into().expect("2 bytes"))
    }
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
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
    check_size(payload, dst.len(), compression)?;
    for_each_run(payload, width, |at, bytes| {
        let n = bytes.len() / width;
        fold_whole(&mut dst[at..at + n], bytes, combine, compression, threads);
    });
    Ok(())
}

/// The error when `payload` does not hold `values` values in `compression`'s format.
pub(super) fn check_size(
    payload: Lent<'_>,
    values: usize,
    compression: Compression,
) -> Result<(), PayloadSizeError> {
    let width = compression.element_bytes();
    match payload.len() == values * width {
        true => Ok(()),
        false => Err(PayloadSizeError {
            received_bytes: payload.len(),
            expected_values: values,
            element_bytes: width,
        }),
    }
}

/// Calls `run(at, bytes)` over `payload`'s pieces in order, for runs of whole values of
/// `width` bytes, `at` the index of the first; a value cut between pieces comes as a run of
/// its own, put together in a copy.
fn for_each_run(payload: Lent<'_>, width: usize, mut run: impl FnMut(usize, &[u8])) {
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
            run(at, &split[..width]);
            at += 1;
        }
        let whole = piece.len() / width;
        run(at, &piece[..whole * width]);
        at += whole;
        let rest = &piece[whole * width..];
        split[..rest.len()].copy_from_slice(rest);
        carried = rest.len();
    }
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
        Compression::Fp16 => fold_halves(dst, bytes, combine, threads, f16_to_f32),
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
