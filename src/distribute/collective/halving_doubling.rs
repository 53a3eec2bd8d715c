//! The all-reduce by recursive halving and doubling (Rabenseifner's, as MPI libraries and
//! NCCL's tree do for small buffers) as a pure schedule: log₂ N exchanges each way where
//! the ring takes N − 1, for the same bytes per rank.

use std::ops::Range;

use super::partition::{check_rank, check_segment_len, segment, segment_count};
use super::ring_schedule::{Action, Combine};
use super::{CollectivePhase, Tag};
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// Recursive halving then doubling over a power-of-two number of ranks.
///
/// In reduce-scatter step `s` a rank pairs with the rank whose number differs in bit
/// `N / 2^(s+1)`: of the range both hold, it sends the half it gives up and adds the
/// partner's copy of the half it keeps, so after log₂ N steps it holds 1/N of the buffer
/// summed over all ranks (each element summed by one rank only). The all-gather retraces
/// the steps: each rank sends all it holds to the partner and copies the partner's. Within a
/// step every segment is sent before any is awaited, so no rank waits for a message nobody
/// has sent; in the last reduce-scatter step each segment completed is sent on at once, in
/// the all-gather's first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HalvingDoubling {
    rank: usize,
    world_size: usize,
    len: usize,
    segment_len: usize,
}

impl HalvingDoubling {
    /// The schedule of `rank` among `world_size` ranks, a power of two, for a buffer of `len`
    /// elements sent in segments of at most `segment_len` elements.
    pub fn new(rank: usize, world_size: usize, len: usize, segment_len: usize) -> Result<Self> {
        check_rank("rank", rank, world_size)?;
        if !world_size.is_power_of_two() {
            return Err(CollectiveFault::invalid(format!(
                "halving and doubling needs a power of two ranks, not {world_size}"
            )));
        }
        check_segment_len(segment_len)?;
        Ok(Self {
            rank,
            world_size,
            len,
            segment_len,
        })
    }

    /// Exchanges each way: log₂ of the world size.
    pub fn steps(&self) -> usize {
        self.world_size.trailing_zeros() as usize
    }

    /// Every message of the all-reduce for this rank, in the order it must happen.
    pub fn actions(&self) -> Vec<Action> {
        let steps = self.steps();
        let mut actions = Vec::new();
        // The ranges held after each reduce-scatter step, the whole buffer before the first.
        let mut held = Vec::with_capacity(steps + 1);
        held.push(0..self.len);
        for step in 0..steps {
            let (partner, keep, give) = self.split(step, held[step].clone());
            let tag = |k| Tag::new(CollectivePhase::ReduceScatter, step, k);
            actions.extend(self.segments(&give).map(|(k, range)| Action::Send {
                to: partner,
                tag: tag(k),
                range,
            }));
            for (k, range) in self.segments(&keep) {
                actions.push(Action::Recv {
                    from: partner,
                    tag: tag(k),
                    range: range.clone(),
                    combine: Combine::Add,
                });
                if step + 1 == steps {
                    // Completed: sent on in the all-gather's first step, as it is.
                    actions.push(self.gather_send(0, k, range));
                }
            }
            held.push(keep);
        }
        for step in 0..steps {
            let mine = held[steps - step].clone();
            let partner = self.partner(steps - 1 - step);
            if step > 0 {
                actions.extend(
                    self.segments(&mine)
                        .map(|(k, range)| self.gather_send(step, k, range)),
                );
            }
            let theirs = &held[steps - step - 1];
            let theirs = if mine.start == theirs.start {
                mine.end..theirs.end
            } else {
                theirs.start..mine.start
            };
            actions.extend(self.segments(&theirs).map(|(k, range)| Action::Recv {
                from: partner,
                tag: Tag::new(CollectivePhase::AllGather, step, k),
                range,
                combine: Combine::Copy,
            }));
        }
        actions
    }

    /// Whether a message with `tag` completes a segment of this rank's share: the last
    /// reduce-scatter step.
    pub fn completes_reduction(&self, tag: Tag) -> bool {
        tag.phase == CollectivePhase::ReduceScatter && tag.step as usize + 1 == self.steps()
    }

    /// The partner of reduce-scatter step `step`.
    fn partner(&self, step: usize) -> usize {
        self.rank ^ (self.world_size >> (step + 1))
    }

    /// (partner, half kept, half given up) of `range` in reduce-scatter step `step`: the
    /// lower half stays with the rank whose bit of the step is clear.
    fn split(&self, step: usize, range: Range<usize>) -> (usize, Range<usize>, Range<usize>) {
        let mid = range.start + range.len() / 2;
        let (lower, upper) = (range.start..mid, mid..range.end);
        let partner = self.partner(step);
        if self.rank & (self.world_size >> (step + 1)) == 0 {
            (partner, lower, upper)
        } else {
            (partner, upper, lower)
        }
    }

    /// The non-empty segments of `range`, numbered.
    fn segments<'a>(
        &'a self,
        range: &'a Range<usize>,
    ) -> impl Iterator<Item = (usize, Range<usize>)> + 'a {
        (0..segment_count(range, self.segment_len))
            .map(move |k| (k, segment(range, self.segment_len, k)))
    }

    /// Segment `k` (`range`) of what this rank sends in all-gather step `step`.
    fn gather_send(&self, step: usize, k: usize, range: Range<usize>) -> Action {
        Action::Send {
            to: self.partner(self.steps() - 1 - step),
            tag: Tag::new(CollectivePhase::AllGather, step, k),
            range,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribute::collective::simulation::run_schedules;

    fn run(n: usize, len: usize, segment_len: usize) -> Vec<Vec<f32>> {
        let inputs: Vec<Vec<f32>> = (0..n)
            .map(|r| (0..len).map(|i| (r * 31 + i * 7 % 11) as f32).collect())
            .collect();
        let actions = (0..n)
            .map(|r| {
                HalvingDoubling::new(r, n, len, segment_len)
                    .unwrap()
                    .actions()
            })
            .collect();
        run_schedules(inputs, actions).0
    }

    #[test]
    fn every_shape_sums_exactly_without_deadlock() {
        for n in [1, 2, 4, 8, 16] {
            for len in 0..=20 {
                for segment_len in 1..=4 {
                    let expected: Vec<f32> = (0..len)
                        .map(|i| (0..n).map(|r| (r * 31 + i * 7 % 11) as f32).sum())
                        .collect();
                    for (r, buf) in run(n, len, segment_len).iter().enumerate() {
                        assert_eq!(buf, &expected, "n={n} len={len} seg={segment_len} rank={r}");
                    }
                }
            }
        }
    }

    #[test]
    fn log2_exchanges_each_way_with_the_ring_s_bytes() {
        // 8 ranks, 64 elements, one segment per message: 3 sends each way where the ring
        // makes 7, each half the size of the one before (32, 16, 8) then doubling back.
        let s = HalvingDoubling::new(5, 8, 64, 64).unwrap();
        let sends: Vec<(CollectivePhase, usize, usize)> = s
            .actions()
            .into_iter()
            .filter_map(|a| match a {
                Action::Send { tag, range, to } => Some((tag.phase, range.len(), to)),
                Action::Recv { .. } => None,
            })
            .collect();
        use CollectivePhase::{AllGather as G, ReduceScatter as R};
        assert_eq!(
            sends,
            vec![
                (R, 32, 1),
                (R, 16, 7),
                (R, 8, 4),
                (G, 8, 4),
                (G, 16, 7),
                (G, 32, 1)
            ]
        );
        let moved: usize = sends.iter().map(|s| s.1).sum();
        assert_eq!(moved, 2 * 7 * 64 / 8, "the ring's 2(N-1)/N of the buffer");
        assert!(s.completes_reduction(Tag::new(R, 2, 0)));
        assert!(!s.completes_reduction(Tag::new(R, 1, 0)));
        assert!(!s.completes_reduction(Tag::new(G, 2, 0)));
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(HalvingDoubling::new(0, 6, 10, 1).is_err());
        assert!(HalvingDoubling::new(4, 4, 10, 1).is_err());
        assert!(HalvingDoubling::new(0, 4, 10, 0).is_err());
    }
}
