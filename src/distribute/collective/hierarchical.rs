//! The hierarchical all-reduce (Horovod's `HOROVOD_HIERARCHICAL_ALLREDUCE`): ranks numbered
//! machine by machine, k to a machine, sum within each machine, then across machines one
//! part each, then spread the parts within each machine again.
//!
//! A flat ring puts 2(N − 1)/N of the buffer on each machine's link, whatever k; here only
//! the middle stage crosses machines, each of a machine's k ranks carrying 2(M − 1)/M of
//! its k-th part over M machines: 2(M − 1)/M of the buffer a machine, half the ring's
//! over two machines. The stages within a machine move whole buffers twice (a sum is
//! spread as a sum with zeros), on the links that are fast there.

use std::time::Duration;

use super::partition::part;
use super::reduce::Reduce;
use super::CollectiveConfig;
use crate::distribute::collective_fault::Result;
use crate::distribute::{Renumbered, Transport};

/// The flat all-reduce each stage runs: ring, or halving and doubling, adding its
/// compute time to the last argument.
pub(super) type FlatAllReduce =
    fn(&mut dyn Transport, &mut [f32], &CollectiveConfig, Reduce, &mut Duration) -> Result<()>;

/// An all-reduce over machines of `config.machine_size` ranks each (ranks numbered machine
/// by machine), each stage by `timed_all_reduce`: every rank ends with the same bits, as
/// round the ring.
pub(super) fn hierarchical_all_reduce<T: Transport + ?Sized>(
    transport: &mut T,
    values: &mut [f32],
    config: &CollectiveConfig,
    reduce: Reduce,
    compute: &mut Duration,
    timed_all_reduce: FlatAllReduce,
) -> Result<()> {
    let (rank, world_size, k) = (
        transport.rank(),
        transport.world_size(),
        config.machine_size,
    );
    let (machine, local) = (rank / k, rank % k);
    let flat = config.with_machine_size(0);
    let here: Vec<usize> = (machine * k..machine * k + k).collect();
    let across: Vec<usize> = (0..world_size / k).map(|m| m * k + local).collect();
    let mine = part(values.len(), k, local);
    // Through `dyn Transport`: one instance of the all-reduce for every depth of views.
    let within: &mut dyn Transport = &mut Renumbered::subset(transport, &here)?;
    timed_all_reduce(within, values, &flat, Reduce::Sum, compute)?;
    let between: &mut dyn Transport = &mut Renumbered::subset(transport, &across)?;
    timed_all_reduce(
        between,
        &mut values[mine.clone()],
        &flat,
        Reduce::Sum,
        compute,
    )?;
    if reduce == Reduce::Mean {
        let n = world_size as f32;
        values[mine.clone()].iter_mut().for_each(|v| *v /= n);
    }
    // Each part from the rank that holds it, zeros from the others: x + 0 = x, bit for bit.
    values[..mine.start].fill(0.0);
    values[mine.end..].fill(0.0);
    let within: &mut dyn Transport = &mut Renumbered::subset(transport, &here)?;
    timed_all_reduce(within, values, &flat, Reduce::Sum, compute)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::distribute::collective::all_reduce::timed_all_reduce;
    use crate::distribute::testing::{bits, on_threads, Recording, SplitMix};
    use crate::distribute::{all_reduce_sum_with, Compression, InMemoryTransport};

    /// Each of 4 ranks (two machines of two: 0 and 1, 2 and 3) sums its 10 000 values with
    /// `config`: the results, and the bytes sent between machines.
    fn sums(config: CollectiveConfig) -> (Vec<Vec<f32>>, usize) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = InMemoryTransport::cluster(4)
            .into_iter()
            .map(|inner| {
                let sent = sent.clone();
                std::thread::spawn(move || {
                    let rank = inner.rank();
                    let mut recording = Recording { inner, sent };
                    let mut values = SplitMix(rank as u64 + 1).f32s(10_000);
                    all_reduce_sum_with(&mut recording, &mut values, &config).unwrap();
                    values
                })
            })
            .collect();
        let results = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let crossing = (sent.lock().unwrap().iter())
            .filter(|(from, to, _)| from / 2 != to / 2)
            .map(|(_, _, bytes)| bytes)
            .sum();
        (results, crossing)
    }

    #[test]
    fn every_rank_ends_with_the_same_sum_and_machines_exchange_a_third_less() {
        let flat = CollectiveConfig::with_segment_bytes(4096).with_halving_doubling_bytes(0);
        let inputs: Vec<Vec<f32>> = (1..=4).map(|seed| SplitMix(seed).f32s(10_000)).collect();
        let want: Vec<f32> = (0..10_000)
            .map(|i| inputs.iter().map(|input| input[i]).sum())
            .collect();
        for compression in [Compression::None, Compression::Bf16] {
            let flat = flat.with_compression(compression);
            let (ring, ring_crossing) = sums(flat);
            let (tiered, crossing) = sums(flat.with_machine_size(2));
            for sum in &tiered {
                assert_eq!(bits(sum), bits(&tiered[0]), "{compression}: ranks differ");
            }
            let tolerance = if compression == Compression::None {
                1e-5
            } else {
                0.05
            };
            for (got, want) in tiered[0].iter().zip(&want) {
                assert!(
                    (got - want).abs() <= tolerance,
                    "{compression}: {got} vs {want}"
                );
            }
            assert!(ring.iter().all(|sum| bits(sum) == bits(&ring[0])));
            // Round the ring (machine by machine) 2 · 3/4 of the buffer crosses on each of
            // two hops; here each rank sends 2 · 1/2 of its half: 2 of 3.
            let element = compression.element_bytes();
            assert_eq!(ring_crossing, 2 * 15_000 * element, "{compression}");
            assert_eq!(crossing, 4 * 5_000 * element, "{compression}");
        }
    }

    #[test]
    fn the_mean_is_the_sum_over_every_rank() {
        let config = CollectiveConfig::with_segment_bytes(4096)
            .with_halving_doubling_bytes(0)
            .with_machine_size(2);
        let means = on_threads(InMemoryTransport::cluster(4), |transport| {
            let mut values = vec![transport.rank() as f32; 1000];
            let mut compute = Duration::ZERO;
            timed_all_reduce(transport, &mut values, &config, Reduce::Mean, &mut compute).unwrap();
            values
        });
        for mean in means {
            assert!(mean.iter().all(|v| *v == 1.5), "(0 + 1 + 2 + 3) / 4");
        }
    }
}
