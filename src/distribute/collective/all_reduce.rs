//! All-reduce over a transport: runs the messages of a [`RingSchedule`], or of a
//! [`HalvingDoubling`] for small buffers over a power of two of ranks.

use std::time::{Duration, Instant};

use super::halving_doubling::HalvingDoubling;
use super::payload_codec::{check_size, encode_into, fold_and_encode_into, fold_into, PassOn};
use super::{Action, CollectiveConfig, CollectivePhase, Combine, RingSchedule, Tag};
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
    ring_all_reduce(transport, values, config, Reduce::Sum, &mut compute)
}

/// What a ring all-reduce leaves in the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduce {
    /// The element-wise sum.
    Sum,
    /// The sum divided by the world size: by the rank completing each chunk, before it is
    /// sent round, so the division costs no pass of its own and all ranks get its bits.
    Mean,
}

/// [`all_reduce_sum_with`], adding to `compute` the time spent encoding what is sent and
/// summing what is received (the rest of the call is waiting on the wire).
pub(crate) fn ring_all_reduce<T: Transport + ?Sized>(
    transport: &mut T,
    values: &mut [f32],
    config: &CollectiveConfig,
    reduce: Reduce,
    compute: &mut Duration,
) -> Result<()> {
    let (rank, world_size) = (transport.rank(), transport.world_size());
    let divisor = match reduce {
        Reduce::Sum => 1.0,
        Reduce::Mean => world_size as f32,
    };
    let segment_len = config.ring_segment_len(values.len(), world_size);
    let (ring, halving_doubling);
    // The actions, and the reduce-scatter step whose receives complete this rank's share.
    let (actions, last_step): (Box<dyn Iterator<Item = Action>>, usize) =
        if config.halves_and_doubles(values.len(), world_size) {
            halving_doubling = HalvingDoubling::new(rank, world_size, values.len(), segment_len)?;
            let steps = halving_doubling.steps();
            (Box::new(halving_doubling.actions().into_iter()), steps - 1)
        } else {
            ring = RingSchedule::new(rank, world_size, values.len(), segment_len)?
                .with_window(config.ring_window(segment_len));
            (Box::new(ring.actions()), ring.steps().saturating_sub(1))
        };
    let completes_reduction =
        |tag: Tag| tag.phase == CollectivePhase::ReduceScatter && tag.step as usize == last_step;
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
                let completes = completes_reduction(tag);
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
    ring_all_reduce(transport, values, config, Reduce::Mean, &mut compute)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::distribute::testing::{bits, on_threads, SplitMix};
    use crate::distribute::{Compression, InMemoryTransport};

    fn cluster(n: usize) -> Vec<InMemoryTransport> {
        InMemoryTransport::cluster_with_timeout(n, Duration::from_secs(5))
    }

    fn inputs(n: usize, len: usize, seed: u64) -> Vec<Vec<f32>> {
        (0..n)
            .map(|r| SplitMix(seed * 1000 + r as u64).f32s(len))
            .collect()
    }

    fn sequential_sum(inputs: &[Vec<f32>]) -> Vec<f32> {
        let mut sum = vec![0.0f32; inputs[0].len()];
        for input in inputs {
            sum.iter_mut().zip(input).for_each(|(s, v)| *s += v);
        }
        sum
    }

    fn assert_identical_and_close(out: &[Vec<f32>], expected: &[f32], what: &str) {
        for (r, buf) in out.iter().enumerate() {
            assert_eq!(
                bits(buf),
                bits(&out[0]),
                "{what}: rank {r} differs from rank 0"
            );
            assert_eq!(buf.len(), expected.len());
            for (i, (got, want)) in buf.iter().zip(expected).enumerate() {
                assert!((got - want).abs() <= 1e-5, "{what}: [{i}] {got} vs {want}");
            }
        }
    }

    #[test]
    fn sums_match_the_sequential_sum_and_are_bit_identical_across_ranks() {
        // 4 and 8 ranks: small buffers by halving and doubling, and round the ring.
        let ring = |config: CollectiveConfig| config.with_halving_doubling_bytes(0);
        let configs = [
            CollectiveConfig::default(),
            CollectiveConfig::with_segment_bytes(12),
            ring(CollectiveConfig::default()),
            ring(CollectiveConfig::with_segment_bytes(12)),
        ];
        for n in [1, 2, 3, 4, 8] {
            for len in [0, 1, 2, 3, 5, 7, 64, 1001] {
                for config in &configs {
                    let data = inputs(n, len, (n * 10_000 + len) as u64);
                    let out = on_threads(cluster(n), |t| {
                        let mut values = data[t.rank()].clone();
                        all_reduce_sum_with(t, &mut values, config).unwrap();
                        values
                    });
                    let what = format!("n={n} len={len} {config:?}");
                    assert_identical_and_close(&out, &sequential_sum(&data), &what);
                }
            }
        }
    }

    #[test]
    fn results_do_not_depend_on_segment_size_window_or_run() {
        let data = inputs(3, 500, 7);
        let run = |segment_bytes, window_bytes| {
            on_threads(cluster(3), |t| {
                let mut values = data[t.rank()].clone();
                let config = CollectiveConfig::with_segment_bytes(segment_bytes)
                    .with_window_bytes(window_bytes);
                all_reduce_sum_with(t, &mut values, &config).unwrap();
                values
            })
        };
        let reference = bits(&run(4, usize::MAX)[0]);
        for segment_bytes in [4, 40, 1 << 20] {
            // One segment in flight per hop, two, and the whole first hop at once.
            for window_bytes in [0, 80, usize::MAX] {
                for out in run(segment_bytes, window_bytes) {
                    let what = format!("segment_bytes={segment_bytes} window={window_bytes}");
                    assert_eq!(bits(&out), reference, "{what}");
                }
            }
        }
    }

    #[test]
    fn compressed_sums_are_bit_identical_across_ranks_and_within_the_bound() {
        for compression in [Compression::Bf16, Compression::Fp16] {
            for (n, halving_doubling_bytes) in [
                (2, 0),
                (3, 0),
                (4, 0),
                (4, usize::MAX),
                (8, 0),
                (8, usize::MAX),
            ] {
                let len = 3001;
                let data = inputs(n, len, (n * 77) as u64);
                let config = CollectiveConfig::with_segment_bytes(256)
                    .with_compression(compression)
                    .with_halving_doubling_bytes(halving_doubling_bytes);
                let out = on_threads(cluster(n), |t| {
                    let mut values = data[t.rank()].clone();
                    all_reduce_sum_with(t, &mut values, &config).unwrap();
                    values
                });
                let exact = sequential_sum(&data);
                let u = compression.unit_roundoff();
                for (r, buf) in out.iter().enumerate() {
                    assert_eq!(bits(buf), bits(&out[0]), "{compression} n={n}: rank {r}");
                }
                let mut worst = 0.0f32;
                for i in 0..len {
                    let magnitude: f32 = data.iter().map(|d| d[i].abs()).sum();
                    let bound = n as f32 * u * magnitude;
                    let error = (out[0][i] - exact[i]).abs();
                    assert!(
                        error <= bound,
                        "{compression} n={n} [{i}]: {error} > {bound}"
                    );
                    worst = worst.max(error);
                }
                assert!(worst > 0.0, "{compression} n={n}: nothing was rounded");
                // The values everyone ends with are exactly representable in the format.
                assert!(out[0].iter().all(|v| compression.round(*v) == *v));
            }
        }
    }

    #[test]
    fn the_mean_divides_by_the_world_size() {
        let data = inputs(4, 33, 3);
        let out = on_threads(cluster(4), |t| {
            let mut values = data[t.rank()].clone();
            all_reduce_mean(t, &mut values).unwrap();
            values
        });
        let expected: Vec<f32> = sequential_sum(&data).iter().map(|s| s / 4.0).collect();
        assert_identical_and_close(&out, &expected, "mean");
        let single = on_threads(cluster(1), |t| {
            let mut values = vec![1.5, -2.0];
            all_reduce_mean(t, &mut values).unwrap();
            values
        });
        assert_eq!(single[0], vec![1.5, -2.0]);
    }

    #[test]
    fn consecutive_calls_of_different_lengths_do_not_mix_up() {
        let lens = [5, 0, 17, 1, 17];
        let out = on_threads(cluster(3), |t| {
            lens.iter()
                .enumerate()
                .map(|(call, &len)| {
                    let mut values = vec![(t.rank() + call) as f32; len];
                    let config = CollectiveConfig::with_segment_bytes(8);
                    all_reduce_sum_with(t, &mut values, &config).unwrap();
                    values
                })
                .collect::<Vec<_>>()
        });
        for rank_out in out {
            for (call, values) in rank_out.iter().enumerate() {
                let expected = (3 * call + 3) as f32;
                assert_eq!(values, &vec![expected; lens[call]], "call {call}");
            }
        }
    }

    #[test]
    fn a_peer_that_never_answers_is_named_within_the_timeout() {
        let timeout = Duration::from_millis(300);
        let mut ranks = InMemoryTransport::cluster_with_timeout(3, timeout);
        let silent = ranks.pop().unwrap();
        let start = Instant::now();
        let out = on_threads(ranks, |t| {
            let mut values = vec![1.0f32; 10];
            all_reduce_sum(t, &mut values).unwrap_err()
        });
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        // Rank 0 receives from rank 2 first on the ring.
        let err = &out[0];
        assert_eq!(err.rank(), Some(2), "{err}");
        let message = err.to_string();
        assert!(
            message.starts_with("rank 2: did not answer rank 0 within"),
            "{message}"
        );
        assert!(
            message.contains("all-reduce reduce-scatter step 0"),
            "{message}"
        );
        drop(silent);
    }

    #[test]
    fn a_rank_with_another_length_is_reported() {
        let out = on_threads(cluster(2), |t| {
            let mut values = vec![1.0f32; 4 + 2 * t.rank()];
            all_reduce_sum(t, &mut values).unwrap_err()
        });
        assert_eq!(out[0].rank(), Some(1));
        assert_eq!(out[1].rank(), Some(0));
        assert!(out[0]
            .to_string()
            .contains("do all ranks pass buffers of the same length"));
    }
}
