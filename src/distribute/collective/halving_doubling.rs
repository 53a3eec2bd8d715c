//! The all-reduce by recursive halving and doubling (Rabenseifner's, as MPI libraries and
//! NCCL's tree do for small buffers) as a pure schedule: log₂ N exchanges each way where
//! the ring takes N − 1, for the same bytes per rank.

use std::ops::Range;

use super::partition::{check_rank, check_segment_len, segment, segment_count};
use super::ring_schedule::{Action, Combine};
use super::{CollectivePhase, Tag};
use crate::distribute::collective_fault::Result;

/// Recursive halving then doubling over any number of ranks.
///
/// Over a power of two P of ranks: in reduce-scatter step `s` a rank pairs with the rank
/// whose number differs in bit `P / 2^(s+1)`: of the range both hold, it sends the half it
/// gives up and adds the partner's copy of the half it keeps, so after log₂ P steps it holds
/// 1/P of the buffer summed over all ranks (each element summed by one rank only). The
/// all-gather retraces the steps: each rank sends all it holds to the partner and copies the
/// partner's. Within a step every segment is sent before any is awaited, so no rank waits for
/// a message nobody has sent; in the last reduce-scatter step each segment completed is sent
/// on at once, in the all-gather's first step.
///
/// Over N = P + E ranks (P the largest power of two below N, as MPICH does): each of the
/// first E odd ranks first hands its whole buffer to the even rank before it, which adds it,
/// and sits out; the P ranks left run the above; each host then hands the result back. One
/// exchange more each way, so it beats the ring's N − 1 from 5 ranks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HalvingDoubling {
    rank: usize,
    world_size: usize,
    len: usize,
    segment_len: usize,
}

/// What a rank does in a world that is not a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Halves and doubles as rank `virtual_rank` of the power of two; `guest`, when some,
    /// hands it its buffer first and gets the result last.
    Core {
        virtual_rank: usize,
        guest: Option<usize>,
    },
    /// Hands its buffer to `host` and gets the result back.
    Guest { host: usize },
}

impl HalvingDoubling {
    /// The schedule of `rank` among `world_size` ranks for a buffer of `len` elements sent in
    /// segments of at most `segment_len` elements.
    pub fn new(rank: usize, world_size: usize, len: usize, segment_len: usize) -> Result<Self> {
        check_rank("rank", rank, world_size)?;
        check_segment_len(segment_len)?;
        Ok(Self {
            rank,
            world_size,
            len,
            segment_len,
        })
    }

    /// Exchanges each way on the longest path: log₂ of the largest power of two in the
    /// world, plus the hand-over when the world is not one.
    pub fn exchanges(world_size: usize) -> usize {
        Self::core_steps(world_size) + usize::from(!world_size.is_power_of_two())
    }

    /// Every message of the all-reduce for this rank, in the order it must happen.
    pub fn actions(&self) -> Vec<Action> {
        let whole = 0..self.len;
        let mut actions = Vec::new();
        let (virtual_rank, guest) = match self.role() {
            Role::Guest { host } => {
                actions.extend(self.segments(&whole).map(|(k, range)| Action::Send {
                    to: host,
                    tag: self.hand_over_tag(k),
                    range,
                }));
                actions.extend(self.segments(&whole).map(|(k, range)| Action::Recv {
                    from: host,
                    tag: self.hand_back_tag(k),
                    range,
                    combine: Combine::Copy,
                }));
                return actions;
            }
            Role::Core {
                virtual_rank,
                guest,
            } => (virtual_rank, guest),
        };
        if let Some(guest) = guest {
            actions.extend(self.segments(&whole).map(|(k, range)| Action::Recv {
                from: guest,
                tag: self.hand_over_tag(k),
                range,
                combine: Combine::Add,
            }));
        }
        let steps = self.steps();
        let offset = self.step_offset();
        // The ranges held after each reduce-scatter step, the whole buffer before the first.
        let mut held = Vec::with_capacity(steps + 1);
        held.push(whole.clone());
        for step in 0..steps {
            let (partner, keep, give) = self.split(virtual_rank, step, held[step].clone());
            let tag = |k| Tag::new(CollectivePhase::ReduceScatter, offset + step, k);
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
                    actions.push(self.gather_send(virtual_rank, 0, k, range));
                }
            }
            held.push(keep);
        }
        for step in 0..steps {
            let mine = held[steps - step].clone();
            let partner = self.partner(virtual_rank, steps - 1 - step);
            if step > 0 {
                actions.extend(
                    self.segments(&mine)
                        .map(|(k, range)| self.gather_send(virtual_rank, step, k, range)),
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
        if let Some(guest) = guest {
            actions.extend(self.segments(&whole).map(|(k, range)| Action::Send {
                to: guest,
                tag: self.hand_back_tag(k),
                range,
            }));
        }
        actions
    }

    /// Whether a message with `tag` completes a segment of this rank's share: the last
    /// reduce-scatter step of the power of two.
    pub fn completes_reduction(&self, tag: Tag) -> bool {
        matches!(self.role(), Role::Core { .. })
            && tag.phase == CollectivePhase::ReduceScatter
            && tag.step as usize == self.step_offset() + self.steps() - 1
    }

    /// Exchanges each way within the power of two.
    fn steps(&self) -> usize {
        Self::core_steps(self.world_size)
    }

    fn core_steps(world_size: usize) -> usize {
        Self::core_size(world_size).trailing_zeros() as usize
    }

    /// The largest power of two in a world of `world_size` (1 for an empty one).
    fn core_size(world_size: usize) -> usize {
        1 << world_size.max(1).ilog2()
    }

    /// How many ranks hand their buffers to a host.
    fn guests(&self) -> usize {
        self.world_size - Self::core_size(self.world_size)
    }

    /// The reduce-scatter steps before the power of two's: the hand-over, when there is one.
    fn step_offset(&self) -> usize {
        usize::from(self.guests() > 0)
    }

    fn role(&self) -> Role {
        let guests = self.guests();
        if self.rank >= 2 * guests {
            Role::Core {
                virtual_rank: self.rank - guests,
                guest: None,
            }
        } else if self.rank % 2 == 1 {
            Role::Guest {
                host: self.rank - 1,
            }
        } else {
            Role::Core {
                virtual_rank: self.rank / 2,
                guest: Some(self.rank + 1),
            }
        }
    }

    /// The rank that plays `virtual_rank` of the power of two.
    fn real_rank(&self, virtual_rank: usize) -> usize {
        let guests = self.guests();
        if virtual_rank < guests {
            2 * virtual_rank
        } else {
            virtual_rank + guests
        }
    }

    /// Segment `k` of a guest's buffer handed to its host.
    fn hand_over_tag(&self, k: usize) -> Tag {
        Tag::new(CollectivePhase::ReduceScatter, 0, k)
    }

    /// Segment `k` of the result handed back to a guest.
    fn hand_back_tag(&self, k: usize) -> Tag {
        Tag::new(CollectivePhase::AllGather, self.steps(), k)
    }

    /// The partner, a real rank, of `virtual_rank` in reduce-scatter step `step`.
    fn partner(&self, virtual_rank: usize, step: usize) -> usize {
        self.real_rank(virtual_rank ^ (Self::core_size(self.world_size) >> (step + 1)))
    }

    /// (partner, half kept, half given up) of `range` in reduce-scatter step `step`: the
    /// lower half stays with the rank whose bit of the step is clear.
    fn split(
        &self,
        virtual_rank: usize,
        step: usize,
        range: Range<usize>,
    ) -> (usize, Range<usize>, Range<usize>) {
        let mid = range.start + range.len() / 2;
        let (lower, upper) = (range.start..mid, mid..range.end);
        let partner = self.partner(virtual_rank, step);
        if virtual_rank & (Self::core_size(self.world_size) >> (step + 1)) == 0 {
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

    /// Segment `k` (`range`) of what `virtual_rank` sends in all-gather step `step`.
    fn gather_send(
        &self,
        virtual_rank: usize,
        step: usize,
        k: usize,
        range: Range<usize>,
    ) -> Action {
        Action::Send {
            to: self.partner(virtual_rank, self.steps() - 1 - step),
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
        for n in 1..=16 {
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
    fn outside_a_power_of_two_guests_hand_over_to_hosts_one_exchange_more() {
        // 6 ranks: 1 and 3 hand their 12 elements to 0 and 2, then 0, 2, 4 and 5 halve and
        // double as ranks 0 to 3 of a world of 4, and 0 and 2 hand the sums back.
        let sends = |rank| -> Vec<(CollectivePhase, usize, usize, usize)> {
            HalvingDoubling::new(rank, 6, 12, 12)
                .unwrap()
                .actions()
                .into_iter()
                .filter_map(|a| match a {
                    Action::Send { tag, range, to } => {
                        Some((tag.phase, tag.step as usize, range.len(), to))
                    }
                    Action::Recv { .. } => None,
                })
                .collect()
        };
        use CollectivePhase::{AllGather as G, ReduceScatter as R};
        assert_eq!(sends(3), vec![(R, 0, 12, 2)]);
        assert_eq!(
            sends(2),
            vec![
                (R, 1, 6, 5),
                (R, 2, 3, 0),
                (G, 0, 3, 0),
                (G, 1, 6, 5),
                (G, 2, 12, 3)
            ]
        );
        assert_eq!(
            sends(4),
            vec![(R, 1, 6, 0), (R, 2, 3, 5), (G, 0, 3, 5), (G, 1, 6, 0)]
        );
        let host = HalvingDoubling::new(2, 6, 12, 12).unwrap();
        assert!(host.completes_reduction(Tag::new(R, 2, 0)));
        assert!(!host.completes_reduction(Tag::new(R, 0, 0)));
        let guest = HalvingDoubling::new(3, 6, 12, 12).unwrap();
        assert!(!guest.completes_reduction(Tag::new(R, 2, 0)));
        let exchanges: Vec<usize> = (1..=9).map(HalvingDoubling::exchanges).collect();
        assert_eq!(exchanges, [0, 1, 2, 2, 3, 3, 3, 3, 4]);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(HalvingDoubling::new(4, 4, 10, 1).is_err());
        assert!(HalvingDoubling::new(0, 4, 10, 0).is_err());
    }
}
