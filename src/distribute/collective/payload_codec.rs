//! f32 values as message payloads (little-endian, in the compression's format), and folding
//! a received payload into a buffer where it lies, piece by piece.

use half::f16;
use half::slice::HalfFloatSliceExt;

use super::compression::{bf16_from_f32, bf16_to_f32};
use super::split_pass::{split_pass_reading, split_pass_with};
use super::{Combine, Compression};
use crate::distribute::Lent;

/// Values a pass converts at a time: its words decoded into, or encoded from, a buffer on
/// the stack that stays in the L1 cache.
const CHUNK: usize = 256;

/// Writes the little-endian bytes of `values` in `compression`'s format to `out` (exactly
/// their size), split over up to `threads` threads of the calling pool.
pub(crate) fn encode_into(
    out: &mut [u8],
    values: &[f32],
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => encode_run::<F32>(out, values, threads),
        Compression::Fp16 => encode_run::<F16>(out, values, threads),
        Compression::Bf16 => encode_run::<Bf16>(out, values, threads),
    }
}

fn encode_run<W: Format>(out: &mut [u8], values: &[f32], threads: usize) {
    let out: &mut [W::Le] = bytemuck::cast_slice_mut(out);
    split_pass_reading(out, values, threads, |o, v| W::encode(v, o));
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
            Compression::None => pass_on_run::<F32>(out, values, bytes, threads, step),
            Compression::Fp16 => pass_on_run::<F16>(out, values, bytes, threads, step),
            Compression::Bf16 => pass_on_run::<Bf16>(out, values, bytes, threads, step),
        }
    });
}

/// One run of whole values of [`fold_and_encode_into`] in one format, a chunk at a time:
/// the received words decoded, combined with the kept values, and the result encoded; a
/// completed sum is kept as its encoding decodes, so every rank keeps what it sends. The
/// received values are read as little-endian byte arrays, which any piece is aligned for
/// (an HTTP/2 stream's are not aligned for words).
fn pass_on_run<W: Format>(
    out: &mut [u8],
    values: &mut [f32],
    bytes: &[u8],
    threads: usize,
    step: PassOn,
) {
    let incoming: &[W::Le] = bytemuck::cast_slice(bytes);
    let out: &mut [W::Le] = bytemuck::cast_slice_mut(out);
    split_pass_with(out, values, incoming, threads, |o, v, r| {
        let mut received = [0f32; CHUNK];
        for ((o, v), r) in o
            .chunks_mut(CHUNK)
            .zip(v.chunks_mut(CHUNK))
            .zip(r.chunks(CHUNK))
        {
            let received = &mut received[..r.len()];
            match step {
                PassOn::Add => {
                    W::decode(r, received);
                    v.iter_mut().zip(&*received).for_each(|(v, r)| *v += r);
                    W::encode(v, o);
                }
                PassOn::Complete { divisor } => {
                    W::decode(r, received);
                    (received.iter_mut().zip(&*v)).for_each(|(r, v)| *r = (*v + *r) / divisor);
                    W::encode(received, o);
                    W::decode(o, v);
                }
                PassOn::Forward => {
                    W::decode(r, v);
                    W::encode(v, o);
                }
            }
        }
    });
}

/// A number format on the wire: a word's little-endian bytes, and how runs of values are
/// converted to and from them (the same lengths either way), in loops that compile to
/// vector code.
trait Format {
    type Le: bytemuck::Pod + Send + Sync;
    fn decode(words: &[Self::Le], values: &mut [f32]);
    fn encode(values: &[f32], words: &mut [Self::Le]);
}

/// f32 as it is.
struct F32;

impl Format for F32 {
    type Le = [u8; 4];
    fn decode(words: &[[u8; 4]], values: &mut [f32]) {
        (values.iter_mut().zip(words)).for_each(|(v, w)| *v = f32::from_le_bytes(*w));
    }
    fn encode(values: &[f32], words: &mut [[u8; 4]]) {
        (words.iter_mut().zip(values)).for_each(|(w, v)| *w = v.to_le_bytes());
    }
}

/// bfloat16: f32's upper half, rounded.
struct Bf16;

impl Format for Bf16 {
    type Le = [u8; 2];
    fn decode(words: &[[u8; 2]], values: &mut [f32]) {
        (values.iter_mut().zip(words)).for_each(|(v, w)| *v = bf16_to_f32(u16::from_le_bytes(*w)));
    }
    fn encode(values: &[f32], words: &mut [[u8; 2]]) {
        (words.iter_mut().zip(values)).for_each(|(w, v)| *w = bf16_from_f32(*v).to_le_bytes());
    }
}

/// IEEE half precision, converted through the `half` crate's slice conversions, which use
/// the CPU's own instructions where it has them (F16C on x86-64, eight values at once), a
/// chunk on the stack at a time.
struct F16;

impl Format for F16 {
    type Le = [u8; 2];
    fn decode(words: &[[u8; 2]], values: &mut [f32]) {
        let mut halves = [f16::ZERO; CHUNK];
        for (words, values) in words.chunks(CHUNK).zip(values.chunks_mut(CHUNK)) {
            let halves = &mut halves[..words.len()];
            (halves.iter_mut().zip(words)).for_each(|(h, w)| *h = f16::from_le_bytes(*w));
            halves.convert_to_f32_slice(values);
        }
    }
    fn encode(values: &[f32], words: &mut [[u8; 2]]) {
        let mut halves = [f16::ZERO; CHUNK];
        for (values, words) in values.chunks(CHUNK).zip(words.chunks_mut(CHUNK)) {
            let halves = &mut halves[..values.len()];
            halves.convert_from_f32_slice(values);
            (words.iter_mut().zip(&*halves)).for_each(|(w, h)| *w = h.to_le_bytes());
        }
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

/// Folds `bytes`, exactly `dst.len()` values, into `dst`, reading little-endian byte arrays
/// (which any piece is aligned for).
fn fold_whole(
    dst: &mut [f32],
    bytes: &[u8],
    combine: Combine,
    compression: Compression,
    threads: usize,
) {
    match compression {
        Compression::None => fold_run::<F32>(dst, bytes, combine, threads),
        Compression::Fp16 => fold_run::<F16>(dst, bytes, combine, threads),
        Compression::Bf16 => fold_run::<Bf16>(dst, bytes, combine, threads),
    }
}

fn fold_run<W: Format>(dst: &mut [f32], bytes: &[u8], combine: Combine, threads: usize) {
    let incoming: &[W::Le] = bytemuck::cast_slice(bytes);
    split_pass_reading(dst, incoming, threads, |d, r| match combine {
        Combine::Copy => W::decode(r, d),
        Combine::Add => {
            let mut received = [0f32; CHUNK];
            for (d, r) in d.chunks_mut(CHUNK).zip(r.chunks(CHUNK)) {
                let received = &mut received[..r.len()];
                W::decode(r, received);
                d.iter_mut().zip(&*received).for_each(|(d, r)| *d += r);
            }
        }
    });
}

#[cfg(test)]
mod tests;
