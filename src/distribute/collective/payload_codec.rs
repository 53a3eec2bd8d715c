//! f32 values as message payloads (little-endian, in the compression's format), and folding
//! a received payload into a buffer where it lies, piece by piece.

use half::f16;

use super::compression::{bf16_from_f32, bf16_to_f32};
use super::split_pass::{split_pass_reading, split_pass_with};
use super::{Combine, Compression};
use crate::distribute::Lent;

/// Writes the little-endian bytes of `values` in `compression`'s format to `out` (exactly
/// their size), split over up to `threads` threads of the calling pool. Written as byte
/// arrays, which any buffer is aligned for, in a loop that compiles to vector code.
pub(crate) fn encode_into(
    out: &mut [u8],
    values: &[f32],
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => encode_run(out, values, threads, f32::to_bits),
        Compression::Fp16 => encode_run(out, values, threads, |v| f16::from_f32(v).to_bits()),
        Compression::Bf16 => encode_run(out, values, threads, bf16_from_f32),
    }
}

fn encode_run<W: Wire>(
    out: &mut [u8],
    values: &[f32],
    threads: usize,
    encode: impl Fn(f32) -> W + Sync,
) {
    let out: &mut [W::Le] = bytemuck::cast_slice_mut(out);
    split_pass_reading(out, values, threads, |o, v| {
        o.iter_mut()
            .zip(v)
            .for_each(|(o, v)| *o = encode(*v).to_le())
    });
}

/// What a rank does with a received segment that it sends on at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PassOn {
    /// Adds it and sends the partial sum on (reduce-scatter, before its last step); the
    /// sum is kept in f32 whatever the format.
    Add,
    /// Adds it, divides the sum by `divisor` and rounds it to the format, then keeps and
    /// sends that (the reduce-scatter step that completes the sum).
    Complete {
        /// The world size for a mean, 1 for a sum.
        divisor: f32,
    },
    /// Keeps it and sends it on (all-gather, before its last step).
    Forward,
}

/// Combines the values of `payload` (in `compression`'s format) with `values` as `step`
/// says, keeping the result in `values` and writing its encoding to `out` (exactly its
/// size): a received segment folded and sent on in one pass over it, the kept one and the
/// one sent, with the bits of [`fold_into`] then [`encode_into`] (and, to complete a sum,
/// the division and rounding between them). Read in the pieces the payload arrived in,
/// split over threads as [`encode_into`] is. The payload holds as many values as `values`
/// ([`check_size`] says whether it does).
pub(super) fn fold_and_encode_into(
    out: &mut [u8],
    values: &mut [f32],
    payload: Lent<'_>,
    step: PassOn,
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
                let complete = |s: f32, d: f32| {
                    let s = s / d;
                    (s, s.to_bits())
                };
                pass_on_run(
                    out,
                    values,
                    bytes,
                    threads,
                    step,
                    f32::from_bits,
                    f32::to_bits,
                    complete,
                )
            }
            Compression::Fp16 => {
                let encode = |v: f32| f16::from_f32(v).to_bits();
                let complete = |s: f32, d: f32| {
                    let s = compression.round(s / d);
                    (s, encode(s))
                };
                pass_on_run(
                    out, values, bytes, threads, step, f16_to_f32, encode, complete,
                )
            }
            Compression::Bf16 => {
                let complete = |s: f32, d: f32| {
                    let h = bf16_from_f32(s / d);
                    (bf16_to_f32(h), h)
                };
                pass_on_run(
                    out,
                    values,
                    bytes,
                    threads,
                    step,
                    bf16_to_f32,
                    bf16_from_f32,
                    complete,
                )
            }
        }
    });
}

/// One run of whole values of [`fold_and_encode_into`] in one format: `complete` turns a
/// sum and the divisor into the value kept and its word on the wire.
#[allow(clippy::too_many_arguments)]
fn pass_on_run<W: Wire>(
    out: &mut [u8],
    values: &mut [f32],
    bytes: &[u8],
    threads: usize,
    step: PassOn,
    decode: impl Fn(W) -> f32 + Sync,
    encode: impl Fn(f32) -> W + Sync,
    complete: impl Fn(f32, f32) -> (f32, W) + Sync,
) {
    match step {
        PassOn::Add => combine_run(out, values, bytes, threads, decode, |v, r| {
            let s = v + r;
            (s, encode(s))
        }),
        PassOn::Complete { divisor } => combine_run(out, values, bytes, threads, decode, |v, r| {
            complete(v + r, divisor)
        }),
        PassOn::Forward => combine_run(out, values, bytes, threads, decode, |_, r| (r, encode(r))),
    }
}

/// `combine` over a run: from a kept value and a received one, the value kept and its word
/// on the wire. The received values are read as little-endian byte arrays, which any piece
/// is aligned for (an HTTP/2 stream's are not aligned for words), and the loop still
/// compiles to vector code.
fn combine_run<W: Wire>(
    out: &mut [u8],
    values: &mut [f32],
    bytes: &[u8],
    threads: usize,
    decode: impl Fn(W) -> f32 + Sync,
    combine: impl Fn(f32, f32) -> (f32, W) + Sync,
) {
    let incoming: &[W::Le] = bytemuck::cast_slice(bytes);
    let out: &mut [W::Le] = bytemuck::cast_slice_mut(out);
    split_pass_with(out, values, incoming, threads, |o, v, r| {
        for ((o, v), r) in o.iter_mut().zip(v.iter_mut()).zip(r) {
            let wire;
            (*v, wire) = combine(*v, decode(W::from_le(*r)));
            *o = wire.to_le();
        }
    });
}

/// A word on the wire, 32 or 16 bits, and its little-endian bytes.
trait Wire: Copy + Send + Sync {
    type Le: bytemuck::Pod + Send + Sync;
    fn from_le(bytes: Self::Le) -> Self;
    fn to_le(self) -> Self::Le;
}

impl Wire for u32 {
    type Le = [u8; 4];
    fn from_le(bytes: [u8; 4]) -> Self {
        u32::from_le_bytes(bytes)
    }
    fn to_le(self) -> [u8; 4] {
        self.to_le_bytes()
    }
}

impl Wire for u16 {
    type Le = [u8; 2];
    fn from_le(bytes: [u8; 2]) -> Self {
        u16::from_le_bytes(bytes)
    }
    fn to_le(self) -> [u8; 2] {
        self.to_le_bytes()
    }
}

fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
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
/// combination, reading little-endian byte arrays (which any piece is aligned for), so
/// that each compiles to straight vector code.
fn fold_whole(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => fold_run(dst, bytes, combine, threads, f32::from_bits),
        Compression::Fp16 => fold_run(dst, bytes, combine, threads, f16_to_f32),
        Compression::Bf16 => fold_run(dst, bytes, combine, threads, bf16_to_f32),
    }
}

fn fold_run<W: Wire>(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
    threads: usize,
    decode: impl Fn(W) -> f32 + Sync,
) {
    let incoming: &[W::Le] = bytemuck::cast_slice(bytes);
    split_pass_reading(dst, incoming, threads, |d, r| {
        let incoming = r.iter().map(|r| decode(W::from_le(*r)));
        match combine {
            Combine::Add => d.iter_mut().zip(incoming).for_each(|(d, v)| *d += v),
            Combine::Copy => d.iter_mut().zip(incoming).for_each(|(d, v)| *d = v),
        }
    });
}

#[cfg(test)]
mod tests;
