//! All-reduce over a transport: runs the messages of a [`RingSchedule`], or of a
//! [`HalvingDoubling`] for small buffers over 4 ranks or more.

use std::time::{Duration, Instant};

use super::halving_doubling::HalvingDoubling;
use super::hierarchical::{hierarchical_all_reduce, FlatAllReduce};
use super::payload_codec::{check_size, encode_into, fold_and_encode_into, fold_into, PassOn};
pub(crate) use super::reduce::Reduce;
use super::{Action, CollectiveConfig, Combine, RingSchedule, Tag};
use crate::distribute::collective_fault::{CollectiveFault, Result};
use crate::distribute::{Lent, Onward, Transport};

/// Replaces `values` on every rank by their element-wise sum over all ranks, bit-identical
/// everywhere. Every rank must pass a buffer of the same length.
pub fn all_reduce_sum<T: Transport + ?Sized>(transport: &mut T, values: &mut [f32]) -> Result<()> {
    all_reduce_sum_with(transport, values, &CollectiveConfig::default())
}

/// [`all_reduce_sum`] with messages cut and encoded as `config` says. With a 16-bit
/// compression every value sent is rounded to that format and every partial sum is kept in
/// f32; the rank that completes a chunk's sum rounds it as the others will receive it, so
/// that all ranks still end bit-identical.
pub fn all_reduce_sum_with<T: Transport + ?Sized>(
    transport: &mut T,
    values: &mut [f32],
    config: &CollectiveConfig,
) -> Result<()> {
    let mut compute = Duration::ZERO;
    timed_all_reduce(transport, values, config, Reduce::Sum, &mut compute)
}

/// [`all_reduce_sum_with`], adding to `compute` the time spent encoding what is sent and
/// summing what is received (the rest of the call is waiting on the wire).
pub(crate) fn timed_all_reduce<T: Transport + ?Sized>(
    transport: &mut T,
    values: &mut [f32],
    config: &CollectiveConfig,
    reduce: Reduce,
    compute: &mut Duration,
) -> Result<()> {
    let (rank, world_size) = (transport.rank(), transport.world_size());
    if config.hierarchical(values.len(), world_size) {
        // A closure, not the function itself: the stages' views live only as long as the
        // call, which a `dyn Transport + 'static` instance could not take.
        let flat: FlatAllReduce = |transport, values, config, reduce, compute| {
            timed_all_reduce(transport, values, config, reduce, compute)
        };
        return hierarchical_all_reduce(transport, values, config, reduce, compute, flat);
    }
    let divisor = match reduce {
        Reduce::Sum => 1.0,
        Reduce::Mean => world_size as f32,
    };
    let segment_len = config.ring_segment_len(values.len(), world_size);
    let schedule = if config.halves_and_doubles(values.len(), world_size) {
        Schedule::HalvingDoubling(HalvingDoubling::new(
            rank,
            world_size,
            values.len(),
            segment_len,
        )?)
    } else {
        let ring = RingSchedule::new(rank, world_size, values.len(), segment_len)?;
        Schedule::Ring(ring.with_window(config.ring_window(segment_len)))
    };
    let actions: Box<dyn Iterator<Item = Action>> = match &schedule {
        Schedule::Ring(ring) => Box::new(ring.actions()),
        Schedule::HalvingDoubling(hd) => Box::new(hd.actions().into_iter()),
    };
    let compression = config.compression;
    let mut actions = actions.peekable();
    while let Some(action) = actions.next() {
        match action {
            Action::Send { to, tag, range } => {
                let len = range.len() * compression.element_bytes();
                let segment = &values[range];
                // Written where the transport says: into memory shared with the peer, on
                // a same-host lane that has it.
                let mut fill = |out: &mut [u8]| {
                    let started = Instant::now();
                    encode_into(out, segment, compression, config.threads);
                    *compute += started.elapsed();
                };
                transport
                    .send_filled(to, tag.encode(), len, &mut fill)
                    .map_err(|e| e.during(tag))?
            }
            Action::Recv {
                from,
                tag,
                range,
                combine,
            } => {
                // A received segment is sent on next (in every step but the all-gather's
                // last): folded and encoded for the next rank in one pass.
                let onward = match actions.peek() {
                    Some(Action::Send { to, tag, range: r }) if *r == range => Some((*to, *tag)),
                    _ => None,
                };
                let completes = schedule.completes_reduction(tag);
                let dst = &mut values[range];
                let Some((to, onward_tag)) = onward else {
                    if completes {
                        return Err(CollectiveFault::invalid(format!(
                            "the ring's schedule does not send on the segment {tag:?} completes"
                        )));
                    }
                    let mut fold = |payload: Lent<'_>| {
                        let started = Instant::now();
                        let folded = fold_into(dst, payload, combine, compression, config.threads)
                            .map_err(|e| CollectiveFault::peer(from, e.to_string()));
                        *compute += started.elapsed();
                        folded
                    };
                    transport
                        .recv_lent(from, tag.encode(), &mut fold)
                        .map_err(|e| e.during(tag))?;
                    continue;
                };
                actions.next();
                let step = match (completes, combine) {
                    (true, _) => PassOn::Complete { divisor },
                    (false, Combine::Add) => PassOn::Add,
                    (false, Combine::Copy) => PassOn::Forward,
                };
                let onward = Onward {
                    to,
                    tag: onward_tag.encode(),
                    len: dst.len() * compression.element_bytes(),
                };
                let expected = dst.len();
                let mut check = |payload: Lent<'_>| {
                    check_size(payload, expected, compression)
                        .map_err(|e| CollectiveFault::peer(from, e.to_string()))
                };
                let mut fill = |payload: Lent<'_>, out: &mut [u8]| {
                    let started = Instant::now();
                    fold_and_encode_into(out, dst, payload, step, compression, config.threads);
                    *compute += started.elapsed();
                };
                transport
                    .recv_and_send_filled(from, tag.encode(), onward, &mut check, &mut fill)
                    .map_err(|e| e.during(tag))?
            }
        }
    }
    Ok(())
}

/// The algorithm an all-reduce runs.
enum Schedule {
    Ring(RingSchedule),
    HalvingDoubling(HalvingDoubling),
}

impl Schedule {
    /// Whether the message with `tag` completes a segment of this rank's share.
    fn completes_reduction(&self, tag: Tag) -> bool {
        match self {
            Schedule::Ring(ring) => ring.completes_reduction(tag),
            Schedule::HalvingDoubling(hd) => hd.completes_reduction(tag),
        }
    }
}

/// Replaces `values` on every rank by their element-wise mean over all ranks (the sum divided
/// by the world size), bit-identical everywhere.
pub fn all_reduce_mean<T: Transport + ?Sized>(transport: &mut T, values: &mut [f32]) -> Result<()> {
    all_reduce_mean_with(transport, values, &CollectiveConfig::default())
}

/// [`all_reduce_mean`] with messages cut as `config` says.
pub fn all_reduce_mean_with<T: Transport + ?Sized>(
    transport: &mut T,
    values: &mut [f32],
    config: &CollectiveConfig,
) -> Result<()> {
    if transport.world_size() == 1 {
        return Ok(());
    }
    let mut compute = Duration::ZERO;
    timed_all_reduce(transport, values, config, Reduce::Mean, &mut compute)
}

#[cfg(test)]
mod tests;
